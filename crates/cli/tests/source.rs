//! `memsight source`: a real run's annotated file read from a checkout found by the longest
//! shared end of its path, each line's bytes made there equal to the table's call-site group of
//! that line; a snapshot carrying `source_code` is read from itself, every line holding memory
//! a line of code in its text.

mod command;
#[path = "../../core/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use command::{assert_succeeded, json_lines, memsight, memsight_within, tempdir};
use common::{decode_file, real_fixtures_dir, repo};
use serde_json::Value;

/// A full training step (CS336), whose optimizer's lines hold its state at the peak.
const FULL_STEP: &str =
    "kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_fullstep_.pickle";

#[test]
fn a_checkout_gives_the_text_and_each_line_holds_its_call_site_group() {
    let Some(file) = real_fixtures_dir()
        .map(|d| d.join(FULL_STEP))
        .filter(|p| p.is_file())
    else {
        eprintln!("skipped: {FULL_STEP} is not among the real fixtures");
        return;
    };
    // The run's call sites at the peak, as the table groups them.
    let table = memsight(
        &["table", "--group-by", "callsite", "--json"],
        std::slice::from_ref(&file),
    );
    assert_succeeded(&table);
    let groups = json_lines(&table)[0]["devices"]["0"]["groups"].clone();
    let sites: Vec<(String, u64, u64)> = groups
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| {
            let label = g["label"].as_str()?;
            label.contains("optimizers.py:").then(|| {
                (
                    label.to_string(),
                    g["count"].as_u64().unwrap(),
                    g["requested_bytes"].as_u64().unwrap(),
                )
            })
        })
        .collect();
    assert!(!sites.is_empty(), "the optimizer holds memory at the peak");
    // A checkout elsewhere: the file under another root, a decoy of the same name elsewhere.
    let checkout = tempdir("source-checkout");
    let text: String = (1..=200)
        .map(|n| format!("line {n} of the optimizer\n"))
        .collect();
    std::fs::create_dir_all(checkout.join("cs336_basics")).unwrap();
    std::fs::create_dir_all(checkout.join("unrelated")).unwrap();
    std::fs::write(checkout.join("cs336_basics/optimizers.py"), &text).unwrap();
    std::fs::write(checkout.join("unrelated/other.py"), "x = 1\n").unwrap();
    let output = memsight(
        &[
            "source",
            "--root",
            checkout.to_str().unwrap(),
            "--file",
            "optimizers.py",
            "--json",
        ],
        std::slice::from_ref(&file),
    );
    assert_succeeded(&output);
    let printed = &json_lines(&output)[0]["devices"]["0"]["files"];
    let files = printed.as_array().unwrap();
    assert_eq!(files.len(), 1, "--file keeps the optimizer's file");
    let optimizer = &files[0];
    assert!(optimizer["source"]
        .as_str()
        .unwrap()
        .ends_with("cs336_basics/optimizers.py"));
    let line_of = |n: i64| -> &Value {
        optimizer["lines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["line"].as_i64() == Some(n))
            .unwrap_or_else(|| panic!("line {n}"))
    };
    for (label, count, bytes) in &sites {
        let n: i64 = label.rsplit(':').nth(1).unwrap().parse().unwrap();
        let line = line_of(n);
        assert_eq!(line["made"]["count"].as_u64(), Some(*count), "{label}");
        assert_eq!(line["made"]["bytes"].as_u64(), Some(*bytes), "{label}");
        assert!(line["through"]["bytes"].as_u64() >= Some(*bytes), "{label}");
    }
    // As text: the file's lines, with the bytes in the margin of the call site's line.
    let text_output = memsight(
        &[
            "source",
            "--root",
            checkout.to_str().unwrap(),
            "--file",
            "optimizers.py",
        ],
        &[file],
    );
    assert_succeeded(&text_output);
    let printed = String::from_utf8_lossy(&text_output.stdout);
    let (label, _, _) = &sites[0];
    let n: i64 = label.rsplit(':').nth(1).unwrap().parse().unwrap();
    let row = printed
        .lines()
        .find(|l| l.ends_with(&format!("{n:>6}  line {n} of the optimizer")))
        .unwrap_or_else(|| panic!("line {n} in\n{printed}"));
    assert!(row.contains(" ×"), "{row}");
}

#[test]
fn a_snapshot_carrying_its_source_code_is_read_from_itself() {
    let fixture: PathBuf = repo().join("tests/fixtures/source_and_shapes.pickle");
    let output = memsight(&["source", "--json"], &[fixture]);
    assert_succeeded(&output);
    let files = json_lines(&output)[0]["devices"]["0"]["files"].clone();
    let model = files
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "/home/user/proj/model.py")
        .expect("model.py holds memory");
    assert_eq!(
        model["source"],
        "/home/user/proj/model.py (in the snapshot)"
    );
    assert!(model["made"]["bytes"].as_u64().unwrap() > 0);
}

#[test]
fn every_line_holding_memory_is_a_line_of_code_in_the_snapshots_text() {
    let fixture: PathBuf = repo().join("tests/fixtures/source_and_shapes.pickle");
    let snapshot = decode_file(&fixture).unwrap();
    let output = memsight(&["source", "--at", "all", "--json"], &[fixture]);
    assert_succeeded(&output);
    let files = json_lines(&output)[0]["devices"]["0"]["files"].clone();
    let mut checked = 0;
    for file in files.as_array().unwrap() {
        let path = file["path"].as_str().unwrap();
        let (_, text) = snapshot
            .source_code
            .iter()
            .find(|(p, _)| p == path)
            .unwrap_or_else(|| panic!("{path}: no text in the snapshot"));
        let lines: Vec<&str> = text.lines().collect();
        for line in file["lines"].as_array().unwrap() {
            let n = line["line"].as_u64().unwrap() as usize;
            let code = n
                .checked_sub(1)
                .and_then(|i| lines.get(i))
                .unwrap_or_else(|| panic!("{path}:{n} is beyond its {} lines", lines.len()))
                .trim();
            assert!(
                !code.is_empty() && !code.starts_with('#'),
                "{path}:{n} is not code: {code:?}"
            );
            checked += 1;
        }
    }
    // model.py's six call sites and train.py's two lines that pass them on.
    assert_eq!(checked, 8);
}

#[test]
fn as_text_each_functions_total_sits_above_its_def() {
    let fixture: PathBuf = repo().join("tests/fixtures/source_and_shapes.pickle");
    let output = memsight(&["source", "--at", "all"], &[fixture]);
    assert_succeeded(&output);
    let printed = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = printed.lines().collect();
    let totals: Vec<usize> = (0..lines.len())
        .filter(|&k| lines[k].contains("── forward:"))
        .collect();
    assert!(!totals.is_empty(), "{printed}");
    for k in totals {
        assert!(
            lines[k + 1].trim_end().ends_with("def forward(self, x):"),
            "{}\n{}",
            lines[k],
            lines[k + 1]
        );
    }
}

/// `tests/fixtures/small.json` (frames in `/home/user/proj/model.py` and `train.py`, no text
/// carried) annotated from the checkout at `root`, which must take a few seconds at most.
fn source_with_root(root: &Path) -> Output {
    let output = memsight_within(
        10,
        &["source", "--at", "all", "--root", root.to_str().unwrap()],
        &[repo().join("tests/fixtures/small.json")],
    );
    assert_succeeded(&output);
    output
}

/// The line saying why `file` under `root` was not read, the checkout removed after.
fn note_on_unread(root: &Path, file: &str) -> String {
    let output = source_with_root(root);
    let _ = std::fs::remove_dir_all(root);
    let printed = String::from_utf8_lossy(&output.stdout);
    let note = printed
        .lines()
        .find(|l| l.contains(&format!("{file} not read")));
    note.unwrap_or_else(|| panic!("{printed}")).to_string()
}

#[cfg(unix)]
#[test]
fn links_back_into_the_checkout_are_walked_once() {
    use std::os::unix::fs::symlink;
    let root = tempdir("source-loops");
    std::fs::create_dir_all(root.join("proj")).unwrap();
    std::fs::write(root.join("proj/model.py"), "model line\n".repeat(40)).unwrap();
    symlink(".", root.join("x")).unwrap();
    symlink(".", root.join("y")).unwrap();
    symlink("..", root.join("proj/up")).unwrap();
    let output = source_with_root(&root);
    let printed = String::from_utf8_lossy(&output.stdout);
    let _ = std::fs::remove_dir_all(&root);
    assert!(printed.contains("/proj/model.py\n"), "{printed}");
    assert!(printed.contains("  model line\n"), "{printed}");
}

#[cfg(unix)]
#[test]
fn links_out_of_the_checkout_are_not_followed() {
    use std::os::unix::fs::symlink;
    let dir = tempdir("source-outside");
    let (root, outside) = (dir.join("checkout"), dir.join("outside"));
    std::fs::create_dir_all(outside.join("proj")).unwrap();
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(outside.join("proj/model.py"), "SECRET = 1\n".repeat(40)).unwrap();
    symlink(&outside, root.join("elsewhere")).unwrap();
    symlink(outside.join("proj/model.py"), root.join("model.py")).unwrap();
    symlink("/etc", root.join("etc")).unwrap();
    let output = source_with_root(&root);
    let printed = String::from_utf8_lossy(&output.stdout);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!printed.contains("SECRET"), "{printed}");
    assert!(printed.contains("Source not found"), "{printed}");
}

#[cfg(unix)]
#[test]
fn a_named_pipe_in_the_checkout_is_not_opened() {
    let root = tempdir("source-fifo");
    std::fs::create_dir_all(root.join("proj")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(root.join("proj/model.py"))
        .status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: mkfifo cannot make a named pipe here");
        return;
    }
    let note = note_on_unread(&root, "proj/model.py");
    assert!(note.contains("named pipe"), "{note}");
}

#[test]
fn a_file_larger_than_any_source_is_skipped_with_a_note() {
    let root = tempdir("source-sparse");
    std::fs::create_dir_all(root.join("proj")).unwrap();
    // Sparse: two gibibytes long, none of them on disk.
    std::fs::File::create(root.join("proj/train.py"))
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let note = note_on_unread(&root, "proj/train.py");
    assert!(
        note.contains("2.00 GiB") && note.contains("16.0 MiB"),
        "{note}"
    );
}

#[test]
fn a_file_filter_matching_nothing_is_an_error() {
    let output = memsight(
        &["source", "--file", "nothere"],
        &[repo().join("tests/fixtures/small.json")],
    );
    assert!(!output.status.success());
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(error.contains("nothere"), "{error}");
}
