//! The walks over one device's trace that reconstruct the allocator's memory.
//!
//! Only the final segments are known exactly, so the authoritative walk starts there and
//! undoes the trace row by row back to the first state. Undoing a `free_completed` puts the
//! block back, and its size is not in the trace; it comes from two earlier walks: one
//! backwards that estimates each block from the free memory around it when it is put back
//! (which also yields the memory before the first row), then one forwards from that first
//! state, which sizes each block as PyTorch did when it was allocated (rounding, and splitting
//! the free block it came from only when the remainder is worth keeping). Rows pair with
//! allocations as the replay paired them ([`crate::analysis::replay`]). Nothing here answers
//! queries ([`super::AllocatorHistory`]).

use super::heap::{BlockSize, Heap, Log, SegmentInfo};
use super::rules::{SizeRules, SMALL_SEGMENT};
use super::{Misfit, SegmentPool, SizeCheck, Unreconciled};
use crate::analysis::moment::state_after;
use crate::analysis::{DeviceFacts, Origin, NO_ROW};
use crate::model::{Action, Device, SegmentType, Snapshot};

/// A device's trace with its allocations, ordered for walking in either direction.
pub(super) struct Walk<'a> {
    snapshot: &'a Snapshot,
    device: &'a Device,
    facts: &'a DeviceFacts,
    pub rules: SizeRules,
    /// Allocations that end in the trace, by the row they end at.
    by_end: Vec<u32>,
    /// The first allocation whose `alloc` is in the trace (the rest follow in row order).
    first_traced: usize,
}

/// Where a walk is between two rows: the next allocation to start and to end.
struct Cursor {
    start: usize,
    end: usize,
}

impl<'a> Walk<'a> {
    pub fn new(snapshot: &'a Snapshot, device: &'a Device, facts: &'a DeviceFacts) -> Self {
        let allocations = &facts.allocations;
        let mut by_end: Vec<u32> = (0..allocations.len() as u32)
            .filter(|&i| allocations.at(i as usize).free_row != NO_ROW)
            .collect();
        by_end.sort_by_key(|&i| allocations.at(i as usize).free_row);
        let first_traced = allocations.first_traced();
        let trace = &device.trace;
        let maps = (0..trace.len()).any(|r| trace.action[r] == Action::SegmentMap);
        let expandable = maps || device.segments.iter().any(|s| s.is_expandable);
        let rules = SizeRules::from_settings(snapshot.allocator_settings.as_ref(), expandable);
        Walk {
            snapshot,
            device,
            facts,
            rules,
            by_end,
            first_traced,
        }
    }

    pub fn rows(&self) -> u32 {
        self.device.trace.len() as u32
    }

    /// The memory at the end of the trace, as the final segments show it; every block that
    /// holds something is matched to its allocation. Sizes of those blocks go to `sizes`.
    fn final_heap(
        &self,
        log: Option<Log>,
        sizes: &mut [u64],
        unreconciled: &mut Unreconciled,
    ) -> Heap {
        let mut heap = Heap::new(self.rules.clone(), log);
        heap.boundary = self.rows() + 1;
        let alive = self.facts.alive_at_end_by_address();
        for segment in &self.device.segments {
            let info = SegmentInfo {
                stream: segment.stream,
                pool: match segment.segment_type {
                    SegmentType::Small => Some(SegmentPool::Small),
                    SegmentType::Large => Some(SegmentPool::Large),
                    SegmentType::Unknown => None,
                },
                pool_id: segment.pool_id,
                expandable: segment.is_expandable,
            };
            if let Err(misfit) = heap.add_segment(segment.address, segment.total_size, info) {
                unreconciled.count(misfit);
                continue;
            }
            let blocks =
                &self.device.blocks[segment.blocks.start as usize..segment.blocks.end as usize];
            for block in blocks.iter().filter(|b| b.state.is_allocated()) {
                let Some(&allocation) = alive.get(&block.address) else {
                    unreconciled.count(Misfit::BlockNotFound);
                    continue;
                };
                match heap.place_block(block.address, allocation, BlockSize::Known(block.size)) {
                    Ok(size) => sizes[allocation as usize] = size,
                    Err(misfit) => unreconciled.count(misfit),
                }
            }
        }
        heap
    }

    /// What a segment created by row `row` is: its stream and pool as the row says, its pool
    /// kind from its size (small-pool segments are always 2 MiB, large ones never are).
    fn row_segment(&self, row: usize, expandable: bool) -> SegmentInfo {
        let trace = &self.device.trace;
        let stream = self
            .snapshot
            .streams
            .get(trace.stream[row] as usize)
            .copied()
            .unwrap_or(0);
        let pool_id = trace
            .pool(row)
            .and_then(|p| self.snapshot.pools.get(p as usize).copied());
        let pool = (!expandable).then(|| {
            if trace.size[row] == SMALL_SEGMENT {
                SegmentPool::Small
            } else {
                SegmentPool::Large
            }
        });
        SegmentInfo {
            stream,
            pool,
            pool_id,
            expandable,
        }
    }

    /// Walks from the end back to state `stop` (0 for the whole trace), putting blocks back
    /// with the sizes in `sizes` (estimated by PyTorch's rules where 0) and writing back the
    /// sizes used. Logs presence when `log` is true.
    pub fn backwards(&self, sizes: &mut [u64], log: bool, stop: u32) -> (Heap, Unreconciled) {
        let allocations = &self.facts.allocations;
        let mut unreconciled = Unreconciled::default();
        let log = log.then(|| Log {
            blocks: vec![(0, 0); allocations.len()],
            segments: Vec::new(),
        });
        let mut heap = self.final_heap(log, sizes, &mut unreconciled);
        let trace = &self.device.trace;
        let mut at = Cursor {
            start: allocations.len(),
            end: self.by_end.len(),
        };
        for row in (stop as usize..trace.len()).rev() {
            heap.boundary = state_after(row as u32);
            // An `alloc` may also end an allocation whose free was lost (the replay closes it
            // there): undo the start first, then put the older block back.
            while at.start > self.first_traced
                && allocations.at(at.start - 1).alloc_row as usize >= row
            {
                at.start -= 1;
                let allocation = allocations.at(at.start);
                if allocation.alloc_row as usize == row {
                    if let Err(misfit) = heap.remove_block(allocation.addr, at.start as u32) {
                        unreconciled.count(misfit);
                    }
                }
            }
            while at.end > 0
                && allocations.at(self.by_end[at.end - 1] as usize).free_row as usize >= row
            {
                at.end -= 1;
                let id = self.by_end[at.end];
                let allocation = allocations.at(id as usize);
                if allocation.free_row as usize != row {
                    continue;
                }
                let size = match sizes[id as usize] {
                    0 => BlockSize::Rules {
                        requested: allocation.size,
                    },
                    known => BlockSize::Known(known),
                };
                match heap.place_block(allocation.addr, id, size) {
                    Ok(size) => sizes[id as usize] = size,
                    Err(misfit) => unreconciled.count(misfit),
                }
            }
            let (addr, size) = (trace.addr[row], trace.size[row]);
            let undone = match trace.action[row] {
                Action::SegmentAlloc => heap.remove_segment(addr, size),
                Action::SegmentFree => heap.add_segment(addr, size, self.row_segment(row, false)),
                Action::SegmentMap => heap.unmap_range(addr, size),
                Action::SegmentUnmap => heap.map_range(addr, size, self.row_segment(row, true)),
                _ => Ok(()),
            };
            if let Err(misfit) = undone {
                unreconciled.count(misfit);
            }
        }
        (heap, unreconciled)
    }

    /// Walks forwards from `first` (the memory before the first row), sizing each allocation's
    /// block by PyTorch's rules when it is allocated; returns the sizes (those of allocations it
    /// could not place are left as they were).
    pub fn forwards(&self, mut heap: Heap, sizes: &mut [u64]) {
        heap.log = None;
        let allocations = &self.facts.allocations;
        let trace = &self.device.trace;
        let mut at = Cursor {
            start: self.first_traced,
            end: 0,
        };
        for row in 0..trace.len() {
            while at.end < self.by_end.len()
                && allocations.at(self.by_end[at.end] as usize).free_row as usize <= row
            {
                let id = self.by_end[at.end];
                // A block the estimate could not place is not there to free.
                let _ = heap.remove_block(allocations.at(id as usize).addr, id);
                at.end += 1;
            }
            while at.start < allocations.len() && allocations.at(at.start).alloc_row as usize <= row
            {
                let allocation = allocations.at(at.start);
                let requested = allocation.size;
                if let Ok(size) = heap.place_block(
                    allocation.addr,
                    at.start as u32,
                    BlockSize::Rules { requested },
                ) {
                    sizes[at.start] = size;
                }
                at.start += 1;
            }
            let (addr, size) = (trace.addr[row], trace.size[row]);
            // Disagreements only leave sizes as the backward estimate had them.
            let _ = match trace.action[row] {
                Action::SegmentAlloc => heap.add_segment(addr, size, self.row_segment(row, false)),
                Action::SegmentFree => heap.remove_segment(addr, size),
                Action::SegmentMap => heap.map_range(addr, size, self.row_segment(row, true)),
                Action::SegmentUnmap => heap.unmap_range(addr, size),
                _ => Ok(()),
            };
        }
    }

    /// Every allocation's block size as the authoritative backward walk fitted it, with the
    /// walk's heap (at state 0, holding the log).
    pub fn reconstruct(&self) -> (Vec<u64>, Heap, Unreconciled, SizeCheck) {
        let mut sizes = self.estimated_sizes();
        let estimated = sizes.clone();
        let (heap, unreconciled) = self.backwards(&mut sizes, true, 0);
        // Blocks alive at the end took their sizes from the final segments: see how many of
        // those allocated within the trace the rules had predicted.
        let mut check = SizeCheck::default();
        let present_at_end = self.rows() + 1;
        for (i, allocation) in self.facts.allocations.iter().enumerate() {
            let at_end = heap
                .log
                .as_ref()
                .is_some_and(|log| log.blocks[i].1 == present_at_end);
            if allocation.origin() == Origin::Trace && at_end {
                check.alive_at_end += 1;
                check.predicted += u32::from(estimated[i] == sizes[i]);
            }
        }
        (sizes, heap, unreconciled, check)
    }

    /// The block sizes the authoritative walk starts from: estimated backwards, then sized
    /// forwards.
    pub fn estimated_sizes(&self) -> Vec<u64> {
        let mut sizes = vec![0u64; self.facts.allocations.len()];
        let (first, _) = self.backwards(&mut sizes, false, 0);
        self.forwards(first, &mut sizes);
        sizes
    }
}
