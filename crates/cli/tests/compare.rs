//! `memsight files` and `memsight compare` against values CPython computed independently
//! (`tests/expectations/real.json`), and against each other: a file compared with itself is
//! zero everywhere; the files table's CSV and JSON carry the same exact numbers.

mod command;
#[path = "../../core/tests/common/mod.rs"]
mod common;

use command::{assert_succeeded, json_lines, memsight, named_files};
use common::{read_json, real_fixtures_dir, repo};
use serde_json::Value;

/// Fields of the expectations (per device) → columns of the files table.
const EXPECTED: [(&str, &str); 5] = [
    ("peak_allocated_bytes", "peak_allocated_bytes"),
    ("reserved_at_peak_bytes", "reserved_at_peak_bytes"),
    ("peak_reserved_bytes", "peak_reserved_bytes"),
    ("allocated_bytes", "allocated_end_bytes"),
    ("reserved_bytes", "reserved_end_bytes"),
];

#[test]
fn the_files_table_has_cpythons_numbers_in_json_and_csv() {
    let Some(dir) = real_fixtures_dir() else {
        return;
    };
    let expectations = read_json(&repo().join("tests/expectations/real.json"));
    let (names, files) = named_files(&dir, &expectations);
    let expectations = expectations.get("files").unwrap_or(&expectations);
    let output = memsight(&["files", "--json"], &files);
    assert_succeeded(&output);
    let rows = json_lines(&output)[0]["files"].as_array().unwrap().clone();
    let csv = memsight(&["files", "--csv"], &files);
    assert_succeeded(&csv);
    let csv = String::from_utf8(csv.stdout).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let csv_rows: Vec<Vec<String>> = lines
        .map(|l| {
            l.rsplitn(header.len(), ',')
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .map(|mut cells| {
            cells.reverse();
            cells
        })
        .collect();
    assert_eq!(csv_rows.len(), rows.len());
    let mut checked = 0;
    for (row, cells) in rows.iter().zip(&csv_rows) {
        let file = row["name"].as_str().unwrap();
        let name = names
            .iter()
            .find(|n| file.ends_with(n.as_str()))
            .expect("a named file");
        let device = row["device"].as_u64().unwrap().to_string();
        let expected = &expectations[name.as_str()]["devices"][&device];
        for (field, column) in EXPECTED {
            assert_eq!(
                row[column], expected[field],
                "{name} cuda:{device} {column}"
            );
            let at = header.iter().position(|h| *h == column).unwrap();
            assert_eq!(cells[at], row[column].to_string(), "{name} {column} in CSV");
        }
        // The roles at the peak add up to the peak.
        let roles: u64 = row["roles_at_peak"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(Value::from(roles), row["peak_allocated_bytes"], "{name}");
        checked += 1;
    }
    assert!(
        checked >= names.len(),
        "{checked} rows for {} files",
        names.len()
    );
}

#[test]
fn a_file_compared_with_itself_is_zero_everywhere() {
    let Some(dir) = real_fixtures_dir() else {
        return;
    };
    let file = dir.join(
        "Wedsonlin__assignment2-systems__results__medium_1024_inference_memory_snapshot.pickle",
    );
    if !file.is_file() {
        eprintln!("skipping: {} is absent", file.display());
        return;
    }
    let output = memsight(&["compare", "--json"], &[file.clone(), file]);
    assert_succeeded(&output);
    let out = &json_lines(&output)[0]["comparison"];
    let mut deltas = 0;
    visit(out, &mut |key, value| {
        if key.contains("delta") {
            deltas += 1;
            assert!(value.is_null() || value == 0, "{key} = {value}");
        }
        if key == "change" {
            assert_eq!(value, "same");
        }
    });
    assert!(deltas > 50, "only {deltas} deltas");
}

#[test]
fn two_files_differ_by_their_peaks() {
    let Some(dir) = real_fixtures_dir() else {
        return;
    };
    let expectations = read_json(&repo().join("tests/expectations/real.json"));
    let a = "kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_forward_mixed.pickle";
    let b = "kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_fullstep_.pickle";
    if !dir.join(a).is_file() || !dir.join(b).is_file() {
        eprintln!("skipping: {a} or {b} is absent");
        return;
    }
    let output = memsight(&["compare", "--json"], &[dir.join(a), dir.join(b)]);
    assert_succeeded(&output);
    let out = &json_lines(&output)[0]["comparison"];
    let peak = |name: &str| {
        let files = expectations.get("files").unwrap_or(&expectations);
        files[name]["devices"]["0"]["peak_allocated_bytes"]
            .as_i64()
            .unwrap()
    };
    let metric = out["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "peak-allocated-bytes")
        .unwrap();
    assert_eq!(metric["delta"].as_i64().unwrap(), peak(b) - peak(a));
    // The optimizer's state is new in the full step.
    let optimizer = out["roles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "optimizer_state")
        .unwrap();
    assert_eq!(optimizer["a_bytes"], 0);
    assert!(optimizer["delta_bytes"].as_i64().unwrap() > 0);
    let text = memsight(&["compare"], &[dir.join(a), dir.join(b)]);
    assert_succeeded(&text);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("Peak allocated"), "{text}");
    assert!(text.contains("Call sites that changed"), "{text}");
}

#[test]
fn a_bad_file_is_reported_and_the_others_still_listed() {
    let good = repo().join("tests/fixtures/small_p4.pickle");
    let bad = repo().join("tests/fixtures/truncated.pickle");
    let output = memsight(&["files", "--csv"], &[good, bad.clone()]);
    assert!(!output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("truncated.pickle"), "{stderr}");
    let output = memsight(&["compare"], &[bad.clone(), bad]);
    assert!(!output.status.success());
    let output = memsight(&["files", "--sort", "nope"], &[]);
    assert!(!output.status.success());
}

fn visit(value: &Value, f: &mut dyn FnMut(&str, &Value)) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                f(k, v);
                visit(v, f);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| visit(v, f)),
        _ => {}
    }
}

#[test]
fn the_phase_report_says_the_same_in_json_and_markdown() {
    let Some(dir) = real_fixtures_dir() else {
        return;
    };
    let file = dir.join("LINYUNLinYun__CS336-assignment2-systems__cs336_systems__results__memory_profiles__xl_ctx512_full_step_bf16.pickle");
    if !file.is_file() {
        eprintln!("skipping: {} is absent", file.display());
        return;
    }
    let output = memsight(&["phases", "--json"], std::slice::from_ref(&file));
    assert_succeeded(&output);
    let report = &json_lines(&output)[0]["devices"]["0"];
    let rows = report["rows"].as_array().unwrap();
    let labels: Vec<&str> = rows.iter().map(|r| r["phase"].as_str().unwrap()).collect();
    assert_eq!(
        labels[..4],
        ["zero_grad", "forward", "backward", "optimizer_step"]
    );
    assert_eq!(report["source"], "annotations");
    assert_eq!(report["scopes"].as_array().unwrap().len(), 2);
    // The first phase starts from the curve's start: the peak of the file before its trace.
    let overview = memsight(&["overview", "--json"], std::slice::from_ref(&file));
    let start = json_lines(&overview)[0]["devices"]["0"]["peak-allocated-bytes"].clone();
    assert!(rows[0]["before_bytes"].as_u64().unwrap() <= start.as_u64().unwrap());
    let markdown = memsight(&["phases"], std::slice::from_ref(&file));
    assert_succeeded(&markdown);
    let text = String::from_utf8(markdown.stdout).unwrap();
    let forward = text
        .lines()
        .find(|l| l.starts_with("| Forward | 1 |"))
        .unwrap();
    let delta = rows[1]["delta_bytes"].as_i64().unwrap();
    assert!(
        forward.contains(&memsight_core::format::bytes_delta(delta)),
        "{forward}"
    );
    assert!(
        text.contains("record\\_function scopes") || text.contains("record_function scopes"),
        "{text}"
    );
}
