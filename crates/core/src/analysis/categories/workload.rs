//! What a device's run is: training, serving, inference or both (an RL job's rollout and
//! training), under which frameworks, with which optimizer and whether autocast ran, each with
//! the evidence that says so: the bytes each framework's call sites made and one frame of them.
//! So an overview can say "FSDP2 training, AdamW, autocast" or "vLLM v1 serving" and show why.
//!
//! Typed facts from the categories; the words are `format`'s.

use serde::{Deserialize, Serialize};

use super::frameworks::Framework;
use super::Role;

/// The kind of work a run does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    /// It makes gradients or steps an optimizer.
    Training,
    /// It holds a KV cache or runs a serving engine's phases.
    Serving,
    /// Both: an RL job's rollout beside its trainer.
    ServingAndTraining,
    /// Forwards only.
    Inference,
    #[default]
    Unknown,
}

/// One framework's share of the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameworkEvidence {
    pub framework: Framework,
    /// Bytes of the allocations made under its call sites, and how many.
    pub bytes: u64,
    pub allocations: u32,
    /// One of its frames, `file.py:12 function`.
    pub frame: String,
}

/// What a run is, and the evidence.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workload {
    pub kind: WorkloadKind,
    /// Most bytes first.
    pub frameworks: Vec<FrameworkEvidence>,
    /// The optimizer's class, when the run shows one.
    pub optimizer: Option<String>,
    /// Autocast cached copies of weights (mixed precision).
    pub autocast: bool,
}

impl Workload {
    /// The frameworks a workload is named by, in the order they are named: the engine or
    /// trainer first, at most three, leaving out what only passes through (DTensor, torch.optim,
    /// autocast, checkpointing, compile, CUDA graphs), those under 1% of the bytes, and vLLM's
    /// shared code where an engine of it is named.
    pub fn named(&self) -> Vec<Framework> {
        let total: u64 = self.frameworks.iter().map(|f| f.bytes).sum();
        let present = |f: Framework| {
            self.frameworks
                .iter()
                .any(|e| e.framework == f && e.bytes as f64 >= 0.01 * total as f64)
        };
        let engines = present(Framework::VllmV0) || present(Framework::VllmV1);
        NAMED_IN_ORDER
            .iter()
            .copied()
            .filter(|&f| present(f) && !(f == Framework::Vllm && engines))
            .take(3)
            .collect()
    }
}

/// The frameworks a workload may be named by, most telling first.
const NAMED_IN_ORDER: [Framework; 17] = [
    Framework::Verl,
    Framework::OpenRlhf,
    Framework::VllmV1,
    Framework::VllmV0,
    Framework::Vllm,
    Framework::Sglang,
    Framework::MegatronCore,
    Framework::DeepSpeed,
    Framework::TorchFsdp2,
    Framework::TorchFsdp1,
    Framework::TorchDdp,
    Framework::Transformers,
    Framework::Accelerate,
    Framework::Peft,
    Framework::Bitsandbytes,
    Framework::TransformerEngine,
    Framework::Apex,
];

/// The kind of work from what the roles hold: `most` is each role's most bytes (indexed like
/// [`Role::ALL`]), `serving_phases` whether any row is in a serving engine's phase, `trains`
/// whether the run makes gradients or steps an optimizer, `forwards` whether it runs one.
pub fn kind_of(most: &[u64], serving_phases: bool, trains: bool, forwards: bool) -> WorkloadKind {
    let serving = most[Role::KvCache as usize] > 0 || serving_phases;
    let training = trains || most[Role::Gradients as usize] > 0;
    match (serving, training) {
        (true, true) => WorkloadKind::ServingAndTraining,
        (true, false) => WorkloadKind::Serving,
        (false, true) => WorkloadKind::Training,
        (false, false) if forwards => WorkloadKind::Inference,
        _ => WorkloadKind::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence(framework: Framework, bytes: u64) -> FrameworkEvidence {
        FrameworkEvidence {
            framework,
            bytes,
            allocations: 1,
            frame: String::new(),
        }
    }

    #[test]
    fn a_workload_is_named_by_its_engines_not_by_what_passes_through() {
        let workload = Workload {
            frameworks: vec![
                evidence(Framework::TorchDtensor, 900),
                evidence(Framework::Vllm, 500),
                evidence(Framework::VllmV1, 400),
                evidence(Framework::MegatronCore, 300),
                evidence(Framework::Verl, 100),
                evidence(Framework::TorchFsdp2, 5),
            ],
            ..Default::default()
        };
        assert_eq!(
            workload.named(),
            vec![Framework::Verl, Framework::VllmV1, Framework::MegatronCore]
        );
    }

    #[test]
    fn the_kind_follows_the_roles() {
        let mut most = vec![0u64; Role::ALL.len()];
        assert_eq!(kind_of(&most, false, false, true), WorkloadKind::Inference);
        most[Role::KvCache as usize] = 1;
        assert_eq!(kind_of(&most, false, false, true), WorkloadKind::Serving);
        most[Role::Gradients as usize] = 1;
        assert_eq!(
            kind_of(&most, false, false, true),
            WorkloadKind::ServingAndTraining
        );
        most[Role::KvCache as usize] = 0;
        assert_eq!(kind_of(&most, false, false, false), WorkloadKind::Training);
        assert_eq!(
            kind_of(&vec![0; Role::ALL.len()], false, false, false),
            WorkloadKind::Unknown
        );
    }
}
