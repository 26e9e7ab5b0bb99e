//! Where in a device's trace: a [`Row`] is one entry (an event), numbered from 0; a [`State`]
//! is the memory after a prefix of rows (state 0 before the first row, state `r + 1` after row
//! `r`). Two types so that a row is never read as a state, an off-by-one the compiler now
//! refuses: they meet in [`State::after`] and [`State::row_before`] only. Both serialise as
//! the bare number they hold, so files, messages and the command line's JSON read as before.
//! Not the place for a moment named in words (`format::after_state`) or for the peak and the
//! end (`analysis::moment::Moment`).

use serde::{Deserialize, Serialize};

/// One entry of a device's trace, numbered from 0.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Row(u32);

impl Row {
    pub const fn new(index: u32) -> Row {
        Row(index)
    }

    /// The row's index in its device's trace (and in columns indexed by row).
    pub const fn get(self) -> u32 {
        self.0
    }

    /// The row's index, as a position in a column.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// The memory of a device after a prefix of its trace's rows.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct State(u32);

impl State {
    /// Before the trace's first row: the memory the trace started with.
    pub const BEFORE_TRACE: State = State(0);

    pub const fn new(index: u32) -> State {
        State(index)
    }

    /// The state's index (`r + 1` after row `r`), where states are counted or indexed.
    pub const fn get(self) -> u32 {
        self.0
    }

    /// The state in which `row` has taken effect.
    pub const fn after(row: Row) -> State {
        State(row.0.saturating_add(1))
    }

    /// After the last of a trace's `rows` rows.
    pub fn end(rows: usize) -> State {
        State(u32::try_from(rows).unwrap_or(u32::MAX))
    }

    /// The row whose effect this state is the first to show, or `None` before the trace.
    pub const fn row_before(self) -> Option<Row> {
        match self.0.checked_sub(1) {
            Some(row) => Some(Row(row)),
            None => None,
        }
    }

    /// This state, or the end of a trace of `rows` rows if it is later.
    pub fn clamped(self, rows: usize) -> State {
        self.min(State::end(rows))
    }
}

/// The number, as files and tables write it.
impl std::fmt::Display for Row {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The number, as files and tables write it (in words: `format::after_state`).
impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_states_meet_one_way_each() {
        assert_eq!(State::after(Row::new(0)), State::new(1));
        assert_eq!(State::new(1).row_before(), Some(Row::new(0)));
        assert_eq!(State::BEFORE_TRACE.row_before(), None);
        assert_eq!(State::after(Row::new(41)).row_before(), Some(Row::new(41)));
        assert_eq!(State::new(9).clamped(5), State::end(5));
        assert_eq!(State::new(3).clamped(5), State::new(3));
    }

    #[test]
    fn both_serialise_as_the_number_they_hold() {
        assert_eq!(serde_json::to_string(&State::new(42)).unwrap(), "42");
        assert_eq!(serde_json::to_string(&Some(Row::new(7))).unwrap(), "7");
        assert_eq!(serde_json::from_str::<State>("42").unwrap(), State::new(42));
    }
}
