//! Why an allocation has its role, in facts a user can check: the rule or annotation that
//! says so, the frame that settles it, the phase it was made in and whether it outlived it,
//! the gradient a block from before the trace pairs with, the code that freed it. Worked out
//! for one allocation when asked (a pinned allocation, a table's row), from the same
//! functions that categorised it, so the reason and the role cannot disagree; none is stored
//! for the allocations made in the trace (`docs/decisions/0001-roles-of-memory-from-before-the-trace.md`).
//!
//! Typed facts only: the words are [`crate::format::breakdown::role_reason`]'s.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::before::{freed_role, Deduced, FreedHow};
use super::frameworks::{self, Framework, Says};
use super::phases::RowPhases;
use super::pooled::{PoolEvidence, PoolKind};
use super::rules::Rules;
use super::signals::{frame_signal, Phase};
use super::{
    kept_role, stack_signal, trace_role, DeviceCategories, FrameSignals, Made, Role, StackSignal,
    Why,
};
use crate::analysis::scopes::scope_ranges;
use crate::analysis::stacks::stack_text;
use crate::analysis::{Analysed, Origin, NO_ROW};
use crate::model::Row;
use crate::model::{StackId, NO_STACK, NO_TIME};

/// An allocation's role and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoleReason {
    pub role: Role,
    /// Deduced rather than observed: made before the trace, and nothing it carries says.
    pub inferred: bool,
    pub basis: Basis,
}

/// What the role rests on. Events are trace rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// The user's rule at `index` (from 0).
    Rule {
        index: u32,
        name: Option<String>,
        pattern: String,
    },
    /// An annotation (`_annotate_tensor`, or the metadata set when it was made) at `event`.
    Annotation { event: u32, text: String },
    /// A frame of the stack settles it whatever the phase (communication, a library's
    /// workspace, data loading).
    Frame { frame: String },
    /// A framework's call site in the stack settles it (`frame`, at the site `why` describes,
    /// read from `source`); for a site that decides by lifetime, whether the memory outlived
    /// the phase it was made in.
    Site {
        frame: String,
        framework: Framework,
        why: String,
        source: String,
        outlives: Option<bool>,
    },
    /// Made by an `AccumulateGrad` step at `event`; whether it outlived its backward.
    AccumulateGrad { event: u32, outlives: bool },
    /// Made at `event` by autocast casting a weight of `parameter_size` bytes to 16 bits, and
    /// cached: a copy of a weight (freed by the autocast region's end, `freed_at_exit`, or by
    /// the backward that used it).
    WeightCopy {
        event: u32,
        parameter_size: u64,
        freed_at_exit: bool,
    },
    /// In private pool `pool`, which is `kind` (told by `evidence`): a CUDA graph's pool's
    /// blocks are the graph's; in a memory pool, the role its other blocks' frames agree on.
    Pool {
        pool: (i64, i64),
        kind: PoolKind,
        evidence: PoolEvidence,
    },
    /// One of DDP's `buckets` gradient buckets, in a run that steps its optimizer while
    /// holding no gradients of its own: with `gradient_as_bucket_view=True` each `.grad` is a
    /// view of a bucket.
    BucketGradients { buckets: u32 },
    /// Made at `event` in the backward and freed at `freed` by a framework's gradient
    /// reduction (`frame`), which consumes gradients: a parameter's gradient.
    ReducedGradient {
        event: u32,
        freed: u32,
        frame: String,
    },
    /// Made at `event` in `phase` (inside the profiler scope `scope`, when one is recorded);
    /// whether it outlived that run of the phase (freed at `freed`, if it was).
    Phase {
        event: u32,
        phase: Phase,
        scope: Option<String>,
        outlives: bool,
        freed: Option<u32>,
        /// The out-of-memory error at this event struck while it was alive, and the
        /// unwinding after it freed it (at `freed`): its role is what the run made of it
        /// up to the error.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unwound_after: Option<u32>,
    },
    /// Made before the trace; its block's own frames (or those its free carries, recorded
    /// where it was made) name `phase` at `frame`.
    OwnFrames {
        phase: Option<Phase>,
        frame: Option<String>,
    },
    /// Alive throughout; one of the `parameters` parameters of its `size`, counted by the
    /// gradients of that size the rest of the memory holds (`gradients`, the most alive at
    /// once), or by the optimizer's states (`states`); `witness` is one of those.
    Parameter {
        size: u64,
        parameters: u32,
        gradients: u32,
        states: u32,
        witness: Witness,
    },
    /// Alive throughout; a gradient made before the trace: the optimizer steps all
    /// `parameters` parameters of its `size`, and the trace made only `made` gradients of it.
    GradientBefore {
        size: u64,
        parameters: u32,
        made: u32,
        witness: Witness,
    },
    /// Alive throughout; of the `size` of `parameters` parameters, beyond them and their
    /// gradients: optimizer state (`optimizer` keeps `states_per_parameter` per parameter,
    /// when its name says).
    OptimizerStateBeyond {
        size: u64,
        parameters: u32,
        witness: Witness,
        optimizer: Option<String>,
        states_per_parameter: Option<u32>,
    },
    /// Made by the training loop (at `event`; `None`: before the trace), of the `size` of a
    /// gradient (`gradient`) that no parameter from before the trace pairs with: what the
    /// optimizer trains.
    Trained {
        event: Option<u32>,
        size: u64,
        gradient: Witness,
    },
    /// Alive throughout a run that makes no gradient.
    ModelState,
    /// Alive throughout a window with no step of the run's `optimizer`, whose blocks of this
    /// `size` come in groups of `group` (a parameter and its states): the group's parameter,
    /// or one of its states.
    InStateGroup {
        size: u64,
        parameter: bool,
        group: u32,
        optimizer: Option<String>,
    },
    /// Alive throughout a run of training in which nothing of its `size` pairs with it.
    Unpaired { size: u64 },
    /// Freed at `event` where the trace frees its own allocation `like`.
    FreedLike { event: u32, like: Witness },
    /// Freed at `event`, `how`.
    FreedBy { event: u32, how: FreedHow },
    /// Alive throughout, of the size of what the trace makes and keeps to the end as its role
    /// (`like`).
    KeptLike { size: u64, like: Witness },
    /// Alive throughout, nothing paired with it, of the `size` of cuBLAS's default workspace.
    CublasWorkspace { size: u64 },
    /// Made at `event`, never freed, of the `size` of cuBLAS's default workspace, one of a
    /// few: the workspace a handle's first matmul makes and keeps.
    CublasWorkspaceMade { event: u32, size: u64 },
    /// Freed at `event`; the trace's allocation `like`, of its size and alive at the end, is
    /// its successor.
    SucceededBy { event: u32, like: Witness },
    /// Nothing says.
    Unknown { why: Unexplained },
}

/// An allocation a deduction rests on: its role, and the event that shows it (its making,
/// or for one made before the trace, its free; none for a block alive throughout).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Witness {
    pub role: Role,
    pub event: Option<Row>,
    /// `event` is its making (else its free).
    pub made: bool,
}

/// Why nothing says what an allocation is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unexplained {
    /// Made before the trace; the file records no stacks, and its trace makes nothing.
    NoTrace,
    /// Made before the trace; the file records no stacks.
    NoStacks,
    /// Made at `event` outside any phase of training, by code that says nothing of it.
    NoPhase { event: u32 },
    /// Made before the trace and freed at `event` by code that says nothing of it.
    FreedSilently { event: u32 },
}

/// Explains the roles of one device's allocations as categorised under `rules`, each
/// distinct frame and stack read once however many are asked about.
pub struct Explainer<'a> {
    analysed: &'a Analysed,
    position: usize,
    categories: &'a DeviceCategories,
    rules: &'a Rules,
    compiled: super::CompiledRules,
    frames: FrameSignals,
    stacks: FxHashMap<StackId, StackSignal>,
}

impl<'a> Explainer<'a> {
    pub fn new(
        analysed: &'a Analysed,
        position: usize,
        categories: &'a DeviceCategories,
        rules: &'a Rules,
    ) -> Self {
        Explainer {
            analysed,
            position,
            categories,
            rules,
            // They compiled when the categories were made.
            compiled: rules
                .compile()
                .unwrap_or_else(|_| super::CompiledRules::none()),
            frames: FrameSignals::default(),
            stacks: FxHashMap::default(),
        }
    }

    fn signal(&mut self, stack: StackId) -> StackSignal {
        let snapshot = &self.analysed.snapshot;
        let (frames, compiled) = (&mut self.frames, &self.compiled);
        *self
            .stacks
            .entry(stack)
            .or_insert_with(|| stack_signal(snapshot, stack, frames, compiled))
    }

    /// The reason for the role of allocation `i`.
    pub fn explain(&mut self, i: usize) -> RoleReason {
        let (analysed, position, categories, rules) =
            (self.analysed, self.position, self.categories, self.rules);
        let snapshot = &analysed.snapshot;
        let device = &snapshot.devices[position];
        let facts = &analysed.facts[position];
        let a = facts.allocations.at(i);
        let role = categories.roles[i];
        let signal = self.signal(a.stack);
        let inferred = categories.is_inferred(i);
        let reason = |basis| RoleReason {
            role,
            inferred,
            basis,
        };
        if let Some((index, _)) = signal.ruled.role {
            let rule = &rules.rules[index as usize];
            return reason(Basis::Rule {
                index,
                name: rule.name.clone(),
                pattern: rule.pattern.clone(),
            });
        }
        if let Ok(k) = categories
            .annotated
            .binary_search_by_key(&(i as u32), |&(at, _, _)| at)
        {
            let row = categories.annotated[k].1 as usize;
            let text = device
                .trace
                .user_metadata(row)
                .map(|t| snapshot.str(t).to_string())
                .unwrap_or_default();
            return reason(Basis::Annotation {
                event: row as u32,
                text,
            });
        }
        let settling_frame = || {
            snapshot.stack_frames(a.stack).find_map(|f| {
                let (file, name) = (snapshot.str(f.filename), snapshot.str(f.name));
                frame_signal(file, name, f.line)
                    .role
                    .map(|_| stack_frame_name(file, f.line, name))
            })
        };
        // The frame of the framework call site that settled it, and the site.
        let site_basis = |signal: &StackSignal, outlives: Option<bool>| {
            let id = signal.site?;
            let frame = snapshot.stack_frames(a.stack).find_map(|f| {
                let (file, name) = (snapshot.str(f.filename), snapshot.str(f.name));
                (frameworks::site_of(file, name, f.line) == Some(id))
                    .then(|| stack_frame_name(file, f.line, name))
            })?;
            let site = frameworks::site(id);
            let outlives = match site.says {
                Says::Lifetime { .. } => outlives,
                _ => None,
            };
            Some(Basis::Site {
                frame,
                framework: site.framework,
                why: site.why.to_string(),
                source: site.source.to_string(),
                outlives,
            })
        };
        let own_frames = |signal: &super::StackSignal| {
            let text = stack_text(snapshot, a.stack, false);
            let traced = facts.allocations.first_traced() < facts.allocations.len();
            let (_, why) = kept_role(signal, traced);
            if why == Why::Frame {
                return site_basis(signal, Some(true)).unwrap_or_else(|| Basis::Frame {
                    frame: settling_frame().unwrap_or_default(),
                });
            }
            Basis::OwnFrames {
                phase: signal.phase,
                frame: text.top_frame,
            }
        };
        let witness = |j: u32| {
            let w = facts.allocations.at(j as usize);
            let made = w.alloc_row != NO_ROW;
            let event = if made { w.alloc_row } else { w.free_row };
            Witness {
                role: categories.roles[j as usize],
                event: (event != NO_ROW).then_some(Row::new(event)),
                made,
            }
        };
        if categories.cublas_made.binary_search(&(i as u32)).is_ok() {
            return reason(Basis::CublasWorkspaceMade {
                event: a.alloc_row,
                size: a.size,
            });
        }
        if categories
            .bucket_gradients
            .binary_search(&(i as u32))
            .is_ok()
        {
            return reason(Basis::BucketGradients {
                buckets: categories.bucket_gradients.len() as u32,
            });
        }
        if let Some(copy) = categories.weight_copy(i) {
            return reason(Basis::WeightCopy {
                event: a.alloc_row,
                parameter_size: copy.parameter_size,
                freed_at_exit: copy.freed_at_exit,
            });
        }
        if categories.pooled.gave(i) {
            if let Some(pool) = categories.pooled.pool_of(i) {
                return reason(Basis::Pool {
                    pool: pool.id,
                    kind: pool.kind,
                    evidence: pool.evidence,
                });
            }
        }
        let trained = categories
            .trained
            .binary_search_by_key(&(i as u32), |&(at, _)| at)
            .ok()
            .map(|k| categories.trained[k].1);
        if let Some(gradient) = trained {
            return reason(Basis::Trained {
                event: (a.alloc_row != NO_ROW).then_some(a.alloc_row),
                size: a.size,
                gradient: witness(gradient),
            });
        }
        let basis = match a.origin() {
            Origin::Trace => {
                let mut run_ends = categories.phases.run_ends();
                let free_stack =
                    (a.free_row != NO_ROW).then(|| device.trace.stack[a.free_row as usize]);
                let made = Made {
                    alloc_row: a.alloc_row,
                    free_row: a.free_row,
                    freed_by: &mut || free_stack.map(|s| self.signal(s)),
                };
                let (made_role, why) = trace_role(&signal, &categories.phases, &mut run_ends, made);
                let event = a.alloc_row;
                match why {
                    Why::Frame => {
                        let outlives = signal.lifetime.map(|(kept, _)| made_role == kept);
                        site_basis(&signal, outlives).unwrap_or_else(|| Basis::Frame {
                            frame: settling_frame().unwrap_or_default(),
                        })
                    }
                    Why::AccumulateGrad { outlives } => Basis::AccumulateGrad { event, outlives },
                    Why::Reduced => Basis::ReducedGradient {
                        event,
                        freed: a.free_row,
                        frame: free_stack
                            .and_then(|s| reduction_frame(snapshot, s))
                            .unwrap_or_default(),
                    },
                    Why::Phase { phase, outlives } if role != Role::Unknown => Basis::Phase {
                        event,
                        phase,
                        scope: scope_at(analysed, position, event as usize),
                        outlives,
                        freed: (a.free_row != NO_ROW).then_some(a.free_row),
                        unwound_after: unwound_after(&device.trace, &categories.phases, a.free_row),
                    },
                    _ => Basis::Unknown {
                        why: Unexplained::NoPhase { event },
                    },
                }
            }
            Origin::LiveBlock | Origin::FreedBeforeAlloc => {
                let deduced = categories
                    .before
                    .get(i)
                    .copied()
                    .unwrap_or(Deduced::Unknown);
                let event = a.free_row;
                let size = categories.run.size(a.size);
                match deduced {
                    Deduced::Observed => own_frames(&signal),
                    Deduced::Parameter { evidence } => Basis::Parameter {
                        size: a.size,
                        parameters: size.parameters,
                        gradients: size.gradients,
                        states: size.states,
                        witness: witness(evidence),
                    },
                    Deduced::Gradient { evidence } => Basis::GradientBefore {
                        size: a.size,
                        parameters: size.parameters,
                        made: size.gradients,
                        witness: witness(evidence),
                    },
                    Deduced::OptimizerState { evidence } => {
                        let optimizer = categories.run.optimizer.clone().unwrap_or_default();
                        Basis::OptimizerStateBeyond {
                            size: a.size,
                            parameters: size.parameters,
                            witness: witness(evidence),
                            optimizer: optimizer.name,
                            states_per_parameter: optimizer.states_per_parameter,
                        }
                    }
                    Deduced::ModelState => Basis::ModelState,
                    Deduced::InStateGroup { parameter, group } => Basis::InStateGroup {
                        size: a.size,
                        parameter,
                        group,
                        optimizer: categories.run.optimizer.clone().and_then(|o| o.name),
                    },
                    Deduced::Unpaired => Basis::Unpaired { size: a.size },
                    Deduced::FreedLike { like } => Basis::FreedLike {
                        event,
                        like: witness(like),
                    },
                    Deduced::KeptLike { like } => Basis::KeptLike {
                        size: a.size,
                        like: witness(like),
                    },
                    Deduced::CublasWorkspace => Basis::CublasWorkspace { size: a.size },
                    Deduced::SucceededBy { like } => Basis::SucceededBy {
                        event,
                        like: witness(like),
                    },
                    Deduced::FreedBy => {
                        let phase = categories.phases.phase[event as usize];
                        let in_first_run = (event as usize) < categories.phases.first_run_end();
                        match freed_role(&signal, phase, in_first_run) {
                            Some((_, how)) => Basis::FreedBy { event, how },
                            None => Basis::Unknown {
                                why: Unexplained::FreedSilently { event },
                            },
                        }
                    }
                    Deduced::Unknown if a.origin() == Origin::LiveBlock && a.stack != NO_STACK => {
                        own_frames(&signal)
                    }
                    Deduced::Unknown => Basis::Unknown {
                        why: if a.origin() == Origin::FreedBeforeAlloc {
                            Unexplained::FreedSilently { event }
                        } else if facts.allocations.first_traced() == facts.allocations.len() {
                            Unexplained::NoTrace
                        } else {
                            Unexplained::NoStacks
                        },
                    },
                }
            }
        };
        reason(basis)
    }
}

/// The frame of stack `stack` that is a framework's gradient reduction.
fn reduction_frame(snapshot: &crate::model::Snapshot, stack: StackId) -> Option<String> {
    snapshot.stack_frames(stack).find_map(|f| {
        let (file, name) = (snapshot.str(f.filename), snapshot.str(f.name));
        let site = frameworks::site(frameworks::site_of(file, name, f.line)?);
        matches!(
            site.says,
            Says::Lifetime {
                kept: Role::Gradients,
                ..
            } | Says::Role(Role::Gradients)
        )
        .then(|| stack_frame_name(file, f.line, name))
    })
}

/// `file.py:12 name`, the file without its folders.
fn stack_frame_name(file: &str, line: i64, name: &str) -> String {
    let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
    if line > 0 {
        format!("{base}:{line} {name}")
    } else if base.is_empty() || base == "??" {
        name.to_string()
    } else {
        format!("{base} {name}")
    }
}

/// The innermost profiler scope recorded around trace row `row`, when the trace has times.
fn scope_at(analysed: &Analysed, position: usize, row: usize) -> Option<String> {
    let snapshot = &analysed.snapshot;
    let device = &snapshot.devices[position];
    let time = *device.trace.time_us.get(row)?;
    if time == NO_TIME {
        return None;
    }
    scope_ranges(snapshot, device.id)
        .into_iter()
        .filter(|s| s.end_us.is_some() && s.holds(time))
        .max_by_key(|s| s.depth)
        .map(|s| snapshot.str(s.name).to_string())
}

/// The out-of-memory error whose unwinding freed an allocation at `free_row`, if it did.
fn unwound_after(trace: &crate::model::Trace, phases: &RowPhases, free_row: u32) -> Option<u32> {
    if phases.phase.get(free_row as usize) != Some(&Phase::Unwinding) {
        return None;
    }
    // An unwinding holds frees only, from the error on: its start is a short walk back.
    trace.action[..free_row as usize]
        .iter()
        .rposition(|&action| action == crate::model::Action::Oom)
        .map(|row| row as u32)
}
