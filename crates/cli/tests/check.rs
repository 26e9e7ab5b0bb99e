//! `memsight check` on real snapshots: each budget passes at the file's own figure and fails
//! one byte (or one tenth of a percent) below it, with the exit codes CI reads, the JSON
//! carries what the text says, and a baseline catches a regression built from two real runs
//! (a step's forward against its full step) while a file checked against itself does not
//! grow.

mod command;
#[path = "../../core/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use command::{json_lines, memsight, tempdir};
use common::{real_fixture, repo};
use serde_json::Value;

const FULL_STEP: &str = "notHanmin__assignment2-systems__memory_snapshot.pickle";
const FORWARD: &str = "notHanmin__assignment2-systems__memory_snapshot_forward.pickle";
/// Recorded after its model was built, with frames no role is known by: all of it unknown.
const ALL_UNKNOWN: &str = "kkaitlyn111__cs336-a2-systems__memory_snapshot.pickle";
/// Four GPUs; cuda:1 ran out of memory at event 421 asking for 4.94 GiB.
const FOUR_GPUS_OOM: &str = "Constructor-Sun__code_location__memory_snapshot.pickle";
/// A PyTorch 2.0-era file named after an out-of-memory its trace cannot show.
const OLD_OOM: &str = "Yiyi-philosophy__LLM-inference__oom_snapshot.pickle";

fn fixture(name: &str) -> Option<PathBuf> {
    real_fixture(name)
}

fn code(output: &Output) -> i32 {
    output.status.code().expect("memsight exited")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// The figures `check --json` reports for the file's device (every budget met).
fn figures(file: &Path) -> Value {
    let output = memsight(
        &["check", "--json", "--max-peak", "1TiB"],
        &[file.to_path_buf()],
    );
    assert_eq!(
        code(&output),
        0,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    json_lines(&output)[0]["devices"][0].clone()
}

/// What each breach of a checked device is on (`peak_growth`…).
fn breach_kinds(device: &Value) -> Vec<&str> {
    device["breaches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["checked"]["kind"].as_str().unwrap())
        .collect()
}

fn check(args: &[&str], file: &Path) -> Output {
    let mut all = vec!["check"];
    all.extend_from_slice(args);
    memsight(&all, &[file.to_path_buf()])
}

#[test]
fn each_budget_passes_at_the_files_own_figure_and_fails_just_below_it() {
    let Some(file) = fixture(FULL_STEP) else {
        return;
    };
    let fig = figures(&file);
    let peak = fig["peak_allocated_bytes"].as_u64().unwrap();
    let reserved = fig["peak_reserved_bytes"].as_u64().unwrap();
    let efficiency = fig["efficiency_at_peak_ppm"].as_u64().unwrap();
    let activations = fig["roles_at_peak"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["role"] == "activations")
        .unwrap()["bytes"]
        .as_u64()
        .unwrap();
    assert!(peak > 0 && reserved >= peak && activations > 0);
    // Efficiency in percent with one decimal, just below and just above the file's.
    let below = format!("{:.1}", (efficiency / 1000) as f64 / 10.0);
    let above = format!("{:.1}", (efficiency / 1000 + 1) as f64 / 10.0);
    let cases: Vec<(Vec<String>, Vec<String>, &str)> = vec![
        (
            vec!["--max-peak".into(), peak.to_string()],
            vec!["--max-peak".into(), (peak - 1).to_string()],
            "peak allocated",
        ),
        (
            vec!["--max-reserved".into(), reserved.to_string()],
            vec!["--max-reserved".into(), (reserved - 1).to_string()],
            "peak reserved",
        ),
        (
            vec!["--min-efficiency".into(), below],
            vec!["--min-efficiency".into(), above],
            "efficiency at the peak",
        ),
        (
            vec!["--max".into(), format!("activations={activations}")],
            vec!["--max".into(), format!("activations={}", activations - 1)],
            "activations at the peak",
        ),
        (
            vec!["--max-unknown".into(), "0".into()],
            vec!["--max-unknown".into(), "0".into()],
            "",
        ),
    ];
    for (pass, fail, words) in cases {
        let pass: Vec<&str> = pass.iter().map(String::as_str).collect();
        let output = check(&pass, &file);
        assert_eq!(code(&output), 0, "{pass:?}: {}", stdout(&output));
        // The budget, with the room left under it, then the verdict.
        let text = stdout(&output);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[0].contains(" is ") && lines[0].contains(" cuda:0), "),
            "{text}"
        );
        assert_eq!(lines[1], "memsight check: the device is within budget");
        if words.is_empty() {
            continue;
        }
        let fail: Vec<&str> = fail.iter().map(String::as_str).collect();
        let output = check(&fail, &file);
        assert_eq!(code(&output), 1, "{fail:?}: {}", stdout(&output));
        let text = stdout(&output);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[0].ends_with(&format!("cuda:0: {words}"))
                || lines[0].contains(&format!("cuda:0: {words} ")),
            "{fail:?}: {}",
            lines[0]
        );
        assert_eq!(lines[1], "memsight check: 1 budget exceeded");
        // The JSON says the same: the breach, its figure and its limit.
        let mut json = fail.clone();
        json.push("--json");
        let output = check(&json, &file);
        assert_eq!(code(&output), 1);
        let verdict = &json_lines(&output)[0];
        assert_eq!(verdict["pass"], false);
        let breaches = verdict["devices"][0]["breaches"].as_array().unwrap();
        assert_eq!(breaches.len(), 1, "{verdict}");
    }
    let json = check(&["--json", "--max-peak", &(peak - 1).to_string()], &file);
    let breach = &json_lines(&json)[0]["devices"][0]["breaches"][0];
    assert_eq!(breach["checked"]["kind"], "peak_allocated");
    assert_eq!(breach["value"].as_u64(), Some(peak));
    assert_eq!(breach["limit"].as_u64(), Some(peak - 1));
}

#[test]
fn a_share_of_unknown_memory_fails_the_unknown_budget() {
    let Some(file) = fixture(ALL_UNKNOWN) else {
        return;
    };
    let fig = figures(&file);
    assert_eq!(fig["unknown_share_ppm"].as_u64(), Some(1_000_000), "{fig}");
    let output = check(&["--max-unknown", "50"], &file);
    assert_eq!(code(&output), 1);
    let text = stdout(&output);
    assert!(
        text.contains(
            "cuda:0: 100.0% of the peak (50.9 GiB) has no known role, above the 50.0% allowed"
        ),
        "{text}"
    );
}

#[test]
fn a_baseline_catches_growth_and_a_file_against_itself_does_not_grow() {
    let (Some(full), Some(forward)) = (fixture(FULL_STEP), fixture(FORWARD)) else {
        return;
    };
    let dir = tempdir("baseline");
    let baseline = dir.join("baseline.json");
    // Written while checking, then read back: the run against itself has grown by nothing.
    let output = memsight(
        &[
            "check",
            "--max-peak",
            "1TiB",
            "--write-baseline",
            baseline.to_str().unwrap(),
        ],
        std::slice::from_ref(&full),
    );
    assert_eq!(
        code(&output),
        0,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let same = check(
        &[
            "--baseline",
            baseline.to_str().unwrap(),
            "--max-growth",
            "0",
            "--json",
        ],
        &full,
    );
    assert_eq!(code(&same), 0, "{}", stdout(&same));
    let growth = &json_lines(&same)[0]["devices"][0]["growth"];
    assert_eq!(growth["peak_delta_bytes"].as_i64(), Some(0), "{growth}");
    assert!(growth["largest_role"].is_null() && growth["largest_call_site"].is_null());

    // The forward-only run against the full step's baseline: the growth is the comparison's.
    let grown = check(
        &[
            "--baseline",
            baseline.to_str().unwrap(),
            "--max-growth",
            "5",
            "--json",
        ],
        &forward,
    );
    assert_eq!(code(&grown), 1);
    let device = &json_lines(&grown)[0]["devices"][0];
    let compared = memsight(&["compare", "--json"], &[full.clone(), forward.clone()]);
    let comparison = &json_lines(&compared)[0]["comparison"];
    let peak_delta = comparison["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "peak-allocated-bytes")
        .unwrap()["delta"]
        .as_i64()
        .unwrap();
    assert_eq!(
        device["growth"]["peak_delta_bytes"].as_i64(),
        Some(peak_delta)
    );
    let largest_role = comparison["roles"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|r| r["delta_bytes"].as_i64().unwrap())
        .unwrap();
    assert_eq!(
        device["growth"]["largest_role"]["role"],
        largest_role["key"]
    );
    let kinds = breach_kinds(device);
    assert!(kinds.contains(&"peak_growth"), "{kinds:?}");
    // In words: the first line names what grew most.
    let text = stdout(&check(
        &[
            "--baseline",
            baseline.to_str().unwrap(),
            "--max-growth",
            "5",
        ],
        &forward,
    ));
    let first = text.lines().next().unwrap();
    assert!(
        first.contains("peak allocated grew by")
            && first.contains("above the 5.0% allowed; the largest growth against the baseline is optimizer state +"),
        "{first}"
    );
    // A snapshot serves as a baseline too, with the same verdict.
    let from_snapshot = check(
        &[
            "--baseline",
            full.to_str().unwrap(),
            "--max-growth",
            "5",
            "--json",
        ],
        &forward,
    );
    assert_eq!(json_lines(&from_snapshot)[0], json_lines(&grown)[0]);
    // And an earlier report's numbers (`memsight report --json`): the same growth of the peak
    // and the roles, the same call site grown most, the same breaches.
    let report = dir.join("report.json");
    let printed = memsight(&["report", "--json"], std::slice::from_ref(&full));
    std::fs::write(&report, &printed.stdout).unwrap();
    let from_report = check(
        &[
            "--baseline",
            report.to_str().unwrap(),
            "--max-growth",
            "5",
            "--json",
        ],
        &forward,
    );
    assert_eq!(code(&from_report), 1, "{}", stdout(&from_report));
    let reported = &json_lines(&from_report)[0]["devices"][0];
    for key in ["peak_delta_bytes", "largest_role", "largest_call_site"] {
        assert_eq!(reported["growth"][key], device["growth"][key], "{key}");
    }
    assert_eq!(reported["breaches"], device["breaches"]);
}

#[test]
fn ranks_match_their_own_rank_in_the_baseline() {
    let (Some(full), Some(forward)) = (fixture(FULL_STEP), fixture(FORWARD)) else {
        return;
    };
    let dir = tempdir("ranks");
    // Two "ranks" of a job: rank 0 the full step, rank 1 the forward; the baseline lists
    // them the other way round, so only matching by rank gives zero growth to both.
    let digest = |path: &Path, name: &str| -> String {
        let output = memsight(&["digest"], &[path.to_path_buf()]);
        assert_eq!(code(&output), 0);
        let mut value: Value = serde_json::from_slice(&output.stdout).unwrap();
        value["name"] = Value::String(name.to_string());
        format!("{value}\n")
    };
    let rank0 = digest(&full, "job/rank0.pickle");
    let rank1 = digest(&forward, "job/rank1.pickle");
    std::fs::write(dir.join("now.json"), format!("{rank0}{rank1}")).unwrap();
    std::fs::write(dir.join("before.json"), format!("{rank1}{rank0}")).unwrap();
    let output = memsight(
        &[
            "check",
            "--json",
            "--max-growth",
            "0",
            "--baseline",
            dir.join("before.json").to_str().unwrap(),
        ],
        &[dir.join("now.json")],
    );
    assert_eq!(code(&output), 0, "{}", stdout(&output));
    let verdict = &json_lines(&output)[0];
    let ranks: Vec<u64> = verdict["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            assert_eq!(d["growth"]["peak_delta_bytes"].as_i64(), Some(0), "{d}");
            d["rank"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(ranks, [0, 1]);
    let text = stdout(&memsight(
        &["check", "--max-peak", "1GiB"],
        &[dir.join("now.json")],
    ));
    assert!(text.contains("\nrank 1 cuda:0: peak allocated"), "{text}");
    assert!(
        text.ends_with("memsight check: 2 budgets exceeded on 2 of 2 devices\n"),
        "{text}"
    );
}

#[test]
fn no_budget_an_unreadable_file_or_baseline_is_exit_code_2() {
    let dir = tempdir("unreadable");
    let bad = dir.join("bad.pickle");
    std::fs::write(&bad, b"\x80\x04not a pickle").unwrap();
    let output = memsight(&["check"], std::slice::from_ref(&bad));
    assert_eq!(code(&output), 2);
    assert!(String::from_utf8_lossy(&output.stderr).contains("no budget given"));
    let output = memsight(&["check", "--max-peak", "1GiB"], std::slice::from_ref(&bad));
    assert_eq!(code(&output), 2);
    assert!(String::from_utf8_lossy(&output.stderr).contains("no verdict"));
    let Some(full) = fixture(FULL_STEP) else {
        return;
    };
    let output = memsight(
        &[
            "check",
            "--max-growth",
            "5",
            "--baseline",
            bad.to_str().unwrap(),
        ],
        &[full],
    );
    assert_eq!(code(&output), 2);
    assert!(String::from_utf8_lossy(&output.stderr).contains("(the baseline)"));
}

#[test]
fn a_budget_of_2_to_the_64_bytes_or_more_is_refused() {
    let small = common::repo().join("tests/fixtures/small.json");
    for size in [
        "99999999999999999999TiB",
        "16777216TiB",
        "18446744073709551616",
    ] {
        let output = check(&["--max-peak", size], &small);
        assert_eq!(code(&output), 2, "{size}");
        let error = String::from_utf8_lossy(&output.stderr);
        assert!(error.contains("2^64 bytes or more"), "{size}: {error}");
    }
    let output = check(&["--max-peak", "16777215TiB"], &small);
    assert_eq!(
        code(&output),
        0,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn an_out_of_memory_fails_the_check_naming_the_device_and_the_request_unless_allowed() {
    let Some(file) = fixture(FOUR_GPUS_OOM) else {
        return;
    };
    // Within the peak budget, yet cuda:1 ran out of memory.
    let output = check(&["--max-peak", "80GiB"], &file);
    assert_eq!(code(&output), 1, "{}", stdout(&output));
    let text = stdout(&output);
    let first = text.lines().next().unwrap();
    assert!(
        first.ends_with(
            "cuda:1: ran out of memory at event 421: a request of 4.94 GiB failed with 91.2 MiB \
             free on the device (78.3 GiB allocated, 78.4 GiB reserved)"
        ),
        "{text}"
    );
    assert!(
        text.contains("peak allocated: at most 80.0 GiB; the highest is 78.3 GiB ("),
        "{text}"
    );
    assert!(
        text.ends_with("memsight check: 1 of 3 devices ran out of memory\n"),
        "{text}"
    );
    // The failing device comes first in every form.
    let json = &json_lines(&check(&["--json", "--max-peak", "80GiB"], &file))[0];
    assert_eq!(json["pass"], false);
    let device = &json["devices"][0];
    assert_eq!(device["device"], 1);
    assert_eq!(device["breaches"][0]["checked"]["kind"], "out_of_memory");
    assert_eq!(device["oom"]["kind"], "recorded");
    assert_eq!(device["oom"]["first"]["event"], 421);
    assert!(device["oom"]["first"]["requested_bytes"].as_u64().unwrap() > 4 << 30);
    assert_eq!(json["headroom"][0]["checked"]["kind"], "peak_allocated");
    assert!(json["headroom"][0]["headroom"].as_i64().unwrap() > 0);
    let markdown = stdout(&check(&["--markdown", "--max-peak", "80GiB"], &file));
    let rows: Vec<&str> = markdown.lines().filter(|l| l.contains(" cuda:")).collect();
    assert!(rows[0].contains("cuda:1: ran out of memory"), "{markdown}");
    let table: Vec<&str> = rows
        .iter()
        .copied()
        .filter(|l| l.starts_with('|'))
        .collect();
    assert!(
        table[0].contains("cuda:1 |") && table[0].contains("| 1 (event 421) | **no** |"),
        "{markdown}"
    );
    assert!(
        markdown.contains("### Budgets and their headroom"),
        "{markdown}"
    );

    // Allowed, the same device passes and still says it ran out.
    let output = check(&["--allow-oom", "--max-peak", "80GiB"], &file);
    assert_eq!(code(&output), 0, "{}", stdout(&output));
    let text = stdout(&output);
    assert!(
        text.contains("cuda:1: ran out of memory at event 421"),
        "{text}"
    );
    assert!(text.contains("(allowed)"), "{text}");
    assert!(
        text.ends_with("memsight check: all 3 devices within budget\n"),
        "{text}"
    );
}

#[test]
fn a_file_that_cannot_record_an_out_of_memory_says_so() {
    let mut files = vec![repo().join("tests/fixtures/legacy_2_0.pickle")];
    files.extend(fixture(OLD_OOM));
    for file in files {
        let output = check(&["--max-peak", "80GiB"], &file);
        assert_eq!(code(&output), 0, "{}", stdout(&output));
        let text = stdout(&output);
        assert!(
            text.contains(
                "cuda:0: an out-of-memory could not be recorded (a PyTorch 2.0-era file whose \
                 trace holds no allocation)"
            ),
            "{text}"
        );
        assert!(
            text.ends_with(
                "memsight check: the device is within budget (whether it ran out of memory is \
                 unknown)\n"
            ),
            "{text}"
        );
        assert!(!text.contains("no out-of-memory"), "{text}");
        let json = &json_lines(&check(&["--json", "--max-peak", "80GiB"], &file))[0];
        assert_eq!(json["devices"][0]["oom"]["kind"], "cannot_record");
        assert_eq!(json["devices"][0]["oom"]["why"], "format2_0");
        let markdown = stdout(&check(&["--markdown", "--max-peak", "80GiB"], &file));
        assert!(markdown.contains("| not recorded | yes |"), "{markdown}");
    }
}

/// A full step, peaking in its optimizer step, and a forward of the same model, peaking in
/// its forward.
const STEP_PEAKS_IN_OPTIMIZER: &str =
    "kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_fullstep_.pickle";
const FORWARD_PEAKS_IN_FORWARD: &str =
    "kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_forward_mixed.pickle";

#[test]
fn a_baseline_peaking_in_another_phase_compares_whole_run_peaks_and_names_no_role() {
    let (Some(step), Some(forward)) = (
        fixture(STEP_PEAKS_IN_OPTIMIZER),
        fixture(FORWARD_PEAKS_IN_FORWARD),
    ) else {
        return;
    };
    let base = forward.to_str().unwrap();
    let output = check(&["--baseline", base, "--max-growth", "5"], &step);
    assert_eq!(code(&output), 1);
    let text = stdout(&output);
    assert!(
        text.contains(
            "the baseline peaks in the forward of iteration 1, this run in the optimizer step of \
             iteration 1: what each phase holds differs, so only the whole-run peaks are compared"
        ),
        "{text}"
    );
    assert!(!text.contains("largest growth"), "{text}");
    let json = &json_lines(&check(
        &["--baseline", base, "--max-growth", "5", "--json"],
        &step,
    ))[0];
    let device = &json["devices"][0];
    assert_eq!(device["growth"]["phases_differ"], true);
    assert!(device["growth"]["largest_role"].is_null());
    assert!(device["growth"]["largest_call_site"].is_null());
    let kinds = breach_kinds(device);
    assert_eq!(kinds, ["peak_growth", "reserved_growth"]);
    // Within budget, it still says so.
    let text = stdout(&check(&["--baseline", base, "--max-peak", "1TiB"], &step));
    assert!(
        text.contains("cuda:0: the baseline peaks in the forward of iteration 1"),
        "{text}"
    );
}
