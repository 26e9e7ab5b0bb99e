//! The importers of the profiler's other memory outputs, on their fixtures (hand-made ones in
//! `tests/fixtures/`, real ones in `../shared/fixtures/real/other/`): every curve is checked
//! against numbers computed here from the file's own JSON, independently of the importers.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};

use memsight_core::analysis::categories::categorised::Categorised;
use memsight_core::analysis::categories::{totals_at, Role};
use memsight_core::analysis::Analysed;
use memsight_core::decode::decode_bytes;
use memsight_core::model::{Action, ImportNote, Source};
use memsight_core::overview::{self, MetricKey};
use memsight_core::protocol::{Answer, Request};
use memsight_core::session::Session;
use memsight_core::table::service::{TableRequest, ViewRequest};
use memsight_core::table::{Scope, TableQuery};
use serde_json::Value;

const MIB: i64 = 1 << 20;

fn read(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .unwrap();
        out
    } else {
        bytes
    }
}

fn other(name: &str) -> Option<PathBuf> {
    let path = common::real_fixtures_dir()?.join("other").join(name);
    if path.is_file() {
        Some(path)
    } else {
        eprintln!("skipping: {} is absent", path.display());
        None
    }
}

fn analysed(path: &Path) -> Analysed {
    Analysed::new(decode_bytes(&std::fs::read(path).unwrap()).unwrap())
}

/// The allocated bytes after each alloc or free row of `device` (other rows are the
/// importer's segment events).
fn allocated_at_memory_rows(a: &Analysed, device: u32) -> Vec<u64> {
    let (dev, facts) = a.device_facts(device).unwrap();
    (0..dev.trace.len())
        .filter(|&r| matches!(dev.trace.action[r], Action::Alloc | Action::FreeCompleted))
        .map(|r| facts.allocated[r])
        .collect()
}

fn reserved_at_memory_rows(a: &Analysed, device: u32) -> Vec<u64> {
    let (dev, facts) = a.device_facts(device).unwrap();
    (0..dev.trace.len())
        .filter(|&r| matches!(dev.trace.action[r], Action::Alloc | Action::FreeCompleted))
        .map(|r| {
            // Reserved memory is released after the free that allowed it: read it at the
            // row's end, after the importer's segment event for the same memory event.
            let mut row = r;
            while row + 1 < dev.trace.len() && dev.trace.action[row + 1] == Action::SegmentFree {
                row += 1;
            }
            facts.reserved_after(Some(row as u32))
        })
        .collect()
}

/// A CUDA `[memory]` event: `(ts, index, device, bytes, total allocated, total reserved)`.
type MemoryEvent = (f64, usize, i64, i64, Option<i64>, Option<i64>);

/// The CUDA `[memory]` events of a trace, in time order.
fn memory_events(trace: &Value) -> Vec<MemoryEvent> {
    let mut events: Vec<_> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, e)| e["name"] == "[memory]" && e["args"]["Device Type"] == 1)
        .filter_map(|(i, e)| {
            let a = &e["args"];
            Some((
                e["ts"].as_f64()?,
                i,
                a["Device Id"].as_i64()?,
                a["Bytes"].as_i64()?,
                a["Total Allocated"].as_i64(),
                a["Total Reserved"].as_i64(),
            ))
        })
        .collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    events
}

#[test]
fn a_kineto_trace_with_totals_has_the_profilers_curves_stacks_and_ooms() {
    let path = common::edge("kineto_memory.json");
    let json: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let a = analysed(&path);
    assert_eq!(a.snapshot.source, Source::KinetoTrace);
    assert_eq!(a.snapshot.device_ids(), [0, 1]);
    assert!(a
        .snapshot
        .notes
        .contains(&ImportNote::CpuMemoryNotShown { events: 2 }));
    for device in [0u32, 1] {
        let events: Vec<_> = memory_events(&json)
            .into_iter()
            .filter(|e| e.2 == device as i64)
            .collect();
        let allocated: Vec<u64> = events.iter().map(|e| e.4.unwrap() as u64).collect();
        let reserved: Vec<u64> = events.iter().map(|e| e.5.unwrap() as u64).collect();
        assert_eq!(
            allocated_at_memory_rows(&a, device),
            allocated,
            "cuda:{device} allocated"
        );
        assert_eq!(
            reserved_at_memory_rows(&a, device),
            reserved,
            "cuda:{device} reserved"
        );
    }
    let o = overview::build(&a, 0).unwrap();
    let peak = memory_events(&json)
        .iter()
        .filter(|e| e.2 == 0)
        .map(|e| e.4.unwrap())
        .max()
        .unwrap();
    assert_eq!(o.get(MetricKey::PeakAllocatedBytes), Some(peak as u64));
    assert_eq!(o.get(MetricKey::PeakReservedBytes), Some(6 * MIB as u64));
    assert_eq!(o.get(MetricKey::ReservedEndBytes), Some(4 * MIB as u64));
    assert_eq!(o.get(MetricKey::AllocatedEndBytes), Some(1792 * 1024));
    assert_eq!(o.get(MetricKey::ActionCount(Action::Oom)), Some(1));
    assert_eq!(
        o.get(MetricKey::AllocatedAtOomBytes),
        Some((MIB + 3840 * 1024) as u64)
    );
    assert_eq!(o.format.source, Source::KinetoTrace);

    // Stacks: the operators around each event, innermost first, then the Python stack.
    let (dev, facts) = a.device_facts(0).unwrap();
    let frames = |alloc_size: u64| -> Vec<String> {
        let alloc = facts
            .allocations
            .iter()
            .find(|x| x.size == alloc_size && x.alloc_row != u32::MAX)
            .unwrap();
        a.snapshot
            .stack_frames(alloc.stack)
            .map(|f| {
                let file = a.snapshot.str(f.filename);
                let name = a.snapshot.str(f.name);
                if file.is_empty() {
                    name.to_string()
                } else {
                    format!("{file}:{}:{name}", f.line)
                }
            })
            .collect()
    };
    assert_eq!(
        frames(MIB as u64),
        [
            "aten::addmm",
            "aten::linear",
            "## forward ##",
            "model.py:10:forward",
            "torch/nn/modules/module.py:1501:_call_impl",
            "train.py:5:<module>"
        ]
    );
    assert_eq!(frames(2 * MIB as u64), ["aten::empty", "## forward ##"]);
    assert_eq!(
        frames(3 * MIB as u64),
        ["autograd::engine::evaluate_function: AddmmBackward0"]
    );
    assert!(dev.trace.time_us.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn the_real_kineto_trace_pairs_frees_by_size_and_peaks_where_its_bytes_add_up() {
    let Some(path) = other("pytorch__kineto__tb_plugin__samples__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz") else {
        return;
    };
    let json: Value = serde_json::from_slice(&read(&path)).unwrap();
    let events = memory_events(&json);
    assert_eq!(events.len(), 8220);
    // Independently: the running sum of the events' bytes, from the lowest point it reaches.
    let mut sum = 0i64;
    let mut sums = Vec::new();
    for e in &events {
        sum += e.3;
        sums.push(sum);
    }
    let low = sums.iter().copied().min().unwrap().min(0);
    let expected: Vec<u64> = sums.iter().map(|s| (s - low) as u64).collect();
    let a = analysed(&path);
    assert_eq!(a.snapshot.device_ids(), [0]);
    assert_eq!(allocated_at_memory_rows(&a, 0), expected);
    let o = overview::build(&a, 0).unwrap();
    assert_eq!(
        o.get(MetricKey::PeakAllocatedBytes),
        expected.iter().copied().max()
    );
    assert_eq!(o.get(MetricKey::TraceEntries), Some(8220));
    let kinds: Vec<&str> = o.warnings.iter().map(|w| w.kind()).collect();
    for kind in [
        "frees-paired-by-size",
        "no-reserved-recorded",
        "cpu-memory-not-shown",
    ] {
        assert!(kinds.contains(&kind), "{kinds:?}");
    }
    assert!(a
        .snapshot
        .notes
        .contains(&ImportNote::CpuMemoryNotShown { events: 4618 }));
    // Most allocations were made under an operator.
    let facts = a.device_facts(0).unwrap().1;
    let with_stack = facts
        .allocations
        .iter()
        .filter(|x| x.stack != u32::MAX)
        .count();
    assert!(
        with_stack * 10 > facts.allocations.len() * 9,
        "{with_stack}"
    );
}

/// The per-category bytes after each distinct microsecond of a raw timeline (what existed
/// before profiling, at t = -1, counts from the first time), as `(t_us, bytes by category)`,
/// summed here from its rows.
fn raw_category_bytes(rows: &[Value]) -> Vec<(i64, Vec<i64>)> {
    let mut rows: Vec<(i64, i64, i64, usize)> = rows
        .iter()
        .map(|r| {
            (
                r[0].as_i64().unwrap(),
                r[1].as_i64().unwrap(),
                r[2].as_i64().unwrap(),
                r[3].as_u64().unwrap() as usize,
            )
        })
        .collect();
    rows.sort_by_key(|r| r.0);
    let first = rows
        .iter()
        .map(|r| r.0)
        .filter(|&t| t >= 0)
        .min()
        .unwrap_or(0);
    let mut current = vec![0i64; 8];
    let mut out: Vec<(i64, Vec<i64>)> = Vec::new();
    for (t, action, bytes, c) in rows {
        match action {
            1 | 2 => current[c] += bytes.abs(),
            4 => current[c] -= bytes.abs(),
            _ => current[c] += bytes,
        }
        let us = t.max(first) / 1000;
        match out.last_mut() {
            Some((last, v)) if *last == us => *v = current.clone(),
            _ => out.push((us, current.clone())),
        }
    }
    out
}

/// The bytes by role at the end of each time of `device` (its categories under no rules).
fn role_bytes_by_time(a: &Analysed) -> Vec<(i64, Vec<u64>)> {
    let categorised = Categorised::new(a, Default::default(), &|| 0.0).unwrap();
    let (dev, facts) = a.device_facts(0).unwrap();
    let cats = categorised.device(0);
    let rows = dev.trace.len();
    (0..rows)
        .filter(|&r| r + 1 == rows || dev.trace.time_us[r + 1] != dev.trace.time_us[r])
        .map(|r| {
            let totals = totals_at(facts, cats, r as u32 + 1);
            (dev.trace.time_us[r], totals.roles)
        })
        .collect()
}

/// The role each profiler category is read as (index = category).
const ROLE_OF: [Role; 8] = [
    Role::Parameters,
    Role::OptimizerState,
    Role::Inputs,
    Role::ForwardTemporaries,
    Role::Activations,
    Role::Gradients,
    Role::BackwardTemporaries,
    Role::Unknown,
];

/// Checks the bytes by role at each time of the trace against the bytes by category at that
/// time; a time whose rows changed nothing has no row of its own, so every expected time
/// must either appear or change nothing from the time before it.
fn check_roles(expected: &[(i64, Vec<i64>)], got: &[(i64, Vec<u64>)]) {
    let as_roles = |bytes: &[i64]| {
        let mut want = vec![0u64; Role::ALL.len()];
        for (c, &b) in bytes.iter().enumerate() {
            want[ROLE_OF[c] as usize] += b as u64;
        }
        want
    };
    let got: std::collections::HashMap<i64, &Vec<u64>> = got.iter().map(|(t, r)| (*t, r)).collect();
    let mut previous: Option<&Vec<i64>> = None;
    let mut checked = 0;
    for (t, bytes) in expected {
        match got.get(t) {
            Some(roles) => {
                assert_eq!(&as_roles(bytes), *roles, "at {t}");
                checked += 1;
            }
            None => assert_eq!(Some(bytes), previous, "at {t}: a change with no row"),
        }
        previous = Some(bytes);
    }
    assert_eq!(checked, got.len());
}

#[test]
fn the_real_raw_memory_timeline_has_the_profilers_bytes_by_category() {
    let Some(path) = other("facebookresearch__HolisticTraceAnalysis__tests__data__memory_analysis__memory_timeline.raw.gz") else {
        return;
    };
    let rows: Value = serde_json::from_slice(&read(&path)).unwrap();
    let expected = raw_category_bytes(rows.as_array().unwrap());
    let a = analysed(&path);
    assert_eq!(a.snapshot.source, Source::MemoryTimelineRaw);
    check_roles(&expected, &role_bytes_by_time(&a));
    let peak = expected
        .iter()
        .map(|(_, v)| v.iter().sum::<i64>())
        .max()
        .unwrap();
    let o = overview::build(&a, 0).unwrap();
    assert_eq!(o.get(MetricKey::PeakAllocatedBytes), Some(peak as u64));
    assert!(o.warnings.iter().any(|w| w.kind() == "categories-only"));
}

#[test]
fn a_memory_timeline_json_has_the_profilers_bytes_by_category() {
    let path = common::edge("memory_timeline.json");
    let json: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let times = json[0].as_array().unwrap();
    let sizes = json[1].as_array().unwrap();
    let expected: Vec<(i64, Vec<i64>)> = times
        .iter()
        .zip(sizes)
        .map(|(t, s)| {
            let s: Vec<i64> = s.as_array().unwrap()[1..]
                .iter()
                .map(|v| v.as_i64().unwrap())
                .collect();
            (t.as_i64().unwrap(), s)
        })
        .collect();
    let a = analysed(&path);
    assert_eq!(a.snapshot.source, Source::MemoryTimeline);
    check_roles(&expected, &role_bytes_by_time(&a));
}

#[test]
fn odd_values_are_skipped_and_said() {
    let a = analysed(&common::edge("kineto_odd_values.json"));
    let o = overview::build(&a, 0).unwrap();
    assert_eq!(o.get(MetricKey::PeakAllocatedBytes), Some(1024));
    assert_eq!(o.get(MetricKey::AllocatedEndBytes), Some(0));
    assert!(
        a.snapshot
            .notes
            .iter()
            .any(|n| matches!(n, ImportNote::Skipped { rows: 4, .. })),
        "{:?}",
        a.snapshot.notes
    );
}

#[test]
fn every_view_answers_on_every_profiler_output() {
    let mut files: Vec<PathBuf> = [
        "kineto_trace.json",
        "kineto_memory.json",
        "kineto_odd_values.json",
        "memory_timeline.json",
    ]
    .iter()
    .map(|n| common::edge(n))
    .collect();
    if let Some(dir) = common::real_fixtures_dir() {
        files.extend(
            std::fs::read_dir(dir.join("other"))
                .unwrap()
                .map(|e| e.unwrap().path()),
        );
    }
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let mut s = Session::new();
        s.load(&bytes[..], bytes.len() as u64, &|| 0.0, &mut |_| {})
            .unwrap();
        for device in s.analysed().unwrap().snapshot.device_ids() {
            let query = TableQuery {
                scope: Scope::Peak,
                ..TableQuery::default()
            };
            let table = Request::Table(TableRequest::View(ViewRequest {
                device,
                query,
                open: Vec::new(),
                first: 0,
                count: 50,
                reveal: None,
            }));
            let answer = s.answer(table, &|| 0.0);
            assert!(
                matches!(answer.map(|r| r.answer), Ok(Answer::Table(_))),
                "{}",
                path.display()
            );
        }
    }
}

#[test]
fn peak_tensors_give_a_table_with_shapes_modules_with_layers_folded_and_roles_by_phase() {
    use memsight_core::table::service::TableAnswer;
    use memsight_core::table::GroupBy;
    let path = common::edge("peak_tensors.json");
    let json: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let tensors = json["cuda:0"]["tensors"].as_array().unwrap();
    let sized: Vec<&Value> = tensors
        .iter()
        .filter(|t| t["size_bytes"].is_u64())
        .collect();
    let total: u64 = sized
        .iter()
        .map(|t| t["size_bytes"].as_u64().unwrap())
        .sum();

    let a = analysed(&path);
    assert_eq!(a.snapshot.source, Source::PeakTensors);
    assert!(a
        .snapshot
        .notes
        .contains(&ImportNote::Skipped { rows: 1, first: 6 }));
    let o = overview::build(&a, 0).unwrap();
    assert_eq!(o.get(MetricKey::PeakAllocatedBytes), Some(total));
    assert_eq!(o.get(MetricKey::AllocatedEndBytes), Some(total));
    assert_eq!(o.get(MetricKey::AllocationCount), Some(sized.len() as u64));
    // Roles by the profiler's phase, adding up to the total.
    let categorised = Categorised::new(&a, Default::default(), &|| 0.0).unwrap();
    let (_, facts) = a.device_facts(0).unwrap();
    let totals = totals_at(facts, categorised.device(0), facts.allocated.len() as u32);
    let by_phase = |prefix: &str| -> u64 {
        sized
            .iter()
            .filter(|t| t["phase"].as_str().unwrap().starts_with(prefix))
            .map(|t| t["size_bytes"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(totals.role(Role::Parameters), by_phase("setup"));
    assert_eq!(totals.role(Role::Activations), by_phase("forward"));
    assert_eq!(totals.role(Role::OptimizerState), by_phase("optimizer"));

    // The table: every tensor with its shape; grouped by module, the layers fold into one
    // group of two calls.
    let bytes = std::fs::read(&path).unwrap();
    let mut s = Session::new();
    s.load(&bytes[..], bytes.len() as u64, &|| 0.0, &mut |_| {})
        .unwrap();
    let mut view = |group_by: Option<GroupBy>, open: Vec<Vec<String>>| {
        let request = Request::Table(TableRequest::View(ViewRequest {
            device: 0,
            query: TableQuery {
                scope: Scope::All,
                group_by,
                ..TableQuery::default()
            },
            open,
            first: 0,
            count: 100,
            reveal: None,
        }));
        match s.answer(request, &|| 0.0).unwrap().answer {
            Answer::Table(TableAnswer::View(v)) => *v,
            _ => unreachable!(),
        }
    };
    let rows = view(None, Vec::new());
    assert!(rows.has_shapes);
    let mut shapes: Vec<String> = rows
        .lines
        .iter()
        .filter_map(|l| match l {
            memsight_core::table::groups::Line::Row { row, .. } => row.shape.clone(),
            _ => None,
        })
        .collect();
    let mut expected: Vec<String> = sized
        .iter()
        .map(|t| {
            let dims: Vec<String> = t["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.to_string())
                .collect();
            format!("[{}]", dims.join(", "))
        })
        .collect();
    shapes.sort();
    expected.sort();
    assert_eq!(shapes, expected);
    let grouped = view(Some(GroupBy::Module), Vec::new());
    let top: Vec<String> = grouped
        .lines
        .iter()
        .filter_map(|l| match l {
            memsight_core::table::groups::Line::Group(g) => Some(g.label.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(top, ["model"]);
    let opened = view(Some(GroupBy::Module), vec![vec![grouped_key(&grouped)]]);
    let labels: Vec<(String, u32, u64)> = opened
        .lines
        .iter()
        .filter_map(|l| match l {
            memsight_core::table::groups::Line::Group(g) if g.depth == 1 => {
                Some((g.label.clone(), g.occurrences, g.requested_bytes))
            }
            _ => None,
        })
        .collect();
    let layers: u64 = sized
        .iter()
        .filter(|t| t["module"].as_str().unwrap().starts_with("model.layers."))
        .map(|t| t["size_bytes"].as_u64().unwrap())
        .sum();
    assert!(
        labels.contains(&("layers.* ×2".to_string(), 2, layers)),
        "{labels:?}"
    );
}

/// The path of the first group of a table window.
fn grouped_key(view: &memsight_core::table::service::TableView) -> String {
    match &view.lines[0] {
        memsight_core::table::groups::Line::Group(g) => g.path.last().unwrap().clone(),
        _ => panic!("not grouped"),
    }
}

/// A trace whose memory events come from several threads, each under its own operator, is
/// read into the same model every time: its frames and stacks are numbered in the file's
/// order, not in the order a hash map happens to give its threads (found by fuzzing: decoding
/// the same bytes twice gave different frame numbers).
#[test]
fn a_kineto_trace_of_many_threads_reads_the_same_every_time() {
    let mut events = Vec::new();
    for thread in 0..8u64 {
        let ts = 1000 + 100 * thread;
        events.push(serde_json::json!({
            "ph": "X", "cat": "cpu_op", "name": format!("aten::op{thread}"),
            "pid": 1, "tid": thread, "ts": ts, "dur": 50,
            "args": {"Call stack": format!("model.py({thread}): forward{thread};train.py(5): <module>")}
        }));
        events.push(serde_json::json!({
            "ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
            "pid": 1, "tid": thread, "ts": ts + 10,
            "args": {"Device Type": 1, "Device Id": 0, "Addr": 4096 * (thread + 1),
                     "Bytes": 4096, "Total Allocated": 4096 * (thread + 1),
                     "Total Reserved": 1 << 21}
        }));
    }
    let file = serde_json::json!({"schemaVersion": 1, "traceEvents": events}).to_string();
    let first = decode_bytes(file.as_bytes()).unwrap();
    assert_eq!(first.source, Source::KinetoTrace);
    for _ in 0..10 {
        assert!(decode_bytes(file.as_bytes()).unwrap() == first);
    }
}
