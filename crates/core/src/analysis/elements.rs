//! What a timeline stacks, in stack order (bottom first): allocations or segments, each with
//! a size and the states it is alive in.
//!
//! Stack order is allocation order. Elements that existed before the trace window come first:
//! those alive at the end at the very bottom, then those freed during the trace with the
//! earliest free on top, so that freeing them slides nothing (as memory_viz orders them).
//! Allocations are not copied: [`AllocationElements`] maps stack positions onto the replay's
//! [`Allocation`] records. Segments are few, so [`SegmentElements`] owns its records; so does
//! [`PoolElements`], a private pool's allocations with the pool's curves.

use super::moment::state_after;
use rustc_hash::FxHashMap;

use super::pools::DevicePools;
use crate::analysis::{Allocation, Allocations, DeviceFacts, Origin, NO_ROW};
use crate::model::{Action, Device, StackId, NO_STACK};

/// "Not freed within the trace": the end state of an element alive at the end.
pub const ALIVE: u32 = u32::MAX;

/// A list of stacked elements, indexed by stack position.
pub trait Elements {
    fn count(&self) -> u32;
    fn size(&self, i: u32) -> u64;
    /// First state the element is alive in.
    fn start(&self, i: u32) -> u32;
    /// First state it is no longer alive in, or [`ALIVE`].
    fn end(&self, i: u32) -> u32;
}

/// The replay's allocations in stack order.
pub struct AllocationElements<'a> {
    allocations: &'a Allocations,
    live_blocks: u32,
    freed_before: u32,
}

impl<'a> AllocationElements<'a> {
    pub fn new(facts: &'a DeviceFacts) -> Self {
        AllocationElements {
            allocations: &facts.allocations,
            live_blocks: facts.live_blocks_without_alloc as u32,
            freed_before: facts.frees_without_alloc as u32,
        }
    }

    /// Index into `DeviceFacts::allocations` of the element at stack position `i`. The replay
    /// lists live blocks, then frees without alloc in trace order, then trace allocations;
    /// stack order only reverses the middle part.
    pub fn allocation_index(&self, i: u32) -> usize {
        let (l, f) = (self.live_blocks, self.freed_before);
        if i >= l && i < l + f {
            (l + f - 1 - (i - l)) as usize
        } else {
            i as usize
        }
    }

    /// Stack position of `DeviceFacts::allocations.at(index)` (the mapping is its own inverse).
    pub fn position(&self, index: usize) -> u32 {
        self.allocation_index(index as u32) as u32
    }

    pub fn allocation(&self, i: u32) -> Allocation {
        self.allocations.at(self.allocation_index(i))
    }
}

impl Elements for AllocationElements<'_> {
    fn count(&self) -> u32 {
        self.allocations.len() as u32
    }
    fn size(&self, i: u32) -> u64 {
        self.allocations.size(self.allocation_index(i))
    }
    fn start(&self, i: u32) -> u32 {
        let a = self.allocation(i);
        if a.origin() == Origin::Trace {
            state_after(a.alloc_row)
        } else {
            0
        }
    }
    fn end(&self, i: u32) -> u32 {
        state_after(self.allocation(i).free_row)
    }
}

/// The allocations of one private pool in stack order, with the pool's allocated and
/// reserved bytes over the trace as step curves (`(row, bytes after it)`).
#[derive(Clone, Debug, PartialEq)]
pub struct PoolElements {
    /// Index into `DeviceFacts::allocations` of each element.
    pub members: Vec<u32>,
    sizes: Vec<u64>,
    starts: Vec<u32>,
    ends: Vec<u32>,
    /// Allocated bytes of the pool before the first row, and at each change.
    pub allocated_baseline: u64,
    pub allocated: Vec<(u32, u64)>,
    /// Its reserved bytes (its segments), likewise.
    pub reserved_baseline: u64,
    pub reserved: Vec<(u32, u64)>,
}

impl PoolElements {
    /// Pool `pool` of `pools`, whose allocations are `facts`'s.
    pub fn build(facts: &DeviceFacts, pools: &DevicePools, pool: u16) -> Option<Self> {
        let private = pools.pools.get(pool as usize)?;
        let stack = AllocationElements::new(facts);
        let mut members: Vec<u32> = pools
            .members
            .iter()
            .filter(|&&(_, p)| p == pool)
            .map(|&(i, _)| i)
            .collect();
        members.sort_by_key(|&i| stack.position(i as usize));
        let (mut sizes, mut starts, mut ends) = (Vec::new(), Vec::new(), Vec::new());
        let mut changes: Vec<(u32, i64)> = Vec::new();
        for &i in &members {
            let a = facts.allocations.at(i as usize);
            let (start, end) = a.alive_states();
            sizes.push(a.size);
            starts.push(start);
            ends.push(end);
            changes.push((start, a.size as i64));
            if end != ALIVE {
                changes.push((end, -(a.size as i64)));
            }
        }
        changes.sort_unstable_by_key(|&(state, delta)| (state, delta > 0));
        let (allocated_baseline, allocated) = steps(changes.into_iter());
        let (reserved_baseline, reserved) = steps(
            private
                .reserved
                .windows(2)
                .map(|w| (w[1].0, w[1].1 as i64 - w[0].1 as i64))
                .chain(private.reserved.first().map(|&(s, b)| (s, b as i64))),
        );
        Some(PoolElements {
            members,
            sizes,
            starts,
            ends,
            allocated_baseline,
            allocated,
            reserved_baseline,
            reserved,
        })
    }

    /// The element of allocation `index`, if it is in the pool.
    pub fn element_of(&self, index: usize) -> Option<u32> {
        self.members
            .iter()
            .position(|&m| m as usize == index)
            .map(|k| k as u32)
    }
}

/// State changes `(state, delta)` as a step curve: the value at state 0 and `(row, value
/// after it)` at each later state (state `s` is after row `s - 1`).
fn steps(changes: impl Iterator<Item = (u32, i64)>) -> (u64, Vec<(u32, u64)>) {
    let mut changes: Vec<(u32, i64)> = changes.collect();
    changes.sort_by_key(|&(state, delta)| (state, delta > 0));
    let (mut value, mut baseline) = (0i64, 0u64);
    let mut out: Vec<(u32, u64)> = Vec::new();
    for (state, delta) in changes {
        value += delta;
        let v = value.max(0) as u64;
        match state.checked_sub(1) {
            None => baseline = v,
            Some(row) => match out.last_mut() {
                Some(last) if last.0 == row => last.1 = v,
                _ => out.push((row, v)),
            },
        }
    }
    (baseline, out)
}

impl Elements for PoolElements {
    fn count(&self) -> u32 {
        self.members.len() as u32
    }
    fn size(&self, i: u32) -> u64 {
        self.sizes[i as usize]
    }
    fn start(&self, i: u32) -> u32 {
        self.starts[i as usize]
    }
    fn end(&self, i: u32) -> u32 {
        self.ends[i as usize]
    }
}

/// One segment (or, with expandable segments, one mapped range) and its lifetime.
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentElement {
    pub addr: u64,
    pub size: u64,
    pub stream: u16,
    /// Row of its `segment_alloc`/`segment_map`, or [`NO_ROW`] when it predates the trace.
    pub alloc_row: u32,
    /// Row of its `segment_free`/`segment_unmap`, or [`NO_ROW`] when alive at the end.
    pub free_row: u32,
    pub stack: StackId,
    pub origin: Origin,
}

/// The device's segments in stack order, paired from the trace and the final segments.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SegmentElements {
    pub items: Vec<SegmentElement>,
}

impl SegmentElements {
    /// Pairs segment events by address; a free or unmap of part of a range ends it and starts
    /// what remains mapped as new ranges. The elements add up to the replay's reserved curve:
    /// whatever the trace and the final segments leave unexplained before the window becomes
    /// one baseline element with no address.
    pub fn build(device: &Device, facts: &DeviceFacts) -> Self {
        let trace = &device.trace;
        let mut in_trace: Vec<SegmentElement> = Vec::new();
        let mut freed_before: Vec<SegmentElement> = Vec::new();
        let mut open: FxHashMap<u64, usize> = FxHashMap::default();
        for &(row, _) in &facts.reserved_changes {
            let r = row as usize;
            let (addr, size) = (trace.addr[r], trace.size[r]);
            match trace.action[r] {
                Action::SegmentAlloc | Action::SegmentMap => {
                    if let Some(prev) = open.insert(addr, in_trace.len()) {
                        in_trace[prev].free_row = row;
                    }
                    in_trace.push(SegmentElement {
                        addr,
                        size,
                        stream: trace.stream[r],
                        alloc_row: row,
                        free_row: NO_ROW,
                        stack: trace.stack[r],
                        origin: Origin::Trace,
                    });
                }
                _ => {
                    // The open range this free covers: one starting at its address, else one
                    // containing it (expandable segments unmap parts of what they mapped).
                    let covering = open.get(&addr).copied().or_else(|| {
                        open.values().copied().find(|&i| {
                            let e = &in_trace[i];
                            e.addr < addr && addr < e.addr + e.size
                        })
                    });
                    match covering {
                        Some(i) => {
                            let whole = in_trace[i].clone();
                            open.remove(&whole.addr);
                            in_trace[i].free_row = row;
                            // What stays mapped on either side lives on as new ranges.
                            let end = addr.saturating_add(size);
                            let pieces = [
                                (whole.addr, addr.saturating_sub(whole.addr)),
                                (end, (whole.addr + whole.size).saturating_sub(end)),
                            ];
                            for (piece_addr, piece_size) in pieces {
                                if piece_size > 0 {
                                    open.insert(piece_addr, in_trace.len());
                                    in_trace.push(SegmentElement {
                                        addr: piece_addr,
                                        size: piece_size,
                                        alloc_row: row,
                                        free_row: NO_ROW,
                                        ..whole.clone()
                                    });
                                }
                            }
                        }
                        None => freed_before.push(SegmentElement {
                            addr,
                            size,
                            stream: trace.stream[r],
                            alloc_row: NO_ROW,
                            free_row: row,
                            stack: trace.stack[r],
                            origin: Origin::FreedBeforeAlloc,
                        }),
                    }
                }
            }
        }
        // What the final segments hold beyond the ranges the trace left mapped was there from
        // the start.
        let mut live: Vec<SegmentElement> = device
            .segments
            .iter()
            .filter_map(|s| {
                let end = s.address.saturating_add(s.total_size);
                let mapped_in_trace: u64 = open
                    .values()
                    .map(|&i| &in_trace[i])
                    .filter(|e| s.address <= e.addr && e.addr < end)
                    .map(|e| e.size)
                    .sum();
                let before = s.total_size.saturating_sub(mapped_in_trace);
                (before > 0).then(|| SegmentElement {
                    addr: s.address,
                    size: before,
                    stream: s.stream.min(u16::MAX as u64) as u16,
                    alloc_row: NO_ROW,
                    free_row: NO_ROW,
                    stack: s.stack,
                    origin: Origin::LiveBlock,
                })
            })
            .collect();
        let explained: u64 = live.iter().chain(&freed_before).map(|s| s.size).sum();
        if facts.baseline_reserved > explained {
            live.insert(
                0,
                SegmentElement {
                    addr: 0,
                    size: facts.baseline_reserved - explained,
                    stream: 0,
                    alloc_row: NO_ROW,
                    free_row: NO_ROW,
                    stack: NO_STACK,
                    origin: Origin::LiveBlock,
                },
            );
        }
        freed_before.reverse();
        let mut items = live;
        items.extend(freed_before);
        items.extend(in_trace);
        SegmentElements { items }
    }
}

impl Elements for SegmentElements {
    fn count(&self) -> u32 {
        self.items.len() as u32
    }
    fn size(&self, i: u32) -> u64 {
        self.items[i as usize].size
    }
    fn start(&self, i: u32) -> u32 {
        let s = &self.items[i as usize];
        if s.origin == Origin::Trace {
            state_after(s.alloc_row)
        } else {
            0
        }
    }
    fn end(&self, i: u32) -> u32 {
        state_after(self.items[i as usize].free_row)
    }
}

/// Either kind of elements, so one code path serves both timelines.
pub enum AnyElements<'a> {
    Allocations(AllocationElements<'a>),
    Segments(&'a SegmentElements),
    Pool(&'a PoolElements),
}

impl Elements for AnyElements<'_> {
    fn count(&self) -> u32 {
        match self {
            AnyElements::Allocations(e) => e.count(),
            AnyElements::Segments(e) => e.count(),
            AnyElements::Pool(e) => e.count(),
        }
    }
    fn size(&self, i: u32) -> u64 {
        match self {
            AnyElements::Allocations(e) => e.size(i),
            AnyElements::Segments(e) => e.size(i),
            AnyElements::Pool(e) => e.size(i),
        }
    }
    fn start(&self, i: u32) -> u32 {
        match self {
            AnyElements::Allocations(e) => e.start(i),
            AnyElements::Segments(e) => e.start(i),
            AnyElements::Pool(e) => e.start(i),
        }
    }
    fn end(&self, i: u32) -> u32 {
        match self {
            AnyElements::Allocations(e) => e.end(i),
            AnyElements::Segments(e) => e.end(i),
            AnyElements::Pool(e) => e.end(i),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::replay::replay;
    use crate::analysis::test_traces::device;

    #[test]
    fn pre_window_allocations_sit_below_with_the_earliest_free_on_top() {
        let d = device(&[
            (Action::Alloc, 0x100, 10),
            (Action::FreeCompleted, 0xa, 1), // freed first: on top of the baseline
            (Action::FreeCompleted, 0xb, 2),
            (Action::FreeCompleted, 0x100, 10),
        ]);
        let facts = replay(&d);
        let e = AllocationElements::new(&facts);
        assert_eq!(e.count(), 3);
        let order: Vec<u64> = (0..3).map(|i| e.allocation(i).addr).collect();
        assert_eq!(order, vec![0xb, 0xa, 0x100]);
        assert_eq!((e.start(0), e.end(0)), (0, 3));
        assert_eq!((e.start(1), e.end(1)), (0, 2));
        assert_eq!((e.start(2), e.end(2)), (1, 4));
        for i in 0..3 {
            assert_eq!(e.position(e.allocation_index(i)), i);
        }
    }

    #[test]
    fn mapped_ranges_pair_by_address_and_size_and_partial_unmaps_stay_consistent() {
        // Expandable segments: two ranges mapped, one unmapped whole, then a partial unmap of
        // the other (a different size at the same address) which cannot be paired.
        let d = device(&[
            (Action::SegmentMap, 0x1000, 20),
            (Action::SegmentMap, 0x2000, 40),
            (Action::SegmentUnmap, 0x1000, 20),
            (Action::SegmentUnmap, 0x2000, 10),
        ]);
        let facts = replay(&d);
        let s = SegmentElements::build(&d, &facts);
        let first = s.items.iter().find(|e| e.addr == 0x1000).unwrap();
        assert_eq!((first.alloc_row, first.free_row), (0, 2));
        for state in 0..=4u32 {
            let total: u64 = (0..s.count())
                .filter(|&i| s.start(i) <= state && state < s.end(i))
                .map(|i| s.size(i))
                .sum();
            assert_eq!(
                total,
                facts.reserved_after(state.checked_sub(1)),
                "state {state}"
            );
        }
    }

    #[test]
    fn segments_pair_by_address_and_add_up_to_reserved() {
        let d = device(&[
            (Action::SegmentAlloc, 0x1000, 100),
            (Action::SegmentFree, 0x9000, 50), // predates the trace
            (Action::SegmentFree, 0x1000, 100),
        ]);
        let facts = replay(&d);
        let s = SegmentElements::build(&d, &facts);
        let sizes: Vec<u64> = s.items.iter().map(|e| e.size).collect();
        assert_eq!(sizes, vec![50, 100]);
        for state in 0..=3u32 {
            let total: u64 = (0..s.count())
                .filter(|&i| s.start(i) <= state && state < s.end(i))
                .map(|i| s.size(i))
                .sum();
            let expected = facts.reserved_after(state.checked_sub(1));
            assert_eq!(total, expected, "state {state}");
        }
    }
}
