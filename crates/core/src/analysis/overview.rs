//! The overview of one device of a snapshot: headline numbers, counts, era, settings and
//! warnings, as a flat list of named metrics that any front end can show and test.
//!
//! Not a place for drawing: views format these values; this module only computes them.

use serde::{Deserialize, Serialize};

use super::Analysed;
use crate::model::{Action, BlockState, Layout, Snapshot, Value, NO_TIME};

/// How a metric's value is to be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Bytes,
    Count,
    /// Microseconds (a duration, or a time since the epoch for `*-time-us` metrics).
    Micros,
    /// Parts per million (efficiency 0.973 is 973_000).
    Ppm,
}

/// One number of the overview, with a stable key (`peak-allocated-bytes`) for tests and links.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub key: String,
    pub label: String,
    pub value: u64,
    pub unit: Unit,
    /// Which group the metric belongs to on the page ("memory", "counts", "time").
    pub group: String,
}

/// A warning about the snapshot, with a stable kind for tests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WarningView {
    pub kind: String,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Overview {
    pub device: u32,
    pub metrics: Vec<Metric>,
    /// The PyTorch release range the file's keys point to, e.g. "2.10 or later".
    pub era: String,
    /// Allocator settings as (name, value) text pairs, in file order.
    pub allocator_settings: Vec<(String, String)>,
    pub warnings: Vec<WarningView>,
}

/// The overview of device `id` (an empty overview for an unknown device).
pub(crate) fn build(analysed: &Analysed, id: u32) -> Overview {
    let snapshot = &analysed.snapshot;
    let mut out = Overview {
        device: id,
        metrics: Vec::new(),
        era: era(snapshot),
        allocator_settings: settings(snapshot),
        warnings: Vec::new(),
    };
    let Some(index) = snapshot.devices.iter().position(|d| d.id == id) else {
        return out;
    };
    let device = &snapshot.devices[index];
    let facts = &analysed.facts[index];
    let trace = &device.trace;
    let mut m = Metrics::default();

    let reserved_end: u64 = device.segments.iter().map(|s| s.total_size).sum();
    let allocated_end: u64 = device
        .blocks
        .iter()
        .filter(|b| b.state.is_allocated())
        .map(|b| b.size)
        .sum();
    let requested_end: u64 = device
        .blocks
        .iter()
        .filter(|b| b.state.is_allocated())
        .map(|b| b.requested_size.unwrap_or(b.size))
        .sum();
    let pending_free: u64 = device
        .blocks
        .iter()
        .filter(|b| b.state == BlockState::ActivePendingFree)
        .map(|b| b.size)
        .sum();
    let cached_free: u64 = device
        .blocks
        .iter()
        .filter(|b| !b.state.is_allocated())
        .map(|b| b.size)
        .sum();
    let first_time = trace.time_us.iter().copied().find(|&t| t != NO_TIME);
    let last_time = trace.time_us.iter().rev().copied().find(|&t| t != NO_TIME);
    let since_start = |row: Option<u32>| -> Option<u64> {
        let t = trace
            .time_us
            .get(row? as usize)
            .copied()
            .filter(|&t| t != NO_TIME)?;
        Some(t.saturating_sub(first_time?).max(0) as u64)
    };

    let g = "memory";
    m.add(
        "peak-allocated-bytes",
        "Peak allocated",
        facts.peak_allocated.bytes,
        Unit::Bytes,
        g,
    );
    if let Some(row) = facts.peak_allocated.row {
        m.add(
            "peak-allocated-event",
            "Peak allocated at event",
            row as u64,
            Unit::Count,
            g,
        );
    }
    if let Some(t) = since_start(facts.peak_allocated.row) {
        m.add(
            "peak-allocated-at-us",
            "Peak allocated at",
            t,
            Unit::Micros,
            g,
        );
    }
    m.add(
        "peak-reserved-bytes",
        "Peak reserved",
        facts.peak_reserved.bytes,
        Unit::Bytes,
        g,
    );
    if let Some(row) = facts.peak_reserved.row {
        m.add(
            "peak-reserved-event",
            "Peak reserved at event",
            row as u64,
            Unit::Count,
            g,
        );
    }
    m.add(
        "allocated-end-bytes",
        "Allocated at end",
        allocated_end,
        Unit::Bytes,
        g,
    );
    m.add(
        "requested-end-bytes",
        "Requested at end",
        requested_end,
        Unit::Bytes,
        g,
    );
    m.add(
        "reserved-end-bytes",
        "Reserved at end",
        reserved_end,
        Unit::Bytes,
        g,
    );
    m.add(
        "cached-free-bytes",
        "Cached free (reserved − allocated)",
        cached_free,
        Unit::Bytes,
        g,
    );
    m.add(
        "rounding-waste-bytes",
        "Rounding waste (allocated − requested)",
        allocated_end.saturating_sub(requested_end),
        Unit::Bytes,
        g,
    );
    if pending_free > 0 {
        m.add(
            "pending-free-bytes",
            "Awaiting free on other streams",
            pending_free,
            Unit::Bytes,
            g,
        );
    }
    if reserved_end > 0 {
        let ppm = (allocated_end as u128 * 1_000_000 / reserved_end as u128) as u64;
        m.add(
            "efficiency-ppm",
            "Efficiency (allocated / reserved)",
            ppm,
            Unit::Ppm,
            g,
        );
    }

    let g = "counts";
    m.add(
        "segment-count",
        "Segments",
        device.segments.len() as u64,
        Unit::Count,
        g,
    );
    m.add(
        "block-count",
        "Blocks",
        device.blocks.len() as u64,
        Unit::Count,
        g,
    );
    m.add(
        "trace-entries",
        "Trace entries",
        trace.len() as u64,
        Unit::Count,
        g,
    );
    for action in Action::KNOWN.into_iter().chain([Action::Other]) {
        let n = facts.action_counts[action as usize];
        if n > 0 {
            let label = format!("{} events", action.name());
            m.add(
                &format!("trace-{}-count", action.name().replace('_', "-")),
                &label,
                n,
                Unit::Count,
                g,
            );
        }
    }
    m.add(
        "allocation-count",
        "Allocations",
        facts.allocations.len() as u64,
        Unit::Count,
        g,
    );
    let before = facts.frees_without_alloc + facts.live_blocks_without_alloc;
    if before > 0 {
        m.add(
            "allocations-before-trace",
            "Allocations before the trace",
            before,
            Unit::Count,
            g,
        );
    }
    m.add(
        "unique-stacks",
        "Unique stacks",
        snapshot.stacks.len() as u64,
        Unit::Count,
        g,
    );
    m.add(
        "unique-frames",
        "Unique frames",
        snapshot.frames.len() as u64,
        Unit::Count,
        g,
    );

    let g = "time";
    if let (Some(first), Some(last)) = (first_time, last_time) {
        m.add(
            "time-span-us",
            "Time span",
            last.saturating_sub(first).max(0) as u64,
            Unit::Micros,
            g,
        );
        m.add(
            "first-time-us",
            "First event",
            first.max(0) as u64,
            Unit::Micros,
            g,
        );
    }

    out.metrics = m.0;
    out.warnings = facts
        .findings
        .iter()
        .map(|f| WarningView {
            kind: f.kind.to_string(),
            message: f.message.clone(),
        })
        .collect();
    for row in (0..trace.len()).filter(|&r| trace.action[r] == Action::Oom) {
        let when = since_start(Some(row as u32))
            .map(|t| format!(" at {:.3} s", t as f64 / 1e6))
            .unwrap_or_default();
        out.warnings.push(WarningView {
                kind: "oom".into(),
                message: format!(
                    "Out of memory{when} (event {row}): a request of {} failed with {} free on the device.",
                    crate::format::bytes(trace.size[row]),
                    crate::format::bytes(trace.addr[row])
                ),
            });
    }
    out
}

#[derive(Default)]
struct Metrics(Vec<Metric>);

impl Metrics {
    fn add(&mut self, key: &str, label: &str, value: u64, unit: Unit, group: &str) {
        self.0.push(Metric {
            key: key.to_string(),
            label: label.to_string(),
            value,
            unit,
            group: group.to_string(),
        });
    }
}

/// The PyTorch release range the file's keys point to.
pub fn era(snapshot: &Snapshot) -> String {
    let f = &snapshot.features;
    let has_trace = snapshot.devices.iter().any(|d| !d.trace.is_empty());
    let e = if f.pool_id || f.forward_frames {
        "newer than 2.10 (pool_id / forward_frames)"
    } else if f.user_metadata {
        "2.10 or later (user_metadata)"
    } else if f.compile_context {
        "2.7 – 2.9 (compile_context)"
    } else if !snapshot.annotations.is_empty() {
        "2.5 or later (external_annotations)"
    } else if snapshot.allocator_settings.is_some() {
        "2.3 or later (allocator_settings)"
    } else if f.time_us {
        "2.2 (time_us)"
    } else if f.block_history {
        "2.0 (block history)"
    } else if has_trace || f.block_frames {
        "2.1 (no time_us)"
    } else {
        "unknown (no versioned keys)"
    };
    if snapshot.layout == Layout::SegmentList {
        format!("{e}; segment list only")
    } else {
        e.to_string()
    }
}

fn settings(snapshot: &Snapshot) -> Vec<(String, String)> {
    match &snapshot.allocator_settings {
        Some(Value::Dict(pairs)) => pairs
            .iter()
            .map(|(k, v)| (k.display(), v.display()))
            .collect(),
        Some(other) => vec![("allocator_settings".into(), other.display())],
        None => Vec::new(),
    }
}
