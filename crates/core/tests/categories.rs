//! Roles and components on real snapshots: every allocation gets one of each, the totals add up
//! to the allocated curve at any moment, and allocations whose role was read off their stacks
//! by hand get that role.

mod common;

use common::*;
use memsight_core::analysis::categories::rules::{CompiledRules, Rule, Rules};
use memsight_core::analysis::categories::{categorise, totals_at, Component, Role};
use memsight_core::analysis::Analysed;

fn analysed(name: &str) -> Option<Analysed> {
    let Some(dir) = real_fixtures_dir() else {
        eprintln!("skipped: the real fixtures are not beside the repository");
        return None;
    };
    Some(Analysed::new(decode_file(&dir.join(name)).expect(name)))
}

/// The allocated curve at `state`, as the replay computed it.
fn allocated_at(facts: &memsight_core::analysis::DeviceFacts, state: u32) -> u64 {
    match state {
        0 => facts.baseline_allocated,
        s => facts.allocated[s as usize - 1],
    }
}

#[test]
fn category_totals_add_up_to_live_bytes_on_every_fixture() {
    let mut files = real_fixture_files();
    if files.is_empty() {
        eprintln!("skipped: the real fixtures are not beside the repository");
    }
    files.extend(
        std::fs::read_dir(repo().join("tests/fixtures"))
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension()
                    .is_some_and(|x| x == "pickle" || x == "json" || x == "gz")
            }),
    );
    let rules = CompiledRules::none();
    for path in files {
        let Ok(snapshot) = decode_file(&path) else {
            continue;
        };
        let analysed = Analysed::new(snapshot);
        let categories = categorise(&analysed, &rules);
        for (d, facts) in analysed.facts.iter().enumerate() {
            let cats = &categories.devices[d];
            assert_eq!(cats.roles.len(), facts.allocations.len());
            assert_eq!(cats.components.len(), facts.allocations.len());
            let states = facts.allocated.len() as u32 + 1;
            let mut sampled: Vec<u32> = (0..20).map(|k| k * (states - 1) / 19).collect();
            sampled.extend(facts.peak_allocated.row.map(|r| r + 1));
            for state in sampled {
                let t = totals_at(facts, cats, state);
                let name = file_name(&path);
                assert_eq!(
                    t.roles.iter().sum::<u64>(),
                    t.live_bytes,
                    "{name} state {state}"
                );
                assert_eq!(
                    t.components.iter().sum::<u64>(),
                    t.live_bytes,
                    "{name} state {state}"
                );
                assert_eq!(
                    t.live_bytes,
                    allocated_at(facts, state),
                    "{name} state {state}"
                );
            }
        }
    }
}

/// `(trace row of the allocation's alloc, role)` read off its stack and lifetime.
fn check_labels(name: &str, labels: &[(u32, Role)]) {
    let Some(analysed) = analysed(name) else {
        return;
    };
    let categories = categorise(&analysed, &CompiledRules::none());
    let facts = &analysed.facts[0];
    for &(row, role) in labels {
        let i = facts
            .allocations
            .iter()
            .position(|a| a.alloc_row == row)
            .unwrap_or_else(|| panic!("{name}: an allocation at row {row}"));
        assert_eq!(categories.devices[0].roles[i], role, "{name}: row {row}");
    }
}

#[test]
fn a_full_training_step_splits_into_its_roles() {
    // CS336 full step, AdamW (annotated step and zero_grad), C++ stacks: forward under
    // `module.py:_call_impl`, backward on the engine's thread with no Python frame.
    check_labels(
        "kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_fullstep_.pickle",
        &[
            // A forward allocation freed well into the backward: saved for it.
            (518, Role::Activations),
            // Freed three rows later, inside the forward.
            (433, Role::ForwardTemporaries),
            // `…Backward0::apply`, freed four rows later.
            (5121, Role::BackwardTemporaries),
            // Made by the backward of a 25.6M-parameter weight and kept: its gradient.
            (5172, Role::Gradients),
            // The first optimizer step's `exp_avg` and `exp_avg_sq` of that weight, kept.
            (17176, Role::OptimizerState),
            (17178, Role::OptimizerState),
            // Made and freed inside the step.
            (17180, Role::OptimizerTemporaries),
        ],
    );
}

#[test]
fn a_forward_only_run_keeps_activations() {
    // A forward with autograd on and no backward: what the forward keeps is saved for a
    // backward that never comes.
    check_labels(
        "kkaitlyn111__cs336-a2-systems__memory_small_forward.pickle",
        &[(840, Role::Activations), (841, Role::Activations)],
    );
}

#[test]
fn a_mixed_precision_forward_has_no_annotations_and_still_has_phases() {
    check_labels(
        "kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_forward_mixed.pickle",
        &[
            (1, Role::Activations),
            (2, Role::Activations),
            (3, Role::ForwardTemporaries),
            (4, Role::ForwardTemporaries),
        ],
    );
}

#[test]
fn adamw_keeps_two_state_tensors_per_trained_weight() {
    let Some(analysed) =
        analysed("kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_fullstep_.pickle")
    else {
        return;
    };
    let categories = categorise(&analysed, &CompiledRules::none());
    let facts = &analysed.facts[0];
    let end = facts.allocated.len() as u32;
    let t = totals_at(facts, &categories.devices[0], end);
    let (state, grads) = (t.role(Role::OptimizerState), t.role(Role::Gradients));
    assert!(grads > 0 && state > 0);
    // fp32 weights and gradients: AdamW's state is twice the gradients' bytes.
    let ratio = state as f64 / grads as f64;
    assert!((1.9..=2.1).contains(&ratio), "state / gradients = {ratio}");
}

#[test]
fn rules_come_before_the_inference_and_move_totals() {
    let name = "kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_fullstep_.pickle";
    let Some(analysed) = analysed(name) else {
        return;
    };
    let facts = &analysed.facts[0];
    let peak = facts.peak_allocated.row.unwrap() + 1;
    let plain = categorise(&analysed, &CompiledRules::none());
    let before = totals_at(facts, &plain.devices[0], peak);
    let rules = Rules {
        rules: vec![Rule {
            name: None,
            pattern: "transformer.py".into(),
            regex: false,
            role: Some(Role::Workspace),
            component: Some(Component::Attention),
        }],
    };
    let ruled = categorise(&analysed, &rules.compile().unwrap());
    let after = totals_at(facts, &ruled.devices[0], peak);
    assert_eq!(after.live_bytes, before.live_bytes);
    assert!(after.role(Role::Workspace) > before.role(Role::Workspace));
    assert!(after.component(Component::Attention) >= before.component(Component::Attention));
    let moved = after.role(Role::Workspace) - before.role(Role::Workspace);
    let lost: u64 = Role::ALL
        .iter()
        .filter(|&&r| r != Role::Workspace)
        .map(|&r| before.role(r).saturating_sub(after.role(r)))
        .sum();
    assert_eq!(moved, lost);
}

/// A frame as the JSON snapshot writes it.
fn frame_json(file: &str, line: u32, name: &str) -> String {
    format!(r#"{{"filename":"{file}","line":{line},"name":"{name}"}}"#)
}

/// A step as PyTorch Lightning runs it: `optimizer.step(closure)`, the closure running the
/// forward (a DiT's blocks) and the backward inside Adam's `step`, all inside the profiler
/// scope `Optimizer.step#Adam.step`; then Adam's own state and temporaries. Recording started
/// after the model was built: its two weights are blocks without frames.
fn lightning_step() -> Vec<u8> {
    // Adam's step as Lightning calls it, outermost part of every stack of the step.
    let step = [
        frame_json("/env/site-packages/torch/optim/adam.py", 218, "step"),
        frame_json(
            "/env/site-packages/torch/optim/optimizer.py",
            493,
            "wrapper",
        ),
        frame_json(
            "/env/site-packages/lightning/pytorch/core/optimizer.py",
            154,
            "step",
        ),
        frame_json("/home/u/train.py", 40, "main"),
    ]
    .join(",");
    // The closure Adam's step runs.
    let outer = [
        frame_json(
            "/env/site-packages/lightning/pytorch/loops/optimization/automatic.py",
            146,
            "closure",
        ),
        frame_json(
            "/env/site-packages/lightning/pytorch/loops/optimization/automatic.py",
            137,
            "__call__",
        ),
        frame_json(
            "/env/site-packages/lightning/pytorch/plugins/precision/precision.py",
            122,
            "_wrap_closure",
        ),
        step.clone(),
    ]
    .join(",");
    let training_step = [
        frame_json("/home/u/dit/lit.py", 31, "training_step"),
        frame_json(
            "/env/site-packages/lightning/pytorch/strategies/strategy.py",
            390,
            "training_step",
        ),
        frame_json(
            "/env/site-packages/lightning/pytorch/loops/optimization/automatic.py",
            321,
            "_training_step",
        ),
    ]
    .join(",");
    let forward = format!(
        "[{},{},{},{training_step},{outer}]",
        frame_json("/home/u/dit/dit.py", 88, "forward"),
        frame_json(
            "/env/site-packages/torch/nn/modules/module.py",
            1750,
            "_call_impl"
        ),
        frame_json("/home/u/dit/dit.py", 200, "forward"),
    );
    // The DiT's own forward called directly by the training step, without `_call_impl`.
    let direct = format!(
        "[{},{training_step},{outer}]",
        frame_json("/home/u/dit/dit.py", 190, "forward")
    );
    let loss = format!(
        "[{},{training_step},{outer}]",
        frame_json(
            "/env/site-packages/torch/nn/functional.py",
            3479,
            "cross_entropy"
        )
    );
    let backward = format!(
        "[{},{},{outer}]",
        frame_json("??", 0, "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor>&&)"),
        frame_json("??", 0, "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&)"),
    );
    let adam = format!(
        "[{},{step}]",
        frame_json(
            "/env/site-packages/torch/optim/adam.py",
            560,
            "_multi_tensor_adam"
        )
    );
    let rows: Vec<(&str, u64, u64, &str)> = vec![
        ("alloc", 0x10000, 4096, &forward), // 0: saved for the backward
        ("alloc", 0x20000, 512, &forward),  // 1: a temporary of the forward
        ("free_completed", 0x20000, 512, &forward),
        ("alloc", 0x30000, 1024, &direct), // 3: made by the DiT's forward, saved
        ("alloc", 0x40000, 4, &loss),      // 4: the loss
        ("alloc", 0x50000, 1 << 20, &backward), // 5: the first weight's gradient
        ("alloc", 0x60000, 2 << 20, &backward), // 6: the second's
        ("free_completed", 0x10000, 4096, &backward),
        ("free_completed", 0x30000, 1024, &backward),
        ("alloc", 0x70000, 1 << 20, &adam), // 9: Adam's states of the first weight
        ("alloc", 0x80000, 1 << 20, &adam),
        ("alloc", 0x90000, 2 << 20, &adam), // 11: and of the second
        ("alloc", 0xa0000, 2 << 20, &adam),
        ("alloc", 0xb0000, 2 << 20, &adam), // 13: a temporary of the step
        ("free_completed", 0xb0000, 2 << 20, &adam),
    ];
    let trace: Vec<String> = rows
        .iter()
        .enumerate()
        .map(|(r, (action, addr, size, frames))| {
            format!(
                r#"{{"action":"{action}","addr":{addr},"size":{size},"stream":0,"time_us":{},"frames":{frames}}}"#,
                100 * (r + 1)
            )
        })
        .collect();
    // Blocks alive at the end: the weights (no frames), then every allocation alive.
    let mut blocks = vec![
        format!(
            r#"{{"address":{},"size":{},"requested_size":{},"state":"active_allocated","frames":[]}}"#,
            0x100000,
            1 << 20,
            1 << 20
        ),
        format!(
            r#"{{"address":{},"size":{},"requested_size":{},"state":"active_allocated","frames":[]}}"#,
            0x200000,
            2 << 20,
            2 << 20
        ),
    ];
    for (addr, size) in [
        (0x40000u64, 4u64),
        (0x50000, 1 << 20),
        (0x60000, 2 << 20),
        (0x70000, 1 << 20),
        (0x80000, 1 << 20),
        (0x90000, 2 << 20),
        (0xa0000, 2 << 20),
    ] {
        blocks.push(format!(
            r#"{{"address":{addr},"size":{},"requested_size":{size},"state":"active_allocated","frames":[]}}"#,
            size.max(512)
        ));
    }
    let segment = format!(
        r#"{{"device":0,"address":{},"total_size":{},"stream":0,"segment_type":"large","blocks":[{}]}}"#,
        0x10000,
        64 << 20,
        blocks.join(",")
    );
    let annotations = r#"{"name":"Optimizer.step#Adam.step","stage":"START","device":0,"time_us":50},{"name":"Optimizer.step#Adam.step","stage":"END","device":0,"time_us":2000}"#;
    format!(
        r#"{{"segments":[{segment}],"device_traces":[[{}]],"external_annotations":[{annotations}]}}"#,
        trace.join(",")
    )
    .into_bytes()
}

#[test]
fn an_optimizer_step_running_a_closure_runs_a_forward_and_a_backward() {
    let snapshot = memsight_core::decode::decode_bytes(&lightning_step()).unwrap();
    let analysed = Analysed::new(snapshot);
    let categories = categorise(&analysed, &CompiledRules::none());
    let facts = &analysed.facts[0];
    let cats = &categories.devices[0];
    let role_made_at = |row: u32| {
        let i = facts
            .allocations
            .iter()
            .position(|a| a.alloc_row == row)
            .unwrap();
        cats.roles[i]
    };
    use memsight_core::analysis::categories::signals::Phase;
    // The closure's forward, though the optimizer's scope holds it and its frames run
    // inside Adam's step.
    assert_eq!(cats.phases.phase[0], Phase::Forward);
    assert_eq!(role_made_at(0), Role::Activations);
    assert_eq!(role_made_at(1), Role::ForwardTemporaries);
    // A module's forward called directly, without `_call_impl`.
    assert_eq!(role_made_at(3), Role::Activations);
    // The loss, computed by the training step outside any module, continues the forward.
    assert_eq!(cats.phases.phase[4], Phase::Forward);
    assert_eq!(role_made_at(4), Role::Activations);
    assert_eq!(cats.phases.phase[5], Phase::Backward);
    assert_eq!(role_made_at(5), Role::Gradients);
    assert_eq!(role_made_at(6), Role::Gradients);
    // What Adam itself makes is the optimizer's.
    for row in 9..=12 {
        assert_eq!(role_made_at(row), Role::OptimizerState, "row {row}");
    }
    assert_eq!(role_made_at(13), Role::OptimizerTemporaries);
    // The weights from before recording pair with their gradients.
    let end = facts.allocated.len() as u32;
    let totals = totals_at(facts, cats, end);
    assert_eq!(totals.role(Role::Parameters), 3 << 20);
    assert_eq!(totals.inferred(Role::Parameters), 3 << 20);
    assert_eq!(totals.role(Role::OptimizerState), 6 << 20);
    assert_eq!(totals.inferred(Role::OptimizerState), 0);
    // Each with its reason.
    let rules = Rules::default();
    let mut explainer =
        memsight_core::analysis::categories::Explainer::new(&analysed, 0, cats, &rules);
    let weight = facts
        .allocations
        .iter()
        .position(|a| a.size == 2 << 20 && a.alloc_row == memsight_core::analysis::NO_ROW)
        .unwrap();
    let reason = memsight_core::format::breakdown::role_reason(&explainer.explain(weight));
    assert!(
        reason.contains("one of the 1 parameters of its size (2.00 MiB)")
            && reason.contains("event 6"),
        "{reason}"
    );
}

/// What users write on an allocation comes before what is inferred: an `annotate` entry
/// (PyTorch 2.14's `_annotate_tensor`, keyed to the base address, the latest naming a role
/// winning) and the metadata stamped when it was made (`_set_memory_metadata`); text that
/// is not a role (a module path) changes nothing.
#[test]
fn annotations_name_roles_before_the_inference() {
    let forward = format!(
        "[{},{}]",
        frame_json("/home/u/model.py", 12, "forward"),
        frame_json(
            "/env/site-packages/torch/nn/modules/module.py",
            1750,
            "_call_impl"
        )
    );
    let rows = [
        // 0: made in a forward, kept: an activation, but annotated as a parameter (twice:
        // the latest wins).
        ("alloc", 0x1000, 4096, &forward, ""),
        ("annotate", 0x1000, 0, &forward, "optimizer_state"),
        (
            "annotate",
            0x1000,
            0,
            &forward,
            "{\"role\": \"parameters\", \"layer\": 3}",
        ),
        // 3: stamped when it was made.
        ("alloc", 0x2000, 4096, &forward, "role:gradients"),
        // 4: a module path is no role.
        ("alloc", 0x3000, 4096, &forward, "layers.3.input_layernorm"),
        ("annotate", 0x3000, 0, &forward, "input_layernorm"),
    ];
    let trace: Vec<String> = rows
        .iter()
        .enumerate()
        .map(|(r, (action, addr, size, frames, meta))| {
            format!(
                r#"{{"action":"{action}","addr":{addr},"size":{size},"stream":0,"time_us":{},"frames":{frames},"user_metadata":{}}}"#,
                100 * (r + 1),
                serde_json::to_string(meta).unwrap()
            )
        })
        .collect();
    let json = format!(
        r#"{{"segments":[],"device_traces":[[{}]]}}"#,
        trace.join(",")
    );
    let analysed = Analysed::new(memsight_core::decode::decode_bytes(json.as_bytes()).unwrap());
    let categories = categorise(&analysed, &CompiledRules::none());
    let cats = &categories.devices[0];
    let role_made_at = |row: u32| {
        let facts = &analysed.facts[0];
        cats.roles[facts
            .allocations
            .iter()
            .position(|a| a.alloc_row == row)
            .unwrap()]
    };
    assert_eq!(role_made_at(0), Role::Parameters);
    assert_eq!(role_made_at(3), Role::Gradients);
    assert_eq!(role_made_at(4), Role::Activations);
    let rules = Rules::default();
    let mut explainer =
        memsight_core::analysis::categories::Explainer::new(&analysed, 0, cats, &rules);
    let reason = memsight_core::format::breakdown::role_reason(&explainer.explain(0));
    assert_eq!(
        reason,
        "annotated \u{201c}{\"role\": \"parameters\", \"layer\": 3}\u{201d} at event 2"
    );
}
