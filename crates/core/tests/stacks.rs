//! Stack analysis on the stacks of real snapshots: frame classes, and what names each
//! allocation (the user's code first; the autograd node, the optimizer or the ATen op when the
//! stack has none; never the allocator).

mod common;

use std::collections::BTreeMap;

use common::*;
use memsight_core::analysis::stacks::{classify, stack_text, FrameClass};
use memsight_core::analysis::Analysed;
use memsight_core::model::NO_STACK;

/// A CS336 full training step recorded with C++ stacks: forward, backward and optimizer.
const FULL_STEP: &str =
    "kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_fullstep_.pickle";

#[test]
fn every_allocation_of_every_real_snapshot_is_named_by_code_not_by_the_allocator() {
    let files = real_fixture_files();
    if files.is_empty() {
        return;
    }
    let mut named = 0;
    for path in files {
        let Ok(snapshot) = decode_file(&path) else {
            continue;
        };
        let analysed = Analysed::new(snapshot);
        let snapshot = &analysed.snapshot;
        for facts in &analysed.facts {
            for a in facts.allocations.iter().filter(|a| a.stack != NO_STACK) {
                let text = stack_text(snapshot, a.stack, true);
                let user = text
                    .frames
                    .iter()
                    .find(|f| f.class == FrameClass::UserPython)
                    .map(|f| format!("{}:{}:{}", f.filename, f.line, f.name));
                assert_eq!(text.top_frame_is_user, user.is_some());
                if let Some(user) = user {
                    assert_eq!(text.top_frame.as_ref(), Some(&user));
                }
                if let Some(top) = &text.top_frame {
                    named += 1;
                    for machinery in ["CUDACachingAllocator", "empty_cuda", "_PyEval", "unwind"] {
                        assert!(
                            !top.contains(machinery),
                            "{}: named {top}",
                            file_name(&path)
                        );
                    }
                }
            }
        }
    }
    assert!(named > 10_000, "only {named} allocations named");
}

#[test]
fn backward_allocations_without_python_frames_are_named_by_their_autograd_node() {
    let Some(dir) = real_fixtures_dir() else {
        return;
    };
    let path = dir.join(FULL_STEP);
    if !path.exists() {
        eprintln!("skipping: {FULL_STEP} not found");
        return;
    }
    let analysed = Analysed::new(decode_file(&path).unwrap());
    let snapshot = &analysed.snapshot;
    let mut names: BTreeMap<String, u32> = BTreeMap::new();
    let mut without_user = 0;
    for a in analysed.facts[0]
        .allocations
        .iter()
        .filter(|a| a.stack != NO_STACK)
    {
        let text = stack_text(snapshot, a.stack, false);
        if !text.top_frame_is_user {
            without_user += 1;
            *names.entry(text.top_frame.unwrap_or_default()).or_default() += 1;
        }
    }
    // About a third of the step's allocations come from the autograd engine's thread.
    assert!(without_user > 1000, "{without_user}");
    // Named by an autograd node (`BmmBackward0`, `CopySlices`) or the engine's own step.
    let backward: u32 = names
        .iter()
        .filter(|(name, _)| !name.starts_with("aten::") && !name.contains(".py:"))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(
        backward, without_user,
        "every allocation of the autograd engine is named by it: {names:?}"
    );
    assert!(
        names.keys().any(|n| n.starts_with("autograd ")),
        "{names:?}"
    );
    for expected in ["BmmBackward0", "MulBackward0", "SelectBackward0"] {
        assert!(
            names.contains_key(expected),
            "{expected} missing: {names:?}"
        );
    }
    assert!(
        !names.contains_key(""),
        "an allocation without a name: {names:?}"
    );
}

#[test]
fn real_frames_fall_into_the_expected_classes() {
    let Some(dir) = real_fixtures_dir() else {
        return;
    };
    let path = dir.join(FULL_STEP);
    if !path.exists() {
        return;
    }
    let snapshot = decode_file(&path).unwrap();
    let mut seen: BTreeMap<&str, u32> = BTreeMap::new();
    for frame in &snapshot.frames {
        let (file, name) = (snapshot.str(frame.filename), snapshot.str(frame.name));
        let class = classify(file, name);
        let expected = if name.starts_with("_PyEval_EvalFrameDefault") {
            Some(FrameClass::Noise)
        } else if name.starts_with("method_vectorcall") || name == "slot_tp_call" {
            Some(FrameClass::Interpreter)
        } else if file.ends_with(".py") && file.contains("/site-packages/torch/") {
            Some(FrameClass::LibraryPython)
        } else if file.ends_with("cs336_basics/transformer.py") {
            Some(FrameClass::UserPython)
        } else if name.starts_with("torch::autograd::generated::") {
            Some(FrameClass::Native)
        } else {
            None
        };
        if let Some(expected) = expected {
            assert_eq!(class, expected, "{file}:{name}");
            *seen.entry(format!("{expected:?}").leak()).or_default() += 1;
        }
    }
    assert_eq!(
        seen.len(),
        5,
        "every class checked on real frames: {seen:?}"
    );
}
