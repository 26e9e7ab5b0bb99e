//! Runs of vLLM's v0 engine at v0.6.3 (`LLM(...)` offline, one GPU, CUDA graphs on), stacks
//! from its released sources: the weights made under the loader, the profile run's forward,
//! the KV cache, CUDA graph capture (static inputs, block tables, warm-up forwards, captured
//! intermediates in the graph's private pool), then prefill and decode steps.
//!
//! Then the v1 engine's worker process (spawned, multiprocessing executor): the classic GPU
//! model runner at v0.11.0 (persistent step buffers, InputBatch and block tables made before
//! the weights, the weights, profile_run, one KV tensor per layer, piecewise and FULL graphs
//! captured into the global pool `graph_pool_handle()` makes, `(0, N)`, steps) and with sleep
//! mode (weights and KV cache in cuMem MemPools, `(0, N)` too and no graph's); model runner v2
//! at v0.34.0 (RequestState and InputBuffers, profile_cudagraph_memory's throwaway KV cache
//! and graphs, BlockTables and one KV buffer for all layers, graphs, steps).

use crate::run::*;
use memsight_core::analysis::categories::Role;
use memsight_core::model::cut::Cut;

/// The user's script.
fn script() -> Vec<Frame> {
    vec![user("serve_offline.py", 12, "<module>")]
}

/// `LLM(...)` building the engine, outermost frames of setup (v0.6.3).
fn engine_init() -> Vec<Frame> {
    stack(&[
        &[
            py("vllm/engine/llm_engine.py", 574, "from_engine_args"),
            py("vllm/entrypoints/llm.py", 177, "__init__"),
        ],
        &script(),
    ])
}

/// `_initialize_kv_caches` inside the engine's `__init__`.
fn kv_init(llm_engine_line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py(
                "vllm/engine/llm_engine.py",
                llm_engine_line,
                "_initialize_kv_caches",
            ),
            py("vllm/engine/llm_engine.py", 349, "__init__"),
        ],
        &engine_init(),
    ])
}

/// One decoder layer's weights, made by `create_weights` under the loader (v0.6.3).
fn weight_stack(layer_line: i64, module_line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py("torch/utils/_device.py", 79, "__torch_function__"),
            py(
                "vllm/model_executor/layers/linear.py",
                122,
                "create_weights",
            ),
            py("vllm/model_executor/layers/linear.py", 304, "__init__"),
            py(
                "vllm/model_executor/layers/linear.py",
                module_line,
                "__init__",
            ),
            py(
                "vllm/model_executor/models/llama.py",
                layer_line,
                "__init__",
            ),
            py("vllm/model_executor/models/llama.py", 215, "__init__"),
            py("vllm/model_executor/models/llama.py", 305, "<lambda>"),
            py("vllm/model_executor/models/utils.py", 408, "make_layers"),
            py("vllm/model_executor/models/llama.py", 303, "__init__"),
            py("vllm/model_executor/models/llama.py", 513, "__init__"),
            py(
                "vllm/model_executor/model_loader/loader.py",
                160,
                "build_model",
            ),
            py(
                "vllm/model_executor/model_loader/loader.py",
                175,
                "_initialize_model",
            ),
            py(
                "vllm/model_executor/model_loader/loader.py",
                398,
                "load_model",
            ),
            py(
                "vllm/model_executor/model_loader/__init__.py",
                19,
                "get_model",
            ),
            py("vllm/worker/model_runner.py", 1062, "load_model"),
            py("vllm/worker/worker.py", 183, "load_model"),
            py("vllm/executor/gpu_executor.py", 40, "_init_executor"),
            py("vllm/executor/executor_base.py", 47, "__init__"),
            py("vllm/engine/llm_engine.py", 335, "__init__"),
        ],
        &engine_init(),
    ])
}

/// The embedding, made by its own `create_weights`.
fn embedding_stack() -> Vec<Frame> {
    stack(&[
        &[
            py("torch/utils/_device.py", 79, "__torch_function__"),
            py(
                "vllm/model_executor/layers/vocab_parallel_embedding.py",
                39,
                "create_weights",
            ),
            py(
                "vllm/model_executor/layers/vocab_parallel_embedding.py",
                255,
                "__init__",
            ),
            py("vllm/model_executor/models/llama.py", 290, "__init__"),
            py("vllm/model_executor/models/llama.py", 513, "__init__"),
            py(
                "vllm/model_executor/model_loader/loader.py",
                160,
                "build_model",
            ),
            py(
                "vllm/model_executor/model_loader/loader.py",
                175,
                "_initialize_model",
            ),
            py(
                "vllm/model_executor/model_loader/loader.py",
                398,
                "load_model",
            ),
            py(
                "vllm/model_executor/model_loader/__init__.py",
                19,
                "get_model",
            ),
            py("vllm/worker/model_runner.py", 1062, "load_model"),
            py("vllm/worker/worker.py", 183, "load_model"),
            py("vllm/executor/gpu_executor.py", 40, "_init_executor"),
            py("vllm/executor/executor_base.py", 47, "__init__"),
            py("vllm/engine/llm_engine.py", 335, "__init__"),
        ],
        &engine_init(),
    ])
}

/// The model's forward from its MLP's linear layer up to the Llama model, the frames every
/// activation of a step has (v0.6.3).
fn model_forward() -> Vec<Frame> {
    let module = || {
        [
            py("torch/nn/modules/module.py", 1562, "_call_impl"),
            py("torch/nn/modules/module.py", 1553, "_wrapped_call_impl"),
        ]
    };
    stack(&[
        &[
            py("vllm/model_executor/layers/linear.py", 135, "apply"),
            py("vllm/model_executor/layers/linear.py", 371, "forward"),
        ],
        &module(),
        &[py("vllm/model_executor/models/llama.py", 91, "forward")],
        &module(),
        &[py("vllm/model_executor/models/llama.py", 265, "forward")],
        &module(),
        &[py("vllm/model_executor/models/llama.py", 345, "forward")],
        &module(),
        &[py("vllm/model_executor/models/llama.py", 556, "forward")],
        &module(),
    ])
}

/// A v0.6.3 engine serving a Llama model: `layers` decoder layers, a KV cache of
/// `kv_layer_bytes` per layer, graphs captured for `graph_sizes` batch sizes, `steps` steps
/// (the first a prefill).
fn v0_run(layers: usize, kv_layer_bytes: u64, graph_sizes: usize, steps: usize) -> Run {
    let mut run = Run::new();
    let mib = 1u64 << 20;
    // load_weights: embedding, then each layer's qkv, o, gate_up and down projections.
    run.alloc(1002 * mib, &embedding_stack(), Role::Parameters);
    for _ in 0..layers {
        run.alloc(48 * mib, &weight_stack(138, 681), Role::Parameters);
        run.alloc(32 * mib, &weight_stack(148, 1037), Role::Parameters);
        run.alloc(224 * mib, &weight_stack(80, 401), Role::Parameters);
        run.alloc(112 * mib, &weight_stack(86, 1037), Role::Parameters);
    }
    // profile_run: a forward of max_num_batched_tokens, every activation freed.
    let profile = stack(&[
        &model_forward(),
        &[
            py("vllm/worker/model_runner.py", 1665, "execute_model"),
            py("vllm/worker/model_runner.py", 1309, "profile_run"),
            py(
                "vllm/worker/worker.py",
                223,
                "determine_num_available_blocks",
            ),
            py(
                "vllm/executor/gpu_executor.py",
                114,
                "determine_num_available_blocks",
            ),
        ],
        &kv_init(484),
    ]);
    let activations: Vec<Id> = (0..layers)
        .map(|_| run.alloc(448 * mib, &profile, Role::ForwardTemporaries))
        .collect();
    run.free_all(&activations, &profile);
    // kv_cache_allocation: one tensor per layer.
    let kv = stack(&[
        &[
            py("vllm/worker/cache_engine.py", 82, "_allocate_kv_cache"),
            py("vllm/worker/cache_engine.py", 63, "__init__"),
            py("vllm/worker/worker.py", 276, "<listcomp>"),
            py("vllm/worker/worker.py", 275, "_init_cache_engine"),
            py("vllm/worker/worker.py", 270, "initialize_cache"),
            py("vllm/executor/gpu_executor.py", 129, "initialize_cache"),
        ],
        &kv_init(497),
    ]);
    for _ in 0..layers {
        run.alloc(kv_layer_bytes, &kv, Role::KvCache);
    }
    // graph_capture: static inputs, block tables, then per batch size two warm-up forwards
    // in the default pool and the captured one in the graph's private pool.
    let warm_up = stack(&[
        &[
            py("vllm/worker/worker.py", 287, "_warm_up_model"),
            py("vllm/worker/worker.py", 271, "initialize_cache"),
            py("vllm/executor/gpu_executor.py", 129, "initialize_cache"),
        ],
        &kv_init(497),
    ]);
    let capture_model = |line: i64| {
        stack(&[
            &[py("vllm/worker/model_runner.py", line, "capture_model")],
            &warm_up,
        ])
    };
    run.alloc(2048, &capture_model(1415), Role::CudaGraph);
    run.alloc(2048, &capture_model(1416), Role::CudaGraph);
    let block_tables = stack(&[
        &[
            py("vllm/attention/backends/utils.py", 293, "graph_capture"),
            Frame {
                filename: "/opt/conda/lib/python3.11/contextlib.py".to_string(),
                line: 137,
                name: "__enter__".to_string(),
            },
        ],
        &capture_model(1448),
    ]);
    run.alloc(256 * 512 * 4, &block_tables, Role::KvCache);
    let graph_pool = (1, 0);
    for _ in 0..graph_sizes {
        let captured = |line: i64| {
            stack(&[
                &model_forward(),
                &[py("vllm/worker/model_runner.py", line, "capture")],
                &capture_model(1522),
            ])
        };
        let warm: Vec<Id> = (0..2)
            .map(|_| run.alloc(6 * mib, &captured(1785), Role::ForwardTemporaries))
            .collect();
        run.free_all(&warm, &captured(1785));
        run.alloc_in(graph_pool, 6 * mib, &captured(1799), Role::CudaGraph);
    }
    // Steps: inputs and a forward's temporaries, freed at the end of each step.
    let step = |prepare: bool| {
        let outer = stack(&[
            &[
                py("vllm/worker/worker_base.py", 303, "execute_model"),
                py("vllm/executor/gpu_executor.py", 134, "execute_model"),
                py("vllm/engine/llm_engine.py", 1386, "step"),
                py("vllm/entrypoints/llm.py", 879, "_run_engine"),
                py("vllm/entrypoints/llm.py", 353, "generate"),
            ],
            &script(),
        ]);
        if prepare {
            stack(&[
                &[
                    py("vllm/utils.py", 1105, "async_tensor_h2d"),
                    py("vllm/worker/model_runner.py", 871, "build"),
                    py(
                        "vllm/worker/model_runner.py",
                        1200,
                        "_prepare_model_input_tensors",
                    ),
                    py("vllm/worker/model_runner.py", 1593, "prepare_model_input"),
                    py(
                        "vllm/worker/worker_base.py",
                        253,
                        "_get_driver_input_and_broadcast",
                    ),
                    py("vllm/worker/worker_base.py", 291, "prepare_input"),
                ],
                &outer,
            ])
        } else {
            stack(&[
                &model_forward(),
                &[py("vllm/worker/model_runner.py", 1665, "execute_model")],
                &outer,
            ])
        }
    };
    for s in 0..steps {
        let tokens = if s == 0 { 4096 } else { 64 };
        let input = run.alloc(tokens * 8, &step(true), Role::Inputs);
        let temporaries: Vec<Id> = (0..layers)
            .map(|_| run.alloc(tokens * 14336 * 2, &step(false), Role::ForwardTemporaries))
            .collect();
        run.free_all(&temporaries, &step(false));
        run.free(input, &step(false));
    }
    run
}

#[test]
fn a_v0_engine_serving_has_its_weights_kv_cache_and_graphs() {
    let run = v0_run(4, 1 << 30, 3, 4);
    for run in [run.clone(), run.with_cpp()] {
        let whole = run.whole();
        let score = whole.assert_right(0.99);
        assert_eq!(score.got(Role::KvCache), score.truth(Role::KvCache));
        assert!(score.got(Role::CudaGraph) > 0, "{}", score.explain());
        whole.assert_reasons_name_frames(whole.peak());
        // The state-only snapshot of the same process reads the same roles from its blocks.
        let state = run.state_only();
        let end = state.score_at(state.end());
        assert!(end.right_share() >= 0.99, "{}", end.explain());
    }
}

#[test]
fn a_v0_engine_recorded_late_still_finds_its_kv_cache() {
    let run = v0_run(4, 1 << 30, 3, 4);
    // Recording turned on after the engine was built, and a ring buffer that wrapped there.
    let after_setup = run.next_row() - 4 * (2 * 4 + 2) * 2;
    for how in [Cut::LateStart, Cut::Wrapped] {
        let cut = run.cut(after_setup, how);
        let score = cut.score();
        assert!(
            score.truth(Role::KvCache) > 0,
            "the cut keeps the cache: {}",
            score.explain()
        );
        if how == Cut::Wrapped {
            // The blocks keep their frames: everything is read as before.
            assert!(
                score.right_share() >= 0.99,
                "{}: {}",
                cut.name,
                score.explain()
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The v1 engine: its worker process, the classic GPU model runner at v0.11.0 and model runner
// v2 at v0.34.0, and the sleep-mode variant. Stacks read from the released wheels' sources;
// torch's own frames are torch 2.8's, approximate for the compiled-code wrappers (Inductor,
// Dynamo, FX), which the notes list without lines.

const MIB: u64 = 1 << 20;

/// Shapes of the served model: Llama-3-8B in bf16 (vocabulary 128256, hidden 4096, MLP
/// 14336, 32 query and 8 KV heads of 128), cut to a few layers.
const EMBEDDING: u64 = 128_256 * 4096 * 2;
const QKV: u64 = 48 * MIB;
const O_PROJ: u64 = 32 * MIB;
const GATE_UP: u64 = 224 * MIB;
const DOWN: u64 = 112 * MIB;
/// The rotary cos/sin table, max_position 131072 × 128 in bf16.
const ROPE: u64 = 131_072 * 128 * 2;
const VOCAB: u64 = 128_256;
/// Bytes per token of a layer's activations: the residual stream and the attention output,
/// q/k/v, gate_up, SiLU·mul.
const HIDDEN_OUT: u64 = 4096 * 2;
const QKV_OUT: u64 = 6144 * 2;
const GATE_UP_OUT: u64 = 28_672 * 2;
const ACT_OUT: u64 = 14_336 * 2;
/// Scheduler limits: max_num_batched_tokens, max_num_seqs, max_model_len, block_size.
const MAX_TOKENS: u64 = 8192;
const MAX_REQS: u64 = 256;
const MAX_MODEL_LEN: u64 = 8192;
const BLOCK_SIZE: u64 = 16;
/// KV cache blocks, and a layer's page: K and V of 16 tokens, 8 heads of 128, bf16.
const NUM_BLOCKS: u64 = 16_384;
const PAGE: u64 = 2 * BLOCK_SIZE * 8 * 128 * 2;
/// Requests running during the steps.
const RUNNING: u64 = 32;

/// Rounds a request up as the caching allocator does (512 bytes), as `Run` does.
fn rounded(size: u64) -> u64 {
    size.div_ceil(512).max(1) * 512
}

/// The model's weights, as the loader makes them.
fn weight_bytes(layers: usize) -> u64 {
    2 * EMBEDDING + ROPE + layers as u64 * (QKV + O_PROJ + GATE_UP + DOWN)
}

/// A frame of Python 3.11's standard library.
fn stdlib(file: &str, line: i64, name: &str) -> Frame {
    Frame {
        filename: format!("/opt/conda/lib/python3.11/{file}"),
        line,
        name: name.to_string(),
    }
}

/// A frame with a file name of its own (generated code, `<string>`).
fn raw(filename: &str, line: i64, name: &str) -> Frame {
    Frame {
        filename: filename.to_string(),
        line,
        name: name.to_string(),
    }
}

/// The outermost frames of a process `multiprocessing` spawned
/// (VLLM_WORKER_MULTIPROC_METHOD=spawn).
fn spawned() -> Vec<Frame> {
    vec![
        stdlib("multiprocessing/process.py", 108, "run"),
        stdlib("multiprocessing/process.py", 314, "_bootstrap"),
        stdlib("multiprocessing/spawn.py", 135, "_main"),
        stdlib("multiprocessing/spawn.py", 122, "spawn_main"),
        raw("<string>", 1, "<module>"),
    ]
}

/// `nn.Module.__call__`'s frames (torch 2.8), innermost first.
fn module_call() -> [Frame; 2] {
    [
        py("torch/nn/modules/module.py", 1784, "_call_impl"),
        py("torch/nn/modules/module.py", 1773, "_wrapped_call_impl"),
    ]
}

/// `@torch.inference_mode()`'s wrapper.
fn inference_mode() -> Frame {
    py("torch/utils/_contextlib.py", 120, "decorate_context")
}

/// `with torch.device(...)`, innermost frame of every weight made at construction.
fn device_context() -> Frame {
    py("torch/utils/_device.py", 104, "__torch_function__")
}

/// Code Inductor generated for a piece of the split graph, run by vLLM's piecewise
/// `backend` under the piece's CUDA-graph wrapper (`wrapper_line`), in the FX module Dynamo's
/// bytecode calls from `LlamaModel.forward` (at `model_line`).
fn compiled_piece(
    backend: &str,
    backend_line: i64,
    wrapper_line: i64,
    model_line: i64,
) -> Vec<Frame> {
    stack(&[
        &[
            raw(
                "/root/.cache/vllm/torch_compile_cache/5c1e0d8f2a/rank_0_0/backbone/inductor_cache/qa/cqaz3xk7d2lq.py",
                412,
                "call",
            ),
            py("torch/_inductor/output_code.py", 584, "__call__"),
            py(backend, backend_line, "__call__"),
            py("vllm/compilation/cuda_graph.py", wrapper_line, "__call__"),
            raw("<eval_with_key>.66", 18, "forward"),
        ],
        &module_call(),
        &[
            py("torch/fx/graph_module.py", 848, "call_wrapped"),
            py("torch/_dynamo/eval_frame.py", 838, "_fn"),
            py("vllm/model_executor/models/llama.py", model_line, "forward"),
        ],
    ])
}

/// A forward's activations over `tokens` tokens, layer by layer, each layer's freed as the
/// next runs, the residual stream freed at the end, all made and freed `at`; returns the
/// bytes alive at its peak.
fn forward_pass(run: &mut Run, layers: usize, tokens: u64, at: &[Frame], truth: Role) -> u64 {
    let residual = run.alloc(tokens * HIDDEN_OUT, at, truth);
    for _ in 0..layers {
        let qkv = run.alloc(tokens * QKV_OUT, at, truth);
        let attn = run.alloc(tokens * HIDDEN_OUT, at, truth);
        run.free(qkv, at);
        let gate_up = run.alloc(tokens * GATE_UP_OUT, at, truth);
        let act = run.alloc(tokens * ACT_OUT, at, truth);
        run.free_all(&[gate_up, attn, act], at);
    }
    run.free(residual, at);
    rounded(tokens * HIDDEN_OUT) * 2 + rounded(tokens * GATE_UP_OUT) + rounded(tokens * ACT_OUT)
}

/// What a serving run holds besides its allocations: the configured sizes the physics
/// checks compare with, and where its steps start.
struct Served {
    run: Run,
    /// Bytes the loader keeps.
    weights: u64,
    /// The KV cache tensors (without their block tables).
    kv_cache: u64,
    /// Block tables, slot mappings, token maps: kv_cache too.
    tables: u64,
    /// What the graphs keep: pool memory and static buffers.
    graphs: u64,
    /// Persistent step buffers and per-request state.
    inputs: u64,
    /// Library workspaces kept.
    workspace: u64,
    /// The first row of the first serving step.
    first_step: usize,
    /// The largest step's temporaries and inputs alive at once.
    step_peak: u64,
    /// The state just after the first step sampled its tokens.
    sampled: u32,
}

impl Served {
    /// Serving's estimate of its memory at the peak: weights, KV cache (with its tables),
    /// graph pools, persistent inputs and workspaces, and the largest step's scratch.
    fn estimate(&self) -> u64 {
        self.weights
            + self.kv_cache
            + self.tables
            + self.graphs
            + self.inputs
            + self.workspace
            + self.step_peak
    }
}

/// Asserts the physics of a serving run from its score at the peak: the weights are the
/// loader's bytes, the KV cache the configured blocks, the graphs their pools, no memory of
/// training, and the peak is serving's estimate.
fn assert_serving_physics(served: &Served, score: &Score) {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    assert_eq!(score.truth(Role::Parameters), served.weights);
    assert_eq!(
        score.got(Role::Parameters),
        served.weights,
        "{}",
        score.explain()
    );
    assert_eq!(
        score.got(Role::KvCache),
        served.kv_cache + served.tables,
        "KV cache {:.3} GiB + tables, got {:.3} GiB: {}",
        gib(served.kv_cache),
        gib(score.got(Role::KvCache)),
        score.explain()
    );
    assert_eq!(
        score.got(Role::CudaGraph),
        served.graphs,
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

// --- v0.11.0: the classic runner (vllm/v1/worker/gpu_model_runner.py) --------------------

/// `WorkerProc.__init__` running one of the worker's setup calls (init_device at :430,
/// load_model at :437), in the spawned worker.
fn v11_worker_init(line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py("vllm/v1/executor/multiproc_executor.py", line, "__init__"),
            py("vllm/v1/executor/multiproc_executor.py", 571, "worker_main"),
        ],
        &spawned(),
    ])
}

/// A call the engine core sends the worker, run by its busy loop.
fn v11_rpc() -> Vec<Frame> {
    stack(&[
        &[
            py(
                "vllm/v1/executor/multiproc_executor.py",
                666,
                "worker_busy_loop",
            ),
            py("vllm/v1/executor/multiproc_executor.py", 588, "worker_main"),
        ],
        &spawned(),
    ])
}

/// `GPUModelRunner.__init__` at `line`, built by `Worker.init_device`.
fn v11_runner_init(line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py("vllm/v1/worker/gpu_model_runner.py", line, "__init__"),
            py("vllm/v1/worker/gpu_worker.py", 201, "init_device"),
            py("vllm/worker/worker_base.py", 259, "init_device"),
        ],
        &v11_worker_init(430),
    ])
}

/// A persistent step buffer of the runner (a `CpuGpuBuffer` from `_make_buffer`).
fn v11_step_buffer(line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py("vllm/v1/utils.py", 120, "__init__"),
            py("vllm/v1/worker/gpu_model_runner.py", 448, "_make_buffer"),
        ],
        &v11_runner_init(line),
    ])
}

/// One of the InputBatch's sampling-parameter tensors, made at `line`.
fn v11_input_batch(line: i64) -> Vec<Frame> {
    stack(&[
        &[py("vllm/v1/worker/gpu_input_batch.py", line, "__init__")],
        &v11_runner_init(310),
    ])
}

/// A buffer of the InputBatch's block table (block_table at :34, slot_mapping at :39).
fn v11_block_table(line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py("vllm/v1/utils.py", 120, "__init__"),
            py("vllm/v1/worker/block_table.py", 139, "_make_buffer"),
            py("vllm/v1/worker/block_table.py", line, "__init__"),
            py("vllm/v1/worker/block_table.py", 167, "<listcomp>"),
            py("vllm/v1/worker/block_table.py", 166, "__init__"),
            py("vllm/v1/worker/gpu_input_batch.py", 139, "__init__"),
        ],
        &v11_runner_init(310),
    ])
}

/// The loader building the model, from `LlamaForCausalLM.__init__` at `line` out.
fn v11_loader(line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py("vllm/model_executor/models/llama.py", line, "__init__"),
            py(
                "vllm/model_executor/model_loader/utils.py",
                63,
                "initialize_model",
            ),
            py(
                "vllm/model_executor/model_loader/base_loader.py",
                45,
                "load_model",
            ),
            py("vllm/v1/worker/gpu_model_runner.py", 2635, "load_model"),
            py("vllm/v1/worker/gpu_worker.py", 213, "load_model"),
        ],
        &v11_worker_init(437),
    ])
}

/// From `LlamaModel.__init__` at `line` (made under the support_torch_compile wrapper) out.
fn v11_llama_model(line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py("vllm/model_executor/models/llama.py", line, "__init__"),
            py("vllm/compilation/decorators.py", 201, "__init__"),
            py("vllm/model_executor/models/llama.py", 583, "_init_model"),
        ],
        &v11_loader(537),
    ])
}

/// From a decoder layer's `module_line` (attention at :280, MLP at :296) out.
fn v11_layer(module_line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py(
                "vllm/model_executor/models/llama.py",
                module_line,
                "__init__",
            ),
            py("vllm/model_executor/models/llama.py", 364, "<lambda>"),
            py("vllm/model_executor/models/utils.py", 630, "<listcomp>"),
            py("vllm/model_executor/models/utils.py", 629, "make_layers"),
        ],
        &v11_llama_model(362),
    ])
}

/// A linear layer's weight: `create_weights` under its classes' constructors (`classes`,
/// innermost first, lines in linear.py), made by the module at `owner_line` of the layer's
/// `module_line`.
fn v11_linear(classes: &[i64], owner_line: i64, module_line: i64) -> Vec<Frame> {
    let mut frames = vec![
        device_context(),
        py(
            "vllm/model_executor/layers/linear.py",
            202,
            "create_weights",
        ),
    ];
    for &line in classes {
        frames.push(py("vllm/model_executor/layers/linear.py", line, "__init__"));
    }
    frames.push(py(
        "vllm/model_executor/models/llama.py",
        owner_line,
        "__init__",
    ));
    stack(&[&frames, &v11_layer(module_line)])
}

/// The input embedding, or (`lm_head`) the LM head `ParallelLMHead.__init__` makes.
fn v11_embedding(lm_head: bool) -> Vec<Frame> {
    let file = "vllm/model_executor/layers/vocab_parallel_embedding.py";
    let inner = [
        device_context(),
        py(file, 35, "create_weights"),
        py(file, 274, "__init__"),
    ];
    if lm_head {
        stack(&[&inner, &[py(file, 461, "__init__")], &v11_loader(545)])
    } else {
        stack(&[&inner, &v11_llama_model(354)])
    }
}

/// The rotary table, kept in bf16 by `RotaryEmbedding.__init__` (Llama 3's rope, made by
/// the first attention layer and shared).
fn v11_rope() -> Vec<Frame> {
    stack(&[
        &[
            device_context(),
            py(
                "vllm/model_executor/layers/rotary_embedding/base.py",
                46,
                "__init__",
            ),
            py(
                "vllm/model_executor/layers/rotary_embedding/llama3_rope.py",
                30,
                "__init__",
            ),
            py(
                "vllm/model_executor/layers/rotary_embedding/__init__.py",
                86,
                "get_rope",
            ),
            py("vllm/model_executor/models/llama.py", 230, "__init__"),
        ],
        &v11_layer(280),
    ])
}

/// The model's forward from the compiled pieces out to the runner's `self.model(...)`:
/// support_torch_compile's call (compiling at :310, dispatching at :317), the piecewise
/// backend (first run :90, general shape :96, a capture size :117), the piece's wrapper
/// and the outer FULL wrapper (pass-through :121, capture :166).
fn v11_forward(decorator: i64, backend: i64, piece: i64, full: i64) -> Vec<Frame> {
    stack(&[
        &compiled_piece(
            "vllm/compilation/cuda_piecewise_backend.py",
            backend,
            piece,
            405,
        ),
        &[
            py("vllm/compilation/decorators.py", decorator, "__call__"),
            py("vllm/model_executor/models/llama.py", 597, "forward"),
        ],
        &module_call(),
        &[py("vllm/compilation/cuda_graph.py", full, "__call__")],
    ])
}

/// `_dummy_run`'s forward, called from `caller`.
fn v11_dummy_forward(forward: Vec<Frame>, caller: &[Frame]) -> Vec<Frame> {
    stack(&[
        &forward,
        &[
            py("vllm/v1/worker/gpu_model_runner.py", 3152, "_dummy_run"),
            inference_mode(),
        ],
        caller,
    ])
}

/// `_dummy_sampler_run` at `line` (compute_logits :3192, sampler :3217), from `caller`.
fn v11_dummy_sampler(line: i64, caller: &[Frame]) -> Vec<Frame> {
    stack(&[
        &[
            py(
                "vllm/v1/worker/gpu_model_runner.py",
                line,
                "_dummy_sampler_run",
            ),
            inference_mode(),
        ],
        caller,
    ])
}

/// The LM head's matmul under `compute_logits`, called from `caller`.
fn v11_logits(caller: &[Frame]) -> Vec<Frame> {
    stack(&[
        &[
            py(
                "vllm/model_executor/layers/utils.py",
                92,
                "default_unquantized_gemm",
            ),
            py(
                "vllm/model_executor/layers/vocab_parallel_embedding.py",
                53,
                "apply",
            ),
            py(
                "vllm/model_executor/layers/logits_processor.py",
                90,
                "_get_logits",
            ),
            py(
                "vllm/model_executor/layers/logits_processor.py",
                58,
                "forward",
            ),
        ],
        &module_call(),
        &[py(
            "vllm/model_executor/models/llama.py",
            605,
            "compute_logits",
        )],
        caller,
    ])
}

/// The v1 sampler called from `caller`: the fp32 copy of the logits, the probabilities,
/// the exponential draw and the sampled ids.
fn v11_sampler(caller: &[Frame]) -> [Vec<Frame>; 4] {
    let topk_topp = |inner: &[Frame]| {
        stack(&[
            inner,
            &[
                py(
                    "vllm/v1/sample/ops/topk_topp_sampler.py",
                    115,
                    "forward_cuda",
                ),
                py("vllm/model_executor/custom_op.py", 44, "forward"),
            ],
            &module_call(),
            &[
                py("vllm/v1/sample/sampler.py", 180, "sample"),
                py("vllm/v1/sample/sampler.py", 100, "forward"),
            ],
            &module_call(),
            caller,
        ])
    };
    let draw = |line: i64| {
        topk_topp(&[
            py(
                "vllm/v1/sample/ops/topk_topp_sampler.py",
                line,
                "random_sample",
            ),
            py(
                "vllm/v1/sample/ops/topk_topp_sampler.py",
                97,
                "forward_native",
            ),
        ])
    };
    [
        stack(&[
            &[py("vllm/v1/sample/sampler.py", 86, "forward")],
            &module_call(),
            caller,
        ]),
        topk_topp(&[py(
            "vllm/v1/sample/ops/topk_topp_sampler.py",
            96,
            "forward_native",
        )]),
        draw(241),
        draw(253),
    ]
}

/// Logits of `rows` rows and their sampling, all freed when the caller drops them; returns
/// the state just after the ids were sampled.
fn v11_sample(run: &mut Run, rows: u64, logits_at: &[Frame], sampler_at: &[Frame]) -> u32 {
    let logits_stack = v11_logits(logits_at);
    let logits = run.alloc(rows * VOCAB * 2, &logits_stack, Role::ForwardTemporaries);
    let [fp32, probs, draw, ids] = v11_sampler(sampler_at);
    let made = [
        run.alloc(rows * VOCAB * 4, &fp32, Role::ForwardTemporaries),
        run.alloc(rows * VOCAB * 4, &probs, Role::ForwardTemporaries),
        run.alloc(rows * VOCAB * 4, &draw, Role::ForwardTemporaries),
    ];
    run.free_all(&made, &ids);
    let sampled = run.alloc(rows * 8, &ids, Role::ForwardTemporaries);
    let state = run.next_row() as u32;
    run.free_all(&[logits, sampled], logits_at);
    state
}

/// Pools a v1 run allocates in: the default pool, or sleep mode's cuMem MemPools.
#[derive(Clone, Copy, Debug)]
struct Pools {
    weights: (i64, i64),
    graphs: (i64, i64),
    kv_cache: (i64, i64),
}

/// No sleep mode: the global graph pool is the only pool besides the default one
/// (`graph_pool_handle()`, `(0, N)`).
const PLAIN: Pools = Pools {
    weights: DEFAULT_POOL,
    graphs: (0, 1),
    kv_cache: DEFAULT_POOL,
};

/// Sleep mode (enable_sleep_mode=True): `use_memory_pool(tag="weights")` makes a MemPool
/// around load_model, the FULL wrapper made at its end takes the global graph pool, and
/// `use_memory_pool(tag="kv_cache")` makes another MemPool around initialize_kv_cache; one
/// counter numbers them all `(0, N)`.
const SLEEP: Pools = Pools {
    weights: (0, 1),
    graphs: (0, 2),
    kv_cache: (0, 3),
};

/// vLLM v0.11.0 serving Llama in a spawned worker with the classic GPU model runner
/// (torch.compile piecewise, FULL_AND_PIECEWISE graphs: the defaults): `layers` decoder
/// layers, `steps` steps (the first a prefill chunk of max_num_batched_tokens beyond the
/// capture sizes, the others decodes that replay a FULL graph), weights and KV cache in
/// `pools`.
fn v1_classic_run(layers: usize, steps: usize, pools: Pools) -> Served {
    let mut run = Run::new();
    // init_device: the runner's persistent buffers (input_ids :345, positions :347,
    // query_start_loc :349, seq_lens :351, inputs_embeds :355), its InputBatch's block table
    // and sampling tensors, all before any weight.
    let buffers = [
        (345, MAX_TOKENS * 4),
        (347, MAX_TOKENS * 8),
        (349, (MAX_REQS + 1) * 4),
        (351, MAX_REQS * 4),
        (355, MAX_TOKENS * 4096 * 2),
    ];
    let mut inputs = 0;
    for (line, size) in buffers {
        run.alloc(size, &v11_step_buffer(line), Role::Inputs);
        inputs += rounded(size);
    }
    let block_table = MAX_REQS * MAX_MODEL_LEN.div_ceil(BLOCK_SIZE) * 4;
    let slot_mapping = MAX_TOKENS * 8;
    run.alloc(block_table, &v11_block_table(34), Role::KvCache);
    run.alloc(slot_mapping, &v11_block_table(39), Role::KvCache);
    let tables = rounded(block_table) + rounded(slot_mapping);
    // temperature, top_p, top_k, frequency, presence and repetition penalties.
    for line in [150, 161, 171, 185, 198, 210] {
        run.alloc(MAX_REQS * 4, &v11_input_batch(line), Role::Inputs);
        inputs += rounded(MAX_REQS * 4);
    }
    // load_weights: the embedding, each layer's projections (QKVParallelLinear :918 →
    // ColumnParallelLinear :476, RowParallelLinear :1267, MergedColumnParallelLinear :624),
    // the rotary table, the LM head.
    let w = pools.weights;
    run.alloc_in(w, EMBEDDING, &v11_embedding(false), Role::Parameters);
    for layer in 0..layers {
        run.alloc_in(w, QKV, &v11_linear(&[476, 918], 152, 280), Role::Parameters);
        run.alloc_in(w, O_PROJ, &v11_linear(&[1267], 162, 280), Role::Parameters);
        if layer == 0 {
            run.alloc_in(w, ROPE, &v11_rope(), Role::Parameters);
        }
        run.alloc_in(
            w,
            GATE_UP,
            &v11_linear(&[476, 624], 74, 296),
            Role::Parameters,
        );
        run.alloc_in(w, DOWN, &v11_linear(&[1267], 82, 296), Role::Parameters);
    }
    run.alloc_in(w, EMBEDDING, &v11_embedding(true), Role::Parameters);
    // profile_run: the first forward over max_num_batched_tokens (Dynamo compiles it), then
    // compute_logits and the sampler over max_num_seqs rows; everything freed.
    let determine = stack(&[
        &[
            py(
                "vllm/v1/worker/gpu_worker.py",
                263,
                "determine_available_memory",
            ),
            inference_mode(),
        ],
        &v11_rpc(),
    ]);
    let profile = |line: i64| {
        stack(&[
            &[py(
                "vllm/v1/worker/gpu_model_runner.py",
                line,
                "profile_run",
            )],
            &determine,
        ])
    };
    let at = v11_dummy_forward(v11_forward(310, 90, 121, 121), &profile(3392));
    forward_pass(&mut run, layers, MAX_TOKENS, &at, Role::ForwardTemporaries);
    v11_sample(
        &mut run,
        MAX_REQS,
        &v11_dummy_sampler(3192, &profile(3397)),
        &v11_dummy_sampler(3217, &profile(3397)),
    );
    // kv_cache_allocation: one int8 tensor per KVCacheTensor, one per layer here.
    let kv = stack(&[
        &[
            py(
                "vllm/v1/worker/gpu_model_runner.py",
                3772,
                "_allocate_kv_cache_tensors",
            ),
            py(
                "vllm/v1/worker/gpu_model_runner.py",
                3926,
                "initialize_kv_cache_tensors",
            ),
            py(
                "vllm/v1/worker/gpu_model_runner.py",
                3987,
                "initialize_kv_cache",
            ),
            py(
                "vllm/v1/worker/gpu_worker.py",
                318,
                "initialize_from_config",
            ),
            py("vllm/worker/worker_base.py", 254, "initialize_from_config"),
        ],
        &v11_rpc(),
    ]);
    for _ in 0..layers {
        run.alloc_in(pools.kv_cache, NUM_BLOCKS * PAGE, &kv, Role::KvCache);
    }
    // graph_capture: capture_model's PIECEWISE pass over the capture sizes (:3446), then its
    // FULL pass over the uniform-decode sizes (:3463), largest first; per size a warm-up
    // forward (:3523, default pool, freed) and the captured one (:3530), whose memory the
    // graph keeps in the global pool (PyTorch keeps it as the pool's segments, the
    // captured tensors being weak references; written here as one block per graph).
    let mut graphs = 0;
    let capture = |pass: i64, call: i64| {
        stack(&[
            &[
                py(
                    "vllm/v1/worker/gpu_model_runner.py",
                    call,
                    "_capture_cudagraphs",
                ),
                py("vllm/v1/worker/gpu_model_runner.py", pass, "capture_model"),
                py(
                    "vllm/v1/worker/gpu_worker.py",
                    344,
                    "compile_or_warm_up_model",
                ),
            ],
            &v11_rpc(),
        ])
    };
    for (full, sizes) in [(false, [512, 256, 128, 64]), (true, [256, 128, 64, 32])] {
        let pass = if full { 3463 } else { 3446 };
        for tokens in sizes {
            let warm_up = v11_dummy_forward(v11_forward(317, 117, 121, 121), &capture(pass, 3523));
            let warm: Vec<Id> = [GATE_UP_OUT, ACT_OUT]
                .iter()
                .map(|per_token| run.alloc(tokens * per_token, &warm_up, Role::ForwardTemporaries))
                .collect();
            run.free_all(&warm, &warm_up);
            let (piece, outer) = if full { (121, 166) } else { (166, 121) };
            let captured =
                v11_dummy_forward(v11_forward(317, 117, piece, outer), &capture(pass, 3530));
            let size = tokens * (GATE_UP_OUT + ACT_OUT);
            run.alloc_in(pools.graphs, size, &captured, Role::CudaGraph);
            graphs += rounded(size);
        }
    }
    // After capture on purpose: compute_logits and the sampler over max_num_seqs rows, so
    // their memory stays cached for the steps.
    let warm_up_sampler = |line: i64| {
        stack(&[
            &[py(
                "vllm/v1/worker/gpu_worker.py",
                line,
                "compile_or_warm_up_model",
            )],
            &v11_rpc(),
        ])
    };
    v11_sample(
        &mut run,
        MAX_REQS,
        &v11_dummy_sampler(3192, &warm_up_sampler(413)),
        &v11_dummy_sampler(3217, &warm_up_sampler(413)),
    );
    // Steps: the step's own inputs, the forward (a prefill chunk beyond the largest capture
    // size runs the compiled pieces for a general shape; decodes replay a FULL graph and
    // allocate nothing), logits, sampling; all freed when execute_model returns.
    let first_step = run.next_row();
    let worker_step = stack(&[
        &[
            py("vllm/v1/worker/gpu_worker.py", 447, "execute_model"),
            inference_mode(),
        ],
        &v11_rpc(),
    ]);
    let runner_step = |line: i64| {
        stack(&[
            &[
                py("vllm/v1/worker/gpu_model_runner.py", line, "execute_model"),
                inference_mode(),
            ],
            &worker_step,
        ])
    };
    let (mut step_peak, mut sampled) = (0, 0);
    for s in 0..steps {
        let prepare = stack(&[
            &[py(
                "vllm/v1/worker/gpu_model_runner.py",
                1104,
                "_prepare_inputs",
            )],
            &runner_step(2257),
        ]);
        let logits_indices = run.alloc(RUNNING * 4, &prepare, Role::Inputs);
        if s == 0 {
            let forward = stack(&[&v11_forward(317, 96, 121, 121), &runner_step(2298)]);
            let peak = forward_pass(
                &mut run,
                layers,
                MAX_TOKENS,
                &forward,
                Role::ForwardTemporaries,
            );
            step_peak = peak + rounded(RUNNING * 4);
        }
        let sampler_at = stack(&[
            &[py("vllm/v1/worker/gpu_model_runner.py", 2061, "_sample")],
            &runner_step(2367),
        ]);
        let state = v11_sample(&mut run, RUNNING, &runner_step(2331), &sampler_at);
        if s == 0 {
            sampled = state;
        }
        run.free(logits_indices, &runner_step(2257));
    }
    Served {
        run,
        weights: weight_bytes(layers),
        kv_cache: layers as u64 * NUM_BLOCKS * PAGE,
        tables,
        graphs,
        inputs,
        workspace: 0,
        first_step,
        step_peak,
        sampled,
    }
}

#[test]
fn a_v1_worker_at_0_11_keeps_its_weights_kv_cache_graphs_and_step_buffers_apart() {
    let served = v1_classic_run(4, 3, PLAIN);
    for run in [served.run.clone(), served.run.clone().with_cpp()] {
        let whole = run.whole();
        let score = whole.assert_right(0.99);
        whole.assert_reasons_name_frames(whole.peak());
        assert_serving_physics(&served, &score);
        assert_eq!(
            score.got(Role::Inputs),
            served.inputs + rounded(RUNNING * 4)
        );
        // Just sampled: logits and the sampler's copies are the step's scratch.
        let sampled = whole.score_at(served.sampled);
        assert_eq!(sampled.right, sampled.bytes, "{}", sampled.explain());
    }
}

#[test]
fn a_v1_worker_at_0_11_recorded_from_its_first_step_reads_the_steps() {
    let served = v1_classic_run(4, 3, PLAIN);
    // The ring buffer wrapped at the first step: the blocks keep their frames.
    let wrapped = served.run.cut(served.first_step, Cut::Wrapped);
    let score = wrapped.assert_right(0.99);
    wrapped.assert_reasons_name_frames(wrapped.peak());
    assert_serving_physics(&served, &score);
    // Recording started at the first step: what setup made has no frames. The step's own
    // memory is still read from its frames, nothing is unknown, nothing is training's.
    let late = served.run.cut(served.first_step, Cut::LateStart);
    let score = late.score();
    assert!(score.truth(Role::KvCache) > 0, "{}", score.explain());
    assert_eq!(
        score.got(Role::ForwardTemporaries),
        served.step_peak - rounded(RUNNING * 4)
    );
    assert_eq!(score.unknown, 0, "{}", score.explain());
    for training in [Role::Gradients, Role::OptimizerState, Role::Activations] {
        assert_eq!(score.got(training), 0, "{}", score.explain());
    }
    late.assert_reasons_name_frames(late.peak());
}

#[test]
#[ignore = "memsight does not tell the (0, N) pool graph_pool_handle() gives a graph from a MemPool by its id: its frame-less blocks are deduced model state (parameters)"]
fn a_v1_worker_recorded_late_tells_its_graph_pool_by_its_id() {
    let served = v1_classic_run(4, 3, PLAIN);
    let late = served.run.cut(served.first_step, Cut::LateStart);
    let score = late.score();
    assert_eq!(
        score.got(Role::CudaGraph),
        served.graphs,
        "{}",
        score.explain()
    );
}

#[test]
#[ignore = "memsight deduces every frame-less block alive throughout an inference run to be the model's weights: a late start's KV cache and step buffers are called parameters"]
fn a_v1_worker_recorded_late_still_finds_its_kv_cache() {
    let served = v1_classic_run(4, 3, PLAIN);
    let late = served.run.cut(served.first_step, Cut::LateStart);
    let score = late.assert_right(0.90);
    assert_eq!(
        score.got(Role::KvCache),
        served.kv_cache + served.tables,
        "{}",
        score.explain()
    );
}

#[test]
fn a_v1_worker_at_0_11_reads_its_blocks_without_a_trace() {
    let served = v1_classic_run(4, 3, PLAIN);
    let state = served.run.state_only();
    let end = state.score_at(state.end());
    assert!(end.right_share() >= 0.99, "{}", end.explain());
    assert_eq!(end.got(Role::KvCache), served.kv_cache + served.tables);
    assert_eq!(end.got(Role::CudaGraph), served.graphs);
    assert_eq!(end.got(Role::Inputs), served.inputs);
    state.assert_reasons_name_frames(state.end());
}

#[test]
fn sleep_mode_memory_pools_are_not_cuda_graphs() {
    let served = v1_classic_run(4, 3, SLEEP);
    let whole = served.run.whole();
    let score = whole.assert_right(0.99);
    whole.assert_reasons_name_frames(whole.peak());
    assert_serving_physics(&served, &score);
    // Without frames the "weights" and "kv_cache" MemPools, (0, 1) and (0, 3), look like the
    // graph pool (0, 2): their blocks must not be taken for graphs.
    let late = served.run.cut(served.first_step, Cut::LateStart);
    let score = late.score();
    for truth in [Role::Parameters, Role::KvCache] {
        let called_graph = score.wrong.get(&(truth, Role::CudaGraph)).copied();
        assert_eq!(called_graph, None, "{}", score.explain());
    }
    let state = served.run.state_only();
    let end = state.score_at(state.end());
    assert!(end.right_share() >= 0.99, "{}", end.explain());
    assert_eq!(end.got(Role::CudaGraph), served.graphs);
}

// --- v0.34.0: model runner v2 (vllm/v1/worker/gpu/), the only GPU runner -------------------

/// `WorkerProc.__init__` running init_device (:814) or load_model (:822).
fn v34_worker_init(line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py("vllm/v1/executor/multiproc_executor.py", line, "__init__"),
            py(
                "vllm/v1/executor/multiproc_executor.py",
                1057,
                "worker_main",
            ),
        ],
        &spawned(),
    ])
}

/// A call the engine core sends the worker, run by its busy loop.
fn v34_rpc() -> Vec<Frame> {
    stack(&[
        &[
            py(
                "vllm/v1/executor/multiproc_executor.py",
                1211,
                "_execute_worker_rpc",
            ),
            py(
                "vllm/v1/executor/multiproc_executor.py",
                1194,
                "worker_busy_loop",
            ),
            py(
                "vllm/v1/executor/multiproc_executor.py",
                1082,
                "worker_main",
            ),
        ],
        &spawned(),
    ])
}

/// `GPUModelRunner.__init__` at `line` (RequestState :297, InputBuffers :338), built by
/// `Worker.init_device` through `_init_workspace_and_model_runner`.
fn v34_runner_init(line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py("vllm/v1/worker/gpu/model_runner.py", line, "__init__"),
            py("vllm/v1/worker/gpu_worker.py", 587, "_make_model_runner"),
            py(
                "vllm/v1/worker/gpu_worker.py",
                574,
                "_init_workspace_and_model_runner",
            ),
            py("vllm/v1/worker/gpu_worker.py", 560, "init_device"),
            py("vllm/v1/worker/worker_base.py", 387, "init_device"),
        ],
        &v34_worker_init(814),
    ])
}

/// A tensor of the per-request state: a `StagedWriteTensor`'s GPU rows (`staged`) or a
/// tensor `RequestState.__init__` makes itself, at `line`.
fn v34_request_state(line: i64, staged: bool) -> Vec<Frame> {
    let own = py("vllm/v1/worker/gpu/states.py", line, "__init__");
    if staged {
        stack(&[
            &[
                py("vllm/v1/worker/gpu/buffer_utils.py", 195, "__init__"),
                own,
            ],
            &v34_runner_init(297),
        ])
    } else {
        stack(&[&[own], &v34_runner_init(297)])
    }
}

/// The loader building the model, from `LlamaForCausalLM.__init__` at `line` out.
fn v34_loader(line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py("vllm/model_executor/models/llama.py", line, "__init__"),
            py(
                "vllm/model_executor/model_loader/utils.py",
                101,
                "initialize_model",
            ),
            py(
                "vllm/model_executor/model_loader/base_loader.py",
                54,
                "create_model",
            ),
            py(
                "vllm/model_executor/model_loader/base_loader.py",
                89,
                "load_model",
            ),
            py("vllm/v1/worker/gpu/model_runner.py", 416, "load_model"),
            py("vllm/v1/worker/gpu_worker.py", 603, "load_model"),
        ],
        &v34_worker_init(822),
    ])
}

/// From `LlamaModel.__init__` at `line` out.
fn v34_llama_model(line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py("vllm/model_executor/models/llama.py", line, "__init__"),
            py("vllm/compilation/decorators.py", 403, "__init__"),
            py("vllm/model_executor/models/llama.py", 529, "_init_model"),
        ],
        &v34_loader(496),
    ])
}

/// From a decoder layer's `module_line` (attention :285, MLP :300) out: the layers come
/// from a generator the no-op offloader lists.
fn v34_layer(module_line: i64) -> Vec<Frame> {
    stack(&[
        &[
            py(
                "vllm/model_executor/models/llama.py",
                module_line,
                "__init__",
            ),
            py("vllm/model_executor/models/llama.py", 391, "<lambda>"),
            py("vllm/model_executor/models/utils.py", 978, "<genexpr>"),
            py("vllm/model_executor/offloader/base.py", 120, "wrap_modules"),
            py("vllm/model_executor/models/utils.py", 977, "make_layers"),
        ],
        &v34_llama_model(389),
    ])
}

/// A linear layer's weight (`create_weights` :195 under `classes`, lines in linear.py).
fn v34_linear(classes: &[i64], owner_line: i64, module_line: i64) -> Vec<Frame> {
    let mut frames = vec![
        device_context(),
        py(
            "vllm/model_executor/layers/linear.py",
            195,
            "create_weights",
        ),
    ];
    for &line in classes {
        frames.push(py("vllm/model_executor/layers/linear.py", line, "__init__"));
    }
    frames.push(py(
        "vllm/model_executor/models/llama.py",
        owner_line,
        "__init__",
    ));
    stack(&[&frames, &v34_layer(module_line)])
}

fn v34_embedding(lm_head: bool) -> Vec<Frame> {
    let file = "vllm/model_executor/layers/vocab_parallel_embedding.py";
    let inner = [
        device_context(),
        py(file, 59, "create_weights"),
        py(file, 366, "__init__"),
    ];
    if lm_head {
        stack(&[&inner, &[py(file, 618, "__init__")], &v34_loader(503)])
    } else {
        stack(&[&inner, &v34_llama_model(382)])
    }
}

fn v34_rope() -> Vec<Frame> {
    stack(&[
        &[
            device_context(),
            py(
                "vllm/model_executor/layers/rotary_embedding/base.py",
                61,
                "__init__",
            ),
            py(
                "vllm/model_executor/layers/rotary_embedding/llama3_rope.py",
                29,
                "__init__",
            ),
            py(
                "vllm/model_executor/layers/rotary_embedding/__init__.py",
                172,
                "get_rope",
            ),
            py("vllm/model_executor/models/llama.py", 243, "__init__"),
        ],
        &v34_layer(285),
    ])
}

/// The model's forward from the compiled pieces (piece wrapper: pass-through :255, capture
/// :316) out to `LlamaForCausalLM`'s module call (support_torch_compile's AOT-compiled
/// function: first call :712, then :551).
fn v34_forward(decorator: i64, piece: i64) -> Vec<Frame> {
    stack(&[
        &compiled_piece("vllm/compilation/piecewise_backend.py", 379, piece, 436),
        &[
            py("vllm/compilation/decorators.py", decorator, "__call__"),
            py("vllm/model_executor/models/llama.py", 541, "forward"),
        ],
        &module_call(),
    ])
}

/// `GPUModelRunner.execute_model` at `line`, run by the worker's execute_model, or
/// (`dummy`) by `_dummy_run` from `caller`.
fn v34_execute(line: i64, caller: &[Frame], dummy: bool) -> Vec<Frame> {
    let execute = [
        py("vllm/v1/worker/gpu/model_runner.py", line, "execute_model"),
        inference_mode(),
    ];
    if dummy {
        stack(&[
            &execute,
            &[
                py("vllm/v1/worker/gpu/model_runner.py", 966, "_dummy_run"),
                inference_mode(),
            ],
            caller,
        ])
    } else {
        stack(&[&execute, caller])
    }
}

/// `CudaGraphManager.capture` at `line` (warm-up :501, PIECEWISE :513, FULL :537) running
/// a descriptor's `forward_fn` (`forward_line`: run_pw_graph :833, the model :836),
/// through `ModelCudaGraphManager.capture` from `capture_model`, called from `caller`.
fn v34_capture(line: i64, forward_line: i64, caller: &[Frame]) -> Vec<Frame> {
    let mut frames = Vec::new();
    if forward_line == 833 {
        frames.push(py(
            "vllm/v1/worker/gpu/cudagraph_utils.py",
            630,
            "run_pw_graph",
        ));
    }
    frames.extend([
        py(
            "vllm/v1/worker/gpu/cudagraph_utils.py",
            forward_line,
            "forward_fn",
        ),
        py("vllm/v1/worker/gpu/cudagraph_utils.py", line, "capture"),
        inference_mode(),
        py("vllm/v1/worker/gpu/cudagraph_utils.py", 847, "capture"),
        py("vllm/v1/worker/gpu/model_runner.py", 1171, "capture_model"),
        inference_mode(),
    ]);
    stack(&[&frames, caller])
}

/// Logits (`compute_logits` through the model state) and the MRV2 sampler's fp32 copy and
/// Gumbel scratch for `rows` rows, under `sample_tokens` from `caller`, all freed.
fn v34_sample(run: &mut Run, rows: u64, caller: &[Frame]) -> u32 {
    let sample = |line: i64| {
        stack(&[
            &[
                py("vllm/v1/worker/gpu/model_runner.py", line, "sample"),
                py("vllm/v1/worker/gpu/model_runner.py", 2267, "sample_tokens"),
                inference_mode(),
            ],
            caller,
        ])
    };
    let logits_at = stack(&[
        &[
            py(
                "vllm/model_executor/layers/utils.py",
                90,
                "default_unquantized_gemm",
            ),
            py(
                "vllm/model_executor/layers/vocab_parallel_embedding.py",
                88,
                "apply",
            ),
            py(
                "vllm/model_executor/layers/logits_processor.py",
                144,
                "_apply_head",
            ),
            py(
                "vllm/model_executor/layers/logits_processor.py",
                188,
                "_get_logits",
            ),
            py(
                "vllm/model_executor/layers/logits_processor.py",
                109,
                "forward",
            ),
        ],
        &module_call(),
        &[
            py("vllm/model_executor/models/llama.py", 550, "compute_logits"),
            py(
                "vllm/v1/worker/gpu/model_states/interface.py",
                258,
                "compute_sample_logits",
            ),
        ],
        &sample(1730),
    ]);
    let sampler = |inner: &[Frame]| {
        stack(&[
            inner,
            &[py("vllm/v1/worker/gpu/sample/sampler.py", 151, "__call__")],
            &sample(1751),
        ])
    };
    let fp32 = sampler(&[
        py(
            "vllm/v1/worker/gpu/sample/sampler.py",
            239,
            "apply_sampling_params",
        ),
        py("vllm/v1/worker/gpu/sample/sampler.py", 287, "sample"),
    ]);
    let gumbel = sampler(&[
        py("vllm/v1/worker/gpu/sample/gumbel.py", 443, "gumbel_sample"),
        py("vllm/v1/worker/gpu/sample/sampler.py", 347, "sample"),
    ]);
    let logits = run.alloc(rows * VOCAB * 2, &logits_at, Role::ForwardTemporaries);
    let copy = run.alloc(rows * VOCAB * 4, &fp32, Role::ForwardTemporaries);
    let scratch = run.alloc(rows * 64 * 8, &gumbel, Role::ForwardTemporaries);
    let state = run.next_row() as u32;
    run.free_all(&[copy, scratch], &gumbel);
    run.free(logits, &sample(1751));
    state
}

/// vLLM v0.34.0 serving Llama with model runner v2 in a spawned worker, the KV cache in
/// PyTorch (kv_cache_memory_bytes given, so not the extensible cache of §4.4): RequestState
/// and InputBuffers at init_device, the weights, profile_run, profile_cudagraph_memory (a
/// minimal KV cache and throwaway graphs in a pool of their own, all freed), BlockTables
/// and the single KV backing buffer, graph capture into the global pool (0, 1), then
/// `steps` steps (a prefill chunk run eagerly, then decodes replaying a FULL graph).
fn v1_mrv2_run(layers: usize, steps: usize) -> Served {
    let mut run = Run::new();
    let (global_pool, throwaway_pool) = ((0, 1), (0, 2));
    // init_device: the per-request state (total_len :55 and num_computed_tokens :61 as
    // StagedWriteTensors; last_sampled_tokens :68, draft_tokens :76, next_prefill_tokens
    // :83; all_token_ids lives in UVA host memory by default) and the InputBuffers
    // (input_ids :29, positions :30, is_padding :31, query_start_loc :32, seq_lens :35,
    // dcp_local_seq_lens :37).
    let mut inputs = 0;
    for (line, staged, size) in [
        (55, true, MAX_REQS * 4),
        (61, true, MAX_REQS * 4),
        (68, false, MAX_REQS * 8),
        (76, false, MAX_REQS * 8),
        (83, false, MAX_REQS * 4),
    ] {
        run.alloc(size, &v34_request_state(line, staged), Role::Inputs);
        inputs += rounded(size);
    }
    for (line, size) in [
        (29, MAX_TOKENS * 4),
        (30, MAX_TOKENS * 8),
        (31, MAX_TOKENS),
        (32, (MAX_REQS + 1) * 4),
        (35, MAX_REQS * 4),
        (37, MAX_REQS * 4),
    ] {
        let at = stack(&[
            &[py("vllm/v1/worker/gpu/input_batch.py", line, "__init__")],
            &v34_runner_init(338),
        ]);
        run.alloc(size, &at, Role::Inputs);
        inputs += rounded(size);
    }
    // load_weights (QKVParallelLinear :1128 → StackedColumnParallelLinear :701 →
    // ColumnParallelLinear :539; RowParallelLinear :1774; MergedColumnParallelLinear :792).
    run.alloc(EMBEDDING, &v34_embedding(false), Role::Parameters);
    for layer in 0..layers {
        run.alloc(
            QKV,
            &v34_linear(&[539, 701, 1128], 165, 285),
            Role::Parameters,
        );
        run.alloc(O_PROJ, &v34_linear(&[1774], 175, 285), Role::Parameters);
        if layer == 0 {
            run.alloc(ROPE, &v34_rope(), Role::Parameters);
        }
        run.alloc(
            GATE_UP,
            &v34_linear(&[539, 701, 792], 95, 300),
            Role::Parameters,
        );
        run.alloc(DOWN, &v34_linear(&[1774], 103, 300), Role::Parameters);
    }
    run.alloc(EMBEDDING, &v34_embedding(true), Role::Parameters);
    // profile_run: _dummy_run drives execute_model (dummy_run=True) over max tokens, eagerly.
    let determine = |line: i64| {
        stack(&[
            &[
                py(
                    "vllm/v1/worker/gpu_worker.py",
                    line,
                    "determine_available_memory",
                ),
                inference_mode(),
            ],
            &v34_rpc(),
        ])
    };
    let profile = stack(&[
        &[
            py("vllm/v1/worker/gpu/model_runner.py", 1086, "profile_run"),
            inference_mode(),
        ],
        &determine(732),
    ]);
    let at = stack(&[&v34_forward(712, 255), &v34_execute(2164, &profile, true)]);
    forward_pass(&mut run, layers, MAX_TOKENS, &at, Role::ForwardTemporaries);
    // profile_cudagraph_memory: a minimal KV cache (min(max_num_seqs, largest capture size)
    // blocks), its block tables, and the graphs captured into a throwaway pool; the cache
    // and graphs are dropped at teardown, the block tables when the real ones replace them.
    let profiling = stack(&[
        &[
            py(
                "vllm/v1/worker/gpu/model_runner.py",
                1128,
                "profile_cudagraph_memory",
            ),
            inference_mode(),
        ],
        &determine(747),
    ]);
    let module_profiling = |line: i64| {
        stack(&[
            &[
                py(
                    "vllm/v1/worker/gpu/cudagraph_utils.py",
                    line,
                    "profile_cudagraph_memory",
                ),
                inference_mode(),
            ],
            &profiling,
        ])
    };
    let minimal = stack(&[
        &[py(
            "vllm/v1/worker/gpu/cudagraph_utils.py",
            1128,
            "_init_minimal_kv_cache_for_profiling",
        )],
        &module_profiling(1030),
    ]);
    let (minimal_blocks, minimal_tables) =
        v34_kv_cache(&mut run, layers, 256, DEFAULT_POOL, &minimal);
    let mut throwaway = Vec::new();
    for tokens in [512, 256] {
        let captured = v34_capture(513, 833, &module_profiling(1067));
        let full = stack(&[&v34_forward(551, 316), &captured]);
        throwaway.push(run.alloc_in(
            throwaway_pool,
            tokens * (GATE_UP_OUT + ACT_OUT),
            &full,
            Role::CudaGraph,
        ));
    }
    throwaway.push(minimal_blocks);
    run.free_all(&throwaway, &module_profiling(1093));
    // kv_cache_allocation: the BlockTables, then one backing buffer for every layer.
    let kv_init = stack(&[
        &[
            py(
                "vllm/v1/worker/gpu_worker.py",
                954,
                "initialize_from_config",
            ),
            py(
                "vllm/v1/worker/worker_base.py",
                375,
                "initialize_from_config",
            ),
        ],
        &v34_rpc(),
    ]);
    let (_, tables) = v34_kv_cache(&mut run, layers, NUM_BLOCKS, DEFAULT_POOL, &kv_init);
    let table_bytes =
        rounded(MAX_REQS * MAX_MODEL_LEN.div_ceil(BLOCK_SIZE) * 4) * 2 + rounded(MAX_TOKENS * 8);
    run.free_all(&minimal_tables, &kv_init);
    let _ = tables;
    // graph_capture: PIECEWISE descriptors (largest first), then FULL ones; each a warm-up
    // forward (:501, freed), then the capture, whose memory the graph keeps in the global
    // pool; the first FULL warm-up makes the persistent output buffer the FULL graphs write.
    let warm_up = stack(&[
        &[
            py(
                "vllm/v1/worker/gpu_worker.py",
                1103,
                "_compile_or_warm_up_model",
            ),
            py(
                "vllm/v1/worker/gpu_worker.py",
                1020,
                "compile_or_warm_up_model",
            ),
        ],
        &v34_rpc(),
    ]);
    let mut graphs = 0;
    for (full, sizes) in [(false, [512, 256, 128, 64]), (true, [256, 128, 64, 32])] {
        for (k, tokens) in sizes.into_iter().enumerate() {
            let warm = stack(&[&v34_forward(551, 255), &v34_capture(501, 836, &warm_up)]);
            let made: Vec<Id> = [GATE_UP_OUT, ACT_OUT]
                .iter()
                .map(|per_token| run.alloc(tokens * per_token, &warm, Role::ForwardTemporaries))
                .collect();
            run.free_all(&made, &warm);
            if full && k == 0 {
                let output = stack(&[
                    &[
                        py(
                            "vllm/v1/worker/gpu/cudagraph_utils.py",
                            699,
                            "persistent_like",
                        ),
                        py(
                            "vllm/v1/worker/gpu/cudagraph_utils.py",
                            711,
                            "store_capture_output",
                        ),
                    ],
                    &v34_capture(501, 839, &warm_up)[1..],
                ]);
                let size = 512 * HIDDEN_OUT;
                run.alloc(size, &output, Role::CudaGraph);
                graphs += rounded(size);
            }
            let captured = if full {
                stack(&[&v34_forward(551, 255), &v34_capture(537, 836, &warm_up)])
            } else {
                stack(&[&v34_forward(551, 316), &v34_capture(513, 833, &warm_up)])
            };
            let size = tokens * (GATE_UP_OUT + ACT_OUT);
            run.alloc_in(global_pool, size, &captured, Role::CudaGraph);
            graphs += rounded(size);
        }
    }
    // Steps: execute_model (its inputs, then a prefill chunk eagerly or a FULL graph's
    // replay), then sample_tokens.
    let first_step = run.next_row();
    let worker = |line: i64, name: &str| {
        stack(&[
            &[
                py("vllm/v1/worker/gpu_worker.py", line, name),
                inference_mode(),
            ],
            &v34_rpc(),
        ])
    };
    let (mut step_peak, mut sampled) = (0, 0);
    for s in 0..steps {
        let prepare = |line: i64| {
            stack(&[
                &[py(
                    "vllm/v1/worker/gpu/model_runner.py",
                    line,
                    "prepare_inputs",
                )],
                &v34_execute(1924, &worker(1475, "execute_model"), false),
            ])
        };
        let step_inputs = [
            run.alloc(RUNNING * 8, &prepare(1476), Role::Inputs),
            run.alloc((RUNNING + 1) * 4, &prepare(1489), Role::Inputs),
            run.alloc(RUNNING * 4, &prepare(1493), Role::Inputs),
        ];
        let inputs_bytes = rounded(RUNNING * 8) + rounded((RUNNING + 1) * 4) + rounded(RUNNING * 4);
        if s == 0 {
            let at = stack(&[
                &v34_forward(551, 255),
                &v34_execute(2164, &worker(1475, "execute_model"), false),
            ]);
            let peak = forward_pass(&mut run, layers, MAX_TOKENS, &at, Role::ForwardTemporaries);
            step_peak = peak + inputs_bytes;
        }
        run.free_all(&step_inputs, &worker(1475, "execute_model"));
        let state = v34_sample(&mut run, RUNNING, &worker(1445, "sample_tokens"));
        if s == 0 {
            sampled = state;
        }
    }
    Served {
        run,
        weights: weight_bytes(layers),
        kv_cache: layers as u64 * NUM_BLOCKS * PAGE,
        tables: table_bytes,
        graphs,
        inputs,
        workspace: 0,
        first_step,
        step_peak,
        sampled,
    }
}

/// `GPUModelRunner.initialize_kv_cache` with `blocks` blocks, from `caller`: the BlockTables
/// (one group: its staged block table :68, the forward's copy :86, the slot mappings :90),
/// then the single backing buffer of all layers; returns the buffer and the tables.
fn v34_kv_cache(
    run: &mut Run,
    layers: usize,
    blocks: u64,
    pool: (i64, i64),
    caller: &[Frame],
) -> (Id, Vec<Id>) {
    let initialize = |line: i64| {
        stack(&[
            &[py(
                "vllm/v1/worker/gpu/model_runner.py",
                line,
                "initialize_kv_cache",
            )],
            caller,
        ])
    };
    let table = |inner: &[Frame]| stack(&[inner, &initialize(753)]);
    let block_table = MAX_REQS * MAX_MODEL_LEN.div_ceil(BLOCK_SIZE) * 4;
    let tables = vec![
        run.alloc(
            block_table,
            &table(&[
                py("vllm/v1/worker/gpu/buffer_utils.py", 195, "__init__"),
                py("vllm/v1/worker/gpu/block_table.py", 68, "__init__"),
            ]),
            Role::KvCache,
        ),
        run.alloc(
            block_table,
            &table(&[
                py("vllm/v1/worker/gpu/block_table.py", 86, "<listcomp>"),
                py("vllm/v1/worker/gpu/block_table.py", 85, "__init__"),
            ]),
            Role::KvCache,
        ),
        run.alloc(
            MAX_TOKENS * 8,
            &table(&[py("vllm/v1/worker/gpu/block_table.py", 90, "__init__")]),
            Role::KvCache,
        ),
    ];
    let buffer = stack(&[
        &[
            py("vllm/v1/worker/utils.py", 645, "_allocate_kv_cache_buffer"),
            py("vllm/v1/worker/utils.py", 582, "allocate_kv_cache"),
            py("vllm/v1/worker/gpu/attn_utils.py", 431, "init_kv_cache"),
        ],
        &initialize(837),
    ]);
    let kv = run.alloc_in(pool, layers as u64 * blocks * PAGE, &buffer, Role::KvCache);
    (kv, tables)
}

#[test]
fn model_runner_v2_at_0_34_keeps_one_kv_buffer_and_its_graphs_apart() {
    let served = v1_mrv2_run(4, 3);
    for run in [served.run.clone(), served.run.clone().with_cpp()] {
        let whole = run.whole();
        let score = whole.assert_right(0.99);
        whole.assert_reasons_name_frames(whole.peak());
        assert_serving_physics(&served, &score);
        // The step's own inputs (made in prepare_inputs) are inputs, not scratch.
        assert_eq!(
            score.wrong.get(&(Role::Inputs, Role::ForwardTemporaries)),
            None
        );
        assert_eq!(score.got(Role::Inputs), score.truth(Role::Inputs));
        let sampled = whole.score_at(served.sampled);
        assert_eq!(sampled.right, sampled.bytes, "{}", sampled.explain());
    }
}

#[test]
fn model_runner_v2_at_0_34_recorded_late_or_wrapped_and_without_a_trace() {
    let served = v1_mrv2_run(4, 3);
    let wrapped = served.run.cut(served.first_step, Cut::Wrapped);
    let score = wrapped.assert_right(0.99);
    wrapped.assert_reasons_name_frames(wrapped.peak());
    assert_serving_physics(&served, &score);
    // Recorded from the first step: the step's memory is read from its frames, nothing
    // is unknown or training's, and the profiling graphs' throwaway pool is gone.
    let late = served.run.cut(served.first_step, Cut::LateStart);
    let score = late.score();
    assert!(score.truth(Role::KvCache) > 0, "{}", score.explain());
    assert_eq!(score.unknown, 0, "{}", score.explain());
    assert_eq!(
        score.got(Role::Gradients) + score.got(Role::OptimizerState),
        0
    );
    late.assert_reasons_name_frames(late.peak());
    // Without a trace the blocks' frames say it all, the one KV buffer included.
    let state = served.run.state_only();
    let end = state.score_at(state.end());
    assert!(end.right_share() >= 0.99, "{}", end.explain());
    assert_eq!(end.got(Role::KvCache), served.kv_cache + served.tables);
    assert_eq!(end.got(Role::CudaGraph), served.graphs);
    assert_eq!(end.got(Role::Inputs), served.inputs);
    state.assert_reasons_name_frames(state.end());
}

/// Only a graph captured without a pool given gets an id `(N, 0)`: its blocks are the
/// graph's even without frames.
#[test]
fn a_v0_engine_recorded_late_tells_its_graph_pool_by_its_id() {
    let run = v0_run(4, 1 << 30, 3, 4);
    // Each step makes its input and 4 temporaries and frees them: 15 rows.
    let first_step = run.next_row() - 4 * 15;
    let late = run.cut(first_step, Cut::LateStart);
    let score = late.score();
    // The three graphs' blocks in the (1, 0) pool; the static inputs (default pool) have
    // nothing but their frames to tell them.
    assert!(
        score.got(Role::CudaGraph) >= 3 * 6 * (1 << 20),
        "{}",
        score.explain()
    );
}

/// A private pool's timeline: its blocks, its reserved bytes as the line over them (its
/// envelope), and each block's role and reason, as the page asks for them.
#[test]
fn a_v0_engines_graph_pool_has_a_timeline_of_its_own() {
    use memsight_core::protocol::{Answer, Request};
    use memsight_core::session::Session;
    use memsight_core::timeline::service::{FrameRequest, TimelineAnswer, TimelineRequest};
    use memsight_core::timeline::TimelineKind;

    let bytes = v0_run(4, 1 << 30, 3, 4).bytes();
    let mut session = Session::new();
    session
        .load(&bytes[..], bytes.len() as u64, &|| 0.0, &mut |_| {})
        .expect("the run loads");
    let mut ask = |request: TimelineRequest| match session
        .answer(Request::Timeline(request), &|| 0.0)
        .expect("answered")
        .answer
    {
        Answer::Timeline(answer) => answer,
        other => panic!("{other:?}"),
    };
    let TimelineAnswer::Layout(main) = ask(TimelineRequest::Layout {
        device: 0,
        kind: TimelineKind::Allocations,
        detail: None,
    }) else {
        panic!()
    };
    // One private pool: the graphs', told by its id (a graph captured without a pool).
    assert_eq!(main.pools.len(), 1, "{:?}", main.pools);
    let mark = &main.pools[0];
    assert_eq!(mark.id, (1, 0));
    assert_eq!(
        mark.kind,
        memsight_core::analysis::categories::pooled::PoolKind::Graph
    );
    assert_eq!(mark.top_role, Some(Role::CudaGraph));
    let kind = TimelineKind::Pool(mark.pool);
    let TimelineAnswer::Layout(pool) = ask(TimelineRequest::Layout {
        device: 0,
        kind,
        detail: None,
    }) else {
        panic!()
    };
    // Its three captured blocks, 6 MiB each, all drawn; its envelope is their segments.
    assert_eq!(pool.elements, 3);
    assert_eq!(pool.peak_bytes, 3 * (6 << 20));
    let frame = FrameRequest {
        kind,
        ..FrameRequest::first(0, 400, 200)
    };
    let TimelineAnswer::Frame(painted) = ask(TimelineRequest::Frame(frame)) else {
        panic!()
    };
    assert_eq!(painted.peak_bytes, 3 * (6 << 20));
    let TimelineAnswer::Element(Some(block)) = ask(TimelineRequest::Element {
        device: 0,
        kind,
        index: 0,
    }) else {
        panic!()
    };
    assert_eq!(block.kind, kind);
    let reason = block.role.expect("a block's role");
    assert_eq!(reason.role, Role::CudaGraph);
    assert!(matches!(
        reason.basis,
        memsight_core::analysis::categories::Basis::Pool { pool: (1, 0), .. }
            | memsight_core::analysis::categories::Basis::Site { .. }
    ));
    // Past the last pool, a clear refusal.
    let refused = session.answer(
        Request::Timeline(TimelineRequest::Layout {
            device: 0,
            kind: TimelineKind::Pool(7),
            detail: None,
        }),
        &|| 0.0,
    );
    assert!(matches!(
        refused,
        Err(memsight_core::service::ViewError::NoSuchPool { device: 0, pool: 7 })
    ));
}
