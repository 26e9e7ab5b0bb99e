//! `memsight compare A B [--device-a N] [--device-b N] [--at-phase PHASE] [--json]`: two
//! files (or two devices) side by side as the page's comparison shows them — the overview's
//! numbers with deltas, the bytes of each role and component at both peaks (or at each run's
//! peak within one phase of training), what moment of training each is at, and the call sites
//! and model modules that changed — from the core's digests. Either side may be a digest
//! written by `memsight digest`.

use std::path::Path;
use std::process::ExitCode;

use memsight_core::analysis::categories::rules::Rules;
use memsight_core::analysis::categories::signals::Phase;
use memsight_core::compare::digest::digest;
use memsight_core::compare::{compare, Comparison, Digest};
use memsight_core::format::{self, compare as words};
use memsight_core::session::digested::NO_PHASES_IN_DIGESTS;
use serde_json::json;

use crate::digest::say_rules_do_not_apply;
use crate::escape::{escape_control, escape_json};
use crate::open::{describe_error, open_input, shown, with_context, SnapshotOrDigests};

/// Lines of call sites and modules printed as text.
const TEXT_LINES: usize = 20;

/// Prints the comparison of `a` with `b` (deltas are B − A); fails (exit code 1) when a file
/// cannot be read or has no such device.
pub fn run(
    a: &Path,
    b: &Path,
    devices: (Option<u32>, Option<u32>),
    at_phase: Option<Phase>,
    rules: &Rules,
    as_json: bool,
) -> ExitCode {
    let (Some(da), Some(db)) = (
        side(a, devices.0, at_phase, rules),
        side(b, devices.1, at_phase, rules),
    ) else {
        return ExitCode::FAILURE;
    };
    let comparison = compare(&da, &db);
    if as_json {
        let out = json!({
            "a": moment(a, &da),
            "b": moment(b, &db),
            "moments_differ": words::moments_differ(&da, &db),
            "comparison": comparison,
        });
        println!("{}", escape_json(&out.to_string()));
    } else {
        print!("{}", escape_control(&text(a, &da, b, &db, &comparison)));
    }
    ExitCode::SUCCESS
}

/// A side's file, device and the moment its digest is at.
fn moment(path: &Path, d: &Digest) -> serde_json::Value {
    json!({
        "file": shown(path),
        "device": d.device,
        "state": d.peak_state,
        "bytes": d.peak_bytes,
        "phase": d.peak_phase.map(Phase::key),
        "iteration": d.peak_iteration,
        "at_phase": d.at_phase.map(Phase::key),
    })
}

/// The digest of one side: the device asked for, else the file's default device. A side may
/// be a digest (`memsight digest`), which holds each device at its run's peak only.
fn side(
    path: &Path,
    device: Option<u32>,
    at_phase: Option<Phase>,
    rules: &Rules,
) -> Option<Digest> {
    let fail = |why: String| {
        say!("memsight: {}: {why}", path.display());
        None
    };
    let opened = match open_input(path, true) {
        Ok(SnapshotOrDigests::Snapshot(opened)) => opened,
        Ok(SnapshotOrDigests::Digests(files)) => {
            say_rules_do_not_apply(path, rules);
            let [file] = files.as_slice() else {
                return fail(format!(
                    "it holds {} digests one after another; each side of a comparison is one",
                    files.len()
                ));
            };
            if at_phase.is_some() {
                return fail(NO_PHASES_IN_DIGESTS.to_string());
            }
            let Some(device) = device.or(file.shown_device()) else {
                return fail("the digest holds no device".to_string());
            };
            return match file.device(device) {
                Some(digest) => Some(digest.clone()),
                None => fail(format!("the digest holds no device {device}")),
            };
        }
        Err(report) => {
            say!("{}", describe_error(path, &report));
            return None;
        }
    };
    let device = device.or_else(|| opened.analysed.default_device().map(|(d, _)| d));
    let Some(device) = device else {
        return fail("the file holds no device".to_string());
    };
    with_context(&opened, rules, Some(device), |cx, _| {
        digest(cx, device, true, at_phase)
            .map_err(|e| fail(format::problems::view_error(&e)))
            .ok()
    })
}

fn text(a: &Path, da: &Digest, b: &Path, db: &Digest, c: &Comparison) -> String {
    let mut out = format!(
        "A: {} ({}), at {}\nB: {} ({}), at {}\n",
        shown(a),
        format::device(da.device_kind, da.device),
        words::moment_words(da),
        shown(b),
        format::device(db.device_kind, db.device),
        words::moment_words(db),
    );
    if let Some(note) = words::moments_differ(da, db) {
        out.push_str(&format!("Note: {note}\n"));
    }
    out.push('\n');
    let mut table = |title: &str, rows: Vec<[String; 4]>| {
        if rows.is_empty() {
            return;
        }
        out.push_str(&format!("{title}\n"));
        let width = rows.iter().map(|r| r[0].chars().count()).max().unwrap_or(0);
        for [label, x, y, d] in rows {
            out.push_str(&format!("  {label:<width$}  {x:>12}  {y:>12}  {d:>12}\n"));
        }
        out.push('\n');
    };
    // The overview's numbers are each whole run's, whatever moment the roles are taken at.
    let overview = if da.at_phase.is_some() || db.at_phase.is_some() {
        "Overview of each whole run, not of the phase (A, B, B − A)"
    } else {
        "Overview (A, B, B − A)"
    };
    table(
        overview,
        c.metrics
            .iter()
            .filter(|m| m.a.is_some() || m.b.is_some())
            .map(|m| {
                [
                    words::metric_title(m),
                    words::metric_text(m, m.a),
                    words::metric_text(m, m.b),
                    words::metric_delta_text(m),
                ]
            })
            .collect(),
    );
    let categories = |list: &[memsight_core::compare::diff::CategoryDelta]| -> Vec<[String; 4]> {
        list.iter()
            .filter(|r| r.a_bytes > 0 || r.b_bytes > 0)
            .map(|r| {
                [
                    words::category_title(&r.key),
                    format::bytes(r.a_bytes),
                    format::bytes(r.b_bytes),
                    format::bytes_delta(r.delta_bytes),
                ]
            })
            .collect()
    };
    table("Roles at each side's moment", categories(&c.roles));
    table(
        "Components at each side's moment",
        categories(&c.components),
    );
    let keyed = |list: &[memsight_core::compare::KeyedDelta], indent: bool| -> Vec<[String; 4]> {
        list.iter()
            .filter(|k| k.delta_bytes != 0)
            .take(TEXT_LINES)
            .map(|k| {
                let pad = if indent {
                    "  ".repeat(k.depth as usize)
                } else {
                    String::new()
                };
                let calls = words::occurrences_text(k.a_occurrences, k.b_occurrences);
                [
                    format!(
                        "{pad}{} ({}{}{})",
                        k.label,
                        words::change_label(k.change),
                        if calls.is_empty() { "" } else { ", " },
                        calls
                    ),
                    format::bytes(k.a_bytes),
                    format::bytes(k.b_bytes),
                    format::bytes_delta(k.delta_bytes),
                ]
            })
            .collect()
    };
    table(
        "Call sites that changed, largest change first",
        keyed(&c.call_sites, false),
    );
    table("Model modules that changed", keyed(&c.modules, true));
    if c.is_unchanged() {
        out.push_str("No difference.\n");
    }
    out
}
