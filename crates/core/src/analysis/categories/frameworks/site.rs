//! What one framework call site is: the file and function a frame names, what memory made
//! under it is for (or which phase of the run it marks), and where that was read. The data
//! is in the sibling files, one per family of frameworks; the lookup is the folder's
//! ([`super`]).

use serde::{Deserialize, Serialize};

use crate::analysis::categories::signals::Phase;
use crate::analysis::categories::Role;

/// A framework whose call sites are known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Framework {
    TorchFsdp1,
    TorchFsdp2,
    TorchDdp,
    TorchDtensor,
    TorchAutocast,
    TorchCudaGraph,
    TorchCompile,
    TorchCheckpoint,
    TorchOptim,
    MegatronCore,
    TransformerEngine,
    Apex,
    DeepSpeed,
    Accelerate,
    Peft,
    Bitsandbytes,
    Transformers,
    /// vLLM's code both engines share (model loading, layers, communicators).
    Vllm,
    VllmV0,
    VllmV1,
    Sglang,
    Verl,
    OpenRlhf,
}

impl Framework {
    pub const ALL: [Framework; 23] = [
        Framework::TorchFsdp1,
        Framework::TorchFsdp2,
        Framework::TorchDdp,
        Framework::TorchDtensor,
        Framework::TorchAutocast,
        Framework::TorchCudaGraph,
        Framework::TorchCompile,
        Framework::TorchCheckpoint,
        Framework::TorchOptim,
        Framework::MegatronCore,
        Framework::TransformerEngine,
        Framework::Apex,
        Framework::DeepSpeed,
        Framework::Accelerate,
        Framework::Peft,
        Framework::Bitsandbytes,
        Framework::Transformers,
        Framework::Vllm,
        Framework::VllmV0,
        Framework::VllmV1,
        Framework::Sglang,
        Framework::Verl,
        Framework::OpenRlhf,
    ];

    /// The family it belongs to, as one of [`Framework::ALL`]: vLLM's engines and their
    /// shared code are one, Megatron with Transformer Engine another; the rest are their own.
    pub fn family(self) -> Framework {
        match self {
            Framework::VllmV0 | Framework::VllmV1 => Framework::Vllm,
            Framework::TransformerEngine => Framework::MegatronCore,
            f => f,
        }
    }

    /// What it is called.
    pub fn name(self) -> &'static str {
        match self {
            Framework::TorchFsdp1 => "FSDP1",
            Framework::TorchFsdp2 => "FSDP2",
            Framework::TorchDdp => "DDP",
            Framework::TorchDtensor => "DTensor",
            Framework::TorchAutocast => "autocast",
            Framework::TorchCudaGraph => "CUDA graphs",
            Framework::TorchCompile => "torch.compile",
            Framework::TorchCheckpoint => "activation checkpointing",
            Framework::TorchOptim => "torch.optim",
            Framework::MegatronCore => "Megatron-Core",
            Framework::TransformerEngine => "Transformer Engine",
            Framework::Apex => "Apex",
            Framework::DeepSpeed => "DeepSpeed",
            Framework::Accelerate => "Accelerate",
            Framework::Peft => "PEFT",
            Framework::Bitsandbytes => "bitsandbytes",
            Framework::Transformers => "Transformers",
            Framework::Vllm => "vLLM",
            Framework::VllmV0 => "vLLM (v0 engine)",
            Framework::VllmV1 => "vLLM v1",
            Framework::Sglang => "SGLang",
            Framework::Verl => "verl",
            Framework::OpenRlhf => "OpenRLHF",
        }
    }
}

/// What a frame of a call site says of the memory made under it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Says {
    /// Its memory has this role however long it lives.
    Role(Role),
    /// `kept` when the memory outlives the phase it was made in (or lives to the end),
    /// `freed` when freed within it.
    Lifetime { kept: Role, freed: Role },
    /// The frame marks a phase of the run; the memory's role follows from that phase and
    /// its lifetime.
    Phase(Phase),
    /// The frame only passes through (a dispatcher, a wrapper): it decides nothing, and its
    /// names are not read for keywords.
    Nothing,
}

/// One place in a framework's released source.
#[derive(Clone, Copy, Debug)]
pub struct Site {
    pub framework: Framework,
    /// The end of the frame's file path from the package's root, `/`-separated
    /// (`vllm/worker/cache_engine.py`); empty for a C++ site, matched on its symbol alone.
    pub file: &'static str,
    /// The frame's function: Python's bare `co_name` (`_allocate_kv_cache`), or for a C++
    /// site a part of the demangled symbol (`c10d::Reducer::initialize_buckets`).
    pub function: &'static str,
    pub says: Says,
    /// What the function makes, or what it is: the reason a user reads.
    pub why: &'static str,
    /// Where this was read: repository, version, path, line and qualified name.
    pub source: &'static str,
    /// The releases the file and function hold in.
    pub versions: &'static str,
    /// When not empty, the site is only these lines of the function (one per release read):
    /// a function that makes memory of two roles a few lines apart.
    pub lines: &'static [i64],
}

/// A site of every line of its function.
pub(super) const fn site(
    framework: Framework,
    file: &'static str,
    function: &'static str,
    says: Says,
    why: &'static str,
    source: &'static str,
    versions: &'static str,
) -> Site {
    Site {
        framework,
        file,
        function,
        says,
        why,
        source,
        versions,
        lines: &[],
    }
}
