//! The peak estimate from its terms: parameters + optimizer state + max(gradients + optimizer
//! temporaries, activations) — the back-of-the-envelope sum users check a run against —
//! with autocast's cached copies of weights, which live through the forward only, on the
//! activations' side of the max rather than in the parameters,
//! with each term as this run measured it (the most bytes the role held at any moment), which
//! side of the max sets it, and how far it lands from the observed peak.
//!
//! Not the place for words ([`crate::format::breakdown`]).

use serde::{Deserialize, Serialize};

use crate::analysis::categories::index::Lookup;
use crate::analysis::categories::Role;

/// Which formula the estimate is: a training step's, or a serving engine's (weights + KV cache
/// + CUDA graphs + the largest step's temporaries).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EstimateKind {
    #[default]
    Training,
    Serving,
}

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
    #[serde(default)]
    pub kind: EstimateKind,
    pub parameters: u64,
    pub optimizer_state: u64,
    pub gradients: u64,
    pub optimizer_temporaries: u64,
    pub activations: u64,
    /// The most bytes autocast's cached 16-bit copies of weights held (0 without autocast),
    /// counted beside the activations: both live until the forward's end.
    #[serde(default)]
    pub weight_copies: u64,
    /// A serving engine's terms: its KV cache, its CUDA graphs' memory, and its steps'
    /// temporaries (0 in a training run).
    #[serde(default)]
    pub kv_cache: u64,
    #[serde(default)]
    pub cuda_graphs: u64,
    #[serde(default)]
    pub step_temporaries: u64,
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

/// The estimate from the most bytes each role held over the run: a serving engine's when the
/// run holds a KV cache and trains nothing, else a training step's.
pub fn estimate(index: Lookup<'_>, observed: u64) -> Estimate {
    let (roles, _) = index.peaks();
    let term = |role: Role| roles[role as usize];
    let (parameters, optimizer_state) = (index.weights_peak(), term(Role::OptimizerState));
    let weight_copies = index.weight_copies_peak();
    let (gradients, optimizer_temporaries) =
        (term(Role::Gradients), term(Role::OptimizerTemporaries));
    let activations = term(Role::Activations);
    let step = gradients + optimizer_temporaries;
    let forward = activations + weight_copies;
    let side = if step >= forward {
        PeakSide::GradientsAndStep
    } else {
        PeakSide::Activations
    };
    let (kv_cache, cuda_graphs) = (term(Role::KvCache), term(Role::CudaGraph));
    if kv_cache > 0 && gradients == 0 {
        // A serving engine: the weights, the cache it sizes to fill what is left, the graphs
        // it captured, and the largest step's scratch on top.
        let step_temporaries = term(Role::ForwardTemporaries);
        return Estimate {
            kind: EstimateKind::Serving,
            parameters,
            optimizer_state,
            gradients,
            optimizer_temporaries,
            activations,
            weight_copies,
            kv_cache,
            cuda_graphs,
            step_temporaries,
            estimate: parameters + kv_cache + cuda_graphs + step_temporaries,
            side: PeakSide::Activations,
            observed,
        };
    }
    Estimate {
        kind: EstimateKind::Training,
        kv_cache: 0,
        cuda_graphs: 0,
        step_temporaries: 0,
        parameters,
        optimizer_state,
        gradients,
        optimizer_temporaries,
        activations,
        weight_copies,
        estimate: parameters + optimizer_state + step.max(forward),
        side,
        observed,
    }
}
