//! The x axis: where each state sits in event-index or wall-clock units, and which states a
//! pixel column of a view covers.
//!
//! In event units state `s` spans `[s, s + 1)`. In time units state `s` starts at the time of
//! the row that produced it (state 0, before the first row, has no width) and lasts until the
//! next row. Time is offered only when every row has a time and times never go backwards.

use crate::model::State;
use serde::{Deserialize, Serialize};

use crate::model::{Trace, NO_TIME};

/// Units of the x axis.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AxisMode {
    /// State index (0 = before the first trace row).
    #[default]
    Events,
    /// Microseconds of wall-clock time (`time_us`).
    Time,
}

/// States covered by one pixel column, inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateRange {
    pub first: u32,
    pub last: u32,
}

/// The x axis of one device's trace.
#[derive(Clone, Copy, Debug)]
pub struct Axis<'a> {
    /// Number of states: trace rows + 1.
    pub states: u32,
    times: Option<&'a [i64]>,
}

impl<'a> Axis<'a> {
    pub fn new(trace: &'a Trace) -> Self {
        let times = &trace.time_us[..];
        let usable =
            !times.is_empty() && times[0] != NO_TIME && times.windows(2).all(|w| w[0] <= w[1]);
        Axis {
            states: trace.len() as u32 + 1,
            times: usable.then_some(times),
        }
    }

    /// The axis of `trace` when whether its times are usable is already known (checking is
    /// O(rows)).
    pub fn known(trace: &'a Trace, has_time: bool) -> Self {
        Axis {
            states: trace.len() as u32 + 1,
            times: has_time.then_some(&trace.time_us[..]),
        }
    }

    pub fn has_time(&self) -> bool {
        self.times.is_some()
    }

    /// Effective mode: time falls back to events when the trace has no usable times.
    pub fn mode(&self, wanted: AxisMode) -> AxisMode {
        if self.times.is_some() {
            wanted
        } else {
            AxisMode::Events
        }
    }

    /// The whole trace in `mode` units, as `[start, end)`.
    pub fn full_range(&self, mode: AxisMode) -> (f64, f64) {
        match (self.mode(mode), self.times) {
            (AxisMode::Time, Some(t)) => (t[0] as f64, (t[t.len() - 1] + 1) as f64),
            _ => (0.0, self.states as f64),
        }
    }

    /// Where state `s` starts, in `mode` units.
    pub fn x_of_state(&self, mode: AxisMode, s: u32) -> f64 {
        match (self.mode(mode), self.times) {
            (AxisMode::Time, Some(t)) => t[(s.max(1) as usize - 1).min(t.len() - 1)] as f64,
            _ => s as f64,
        }
    }

    /// Time of the row that produced state `s` (the first row's time for state 0).
    pub fn time_of_state(&self, s: State) -> Option<i64> {
        self.times
            .map(|t| t[(s.get().max(1) as usize - 1).min(t.len() - 1)])
    }

    /// The state shown at `x` (`mode` units), or `None` outside the trace.
    pub fn state_at(&self, mode: AxisMode, x: f64) -> Option<u32> {
        let (start, end) = self.full_range(mode);
        if !(x >= start && x < end) {
            return None;
        }
        Some(match (self.mode(mode), self.times) {
            (AxisMode::Time, Some(t)) => t.partition_point(|&v| (v as f64) <= x) as u32,
            _ => (x.floor() as u32).min(self.states - 1),
        })
    }

    /// The states each of `width` columns of the view `[x0, x1)` covers (`None` for columns
    /// outside the trace).
    pub fn columns(&self, mode: AxisMode, x0: f64, x1: f64, width: u32) -> Vec<Option<StateRange>> {
        let dx = (x1 - x0) / width.max(1) as f64;
        (0..width)
            .map(|c| {
                let a = x0 + c as f64 * dx;
                self.states_in(mode, a, a + dx)
            })
            .collect()
    }

    /// The states shown in `[a, b)`.
    pub fn states_in(&self, mode: AxisMode, a: f64, b: f64) -> Option<StateRange> {
        let (start, end) = self.full_range(mode);
        // Written so NaN bounds fall out too.
        let overlaps = b > start && a < end && b > a;
        if !overlaps {
            return None;
        }
        let a = a.max(start);
        let b = b.min(end);
        // In time units several states may start at the same microsecond: a column starts
        // with the state in force just before it, so zero-width states are never skipped.
        let first = match (self.mode(mode), self.times) {
            (AxisMode::Time, Some(t)) => t.partition_point(|&v| (v as f64) < a) as u32,
            _ => self.state_at(mode, a).unwrap_or(0),
        };
        let last = match (self.mode(mode), self.times) {
            (AxisMode::Time, Some(t)) => t.partition_point(|&v| (v as f64) < b) as u32,
            _ => (b.ceil() as u32).saturating_sub(1),
        }
        .clamp(first, self.states - 1);
        Some(StateRange { first, last })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Action, TraceRow};

    fn trace(times: &[i64]) -> Trace {
        let mut t = Trace::default();
        for &time in times {
            let mut r = TraceRow::new(Action::Alloc);
            r.time_us = time;
            t.push(r);
        }
        t.finish();
        t
    }

    #[test]
    fn event_columns_cover_every_state_when_zoomed_out() {
        let t = trace(&[0; 9]);
        let axis = Axis::new(&t);
        assert_eq!(axis.states, 10);
        let cols = axis.columns(AxisMode::Events, 0.0, 10.0, 4);
        let spans: Vec<(u32, u32)> = cols
            .iter()
            .map(|c| c.map(|s| (s.first, s.last)).unwrap())
            .collect();
        assert_eq!(spans, vec![(0, 2), (2, 4), (5, 7), (7, 9)]);
        // Zoomed in: several columns show the same state; outside the trace, nothing.
        let cols = axis.columns(AxisMode::Events, -1.0, 1.0, 4);
        assert_eq!(cols[0], None);
        assert_eq!(cols[2], Some(StateRange { first: 0, last: 0 }));
        assert_eq!(cols[3], Some(StateRange { first: 0, last: 0 }));
    }

    #[test]
    fn time_maps_to_the_state_in_force() {
        let t = trace(&[100, 100, 150, 300]);
        let axis = Axis::new(&t);
        assert!(axis.has_time());
        assert_eq!(axis.full_range(AxisMode::Time), (100.0, 301.0));
        assert_eq!(axis.state_at(AxisMode::Time, 100.0), Some(2));
        assert_eq!(axis.state_at(AxisMode::Time, 149.0), Some(2));
        assert_eq!(axis.state_at(AxisMode::Time, 150.0), Some(3));
        assert_eq!(axis.state_at(AxisMode::Time, 99.0), None);
        assert_eq!(
            axis.states_in(AxisMode::Time, 100.0, 160.0),
            Some(StateRange { first: 0, last: 3 })
        );
        assert_eq!(
            axis.states_in(AxisMode::Time, 120.0, 121.0),
            Some(StateRange { first: 2, last: 2 })
        );
        assert_eq!(axis.x_of_state(AxisMode::Time, 4), 300.0);
    }

    #[test]
    fn missing_or_backward_times_fall_back_to_events() {
        let t = trace(&[5, 3]);
        let axis = Axis::new(&t);
        assert!(!axis.has_time());
        assert_eq!(axis.mode(AxisMode::Time), AxisMode::Events);
        let t = trace(&[NO_TIME, NO_TIME]);
        assert!(!Axis::new(&t).has_time());
    }
}
