//! What one stack frame says about the memory made under it: the phase of training it belongs
//! to (forward, backward, optimizer step…), a role it settles on its own (communication, a
//! library's workspace, a gradient's accumulation…), and the part of the model it is in.
//!
//! Read from a frame's file and function names only, once per distinct frame. Combining the
//! frames of a stack, and lifetimes, is the caller's business ([`super`]).

use serde::{Deserialize, Serialize};

use super::frameworks::{self, Says, SiteId};
use super::{Component, Role};
use crate::analysis::keywords::{Found, KeywordSets};

/// Phases of a training step, as the frames and annotations tell them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Nothing says: between steps, or a file without recognisable frames.
    Other,
    /// Building the model: moving it to the device, initialising or loading weights.
    Setup,
    Forward,
    Backward,
    OptimizerStep,
    ZeroGrad,
    /// Serving: building the model and loading its weights.
    LoadWeights,
    /// Serving: a forward on the largest batch, run to measure what is left for the KV cache.
    ProfileRun,
    /// Serving: making the KV cache.
    KvCacheAllocation,
    /// Serving: capturing CUDA graphs of the model's steps.
    GraphCapture,
    /// Serving: a step over prompts (prefill, extend).
    Prefill,
    /// Serving: a step generating one token per sequence.
    Decode,
    /// What follows an out-of-memory error until the program allocates again: the exception
    /// unwinding the stack and freeing what its frames held. Only frees happen in it, and they
    /// say nothing of what the memory was for.
    Unwinding,
}

impl Phase {
    pub const ALL: [Phase; 13] = [
        Phase::Other,
        Phase::Setup,
        Phase::Forward,
        Phase::Backward,
        Phase::OptimizerStep,
        Phase::ZeroGrad,
        Phase::LoadWeights,
        Phase::ProfileRun,
        Phase::KvCacheAllocation,
        Phase::GraphCapture,
        Phase::Prefill,
        Phase::Decode,
        Phase::Unwinding,
    ];

    /// A phase of a serving engine's life rather than of a training step.
    pub fn is_serving(self) -> bool {
        matches!(
            self,
            Phase::LoadWeights
                | Phase::ProfileRun
                | Phase::KvCacheAllocation
                | Phase::GraphCapture
                | Phase::Prefill
                | Phase::Decode
        )
    }

    /// The phase of key `key` (`optimizer_step`).
    pub fn from_key(key: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.key() == key)
    }

    /// The key in JSON and on the command line.
    pub fn key(self) -> &'static str {
        match self {
            Phase::Other => "other",
            Phase::Setup => "setup",
            Phase::Forward => "forward",
            Phase::Backward => "backward",
            Phase::OptimizerStep => "optimizer_step",
            Phase::ZeroGrad => "zero_grad",
            Phase::LoadWeights => "load_weights",
            Phase::ProfileRun => "profile_run",
            Phase::KvCacheAllocation => "kv_cache_allocation",
            Phase::GraphCapture => "graph_capture",
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
            Phase::Unwinding => "unwinding",
        }
    }
}

/// What one frame says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameSignal {
    pub phase: Option<Phase>,
    pub role: Option<Role>,
    pub component: Option<Component>,
    /// The frame is an `AccumulateGrad` step: what it makes is a parameter's gradient.
    pub accumulates_gradient: bool,
    /// The frame is a closure an optimizer's `step(closure)` runs (PyTorch Lightning's
    /// automatic optimisation, LBFGS): what runs inside it is a forward and a backward, not
    /// the optimizer.
    pub closure: bool,
    /// The frame releases a tensor autograd saved for the backward (`SavedVariable`,
    /// a node's `release_variables`): what is freed under it was saved by a forward.
    pub releases_saved: bool,
    /// The frame is the allocator making memory (`malloc`, `allocate`): a stack with it was
    /// recorded where the memory was made, even when a free carries it.
    pub allocator_malloc: bool,
    /// The phase is a profiler's own statement (a memory profiler's phase), which the frames of
    /// the code around it do not override.
    pub stated: bool,
    /// The framework call site the frame is at ([`frameworks::site_of`]): what it says
    /// replaces what keywords would.
    pub site: Option<SiteId>,
    /// The frame is autocast casting a tensor for an op (`at::autocast::cached_cast`), which
    /// caches the copy when the tensor is a weight.
    pub autocast_cast: bool,
    /// The frame is autocast's region ending (`autocast.__exit__`), which empties the cache of
    /// weight copies.
    pub autocast_exit: bool,
}

/// Reads one frame (`filename`, function `name`, at `line`).
pub fn frame_signal(filename: &str, name: &str, line: i64) -> FrameSignal {
    if filename == crate::model::PROFILER_CATEGORY_FILE {
        return profiler_category(name);
    }
    if filename == crate::model::PROFILER_PHASE_FILE {
        return profiler_phase(name);
    }
    let file = filename.to_ascii_lowercase().replace('\\', "/");
    let func = name.to_ascii_lowercase();
    let autocast_cast = name.contains("at::autocast::cached_cast");
    let autocast_exit = name == "__exit__" && file.ends_with("/amp/autocast_mode.py");
    if let Some(id) = frameworks::site_of(filename, name, line) {
        return FrameSignal {
            autocast_cast,
            autocast_exit,
            ..site_signal(id, phase_of(&file, &func, name))
        };
    }
    // Keywords are looked for in the function and the file's own name, never in the folders
    // above it (a project under `/workspace/` is not a cuBLAS workspace).
    let base = file.rsplit('/').next().unwrap_or(&file);
    let text = format!("{base} {func}");
    let found = IN_TEXT.find(&text);
    FrameSignal {
        phase: phase_of(&file, &func, name),
        role: role_of(&file, &text, found),
        component: component_of(&text, found),
        accumulates_gradient: func.contains("accumulategrad"),
        closure: file.ends_with(".py")
            && (func == "closure" || func.ends_with("_closure") || func.starts_with("closure_")),
        releases_saved: name.contains("SavedVariable::") || name.contains("::release_variables("),
        allocator_malloc: name.contains("CachingAllocator")
            && (func.contains("::malloc(") || func.contains("::allocate(")),
        stated: false,
        site: None,
        autocast_cast,
        autocast_exit,
    }
}

/// What a framework call site says: the phase it marks (else the phase its names give, an
/// optimizer's or a `forward`'s), and the role it settles, whose component is communication
/// for a communication buffer and else left to the frames around it.
fn site_signal(id: SiteId, named_phase: Option<Phase>) -> FrameSignal {
    let site = frameworks::site(id);
    let mut signal = FrameSignal {
        site: Some(id),
        phase: named_phase,
        ..FrameSignal::default()
    };
    match site.says {
        Says::Phase(phase) => signal.phase = Some(phase),
        Says::Role(Role::Communication) => signal.component = Some(Component::Communication),
        Says::Role(_) | Says::Lifetime { .. } | Says::Nothing => {}
    }
    signal
}

/// What a profiler's own category (`export_memory_timeline`) says: its role. A temporary
/// has no phase to tell which; the forward's is the most common.
fn profiler_category(name: &str) -> FrameSignal {
    let role = match name {
        "PARAMETER" => Role::Parameters,
        "OPTIMIZER_STATE" => Role::OptimizerState,
        "INPUT" => Role::Inputs,
        "TEMPORARY" => Role::ForwardTemporaries,
        "ACTIVATION" => Role::Activations,
        "GRADIENT" => Role::Gradients,
        "AUTOGRAD_DETAIL" => Role::BackwardTemporaries,
        _ => Role::Unknown,
    };
    FrameSignal {
        role: Some(role),
        ..FrameSignal::default()
    }
}

/// What a memory profiler's phase (`setup_model_and_optimizer`, `forward_backward_iter_N`,
/// `optimizer_step_iter_N`) says of a tensor alive at the peak: made in setup, it is a
/// parameter; in the forward and backward, an activation kept for the backward; in the step,
/// optimizer state.
fn profiler_phase(name: &str) -> FrameSignal {
    let name = name.to_ascii_lowercase();
    let (phase, role) = if name.starts_with("setup") {
        (Phase::Setup, Role::Parameters)
    } else if name.starts_with("optimizer") {
        (Phase::OptimizerStep, Role::OptimizerState)
    } else if name.starts_with("forward") {
        (Phase::Forward, Role::Activations)
    } else if name.starts_with("backward") {
        (Phase::Backward, Role::Gradients)
    } else {
        return FrameSignal::default();
    };
    FrameSignal {
        phase: Some(phase),
        role: Some(role),
        stated: true,
        ..FrameSignal::default()
    }
}

fn phase_of(file: &str, func: &str, name: &str) -> Option<Phase> {
    let module_py = file.ends_with("torch/nn/modules/module.py");
    let python = file.ends_with(".py");
    if func == "zero_grad" || func.contains("optimizer.zero_grad") {
        return Some(Phase::ZeroGrad);
    }
    if file.contains("torch/optim/")
        || (file.ends_with("optimizer.py") && matches!(func, "wrapper" | "_use_grad"))
        || func.contains("optimizer.step")
    {
        return Some(Phase::OptimizerStep);
    }
    // A Python `backward` is `Tensor.backward`, autograd's, a custom autograd function's or
    // a trainer's that calls them; a Python `forward` is a module's (called through
    // `_call_impl` or directly, as a trainer's `training_step` may).
    let autograd_engine = name.starts_with("torch::autograd::Engine")
        || name.starts_with("torch::autograd::InputMetadata")
        || (name.starts_with("torch::autograd::") && name.contains("::apply("))
        || (python && matches!(func, "backward" | "_engine_run_backward"));
    if autograd_engine {
        return Some(Phase::Backward);
    }
    if (module_py && matches!(func, "_call_impl" | "_wrapped_call_impl"))
        || (python && func == "forward")
    {
        return Some(Phase::Forward);
    }
    // A Python constructor builds an object: a module's weights and buffers, mostly (one
    // built inside a forward is that forward's, as the frames around it say).
    let setup = (module_py
        && matches!(
            func,
            "_apply" | "to" | "cuda" | "load_state_dict" | "_load_from_state_dict"
        ))
        || file.ends_with("torch/nn/init.py")
        || (python && func == "__init__")
        || func == "reset_parameters"
        || func.contains("from_pretrained");
    setup.then_some(Phase::Setup)
}

/// Keywords of communication libraries and collectives.
const COMMUNICATION: &[&str] = &[
    "nccl",
    "processgroup",
    "c10d",
    "all_to_all",
    "alltoall",
    "deep_ep",
    "deepep",
    "symmetric_memory",
];
/// Keywords of libraries' workspaces: frames that make one, not every call into a library
/// (cuDNN's convolution and batch norm make their outputs too).
const WORKSPACE: &[&str] = &["workspace", "blashandle"];

/// The parts of the model by keywords, in the order they are tried: the first that matches
/// wins, so `log_softmax` is the loss's before `softmax` is attention's. `norm` is looked for
/// apart: not in `normal` (`normal_` is an initialiser, not a normalisation).
const COMPONENTS: [(Component, &[&str]); 7] = [
    (
        Component::Communication,
        &[
            "nccl",
            "fsdp",
            "c10d",
            "processgroup",
            "all_reduce",
            "all_gather",
            "reduce_scatter",
            "all_to_all",
        ],
    ),
    (
        Component::Loss,
        &[
            "cross_entropy",
            "nll_loss",
            "nlllossbackward",
            "log_softmax",
            "logsoftmax",
            "loss",
            "lm_head",
            "logits",
        ],
    ),
    (Component::Embedding, &["embedding", "embed", "wte", "wpe"]),
    (Component::Norm, &["norm"]),
    (Component::Expert, &["moe", "expert", "router"]),
    (
        Component::Attention,
        &[
            "attention",
            "attn",
            "sdpa",
            "softmax",
            "flash",
            "rotary",
            "qkv",
            "kv_cache",
        ],
    ),
    (
        Component::Mlp,
        &[
            "mlp",
            "ffn",
            "feed_forward",
            "feedforward",
            "swiglu",
            "silu",
            "gelu",
            "linear",
            "addmm",
        ],
    ),
];

/// Every keyword set looked for in a frame's text (its file's own name and its function), in
/// one pass: the components' in their order, then the roles'.
static IN_TEXT: KeywordSets = KeywordSets::new(&[
    COMPONENTS[0].1,
    COMPONENTS[1].1,
    COMPONENTS[2].1,
    COMPONENTS[3].1,
    COMPONENTS[4].1,
    COMPONENTS[5].1,
    COMPONENTS[6].1,
    COMMUNICATION,
    WORKSPACE,
]);
const COMMUNICATION_SET: usize = COMPONENTS.len();
const WORKSPACE_SET: usize = COMPONENTS.len() + 1;

/// Roles a frame settles by itself, whatever the phase.
fn role_of(file: &str, text: &str, found: Found) -> Option<Role> {
    // Not every frame under `torch/distributed/` moves data: DTensor dispatches an
    // optimizer's `zeros_like` there, FSDP shards parameters there. Its call sites say which
    // ([`frameworks`]); keywords name only the libraries that do.
    if found.has(COMMUNICATION_SET) {
        return Some(Role::Communication);
    }
    if found.has(WORKSPACE_SET)
        || (text.contains("triton") && (text.contains("autotun") || text.contains("benchmark")))
    {
        return Some(Role::Workspace);
    }
    if file.contains("torch/utils/data/") || text.contains("dataloader") {
        return Some(Role::Inputs);
    }
    None
}

/// The part of the model a frame names, by keywords ([`COMPONENTS`]).
fn component_of(text: &str, found: Found) -> Option<Component> {
    COMPONENTS
        .iter()
        .enumerate()
        .find_map(|(set, (component, _))| {
            let hit = match component {
                // Only where `norm` occurs can it remain once `normal` is taken out.
                Component::Norm => found.has(set) && text.replace("normal", "").contains("norm"),
                _ => found.has(set),
            };
            hit.then_some(*component)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_come_from_the_frames_torch_runs_them_under() {
        let p = |file: &str, name: &str| frame_signal(file, name, 0).phase;
        assert_eq!(
            p("/x/site-packages/torch/nn/modules/module.py", "_call_impl"),
            Some(Phase::Forward)
        );
        assert_eq!(
            p("??", "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)"),
            Some(Phase::Backward)
        );
        assert_eq!(
            p(
                "??",
                "torch::autograd::generated::BmmBackward0::apply(std::vector<at::Tensor>&&)"
            ),
            Some(Phase::Backward)
        );
        // Autograd's dispatch wrappers run forward ops too.
        assert_eq!(
            p("??", "torch::autograd::VariableType::(anonymous namespace)::mm(c10::DispatchKeySet, at::Tensor const&, at::Tensor const&)"),
            None
        );
        assert_eq!(
            p("/x/torch/optim/optimizer.py", "wrapper"),
            Some(Phase::OptimizerStep)
        );
        assert_eq!(
            p("/x/torch/optim/adamw.py", "_multi_tensor_adamw"),
            Some(Phase::OptimizerStep)
        );
        assert_eq!(
            p("/x/torch/_compile.py", "zero_grad"),
            Some(Phase::ZeroGrad)
        );
        assert_eq!(
            p("/x/torch/nn/modules/module.py", "_apply"),
            Some(Phase::Setup)
        );
        assert_eq!(p("/x/torch/nn/init.py", "normal_"), Some(Phase::Setup));
        assert_eq!(p("train.py", "main"), None);
    }

    #[test]
    fn roles_and_components_from_keywords() {
        let s = |file: &str, name: &str| frame_signal(file, name, 0);
        assert_eq!(
            s("??", "c10d::ProcessGroupNCCL::allreduce(…)").role,
            Some(Role::Communication)
        );
        assert_eq!(
            s("??", "at::cuda::getCurrentCUDABlasHandle()").role,
            Some(Role::Workspace)
        );
        assert_eq!(
            s("/x/torch/utils/data/dataloader.py", "__next__").role,
            Some(Role::Inputs)
        );
        assert_eq!(
            s("model.py", "scaled_dot_product_attention").component,
            Some(Component::Attention)
        );
        assert_eq!(
            s("model.py", "softmax").component,
            Some(Component::Attention)
        );
        assert_eq!(
            s("??", "at::_ops::log_softmax::call(…)").component,
            Some(Component::Loss)
        );
        assert_eq!(s("model.py", "rmsnorm").component, Some(Component::Norm));
        assert_eq!(s("/x/torch/nn/init.py", "normal_").component, None);
        assert_eq!(
            s(
                "??",
                "torch::autograd::generated::EmbeddingBackward0::apply(…)"
            )
            .component,
            Some(Component::Embedding)
        );
        assert_eq!(
            s("moe.py", "route_tokens").component,
            Some(Component::Expert)
        );
        assert_eq!(s("model.py", "swiglu").component, Some(Component::Mlp));
        assert!(s("??", "torch::autograd::AccumulateGrad::apply(…)").accumulates_gradient);
    }
}
