//! `--redact` on every real snapshot: no prefix the redaction removes (home folders, user
//! names, environments, cluster mounts) survives in any export — reports in Markdown, HTML
//! and JSON, tables in text, CSV and JSON, the files table, comparisons, digests, categories,
//! phases, segments, the overview — and the numbers are the same redacted and not.

mod command;
#[path = "../../core/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};

use command::{assert_succeeded, json_lines, memsight, tempdir};
use common::{decode_file, real_fixture_files, repo};
use memsight_core::model::redact::Redaction;
use serde_json::Value;

/// Everything each command prints about `files`, with `--redact` when `redact`.
fn exports(files: &[PathBuf], other: &Path, redact: bool, folder: &Path) -> String {
    let mut commands: Vec<Vec<String>> = vec![
        vec!["overview".into(), "--json".into()],
        vec!["categories".into(), "--json".into()],
        vec!["report".into()],
        vec!["report".into(), "--json".into()],
        vec![
            "table".into(),
            "--scope".into(),
            "all".into(),
            "--limit".into(),
            "100000".into(),
        ],
        vec![
            "table".into(),
            "--scope".into(),
            "all".into(),
            "--json".into(),
        ],
        vec![
            "table".into(),
            "--scope".into(),
            "all".into(),
            "--csv".into(),
        ],
        vec![
            "table".into(),
            "--group-by".into(),
            "callsite".into(),
            "--json".into(),
        ],
        vec![
            "table".into(),
            "--group-by".into(),
            "module".into(),
            "--csv".into(),
        ],
        vec!["table".into(), "--group-by".into(), "file".into()],
        vec!["segments".into(), "--json".into()],
        vec!["phases".into(), "--json".into()],
        vec!["phases".into()],
        vec!["files".into(), "--json".into()],
        vec!["digest".into()],
        vec![
            "check".into(),
            "--json".into(),
            "--max-peak".into(),
            "1TiB".into(),
            // A file whose trace ran out of memory would fail the check, and print the same.
            "--allow-oom".into(),
        ],
    ];
    if redact {
        for command in &mut commands {
            command.push("--redact".into());
        }
    }
    let mut out = String::new();
    for command in &commands {
        let args: Vec<&str> = command.iter().map(String::as_str).collect();
        let output = memsight(&args, files);
        assert_succeeded(&output);
        out.push_str(&String::from_utf8(output.stdout).unwrap());
    }
    let mut compare = vec!["compare", "--json"];
    if redact {
        compare.push("--redact");
    }
    let output = memsight(&compare, &[files[0].clone(), other.to_path_buf()]);
    assert_succeeded(&output);
    out.push_str(&String::from_utf8(output.stdout).unwrap());
    // A report folder: its pages and Markdown.
    let mut report = vec!["report", "-o", folder.to_str().unwrap()];
    if redact {
        report.push("--redact");
    }
    let output = memsight(&report, &[files[0].clone(), other.to_path_buf()]);
    assert_succeeded(&output);
    for entry in std::fs::read_dir(folder).unwrap() {
        out.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
    }
    out
}

/// Where each snapshot's redaction applies: the prefixes it removes and the users it hides.
fn hidden(file: &Path) -> Redaction {
    Redaction::of_snapshot(&decode_file(file).unwrap())
}

#[test]
fn no_removed_prefix_or_user_name_survives_any_export_of_any_real_fixture() {
    let files = real_fixture_files();
    if files.is_empty() {
        return;
    }
    let folder = std::env::temp_dir().join(format!("memsight-redact-{}", std::process::id()));
    let mut checked_prefixes = 0;
    for (i, file) in files.iter().enumerate() {
        let other = &files[(i + 1) % files.len()];
        let plan = hidden(file);
        let other_plan = hidden(other);
        let _ = std::fs::remove_dir_all(&folder);
        let text = exports(std::slice::from_ref(file), other, true, &folder);
        for prefix in plan.removed_prefixes().chain(other_plan.removed_prefixes()) {
            checked_prefixes += 1;
            // JSON writes a Windows path's backslashes doubled.
            let escaped = prefix.replace('\\', "\\\\");
            assert!(
                !text.contains(prefix) && !text.contains(&escaped),
                "{}: {prefix} survives",
                file.display()
            );
        }
        for user in plan.users().iter().chain(other_plan.users()) {
            for word in [
                format!("/{user}/"),
                format!("\\{user}\\"),
                format!("_{user}/"),
            ] {
                assert!(!text.contains(&word), "{}: {word} survives", file.display());
            }
        }
        for home in [
            "/home/",
            "/Users/",
            "/root/",
            "/tmp/",
            "/mnt/",
            ":\\Users\\",
        ] {
            assert!(!text.contains(home), "{}: {home} survives", file.display());
        }
    }
    assert!(checked_prefixes > 20, "{checked_prefixes} prefixes checked");
    let _ = std::fs::remove_dir_all(&folder);
}

/// A value without its texts (names, frames, keys, labels): only its numbers and their places
/// in lists sorted so that texts that sorted the lists do not matter.
fn numbers(value: &Value) -> Value {
    match value {
        Value::String(_) => Value::Null,
        Value::Array(items) => {
            let mut items: Vec<Value> = items.iter().map(numbers).collect();
            items.sort_by_key(|v| v.to_string());
            Value::Array(items)
        }
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), numbers(v))).collect())
        }
        other => other.clone(),
    }
}

#[test]
fn grouping_and_comparisons_give_the_same_numbers_redacted_and_not() {
    let files = real_fixture_files();
    if files.is_empty() {
        return;
    }
    let json = |args: &[&str], files: &[PathBuf]| -> Vec<Value> {
        let output = memsight(args, files);
        assert_succeeded(&output);
        json_lines(&output).iter().map(numbers).collect()
    };
    for group in ["callsite", "file", "module", "stack"] {
        let plain = json(
            &["table", "--group-by", group, "--scope", "all", "--json"],
            &files,
        );
        let redacted = json(
            &[
                "table",
                "--group-by",
                group,
                "--scope",
                "all",
                "--json",
                "--redact",
            ],
            &files,
        );
        assert_eq!(plain, redacted, "grouped by {group}");
    }
    assert_eq!(
        json(&["categories", "--json"], &files),
        json(&["categories", "--json", "--redact"], &files)
    );
    assert_eq!(
        json(&["files", "--json"], &files),
        json(&["files", "--json", "--redact"], &files)
    );
    for i in 0..files.len() {
        let pair = [files[i].clone(), files[(i + 1) % files.len()].clone()];
        assert_eq!(
            json(&["compare", "--json"], &pair),
            json(&["compare", "--json", "--redact"], &pair),
            "{} against {}",
            pair[0].display(),
            pair[1].display()
        );
    }
}

#[test]
fn home_folders_written_with_doubled_separators_or_backslashes_are_redacted() {
    let text = std::fs::read_to_string(repo().join("tests/fixtures/small.json")).unwrap();
    let dir = tempdir("redact-separators");
    let written = [
        ("slashes.json", "//home//jdoe//proj//"),
        ("backslashes.json", r"\\home\\jdoe\\proj\\"),
        ("windows.json", r"C:\Users\jdoe\proj\"),
    ];
    for (name, folder) in written {
        let quoted = |path: &str| serde_json::to_string(path).unwrap();
        let renamed = text
            .replace(
                r#""/home/user/proj/model.py""#,
                &quoted(&format!("{folder}model.py")),
            )
            .replace(
                r#""/home/user/proj/train.py""#,
                &quoted(&format!("{folder}train.py")),
            );
        assert_ne!(renamed, text);
        let file = dir.join(name);
        std::fs::write(&file, renamed).unwrap();
        for args in [
            &["table", "--group-by", "file", "--redact"][..],
            &["report", "--redact"],
            &["source", "--redact"],
        ] {
            let output = memsight(args, std::slice::from_ref(&file));
            assert_succeeded(&output);
            let printed = String::from_utf8_lossy(&output.stdout);
            assert!(!printed.contains("jdoe"), "{name} {args:?}: {printed}");
            assert!(printed.contains("<home>"), "{name} {args:?}: {printed}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
