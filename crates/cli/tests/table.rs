//! `memsight table` against values CPython computed independently
//! (`tests/expectations/real.json`): the rows alive at the peak add up to the peak, in JSON and
//! in CSV; grouping by module folds the 24 layers of a model; a bad filter fails saying why.

mod command;
#[path = "../../core/tests/common/mod.rs"]
mod common;

use command::{assert_succeeded, json_lines, memsight, named_files};
use common::{read_json, real_fixtures_dir, repo};
use serde_json::Value;

const MEDIUM: &str =
    "Wedsonlin__assignment2-systems__results__medium_1024_inference_memory_snapshot.pickle";

#[test]
fn rows_alive_at_the_peak_add_up_to_the_peak_cpython_computed() {
    let Some(dir) = real_fixtures_dir() else {
        return;
    };
    let expectations = read_json(&repo().join("tests/expectations/real.json"));
    let expectations = expectations.get("files").unwrap_or(&expectations);
    let (names, files) = named_files(&dir, expectations);
    let output = memsight(&["table", "--json", "--scope", "peak"], &files);
    assert_succeeded(&output);
    let lines = json_lines(&output);
    assert_eq!(lines.len(), names.len());
    for (name, got) in names.iter().zip(&lines) {
        let devices = &expectations[name.as_str()]["devices"];
        for (device, want) in devices.as_object().unwrap() {
            let table = &got["devices"][device];
            let peak = want["peak_allocated_bytes"].as_u64().unwrap();
            assert_eq!(
                table["totals"]["requested_bytes"].as_u64(),
                Some(peak),
                "{name} {device}"
            );
            let rows = table["rows"].as_array().unwrap();
            let sum: u64 = rows
                .iter()
                .map(|r| r["requested_bytes"].as_u64().unwrap())
                .sum();
            assert_eq!(sum, peak, "{name} {device}");
            assert!(rows
                .iter()
                .all(|r| r["size_bytes"].as_u64() >= r["requested_bytes"].as_u64()));
            // Largest blocks first.
            let sizes: Vec<u64> = rows
                .iter()
                .map(|r| r["size_bytes"].as_u64().unwrap())
                .collect();
            assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "{name} {device}");
        }
    }
}

#[test]
fn the_csv_has_a_header_and_every_row() {
    let Some(dir) = real_fixtures_dir() else {
        return;
    };
    let file = vec![dir.join(MEDIUM)];
    let json = memsight(&["table", "--json", "--scope", "all"], &file);
    assert_succeeded(&json);
    let totals = json_lines(&json)[0]["devices"]["0"]["totals"].clone();
    let csv = memsight(
        &["table", "--csv", "--scope", "all", "--sort", "address:asc"],
        &file,
    );
    assert_succeeded(&csv);
    let text = String::from_utf8(csv.stdout).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|&c| c == name).unwrap();
    let (requested, size, address) = (
        column("requested_bytes"),
        column("size_bytes"),
        column("address"),
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(Some(rows.len() as u64), totals["count"].as_u64());
    let sum = |c: usize| -> u64 { rows.iter().map(|r| r[c].parse::<u64>().unwrap()).sum() };
    assert_eq!(Some(sum(requested)), totals["requested_bytes"].as_u64());
    assert_eq!(Some(sum(size)), totals["size_bytes"].as_u64());
    let addresses: Vec<u64> = rows
        .iter()
        .map(|r| u64::from_str_radix(r[address].trim_start_matches("0x"), 16).unwrap())
        .collect();
    assert!(
        addresses.windows(2).all(|w| w[0] <= w[1]),
        "sorted by address"
    );
}

#[test]
fn grouping_by_module_folds_the_layers_and_groups_add_up() {
    let Some(dir) = real_fixtures_dir() else {
        return;
    };
    let file = vec![dir.join(MEDIUM)];
    let output = memsight(
        &["table", "--json", "--scope", "all", "--group-by", "module"],
        &file,
    );
    assert_succeeded(&output);
    let table = json_lines(&output)[0]["devices"]["0"].clone();
    let groups = table["groups"].as_array().unwrap();
    let top: Vec<&Value> = groups
        .iter()
        .filter(|g| g["path"].as_array().unwrap().len() == 1)
        .collect();
    let sum: u64 = top
        .iter()
        .map(|g| g["requested_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(Some(sum), table["totals"]["requested_bytes"].as_u64());
    let layers: Vec<&&Value> = top.iter().filter(|g| g["occurrences"] == 24).collect();
    assert_eq!(layers.len(), 1, "{top:?}");
    let output = memsight(
        &[
            "table",
            "--scope",
            "all",
            "--group-by",
            "module",
            "--limit",
            "3",
        ],
        &file,
    );
    assert_succeeded(&output);
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("forward ×24"), "{text}");
    assert!(text.contains("call 1 of 24"), "{text}");
}

#[test]
fn sizes_are_read_in_binary_units() {
    let Some(dir) = real_fixtures_dir() else {
        return;
    };
    let file = vec![dir.join(MEDIUM)];
    let count = |args: &[&str]| {
        let output = memsight(
            &[&["table", "--json", "--scope", "all"], args].concat(),
            &file,
        );
        assert_succeeded(&output);
        json_lines(&output)[0]["devices"]["0"]["totals"]["count"]
            .as_u64()
            .unwrap()
    };
    let in_units = count(&["--min-bytes", "16MiB", "--max-bytes", "0.25GiB"]);
    assert_eq!(
        in_units,
        count(&["--min-bytes", "16777216", "--max-bytes", "268435456"])
    );
    assert!(in_units > 0);
}

#[test]
fn a_filter_that_cannot_be_used_fails_saying_why() {
    let Some(dir) = real_fixtures_dir() else {
        return;
    };
    let output = memsight(&["table", "--filter", "(", "--regex"], &[dir.join(MEDIUM)]);
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("regular expression does not compile"),
        "{stderr}"
    );
    let output = memsight(&["table", "--min-bytes", "3 parsecs"], &[dir.join(MEDIUM)]);
    assert!(!output.status.success());
    assert!(String::from_utf8(output.stderr)
        .unwrap()
        .contains("not a unit"));
    let output = memsight(&["table", "--scope", "soon"], &[dir.join(MEDIUM)]);
    assert!(!output.status.success());
    assert!(String::from_utf8(output.stderr)
        .unwrap()
        .contains("not a scope"));
}

#[test]
fn segments_at_the_end_are_the_final_segments_cpython_counted() {
    let Some(dir) = real_fixtures_dir() else {
        return;
    };
    let expectations = read_json(&repo().join("tests/expectations/real.json"));
    let expectations = expectations.get("files").unwrap_or(&expectations);
    let (names, files) = named_files(&dir, expectations);
    let output = memsight(&["segments", "--json", "--at", "end"], &files);
    assert_succeeded(&output);
    for (name, got) in names.iter().zip(json_lines(&output)) {
        for (device, want) in expectations[name.as_str()]["devices"].as_object().unwrap() {
            let state = &got["devices"][device];
            assert_eq!(state["segment_count"], want["segments"], "{name} {device}");
            assert_eq!(
                state["totals"]["reserved"], want["reserved_bytes"],
                "{name} {device}"
            );
            let listed = state["segments"].as_array().unwrap();
            assert_eq!(
                Some(listed.len() as u64),
                want["segments"].as_u64(),
                "{name} {device}: every segment listed"
            );
            let blocks: u64 = listed
                .iter()
                .map(|s| s["blocks"].as_array().unwrap().len() as u64)
                .sum();
            assert_eq!(Some(blocks), want["blocks"].as_u64(), "{name} {device}");
        }
    }
    let text = memsight(&["segments", "--at", "peak"], &files[..1]);
    assert_succeeded(&text);
    assert!(String::from_utf8(text.stdout)
        .unwrap()
        .contains("fragmentation"));
}
