//! A moment of a device's run, as every view names one: the allocated peak, the end, or a
//! state (`r + 1` is after trace row `r`). Not the place for how a moment is written or read
//! in words (`format`, the command line). What crosses the protocol is typed
//! ([`Row`], [`State`]); the analysis's columns count both as bare `u32`, and those meet in
//! [`state_after`] and [`row_before`] only.

use serde::{Deserialize, Serialize};

use super::DeviceFacts;
use crate::model::{Row, State};

/// A moment of a device's run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Moment {
    /// Where allocated memory peaks (first reached).
    Peak,
    /// After the last event.
    End,
    /// A state (`r + 1` is after event `r`).
    State(State),
}

impl Moment {
    /// The moment after trace row (event) `row`.
    pub fn after_event(row: Row) -> Moment {
        Moment::State(State::after(row))
    }

    /// The state this moment is on a trace of `rows` rows, clamped to its end.
    pub fn state(self, facts: &DeviceFacts, rows: usize) -> State {
        match self {
            Moment::Peak => State::new(facts.peak_allocated.state()),
            Moment::End => State::end(rows),
            Moment::State(s) => s.clamped(rows),
        }
    }
}

/// The state in which trace row `row` has taken effect: state `r + 1` is after row `r`. No
/// row ([`NO_ROW`](super::NO_ROW), an allocation never freed) gives `u32::MAX`, which is
/// [`ALIVE`](super::elements::ALIVE): alive to the end.
pub fn state_after(row: u32) -> u32 {
    row.saturating_add(1)
}

/// The row whose effect state `state` is the first to show, or `None` for state 0 (before the
/// first row).
pub fn row_before(state: u32) -> Option<u32> {
    state.checked_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::elements::ALIVE;
    use crate::analysis::NO_ROW;

    #[test]
    fn rows_and_states_convert_one_way_each() {
        assert_eq!(state_after(0), 1);
        assert_eq!(row_before(1), Some(0));
        assert_eq!(row_before(0), None);
        assert_eq!(row_before(state_after(41)), Some(41));
        // No row is alive to the end.
        assert_eq!(state_after(NO_ROW), ALIVE);
        assert_eq!(
            Moment::after_event(Row::new(41)),
            Moment::State(State::new(42))
        );
    }
}
