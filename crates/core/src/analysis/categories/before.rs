//! Roles of memory made before the trace: blocks alive from before the first event (no
//! frames when recording started after they were made), and allocations the trace only
//! frees. Their making was not recorded, but the trace holds evidence of what they are, and
//! training says how to read it:
//!
//! - **Freed in the trace**: the code that frees it tells. Where the trace frees its own
//!   allocations with the same stack, it is what those are (the same line frees the same kind
//!   of tensor every iteration); else autograd releasing what it saved is an activation's
//!   free, `zero_grad` a gradient's, a free in a phase that phase's temporary; else the
//!   trace's own allocations of its size still alive at the end (its successors, which the
//!   next iteration will free the same way) say what it is.
//! - **Alive throughout** (never freed): one gradient per trainable parameter, of its size,
//!   so each gradient the run makes pairs with one block of its size: a parameter. An
//!   optimizer keeps its states per parameter at the parameter's size (Adam and AdamW two),
//!   so further blocks of a gradient's size, up to that many per parameter, are optimizer
//!   state when the run shows an optimizer; when the optimizer steps more parameters of a size
//!   than the trace makes gradients of it, the others' gradients are from before. In a run with
//!   no gradient (a forward, inference), memory alive throughout is the model's weights and
//!   buffers; a few blocks of cuBLAS's workspace size nothing pairs with are its workspaces.
//!   Which of several blocks of one size is the parameter and which its states is not
//!   recorded; the bytes of each role are the same either way.
//! - **Trained in the trace**: what the training loop made (or made with frames that say
//!   nothing) and lives on, of a gradient's size no parameter from before pairs with, is what
//!   the optimizer trains.
//!
//! Each deduction is kept ([`Deduced`]) so its reason can be told ([`super::Explainer`]);
//! why deduce by size and keep so little: `docs/decisions/0001-roles-of-memory-from-before-the-trace.md`.
//! Blocks whose own frames say what they are, annotations and rules are not deduced. Not the
//! place for roles of memory made in the trace ([`super::trace_role`]).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

use super::phases::RowPhases;
use super::signals::Phase;
use super::{DeviceSignals, Role};
use crate::analysis::{DeviceFacts, Origin, NO_ROW};
use crate::model::{Action, Device, Snapshot, StackId, NO_STACK};

/// How the code that freed an allocation from before the trace tells its role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FreedHow {
    /// Autograd released what it saved for the backward: an activation.
    SavedReleased,
    /// `zero_grad` freed it: a gradient of the step before.
    ZeroGrad,
    /// A backward freed it, not as its own temporary: what the forward saved.
    InBackward,
    /// Freed within `phase`, which its stack names or the trace begins inside: a temporary
    /// of it, made before recording.
    WithinPhase { phase: Phase },
}

/// How the role of an allocation made before the trace was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deduced {
    /// Observed: its block's frames (or the frames its free carries, recorded where it was
    /// made), an annotation or a rule say what it is.
    Observed,
    /// Alive throughout; one of the parameters of its size, which the run's gradients (or its
    /// optimizer's states) of that size count; allocation `evidence` is one of those.
    Parameter { evidence: u32 },
    /// Alive throughout; a gradient made before the trace: the run's optimizer steps every
    /// parameter of its size (allocation `evidence` is one of their states or gradients), and
    /// the trace makes fewer gradients of that size than there are parameters.
    Gradient { evidence: u32 },
    /// Alive throughout; beyond the parameters of its size (allocation `evidence` is one of
    /// their gradients or states): one of the optimizer's states.
    OptimizerState { evidence: u32 },
    /// Alive throughout a window with no optimizer step, in which the blocks of its size
    /// come in groups of `group`, a parameter and the states the run's optimizer keeps of it:
    /// the group's `parameter`, or one of its states.
    InStateGroup { parameter: bool, group: u32 },
    /// Alive throughout a run that makes no gradient: the model's weights and buffers.
    ModelState,
    /// Alive throughout a run of training (it makes gradients or steps an optimizer) in
    /// which nothing pairs with it: a frozen weight or a buffer of the model, or another
    /// tensor kept from before.
    Unpaired,
    /// Freed where the trace frees its own allocation `like` (with the same stack).
    FreedLike { like: u32 },
    /// Freed by code or in a phase that says what it is.
    FreedBy,
    /// Alive throughout, of the size of what the trace makes and keeps to the end in a role
    /// any phase has (a workspace, a communication buffer, an input): allocation `like` is one.
    KeptLike { like: u32 },
    /// Alive throughout, nothing paired with it, of the size of cuBLAS's default workspace.
    CublasWorkspace,
    /// Freed at a stack no other memory of the trace is freed at; the trace's allocation
    /// `like`, of its size and still alive at the end, is its successor.
    SucceededBy { like: u32 },
    /// Nothing in the trace says what it is.
    Unknown,
}

impl Deduced {
    /// Whether the role was deduced rather than observed (and not left unknown).
    pub fn is_inferred(self) -> bool {
        !matches!(self, Deduced::Observed | Deduced::Unknown)
    }
}

/// The optimizer a run shows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OptimizerEvidence {
    /// Whether the trace runs its step (else only its `zero_grad`, say).
    pub steps: bool,
    /// Its class, from the profiler scopes every `torch.optim.Optimizer` records
    /// (`Optimizer.step#AdamW.step`) or the module its step runs in (`torch/optim/adamw.py`).
    pub name: Option<String>,
    /// The states it keeps per parameter at the parameter's size, when its name says.
    pub states_per_parameter: Option<u32>,
}

/// What a device's trace shows of training: the evidence memory from before it is read by.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunEvidence {
    /// Whether the file records stacks, for the trace's allocations or the final blocks
    /// (without them no phase can be told, nor what was made before recording).
    pub records_stacks: bool,
    /// Whether the trace makes allocations with stacks (phases can be told).
    #[serde(default)]
    pub trace_stacks: bool,
    /// Gradients the run holds at the sizes something pairs with: per size, the most alive at
    /// once (one per parameter).
    pub gradients: u32,
    /// Whether the trace trains: it makes gradients or steps an optimizer.
    pub trains: bool,
    pub optimizer: Option<OptimizerEvidence>,
    /// The sizes of blocks alive throughout that were paired, ascending.
    pub sizes: Vec<SizeEvidence>,
}

/// What one size of blocks alive throughout was paired with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeEvidence {
    pub size: u64,
    /// Gradients of this size that the rest of the memory holds, the most alive at once.
    pub gradients: u32,
    /// Optimizer states of this size that the rest of the memory holds, the most at once.
    pub states: u32,
    /// Parameters of this size: one per gradient, or per so many states.
    pub parameters: u32,
    /// Blocks alive throughout deduced to be parameters, gradients and optimizer states.
    pub paired_parameters: u32,
    pub paired_gradients: u32,
    pub paired_states: u32,
}

impl RunEvidence {
    /// What blocks of `size` were paired with (zeros for a size none was).
    pub fn size(&self, size: u64) -> SizeEvidence {
        self.sizes.binary_search_by_key(&size, |s| s.size).map_or(
            SizeEvidence {
                size,
                ..Default::default()
            },
            |k| self.sizes[k],
        )
    }
}

/// The states an optimizer keeps per parameter at the parameter's size, by its class name.
/// Factored or quantised states (Adafactor, 8-bit optimizers) have other sizes: none here.
pub fn states_per_parameter(name: &str) -> Option<u32> {
    let name = name.to_ascii_lowercase();
    if name.contains("8bit") || name.contains("factor") {
        return Some(0);
    }
    if name.contains("adam") || name.contains("lamb") || name.contains("adadelta") {
        Some(2)
    } else if name.contains("lion") || name.contains("adagrad") || name.contains("muon") {
        Some(1)
    } else {
        // SGD (momentum or not), RMSprop (momentum, centred) and the rest: their options say.
        None
    }
}

/// The share of the bytes from before a window without an optimizer step that must come in
/// groups of a parameter and its states for the groups to be read as such.
const STATE_GROUPS_COVER: f64 = 0.9;

/// The most states per parameter assumed of an optimizer whose name does not say.
const STATES_ASSUMED: u32 = 2;

/// Deduces the roles of `device`'s allocations from before its trace, filling `roles`;
/// returns how each was found and what the run shows.
pub(super) fn deduce(
    snapshot: &Snapshot,
    device: &Device,
    facts: &DeviceFacts,
    phases: &RowPhases,
    annotated: &[(u32, u32, Role)],
    signals: &mut DeviceSignals<'_>,
    roles: &mut [Role],
) -> (Vec<Deduced>, Vec<(u32, u32)>, RunEvidence) {
    let trace = &device.trace;
    let allocations = &facts.allocations;
    let first_traced = allocations.first_traced();
    // Stacks recorded for the trace's allocations or the final blocks: recording was on, and
    // what carries none was made before it.
    let trace_stacks =
        (0..trace.len()).any(|r| trace.action[r] == Action::Alloc && trace.stack[r] != NO_STACK);
    let records_stacks = trace_stacks
        || device
            .blocks
            .iter()
            .any(|b| b.stack != NO_STACK || b.history.iter().any(|h| h.stack != NO_STACK));
    let mut before = vec![Deduced::Unknown; first_traced];
    // What users wrote and what blocks' own frames say are observed.
    let mut annotation = annotated.iter().map(|&(i, _, _)| i as usize).peekable();
    for (i, deduced) in before.iter_mut().enumerate() {
        while annotation.next_if(|&at| at < i).is_some() {}
        let a = allocations.at(i);
        let signal = signals.of(a.stack);
        let annotated = annotation.peek() == Some(&i);
        let own_frames = a.origin() == Origin::LiveBlock && roles[i] != Role::Unknown;
        if annotated || signal.ruled.role.is_some() || own_frames {
            *deduced = Deduced::Observed;
        } else if a.origin() == Origin::FreedBeforeAlloc && signal.allocator_malloc {
            // Recorded with the context `alloc`, a free carries the stack it was made with.
            let (role, _) = super::kept_role(&signal, true);
            if role != Role::Unknown {
                roles[i] = role;
                *deduced = Deduced::Observed;
            }
        }
    }

    deduce_freed(trace, facts, phases, signals, roles, &mut before);

    let optimizer = optimizer_evidence(snapshot, device, allocations, phases, roles);
    let steps = optimizer.as_ref().is_some_and(|o| o.steps);
    // Gradients and states are counted only at the sizes of what they may pair with: blocks
    // without frames, and (in a run that steps an optimizer) what the trace made that nothing
    // else says the role of.
    let mut paired_sizes: FxHashSet<u64> = FxHashSet::default();
    for (i, deduced) in before.iter().enumerate() {
        let a = allocations.at(i);
        if *deduced == Deduced::Unknown && a.origin() == Origin::LiveBlock && a.stack == NO_STACK {
            paired_sizes.insert(a.size);
        }
    }
    let candidates = if steps {
        trained_candidates(facts, annotated, signals, roles)
    } else {
        Vec::new()
    };
    for &i in &candidates {
        paired_sizes.insert(allocations.size(i));
    }
    let [gradients, states] = most_alive_by_size(
        facts,
        &paired_sizes,
        roles,
        &before,
        [Role::Gradients, Role::OptimizerState],
    );
    let trains = steps || roles[first_traced..].contains(&Role::Gradients);
    let mut run = RunEvidence {
        records_stacks,
        trace_stacks,
        gradients: gradients.values().map(|g| g.most).sum(),
        trains,
        optimizer,
        sizes: Vec::new(),
    };
    if records_stacks {
        run.sizes = pair_alive_throughout(facts, &gradients, &states, &run, roles, &mut before);
        kept_like_the_trace(facts, roles, &mut before);
        cublas_workspaces(facts, roles, &mut before);
    }
    let trained = trained_inputs(facts, &gradients, &run, &candidates, roles);
    (before, trained, run)
}

/// What a tensor the optimizer trains may be called until its gradient says otherwise: the
/// training loop's tensor (an input, by its stack), or one nothing says the role of.
const TRAINED_ROLES: [Role; 2] = [Role::Inputs, Role::Unknown];

/// The allocations [`trained_inputs`] may find trained, in order: those of
/// [`TRAINED_ROLES`] alive at the end whose role no frame, rule or annotation states (a
/// gradient does not undo what is stated).
fn trained_candidates(
    facts: &DeviceFacts,
    annotated: &[(u32, u32, Role)],
    signals: &mut DeviceSignals<'_>,
    roles: &[Role],
) -> Vec<usize> {
    let allocations = &facts.allocations;
    let mut candidates = Vec::new();
    for (i, &role) in roles.iter().enumerate() {
        if !TRAINED_ROLES.contains(&role) {
            continue;
        }
        // What an optimizer trains lives on past its steps.
        let a = allocations.at(i);
        if !a.is_alive_at_end() {
            continue;
        }
        let signal = signals.of(a.stack);
        let stated = signal.role.is_some()
            || signal.ruled.role.is_some()
            || annotated
                .binary_search_by_key(&(i as u32), |&(at, _, _)| at)
                .is_ok();
        if !stated {
            candidates.push(i);
        }
    }
    candidates
}

/// Tensors made outside any module (inputs or unknown, by their stack) whose size pairs with
/// gradients no parameter from before the trace pairs with: what the optimizer trains (a
/// tensor optimised itself, a parameter made outside any module or whose frames say nothing),
/// as parameters. Returns `(allocation, a gradient of its size)`, by allocation.
fn trained_inputs(
    facts: &DeviceFacts,
    gradients: &FxHashMap<u64, BySize>,
    run: &RunEvidence,
    candidates: &[usize],
    roles: &mut [Role],
) -> Vec<(u32, u32)> {
    let allocations = &facts.allocations;
    let first_traced = allocations.first_traced();
    let mut trained = Vec::new();
    // Only an optimizer trains: a tensor with a gradient and no step is not trained.
    if !run.optimizer.as_ref().is_some_and(|o| o.steps) {
        return trained;
    }
    // What the loop made of each gradient's size, in order.
    let mut inputs: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
    for &i in candidates {
        let size = allocations.size(i);
        if gradients.contains_key(&size) {
            inputs.entry(size).or_default().push(i);
        }
    }
    for (size, candidates) in inputs {
        let grads = &gradients[&size];
        let paired = run.size(size).paired_parameters;
        let mut wanted = grads.most.saturating_sub(paired) as usize;
        let Some(&first_gradient) = grads
            .allocations
            .iter()
            .find(|&&g| g as usize >= first_traced)
        else {
            continue;
        };
        let made_at = allocations.at(first_gradient as usize).alloc_row;
        for i in candidates {
            if wanted == 0 {
                break;
            }
            let a = allocations.at(i);
            // Made before its gradient (or before the trace, its own frames calling it an
            // input) and alive when the gradient was made.
            let before_gradient = i < first_traced || a.alloc_row < made_at;
            if before_gradient && (a.free_row == NO_ROW || a.free_row > made_at) {
                roles[i] = Role::Parameters;
                trained.push((i as u32, first_gradient));
                wanted -= 1;
            }
        }
    }
    trained.sort_unstable();
    trained
}

/// The sizes of cuBLAS's default workspace, which PyTorch allocates once per handle and
/// stream and keeps (`CUBLAS_WORKSPACE_CONFIG` unset): `:4096:8` (32 MiB) on Hopper and later,
/// `:4096:2:16:8` (8 MiB + 128 KiB) before.
pub const CUBLAS_WORKSPACE_SIZES: [u64; 2] = [4096 * 1024 * 8, 4096 * 1024 * 2 + 16 * 1024 * 8];
/// At most this many workspaces of one size (a forward's and a backward's thread, a stream or
/// two each); more blocks of a size are weights of it (a 4096 × 4096 bf16 weight is 32 MiB).
const CUBLAS_WORKSPACES_AT_MOST: usize = 4;

/// Blocks alive throughout that nothing paired, a few of one of cuBLAS's workspace sizes:
/// cuBLAS's workspaces, made before recording.
fn cublas_workspaces(facts: &DeviceFacts, roles: &mut [Role], before: &mut [Deduced]) {
    let allocations = &facts.allocations;
    for size in CUBLAS_WORKSPACE_SIZES {
        let unpaired: Vec<usize> = (0..before.len())
            .filter(|&i| {
                matches!(before[i], Deduced::Unpaired | Deduced::ModelState)
                    && allocations.size(i) == size
            })
            .collect();
        if unpaired.len() <= CUBLAS_WORKSPACES_AT_MOST {
            for i in unpaired {
                roles[i] = Role::Workspace;
                before[i] = Deduced::CublasWorkspace;
            }
        }
    }
}

/// cuBLAS's workspaces the trace made: one or two blocks of one of its workspace sizes, made
/// in the first forward (or backward) of the trace by its first matmul and never freed, which
/// Python frames alone read as an activation kept. Makes them workspaces; returns them, by
/// allocation.
pub(super) fn cublas_workspaces_made(
    facts: &DeviceFacts,
    phases: &RowPhases,
    stated: &dyn Fn(usize) -> bool,
    roles: &mut [Role],
) -> Vec<u32> {
    let allocations = &facts.allocations;
    // The end of each phase's first run: a handle's first matmul is in it.
    let mut first_run_end = [None::<usize>; Phase::ALL.len()];
    let mut run_ends = phases.run_ends();
    for (row, &phase) in phases.phase.iter().enumerate() {
        if first_run_end[phase as usize].is_none() {
            first_run_end[phase as usize] = run_ends.after(row);
        }
    }
    let mut made = Vec::new();
    for size in CUBLAS_WORKSPACE_SIZES {
        let found: Vec<u32> = (allocations.first_traced()..allocations.len())
            .filter(|&i| {
                let a = allocations.at(i);
                let row = a.alloc_row as usize;
                let phase = phases.phase.get(row).copied();
                let in_first_run = phase.is_some_and(|p| {
                    matches!(p, Phase::Forward | Phase::Backward)
                        && first_run_end[p as usize].is_some_and(|end| row < end)
                });
                a.size == size
                    && a.origin() == Origin::Trace
                    && a.is_alive_at_end()
                    && matches!(roles[i], Role::Activations | Role::Unknown)
                    && in_first_run
                    && !stated(i)
            })
            .map(|i| i as u32)
            .collect();
        // A forward's handle and a backward's.
        if !found.is_empty() && found.len() <= 2 {
            for &i in &found {
                roles[i as usize] = Role::Workspace;
            }
            made.extend(found);
        }
    }
    made.sort_unstable();
    made
}

/// Roles a tensor kept to the end has whatever the phase: a library's workspace (cuBLAS keeps
/// one per handle and stream), a communication buffer, the training loop's inputs.
const KEPT_ROLES: [Role; 3] = [Role::Workspace, Role::Communication, Role::Inputs];

/// Blocks alive throughout that nothing paired, of the size of what the trace makes and
/// keeps to the end in one of [`KEPT_ROLES`]: one of those, made before recording (the
/// forward's cuBLAS workspace, when the trace makes the backward's).
fn kept_like_the_trace(facts: &DeviceFacts, roles: &mut [Role], before: &mut [Deduced]) {
    if !before
        .iter()
        .any(|d| matches!(d, Deduced::Unpaired | Deduced::ModelState))
    {
        return;
    }
    let allocations = &facts.allocations;
    let first_traced = allocations.first_traced();
    let mut kept: FxHashMap<u64, Tally> = FxHashMap::default();
    for (i, &role) in roles.iter().enumerate().skip(first_traced) {
        if !KEPT_ROLES.contains(&role) {
            continue;
        }
        let a = allocations.at(i);
        if a.free_row == NO_ROW {
            kept.entry(a.size).or_default().add(role, i);
        }
    }
    if kept.is_empty() {
        return;
    }
    for (i, deduced) in before.iter_mut().enumerate() {
        if !matches!(deduced, Deduced::Unpaired | Deduced::ModelState) {
            continue;
        }
        if let Some((role, like)) = kept.get(&allocations.size(i)).and_then(Tally::most) {
            roles[i] = role;
            *deduced = Deduced::KeptLike { like: like as u32 };
        }
    }
}

/// Roles of the allocations the trace frees but did not make.
fn deduce_freed(
    trace: &crate::model::Trace,
    facts: &DeviceFacts,
    phases: &RowPhases,
    signals: &mut DeviceSignals<'_>,
    roles: &mut [Role],
    before: &mut [Deduced],
) {
    let allocations = &facts.allocations;
    let first_traced = allocations.first_traced();
    let freed: Vec<usize> = (0..first_traced)
        .filter(|&i| {
            before[i] == Deduced::Unknown && allocations.at(i).origin() == Origin::FreedBeforeAlloc
        })
        .collect();
    if freed.is_empty() {
        return;
    }
    // The roles of the trace's own allocations by the stack of their free, and by size for
    // those alive at the end: the first of each role seen, and how many.
    let mut by_free_stack: FxHashMap<StackId, Tally> = FxHashMap::default();
    let mut alive_by_size: FxHashMap<u64, Tally> = FxHashMap::default();
    for (i, &role) in roles.iter().enumerate().skip(first_traced) {
        let a = allocations.at(i);
        if role == Role::Unknown {
            continue;
        }
        if a.free_row == NO_ROW {
            alive_by_size.entry(a.size).or_default().add(role, i);
        } else {
            let stack = trace.stack[a.free_row as usize];
            if stack != NO_STACK {
                by_free_stack.entry(stack).or_default().add(role, i);
            }
        }
    }
    for i in freed {
        let a = allocations.at(i);
        let free_row = a.free_row as usize;
        if let Some((role, like)) = by_free_stack.get(&a.stack).and_then(Tally::most) {
            roles[i] = role;
            before[i] = Deduced::FreedLike { like: like as u32 };
            continue;
        }
        let in_first_run = free_row < phases.first_run_end();
        if let Some((role, _)) =
            freed_role(&signals.of(a.stack), phases.phase[free_row], in_first_run)
        {
            roles[i] = role;
            before[i] = Deduced::FreedBy;
            continue;
        }
        if let Some((role, like)) = alive_by_size.get(&a.size).and_then(Tally::most) {
            roles[i] = role;
            before[i] = Deduced::SucceededBy { like: like as u32 };
        }
    }
}

/// The role the code that frees an allocation from before the trace says it had, and how,
/// if it says: autograd releasing what it saved frees activations; `zero_grad` frees
/// gradients; a phase frees its own temporaries when the free's stack names it, or when the
/// trace begins inside that run of the phase (`in_first_run`: the memory was made in it before
/// recording); anything else a backward frees was saved for it by the forward.
pub(super) fn freed_role(
    free: &super::StackSignal,
    phase: Phase,
    in_first_run: bool,
) -> Option<(Role, FreedHow)> {
    if free.releases_saved {
        return Some((Role::Activations, FreedHow::SavedReleased));
    }
    let named = free.phase == Some(phase);
    // A stack of the training loop's code freeing it in a forward is the loop dropping what
    // a forward returned (its output, from the iteration before), not the forward's code.
    let unsaid = named || (in_first_run && free.empty);
    let within = FreedHow::WithinPhase { phase };
    let found = match free.phase.unwrap_or(phase) {
        Phase::ZeroGrad => (Role::Gradients, FreedHow::ZeroGrad),
        Phase::Forward if unsaid => (Role::ForwardTemporaries, within),
        Phase::Backward if named => (Role::BackwardTemporaries, within),
        Phase::Backward => (Role::Activations, FreedHow::InBackward),
        Phase::OptimizerStep if unsaid => (Role::OptimizerTemporaries, within),
        _ => return None,
    };
    Some(found)
}

/// Roles seen, each with how many and its first allocation.
#[derive(Default)]
struct Tally {
    counts: Vec<(Role, u32, usize)>,
}

impl Tally {
    fn add(&mut self, role: Role, allocation: usize) {
        match self.counts.iter_mut().find(|(r, _, _)| *r == role) {
            Some((_, n, _)) => *n += 1,
            None => self.counts.push((role, 1, allocation)),
        }
    }

    /// The role seen most (the first seen of those seen as often), with its first allocation.
    fn most(&self) -> Option<(Role, usize)> {
        let mut best: Option<&(Role, u32, usize)> = None;
        for entry in &self.counts {
            if best.is_none_or(|b| entry.1 > b.1) {
                best = Some(entry);
            }
        }
        best.map(|&(role, _, first)| (role, first))
    }
}

/// Allocations of one size: the most alive at once, and all of them in order.
#[derive(Default)]
struct BySize {
    most: u32,
    allocations: Vec<u32>,
}

/// For each of `sizes_wanted` and each of two roles, how many allocations of it (known, not
/// left unknown by the deductions) are alive at once at most.
fn most_alive_by_size(
    facts: &DeviceFacts,
    sizes_wanted: &FxHashSet<u64>,
    roles: &[Role],
    before: &[Deduced],
    counted: [Role; 2],
) -> [FxHashMap<u64, BySize>; 2] {
    let mut sizes: [FxHashMap<u64, BySize>; 2] = Default::default();
    if sizes_wanted.is_empty() {
        return sizes;
    }
    // Allocations come in the order they start; per size, the ends of those still alive.
    let allocations = &facts.allocations;
    let mut alive: [FxHashMap<u64, BinaryHeap<Reverse<u32>>>; 2] = Default::default();
    for (i, &role) in roles.iter().enumerate() {
        let Some(k) = counted.iter().position(|&r| r == role) else {
            continue;
        };
        if before.get(i) == Some(&Deduced::Unknown) {
            continue;
        }
        let size = allocations.size(i);
        if !sizes_wanted.contains(&size) {
            continue;
        }
        let (start, end) = allocations.at(i).alive_states();
        let ends = alive[k].entry(size).or_default();
        // One that ends as this one starts is not alive with it.
        while ends.peek().is_some_and(|&Reverse(e)| e <= start) {
            ends.pop();
        }
        ends.push(Reverse(end));
        let entry = sizes[k].entry(size).or_default();
        entry.most = entry.most.max(ends.len() as u32);
        entry.allocations.push(i as u32);
    }
    sizes
}

/// The optimizer the run shows, if it shows one: a profiler scope of a `torch.optim`
/// optimizer, a row in its step, or memory it made.
fn optimizer_evidence(
    snapshot: &Snapshot,
    device: &Device,
    allocations: &crate::analysis::Allocations,
    phases: &RowPhases,
    roles: &[Role],
) -> Option<OptimizerEvidence> {
    let from_scope = snapshot
        .annotations
        .iter()
        .filter(|a| a.device == device.id)
        .find_map(|a| optimizer_in_scope(snapshot.str(a.name)));
    let trace = &device.trace;
    let steps = phases.phase.contains(&Phase::OptimizerStep)
        || roles
            .iter()
            .any(|&r| matches!(r, Role::OptimizerState | Role::OptimizerTemporaries));
    let name = from_scope
        .or_else(|| {
            (0..trace.len())
                .filter(|&r| {
                    trace.action[r] == Action::Alloc && phases.phase[r] == Phase::OptimizerStep
                })
                .take(64)
                .find_map(|r| optimizer_in_stack(snapshot, trace.stack[r]))
        })
        .or_else(|| {
            // A snapshot with no trace: the states' own frames name their optimizer.
            allocations
                .iter()
                .enumerate()
                .filter(|&(i, a)| roles[i] == Role::OptimizerState && a.stack != NO_STACK)
                .take(64)
                .find_map(|(_, a)| optimizer_in_stack(snapshot, a.stack))
        });
    if name.is_none() && !steps {
        return None;
    }
    let steps = steps
        || snapshot
            .annotations
            .iter()
            .any(|a| a.device == device.id && snapshot.str(a.name).starts_with("Optimizer.step#"));
    Some(OptimizerEvidence {
        steps,
        states_per_parameter: name.as_deref().and_then(states_per_parameter),
        name,
    })
}

/// `AdamW` of `Optimizer.step#AdamW.step` or `Optimizer.zero_grad#AdamW.zero_grad`.
fn optimizer_in_scope(scope: &str) -> Option<String> {
    let rest = scope
        .strip_prefix("Optimizer.step#")
        .or_else(|| scope.strip_prefix("Optimizer.zero_grad#"))?;
    let class = rest.split('.').next()?;
    (!class.is_empty()).then(|| class.to_string())
}

/// The optimizer whose module (`torch/optim/adamw.py`) a stack runs in.
fn optimizer_in_stack(snapshot: &Snapshot, stack: StackId) -> Option<String> {
    const CLASSES: [(&str, &str); 12] = [
        ("adamw", "AdamW"),
        ("adam", "Adam"),
        ("adamax", "Adamax"),
        ("nadam", "NAdam"),
        ("radam", "RAdam"),
        ("sparse_adam", "SparseAdam"),
        ("sgd", "SGD"),
        ("rmsprop", "RMSprop"),
        ("adagrad", "Adagrad"),
        ("adadelta", "Adadelta"),
        ("asgd", "ASGD"),
        ("lbfgs", "LBFGS"),
    ];
    snapshot.stack_frames(stack).find_map(|f| {
        let file = snapshot.str(f.filename).replace('\\', "/");
        let stem = file.split("torch/optim/").nth(1)?.strip_suffix(".py")?;
        CLASSES
            .iter()
            .find(|(s, _)| *s == stem)
            .map(|(_, class)| class.to_string())
    })
}

/// Pairs the blocks alive throughout whose role nothing observed with the gradients and
/// optimizer states of their sizes; the rest are the model's state. Returns what each size
/// was paired with.
///
/// Per size: the parameters are as many as the gradients of that size alive at once, or the
/// optimizer's states over the states it keeps per parameter, whichever is more. Blocks
/// alive throughout are, in turn, those parameters; when the run steps an optimizer, the
/// gradients of the parameters the trace made none for (the step needs every one); up to
/// the optimizer's states per parameter of the states the trace holds too few of.
fn pair_alive_throughout(
    facts: &DeviceFacts,
    gradients: &FxHashMap<u64, BySize>,
    states: &FxHashMap<u64, BySize>,
    run: &RunEvidence,
    roles: &mut [Role],
    before: &mut [Deduced],
) -> Vec<SizeEvidence> {
    let allocations = &facts.allocations;
    let mut by_size: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
    for (i, deduced) in before.iter().enumerate() {
        let a = allocations.at(i);
        // A block with frames of its own was made while recording: they say what they say.
        if *deduced == Deduced::Unknown && a.origin() == Origin::LiveBlock && a.stack == NO_STACK {
            by_size.entry(a.size).or_default().push(i);
        }
    }
    // Parameters whose own frames say so, alive at the end, by size: they need no block
    // without frames to stand for them (a snapshot whose weights were made while recording and
    // whose gradients, made by autograd's thread, carry no Python frame).
    let mut known_parameters: FxHashMap<u64, usize> = FxHashMap::default();
    if !by_size.is_empty() {
        for (i, a) in allocations.iter().enumerate() {
            if roles[i] == Role::Parameters && a.is_alive_at_end() && by_size.contains_key(&a.size)
            {
                *known_parameters.entry(a.size).or_default() += 1;
            }
        }
    }
    let named = run.optimizer.as_ref().and_then(|o| o.states_per_parameter);
    let per_parameter = run.optimizer.as_ref().map_or(0, |o| {
        o.states_per_parameter.unwrap_or(STATES_ASSUMED) as usize
    });
    let steps = run.optimizer.as_ref().is_some_and(|o| o.steps);
    // A window with no step of an optimizer the run names (its zero_grad's scope, say): its
    // states from before are alive throughout beside their parameters, one block of each
    // state per parameter at the parameter's size. Where the blocks of nearly every size come
    // in such groups, each size's first are its parameters and the rest their states.
    let grouped_by_states = match named {
        Some(k) if k > 0 && !steps && gradients.is_empty() && states.is_empty() => {
            let group = 1 + k as usize;
            let (mut grouped, mut all) = (0u64, 0u64);
            for (&size, blocks) in &by_size {
                let bytes = size * blocks.len() as u64;
                all += bytes;
                if blocks.len() % group == 0 {
                    grouped += bytes;
                }
            }
            (all > 0 && grouped as f64 >= STATE_GROUPS_COVER * all as f64).then_some(group)
        }
        _ => None,
    };
    let none = BySize::default();
    let mut evidence = Vec::with_capacity(by_size.len());
    for (size, blocks) in by_size {
        let grads = gradients.get(&size).unwrap_or(&none);
        let kept = states.get(&size).unwrap_or(&none);
        let from_states = match named {
            Some(k) if k > 0 => kept.most.div_ceil(k),
            _ => 0,
        };
        let from_groups = match grouped_by_states {
            Some(group) if blocks.len() % group == 0 => blocks.len() / group,
            _ => 0,
        };
        let parameters = (grads.most.max(from_states) as usize).max(from_groups);
        // What one of them is known by: a gradient, else a state, of this size.
        // Those made in the trace first: their making is what a reason can point at.
        let first_traced = allocations.first_traced() as u32;
        let mut known: Vec<u32> = grads
            .allocations
            .iter()
            .chain(&kept.allocations)
            .copied()
            .collect();
        known.sort_by_key(|&j| (j < first_traced, j));
        let made = known.iter().filter(|&&j| j >= first_traced).count();
        let witnesses = if made > 0 { made } else { known.len() };
        let unseen_parameters =
            parameters.saturating_sub(known_parameters.get(&size).copied().unwrap_or(0));
        let paired_parameters = unseen_parameters.min(blocks.len());
        let gradients_before = if steps {
            (parameters - grads.most as usize).min(blocks.len() - paired_parameters)
        } else {
            0
        };
        let states_room = if from_groups > 0 {
            blocks.len() - from_groups
        } else {
            (per_parameter * parameters).saturating_sub(kept.most as usize)
        };
        let paired_states = states_room.min(blocks.len() - paired_parameters - gradients_before);
        evidence.push(SizeEvidence {
            size,
            gradients: grads.most,
            states: kept.most,
            parameters: parameters as u32,
            paired_parameters: paired_parameters as u32,
            paired_gradients: gradients_before as u32,
            paired_states: paired_states as u32,
        });
        for (n, &i) in blocks.iter().enumerate() {
            if known.is_empty() && from_groups > 0 {
                // Nothing of this size in the window: the groups alone say.
                let (role, parameter) = if n < paired_parameters {
                    (Role::Parameters, true)
                } else {
                    (Role::OptimizerState, false)
                };
                roles[i] = role;
                before[i] = Deduced::InStateGroup {
                    parameter,
                    group: (blocks.len() / from_groups) as u32,
                };
                continue;
            }
            let evidence = || known[n % witnesses];
            let (role, deduced) = if n < paired_parameters {
                (
                    Role::Parameters,
                    Deduced::Parameter {
                        evidence: evidence(),
                    },
                )
            } else if n < paired_parameters + gradients_before {
                (
                    Role::Gradients,
                    Deduced::Gradient {
                        evidence: evidence(),
                    },
                )
            } else if n < paired_parameters + gradients_before + paired_states {
                (
                    Role::OptimizerState,
                    Deduced::OptimizerState {
                        evidence: evidence(),
                    },
                )
            } else if run.trains {
                (Role::Parameters, Deduced::Unpaired)
            } else {
                (Role::Parameters, Deduced::ModelState)
            };
            roles[i] = role;
            before[i] = deduced;
        }
    }
    evidence.sort_unstable_by_key(|e| e.size);
    evidence
}
