//! The allocator's memory at any state, on every real snapshot: the last state is the final
//! segments exactly; the indexed answer equals a walk from the end at states spread over the
//! trace and at the peak; where every event was applied, the requested bytes follow the
//! replay's allocated curve and the segments its reserved curve; PyTorch's rules predict the
//! size of every final block allocated within the trace.

mod common;

use common::*;
use memsight_core::analysis::allocator::{AllocatorHistory, AllocatorState, BlockKind};
use memsight_core::analysis::{Analysed, DeviceFacts};
use memsight_core::model::{BlockState, Device};

/// The final segments' blocks as (address, size, state).
fn final_blocks(device: &Device) -> Vec<(u64, u64, BlockState)> {
    device
        .blocks
        .iter()
        .map(|b| (b.address, b.size, b.state))
        .collect()
}

fn answer_blocks(state: &AllocatorState) -> Vec<(u64, u64, BlockState)> {
    state
        .segments
        .iter()
        .flat_map(|s| &s.blocks)
        .map(|b| {
            let kind = match b.kind {
                BlockKind::Allocated => BlockState::ActiveAllocated,
                BlockKind::PendingFree => BlockState::ActivePendingFree,
                BlockKind::CachedFree => BlockState::Inactive,
            };
            (b.address, b.size, kind)
        })
        .collect()
}

/// States to check: 50 spread over the trace, both ends, and the allocated peak.
fn states(facts: &DeviceFacts, last: u32) -> Vec<u32> {
    let mut states: Vec<u32> = (0..=50).map(|i| (last as u64 * i / 50) as u32).collect();
    states.extend(facts.peak_allocated.row.map(|r| r + 1));
    states.sort_unstable();
    states.dedup();
    states
}

fn check_device(name: &str, analysed: &Analysed, position: usize) -> String {
    let device = &analysed.snapshot.devices[position];
    let facts = &analysed.facts[position];
    let history = AllocatorHistory::new(&analysed.snapshot, device, facts);
    let last = history.last_state();
    let context = format!("{name} device {}", device.id);
    let end = history.state_at(facts, last);
    assert_eq!(
        answer_blocks(&end),
        final_blocks(device),
        "{context}: the last state is the final segments"
    );
    let segments: Vec<(u64, u64)> = end.segments.iter().map(|s| (s.address, s.size)).collect();
    let expected: Vec<(u64, u64)> = {
        let mut v: Vec<(u64, u64)> = device
            .segments
            .iter()
            .map(|s| (s.address, s.total_size))
            .collect();
        v.sort_unstable();
        v
    };
    assert_eq!(segments, expected, "{context}: final segments");
    assert_eq!(history.block_sizes().len(), facts.allocations.len());
    for (allocation, &size) in facts.allocations.iter().zip(history.block_sizes()) {
        if allocation.is_alive_at_end() {
            if let Some(block) = device.blocks.iter().find(|b| b.address == allocation.addr) {
                assert_eq!(
                    size, block.size,
                    "{context}: block size of a live allocation"
                );
            }
        }
    }
    let unreconciled = history.unreconciled();
    let mut curve_mismatches = 0;
    for state in states(facts, last) {
        let answer = history.state_at(facts, state);
        assert_eq!(
            answer,
            history.replayed_state_at(&analysed.snapshot, device, facts, state),
            "{context}: state {state} indexed and walked"
        );
        let mut summary = answer.clone();
        summary.segments.iter_mut().for_each(|s| s.blocks.clear());
        assert_eq!(
            history.summary_at(facts, state),
            summary,
            "{context}: summary at {state}"
        );
        let reserved = facts.reserved_after(state.checked_sub(1));
        let requested = facts.allocated_at(state);
        if unreconciled.total() == 0 {
            assert_eq!(
                answer.totals.requested, requested,
                "{context}: requested at state {state}"
            );
            assert_eq!(
                answer.totals.reserved, reserved,
                "{context}: reserved at state {state}"
            );
        } else if answer.totals.requested != requested || answer.totals.reserved != reserved {
            curve_mismatches += 1;
        }
    }
    // The rules predicted every final block on the real corpus: keep it that way.
    let sizes = history.size_check();
    assert_eq!(
        sizes.predicted, sizes.alive_at_end,
        "{context}: predicted block sizes"
    );
    format!(
        "{context}: {last} events, {} allocations, unreconciled {} {unreconciled:?}, states off the curves: {curve_mismatches}, final block sizes predicted {}/{}",
        facts.allocations.len(),
        unreconciled.total(),
        sizes.predicted,
        sizes.alive_at_end,
    )
}

#[test]
fn every_real_snapshot_reconstructs_to_its_final_segments() {
    let files = real_fixture_files();
    if files.is_empty() {
        eprintln!("skipping: no real fixtures");
        return;
    }
    for path in files {
        let name = file_name(&path);
        let snapshot = decode_file(&path).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let analysed = Analysed::new(snapshot);
        for position in 0..analysed.snapshot.devices.len() {
            eprintln!("{}", check_device(&name, &analysed, position));
        }
    }
}
