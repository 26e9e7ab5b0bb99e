//! What each allocation's memory is for (its **role**: parameters, gradients, optimizer
//! state, activations, temporaries…) and where in the model it was made (its **component**:
//! attention, MLP, embedding…), one of each for every allocation of every device, and the
//! bytes of each at any moment.
//!
//! A role is inferred from the allocation's stack (frames of the optimizer, the autograd
//! engine, module calls, setup, data loading, communication, library workspaces), the phase it
//! was made in ([`phases`]) and its lifetime against the phases: made in a forward and alive
//! after it is an activation, made in a backward and alive after it a gradient, made in an
//! optimizer step and kept is optimizer state, made and freed in one run of a phase is that
//! phase's temporary. Allocations from before the trace window use their block's stack when
//! there is one; the others are deduced from what the trace shows of them and of training
//! (`before.rs`): their frees, and sizes paired with the gradients and optimizer states the
//! window makes. What users wrote comes first: the rules ([`rules`]), then annotations on an
//! allocation (`annotations.rs`). A component comes from keywords in the innermost frame that
//! has one ([`signals`]). Each role has its reason ([`Explainer`]), worked out when asked.
//!
//! Pure and computed in one pass per device (each distinct frame and stack read once), then
//! one over the allocations from before the trace. Not the place for colours or words.

mod annotations;
mod autocast;
mod before;
pub mod categorised;
pub mod frameworks;
pub mod index;
pub mod labels;
pub mod phases;
pub mod pooled;
mod reason;
pub mod rules;
pub mod signals;
pub mod workload;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::allocations::{Origin, NO_ROW};
use super::pools::DevicePools;
use super::replay::DeviceFacts;
use super::stacks::{classify, FrameClass};
use super::Analysed;
use crate::model::{Device, Snapshot, StackId, NO_STACK};
pub use annotations::metadata_role;
pub use autocast::WeightCopy;
pub use before::{
    states_per_parameter, Deduced, FreedHow, OptimizerEvidence, RunEvidence, SizeEvidence,
};
use frameworks::{Framework, Says};
use phases::{row_phases, RowPhases, RunEnds, StackPhase};
pub use reason::{Basis, Explainer, RoleReason, Unexplained, Witness};
use rules::CompiledRules;
use signals::{frame_signal, FrameSignal, Phase};

/// What an allocation's memory is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Parameters,
    Gradients,
    OptimizerState,
    Activations,
    ForwardTemporaries,
    BackwardTemporaries,
    OptimizerTemporaries,
    Inputs,
    Communication,
    Workspace,
    /// Keys and values kept for generation, and their block tables and token maps.
    KvCache,
    /// A CUDA graph's private pool: its static buffers and intermediates.
    CudaGraph,
    Unknown,
}

impl Role {
    pub const ALL: [Role; 13] = [
        Role::Parameters,
        Role::Gradients,
        Role::OptimizerState,
        Role::Activations,
        Role::ForwardTemporaries,
        Role::BackwardTemporaries,
        Role::OptimizerTemporaries,
        Role::Inputs,
        Role::Communication,
        Role::Workspace,
        Role::KvCache,
        Role::CudaGraph,
        Role::Unknown,
    ];

    /// The key in JSON and `data-category` attributes.
    pub fn key(self) -> &'static str {
        match self {
            Role::Parameters => "parameters",
            Role::Gradients => "gradients",
            Role::OptimizerState => "optimizer_state",
            Role::Activations => "activations",
            Role::ForwardTemporaries => "forward_temporaries",
            Role::BackwardTemporaries => "backward_temporaries",
            Role::OptimizerTemporaries => "optimizer_temporaries",
            Role::Inputs => "inputs",
            Role::Communication => "communication",
            Role::Workspace => "workspace",
            Role::KvCache => "kv_cache",
            Role::CudaGraph => "cuda_graph",
            Role::Unknown => "unknown",
        }
    }
}

/// Where in the model an allocation was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Component {
    Attention,
    Mlp,
    Expert,
    Embedding,
    Norm,
    Loss,
    Communication,
    Other,
}

impl Component {
    pub const ALL: [Component; 8] = [
        Component::Attention,
        Component::Mlp,
        Component::Expert,
        Component::Embedding,
        Component::Norm,
        Component::Loss,
        Component::Communication,
        Component::Other,
    ];

    /// The key in JSON and `data-category` attributes.
    pub fn key(self) -> &'static str {
        match self {
            Component::Attention => "attention",
            Component::Mlp => "mlp",
            Component::Expert => "expert",
            Component::Embedding => "embedding",
            Component::Norm => "norm",
            Component::Loss => "loss",
            Component::Communication => "communication",
            Component::Other => "other",
        }
    }
}

/// A way to group allocations: by what their memory is for, or by where in the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    Role,
    Component,
}

impl Dimension {
    /// How many categories the dimension has.
    pub fn categories(self) -> usize {
        match self {
            Dimension::Role => Role::ALL.len(),
            Dimension::Component => Component::ALL.len(),
        }
    }

    /// The key of category `k` (a [`Role::key`] or [`Component::key`]).
    pub fn key(self, k: usize) -> &'static str {
        match self {
            Dimension::Role => Role::ALL[k].key(),
            Dimension::Component => Component::ALL[k].key(),
        }
    }
}

/// One category of one dimension (role Activations, component Attention…): what a click on
/// a legend or a chart picks, and what filters narrow a view to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Category {
    pub dimension: Dimension,
    /// Position in [`Role::ALL`] or [`Component::ALL`].
    pub index: u32,
}

impl Category {
    /// `role:<key>` or `component:<key>`, as the command line takes it.
    pub fn name(self) -> String {
        let dimension = match self.dimension {
            Dimension::Role => "role",
            Dimension::Component => "component",
        };
        format!("{dimension}:{}", self.dimension.key(self.index as usize))
    }
}

impl std::str::FromStr for Category {
    type Err = String;

    /// Reads `role:<key>` or `component:<key>` ([`Role::key`], [`Component::key`]).
    fn from_str(text: &str) -> Result<Self, String> {
        let (dimension, key) = match text.split_once(':') {
            Some(("role", key)) => (Dimension::Role, key),
            Some(("component", key)) => (Dimension::Component, key),
            _ => {
                return Err(format!(
                    "'{text}' is not a category: say role:<role> or component:<component>"
                ))
            }
        };
        let keys: Vec<&str> = (0..dimension.categories())
            .map(|k| dimension.key(k))
            .collect();
        match keys.iter().position(|&k| k == key) {
            Some(index) => Ok(Category {
                dimension,
                index: index as u32,
            }),
            None => Err(format!("'{key}' is not one of: {}", keys.join(", "))),
        }
    }
}

/// The categories of one device's allocations, indexed like [`DeviceFacts::allocations`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceCategories {
    pub roles: Vec<Role>,
    pub components: Vec<Component>,
    /// The phase of each trace row.
    pub phases: RowPhases,
    /// How the role of each allocation from before the trace (the first
    /// [`crate::analysis::Allocations::first_traced`] allocations) was found.
    pub before: Vec<Deduced>,
    /// Allocations the training loop made that the optimizer trains (their size
    /// pairs with a gradient nothing else does): `(allocation, a gradient of its size)`, by
    /// allocation. Parameters, deduced.
    pub trained: Vec<(u32, u32)>,
    /// Roles annotations give allocations: `(allocation, trace row, role)`, by allocation.
    pub annotated: Vec<(u32, u32, Role)>,
    /// What the run shows of training, the evidence the deductions weighed.
    pub run: RunEvidence,
    /// What each private pool is, and the allocations whose role their pool gave.
    pub pooled: pooled::Pooled,
    /// Autocast's cached copies of weights, made parameters, by allocation.
    pub weight_copies: Vec<WeightCopy>,
    /// What the run is: training, serving…, under which frameworks, with the evidence.
    pub workload: workload::Workload,
    /// DDP's buckets that hold the gradients (`gradient_as_bucket_view=True`), by allocation.
    pub bucket_gradients: Vec<u32>,
    /// cuBLAS's workspaces the trace made (the first matmul on a handle and stream makes one
    /// and keeps it), by allocation.
    pub cublas_made: Vec<u32>,
}

impl DeviceCategories {
    /// The category of allocation `i` in `dimension`, as its position in [`Role::ALL`] or
    /// [`Component::ALL`].
    pub fn category(&self, dimension: Dimension, i: usize) -> usize {
        match dimension {
            Dimension::Role => self.roles[i] as usize,
            Dimension::Component => self.components[i] as usize,
        }
    }

    /// Whether allocation `i` is in `category`.
    pub fn is_in(&self, category: Category, i: usize) -> bool {
        self.category(category.dimension, i) == category.index as usize
    }

    /// Allocation `i` as a weight copy autocast cached, if it is one.
    pub fn weight_copy(&self, i: usize) -> Option<&WeightCopy> {
        self.weight_copies
            .binary_search_by_key(&(i as u32), |c| c.allocation)
            .ok()
            .map(|k| &self.weight_copies[k])
    }

    /// Whether the role of allocation `i` was deduced rather than observed: it was made
    /// before the trace, and neither its own frames, an annotation nor a rule say what it is.
    pub fn is_inferred(&self, i: usize) -> bool {
        self.before.get(i).is_some_and(|d| d.is_inferred())
            || (!self.pooled.given.is_empty() && self.pooled.gave(i))
            || self.weight_copy(i).is_some()
            || self.bucket_gradients.binary_search(&(i as u32)).is_ok()
            || self.cublas_made.binary_search(&(i as u32)).is_ok()
            || (!self.trained.is_empty()
                && self
                    .trained
                    .binary_search_by_key(&(i as u32), |&(at, _)| at)
                    .is_ok())
    }
}

/// The categories of every device, in the order of [`Snapshot::devices`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Categories {
    pub devices: Vec<DeviceCategories>,
}

/// Categorises every allocation of `analysed`, the user's `rules` first.
pub fn categorise(analysed: &Analysed, rules: &CompiledRules) -> Categories {
    let snapshot = &analysed.snapshot;
    let mut frames = FrameSignals::default();
    let devices = snapshot
        .devices
        .iter()
        .zip(&analysed.facts)
        .zip(&analysed.pools)
        .map(|((device, facts), pools)| {
            categorise_device(snapshot, device, facts, pools, rules, &mut frames)
        })
        .collect();
    Categories { devices }
}

/// What a whole stack says: combined from its frames, innermost first.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StackSignal {
    pub phase: Option<Phase>,
    /// The role a frame settles whatever the lifetime: a library's keyword (NCCL, a
    /// workspace, the data loader) or a framework call site.
    pub role: Option<Role>,
    /// What a framework call site says by lifetime, `(kept, freed)`, when no frame inside it
    /// settles the role.
    pub lifetime: Option<(Role, Role)>,
    /// The framework call site that decided `role` or `lifetime`.
    pub site: Option<frameworks::SiteId>,
    /// The frameworks any of its frames is a call site of, as bits of [`Framework`]'s order.
    pub frameworks: u32,
    /// The families of the frameworks any of its frames is a call site of
    /// ([`Framework::family`]), as bits of [`Framework`]'s order.
    pub families: u32,
    /// The first call sites deciding by lifetime on the stack, innermost first: a free under
    /// one is within that function's call.
    pub lifetime_sites: [Option<frameworks::SiteId>; 4],
    /// A frame is a framework's gradient reduction (a site whose kept memory is gradients):
    /// what is freed under it in a backward was a gradient it consumed.
    pub reduces_gradients: bool,
    pub component: Option<Component>,
    pub accumulates_gradient: bool,
    pub user_code: bool,
    pub empty: bool,
    /// Made inside a closure an optimizer's `step` runs: the optimizer's phase does not apply.
    pub in_closure: bool,
    /// Freed by autograd releasing what it saved for the backward.
    pub releases_saved: bool,
    /// Recorded in the allocator's `malloc`: where the memory was made.
    pub allocator_malloc: bool,
    /// Made by autocast casting a tensor for an op (a weight's cached copy, or an input's).
    pub autocast_cast: bool,
    /// Runs autocast's region ending (a free there is of a cached weight copy).
    pub autocast_exit: bool,
    /// What the user's rules say, when they say anything: `(rule, role)`, `(rule, component)`.
    pub ruled: rules::Ruled,
}

/// Each distinct frame read once, shared by the devices of a snapshot.
#[derive(Default)]
pub(crate) struct FrameSignals {
    frames: Vec<Option<(FrameSignal, FrameClass)>>,
}

impl FrameSignals {
    fn get(&mut self, snapshot: &Snapshot, frame: u32) -> (FrameSignal, FrameClass) {
        if self.frames.len() < snapshot.frames.len() {
            self.frames.resize(snapshot.frames.len(), None);
        }
        *self.frames[frame as usize].get_or_insert_with(|| {
            let f = &snapshot.frames[frame as usize];
            let (file, name) = (snapshot.str(f.filename), snapshot.str(f.name));
            (frame_signal(file, name, f.line), classify(file, name))
        })
    }
}

/// The phase of a stack whose frame `inner` names a phase inside one further out naming
/// `outer`: the innermost says what runs (a forward or backward an optimizer's closure runs is
/// a forward or backward; the optimizer's step inside a backward hook is the optimizer's),
/// but a forward recomputed inside a backward (activation checkpointing) is the backward's,
/// and setting up (a `.to()`) inside a phase of training is that phase's.
fn combine_phases(inner: Phase, outer: Phase) -> Phase {
    match (inner, outer) {
        // A serving engine's phase is what the model's forwards inside it serve (a profile
        // run, a graph's capture, a decode step); the innermost serving phase says which.
        (inner, outer) if outer.is_serving() && !inner.is_serving() => outer,
        // What a profile run does is measured and thrown away, graphs it captures included.
        (_, Phase::ProfileRun) => Phase::ProfileRun,
        (Phase::Forward, Phase::Backward) => Phase::Backward,
        (Phase::Setup | Phase::Other, outer) => outer,
        (inner, _) => inner,
    }
}

pub(crate) fn stack_signal(
    snapshot: &Snapshot,
    stack: StackId,
    frames: &mut FrameSignals,
    rules: &CompiledRules,
) -> StackSignal {
    let ids: &[u32] = if stack == NO_STACK {
        &[]
    } else {
        snapshot.stacks.frames(stack)
    };
    let mut out = StackSignal {
        empty: ids.is_empty(),
        ..Default::default()
    };
    let mut closure = false;
    let mut stated = false;
    // An optimizer's frame inside a framework's: the optimizer made it (Adam's state through
    // DTensor's dispatch under FSDP2), the framework only calls.
    let mut optimizer_inside = false;
    let mut settled = false;
    for &id in ids {
        let (signal, class) = frames.get(snapshot, id);
        out.autocast_cast |= signal.autocast_cast;
        out.autocast_exit |= signal.autocast_exit;
        if let Some(site) = signal.site {
            let site_of = frameworks::site(site);
            out.frameworks |= 1 << site_of.framework as u32;
            out.families |= 1 << site_of.framework.family() as u32;
            if matches!(site_of.says, Says::Lifetime { .. }) {
                if let Some(slot) = out.lifetime_sites.iter_mut().find(|s| s.is_none()) {
                    *slot = Some(site);
                }
            }
            out.reduces_gradients |= matches!(
                site_of.says,
                Says::Lifetime {
                    kept: Role::Gradients,
                    ..
                } | Says::Role(Role::Gradients)
            );
            match site_of.says {
                Says::Nothing => continue,
                Says::Role(role) if !settled && !optimizer_inside => {
                    (out.role, out.site, settled) = (Some(role), Some(site), true);
                }
                Says::Lifetime { kept, freed } if !settled && !optimizer_inside => {
                    (out.lifetime, out.site, settled) = (Some((kept, freed)), Some(site), true);
                }
                Says::Role(_) | Says::Lifetime { .. } | Says::Phase(_) => {}
            }
        }
        if let Some(p) = signal.phase {
            if signal.stated {
                out.phase = Some(p);
                stated = true;
            } else if !(stated || closure && p == Phase::OptimizerStep) {
                // A stated phase stays; the optimizer running a closure is not what the
                // closure runs.
                out.phase = Some(out.phase.map_or(p, |inner| combine_phases(inner, p)));
            }
        }
        closure |= signal.closure;
        optimizer_inside |= signal.phase == Some(Phase::OptimizerStep);
        if !settled && signal.role.is_some() {
            (out.role, settled) = (signal.role, true);
        }
        if class.is_code() {
            out.component = out.component.or(signal.component);
        }
        out.accumulates_gradient |= signal.accumulates_gradient;
        out.releases_saved |= signal.releases_saved;
        out.allocator_malloc |= signal.allocator_malloc;
        out.user_code |= class == FrameClass::UserPython;
    }
    out.in_closure = closure;
    if !rules.is_empty() && !ids.is_empty() {
        out.ruled = rules.apply_indexed(&stack_texts(snapshot, stack));
    }
    out
}

/// A stack's frames as rules read them, `file:line:function`, innermost first.
pub(crate) fn stack_texts(snapshot: &Snapshot, stack: StackId) -> Vec<String> {
    snapshot
        .stack_frames(stack)
        .map(|f| {
            format!(
                "{}:{}:{}",
                snapshot.str(f.filename),
                f.line,
                snapshot.str(f.name)
            )
        })
        .collect()
}

/// Stack signals of one device, each stack read once.
pub(crate) struct DeviceSignals<'a> {
    snapshot: &'a Snapshot,
    rules: &'a CompiledRules,
    frames: &'a mut FrameSignals,
    stacks: FxHashMap<StackId, StackSignal>,
}

impl<'a> DeviceSignals<'a> {
    pub(crate) fn new(
        snapshot: &'a Snapshot,
        rules: &'a CompiledRules,
        frames: &'a mut FrameSignals,
    ) -> Self {
        DeviceSignals {
            snapshot,
            rules,
            frames,
            stacks: FxHashMap::default(),
        }
    }

    pub(crate) fn of(&mut self, stack: StackId) -> StackSignal {
        let (snapshot, rules) = (self.snapshot, self.rules);
        let frames = &mut *self.frames;
        *self
            .stacks
            .entry(stack)
            .or_insert_with(|| stack_signal(snapshot, stack, frames, rules))
    }
}

fn categorise_device(
    snapshot: &Snapshot,
    device: &Device,
    facts: &DeviceFacts,
    pools: &DevicePools,
    rules: &CompiledRules,
    frames: &mut FrameSignals,
) -> DeviceCategories {
    let mut signals = DeviceSignals::new(snapshot, rules, frames);
    let phases = row_phases(snapshot, device, &mut |stack| {
        let s = signals.of(stack);
        StackPhase {
            phase: s.phase,
            empty: s.empty,
            in_closure: s.in_closure,
            framework: s.frameworks != 0,
        }
    });
    let annotated = annotations::annotated_roles(snapshot, device, facts);
    let mut roles = Vec::with_capacity(facts.allocations.len());
    let mut components = Vec::with_capacity(facts.allocations.len());
    let mut run_ends = phases.run_ends();
    let mut annotation = annotated.iter().peekable();
    let traced = facts.allocations.first_traced() < facts.allocations.len();
    for (i, a) in facts.allocations.iter().enumerate() {
        let signal = signals.of(a.stack);
        let mut role = match a.origin() {
            Origin::Trace => {
                let free_stack =
                    (a.free_row != NO_ROW).then(|| device.trace.stack[a.free_row as usize]);
                let made = Made {
                    alloc_row: a.alloc_row,
                    free_row: a.free_row,
                    freed_by: &mut || free_stack.map(|s| signals.of(s)),
                };
                trace_role(&signal, &phases, &mut run_ends, made).0
            }
            Origin::LiveBlock => kept_role(&signal, traced).0,
            // Its stack is where it was freed, not where it was made: deduced below.
            Origin::FreedBeforeAlloc => Role::Unknown,
        };
        // Annotations then rules: what a user wrote comes before what is inferred.
        while annotation
            .next_if(|&&(at, _, _)| (at as usize) < i)
            .is_some()
        {}
        if let Some(&&(_, _, said)) = annotation.peek().filter(|&&&(at, _, _)| at as usize == i) {
            role = said;
        }
        if let Some((_, ruled)) = signal.ruled.role {
            role = ruled;
        }
        let component = signal.ruled.component.map_or(
            match a.origin() {
                Origin::FreedBeforeAlloc => Component::Other,
                _ => signal.component.unwrap_or(Component::Other),
            },
            |(_, c)| c,
        );
        roles.push(role);
        components.push(component);
    }
    let (before, trained, run) = before::deduce(
        snapshot,
        device,
        facts,
        &phases,
        &annotated,
        &mut signals,
        &mut roles,
    );
    let stated = |i: usize| {
        annotated
            .binary_search_by_key(&(i as u32), |&(at, _, _)| at)
            .is_ok()
            || signals_ruled(snapshot, facts, rules, i)
    };
    let weight_copies =
        autocast::weight_copies(device, facts, &phases, &mut signals, &stated, &mut roles);
    let bucket_gradients = gradients_in_buckets(facts, &run, &mut signals, &stated, &mut roles);
    let cublas_made = before::cublas_workspaces_made(facts, &phases, &stated, &mut roles);
    let pooled = pooled::roles_from_pools(
        snapshot,
        device,
        facts,
        pools,
        &mut signals,
        &stated,
        &mut roles,
    );
    let workload = workload_of(
        snapshot,
        facts,
        &phases,
        &run,
        !weight_copies.is_empty(),
        &mut signals,
        &roles,
    );
    DeviceCategories {
        roles,
        components,
        phases,
        before,
        trained,
        annotated,
        run,
        pooled,
        weight_copies,
        workload,
        bucket_gradients,
        cublas_made,
    }
}

/// The most of their gradients a run's gradients may hold at once and its DDP buckets still
/// be the gradients: a run with bucket views makes its gradients only for the reducer to copy
/// them in and drop them.
const GRADIENTS_BESIDE_BUCKET_VIEWS: f64 = 0.05;

/// DDP's buckets that are the gradients: with `gradient_as_bucket_view=True` every `.grad` is
/// a view of a bucket, so a run that steps an optimizer while holding (almost) no gradients of
/// its own beside its buckets keeps them there. Makes those buckets gradients.
fn gradients_in_buckets(
    facts: &DeviceFacts,
    run: &RunEvidence,
    signals: &mut DeviceSignals<'_>,
    stated: &dyn Fn(usize) -> bool,
    roles: &mut [Role],
) -> Vec<u32> {
    // Only a trace shows how many gradients a run holds.
    let traced = facts.allocations.first_traced() < facts.allocations.len();
    if !traced || !run.optimizer.as_ref().is_some_and(|o| o.steps) {
        return Vec::new();
    }
    let ddp = 1u32 << Framework::TorchDdp as u32;
    let mut buckets = Vec::new();
    let mut bucket_bytes = 0u64;
    let mut changes: Vec<(u32, i64)> = Vec::new();
    for (i, a) in facts.allocations.iter().enumerate() {
        match roles[i] {
            Role::Communication if a.is_alive_at_end() && !stated(i) => {
                let signal = signals.of(a.stack);
                if signal.site.is_some() && signal.frameworks & ddp != 0 {
                    buckets.push(i as u32);
                    bucket_bytes += a.size;
                }
            }
            Role::Gradients => {
                let (start, end) = a.alive_states();
                changes.push((start, a.size as i64));
                if end != u32::MAX {
                    changes.push((end, -(a.size as i64)));
                }
            }
            _ => {}
        }
    }
    if buckets.is_empty() {
        return Vec::new();
    }
    changes.sort_unstable_by_key(|&(state, delta)| (state, delta > 0));
    let (mut held, mut most) = (0i64, 0i64);
    for (_, delta) in changes {
        held += delta;
        most = most.max(held);
    }
    if most as f64 > GRADIENTS_BESIDE_BUCKET_VIEWS * bucket_bytes as f64 {
        return Vec::new();
    }
    for &i in &buckets {
        roles[i as usize] = Role::Gradients;
    }
    buckets
}

/// What the run is, from the frameworks its stacks pass through, its roles and its phases.
fn workload_of(
    snapshot: &Snapshot,
    facts: &DeviceFacts,
    phases: &RowPhases,
    run: &RunEvidence,
    autocast: bool,
    signals: &mut DeviceSignals<'_>,
    roles: &[Role],
) -> workload::Workload {
    let mut bytes = [0u64; Framework::ALL.len()];
    let mut counts = [0u32; Framework::ALL.len()];
    // Each framework's example: the largest allocation one of its sites decided, else the
    // largest its frames pass through; `(decided, size, stack)`.
    let mut example = [(false, 0u64, NO_STACK); Framework::ALL.len()];
    let mut held = [false; Role::ALL.len()];
    for (i, a) in facts.allocations.iter().enumerate() {
        held[roles[i] as usize] = true;
        let signal = signals.of(a.stack);
        let mask = signal.frameworks;
        if mask == 0 {
            continue;
        }
        let decider = signal.site.map(|s| frameworks::site(s).framework);
        for (k, f) in Framework::ALL.iter().enumerate() {
            if mask & (1 << *f as u32) != 0 {
                bytes[k] += a.size;
                counts[k] += 1;
                let candidate = (decider == Some(*f), a.size, a.stack);
                if (candidate.0, candidate.1) > (example[k].0, example[k].1) {
                    example[k] = candidate;
                }
            }
        }
    }
    let mut frameworks: Vec<workload::FrameworkEvidence> = Framework::ALL
        .iter()
        .enumerate()
        .filter(|&(k, _)| counts[k] > 0)
        .map(|(k, &framework)| workload::FrameworkEvidence {
            framework,
            bytes: bytes[k],
            allocations: counts[k],
            frame: snapshot
                .stack_frames(example[k].2)
                .find(|f| {
                    let (file, name) = (snapshot.str(f.filename), snapshot.str(f.name));
                    frameworks::site_of(file, name, f.line)
                        .is_some_and(|id| frameworks::site(id).framework == framework)
                })
                .map(|f| {
                    let file = snapshot.str(f.filename);
                    let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
                    format!("{base}:{} {}", f.line, snapshot.str(f.name))
                })
                .unwrap_or_default(),
        })
        .collect();
    frameworks.sort_by_key(|f| std::cmp::Reverse(f.bytes));
    let most: Vec<u64> = held.iter().map(|&h| h as u64).collect();
    let serving_phases = phases.phase.iter().any(|p| p.is_serving());
    let forwards = phases.phase.contains(&Phase::Forward);
    workload::Workload {
        kind: workload::kind_of(&most, serving_phases, run.trains, forwards),
        frameworks,
        optimizer: run.optimizer.as_ref().and_then(|o| o.name.clone()),
        autocast,
    }
}

/// Whether a rule of the user's sets allocation `i`'s role.
fn signals_ruled(
    snapshot: &Snapshot,
    facts: &DeviceFacts,
    rules: &CompiledRules,
    i: usize,
) -> bool {
    let stack = facts.allocations.at(i).stack;
    !rules.is_empty()
        && stack != NO_STACK
        && rules
            .apply_indexed(&stack_texts(snapshot, stack))
            .role
            .is_some()
}

/// What settled the role of an allocation from its own stack, phase and lifetime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// A frame settles it whatever the phase (communication, a workspace, data loading).
    Frame,
    /// Made by an `AccumulateGrad` step; `outlives` its run of the backward.
    AccumulateGrad { outlives: bool },
    /// Made in `phase`; `outlives` the run of that phase it was made in.
    Phase { phase: Phase, outlives: bool },
    /// Made in the backward and freed within it by a framework's gradient reduction (FSDP's
    /// post-backward reduce-scatter): a parameter's gradient, consumed.
    Reduced,
    /// No phase and no frame says anything.
    Nothing,
}

/// An allocation made in the trace: its rows, and what its free's stack says (asked only
/// when it decides the role: one lookup less for nearly every allocation).
pub(crate) struct Made<'a> {
    pub alloc_row: u32,
    pub free_row: u32,
    pub freed_by: &'a mut dyn FnMut() -> Option<StackSignal>,
}

/// The role of an allocation made in the trace window, from its stack, its phase and whether
/// it outlives the run of the phase it was made in. What a module's forward makes and code
/// outside any module frees (the training loop dropping what the forward returned, perhaps
/// during the next forward) outlived the forward's code: an output, not a temporary.
pub(crate) fn trace_role(
    signal: &StackSignal,
    phases: &RowPhases,
    run_ends: &mut RunEnds<'_>,
    made: Made<'_>,
) -> (Role, Why) {
    if let Some(role) = signal.role {
        return (role, Why::Frame);
    }
    let at = made.alloc_row as usize;
    let (Some(&phase), Some(run_end)) = (phases.phase.get(at), run_ends.after(at)) else {
        return match signal.lifetime {
            Some((kept, _)) => (kept, Why::Frame),
            None => (Role::Unknown, Why::Nothing),
        };
    };
    // What the unwinding after an out-of-memory frees was alive when the error struck: its
    // role is what the run made of it up to then.
    let free_row = match phases.phase.get(made.free_row as usize) {
        Some(Phase::Unwinding) => NO_ROW,
        _ => made.free_row,
    };
    let mut outlives = free_row == NO_ROW || free_row as usize >= run_end;
    if let Some((kept, freed)) = signal.lifetime {
        // A site that decides by lifetime means its own call: freed while the function is
        // still running (its frame is on the free's stack), else kept past it. A free with no
        // frame at all is read against the phase.
        if free_row != NO_ROW {
            if let (Some(site), Some(free)) = (signal.site, (made.freed_by)()) {
                if !free.empty {
                    // Freed inside the function's own call, or by the framework's own code in
                    // the same run of the phase (what one of its calls holds until the next,
                    // as FSDP's reduce-scatter input): within. By other code, or later: kept.
                    let family = frameworks::site(site).framework.family();
                    let within = free.lifetime_sites.contains(&Some(site))
                        || (!outlives && free.families & (1 << family as u32) != 0);
                    return (if within { freed } else { kept }, Why::Frame);
                }
            }
        }
        return (if outlives { kept } else { freed }, Why::Frame);
    }
    if !outlives && phase == Phase::Forward && signal.phase == Some(Phase::Forward) {
        outlives =
            (made.freed_by)().is_some_and(|f| !f.empty && f.phase.is_none() && !f.releases_saved);
    }
    if !outlives
        && phase == Phase::Backward
        && (made.freed_by)().is_some_and(|f| f.reduces_gradients)
    {
        return (Role::Gradients, Why::Reduced);
    }
    if signal.accumulates_gradient {
        let role = if outlives {
            Role::Gradients
        } else {
            Role::BackwardTemporaries
        };
        return (role, Why::AccumulateGrad { outlives });
    }
    let role = match (phase, outlives) {
        (Phase::Forward, true) => Role::Activations,
        (Phase::Forward, false) => Role::ForwardTemporaries,
        (Phase::Backward, true) => Role::Gradients,
        (Phase::Backward, false) => Role::BackwardTemporaries,
        (Phase::OptimizerStep, true) => Role::OptimizerState,
        (Phase::OptimizerStep | Phase::ZeroGrad, false) => Role::OptimizerTemporaries,
        (Phase::ZeroGrad, true) => Role::Gradients,
        (Phase::Setup, true) => Role::Parameters,
        (phase, outlives) if phase.is_serving() => serving_role(phase, outlives),
        // The training loop's own tensors, made outside any phase of training: its inputs.
        (Phase::Other, _) if signal.user_code => Role::Inputs,
        _ => return (Role::Unknown, Why::Phase { phase, outlives }),
    };
    (role, Why::Phase { phase, outlives })
}

/// The role of an allocation alive since before the trace window, from its block's stack.
/// `traced`: the trace makes allocations (the program's own code then runs a training loop or
/// a script around them, whose tensors are its inputs; without one, nothing says).
pub(crate) fn kept_role(signal: &StackSignal, traced: bool) -> (Role, Why) {
    if let Some(role) = signal.role.or(signal.lifetime.map(|(kept, _)| kept)) {
        return (role, Why::Frame);
    }
    if signal.accumulates_gradient {
        return (Role::Gradients, Why::AccumulateGrad { outlives: true });
    }
    let role = match signal.phase {
        Some(Phase::Setup) => Role::Parameters,
        Some(Phase::OptimizerStep) => Role::OptimizerState,
        Some(Phase::Backward | Phase::ZeroGrad) => Role::Gradients,
        Some(Phase::Forward) => Role::Activations,
        Some(phase) if phase.is_serving() => serving_role(phase, true),
        // The training loop's own tensors, kept: its inputs (as in the trace).
        None | Some(Phase::Other) if signal.user_code && traced => Role::Inputs,
        _ => return (Role::Unknown, Why::Nothing),
    };
    let phase = signal.phase.unwrap_or(Phase::Other);
    (
        role,
        Why::Phase {
            phase,
            outlives: true,
        },
    )
}

/// The role of memory a serving engine made in `phase`, by whether it outlived it: what
/// loading keeps is the weights, what the KV cache's allocation keeps the cache, what graph
/// capture keeps the graphs' memory, what a step keeps (its sampled tokens) the next step's
/// inputs; what a phase frees is its scratch (a step's, its forward temporaries).
fn serving_role(phase: Phase, outlives: bool) -> Role {
    match (phase, outlives) {
        (Phase::LoadWeights, true) => Role::Parameters,
        (Phase::KvCacheAllocation, true) => Role::KvCache,
        (Phase::GraphCapture, true) => Role::CudaGraph,
        (Phase::Prefill | Phase::Decode, true) => Role::Inputs,
        // A buffer the profile run's forward creates and keeps (compiled code's, a library's).
        (Phase::ProfileRun, true) => Role::Workspace,
        (Phase::LoadWeights | Phase::KvCacheAllocation, false) => Role::Workspace,
        _ => Role::ForwardTemporaries,
    }
}

/// Bytes by category of the allocations alive at one state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub state: u32,
    pub count: u32,
    /// Sum of the live allocations' sizes: the allocated curve at `state`.
    pub live_bytes: u64,
    /// Indexed like [`Role::ALL`].
    pub roles: Vec<u64>,
    /// Indexed like [`Component::ALL`].
    pub components: Vec<u64>,
    /// Of each role's bytes, those whose role was deduced rather than observed (memory made
    /// before the trace, [`DeviceCategories::is_inferred`]); indexed like [`Role::ALL`].
    #[serde(default)]
    pub inferred_roles: Vec<u64>,
}

impl Totals {
    pub fn role(&self, role: Role) -> u64 {
        self.roles[role as usize]
    }

    pub fn component(&self, component: Component) -> u64 {
        self.components[component as usize]
    }

    /// The bytes of `role` whose role was deduced (0 when none, or not counted).
    pub fn inferred(&self, role: Role) -> u64 {
        self.inferred_roles.get(role as usize).copied().unwrap_or(0)
    }
}

/// Bytes by role and component alive at `state` (state 0 is before the first row).
pub fn totals_at(facts: &DeviceFacts, categories: &DeviceCategories, state: u32) -> Totals {
    let mut totals = Totals {
        state,
        roles: vec![0; Role::ALL.len()],
        components: vec![0; Component::ALL.len()],
        inferred_roles: vec![0; Role::ALL.len()],
        ..Default::default()
    };
    for (i, a) in facts.allocations.iter().enumerate() {
        if a.is_alive_at(state) {
            totals.count += 1;
            totals.live_bytes += a.size;
            totals.roles[categories.roles[i] as usize] += a.size;
            totals.components[categories.components[i] as usize] += a.size;
            if categories.is_inferred(i) {
                totals.inferred_roles[categories.roles[i] as usize] += a.size;
            }
        }
    }
    totals
}

#[cfg(test)]
mod category_names {
    use super::*;

    #[test]
    fn a_category_reads_back_its_name_and_bad_names_say_what_is_allowed() {
        for dimension in [Dimension::Role, Dimension::Component] {
            for index in 0..dimension.categories() as u32 {
                let category = Category { dimension, index };
                assert_eq!(category.name().parse::<Category>(), Ok(category));
            }
        }
        assert_eq!(
            "role:activations"
                .parse::<Category>()
                .map(|c| c.dimension.key(c.index as usize)),
            Ok("activations")
        );
        let unknown = "role:attention".parse::<Category>().unwrap_err();
        assert!(unknown.contains("activations"), "{unknown}");
        assert!("activations".parse::<Category>().is_err());
    }
}
