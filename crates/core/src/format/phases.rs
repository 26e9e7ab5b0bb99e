//! The phase report in words: each row's label (a phase's name, or a scope's as written),
//! and the Markdown table the page downloads and `memsight phases` prints.
//!
//! Scope names come from the file: Markdown escapes them ([`super::document::escape`]). Not the
//! place for computing rows.

use std::fmt::Write;

use super::breakdown::{phase_label, role_label};
use super::document::escape;
use super::{bytes, bytes_delta, count};
use crate::phases::{PhaseReport, PhaseRow, PhaseSource};

/// A phase's label: `Forward`, `Optimizer step`.
pub fn phase_row_label(row: &PhaseRow) -> String {
    row.phase
        .map_or_else(|| row.label.clone(), |p| phase_label(p).to_string())
}

/// Where the phases come from, in a sentence.
pub fn source_sentence(report: &PhaseReport) -> &'static str {
    match report.source {
        PhaseSource::Annotations => "Phases come from the record_function scopes that name one (external_annotations), and from the frames of each allocation between them; an iteration starts at each forward after a backward or an optimizer step.",
        PhaseSource::Frames => "Phases are inferred from the frames of each allocation (no record_function scope names one); an iteration starts at each forward after a backward or an optimizer step.",
    }
}

/// The top role at a row's peak: `Activations (1.50 GiB)`, or `—`.
pub fn top_role(row: &PhaseRow) -> String {
    row.top_role.map_or("—".to_string(), |r| {
        format!("{} ({})", role_label(r), bytes(row.top_role_bytes))
    })
}

/// The events a row spans: `12–4,031`.
pub fn events(row: &PhaseRow) -> String {
    if row.first_event == row.last_event {
        count(u64::from(row.first_event.get()))
    } else {
        format!(
            "{}–{}",
            count(u64::from(row.first_event.get())),
            count(u64::from(row.last_event.get()))
        )
    }
}

/// The report as Markdown: a line saying where its phases come from, the phases' table, and
/// the scopes' table when the file has scopes.
pub fn markdown(report: &PhaseReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}\n", source_sentence(report));
    if report.rows.is_empty() {
        let _ = writeln!(out, "No phase: the trace records no event.");
        return out;
    }
    table(&mut out, "Phase", &report.rows, |row| {
        (
            phase_row_label(row),
            row.iteration.map_or("—".to_string(), |i| i.to_string()),
        )
    });
    if !report.scopes.is_empty() {
        let _ = writeln!(out, "\nrecord_function scopes:\n");
        table(&mut out, "Scope", &report.scopes, |row| {
            (
                format!("{}{}", "· ".repeat(row.depth as usize), row.label),
                "—".to_string(),
            )
        });
    }
    out
}

fn table(
    out: &mut String,
    what: &str,
    rows: &[PhaseRow],
    label: impl Fn(&PhaseRow) -> (String, String),
) {
    let _ = writeln!(
        out,
        "| {what} | Iteration | Events | Allocated before | After | Delta | Allocated in it | Freed in it | Peak within | Top role at that peak |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for row in rows {
        let (name, iteration) = label(row);
        let _ = writeln!(
            out,
            "| {} | {iteration} | {} | {} | {} | {} | {} | {} | {} | {} |",
            escape(&name),
            events(row),
            bytes(row.before_bytes),
            bytes(row.after_bytes),
            bytes_delta(row.delta_bytes),
            bytes(row.allocated_bytes),
            bytes(row.freed_bytes),
            bytes(row.peak_bytes),
            top_role(row),
        );
    }
}
