//! Nothing from a file reaches a terminal raw: a snapshot whose frame names and paths hold
//! escape sequences (retitling, clearing), BEL, a C1 control and Markdown/HTML prints no
//! control character but newlines and tabs from any command, in text, Markdown, CSV or JSON;
//! `source --markdown` keeps the file's names inside its code block or escaped; CSV cells that
//! start with a tab are not formulas.

mod command;
#[path = "../../core/tests/common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::process::Output;

use command::{memsight, tempdir};
use common::repo;

const NAME: &str = "\x1b]0;pwned\x07forward\x1b[2J<b>*x*</b>\u{9b}2J";
const PATH: &str = "\t=1+1/\x1b[2Jproj/model.py";

/// `tests/fixtures/small.json` with the frames named `forward` named [`NAME`] and
/// `model.py`'s path [`PATH`], in a folder of its own for `test`.
fn hostile_snapshot(test: &str) -> PathBuf {
    let text = std::fs::read_to_string(repo().join("tests/fixtures/small.json")).unwrap();
    let quoted = |s: &str| serde_json::to_string(s).unwrap();
    let renamed = text
        .replace(
            r#""name":"forward""#,
            &format!(r#""name":{}"#, quoted(NAME)),
        )
        .replace(r#""/home/user/proj/model.py""#, &quoted(PATH));
    assert!(renamed.contains("pwned") && renamed.contains("=1+1"));
    let path = tempdir(test).join("hostile.json");
    std::fs::write(&path, renamed).unwrap();
    path
}

/// What `args` print about [`hostile_snapshot`].
fn on_hostile_snapshot(test: &str, args: &[&str]) -> Output {
    let file = hostile_snapshot(test);
    let output = memsight(args, std::slice::from_ref(&file));
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
    output
}

/// The characters of `bytes` a terminal would act on.
fn raw_controls(bytes: &[u8]) -> Vec<char> {
    String::from_utf8_lossy(bytes)
        .chars()
        .filter(|&c| c.is_control() && c != '\n' && c != '\t')
        .collect()
}

#[test]
fn no_command_prints_a_control_character_from_the_file() {
    let file = hostile_snapshot("control-all");
    let commands: &[&[&str]] = &[
        &["overview"],
        &["overview", "--json"],
        &["categories"],
        &["categories", "--json"],
        &["report"],
        &["report", "--json"],
        &["table", "--scope", "all"],
        &["table", "--scope", "all", "--csv"],
        &["table", "--scope", "all", "--json"],
        &["table", "--group-by", "callsite"],
        &["table", "--group-by", "callsite", "--csv"],
        &["table", "--group-by", "stack"],
        &["segments"],
        &["phases"],
        &["files"],
        &["files", "--csv"],
        &["source", "--at", "all"],
        &["source", "--at", "all", "--markdown"],
        &["source", "--at", "all", "--json"],
        &["check", "--max-peak", "1B"],
        &["check", "--max-peak", "1B", "--markdown"],
        &["digest"],
    ];
    let mut seen_name = 0;
    for args in commands {
        let output = memsight(args, std::slice::from_ref(&file));
        for (stream, bytes) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
            let raw = raw_controls(bytes);
            assert!(raw.is_empty(), "{args:?} {stream}: {raw:?}");
        }
        seen_name += usize::from(String::from_utf8_lossy(&output.stdout).contains("pwned"));
    }
    let output = memsight(&["compare"], &[file.clone(), file.clone()]);
    assert!(raw_controls(&output.stdout).is_empty());
    // The names are still shown, escaped.
    assert!(seen_name > 10, "{seen_name} outputs show the frame's name");
    let text = memsight(
        &["table", "--group-by", "callsite"],
        std::slice::from_ref(&file),
    );
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("\\e]0;pwned\\x07forward\\e[2J"), "{text}");
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
}

#[test]
fn an_error_quoting_a_hostile_name_is_escaped() {
    let dir = tempdir("control-error");
    let file = dir.join("run\x1b]0;pwned\x07.pickle");
    std::fs::write(&file, "not a snapshot\n").unwrap();
    let output = memsight(&["overview"], std::slice::from_ref(&file));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!output.status.success());
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(raw_controls(&output.stderr).is_empty(), "{error:?}");
    assert!(error.contains("run\\e]0;pwned\\x07.pickle"), "{error}");
}

#[test]
fn csv_cells_starting_with_a_tab_are_not_formulas() {
    let output = on_hostile_snapshot("control-csv", &["table", "--scope", "all", "--csv"]);
    let csv = String::from_utf8_lossy(&output.stdout);
    assert!(csv.contains(",'\t=1+1/"), "{csv}");
    assert!(!csv.contains(",\t="), "{csv}");
}

#[test]
fn source_as_markdown_keeps_the_files_text_in_its_code_block() {
    let args = ["source", "--at", "all", "--markdown"];
    let output = on_hostile_snapshot("control-markdown", &args);
    let markdown = String::from_utf8_lossy(&output.stdout);
    let mut fence: Option<String> = None;
    let mut outside = 0;
    for line in markdown.lines() {
        let ticks: String = line.chars().take_while(|&c| c == '`').collect();
        match &fence {
            Some(open) if line == open.as_str() => fence = None,
            Some(_) => {}
            None if ticks.len() >= 3 => fence = Some(ticks),
            None => {
                outside += usize::from(line.contains("pwned"));
                assert!(!line.contains("<b>") && !line.contains("*x*"), "{line}");
            }
        }
    }
    assert!(fence.is_none(), "{markdown}");
    assert!(
        outside > 0,
        "the function's name is listed above the code\n{markdown}"
    );
}

#[test]
fn code_holding_backticks_does_not_close_the_markdown_code_block() {
    let root = tempdir("control-fence");
    std::fs::create_dir_all(root.join("proj")).unwrap();
    let code = "```\n<script>alert(1)</script>\n".repeat(30);
    std::fs::write(root.join("proj/model.py"), code).unwrap();
    let output = memsight(
        &[
            "source",
            "--at",
            "all",
            "--markdown",
            "--root",
            root.to_str().unwrap(),
        ],
        &[repo().join("tests/fixtures/small.json")],
    );
    let _ = std::fs::remove_dir_all(&root);
    let markdown = String::from_utf8_lossy(&output.stdout);
    let script = markdown
        .lines()
        .position(|l| l.contains("<script>"))
        .unwrap();
    let opened = markdown
        .lines()
        .take(script)
        .filter(|l| l.starts_with("````text"))
        .count();
    assert_eq!(opened, 1, "{markdown}");
}

#[test]
fn a_rules_file_quoted_in_an_error_is_escaped() {
    let dir = tempdir("control-rules");
    let rules = dir.join("rules.json");
    let rule = serde_json::json!({"rules": [{
        "pattern": "forward", "regex": false, "role": "\x1b]0;pwned\x07"
    }]});
    std::fs::write(&rules, rule.to_string()).unwrap();
    let output = memsight(
        &["categories", "--rules", rules.to_str().unwrap()],
        &[repo().join("tests/fixtures/small.json")],
    );
    let _ = std::fs::remove_dir_all(&dir);
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{error}");
    assert!(error.contains("pwned"), "{error}");
    assert!(raw_controls(&output.stderr).is_empty(), "{error:?}");
}
