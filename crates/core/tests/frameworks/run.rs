//! Runs written as a framework writes them, with the truth of every allocation: a builder of
//! snapshots (the JSON form of what `_dump_snapshot` pickles) whose stacks are the framework's
//! real call sites, and the score of memsight's roles against that truth.
//!
//! A run is a list of events: allocations with their stack, the role their maker gave them
//! (the truth) and their pool, frees with the stack that freed them, and profiler scopes. It
//! becomes a snapshot three ways, as PyTorch writes them: recorded from the start (`whole`),
//! recorded late or wrapped (`cut`, through the core's `model::cut`), or with no trace at all
//! (`state_only`, `_snapshot()` without history: the blocks alive with the frames they were
//! made with).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;

use memsight_core::analysis::categories::rules::{CompiledRules, Rules};
use memsight_core::analysis::categories::{categorise, Basis, Categories, Explainer, Role};
use memsight_core::analysis::{Analysed, Origin};
use memsight_core::model::cut::{cut_trace, Cut};
use memsight_core::model::Snapshot;
use serde_json::{json, Value as Json};

/// One frame, as a snapshot records it.
#[derive(Clone, Debug)]
pub struct Frame {
    pub filename: String,
    pub line: i64,
    pub name: String,
}

/// Where the interpreter's packages are, as on a typical Linux install.
pub const SITE: &str = "/opt/conda/lib/python3.11/site-packages/";

/// A frame of an installed package's Python file (`vllm/worker/cache_engine.py`).
pub fn py(file: &str, line: i64, name: &str) -> Frame {
    Frame {
        filename: format!("{SITE}{file}"),
        line,
        name: name.to_string(),
    }
}

/// A frame of the user's own code (`train.py`).
pub fn user(file: &str, line: i64, name: &str) -> Frame {
    Frame {
        filename: format!("/home/alex/project/{file}"),
        line,
        name: name.to_string(),
    }
}

/// A C++ frame (`stacks="all"`), symbol as demangled.
pub fn cpp(symbol: &str) -> Frame {
    Frame {
        filename: "??".to_string(),
        line: 0,
        name: symbol.to_string(),
    }
}

/// The frames PyTorch records inside the allocator and the empty-tensor factory of every
/// allocation when C++ stacks are on: innermost first, before the caller's frames.
pub fn allocator_frames() -> Vec<Frame> {
    [
        "torch::unwind::unwind()",
        "torch::CapturedTraceback::gather(bool, bool, bool)",
        "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)",
        "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)",
        "at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, c10::ScalarType, std::optional<c10::MemoryFormat>)",
        "at::detail::empty_cuda(c10::ArrayRef<long>, c10::ScalarType, std::optional<c10::Device>, std::optional<c10::MemoryFormat>)",
        "at::_ops::empty_memory_format::call(c10::ArrayRef<c10::SymInt>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)",
    ]
    .into_iter()
    .map(cpp)
    .collect()
}

/// Concatenates stack parts, innermost first.
pub fn stack(parts: &[&[Frame]]) -> Vec<Frame> {
    parts.iter().flat_map(|p| p.iter().cloned()).collect()
}

/// The default pool.
pub const DEFAULT_POOL: (i64, i64) = (0, 0);

/// An allocation of a run, by the order it was made in.
pub type Id = usize;

#[derive(Clone, Debug)]
struct Made {
    addr: u64,
    size: u64,
    truth: Role,
    pool: (i64, i64),
    stack: Vec<Frame>,
    /// Its `alloc` row.
    row: usize,
    freed: bool,
}

/// A run being written.
#[derive(Clone, Debug, Default)]
pub struct Run {
    made: Vec<Made>,
    trace: Vec<Json>,
    annotations: Vec<Json>,
    time_us: u64,
    next_addr: u64,
    /// Whether C++ frames are recorded (`stacks="all"`).
    pub cpp: bool,
    /// Allocator settings to record.
    pub settings: Option<Json>,
}

/// Rounds a request up as the caching allocator does (512 bytes).
fn rounded(size: u64) -> u64 {
    size.div_ceil(512).max(1) * 512
}

impl Run {
    pub fn new() -> Self {
        Run {
            next_addr: 0x7f00_0000_0000,
            time_us: 1_700_000_000_000_000,
            ..Default::default()
        }
    }

    /// The same run with C++ frames recorded.
    pub fn with_cpp(mut self) -> Self {
        self.cpp = true;
        self
    }

    fn frames_json(&self, frames: &[Frame], alloc: bool) -> Json {
        let mut all: Vec<Frame> = Vec::new();
        if self.cpp && alloc {
            all.extend(allocator_frames());
        }
        all.extend(frames.iter().cloned());
        Json::Array(
            all.iter()
                .map(|f| json!({"filename": f.filename, "line": f.line, "name": f.name}))
                .collect(),
        )
    }

    fn tick(&mut self) -> u64 {
        self.time_us += 7;
        self.time_us
    }

    /// Makes `size` bytes under `stack` (innermost first) in the default pool; `truth` is
    /// what its maker made it for.
    pub fn alloc(&mut self, size: u64, stack: &[Frame], truth: Role) -> Id {
        self.alloc_in(DEFAULT_POOL, size, stack, truth)
    }

    /// Makes `size` bytes in `pool`.
    pub fn alloc_in(&mut self, pool: (i64, i64), size: u64, stack: &[Frame], truth: Role) -> Id {
        let size = rounded(size);
        let addr = self.next_addr;
        self.next_addr += size.next_multiple_of(1 << 21);
        let time = self.tick();
        let frames = self.frames_json(stack, true);
        self.trace.push(json!({
            "action": "alloc", "addr": addr, "size": size, "stream": 0,
            "time_us": time, "frames": frames,
        }));
        self.made.push(Made {
            addr,
            size,
            truth,
            pool,
            stack: stack.to_vec(),
            row: self.trace.len() - 1,
            freed: false,
        });
        self.made.len() - 1
    }

    /// Frees allocation `id` under `stack` (innermost first; empty for a free autograd's
    /// thread makes).
    pub fn free(&mut self, id: Id, stack: &[Frame]) {
        let (addr, size) = (self.made[id].addr, self.made[id].size);
        assert!(!self.made[id].freed, "allocation {id} freed twice");
        self.made[id].freed = true;
        let frames = self.frames_json(stack, false);
        for action in ["free_requested", "free_completed"] {
            let time = self.tick();
            self.trace.push(json!({
                "action": action, "addr": addr, "size": size, "stream": 0,
                "time_us": time, "frames": frames,
            }));
        }
    }

    /// Frees every allocation of `ids` under `stack`.
    pub fn free_all(&mut self, ids: &[Id], stack: &[Frame]) {
        for &id in ids {
            self.free(id, stack);
        }
    }

    /// Opens a `record_function` scope (an `external_annotations` START).
    pub fn scope_start(&mut self, name: &str) {
        let time = self.tick();
        self.annotations
            .push(json!({"name": name, "stage": "START", "device": 0, "time_us": time}));
    }

    pub fn scope_end(&mut self, name: &str) {
        let time = self.tick();
        self.annotations
            .push(json!({"name": name, "stage": "END", "device": 0, "time_us": time}));
    }

    /// The trace row of the next event.
    pub fn next_row(&self) -> usize {
        self.trace.len()
    }

    /// The blocks alive at the end, one segment each, in their pools; `with_frames`: each
    /// carries the frames it was made with.
    fn segments(&self, with_frames: bool) -> Vec<Json> {
        self.made
            .iter()
            .filter(|m| !m.freed)
            .map(|m| {
                let frames = if with_frames {
                    self.frames_json(&m.stack, true)
                } else {
                    json!([])
                };
                json!({
                    "device": 0, "address": m.addr, "total_size": m.size,
                    "allocated_size": m.size, "active_size": m.size, "requested_size": m.size,
                    "stream": 0, "segment_type": "large",
                    "segment_pool_id": [m.pool.0, m.pool.1], "is_expandable": false,
                    "frames": frames,
                    "blocks": [{
                        "address": m.addr, "size": m.size, "requested_size": m.size,
                        "state": "active_allocated", "frames": frames,
                    }],
                })
            })
            .collect()
    }

    fn snapshot_json(&self, trace: bool) -> Json {
        let mut top = json!({
            "segments": self.segments(true),
            "device_traces": [if trace { Json::Array(self.trace.clone()) } else { json!([]) }],
        });
        if trace && !self.annotations.is_empty() {
            top["external_annotations"] = Json::Array(self.annotations.clone());
        }
        if let Some(settings) = &self.settings {
            top["allocator_settings"] = settings.clone();
        }
        top
    }

    /// The run recorded from its start, as the file a user would open (the JSON form).
    pub fn bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.snapshot_json(true)).unwrap()
    }

    /// The run recorded from its start.
    pub fn whole(&self) -> Case {
        let bytes = serde_json::to_vec(&self.snapshot_json(true)).unwrap();
        let snapshot = memsight_core::decode::decode_bytes(&bytes).expect("a run decodes");
        self.case("whole", snapshot)
    }

    /// The run as `_snapshot()` without history writes it: the blocks alive at the end with
    /// their frames, no trace.
    pub fn state_only(&self) -> Case {
        let bytes = serde_json::to_vec(&self.snapshot_json(false)).unwrap();
        let snapshot = memsight_core::decode::decode_bytes(&bytes).expect("a run decodes");
        self.case("state only", snapshot)
    }

    /// The run recorded from trace row `row` on (`how`: started late, or a ring buffer that
    /// wrapped).
    pub fn cut(&self, row: usize, how: Cut) -> Case {
        let bytes = serde_json::to_vec(&self.snapshot_json(true)).unwrap();
        let snapshot = memsight_core::decode::decode_bytes(&bytes).expect("a run decodes");
        let cut = cut_trace(&snapshot, 0, row, how);
        self.case(&format!("cut at {row} ({how:?})"), cut)
    }

    fn case(&self, name: &str, snapshot: Snapshot) -> Case {
        let analysed = Analysed::new(snapshot);
        let categories = categorise(&analysed, &CompiledRules::none());
        // Every allocation's truth, by its address (addresses are never reused here).
        let by_addr: BTreeMap<u64, usize> = self
            .made
            .iter()
            .enumerate()
            .map(|(i, m)| (m.addr, i))
            .collect();
        let facts = &analysed.facts[0];
        let truth = facts
            .allocations
            .iter()
            .map(|a| by_addr.get(&a.addr).copied())
            .collect();
        Case {
            name: name.to_string(),
            made: self.made.iter().map(|m| (m.truth, m.size)).collect(),
            analysed,
            categories,
            truth,
        }
    }
}

/// A run as one snapshot, categorised, with the truth of its allocations.
pub struct Case {
    pub name: String,
    /// Truth and size of every allocation of the run, by [`Id`].
    made: Vec<(Role, u64)>,
    pub analysed: Analysed,
    pub categories: Categories,
    /// For each of the snapshot's allocations (device 0), the run's allocation it is.
    truth: Vec<Option<Id>>,
}

/// How memsight's roles compare with the truth at one moment.
#[derive(Debug, Default)]
pub struct Score {
    pub state: u32,
    pub bytes: u64,
    pub right: u64,
    pub unknown: u64,
    /// Bytes by (truth, memsight's role), wrong ones only.
    pub wrong: BTreeMap<(Role, Role), u64>,
    /// Bytes by truth, and by memsight's role.
    pub truth: BTreeMap<Role, u64>,
    pub got: BTreeMap<Role, u64>,
    /// Allocations whose role was deduced, not observed, and their bytes.
    pub inferred: u64,
}

impl Score {
    pub fn right_share(&self) -> f64 {
        self.right as f64 / self.bytes.max(1) as f64
    }

    pub fn unknown_share(&self) -> f64 {
        self.unknown as f64 / self.bytes.max(1) as f64
    }

    pub fn got(&self, role: Role) -> u64 {
        self.got.get(&role).copied().unwrap_or(0)
    }

    pub fn truth(&self, role: Role) -> u64 {
        self.truth.get(&role).copied().unwrap_or(0)
    }

    /// A table of what went wrong, for a failing assertion.
    pub fn explain(&self) -> String {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let mut text = format!(
            "state {}: {:.3} GiB alive, {:.1}% right, {:.1}% unknown\n",
            self.state,
            gib(self.bytes),
            100.0 * self.right_share(),
            100.0 * self.unknown_share()
        );
        for ((truth, got), bytes) in &self.wrong {
            let _ = writeln!(
                text,
                "  {:>10.4} GiB {} called {}",
                gib(*bytes),
                truth.key(),
                got.key()
            );
        }
        text
    }
}

impl Case {
    /// The allocated peak's state.
    pub fn peak(&self) -> u32 {
        self.analysed.facts[0].peak_allocated.state()
    }

    /// The state after the last event.
    pub fn end(&self) -> u32 {
        self.analysed.facts[0].allocated.len() as u32
    }

    /// The score at `state`.
    pub fn score_at(&self, state: u32) -> Score {
        let facts = &self.analysed.facts[0];
        let cats = &self.categories.devices[0];
        let mut score = Score {
            state,
            ..Default::default()
        };
        for (i, a) in facts.allocations.iter().enumerate() {
            if !a.is_alive_at(state) {
                continue;
            }
            let got = cats.roles[i];
            let truth = self.truth[i].map(|id| self.made[id].0).unwrap_or_else(|| {
                panic!("{}: allocation at {:#x} is no run's", self.name, a.addr)
            });
            score.bytes += a.size;
            *score.truth.entry(truth).or_default() += a.size;
            *score.got.entry(got).or_default() += a.size;
            if got == truth {
                score.right += a.size;
            } else {
                *score.wrong.entry((truth, got)).or_default() += a.size;
            }
            if got == Role::Unknown {
                score.unknown += a.size;
            }
            if cats.is_inferred(i) {
                score.inferred += a.size;
            }
            let _ = a.origin() == Origin::Trace;
        }
        score
    }

    /// The score at the allocated peak.
    pub fn score(&self) -> Score {
        self.score_at(self.peak())
    }

    /// Asserts that every allocation alive at `state` whose role a frame settled says which
    /// frame, and that a framework's call site is named with its framework.
    pub fn assert_reasons_name_frames(&self, state: u32) {
        let facts = &self.analysed.facts[0];
        let cats = &self.categories.devices[0];
        let rules = Rules::default();
        let mut explainer = Explainer::new(&self.analysed, 0, cats, &rules);
        for (i, a) in facts.allocations.iter().enumerate() {
            if !a.is_alive_at(state) {
                continue;
            }
            let reason = explainer.explain(i);
            assert_eq!(
                reason.role, cats.roles[i],
                "{}: reason and role differ",
                self.name
            );
            match &reason.basis {
                Basis::Site { frame, why, .. } => {
                    assert!(
                        !frame.is_empty() && !why.is_empty(),
                        "{}: {reason:?}",
                        self.name
                    )
                }
                Basis::Frame { frame } => assert!(!frame.is_empty(), "{}: {reason:?}", self.name),
                _ => {}
            }
        }
    }

    /// Asserts the bar at the peak: at least `share` of the bytes right, and at most
    /// 5% unknown.
    pub fn assert_right(&self, share: f64) -> Score {
        let score = self.score();
        assert!(
            score.right_share() >= share && score.unknown_share() <= 0.05,
            "{}: {}",
            self.name,
            score.explain()
        );
        score
    }
}
