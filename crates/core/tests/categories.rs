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
