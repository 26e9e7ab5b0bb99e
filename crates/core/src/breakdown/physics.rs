//! What training must do, checked against a run's roles: one gradient per trainable
//! parameter (so the gradients' bytes are the parameters', less any frozen weights and
//! buffers), the optimizer's states at the parameters' size (Adam and AdamW two per
//! parameter), and little memory nobody can say the role of. A run whose roles break these
//! has roles that are wrong, which is how the role inference is tested on real files.
//!
//! Each term is the most bytes the role held at any moment of the run (as the estimate
//! takes them). Checks apply only where the run shows what they check: the gradients and
//! states of a run that steps an optimizer, the unknown share of a trace with stacks. Not the
//! place for words ([`crate::format::breakdown`]).

use serde::{Deserialize, Serialize};

use crate::analysis::categories::index::Lookup;
use crate::analysis::categories::{DeviceCategories, Role};

/// Gradients are at least this share of the parameters (buffers and frozen weights make the
/// parameters larger).
pub const GRADIENTS_OF_PARAMETERS: f64 = 0.95;
/// And at most this share: the backward may keep a few bytes more than parameters' gradients
/// (the loss's own gradient, a scalar).
pub const GRADIENTS_OVER_PARAMETERS: f64 = 1.001;
/// How far the optimizer's states may be from their states per parameter times the gradients.
pub const STATE_TOLERANCE: f64 = 0.05;
/// The most of the peak whose role may be unknown when the trace records stacks.
pub const UNKNOWN_OF_PEAK: f64 = 0.05;

/// A run's training terms and the checks that apply to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Physics {
    pub parameters: u64,
    pub gradients: u64,
    pub optimizer_state: u64,
    /// Bytes of unknown role at the allocated peak, and the peak.
    pub unknown_at_peak: u64,
    pub peak: u64,
    /// The optimizer's class and its states per parameter, when the run shows them.
    pub optimizer: Option<String>,
    pub states_per_parameter: Option<u32>,
    /// Whether the run steps an optimizer (the gradient and state checks apply).
    pub steps: bool,
    pub checks: Vec<PhysicsCheck>,
}

impl Physics {
    /// Whether every check that applies passes.
    pub fn passes(&self) -> bool {
        self.checks.iter().all(|c| c.passes)
    }
}

/// One check and its verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhysicsCheck {
    pub kind: PhysicsKind,
    /// The measured ratio (gradients / parameters, state / gradients, unknown / peak).
    pub ratio: f64,
    pub passes: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhysicsKind {
    /// Parameters ≥ gradients ≥ 0.95 × parameters.
    GradientsMatchParameters,
    /// Optimizer state = states per parameter × gradients ± 5%.
    StatePerGradient,
    /// Unknown ≤ 5% of the peak.
    UnknownSmall,
}

/// The training terms of one device and the checks that apply.
pub fn physics(index: Lookup<'_>, categories: &DeviceCategories, peak_state: u32) -> Physics {
    let (maxima, _) = index.peaks();
    let term = |role: Role| maxima[role as usize];
    let at_peak = index.roles_at(peak_state);
    let peak: u64 = at_peak.iter().sum();
    let unknown_at_peak = at_peak[Role::Unknown as usize];
    let optimizer = categories.run.optimizer.clone();
    let steps = optimizer.as_ref().is_some_and(|o| o.steps);
    let states_per_parameter = optimizer.as_ref().and_then(|o| o.states_per_parameter);
    // The weights, without autocast's copies of them: one gradient per weight, not per copy.
    let (parameters, gradients, optimizer_state) = (
        index.weights_peak(),
        term(Role::Gradients),
        term(Role::OptimizerState),
    );
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let mut checks = Vec::new();
    if steps {
        let r = ratio(gradients, parameters);
        checks.push(PhysicsCheck {
            kind: PhysicsKind::GradientsMatchParameters,
            ratio: r,
            passes: parameters > 0
                && (GRADIENTS_OF_PARAMETERS..=GRADIENTS_OVER_PARAMETERS).contains(&r),
        });
        if let Some(k) = states_per_parameter.filter(|&k| k > 0) {
            let r = ratio(optimizer_state, gradients);
            let k = k as f64;
            checks.push(PhysicsCheck {
                kind: PhysicsKind::StatePerGradient,
                ratio: r,
                passes: (k * (1.0 - STATE_TOLERANCE)..=k * (1.0 + STATE_TOLERANCE)).contains(&r),
            });
        }
    }
    if categories.run.trace_stacks {
        let r = ratio(unknown_at_peak, peak);
        checks.push(PhysicsCheck {
            kind: PhysicsKind::UnknownSmall,
            ratio: r,
            passes: r <= UNKNOWN_OF_PEAK,
        });
    }
    Physics {
        parameters,
        gradients,
        optimizer_state,
        unknown_at_peak,
        peak,
        optimizer: optimizer.and_then(|o| o.name),
        states_per_parameter,
        steps,
        checks,
    }
}
