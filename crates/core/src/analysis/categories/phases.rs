//! The phase of training each trace row of a device falls in (forward, backward, optimizer
//! step…), and runs of rows in one phase, so an allocation's lifetime can be read against
//! them: made in a forward and freed in a later phase is an activation, made and freed in
//! one run of a phase is that phase's temporary.
//!
//! What follows an out-of-memory error until the program allocates again is the error's
//! unwinding ([`Phase::Unwinding`]), whatever scope or frames it has: its frees are the
//! exception releasing what the stack held, not the phase the error broke ending.
//!
//! Sources, strongest first: `external_annotations` scopes (`Optimizer.step#AdamW.step`,
//! `Optimizer.zero_grad#…`, user scopes named after a phase) when the trace has times; the
//! frames of each allocation's stack; and, for allocations with no frame at all on a trace
//! that records stacks, the autograd engine's thread (what follows a forward with no frame is
//! its backward).

use super::signals::Phase;
use crate::analysis::scopes::scope_ranges;
use crate::model::{Action, Device, Snapshot, StackId, NO_TIME};

/// One phase per trace row, and its runs: stretches of rows in one phase.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RowPhases {
    pub phase: Vec<Phase>,
    /// The rows where a run starts, but for row 0, ascending. Kept instead of a run number
    /// per row, which took 4 bytes per trace entry (46 MiB of a 12M-entry file) for what
    /// the phases already say.
    run_starts: Vec<u32>,
}

impl RowPhases {
    pub fn new(phase: Vec<Phase>) -> Self {
        let mut run_starts: Vec<u32> = (1..phase.len())
            .filter(|&r| phase[r] != phase[r - 1])
            .map(|r| r as u32)
            .collect();
        run_starts.shrink_to_fit();
        RowPhases { phase, run_starts }
    }

    /// The first row after the first run (the run the trace begins in).
    pub fn first_run_end(&self) -> usize {
        self.run_starts
            .first()
            .map_or(self.phase.len(), |&s| s as usize)
    }

    /// Where runs end, for rows asked about mostly in order.
    pub fn run_ends(&self) -> RunEnds<'_> {
        RunEnds {
            starts: &self.run_starts,
            rows: self.phase.len(),
            next: 0,
        }
    }
}

/// The end of the run of any row (the first row after it), found from the last one asked
/// about: a device's allocations are asked about in the order they were made, so each answer
/// is a step or two from the one before instead of a search of every run.
pub struct RunEnds<'a> {
    starts: &'a [u32],
    rows: usize,
    /// Index into `starts` of the first run start after the last row asked about.
    next: usize,
}

impl RunEnds<'_> {
    /// The first row after the run `row` is in; `None` past the last row.
    pub fn after(&mut self, row: usize) -> Option<usize> {
        if row >= self.rows {
            return None;
        }
        let behind = self.next > 0 && self.starts[self.next - 1] as usize > row;
        let far_ahead = self
            .starts
            .get(self.next + 8)
            .is_some_and(|&s| s as usize <= row);
        if behind || far_ahead {
            self.next = self.starts.partition_point(|&s| s as usize <= row);
        }
        while self
            .starts
            .get(self.next)
            .is_some_and(|&s| s as usize <= row)
        {
            self.next += 1;
        }
        Some(
            self.starts
                .get(self.next)
                .map_or(self.rows, |&s| s as usize),
        )
    }
}

/// What a stack says of its phase: the phase its frames name, whether it has no frame, and
/// whether it runs inside a closure an optimizer's step runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StackPhase {
    pub phase: Option<Phase>,
    pub empty: bool,
    pub in_closure: bool,
    /// A frame is a framework's call site: its code runs inside the phase around it (a hook
    /// the backward runs), so without a phase of its own it ends none.
    pub framework: bool,
}

/// The phase a scope's name stands for, if any.
pub fn scope_phase(name: &str) -> Option<Phase> {
    let name = name.to_ascii_lowercase();
    if name.contains("zero_grad") {
        Some(Phase::ZeroGrad)
    } else if name.contains("backward") {
        Some(Phase::Backward)
    } else if name.contains("optimizer") || name.contains("optim.") || name.contains("step#") {
        Some(Phase::OptimizerStep)
    } else if name.contains("forward") {
        Some(Phase::Forward)
    } else {
        None
    }
}

/// The phase of every row of `device`'s trace.
///
/// A row's own stack comes first when it names a phase of training: a `forward` is a forward
/// whatever scope it runs in (an optimizer's step running a closure that runs the forward
/// and the backward, as PyTorch Lightning does, is annotated as the optimizer's step). Scopes
/// fill what stacks leave open, but for a scope of the optimizer's step around a closure:
/// there only the optimizer's own frames are its step.
pub fn row_phases(
    snapshot: &Snapshot,
    device: &Device,
    stack_phase: &mut dyn FnMut(StackId) -> StackPhase,
) -> RowPhases {
    let trace = &device.trace;
    let rows = trace.len();
    let mut annotated = annotated_rows(snapshot, device);
    drop_closure_steps(
        &mut annotated,
        |r| trace.action[r] == Action::Alloc,
        |r| {
            let own = stack_phase(trace.stack[r]);
            own.in_closure || matches!(own.phase, Some(Phase::Forward | Phase::Backward))
        },
    );
    let records_stacks =
        (0..rows).any(|r| trace.action[r] == Action::Alloc && !stack_phase(trace.stack[r]).empty);
    let mut phases = Vec::with_capacity(rows);
    // The phase rows without a say of their own continue.
    let mut current = Phase::Other;
    // The scope the previous row was in, and the phase in force when it began.
    let mut in_scope: Option<Phase> = None;
    let mut before_scope = Phase::Other;
    // After an out-of-memory error, until the program allocates again.
    let mut unwinding = false;
    for r in 0..rows {
        match trace.action[r] {
            Action::Oom => unwinding = true,
            // The program goes on (it caught the error): the phase the error broke is over.
            Action::Alloc if unwinding => {
                unwinding = false;
                current = Phase::Other;
            }
            _ if unwinding => {
                phases.push(Phase::Unwinding);
                continue;
            }
            _ => {}
        }
        let scope = annotated.get(r).copied().flatten();
        match (in_scope, scope) {
            (None, Some(_)) => before_scope = current,
            // A scope just ended: what follows is not in it, unless it was a part of the
            // phase around it (a framework's backward hook, inside the backward).
            (Some(ended), None) => {
                current = if ended == before_scope {
                    before_scope
                } else {
                    Phase::Other
                }
            }
            _ => {}
        }
        in_scope = scope;
        let phase = match trace.action[r] {
            Action::Alloc => {
                let own = stack_phase(trace.stack[r]);
                match (own.phase, scope) {
                    (Some(p @ (Phase::Forward | Phase::Backward | Phase::OptimizerStep)), _) => {
                        current = p;
                        p
                    }
                    // A serving engine's phases last until another says otherwise.
                    (Some(p), _) if p.is_serving() => {
                        current = p;
                        p
                    }
                    (Some(Phase::ZeroGrad), _) => {
                        current = Phase::Other;
                        Phase::ZeroGrad
                    }
                    (_, Some(p)) => p,
                    // Building the model lasts until other code runs: what it frees and what
                    // its frameless rows make are its own.
                    (Some(Phase::Setup), None) => {
                        current = Phase::Setup;
                        Phase::Setup
                    }
                    (Some(p), None) => {
                        current = Phase::Other;
                        p
                    }
                    (None, None) if own.empty => {
                        if records_stacks && matches!(current, Phase::Forward | Phase::Backward) {
                            current = Phase::Backward;
                        }
                        current
                    }
                    // A framework's hook runs inside the phase around it.
                    (None, None) if own.framework => current,
                    (None, None) => {
                        // Code outside any phase's frames continues a forward (the loss, in
                        // the training script) and ends any other phase.
                        if current != Phase::Forward {
                            current = Phase::Other;
                        }
                        current
                    }
                }
            }
            // A free outside any phase's run takes the phase its own frames name (what an
            // optimizer's step frees after the profiler's scope of the step has ended).
            Action::FreeRequested | Action::FreeCompleted
                if scope.is_none() && current == Phase::Other =>
            {
                match stack_phase(trace.stack[r]).phase {
                    Some(p @ (Phase::OptimizerStep | Phase::Backward | Phase::Forward)) => p,
                    Some(p) if p.is_serving() => p,
                    _ => current,
                }
            }
            _ => scope.unwrap_or(current),
        };
        phases.push(phase);
    }
    RowPhases::new(phases)
}

/// An optimizer calls its closure first thing in its `step`: the first allocations of a step's
/// scope tell whether it ran one.
const CLOSURE_LOOKS: usize = 64;

/// Forgets the scopes of the optimizer's step that ran a closure (one of the first
/// [`CLOSURE_LOOKS`] allocations, `allocates`, in it `runs_closure`): the rows in them keep
/// the phase their own stacks, or what came before, give them.
fn drop_closure_steps(
    annotated: &mut [Option<Phase>],
    allocates: impl Fn(usize) -> bool,
    mut runs_closure: impl FnMut(usize) -> bool,
) {
    let mut r = 0;
    while r < annotated.len() {
        if annotated[r] != Some(Phase::OptimizerStep) {
            r += 1;
            continue;
        }
        let end = r + annotated[r..]
            .iter()
            .take_while(|&&p| p == Some(Phase::OptimizerStep))
            .count();
        if (r..end)
            .filter(|&row| allocates(row))
            .take(CLOSURE_LOOKS)
            .any(&mut runs_closure)
        {
            annotated[r..end].fill(None);
        }
        r = end;
    }
}

/// The phase of the innermost recognised scope around each row, when the trace has times.
fn annotated_rows(snapshot: &Snapshot, device: &Device) -> Vec<Option<Phase>> {
    let times = &device.trace.time_us;
    let usable = !times.is_empty()
        && times[0] != NO_TIME
        && times.windows(2).all(|w| w[0] <= w[1])
        && snapshot.annotations.iter().any(|a| a.device == device.id);
    if !usable {
        return Vec::new();
    }
    let mut rows = vec![None; times.len()];
    // Inner scopes first, so outer ones fill only what inner ones left; a scope never closed
    // says nothing of where it ends.
    let mut scopes = scope_ranges(snapshot, device.id);
    scopes.sort_by_key(|s| std::cmp::Reverse(s.depth));
    for scope in scopes {
        let (Some(end_us), Some(phase)) = (scope.end_us, scope_phase(snapshot.str(scope.name)))
        else {
            continue;
        };
        let first = times.partition_point(|&t| t < scope.start_us);
        let end = times.partition_point(|&t| t <= end_us);
        for row in rows.iter_mut().take(end).skip(first) {
            row.get_or_insert(phase);
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_names_name_phases() {
        assert_eq!(
            scope_phase("Optimizer.step#AdamW.step"),
            Some(Phase::OptimizerStep)
        );
        assert_eq!(
            scope_phase("Optimizer.zero_grad#AdamW.zero_grad"),
            Some(Phase::ZeroGrad)
        );
        assert_eq!(scope_phase("## backward ##"), Some(Phase::Backward));
        assert_eq!(scope_phase("forward_pass"), Some(Phase::Forward));
        assert_eq!(scope_phase("data loading"), None);
    }

    #[test]
    fn rows_are_in_one_run_while_their_phase_lasts() {
        use Phase::*;
        let phases = RowPhases::new(vec![
            Forward, Forward, Backward, Backward, Backward, Forward,
        ]);
        let ends = [Some(2), Some(2), Some(5), Some(5), Some(5), Some(6), None];
        let mut in_order = phases.run_ends();
        let got: Vec<Option<usize>> = (0..7).map(|row| in_order.after(row)).collect();
        assert_eq!(got, ends);
        // Out of order, as well.
        let mut any_order = phases.run_ends();
        for row in [5, 0, 6, 3, 1, 4, 2, 0] {
            assert_eq!(any_order.after(row), ends[row], "row {row}");
        }
        assert_eq!(RowPhases::new(Vec::new()).run_ends().after(0), None);
    }
}
