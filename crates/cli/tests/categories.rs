//! `memsight categories` against values CPython computed independently: at the peak, the bytes
//! by role and by component each add up to the peak allocated bytes of
//! `tests/expectations/real.json`; a bad rules file is refused with its rule named.

mod command;
#[path = "../../core/tests/common/mod.rs"]
mod common;

use command::{assert_succeeded, json_lines, memsight, named_files};
use common::{read_json, real_fixtures_dir, repo};
use serde_json::Value;

fn sum(object: &Value) -> u64 {
    object
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum()
}

#[test]
fn roles_and_components_add_up_to_the_peak_cpython_computed() {
    let Some(dir) = real_fixtures_dir() else {
        eprintln!("skipped: the real fixtures are not beside the repository");
        return;
    };
    let expectations = read_json(&repo().join("tests/expectations/real.json"));
    let expectations = expectations.get("files").unwrap_or(&expectations);
    let (names, files) = named_files(&dir, expectations);
    let output = memsight(&["categories", "--at", "peak", "--json"], &files);
    assert_succeeded(&output);
    let lines = json_lines(&output);
    assert_eq!(lines.len(), names.len());
    let mut checked = 0;
    for (name, line) in names.iter().zip(&lines) {
        for (device, want) in expectations[name.as_str()]["devices"].as_object().unwrap() {
            let Some(peak) = want.get("peak_allocated_bytes").and_then(Value::as_u64) else {
                continue;
            };
            let got = &line["devices"][device];
            assert_eq!(
                got["live_bytes"].as_u64(),
                Some(peak),
                "{name} cuda:{device}"
            );
            assert_eq!(sum(&got["roles"]), peak, "{name} cuda:{device} roles");
            assert_eq!(
                sum(&got["components"]),
                peak,
                "{name} cuda:{device} components"
            );
            checked += 1;
        }
    }
    assert!(checked > 20, "only {checked} devices checked");
}

#[test]
fn the_moment_and_the_rules_are_checked() {
    let example = repo().join("static/example.pickle");
    let end = memsight(
        &["categories", "--at", "end", "--json"],
        std::slice::from_ref(&example),
    );
    assert!(end.status.success());
    let line: Value = serde_json::from_slice(&end.stdout).unwrap();
    let device = line["devices"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    assert_eq!(device["moment"], "end");
    assert_eq!(
        sum(&device["roles"]),
        device["live_bytes"].as_u64().unwrap()
    );

    let beyond = memsight(
        &["categories", "--at", "999999999", "--json"],
        std::slice::from_ref(&example),
    );
    let line: Value = serde_json::from_slice(&beyond.stdout).unwrap();
    let device = line["devices"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    assert!(
        device["error"].as_str().unwrap().contains("beyond"),
        "{device}"
    );

    let rules =
        std::env::temp_dir().join(format!("memsight-bad-rules-{}.json", std::process::id()));
    std::fs::write(
        &rules,
        r#"{"rules":[{"pattern":"ok"},{"pattern":"(","regex":true}]}"#,
    )
    .unwrap();
    let refused = memsight(
        &["categories", "--rules", rules.to_str().unwrap()],
        &[example],
    );
    let _ = std::fs::remove_file(&rules);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("rule 2"), "{stderr}");
}

#[test]
fn a_rules_file_that_cannot_be_used_is_refused_by_every_command_naming_the_rule() {
    let dir = command::tempdir("bad-rules");
    let rules = dir.join("rules.json");
    std::fs::write(
        &rules,
        r#"{"rules": [{"pattern": "ok", "regex": false, "role": "activations"}, {"pattern": "(", "regex": true, "role": "activations"}]}"#,
    )
    .unwrap();
    let example = repo().join("static/example.pickle");
    for command in [
        "categories",
        "report",
        "table",
        "source",
        "files",
        "phases",
        "check",
        "digest",
    ] {
        let output = memsight(
            &[command, "--rules", rules.to_str().unwrap()],
            std::slice::from_ref(&example),
        );
        assert_eq!(output.status.code(), Some(2), "{command}");
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(said.contains("rule 2 cannot be used"), "{command}: {said}");
    }
}
