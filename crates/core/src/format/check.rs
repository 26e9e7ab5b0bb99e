//! A budget check in words a reviewer reads: one line per limit a device went past ("rank 3
//! cuda:0: peak allocated 41.2 GiB exceeds 40.0 GiB by 1.20 GiB; the largest growth against
//! the baseline is activations +3.10 GiB, and of call sites model.py:88 forward +2.90 GiB",
//! what grew on a device's first line only), a verdict line, and the same as Markdown for a CI
//! job's summary. Not the place for deciding what breaches
//! ([`crate::compare::budget`]).

use super::document::{Align, Cell, DocBlock, DocColumn, DocTable, Document, Inline};
use super::{bytes, bytes_delta, device, frame_short, percent_ppm};
use crate::analysis::categories::labels::role_label;
use crate::compare::budget::{Breach, Checked, DeviceCheck, Verdict};

/// How a checked device is named: by its rank (and iteration) when its file's name carries
/// them, else by the file's name; then the device.
pub fn device_name(check: &DeviceCheck) -> String {
    let device = device(check.device_kind, check.device);
    match (check.iteration, check.rank) {
        (Some(iteration), Some(rank)) => format!("iteration {iteration} rank {rank} {device}"),
        (None, Some(rank)) => format!("rank {rank} {device}"),
        _ => format!("{} {device}", check.file),
    }
}

/// A role's name inside a sentence: `optimizer state`.
fn role_words(role: crate::analysis::categories::Role) -> String {
    role_label(role).to_lowercase()
}

/// What one breach is, without the device: "peak allocated 41.2 GiB exceeds 40 GiB by
/// 1.2 GiB".
pub fn breach_words(check: &DeviceCheck, breach: &Breach) -> String {
    let exceeds = |what: &str| {
        format!(
            "{what} {} exceeds {} by {}",
            bytes(breach.value),
            bytes(breach.limit),
            bytes(breach.value.saturating_sub(breach.limit))
        )
    };
    let grew = |what: &str, of: &str| {
        let (before, after) = (
            breach.before_bytes.unwrap_or(0),
            breach.after_bytes.unwrap_or(0),
        );
        format!(
            "{what} grew by {} against the baseline ({} → {}), {} of {of}, above the {} \
             allowed",
            bytes(after.saturating_sub(before)),
            bytes(before),
            bytes(after),
            percent_ppm(breach.value),
            percent_ppm(breach.limit)
        )
    };
    match breach.checked {
        Checked::PeakAllocated => exceeds("peak allocated"),
        Checked::PeakReserved => exceeds("peak reserved"),
        Checked::Role(role) => exceeds(&format!("{} at the peak", role_words(role))),
        Checked::EfficiencyAtPeak => format!(
            "efficiency at the peak {} is below {}",
            percent_ppm(breach.value),
            percent_ppm(breach.limit)
        ),
        Checked::UnknownShare => format!(
            "{} of the peak ({}) has no known role, above the {} allowed",
            percent_ppm(breach.value),
            bytes(check.unknown_at_peak_bytes),
            percent_ppm(breach.limit)
        ),
        Checked::PeakGrowth => grew("peak allocated", "its baseline"),
        Checked::ReservedGrowth => grew("peak reserved", "its baseline"),
        Checked::RoleGrowth(role) => grew(&role_words(role), "the baseline's peak"),
    }
}

/// What grew most against the baseline: "the largest growth against the baseline is
/// activations +3.1 GiB, and of call sites model.py:88 forward +2.9 GiB"; `None` without a
/// baseline or growth. The role and the call site are each the largest of their kind (a
/// digest does not say which role a call site's bytes hold).
pub fn growth_words(check: &DeviceCheck) -> Option<String> {
    let growth = check.growth.as_ref()?;
    let role = growth
        .largest_role
        .as_ref()
        .map(|r| format!("{} {}", role_words(r.role), bytes_delta(r.delta_bytes)));
    let site = growth
        .largest_call_site
        .as_ref()
        .map(|s| format!("{} {}", frame_short(&s.label), bytes_delta(s.delta_bytes)));
    let said = match (role, site) {
        (Some(role), Some(site)) => format!("{role}, and of call sites {site}"),
        (Some(role), None) => role,
        (None, Some(site)) => format!("of call sites {site}"),
        (None, None) => return None,
    };
    Some(format!("the largest growth against the baseline is {said}"))
}

/// One line per breach: the device and the breach; with a baseline, a device's first line
/// also says what grew most.
pub fn breach_lines(verdict: &Verdict) -> Vec<String> {
    let mut lines = Vec::new();
    for check in verdict.breached() {
        let tail = growth_words(check)
            .map(|g| format!("; {g}"))
            .unwrap_or_default();
        for (i, breach) in check.breaches.iter().enumerate() {
            lines.push(format!(
                "{}: {}{}",
                device_name(check),
                breach_words(check, breach),
                if i == 0 { tail.as_str() } else { "" }
            ));
        }
    }
    lines
}

/// Devices a baseline was given for but none of its devices matched.
pub fn unmatched_lines(verdict: &Verdict) -> Vec<String> {
    verdict
        .devices
        .iter()
        .filter(|d| d.no_baseline)
        .map(|d| {
            format!(
                "{}: no device of the baseline matches it (by rank, file name or device); its \
                 growth is not checked",
                device_name(d)
            )
        })
        .collect()
}

/// The verdict in one line: "memsight check: 2 budgets exceeded on 1 of 8 devices" or
/// "memsight check: all 8 devices within budget".
pub fn verdict_line(verdict: &Verdict) -> String {
    let devices = verdict.devices.len();
    let plural = |n: usize, one: &str, many: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {many}")
        }
    };
    if verdict.pass {
        return match devices {
            1 => "memsight check: the device is within budget".to_string(),
            n => format!("memsight check: all {n} devices within budget"),
        };
    }
    let breaches: usize = verdict.devices.iter().map(|d| d.breaches.len()).sum();
    let breached = verdict.breached().count();
    let exceeded = plural(breaches, "budget", "budgets");
    match devices {
        1 => format!("memsight check: {exceeded} exceeded"),
        n => format!("memsight check: {exceeded} exceeded on {breached} of {n} devices"),
    }
}

/// The whole check as Markdown for a job's summary: the verdict, every breach, then each
/// device's figures (a [`Document`], escaped as every report is).
pub fn markdown(verdict: &Verdict) -> String {
    let mut doc = Document::default();
    doc.heading(
        2,
        format!(
            "Memory check: {}",
            if verdict.pass { "passed" } else { "failed" }
        ),
    );
    doc.paragraph(verdict_line(verdict));
    let bullets: Vec<Vec<Inline>> = breach_lines(verdict)
        .into_iter()
        .chain(unmatched_lines(verdict))
        .map(|line| vec![Inline::text(line)])
        .collect();
    if !bullets.is_empty() {
        doc.push(DocBlock::List(bullets));
    }
    let growth = verdict.devices.iter().any(|d| d.growth.is_some());
    let mut columns = vec![
        DocColumn::new("Device", Align::Left),
        DocColumn::new("Peak allocated", Align::Right),
        DocColumn::new("Peak reserved", Align::Right),
        DocColumn::new("Efficiency at the peak", Align::Right),
        DocColumn::new("Unknown role at the peak", Align::Right),
    ];
    if growth {
        columns.push(DocColumn::new("Peak against the baseline", Align::Right));
    }
    columns.push(DocColumn::new("Within budget", Align::Left));
    let rows = verdict
        .devices
        .iter()
        .map(|d| {
            let mut cells = vec![
                Cell::text(device_name(d)),
                Cell::text(bytes(d.peak_allocated_bytes)),
                Cell::text(bytes(d.peak_reserved_bytes)),
                Cell::text(
                    d.efficiency_at_peak_ppm
                        .map_or("—".to_string(), percent_ppm),
                ),
                Cell::text(format!(
                    "{} ({})",
                    bytes(d.unknown_at_peak_bytes),
                    percent_ppm(d.unknown_share_ppm)
                )),
            ];
            if growth {
                cells.push(Cell::text(
                    d.growth
                        .as_ref()
                        .map_or("—".to_string(), |g| bytes_delta(g.peak_delta_bytes)),
                ));
            }
            cells.push(match d.breaches.is_empty() {
                true => Cell::text("yes"),
                false => Cell::text("no").strong(),
            });
            cells.into()
        })
        .collect();
    doc.push(DocBlock::Table(DocTable { columns, rows }));
    doc.markdown()
}
