//! Files side by side: a file compared with itself is unchanged everywhere, a known change
//! between two runs shows in the right call site and module, and the files table's rows carry
//! each file's overview numbers.

mod common;

use memsight_core::analysis::categories::Role;
use memsight_core::compare::files::{flag_outliers, FileRow};
use memsight_core::compare::service::DigestRequest;
use memsight_core::compare::{compare, Change, Digest};
use memsight_core::overview::service::OverviewRequest;
use memsight_core::overview::MetricKey;
use memsight_core::protocol::{Answer, Request};
use memsight_core::session::Session;

fn session(bytes: &[u8]) -> Session {
    let mut session = Session::new();
    session
        .load(bytes, bytes.len() as u64, &|| 0.0, &mut |_| {})
        .expect("decodes");
    session
}

fn digest(session: &mut Session, device: u32, detail: bool) -> Digest {
    match session.answer(
        Request::Digest(DigestRequest {
            device,
            detail,
            at_phase: None,
        }),
        &|| 0.0,
    ) {
        Ok(reply) => match reply.answer {
            Answer::Digest(d) => d,
            other => panic!("a digest request answered {}", other.feature()),
        },
        Err(e) => panic!("no digest: {e:?}"),
    }
}

fn frame(file: &str, line: u32, name: &str) -> String {
    format!(r#"{{"filename":"{file}","line":{line},"name":"{name}"}}"#)
}

/// A model of `layers` blocks (attention then MLP each, the attention's activation
/// `attention_bytes` and kept for the backward), then a loss; with `checkpoint`, each block also
/// keeps a recompute buffer. The peak is after the loss.
fn run(layers: u32, attention_bytes: u64, checkpoint: bool) -> Vec<u8> {
    let train = frame("/x/train.py", 3, "<module>");
    let model = frame("/x/model.py", 50, "forward");
    let block = frame("/x/model.py", 30, "forward");
    // Each part of a block is a module of its own, so the block's calls can be told apart.
    let stack = |inner: &str, line: u32, part: u32| {
        format!(
            "[{},{},{block},{model},{train}]",
            frame("/x/layers.py", line, inner),
            frame("/x/model.py", part, "forward")
        )
    };
    let attention = stack("attention", 5, 10);
    let mlp = stack("mlp", 9, 20);
    let saved = stack("checkpoint", 14, 25);
    let loss = format!("[{},{train}]", frame("/x/train.py", 9, "loss"));
    let mut rows: Vec<(u64, u64, String)> = Vec::new();
    let mut addr = 0x10000u64;
    let mut next = |size: u64, frames: &str, rows: &mut Vec<(u64, u64, String)>| {
        addr += 0x100000;
        rows.push((addr, size, frames.to_string()));
    };
    for _ in 0..layers {
        next(attention_bytes, &attention, &mut rows);
        next(4096, &mlp, &mut rows);
        if checkpoint {
            next(1024, &saved, &mut rows);
        }
    }
    next(512, &loss, &mut rows);
    let trace: Vec<String> = rows
        .iter()
        .enumerate()
        .map(|(r, (addr, size, frames))| {
            format!(
                r#"{{"action":"alloc","addr":{addr},"size":{size},"stream":0,"time_us":{},"frames":{frames}}}"#,
                10 * (r + 1)
            )
        })
        .collect();
    format!(
        r#"{{"segments":[],"device_traces":[[{}]]}}"#,
        trace.join(",")
    )
    .into_bytes()
}

#[test]
fn a_file_compared_with_itself_is_unchanged_everywhere() {
    let bytes = run(4, 8192, false);
    let mut s = session(&bytes);
    let a = digest(&mut s, 0, true);
    let comparison = compare(&a, &a);
    assert!(comparison.is_unchanged(), "{comparison:#?}");
    assert!(comparison
        .metrics
        .iter()
        .all(|m| m.delta == Some(0) || m.a.is_none()));
    assert!(!comparison.call_sites.is_empty() && !comparison.modules.is_empty());
}

#[test]
fn every_real_fixture_compared_with_itself_is_unchanged() {
    for path in common::real_fixture_files() {
        let bytes = std::fs::read(&path).unwrap();
        let mut s = session(&bytes);
        let devices = s.analysed().unwrap().snapshot.device_ids();
        for device in devices {
            let a = digest(&mut s, device, true);
            let b = digest(&mut s, device, true);
            let comparison = compare(&a, &b);
            let name = common::file_name(&path);
            assert!(comparison.is_unchanged(), "{name} cuda:{device}");
            // The digest's numbers are the overview's and add up at the peak.
            let overview = match s
                .answer(Request::Overview(OverviewRequest { device }), &|| 0.0)
                .unwrap()
                .answer
            {
                Answer::Overview(o) => o,
                _ => unreachable!(),
            };
            assert_eq!(a.metrics, overview.metrics, "{name}");
            let peak = a.metric(MetricKey::PeakAllocatedBytes).unwrap_or(0);
            assert_eq!(
                a.roles.iter().sum::<u64>(),
                peak,
                "{name} cuda:{device} roles"
            );
            assert_eq!(
                a.components.iter().sum::<u64>(),
                peak,
                "{name} cuda:{device}"
            );
            let sites: u64 = a.call_sites.iter().map(|k| k.bytes).sum();
            assert_eq!(sites, peak, "{name} cuda:{device} call sites");
            let top_modules: u64 = a
                .modules
                .iter()
                .filter(|k| k.depth == 0)
                .map(|k| k.bytes)
                .sum();
            assert_eq!(top_modules, peak, "{name} cuda:{device} modules");
            assert_eq!(
                a.curve.by_event.iter().max().copied().unwrap_or(0),
                peak,
                "{name}"
            );
            if !a.curve.by_time.is_empty() {
                assert_eq!(a.curve.by_time.iter().max().copied(), Some(peak), "{name}");
            }
        }
    }
}

#[test]
fn a_known_change_shows_in_its_call_site_and_module() {
    // B: attention activations twice as large, half the layers, and a checkpoint buffer.
    let mut a = session(&run(4, 8192, false));
    let mut b = session(&run(2, 16384, true));
    let (a, b) = (digest(&mut a, 0, true), digest(&mut b, 0, true));
    let c = compare(&a, &b);

    let peak = c
        .metrics
        .iter()
        .find(|m| m.key == MetricKey::PeakAllocatedBytes)
        .unwrap();
    let peak_a = 4 * (8192 + 4096) + 512;
    let peak_b = 2 * (16384 + 4096 + 1024) + 512;
    assert_eq!((peak.a, peak.b), (Some(peak_a), Some(peak_b)));
    assert_eq!(peak.delta, Some(peak_b as i64 - peak_a as i64));

    let site = |key: &str| c.call_sites.iter().find(|k| k.key == key).unwrap();
    let attention = site("x/layers.py:5:attention");
    assert_eq!(
        (attention.a_bytes, attention.b_bytes),
        (4 * 8192, 2 * 16384)
    );
    assert_eq!((attention.a_count, attention.b_count), (4, 2));
    assert_eq!(attention.change, Change::Same);
    let mlp = site("x/layers.py:9:mlp");
    assert_eq!((mlp.delta_bytes, mlp.change), (-2 * 4096, Change::Shrank));
    let saved = site("x/layers.py:14:checkpoint");
    assert_eq!(
        (saved.a_bytes, saved.b_bytes, saved.change),
        (0, 2048, Change::New)
    );
    // Largest change first.
    assert_eq!(c.call_sites[0].key, "x/layers.py:9:mlp");
    assert_eq!(c.call_sites[0].label, "/x/layers.py:9:mlp");

    // Modules: the model's forward, its block folded over its calls (4 then 2).
    let model = "model.py:50 forward";
    let block = format!("{model} › model.py:30 forward");
    let module = |key: &str| {
        c.modules.iter().find(|k| k.key == key).unwrap_or_else(|| {
            panic!(
                "no module {key}: {:#?}",
                c.modules.iter().map(|k| &k.key).collect::<Vec<_>>()
            )
        })
    };
    let m = module(&block);
    let attention_module = module(&format!("{block} › model.py:10 forward"));
    assert_eq!(
        (attention_module.a_bytes, attention_module.b_bytes),
        (4 * 8192, 2 * 16384)
    );
    assert_eq!(attention_module.depth, 2);
    let checkpoint = module(&format!("{block} › model.py:25 forward"));
    assert_eq!((checkpoint.change, checkpoint.b_bytes), (Change::New, 2048));
    assert_eq!((m.a_occurrences, m.b_occurrences), (4, 2));
    assert_eq!(
        (m.a_bytes, m.b_bytes),
        (4 * (8192 + 4096), 2 * (16384 + 4096 + 1024))
    );
    assert_eq!(m.depth, 1);
    let top = module(model);
    assert_eq!(top.delta_bytes, m.delta_bytes);
    // Parents come before their children.
    let position = |key: &str| c.modules.iter().position(|k| k.key == key).unwrap();
    assert!(position(model) < position(&block));

    // Roles add up to each peak on both sides.
    let a_roles: u64 = c.roles.iter().map(|r| r.a_bytes).sum();
    let b_roles: u64 = c.roles.iter().map(|r| r.b_bytes).sum();
    assert_eq!((a_roles, b_roles), (peak_a, peak_b));
}

#[test]
fn file_rows_carry_the_overview_numbers_and_role_totals() {
    let mut s = session(&run(3, 8192, false));
    let d = digest(&mut s, 0, false);
    assert!(d.call_sites.is_empty() && d.modules.is_empty());
    let row = FileRow::new("iteration_2/rank3_memory_snapshot.pickle", Some(" "), &d);
    assert_eq!(row.label, "iteration_2/rank3_memory_snapshot.pickle");
    assert_eq!((row.rank, row.iteration), (Some(3), Some(2)));
    assert_eq!(row.peak_allocated_bytes, 3 * (8192 + 4096) + 512);
    assert_eq!(Some(row.trace_entries), d.metric(MetricKey::TraceEntries));
    let roles: u64 = Role::ALL.iter().map(|&r| row.role(r)).sum();
    assert_eq!(roles, row.peak_allocated_bytes);
    let mut rows = vec![row.clone(), row];
    flag_outliers(&mut rows);
    assert!(rows.iter().all(|r| !r.outlier));
}

/// Settings read from names, on every real snapshot's name at once: the context lengths that
/// two of them differ in, and nothing else (no repository number such as `cs336` or
/// `assignment2`, no dtype such as `bf16`, which every file shares or none differs in).
#[test]
fn the_real_files_names_differ_only_in_their_context_length() {
    let files = common::real_fixture_files();
    if files.is_empty() {
        return;
    }
    let names: Vec<String> = files.iter().map(|p| common::file_name(p)).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(
        memsight_core::compare::ranks::shared_settings(&names),
        vec!["ctx".to_string()]
    );
}
