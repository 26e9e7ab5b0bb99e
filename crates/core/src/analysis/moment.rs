//! A moment of a device's run, as every view names one: the allocated peak, the end, or a
//! state (`r + 1` is after trace row `r`). Not the place for how a moment is written or read
//! in words (`format`, the command line).

use serde::{Deserialize, Serialize};

use super::DeviceFacts;

/// A moment of a device's run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Moment {
    /// Where allocated memory peaks (first reached).
    Peak,
    /// After the last event.
    End,
    /// A state (`r + 1` is after event `r`).
    State(u32),
}

impl Moment {
    /// The moment after trace row (event) `event`.
    pub fn after_event(event: u32) -> Moment {
        Moment::State(event.saturating_add(1))
    }

    /// The state this moment is on a trace of `rows` rows, clamped to its end.
    pub fn state(self, facts: &DeviceFacts, rows: usize) -> u32 {
        match self {
            Moment::Peak => facts.peak_allocated.row.map_or(0, |r| r + 1),
            Moment::End => rows as u32,
            Moment::State(s) => s.min(rows as u32),
        }
    }
}
