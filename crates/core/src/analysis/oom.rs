//! What a device's trace says about running out of memory: the out-of-memory errors it
//! recorded with the first one's request, none, or that the file could not have recorded one
//! (so "no out-of-memory" cannot be said). Read by the overview's files table, the findings'
//! words and the command line's check. Not the place for explaining an out-of-memory (the
//! findings do).

use serde::{Deserialize, Serialize};

use crate::analysis::Analysed;
use crate::model::Action;
use crate::model::Row;

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
    pub event: Row,
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
                event: Row::new(row as u32),
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
    // Only PyTorch 2.0 wrote blocks' `history`; its trace kept one entry unless asked for more.
    Some(match (traced, analysed.snapshot.features.block_history) {
        (true, _) => OomRecord::NoneRecorded,
        (false, true) => OomRecord::CannotRecord {
            why: Unrecordable::Format2_0,
        },
        (false, _) => OomRecord::CannotRecord {
            why: Unrecordable::NoTrace,
        },
    })
}
