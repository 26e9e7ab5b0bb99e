//! The fields PyTorch's snapshots carry since 2026, decoded from the fixtures written as
//! PyTorch writes them (`tests/python/make_format_fixtures.py`) and checked against the numbers
//! that script wrote (`tests/expectations/format.json`).

mod common;

use common::*;
use memsight_core::analysis::stacks::stack_text;
use memsight_core::analysis::Analysed;
use memsight_core::analysis::{Allocation, Origin};
use memsight_core::model::{Action, DeviceKind, Snapshot, StackId, NO_STACK, PINNED_HOST_DEVICE};
use serde_json::Value as Json;

fn facts(name: &str) -> Json {
    read_json(&repo().join("tests/expectations/format.json"))[name].clone()
}

fn analysed(name: &str) -> Analysed {
    Analysed::new(decode_file(&edge(name)).unwrap_or_else(|e| panic!("{name}: {e}")))
}

/// A stack as `file:line:name`, innermost first.
fn frames(s: &Snapshot, stack: StackId) -> Vec<String> {
    s.stack_frames(stack)
        .map(|f| format!("{}:{}:{}", s.str(f.filename), f.line, s.str(f.name)))
        .collect()
}

#[test]
fn pinned_host_memory_is_its_own_device_beside_cuda() {
    let expected = facts("pinned_host.pickle");
    let host = &expected["host"];
    let a = analysed("pinned_host.pickle");
    let s = &a.snapshot;
    assert_eq!(s.device_ids(), vec![0, PINNED_HOST_DEVICE]);
    assert_eq!(s.device_name(0), "cuda:0");
    assert_eq!(s.device_name(PINNED_HOST_DEVICE), "host (pinned)");
    assert_eq!(s.kind_of(PINNED_HOST_DEVICE), DeviceKind::PinnedHost);
    assert!(s.extra.iter().all(|(k, _)| !k.starts_with("host_")));
    let (device, f) = a.device_facts(PINNED_HOST_DEVICE).unwrap();
    let n = |k: &str| host[k].as_u64().unwrap();
    assert_eq!(device.segments.len() as u64, n("segments"));
    assert_eq!(device.segments[0].address, n("segment_address"));
    assert_eq!(device.blocks.len() as u64, n("blocks"));
    // Reserved and allocated bytes: `every_good_edge_fixture_matches_cpython` (device "host").
    assert_eq!(device.segments[0].total_size, n("reserved_bytes"));
    assert_eq!(device.trace.len() as u64, n("trace_entries"));
    assert_eq!(f.allocations.len() as u64, n("allocations"));
    assert_eq!(f.peak_allocated.bytes, n("peak_allocated_bytes"));
    assert_eq!(
        f.peak_allocated.row.map(u64::from),
        Some(n("peak_allocated_index"))
    );
    // The CUDA device is the small snapshot, untouched.
    let (cuda, _) = a.device_facts(0).unwrap();
    assert_eq!(cuda.trace.len(), 12);
    assert_eq!(cuda.segments.len(), 2);
    // The accelerator is shown first (`analysis`' tests: even when the host peaks higher).
    assert_eq!(
        a.default_device(),
        Some((0, memsight_core::analysis::DeviceChoice::Only))
    );
}

#[test]
fn annotations_accumulate_on_their_allocation_and_keep_the_row_numbers() {
    let expected = facts("annotate.pickle");
    let a = analysed("annotate.pickle");
    let s = &a.snapshot;
    let (device, f) = a.device_facts(0).unwrap();
    let trace = &device.trace;
    assert_eq!(
        trace.len() as u64,
        expected["trace_entries"].as_u64().unwrap()
    );
    let rows: Vec<u64> = (0..trace.len())
        .filter(|&r| trace.action[r] == Action::Annotate)
        .map(|r| r as u64)
        .collect();
    let want: Vec<u64> = expected["annotate_rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(rows, want);
    assert_eq!(f.annotations.len(), want.len());
    for allocation in expected["allocations"].as_array().unwrap() {
        let alloc_row = allocation["alloc_row"].as_u64().unwrap() as u32;
        let i = (0..f.allocations.len())
            .find(|&i| f.allocations.at(i).alloc_row == alloc_row)
            .unwrap() as u32;
        assert_eq!(
            f.allocations.at(i as usize).addr,
            allocation["address"].as_u64().unwrap()
        );
        let got: Vec<u32> = f.annotations_of(i).collect();
        let listed = allocation["annotations"].as_array().unwrap();
        assert_eq!(got.len(), listed.len(), "allocation at row {alloc_row}");
        for (&row, want) in got.iter().zip(listed) {
            let row = row as usize;
            assert_eq!(row as u64, want[0].as_u64().unwrap());
            assert_eq!(
                s.str(trace.user_metadata(row).unwrap()),
                want[1].as_str().unwrap()
            );
            assert_eq!(trace.time_us[row], want[2].as_i64().unwrap());
            let text = stack_text(s, trace.stack[row], false);
            assert_eq!(text.top_frame.as_deref(), want[3].as_str());
        }
    }
    // An annotation changes no memory: the curve holds its value across each.
    for &(_, row) in &f.annotations {
        let before = f.allocated_at(row);
        assert_eq!(f.allocated_at(row + 1), before, "row {row}");
    }
}

#[test]
fn fx_frames_carry_their_node_and_the_original_model_code() {
    let expected = facts("fx_augmented.pickle");
    let s = decode_file(&edge("fx_augmented.pickle")).unwrap();
    let nodes = expected["fx_nodes"].as_array().unwrap();
    assert_eq!(s.fx_nodes.len(), nodes.len());
    for want in nodes {
        let line = want["line"].as_i64().unwrap();
        let node = s
            .fx_nodes
            .iter()
            .find(|n| s.frames[n.frame as usize].line == line)
            .unwrap_or_else(|| panic!("no node at line {line}"));
        let text = |id: Option<u32>| id.map(|id| s.str(id).to_string());
        assert_eq!(text(node.name).as_deref(), want["node"].as_str());
        assert_eq!(text(node.op).as_deref(), want["op"].as_str());
        assert_eq!(text(node.target).as_deref(), want["target"].as_str());
        let original: Vec<String> = want["original"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        assert_eq!(frames(&s, node.original), original);
        assert!(s
            .str(s.frames[node.frame as usize].filename)
            .contains("fx_generated_"));
        assert_eq!(s.fx_node(node.frame), Some(node));
    }
}

#[test]
fn forward_frames_are_read_from_their_traceback_strings() {
    let expected = facts("forward_frames.pickle");
    let s = decode_file(&edge("forward_frames.pickle")).unwrap();
    let trace = &s.devices[0].trace;
    let rows = expected["forward_rows"].as_object().unwrap();
    for row in 0..trace.len() {
        match rows.get(&row.to_string()) {
            Some(want) => {
                let want: Vec<String> = want
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_string())
                    .collect();
                assert_eq!(frames(&s, trace.forward_stack(row)), want, "row {row}");
            }
            None => assert_eq!(trace.forward_stack(row), NO_STACK, "row {row}"),
        }
    }
    assert!(s.features.forward_frames);
}

#[test]
fn shape_data_gives_allocations_their_shape_and_dtype_and_source_code_is_kept() {
    let expected = facts("source_and_shapes.pickle");
    let s = decode_file(&edge("source_and_shapes.pickle")).unwrap();
    let paths: Vec<&str> = s.source_code.iter().map(|(p, _)| p.as_str()).collect();
    let mut sorted = paths.clone();
    sorted.sort();
    let want: Vec<&str> = expected["source_paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(sorted, want);
    for (path, text) in &s.source_code {
        assert_eq!(
            text.len() as u64,
            expected["source_bytes"][path].as_u64().unwrap()
        );
    }
    let trace = &s.devices[0].trace;
    let shapes = expected["shapes"].as_object().unwrap();
    for row in 0..trace.len() {
        let got = trace
            .shape(row)
            .map(|id| (s.str(id), trace.dtype(row).map(|d| s.str(d))));
        match shapes.get(&row.to_string()) {
            Some(want) => assert_eq!(
                got,
                Some((want[0].as_str().unwrap(), want[1].as_str())),
                "row {row}"
            ),
            None => assert_eq!(got, None, "row {row}"),
        }
    }
    assert!(s
        .extra
        .iter()
        .all(|(k, _)| k != "shape_data" && k != "source_code"));
}

#[test]
fn shape_data_gives_blocks_alive_before_the_trace_their_shape_and_dtype() {
    let expected = facts("source_and_shapes.pickle");
    let before = expected["shapes_before"].as_object().unwrap();
    let shapes = expected["shapes"].as_object().unwrap();
    let a = analysed("source_and_shapes.pickle");
    let s = &a.snapshot;
    let (device, f) = a.device_facts(0).unwrap();
    let trace = &device.trace;
    let tensor = |alloc: &Allocation| {
        alloc
            .shape(trace)
            .map(|id| (s.str(id), alloc.dtype(trace).map(|d| s.str(d))))
    };
    fn want(w: &Json) -> (&str, Option<&str>) {
        (w[0].as_str().unwrap(), w[1].as_str())
    }
    let mut seen = 0;
    for alloc in f.allocations.iter() {
        match alloc.origin() {
            Origin::Trace => {
                let row = alloc.alloc_row.to_string();
                assert_eq!(tensor(&alloc), shapes.get(&row).map(want), "row {row}");
            }
            _ => {
                let addr = alloc.addr.to_string();
                assert_eq!(tensor(&alloc), before.get(&addr).map(want), "{addr}");
                seen += usize::from(before.contains_key(&addr));
            }
        }
    }
    assert_eq!(
        seen,
        before.len(),
        "every block from before the trace with a shape"
    );
    assert!(trace.has_shapes());
}

#[test]
fn unknown_actions_are_counted_by_name_never_an_error() {
    let expected = facts("npu_workspace.pickle");
    let a = analysed("npu_workspace.pickle");
    let s = &a.snapshot;
    assert_eq!(
        s.device_kind.name(),
        expected["device_kind"].as_str().unwrap()
    );
    assert_eq!(s.device_name(0), "npu:0");
    let (device, f) = a.device_facts(0).unwrap();
    assert_eq!(
        device.trace.len() as u64,
        expected["trace_entries"].as_u64().unwrap()
    );
    let counts = memsight_core::overview::unknown_actions(&device.trace, s);
    let want: Vec<(String, u64)> = expected["unknown_actions"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .collect();
    assert_eq!(counts, want);
    assert_eq!(
        f.allocations.len() as u64,
        expected["allocations"].as_u64().unwrap()
    );
    assert_eq!(
        f.peak_allocated.bytes,
        expected["peak_allocated_bytes"].as_u64().unwrap()
    );
}

#[test]
fn who_holds_memory_names_backward_and_compiled_allocations_by_the_models_code() {
    for name in ["forward_frames.pickle", "fx_augmented.pickle"] {
        let a = analysed(name);
        let (device, f) = a.device_facts(0).unwrap();
        // Every allocation, made in the trace: alive somewhere, counted once, at its site.
        let all: Vec<u32> = (0..f.allocations.len() as u32).collect();
        let live = memsight_core::analysis::live::live_set(&a.snapshot, &device.trace, f, &all, 10);
        let got: std::collections::BTreeMap<String, (u64, u64)> = live
            .call_sites
            .iter()
            .map(|c| {
                (
                    c.name.clone().unwrap_or_default(),
                    (u64::from(c.count), c.bytes),
                )
            })
            .collect();
        let want: std::collections::BTreeMap<String, (u64, u64)> = facts(name)["callsites"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), (v[0].as_u64().unwrap(), v[1].as_u64().unwrap())))
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn an_allocations_detail_says_what_its_table_row_says() {
    use memsight_core::analysis::categories::categorised::Categorised;
    use memsight_core::analysis::elements::AllocationElements;
    use memsight_core::table::columns::{DeviceColumns, Rows};
    use memsight_core::timeline::inspect::detail;
    use memsight_core::timeline::TimelineKind;

    let mut seen = (0, 0, 0);
    for name in [
        "annotate.pickle",
        "source_and_shapes.pickle",
        "forward_frames.pickle",
    ] {
        let a = analysed(name);
        let categorised = Categorised::new(&a, Default::default(), &|| 0.0).unwrap();
        for (position, (device, facts)) in a.snapshot.devices.iter().zip(&a.facts).enumerate() {
            let columns = DeviceColumns::new(&a.snapshot, device, facts);
            let rows = Rows {
                snapshot: &a.snapshot,
                device,
                facts,
                categories: categorised.device(position),
                columns: &columns,
                block_sizes: None,
            };
            let elements = AllocationElements::new(facts);
            for i in 0..facts.allocations.len() as u32 {
                let row = rows.row(i);
                let index = elements.position(i as usize);
                let d = detail(
                    &a.snapshot,
                    device,
                    facts,
                    Default::default(),
                    TimelineKind::Allocations,
                    index,
                    true,
                )
                .unwrap();
                let at = format!("{name} allocation {i}");
                assert_eq!(d.shape, row.shape, "{at}");
                assert_eq!(d.dtype, row.dtype, "{at}");
                assert_eq!(d.annotations, row.annotations, "{at}");
                // The table names a backward allocation by its forward code.
                match &d.forward_top_frame {
                    Some(forward) => {
                        assert_eq!(Some(forward), row.top_frame.as_ref(), "{at}");
                        assert!(!d.forward_frames.is_empty(), "{at}");
                        seen.2 += 1;
                    }
                    None => assert_eq!(d.top_frame, row.top_frame, "{at}"),
                }
                seen.0 += usize::from(d.shape.is_some());
                seen.1 += d.annotations.len();
            }
        }
    }
    assert!(seen.0 > 0 && seen.1 > 0 && seen.2 > 0, "{seen:?}");
}
