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
//! there is one; one known only by its free is Unknown (its stack is where it was freed).
//! The user's [`rules`] come first. A component comes from keywords in the innermost frame
//! that has one ([`signals`]).
//!
//! Pure and computed in one pass per device (each distinct frame and stack read once). Not
//! the place for colours or words.

pub mod phases;
pub mod rules;
pub mod signals;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::replay::{DeviceFacts, Origin, NO_ROW};
use super::stacks::{classify, FrameClass};
use super::Analysed;
use crate::model::{Device, Snapshot, StackId, NO_STACK};
use phases::{row_phases, RowPhases, RunEnds, StackPhase};
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
    Unknown,
}

impl Role {
    pub const ALL: [Role; 11] = [
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
        .map(|(device, facts)| categorise_device(snapshot, device, facts, rules, &mut frames))
        .collect();
    Categories { devices }
}

/// What a whole stack says: combined from its frames, innermost first.
#[derive(Clone, Copy, Debug, Default)]
struct StackSignal {
    phase: Option<Phase>,
    role: Option<Role>,
    component: Option<Component>,
    accumulates_gradient: bool,
    user_code: bool,
    empty: bool,
    /// What the user's rules say, when they say anything.
    ruled: (Option<Role>, Option<Component>),
}

/// Each distinct frame read once, shared by the devices of a snapshot.
#[derive(Default)]
struct FrameSignals {
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
            (frame_signal(file, name), classify(file, name))
        })
    }
}

fn stack_signal(
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
    // A phase named further out still counts, by strength: an optimizer step, then a
    // backward (a forward recomputed inside it is the backward's), then a forward.
    let strength = |p: Phase| match p {
        Phase::OptimizerStep => 5,
        Phase::ZeroGrad => 4,
        Phase::Backward => 3,
        Phase::Forward => 2,
        Phase::Setup => 1,
        Phase::Other => 0,
    };
    for &id in ids {
        let (signal, class) = frames.get(snapshot, id);
        if let Some(p) = signal.phase {
            if out.phase.is_none_or(|q| strength(p) > strength(q)) {
                out.phase = Some(p);
            }
        }
        out.role = out.role.or(signal.role);
        if class.is_code() {
            out.component = out.component.or(signal.component);
        }
        out.accumulates_gradient |= signal.accumulates_gradient;
        out.user_code |= class == FrameClass::UserPython;
    }
    if !rules.is_empty() && !ids.is_empty() {
        let texts: Vec<String> = snapshot
            .stack_frames(stack)
            .map(|f| {
                format!(
                    "{}:{}:{}",
                    snapshot.str(f.filename),
                    f.line,
                    snapshot.str(f.name)
                )
            })
            .collect();
        out.ruled = rules.apply(&texts);
    }
    out
}

fn categorise_device(
    snapshot: &Snapshot,
    device: &Device,
    facts: &DeviceFacts,
    rules: &CompiledRules,
    frames: &mut FrameSignals,
) -> DeviceCategories {
    let mut stacks: FxHashMap<StackId, StackSignal> = FxHashMap::default();
    let mut signal_of = |stack: StackId| {
        *stacks
            .entry(stack)
            .or_insert_with(|| stack_signal(snapshot, stack, frames, rules))
    };
    let phases = row_phases(snapshot, device, &mut |stack| {
        let s = signal_of(stack);
        StackPhase {
            phase: s.phase,
            empty: s.empty,
        }
    });
    let mut roles = Vec::with_capacity(facts.allocations.len());
    let mut components = Vec::with_capacity(facts.allocations.len());
    let mut run_ends = phases.run_ends();
    for a in &facts.allocations {
        let signal = signal_of(a.stack);
        let role = signal.ruled.0.unwrap_or_else(|| match a.origin() {
            Origin::Trace => trace_role(&signal, &phases, &mut run_ends, a.alloc_row, a.free_row),
            Origin::LiveBlock => kept_role(&signal),
            // Its stack is where it was freed, not where it was made.
            Origin::FreedBeforeAlloc => Role::Unknown,
        });
        let component = signal.ruled.1.unwrap_or(match a.origin() {
            Origin::FreedBeforeAlloc => Component::Other,
            _ => signal.component.unwrap_or(Component::Other),
        });
        roles.push(role);
        components.push(component);
    }
    DeviceCategories {
        roles,
        components,
        phases,
    }
}

/// The role of an allocation made in the trace window, from its stack, its phase and whether
/// it outlives the run of the phase it was made in.
fn trace_role(
    signal: &StackSignal,
    phases: &RowPhases,
    run_ends: &mut RunEnds<'_>,
    alloc_row: u32,
    free_row: u32,
) -> Role {
    if let Some(role) = signal.role {
        return role;
    }
    let at = alloc_row as usize;
    let (Some(&phase), Some(run_end)) = (phases.phase.get(at), run_ends.after(at)) else {
        return Role::Unknown;
    };
    let outlives = free_row == NO_ROW || free_row as usize >= run_end;
    if signal.accumulates_gradient {
        return if outlives {
            Role::Gradients
        } else {
            Role::BackwardTemporaries
        };
    }
    match (phase, outlives) {
        (Phase::Forward, true) => Role::Activations,
        (Phase::Forward, false) => Role::ForwardTemporaries,
        (Phase::Backward, true) => Role::Gradients,
        (Phase::Backward, false) => Role::BackwardTemporaries,
        (Phase::OptimizerStep, true) => Role::OptimizerState,
        (Phase::OptimizerStep | Phase::ZeroGrad, false) => Role::OptimizerTemporaries,
        (Phase::ZeroGrad, true) => Role::Gradients,
        (Phase::Setup, true) => Role::Parameters,
        // The training loop's own tensors that live into the step: its inputs.
        (Phase::Other, true) if signal.user_code => Role::Inputs,
        _ => Role::Unknown,
    }
}

/// The role of an allocation alive since before the trace window, from its block's stack.
fn kept_role(signal: &StackSignal) -> Role {
    if let Some(role) = signal.role {
        return role;
    }
    if signal.accumulates_gradient {
        return Role::Gradients;
    }
    match signal.phase {
        Some(Phase::Setup) => Role::Parameters,
        Some(Phase::OptimizerStep) => Role::OptimizerState,
        Some(Phase::Backward | Phase::ZeroGrad) => Role::Gradients,
        Some(Phase::Forward) => Role::Activations,
        _ => Role::Unknown,
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
}

impl Totals {
    pub fn role(&self, role: Role) -> u64 {
        self.roles[role as usize]
    }

    pub fn component(&self, component: Component) -> u64 {
        self.components[component as usize]
    }
}

/// Bytes by role and component alive at `state` (state 0 is before the first row).
pub fn totals_at(facts: &DeviceFacts, categories: &DeviceCategories, state: u32) -> Totals {
    let mut totals = Totals {
        state,
        roles: vec![0; Role::ALL.len()],
        components: vec![0; Component::ALL.len()],
        ..Default::default()
    };
    for (i, a) in facts.allocations.iter().enumerate() {
        if a.is_alive_at(state) {
            totals.count += 1;
            totals.live_bytes += a.size;
            totals.roles[categories.roles[i] as usize] += a.size;
            totals.components[categories.components[i] as usize] += a.size;
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
