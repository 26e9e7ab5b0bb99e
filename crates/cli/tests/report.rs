//! `memsight report` on every real fixture: each device's report names the largest allocation
//! alive at the peak as the session gives it (size and call site), and its role table adds up
//! to the peak allocated bytes CPython computed (`tests/expectations/real.json`). A call site
//! with pipes, backticks and HTML stays in its table cell; `--device` and `--output` work.

mod command;
#[path = "../../core/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use command::{assert_succeeded, memsight, named_files};
use common::{read_json, real_fixtures_dir, repo};
use memsight_core::analysis::moment::Moment;
use memsight_core::breakdown::service::AtRequest;
use memsight_core::session::Session;
use serde_json::Value;

/// The reports printed, one per device, in order.
fn reports(output: &Output) -> Vec<String> {
    assert_succeeded(output);
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .split("\n---\n\n")
        .map(str::to_string)
        .collect()
}

/// Markdown's backslash escapes undone.
fn unescape(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match chars.peek() {
            Some(&next) if c == '\\' && next.is_ascii_punctuation() => {
                out.push(next);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// The cells of a table row as GitHub splits them: at pipes no backslash escapes.
fn cells(row: &str) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut escaped = false;
    for c in row.chars() {
        if c == '|' && !escaped {
            cells.push(String::new());
        } else {
            cells.last_mut().unwrap().push(c);
        }
        escaped = c == '\\';
    }
    cells.remove(0);
    cells.pop();
    cells.into_iter().map(|c| c.trim().to_string()).collect()
}

/// The rows of the first table after `heading`, without its header and delimiter.
fn table<'a>(report: &'a str, heading: &str) -> Vec<&'a str> {
    let start = report
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading} in\n{report}"));
    report[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .collect()
}

/// Exact bytes as the tables print them: `**1,234**` → 1234.
fn exact(cell: &str) -> u64 {
    cell.trim_matches('*').replace(',', "").parse().unwrap()
}

/// The text of a code span cell: fences and their padding removed, pipes unescaped.
fn code_text(cell: &str) -> String {
    let fence = cell.chars().take_while(|&c| c == '`').count();
    assert!(fence > 0, "not a code span: {cell}");
    let inner = &cell[fence..cell.len() - fence];
    // CommonMark strips one space from each side when both have one.
    let inner = match inner.strip_prefix(' ').and_then(|s| s.strip_suffix(' ')) {
        Some(stripped) if !inner.trim().is_empty() => stripped,
        _ => inner,
    };
    inner.replace("\\|", "|")
}

/// The device a report is about, from its title: `# Memory report: FILE, cuda:N`.
fn title(report: &str) -> (String, u32) {
    let line = report.lines().next().unwrap();
    let line = line.strip_prefix("# Memory report: ").expect(line);
    let (file, device) = line.rsplit_once(", cuda:").expect(line);
    (unescape(file), device.parse().unwrap())
}

/// The largest allocation alive at each device's peak, as the session answers.
fn largest_at_peak(path: &Path, device: u32) -> Option<(u64, Option<String>)> {
    let file = std::fs::File::open(path).unwrap();
    let mut session = Session::new();
    session.load(file, 0, &|| 0.0, &mut |_| {}).unwrap();
    let request = AtRequest {
        device,
        moment: Moment::Peak,
        top: 1,
        only: None,
    };
    let at = session.ask(request, &|| 0.0).unwrap();
    at.largest.first().map(|a| (a.size, a.name.clone()))
}

#[test]
fn every_real_report_names_its_largest_allocation_and_adds_up_to_the_peak() {
    let Some(dir) = real_fixtures_dir() else {
        eprintln!("skipped: the real fixtures are not beside the repository");
        return;
    };
    let expectations = read_json(&repo().join("tests/expectations/real.json"));
    let expectations = expectations.get("files").unwrap_or(&expectations);
    let (names, files) = named_files(&dir, expectations);
    let reports = reports(&memsight(&["report"], &files));
    let (mut devices, mut peaks, mut named) = (0, 0, 0);
    for report in &reports {
        // A file none of whose devices used memory is one line, with no tables.
        if report.contains("used no memory: no segments and no trace entries.")
            && !report.contains("## By role at the peak")
        {
            continue;
        }
        let (file, device) = title(report);
        let path = PathBuf::from(&file);
        let name = common::file_name(&path);
        let context = format!("{name} cuda:{device}");
        devices += 1;

        let roles = table(report, "## By role at the peak");
        let (total, rows) = roles.split_last().unwrap();
        let total = exact(&cells(total)[2]);
        let sum: u64 = rows.iter().map(|r| exact(&cells(r)[2])).sum();
        assert_eq!(sum, total, "{context}: role rows");
        let components = table(report, "## By component at the peak");
        assert_eq!(
            exact(&cells(components.last().unwrap())[2]),
            total,
            "{context}: components"
        );
        let want = &expectations[name.as_str()]["devices"][device.to_string()];
        if let Some(peak) = want.get("peak_allocated_bytes").and_then(Value::as_u64) {
            assert_eq!(total, peak, "{context}: role total against CPython");
            peaks += 1;
        }

        match largest_at_peak(&path, device) {
            Some((size, site)) => {
                let first = table(report, "## Largest allocations at the peak")[0];
                let first = cells(first);
                assert_eq!(first.len(), 6, "{context}: {first:?}");
                assert_eq!(first[0], "1");
                assert_eq!(exact(&first[2]), size, "{context}: size");
                match site {
                    Some(site) => assert_eq!(code_text(&first[5]), site, "{context}"),
                    None => assert_eq!(first[5], "*no stack recorded*", "{context}"),
                }
                named += 1;
            }
            None => assert!(
                report.contains("Nothing was alive at the peak."),
                "{context}"
            ),
        }
    }
    assert!(devices >= names.len(), "{devices} reports");
    assert!(
        peaks > 20,
        "only {peaks} role totals checked against CPython"
    );
    assert!(named > 20, "only {named} largest allocations checked");
}

/// `tests/fixtures/small.json` with every frame named `forward` renamed to `name`.
fn with_frame_name(name: &str, file: &str) -> PathBuf {
    let text = std::fs::read_to_string(repo().join("tests/fixtures/small.json")).unwrap();
    let renamed = text.replace(
        r#""name":"forward""#,
        &format!(r#""name":{}"#, serde_json::to_string(name).unwrap()),
    );
    assert_ne!(renamed, text);
    let path = std::env::temp_dir().join(format!("memsight-{}-{file}", std::process::id()));
    std::fs::write(&path, renamed).unwrap();
    path
}

#[test]
fn a_hostile_call_site_stays_in_its_cell() {
    let hostile = "f|g`|``h\\|<img src=x onerror=alert(1)> | end";
    let path = with_frame_name(hostile, "hostile <b>|.json");
    let output = memsight(&["report"], std::slice::from_ref(&path));
    let _ = std::fs::remove_file(&path);
    let reports = reports(&output);
    assert_eq!(reports.len(), 1);
    let report = &reports[0];
    assert_eq!(title(report).0, path.display().to_string());
    assert!(report.starts_with("# Memory report: "), "{report}");
    assert!(!report.lines().next().unwrap().contains("<b>"), "{report}");
    let rows = table(report, "## Largest allocations at the peak");
    let mut hostile_rows = 0;
    for row in rows {
        let cells = cells(row);
        assert_eq!(cells.len(), 6, "{row}");
        if cells[5].contains("onerror") {
            assert!(
                code_text(&cells[5]).ends_with(&format!(":{hostile}")),
                "{row}"
            );
            hostile_rows += 1;
        }
    }
    assert!(hostile_rows > 0, "{report}");
}

#[test]
fn one_device_to_a_file() {
    let example = repo().join("static/example.pickle");
    let out = std::env::temp_dir().join(format!("memsight-report-{}.md", std::process::id()));
    let output = memsight(
        &["report", "--device", "0", "--output", out.to_str().unwrap()],
        &[example.clone(), example.clone()],
    );
    assert_succeeded(&output);
    assert!(output.stdout.is_empty());
    let written = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let reports: Vec<&str> = written.split("\n\n---\n\n").collect();
    assert_eq!(reports.len(), 2, "{written}");
    assert_eq!(reports[0], reports[1].trim_end());
    assert!(reports[0].contains(", cuda:0\n"));
    for section in [
        "## Summary",
        "## Peak estimate",
        "## Cached memory at the end",
        "## Findings",
        "## Rules",
    ] {
        assert!(reports[0].contains(section), "{section}");
    }

    let missing = memsight(&["report", "--device", "7"], &[example]);
    assert_eq!(missing.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(stderr.contains("has no device 7."), "{stderr}");
    assert!(missing.stdout.is_empty());
}

/// `--json` prints the numbers every report (and the page's breakdown) is made of: per device,
/// the estimate's observed peak and the breakdown at the peak equal CPython's peak, each
/// category dimension adds up to it, and the estimate and efficiency follow from their terms.
#[test]
fn the_reports_numbers_as_json_match_cpython() {
    let Some(dir) = real_fixtures_dir() else {
        eprintln!("skipped: the real fixtures are not beside the repository");
        return;
    };
    let expectations = read_json(&repo().join("tests/expectations/real.json"));
    let expectations = expectations.get("files").unwrap_or(&expectations);
    let mut checked = 0;
    for (name, want) in expectations.as_object().unwrap() {
        let path = dir.join(name);
        if !path.is_file() {
            continue;
        }
        let output = memsight(&["report", "--json"], &[path]);
        assert!(output.status.success(), "{name}");
        let line: Value = serde_json::from_slice(&output.stdout).unwrap();
        for (device, numbers) in line["devices"].as_object().unwrap() {
            let context = format!("{name} cuda:{device}");
            let Some(peak) = want["devices"][device]["peak_allocated_bytes"].as_u64() else {
                continue;
            };
            let summary = &numbers["summary"];
            let at_peak = &numbers["peak"];
            let sum = |v: &Value| {
                v.as_array()
                    .unwrap()
                    .iter()
                    .map(|b| b.as_u64().unwrap())
                    .sum::<u64>()
            };
            assert_eq!(summary["peak_allocated"].as_u64(), Some(peak), "{context}");
            assert_eq!(
                summary["estimate"]["observed"].as_u64(),
                Some(peak),
                "{context}"
            );
            assert_eq!(at_peak["live_bytes"].as_u64(), Some(peak), "{context}");
            assert_eq!(sum(&at_peak["roles"]), peak, "{context}: roles");
            assert_eq!(sum(&at_peak["components"]), peak, "{context}: components");
            let e = &summary["estimate"];
            let term = |k: &str| e[k].as_u64().unwrap_or(0);
            let expected = if e["kind"] == "serving" {
                term("parameters")
                    + term("kv_cache")
                    + term("cuda_graphs")
                    + term("step_temporaries")
            } else {
                term("parameters")
                    + term("optimizer_state")
                    + (term("gradients") + term("optimizer_temporaries"))
                        .max(term("activations") + term("weight_copies"))
            };
            assert_eq!(term("estimate"), expected, "{context}");
            // One efficiency: allocated over reserved at the allocated peak, as the overview
            // gives it.
            let reserved = summary["reserved_at_peak"].as_u64().unwrap();
            let ppm = summary["efficiency_at_peak_ppm"].as_u64();
            assert_eq!(ppm.is_some(), reserved > 0, "{context}");
            if let Some(ppm) = ppm {
                let allocated = summary["peak_allocated"].as_u64().unwrap();
                assert_eq!(
                    ppm,
                    (allocated.min(reserved) as u128 * 1_000_000 / reserved as u128) as u64,
                    "{context}"
                );
                assert_eq!(
                    numbers["efficiency_at_peak"].as_f64().unwrap(),
                    ppm as f64 / 1e6,
                    "{context}"
                );
            }
            assert!(summary["findings"].is_array(), "{context}");
            checked += 1;
        }
    }
    assert!(checked > 20, "only {checked} devices checked");
}

#[test]
fn only_narrows_the_peak_lists_to_one_category() {
    let Some(dir) = real_fixtures_dir() else {
        eprintln!("skipped: the real fixtures are not beside the repository");
        return;
    };
    let file =
        dir.join("kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_fullstep_.pickle");
    if !file.is_file() {
        eprintln!("skipped: the full training step is not among the real fixtures");
        return;
    }
    let activations = memsight_core::analysis::categories::Role::ALL
        .iter()
        .position(|r| r.key() == "activations")
        .unwrap();
    let output = memsight(
        &["report", "--json", "--only", "role:activations"],
        std::slice::from_ref(&file),
    );
    assert_succeeded(&output);
    let numbers: Value = serde_json::from_slice(&output.stdout).unwrap();
    let peak = &numbers["devices"]["0"]["peak"];
    let largest = peak["largest"].as_array().unwrap();
    assert!(!largest.is_empty(), "activations are alive at the peak");
    assert!(largest.iter().all(|a| a["role"] == "activations"));
    let sized: u64 = peak["live_sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(sized, peak["roles"][activations].as_u64().unwrap());

    // A category that does not exist is refused with the ones that do; --only needs --json.
    let refused = memsight(
        &["report", "--json", "--only", "role:attention"],
        std::slice::from_ref(&file),
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("activations"));
    let alone = memsight(&["report", "--only", "role:activations"], &[file]);
    assert_eq!(alone.status.code(), Some(2));
}

/// A run with no role the estimate counts has no estimate, not one of 0 B "−100%" from its
/// peak.
#[test]
fn a_run_with_no_terms_says_it_has_no_estimate() {
    let legacy = repo().join("tests/fixtures/legacy_2_0.pickle");
    let output = memsight(&["report"], &[legacy]);
    let report = &reports(&output)[0];
    let section = report
        .split("## Peak estimate")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("an estimate section");
    assert!(section.contains("No estimate:"), "{section}");
    assert!(
        !section.contains("100.0%") && !section.contains("| Estimate |"),
        "{section}"
    );
}

/// A file that cannot record an out-of-memory never says there was none.
#[test]
fn a_file_that_cannot_record_an_oom_does_not_say_there_was_none() {
    let legacy = repo().join("tests/fixtures/legacy_2_0.pickle");
    let output = memsight(&["report"], &[legacy]);
    let report = &reports(&output)[0];
    let section = report
        .split("## Findings")
        .nth(1)
        .expect("a findings section");
    assert!(!section.contains("no out-of-memory"), "{section}");
    assert!(
        section.contains("Whether the run ran out of memory is unknown"),
        "{section}"
    );
}

/// Training's arithmetic beside the estimate: a full AdamW step has one gradient per
/// parameter and two states per parameter.
#[test]
fn the_estimate_is_checked_by_trainings_arithmetic() {
    let Some(dir) = real_fixtures_dir() else {
        eprintln!("skipped: the real fixtures are not beside the repository");
        return;
    };
    let step =
        dir.join("kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_fullstep_.pickle");
    if !step.exists() {
        eprintln!("skipped: the full step is missing");
        return;
    }
    let report = &reports(&memsight(&["report"], &[step]))[0];
    let line = report
        .lines()
        .find(|l| l.starts_with("Training's arithmetic:"))
        .expect("a line of training's checks");
    assert!(
        line.contains("gradients 1.00× parameters (ok)")
            && line.contains("optimizer state 2.00× gradients, AdamW keeps 2 per parameter (ok)"),
        "{line}"
    );
}
