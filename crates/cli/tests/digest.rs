//! `memsight digest` round trips on every real snapshot: the files table and every comparison
//! read from digests equal those read from the snapshots; a digest is under a mebibyte; one of
//! another version is refused, never misread; commands that need the trace say so.

mod command;
#[path = "../../core/tests/common/mod.rs"]
mod common;

use std::path::PathBuf;

use command::{assert_succeeded, json_lines, memsight, tempdir};
use common::real_fixture_files;
use serde_json::Value;

/// Each file's digest, written to its own file.
fn digests(files: &[PathBuf], dir: &std::path::Path) -> Vec<PathBuf> {
    files
        .iter()
        .enumerate()
        .map(|(i, file)| {
            let out = dir.join(format!("{i}.json"));
            let output = memsight(
                &["digest", "-o", out.to_str().unwrap()],
                std::slice::from_ref(file),
            );
            assert_succeeded(&output);
            out
        })
        .collect()
}

#[test]
fn the_files_table_from_digests_equals_the_files_table_from_the_snapshots() {
    let files = real_fixture_files();
    if files.is_empty() {
        return;
    }
    let dir = tempdir("files");
    let written = digests(&files, &dir);
    for (file, digest) in files.iter().zip(&written) {
        let size = std::fs::metadata(digest).unwrap().len();
        // Every call site and module alive at the peak is kept (comparisons need them all):
        // thousands of lines of generated code at most.
        assert!(
            size < 1 << 20,
            "{}: a digest of {size} bytes",
            file.display()
        );
    }
    for format in ["--json", "--csv", "--markdown"] {
        let from_snapshots = memsight(&["files", format], &files);
        assert_succeeded(&from_snapshots);
        let from_digests = memsight(&["files", format], &written);
        assert_succeeded(&from_digests);
        assert_eq!(
            String::from_utf8(from_digests.stdout).unwrap(),
            String::from_utf8(from_snapshots.stdout).unwrap(),
            "files {format}"
        );
    }
    // Digests one after another in one file, as `memsight digest` prints them, read the same.
    let printed = memsight(&["digest"], &files);
    assert_succeeded(&printed);
    let all = dir.join("all.json");
    std::fs::write(&all, &printed.stdout).unwrap();
    assert_eq!(
        json_lines(&memsight(&["files", "--json"], &[all]))[0],
        json_lines(&memsight(&["files", "--json"], &files))[0]
    );
}

#[test]
fn every_comparison_from_digests_equals_the_comparison_from_the_snapshots() {
    let files = real_fixture_files();
    if files.is_empty() {
        return;
    }
    let dir = tempdir("compare");
    let written = digests(&files, &dir);
    // Without the file names, which are the paths given.
    let numbers = |output: &std::process::Output| -> Value {
        assert_succeeded(output);
        let mut value = json_lines(output)[0].clone();
        for side in ["a", "b"] {
            value[side].as_object_mut().unwrap().remove("file");
        }
        value
    };
    for i in 0..files.len() {
        let j = (i + 1) % files.len();
        let snapshots = memsight(
            &["compare", "--json"],
            &[files[i].clone(), files[j].clone()],
        );
        let from_digests = memsight(
            &["compare", "--json"],
            &[written[i].clone(), written[j].clone()],
        );
        let mixed = memsight(
            &["compare", "--json"],
            &[files[i].clone(), written[j].clone()],
        );
        assert_eq!(
            numbers(&from_digests),
            numbers(&snapshots),
            "{} against {}",
            files[i].display(),
            files[j].display()
        );
        assert_eq!(numbers(&mixed), numbers(&snapshots));
    }
}

#[test]
fn a_report_folder_from_digests_has_the_summary_of_the_one_from_the_snapshots() {
    let files = real_fixture_files();
    if files.len() < 2 {
        return;
    }
    let dir = tempdir("report");
    let written = digests(&files, &dir);
    let folder = |name: &str, inputs: &[PathBuf]| -> PathBuf {
        let out = dir.join(name);
        let output = memsight(&["report", "-o", out.to_str().unwrap()], inputs);
        assert_succeeded(&output);
        out
    };
    let from_snapshots = folder("from-snapshots", &files);
    let from_digests = folder("from-digests", &written);
    for summary in ["summary.md", "index.html"] {
        assert_eq!(
            std::fs::read_to_string(from_digests.join(summary)).unwrap(),
            std::fs::read_to_string(from_snapshots.join(summary)).unwrap(),
            "{summary}"
        );
    }
    // Each digest's own report adds up: its roles' total is its peak.
    let report = memsight(&["report", "--json"], std::slice::from_ref(&written[0]));
    assert_succeeded(&report);
    let value = &json_lines(&report)[0];
    assert_eq!(value["from_digest"], true);
    for digest in value["devices"].as_object().unwrap().values() {
        let roles: u64 = digest["roles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_u64().unwrap())
            .sum();
        assert_eq!(roles, digest["peak_bytes"].as_u64().unwrap());
    }
    let markdown = memsight(&["report"], std::slice::from_ref(&written[0]));
    assert_succeeded(&markdown);
    let text = String::from_utf8(markdown.stdout).unwrap();
    assert!(text.starts_with("# Memory report: "), "{text}");
    assert!(text.contains("From the snapshot's digest, at the allocated peak"));
}

#[test]
fn a_digest_of_another_version_is_refused_and_a_trace_command_asks_for_the_snapshot() {
    let files = real_fixture_files();
    let Some(file) = files.first() else {
        return;
    };
    let dir = tempdir("version");
    let digest = digests(std::slice::from_ref(file), &dir).remove(0);
    let text = std::fs::read_to_string(&digest).unwrap();
    assert!(text.starts_with("{\"format\":\"memsight-digest\",\"version\":1,"));
    let newer = dir.join("newer.json");
    std::fs::write(&newer, text.replacen("\"version\":1", "\"version\":2", 1)).unwrap();
    let output = memsight(&["files"], &[newer]);
    assert_eq!(output.status.code(), Some(1));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("A memsight digest of version 2, newer than this memsight reads (1): update memsight to read it."),
        "{said}"
    );
    let output = memsight(&["overview"], std::slice::from_ref(&digest));
    assert_eq!(output.status.code(), Some(1));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("This is a memsight digest, not a snapshot"),
        "{said}"
    );
    assert!(said.contains("`memsight files`, `compare`, `report` and `check` read digests"));
    // Several digests to one file is refused before anything is read.
    let output = memsight(
        &["digest", "-o", dir.join("one.json").to_str().unwrap()],
        &[file.clone(), file.clone()],
    );
    assert_eq!(output.status.code(), Some(2));
}
