//! `memsight overview` against values CPython computed independently
//! (`tests/expectations/real.json` for the real snapshots, `edge.json` for the hand-made
//! fixtures), and bad files against the reports the page shows.

// The core's test helpers: where the repository and the real fixtures are, reading JSON.
mod command;
#[path = "../../core/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use command::{assert_succeeded, json_lines, memsight, named_files};
use common::{read_json, real_fixtures_dir, repo};
use memsight_core::decode::{decode_bytes, ErrorReport};
use memsight_core::format;
use memsight_core::model::Action;
use serde_json::Value;

/// Fields of the expectations (per device) → metric keys of the overview (as in the page's
/// `data-metric`s; `tests/e2e/viewer.test.mjs` checks the page with the same table).
const EXPECTED_METRICS: [(&str, &str); 11] = [
    ("reserved_bytes", "reserved-end-bytes"),
    ("allocated_bytes", "allocated-end-bytes"),
    ("segments", "segment-count"),
    ("blocks", "block-count"),
    ("trace_entries", "trace-entries"),
    ("peak_allocated_bytes", "peak-allocated-bytes"),
    ("peak_reserved_bytes", "peak-reserved-bytes"),
    ("reserved_at_peak_bytes", "reserved-at-peak-bytes"),
    ("oom_index", "oom-event"),
    ("allocated_at_oom_bytes", "allocated-at-oom-bytes"),
    ("reserved_at_oom_bytes", "reserved-at-oom-bytes"),
];

/// Runs `memsight overview --json` on every file named in `expectations` that exists in
/// `dir`, in one run, and checks every device's numbers. Returns how many files were checked.
fn check_against(dir: &Path, expectations: &Value) -> usize {
    let expectations = expectations.get("files").unwrap_or(expectations);
    let (names, files) = named_files(dir, expectations);
    let output = memsight(&["overview", "--json"], &files);
    assert_succeeded(&output);
    let lines = json_lines(&output);
    assert_eq!(lines.len(), names.len(), "one JSON line per file");
    let mut failures = Vec::new();
    for ((name, file), got) in names.iter().zip(&files).zip(&lines) {
        assert_eq!(got["file"], file.display().to_string());
        let expected = &expectations[name.as_str()];
        if let Some(bytes) = expected.get("file_bytes") {
            assert_eq!(&got["file_bytes"], bytes, "{name}: file bytes");
        }
        let devices = expected.get("devices").unwrap_or(expected);
        let got_devices: Vec<&String> = got["devices"].as_object().unwrap().keys().collect();
        let want_devices: Vec<&String> = devices.as_object().unwrap().keys().collect();
        assert_eq!(got_devices, want_devices, "{name}: devices");
        for (device, want) in devices.as_object().unwrap() {
            let metrics = &got["devices"][device];
            let mut check = |key: &str, value: Option<u64>| {
                if metrics.get(key).and_then(Value::as_u64) != value {
                    failures.push(format!(
                        "{name} cuda:{device}: {key} = {}, expected {value:?}",
                        metrics.get(key).unwrap_or(&Value::Null)
                    ));
                }
            };
            for (field, key) in EXPECTED_METRICS {
                if let Some(value) = want.get(field) {
                    check(key, value.as_u64());
                }
            }
            for (action, count) in want["actions"].as_object().unwrap() {
                if Action::from_name(action) == Action::Other {
                    // Counted by name, beside the metrics.
                    let rows = got["unknown_actions"][device][action].as_u64();
                    assert_eq!(rows, count.as_u64(), "{name} {device}: {action}");
                    continue;
                }
                let key = format!("trace-{}-count", action.replace('_', "-"));
                check(&key, count.as_u64());
            }
            // Absent when there is no such event or allocation.
            if let Some(index) = want.get("peak_allocated_index").and_then(Value::as_i64) {
                check("peak-allocated-event", u64::try_from(index).ok());
            }
            if let Some(before) = want.get("pre_window_allocations").and_then(Value::as_u64) {
                check("allocations-before-trace", (before > 0).then_some(before));
            }
            if want.get("oom_index").is_none() {
                check("oom-event", None);
            }
            // Derived from CPython's numbers: what the allocator kept cached at the end, and
            // the efficiency then.
            let (reserved, allocated) = (
                want["reserved_bytes"].as_u64().unwrap(),
                want["allocated_bytes"].as_u64().unwrap(),
            );
            check("cached-free-bytes", Some(reserved - allocated));
            check(
                "efficiency-at-end-ppm",
                (reserved > 0).then(|| (allocated as u128 * 1_000_000 / reserved as u128) as u64),
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    names.len()
}

#[test]
fn json_output_equals_the_expectations_of_every_real_snapshot() {
    let Some(dir) = real_fixtures_dir() else {
        return;
    };
    let checked = check_against(
        &dir,
        &read_json(&repo().join("tests/expectations/real.json")),
    );
    assert!(
        checked > 0,
        "no expectation names a file in {}",
        dir.display()
    );
}

#[test]
fn json_output_equals_the_expectations_of_the_hand_made_fixtures() {
    // Pickles of every protocol, gzip and JSON, two devices, an empty snapshot…
    let checked = check_against(
        &repo().join("tests/fixtures"),
        &read_json(&repo().join("tests/expectations/edge.json")),
    );
    assert!(checked >= 15, "only {checked} fixtures checked");
}

#[test]
fn bad_files_fail_with_the_pages_message_offset_and_hint() {
    let fixtures = repo().join("tests/fixtures");
    let manifest = read_json(&fixtures.join("manifest.json"));
    let rejected: Vec<PathBuf> = manifest
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, entry)| entry["expect"] == "reject")
        .map(|(name, _)| fixtures.join(name))
        .collect();
    assert!(rejected.len() >= 5, "{rejected:?}");
    for file in &rejected {
        // What the page shows: the worker's report of the same decoder.
        let report: ErrorReport = decode_bytes(&std::fs::read(file).unwrap())
            .expect_err("a file the manifest says is rejected")
            .into_report();
        let output = memsight(&["overview"], std::slice::from_ref(file));
        assert_eq!(output.status.code(), Some(1), "{}", file.display());
        let stderr = String::from_utf8(output.stderr).unwrap();
        let mut expected = format!("memsight: {}: {}", file.display(), report.message);
        if let Some(offset) = report.offset {
            expected += &format!("\n  {}", format::problems::error_offset(offset));
        }
        if let Some(hint) = &report.hint {
            expected += &format!("\n  {hint}");
        }
        assert_eq!(stderr.trim_end(), expected);
        assert!(output.stdout.is_empty());

        let output = memsight(&["overview", "--json"], std::slice::from_ref(file));
        assert_eq!(output.status.code(), Some(1));
        let got: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(got["error"], serde_json::to_value(&report).unwrap());
    }
    // The truncated and the hostile file say where and what.
    let truncated =
        decode_bytes(&std::fs::read(fixtures.join("truncated.pickle")).unwrap()).unwrap_err();
    assert!(truncated.offset.is_some() && truncated.hint.is_some());
    let hostile = decode_bytes(&std::fs::read(fixtures.join("hostile_os_system.pickle")).unwrap())
        .unwrap_err();
    assert!(hostile.message.contains("GLOBAL"), "{}", hostile.message);
}

#[test]
fn good_files_are_printed_even_when_another_fails() {
    let files = [
        repo().join("tests/fixtures/truncated.pickle"),
        repo().join("static/example.pickle"),
    ];
    let output = memsight(&["overview", "--json"], &files);
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 2);
    assert!(lines[0].get("error").is_some());
    assert!(
        lines[1]["devices"]["0"]["peak-allocated-bytes"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn the_text_output_uses_the_pages_labels_and_units() {
    let output = memsight(&["overview"], &[repo().join("static/example.pickle")]);
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let expected = read_json(&repo().join("tests/expectations/example.json"));
    let peak = expected["devices"]["0"]["peak_allocated_bytes"]
        .as_u64()
        .expect("the example's peak");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("Peak allocated "))
        .expect("a peak line");
    assert!(line.ends_with(&format::bytes(peak)), "{line}");
    assert!(text.contains("cuda:0"));
    assert!(text.contains("Format: "));
}

#[test]
fn standard_input_is_streamed() {
    // A pipe cannot be read whole up front or seeked: the decoder streams it.
    let bytes = std::fs::read(repo().join("tests/fixtures/small.pickle.gz")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_memsight"))
        .args(["overview", "--json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        for chunk in bytes.chunks(997) {
            stdin.write_all(chunk).unwrap();
        }
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(output.status.success());
    let got: Value = serde_json::from_slice(&output.stdout).unwrap();
    let expected = read_json(&repo().join("tests/expectations/edge.json"));
    assert_eq!(got["file"], "-");
    assert_eq!(
        got["devices"]["0"]["reserved-end-bytes"],
        expected["small.pickle.gz"]["devices"]["0"]["reserved_bytes"]
    );
    assert_eq!(got["file_bytes"], expected["small.pickle.gz"]["file_bytes"]);
}

/// Every profiler output the page reads, the command line reads: the real Kineto trace's
/// source and its peak, the sum of its CUDA events' bytes from their lowest point.
#[test]
fn the_overview_reads_a_kineto_trace() {
    let Some(dir) = real_fixtures_dir() else {
        return;
    };
    let file = dir.join("other/pytorch__kineto__tb_plugin__samples__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz");
    if !file.is_file() {
        eprintln!("skipping: {} is absent", file.display());
        return;
    }
    let output = memsight(&["overview", "--json"], std::slice::from_ref(&file));
    assert_succeeded(&output);
    let printed = &json_lines(&output)[0];
    assert_eq!(printed["source"], "kineto_trace");
    // Independently: CPython-free, the trace's own numbers.
    let mut text = String::new();
    use std::io::Read;
    flate2::read::GzDecoder::new(std::fs::File::open(&file).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let trace: Value = serde_json::from_str(&text).unwrap();
    let mut events: Vec<(f64, usize, i64)> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, e)| e["name"] == "[memory]" && e["args"]["Device Type"] == 1)
        .map(|(i, e)| {
            (
                e["ts"].as_f64().unwrap(),
                i,
                e["args"]["Bytes"].as_i64().unwrap(),
            )
        })
        .collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut sum, mut low, mut high) = (0i64, 0i64, 0i64);
    for (_, _, bytes) in events {
        sum += bytes;
        low = low.min(sum);
        high = high.max(sum);
    }
    assert_eq!(printed["devices"]["0"]["peak-allocated-bytes"], high - low);
    let kinds: Vec<&str> = printed["warnings"]["0"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"cpu-memory-not-shown"), "{kinds:?}");
}
