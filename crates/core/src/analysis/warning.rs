//! Warnings about a snapshot: facts a user should know before trusting a view (the trace
//! wrapped, no stacks were recorded, an allocation failed…), each with the numbers behind it.
//!
//! Typed, with a stable kebab-case kind for tests and links; the words are chosen by whoever
//! shows them (`crate::format::overview`).

use serde::{Deserialize, Serialize};

use crate::model::ImportNote;

/// Something about a device's snapshot that limits or explains what the views show.
/// Serialized with its kind as the tag: `"no-stacks"`, `{"oom": {"event": 4, …}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Warning {
    /// Segment events do not add up to the final segments: the reserved curve is approximate.
    ReservedInconsistent,
    /// The trace records no allocation (it holds `events` events, maybe none): only the final
    /// segments are known.
    TraceEmpty { events: u64 },
    /// Allocations existed before the first recorded event: the ring buffer wrapped
    /// (`max_entries`) or recording started late.
    RingBufferWrapped {
        before: u64,
        freed_during_trace: u64,
        still_alive: u64,
    },
    /// Allocations alive at the end of the trace have no allocated block in the final segments.
    TraceSegmentsMismatch { allocations: u64, bytes: u64 },
    /// Allocations were recorded without stacks.
    NoStacks,
    /// An allocation failed: `requested` bytes at trace row `event`, with `device_free` bytes
    /// free on the device; `at_us` after the first event, when the trace has times.
    Oom {
        event: u32,
        at_us: Option<u64>,
        requested: u64,
        device_free: u64,
    },
    /// What the file's importer noted (profiler outputs other than snapshots).
    Import(ImportNote),
}

impl Warning {
    /// The stable kind, as in `data-warning` and the command line's JSON.
    pub fn kind(&self) -> &'static str {
        match self {
            Warning::ReservedInconsistent => "reserved-inconsistent",
            Warning::TraceEmpty { .. } => "trace-empty",
            Warning::RingBufferWrapped { .. } => "ring-buffer-wrapped",
            Warning::TraceSegmentsMismatch { .. } => "trace-segments-mismatch",
            Warning::NoStacks => "no-stacks",
            Warning::Oom { .. } => "oom",
            Warning::Import(note) => note.kind(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_the_serialized_tags() {
        let all = [
            Warning::ReservedInconsistent,
            Warning::TraceEmpty { events: 3 },
            Warning::RingBufferWrapped {
                before: 1,
                freed_during_trace: 1,
                still_alive: 0,
            },
            Warning::TraceSegmentsMismatch {
                allocations: 1,
                bytes: 512,
            },
            Warning::NoStacks,
            Warning::Oom {
                event: 4,
                at_us: None,
                requested: 1 << 30,
                device_free: 1 << 20,
            },
        ];
        for warning in all {
            let json = serde_json::to_value(&warning).unwrap();
            let tag = match &json {
                serde_json::Value::String(tag) => tag.clone(),
                serde_json::Value::Object(fields) => {
                    assert_eq!(fields.len(), 1, "{json}");
                    fields.keys().next().unwrap().clone()
                }
                other => panic!("{other}"),
            };
            assert_eq!(tag, warning.kind());
            assert_eq!(serde_json::from_value::<Warning>(json).unwrap(), warning);
        }
    }
}
