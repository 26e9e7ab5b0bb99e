//! A snapshot as PyTorch would have written it had recording started later: the trace of one
//! device cut at a row, what was alive there turned into memory from before the trace. The
//! truth the role inference is tested against: the roles of memory the cut hides must come
//! out as they do when the whole trace is seen.
//!
//! Two ways a trace starts late, as PyTorch writes them:
//! - **Late start** (`_record_memory_history()` called after the model was built): blocks
//!   allocated before recording carry no frames, and no profiler scope before it is recorded.
//! - **Wrapped** (`max_entries` reached: the ring buffer dropped the oldest entries): blocks
//!   keep the frames recorded when they were made, and the scopes are kept.
//!
//! Either way allocations freed after the cut keep only their `free_requested` and
//! `free_completed` entries (with the stack of the free), and those made and freed before it
//! are gone. Only the cut device changes. Not the place for reading the result (`analysis`).

use std::collections::HashSet;

use super::{Action, Snapshot, Trace, NO_STACK, NO_TIME};

/// How recording came to start late.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// Recording was turned on at the cut: blocks made before it carry no frames.
    LateStart,
    /// The ring buffer dropped the entries before the cut: blocks keep their frames.
    Wrapped,
}

/// `snapshot` with the trace of the device at `position` (in [`Snapshot::devices`]) starting
/// at row `row`.
pub fn cut_trace(snapshot: &Snapshot, position: usize, row: usize, how: Cut) -> Snapshot {
    let mut out = snapshot.clone();
    let device = &snapshot.devices[position];
    let trace = &device.trace;
    let row = row.min(trace.len());
    // Addresses of the allocations alive at the end that were made at or after the cut:
    // the others were made before it.
    let mut made_after: HashSet<u64> = HashSet::new();
    for r in row..trace.len() {
        match trace.action[r] {
            Action::Alloc => {
                made_after.insert(trace.addr[r]);
            }
            Action::FreeCompleted => {
                made_after.remove(&trace.addr[r]);
            }
            _ => {}
        }
    }
    let mut kept = Trace::default();
    for r in row..trace.len() {
        kept.push(trace.row(r));
    }
    for &(r, key, ref value) in &trace.extra {
        if r as usize >= row {
            kept.extra.push((r - row as u32, key, value.clone()));
        }
    }
    kept.finish();
    let target = &mut out.devices[position];
    target.trace = kept;
    if how == Cut::LateStart {
        for block in &mut target.blocks {
            if block.state.is_allocated() && !made_after.contains(&block.address) {
                block.stack = NO_STACK;
                for entry in &mut block.history {
                    entry.stack = NO_STACK;
                }
            }
        }
        let start = trace.time_us.get(row).copied().unwrap_or(NO_TIME);
        let id = device.id;
        if start != NO_TIME {
            out.annotations
                .retain(|a| a.device != id || a.time_us >= start);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{Analysed, Origin};
    use crate::model::{Block, BlockState, Device, Segment, TraceRow};

    #[test]
    fn what_was_alive_at_the_cut_is_from_before_the_trace() {
        let mut snapshot = Snapshot::default();
        let frame = snapshot.strings.intern("f");
        let id = snapshot.frames.len() as u32;
        snapshot.frames.push(crate::model::Frame {
            filename: frame,
            line: 1,
            name: frame,
            extra: Vec::new(),
        });
        let stack = snapshot.stacks.intern(&[id]);
        let mut trace = Trace::default();
        let mut push = |action, addr, size| {
            trace.push(TraceRow {
                addr,
                size,
                stack,
                ..TraceRow::new(action)
            })
        };
        // 0x100 lives throughout, 0x200 is freed after the cut, 0x300 before it, 0x400 is made
        // after it.
        push(Action::Alloc, 0x100, 16);
        push(Action::Alloc, 0x200, 32);
        push(Action::Alloc, 0x300, 64);
        push(Action::FreeRequested, 0x300, 64);
        push(Action::FreeCompleted, 0x300, 64);
        push(Action::Alloc, 0x400, 128);
        push(Action::FreeRequested, 0x200, 32);
        push(Action::FreeCompleted, 0x200, 32);
        trace.finish();
        let block = |address, size| Block {
            address,
            size,
            requested_size: Some(size),
            state: BlockState::ActiveAllocated,
            stack,
            ..Block::default()
        };
        snapshot.devices.push(Device {
            trace,
            segments: vec![Segment {
                address: 0x100,
                total_size: 0x400,
                blocks: 0..2,
                ..Segment::default()
            }],
            blocks: vec![block(0x100, 16), block(0x400, 128)],
            ..Device::default()
        });
        let late = Analysed::new(cut_trace(&snapshot, 0, 5, Cut::LateStart));
        let facts = &late.facts[0];
        let origins: Vec<(Origin, u64)> = facts
            .allocations
            .iter()
            .map(|a| (a.origin(), a.size))
            .collect();
        assert_eq!(
            origins,
            vec![
                (Origin::LiveBlock, 16),
                (Origin::FreedBeforeAlloc, 32),
                (Origin::Trace, 128)
            ]
        );
        assert_eq!(facts.baseline_allocated, 48);
        let blocks = &late.snapshot.devices[0].blocks;
        assert_eq!((blocks[0].stack, blocks[1].stack), (NO_STACK, stack));
        let wrapped = cut_trace(&snapshot, 0, 5, Cut::Wrapped);
        assert_eq!(wrapped.devices[0].blocks[0].stack, stack);
    }
}
