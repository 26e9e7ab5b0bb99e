//! The command line's JSON for what PyTorch's snapshots carry since 2026, against the numbers
//! the fixtures' generator wrote (`tests/expectations/format.json`): pinned host memory as the
//! device `host` beside `0`, unknown actions counted by name, annotations, shapes and dtypes of
//! allocations, and compiled and backward allocations grouped under the model code that made
//! them.

mod command;
#[path = "../../core/tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;

use command::{assert_succeeded, json_lines, memsight};
use common::{edge, read_json, repo};
use serde_json::Value;

fn facts(name: &str) -> Value {
    read_json(&repo().join("tests/expectations/format.json"))[name].clone()
}

/// The one JSON line `memsight ARGS FILE` prints.
fn run(args: &[&str], name: &str) -> Value {
    let output = memsight(args, &[edge(name)]);
    assert_succeeded(&output);
    let mut lines = json_lines(&output);
    assert_eq!(lines.len(), 1);
    lines.remove(0)
}

#[test]
fn overview_shows_pinned_host_memory_as_its_own_device() {
    let host = &facts("pinned_host.pickle")["host"];
    let got = run(&["overview", "--json"], "pinned_host.pickle");
    let devices: Vec<&String> = got["devices"].as_object().unwrap().keys().collect();
    assert_eq!(devices, ["0", "host"]);
    assert_eq!(got["device_names"]["0"], "cuda:0");
    assert_eq!(got["device_names"]["host"], "host (pinned)");
    let metrics = &got["devices"]["host"];
    assert_eq!(
        metrics["peak-allocated-bytes"],
        host["peak_allocated_bytes"]
    );
    assert_eq!(
        metrics["peak-allocated-event"],
        host["peak_allocated_index"]
    );
    assert_eq!(metrics["segment-count"], host["segments"]);
    assert_eq!(metrics["trace-entries"], host["trace_entries"]);
    assert_eq!(metrics["allocation-count"], host["allocations"]);
    // The host is asked for by name, in every command that takes a device.
    let table = run(
        &["table", "--device", "host", "--scope", "all", "--json"],
        "pinned_host.pickle",
    );
    let rows = table["devices"]["host"]["rows"].as_array().unwrap();
    assert_eq!(rows.len() as u64, host["allocations"].as_u64().unwrap());
    let segments = run(
        &["segments", "--device", "host", "--json"],
        "pinned_host.pickle",
    );
    assert_eq!(
        segments["devices"]["host"]["segments"][0]["address"],
        host["segment_address"]
    );
    let output = memsight(&["table", "--device", "gpu"], &[edge("pinned_host.pickle")]);
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("a device index, or `host`"), "{stderr}");
}

#[test]
fn overview_counts_unknown_actions_by_name() {
    let expected = facts("npu_workspace.pickle");
    let got = run(&["overview", "--json"], "npu_workspace.pickle");
    assert_eq!(got["unknown_actions"]["0"], expected["unknown_actions"]);
    assert_eq!(got["device_names"]["0"], "npu:0");
    assert_eq!(
        got["devices"]["0"]["trace-other-count"],
        Value::from(3),
        "every unknown row counted once more, together"
    );
}

#[test]
fn table_rows_carry_their_annotations() {
    let expected = facts("annotate.pickle");
    let got = run(&["table", "--scope", "all", "--json"], "annotate.pickle");
    let rows = got["devices"]["0"]["rows"].as_array().unwrap();
    let mut annotated = 0;
    for row in rows {
        let want = expected["allocations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["alloc_row"] == row["alloc_event"]);
        let Some(want) = want else {
            assert!(row.get("annotations").is_none(), "{row}");
            continue;
        };
        annotated += 1;
        let got: Vec<(u64, &str, i64, &str)> = row["annotations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["event"].as_u64().unwrap(),
                    a["metadata"].as_str().unwrap(),
                    a["time_us"].as_i64().unwrap(),
                    a["site"].as_str().unwrap(),
                )
            })
            .collect();
        let want: Vec<(u64, &str, i64, &str)> = want["annotations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a[0].as_u64().unwrap(),
                    a[1].as_str().unwrap(),
                    a[2].as_i64().unwrap(),
                    a[3].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(got, want);
    }
    assert_eq!(annotated, 3);
    // Searchable: the filter finds an allocation by its annotation.
    let found = run(
        &["table", "--scope", "all", "--filter", "KV CACHE", "--json"],
        "annotate.pickle",
    );
    let rows = found["devices"]["0"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["alloc_event"], 10);
}

#[test]
fn overview_lists_the_programs_source_files() {
    let expected = facts("source_and_shapes.pickle");
    let got = run(&["overview", "--json"], "source_and_shapes.pickle");
    assert_eq!(got["source_code"], expected["source_bytes"]);
    // Redacted, the paths are rewritten as every path of the model is.
    let redacted = run(
        &["overview", "--json", "--redact"],
        "source_and_shapes.pickle",
    );
    let paths: Vec<&String> = redacted["source_code"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(paths.len(), 2);
    assert!(paths.iter().all(|p| !p.contains("/home/user")), "{paths:?}");
}

#[test]
fn table_rows_carry_shape_and_dtype_from_shape_data() {
    let expected = facts("source_and_shapes.pickle");
    let shapes = expected["shapes"].as_object().unwrap();
    let got = run(
        &["table", "--scope", "all", "--json"],
        "source_and_shapes.pickle",
    );
    let before = expected["shapes_before"].as_object().unwrap();
    let rows = got["devices"]["0"]["rows"].as_array().unwrap();
    let mut seen = 0;
    let mut seen_before = 0;
    for row in rows {
        let event = row["alloc_event"].to_string();
        match shapes.get(&event) {
            Some(want) => {
                seen += 1;
                assert_eq!(row["shape"], want[0], "event {event}");
                assert_eq!(row["dtype"], want[1], "event {event}");
            }
            // Made before the trace: the tensor recorded at its address.
            None if row["alloc_event"].is_null() => {
                let want = &before[&row["address"].to_string()];
                seen_before += 1;
                assert_eq!(row["shape"], want[0], "{}", row["address"]);
                assert_eq!(row["dtype"], want[1], "{}", row["address"]);
            }
            None => {
                assert!(row["shape"].is_null(), "event {event}");
                assert!(row.get("dtype").is_none(), "event {event}");
            }
        }
    }
    assert_eq!(seen, shapes.len());
    assert_eq!(
        seen_before,
        before.len(),
        "every block alive before the trace"
    );
}

/// `{group: (allocations, requested bytes)}` of the top level of `table --group-by BY
/// --scope all`.
fn groups(name: &str, by: &str) -> BTreeMap<String, (u64, u64)> {
    let got = run(
        &["table", "--group-by", by, "--scope", "all", "--json"],
        name,
    );
    got["devices"]["0"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["path"].as_array().unwrap().len() == 1)
        .map(|g| {
            let count = g["count"].as_u64().unwrap();
            let bytes = g["requested_bytes"].as_u64().unwrap();
            (g["label"].as_str().unwrap().to_string(), (count, bytes))
        })
        .collect()
}

/// What the generator wrote under `what` (`callsites`, `modules`) for fixture `name`.
fn expected(name: &str, what: &str) -> BTreeMap<String, (u64, u64)> {
    facts(name)[what]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), (v[0].as_u64().unwrap(), v[1].as_u64().unwrap())))
        .collect()
}

/// The call sites and the model modules of fixture `name` are the generator's.
fn check_groups(name: &str) {
    for (by, what) in [("callsite", "callsites"), ("module", "modules")] {
        assert_eq!(groups(name, by), expected(name, what), "{name} by {by}");
    }
}

#[test]
fn compiled_allocations_group_under_the_original_model_code() {
    check_groups("fx_augmented.pickle");
    let got = run(
        &["table", "--scope", "all", "--json"],
        "fx_augmented.pickle",
    );
    let rows = got["devices"]["0"]["rows"].as_array().unwrap();
    let first = rows
        .iter()
        .find(|r| r["alloc_event"] == 4)
        .expect("the addmm_1 allocation");
    assert_eq!(
        first["compiled"],
        "compiled node `addmm_1` (call_function aten.addmm.default) from model.py:44 forward"
    );
    assert_eq!(first["top_frame"], "/home/user/proj/model.py:44:forward");
    assert_eq!(first["compiled_node"]["name"], "addmm_1");
    let eager = rows.iter().find(|r| r["alloc_event"] == 5).unwrap();
    assert!(eager.get("compiled").is_none());
    // The node's name finds its allocations.
    let found = run(
        &["table", "--scope", "all", "--filter", "addmm_1", "--json"],
        "fx_augmented.pickle",
    );
    assert_eq!(found["devices"]["0"]["rows"].as_array().unwrap().len(), 1);
}

#[test]
fn backward_allocations_group_under_the_forward_code_that_made_them() {
    check_groups("forward_frames.pickle");
}

#[test]
fn digests_compare_compiled_and_backward_allocations_by_the_models_code() {
    // At the peak every allocation of these two fixtures is alive.
    for name in ["fx_augmented.pickle", "forward_frames.pickle"] {
        let digest = run(&["digest"], name);
        let device = &digest["devices"][0];
        let sites: BTreeMap<String, (u64, u64)> = device["call_sites"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let count = s["count"].as_u64().unwrap();
                let bytes = s["bytes"].as_u64().unwrap();
                (s["label"].as_str().unwrap().to_string(), (count, bytes))
            })
            .collect();
        assert_eq!(sites, expected(name, "callsites"), "{name}");
    }
    let digest = run(&["digest"], "pinned_host.pickle");
    let kinds: Vec<(&Value, &Value)> = digest["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (&d["device"], &d["device_kind"]))
        .collect();
    assert_eq!(kinds.len(), 2);
    assert_eq!(kinds[1].1, "pinned_host");
}

#[test]
fn the_reports_largest_allocations_carry_their_tensor_as_the_table_does() {
    let name = "source_and_shapes.pickle";
    let report = run(&["report", "--json"], name);
    let table = run(&["table", "--scope", "peak", "--json"], name);
    let rows = table["devices"]["0"]["rows"].as_array().unwrap();
    let largest = report["devices"]["0"]["peak"]["largest"]
        .as_array()
        .unwrap();
    let mut shaped = 0;
    for a in largest {
        let row = rows
            .iter()
            .find(|r| r["allocation"] == a["allocation"])
            .expect("alive at the peak in the table too");
        assert_eq!(a["shape"], row["shape"], "{a}");
        assert_eq!(a.get("dtype"), row.get("dtype"), "{a}");
        shaped += usize::from(!a["shape"].is_null());
    }
    assert!(shaped > 0);
    let markdown = memsight(&["report"], &[edge(name)]);
    assert_succeeded(&markdown);
    let text = String::from_utf8_lossy(&markdown.stdout);
    assert!(text.contains("| Call site | Tensor |"), "{text}");
    assert!(text.contains("torch.float32 \\[1000, 1000\\]"), "{text}");
}
