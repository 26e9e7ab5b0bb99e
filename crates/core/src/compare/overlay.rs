//! Every run's allocated curve on one axis, for the files view's chart and a report folder's
//! summary: x as the share of each run's events or of its time, y as its allocated bytes or
//! their change from its start, with each run's peak (its first highest point). From the
//! digests' normalised curves, so snapshots and digests draw alike.
//!
//! Numbers only: drawing is `memsight-charts`'s (`runs`), words are `format`'s. Not the place
//! for comparing two runs ([`super::diff`]).

use serde::{Deserialize, Serialize};

use super::digest::Digest;

/// Runs drawn at most on one axis: beyond a few dozen, curves are a blur (the page draws the
/// first in its table's order, a report folder's summary the first in its own).
pub const MOST_RUNS: usize = 64;

/// What the x axis spreads each run over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OverlayX {
    /// The share of the run's trace events.
    #[default]
    Events,
    /// The share of the run's time (runs recorded without times have no curve over it).
    Time,
}

/// What the y axis shows of each run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OverlayY {
    /// Allocated bytes.
    #[default]
    Absolute,
    /// Allocated bytes less those at the run's start (memory from before the trace), so runs
    /// that began with different models loaded compare by what they did.
    FromStart,
}

/// One run's curve as drawn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunCurve {
    /// Values at evenly spread shares of the run, from its start to its end.
    pub values: Vec<i64>,
    /// The first highest point: its index in `values` and its share of the run in parts
    /// per million.
    pub peak_index: usize,
    pub peak_share_ppm: u64,
    /// Its value.
    pub peak: i64,
}

/// The curve of `digest` over `x` as `y` says; `None` over time for a run with no times, or
/// for a run with no curve.
pub fn run_curve(digest: &Digest, x: OverlayX, y: OverlayY) -> Option<RunCurve> {
    let curve = match x {
        OverlayX::Events => &digest.curve.by_event,
        OverlayX::Time => &digest.curve.by_time,
    };
    let start = match y {
        OverlayY::Absolute => 0,
        OverlayY::FromStart => i64::try_from(*curve.first()?).unwrap_or(i64::MAX),
    };
    let values: Vec<i64> = curve
        .iter()
        .map(|&v| i64::try_from(v).unwrap_or(i64::MAX) - start)
        .collect();
    let (peak_index, &peak) = values
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))?;
    let peak_share_ppm = if values.len() <= 1 {
        0
    } else {
        (peak_index as u64 * 1_000_000) / (values.len() as u64 - 1)
    };
    Some(RunCurve {
        values,
        peak_index,
        peak_share_ppm,
        peak,
    })
}

/// Whether every digest has a curve over time (else the time axis is not offered).
pub fn all_timed<'a>(digests: impl IntoIterator<Item = &'a Digest>) -> bool {
    digests.into_iter().all(|d| !d.curve.by_time.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::NormalisedCurve;

    fn digest(by_event: Vec<u64>, by_time: Vec<u64>) -> Digest {
        Digest {
            device: 0,
            device_kind: Default::default(),
            metrics: Vec::new(),
            unused: false,
            peak_state: crate::model::State::BEFORE_TRACE,
            at_phase: None,
            peak_phase: None,
            peak_iteration: None,
            peak_bytes: 0,
            roles: Vec::new(),
            inferred_roles: Vec::new(),
            components: Vec::new(),
            generation: 0,
            call_sites: Vec::new(),
            modules: Vec::new(),
            curve: NormalisedCurve { by_event, by_time },
            oom: None,
        }
    }

    #[test]
    fn a_run_is_drawn_as_written_or_from_its_start_with_its_first_peak() {
        let d = digest(vec![100, 300, 500, 500, 200], vec![100, 500]);
        let absolute = run_curve(&d, OverlayX::Events, OverlayY::Absolute).unwrap();
        assert_eq!(absolute.values, [100, 300, 500, 500, 200]);
        assert_eq!((absolute.peak_index, absolute.peak), (2, 500));
        assert_eq!(absolute.peak_share_ppm, 500_000);
        let change = run_curve(&d, OverlayX::Events, OverlayY::FromStart).unwrap();
        assert_eq!(change.values, [0, 200, 400, 400, 100]);
        assert_eq!(change.peak, 400);
        let timed = run_curve(&d, OverlayX::Time, OverlayY::Absolute).unwrap();
        assert_eq!((timed.peak_index, timed.peak_share_ppm), (1, 1_000_000));
    }

    #[test]
    fn a_run_with_no_times_has_no_curve_over_time() {
        let untimed = digest(vec![1, 2], Vec::new());
        assert!(run_curve(&untimed, OverlayX::Time, OverlayY::Absolute).is_none());
        assert!(!all_timed([&untimed, &digest(vec![1], vec![1])]));
        // Below its start, a run's change is negative.
        let falling = digest(vec![500, 100], Vec::new());
        let change = run_curve(&falling, OverlayX::Events, OverlayY::FromStart).unwrap();
        assert_eq!(change.values, [0, -400]);
        assert_eq!((change.peak_index, change.peak), (0, 0));
    }
}
