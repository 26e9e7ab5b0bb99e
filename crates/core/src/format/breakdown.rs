//! The breakdown in words: why an allocation has its role, which side of the peak
//! estimate's max sets it, so the page, the command line and the report say them alike. The
//! categories' own names are [`crate::analysis::categories::labels`]'s (re-exported here).
//!
//! Labels only: the bytes by category, the estimate and its side come from
//! [`crate::breakdown`].

use super::{bytes, count};
pub use crate::analysis::categories::labels::{component_label, phase_label, role_label};
use crate::analysis::categories::pooled::{PoolEvidence, PoolKind};
use crate::analysis::categories::signals::Phase;
use crate::analysis::categories::{Basis, FreedHow, Role, RoleReason, Unexplained, Witness};
use crate::breakdown::estimate::PeakSide;
use crate::breakdown::physics::{Physics, PhysicsKind};

/// The side of `max(gradients + optimizer temporaries, activations)` that sets the estimate.
pub fn side_label(side: PeakSide) -> &'static str {
    match side {
        PeakSide::GradientsAndStep => "gradients + optimizer temporaries (the optimizer step)",
        PeakSide::Activations => "activations (the end of the forward)",
    }
}

/// What a phase of training is called inside a sentence: `the forward`, `zero_grad`.
fn phase_in_sentence(phase: Phase) -> &'static str {
    match phase {
        Phase::Other => "no phase of training",
        Phase::Setup => "setup",
        Phase::Forward => "the forward",
        Phase::Backward => "the backward",
        Phase::OptimizerStep => "the optimizer step",
        Phase::ZeroGrad => "zero_grad",
        Phase::LoadWeights => "loading the weights",
        Phase::ProfileRun => "the profile run",
        Phase::KvCacheAllocation => "the KV cache's allocation",
        Phase::GraphCapture => "CUDA graph capture",
        Phase::Prefill => "a prefill step",
        Phase::Decode => "a decode step",
        Phase::Unwinding => "the unwinding after an out-of-memory",
    }
}

/// Where a witness of a deduction shows: `one made at event 5,272`.
fn witnessed(witness: &Witness) -> String {
    match witness.event {
        Some(event) => {
            let what = if witness.made { "made" } else { "freed" };
            format!("one {what} at event {}", count(u64::from(event.get())))
        }
        None => "one alive before recording, as its own frames show".to_string(),
    }
}

/// Why an allocation has its role, in words a user can check against the trace.
pub fn role_reason(reason: &RoleReason) -> String {
    const BEFORE: &str = "alive since before recording and never freed";
    let event = |e: u32| format!("event {}", count(e as u64));
    match &reason.basis {
        Basis::Rule {
            index,
            name,
            pattern,
        } => match name {
            Some(name) => format!("rule {} ({name}): `{pattern}`", index + 1),
            None => format!("rule {}: `{pattern}`", index + 1),
        },
        Basis::Annotation { event: at, text } => {
            format!("annotated \u{201c}{text}\u{201d} at {}", event(*at))
        }
        Basis::Frame { frame } => format!("its stack runs {frame}"),
        Basis::BucketGradients { buckets } => format!(
            "one of DDP's {} gradient buckets, which hold the gradients: the run steps its optimizer with no gradients of its own (gradient_as_bucket_view=True makes each .grad a view of a bucket)",
            count(*buckets as u64)
        ),
        Basis::ReducedGradient {
            event: at,
            freed,
            frame,
        } => format!(
            "made in the backward at {} and consumed at {} by {frame}, a framework's gradient reduction: a parameter's gradient",
            event(*at),
            event(*freed)
        ),
        Basis::WeightCopy {
            event: at,
            parameter_size,
            freed_at_exit,
        } => {
            let freed = if *freed_at_exit {
                "freed when the autocast region ended"
            } else {
                "kept for the backward"
            };
            format!(
                "autocast's cached 16-bit copy of a {} weight, made at {} (half its size; {freed})",
                bytes(*parameter_size),
                event(*at)
            )
        }
        Basis::Pool {
            pool,
            kind,
            evidence,
        } => {
            let what = match kind {
                PoolKind::Graph => "a CUDA graph's private pool: its blocks are the graph's static buffers and intermediates",
                PoolKind::Memory => "a memory pool whose other blocks' frames say this role",
                PoolKind::Unknown => "a private pool",
            };
            let told = match evidence {
                PoolEvidence::Frames => "its blocks' frames",
                PoolEvidence::CaptureId => "its id, which a graph captured without a pool gets",
                PoolEvidence::Streams => "the streams its blocks were made on",
                PoolEvidence::Nothing => "nothing",
            };
            format!("in pool ({}, {}), {what} (told by {told})", pool.0, pool.1)
        }
        Basis::Site {
            frame,
            framework,
            why,
            outlives,
            ..
        } => {
            let life = match outlives {
                Some(true) => ", kept past the phase it was made in",
                Some(false) => ", freed within the phase it was made in",
                None => "",
            };
            format!("made under {frame} ({}: {why}){life}", framework.name())
        }
        Basis::AccumulateGrad {
            event: at,
            outlives,
        } => {
            let kept = if *outlives {
                "kept past the backward"
            } else {
                "freed within the backward"
            };
            format!("made by AccumulateGrad at {}, {kept}", event(*at))
        }
        Basis::Phase {
            event: at,
            phase: Phase::Other,
            freed,
            ..
        } => {
            let life = match freed {
                Some(f) => format!(", freed at {}", event(*f)),
                None => ", alive at the end".to_string(),
            };
            format!(
                "made by the program's own code at {}, outside any phase of training{life}",
                event(*at)
            )
        }
        Basis::Phase {
            event: at,
            phase,
            scope,
            outlives,
            freed,
            unwound_after,
        } => {
            let scope = scope
                .as_ref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default();
            let life = match (unwound_after, freed) {
                (Some(oom), Some(f)) => format!(
                    ", alive at the out-of-memory at {} (the error's unwinding freed it at {})",
                    event(*oom),
                    event(*f)
                ),
                _ => match (outlives, freed) {
                (true, Some(f)) => format!(", kept past it until {}", event(*f)),
                (true, None) => ", kept past it to the end".to_string(),
                    (false, Some(f)) => format!(", freed within it at {}", event(*f)),
                    (false, None) => String::new(),
                },
            };
            format!(
                "made in {}{scope} at {}{life}",
                phase_in_sentence(*phase),
                event(*at)
            )
        }
        Basis::OwnFrames { phase, frame } => {
            let frame = frame
                .as_ref()
                .map(|f| format!(" by {f}"))
                .unwrap_or_default();
            let nothing = if reason.role == Role::Unknown {
                ": nothing says what it is for"
            } else {
                ""
            };
            match phase {
                Some(p) => format!(
                    "made{frame} in {}, as the frames recorded with it show{nothing}",
                    phase_in_sentence(*p)
                ),
                None => format!(
                    "made{frame} outside any phase of training, as the frames recorded with it show{nothing}"
                ),
            }
        }
        Basis::Parameter {
            size,
            parameters,
            gradients,
            states,
            witness,
        } => {
            let counted = if *gradients >= *parameters && *gradients > 0 {
                format!(
                    "the run holds {} gradients of that size at once, one per parameter",
                    count(*gradients as u64)
                )
            } else {
                format!(
                    "the optimizer keeps {} states of that size",
                    count(*states as u64)
                )
            };
            format!(
                "{BEFORE}; one of the {} parameters of its size ({}): {counted} ({})",
                count(*parameters as u64),
                bytes(*size),
                witnessed(witness)
            )
        }
        Basis::GradientBefore {
            size,
            parameters,
            made,
            witness,
        } => format!(
            "{BEFORE}; the optimizer steps {} parameters of its size ({}) ({}), each with its gradient, and the trace makes {} gradients of that size: the others were made before recording",
            count(*parameters as u64),
            bytes(*size),
            witnessed(witness),
            count(*made as u64)
        ),
        Basis::OptimizerStateBeyond {
            size,
            parameters,
            witness,
            optimizer,
            states_per_parameter,
        } => {
            let keeps = match (optimizer, states_per_parameter) {
                (Some(o), Some(k)) => format!("{o} keeps {k} states per parameter"),
                (Some(o), None) => format!("{o} keeps states per parameter"),
                (None, _) => "the optimizer keeps states per parameter".to_string(),
            };
            format!(
                "{BEFORE}; beyond the {} parameters of its size ({}) and their gradients ({}): {keeps}",
                count(*parameters as u64),
                bytes(*size),
                witnessed(witness)
            )
        }
        Basis::Trained {
            event: at,
            size,
            gradient,
        } => format!(
            "made by the training loop {}; the run makes a gradient of its size ({}) that nothing else pairs with ({}): the optimizer trains it",
            at.map_or("before recording".to_string(), |at| format!("at {}", event(at))),
            bytes(*size),
            witnessed(gradient)
        ),
        Basis::InStateGroup {
            size,
            parameter,
            group,
            optimizer,
        } => {
            let optimizer = optimizer.as_deref().unwrap_or("its optimizer");
            let what = if *parameter {
                "the first of each group: a parameter"
            } else {
                "one of the states"
            };
            format!(
                "{BEFORE}; the window has no step of {optimizer}, and its blocks of {} come in groups of {} (a parameter and the {} states {optimizer} keeps of it): {what}",
                bytes(*size),
                count(*group as u64),
                count(*group as u64 - 1)
            )
        }
        Basis::ModelState => {
            format!("{BEFORE}; no gradients in this run: the model's weights and buffers")
        }
        Basis::Unpaired { size } => format!(
            "{BEFORE}; nothing of its size ({}) in this run pairs with it: a frozen weight or buffer of the model, or another tensor kept from before",
            bytes(*size)
        ),
        Basis::FreedLike { event: at, like } => format!(
            "made before recording; freed at {} by the same code that frees {} ({})",
            event(*at),
            role_label(like.role).to_lowercase(),
            witnessed(like)
        ),
        Basis::FreedBy { event: at, how } => match how {
            FreedHow::SavedReleased => format!(
                "made before recording; freed at {} as autograd released what it saved for the backward",
                event(*at)
            ),
            FreedHow::ZeroGrad => format!(
                "made before recording; freed by zero_grad at {}: a gradient of the step before",
                event(*at)
            ),
            FreedHow::InBackward => format!(
                "made before recording; freed by the backward at {}: what the forward saved for it",
                event(*at)
            ),
            FreedHow::WithinPhase { phase } => format!(
                "made before recording; freed within {} at {}: a temporary of it",
                phase_in_sentence(*phase),
                event(*at)
            ),
        },
        Basis::KeptLike { size, like } => format!(
            "{BEFORE}; the trace makes {} of its size ({}) and keeps it to the end too ({})",
            role_label(like.role).to_lowercase(),
            bytes(*size),
            witnessed(like)
        ),
        Basis::CublasWorkspaceMade { event: at, size } => format!(
            "made at {} and never freed, one of a few blocks of {}, the size of the workspace cuBLAS makes on a handle's first matmul and keeps",
            event(*at),
            bytes(*size)
        ),
        Basis::CublasWorkspace { size } => format!(
            "{BEFORE}; nothing in this run pairs with it, and {} is the size of the workspace cuBLAS keeps per handle and stream",
            bytes(*size)
        ),
        Basis::SucceededBy { event: at, like } => format!(
            "made before recording; freed at {} by code that says nothing of it; {} of its size alive at the end ({}) takes its place",
            event(*at),
            role_label(like.role).to_lowercase(),
            witnessed(like)
        ),
        Basis::Unknown { why } => match why {
            Unexplained::NoTrace => "no stacks recorded and no trace".to_string(),
            Unexplained::NoStacks => {
                "made before recording, and the file records no stacks".to_string()
            }
            Unexplained::NoPhase { event: at } => format!(
                "made at {} outside any phase of training, by code that says nothing of its role",
                event(*at)
            ),
            Unexplained::FreedSilently { event: at } => format!(
                "made before recording and freed at {} by code that says nothing of its role",
                event(*at)
            ),
        },
    }
}

/// The run's training terms and what its checks found, in a line: `None` when no check
/// applies.
pub fn training_line(physics: &Physics) -> Option<String> {
    if physics.checks.is_empty() {
        return None;
    }
    let mut parts = vec![format!(
        "parameters {}, gradients {}, optimizer state {} (the most each held)",
        bytes(physics.parameters),
        bytes(physics.gradients),
        bytes(physics.optimizer_state)
    )];
    for check in &physics.checks {
        let verdict = if check.passes { "ok" } else { "off" };
        parts.push(match check.kind {
            PhysicsKind::GradientsMatchParameters => {
                format!("gradients {:.2}× parameters ({verdict})", check.ratio)
            }
            PhysicsKind::StatePerGradient => format!(
                "optimizer state {:.2}× gradients, {} keeps {} per parameter ({verdict})",
                check.ratio,
                physics.optimizer.as_deref().unwrap_or("the optimizer"),
                physics.states_per_parameter.unwrap_or(0)
            ),
            PhysicsKind::UnknownSmall => {
                format!(
                    "unknown {:.1}% of the peak ({verdict})",
                    100.0 * check.ratio
                )
            }
        });
    }
    Some(parts.join("; "))
}
