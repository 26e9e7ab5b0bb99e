//! The phase report: the trace cut into its phases of training (setup, forward, backward,
//! optimizer step, zero_grad), numbered by iteration — taken from the `record_function`
//! scopes of `external_annotations` that name a phase, else inferred from the frames (the
//! categories' per-event phases) — and, when the file has scopes, each scope as well; for
//! each, the allocated bytes before and after it, its delta, the bytes it allocated and
//! freed, the peak within it with the reserved bytes and the role that held most there.
//!
//! Numbers add up: after = before + allocated − freed, and the phases tile the trace (scopes
//! may leave gaps between them, and nest). Pure over the replay and the categories under
//! the user's rules. Not the place for words ([`crate::format::phases`]).

pub mod service;

use crate::analysis::moment::state_after;
use crate::model::Row;
use serde::{Deserialize, Serialize};

use crate::analysis::categories::index::Lookup;
use crate::analysis::categories::signals::Phase;
use crate::analysis::categories::Role;
use crate::analysis::scopes::scope_ranges;
use crate::analysis::{DeviceFacts, Origin};
use crate::model::{Device, Snapshot, StrId, NO_TIME};

/// What told a report's phases apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseSource {
    /// `record_function` scopes naming phases (`Optimizer.step#…`, `## backward ##`), with
    /// the frames between them.
    Annotations,
    /// The allocations' frames only.
    Frames,
}

/// One phase (or scope) of the trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseRow {
    /// The scope's name, or the phase's key (`forward`, `optimizer_step`…).
    pub label: String,
    /// The phase of training, when inferred (or when a scope's name says one).
    pub phase: Option<Phase>,
    /// 1 for the first forward and what follows it, 2 from the next forward…; `None` before
    /// the first forward (setup) and for scopes.
    pub iteration: Option<u32>,
    /// 0 for a top-level scope or phase; a scope inside another is one deeper.
    pub depth: u32,
    /// Its first and last trace events.
    pub first_event: Row,
    pub last_event: Row,
    /// Microseconds from the trace's first event to its first and last events.
    pub start_us: Option<u64>,
    pub end_us: Option<u64>,
    /// Allocated bytes before its first event and after its last.
    pub before_bytes: u64,
    pub after_bytes: u64,
    /// `after − before`.
    pub delta_bytes: i64,
    /// Bytes of the allocations made in it, and of those freed in it.
    pub allocated_bytes: u64,
    pub freed_bytes: u64,
    /// The highest allocated bytes after any of its events, the first event reaching it, and
    /// the reserved bytes then.
    pub peak_bytes: u64,
    pub peak_event: Row,
    pub reserved_at_peak_bytes: u64,
    /// The role holding the most bytes at that peak, and its bytes.
    pub top_role: Option<Role>,
    pub top_role_bytes: u64,
}

/// One device's phases.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseReport {
    pub device: u32,
    pub source: PhaseSource,
    /// The phases, in order; they tile the trace.
    pub rows: Vec<PhaseRow>,
    /// The `record_function` scopes holding at least one event, in the order they started
    /// (empty when the file has none).
    pub scopes: Vec<PhaseRow>,
    /// The categories' generation the top roles come from.
    pub generation: u32,
}

/// Sums over trace events, answered for any range of events in constant time.
struct Sums {
    /// `allocated[r]`: bytes of allocations made at events before `r`.
    allocated: Vec<u64>,
    freed: Vec<u64>,
}

impl Sums {
    fn new(rows: usize, facts: &DeviceFacts) -> Self {
        let mut made = vec![0u64; rows];
        let mut gone = vec![0u64; rows];
        for a in &facts.allocations {
            if a.origin() == Origin::Trace {
                if let Some(m) = made.get_mut(a.alloc_row as usize) {
                    *m += a.size;
                }
            }
            if let Some(g) = gone.get_mut(a.free_row as usize) {
                *g += a.size;
            }
        }
        let prefix = |v: Vec<u64>| {
            let mut out = Vec::with_capacity(v.len() + 1);
            out.push(0u64);
            let mut sum = 0u64;
            for x in v {
                sum += x;
                out.push(sum);
            }
            out
        };
        Sums {
            allocated: prefix(made),
            freed: prefix(gone),
        }
    }
}

/// The report of `device`: its scopes when it has any with times, else its inferred phases.
pub fn report(
    snapshot: &Snapshot,
    device: &Device,
    facts: &DeviceFacts,
    phases: &crate::analysis::categories::phases::RowPhases,
    index: Lookup<'_>,
    generation: u32,
) -> PhaseReport {
    let measure = Measure {
        device,
        facts,
        index,
        sums: Sums::new(device.trace.len(), facts),
    };
    let scopes: Vec<PhaseRow> = scopes(snapshot, device)
        .into_iter()
        .map(|s| {
            let name = snapshot.str(s.name).to_string();
            measure.row(Span {
                phase: crate::analysis::categories::phases::scope_phase(&name),
                label: name,
                iteration: None,
                depth: s.depth,
                first: s.first,
                last: s.last,
            })
        })
        .collect();
    let rows = runs(device, phases)
        .into_iter()
        .map(|r| {
            measure.row(Span {
                label: r.phase.key().to_string(),
                phase: Some(r.phase),
                iteration: r.iteration,
                depth: 0,
                first: r.first,
                last: r.last,
            })
        })
        .collect();
    let source = if scopes.iter().any(|s| s.phase.is_some()) {
        PhaseSource::Annotations
    } else {
        PhaseSource::Frames
    };
    PhaseReport {
        device: device.id,
        source,
        rows,
        scopes,
        generation,
    }
}

/// A stretch of events to measure, and what to call it.
struct Span {
    label: String,
    phase: Option<Phase>,
    iteration: Option<u32>,
    depth: u32,
    first: usize,
    last: usize,
}

/// What measuring a span reads.
struct Measure<'a> {
    device: &'a Device,
    facts: &'a DeviceFacts,
    index: Lookup<'a>,
    sums: Sums,
}

impl Measure<'_> {
    fn row(&self, span: Span) -> PhaseRow {
        let Span {
            label,
            phase,
            iteration,
            depth,
            first,
            last,
        } = span;
        let facts = self.facts;
        let before = facts.allocated_at(first as u32);
        let after = facts.allocated_at(last as u32 + 1);
        let (mut peak_bytes, mut peak_row) = (0u64, first);
        for r in first..=last {
            let v = facts.allocated[r];
            if v > peak_bytes || r == first {
                peak_bytes = v;
                peak_row = r;
            }
        }
        let roles = self.index.roles_at(state_after(peak_row as u32));
        let top = Role::ALL
            .iter()
            .copied()
            .max_by_key(|&r| (roles[r as usize], std::cmp::Reverse(r as usize)))
            .filter(|&r| roles[r as usize] > 0);
        let times = &self.device.trace.time_us;
        let t0 = times.iter().copied().find(|&t| t != NO_TIME);
        let since = |r: usize| -> Option<u64> {
            let t = times.get(r).copied().filter(|&t| t != NO_TIME)?;
            Some(t.saturating_sub(t0?).max(0) as u64)
        };
        let sums = &self.sums;
        PhaseRow {
            label,
            phase,
            iteration,
            depth,
            first_event: Row::new(first as u32),
            last_event: Row::new(last as u32),
            start_us: since(first),
            end_us: since(last),
            before_bytes: before,
            after_bytes: after,
            delta_bytes: after as i64 - before as i64,
            allocated_bytes: sums.allocated[last + 1] - sums.allocated[first],
            freed_bytes: sums.freed[last + 1] - sums.freed[first],
            peak_bytes,
            peak_event: Row::new(peak_row as u32),
            reserved_at_peak_bytes: facts.reserved_after(Some(peak_row as u32)),
            top_role: top,
            top_role_bytes: top.map_or(0, |r| roles[r as usize]),
        }
    }
}

/// A scope of `external_annotations` on the trace: its events and nesting.
struct Scope {
    name: StrId,
    depth: u32,
    first: usize,
    last: usize,
    start: i64,
}

/// The device's scopes that hold at least one event, in the order they started. Scopes are
/// matched by name, the latest open one first; a scope never closed runs to the end.
fn scopes(snapshot: &Snapshot, device: &Device) -> Vec<Scope> {
    let times = &device.trace.time_us;
    let timed = !times.is_empty() && times[0] != NO_TIME && times.windows(2).all(|w| w[0] <= w[1]);
    if !timed {
        return Vec::new();
    }
    let mut out: Vec<Scope> = scope_ranges(snapshot, device.id)
        .into_iter()
        .filter_map(|s| {
            let first = times.partition_point(|&t| t < s.start_us);
            let end = times.partition_point(|&t| t <= s.end_us.unwrap_or(i64::MAX));
            (first < end).then(|| Scope {
                name: s.name,
                depth: s.depth,
                first,
                last: end - 1,
                start: s.start_us,
            })
        })
        .collect();
    out.sort_by_key(|s| (s.start, s.depth));
    out
}

/// A stretch of events in one inferred phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    phase: Phase,
    iteration: Option<u32>,
    first: usize,
    last: usize,
}

/// The inferred phases as runs, merged so that brief interruptions do not shred them: a run
/// of `other` that allocates nothing between two runs of one phase joins them, and runs of
/// one phase that then touch are one. A forward after a backward or an optimizer step
/// starts the next iteration.
fn runs(device: &Device, phases: &crate::analysis::categories::phases::RowPhases) -> Vec<Run> {
    let trace = &device.trace;
    let mut runs: Vec<(Phase, usize, usize)> = Vec::new();
    for (r, &p) in phases.phase.iter().enumerate() {
        match runs.last_mut() {
            Some((q, _, last)) if *q == p => *last = r,
            _ => runs.push((p, r, r)),
        }
    }
    let allocates = |first: usize, last: usize| {
        (first..=last).any(|r| trace.action[r] == crate::model::Action::Alloc)
    };
    let mut merged: Vec<(Phase, usize, usize)> = Vec::new();
    let mut i = 0;
    while i < runs.len() {
        let (p, first, mut last) = runs[i];
        // Swallow `other` runs that allocate nothing when the same phase follows them.
        while i + 2 < runs.len()
            && runs[i + 1].0 == Phase::Other
            && runs[i + 2].0 == p
            && p != Phase::Other
            && !allocates(runs[i + 1].1, runs[i + 1].2)
        {
            last = runs[i + 2].2;
            i += 2;
        }
        match merged.last_mut() {
            Some((q, _, l)) if *q == p => *l = last,
            _ => merged.push((p, first, last)),
        }
        i += 1;
    }
    let mut iteration = 0u32;
    let mut ended_step = true;
    merged
        .into_iter()
        .map(|(phase, first, last)| {
            match phase {
                Phase::Forward if ended_step => {
                    iteration += 1;
                    ended_step = false;
                }
                Phase::Backward | Phase::OptimizerStep | Phase::ZeroGrad => ended_step = true,
                _ => {}
            }
            Run {
                phase,
                iteration: (iteration > 0).then_some(iteration),
                first,
                last,
            }
        })
        .collect()
}

/// The phase of training event `row` is in, and its iteration (the report's runs: brief
/// interruptions belong to the phase around them). `None` past the trace.
pub fn moment_of_row(
    device: &Device,
    phases: &crate::analysis::categories::phases::RowPhases,
    row: u32,
) -> Option<(Phase, Option<u32>)> {
    runs(device, phases)
        .into_iter()
        .find(|r| (r.first..=r.last).contains(&(row as usize)))
        .map(|r| (r.phase, r.iteration))
}

/// Where allocated memory peaks (first reached) within `phase`, in any iteration: the state
/// after that event, its bytes, and the iteration. `None` when the trace has no such phase.
pub fn phase_peak(
    device: &Device,
    facts: &DeviceFacts,
    phases: &crate::analysis::categories::phases::RowPhases,
    phase: Phase,
) -> Option<(u32, u64, Option<u32>)> {
    let mut best: Option<(u32, u64, Option<u32>)> = None;
    for run in runs(device, phases)
        .into_iter()
        .filter(|r| r.phase == phase)
    {
        for row in run.first..=run.last {
            let bytes = facts.allocated_at(state_after(row as u32));
            if best.is_none_or(|(_, b, _)| bytes > b) {
                best = Some((state_after(row as u32), bytes, run.iteration));
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::categories::phases::RowPhases;
    use crate::model::{Action, Trace, TraceRow};

    fn device(actions: &[Action]) -> Device {
        let mut trace = Trace::default();
        for &a in actions {
            trace.push(TraceRow::new(a));
        }
        Device {
            trace,
            ..Device::default()
        }
    }

    #[test]
    fn quiet_interruptions_join_and_forwards_after_a_step_start_iterations() {
        use Phase::*;
        let phase = vec![
            Setup,
            Forward,
            Other,
            Forward,
            Backward,
            Backward,
            OptimizerStep,
            Forward,
            Other,
            Forward,
            Backward,
        ];
        let mut actions = vec![Action::Alloc; phase.len()];
        // The `other` at 2 allocates nothing; the one at 8 does.
        actions[2] = Action::FreeCompleted;
        let d = device(&actions);
        let runs = runs(&d, &RowPhases::new(phase));
        let got: Vec<(Phase, Option<u32>, usize, usize)> = runs
            .iter()
            .map(|r| (r.phase, r.iteration, r.first, r.last))
            .collect();
        assert_eq!(
            got,
            [
                (Setup, None, 0, 0),
                (Forward, Some(1), 1, 3),
                (Backward, Some(1), 4, 5),
                (OptimizerStep, Some(1), 6, 6),
                (Forward, Some(2), 7, 7),
                (Other, Some(2), 8, 8),
                (Forward, Some(2), 9, 9),
                (Backward, Some(2), 10, 10),
            ]
        );
    }
}
