//! The overview in words: each metric's label and its value in human units, group titles,
//! the PyTorch era, and the sentence of each warning. The page and the command line both
//! print these, so they read the same.

use super::{bytes, count, duration_us, percent_ppm, timestamp_us};
use crate::analysis::{DeviceChoice, Warning};
use crate::model::{DeviceKind, ImportNote, Source};
use crate::overview::{Era, FormatFacts, Group, Metric, MetricKey, Unit};

/// What a metric is called: `Peak allocated`, `free_requested events`.
pub fn metric_label(key: MetricKey) -> String {
    let label = match key {
        MetricKey::PeakAllocatedBytes => "Peak allocated",
        MetricKey::PeakAllocatedEvent => "Peak allocated at event",
        MetricKey::PeakAllocatedAtUs => "Peak allocated at",
        MetricKey::ReservedAtPeakBytes => "Reserved at the peak",
        MetricKey::CachedFreeAtPeakBytes => "Cached free at the peak (reserved − allocated)",
        MetricKey::EfficiencyAtPeakPpm => "Efficiency at the peak (allocated / reserved)",
        MetricKey::PeakReservedBytes => "Peak reserved",
        MetricKey::PeakReservedEvent => "Peak reserved at event",
        MetricKey::OomEvent => "Out of memory at event",
        MetricKey::AllocatedAtOomBytes => "Allocated at the OOM",
        MetricKey::ReservedAtOomBytes => "Reserved at the OOM",
        MetricKey::CachedFreeAtOomBytes => "Cached free at the OOM (reserved − allocated)",
        MetricKey::EfficiencyAtOomPpm => "Efficiency at the OOM (allocated / reserved)",
        MetricKey::AllocatedEndBytes => "Allocated at end",
        MetricKey::RequestedEndBytes => "Requested at end",
        MetricKey::ReservedEndBytes => "Reserved at end",
        MetricKey::CachedFreeBytes => "Cached free at end (reserved − allocated)",
        MetricKey::RoundingWasteBytes => "Rounding waste at end (allocated − requested)",
        MetricKey::PendingFreeBytes => "Awaiting free on other streams at end",
        MetricKey::EfficiencyAtEndPpm => "Efficiency at end (allocated / reserved)",
        MetricKey::SegmentCount => "Segments",
        MetricKey::BlockCount => "Blocks",
        MetricKey::TraceEntries => "Trace entries",
        MetricKey::ActionCount(action) => return format!("{} events", action.name()),
        MetricKey::AllocationCount => "Allocations",
        MetricKey::AllocationsBeforeTrace => "Allocations before the trace",
        MetricKey::UniqueStacks => "Unique stacks",
        MetricKey::UniqueFrames => "Unique frames",
        MetricKey::TimeSpanUs => "Time span",
        MetricKey::FirstTimeUs => "First event",
    };
    label.to_string()
}

/// The value of a metric in human units: `1.50 KiB`, `12,345`, `4.56 s`, `97.3%`.
pub fn metric_value(metric: &Metric) -> String {
    match metric.unit() {
        Unit::Bytes => bytes(metric.value),
        Unit::Count => count(metric.value),
        Unit::Micros if metric.key.is_timestamp() => timestamp_us(metric.value),
        Unit::Micros => duration_us(metric.value),
        Unit::Ppm => percent_ppm(metric.value),
    }
}

/// The overview's figures said first, under the file's name (the page's overview strip):
/// the peak, what was reserved there and how much of it was in use, and the highest reserve.
pub const GLANCE: [MetricKey; 4] = [
    MetricKey::PeakAllocatedBytes,
    MetricKey::ReservedAtPeakBytes,
    MetricKey::EfficiencyAtPeakPpm,
    MetricKey::PeakReservedBytes,
];

/// A figure's short name in the overview strip, where the full label's parenthesis has no
/// room: `Efficiency at the peak`.
pub fn glance_label(key: MetricKey) -> String {
    match key {
        MetricKey::EfficiencyAtPeakPpm => "Efficiency at the peak".into(),
        other => metric_label(other),
    }
}

/// The exact value of a metric with its unit, for tooltips: `11,844,714,496 bytes`.
pub fn metric_exact(metric: &Metric) -> String {
    let n = count(metric.value);
    match metric.unit() {
        Unit::Bytes => format!("{n} bytes"),
        Unit::Count => n,
        Unit::Micros if metric.key.is_timestamp() => format!("{n} µs since 1970-01-01 UTC"),
        Unit::Micros => format!("{n} µs"),
        Unit::Ppm => format!("{n} parts per million"),
    }
}

/// A group's heading: `At the peak`, `At the end`, `Counts`…
pub fn group_title(group: Group) -> &'static str {
    match group {
        Group::Peak => "At the peak",
        Group::Oom => "At the out-of-memory",
        Group::End => "At the end",
        Group::Counts => "Counts",
        Group::Time => "Time",
    }
}

/// The PyTorch release range, with the key that tells it: `2.10 or later (user_metadata)`.
pub fn era(format: &FormatFacts) -> String {
    match format.source {
        Source::AllocatorSnapshot => {}
        Source::KinetoTrace => {
            return "a torch.profiler (Kineto) trace: memory events, no allocator segments".into()
        }
        Source::MemoryTimeline => {
            return "torch.profiler export_memory_timeline: bytes by category".into()
        }
        Source::MemoryTimelineRaw => {
            return "torch.profiler export_memory_timeline (raw): category changes".into()
        }
        Source::PeakTensors => {
            return "a memory profiler's peak tensors (JSON): what was alive at the peak".into()
        }
    }
    let era = match format.era {
        Era::NewerThan2_10 => "newer than 2.10 (pool_id / forward_frames)",
        Era::Since2_10 => "2.10 or later (user_metadata)",
        Era::From2_7To2_9 => "2.7 – 2.9 (compile_context)",
        Era::Since2_5 => "2.5 or later (external_annotations)",
        Era::Since2_3 => "2.3 or later (allocator_settings)",
        Era::Is2_2 => "2.2 (time_us)",
        Era::Is2_0 => "2.0 (block history)",
        Era::Is2_1 => "2.1 (no time_us)",
        Era::Unknown => "unknown (no versioned keys)",
    };
    if format.segment_list_only {
        format!("{era}; segment list only")
    } else {
        era.to_string()
    }
}

/// Why a file shows no allocator settings.
pub fn no_allocator_settings(format: &FormatFacts) -> &'static str {
    if format.source.has_segments() {
        "Not recorded (PyTorch before 2.3)."
    } else {
        "Not in this file: only allocator snapshots record them."
    }
}

/// What an importer noted, in a sentence.
pub fn import_note(note: &ImportNote) -> String {
    match *note {
        ImportNote::CpuMemoryNotShown { events } => format!(
            "{} memory events of the CPU (or of other non-CUDA devices) are not shown: only CUDA devices are.",
            count(events)
        ),
        ImportNote::FreesPairedBySize { frees, unmatched } => format!(
            "The trace records no addresses (an older profiler): {} frees were matched to the latest earlier allocation of the same size, so lifetimes are estimates; {} matched none and count as memory from before the trace.",
            count(frees),
            count(unmatched)
        ),
        ImportNote::NoReservedRecorded => "No reserved memory was recorded (no Total Reserved in the trace): only allocated memory is shown.".into(),
        ImportNote::CategoriesOnly => "Only bytes per category were recorded: each allocation shown stands for a change of a category's bytes, not for one tensor.".into(),
        ImportNote::Skipped { rows, first } => format!(
            "{} rows could not be read and were skipped (the first is row {first}).",
            count(rows)
        ),
    }
}

/// Why a snapshot of several devices opens on `device`; `None` for a single device.
pub fn device_choice(kind: DeviceKind, device: u32, choice: DeviceChoice) -> Option<String> {
    let name = super::device(kind, device);
    match choice {
        DeviceChoice::Only => None,
        DeviceChoice::Oom { event } => Some(format!(
            "Opened on {name}, where an allocation failed (event {}).",
            count(event as u64)
        )),
        DeviceChoice::HighestPeak { bytes: peak } => Some(format!(
            "Opened on {name}, where allocated memory peaked highest ({}).",
            bytes(peak)
        )),
    }
}

/// What an unused device shows instead of a timeline.
pub fn unused_device(kind: DeviceKind, device: u32) -> String {
    format!(
        "{} used no memory: no segments and no trace entries were recorded for it.",
        super::device(kind, device)
    )
}

/// The devices of a file that used no memory (no segments and no trace entries), in one line:
/// "cuda:1, cuda:2 and cuda:3 used no memory: no segments and no trace entries." Such a device
/// has no numbers worth a section of their own.
pub fn unused_devices(devices: &[(DeviceKind, u32)]) -> String {
    let names: Vec<String> = devices
        .iter()
        .map(|&(kind, id)| super::device(kind, id))
        .collect();
    let listed = match names.as_slice() {
        [] => return String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    format!("{listed} used no memory: no segments and no trace entries.")
}

/// A warning as one or two sentences: what was found and what it means or what to do.
pub fn warning(warning: &Warning) -> String {
    match *warning {
        Warning::ReservedInconsistent => "Segment events in the trace do not add up to the final segments: the reserved curve is approximate.".into(),
        Warning::TraceEmpty { events: 0 } => "The trace is empty: only the final segments are known. Call torch.cuda.memory._record_memory_history() before the allocations to record a timeline.".into(),
        Warning::TraceEmpty { events } => format!(
            "The trace holds {} but no allocation: only the final segments are known.",
            super::counted(events, "event", "events")
        ),
        Warning::RingBufferWrapped {
            before,
            freed_during_trace,
            still_alive,
        } => format!(
            "{before} allocations existed before the first recorded event ({freed_during_trace} freed during the trace, {still_alive} still alive): the trace ring buffer wrapped (max_entries) or recording started late. They are drawn as a baseline from the start."
        ),
        Warning::TraceSegmentsMismatch { allocations, bytes } => format!(
            "{allocations} allocations alive at the end of the trace ({bytes} bytes) have no allocated block in the final segments: the trace and the segments disagree."
        ),
        Warning::Import(ref note) => import_note(note),
        Warning::NoStacks => "No stacks were recorded: pass stacks='python' or 'all' to _record_memory_history() to see who allocated what.".into(),
        Warning::Oom {
            event,
            at_us,
            requested,
            device_free,
        } => {
            let when = at_us
                .map(|t| format!(" at {:.3} s", t as f64 / 1e6))
                .unwrap_or_default();
            format!(
                "Out of memory{when} (event {event}): a request of {} failed with {} free on the device.",
                bytes(requested),
                bytes(device_free)
            )
        }
    }
}

/// The rows of actions the reader does not know, by name: `Actions not known to this reader:
/// future_action 1 row, workspace_snapshot 2 rows`.
pub fn unknown_actions(counts: &[(String, u64)]) -> String {
    let listed: Vec<String> = counts
        .iter()
        .map(|(name, n)| {
            let rows = if *n == 1 { "row" } else { "rows" };
            format!("{name} {} {rows}", super::count(*n))
        })
        .collect();
    format!("Actions not known to this reader: {}", listed.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Action;

    fn metric(key: MetricKey, value: u64) -> Metric {
        Metric { key, value }
    }

    #[test]
    fn metrics_format_by_unit_and_key() {
        assert_eq!(
            metric_value(&metric(MetricKey::ReservedEndBytes, 1536)),
            "1.50 KiB"
        );
        assert_eq!(
            metric_value(&metric(MetricKey::SegmentCount, 12345)),
            "12,345"
        );
        assert_eq!(
            metric_value(&metric(MetricKey::TimeSpanUs, 4_560_000)),
            "4.56 s"
        );
        assert_eq!(
            metric_value(&metric(MetricKey::FirstTimeUs, 1_708_245_883_000_000)),
            "2024-02-18 08:44:43 UTC"
        );
        assert_eq!(
            metric_value(&metric(MetricKey::EfficiencyAtEndPpm, 973_000)),
            "97.3%"
        );
        assert_eq!(
            metric_exact(&metric(MetricKey::ReservedEndBytes, 1536)),
            "1,536 bytes"
        );
        assert_eq!(
            metric_exact(&metric(MetricKey::FirstTimeUs, 5)),
            "5 µs since 1970-01-01 UTC"
        );
        assert_eq!(
            metric_exact(&metric(MetricKey::EfficiencyAtEndPpm, 5)),
            "5 parts per million"
        );
    }

    #[test]
    fn every_metric_has_a_label() {
        for key in MetricKey::all() {
            assert!(!metric_label(key).is_empty(), "{key}");
        }
        assert_eq!(
            metric_label(MetricKey::ActionCount(Action::FreeRequested)),
            "free_requested events"
        );
        assert_eq!(
            metric_label(MetricKey::PeakAllocatedBytes),
            "Peak allocated"
        );
    }

    #[test]
    fn group_titles_name_the_moment() {
        assert_eq!(group_title(Group::Peak), "At the peak");
        assert_eq!(group_title(Group::Oom), "At the out-of-memory");
        assert_eq!(group_title(Group::End), "At the end");
        assert_eq!(group_title(Group::Counts), "Counts");
        assert_eq!(group_title(Group::Time), "Time");
    }

    #[test]
    fn the_device_opened_first_says_why() {
        assert_eq!(device_choice(DeviceKind::Cuda, 0, DeviceChoice::Only), None);
        assert_eq!(
            device_choice(DeviceKind::Cuda, 1, DeviceChoice::Oom { event: 1420 }).as_deref(),
            Some("Opened on cuda:1, where an allocation failed (event 1,420).")
        );
        assert_eq!(
            device_choice(
                DeviceKind::Npu,
                2,
                DeviceChoice::HighestPeak { bytes: 3 << 30 }
            )
            .as_deref(),
            Some("Opened on npu:2, where allocated memory peaked highest (3.00 GiB).")
        );
    }

    #[test]
    fn eras_name_the_key_that_tells_them() {
        let facts = |era, segment_list_only| FormatFacts {
            source: Source::AllocatorSnapshot,
            era,
            segment_list_only,
        };
        assert_eq!(
            era(&facts(Era::Since2_10, false)),
            "2.10 or later (user_metadata)"
        );
        assert_eq!(
            era(&facts(Era::Unknown, true)),
            "unknown (no versioned keys); segment list only"
        );
    }

    #[test]
    fn warnings_say_what_was_found_with_its_numbers() {
        assert_eq!(
            warning(&Warning::Oom {
                event: 420,
                at_us: Some(1_500_000),
                requested: 2 << 30,
                device_free: 512 << 20,
            }),
            "Out of memory at 1.500 s (event 420): a request of 2.00 GiB failed with 512 MiB free on the device."
        );
        assert_eq!(
            warning(&Warning::Oom {
                event: 3,
                at_us: None,
                requested: 1024,
                device_free: 0,
            }),
            "Out of memory (event 3): a request of 1.00 KiB failed with 0 B free on the device."
        );
        assert!(warning(&Warning::TraceEmpty { events: 0 }).starts_with("The trace is empty"));
        assert!(warning(&Warning::TraceEmpty { events: 7 }).contains("7 events"));
        let wrapped = warning(&Warning::RingBufferWrapped {
            before: 5,
            freed_during_trace: 3,
            still_alive: 2,
        });
        assert!(
            wrapped.starts_with("5 allocations existed before"),
            "{wrapped}"
        );
        assert!(wrapped.contains("3 freed during the trace, 2 still alive"));
    }
}
