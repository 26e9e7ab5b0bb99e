//! Helpers shared by the integration tests: where fixtures live, and expectation files.
#![allow(dead_code)]

pub mod pickle;

use std::path::{Path, PathBuf};

use memsight_core::analysis::Analysed;
use memsight_core::model::{Action, Snapshot};
use memsight_core::session::Session;
use serde_json::Value as Json;

/// The repository's root (every crate is at `crates/<name>`).
pub fn repo() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The real snapshot corpus (`MEMSIGHT_REAL_FIXTURES` or `../shared/fixtures/real`), if present.
pub fn real_fixtures_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("MEMSIGHT_REAL_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("../shared/fixtures/real"));
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipping: real fixtures not found at {} (set MEMSIGHT_REAL_FIXTURES)",
            dir.display()
        );
        None
    }
}

/// One file of the real corpus, by name; `None` (said on standard error, so the test skips)
/// when the corpus or the file is absent.
pub fn real_fixture(name: &str) -> Option<PathBuf> {
    let path = real_fixtures_dir()?.join(name);
    if path.is_file() {
        Some(path)
    } else {
        eprintln!("skipped: {name} is not among the real fixtures");
        None
    }
}

/// Snapshot files (pickles) in the real corpus, sorted.
pub fn real_fixture_files() -> Vec<PathBuf> {
    let Some(dir) = real_fixtures_dir() else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("pickle" | "pkl")
            )
        })
        .collect();
    files.sort();
    files
}

pub fn edge(name: &str) -> PathBuf {
    repo().join("tests/fixtures").join(name)
}

pub fn read_json(path: &Path) -> Json {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

pub fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

/// Checks a decoded snapshot against an expectation record written by
/// `tests/python/expect_real.py` or `gen_snapshot.py --expect`, computed by CPython.
pub fn check_expectations(name: &str, analysed: &Analysed, expected: &Json) {
    let snapshot = &analysed.snapshot;
    let devices = expected["devices"].as_object().unwrap();
    for (id, exp) in devices {
        let id: u32 = match id.as_str() {
            "host" => memsight_core::model::PINNED_HOST_DEVICE,
            id => id.parse().unwrap(),
        };
        let (device, facts) = analysed
            .device_facts(id)
            .unwrap_or_else(|| panic!("{name}: device {id} missing"));
        let ctx = |what: &str| format!("{name} device {id}: {what}");
        let reserved: u64 = device.segments.iter().map(|s| s.total_size).sum();
        let allocated: u64 = device
            .blocks
            .iter()
            .filter(|b| b.state.is_allocated())
            .map(|b| b.size)
            .sum();
        assert_eq!(
            reserved,
            exp["reserved_bytes"].as_u64().unwrap(),
            "{}",
            ctx("reserved")
        );
        assert_eq!(
            allocated,
            exp["allocated_bytes"].as_u64().unwrap(),
            "{}",
            ctx("allocated")
        );
        assert_eq!(
            device.segments.len() as u64,
            exp["segments"].as_u64().unwrap(),
            "{}",
            ctx("segments")
        );
        assert_eq!(
            device.blocks.len() as u64,
            exp["blocks"].as_u64().unwrap(),
            "{}",
            ctx("blocks")
        );
        assert_eq!(
            device.trace.len() as u64,
            exp["trace_entries"].as_u64().unwrap(),
            "{}",
            ctx("trace entries")
        );
        for (action, count) in exp["actions"].as_object().unwrap() {
            let a = Action::from_name(action);
            // An action the model does not know is counted by its name.
            let got = if a == Action::Other {
                let trace = &device.trace;
                trace
                    .unknown_actions
                    .iter()
                    .filter(|(_, name)| snapshot.str(*name) == action)
                    .count() as u64
            } else {
                facts.action_counts[a as usize]
            };
            assert_eq!(got, count.as_u64().unwrap(), "{}", ctx(action));
        }
        let listed: u64 = exp["actions"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(
            listed,
            device.trace.len() as u64,
            "{}",
            ctx("no unexpected actions")
        );
        if let Some(peak) = exp.get("peak_allocated_bytes").and_then(Json::as_u64) {
            assert_eq!(
                facts.peak_allocated.bytes,
                peak,
                "{}",
                ctx("peak allocated")
            );
            let index = exp["peak_allocated_index"].as_i64().unwrap();
            let row = facts.peak_allocated.row.map_or(-1, |r| r as i64);
            assert_eq!(row, index, "{}", ctx("peak allocated index"));
        }
        if let Some(peak) = exp.get("peak_reserved_bytes").and_then(Json::as_u64) {
            assert_eq!(facts.peak_reserved.bytes, peak, "{}", ctx("peak reserved"));
        }
        if let Some(n) = exp.get("pre_window_allocations").and_then(Json::as_u64) {
            assert_eq!(
                facts.frees_without_alloc + facts.live_blocks_without_alloc,
                n,
                "{}",
                ctx("pre-window allocations")
            );
        }
        if let Some(n) = exp.get("allocations").and_then(Json::as_u64) {
            assert_eq!(
                facts.action_counts[Action::Alloc as usize],
                n,
                "{}",
                ctx("allocations")
            );
        }
    }
    if let Some(n) = expected.get("unique_frames").and_then(Json::as_u64) {
        assert_eq!(snapshot.frames.len() as u64, n, "{name}: unique frames");
    }
    if let Some(n) = expected.get("unique_stacks").and_then(Json::as_u64) {
        assert_eq!(snapshot.stacks.len() as u64, n, "{name}: unique stacks");
    }
    if let Some(n) = expected.get("annotations").and_then(Json::as_u64) {
        assert_eq!(snapshot.annotations.len() as u64, n, "{name}: annotations");
    }
    if let Some(layout) = expected.get("layout").and_then(Json::as_str) {
        let got = match snapshot.top_level {
            memsight_core::model::TopLevel::Dict => "dict",
            memsight_core::model::TopLevel::SegmentList => "segment_list",
        };
        assert_eq!(got, layout, "{name}: layout");
    }
}

pub fn decode_file(path: &Path) -> Result<Snapshot, memsight_core::decode::DecodeError> {
    let file = std::fs::File::open(path).unwrap();
    memsight_core::decode::decode_reader(file, &mut |_| {})
}

/// A session with the file at `path` loaded, as a worker holds it; `None` when it cannot be
/// read or decoded.
pub fn load_session(path: &Path) -> Option<Session> {
    let bytes = std::fs::read(path).ok()?;
    let mut session = Session::new();
    session
        .load(&bytes[..], bytes.len() as u64, &|| 0.0, &mut |_| {})
        .ok()?;
    Some(session)
}

/// xorshift64*: deterministic and dependency-free random numbers for tests.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}
