//! A budget check in words a reviewer reads: one line per limit a device went past ("rank 3
//! cuda:0: peak allocated 41.2 GiB exceeds 40.0 GiB by 1.20 GiB; the largest growth against
//! the baseline is activations +3.10 GiB, and of call sites model.py:88 forward +2.90 GiB",
//! what grew on a device's first line only), a verdict line, and the same as Markdown for a CI
//! job's summary. Not the place for deciding what breaches
//! ([`crate::compare::budget`]).

use super::{bytes, bytes_delta, device, document::escape, frame_short, percent_ppm};
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
/// device's figures.
pub fn markdown(verdict: &Verdict) -> String {
    let mut out = format!(
        "## Memory check: {}\n\n{}\n\n",
        if verdict.pass { "passed" } else { "failed" },
        escape(&verdict_line(verdict))
    );
    let mut bullets = breach_lines(verdict);
    bullets.extend(unmatched_lines(verdict));
    for line in &bullets {
        out.push_str(&format!("- {}\n", escape(line)));
    }
    if !bullets.is_empty() {
        out.push('\n');
    }
    let growth = verdict.devices.iter().any(|d| d.growth.is_some());
    out.push_str("| Device | Peak allocated | Peak reserved | Efficiency at the peak | Unknown role at the peak |");
    if growth {
        out.push_str(" Peak against the baseline |");
    }
    out.push_str(" Within budget |\n| --- | ---: | ---: | ---: | ---: |");
    if growth {
        out.push_str(" ---: |");
    }
    out.push_str(" :---: |\n");
    for d in &verdict.devices {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} ({}) |",
            escape(&device_name(d)),
            bytes(d.peak_allocated_bytes),
            bytes(d.peak_reserved_bytes),
            d.efficiency_at_peak_ppm
                .map_or("—".to_string(), percent_ppm),
            bytes(d.unknown_at_peak_bytes),
            percent_ppm(d.unknown_share_ppm)
        ));
        if growth {
            let delta = d
                .growth
                .as_ref()
                .map_or("—".to_string(), |g| bytes_delta(g.peak_delta_bytes));
            out.push_str(&format!(" {delta} |"));
        }
        out.push_str(if d.breaches.is_empty() {
            " yes |\n"
        } else {
            " **no** |\n"
        });
    }
    out
}
