//! Runs of PyTorch 2.8.0 on one GPU, stacks from its released sources (`torch/nn/modules/
//! module.py` `_call_impl` 1784, `_wrapped_call_impl` 1773): training and evaluating a small
//! GPT under bf16 `torch.autocast` (the weight cache of `at::autocast::cached_cast`: each fp32
//! Linear weight's bf16 copy, made at its first use in the forward and dropped at the
//! outermost `__exit__`, or in the backward when the matmul saved it), non-reentrant
//! activation checkpointing (the block recomputed inside the backward, under its own
//! autocast region), CUDA graphs (`torch.cuda.make_graphed_callables`, a whole step captured
//! with `torch.cuda.graph`, a user `MemPool` beside a graph's pool) and torch.compile's
//! cudagraph trees (`mode="reduce-overhead"`).
//!
//! What the truth follows: the roles of `docs/roles.md`. An autocast weight copy is a
//! parameter (sized by the model, half its fp32 weight); a cast of an activation made under
//! the same C++ frame is an activation (saved for the backward) or a temporary; everything in
//! a CUDA graph's pool is the graph's, whatever code made it.

use crate::run::*;
use memsight_core::analysis::categories::Role;
use memsight_core::model::cut::Cut;

// ---------------------------------------------------------------------------------------
// Frames (PyTorch 2.8.0)
// ---------------------------------------------------------------------------------------

/// An `nn.Module` call: `_call_impl` inside `_wrapped_call_impl`.
fn module() -> [Frame; 2] {
    [
        py("torch/nn/modules/module.py", 1784, "_call_impl"),
        py("torch/nn/modules/module.py", 1773, "_wrapped_call_impl"),
    ]
}

/// The training script's `main` at `line`.
fn main_at(line: i64) -> Vec<Frame> {
    vec![
        user("train.py", line, "main"),
        user("train.py", 214, "<module>"),
    ]
}

/// `torch._disable_dynamo`'s wrappers around a function (`torch/_compile.py` `inner`, then
/// the `DisableContext`'s `_fn`), innermost first.
fn dynamo_disabled() -> [Frame; 2] {
    [
        py("torch/_dynamo/eval_frame.py", 929, "_fn"),
        py("torch/_compile.py", 53, "inner"),
    ]
}

/// `model.to("cuda")` copying a parameter `depth` modules below the model (the nested
/// `_apply`s, then `convert`'s `t.to(...)`).
fn to_device(depth: usize) -> Vec<Frame> {
    let mut frames = vec![
        py("torch/nn/modules/module.py", 1355, "convert"),
        py("torch/nn/modules/module.py", 955, "_apply"),
    ];
    for _ in 0..depth {
        frames.push(py("torch/nn/modules/module.py", 928, "_apply"));
    }
    frames.push(py("torch/nn/modules/module.py", 1369, "to"));
    frames.extend(main_at(61));
    frames
}

/// `model.cuda()` copying a parameter `depth` modules below the model.
fn to_cuda(depth: usize, line: i64) -> Vec<Frame> {
    let mut frames = vec![
        py("torch/nn/modules/module.py", 1082, "<lambda>"),
        py("torch/nn/modules/module.py", 955, "_apply"),
    ];
    for _ in 0..depth {
        frames.push(py("torch/nn/modules/module.py", 928, "_apply"));
    }
    frames.push(py("torch/nn/modules/module.py", 1082, "cuda"));
    frames.extend(main_at(line));
    frames
}

/// `torch.autocast.__exit__` at the outermost level, clearing the cast cache.
fn autocast_exit(outer: &[Frame]) -> Vec<Frame> {
    stack(&[&[py("torch/amp/autocast_mode.py", 404, "__exit__")], outer])
}

// C++ frames (`stacks="all"`), innermost first, between the allocator's frames and the
// Python frame that called the op.

/// A dtype cast (`Tensor.to`), as `cached_cast` and `.to()` make it.
const TO_COPY: &[&str] = &[
    "at::native::_to_copy(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, bool, std::optional<c10::MemoryFormat>)",
    "at::_ops::_to_copy::call(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, bool, std::optional<c10::MemoryFormat>)",
    "at::native::to(at::Tensor const&, c10::ScalarType, bool, bool, std::optional<c10::MemoryFormat>)",
    "at::_ops::to_dtype::call(at::Tensor const&, c10::ScalarType, bool, bool, std::optional<c10::MemoryFormat>)",
];
/// autocast casting an argument of a lower-precision op: the weight cache's frame, and an
/// activation cast's.
const CACHED_CAST: &str =
    "at::autocast::cached_cast(c10::ScalarType, at::Tensor const&, c10::DeviceType)";
/// `F.linear` under autocast's CUDA wrapper.
const LINEAR_UNDER_AUTOCAST: &[&str] = &[
    "at::autocast::WrapFunction_<(at::autocast::CastPolicy)0, (c10::DeviceType)1, at::Tensor (at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&), &at::linear, at::Tensor, c10::guts::typelist::typelist<at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&> >::call(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&)",
    "at::_ops::linear::call(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&)",
    "torch::autograd::THPVariable_linear(_object*, _object*, _object*)",
];
/// The matmul of `F.linear`.
const ADDMM: &[&str] = &[
    "at::(anonymous namespace)::wrapper_CUDA_addmm(at::Tensor const&, at::Tensor const&, at::Tensor const&, c10::Scalar const&, c10::Scalar const&)",
    "torch::autograd::VariableType::(anonymous namespace)::addmm(c10::DispatchKeySet, at::Tensor const&, at::Tensor const&, at::Tensor const&, c10::Scalar const&, c10::Scalar const&)",
    "at::_ops::addmm::call(at::Tensor const&, at::Tensor const&, at::Tensor const&, c10::Scalar const&, c10::Scalar const&)",
    "at::native::linear(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&)",
];
const LAYER_NORM: &[&str] = &[
    "at::native::layer_norm_cuda(at::Tensor const&, c10::ArrayRef<long>, std::optional<at::Tensor> const&, std::optional<at::Tensor> const&, double)",
    "torch::autograd::VariableType::(anonymous namespace)::native_layer_norm(c10::DispatchKeySet, at::Tensor const&, c10::ArrayRef<c10::SymInt>, std::optional<at::Tensor> const&, std::optional<at::Tensor> const&, double)",
    "at::_ops::native_layer_norm::call(at::Tensor const&, c10::ArrayRef<c10::SymInt>, std::optional<at::Tensor> const&, std::optional<at::Tensor> const&, double)",
    "at::native::layer_norm_symint(at::Tensor const&, c10::ArrayRef<c10::SymInt>, std::optional<at::Tensor> const&, std::optional<at::Tensor> const&, double, bool)",
    "at::_ops::layer_norm::call(at::Tensor const&, c10::ArrayRef<c10::SymInt>, std::optional<at::Tensor> const&, std::optional<at::Tensor> const&, double, bool)",
];
const EMBEDDING: &[&str] = &[
    "at::native::index_select_cuda(at::Tensor const&, long, at::Tensor const&)",
    "at::native::embedding_symint(at::Tensor const&, at::Tensor const&, c10::SymInt, bool, bool)",
    "at::_ops::embedding::call(at::Tensor const&, at::Tensor const&, c10::SymInt, bool, bool)",
    "torch::autograd::THPVariable_embedding(_object*, _object*, _object*)",
];
const SDPA: &[&str] = &[
    "at::native::_scaled_dot_product_flash_attention_cuda(at::Tensor const&, at::Tensor const&, at::Tensor const&, double, bool, bool, std::optional<double>)",
    "at::_ops::_scaled_dot_product_flash_attention::call(at::Tensor const&, at::Tensor const&, at::Tensor const&, double, bool, bool, std::optional<double>)",
    "at::native::scaled_dot_product_attention(at::Tensor const&, at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&, double, bool, std::optional<double>, bool)",
    "at::_ops::scaled_dot_product_attention::call(at::Tensor const&, at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&, double, bool, std::optional<double>, bool)",
];
const CONTIGUOUS: &[&str] = &[
    "at::native::clone(at::Tensor const&, std::optional<c10::MemoryFormat>)",
    "at::native::contiguous(at::Tensor const&, c10::MemoryFormat)",
];
const GELU: &[&str] = &[
    "at::(anonymous namespace)::wrapper_CUDA_gelu(at::Tensor const&, std::basic_string_view<char, std::char_traits<char> >)",
    "at::_ops::gelu::call(at::Tensor const&, std::basic_string_view<char, std::char_traits<char> >)",
];
const ADD: &[&str] = &[
    "at::(anonymous namespace)::wrapper_CUDA_add_Tensor(at::Tensor const&, at::Tensor const&, c10::Scalar const&)",
    "at::_ops::add_Tensor::call(at::Tensor const&, at::Tensor const&, c10::Scalar const&)",
];
/// `F.cross_entropy` under autocast: `log_softmax` run in fp32 (`fp32_set_opt_dtype`).
const LOG_SOFTMAX: &[&str] = &[
    "at::(anonymous namespace)::wrapper_CUDA__log_softmax(at::Tensor const&, long, bool)",
    "at::_ops::_log_softmax::call(at::Tensor const&, long, bool)",
    "at::native::log_softmax(at::Tensor const&, long, std::optional<c10::ScalarType>)",
    "at::_ops::log_softmax_int::call(at::Tensor const&, long, std::optional<c10::ScalarType>)",
    "at::native::cross_entropy_loss_symint(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&, long, c10::SymInt, double)",
];
const NLL_LOSS: &[&str] = &[
    "at::(anonymous namespace)::wrapper_CUDA_nll_loss_forward(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&, long, long)",
    "at::_ops::nll_loss_forward::call(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&, long, c10::SymInt)",
    "at::native::cross_entropy_loss_symint(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&, long, c10::SymInt, double)",
];
const ONES_LIKE: &[&str] = &[
    "at::native::ones_like(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)",
    "at::_ops::ones_like::call(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)",
];
const ZEROS_LIKE: &[&str] = &[
    "at::native::zeros_like(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)",
    "at::_ops::zeros_like::call(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)",
];
const FOREACH_SQRT: &[&str] = &[
    "at::native::foreach_tensor_sqrt_cuda(c10::ArrayRef<at::Tensor>)",
    "at::_ops::_foreach_sqrt::call(c10::ArrayRef<at::Tensor>)",
];
/// The autograd engine's device thread running a node, outside the node's own frame.
const ENGINE: &[&str] = &[
    "torch::autograd::Node::operator()(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)",
    "torch::autograd::call_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&)",
    "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)",
    "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
    "torch::autograd::Engine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)",
    "torch::autograd::python::PythonEngine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)",
];

fn node_apply(node: &str) -> String {
    format!("torch::autograd::generated::{node}::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)")
}

fn node_release(node: &str) -> String {
    format!("torch::autograd::generated::{node}::release_variables()")
}

/// Native frames then Python ones, when the run records C++ frames; the Python ones alone
/// otherwise.
fn with_native(cpp: bool, native: &[&str], python: &[Frame]) -> Vec<Frame> {
    if !cpp {
        return python.to_vec();
    }
    native
        .iter()
        .map(|s| self::cpp(s))
        .chain(python.iter().cloned())
        .collect()
}

// ---------------------------------------------------------------------------------------
// A GPT (nanoGPT's shape: embedding, pre-norm blocks of attention and MLP, untied head)
// ---------------------------------------------------------------------------------------

/// How a forward runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pass {
    /// With grad: what the backward needs is saved.
    Train,
    /// A block under `torch.utils.checkpoint(use_reentrant=False)`: nothing inside is kept,
    /// only the block's input.
    Checkpointed,
    /// Under `torch.no_grad()`: nothing is kept.
    NoGrad,
    /// The block recomputed in the backward by the checkpoint's unpack hook.
    Recompute,
}

/// One backward node: what it frees of what the forward saved, the gradients it passes on
/// (backward temporaries) and the parameters' gradients it makes (fp32 bytes; through a
/// bf16 gradient and `ToCopyBackward0` when the weight was cast).
struct Step {
    node: &'static str,
    saved: Vec<Id>,
    temps: Vec<u64>,
    grads: Vec<(u64, bool)>,
}

/// The backward of a forward, in forward order.
enum Seg {
    Steps(Vec<Step>),
    /// A checkpointed block: recomputed when the backward reaches it; `input` is what the
    /// checkpoint kept.
    Checkpoint {
        input: Id,
    },
}

#[derive(Clone, Copy)]
struct GptShape {
    layers: usize,
    d: u64,
    vocab: u64,
    heads: u64,
}

/// A GPT being run: the run, the shape, what autocast's cache and the backward hold.
struct Gpt {
    run: Run,
    cpp: bool,
    amp: bool,
    shape: GptShape,
    b: u64,
    t: u64,
    /// Every parameter's fp32 bytes, in the optimizer's order.
    params: Vec<u64>,
    /// Weight copies autocast's cache alone holds: freed at the outermost `__exit__`.
    cache: Vec<Id>,
    /// Parameters' gradients alive.
    grads: Vec<Id>,
    /// Gradients flowing between backward nodes.
    flowing: Vec<Id>,
    /// Adam's states, once made.
    states: bool,
    /// Bytes of every autocast weight copy the last forward made.
    copies: u64,
    /// The rows right after each recomputation of a checkpointed block.
    recomputed: Vec<usize>,
}

/// Model file lines (the user's `model.py`).
const GPT_EMB: i64 = 170;
const GPT_BLOCK: i64 = 175;
const GPT_LN_F: i64 = 176;
const GPT_HEAD: i64 = 177;
const GPT_LOSS: i64 = 178;
const BLOCK_ATTN: i64 = 104;
const BLOCK_MLP: i64 = 105;

impl Gpt {
    fn new(shape: GptShape, amp: bool, cpp: bool) -> Gpt {
        let mut run = Run::new();
        if cpp {
            run = run.with_cpp();
        }
        let mut gpt = Gpt {
            run,
            cpp,
            amp,
            shape,
            b: 0,
            t: 0,
            params: Vec::new(),
            cache: Vec::new(),
            grads: Vec::new(),
            flowing: Vec::new(),
            states: false,
            copies: 0,
            recomputed: Vec::new(),
        };
        gpt.build();
        gpt
    }

    fn native(&self, native: &[&str], python: &[Frame]) -> Vec<Frame> {
        with_native(self.cpp, native, python)
    }

    /// `model.to("cuda")`: every parameter in fp32 (module depth: transformer.wte 2, a block's
    /// linear 4, a block's norm 3, ln_f 2, lm_head 1).
    fn build(&mut self) {
        let GptShape {
            layers, d, vocab, ..
        } = self.shape;
        let mut params: Vec<(u64, usize)> = vec![(vocab * d * 4, 2)];
        for _ in 0..layers {
            params.extend([
                (d * 4, 3),
                (d * 4, 3),
                (3 * d * d * 4, 4),
                (3 * d * 4, 4),
                (d * d * 4, 4),
                (d * 4, 4),
                (d * 4, 3),
                (d * 4, 3),
                (4 * d * d * 4, 4),
                (4 * d * 4, 4),
                (4 * d * d * 4, 4),
                (d * 4, 4),
            ]);
        }
        params.extend([(d * 4, 2), (d * 4, 2), (vocab * d * 4, 1)]);
        for (bytes, depth) in params {
            let stack = self.native(
                &[
                    TO_COPY[0],
                    TO_COPY[1],
                    "torch::autograd::THPVariable_to(_object*, _object*, _object*)",
                ],
                &to_device(depth),
            );
            self.run.alloc(bytes, &stack, Role::Parameters);
            self.params.push(bytes);
        }
    }

    fn h32(&self) -> u64 {
        self.b * self.t * self.shape.d * 4
    }

    /// Bytes of a `d`-wide activation in the compute dtype.
    fn act(&self) -> u64 {
        if self.amp {
            self.b * self.t * self.shape.d * 2
        } else {
            self.h32()
        }
    }

    fn alloc(&mut self, size: u64, native: &[&str], python: &[Frame], truth: Role) -> Id {
        let stack = self.native(native, python);
        self.run.alloc(size, &stack, truth)
    }

    /// `F.linear(input, weight, bias)` of a `Linear` called by the module at `at` (its
    /// forward's frames, outermost last). Under autocast: the input's cast when it is fp32
    /// (an activation the matmul saves, or a temporary), then the weight's and the bias's
    /// cached copies (parameters); then the output, unless `stop` (a recomputation stops
    /// once the last tensor it needs is saved, before the matmul runs). Pushes the node.
    #[allow(clippy::too_many_arguments)]
    fn linear(
        &mut self,
        input_f32: bool,
        weight: u64,
        bias: Option<u64>,
        out: (u64, Role),
        at: &[Frame],
        pass: Pass,
        steps: &mut Vec<Step>,
        temps: &mut Vec<Id>,
        recompute_cache: &mut Vec<Id>,
        stop: bool,
    ) -> Option<Id> {
        let python = stack(&[
            &[py("torch/nn/modules/linear.py", 125, "forward")],
            &module(),
            at,
        ]);
        let keeps = matches!(pass, Pass::Train | Pass::Recompute);
        let mut step = Step {
            node: if bias.is_some() {
                "AddmmBackward0"
            } else {
                "MmBackward0"
            },
            saved: Vec::new(),
            temps: vec![self.act()],
            grads: vec![(weight, self.amp)],
        };
        let mut cast_frames: Vec<&str> = TO_COPY.to_vec();
        cast_frames.push(CACHED_CAST);
        cast_frames.extend_from_slice(LINEAR_UNDER_AUTOCAST);
        if self.amp && input_f32 {
            // An activation's cast: not cached (not a leaf).
            let cast = self.alloc(self.act(), &cast_frames, &python, saved_truth(pass));
            step.temps.push(self.h32());
            if keeps {
                step.saved.push(cast);
            } else {
                temps.push(cast);
            }
        }
        if self.amp {
            let copy = self.alloc(weight / 2, &cast_frames, &python, Role::Parameters);
            self.copies += weight / 2;
            if keeps {
                step.saved.push(copy);
            } else {
                self.cache.push(copy);
            }
            if let Some(bias) = bias {
                let copy = self.alloc(bias / 2, &cast_frames, &python, Role::Parameters);
                self.copies += bias / 2;
                // The matmul does not save the bias: only the cache holds it.
                if pass == Pass::Recompute {
                    recompute_cache.push(copy);
                } else {
                    self.cache.push(copy);
                }
            }
        }
        if let Some(bias) = bias {
            step.grads.push((bias, self.amp));
        }
        steps.push(step);
        if stop {
            return None;
        }
        let mut out_frames: Vec<&str> = ADDMM.to_vec();
        let wrap = if self.amp { 0 } else { 1 };
        out_frames.extend_from_slice(&LINEAR_UNDER_AUTOCAST[wrap..]);
        Some(self.alloc(out.0, &out_frames, &python, out.1))
    }

    /// `F.layer_norm` of the norm module called at `at`: its fp32 output (`out` its truth),
    /// and the mean and reciprocal deviation its backward needs. Pushes the node.
    fn layer_norm(
        &mut self,
        at: &[Frame],
        out: Role,
        pass: Pass,
        steps: &mut Vec<Step>,
    ) -> [Id; 3] {
        let python = stack(&[
            &[
                py("torch/nn/functional.py", 2905, "layer_norm"),
                py("torch/nn/modules/normalization.py", 217, "forward"),
            ],
            &module(),
            at,
        ]);
        let out = self.alloc(self.h32(), LAYER_NORM, &python, out);
        let stats = self.b * self.t * 4;
        let mean = self.alloc(stats, LAYER_NORM, &python, saved_truth(pass));
        let rstd = self.alloc(stats, LAYER_NORM, &python, saved_truth(pass));
        let d = self.shape.d;
        steps.push(Step {
            node: "NativeLayerNormBackward0",
            saved: Vec::new(),
            temps: vec![self.h32()],
            grads: vec![(d * 4, false), (d * 4, false)],
        });
        [out, mean, rstd]
    }

    /// One block's forward: `x = x + attn(ln_1(x)); x = x + mlp(ln_2(x))`, called under
    /// `outer` (from the block's own `_call_impl` out). `owns_input`: the block's first norm
    /// is what keeps `x` (else a checkpoint does). Returns the output (none for a
    /// recomputation, which stops once its last saved tensor is remade) and the block's
    /// backward nodes, in forward order.
    fn block(
        &mut self,
        x: Id,
        owns_input: bool,
        pass: Pass,
        outer: &[Frame],
    ) -> (Option<Id>, Vec<Step>) {
        let block = |line: i64| stack(&[&[user("model.py", line, "forward")], &module(), outer]);
        let attn = |line: i64| {
            stack(&[
                &[user("model.py", line, "forward")],
                &module(),
                &block(BLOCK_ATTN),
            ])
        };
        let mlp = |line: i64| {
            stack(&[
                &[user("model.py", line, "forward")],
                &module(),
                &block(BLOCK_MLP),
            ])
        };
        let keeps = matches!(pass, Pass::Train | Pass::Recompute);
        let (saved, temp) = (saved_truth(pass), temp_truth(pass));
        let act = self.act();
        let d = self.shape.d;
        let amp = self.amp;
        let mut steps = Vec::new();
        // Freed as the forward goes on (at the latest when the block returns).
        let mut temps: Vec<Id> = Vec::new();
        let mut recompute_cache: Vec<Id> = Vec::new();
        let keep = |steps: &mut Vec<Step>, temps: &mut Vec<Id>, id: Id| {
            if keeps {
                steps.last_mut().unwrap().saved.push(id);
            } else {
                temps.push(id);
            }
        };
        // Under autocast a norm's fp32 output only feeds its cast; else the matmul keeps it.
        let normed = if amp { temp } else { saved };

        // ln_1 keeps its input and its statistics.
        let [ln1, mean, rstd] = self.layer_norm(&block(BLOCK_ATTN), normed, pass, &mut steps);
        if owns_input {
            keep(&mut steps, &mut temps, x);
        }
        keep(&mut steps, &mut temps, mean);
        keep(&mut steps, &mut temps, rstd);
        // c_attn: q, k and v, kept by attention.
        let qkv = self.linear(
            true,
            3 * d * d * 4,
            Some(3 * d * 4),
            (3 * act, saved),
            &attn(52),
            pass,
            &mut steps,
            &mut temps,
            &mut recompute_cache,
            false,
        );
        if amp {
            temps.push(ln1);
        } else {
            keep(&mut steps, &mut temps, ln1);
        }
        let attn_frames = attn(57);
        let y = self.alloc(act, SDPA, &attn_frames, saved);
        let lse = self.alloc(
            self.b * self.shape.heads * self.t * 4,
            SDPA,
            &attn_frames,
            saved,
        );
        steps.push(Step {
            node: "ScaledDotProductFlashAttentionBackward0",
            saved: Vec::new(),
            temps: vec![act, act, act],
            grads: Vec::new(),
        });
        for id in [qkv.unwrap(), y, lse] {
            keep(&mut steps, &mut temps, id);
        }
        let yc = self.alloc(act, CONTIGUOUS, &attn(58), saved);
        // c_proj: the matmul keeps its input; its output only feeds the residual add.
        let proj = self.linear(
            false,
            d * d * 4,
            Some(d * 4),
            (act, temp),
            &attn(60),
            pass,
            &mut steps,
            &mut temps,
            &mut recompute_cache,
            false,
        );
        keep(&mut steps, &mut temps, yc);
        let x1 = self.alloc(self.h32(), ADD, &block(BLOCK_ATTN), saved);
        temps.push(proj.unwrap());
        // ln_2 keeps x1.
        let [ln2, mean, rstd] = self.layer_norm(&block(BLOCK_MLP), normed, pass, &mut steps);
        keep(&mut steps, &mut temps, x1);
        keep(&mut steps, &mut temps, mean);
        keep(&mut steps, &mut temps, rstd);
        let fc = self.linear(
            true,
            4 * d * d * 4,
            Some(4 * d * 4),
            (4 * act, saved),
            &mlp(82),
            pass,
            &mut steps,
            &mut temps,
            &mut recompute_cache,
            false,
        );
        if amp {
            temps.push(ln2);
        } else {
            keep(&mut steps, &mut temps, ln2);
        }
        let gelu_frames = stack(&[
            &[py("torch/nn/modules/activation.py", 738, "forward")],
            &module(),
            &mlp(83),
        ]);
        let g = self.alloc(4 * act, GELU, &gelu_frames, saved);
        steps.push(Step {
            node: "GeluBackward0",
            saved: Vec::new(),
            temps: vec![4 * act],
            grads: Vec::new(),
        });
        keep(&mut steps, &mut temps, fc.unwrap());
        // The MLP's c_proj: a recomputation stops here, its last saved tensor made.
        let stop = pass == Pass::Recompute;
        let out = self.linear(
            false,
            4 * d * d * 4,
            Some(d * 4),
            (act, temp),
            &mlp(84),
            pass,
            &mut steps,
            &mut temps,
            &mut recompute_cache,
            stop,
        );
        keep(&mut steps, &mut temps, g);
        let x2 = out.map(|m| {
            // The block's output: kept by the next block's norm or checkpoint (but under
            // no_grad, where the next block frees it).
            let truth = if pass == Pass::NoGrad {
                temp
            } else {
                Role::Activations
            };
            let x2 = self.alloc(self.h32(), ADD, &block(BLOCK_MLP), truth);
            temps.push(m);
            x2
        });
        if pass == Pass::Recompute {
            // The recomputation's own autocast region (`recompute_fn` enters one) drops its
            // bias copies when the early stop unwinds it.
            let exit = stack(&[
                &[
                    py("torch/amp/autocast_mode.py", 404, "__exit__"),
                    py("torch/utils/checkpoint.py", 1541, "recompute_fn"),
                ],
                &outer[1..],
            ]);
            self.run.free_all(&recompute_cache, &exit);
        }
        self.run.free_all(&temps, &block(BLOCK_MLP));
        (x2, steps)
    }

    /// The model's forward on a `b` × `t` batch under `outer` (the training loop's frames):
    /// `checkpointed` blocks under `torch.utils.checkpoint`. Returns the backward, and the
    /// loss (with grad) or the logits (under no_grad), which the caller frees.
    fn forward(&mut self, pass: Pass, checkpointed: bool, outer: &[Frame]) -> (Vec<Seg>, Id) {
        let gpt = |line: i64| stack(&[&[user("model.py", line, "forward")], &module(), outer]);
        let GptShape {
            layers, d, vocab, ..
        } = self.shape;
        let (b, t) = (self.b, self.t);
        self.copies = 0;
        let mut segs = Vec::new();
        let emb_frames = stack(&[
            &[
                py("torch/nn/functional.py", 2546, "embedding"),
                py("torch/nn/modules/sparse.py", 192, "forward"),
            ],
            &module(),
            &gpt(GPT_EMB),
        ]);
        let keeps_x = if pass == Pass::NoGrad {
            Role::ForwardTemporaries
        } else {
            Role::Activations
        };
        let mut x = self.alloc(self.h32(), EMBEDDING, &emb_frames, keeps_x);
        segs.push(Seg::Steps(vec![Step {
            node: "EmbeddingBackward0",
            saved: Vec::new(),
            temps: Vec::new(),
            grads: vec![(vocab * d * 4, false)],
        }]));
        for _ in 0..layers {
            let (out, steps) = if checkpointed {
                let outer = stack(&[
                    &[py("torch/utils/checkpoint.py", 495, "checkpoint")],
                    &dynamo_disabled(),
                    &gpt(GPT_BLOCK),
                ]);
                segs.push(Seg::Checkpoint { input: x });
                self.block(x, false, Pass::Checkpointed, &outer)
            } else {
                self.block(x, true, pass, &gpt(GPT_BLOCK))
            };
            if !checkpointed {
                segs.push(Seg::Steps(steps));
            }
            x = out.unwrap();
        }
        let mut steps = Vec::new();
        let mut temps = Vec::new();
        let (saved, temp) = (saved_truth(pass), temp_truth(pass));
        let normed = if self.amp { temp } else { saved };
        let [ln, mean, rstd] = self.layer_norm(&gpt(GPT_LN_F), normed, pass, &mut steps);
        let keeps = pass != Pass::NoGrad;
        for id in [x, mean, rstd] {
            if keeps {
                steps.last_mut().unwrap().saved.push(id);
            } else {
                temps.push(id);
            }
        }
        let head = gpt(GPT_HEAD);
        // The head: logits in the compute dtype, kept only as the output of an evaluation.
        let logits_truth = if pass == Pass::NoGrad {
            Role::Activations
        } else {
            Role::ForwardTemporaries
        };
        let logits_bytes = b * t * vocab * if self.amp { 2 } else { 4 };
        let mut nothing = Vec::new();
        // lm_head is the model's own attribute: its `Linear` is called from GPT.forward.
        let logits = self
            .linear(
                true,
                vocab * d * 4,
                None,
                (logits_bytes, logits_truth),
                &head,
                pass,
                &mut steps,
                &mut temps,
                &mut nothing,
                false,
            )
            .unwrap();
        if self.amp {
            temps.push(ln);
        } else if keeps {
            steps.last_mut().unwrap().saved.push(ln);
        } else {
            temps.push(ln);
        }
        if pass == Pass::NoGrad {
            self.run.free_all(&temps, &gpt(GPT_HEAD));
            segs.push(Seg::Steps(steps));
            return (segs, logits);
        }
        // F.cross_entropy: log_softmax in fp32 (kept by its backward), then nll_loss.
        let loss_frames = stack(&[
            &[py("torch/nn/functional.py", 3462, "cross_entropy")],
            &gpt(GPT_LOSS),
        ]);
        let cross_entropy = ["at::_ops::cross_entropy_loss::call(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&, long, c10::SymInt, double)", "torch::autograd::THPVariable_cross_entropy_loss(_object*, _object*, _object*)"];
        let lsm_native: Vec<&str> = LOG_SOFTMAX
            .iter()
            .chain(cross_entropy.iter())
            .copied()
            .collect();
        let nll_native: Vec<&str> = NLL_LOSS
            .iter()
            .chain(cross_entropy.iter())
            .copied()
            .collect();
        let logprobs = self.alloc(
            b * t * vocab * 4,
            &lsm_native,
            &loss_frames,
            Role::Activations,
        );
        steps.push(Step {
            node: "LogSoftmaxBackward0",
            saved: vec![logprobs],
            temps: vec![logits_bytes],
            grads: Vec::new(),
        });
        let loss = self.alloc(4, &nll_native, &loss_frames, Role::Activations);
        let total_weight = self.alloc(4, &nll_native, &loss_frames, Role::Activations);
        steps.push(Step {
            node: "NllLossBackward0",
            saved: vec![total_weight],
            temps: vec![b * t * vocab * 4],
            grads: Vec::new(),
        });
        // The logits die when the forward returns.
        temps.push(logits);
        self.run.free_all(&temps, &gpt(GPT_LOSS));
        segs.push(Seg::Steps(steps));
        (segs, loss)
    }

    fn engine(&self, node: &str) -> Vec<Frame> {
        if !self.cpp {
            return Vec::new();
        }
        std::iter::once(cpp(&node_apply(node)))
            .chain(ENGINE.iter().map(|s| cpp(s)))
            .collect()
    }

    fn released(&self, node: &str) -> Vec<Frame> {
        if !self.cpp {
            return Vec::new();
        }
        [
            "torch::autograd::SavedVariable::reset_data()".to_string(),
            node_release(node),
        ]
        .iter()
        .map(|s| cpp(s))
        .chain(ENGINE[1..].iter().map(|s| cpp(s)))
        .collect()
    }

    /// A gradient the engine drops once the next node took it.
    fn dropped(&self) -> Vec<Frame> {
        if !self.cpp {
            return Vec::new();
        }
        ENGINE[2..].iter().map(|s| cpp(s)).collect()
    }

    /// Runs backward nodes (in forward order) from the last: each makes the gradients it
    /// passes on and its parameters' gradients, frees what its forward saved and the
    /// gradient it took.
    fn run_steps(&mut self, steps: &[Step]) {
        for step in steps.iter().rev() {
            let at = self.engine(step.node);
            let made: Vec<Id> = step
                .temps
                .iter()
                .map(|&size| self.run.alloc(size, &at, Role::BackwardTemporaries))
                .collect();
            for &(bytes, cast) in &step.grads {
                let grad = if cast {
                    // The bf16 weight's gradient, cast back to the fp32 parameter's dtype.
                    let low = self.run.alloc(bytes / 2, &at, Role::BackwardTemporaries);
                    let to_copy = self.engine("ToCopyBackward0");
                    let grad = self.run.alloc(bytes, &to_copy, Role::Gradients);
                    let dropped = self.dropped();
                    self.run.free(low, &dropped);
                    grad
                } else {
                    self.run.alloc(bytes, &at, Role::Gradients)
                };
                self.grads.push(grad);
            }
            let released = self.released(step.node);
            self.run.free_all(&step.saved, &released);
            let dropped = self.dropped();
            let flowing = std::mem::replace(&mut self.flowing, made);
            self.run.free_all(&flowing, &dropped);
        }
    }

    /// `loss.backward()` from `main` at `line`: the seed, then the nodes; a checkpointed
    /// block is recomputed when its first node unpacks what it saved.
    fn backward(&mut self, segs: &[Seg], line: i64) {
        let seed_frames = stack(&[
            &[
                py("torch/autograd/__init__.py", 221, "_make_grads"),
                py("torch/autograd/__init__.py", 347, "backward"),
                py("torch/_tensor.py", 647, "backward"),
            ],
            &main_at(line),
        ]);
        let seed = self.alloc(4, ONES_LIKE, &seed_frames, Role::BackwardTemporaries);
        self.flowing.push(seed);
        for seg in segs.iter().rev() {
            match seg {
                Seg::Steps(steps) => self.run_steps(steps),
                Seg::Checkpoint { input } => {
                    let mut outer = vec![
                        py("torch/utils/checkpoint.py", 1542, "recompute_fn"),
                        py(
                            "torch/utils/checkpoint.py",
                            1116,
                            "_run_fn_with_dynamo_disabled",
                        ),
                    ];
                    outer.extend(dynamo_disabled());
                    outer.push(py("torch/utils/checkpoint.py", 1146, "unpack_hook"));
                    if self.cpp {
                        outer.extend(
                            [
                                "torch::autograd::PySavedVariableHooks::call_unpack_hook()".to_string(),
                                "torch::autograd::SavedVariable::unpack(std::shared_ptr<torch::autograd::Node>) const".to_string(),
                                node_apply("AddmmBackward0"),
                            ]
                            .iter()
                            .map(|s| cpp(s)),
                        );
                        outer.extend(ENGINE.iter().map(|s| cpp(s)));
                    }
                    let (_, steps) = self.block(*input, false, Pass::Recompute, &outer);
                    self.recomputed.push(self.run.next_row());
                    self.run_steps(&steps);
                    // The checkpoint's input, kept by its `_NoopSaveInputs` node.
                    let released = if self.cpp {
                        [cpp("torch::autograd::PyNode::release_variables()")]
                            .into_iter()
                            .chain(ENGINE[1..].iter().map(|s| cpp(s)))
                            .collect()
                    } else {
                        Vec::new()
                    };
                    self.run.free(*input, &released);
                }
            }
        }
        let flowing = std::mem::take(&mut self.flowing);
        let dropped = self.dropped();
        self.run.free_all(&flowing, &dropped);
    }

    /// `optimizer.step()` of a foreach AdamW (`torch/optim/adam.py` from 2.7): the states on
    /// the first step, then `exp_avg_sq_sqrt`, one temporary per parameter.
    fn adamw_step(&mut self, line: i64) {
        self.run.scope_start("Optimizer.step#AdamW.step");
        let outer = stack(&[
            &[
                py("torch/optim/optimizer.py", 81, "_use_grad"),
                py("torch/optim/optimizer.py", 516, "wrapper"),
            ],
            &main_at(line),
        ]);
        let params = self.params.clone();
        if !self.states {
            self.states = true;
            for &bytes in &params {
                for state_line in [177, 181] {
                    let frames = stack(&[
                        &[
                            py("torch/optim/adam.py", state_line, "_init_group"),
                            py("torch/optim/adam.py", 237, "step"),
                        ],
                        &outer,
                    ]);
                    self.alloc(bytes, ZEROS_LIKE, &frames, Role::OptimizerState);
                }
            }
        }
        let frames = stack(&[
            &[
                py("torch/optim/adam.py", 773, "_multi_tensor_adam"),
                py("torch/optim/adam.py", 949, "adam"),
                py("torch/optim/optimizer.py", 149, "maybe_fallback"),
                py("torch/optim/adam.py", 247, "step"),
            ],
            &outer,
        ]);
        let temps: Vec<Id> = params
            .iter()
            .map(|&bytes| self.alloc(bytes, FOREACH_SQRT, &frames, Role::OptimizerTemporaries))
            .collect();
        self.run.free_all(&temps, &frames);
        self.run.scope_end("Optimizer.step#AdamW.step");
    }

    /// `optimizer.zero_grad()` (set_to_none): frees every gradient.
    fn zero_grad(&mut self, line: i64) {
        self.run.scope_start("Optimizer.zero_grad#AdamW.zero_grad");
        let frames = stack(&[
            &[py("torch/optim/optimizer.py", 1032, "zero_grad")],
            &dynamo_disabled(),
            &main_at(line),
        ]);
        let grads = std::mem::take(&mut self.grads);
        self.run.free_all(&grads, &frames);
        self.run.scope_end("Optimizer.zero_grad#AdamW.zero_grad");
    }

    /// A batch of `b` × `t` token ids and targets (`get_batch`).
    fn batch(&mut self) -> [Id; 2] {
        let frames = stack(&[&[user("train.py", 41, "get_batch")], &main_at(92)]);
        let bytes = self.b * self.t * 8;
        [
            self.run.alloc(bytes, &frames, Role::Inputs),
            self.run.alloc(bytes, &frames, Role::Inputs),
        ]
    }
}

/// The training step's row marks: where each step starts, where its backward starts and
/// where its optimizer step starts.
#[derive(Default, Debug)]
struct Marks {
    step: Vec<usize>,
    backward: Vec<usize>,
    optimizer: Vec<usize>,
}

/// nanoGPT's loop on one GPU: `steps` steps of `with torch.autocast("cuda",
/// dtype=torch.bfloat16): loss = model(x, y)` (fp32 weights; `amp` false runs it in fp32),
/// `loss.backward()`, a foreach AdamW step and `zero_grad()`; `checkpointed`: every block
/// under `torch.utils.checkpoint(use_reentrant=False)`.
fn train(shape: GptShape, amp: bool, checkpointed: bool, steps: usize, cpp: bool) -> (Gpt, Marks) {
    let mut gpt = Gpt::new(shape, amp, cpp);
    (gpt.b, gpt.t) = (4, 1024);
    let mut marks = Marks::default();
    let mut held: Vec<Id> = Vec::new();
    for _ in 0..steps {
        marks.step.push(gpt.run.next_row());
        // `x, y = get_batch()` drops the last batch; `loss = model(x, y)` the last loss.
        let batch = gpt.batch();
        let (segs, loss) = gpt.forward(Pass::Train, checkpointed, &main_at(95));
        gpt.run.free_all(&held, &main_at(95));
        held = vec![batch[0], batch[1], loss];
        // Leaving the autocast region: the cache lets go of what it alone holds.
        let cache = std::mem::take(&mut gpt.cache);
        gpt.run.free_all(&cache, &autocast_exit(&main_at(94)));
        marks.backward.push(gpt.run.next_row());
        gpt.backward(&segs, 97);
        marks.optimizer.push(gpt.run.next_row());
        gpt.adamw_step(98);
        gpt.zero_grad(99);
    }
    (gpt, marks)
}

fn small_gpt() -> GptShape {
    GptShape {
        layers: 2,
        d: 1024,
        vocab: 32768,
        heads: 16,
    }
}

/// Bytes of the model's fp32 parameters.
fn param_bytes(gpt: &Gpt) -> u64 {
    gpt.params.iter().sum()
}

/// Bytes of the bf16 copies of the Linear weights (not the biases) of a GPT: what a training
/// step's matmuls keep for the backward.
fn weight_copy_bytes(shape: GptShape) -> u64 {
    let GptShape {
        layers, d, vocab, ..
    } = shape;
    layers as u64 * (3 + 1 + 4 + 4) * d * d * 2 + vocab * d * 2
}

/// The truth of what the backward would need, by pass.
fn saved_truth(pass: Pass) -> Role {
    match pass {
        Pass::Train => Role::Activations,
        Pass::Checkpointed | Pass::NoGrad => Role::ForwardTemporaries,
        Pass::Recompute => Role::BackwardTemporaries,
    }
}

/// The truth of what only the forward uses, by pass.
fn temp_truth(pass: Pass) -> Role {
    match pass {
        Pass::Recompute => Role::BackwardTemporaries,
        _ => Role::ForwardTemporaries,
    }
}

// ---------------------------------------------------------------------------------------
// An MLP (`nn.Sequential` of Linear and GELU) for CUDA graphs and cudagraph trees
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy)]
struct MlpShape {
    layers: usize,
    d: u64,
    batch: u64,
}

impl MlpShape {
    fn act(self) -> u64 {
        self.batch * self.d * 4
    }

    fn weight(self) -> u64 {
        self.d * self.d * 4
    }

    fn bias(self) -> u64 {
        self.d * 4
    }

    fn params(self) -> u64 {
        self.layers as u64 * (self.weight() + self.bias())
    }
}

/// The frames of layer `k`'s module (Linear for even `k`, GELU for odd) in the
/// `Sequential`, called under `outer`.
fn mlp_layer(k: usize, outer: &[Frame]) -> Vec<Frame> {
    let own = if k.is_multiple_of(2) {
        py("torch/nn/modules/linear.py", 125, "forward")
    } else {
        py("torch/nn/modules/activation.py", 738, "forward")
    };
    stack(&[
        &[own],
        &module(),
        &[py("torch/nn/modules/container.py", 244, "forward")],
        &module(),
        outer,
    ])
}

/// `model.cuda()` of the MLP's parameters (weight, bias per Linear), in `pool`.
fn mlp_params(run: &mut Run, shape: MlpShape, pool: (i64, i64)) -> Vec<u64> {
    let mut params = Vec::new();
    for _ in 0..shape.layers {
        for bytes in [shape.weight(), shape.bias()] {
            run.alloc_in(pool, bytes, &to_cuda(1, 30), Role::Parameters);
            params.push(bytes);
        }
    }
    params
}

/// The MLP's forward under `outer` in `pool`: each Linear's output (kept by the GELU after
/// it), each GELU's (kept by the next Linear; the last is the output). Returns what the
/// backward frees, by layer, and the output.
fn mlp_forward(
    run: &mut Run,
    shape: MlpShape,
    outer: &[Frame],
    pool: (i64, i64),
    truth: Role,
) -> (Vec<Id>, Id) {
    let mut saved = Vec::new();
    for k in 0..2 * shape.layers {
        saved.push(run.alloc_in(pool, shape.act(), &mlp_layer(k, outer), truth));
    }
    let out = saved.pop().unwrap();
    (saved, out)
}

/// The MLP's backward on the engine's thread in `pool` (no Python frame): per layer from the
/// last, GELU's gradient, then the Linear's input gradient (not for the first layer, whose
/// input needs none) and its weight's and bias's gradients, which it keeps (`grads`, with
/// `grad_truth`); frees what the forward saved. Returns the gradients kept.
#[allow(clippy::too_many_arguments)]
fn mlp_backward(
    run: &mut Run,
    shape: MlpShape,
    cpp: bool,
    saved: &[Id],
    pool: (i64, i64),
    temp_truth: Role,
    grad_truth: Role,
) -> Vec<Id> {
    let engine = |node: &str| -> Vec<Frame> {
        if !cpp {
            return Vec::new();
        }
        std::iter::once(cpp_frame(&node_apply(node)))
            .chain(ENGINE.iter().map(|s| cpp_frame(s)))
            .collect()
    };
    let released = |node: &str| -> Vec<Frame> {
        if !cpp {
            return Vec::new();
        }
        [node_release(node)]
            .iter()
            .map(|s| cpp_frame(s))
            .chain(ENGINE[1..].iter().map(|s| cpp_frame(s)))
            .collect()
    };
    let dropped = dropped_frames(cpp);
    let mut grads = Vec::new();
    let mut flowing: Vec<Id> = Vec::new();
    for layer in (0..shape.layers).rev() {
        let g = run.alloc_in(pool, shape.act(), &engine("GeluBackward0"), temp_truth);
        if let Some(&linear_out) = saved.get(2 * layer) {
            run.free(linear_out, &released("GeluBackward0"));
        }
        run.free_all(&flowing, &dropped);
        flowing = vec![g];
        let at = engine("AddmmBackward0");
        let mut made = Vec::new();
        if layer > 0 {
            made.push(run.alloc_in(pool, shape.act(), &at, temp_truth));
        }
        grads.push(run.alloc_in(pool, shape.weight(), &at, grad_truth));
        grads.push(run.alloc_in(pool, shape.bias(), &at, grad_truth));
        if layer > 0 {
            run.free(saved[2 * layer - 1], &released("AddmmBackward0"));
        }
        run.free_all(&flowing, &dropped);
        flowing = made;
    }
    run.free_all(&flowing, &dropped);
    grads
}

fn cpp_frame(symbol: &str) -> Frame {
    cpp(symbol)
}

/// Where the engine drops a gradient the next node took (no Python frame).
fn dropped_frames(cpp: bool) -> Vec<Frame> {
    if !cpp {
        return Vec::new();
    }
    ENGINE[2..].iter().map(|s| cpp_frame(s)).collect()
}

/// A foreach AdamW step over `params` (fp32 bytes) from `main` at `line`: the states on
/// the first step (`first`), one `exp_avg_sq_sqrt` per parameter, in `pool`.
fn adamw_step(
    run: &mut Run,
    params: &[u64],
    first: bool,
    line: i64,
    pool: (i64, i64),
    temps: Role,
) {
    run.scope_start("Optimizer.step#AdamW.step");
    let outer = stack(&[
        &[
            py("torch/optim/optimizer.py", 81, "_use_grad"),
            py("torch/optim/optimizer.py", 516, "wrapper"),
        ],
        &main_at(line),
    ]);
    if first {
        for &bytes in params {
            for state_line in [177, 181] {
                let frames = stack(&[
                    &[
                        py("torch/optim/adam.py", state_line, "_init_group"),
                        py("torch/optim/adam.py", 237, "step"),
                    ],
                    &outer,
                ]);
                run.alloc(bytes, &frames, Role::OptimizerState);
            }
        }
    }
    let frames = stack(&[
        &[
            py("torch/optim/adam.py", 773, "_multi_tensor_adam"),
            py("torch/optim/adam.py", 949, "adam"),
            py("torch/optim/optimizer.py", 149, "maybe_fallback"),
            py("torch/optim/adam.py", 247, "step"),
        ],
        &outer,
    ]);
    let made: Vec<Id> = params
        .iter()
        .map(|&bytes| run.alloc_in(pool, bytes, &frames, temps))
        .collect();
    run.free_all(&made, &frames);
    run.scope_end("Optimizer.step#AdamW.step");
}

/// The training loop's batch, `x` and `target`, from `get_batch` at `main`'s `line`.
fn mlp_batch(run: &mut Run, shape: MlpShape, line: i64) -> [Id; 2] {
    let frames = stack(&[&[user("train.py", 41, "get_batch")], &main_at(line)]);
    [
        run.alloc(shape.act(), &frames, Role::Inputs),
        run.alloc(shape.act(), &frames, Role::Inputs),
    ]
}

fn mlp_shape() -> MlpShape {
    MlpShape {
        layers: 4,
        d: 4096,
        batch: 2048,
    }
}

/// A run with CUDA graphs.
struct Graphed {
    run: Run,
    /// The row after capture (for cudagraph trees: after the recording).
    steady: usize,
    /// For `make_graphed_callables`: the row after the second warm-up's backward.
    warm_up: usize,
}

/// `model = torch.cuda.make_graphed_callables(model, (static_x,))` (2.8.0
/// `torch/cuda/graphs.py`), then `steps` steps of `loss = F.mse_loss(model(static_x), y)`,
/// `loss.backward()`, AdamW and `zero_grad()`. The weights are made under
/// `torch.cuda.use_mem_pool` of a user `MemPool` when `weights_pool`, which then holds id
/// (0, 1) and the graphs' pool (0, 2).
fn graphed_callables(steps: usize, weights_pool: bool, cpp: bool) -> Graphed {
    let shape = mlp_shape();
    let mut run = Run::new();
    if cpp {
        run = run.with_cpp();
    }
    let (weights, graphs) = if weights_pool {
        ((0, 1), (0, 2))
    } else {
        (DEFAULT_POOL, (0, 1))
    };
    let params = mlp_params(&mut run, shape, weights);
    // `static_x`, the graphs' input, the training loop copies each batch into.
    run.alloc(shape.act(), &main_at(33), Role::Inputs);
    let call = |line: i64| {
        stack(&[
            &[py("torch/cuda/graphs.py", line, "make_graphed_callables")],
            &main_at(35),
        ])
    };
    // Warm-up: three forwards and autograd.grad on a side stream, in the default pool.
    let mut warm: Vec<Id> = Vec::new();
    let mut warm_up = 0;
    for i in 0..3 {
        let (saved, out) =
            mlp_forward(&mut run, shape, &call(358), DEFAULT_POOL, Role::Activations);
        run.free_all(&warm, &call(358));
        let grad_out_frames = stack(&[&[py("torch/cuda/graphs.py", 367, "<genexpr>")], &call(362)]);
        let grad_out = run.alloc(shape.act(), &grad_out_frames, Role::BackwardTemporaries);
        let grads = mlp_backward(
            &mut run,
            shape,
            cpp,
            &saved,
            DEFAULT_POOL,
            Role::BackwardTemporaries,
            Role::Gradients,
        );
        run.free(grad_out, &call(362));
        if i == 1 {
            warm_up = run.next_row();
        }
        warm = grads;
        warm.push(out);
    }
    run.free_all(&warm, &call(373));
    // Forward capture into the shared pool, then the static gradient outputs (default
    // pool), then backward capture into the same pool.
    let (saved, _static_out) = mlp_forward(&mut run, shape, &call(387), graphs, Role::CudaGraph);
    let grad_out_frames = stack(&[&[py("torch/cuda/graphs.py", 404, "<genexpr>")], &call(403)]);
    run.alloc(shape.act(), &grad_out_frames, Role::CudaGraph);
    mlp_backward(
        &mut run,
        shape,
        cpp,
        &saved,
        graphs,
        Role::CudaGraph,
        Role::CudaGraph,
    );
    // Training: replays allocate nothing; `.grad` are the static gradients' views
    // (AccumulateGrad steals them), so `zero_grad` frees nothing.
    let steady = run.next_row();
    let mut held: Vec<Id> = Vec::new();
    for step in 0..steps {
        let batch = mlp_batch(&mut run, shape, 40);
        run.free_all(&held, &main_at(40));
        let mse = stack(&[
            &[py("torch/nn/functional.py", 3889, "mse_loss")],
            &main_at(43),
        ]);
        let squared = run.alloc(shape.act(), &mse, Role::ForwardTemporaries);
        let loss = run.alloc(4, &mse, Role::Activations);
        run.free(squared, &mse);
        let seed_frames = stack(&[
            &[
                py("torch/autograd/__init__.py", 221, "_make_grads"),
                py("torch/autograd/__init__.py", 347, "backward"),
                py("torch/_tensor.py", 647, "backward"),
            ],
            &main_at(44),
        ]);
        let seed = run.alloc(4, &seed_frames, Role::BackwardTemporaries);
        let mse_grad = if cpp {
            std::iter::once(cpp_frame(&node_apply("MseLossBackward0")))
                .chain(ENGINE.iter().map(|s| cpp_frame(s)))
                .collect()
        } else {
            Vec::new()
        };
        let grad = run.alloc(shape.act(), &mse_grad, Role::BackwardTemporaries);
        run.free(seed, &dropped_frames(cpp));
        // Graphed.backward (graphs.py:471) copies it into the static gradient output and
        // replays; the engine drops it when the node returns.
        run.free(grad, &dropped_frames(cpp));
        adamw_step(
            &mut run,
            &params,
            step == 0,
            45,
            DEFAULT_POOL,
            Role::OptimizerTemporaries,
        );
        run.scope_start("Optimizer.zero_grad#AdamW.zero_grad");
        run.scope_end("Optimizer.zero_grad#AdamW.zero_grad");
        held = vec![batch[0], batch[1], loss];
    }
    Graphed {
        run,
        steady,
        warm_up,
    }
}

/// The CUDA graphs notes' whole-network capture: warm-up steps on a side stream, then
/// `with torch.cuda.graph(g):` around forward, loss, backward and a capturable AdamW step
/// (a private pool, id (1, 0); the body's frames are the user's only), then replays with
/// fresh data copied into the static inputs.
fn whole_step_captured(replays: usize, cpp: bool) -> Graphed {
    let shape = mlp_shape();
    let mut run = Run::new();
    if cpp {
        run = run.with_cpp();
    }
    let params = mlp_params(&mut run, shape, DEFAULT_POOL);
    run.alloc(shape.act(), &main_at(33), Role::Inputs);
    run.alloc(shape.act(), &main_at(34), Role::Inputs);
    let graph = (1, 0);
    // One step: forward, loss, backward, optimizer; returns the gradients and the outputs
    // (the prediction and the loss).
    let step = |run: &mut Run,
                pool: (i64, i64),
                first: bool,
                captured: bool,
                line: i64,
                last: &[Id]|
     -> (Vec<Id>, Vec<Id>) {
        let role = |r: Role| if captured { Role::CudaGraph } else { r };
        let (saved, out) = mlp_forward(run, shape, &main_at(line), pool, role(Role::Activations));
        run.free_all(last, &main_at(line));
        let mse = stack(&[
            &[py("torch/nn/functional.py", 3889, "mse_loss")],
            &main_at(line + 1),
        ]);
        let squared = run.alloc_in(pool, shape.act(), &mse, role(Role::ForwardTemporaries));
        let loss = run.alloc_in(pool, 4, &mse, role(Role::Activations));
        run.free(squared, &mse);
        let grads = mlp_backward(
            run,
            shape,
            cpp,
            &saved,
            pool,
            role(Role::BackwardTemporaries),
            role(Role::Gradients),
        );
        adamw_step(
            run,
            &params,
            first,
            line + 3,
            pool,
            role(Role::OptimizerTemporaries),
        );
        (grads, vec![out, loss])
    };
    let zero_grad = |run: &mut Run, grads: &[Id], line: i64| {
        let zero = stack(&[
            &[py("torch/optim/optimizer.py", 1032, "zero_grad")],
            &dynamo_disabled(),
            &main_at(line),
        ]);
        run.scope_start("Optimizer.zero_grad#AdamW.zero_grad");
        run.free_all(grads, &zero);
        run.scope_end("Optimizer.zero_grad#AdamW.zero_grad");
    };
    // Warm-up: zero_grad(set_to_none=True), then a step, three times.
    let (mut grads, mut outputs) = (Vec::new(), Vec::new());
    for i in 0..3 {
        zero_grad(&mut run, &grads, 39);
        (grads, outputs) = step(&mut run, DEFAULT_POOL, i == 0, false, 40, &outputs);
    }
    zero_grad(&mut run, &grads, 49);
    // `torch.cuda.graph.__enter__` has returned: the body carries the user's frames only.
    step(&mut run, graph, false, true, 52, &outputs);
    let steady = run.next_row();
    let mut held: Vec<Id> = Vec::new();
    for _ in 0..replays {
        let batch = mlp_batch(&mut run, shape, 60);
        run.free_all(&held, &main_at(60));
        held = batch.to_vec();
    }
    Graphed {
        run,
        steady,
        warm_up: 0,
    }
}

// ---------------------------------------------------------------------------------------
// torch.compile(mode="reduce-overhead"): cudagraph trees (2.8.0)
// ---------------------------------------------------------------------------------------

/// The frames from the compiled module's call down to the Python wrapper of the compiled
/// graph (`compile_fx.py` `run`), innermost first, for a call from `main` at `line`.
fn compiled_runtime(line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py("torch/_inductor/compile_fx.py", 1655, "run"),
            py("torch/_inductor/output_code.py", 584, "__call__"),
            py(
                "torch/_functorch/_aot_autograd/utils.py",
                126,
                "call_func_at_runtime_with_args",
            ),
            py(
                "torch/_functorch/_aot_autograd/runtime_wrappers.py",
                384,
                "runtime_wrapper",
            ),
            py("torch/_functorch/aot_autograd.py", 1241, "forward"),
            py("torch/_dynamo/eval_frame.py", 929, "_fn"),
            user("model.py", 20, "forward"),
        ],
        &module(),
        &[py("torch/_dynamo/eval_frame.py", 736, "compile_wrapper")],
        &module(),
        &[py("torch/_dynamo/eval_frame.py", 375, "__call__")],
        &main_at(line),
    ])
}

/// The generated module's `call` (inductor's output code, in its cache directory).
fn inductor_call(line: i64) -> Frame {
    Frame {
        filename:
            "/tmp/torchinductor_alex/q3/cq3xkz7bqj4l5vdw2ywuhkz3ndrf5gbd7aukyq5cyjyxsgi7nd2w.py"
                .to_string(),
        line,
        name: "call".to_string(),
    }
}

/// `out = cmodel(x)` under `torch.no_grad()`, `calls` times, with
/// `cmodel = torch.compile(model, mode="reduce-overhead")`: the first call warms up
/// (`CUDAWarmupNode.run`, in the tree's pool (0, 1)), the second records (`_record`; its
/// inputs copied into the pool first), the others replay (no allocation). Inductor's `call`
/// keeps two buffers at a time and returns the last.
fn reduce_overhead(calls: usize, cpp: bool) -> Graphed {
    let shape = mlp_shape();
    let mut run = Run::new();
    if cpp {
        run = run.with_cpp();
    }
    mlp_params(&mut run, shape, DEFAULT_POOL);
    let pool = (0, 1);
    let trees = |frames: &[(i64, &str)]| -> Vec<Frame> {
        frames
            .iter()
            .map(|&(line, name)| py("torch/_inductor/cudagraph_trees.py", line, name))
            .collect()
    };
    // The first call: cudagraphify, add_function, then the warm-up node.
    let warm_up = stack(&[
        &trees(&[
            (685, "run"),
            (2277, "run_eager"),
            (2116, "_run"),
            (2012, "run"),
            (2316, "add_function"),
            (462, "cudagraphify"),
            (403, "deferred_cudagraphify"),
        ]),
        &compiled_runtime(70),
    ]);
    // The second: the tree records a node.
    let recorded = trees(&[
        (1036, "__init__"),
        (2219, "record_function"),
        (2182, "_run"),
        (2012, "run"),
        (387, "deferred_cudagraphify"),
    ]);
    let record = stack(&[
        &trees(&[(1274, "_record")]),
        &recorded,
        &compiled_runtime(70),
    ]);
    let inputs = stack(&[
        &[
            py("torch/_inductor/compile_fx.py", 1664, "static_input"),
            py(
                "torch/_inductor/cudagraph_trees.py",
                1682,
                "_allocate_and_copy_recording_inputs",
            ),
        ],
        &trees(&[
            (970, "__init__"),
            (2219, "record_function"),
            (2182, "_run"),
            (2012, "run"),
            (387, "deferred_cudagraphify"),
        ]),
        &compiled_runtime(70),
    ]);
    let compiled = |run: &mut Run, outer: &[Frame]| -> Id {
        let mut last: Option<Id> = None;
        for k in 0..shape.layers {
            let at = stack(&[&[inductor_call(60 + 6 * k as i64)], outer]);
            let buf = run.alloc_in(pool, shape.act(), &at, Role::CudaGraph);
            if let Some(prev) = last {
                run.free(prev, &at);
            }
            last = Some(buf);
        }
        last.unwrap()
    };
    let mut held: Vec<Id> = Vec::new();
    let mut out: Option<Id> = None;
    let mut recorded = 0;
    for call in 0..calls {
        let x = run.alloc(shape.act(), &main_at(68), Role::Inputs);
        run.free_all(&held, &main_at(68));
        held = vec![x];
        let new = match call {
            0 => Some(compiled(&mut run, &warm_up)),
            1 => {
                run.alloc_in(pool, shape.act(), &inputs, Role::CudaGraph);
                let out = compiled(&mut run, &record);
                recorded = run.next_row();
                Some(out)
            }
            _ => None,
        };
        if let Some(new) = new {
            // `out = cmodel(x)`: the last output goes when the new one is assigned.
            if let Some(old) = out.replace(new) {
                run.free(old, &main_at(70));
            }
        }
    }
    Graphed {
        run,
        steady: recorded,
        warm_up: 0,
    }
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

/// An evaluation at growing lengths: for each of `lengths`, a batch of 4 sequences, then
/// `with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16): logits = model(x)`
/// (`amp`; fp32 otherwise). Returns the run and, per length, the row where its autocast
/// region exits (everything of that forward still alive just before).
fn evaluate(shape: GptShape, amp: bool, lengths: &[u64], cpp: bool) -> (Gpt, Vec<usize>) {
    let mut gpt = Gpt::new(shape, amp, cpp);
    gpt.b = 4;
    let mut exits = Vec::new();
    let mut held: Vec<Id> = Vec::new();
    for &t in lengths {
        gpt.t = t;
        let frames = stack(&[&[user("eval.py", 18, "make_batch")], &main_at(120)]);
        let x = gpt.run.alloc(gpt.b * t * 8, &frames, Role::Inputs);
        let (_, logits) = gpt.forward(Pass::NoGrad, false, &main_at(124));
        gpt.run.free_all(&held, &main_at(124));
        held = vec![x, logits];
        exits.push(gpt.run.next_row());
        let cache = std::mem::take(&mut gpt.cache);
        gpt.run.free_all(&cache, &autocast_exit(&main_at(123)));
    }
    (gpt, exits)
}

/// Asserts nothing alive at `state` is called a parameter that is not one, nor the other way.
fn assert_parameters_exact(case: &Case, state: u32) -> Score {
    let score = case.score_at(state);
    let mixed: Vec<_> = score
        .wrong
        .iter()
        .filter(|((truth, got), _)| *truth == Role::Parameters || *got == Role::Parameters)
        .collect();
    assert!(
        mixed.is_empty(),
        "{}: parameters mixed up: {}",
        case.name,
        score.explain()
    );
    score
}

#[test]
fn a_bf16_training_step_is_read_right_with_gradients_and_adam_state_sized_by_its_weights() {
    let shape = small_gpt();
    for cpp in [false, true] {
        let (gpt, marks) = train(shape, true, false, 2, cpp);
        let params = param_bytes(&gpt);
        let whole = gpt.run.whole();
        let peak = whole.assert_right(0.95);
        whole.assert_reasons_name_frames(whole.peak());
        // The peak is the backward's start: the weights, Adam's two states, the activations
        // the forward saved (the fp32 log-probabilities among them) and the bf16 weight
        // copies the matmuls saved, at most half the fp32 weights (P7).
        assert_eq!(
            peak.truth(Role::Parameters),
            params + weight_copy_bytes(shape)
        );
        assert!(peak.truth(Role::Parameters) - params <= params / 2);
        assert!(peak.got(Role::Activations) > 0 && peak.got(Role::BackwardTemporaries) > 0);
        // Before each optimizer step: one fp32 gradient per weight, the copies gone.
        for &row in &marks.optimizer {
            let at = whole.score_at(row as u32);
            assert_eq!(at.got(Role::Gradients), params, "{}", at.explain());
            assert_eq!(at.got(Role::Parameters), params, "{}", at.explain());
        }
        let end = whole.score_at(whole.end());
        assert_eq!(
            end.got(Role::OptimizerState),
            2 * params,
            "{}",
            end.explain()
        );
        assert_eq!(end.got(Role::Gradients), 0);
    }
}

#[test]
#[ignore = "memsight misses the bf16 weight copies the matmuls save for the backward when stacks are Python-only: no cached_cast frame, not freed by autocast's __exit__ (the backward frees them), so they are read as activations"]
fn autocast_weight_copies_saved_for_the_backward_are_parameters_with_python_stacks() {
    let (gpt, _) = train(small_gpt(), true, false, 2, false);
    let whole = gpt.run.whole();
    let peak = assert_parameters_exact(&whole, whole.peak());
    assert_eq!(
        peak.got(Role::Parameters),
        param_bytes(&gpt) + weight_copy_bytes(small_gpt())
    );
}

#[test]
#[ignore = "memsight takes, among cached_cast allocations of one forward whose size is half a weight's, the earliest up to the weights' count: a bf16 input cast of the same size (B*T = 4*d here) made earlier in the forward is taken for the MLP's weight copy"]
fn autocast_weight_copies_are_told_from_input_casts_of_the_same_size_with_cpp_stacks() {
    // 4 × 1024 tokens of width 1024: each input cast to bf16 is 8 MiB, half the MLP's
    // 4096 × 1024 fp32 weights.
    let (gpt, _) = train(small_gpt(), true, false, 2, true);
    let whole = gpt.run.whole();
    let peak = assert_parameters_exact(&whole, whole.peak());
    assert_eq!(
        peak.got(Role::Parameters),
        param_bytes(&gpt) + weight_copy_bytes(small_gpt())
    );
}

#[test]
fn a_bf16_training_step_recorded_late_or_wrapped_keeps_weights_gradients_and_states() {
    for cpp in [false, true] {
        let (gpt, marks) = train(small_gpt(), true, false, 2, cpp);
        let params = param_bytes(&gpt);
        // Recording started with the first step: the weights carry no frames; the gradients
        // the backward makes pair with them.
        let late = gpt.run.cut(marks.step[0], Cut::LateStart);
        let at_step = late.score_at((marks.optimizer[1] - marks.step[0]) as u32);
        assert_eq!(
            at_step.got(Role::Parameters),
            params,
            "{}",
            at_step.explain()
        );
        assert_eq!(
            at_step.got(Role::Gradients),
            params,
            "{}",
            at_step.explain()
        );
        assert_eq!(at_step.got(Role::OptimizerState), 2 * params);
        late.assert_right(0.95);
        // A ring buffer that wrapped in the second backward: the blocks keep their frames.
        let wrapped = gpt.run.cut(marks.backward[1], Cut::Wrapped);
        let score = wrapped.assert_right(0.95);
        assert!(
            score.got(Role::OptimizerState) >= 2 * params,
            "{}",
            score.explain()
        );
        wrapped.assert_reasons_name_frames(wrapped.peak());
    }
}

#[test]
fn a_bf16_training_state_only_snapshot_holds_its_weights_and_adam_state() {
    for cpp in [false, true] {
        let (gpt, _) = train(small_gpt(), true, false, 2, cpp);
        let params = param_bytes(&gpt);
        let state = gpt.run.state_only();
        let end = state.score_at(state.end());
        assert!(end.right_share() >= 0.999, "{}", end.explain());
        assert_eq!(end.got(Role::Parameters), params);
        assert_eq!(end.got(Role::OptimizerState), 2 * params);
        state.assert_reasons_name_frames(state.end());
    }
}

#[test]
fn a_bf16_evaluation_reads_its_first_region_weight_copies_as_parameters() {
    for cpp in [false, true] {
        let (gpt, exits) = evaluate(small_gpt(), true, &[256, 512], cpp);
        let params = param_bytes(&gpt);
        let whole = gpt.run.whole();
        // Before the first region exits: every weight's and bias's copy is alive (no_grad
        // keeps them in the cache until `__exit__`), and the logits.
        let first = assert_parameters_exact(&whole, exits[0] as u32);
        assert_eq!(first.got(Role::Parameters), params + gpt.copies);
        assert_eq!(first.got(Role::Activations), 4 * 256 * 32768 * 2);
        whole.assert_reasons_name_frames(exits[0] as u32);
    }
}

#[test]
fn a_bf16_evaluation_at_growing_lengths_grows_activations_and_keeps_weight_copies_as_parameters() {
    let lengths = [256, 512, 1024, 2048];
    for cpp in [false, true] {
        let (gpt, exits) = evaluate(small_gpt(), true, &lengths, cpp);
        let params = param_bytes(&gpt);
        let whole = gpt.run.whole();
        let mut last = 0;
        for (&row, &t) in exits.iter().zip(&lengths) {
            let score = assert_parameters_exact(&whole, row as u32);
            // The weight copies stay the model's size whatever the length ...
            assert_eq!(
                score.got(Role::Parameters),
                params + gpt.copies,
                "{}",
                score.explain()
            );
            // ... and the activations (the logits, and the next batch, which memsight reads
            // as the forward's: `the_batches_of_a_forward_only_loop_are_inputs`) grow with it.
            let logits = 4 * t * 32768 * 2;
            assert!(
                (logits..logits + 4 * t * 8 * 2).contains(&score.got(Role::Activations)),
                "{}",
                score.explain()
            );
            assert!(score.got(Role::Activations) > last);
            last = score.got(Role::Activations);
        }
    }
}

#[test]
#[ignore = "memsight reads the batch a forward-only loop makes between two forwards as part of the forward (the phase goes on through the training script's frames): forward temporaries, or activations when kept to the end, not inputs"]
fn the_batches_of_a_forward_only_loop_are_inputs() {
    let (gpt, exits) = evaluate(small_gpt(), true, &[256, 512, 1024], false);
    let whole = gpt.run.whole();
    for &row in &exits {
        let score = whole.score_at(row as u32);
        assert_eq!(
            score.got(Role::Inputs),
            score.truth(Role::Inputs),
            "{}",
            score.explain()
        );
    }
    let compiled = reduce_overhead(4, false).run.whole();
    let end = compiled.score_at(compiled.end());
    assert_eq!(
        end.got(Role::Inputs),
        end.truth(Role::Inputs),
        "{}",
        end.explain()
    );
}

#[test]
fn a_checkpointed_step_recomputes_its_blocks_in_the_backward_as_backward_temporaries() {
    for cpp in [false, true] {
        let (gpt, marks) = train(small_gpt(), false, true, 2, cpp);
        let params = param_bytes(&gpt);
        let whole = gpt.run.whole();
        let peak = whole.assert_right(0.99);
        whole.assert_reasons_name_frames(whole.peak());
        // Only the blocks' inputs (and the head's tensors) are kept through the forward.
        assert!(peak.truth(Role::Activations) < peak.truth(Role::BackwardTemporaries));
        // Right after each recomputation: what it remade is the backward's, made and freed
        // in it, though its frames are the block's forward.
        for &row in &gpt.recomputed {
            let at = whole.score_at(row as u32);
            assert!(at.right_share() >= 0.999, "{}", at.explain());
            assert!(at.got(Role::BackwardTemporaries) > 0);
            whole.assert_reasons_name_frames(row as u32);
        }
        let before_step = whole.score_at(marks.optimizer[1] as u32);
        assert_eq!(before_step.got(Role::Gradients), params);
        // Cut where the second step begins, and wrapped in its backward.
        let late = gpt.run.cut(marks.step[1], Cut::LateStart);
        late.assert_right(0.95);
        let wrapped = gpt.run.cut(marks.backward[1], Cut::Wrapped);
        wrapped.assert_right(0.99);
    }
}

#[test]
fn a_checkpointed_bf16_step_is_read_right_at_its_peak() {
    let (gpt, _) = train(small_gpt(), true, true, 2, true);
    let whole = gpt.run.whole();
    let peak = whole.assert_right(0.99);
    // The head is not checkpointed: its weight's copy is kept for the backward.
    assert_eq!(
        peak.got(Role::Parameters),
        param_bytes(&gpt) + 32768 * 1024 * 2,
        "{}",
        peak.explain()
    );
    whole.assert_reasons_name_frames(whole.peak());
}

#[test]
#[ignore = "memsight looks for autocast weight copies in the forward only: a checkpointed block recomputed inside the backward (recompute_fn enters its own autocast region) casts its weights again, and those copies are read as backward temporaries"]
fn a_checkpointed_bf16_step_recomputes_weight_copies_as_parameters() {
    for cpp in [false, true] {
        let (gpt, _) = train(small_gpt(), true, true, 2, cpp);
        let whole = gpt.run.whole();
        for &row in &gpt.recomputed {
            let at = assert_parameters_exact(&whole, row as u32);
            // A block's four weight copies (its biases' went with the recomputation's region).
            let d = 1024;
            assert_eq!(at.got(Role::Parameters), param_bytes(&gpt) + 12 * d * d * 2);
        }
    }
}

#[test]
fn make_graphed_callables_keeps_its_static_buffers_and_gradients_as_cuda_graph() {
    let shape = mlp_shape();
    for cpp in [false, true] {
        let graphed = graphed_callables(3, false, cpp);
        let whole = graphed.run.whole();
        let peak = whole.assert_right(0.99);
        assert_eq!(peak.got(Role::CudaGraph), peak.truth(Role::CudaGraph));
        whole.assert_reasons_name_frames(whole.peak());
        // The graphs' memory: the static output, the static gradient output (default pool)
        // and the static weight gradients the backward graph writes, which `.grad` views.
        let end = whole.score_at(whole.end());
        assert!(end.right_share() >= 0.999, "{}", end.explain());
        assert_eq!(end.got(Role::CudaGraph), 2 * shape.act() + shape.params());
        assert_eq!(end.got(Role::OptimizerState), 2 * shape.params());
        assert_eq!(end.got(Role::Gradients), 0);
        // A ring buffer that wrapped after capture: blocks keep their frames and pools.
        let wrapped = graphed.run.cut(graphed.steady, Cut::Wrapped);
        let score = wrapped.score_at(wrapped.end());
        assert!(score.right_share() >= 0.999, "{}", score.explain());
    }
}

#[test]
#[ignore = "data (frameworks/torch.rs, not this helper's): make_graphed_callables says cuda_graph on every line, so its warm-up iterations (graphs.py:358 forward, 362 autograd.grad, default pool, freed before capture) are read as the graph's memory; only 387, 403-404 and 411 make it"]
fn make_graphed_callables_warm_up_is_an_ordinary_forward_and_backward() {
    let shape = mlp_shape();
    for cpp in [false, true] {
        let graphed = graphed_callables(1, false, cpp);
        let whole = graphed.run.whole();
        // In the second warm-up iteration, after its backward: the last forward's output and
        // the gradients autograd.grad returned, in the default pool.
        let score = whole.score_at(graphed.warm_up as u32);
        assert_eq!(score.got(Role::CudaGraph), 0, "{}", score.explain());
        assert_eq!(
            score.got(Role::Gradients),
            shape.params(),
            "{}",
            score.explain()
        );
        assert!(score.right_share() >= 0.9, "{}", score.explain());
    }
}

#[test]
fn a_mem_pool_holding_the_weights_beside_a_graphs_pool_is_not_a_graph() {
    let shape = mlp_shape();
    for cpp in [false, true] {
        let graphed = graphed_callables(2, true, cpp);
        let whole = graphed.run.whole();
        for state in [whole.peak(), whole.end()] {
            let score = whole.score_at(state);
            assert!(score.right_share() >= 0.999, "{}", score.explain());
            assert_eq!(
                score.got(Role::Parameters),
                shape.params(),
                "{}",
                score.explain()
            );
        }
        let end = whole.score_at(whole.end());
        assert_eq!(end.got(Role::CudaGraph), 2 * shape.act() + shape.params());
    }
}

#[test]
fn a_whole_step_captured_with_torch_cuda_graph_is_cuda_graph_memory() {
    let shape = mlp_shape();
    for cpp in [false, true] {
        let captured = whole_step_captured(3, cpp);
        let whole = captured.run.whole();
        whole.assert_right(0.99);
        // After capture: the private pool holds the weights' gradients, the prediction and
        // the loss, made under the user's frames alone.
        for state in [captured.steady as u32, whole.end()] {
            let score = whole.score_at(state);
            assert!(score.right_share() >= 0.999, "{}", score.explain());
            assert_eq!(
                score.got(Role::CudaGraph),
                shape.params() + shape.act() + 512
            );
            assert_eq!(score.got(Role::Gradients), 0);
            assert_eq!(score.got(Role::OptimizerState), 2 * shape.params());
        }
        whole.assert_reasons_name_frames(whole.end());
        // Recording turned on for the replays: the pool's blocks carry no frames; its id,
        // (1, 0), is a graph captured without a pool given.
        let late = captured.run.cut(captured.steady, Cut::LateStart);
        let end = late.score_at(late.end());
        assert_eq!(
            end.got(Role::CudaGraph),
            end.truth(Role::CudaGraph),
            "{}",
            end.explain()
        );
    }
}

#[test]
#[ignore = "memsight pairs blocks from before the trace only with the gradients and optimizer steps the trace shows: replays of a captured step show neither (the graph's pool holds the gradients, the step runs inside the graph), so Adam's two states per weight are read as parameters"]
fn a_whole_step_captured_and_recorded_late_tells_adam_state_from_weights() {
    let shape = mlp_shape();
    for cpp in [false, true] {
        let captured = whole_step_captured(3, cpp);
        // Recording turned on for the replays: weights and states carry no frames; each
        // weight has its gradient in the graph's pool (id (1, 0)) and two states beside it.
        let late = captured.run.cut(captured.steady, Cut::LateStart);
        let score = late.score_at(late.end());
        assert_eq!(
            score.got(Role::Parameters),
            shape.params(),
            "{}",
            score.explain()
        );
        assert_eq!(score.got(Role::OptimizerState), 2 * shape.params());
        late.assert_right(0.9);
    }
}

#[test]
fn torch_compile_reduce_overhead_records_into_its_tree_pool() {
    let shape = mlp_shape();
    for cpp in [false, true] {
        let compiled = reduce_overhead(4, cpp);
        let whole = compiled.run.whole();
        // Right after recording: the static input and the static output, made under
        // `_allocate_and_copy_recording_inputs` and `_record`.
        let recorded = whole.score_at(compiled.steady as u32);
        assert!(
            recorded.got(Role::CudaGraph) >= 2 * shape.act(),
            "{}",
            recorded.explain()
        );
        assert_eq!(recorded.got(Role::Parameters), shape.params());
        // At the end the tree keeps the static input and output; replays allocate nothing.
        let end = whole.score_at(whole.end());
        assert_eq!(
            end.got(Role::CudaGraph),
            2 * shape.act(),
            "{}",
            end.explain()
        );
        assert_eq!(end.got(Role::CudaGraph), end.truth(Role::CudaGraph));
        whole.assert_reasons_name_frames(whole.end());
    }
}

#[test]
#[ignore = "memsight reads the batch a compiled inference loop makes between two calls as the forward's (forward temporaries, activations at the end), not inputs"]
fn torch_compile_reduce_overhead_is_read_right_at_its_peak() {
    for cpp in [false, true] {
        let compiled = reduce_overhead(4, cpp);
        compiled.run.whole().assert_right(0.9);
    }
}
