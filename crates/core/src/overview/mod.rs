//! The overview of one device of a snapshot: headline numbers, counts, the PyTorch era, the
//! allocator settings and warnings.
//!
//! Every number is a [`Metric`] with a stable key (`peak-allocated-bytes`) that the page puts
//! in `data-metric` and the command line prints in its JSON, so the two always show the same
//! values. Computes numbers and typed facts only: labels, units and sentences are chosen by
//! `crate::format::overview`. The request that asks for it is in [`service`].

pub mod service;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::analysis::replay::efficiency_ppm;
use crate::analysis::warning::Warning;
use crate::analysis::Analysed;
use crate::model::{Action, BlockState, Snapshot, TopLevel, Value, NO_TIME};

/// How a metric's value is to be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Bytes,
    Count,
    /// Microseconds (a duration, or a time since the epoch for [`MetricKey::FirstTimeUs`]).
    Micros,
    /// Parts per million (efficiency 0.973 is 973_000).
    Ppm,
}

/// Which group of the overview a metric belongs to: the moment it is measured at (the
/// allocated peak, the first out-of-memory, the end of the trace), or counts and times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    Peak,
    Oom,
    End,
    Counts,
    Time,
}

impl Group {
    /// The stable name, as in `data-group`.
    pub fn as_str(self) -> &'static str {
        match self {
            Group::Peak => "peak",
            Group::Oom => "oom",
            Group::End => "end",
            Group::Counts => "counts",
            Group::Time => "time",
        }
    }

    /// Every group, in the order the overview shows them.
    pub const ALL: [Group; 5] = [
        Group::Peak,
        Group::Oom,
        Group::End,
        Group::Counts,
        Group::Time,
    ];
}

/// What a metric measures. Its text form ([`MetricKey::as_str`]) is the stable key of
/// `data-metric` and of the command line's JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetricKey {
    PeakAllocatedBytes,
    /// Trace row after which allocated memory first peaks.
    PeakAllocatedEvent,
    /// Microseconds from the first event to the allocated peak.
    PeakAllocatedAtUs,
    /// Reserved bytes at the allocated peak.
    ReservedAtPeakBytes,
    /// Reserved − allocated at the allocated peak.
    CachedFreeAtPeakBytes,
    /// Allocated / reserved at the allocated peak, in parts per million.
    EfficiencyAtPeakPpm,
    PeakReservedBytes,
    PeakReservedEvent,
    /// Trace row of the first out-of-memory.
    OomEvent,
    /// Allocated, reserved, cached free bytes and efficiency right after the first OOM.
    AllocatedAtOomBytes,
    ReservedAtOomBytes,
    CachedFreeAtOomBytes,
    EfficiencyAtOomPpm,
    /// Sum of the allocated blocks' sizes at the end (torch's `allocated_bytes`).
    AllocatedEndBytes,
    /// Sum of the allocated blocks' requested sizes at the end.
    RequestedEndBytes,
    ReservedEndBytes,
    /// Reserved − allocated at the end: blocks the allocator keeps cached.
    CachedFreeBytes,
    /// Allocated − requested at the end.
    RoundingWasteBytes,
    /// Blocks freed but waiting for other streams at the end.
    PendingFreeBytes,
    /// Allocated / reserved at the end, in parts per million.
    EfficiencyAtEndPpm,
    SegmentCount,
    BlockCount,
    TraceEntries,
    /// Trace rows of one action.
    ActionCount(Action),
    AllocationCount,
    /// Allocations that existed before the first recorded event.
    AllocationsBeforeTrace,
    UniqueStacks,
    UniqueFrames,
    TimeSpanUs,
    /// Microseconds since the Unix epoch of the first event.
    FirstTimeUs,
}

impl MetricKey {
    /// The stable key: `peak-allocated-bytes`, `trace-free-requested-count`…
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKey::PeakAllocatedBytes => "peak-allocated-bytes",
            MetricKey::PeakAllocatedEvent => "peak-allocated-event",
            MetricKey::PeakAllocatedAtUs => "peak-allocated-at-us",
            MetricKey::ReservedAtPeakBytes => "reserved-at-peak-bytes",
            MetricKey::CachedFreeAtPeakBytes => "cached-free-at-peak-bytes",
            MetricKey::EfficiencyAtPeakPpm => "efficiency-at-peak-ppm",
            MetricKey::PeakReservedBytes => "peak-reserved-bytes",
            MetricKey::PeakReservedEvent => "peak-reserved-event",
            MetricKey::OomEvent => "oom-event",
            MetricKey::AllocatedAtOomBytes => "allocated-at-oom-bytes",
            MetricKey::ReservedAtOomBytes => "reserved-at-oom-bytes",
            MetricKey::CachedFreeAtOomBytes => "cached-free-at-oom-bytes",
            MetricKey::EfficiencyAtOomPpm => "efficiency-at-oom-ppm",
            MetricKey::AllocatedEndBytes => "allocated-end-bytes",
            MetricKey::RequestedEndBytes => "requested-end-bytes",
            MetricKey::ReservedEndBytes => "reserved-end-bytes",
            MetricKey::CachedFreeBytes => "cached-free-bytes",
            MetricKey::RoundingWasteBytes => "rounding-waste-bytes",
            MetricKey::PendingFreeBytes => "pending-free-bytes",
            MetricKey::EfficiencyAtEndPpm => "efficiency-at-end-ppm",
            MetricKey::SegmentCount => "segment-count",
            MetricKey::BlockCount => "block-count",
            MetricKey::TraceEntries => "trace-entries",
            MetricKey::ActionCount(action) => match action {
                Action::Alloc => "trace-alloc-count",
                Action::FreeRequested => "trace-free-requested-count",
                Action::FreeCompleted => "trace-free-completed-count",
                Action::SegmentAlloc => "trace-segment-alloc-count",
                Action::SegmentFree => "trace-segment-free-count",
                Action::SegmentMap => "trace-segment-map-count",
                Action::SegmentUnmap => "trace-segment-unmap-count",
                Action::Snapshot => "trace-snapshot-count",
                Action::Oom => "trace-oom-count",
                Action::Annotate => "trace-annotate-count",
                Action::Other => "trace-other-count",
            },
            MetricKey::AllocationCount => "allocation-count",
            MetricKey::AllocationsBeforeTrace => "allocations-before-trace",
            MetricKey::UniqueStacks => "unique-stacks",
            MetricKey::UniqueFrames => "unique-frames",
            MetricKey::TimeSpanUs => "time-span-us",
            MetricKey::FirstTimeUs => "first-time-us",
        }
    }

    /// Every key, in the order the overview lists them.
    pub fn all() -> impl Iterator<Item = MetricKey> {
        use MetricKey::*;
        let before = [
            PeakAllocatedBytes,
            PeakAllocatedEvent,
            PeakAllocatedAtUs,
            ReservedAtPeakBytes,
            CachedFreeAtPeakBytes,
            EfficiencyAtPeakPpm,
            PeakReservedBytes,
            PeakReservedEvent,
            OomEvent,
            AllocatedAtOomBytes,
            ReservedAtOomBytes,
            CachedFreeAtOomBytes,
            EfficiencyAtOomPpm,
            AllocatedEndBytes,
            RequestedEndBytes,
            ReservedEndBytes,
            CachedFreeBytes,
            RoundingWasteBytes,
            PendingFreeBytes,
            EfficiencyAtEndPpm,
            SegmentCount,
            BlockCount,
            TraceEntries,
        ];
        let actions = Action::KNOWN
            .into_iter()
            .chain([Action::Other])
            .map(ActionCount);
        let after = [
            AllocationCount,
            AllocationsBeforeTrace,
            UniqueStacks,
            UniqueFrames,
            TimeSpanUs,
            FirstTimeUs,
        ];
        before.into_iter().chain(actions).chain(after)
    }

    /// The key whose text is `text`.
    pub fn parse(text: &str) -> Option<MetricKey> {
        MetricKey::all().find(|k| k.as_str() == text)
    }

    pub fn unit(self) -> Unit {
        use MetricKey::*;
        match self {
            PeakAllocatedBytes
            | ReservedAtPeakBytes
            | CachedFreeAtPeakBytes
            | PeakReservedBytes
            | AllocatedAtOomBytes
            | ReservedAtOomBytes
            | CachedFreeAtOomBytes
            | AllocatedEndBytes
            | RequestedEndBytes
            | ReservedEndBytes
            | CachedFreeBytes
            | RoundingWasteBytes
            | PendingFreeBytes => Unit::Bytes,
            PeakAllocatedAtUs | TimeSpanUs | FirstTimeUs => Unit::Micros,
            EfficiencyAtPeakPpm | EfficiencyAtOomPpm | EfficiencyAtEndPpm => Unit::Ppm,
            PeakAllocatedEvent
            | PeakReservedEvent
            | OomEvent
            | SegmentCount
            | BlockCount
            | TraceEntries
            | ActionCount(_)
            | AllocationCount
            | AllocationsBeforeTrace
            | UniqueStacks
            | UniqueFrames => Unit::Count,
        }
    }

    pub fn group(self) -> Group {
        use MetricKey::*;
        match self {
            PeakAllocatedBytes
            | PeakAllocatedEvent
            | PeakAllocatedAtUs
            | ReservedAtPeakBytes
            | CachedFreeAtPeakBytes
            | EfficiencyAtPeakPpm
            | PeakReservedBytes
            | PeakReservedEvent => Group::Peak,
            OomEvent | AllocatedAtOomBytes | ReservedAtOomBytes | CachedFreeAtOomBytes
            | EfficiencyAtOomPpm => Group::Oom,
            AllocatedEndBytes | RequestedEndBytes | ReservedEndBytes | CachedFreeBytes
            | RoundingWasteBytes | PendingFreeBytes | EfficiencyAtEndPpm => Group::End,
            SegmentCount
            | BlockCount
            | TraceEntries
            | ActionCount(_)
            | AllocationCount
            | AllocationsBeforeTrace
            | UniqueStacks
            | UniqueFrames => Group::Counts,
            TimeSpanUs | FirstTimeUs => Group::Time,
        }
    }

    /// Whether the value is a point in time (µs since the epoch) rather than a duration.
    pub fn is_timestamp(self) -> bool {
        self == MetricKey::FirstTimeUs
    }
}

impl fmt::Display for MetricKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for MetricKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for MetricKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        MetricKey::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown metric `{text}`")))
    }
}

/// One number of the overview.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metric {
    pub key: MetricKey,
    pub value: u64,
}

impl Metric {
    pub fn unit(&self) -> Unit {
        self.key.unit()
    }
}

/// The PyTorch release range a file's keys point to, from the newest key present.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Era {
    /// `pool_id` or `forward_frames` on trace entries.
    NewerThan2_10,
    /// `user_metadata`.
    Since2_10,
    /// `compile_context`.
    From2_7To2_9,
    /// `external_annotations`.
    Since2_5,
    /// `allocator_settings`.
    Since2_3,
    /// `time_us`.
    Is2_2,
    /// Blocks with `history`.
    Is2_0,
    /// A trace or block frames, no `time_us`.
    Is2_1,
    /// No versioned key at all.
    Unknown,
}

/// Where the file's contents came from and which PyTorch wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormatFacts {
    /// What produced the file (a snapshot, or another profiler output).
    #[serde(default)]
    pub source: crate::model::Source,
    pub era: Era,
    /// A bare list of segments (`pickle.dump(torch.cuda.memory_snapshot())`).
    pub segment_list_only: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Overview {
    pub device: u32,
    /// The kind of device it is (`cuda`, `npu`…).
    #[serde(default)]
    pub device_kind: crate::model::DeviceKind,
    pub metrics: Vec<Metric>,
    pub format: FormatFacts,
    /// Allocator settings as (name, value) text pairs, in file order.
    pub allocator_settings: Vec<(String, String)>,
    pub warnings: Vec<Warning>,
    /// The device used no memory: no segments and no trace entries.
    pub unused: bool,
    /// Rows of actions this model does not know (`workspace_snapshot` of torch_npu…), counted
    /// by name, in name order.
    #[serde(default)]
    pub unknown_actions: Vec<(String, u64)>,
}

impl Overview {
    /// The value of metric `key`, when the overview has it.
    pub fn get(&self, key: MetricKey) -> Option<u64> {
        self.metrics.iter().find(|m| m.key == key).map(|m| m.value)
    }
}

/// The overview of device `id`, or `None` when the snapshot has no such device.
pub fn build(analysed: &Analysed, id: u32) -> Option<Overview> {
    let (device, facts) = analysed.device_facts(id)?;
    let snapshot = &analysed.snapshot;
    let trace = &device.trace;
    let mut m = Vec::new();
    let mut add = |key: MetricKey, value: u64| m.push(Metric { key, value });

    let allocated = || device.blocks.iter().filter(|b| b.state.is_allocated());
    // A profiler trace has no segments: its end is its curves' end.
    let from_segments = snapshot.source.has_segments();
    let reserved_end: u64 = if from_segments {
        device.segments.iter().map(|s| s.total_size).sum()
    } else {
        facts.reserved_after(trace.len().checked_sub(1).map(|r| r as u32))
    };
    let allocated_end: u64 = if from_segments {
        allocated().map(|b| b.size).sum()
    } else {
        facts.allocated_at_end()
    };
    let requested_end: u64 = if from_segments {
        allocated()
            .map(|b| b.requested_size.unwrap_or(b.size))
            .sum()
    } else {
        allocated_end
    };
    let pending_free: u64 = device
        .blocks
        .iter()
        .filter(|b| b.state == BlockState::ActivePendingFree)
        .map(|b| b.size)
        .sum();
    let cached_free: u64 = if from_segments {
        device
            .blocks
            .iter()
            .filter(|b| !b.state.is_allocated())
            .map(|b| b.size)
            .sum()
    } else {
        reserved_end.saturating_sub(allocated_end)
    };
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

    // Allocated (the curve's requested bytes) and reserved at a moment, as the four numbers
    // a moment's card shows.
    let moment = |row: Option<u32>| {
        let allocated = row.map_or(facts.baseline_allocated, |r| facts.allocated[r as usize]);
        let reserved = facts.reserved_after(row);
        let efficiency = efficiency_ppm(allocated, reserved);
        (
            allocated,
            reserved,
            reserved.saturating_sub(allocated),
            efficiency,
        )
    };

    let peak = facts.peak_allocated;
    add(MetricKey::PeakAllocatedBytes, peak.bytes);
    if let Some(row) = peak.row {
        add(MetricKey::PeakAllocatedEvent, row as u64);
    }
    if let Some(t) = since_start(peak.row) {
        add(MetricKey::PeakAllocatedAtUs, t);
    }
    let (_, peak_reserved, peak_cached_free, _) = moment(peak.row);
    add(MetricKey::ReservedAtPeakBytes, peak_reserved);
    add(MetricKey::CachedFreeAtPeakBytes, peak_cached_free);
    if let Some(ppm) = facts.efficiency_at_peak_ppm() {
        add(MetricKey::EfficiencyAtPeakPpm, ppm);
    }
    add(MetricKey::PeakReservedBytes, facts.peak_reserved.bytes);
    if let Some(row) = facts.peak_reserved.row {
        add(MetricKey::PeakReservedEvent, row as u64);
    }

    if let Some(row) = (0..trace.len()).find(|&r| trace.action[r] == Action::Oom) {
        let (oom_allocated, oom_reserved, oom_cached_free, oom_efficiency) =
            moment(Some(row as u32));
        add(MetricKey::OomEvent, row as u64);
        add(MetricKey::AllocatedAtOomBytes, oom_allocated);
        add(MetricKey::ReservedAtOomBytes, oom_reserved);
        add(MetricKey::CachedFreeAtOomBytes, oom_cached_free);
        if let Some(ppm) = oom_efficiency {
            add(MetricKey::EfficiencyAtOomPpm, ppm);
        }
    }
    add(MetricKey::AllocatedEndBytes, allocated_end);
    add(MetricKey::RequestedEndBytes, requested_end);
    add(MetricKey::ReservedEndBytes, reserved_end);
    add(MetricKey::CachedFreeBytes, cached_free);
    add(
        MetricKey::RoundingWasteBytes,
        allocated_end.saturating_sub(requested_end),
    );
    if pending_free > 0 {
        add(MetricKey::PendingFreeBytes, pending_free);
    }
    if let Some(ppm) = efficiency_ppm(allocated_end, reserved_end) {
        add(MetricKey::EfficiencyAtEndPpm, ppm);
    }

    add(MetricKey::SegmentCount, device.segments.len() as u64);
    add(MetricKey::BlockCount, device.blocks.len() as u64);
    add(MetricKey::TraceEntries, trace.len() as u64);
    for action in Action::KNOWN.into_iter().chain([Action::Other]) {
        let n = facts.action_counts[action as usize];
        if n > 0 {
            add(MetricKey::ActionCount(action), n);
        }
    }
    add(MetricKey::AllocationCount, facts.allocations.len() as u64);
    let before = facts.frees_without_alloc + facts.live_blocks_without_alloc;
    if before > 0 {
        add(MetricKey::AllocationsBeforeTrace, before);
    }
    add(MetricKey::UniqueStacks, snapshot.stacks.len() as u64);
    add(MetricKey::UniqueFrames, snapshot.frames.len() as u64);

    if let (Some(first), Some(last)) = (first_time, last_time) {
        add(
            MetricKey::TimeSpanUs,
            last.saturating_sub(first).max(0) as u64,
        );
        add(MetricKey::FirstTimeUs, first.max(0) as u64);
    }

    let mut warnings = facts.warnings.clone();
    for row in (0..trace.len()).filter(|&r| trace.action[r] == Action::Oom) {
        warnings.push(Warning::Oom {
            event: row as u32,
            at_us: since_start(Some(row as u32)),
            requested: trace.size[row],
            device_free: trace.addr[row],
        });
    }
    warnings.extend(snapshot.notes.iter().cloned().map(Warning::Import));
    Some(Overview {
        device: id,
        device_kind: snapshot.kind_of(id),
        metrics: m,
        format: FormatFacts {
            source: snapshot.source,
            era: era(snapshot),
            segment_list_only: snapshot.top_level == TopLevel::SegmentList,
        },
        allocator_settings: settings(snapshot),
        warnings,
        unused: device.segments.is_empty() && trace.is_empty(),
        unknown_actions: unknown_actions(trace, snapshot),
    })
}

/// What a device's trace says about running out of memory: the out-of-memory errors it
/// recorded, none, or that it could not have recorded one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum OomRecord {
    /// `count` `oom` entries; the first one's request (`None` in a digest written before
    /// requests were kept).
    Recorded {
        count: u64,
        first: Option<OomRequest>,
    },
    /// The trace recorded allocations and no out-of-memory.
    NoneRecorded,
    /// The file cannot show an out-of-memory, so whether the run ran out is unknown.
    CannotRecord { why: Unrecordable },
}

impl OomRecord {
    /// The number of out-of-memory errors recorded (0 when none was, or none could be).
    pub fn count(&self) -> u64 {
        match self {
            OomRecord::Recorded { count, .. } => *count,
            _ => 0,
        }
    }
}

/// Why a device's trace cannot show an out-of-memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unrecordable {
    /// A PyTorch 2.0-era file whose trace holds no allocation (that era's trace kept its
    /// last entry only unless asked for more: here, the snapshot call).
    Format2_0,
    /// No allocation was traced (recording was off, or the file is a list of segments).
    NoTrace,
}

/// The first out-of-memory of a trace: the request that failed and the memory around it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OomRequest {
    /// The trace row of the `oom` entry.
    pub event: u32,
    /// The bytes asked for.
    pub requested_bytes: u64,
    /// The free bytes the device reported (the entry's `device_free`).
    pub device_free_bytes: u64,
    /// Allocated and reserved bytes when it failed, as the trace replays them.
    pub allocated_bytes: u64,
    pub reserved_bytes: u64,
}

/// What device `id`'s trace says about running out of memory, or `None` without the device.
pub fn oom_record(analysed: &Analysed, id: u32) -> Option<OomRecord> {
    let (device, facts) = analysed.device_facts(id)?;
    let trace = &device.trace;
    let rows: Vec<usize> = (0..trace.len())
        .filter(|&r| trace.action[r] == Action::Oom)
        .collect();
    if let Some(&row) = rows.first() {
        return Some(OomRecord::Recorded {
            count: rows.len() as u64,
            first: Some(OomRequest {
                event: row as u32,
                requested_bytes: trace.size[row],
                device_free_bytes: trace.addr[row],
                allocated_bytes: facts.allocated[row],
                reserved_bytes: facts.reserved_after(Some(row as u32)),
            }),
        });
    }
    let traced = [Action::Alloc, Action::FreeRequested, Action::FreeCompleted]
        .iter()
        .any(|&a| facts.action_counts[a as usize] > 0);
    Some(match (traced, era(&analysed.snapshot)) {
        (true, _) => OomRecord::NoneRecorded,
        (false, Era::Is2_0) => OomRecord::CannotRecord {
            why: Unrecordable::Format2_0,
        },
        (false, _) => OomRecord::CannotRecord {
            why: Unrecordable::NoTrace,
        },
    })
}

/// The rows of `trace` whose action the model does not know, counted by name, in name order.
pub fn unknown_actions(trace: &crate::model::Trace, snapshot: &Snapshot) -> Vec<(String, u64)> {
    let mut counts: std::collections::BTreeMap<&str, u64> = Default::default();
    for &(_, name) in &trace.unknown_actions {
        *counts.entry(snapshot.str(name)).or_default() += 1;
    }
    counts
        .into_iter()
        .map(|(name, n)| (name.to_string(), n))
        .collect()
}

/// The PyTorch release range the file's keys point to.
pub fn era(snapshot: &Snapshot) -> Era {
    let f = &snapshot.features;
    let has_trace = snapshot.devices.iter().any(|d| !d.trace.is_empty());
    if f.pool_id || f.forward_frames {
        Era::NewerThan2_10
    } else if f.user_metadata {
        Era::Since2_10
    } else if f.compile_context {
        Era::From2_7To2_9
    } else if !snapshot.annotations.is_empty() {
        Era::Since2_5
    } else if snapshot.allocator_settings.is_some() {
        Era::Since2_3
    } else if f.time_us {
        Era::Is2_2
    } else if f.block_history {
        Era::Is2_0
    } else if has_trace || f.block_frames {
        Era::Is2_1
    } else {
        Era::Unknown
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_keys_round_trip_through_their_text() {
        let all: Vec<MetricKey> = MetricKey::all().collect();
        for key in &all {
            assert_eq!(MetricKey::parse(key.as_str()), Some(*key));
            let json = serde_json::to_string(key).unwrap();
            assert_eq!(json, format!("\"{key}\""));
            assert_eq!(serde_json::from_str::<MetricKey>(&json).unwrap(), *key);
        }
        let mut texts: Vec<&str> = all.iter().map(|k| k.as_str()).collect();
        texts.sort_unstable();
        texts.dedup();
        assert_eq!(texts.len(), all.len(), "keys are unique");
        assert!(serde_json::from_str::<MetricKey>("\"no-such-metric\"").is_err());
    }

    #[test]
    fn units_and_groups_follow_the_key() {
        assert_eq!(MetricKey::PeakAllocatedBytes.unit(), Unit::Bytes);
        assert_eq!(MetricKey::EfficiencyAtEndPpm.unit(), Unit::Ppm);
        assert_eq!(MetricKey::TimeSpanUs.unit(), Unit::Micros);
        assert_eq!(
            MetricKey::ActionCount(Action::FreeRequested).unit(),
            Unit::Count
        );
        assert_eq!(MetricKey::SegmentCount.group(), Group::Counts);
        assert_eq!(MetricKey::ReservedAtPeakBytes.group(), Group::Peak);
        assert_eq!(MetricKey::CachedFreeAtOomBytes.group(), Group::Oom);
        assert_eq!(MetricKey::EfficiencyAtEndPpm.group(), Group::End);
        assert_eq!(MetricKey::FirstTimeUs.group(), Group::Time);
        assert!(MetricKey::FirstTimeUs.is_timestamp());
        assert!(!MetricKey::TimeSpanUs.is_timestamp());
        // Every key's text says what its unit is.
        for key in MetricKey::all() {
            let text = key.as_str();
            match key.unit() {
                Unit::Bytes => assert!(text.ends_with("-bytes"), "{text}"),
                Unit::Ppm => assert!(text.ends_with("-ppm"), "{text}"),
                Unit::Micros => assert!(text.ends_with("-us"), "{text}"),
                Unit::Count => assert!(!text.ends_with("-bytes") && !text.ends_with("-us")),
            }
        }
    }

    #[test]
    fn an_unknown_device_has_no_overview() {
        let analysed = Analysed::default();
        assert_eq!(build(&analysed, 3), None);
    }
}
