//! The peak estimate from its terms: parameters + optimizer state + max(gradients + optimizer
//! temporaries, activations) — the back-of-the-envelope sum users check a run against —
//! with each term as this run measured it (the most bytes the role held at any moment), which
//! side of the max sets it, and how far it lands from the observed peak.
//!
//! Not the place for words ([`crate::format::breakdown`]).

use serde::{Deserialize, Serialize};

use crate::analysis::categories::index::Lookup;
use crate::analysis::categories::Role;

/// Which side of the max sets the estimate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeakSide {
    /// Gradients and the optimizer's temporaries (the step).
    GradientsAndStep,
    /// Activations (the end of the forward).
    Activations,
}

/// The estimate and its terms, in bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub parameters: u64,
    pub optimizer_state: u64,
    pub gradients: u64,
    pub optimizer_temporaries: u64,
    pub activations: u64,
    pub estimate: u64,
    pub side: PeakSide,
    /// The observed allocated peak.
    pub observed: u64,
}

impl Estimate {
    /// Estimate minus observed, in bytes (negative: the run peaked higher than its terms
    /// explain, e.g. temporaries, workspaces or unknown memory on top).
    pub fn difference(&self) -> i64 {
        self.estimate as i64 - self.observed as i64
    }

    /// The difference as a fraction of the observed peak (0 when nothing was observed).
    pub fn relative_difference(&self) -> f64 {
        if self.observed == 0 {
            0.0
        } else {
            self.difference() as f64 / self.observed as f64
        }
    }
}

/// The estimate from the most bytes each role held over the run.
pub fn estimate(index: Lookup<'_>, observed: u64) -> Estimate {
    let (roles, _) = index.peaks();
    let term = |role: Role| roles[role as usize];
    let (parameters, optimizer_state) = (term(Role::Parameters), term(Role::OptimizerState));
    let (gradients, optimizer_temporaries) =
        (term(Role::Gradients), term(Role::OptimizerTemporaries));
    let activations = term(Role::Activations);
    let step = gradients + optimizer_temporaries;
    let side = if step >= activations {
        PeakSide::GradientsAndStep
    } else {
        PeakSide::Activations
    };
    Estimate {
        parameters,
        optimizer_state,
        gradients,
        optimizer_temporaries,
        activations,
        estimate: parameters + optimizer_state + step.max(activations),
        side,
        observed,
    }
}
