//! Runs of vLLM's v0 engine at v0.6.3 (`LLM(...)` offline, one GPU, CUDA graphs on), stacks
//! from its released sources: the weights made under the loader, the profile run's forward,
//! the KV cache, CUDA graph capture (static inputs, block tables, warm-up forwards, captured
//! intermediates in the graph's private pool), then prefill and decode steps.

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
            py("vllm/engine/llm_engine.py", llm_engine_line, "_initialize_kv_caches"),
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
            py("vllm/model_executor/layers/linear.py", 122, "create_weights"),
            py("vllm/model_executor/layers/linear.py", 304, "__init__"),
            py("vllm/model_executor/layers/linear.py", module_line, "__init__"),
            py("vllm/model_executor/models/llama.py", layer_line, "__init__"),
            py("vllm/model_executor/models/llama.py", 215, "__init__"),
            py("vllm/model_executor/models/llama.py", 305, "<lambda>"),
            py("vllm/model_executor/models/utils.py", 408, "make_layers"),
            py("vllm/model_executor/models/llama.py", 303, "__init__"),
            py("vllm/model_executor/models/llama.py", 513, "__init__"),
            py("vllm/model_executor/model_loader/loader.py", 160, "build_model"),
            py("vllm/model_executor/model_loader/loader.py", 175, "_initialize_model"),
            py("vllm/model_executor/model_loader/loader.py", 398, "load_model"),
            py("vllm/model_executor/model_loader/__init__.py", 19, "get_model"),
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
            py("vllm/model_executor/model_loader/loader.py", 160, "build_model"),
            py("vllm/model_executor/model_loader/loader.py", 175, "_initialize_model"),
            py("vllm/model_executor/model_loader/loader.py", 398, "load_model"),
            py("vllm/model_executor/model_loader/__init__.py", 19, "get_model"),
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
            py("vllm/worker/worker.py", 223, "determine_num_available_blocks"),
            py("vllm/executor/gpu_executor.py", 114, "determine_num_available_blocks"),
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
                    py("vllm/worker/model_runner.py", 1200, "_prepare_model_input_tensors"),
                    py("vllm/worker/model_runner.py", 1593, "prepare_model_input"),
                    py("vllm/worker/worker_base.py", 253, "_get_driver_input_and_broadcast"),
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
            assert!(score.right_share() >= 0.99, "{}: {}", cut.name, score.explain());
        }
    }
}
