//! Runs of SGLang's scheduler process at 0.4.10.post2 (`python -m sglang.launch_server`, one
//! GPU, the overlap scheduler, FlashInfer attention, page size 1, CUDA graphs on; torch 2.7.1,
//! Python 3.11), stacks from its released wheel: the ModelRunner loading the weights,
//! `init_memory_pool` making the ReqToTokenPool, the token-to-KV pool and its free list, the
//! cuBLAS and FlashInfer workspaces, the CudaGraphRunner's static buffers and captures (the
//! graphs in the global pool `torch.cuda.graph_pool_handle()` makes, `(0, N)`), then a prefill
//! chunk and decodes split between the scheduler thread and the forward thread. A variant runs
//! with `--enable-memory-saver` (as RL frameworks do): weights and KV cache in
//! torch_memory_saver's MemPool, `(0, N)` too and no graph's, paused at the end.

use crate::run::*;
use memsight_core::analysis::categories::Role;
use memsight_core::model::cut::Cut;

const MIB: u64 = 1 << 20;

/// Llama-3-8B in bf16 (vocabulary 128256, hidden 4096, MLP 14336, 8 KV heads of 128), cut to
/// a few layers.
const EMBEDDING: u64 = 128_256 * 4096 * 2;
const QKV: u64 = 48 * MIB;
const O_PROJ: u64 = 32 * MIB;
const GATE_UP: u64 = 224 * MIB;
const DOWN: u64 = 112 * MIB;
const ROPE: u64 = 131_072 * 128 * 2;
const VOCAB: u64 = 128_256;
/// Bytes per token: the hidden state, q/k/v, gate_up, SiLU·mul, one layer's K (or V).
const HIDDEN_OUT: u64 = 4096 * 2;
const QKV_OUT: u64 = 6144 * 2;
const GATE_UP_OUT: u64 = 28_672 * 2;
const ACT_OUT: u64 = 14_336 * 2;
const KV_ROW: u64 = 8 * 128 * 2;
/// `max_total_num_tokens` (what memory left after the weights holds), the model's
/// context_len, and max_num_reqs = min(max(tokens / context_len · 512, 2048), 4096).
const KV_TOKENS: u64 = 262_144;
const CONTEXT_LEN: u64 = 8192;
const MAX_REQS: u64 = 4096;
/// chunked_prefill_size, the largest captured batch, running requests,
/// max_running_requests (the future token ids' ring is 5 times it).
const CHUNK: u64 = 8192;
const MAX_BS: u64 = 160;
const RUNNING: u64 = 32;
const MAX_RUNNING: u64 = 4096;
/// The batch sizes captured here (of 1, 2, 4, 8, 16, 24, … 160), largest first.
const CAPTURED: [u64; 3] = [160, 64, 8];
/// global_config.flashinfer_workspace_size, and cuBLAS's workspace on Hopper.
const FLASHINFER_WORKSPACE: u64 = 384 * MIB;
const CUBLAS_WORKSPACE: u64 = 32 * MIB;

fn rounded(size: u64) -> u64 {
    size.div_ceil(512).max(1) * 512
}

fn stdlib(file: &str, line: i64, name: &str) -> Frame {
    Frame {
        filename: format!("/opt/conda/lib/python3.11/{file}"),
        line,
        name: name.to_string(),
    }
}

/// torch 2.7's `nn.Module.__call__` frames, innermost first.
fn module_call() -> [Frame; 2] {
    [
        py("torch/nn/modules/module.py", 1762, "_call_impl"),
        py("torch/nn/modules/module.py", 1751, "_wrapped_call_impl"),
    ]
}

/// `DynamicGradMode` (a `_DecoratorContextManager`) around the event loops and the forward
/// thread.
fn grad_mode() -> Frame {
    py("torch/utils/_contextlib.py", 116, "decorate_context")
}

fn device_context() -> Frame {
    py("torch/utils/_device.py", 104, "__torch_function__")
}

/// The scheduler subprocess the server spawned, running `run_scheduler_process` at `line`
/// (the Scheduler's construction :2534, the overlap event loop :2557).
fn scheduler_process(line: i64) -> Vec<Frame> {
    vec![
        py(
            "sglang/srt/managers/scheduler.py",
            line,
            "run_scheduler_process",
        ),
        stdlib("multiprocessing/process.py", 108, "run"),
        stdlib("multiprocessing/process.py", 314, "_bootstrap"),
        stdlib("multiprocessing/spawn.py", 135, "_main"),
        stdlib("multiprocessing/spawn.py", 122, "spawn_main"),
        Frame {
            filename: "<string>".to_string(),
            line: 1,
            name: "<module>".to_string(),
        },
    ]
}

/// `Scheduler.__init__` building the overlap worker client, which builds the TpModelWorker,
/// which builds the ModelRunner, whose `initialize` runs at `line`.
fn initialize(line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py(
                "sglang/srt/model_executor/model_runner.py",
                line,
                "initialize",
            ),
            py("sglang/srt/model_executor/model_runner.py", 242, "__init__"),
            py("sglang/srt/managers/tp_worker.py", 84, "__init__"),
            py(
                "sglang/srt/managers/tp_worker_overlap_thread.py",
                67,
                "__init__",
            ),
            py("sglang/srt/managers/scheduler.py", 313, "__init__"),
        ],
        &scheduler_process(2534),
    ])
}

/// The scheduler thread's overlap loop at `line`.
fn event_loop(line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py(
                "sglang/srt/managers/scheduler.py",
                line,
                "event_loop_overlap",
            ),
            grad_mode(),
        ],
        &scheduler_process(2557),
    ])
}

/// The overlap worker's forward thread (on its own CUDA stream), at `line` of its loop.
fn forward_thread(line: i64) -> Vec<Frame> {
    vec![
        py(
            "sglang/srt/managers/tp_worker_overlap_thread.py",
            line,
            "forward_thread_func_",
        ),
        grad_mode(),
        py(
            "sglang/srt/managers/tp_worker_overlap_thread.py",
            141,
            "forward_thread_func",
        ),
        stdlib("threading.py", 982, "run"),
        stdlib("threading.py", 1045, "_bootstrap_inner"),
        stdlib("threading.py", 1002, "_bootstrap"),
    ]
}

/// `TpModelWorker.forward_batch_generation` at `line` (ForwardBatch.init_new :227, the
/// forward :238, sampling :247) in the forward thread.
fn worker_step(line: i64) -> Vec<Frame> {
    stack(&[
        &[py(
            "sglang/srt/managers/tp_worker.py",
            line,
            "forward_batch_generation",
        )],
        &forward_thread(176),
    ])
}

// --- Weights ---------------------------------------------------------------------------

/// The loader building the model, from `LlamaForCausalLM.__init__` at `line` out.
fn loader(line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py("sglang/srt/models/llama.py", line, "__init__"),
            py(
                "sglang/srt/model_loader/loader.py",
                174,
                "_initialize_model",
            ),
            py("sglang/srt/model_loader/loader.py", 432, "load_model"),
            py("sglang/srt/model_loader/__init__.py", 22, "get_model"),
            py(
                "sglang/srt/model_executor/model_runner.py",
                643,
                "load_model",
            ),
        ],
        &initialize(285),
    ])
}

fn llama_model(line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py("sglang/srt/models/llama.py", line, "__init__"),
            py("sglang/srt/models/llama.py", 445, "_init_model"),
        ],
        &loader(413),
    ])
}

/// From a decoder layer's `module_line` (attention :219, MLP :233) out.
fn layer(module_line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py("sglang/srt/models/llama.py", module_line, "__init__"),
            py("sglang/srt/models/llama.py", 294, "<lambda>"),
            py("sglang/srt/utils.py", 529, "<listcomp>"),
            py("sglang/srt/utils.py", 528, "make_layers"),
        ],
        &llama_model(292),
    ])
}

/// A linear layer's weight: `UnquantizedLinearMethod.create_weights` under its classes'
/// constructors (lines in linear.py: ColumnParallelLinear :306, QKVParallelLinear :801,
/// MergedColumnParallelLinear :469, RowParallelLinear :1181).
fn linear(classes: &[i64], owner_line: i64, module_line: i64) -> Vec<Frame> {
    let mut frames = vec![
        device_context(),
        py(
            "sglang/srt/layers/quantization/unquant.py",
            96,
            "create_weights",
        ),
    ];
    for &line in classes {
        frames.push(py("sglang/srt/layers/linear.py", line, "__init__"));
    }
    frames.push(py("sglang/srt/models/llama.py", owner_line, "__init__"));
    stack(&[&frames, &layer(module_line)])
}

fn embedding(lm_head: bool) -> Vec<Frame> {
    let file = "sglang/srt/layers/vocab_parallel_embedding.py";
    let inner = [
        device_context(),
        py(
            "sglang/srt/layers/quantization/unquant.py",
            59,
            "create_weights",
        ),
        py(file, 293, "__init__"),
    ];
    if lm_head {
        stack(&[&inner, &[py(file, 523, "__init__")], &loader(419)])
    } else {
        stack(&[&inner, &llama_model(283)])
    }
}

fn rope() -> Vec<Frame> {
    stack(&[
        &[
            device_context(),
            py("sglang/srt/layers/rotary_embedding.py", 101, "__init__"),
            py("sglang/srt/layers/rotary_embedding.py", 802, "__init__"),
            py("sglang/srt/layers/rotary_embedding.py", 1229, "get_rope"),
            py("sglang/srt/models/llama.py", 162, "__init__"),
        ],
        &layer(219),
    ])
}

// --- The model's forward ------------------------------------------------------------------

/// What one layer's forward makes per token, each with its frames inside `LlamaModel.forward`
/// (`layer(...)` at :334): q/k/v, gate_up and SiLU·mul.
fn layer_ops() -> [(u64, Vec<Frame>); 3] {
    let in_layer = |sub: &[Frame], decoder_line: i64| {
        stack(&[
            sub,
            &module_call(),
            &[py("sglang/srt/models/llama.py", decoder_line, "forward")],
            &module_call(),
            &[py("sglang/srt/models/llama.py", 334, "forward")],
        ])
    };
    let linear = |owner_line: i64| {
        stack(&[
            &[
                py("sglang/srt/layers/quantization/unquant.py", 123, "apply"),
                py("sglang/srt/layers/linear.py", 406, "forward"),
            ],
            &module_call(),
            &[py("sglang/srt/models/llama.py", owner_line, "forward")],
        ])
    };
    [
        (QKV_OUT, in_layer(&linear(186), 258)),
        (GATE_UP_OUT, in_layer(&linear(95), 266)),
        (
            ACT_OUT,
            in_layer(
                &stack(&[
                    &[
                        py("sglang/srt/layers/activation.py", 67, "forward_cuda"),
                        py("sglang/srt/custom_op.py", 59, "forward"),
                    ],
                    &module_call(),
                    &[py("sglang/srt/models/llama.py", 96, "forward")],
                ]),
                266,
            ),
        ),
    ]
}

/// From `LlamaForCausalLM.forward`'s call of the model (:457) out to `caller`.
fn causal_lm(inner: &[Frame], caller: &[Frame]) -> Vec<Frame> {
    stack(&[
        inner,
        &module_call(),
        &[py("sglang/srt/models/llama.py", 457, "forward")],
        caller,
    ])
}

/// A forward over `tokens` tokens from `caller`: the embedding's hidden states and each
/// layer's activations (freed as the next layer runs), all with `truth`, all freed. Returns
/// the bytes alive at its peak, and the state of that peak (after its first layer's last
/// allocation).
fn forward(run: &mut Run, layers: usize, tokens: u64, caller: &[Frame], truth: Role) -> (u64, u32) {
    let hidden_at = causal_lm(
        &stack(&[
            &[
                py("sglang/srt/layers/quantization/unquant.py", 79, "embedding"),
                py(
                    "sglang/srt/layers/vocab_parallel_embedding.py",
                    472,
                    "forward",
                ),
            ],
            &module_call(),
            &[py("sglang/srt/models/llama.py", 318, "forward")],
        ]),
        caller,
    );
    let hidden = run.alloc(tokens * HIDDEN_OUT, &hidden_at, truth);
    let ops: Vec<(u64, Vec<Frame>)> = layer_ops()
        .into_iter()
        .map(|(per_token, inner)| (per_token, causal_lm(&inner, caller)))
        .collect();
    let mut peak_state = 0;
    for l in 0..layers {
        let made: Vec<Id> = ops
            .iter()
            .map(|(per_token, at)| run.alloc(tokens * per_token, at, truth))
            .collect();
        if l == 0 {
            peak_state = run.next_row() as u32;
        }
        run.free_all(&made, caller);
    }
    run.free(hidden, caller);
    let bytes =
        rounded(tokens * HIDDEN_OUT) + ops.iter().map(|(p, _)| rounded(tokens * p)).sum::<u64>();
    (bytes, peak_state)
}

// --- The run ------------------------------------------------------------------------------

/// Pools of a run: the weights', the KV cache's, the graphs'.
#[derive(Clone, Copy, Debug)]
struct Pools {
    weights: (i64, i64),
    kv_cache: (i64, i64),
    graphs: (i64, i64),
}

/// No memory saver: the graph pool is the first `graph_pool_handle()` (0.4.10+).
const PLAIN: Pools = Pools {
    weights: DEFAULT_POOL,
    kv_cache: DEFAULT_POOL,
    graphs: (0, 1),
};

/// `--enable-memory-saver` with torch_memory_saver ≤ 0.0.8: one MemPool for the weights and
/// the KV cache (regions "weights" and "kv_cache"), made before the graph pool.
const MEMORY_SAVER: Pools = Pools {
    weights: (0, 1),
    kv_cache: (0, 1),
    graphs: (0, 2),
};

/// A run and the configured sizes its physics is checked against.
struct Served {
    run: Run,
    weights: u64,
    /// The K and V buffers.
    kv_cache: u64,
    /// req_to_token and the free list.
    token_maps: u64,
    /// Static buffers and graph-pool memory.
    graphs: u64,
    inputs: u64,
    workspace: u64,
    /// Model buffers `release_memory_occupation` stashed (parameters too).
    stashed: u64,
    first_step: usize,
    /// The largest step's scratch and inputs alive at once.
    step_peak: u64,
    /// The state at the peak of the first capture warm-up.
    warm_up: u32,
    /// The warm-up's scratch alive then.
    warm_up_bytes: u64,
    /// The state just after the first step's tokens were sampled.
    sampled: u32,
}

impl Served {
    fn estimate(&self) -> u64 {
        self.weights
            + self.kv_cache
            + self.token_maps
            + self.graphs
            + self.inputs
            + self.workspace
            + self.step_peak
    }
}

fn weight_bytes(layers: usize) -> u64 {
    2 * EMBEDDING + ROPE + layers as u64 * (QKV + O_PROJ + GATE_UP + DOWN)
}

/// The scheduler process of sglang 0.4.10.post2 serving Llama: `layers` layers, `steps` steps
/// (a prefill chunk, then decodes that replay a captured graph), in `pools`; `pause`: the RL
/// trainer then pauses it (`release_memory_occupation`).
fn sglang_run(layers: usize, steps: usize, pools: Pools, pause: bool) -> Served {
    let mut run = Run::new();
    // load_weights: inside the memory saver's "weights" region when it is on.
    let w = pools.weights;
    run.alloc_in(w, EMBEDDING, &embedding(false), Role::Parameters);
    for l in 0..layers {
        run.alloc_in(w, QKV, &linear(&[306, 801], 145, 219), Role::Parameters);
        run.alloc_in(w, O_PROJ, &linear(&[1181], 154, 219), Role::Parameters);
        if l == 0 {
            run.alloc_in(w, ROPE, &rope(), Role::Parameters);
        }
        run.alloc_in(w, GATE_UP, &linear(&[306, 469], 72, 233), Role::Parameters);
        run.alloc_in(w, DOWN, &linear(&[1181], 79, 233), Role::Parameters);
    }
    run.alloc_in(w, EMBEDDING, &embedding(true), Role::Parameters);
    // init_memory_pool: req_to_token (int32, max_num_reqs × (context_len + 4)), then per
    // layer K and V of (tokens + page_size) rows (Python 3.11: the comprehension's frame),
    // both in the "kv_cache" region; the free list (int64 arange) outside it.
    let pool = |line: i64, inner: &[Frame]| {
        stack(&[
            inner,
            &[py(
                "sglang/srt/model_executor/model_runner.py",
                line,
                "init_memory_pool",
            )],
            &initialize(331),
        ])
    };
    let req_to_token = MAX_REQS * (CONTEXT_LEN + 4) * 4;
    run.alloc_in(
        pools.kv_cache,
        req_to_token,
        &pool(
            1174,
            &[py("sglang/srt/mem_cache/memory_pool.py", 66, "__init__")],
        ),
        Role::KvCache,
    );
    let kv_layer = (KV_TOKENS + 1) * KV_ROW;
    for (comprehension, function) in [(225, 224), (233, 232)] {
        let at = pool(
            1251,
            &[
                py(
                    "sglang/srt/mem_cache/memory_pool.py",
                    comprehension,
                    "<listcomp>",
                ),
                py(
                    "sglang/srt/mem_cache/memory_pool.py",
                    function,
                    "_create_buffers",
                ),
                py("sglang/srt/mem_cache/memory_pool.py", 203, "__init__"),
            ],
        );
        for _ in 0..layers {
            run.alloc_in(pools.kv_cache, kv_layer, &at, Role::KvCache);
        }
    }
    let free_list = KV_TOKENS * 8;
    run.alloc(
        free_list,
        &pool(
            1277,
            &[
                py("sglang/srt/mem_cache/allocator.py", 126, "clear"),
                py("sglang/srt/mem_cache/allocator.py", 122, "__init__"),
            ],
        ),
        Role::KvCache,
    );
    // init_cublas: a 16×16 matmul whose cuBLAS handle gets its workspace; the operands are
    // dropped on return.
    let cublas = |line: i64| {
        stack(&[
            &[py(
                "sglang/srt/model_executor/model_runner.py",
                line,
                "init_cublas",
            )],
            &initialize(337),
        ])
    };
    let a = run.alloc(512, &cublas(1312), Role::Workspace);
    let b = run.alloc(512, &cublas(1313), Role::Workspace);
    run.alloc(CUBLAS_WORKSPACE, &cublas(1314), Role::Workspace);
    let c = run.alloc(512, &cublas(1314), Role::Workspace);
    run.free_all(&[a, b, c], &initialize(337));
    // init_attention_backend: FlashInfer's process-wide workspace.
    let backend = stack(&[
        &[
            py(
                "sglang/srt/layers/attention/flashinfer_backend.py",
                121,
                "__init__",
            ),
            py(
                "sglang/srt/model_executor/model_runner.py",
                1388,
                "_get_attention_backend_from_str",
            ),
            py(
                "sglang/srt/model_executor/model_runner.py",
                1362,
                "_get_attention_backend",
            ),
            py(
                "sglang/srt/model_executor/model_runner.py",
                1322,
                "init_attention_backend",
            ),
        ],
        &initialize(338),
    ]);
    run.alloc(FLASHINFER_WORKSPACE, &backend, Role::Workspace);
    // init_cuda_graphs: the CudaGraphRunner's static buffers in the default pool (the
    // attention backend's kv_indices, then input_ids :301, req_pool_indices :302, seq_lens
    // :303, out_cache_loc :306, positions :307, mrope_positions :308, the fp32
    // next_token_logits_buffer :378), then per batch size (largest first) two warm-up runs
    // (:654, freed) and the captured one (:663), whose memory the graph keeps in the global
    // pool (PyTorch keeps it as the pool's segments; one block per graph here).
    let runner = |line: i64| {
        stack(&[
            &[
                py(
                    "sglang/srt/model_executor/cuda_graph_runner.py",
                    line,
                    "__init__",
                ),
                py(
                    "sglang/srt/model_executor/model_runner.py",
                    1496,
                    "init_cuda_graphs",
                ),
            ],
            &initialize(339),
        ])
    };
    let mut graphs = 0;
    let state = stack(&[
        &[py(
            "sglang/srt/layers/attention/flashinfer_backend.py",
            273,
            "init_cuda_graph_state",
        )],
        &runner(280),
    ]);
    run.alloc(MAX_BS * CONTEXT_LEN * 4, &state, Role::CudaGraph);
    graphs += rounded(MAX_BS * CONTEXT_LEN * 4);
    for (line, size) in [
        (301, MAX_BS * 8),
        (302, MAX_BS * 4),
        (303, MAX_BS * 4),
        (306, MAX_BS * 8),
        (307, MAX_BS * 8),
        (308, 3 * MAX_BS * 8),
        (378, MAX_BS * VOCAB * 4),
    ] {
        run.alloc(
            size,
            &stack(&[&[device_context()], &runner(line)]),
            Role::CudaGraph,
        );
        graphs += rounded(size);
    }
    let (mut warm_up, mut warm_up_bytes) = (0, 0);
    for bs in CAPTURED {
        let at = |line: i64| {
            stack(&[
                &[
                    py(
                        "sglang/srt/model_executor/cuda_graph_runner.py",
                        642,
                        "run_once",
                    ),
                    py(
                        "sglang/srt/model_executor/cuda_graph_runner.py",
                        line,
                        "capture_one_batch_size",
                    ),
                    py(
                        "sglang/srt/model_executor/cuda_graph_runner.py",
                        492,
                        "capture",
                    ),
                ],
                &runner(387),
            ])
        };
        for _ in 0..2 {
            let (bytes, state) = forward(&mut run, layers, bs, &at(654), Role::ForwardTemporaries);
            if warm_up == 0 {
                (warm_up, warm_up_bytes) = (state, bytes);
            }
        }
        let captured = causal_lm(&layer_ops()[1].1, &at(663));
        let size = bs * (GATE_UP_OUT + ACT_OUT);
        run.alloc_in(pools.graphs, size, &captured, Role::CudaGraph);
        graphs += rounded(size);
    }
    // The overlap client's ring of future token ids, after the worker is built.
    let future_map = MAX_RUNNING * 5 * 8;
    let ring = stack(&[
        &[
            py(
                "sglang/srt/managers/tp_worker_overlap_thread.py",
                77,
                "__init__",
            ),
            py("sglang/srt/managers/scheduler.py", 313, "__init__"),
        ],
        &scheduler_process(2534),
    ]);
    run.alloc(future_map, &ring, Role::Inputs);
    // Serving. The scheduler thread prepares a batch (prepare_for_extend / _for_decode) and
    // queues it (run_batch returns placeholder ids); the forward thread builds its
    // ForwardBatch, runs the model (eagerly for the prefill chunk, replaying a graph for
    // decodes: nothing made), the logits (fp32) and greedy sampling; the scheduler thread
    // drops a step's batch and logits while the next one runs.
    let first_step = run.next_row();
    let (mut step_peak, mut sampled) = (0, 0);
    let mut previous: Vec<Id> = Vec::new();
    for s in 0..steps {
        let prefill = s == 0;
        let mut step: Vec<Id> = Vec::new();
        let mut inputs_bytes = 0;
        let mut input = |run: &mut Run, size: u64, at: &[Frame], step: &mut Vec<Id>| {
            step.push(run.alloc(size, at, Role::Inputs));
            inputs_bytes += rounded(size);
        };
        if prefill {
            for line in [1138, 1141, 1144, 1147] {
                let size = if line == 1141 { CHUNK * 8 } else { RUNNING * 8 };
                let at = stack(&[
                    &[
                        py(
                            "sglang/srt/managers/schedule_batch.py",
                            line,
                            "prepare_for_extend",
                        ),
                        py(
                            "sglang/srt/managers/scheduler.py",
                            1624,
                            "get_new_batch_prefill",
                        ),
                        py(
                            "sglang/srt/managers/scheduler.py",
                            1455,
                            "get_next_batch_to_run",
                        ),
                    ],
                    &event_loop(780),
                ]);
                input(&mut run, size, &at, &mut step);
            }
        } else {
            let at = stack(&[
                &[
                    py(
                        "sglang/srt/managers/schedule_batch.py",
                        1560,
                        "prepare_for_decode",
                    ),
                    py(
                        "sglang/srt/managers/scheduler.py",
                        1683,
                        "update_running_batch",
                    ),
                    py(
                        "sglang/srt/managers/scheduler.py",
                        1471,
                        "get_next_batch_to_run",
                    ),
                ],
                &event_loop(780),
            ]);
            input(&mut run, RUNNING * 8, &at, &mut step);
        }
        let queued = stack(&[
            &[
                py(
                    "sglang/srt/managers/tp_worker_overlap_thread.py",
                    252,
                    "forward_batch_generation",
                ),
                py("sglang/srt/managers/scheduler.py", 1709, "run_batch"),
            ],
            &event_loop(785),
        ]);
        input(&mut run, RUNNING * 8, &queued, &mut step);
        // The previous step's batch and logits, processed now.
        run.free_all(&previous, &event_loop(805));
        // The forward thread: ForwardBatch.init_new.
        let init_new = |inner: &[Frame]| {
            stack(&[
                inner,
                &[py(
                    "sglang/srt/model_executor/forward_batch_info.py",
                    if prefill { 424 } else { 414 },
                    "init_new",
                )],
                &worker_step(227),
            ])
        };
        let mut batch: Vec<Id> = Vec::new();
        if prefill {
            for (line, size) in [(416, RUNNING * 4), (419, RUNNING * 4)] {
                let at = stack(&[
                    &[py(
                        "sglang/srt/model_executor/forward_batch_info.py",
                        line,
                        "init_new",
                    )],
                    &worker_step(227),
                ]);
                input(&mut run, size, &at, &mut batch);
            }
            for (line, size) in [(892, CHUNK * 8), (895, RUNNING * 4)] {
                let at = init_new(&[py(
                    "sglang/srt/model_executor/forward_batch_info.py",
                    line,
                    "compute_position_triton",
                )]);
                input(&mut run, size, &at, &mut batch);
            }
            let forward_at = stack(&[
                &[
                    py(
                        "sglang/srt/model_executor/model_runner.py",
                        1570,
                        "forward_extend",
                    ),
                    py(
                        "sglang/srt/model_executor/model_runner.py",
                        1670,
                        "_forward_raw",
                    ),
                    py("sglang/srt/model_executor/model_runner.py", 1625, "forward"),
                ],
                &worker_step(238),
            ]);
            let (peak, _) = forward(
                &mut run,
                layers,
                CHUNK,
                &forward_at,
                Role::ForwardTemporaries,
            );
            step_peak = peak + inputs_bytes;
        } else {
            let at = init_new(&[py(
                "sglang/srt/model_executor/forward_batch_info.py",
                960,
                "clamp_position",
            )]);
            input(&mut run, RUNNING * 8, &at, &mut batch);
        }
        // The logits: eager steps compute them (bf16 matmul, then the fp32 copy the output
        // keeps); a replayed graph hands out its static buffer.
        let mut kept_logits = None;
        if prefill {
            let logits = |line: i64| {
                stack(&[
                    &[
                        py("sglang/srt/layers/logits_processor.py", line, "_get_logits"),
                        py("sglang/srt/layers/logits_processor.py", 328, "forward"),
                    ],
                    &module_call(),
                    &[
                        py("sglang/srt/models/llama.py", 471, "forward"),
                        py(
                            "sglang/srt/model_executor/model_runner.py",
                            1570,
                            "forward_extend",
                        ),
                        py(
                            "sglang/srt/model_executor/model_runner.py",
                            1670,
                            "_forward_raw",
                        ),
                        py("sglang/srt/model_executor/model_runner.py", 1625, "forward"),
                    ],
                    &worker_step(238),
                ])
            };
            let bf16 = run.alloc(RUNNING * VOCAB * 2, &logits(460), Role::ForwardTemporaries);
            kept_logits =
                Some(run.alloc(RUNNING * VOCAB * 4, &logits(519), Role::ForwardTemporaries));
            run.free(bf16, &logits(519));
        }
        run.free_all(&batch, &forward_thread(176));
        // Greedy sampling: argmax ids, copied to the future ring and to the CPU, dropped.
        let sample = stack(&[
            &[py("sglang/srt/layers/sampler.py", 74, "forward")],
            &module_call(),
            &[py(
                "sglang/srt/model_executor/model_runner.py",
                1729,
                "sample",
            )],
            &worker_step(247),
        ]);
        let ids = run.alloc(RUNNING * 8, &sample, Role::ForwardTemporaries);
        if s == 0 {
            sampled = run.next_row() as u32;
        }
        run.free(ids, &forward_thread(200));
        previous = step;
        previous.extend(kept_logits);
    }
    // RL: the trainer pauses the engine; the model's buffers (the rotary table) are copied
    // out of the memory saver's region to survive the pause.
    let mut stashed = 0;
    if pause {
        let at = stack(&[
            &[
                py(
                    "sglang/srt/managers/scheduler_update_weights_mixin.py",
                    134,
                    "<listcomp>",
                ),
                py(
                    "sglang/srt/managers/scheduler_update_weights_mixin.py",
                    132,
                    "_export_static_state",
                ),
                py(
                    "sglang/srt/managers/scheduler_update_weights_mixin.py",
                    86,
                    "release_memory_occupation",
                ),
                py("sglang/utils.py", 479, "__call__"),
                py(
                    "sglang/srt/managers/scheduler.py",
                    1050,
                    "process_input_requests",
                ),
            ],
            &event_loop(778),
        ]);
        run.alloc(ROPE, &at, Role::Parameters);
        stashed = ROPE;
    }
    Served {
        run,
        weights: weight_bytes(layers),
        kv_cache: 2 * layers as u64 * rounded(kv_layer),
        token_maps: rounded(req_to_token) + rounded(free_list),
        graphs,
        inputs: rounded(future_map),
        workspace: CUBLAS_WORKSPACE + FLASHINFER_WORKSPACE,
        stashed,
        first_step,
        step_peak,
        warm_up,
        warm_up_bytes,
        sampled,
    }
}

/// Asserts a run's physics from its score at the peak.
fn assert_physics(served: &Served, score: &Score) {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    assert_eq!(
        score.got(Role::Parameters),
        served.weights,
        "{}",
        score.explain()
    );
    assert_eq!(
        score.got(Role::KvCache),
        served.kv_cache + served.token_maps,
        "K/V {:.3} GiB and token maps: {}",
        gib(served.kv_cache),
        score.explain()
    );
    assert_eq!(
        score.got(Role::CudaGraph),
        served.graphs,
        "{}",
        score.explain()
    );
    assert_eq!(
        score.got(Role::Workspace),
        served.workspace,
        "{}",
        score.explain()
    );
    for training in [
        Role::Gradients,
        Role::OptimizerState,
        Role::Activations,
        Role::BackwardTemporaries,
        Role::OptimizerTemporaries,
    ] {
        assert_eq!(score.got(training), 0, "{training:?}: {}", score.explain());
    }
    assert_eq!(
        score.bytes,
        served.estimate(),
        "peak {:.3} GiB, estimate {:.3} GiB",
        gib(score.bytes),
        gib(served.estimate())
    );
}

#[test]
fn an_sglang_scheduler_keeps_its_weights_kv_pools_workspaces_and_graphs_apart() {
    let served = sglang_run(4, 3, PLAIN, false);
    for run in [served.run.clone(), served.run.clone().with_cpp()] {
        let whole = run.whole();
        let score = whole.assert_right(0.99);
        whole.assert_reasons_name_frames(whole.peak());
        assert_physics(&served, &score);
        assert_eq!(
            score.got(Role::Inputs),
            score.truth(Role::Inputs),
            "{}",
            score.explain()
        );
        // During capture: the warm-up runs' scratch is forward temporaries, what the
        // runner keeps the graphs'.
        let capture = whole.score_at(served.warm_up);
        assert_eq!(capture.right, capture.bytes, "{}", capture.explain());
        assert_eq!(capture.got(Role::ForwardTemporaries), served.warm_up_bytes);
        whole.assert_reasons_name_frames(served.warm_up);
        // Just sampled: the ids (dropped by the forward thread once copied) are the step's
        // scratch, the logits the step keeps until the scheduler processes them too.
        let sampled = whole.score_at(served.sampled);
        assert_eq!(sampled.right, sampled.bytes, "{}", sampled.explain());
    }
}

#[test]
fn an_sglang_scheduler_recorded_from_its_first_step_reads_the_steps() {
    let served = sglang_run(4, 3, PLAIN, false);
    // The ring buffer wrapped at the first step: the blocks keep their frames.
    let wrapped = served.run.cut(served.first_step, Cut::Wrapped);
    let score = wrapped.assert_right(0.99);
    wrapped.assert_reasons_name_frames(wrapped.peak());
    assert_physics(&served, &score);
    // Recording started at the first step (as sglang's own /start_profile with "MEM" does):
    // the steps' memory is read from its frames, nothing is unknown, nothing training's.
    let late = served.run.cut(served.first_step, Cut::LateStart);
    let score = late.score();
    assert!(score.truth(Role::KvCache) > 0, "{}", score.explain());
    assert_eq!(score.unknown, 0, "{}", score.explain());
    assert_eq!(
        score.got(Role::ForwardTemporaries) + score.got(Role::Inputs),
        served.step_peak,
        "{}",
        score.explain()
    );
    for training in [Role::Gradients, Role::OptimizerState, Role::Activations] {
        assert_eq!(score.got(training), 0, "{}", score.explain());
    }
    late.assert_reasons_name_frames(late.peak());
}

#[test]
#[ignore = "memsight does not tell the (0, N) pool graph_pool_handle() gives a graph from a MemPool by its id: its frame-less blocks are deduced model state (parameters)"]
fn an_sglang_scheduler_recorded_late_tells_its_graph_pool_by_its_id() {
    let served = sglang_run(4, 3, PLAIN, false);
    let late = served.run.cut(served.first_step, Cut::LateStart);
    let score = late.score();
    let pool: u64 = CAPTURED
        .iter()
        .map(|bs| rounded(bs * (GATE_UP_OUT + ACT_OUT)))
        .sum();
    assert!(score.got(Role::CudaGraph) >= pool, "{}", score.explain());
}

#[test]
#[ignore = "memsight deduces every frame-less block alive throughout an inference run to be the model's weights: the KV pools, workspaces and graph buffers of a late start are called parameters"]
fn an_sglang_scheduler_recorded_late_still_finds_its_kv_cache() {
    let served = sglang_run(4, 3, PLAIN, false);
    let late = served.run.cut(served.first_step, Cut::LateStart);
    let score = late.assert_right(0.90);
    assert_eq!(
        score.got(Role::KvCache),
        served.kv_cache + served.token_maps,
        "{}",
        score.explain()
    );
}

#[test]
fn an_sglang_scheduler_reads_its_blocks_without_a_trace() {
    let served = sglang_run(4, 3, PLAIN, false);
    let state = served.run.state_only();
    let end = state.score_at(state.end());
    assert!(end.right_share() >= 0.99, "{}", end.explain());
    assert_eq!(end.got(Role::KvCache), served.kv_cache + served.token_maps);
    assert_eq!(end.got(Role::CudaGraph), served.graphs);
    assert_eq!(end.got(Role::Workspace), served.workspace);
    assert_eq!(end.got(Role::Parameters), served.weights);
    state.assert_reasons_name_frames(state.end());
}

#[test]
fn memory_saver_pools_are_not_cuda_graphs_and_a_paused_engine_still_holds_them() {
    let served = sglang_run(4, 3, MEMORY_SAVER, true);
    {
        let whole = served.run.whole();
        let score = whole.assert_right(0.99);
        whole.assert_reasons_name_frames(whole.peak());
        assert_physics(&served, &score);
        // Paused (release_memory_occupation unmapped the pages behind PyTorch's back): the
        // weights and KV blocks are still allocated, and the model buffers stashed outside
        // the memory saver's region are parameters too.
        let end = whole.score_at(whole.end());
        assert_eq!(end.right, end.bytes, "{}", end.explain());
        assert_eq!(end.got(Role::Parameters), served.weights + served.stashed);
        assert_eq!(end.got(Role::KvCache), served.kv_cache + served.token_maps);
    }
    // Without frames the memory saver's MemPool (0, 1) looks like the graph pool (0, 2): its
    // blocks must not be taken for graphs.
    let late = served.run.cut(served.first_step, Cut::LateStart);
    let score = late.score();
    for truth in [Role::Parameters, Role::KvCache] {
        let called_graph = score.wrong.get(&(truth, Role::CudaGraph)).copied();
        assert_eq!(called_graph, None, "{}", score.explain());
    }
    let state = served.run.state_only();
    let end = state.score_at(state.end());
    assert_eq!(end.right, end.bytes, "{}", end.explain());
}
