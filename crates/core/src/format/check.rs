//! A budget check in words a reviewer reads: one line per limit a device went past ("rank 3
//! cuda:0: peak allocated 41.2 GiB exceeds 40.0 GiB by 1.20 GiB; the largest growth against
//! the baseline is activations +3.10 GiB, and of call sites model.py:88 forward +2.90 GiB",
//! what grew on a device's first line only), a verdict line, and the same as Markdown for a CI
//! job's summary. Not the place for deciding what breaches
//! ([`crate::compare::budget`]).

use super::document::{Align, Cell, DocBlock, DocColumn, DocTable, Document, Inline};
use super::{bytes, bytes_delta, count, counted, device, frame_short, percent_ppm};
use crate::analysis::categories::labels::role_label;
use crate::analysis::oom::{OomRecord, Unrecordable};
use crate::compare::budget::{Breach, Checked, DeviceCheck, Headroom, Verdict};

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
        Checked::OutOfMemory => oom_words(&check.oom).unwrap_or_default(),
    }
}

/// What a device's trace says about running out of memory, when it says anything worth a
/// line: "ran out of memory at event 421: a request of 4.94 GiB failed with 91.2 MiB free on
/// the device (78.3 GiB allocated, 78.4 GiB reserved)", or that it could not have been
/// recorded; `None` when the trace recorded allocations and no out-of-memory.
pub fn oom_words(oom: &OomRecord) -> Option<String> {
    match oom {
        OomRecord::Recorded { count: n, first } => {
            let times = match n {
                1 => String::new(),
                n => format!(" ({} times; the first", count(*n)),
            };
            let close = if *n > 1 { ")" } else { "" };
            Some(match first {
                Some(first) => format!(
                    "ran out of memory{times} at event {}{close}: a request of {} failed with {} \
                     free on the device ({} allocated, {} reserved)",
                    count(u64::from(first.event.get())),
                    bytes(first.requested_bytes),
                    bytes(first.device_free_bytes),
                    bytes(first.allocated_bytes),
                    bytes(first.reserved_bytes),
                ),
                None => format!("ran out of memory{times}{close}"),
            })
        }
        OomRecord::NoneRecorded => None,
        OomRecord::CannotRecord { why } => Some(format!(
            "an out-of-memory could not be recorded ({}), so whether it ran out of memory is \
             unknown",
            match why {
                Unrecordable::Format2_0 => {
                    "a PyTorch 2.0-era file whose trace holds no allocation"
                }
                Unrecordable::NoTrace => {
                    "no allocation was traced: record one with \
                     torch.cuda.memory._record_memory_history()"
                }
            }
        )),
    }
}

/// What the devices' traces say about running out of memory beyond the breaches: one line per
/// device whose out-of-memory was allowed or could not be recorded.
pub fn oom_lines(verdict: &Verdict) -> Vec<String> {
    verdict
        .devices
        .iter()
        .filter(|d| !d.breaches.iter().any(|b| b.checked == Checked::OutOfMemory))
        .filter_map(|d| {
            let words = oom_words(&d.oom)?;
            let allowed = match d.oom {
                OomRecord::Recorded { .. } => " (allowed)",
                _ => "",
            };
            Some(format!("{}: {words}{allowed}", device_name(d)))
        })
        .collect()
}

/// A limit's name: "peak allocated", "activations at the peak".
fn limit_words(checked: Checked) -> String {
    match checked {
        Checked::PeakAllocated => "peak allocated".into(),
        Checked::PeakReserved => "peak reserved".into(),
        Checked::EfficiencyAtPeak => "efficiency at the peak".into(),
        Checked::UnknownShare => "share of the peak with no known role".into(),
        Checked::Role(role) => format!("{} at the peak", role_words(role)),
        Checked::PeakGrowth => "growth of the peak allocated".into(),
        Checked::ReservedGrowth => "growth of the peak reserved".into(),
        Checked::RoleGrowth(role) => format!("growth of {}", role_words(role)),
        Checked::OutOfMemory => "out-of-memory errors".into(),
    }
}

/// A limit's figure in its unit: bytes, or a percentage.
fn figure(checked: Checked, value: u64) -> String {
    match checked {
        Checked::EfficiencyAtPeak | Checked::UnknownShare => percent_ppm(value),
        _ => bytes(value),
    }
}

/// One limit and the room left under it: "peak allocated: at most 80.0 GiB; the highest is
/// 78.3 GiB (rank 1 cuda:0), 1.70 GiB below it".
pub fn headroom_words(verdict: &Verdict, room: &Headroom) -> String {
    let (most, highest) = match room.checked {
        Checked::EfficiencyAtPeak => ("at least", "the lowest"),
        _ => ("at most", "the highest"),
    };
    let left = figure(room.checked, room.headroom.unsigned_abs());
    let side = match (room.headroom >= 0, room.checked) {
        (true, Checked::EfficiencyAtPeak) => format!("{left} above it"),
        (true, _) => format!("{left} below it"),
        (false, Checked::EfficiencyAtPeak) => format!("{left} below it"),
        (false, _) => format!("{left} over it"),
    };
    let name = verdict
        .devices
        .get(room.device)
        .map(device_name)
        .unwrap_or_default();
    format!(
        "{}: {most} {}; {highest} is {} ({name}), {side}",
        limit_words(room.checked),
        figure(room.checked, room.limit),
        figure(room.checked, room.value),
    )
}

/// One line per limit on the devices' own figures that every device kept, with the room
/// left under it (a limit a device went past has its breach lines).
pub fn headroom_lines(verdict: &Verdict) -> Vec<String> {
    verdict
        .headroom
        .iter()
        .filter(|room| room.headroom >= 0)
        .map(|room| headroom_words(verdict, room))
        .collect()
}

/// What grew most against the baseline: "the largest growth against the baseline is
/// activations +3.1 GiB, and of call sites model.py:88 forward +2.9 GiB"; `None` without a
/// baseline or growth. The role and the call site are each the largest of their kind (a
/// digest does not say which role a call site's bytes hold).
pub fn growth_words(check: &DeviceCheck) -> Option<String> {
    let growth = check.growth.as_ref()?;
    if growth.phases_differ {
        return Some(format!(
            "the baseline peaks in {}, this run in {}: what each phase holds differs, so only \
             the whole-run peaks are compared ({} against the baseline) and no role or call site \
             is named",
            super::compare::phase_words(growth.baseline_phase, growth.baseline_iteration),
            super::compare::phase_words(growth.phase, growth.iteration),
            bytes_delta(growth.peak_delta_bytes),
        ));
    }
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

/// Devices a baseline was given for but none of its devices matched, and devices within
/// budget whose peak falls in another phase than the baseline's.
pub fn unmatched_lines(verdict: &Verdict) -> Vec<String> {
    let unmatched = verdict.devices.iter().filter(|d| d.no_baseline).map(|d| {
        format!(
            "{}: no device of the baseline matches it (by rank, file name or device); its \
             growth is not checked",
            device_name(d)
        )
    });
    let other_phase = verdict
        .devices
        .iter()
        .filter(|d| d.breaches.is_empty())
        .filter(|d| d.growth.as_ref().is_some_and(|g| g.phases_differ))
        .filter_map(|d| Some(format!("{}: {}", device_name(d), growth_words(d)?)));
    unmatched.chain(other_phase).collect()
}

/// The verdict in one line: "memsight check: 2 budgets exceeded on 1 of 8 devices" or
/// "memsight check: all 8 devices within budget".
pub fn verdict_line(verdict: &Verdict) -> String {
    let devices = verdict.devices.len();
    let plural = |n: usize, one: &str, many: &str| counted(n as u64, one, many);
    if verdict.pass {
        let unknown = verdict
            .devices
            .iter()
            .filter(|d| matches!(d.oom, OomRecord::CannotRecord { .. }))
            .count();
        let unknown = match (unknown, devices) {
            (0, _) => String::new(),
            (_, 1) => " (whether it ran out of memory is unknown)".to_string(),
            (n, _) if n == devices => " (whether they ran out of memory is unknown)".to_string(),
            (n, _) => format!(
                " (whether {} ran out of memory is unknown)",
                plural(n, "of them", "of them")
            ),
        };
        return match devices {
            1 => format!("memsight check: the device is within budget{unknown}"),
            n => format!("memsight check: all {n} devices within budget{unknown}"),
        };
    }
    let is_oom = |b: &&Breach| b.checked == Checked::OutOfMemory;
    let breaches: usize = verdict
        .devices
        .iter()
        .map(|d| d.breaches.iter().filter(|b| !is_oom(b)).count())
        .sum();
    let ran_out = verdict
        .devices
        .iter()
        .filter(|d| d.breaches.iter().any(|b| is_oom(&b)))
        .count();
    let over = verdict
        .devices
        .iter()
        .filter(|d| d.breaches.iter().any(|b| !is_oom(&b)))
        .count();
    let mut what = Vec::new();
    if breaches > 0 {
        let exceeded = plural(breaches, "budget", "budgets");
        what.push(match devices {
            1 => format!("{exceeded} exceeded"),
            n => format!("{exceeded} exceeded on {over} of {n} devices"),
        });
    }
    if ran_out > 0 {
        what.push(match devices {
            1 => "the device ran out of memory".to_string(),
            n => format!("{ran_out} of {n} devices ran out of memory"),
        });
    }
    format!("memsight check: {}", what.join("; "))
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
        .chain(oom_lines(verdict))
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
        DocColumn::new("Out of memory", Align::Right),
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
                Cell::text(super::compare::oom_cell(&d.oom)),
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
    let room: Vec<Vec<Inline>> = headroom_lines(verdict)
        .into_iter()
        .map(|line| vec![Inline::text(line)])
        .collect();
    if !room.is_empty() {
        doc.heading(3, "Budgets and their headroom");
        doc.push(DocBlock::List(room));
    }
    doc.markdown()
}
