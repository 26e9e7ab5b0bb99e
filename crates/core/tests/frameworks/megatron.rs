//! Runs of Megatron-LM training a GPT with Transformer Engine layers, as they allocate: stacks
//! from Megatron-LM core_v0.19.0 (`pretrain_gpt.py` in a checkout), Transformer Engine v2.18
//! and torch 2.8.0 (Python 3.12, so no `<listcomp>` frames), each line read in those releases.
//!
//! The job: `torchrun pretrain_gpt.py --bf16 --use-distributed-optimizer
//! --tensor-model-parallel-size 2 --sequence-parallel --transformer-impl transformer_engine
//! --untie-embeddings-and-output-weights --disable-bias-linear --no-bias-dropout-fusion`
//! on 8 GPUs (data parallel 4), one rank's memory seen. Its allocations, each with the role
//! its maker gave it:
//! - setup: the TE layers' weights and the embeddings (the position embedding made on the CPU,
//!   moved by `get_model`'s `.cuda()` and cast by `Float16Module`), DDP's `param_data` (bf16)
//!   and `grad_data` (fp32) made a few lines apart in `_ParamAndGradBuffer.__init__`, the
//!   weights copied into `param_data` and freed, then the distributed optimizer's fp32 main
//!   shards (`clone().float()`, the bf16 clone freed);
//! - each step: inputs from `get_batch`, the forward's activations (TE's saved LayerNorm
//!   outputs, GEMM outputs, fused attention's output and softmax statistics, dropout masks,
//!   the fp32 logits of the vocab-parallel cross entropy) and temporaries, the sequence-parallel
//!   all-gathers and reduce-scatters, TE's cuBLAS workspace, torch's cuBLAS workspace and the
//!   `GlobalMemoryBuffer` made in the first forward, TE's dummy wgrads made in the first
//!   backward, the autograd-made gradients of the embeddings and LayerNorm weights freed by
//!   DDP's hook, then TE FusedAdam's moments made in the first optimizer step;
//! - variants: a middle pipeline stage running 1F1B (receive buffers), full activation
//!   recompute (the layer re-run inside the backward), and FP8 (TE's weight cache and scaling
//!   state).
//!
//! Each is scored whole (Python frames and `stacks="all"`), cut where recording started late
//! or a ring buffer wrapped, and as a state-only snapshot; the physics is Megatron's own table
//! (`docs/user-guide/features/dist_optimizer.md`): bf16 parameters and fp32 gradients with the
//! distributed optimizer cost 6 + 12/d bytes per parameter on each rank. Every frame's line
//! was checked against the releases it names (the line is in the function the frame names).

use crate::run::*;
use memsight_core::analysis::categories::Role;
use memsight_core::model::cut::Cut;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// Where the Megatron-LM checkout is (its scripts at the root, `megatron/` below).
const MEGATRON: &str = "/workspace/megatron-lm/";
/// Where pip installed Transformer Engine and torch (an NGC container).
const PACKAGES: &str = "/usr/local/lib/python3.12/dist-packages/";

/// A frame of Megatron-LM's checkout (`megatron/training/training.py`, `pretrain_gpt.py`).
fn mlm(file: &str, line: i64, name: &str) -> Frame {
    Frame {
        filename: format!("{MEGATRON}{file}"),
        line,
        name: name.to_string(),
    }
}

/// A frame of Transformer Engine's PyTorch package (`module/linear.py`).
fn te(file: &str, line: i64, name: &str) -> Frame {
    Frame {
        filename: format!("{PACKAGES}transformer_engine/pytorch/{file}"),
        line,
        name: name.to_string(),
    }
}

/// A frame of torch (`nn/modules/module.py`).
fn th(file: &str, line: i64, name: &str) -> Frame {
    Frame {
        filename: format!("{PACKAGES}torch/{file}"),
        line,
        name: name.to_string(),
    }
}

/// `module(...)`: torch's call of a module's forward, innermost first.
fn call() -> Vec<Frame> {
    vec![
        th("nn/modules/module.py", 1784, "_call_impl"),
        th("nn/modules/module.py", 1773, "_wrapped_call_impl"),
    ]
}

/// TE's `@no_torch_dynamo()` around a module's forward: dynamo's disable, then TE's wrapper.
fn no_dynamo() -> Vec<Frame> {
    vec![
        th("_dynamo/eval_frame.py", 929, "_fn"),
        te("jit.py", 67, "wrapper"),
    ]
}

/// `@torch.no_grad()` around a method.
fn no_grad() -> Frame {
    th("utils/_contextlib.py", 120, "decorate_context")
}

/// A custom autograd function's forward, called through `Function.apply`.
fn apply_fwd() -> Frame {
    th("autograd/function.py", 576, "apply")
}

/// A custom autograd function's backward, run by the autograd engine.
fn apply_bwd() -> Frame {
    th("autograd/function.py", 311, "apply")
}

/// The C++ frames of the autograd engine's device thread above a node.
fn engine_frames() -> Vec<Frame> {
    [
        "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)",
        "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
        "torch::autograd::Engine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)",
        "torch::autograd::python::PythonEngine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)",
        "start_thread",
        "clone",
    ]
    .into_iter()
    .map(cpp)
    .collect()
}

/// `quantize_weight` quantizing a weight (TE's FP8 weight cache), innermost first: the
/// quantizer's C++ call under `quantize_impl`.
fn quantize_weight() -> Vec<Frame> {
    vec![
        te("tensor/float8_tensor.py", 113, "quantize_impl"),
        te("tensor/_quantization_helpers.py", 29, "forward"),
        te("quantized_tensor.py", 294, "quantize"),
        te("module/base.py", 851, "quantize_weight"),
    ]
}

/// The script, outermost.
fn script() -> Vec<Frame> {
    vec![mlm("pretrain_gpt.py", 523, "<module>")]
}

/// A setup stack: `frames` (ending in `setup_model_and_optimizer`), then `pretrain` and the
/// script.
fn setup(frames: &[Frame]) -> Vec<Frame> {
    stack(&[
        frames,
        &[mlm("megatron/training/training.py", 1228, "pretrain")],
        &script(),
    ])
}

/// `get_model` building the model, `line` the call in it.
fn get_model(line: i64) -> Vec<Frame> {
    setup(&[
        mlm("megatron/training/training.py", line, "get_model"),
        mlm(
            "megatron/training/training.py",
            2061,
            "_build_model_wrapper",
        ),
        mlm(
            "megatron/training/training.py",
            2076,
            "setup_model_and_optimizer",
        ),
    ])
}

/// `GPTModel.__init__` at `line`, under the model provider.
fn gpt_init(line: i64) -> Vec<Frame> {
    stack(&[
        &[
            mlm("megatron/core/models/gpt/gpt_model.py", line, "__init__"),
            mlm("gpt_builders.py", 86, "gpt_builder"),
            mlm("model_provider.py", 59, "model_provider"),
            mlm("megatron/training/training.py", 1758, "build_model"),
        ],
        &get_model(1772),
    ])
}

/// `TransformerLayer.__init__` at `line`, built by the block.
fn layer_init(line: i64) -> Vec<Frame> {
    stack(&[
        &[
            mlm(
                "megatron/core/transformer/transformer_layer.py",
                line,
                "__init__",
            ),
            mlm(
                "megatron/core/transformer/spec_utils.py",
                120,
                "build_module",
            ),
            mlm(
                "megatron/core/transformer/transformer_block.py",
                353,
                "build_layer",
            ),
            mlm(
                "megatron/core/transformer/transformer_block.py",
                365,
                "_build_layers",
            ),
            mlm(
                "megatron/core/transformer/transformer_block.py",
                321,
                "__init__",
            ),
        ],
        &gpt_init(227),
    ])
}

/// A `TELayerNormColumnParallelLinear` (QKV or fc1) made by `caller`, `line` in TE's
/// `LayerNormLinear.__init__`.
fn te_layernorm_linear_init(line: i64, caller: &[Frame]) -> Vec<Frame> {
    stack(&[
        &[
            te("module/layernorm_linear.py", line, "__init__"),
            mlm(
                "megatron/core/extensions/transformer_engine.py",
                1262,
                "__init__",
            ),
        ],
        caller,
    ])
}

/// A `TERowParallelLinear` (proj or fc2) made by `caller`.
fn te_row_linear_init(caller: &[Frame]) -> Vec<Frame> {
    stack(&[
        &[
            te("module/linear.py", 1622, "__init__"),
            mlm(
                "megatron/core/extensions/transformer_engine.py",
                1033,
                "__init__",
            ),
            mlm(
                "megatron/core/extensions/transformer_engine.py",
                1683,
                "__init__",
            ),
        ],
        caller,
    ])
}

/// The sizes of the model on one rank.
#[derive(Clone, Copy, Debug)]
struct Shape {
    layers: usize,
    hidden: u64,
    ffn: u64,
    heads: u64,
    vocab: u64,
    seq: u64,
    tp: u64,
    dp: u64,
}

impl Shape {
    /// A 2-layer GPT (hidden 2048, FFN 8192, 16 heads, vocabulary 32768) on sequences of 4096
    /// tokens, tensor parallel 2 with sequence parallelism, data parallel 4.
    fn small() -> Self {
        Shape {
            layers: 2,
            hidden: 2048,
            ffn: 8192,
            heads: 16,
            vocab: 32768,
            seq: 4096,
            tp: 2,
            dp: 4,
        }
    }

    /// Tokens of a micro-batch (of one sequence), and this rank's sequence-parallel share.
    fn tokens(&self) -> u64 {
        self.seq
    }

    fn local_tokens(&self) -> u64 {
        self.seq / self.tp
    }

    /// One `[local tokens, hidden]` bf16 tensor: the residual stream on this rank.
    fn hidden_local(&self) -> u64 {
        self.local_tokens() * self.hidden * 2
    }

    /// One `[tokens, hidden]` bf16 tensor: a gathered sequence.
    fn hidden_full(&self) -> u64 {
        self.tokens() * self.hidden * 2
    }
}

/// What a parameter is, in `model.parameters()` order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    WordEmbedding,
    PositionEmbedding,
    Proj,
    QkvNormWeight,
    QkvNormBias,
    Qkv,
    Fc1NormWeight,
    Fc1NormBias,
    Fc1,
    Fc2,
    FinalNormWeight,
    FinalNormBias,
    Output,
}

/// The parameters of the model on this rank, in `model.parameters()` order, with their
/// element counts.
fn parameters(s: &Shape, pre: bool, post: bool) -> Vec<(Kind, u64)> {
    let mut out = Vec::new();
    if pre {
        out.push((Kind::WordEmbedding, s.vocab / s.tp * s.hidden));
        out.push((Kind::PositionEmbedding, s.seq * s.hidden));
    }
    for _ in 0..s.layers {
        out.push((Kind::Proj, s.hidden * s.hidden / s.tp));
        out.push((Kind::QkvNormWeight, s.hidden));
        out.push((Kind::QkvNormBias, s.hidden));
        out.push((Kind::Qkv, 3 * s.hidden / s.tp * s.hidden));
        out.push((Kind::Fc1NormWeight, s.hidden));
        out.push((Kind::Fc1NormBias, s.hidden));
        out.push((Kind::Fc1, s.ffn / s.tp * s.hidden));
        out.push((Kind::Fc2, s.hidden * s.ffn / s.tp));
    }
    if post {
        out.push((Kind::FinalNormWeight, s.hidden));
        out.push((Kind::FinalNormBias, s.hidden));
        out.push((Kind::Output, s.vocab / s.tp * s.hidden));
    }
    out
}

/// The distributed optimizer's layout of one buffer (core_v0.19.0 `param_layout.py`): the
/// parameters in reverse order, each start padded to 64 elements, buckets closed once they
/// hold `bucket` elements and padded to lcm(dp, 128); each bucket's elements split evenly
/// over the data-parallel ranks. Returns the padded buffer size and, for `rank`, the element
/// count of each parameter's piece in its shard (parameter index, elements).
fn layout(numels: &[u64], dp: u64, rank: u64) -> (u64, Vec<(usize, u64)>) {
    let bucket = 40_000_000u64.max(1_000_000 * dp);
    let lcm = |a: u64, b: u64| a / gcd(a, b) * b;
    let end_pad = lcm(dp, 128);
    let pad = |x: u64, d: u64| x.div_ceil(d) * d;
    let mut placed = Vec::new();
    let mut buckets = Vec::new();
    let (mut start, mut bucket_start) = (0u64, 0u64);
    for (i, &n) in numels.iter().enumerate().rev() {
        let s = pad(start, 64);
        let e = s + n;
        placed.push((i, s, e));
        start = e;
        if e - bucket_start >= bucket {
            let end = pad(e, end_pad);
            buckets.push((bucket_start, end));
            bucket_start = end;
            start = end;
        }
    }
    if start > bucket_start {
        let end = pad(start, end_pad);
        buckets.push((bucket_start, end));
        start = end;
    }
    let mut pieces = Vec::new();
    for &(b0, b1) in &buckets {
        let shard = (b1 - b0) / dp;
        let (r0, r1) = (b0 + rank * shard, b0 + (rank + 1) * shard);
        for &(i, s, e) in &placed {
            let (lo, hi) = (s.max(r0), e.min(r1));
            if lo < hi {
                pieces.push((i, hi - lo));
            }
        }
    }
    (start, pieces)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// How the run trains.
#[derive(Clone, Copy, Debug)]
struct Config {
    shape: Shape,
    microbatches: usize,
    steps: usize,
    /// C++ frames recorded (`stacks="all"`).
    cpp: bool,
    /// `--recompute-granularity full --recompute-method uniform --recompute-num-layers 1`.
    recompute: bool,
    /// `--fp8-format hybrid --fp8-recipe delayed`: TE's FP8 weight cache and scaling state.
    fp8: bool,
}

impl Config {
    fn new(cpp: bool) -> Self {
        Config {
            shape: Shape::small(),
            microbatches: 2,
            steps: 2,
            cpp,
            recompute: false,
            fp8: false,
        }
    }
}

/// What one rank's setup made, to check the physics against.
#[derive(Clone, Debug, Default)]
struct Made {
    /// Elements of the DDP buffer (padded).
    numel: u64,
    /// Parameters on this rank (unpadded).
    params: u64,
    /// Elements of this rank's main-parameter shards.
    shard_numel: u64,
}

/// A Megatron-LM run being written.
struct Megatron {
    run: Run,
    cfg: Config,
    made: Made,
    /// Persistent blocks made once, lazily, by the first call that needs them.
    te_workspace: bool,
    torch_workspace: bool,
    global_buffer: bool,
    dummy_wgrads: Vec<Kind>,
    fp8_meta: Vec<(usize, Kind)>,
    fp8_weights: Vec<(usize, Kind)>,
    /// The distributed optimizer's fp32 main shards, one per parameter piece.
    shards: Vec<Id>,
    /// Their element counts.
    shard_sizes: Vec<u64>,
    /// TE FusedAdam's moments, once made.
    adam: Vec<Id>,
    /// Inside a recompute's nested backward: the Python frames that run it.
    reentrant: Vec<Frame>,
    /// The trace row of the last gradient the engine summed into a new tensor.
    summed_row: usize,
    /// The trace rows right after each recomputed forward.
    recomputed_rows: Vec<usize>,
    /// The trace rows right after each fused attention's backward made dQKV.
    attention_backward_rows: Vec<usize>,
    /// The trace rows where each step starts, the main shards and Adam's moments were made.
    step_rows: Vec<usize>,
    shard_rows: Vec<usize>,
    adam_rows: Vec<usize>,
}

/// What one layer's forward keeps until its backward.
#[derive(Default)]
struct Saved {
    /// QKV's LayerNorm output, means and inverse deviations; fc1's.
    ln1: Vec<Id>,
    ln2: Vec<Id>,
    /// QKV's output (the fused attention's q, k, v), fc1's output (GELU's input).
    qkv: Id,
    fc1: Id,
    /// The fused attention's output, softmax statistics and RNG state.
    attn: Vec<Id>,
    /// GELU's output, fc2's input (bf16 only: FP8 keeps its quantized copy instead).
    gelu: Option<Id>,
    /// The dropout masks after attention and after the MLP.
    masks: Vec<Id>,
    /// The residual after attention: fc1's LayerNorm input, freed in its backward.
    mid: Id,
    /// With FP8: proj's and fc2's quantized inputs.
    quantized: Vec<Id>,
}

impl Saved {
    fn all(&self) -> Vec<Id> {
        let mut out = Vec::new();
        out.extend(&self.ln1);
        out.extend(&self.ln2);
        out.extend([self.qkv, self.fc1, self.mid]);
        out.extend(&self.attn);
        out.extend(self.gelu);
        out.extend(&self.masks);
        out.extend(&self.quantized);
        out
    }
}

impl Megatron {
    fn new(cfg: Config) -> Self {
        let run = if cfg.cpp {
            Run::new().with_cpp()
        } else {
            Run::new()
        };
        Megatron {
            run,
            cfg,
            made: Made::default(),
            te_workspace: false,
            torch_workspace: false,
            global_buffer: false,
            dummy_wgrads: Vec::new(),
            fp8_meta: Vec::new(),
            fp8_weights: Vec::new(),
            shards: Vec::new(),
            shard_sizes: Vec::new(),
            adam: Vec::new(),
            reentrant: Vec::new(),
            summed_row: 0,
            recomputed_rows: Vec::new(),
            attention_backward_rows: Vec::new(),
            step_rows: Vec::new(),
            shard_rows: Vec::new(),
            adam_rows: Vec::new(),
        }
    }

    fn s(&self) -> Shape {
        self.cfg.shape
    }

    /// A backward allocation's stack: the Python frames of the autograd function's
    /// `backward` it is made in (none for a native node), then, with C++ frames, the node and
    /// the engine's thread. Inside a recompute's nested backward, the frames of the
    /// checkpoint's `backward` that runs it come after (it runs on the same thread).
    fn bwd(&self, python: &[Frame], node: &str) -> Vec<Frame> {
        let cpp_on = self.cfg.cpp;
        let mut out = python.to_vec();
        if cpp_on {
            out.push(cpp(node));
            out.push(cpp(NODE_CALL));
        }
        if !self.reentrant.is_empty() {
            if cpp_on {
                out.push(cpp("torch::autograd::Engine::execute(std::vector<torch::autograd::Edge, std::allocator<torch::autograd::Edge> > const&, std::vector<at::Tensor, std::allocator<at::Tensor> > const&, bool, bool, bool, std::vector<torch::autograd::Edge, std::allocator<torch::autograd::Edge> > const&)"));
                out.push(cpp("THPEngine_run_backward(_object*, _object*, _object*)"));
            }
            out.extend(self.reentrant.iter().cloned());
            if cpp_on {
                out.push(cpp(PY_NODE));
                out.push(cpp(NODE_CALL));
            }
        }
        if cpp_on {
            out.extend(engine_frames());
        }
        out
    }

    /// The stack autograd frees a saved tensor with when node `node` is done with it.
    fn released(&self, node: &str) -> Vec<Frame> {
        let mut out = if self.cfg.cpp {
            vec![
                cpp("torch::autograd::SavedVariable::reset_data()"),
                cpp(&format!(
                    "{}::release_variables()",
                    node.split("::apply").next().unwrap()
                )),
            ]
        } else {
            Vec::new()
        };
        if !self.reentrant.is_empty() {
            out.extend(self.reentrant.iter().cloned());
        }
        if self.cfg.cpp {
            out.extend(engine_frames());
        }
        out
    }

    /// DDP's post-hook dropping an autograd-made `param.grad` after adding it to `main_grad`.
    fn ddp_hook(&self) -> Vec<Frame> {
        let mut out = vec![mlm(
            "megatron/core/distributed/distributed_data_parallel.py",
            494,
            "hook",
        )];
        if self.cfg.cpp {
            out.push(cpp("torch::autograd::PyFunctionTensorPostAccGradHooks::apply_with_saved(torch::autograd::Variable&, torch::dynamo::autograd::SwapSavedVariables&)"));
            out.push(cpp("torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)"));
            out.extend(engine_frames());
        }
        out
    }

    // ---------------------------------------------------------------- setup

    /// Builds the model, wraps it in DDP, builds the distributed optimizer. `pre`/`post`:
    /// this rank holds the embedding / the output layer (pipeline stages).
    fn setup(&mut self, pre: bool, post: bool) {
        let s = self.s();
        let params = parameters(&s, pre, post);
        let mut weights: Vec<Option<Id>> = params
            .iter()
            .map(|&(kind, numel)| self.make_weight(kind, numel))
            .collect();
        // get_model: the position embedding, made on the CPU by torch.nn.Embedding, is moved
        // by `.cuda()` (fp32), then cast by Float16Module (bf16, the fp32 copy freed).
        if pre {
            let i = params
                .iter()
                .position(|p| p.0 == Kind::PositionEmbedding)
                .unwrap();
            let numel = params[i].1;
            // `Module.cuda` / `bfloat16` at `line` (their lambda on the same line), `_apply`
            // down GPTModel → LanguageModelEmbedding → Embedding to the weight.
            let apply = |at: Vec<Frame>, outer: &str, line: i64| {
                stack(&[
                    &[
                        th("nn/modules/module.py", line, "<lambda>"),
                        th("nn/modules/module.py", 955, "_apply"),
                        th("nn/modules/module.py", 928, "_apply"),
                        th("nn/modules/module.py", 928, "_apply"),
                        th("nn/modules/module.py", line, outer),
                    ],
                    &at,
                ])
            };
            let fp32 = self.run.alloc(
                numel * 4,
                &apply(get_model(1818), "cuda", 1082),
                Role::Parameters,
            );
            let cast = stack(&[
                &[mlm("megatron/core/transformer/module.py", 464, "__init__")],
                &get_model(1823),
            ]);
            let bf16 = self.run.alloc(
                numel * 2,
                &apply(cast.clone(), "bfloat16", 1208),
                Role::Parameters,
            );
            self.run.free(fp32, &apply(cast, "bfloat16", 1208));
            weights[i] = Some(bf16);
        }
        // DDP: one buffer for the (bf16, fp32) parameters, param_data then grad_data, then
        // every weight copied into param_data and freed.
        let numels: Vec<u64> = params.iter().map(|p| p.1).collect();
        let rank = 0;
        let (numel, pieces) = layout(&numels, s.dp, rank);
        let ddp = |line: i64| {
            stack(&[
                &[
                    mlm(
                        "megatron/core/distributed/param_and_grad_buffer.py",
                        line,
                        "__init__",
                    ),
                    mlm(
                        "megatron/core/distributed/distributed_data_parallel.py",
                        249,
                        "__init__",
                    ),
                    mlm(
                        "megatron/training/training.py",
                        1695,
                        "wrap_model_chunks_with_ddp",
                    ),
                ],
                &get_model(1880),
            ])
        };
        self.run.alloc(numel * 2, &ddp(1177), Role::Parameters);
        self.run.alloc(numel * 4, &ddp(1183), Role::Gradients);
        for w in weights.iter().rev().flatten() {
            self.run.free(*w, &ddp(1303));
        }
        // The distributed optimizer's fp32 main shards: `shard_model_param.clone().float()`.
        let main = setup(&[
            mlm(
                "megatron/core/optimizer/distrib_optimizer.py",
                445,
                "_build_model_and_main_param_groups",
            ),
            mlm(
                "megatron/core/optimizer/distrib_optimizer.py",
                774,
                "__init__",
            ),
            mlm(
                "megatron/core/optimizer/__init__.py",
                666,
                "_get_megatron_optimizer_based_on_param_groups",
            ),
            mlm(
                "megatron/core/optimizer/__init__.py",
                1165,
                "get_megatron_optimizer",
            ),
            mlm(
                "megatron/training/training.py",
                2132,
                "setup_model_and_optimizer",
            ),
        ]);
        let mut shard_numel = 0;
        let mut shards = Vec::new();
        for &(_, n) in &pieces {
            let clone = self.run.alloc(n * 2, &main, Role::OptimizerTemporaries);
            self.shard_rows.push(self.run.next_row());
            shards.push(self.run.alloc(n * 4, &main, Role::OptimizerState));
            self.shard_sizes.push(n);
            self.run.free(clone, &main);
            shard_numel += n;
        }
        self.made = Made {
            numel,
            params: numels.iter().sum(),
            shard_numel,
        };
        self.shards = shards;
    }

    /// One weight made by its module's `__init__` (the position embedding is made on the CPU:
    /// `setup` moves it).
    fn make_weight(&mut self, kind: Kind, numel: u64) -> Option<Id> {
        let self_attention = stack(&[
            &[mlm(
                "megatron/core/transformer/spec_utils.py",
                120,
                "build_module",
            )],
            &layer_init(373),
        ]);
        let qkv = stack(&[
            &[mlm(
                "megatron/core/transformer/attention.py",
                1681,
                "__init__",
            )],
            &self_attention,
        ]);
        let proj = stack(&[
            &[
                mlm("megatron/core/transformer/attention.py", 413, "__init__"),
                mlm("megatron/core/transformer/attention.py", 1666, "__init__"),
            ],
            &self_attention,
        ]);
        let mlp = |line: i64| {
            stack(&[
                &[mlm("megatron/core/transformer/mlp.py", line, "__init__")],
                &layer_init(431),
            ])
        };
        let frames = match kind {
            Kind::PositionEmbedding => return None,
            Kind::WordEmbedding => stack(&[
                &[
                    mlm("megatron/core/tensor_parallel/layers.py", 302, "__init__"),
                    mlm(
                        "megatron/core/models/common/embeddings/language_model_embedding.py",
                        56,
                        "__init__",
                    ),
                ],
                &gpt_init(168),
            ]),
            Kind::Proj => te_row_linear_init(&proj),
            Kind::QkvNormWeight => te_layernorm_linear_init(1421, &qkv),
            Kind::QkvNormBias => te_layernorm_linear_init(1430, &qkv),
            Kind::Qkv => te_layernorm_linear_init(1442, &qkv),
            Kind::Fc1NormWeight => te_layernorm_linear_init(1421, &mlp(222)),
            Kind::Fc1NormBias => te_layernorm_linear_init(1430, &mlp(222)),
            Kind::Fc1 => te_layernorm_linear_init(1442, &mlp(222)),
            Kind::Fc2 => te_row_linear_init(&mlp(242)),
            Kind::FinalNormWeight | Kind::FinalNormBias => stack(&[
                &[
                    te(
                        "ops/basic/layer_norm.py",
                        if kind == Kind::FinalNormWeight {
                            98
                        } else {
                            103
                        },
                        "__init__",
                    ),
                    te("module/layernorm.py", 98, "__init__"),
                    mlm(
                        "megatron/core/extensions/transformer_engine.py",
                        844,
                        "__new__",
                    ),
                    mlm(
                        "megatron/core/transformer/transformer_block.py",
                        376,
                        "_build_layers",
                    ),
                    mlm(
                        "megatron/core/transformer/transformer_block.py",
                        321,
                        "__init__",
                    ),
                ],
                &gpt_init(227),
            ]),
            Kind::Output => stack(&[
                &[mlm(
                    "megatron/core/tensor_parallel/layers.py",
                    997,
                    "__init__",
                )],
                &gpt_init(269),
            ]),
        };
        Some(self.run.alloc(numel * 2, &frames, Role::Parameters))
    }

    // ------------------------------------------------------------ the forward

    /// What memory a forward makes is for, by how the forward runs: trained (saved tensors
    /// are activations), under `no_grad` in a checkpointed layer (nothing is saved), or
    /// recomputed inside the backward (everything is the backward's).
    fn kept(&self, mode: Mode) -> Role {
        match mode {
            Mode::Train => Role::Activations,
            Mode::NoGrad => Role::ForwardTemporaries,
            Mode::Recompute => Role::BackwardTemporaries,
        }
    }

    fn temporary(&self, mode: Mode) -> Role {
        match mode {
            Mode::Train | Mode::NoGrad => Role::ForwardTemporaries,
            Mode::Recompute => Role::BackwardTemporaries,
        }
    }

    /// A stack of the forward: `frames` inside it, `outer` the frames of its caller; a
    /// recomputed forward runs on the autograd thread (with C++ frames, its node and engine).
    fn fwd(&self, frames: &[Frame], outer: &[Frame], mode: Mode) -> Vec<Frame> {
        let python = stack(&[frames, outer]);
        match mode {
            Mode::Recompute => self.bwd(&python, PY_NODE),
            _ => python,
        }
    }

    /// `TELayerNormColumnParallelLinear.forward` (QKV or fc1) called from `caller`: the
    /// stack of `inner` run at `line` of `_LayerNormLinear.forward`.
    fn lnl_fwd(&self, inner: &[Frame], line: i64, caller: &[Frame], mode: Mode) -> Vec<Frame> {
        let frames = stack(&[
            inner,
            &[
                te("module/layernorm_linear.py", line, "forward"),
                apply_fwd(),
                te("module/layernorm_linear.py", 1780, "forward"),
            ],
            &no_dynamo(),
            &[mlm(
                "megatron/core/extensions/transformer_engine.py",
                1336,
                "forward",
            )],
            &call(),
        ]);
        self.fwd(&frames, caller, mode)
    }

    /// `TERowParallelLinear.forward` (proj or fc2) called from `caller`: `inner` run in
    /// `_linear_forward_impl`.
    fn lin_fwd(&self, inner: &[Frame], caller: &[Frame], mode: Mode) -> Vec<Frame> {
        let frames = stack(&[
            inner,
            &[
                te("module/linear.py", 1349, "forward"),
                apply_fwd(),
                te("module/linear.py", 1985, "forward"),
            ],
            &no_dynamo(),
            &[mlm(
                "megatron/core/extensions/transformer_engine.py",
                1088,
                "forward",
            )],
            &call(),
        ]);
        self.fwd(&frames, caller, mode)
    }

    /// A TE GEMM's output (made in C++ under `general_gemm`; `at` gives the stack of frames
    /// run inside `general_gemm`'s caller), after TE's cuBLAS workspace the first time.
    fn gemm(&mut self, size: u64, at: impl Fn(&Self, &[Frame]) -> Vec<Frame>, truth: Role) -> Id {
        if !self.te_workspace {
            self.te_workspace = true;
            let ws = at(
                self,
                &[
                    te("cpp_extensions/gemm.py", 62, "get_cublas_workspace"),
                    te("cpp_extensions/gemm.py", 134, "general_gemm"),
                ],
            );
            // 32 MiB + 1 KiB on Hopper.
            self.run.alloc(32 * MIB + KIB, &ws, Role::Workspace);
        }
        let frames = at(self, &[te("cpp_extensions/gemm.py", 212, "general_gemm")]);
        self.run.alloc(size, &frames, truth)
    }

    /// A TE LayerNorm + column-parallel GEMM (QKV or fc1, the `index`-th layer's `kind`):
    /// its LayerNorm's output, means and inverse deviations (saved), the all-gathered sequence
    /// (freed after the GEMM) and the GEMM's output of `out_features` per token. With FP8, the
    /// module's scaling state and weight cache first, and the LayerNorm's output in FP8.
    /// Returns (saved, output).
    fn layernorm_linear(
        &mut self,
        index: usize,
        kind: Kind,
        out_features: u64,
        caller: &[Frame],
        mode: Mode,
    ) -> (Vec<Id>, Id) {
        let s = self.s();
        let kept = self.kept(mode);
        let fp8 = self.cfg.fp8;
        if fp8 {
            let meta = stack(&[
                &[te("module/layernorm_linear.py", 1697, "forward")],
                &no_dynamo(),
                &[mlm(
                    "megatron/core/extensions/transformer_engine.py",
                    1336,
                    "forward",
                )],
                &call(),
            ]);
            self.fp8_meta(index, kind, &stack(&[&meta, caller]));
        }
        let norm = self.lnl_fwd(
            &[te("module/_common.py", 66, "apply_normalization")],
            244,
            caller,
            mode,
        );
        let width = if fp8 { 1 } else { 2 };
        let ln_out = self
            .run
            .alloc(s.local_tokens() * s.hidden * width, &norm, kept);
        let mu = self.run.alloc(s.local_tokens() * 4, &norm, kept);
        let rsigma = self.run.alloc(s.local_tokens() * 4, &norm, kept);
        let mut saved = vec![ln_out, mu, rsigma];
        if fp8 {
            saved.push(self.run.alloc(4, &norm, kept));
        }
        let gather = if fp8 {
            vec![
                te("quantized_tensor.py", 342, "make_empty"),
                te("distributed.py", 1038, "_all_gather_fp8"),
                te("distributed.py", 1703, "gather_along_first_dim"),
            ]
        } else {
            vec![te("distributed.py", 1778, "gather_along_first_dim")]
        };
        let gather = self.lnl_fwd(&gather, 296, caller, mode);
        let total = self
            .run
            .alloc(s.tokens() * s.hidden * width, &gather, Role::Communication);
        if fp8 {
            let cache = self.lnl_fwd(&quantize_weight(), 335, caller, mode);
            self.fp8_weight_cache(index, kind, &cache);
        }
        let out = self.gemm(
            s.tokens() * out_features * 2,
            |me, inner| me.lnl_fwd(inner, 392, caller, mode),
            kept,
        );
        let clear = self.lnl_fwd(
            &[te("utils.py", 76, "clear_tensor_data")],
            416,
            caller,
            mode,
        );
        self.run.free(total, &clear);
        (saved, out)
    }

    /// A TE row-parallel GEMM (proj or fc2) on a full sequence of `in_features` per token: its
    /// output, reduce-scattered over the sequence. With FP8, the module's scaling state and
    /// weight cache first, and its input quantized (rowwise and transposed: saved). Returns
    /// the scattered output and the quantized input's blocks.
    fn row_linear(
        &mut self,
        index: usize,
        kind: Kind,
        in_features: u64,
        caller: &[Frame],
        mode: Mode,
    ) -> (Id, Vec<Id>) {
        let s = self.s();
        let temporary = self.temporary(mode);
        let mut quantized = Vec::new();
        if self.cfg.fp8 {
            let meta = stack(&[
                &[te("module/linear.py", 1849, "forward")],
                &no_dynamo(),
                &[mlm(
                    "megatron/core/extensions/transformer_engine.py",
                    1088,
                    "forward",
                )],
                &call(),
            ]);
            self.fp8_meta(index, kind, &stack(&[&meta, caller]));
            let input = self.lin_fwd(
                &stack(&[
                    &quantize_weight()[..3],
                    &[
                        te("quantized_tensor.py", 317, "__call__"),
                        te("module/linear.py", 400, "_linear_forward_impl"),
                    ],
                ]),
                caller,
                mode,
            );
            let kept = self.kept(mode);
            for size in [s.tokens() * in_features, s.tokens() * in_features, 4] {
                quantized.push(self.run.alloc(size, &input, kept));
            }
            let cache = self.lin_fwd(
                &stack(&[
                    &quantize_weight(),
                    &[te("module/linear.py", 436, "_linear_forward_impl")],
                ]),
                caller,
                mode,
            );
            self.fp8_weight_cache(index, kind, &cache);
        }
        let out = self.gemm(
            s.hidden_full(),
            |me, inner| {
                me.lin_fwd(
                    &stack(&[
                        inner,
                        &[te("module/linear.py", 492, "_linear_forward_impl")],
                    ]),
                    caller,
                    mode,
                )
            },
            temporary,
        );
        let rs = self.lin_fwd(
            &[
                te("distributed.py", 947, "reduce_scatter_along_first_dim"),
                te("module/linear.py", 528, "_linear_forward_impl"),
            ],
            caller,
            mode,
        );
        let scattered = self.run.alloc(s.hidden_local(), &rs, Role::Communication);
        let rebound = self.lin_fwd(
            &[te("module/linear.py", 528, "_linear_forward_impl")],
            caller,
            mode,
        );
        self.run.free(out, &rebound);
        (scattered, quantized)
    }

    /// TE's FP8 scaling state of a module (the `index`-th layer's `kind`), made by its first
    /// forward: `prepare_forward` → `init_fp8_metadata` → `set_meta_tensor` for the forward's
    /// and the backward's quantizers, each a scale and an amax history. `at` is the stack of
    /// `prepare_forward`'s caller.
    fn fp8_meta(&mut self, index: usize, kind: Kind, at: &[Frame]) {
        if self.fp8_meta.contains(&(index, kind)) {
            return;
        }
        self.fp8_meta.push((index, kind));
        // Three quantizers per GEMM forward (input, weight, output), two backward.
        for (line, quantizers) in [(1247, 3u64), (1248, 2)] {
            for (state, size) in [(1426, quantizers * 4), (1427, quantizers * 4)] {
                let frames = stack(&[
                    &[
                        te("quantization.py", state, "__init__"),
                        te("quantization.py", 1331, "create"),
                        te("module/base.py", 1083, "set_meta_tensor"),
                        te("module/base.py", line, "init_fp8_meta_tensors"),
                        te("module/base.py", 1503, "init_fp8_metadata"),
                        te("module/base.py", 1552, "prepare_forward"),
                    ],
                    at,
                ]);
                self.run.alloc(size, &frames, Role::Parameters);
            }
        }
    }

    /// TE's FP8 weight cache of a module, made by its first micro-batch (Megatron passes
    /// `is_first_microbatch`, so TE caches it in `_fp8_workspaces`) and kept: the weight
    /// quantized rowwise and transposed (both kept on Hopper), and its inverse scale.
    fn fp8_weight_cache(&mut self, index: usize, kind: Kind, frames: &[Frame]) {
        if self.fp8_weights.contains(&(index, kind)) {
            return;
        }
        self.fp8_weights.push((index, kind));
        let s = self.s();
        let numel = match kind {
            Kind::Qkv => 3 * s.hidden / s.tp * s.hidden,
            Kind::Proj => s.hidden * s.hidden / s.tp,
            Kind::Fc1 | Kind::Fc2 => s.ffn / s.tp * s.hidden,
            _ => unreachable!("no FP8 GEMM for {kind:?}"),
        };
        for size in [numel, numel, 4] {
            self.run.alloc(size, frames, Role::Parameters);
        }
    }

    /// Megatron's unfused bias-dropout-add after attention (`line` 684) or the MLP (980):
    /// dropout's output and mask, the residual sum. Frees the reduce-scattered input. Returns
    /// (mask, sum).
    fn dropout_add(
        &mut self,
        x: Id,
        line: i64,
        sublayer: &str,
        layer: &[Frame],
        mode: Mode,
    ) -> (Id, Id) {
        let s = self.s();
        let (kept, temporary) = (self.kept(mode), self.temporary(mode));
        let at = |l: i64| {
            self.fwd(
                &[
                    mlm(
                        "megatron/core/fusions/fused_bias_dropout.py",
                        l,
                        "_bias_dropout_add_func",
                    ),
                    mlm(
                        "megatron/core/fusions/fused_bias_dropout.py",
                        64,
                        "_bias_dropout_add",
                    ),
                    mlm(
                        "megatron/core/transformer/transformer_layer.py",
                        line,
                        sublayer,
                    ),
                ],
                layer,
                mode,
            )
        };
        let dropout = stack(&[&[th("nn/functional.py", 1422, "dropout")], &at(54)]);
        let add = at(58);
        let out = self.run.alloc(s.hidden_local(), &dropout, temporary);
        let mask = self.run.alloc(s.hidden_local() / 2, &dropout, kept);
        // The MLP's sum is the layer's output: a checkpointed layer returns it, and it is
        // kept for the backward like any forward's output.
        let sum_truth = if line == 980 && mode == Mode::NoGrad {
            Role::Activations
        } else {
            kept
        };
        let sum = self.run.alloc(s.hidden_local(), &add, sum_truth);
        self.run.free(out, &add);
        let back = self.fwd(
            &[mlm(
                "megatron/core/transformer/transformer_layer.py",
                line,
                sublayer,
            )],
            layer,
            mode,
        );
        self.run.free(x, &back);
        (mask, sum)
    }

    /// The `index`-th transformer layer's forward on this rank's share of the sequence,
    /// called from `outer` (its module call outward). Returns what it keeps for the backward
    /// and its output. Frees nothing of its input (its backward does).
    fn layer_forward(&mut self, index: usize, outer: &[Frame], mode: Mode) -> (Saved, Id) {
        let s = self.s();
        let kept = self.kept(mode);
        let mut saved = Saved::default();
        // Attention.
        let attn_fwd = |line: i64| {
            stack(&[
                &[
                    mlm(
                        "megatron/core/transformer/transformer_layer.py",
                        line,
                        "_forward_attention",
                    ),
                    mlm(
                        "megatron/core/transformer/transformer_layer.py",
                        740,
                        "forward",
                    ),
                ],
                outer,
            ])
        };
        let attention = |line: i64| {
            stack(&[
                &[mlm(
                    "megatron/core/transformer/attention.py",
                    line,
                    "forward",
                )],
                &call(),
                &attn_fwd(653),
            ])
        };
        let qkv_caller = stack(&[
            &[mlm(
                "megatron/core/transformer/attention.py",
                1830,
                "get_query_key_value_tensors",
            )],
            &attention(1387),
        ]);
        (saved.ln1, saved.qkv) =
            self.layernorm_linear(index, Kind::Qkv, 3 * s.hidden / s.tp, &qkv_caller, mode);
        let fused = |at: &[Frame]| {
            stack(&[
                at,
                &[
                    te(
                        "attention/dot_product_attention/backends.py",
                        1513,
                        "forward",
                    ),
                    apply_fwd(),
                    te(
                        "attention/dot_product_attention/backends.py",
                        2214,
                        "forward",
                    ),
                ],
                &no_dynamo(),
                &call(),
                &[te(
                    "attention/dot_product_attention/dot_product_attention.py",
                    1805,
                    "forward",
                )],
                &no_dynamo(),
                &[mlm(
                    "megatron/core/extensions/transformer_engine.py",
                    2079,
                    "forward",
                )],
                &call(),
                &attention(1558),
            ])
        };
        let attn = self.fwd(
            &fused(&[te("cpp_extensions/fused_attn.py", 307, "fused_attn_fwd")]),
            &[],
            mode,
        );
        let heads = s.heads / s.tp;
        for size in [s.tokens() * s.hidden / s.tp * 2, heads * s.tokens() * 4, 16] {
            saved.attn.push(self.run.alloc(size, &attn, kept));
        }
        let cudnn = self.run.alloc(MIB, &attn, Role::Workspace);
        self.run.free(cudnn, &attn);
        let (proj, quantized) =
            self.row_linear(index, Kind::Proj, s.hidden / s.tp, &attention(1617), mode);
        saved.quantized.extend(quantized);
        let (mask, mid) =
            self.dropout_add(proj, 684, "_forward_attention", &attn_fwd(684)[1..], mode);
        saved.masks.push(mask);
        saved.mid = mid;
        // MLP.
        let mlp_fwd = stack(&[
            &[
                mlm(
                    "megatron/core/transformer/transformer_layer.py",
                    914,
                    "_forward_mlp",
                ),
                mlm(
                    "megatron/core/transformer/transformer_layer.py",
                    741,
                    "forward",
                ),
            ],
            outer,
        ]);
        let mlp = |line: i64| {
            stack(&[
                &[mlm("megatron/core/transformer/mlp.py", line, "forward")],
                &call(),
                &mlp_fwd,
            ])
        };
        (saved.ln2, saved.fc1) =
            self.layernorm_linear(index, Kind::Fc1, s.ffn / s.tp, &mlp(264), mode);
        // GELU's output is fc2's input: kept for its backward in bf16, only quantized in FP8.
        let gelu_at = self.fwd(&mlp(335), &[], mode);
        let gelu_truth = if self.cfg.fp8 {
            self.temporary(mode)
        } else {
            kept
        };
        let gelu = self
            .run
            .alloc(s.tokens() * s.ffn / s.tp * 2, &gelu_at, gelu_truth);
        let (fc2, quantized) = self.row_linear(index, Kind::Fc2, s.ffn / s.tp, &mlp(346), mode);
        if self.cfg.fp8 {
            let at = self.fwd(&mlp(346), &[], mode);
            self.run.free(gelu, &at);
            saved.quantized.extend(quantized);
        } else {
            saved.gelu = Some(gelu);
        }
        let bda_layer = stack(&[
            &[
                mlm(
                    "megatron/core/transformer/transformer_layer.py",
                    943,
                    "_forward_mlp",
                ),
                mlm(
                    "megatron/core/transformer/transformer_layer.py",
                    741,
                    "forward",
                ),
            ],
            outer,
        ]);
        let (mask, out) = self.dropout_add(fc2, 980, "_forward_post_mlp", &bda_layer, mode);
        saved.masks.push(mask);
        (saved, out)
    }

    // ----------------------------------------------------------- the backward

    /// A stack inside `_LayerNormLinear.backward` at `line`, `inner` run there.
    fn lnl_bwd(&self, inner: &[Frame], line: i64) -> Vec<Frame> {
        self.bwd(
            &stack(&[
                inner,
                &[
                    te("module/layernorm_linear.py", line, "backward"),
                    apply_bwd(),
                ],
            ]),
            PY_NODE,
        )
    }

    /// A stack inside `_linear_backward` at `line` (`_Linear.backward`), `inner` run there.
    fn lin_bwd(&self, inner: &[Frame], line: i64) -> Vec<Frame> {
        self.bwd(
            &stack(&[
                inner,
                &[
                    te("module/linear.py", line, "_linear_backward"),
                    te("module/linear.py", 1387, "backward"),
                    apply_bwd(),
                ],
            ]),
            PY_NODE,
        )
    }

    /// A native node's allocation (no Python frame).
    fn native(&mut self, size: u64, name: &str, truth: Role) -> Id {
        let frames = self.bwd(&[], &node(name));
        self.run.alloc(size, &frames, truth)
    }

    /// Autograd releasing what node `name` saved.
    fn release(&mut self, ids: &[Id], name: &str) {
        let frames = self.released(name);
        self.run.free_all(ids, &frames);
    }

    /// TE's dummy wgrad for a weight of `kind` (`numel` elements, bf16), made by the first
    /// backward and kept; `at` gives the stack of its caller's frames.
    fn dummy_wgrad(&mut self, kind: Kind, numel: u64, frames: Vec<Frame>) {
        if self.dummy_wgrads.contains(&kind) {
            return;
        }
        self.dummy_wgrads.push(kind);
        let frames = stack(&[&[te("module/base.py", 116, "get_dummy_wgrad")], &frames]);
        self.run.alloc(numel * 2, &frames, Role::Workspace);
    }

    /// A LayerNorm's backward in TE: the input's gradient, and the weight's and bias's
    /// gradients autograd hands to DDP's hook, which adds them to `main_grad` and drops them.
    fn layernorm_grads(&mut self, frames: Vec<Frame>) -> Id {
        let s = self.s();
        let dx = self
            .run
            .alloc(s.hidden_local(), &frames, Role::BackwardTemporaries);
        let dw = self.run.alloc(s.hidden * 2, &frames, Role::Gradients);
        let db = self.run.alloc(s.hidden * 2, &frames, Role::Gradients);
        let hook = self.ddp_hook();
        self.run.free_all(&[dw, db], &hook);
        dx
    }

    /// The backward of a TE LayerNorm + column-parallel GEMM of `weight` (`numel`
    /// elements) whose forward saved `ln` (output, means, inverse deviations) and `input`;
    /// `grad` is the gradient of its output (freed). Returns the gradient of its input.
    fn layernorm_linear_backward(
        &mut self,
        kind: Kind,
        numel: u64,
        ln: &[Id],
        input: Id,
        grad: Id,
        free_input: bool,
    ) -> Id {
        let s = self.s();
        let gather = self.lnl_bwd(&[te("distributed.py", 1778, "gather_along_first_dim")], 764);
        let width = if self.cfg.fp8 { 1 } else { 2 };
        let total = self
            .run
            .alloc(s.tokens() * s.hidden * width, &gather, Role::Communication);
        let dgrad = self.gemm(
            s.hidden_full(),
            |me, inner| me.lnl_bwd(inner, 839),
            Role::BackwardTemporaries,
        );
        let rs = self.lnl_bwd(
            &[te("distributed.py", 947, "reduce_scatter_along_first_dim")],
            881,
        );
        let scattered = self.run.alloc(s.hidden_local(), &rs, Role::Communication);
        let dummy = self.lnl_bwd(&[], 1149);
        self.dummy_wgrad(kind, numel, dummy);
        let clear =
            |me: &Self, line: i64| me.lnl_bwd(&[te("utils.py", 76, "clear_tensor_data")], line);
        let (c1067, c1073, c1135) = (clear(self, 1067), clear(self, 1073), clear(self, 1135));
        self.run.free(ln[0], &c1067);
        self.run.free(total, &c1073);
        self.run.free(dgrad, &self.lnl_bwd(&[], 881));
        self.run.free(grad, &self.released(PY_NODE));
        let dx = self.layernorm_grads(self.lnl_bwd(&[], 1113));
        self.run.free(scattered, &self.lnl_bwd(&[], 1113));
        self.run.free_all(&ln[1..], &c1135);
        if free_input {
            self.release(&[input], PY_NODE);
        }
        dx
    }

    /// The backward of a TE row-parallel GEMM of `weight` whose forward saved `input` (its
    /// blocks freed here; none when another node holds it too); `grad` (this rank's share of the sequence) is
    /// its output's gradient (freed). Returns the gradient of its input (`in_features` per
    /// token of the whole sequence).
    fn row_linear_backward(
        &mut self,
        kind: Kind,
        numel: u64,
        in_features: u64,
        input: &[Id],
        grad: Id,
    ) -> Id {
        let s = self.s();
        let gather = self.lin_bwd(
            &[
                te("distributed.py", 1778, "gather_along_first_dim"),
                te("module/base.py", 1643, "grad_output_preprocess"),
            ],
            883,
        );
        let total = self
            .run
            .alloc(s.hidden_full(), &gather, Role::Communication);
        let dgrad = self.gemm(
            s.tokens() * in_features * 2,
            |me, inner| me.lin_bwd(inner, 1024),
            Role::BackwardTemporaries,
        );
        let dummy = self.lin_bwd(&[], 1297);
        self.dummy_wgrad(kind, numel, dummy);
        let clear = self.lin_bwd(&[te("utils.py", 76, "clear_tensor_data")], 1259);
        self.run.free(total, &clear);
        self.release(&[grad], PY_NODE);
        self.release(input, PY_NODE);
        dgrad
    }

    /// One transformer layer's backward: `saved` by its forward, `x` its input (freed when
    /// `free_input`), `grad` its output's gradient. Returns its input's gradient: `grad`
    /// itself, the residual's gradients summed into it in place, unless something else holds
    /// `grad` (a pipeline's receive buffer): then the first sum is a new tensor.
    fn layer_backward(&mut self, saved: Saved, x: Id, grad: Id, free_input: bool) -> Id {
        self.layer_backward_from(saved, x, grad, free_input, true)
    }

    fn layer_backward_from(
        &mut self,
        saved: Saved,
        x: Id,
        grad: Id,
        free_input: bool,
        owned: bool,
    ) -> Id {
        let s = self.s();
        let (attn, mask1, mask2) = (&saved.attn, saved.masks[0], saved.masks[1]);
        let fp8 = self.cfg.fp8;
        let (proj_input, fc2_input) = if fp8 {
            (saved.quantized[..3].to_vec(), saved.quantized[3..].to_vec())
        } else {
            (Vec::new(), vec![saved.gelu.unwrap()])
        };
        // The MLP's dropout, fc2, GELU, fc1 and its LayerNorm.
        let d2 = self.native(
            s.hidden_local(),
            "NativeDropoutBackward0",
            Role::BackwardTemporaries,
        );
        self.release(&[mask2], &node("NativeDropoutBackward0"));
        let g_gelu = self.row_linear_backward(
            Kind::Fc2,
            s.hidden * s.ffn / s.tp,
            s.ffn / s.tp,
            &fc2_input,
            d2,
        );
        let g_fc1 = self.native(
            s.tokens() * s.ffn / s.tp * 2,
            "GeluBackward0",
            Role::BackwardTemporaries,
        );
        self.run
            .free(g_gelu, &self.released(&node("GeluBackward0")));
        self.release(&[saved.fc1], &node("GeluBackward0"));
        let dx = self.layernorm_linear_backward(
            Kind::Fc1,
            s.ffn / s.tp * s.hidden,
            &saved.ln2,
            saved.mid,
            g_fc1,
            true,
        );
        // The residual's gradient: `grad` passed on by the MLP's add, and the LayerNorm's,
        // summed in place in the engine's input buffer.
        let grad = if owned {
            grad
        } else {
            let at = self.bwd(&[], INPUT_BUFFER_ADD);
            self.summed_row = self.run.next_row();
            self.run
                .alloc(s.hidden_local(), &at, Role::BackwardTemporaries)
        };
        self.run.free(dx, &self.released(PY_NODE));
        // Attention's dropout, proj, the fused attention, QKV and its LayerNorm.
        let d1 = self.native(
            s.hidden_local(),
            "NativeDropoutBackward0",
            Role::BackwardTemporaries,
        );
        self.release(&[mask1], &node("NativeDropoutBackward0"));
        let g_attn = self.row_linear_backward(
            Kind::Proj,
            s.hidden * s.hidden / s.tp,
            s.hidden / s.tp,
            &proj_input,
            d1,
        );
        let fused = self.bwd(
            &[
                te("cpp_extensions/fused_attn.py", 556, "fused_attn_bwd"),
                te(
                    "attention/dot_product_attention/backends.py",
                    1859,
                    "backward",
                ),
                apply_bwd(),
            ],
            PY_NODE,
        );
        let dqkv = self.run.alloc(
            s.tokens() * 3 * s.hidden / s.tp * 2,
            &fused,
            Role::BackwardTemporaries,
        );
        self.attention_backward_rows.push(self.run.next_row());
        let cudnn = self.run.alloc(MIB, &fused, Role::Workspace);
        self.run.free(cudnn, &fused);
        self.release(&[attn[0], attn[1], attn[2], g_attn, saved.qkv], PY_NODE);
        let g_qkv = self.native(
            s.tokens() * 3 * s.hidden / s.tp * 2,
            "SplitWithSizesBackward0",
            Role::BackwardTemporaries,
        );
        self.run
            .free(dqkv, &self.released(&node("SplitWithSizesBackward0")));
        let dx = self.layernorm_linear_backward(
            Kind::Qkv,
            3 * s.hidden / s.tp * s.hidden,
            &saved.ln1,
            x,
            g_qkv,
            free_input,
        );
        let _ = fp8;
        self.run.free(dx, &self.released(PY_NODE));
        grad
    }

    // ------------------------------------------------- embedding, head and loss

    /// `get_batch` on tensor-parallel rank 0: the batch moved to the GPU (labels, loss mask,
    /// position ids, tokens). Returns them in that order.
    fn get_batch(&mut self, fstep: &[Frame]) -> [Id; 4] {
        let s = self.s();
        let frames = stack(&[
            &[
                mlm("pretrain_gpt.py", 128, "get_batch"),
                mlm("pretrain_gpt.py", 308, "forward_step"),
            ],
            fstep,
        ]);
        let t = s.tokens();
        [t * 8, t * 4, t * 8, t * 8].map(|size| self.run.alloc(size, &frames, Role::Inputs))
    }

    /// The embedding's forward: word embeddings (vocab-parallel), position embeddings, their
    /// sum turned `[s, b, h]`, this rank's share of the sequence cloned, dropout. Returns
    /// (saved, output).
    fn embedding_forward(&mut self, fstep: &[Frame]) -> (Vec<Id>, Id) {
        let s = self.s();
        let t = s.tokens();
        let lme = |line: i64| {
            stack(&[
                &[mlm(
                    "megatron/core/models/common/embeddings/language_model_embedding.py",
                    line,
                    "forward",
                )],
                &call(),
                &[
                    mlm("megatron/core/models/gpt/gpt_model.py", 345, "_preprocess"),
                    mlm("megatron/core/models/gpt/gpt_model.py", 562, "forward"),
                ],
                &model_outer(fstep),
            ])
        };
        let vpe = |line: i64| {
            stack(&[
                &[mlm(
                    "megatron/core/tensor_parallel/layers.py",
                    line,
                    "forward",
                )],
                &call(),
                &lme(111),
            ])
        };
        let (act, tmp) = (Role::Activations, Role::ForwardTemporaries);
        let input_mask = self.run.alloc(t, &vpe(338), act);
        let clone = self.run.alloc(t * 8, &vpe(340), tmp);
        let masked = self.run.alloc(t * 8, &vpe(340), act);
        self.run.free(clone, &vpe(340));
        let embedding =
            |at: Vec<Frame>| stack(&[&[th("nn/functional.py", 2546, "embedding")], &at]);
        let word = self.run.alloc(s.hidden_full(), &embedding(vpe(356)), tmp);
        let position = self.run.alloc(
            s.hidden_full(),
            &embedding(stack(&[
                &[th("nn/modules/sparse.py", 192, "forward")],
                &call(),
                &lme(113),
            ])),
            tmp,
        );
        let sum = self.run.alloc(s.hidden_full(), &lme(114), tmp);
        let transposed = self.run.alloc(s.hidden_full(), &lme(120), tmp);
        self.run.free(sum, &lme(120));
        let clone = self.run.alloc(s.hidden_local(), &lme(148), tmp);
        self.run.free(transposed, &lme(148));
        let dropout = stack(&[
            &[
                th("nn/functional.py", 1422, "dropout"),
                th("nn/modules/dropout.py", 70, "forward"),
            ],
            &call(),
            &lme(150),
        ]);
        let out = self.run.alloc(s.hidden_local(), &dropout, act);
        let mask = self.run.alloc(s.hidden_local() / 2, &dropout, act);
        self.run.free(clone, &lme(150));
        self.run.free_all(&[word, position], &lme(154));
        (vec![input_mask, masked, mask], out)
    }

    /// The embedding's backward from `grad` (its output's gradient, freed): dropout, the
    /// sequence gathered back, the position and word embeddings' gradients (dropped by DDP's
    /// hook). Frees what the forward saved and `position_ids`.
    fn embedding_backward(&mut self, saved: Vec<Id>, grad: Id, position_ids: Id) {
        let s = self.s();
        let d = self.native(
            s.hidden_local(),
            "NativeDropoutBackward0",
            Role::BackwardTemporaries,
        );
        self.release(&[saved[2]], &node("NativeDropoutBackward0"));
        self.run
            .free(grad, &self.released(&node("NativeDropoutBackward0")));
        let gather = self.bwd(
            &[
                mlm(
                    "megatron/core/tensor_parallel/mappings.py",
                    145,
                    "_gather_along_first_dim",
                ),
                mlm("megatron/core/tensor_parallel/mappings.py", 297, "backward"),
                apply_bwd(),
            ],
            PY_NODE,
        );
        let g = self
            .run
            .alloc(s.hidden_full(), &gather, Role::Communication);
        self.run.free(d, &self.released(PY_NODE));
        let pos = self.native(s.seq * s.hidden * 2, "EmbeddingBackward0", Role::Gradients);
        let hook = self.ddp_hook();
        self.run.free(pos, &hook);
        self.release(&[position_ids], &node("EmbeddingBackward0"));
        let masked = self.native(
            s.hidden_full(),
            "IndexPutBackward0",
            Role::BackwardTemporaries,
        );
        self.release(&[saved[0]], &node("IndexPutBackward0"));
        let word = self.native(
            s.vocab / s.tp * s.hidden * 2,
            "EmbeddingBackward0",
            Role::Gradients,
        );
        self.run.free(word, &hook);
        self.run
            .free(masked, &self.released(&node("EmbeddingBackward0")));
        self.release(&[saved[1], g], &node("EmbeddingBackward0"));
    }

    /// The last stage's head: the final LayerNorm, the output layer (its sequence gathered
    /// into the `GlobalMemoryBuffer`, torch's cuBLAS workspace on its first GEMM, the bf16
    /// logits), and the vocab-parallel cross entropy (fp32 logits, saved). Returns what the
    /// backward frees.
    fn head_forward(&mut self, fstep: &[Frame]) -> Vec<Id> {
        let s = self.s();
        let t = s.tokens();
        let (act, tmp) = (Role::Activations, Role::ForwardTemporaries);
        let norm = stack(&[
            &[
                te("ops/basic/layer_norm.py", 205, "op_forward"),
                te("ops/op.py", 499, "fuser_forward"),
                te("ops/fuser.py", 134, "forward"),
                apply_fwd(),
                te("ops/fuser.py", 556, "__call__"),
                te("ops/op.py", 538, "forward"),
            ],
            &call(),
            &[mlm(
                "megatron/core/transformer/transformer_block.py",
                693,
                "forward",
            )],
            &block_outer(fstep),
        ]);
        let y = self.run.alloc(s.hidden_local(), &norm, act);
        let means = self.run.alloc(s.local_tokens() * 4, &norm, act);
        let rstdevs = self.run.alloc(s.local_tokens() * 4, &norm, act);
        let post = |line: i64| {
            stack(&[
                &[
                    mlm(
                        "megatron/core/models/gpt/gpt_model.py",
                        line,
                        "_postprocess",
                    ),
                    mlm("megatron/core/models/gpt/gpt_model.py", 597, "forward"),
                ],
                &model_outer(fstep),
            ])
        };
        let output = |line: i64| {
            stack(&[
                &[
                    mlm("megatron/core/tensor_parallel/layers.py", line, "forward"),
                    apply_fwd(),
                    mlm(
                        "megatron/core/tensor_parallel/layers.py",
                        863,
                        "linear_with_grad_accumulation_and_async_allreduce",
                    ),
                    mlm(
                        "megatron/core/tensor_parallel/layers.py",
                        1098,
                        "_forward_impl",
                    ),
                    mlm("megatron/core/tensor_parallel/layers.py", 1168, "forward"),
                ],
                &call(),
                &post(762),
            ])
        };
        if !self.global_buffer {
            self.global_buffer = true;
            let frames = stack(&[
                &[mlm("megatron/core/utils.py", 712, "get_tensor")],
                &output(570),
            ]);
            self.run
                .alloc(s.hidden_full(), &frames, Role::Communication);
        }
        if !self.torch_workspace {
            self.torch_workspace = true;
            // torch's cuBLAS workspace, made by the first GEMM torch runs itself (TE's GEMMs
            // use their own): `:4096:8` on Hopper.
            let blas = if self.cfg.cpp {
                vec![
                    cpp("at::cuda::getCUDABlasLtWorkspace()"),
                    cpp("at::cuda::getCurrentCUDABlasHandle()"),
                    cpp("void at::cuda::blas::gemm_internal<c10::BFloat16>(char, char, long, long, long, at::OpMathType<c10::BFloat16>::type, c10::BFloat16 const*, long, c10::BFloat16 const*, long, at::OpMathType<c10::BFloat16>::type, c10::BFloat16*, long)"),
                ]
            } else {
                Vec::new()
            };
            let frames = stack(&[&blas, &output(576)]);
            self.run.alloc(32 * MIB, &frames, Role::Workspace);
        }
        let logits = self.run.alloc(t * s.vocab / s.tp * 2, &output(576), tmp);
        let loss_fn = |line: i64| {
            stack(&[
                &[mlm(
                    "megatron/core/models/common/language_module/language_module.py",
                    line,
                    "compute_language_model_loss",
                )],
                &post(794),
            ])
        };
        let ce = |line: i64, name: &str, at: i64| {
            stack(&[
                &[
                    mlm("megatron/core/tensor_parallel/cross_entropy.py", line, name),
                    mlm(
                        "megatron/core/tensor_parallel/cross_entropy.py",
                        at,
                        "forward",
                    ),
                    apply_fwd(),
                    mlm(
                        "megatron/core/tensor_parallel/cross_entropy.py",
                        233,
                        "vocab_parallel_cross_entropy",
                    ),
                ],
                &loss_fn(194),
            ])
        };
        let labels_t = self.run.alloc(t * 8, &loss_fn(166), tmp);
        let fp32 = self.run.alloc(
            t * s.vocab / s.tp * 4,
            &ce(25, "calculate_logits_max", 127),
            act,
        );
        let max = self
            .run
            .alloc(t * 4, &ce(27, "calculate_logits_max", 127), tmp);
        let predicted = |line: i64| ce(line, "calculate_predicted_logits", 140);
        let target_mask = self.run.alloc(t, &predicted(45), act);
        let clone = self.run.alloc(t * 8, &predicted(46), tmp);
        let masked_target = self.run.alloc(t * 8, &predicted(46), act);
        self.run.free(clone, &predicted(46));
        let arange = self.run.alloc(t * 8, &predicted(55), tmp);
        let picked = self.run.alloc(t * 4, &predicted(56), tmp);
        let picked_clone = self.run.alloc(t * 4, &predicted(57), tmp);
        self.run.free(picked, &predicted(57));
        let sum_exp = self.run.alloc(t * 4, &predicted(63), tmp);
        let loss_at = ce(74, "calculate_cross_entropy_loss", 154);
        let log = self.run.alloc(t * 4, &loss_at, tmp);
        let loss = self.run.alloc(t * 4, &loss_at, tmp);
        self.run.free(log, &loss_at);
        let returned = ce(183, "forward", 183)[1..].to_vec();
        self.run
            .free_all(&[max, arange, picked_clone, sum_exp], &returned);
        let loss_t = self.run.alloc(t * 4, &loss_fn(199), tmp);
        self.run.free_all(&[loss, labels_t], &loss_fn(199));
        self.run.free(logits, &post(796));
        // `loss_func` in pretrain_gpt.py: the masked per-token losses, summed.
        let calc = stack(&[
            &[mlm(
                "megatron/core/pipeline_parallel/schedules.py",
                328,
                "forward_step_calc_loss",
            )],
            &[mlm(
                "megatron/core/pipeline_parallel/schedules.py",
                514,
                "forward_step",
            )],
            &fstep[1..],
        ]);
        let masked_losses = self.run.alloc(
            t * 4,
            &stack(&[&[mlm("pretrain_gpt.py", 243, "loss_func")], &calc]),
            tmp,
        );
        self.run.free(masked_losses, &calc);
        self.run.free(loss_t, &calc);
        vec![y, means, rstdevs, fp32, target_mask, masked_target]
    }

    /// The head's backward, from the loss: cross entropy (its gradient made in place in the
    /// fp32 logits), the cast back to bf16, the output layer (dgrad, this rank's share
    /// reduce-scattered, TE's dummy wgrad for it), the final LayerNorm. `x` is the last
    /// layer's output (freed). Returns the last layer's output's gradient.
    fn head_backward(&mut self, head: Vec<Id>, x: Id) -> Id {
        let s = self.s();
        let t = s.tokens();
        let (y, means, rstdevs, fp32, target_mask, masked_target) =
            (head[0], head[1], head[2], head[3], head[4], head[5]);
        let ce = self.bwd(
            &[
                mlm(
                    "megatron/core/tensor_parallel/cross_entropy.py",
                    96,
                    "prepare_gradient_calculation_operands",
                ),
                mlm(
                    "megatron/core/tensor_parallel/cross_entropy.py",
                    194,
                    "backward",
                ),
                apply_bwd(),
            ],
            PY_NODE,
        );
        let float = self.run.alloc(t * 4, &ce, Role::BackwardTemporaries);
        let update = self.run.alloc(t * 4, &ce, Role::BackwardTemporaries);
        self.run.free(float, &ce);
        let arange = self.run.alloc(t * 8, &ce, Role::BackwardTemporaries);
        self.release(&[update, arange, target_mask, masked_target], PY_NODE);
        let g_logits = self.native(
            t * s.vocab / s.tp * 2,
            "ToCopyBackward0",
            Role::BackwardTemporaries,
        );
        self.release(&[fp32], &node("ToCopyBackward0"));
        let out = |line: i64| {
            self.bwd(
                &[
                    mlm("megatron/core/tensor_parallel/layers.py", line, "backward"),
                    apply_bwd(),
                ],
                PY_NODE,
            )
        };
        let (at626, at646, at713) = (out(626), out(646), out(713));
        let grad_input = self
            .run
            .alloc(s.hidden_full(), &at626, Role::BackwardTemporaries);
        let sub = self
            .run
            .alloc(s.hidden_local(), &at646, Role::Communication);
        self.dummy_wgrad(Kind::Output, s.vocab / s.tp * s.hidden, at713);
        self.run.free(grad_input, &at646);
        self.release(&[g_logits, y], PY_NODE);
        let norm = self.bwd(
            &[
                te("ops/basic/layer_norm.py", 247, "op_backward"),
                te("ops/op.py", 526, "fuser_backward"),
                te("ops/fuser.py", 251, "backward"),
                apply_bwd(),
            ],
            PY_NODE,
        );
        let dx = self.layernorm_grads(norm);
        self.release(&[sub, means, rstdevs, x], PY_NODE);
        dx
    }
}

/// One iteration's `train_step` at `line` (the schedule 2407, the optimizer 2474).
fn train_step(line: i64) -> Vec<Frame> {
    stack(&[
        &[
            mlm("megatron/training/training.py", line, "train_step"),
            mlm("megatron/training/training.py", 3856, "train"),
            mlm("megatron/training/training.py", 1423, "pretrain"),
        ],
        &script(),
    ])
}

/// The schedule `name` at `line`, under `train_step`.
fn schedule(name: &str, line: i64) -> Vec<Frame> {
    stack(&[
        &[mlm(
            "megatron/core/pipeline_parallel/schedules.py",
            line,
            name,
        )],
        &train_step(2407),
    ])
}

/// A micro-batch's `forward_step` called by the schedule.
fn forward_step(schedule: &[Frame]) -> Vec<Frame> {
    stack(&[
        &[mlm(
            "megatron/core/pipeline_parallel/schedules.py",
            509,
            "forward_step",
        )],
        schedule,
    ])
}

/// The callers of `GPTModel.forward`: `Float16Module`, DDP, `pretrain_gpt.forward_step`.
fn model_outer(fstep: &[Frame]) -> Vec<Frame> {
    stack(&[
        &call(),
        &[mlm("megatron/core/transformer/module.py", 513, "forward")],
        &call(),
        &[mlm(
            "megatron/core/distributed/data_parallel_base.py",
            22,
            "forward",
        )],
        &call(),
        &[mlm("pretrain_gpt.py", 348, "forward_step")],
        fstep,
    ])
}

/// The callers of `TransformerBlock.forward`.
fn block_outer(fstep: &[Frame]) -> Vec<Frame> {
    stack(&[
        &call(),
        &[
            mlm("megatron/core/transformer/module.py", 376, "__call__"),
            mlm(
                "megatron/core/transformer/transformer_block.py",
                484,
                "__call__",
            ),
            mlm("megatron/core/models/gpt/gpt_model.py", 583, "forward"),
        ],
        &model_outer(fstep),
    ])
}

/// The callers of `TransformerLayer.forward` in the block's loop.
fn layer_outer(fstep: &[Frame]) -> Vec<Frame> {
    stack(&[
        &call(),
        &[
            mlm("megatron/core/transformer/module.py", 376, "__call__"),
            mlm(
                "megatron/core/transformer/transformer_block.py",
                664,
                "forward",
            ),
        ],
        &block_outer(fstep),
    ])
}

/// How a forward runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Train,
    NoGrad,
    Recompute,
}

/// The autograd node of a Python autograd function.
const PY_NODE: &str =
    "torch::autograd::PyNode::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)";
/// A node's call by the engine.
const NODE_CALL: &str =
    "torch::autograd::Node::operator()(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)";

/// The engine summing two gradients of one tensor.
const INPUT_BUFFER_ADD: &str = "torch::autograd::InputBuffer::add(unsigned long, at::Tensor&&, std::optional<c10::Stream> const&, std::optional<c10::Stream> const&)";

/// A native autograd node, as its C++ frame names it.
fn node(name: &str) -> String {
    format!(
        "torch::autograd::generated::{name}::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)"
    )
}

impl Megatron {
    // ------------------------------------------------------------ the steps

    /// `forward_backward_no_pipelining` over the micro-batches, then `finalize_model_grads`.
    fn forward_backward(&mut self) {
        let s = self.s();
        for mb in 0..self.cfg.microbatches {
            let last = mb + 1 == self.cfg.microbatches;
            let (fline, bline) = if last { (814, 833) } else { (789, 804) };
            let sched = schedule("forward_backward_no_pipelining", fline);
            let fstep = forward_step(&sched);
            let [labels, loss_mask, position_ids, tokens] = self.get_batch(&fstep);
            let (emb, x0) = self.embedding_forward(&fstep);
            let mut xs = vec![x0];
            let mut saved = Vec::new();
            for l in 0..s.layers {
                let (sv, out) = if self.cfg.recompute {
                    self.checkpointed_layer(l, &fstep)
                } else {
                    self.layer_forward(l, &layer_outer(&fstep), Mode::Train)
                };
                saved.push(sv);
                xs.push(out);
            }
            if self.cfg.fp8 {
                // Leaving the block's FP8 autocast: the amaxes reduced over the group.
                let exit = stack(&[
                    &[
                        te("quantization.py", 666, "reduce_and_update_fp8_tensors"),
                        te("quantization.py", 772, "autocast_exit"),
                        te("quantization.py", 1049, "__exit__"),
                        mlm(
                            "megatron/core/transformer/transformer_block.py",
                            622,
                            "forward",
                        ),
                    ],
                    &block_outer(&fstep),
                ]);
                let amax = self
                    .run
                    .alloc(4 * 5 * 4 * s.layers as u64, &exit, Role::Communication);
                self.run.free(amax, &exit);
            }
            let head = self.head_forward(&fstep);
            // pretrain_gpt.forward_step returns: its batch goes; the loss function's mask
            // with it, once the loss is computed.
            let returned = stack(&[
                &[mlm(
                    "megatron/core/pipeline_parallel/schedules.py",
                    514,
                    "forward_step",
                )],
                &sched,
            ]);
            self.run.free_all(&[tokens, labels, loss_mask], &returned);
            // backward_step: the loss's gradient seed on the main thread, then the engine.
            let bsched = schedule("forward_backward_no_pipelining", bline);
            let seed_at = stack(&[
                &[
                    th("autograd/__init__.py", 221, "_make_grads"),
                    th("autograd/__init__.py", 347, "backward"),
                    mlm(
                        "megatron/core/pipeline_parallel/schedules.py",
                        574,
                        "backward_step",
                    ),
                ],
                &bsched,
            ]);
            let seed = self.run.alloc(4, &seed_at, Role::BackwardTemporaries);
            let mut g = self.head_backward(head, xs[s.layers]);
            for l in (0..s.layers).rev() {
                let sv = saved.pop().unwrap();
                g = if self.cfg.recompute {
                    self.recomputed_layer_backward(l, xs[l], g)
                } else {
                    self.layer_backward(sv, xs[l], g, true)
                };
            }
            self.embedding_backward(emb, g, position_ids);
            let done = stack(&[
                &[
                    th("autograd/__init__.py", 354, "backward"),
                    mlm(
                        "megatron/core/pipeline_parallel/schedules.py",
                        574,
                        "backward_step",
                    ),
                ],
                &bsched,
            ]);
            self.run.free(seed, &done);
        }
        self.finalize(schedule("forward_backward_no_pipelining", 839));
    }

    /// `finalize_model_grads`: the sequence-parallel LayerNorm weights' gradients all-reduced
    /// over the tensor-parallel group, coalesced into one flat buffer.
    fn finalize(&mut self, sched: Vec<Frame>) {
        let s = self.s();
        let at = stack(&[
            &[
                th("_utils.py", 571, "_flatten_dense_tensors"),
                mlm(
                    "megatron/core/distributed/finalize_model_grads.py",
                    473,
                    "_allreduce_non_tensor_model_parallel_grads",
                ),
                mlm(
                    "megatron/core/distributed/finalize_model_grads.py",
                    647,
                    "finalize_model_grads",
                ),
            ],
            &sched,
        ]);
        let norms = 4 * s.layers as u64 + 2;
        let coalesced = self
            .run
            .alloc(norms * s.hidden * 4, &at, Role::Communication);
        self.run.free(coalesced, &at[1..]);
    }

    /// `optimizer.step()`: `ChainedOptimizer.step` over the distributed optimizer: the
    /// gradient norm and clipping's scalars, then TE FusedAdam's step (its moments made on
    /// the first), the main shards copied to `param_data` and all-gathered in place.
    fn optimizer_step(&mut self) {
        let outer = stack(&[&[no_grad()], &train_step(2474)]);
        let step = |line: i64| {
            stack(&[
                &[mlm("megatron/core/optimizer/optimizer.py", line, "step")],
                &outer,
            ])
        };
        let norm = |line: i64| {
            stack(&[
                &[
                    mlm(
                        "megatron/core/optimizer/clip_grads.py",
                        line,
                        "get_grad_norm_fp32",
                    ),
                    mlm("megatron/core/optimizer/optimizer.py", 356, "get_grad_norm"),
                    no_grad(),
                    mlm(
                        "megatron/core/optimizer/optimizer.py",
                        1762,
                        "get_grad_norm",
                    ),
                    no_grad(),
                ],
                &step(1866),
            ])
        };
        let scalars: Vec<Id> = [108, 112, 116, 121]
            .iter()
            .map(|&line| self.run.alloc(4, &norm(line), Role::OptimizerTemporaries))
            .collect();
        self.run.free_all(&scalars, &step(1866));
        let clip = stack(&[
            &[mlm(
                "megatron/core/optimizer/clip_grads.py",
                180,
                "clip_grad_by_total_norm_fp32",
            )],
            &step(1906),
        ]);
        let dummy = self.run.alloc(4, &clip, Role::OptimizerTemporaries);
        self.run.free(dummy, &step(1906));
        let fused = |line: i64| {
            stack(&[
                &[
                    te("optimizers/fused_adam.py", 417, "_initialize_state"),
                    te("optimizers/fused_adam.py", line, "initialize_state"),
                    te("optimizers/fused_adam.py", 616, "step"),
                    th("optim/optimizer.py", 516, "wrapper"),
                    mlm(
                        "megatron/core/optimizer/optimizer.py",
                        786,
                        "step_with_ready_grads",
                    ),
                    no_grad(),
                    mlm(
                        "megatron/core/optimizer/distrib_optimizer.py",
                        3163,
                        "step_with_ready_grads",
                    ),
                    no_grad(),
                    mlm("megatron/core/optimizer/optimizer.py", 1639, "_step"),
                    mlm(
                        "megatron/core/optimizer/optimizer.py",
                        1742,
                        "step_with_ready_grads",
                    ),
                    no_grad(),
                ],
                &step(1936),
            ])
        };
        self.run.scope_start("Optimizer.step#FusedAdam.step");
        if self.adam.is_empty() {
            let (avg, sq) = (fused(459), fused(460));
            for i in 0..self.shards.len() {
                let n = self.shard_sizes[i];
                self.adam_rows.push(self.run.next_row());
                self.adam
                    .push(self.run.alloc(n * 4, &avg, Role::OptimizerState));
                self.adam_rows.push(self.run.next_row());
                self.adam
                    .push(self.run.alloc(n * 4, &sq, Role::OptimizerState));
            }
        }
        self.run.scope_end("Optimizer.step#FusedAdam.step");
    }

    /// One iteration: the schedule, then the optimizer.
    fn train_step(&mut self) {
        self.forward_backward();
        self.optimizer_step();
    }

    // ---------------------------------------------------------- recompute

    /// A layer under full recompute: `tensor_parallel.checkpoint` runs it under `no_grad`
    /// (everything it makes is freed in it, but its output) and keeps its input.
    fn checkpointed_layer(&mut self, index: usize, fstep: &[Frame]) -> (Saved, Id) {
        let outer = stack(&[
            &call(),
            &[
                mlm("megatron/core/transformer/module.py", 376, "__call__"),
                mlm("megatron/core/recompute.py", 111, "custom_forward"),
                mlm("megatron/core/tensor_parallel/random.py", 607, "forward"),
                apply_fwd(),
                mlm("megatron/core/tensor_parallel/random.py", 675, "checkpoint"),
                mlm("megatron/core/recompute.py", 142, "chunk_runner"),
                mlm("megatron/core/recompute.py", 165, "checkpointed_forward"),
                mlm(
                    "megatron/core/transformer/transformer_block.py",
                    625,
                    "forward",
                ),
            ],
            &block_outer(fstep),
        ]);
        let (saved, out) = self.layer_forward(index, &outer, Mode::NoGrad);
        let done = stack(&[
            &[mlm("megatron/core/recompute.py", 121, "custom_forward")],
            &outer[4..],
        ]);
        self.run.free_all(&saved.all(), &done);
        (Saved::default(), out)
    }

    /// A checkpointed layer's backward: `CheckpointFunction.backward` re-runs its forward
    /// with grad on (inside the backward), then runs the nested backward through it. `x`,
    /// the layer's input the checkpoint kept, is freed once it is done.
    fn recomputed_layer_backward(&mut self, index: usize, x: Id, grad: Id) -> Id {
        let recompute = vec![
            mlm("megatron/core/transformer/module.py", 376, "__call__"),
            mlm("megatron/core/recompute.py", 111, "custom_forward"),
            mlm("megatron/core/tensor_parallel/random.py", 647, "backward"),
            apply_bwd(),
        ];
        let outer = stack(&[&call(), &recompute]);
        let (saved, out) = self.layer_forward(index, &outer, Mode::Recompute);
        self.recomputed_rows.push(self.run.next_row());
        self.reentrant = vec![
            th("autograd/__init__.py", 354, "backward"),
            mlm("megatron/core/tensor_parallel/random.py", 656, "backward"),
            apply_bwd(),
        ];
        // The recomputed output is what the nested backward starts from.
        let g = self.layer_backward(saved, x, grad, false);
        self.reentrant.clear();
        self.release(&[out, x], PY_NODE);
        g
    }
}

/// A pipeline stage in the middle (no embedding, no head) of `stages`, running 1F1B.
struct Stage {
    stages: usize,
    stage: usize,
    /// Trace rows where the stage's receive buffers for activations were made.
    recv_prev_rows: Vec<usize>,
    recv_next_rows: Vec<usize>,
    /// Trace rows of the input gradients sent back.
    input_grad_rows: Vec<usize>,
}

impl Megatron {
    /// `P2PCommunicator._communicate` making a receive buffer: `closure` at `line` (the
    /// previous stage's output, or the next stage's gradient), called by `method` at `at`,
    /// from the 1F1B schedule at `line_in_schedule`.
    fn receive(&mut self, prev: bool, method: &str, at: i64, line_in_schedule: i64) -> Id {
        let s = self.s();
        let (closure, line, call) = if prev {
            ("create_tensor_recv_prev", 331, 392)
        } else {
            ("create_tensor_recv_next", 339, 395)
        };
        let frames = stack(&[
            &[
                mlm(
                    "megatron/core/pipeline_parallel/p2p_communication.py",
                    line,
                    closure,
                ),
                mlm(
                    "megatron/core/pipeline_parallel/p2p_communication.py",
                    call,
                    "_communicate",
                ),
                mlm(
                    "megatron/core/pipeline_parallel/p2p_communication.py",
                    at,
                    method,
                ),
                mlm("megatron/core/utils.py", 2808, "wrapper"),
            ],
            &schedule(
                "forward_backward_pipelining_without_interleaving",
                line_in_schedule,
            ),
        ]);
        let truth = if prev {
            Role::Activations
        } else {
            Role::BackwardTemporaries
        };
        self.run.alloc(s.hidden_local(), &frames, truth)
    }

    /// One micro-batch's forward on this stage from its received input: the layers, then
    /// `deallocate_output_tensor` (the sent output's storage swapped for one element).
    /// Returns what the backward needs: the layers' saved tensors, their inputs, and the
    /// output's placeholder.
    fn stage_forward(
        &mut self,
        input: Id,
        line: i64,
        dealloc_line: i64,
    ) -> (Vec<Saved>, Vec<Id>, Id) {
        let s = self.s();
        let sched = schedule("forward_backward_pipelining_without_interleaving", line);
        let fstep = forward_step(&sched);
        let mut xs = vec![input];
        let mut saved = Vec::new();
        for l in 0..s.layers {
            let (sv, out) = self.layer_forward(l, &layer_outer(&fstep), Mode::Train);
            saved.push(sv);
            xs.push(out);
        }
        let dealloc = stack(&[
            &[mlm(
                "megatron/core/pipeline_parallel/schedules.py",
                196,
                "deallocate_output_tensor",
            )],
            &schedule(
                "forward_backward_pipelining_without_interleaving",
                dealloc_line,
            ),
        ]);
        let placeholder = self.run.alloc(2, &dealloc, Role::Activations);
        let out = xs.pop().unwrap();
        self.run.free(out, &dealloc);
        (saved, xs, placeholder)
    }

    /// One micro-batch's backward on this stage from the received gradient `grad` (not freed:
    /// the schedule holds it). Returns the input's gradient, sent back.
    fn stage_backward(
        &mut self,
        mut saved: Vec<Saved>,
        xs: Vec<Id>,
        placeholder: Id,
        grad: Id,
    ) -> Id {
        let s = self.s();
        let mut g = grad;
        for l in (0..s.layers).rev() {
            let sv = saved.pop().unwrap();
            // The stage's input stays with the schedule (`input_tensor`) until it is replaced.
            g = self.layer_backward_from(sv, xs[l], g, l > 0, l + 1 < s.layers);
        }
        self.release(&[placeholder], PY_NODE);
        g
    }

    /// One iteration of a middle stage: 1F1B over the micro-batches (warm-up forwards, the
    /// steady state, cool-down backwards), then `finalize_model_grads` and the optimizer.
    fn stage_step(&mut self, st: &mut Stage) {
        let m = self.cfg.microbatches;
        let warmup = st.stages - st.stage - 1;
        let remaining = m - warmup;
        let sched = |line: i64| schedule("forward_backward_pipelining_without_interleaving", line);
        let mut queue = std::collections::VecDeque::new();
        for _ in 0..warmup {
            st.recv_prev_rows.push(self.run.next_row());
            let input = self.receive(true, "recv_forward", 440, 2310);
            let (saved, xs, ph) = self.stage_forward(input, 2313, 2334);
            queue.push_back((saved, xs, ph));
        }
        let mut input = None;
        if remaining > 0 {
            st.recv_prev_rows.push(self.run.next_row());
            input = Some(self.receive(true, "recv_forward", 440, 2340));
        }
        let mut grad_in: Option<Id> = None;
        let mut recv_next: Option<Id> = None;
        for i in 0..remaining {
            let last = i + 1 == remaining;
            let x = input.take().unwrap();
            let (saved, xs, ph) = self.stage_forward(x, 2356, 2389);
            st.recv_next_rows.push(self.run.next_row());
            let g = self.receive(false, "send_forward_recv_backward", 545, 2382);
            if let Some(old) = recv_next.replace(g) {
                self.run.free(old, &sched(2382));
            }
            queue.push_back((saved, xs, ph));
            let (saved, xs, ph) = queue.pop_front().unwrap();
            let x0 = xs[0];
            let new_grad = self.stage_backward(saved, xs, ph, g);
            st.input_grad_rows.push(self.summed_row);
            if let Some(old) = grad_in.replace(new_grad) {
                self.run.free(old, &sched(2402));
            }
            if last {
                self.run.free(x0, &sched(2407));
            } else {
                st.recv_prev_rows.push(self.run.next_row());
                input = Some(self.receive(true, "send_backward_recv_forward", 578, 2412));
                self.run.free(x0, &sched(2412));
            }
        }
        for _ in 0..warmup {
            let (saved, xs, ph) = queue.pop_front().unwrap();
            let x0 = xs[0];
            st.recv_next_rows.push(self.run.next_row());
            let g = self.receive(false, "recv_backward", 471, 2432);
            if let Some(old) = recv_next.replace(g) {
                self.run.free(old, &sched(2432));
            }
            let new_grad = self.stage_backward(saved, xs, ph, g);
            st.input_grad_rows.push(self.summed_row);
            if let Some(old) = grad_in.replace(new_grad) {
                self.run.free(old, &sched(2436));
            }
            self.run.free(x0, &sched(2440));
        }
        // The schedule returns: what it still holds goes.
        let returned = train_step(2407);
        self.run
            .free_all(&[recv_next.unwrap(), grad_in.unwrap()], &returned);
        self.finalize(sched(2459));
        self.optimizer_step();
    }
}

/// A middle stage (`stage` of `stages`) trained as `cfg` says. Returns the run, its stage
/// bookkeeping, and the trace row its first step starts at.
fn pipeline_stage(cfg: Config, stages: usize, stage: usize) -> (Megatron, Stage, usize) {
    let mut m = Megatron::new(cfg);
    m.setup(false, false);
    let first_step = m.run.next_row();
    let mut st = Stage {
        stages,
        stage,
        recv_prev_rows: Vec::new(),
        recv_next_rows: Vec::new(),
        input_grad_rows: Vec::new(),
    };
    for _ in 0..cfg.steps {
        m.stage_step(&mut st);
    }
    (m, st, first_step)
}

/// A GPT trained as `cfg` says: setup, then its steps. Returns the run and the trace row its
/// first step starts at.
fn gpt(cfg: Config) -> (Megatron, usize) {
    let mut m = Megatron::new(cfg);
    m.setup(true, true);
    let first_step = m.run.next_row();
    for _ in 0..cfg.steps {
        m.step_rows.push(m.run.next_row());
        m.train_step();
    }
    (m, first_step)
}

/// What the physics checks read from a run: its setup's sizes.
fn sizes(m: &Megatron) -> (u64, u64, u64) {
    (m.made.numel, m.made.params, m.made.shard_numel)
}

/// The bytes of the blocks made at `rows` alive at `state`.
fn bytes_at(case: &Case, rows: &[usize], state: u32) -> u64 {
    case.analysed.facts[0]
        .allocations
        .iter()
        .filter(|a| rows.contains(&(a.alloc_row as usize)) && a.is_alive_at(state))
        .map(|a| a.size)
        .sum()
}

#[test]
fn a_tp2_distributed_optimizer_step_gets_buffers_shards_and_activations_right() {
    for cpp in [false, true] {
        let (m, _) = gpt(Config::new(cpp));
        let whole = m.run.whole();
        let score = if cpp {
            whole.assert_right(1.0)
        } else {
            // Without C++ frames too: torch's own cuBLAS workspace is told by its size, kept
            // from the first matmul (see
            // `torchs_cublas_workspace_made_by_the_first_matmul_is_a_workspace`).
            let score = whole.assert_right(1.0);
            let missed: Vec<_> = score.wrong.iter().map(|(k, &v)| (*k, v)).collect();
            assert_eq!(missed, vec![], "{}", score.explain());
            score
        };
        assert_eq!(score.unknown, 0, "{}", score.explain());
        // The peak is the last micro-batch's forward: every activation it keeps is one.
        assert!(score.truth(Role::Activations) > 0);
        assert_eq!(score.got(Role::Activations), score.truth(Role::Activations));
        whole.assert_reasons_name_frames(whole.peak());
        // Inside each attention backward, dQKV (and the rest the backward holds) is read
        // as the backward's temporaries.
        for &row in &m.attention_backward_rows {
            let at = whole.score_at(row as u32);
            assert_eq!(at.right, at.bytes, "{}", at.explain());
        }
    }
}

#[test]
fn per_rank_bytes_follow_megatrons_table_for_bf16_params_fp32_grads_and_the_distributed_optimizer()
{
    let (m, _) = gpt(Config::new(true));
    let (numel, params, shard) = sizes(&m);
    let d = m.cfg.shape.dp;
    // Padding: buckets end on lcm(d, 128) and parameters start on 64 elements; none here.
    assert_eq!(numel, params);
    // Each rank's main shards are its 1/d of every bucket.
    assert_eq!(shard * d, numel);
    let whole = m.run.whole();
    // After the last step only what training keeps is alive.
    let end = whole.score_at(whole.end());
    assert!(end.right_share() >= 1.0, "{}", end.explain());
    for score in [&end, &whole.score()] {
        // param_data: bf16, 2 B per element; grad_data: fp32, 4 B (twice the parameters).
        assert_eq!(score.got(Role::Parameters), 2 * numel);
        assert_eq!(score.got(Role::Gradients), 4 * numel);
        // Main fp32 shards (4 B per element of the shard) and Adam's two fp32 moments: three
        // times the masters, 12/d bytes per parameter.
        assert_eq!(score.got(Role::OptimizerState), 3 * 4 * shard);
        assert_eq!(score.got(Role::OptimizerState) * d, 12 * numel);
    }
    // Of it: the fp32 main shards, 4 B per element of this rank's shard, and Adam's two
    // moments of each, twice that; memsight reads them all as optimizer state.
    let end_state = whole.end();
    assert_eq!(bytes_at(&whole, &m.shard_rows, end_state), 4 * shard);
    assert_eq!(bytes_at(&whole, &m.adam_rows, end_state), 2 * 4 * shard);
    let rows: Vec<usize> = m.shard_rows.iter().chain(&m.adam_rows).copied().collect();
    let roles = roles_at(&whole, &rows, end_state);
    assert_eq!(roles.len(), 3 * m.shard_rows.len());
    assert!(
        roles.iter().all(|&r| r == Role::OptimizerState),
        "{roles:?}"
    );
    // Megatron's table: bf16 params + fp32 grads with the distributed optimizer is 6 + 12/d
    // bytes per parameter.
    let trained =
        end.got(Role::Parameters) + end.got(Role::Gradients) + end.got(Role::OptimizerState);
    assert_eq!(trained * d, (6 * d + 12) * params);
    // What else lives on: TE's and torch's cuBLAS workspaces and TE's dummy wgrads (one per
    // weight shape: QKV, proj, fc1, fc2, the output layer), and the GlobalMemoryBuffer.
    let s = m.cfg.shape;
    let dummies = 2
        * (3 * s.hidden / s.tp * s.hidden
            + s.hidden * s.hidden / s.tp
            + 2 * s.ffn / s.tp * s.hidden
            + s.vocab / s.tp * s.hidden);
    assert_eq!(
        end.got(Role::Workspace),
        (32 * MIB + KIB) + 32 * MIB + dummies
    );
    assert_eq!(end.got(Role::Communication), s.hidden_full());
}

#[test]
fn recording_started_after_setup_keeps_what_the_steps_make_right() {
    for cpp in [false, true] {
        let (m, first_step) = gpt(Config {
            microbatches: 1,
            ..Config::new(cpp)
        });
        let (numel, _, shard) = sizes(&m);
        let whole = m.run.whole().score();
        // A ring buffer that wrapped at the first step: the blocks keep their frames,
        // nothing changes.
        let wrapped = m.run.cut(first_step, Cut::Wrapped);
        let score = wrapped.score();
        assert_eq!(score.right, whole.right, "{}", score.explain());
        assert_eq!(score.wrong, whole.wrong, "{}", score.explain());
        // Recording turned on at the first step: what setup made has no frames. The steps'
        // memory (activations, Adam's moments, workspaces, buffers) is still right, and so
        // is param_data; what is misread is exactly grad_data and the main shards (see
        // `recording_started_after_setup_tells_the_grad_buffer_and_main_shards`).
        let late = m.run.cut(first_step, Cut::LateStart);
        let score = late.score();
        assert_eq!(score.unknown, 0, "{}", score.explain());
        let mut expected = vec![
            ((Role::Gradients, Role::Parameters), 4 * numel),
            ((Role::OptimizerState, Role::Parameters), 4 * shard),
        ];
        expected.sort();
        let missed: Vec<_> = score.wrong.iter().map(|(k, &v)| (*k, v)).collect();
        assert_eq!(missed, expected, "{}", score.explain());
        let ws = 0;
        assert_eq!(
            score.got(Role::Activations),
            score.truth(Role::Activations) + ws
        );
        assert_eq!(score.got(Role::OptimizerState), 2 * 4 * shard);
        // Recording turned on in the second step, as when a running job is asked for a
        // snapshot: everything made before has no frames, and the second step makes no
        // gradient (TE adds wgrads into grad_data) and no optimizer state. The step's own
        // memory stays right; all the rest is read as parameters (see
        // `recording_started_mid_training_tells_buffers_states_and_workspaces`).
        let late = m.run.cut(m.step_rows[1], Cut::LateStart);
        let score = late.score();
        assert_eq!(score.unknown, 0, "{}", score.explain());
        assert_eq!(score.got(Role::Activations), score.truth(Role::Activations));
        assert!(score.truth(Role::Activations) > 0);
        for &(truth, got) in score.wrong.keys() {
            assert_eq!(got, Role::Parameters, "{truth:?}: {}", score.explain());
        }
        assert_eq!(score.truth(Role::Parameters), 2 * numel);
        assert!(score.right_share() >= 0.45, "{}", score.explain());
    }
}

#[test]
#[ignore = "memsight reads Megatron's frameless grad_data as parameters and its fp32 main shards as the parameters Adam steps"]
fn recording_started_after_setup_tells_the_grad_buffer_and_main_shards() {
    let (m, first_step) = gpt(Config::new(true));
    let late = m.run.cut(first_step, Cut::LateStart);
    late.assert_right(0.9);
    let score = late.score();
    assert_eq!(
        score.got(Role::Gradients),
        score.truth(Role::Gradients),
        "{}",
        score.explain()
    );
    assert_eq!(
        score.got(Role::OptimizerState),
        score.truth(Role::OptimizerState),
        "{}",
        score.explain()
    );
}

#[test]
#[ignore = "with recording started mid-training, memsight reads every frameless block of a Megatron run (grad_data, main shards, Adam's moments, workspaces, the global buffer) as parameters"]
fn recording_started_mid_training_tells_buffers_states_and_workspaces() {
    let (m, _) = gpt(Config {
        microbatches: 1,
        ..Config::new(true)
    });
    let late = m.run.cut(m.step_rows[1], Cut::LateStart);
    late.assert_right(0.9);
}

#[test]
fn a_state_only_snapshot_reads_every_kept_block_from_its_frames() {
    for cpp in [false, true] {
        let (m, _) = gpt(Config::new(cpp));
        let state = m.run.state_only();
        let end = state.score_at(state.end());
        let missed = if cpp { 0 } else { 32 * MIB };
        assert_eq!(end.bytes - end.right, missed, "{}", end.explain());
        assert_eq!(end.unknown, 0, "{}", end.explain());
        state.assert_reasons_name_frames(state.end());
    }
}

#[test]
fn torchs_cublas_workspace_made_by_the_first_matmul_is_a_workspace() {
    let (m, _) = gpt(Config::new(false));
    let whole = m.run.whole();
    whole.assert_right(1.0);
}

#[test]
fn a_middle_pipeline_stage_keeps_p_minus_s_received_inputs_as_activations() {
    for cpp in [false, true] {
        // Stage 1 of 4, 1F1B over 5 micro-batches: two warm-up forwards, three in the
        // steady state, two cool-down backwards.
        let cfg = Config {
            microbatches: 5,
            steps: 1,
            ..Config::new(cpp)
        };
        let (m, st, first_step) = pipeline_stage(cfg, 4, 1);
        let whole = m.run.whole();
        let score = whole.assert_right(0.98);
        assert_eq!(score.unknown, 0, "{}", score.explain());
        whole.assert_reasons_name_frames(whole.peak());
        // At the peak the stage holds P - s micro-batches' inputs (the warm-up's two and the
        // one in flight), each received into a `create_tensor_recv_prev` buffer.
        let peak = whole.peak();
        let received = roles_at(&whole, &st.recv_prev_rows, peak);
        assert_eq!(received, vec![Role::Activations; st.stages - st.stage]);
        let s = cfg.shape;
        assert_eq!(
            bytes_at(&whole, &st.recv_prev_rows, peak),
            3 * s.hidden_local()
        );
        for role in roles_at(&whole, &st.recv_next_rows, peak) {
            assert_eq!(role, Role::BackwardTemporaries);
        }
        // The only miss: the input's gradient waiting to be sent back (see
        // `a_stages_input_gradient_waiting_to_be_sent_back_is_a_backward_temporary`).
        let missed: Vec<_> = score.wrong.iter().map(|(k, &v)| (*k, v)).collect();
        assert_eq!(
            missed,
            vec![(
                (Role::BackwardTemporaries, Role::Gradients),
                s.hidden_local()
            )]
        );
        // Physics, after the step: this stage's parameters only (no embedding, no head),
        // by the same table.
        let (numel, _, shard) = sizes(&m);
        let end = whole.score_at(whole.end());
        assert_eq!(end.right, end.bytes, "{}", end.explain());
        assert_eq!(end.got(Role::Parameters), 2 * numel);
        assert_eq!(end.got(Role::Gradients), 4 * numel);
        assert_eq!(end.got(Role::OptimizerState), 12 * shard);
        // A wrapped ring buffer changes nothing.
        let wrapped = m.run.cut(first_step, Cut::Wrapped).score();
        assert_eq!(wrapped.right, score.right, "{}", wrapped.explain());
    }
}

#[test]
#[ignore = "memsight calls a backward-made tensor alive past its backward a gradient: a pipeline stage's input gradient waits in the schedule until the next backward"]
fn a_stages_input_gradient_waiting_to_be_sent_back_is_a_backward_temporary() {
    let cfg = Config {
        microbatches: 5,
        steps: 1,
        ..Config::new(true)
    };
    let (m, st, _) = pipeline_stage(cfg, 4, 1);
    let whole = m.run.whole();
    let peak = whole.peak();
    let roles = roles_at(&whole, &st.input_grad_rows, peak);
    assert!(!roles.is_empty());
    assert!(
        roles.iter().all(|&r| r == Role::BackwardTemporaries),
        "{roles:?}"
    );
}

#[test]
fn full_recompute_reruns_each_layer_inside_the_backward() {
    let one = |cpp: bool| Config {
        microbatches: 1,
        ..Config::new(cpp)
    };
    let kept = gpt(one(false))
        .0
        .run
        .whole()
        .score()
        .truth(Role::Activations);
    for cpp in [false, true] {
        let (m, _) = gpt(Config {
            recompute: true,
            ..one(cpp)
        });
        let whole = m.run.whole();
        let score = whole.assert_right(1.0);
        whole.assert_reasons_name_frames(whole.peak());
        // Only each layer's input is kept through the forward: far fewer activations.
        assert!(
            score.truth(Role::Activations) * 3 / 2 < kept,
            "{}",
            score.explain()
        );
        assert_eq!(score.got(Role::Activations), score.truth(Role::Activations));
        // Right after a layer is recomputed, what the re-run made (its saved tensors, made
        // under `CheckpointFunction.backward`) is the backward's, and read so.
        for &row in &m.recomputed_rows {
            let at = whole.score_at(row as u32);
            assert_eq!(at.right, at.bytes, "{}", at.explain());
            assert!(
                at.got(Role::BackwardTemporaries) >= 100 * MIB,
                "{}",
                at.explain()
            );
        }
    }
}

#[test]
fn fp8_keeps_te_weight_cache_and_scaling_state_as_parameters() {
    for cpp in [false, true] {
        let (m, _) = gpt(Config {
            fp8: true,
            microbatches: 1,
            ..Config::new(cpp)
        });
        let whole = m.run.whole();
        let score = whole.assert_right(if cpp { 1.0 } else { 0.98 });
        whole.assert_reasons_name_frames(whole.peak());
        // TE's FP8 copies of every GEMM weight (rowwise and transposed, 1 B each, and a scale),
        // four scaling tensors per TE module: parameters beside param_data.
        let s = m.cfg.shape;
        let (numel, _, _) = sizes(&m);
        let linear = s.layers as u64
            * (3 * s.hidden / s.tp * s.hidden
                + s.hidden * s.hidden / s.tp
                + 2 * s.ffn / s.tp * s.hidden);
        let modules = 4 * s.layers as u64;
        let end = whole.score_at(whole.end());
        assert_eq!(
            end.truth(Role::Parameters),
            2 * numel + 2 * linear + modules * (512 + 4 * 512)
        );
        assert_eq!(
            end.got(Role::Parameters),
            end.truth(Role::Parameters),
            "{}",
            end.explain()
        );
        let _ = score;
        // Made inside the first forward, they keep their frames when the ring buffer wrapped
        // after it (at the second step).
        let wrapped = m.run.cut(m.step_rows[1], Cut::Wrapped);
        let end = wrapped.score_at(wrapped.end());
        assert_eq!(
            end.got(Role::Parameters),
            end.truth(Role::Parameters),
            "{}",
            end.explain()
        );
    }
}

/// The roles memsight gave the allocations made at `rows` that are alive at `state`.
fn roles_at(case: &Case, rows: &[usize], state: u32) -> Vec<Role> {
    let facts = &case.analysed.facts[0];
    let roles = &case.categories.devices[0].roles;
    facts
        .allocations
        .iter()
        .enumerate()
        .filter(|(_, a)| rows.contains(&(a.alloc_row as usize)) && a.is_alive_at(state))
        .map(|(i, _)| roles[i])
        .collect()
}
