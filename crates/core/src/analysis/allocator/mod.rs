//! The caching allocator's memory at any moment of a device's trace: its segments, and inside
//! each segment the blocks laid end to end — allocated (with the allocation it holds), waiting
//! to be freed, or cached free — with totals of reserved, allocated, requested, rounding waste,
//! cached free memory and fragmentation.
//!
//! The final segments are the ground truth: the answer at the last state equals them exactly.
//! Earlier states come from undoing the trace from there (`walk`); block sizes the trace does
//! not record are estimated with PyTorch's rules ([`rules`]). Where the trace cannot be
//! reconciled with the segments (a wrapped ring buffer, lost events) the events that could not
//! be applied are counted ([`Unreconciled`]) and every answer stays well-formed: blocks never
//! overlap and never leave their segment. Any state is answered from an interval index
//! ([`AllocatorHistory::state_at`], or [`AllocatorHistory::summary_at`] for the totals alone)
//! without walking again. Not the place for choosing words, drawing, or which state to show.

mod heap;
pub mod rules;
mod stabbing;
mod walk;

use crate::analysis::moment::state_after;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::analysis::{DeviceFacts, NO_ROW};
use crate::model::{BlockState, Device, Snapshot};
use heap::{Heap, SegmentInfo, SegmentVersion};
use stabbing::StabbingIndex;
use walk::Walk;

/// Which of the allocator's pools a segment belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SegmentPool {
    /// Requests up to 1 MiB, packed in 2 MiB segments.
    Small,
    Large,
}

/// What a block holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    /// Handed out: between `alloc` and `free_requested`.
    Allocated,
    /// Freed by the program, waiting for other streams (between `free_requested` and
    /// `free_completed`).
    PendingFree,
    /// Cached free memory (an inactive block).
    CachedFree,
}

/// One block of a segment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockView {
    pub address: u64,
    pub size: u64,
    pub kind: BlockKind,
    /// Bytes the program asked for (0 for free memory); `size - requested` is rounding waste.
    pub requested: u64,
    /// Index into [`DeviceFacts::allocations`] of what the block holds (`None` when free).
    pub allocation: Option<u32>,
}

/// Sums over some blocks (one segment's, or all of a state's).
///
/// `allocated` counts every block holding an allocation, pending frees included, as the
/// replay's allocated curve does; `reserved = allocated + cached_free`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AllocatorTotals {
    pub segments: u32,
    pub blocks: u32,
    pub reserved: u64,
    /// Bytes of blocks holding an allocation.
    pub allocated: u64,
    /// Bytes requested by those allocations.
    pub requested: u64,
    /// `allocated - requested`: internal fragmentation.
    pub rounding_waste: u64,
    /// Bytes of blocks waiting for other streams before they are free (part of `allocated`).
    pub pending_free: u64,
    /// Bytes of cached free blocks.
    pub cached_free: u64,
    pub largest_free_block: u64,
    /// External fragmentation, `1 − largest_free_block / cached_free`: 0 when all free memory
    /// is one block (or there is none), close to 1 when it is scattered in many small blocks.
    /// Over a whole state, the largest block is the largest of any segment, though a block
    /// serves only requests of its own stream and pool.
    pub fragmentation: f64,
}

impl AllocatorTotals {
    fn add_block(&mut self, block: &BlockView) {
        self.blocks += 1;
        self.reserved += block.size;
        match block.kind {
            BlockKind::CachedFree => {
                self.cached_free += block.size;
                self.largest_free_block = self.largest_free_block.max(block.size);
            }
            kind => {
                self.allocated += block.size;
                self.requested += block.requested;
                if kind == BlockKind::PendingFree {
                    self.pending_free += block.size;
                }
            }
        }
    }

    fn add(&mut self, other: &AllocatorTotals) {
        self.segments += other.segments;
        self.blocks += other.blocks;
        self.reserved += other.reserved;
        self.allocated += other.allocated;
        self.requested += other.requested;
        self.pending_free += other.pending_free;
        self.cached_free += other.cached_free;
        self.largest_free_block = self.largest_free_block.max(other.largest_free_block);
    }

    fn finish(&mut self) {
        self.rounding_waste = self.allocated.saturating_sub(self.requested);
        self.fragmentation = if self.cached_free == 0 {
            0.0
        } else {
            1.0 - self.largest_free_block as f64 / self.cached_free as f64
        };
    }
}

/// One segment and its blocks, which cover it exactly, by address.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SegmentState {
    pub address: u64,
    pub size: u64,
    /// Raw `cudaStream_t`.
    pub stream: u64,
    /// Small or large pool, when known.
    pub pool: Option<SegmentPool>,
    /// `(owner, id)` of a private pool (`(0, 0)`: the default pools), when known.
    pub pool_id: Option<(i64, i64)>,
    pub expandable: bool,
    pub blocks: Vec<BlockView>,
    pub totals: AllocatorTotals,
}

/// The order segments are listed in: by address (how the allocator lays them out), or
/// largest first by size, cached free bytes or largest free block (where memory sits unused).
/// Ties go by address, so the order is the same on every answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SegmentOrder {
    #[default]
    Address,
    Size,
    CachedFree,
    LargestFree,
}

impl SegmentOrder {
    pub const ALL: [SegmentOrder; 4] = [
        SegmentOrder::Address,
        SegmentOrder::Size,
        SegmentOrder::CachedFree,
        SegmentOrder::LargestFree,
    ];

    /// The name the command line and the page use.
    pub fn key(self) -> &'static str {
        match self {
            SegmentOrder::Address => "address",
            SegmentOrder::Size => "size",
            SegmentOrder::CachedFree => "cached-free",
            SegmentOrder::LargestFree => "largest-free",
        }
    }

    /// Words for a picker.
    pub fn label(self) -> &'static str {
        match self {
            SegmentOrder::Address => "Address",
            SegmentOrder::Size => "Size, largest first",
            SegmentOrder::CachedFree => "Cached free, most first",
            SegmentOrder::LargestFree => "Largest free block, largest first",
        }
    }

    /// Puts `segments`, which a state lists by address, in this order.
    pub fn sort(self, segments: &mut [SegmentState]) {
        let by: fn(&SegmentState) -> u64 = match self {
            SegmentOrder::Address => return,
            SegmentOrder::Size => |s| s.size,
            SegmentOrder::CachedFree => |s| s.totals.cached_free,
            SegmentOrder::LargestFree => |s| s.totals.largest_free_block,
        };
        segments.sort_by(|a, b| by(b).cmp(&by(a)).then(a.address.cmp(&b.address)));
    }
}

impl std::str::FromStr for SegmentOrder {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        SegmentOrder::ALL
            .into_iter()
            .find(|o| o.key() == text)
            .ok_or_else(|| {
                let keys: Vec<&str> = SegmentOrder::ALL.iter().map(|o| o.key()).collect();
                format!(
                    "'{text}' is not an order of segments: say one of {}",
                    keys.join(", ")
                )
            })
    }
}

/// How much an answer lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Detail {
    Blocks,
    Totals,
}

/// The allocator's memory at one state (state `r + 1` is after trace row `r`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AllocatorState {
    pub state: u32,
    /// By address.
    pub segments: Vec<SegmentState>,
    pub totals: AllocatorTotals,
    /// Events of the trace that could not be applied (the same for every state).
    pub unreconciled: Unreconciled,
}

/// Why an event could not be applied while reconstructing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Misfit {
    /// The block to free was not there.
    BlockNotFound,
    /// The block's address is in no segment.
    BlockOutsideSegments,
    /// The block's address is inside another block.
    BlockOverlaps,
    /// No segment at the event's address.
    SegmentNotFound,
    /// The segment would overlap another.
    SegmentOverlaps,
    /// The segment (or unmapped range) still held blocks; they were dropped.
    SegmentNotEmpty,
    /// The segment at the address has another size than the event's.
    SegmentSizeDiffers,
}

/// Counts of events that could not be applied, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unreconciled {
    pub block_not_found: u32,
    pub block_outside_segments: u32,
    pub block_overlaps: u32,
    pub segment_not_found: u32,
    pub segment_overlaps: u32,
    pub segment_not_empty: u32,
    pub segment_size_differs: u32,
}

impl Unreconciled {
    pub fn count(&mut self, misfit: Misfit) {
        let counter = match misfit {
            Misfit::BlockNotFound => &mut self.block_not_found,
            Misfit::BlockOutsideSegments => &mut self.block_outside_segments,
            Misfit::BlockOverlaps => &mut self.block_overlaps,
            Misfit::SegmentNotFound => &mut self.segment_not_found,
            Misfit::SegmentOverlaps => &mut self.segment_overlaps,
            Misfit::SegmentNotEmpty => &mut self.segment_not_empty,
            Misfit::SegmentSizeDiffers => &mut self.segment_size_differs,
        };
        *counter += 1;
    }

    pub fn total(&self) -> u32 {
        self.block_not_found
            + self.block_outside_segments
            + self.block_overlaps
            + self.segment_not_found
            + self.segment_overlaps
            + self.segment_not_empty
            + self.segment_size_differs
    }
}

/// How well PyTorch's rules predicted block sizes: of the allocations made within the trace
/// and alive at the end, how many the forward walk sized as the final segments show them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeCheck {
    pub alive_at_end: u32,
    pub predicted: u32,
}

/// The allocator's memory at every state of one device, answered on request.
#[derive(Clone, Debug, Default)]
pub struct AllocatorHistory {
    last_state: u32,
    /// Block size per allocation.
    sizes: Vec<u64>,
    /// States `lo..hi` each allocation's block is present in.
    present: Vec<(u32, u32)>,
    blocks: StabbingIndex,
    segment_versions: Vec<SegmentVersion>,
    /// `(lo, hi)` of each segment version, as the index reads them.
    segment_states: Vec<(u32, u32)>,
    segments: StabbingIndex,
    /// From which state an allocation shows as pending free where the final segments say
    /// otherwise than its `free_requested` row.
    pending_from: FxHashMap<u32, u32>,
    unreconciled: Unreconciled,
    size_check: SizeCheck,
}

impl AllocatorHistory {
    /// Reconstructs `device` (one of `snapshot.devices`) from its final segments and trace,
    /// with `facts`, its replay.
    pub fn new(snapshot: &Snapshot, device: &Device, facts: &DeviceFacts) -> Self {
        let walk = Walk::new(snapshot, device, facts);
        let (mut sizes, heap, unreconciled, size_check) = walk.reconstruct();
        let log = heap.log.unwrap_or_default();
        // A block no walk could place (outside every segment of a trace that does not
        // reconcile) has no fitted size: it is the request as the allocator rounds it.
        for ((size, &(lo, hi)), allocation) in
            sizes.iter_mut().zip(&log.blocks).zip(&facts.allocations)
        {
            if lo >= hi {
                *size = walk.rules.round(allocation.size);
            }
        }
        let segment_states: Vec<(u32, u32)> = log.segments.iter().map(|v| (v.lo, v.hi)).collect();
        AllocatorHistory {
            last_state: walk.rows(),
            blocks: StabbingIndex::new(&log.blocks),
            present: log.blocks,
            sizes,
            segments: StabbingIndex::new(&segment_states),
            segment_versions: log.segments,
            segment_states,
            pending_from: pending_overrides(device, facts),
            unreconciled,
            size_check,
        }
    }

    /// The allocator's memory at `state` (past the last state: the last), every block
    /// listed. `facts` are those it was built with.
    pub fn state_at(&self, facts: &DeviceFacts, state: u32) -> AllocatorState {
        self.answer(facts, state, Detail::Blocks)
    }

    /// The same totals as [`Self::state_at`], per segment and overall, without listing blocks
    /// (segments' `blocks` are empty): a small answer where a state holds ~100k blocks.
    pub fn summary_at(&self, facts: &DeviceFacts, state: u32) -> AllocatorState {
        self.answer(facts, state, Detail::Totals)
    }

    fn answer(&self, facts: &DeviceFacts, state: u32, detail: Detail) -> AllocatorState {
        let state = state.min(self.last_state);
        let mut segments = Vec::new();
        self.segments
            .stab(&self.segment_states, state, &mut segments);
        let mut segments: Vec<&SegmentVersion> = segments
            .into_iter()
            .map(|v| &self.segment_versions[v as usize])
            .collect();
        segments.sort_unstable_by_key(|v| v.address);
        let mut held = Vec::new();
        self.blocks.stab(&self.present, state, &mut held);
        let mut held: Vec<(u64, u64, u32)> = held
            .into_iter()
            .map(|id| {
                (
                    facts.allocations.at(id as usize).addr,
                    self.sizes[id as usize],
                    id,
                )
            })
            .collect();
        held.sort_unstable_by_key(|&(address, _, _)| address);
        let segments = segments.into_iter().map(|v| (v.address, v.size, v.info));
        self.assemble(facts, state, segments, held, detail)
    }

    /// The same answer as [`Self::state_at`], by walking the trace from the end to `state`
    /// without the index: slow (the whole trace), for checking the index.
    pub fn replayed_state_at(
        &self,
        snapshot: &Snapshot,
        device: &Device,
        facts: &DeviceFacts,
        state: u32,
    ) -> AllocatorState {
        let state = state.min(self.last_state);
        let walk = Walk::new(snapshot, device, facts);
        let mut sizes = walk.estimated_sizes();
        let (heap, _) = walk.backwards(&mut sizes, false, state);
        let Heap {
            segments, blocks, ..
        } = heap;
        let segments = segments
            .into_iter()
            .map(|(address, s)| (address, s.size, s.info));
        let held = blocks
            .into_iter()
            .map(|(address, b)| (address, b.size, b.allocation))
            .collect();
        self.assemble(facts, state, segments, held, Detail::Blocks)
    }

    fn kind(&self, facts: &DeviceFacts, allocation: u32, state: u32) -> BlockKind {
        let pending_from = self
            .pending_from
            .get(&allocation)
            .copied()
            .unwrap_or_else(|| {
                state_after(facts.allocations.at(allocation as usize).free_requested_row)
            });
        if state >= pending_from {
            BlockKind::PendingFree
        } else {
            BlockKind::Allocated
        }
    }

    /// Lays `held` blocks (by address, each inside one of `segments`, by address) into their
    /// segments, free memory between them, and sums them up.
    fn assemble(
        &self,
        facts: &DeviceFacts,
        state: u32,
        segments: impl Iterator<Item = (u64, u64, SegmentInfo)>,
        held: Vec<(u64, u64, u32)>,
        detail: Detail,
    ) -> AllocatorState {
        let mut held = held.into_iter().peekable();
        let mut totals = AllocatorTotals::default();
        let mut out = Vec::new();
        for (address, size, info) in segments {
            let end = address + size;
            let mut blocks = Vec::new();
            let mut segment_totals = AllocatorTotals {
                segments: 1,
                ..AllocatorTotals::default()
            };
            let mut keep = |block: BlockView| {
                segment_totals.add_block(&block);
                if detail == Detail::Blocks {
                    blocks.push(block);
                }
            };
            let free = |from: u64, to: u64| BlockView {
                address: from,
                size: to - from,
                kind: BlockKind::CachedFree,
                requested: 0,
                allocation: None,
            };
            let mut at = address;
            while let Some(&(block_address, block_size, allocation)) = held.peek() {
                if block_address >= end {
                    break;
                }
                held.next();
                if block_address < at {
                    continue; // never happens: the walk keeps blocks inside segments
                }
                if block_address > at {
                    keep(free(at, block_address));
                }
                keep(BlockView {
                    address: block_address,
                    size: block_size,
                    kind: self.kind(facts, allocation, state),
                    requested: facts.allocations.size(allocation as usize),
                    allocation: Some(allocation),
                });
                at = block_address + block_size;
            }
            if at < end {
                keep(free(at, end));
            }
            segment_totals.finish();
            totals.add(&segment_totals);
            out.push(SegmentState {
                address,
                size,
                stream: info.stream,
                pool: info.pool,
                pool_id: info.pool_id,
                expandable: info.expandable,
                blocks,
                totals: segment_totals,
            });
        }
        totals.finish();
        AllocatorState {
            state,
            segments: out,
            totals,
            unreconciled: self.unreconciled,
        }
    }

    /// The allocator's block size for each allocation (indexed like
    /// [`DeviceFacts::allocations`]): the final segments' for blocks alive at the end, else as
    /// the reconstruction fitted it.
    pub fn block_sizes(&self) -> &[u64] {
        &self.sizes
    }

    /// Events that could not be applied, by reason.
    pub fn unreconciled(&self) -> Unreconciled {
        self.unreconciled
    }

    /// How many final block sizes the rules predicted (see [`SizeCheck`]).
    pub fn size_check(&self) -> SizeCheck {
        self.size_check
    }

    /// The last state (the trace's length): the final segments.
    pub fn last_state(&self) -> u32 {
        self.last_state
    }

    /// Bytes held in memory, for the benchmark's table.
    pub fn heap_bytes(&self) -> usize {
        self.sizes.capacity() * 8
            + self.present.capacity() * 8
            + self.blocks.heap_bytes()
            + self.segment_versions.capacity() * std::mem::size_of::<SegmentVersion>()
            + self.segment_states.capacity() * 8
            + self.segments.heap_bytes()
            + self.pending_from.capacity() * 12
    }
}

/// Allocations alive at the end whose final block says pending free (or allocated) against
/// what their `free_requested` row says: the final segments win.
fn pending_overrides(device: &Device, facts: &DeviceFacts) -> FxHashMap<u32, u32> {
    let alive = facts.alive_at_end_by_address();
    let mut overrides = FxHashMap::default();
    for block in device.blocks.iter().filter(|b| b.state.is_allocated()) {
        let Some(&id) = alive.get(&block.address) else {
            continue;
        };
        let requested = facts.allocations.at(id as usize).free_requested_row != NO_ROW;
        let pending = block.state == BlockState::ActivePendingFree;
        if pending && !requested {
            overrides.insert(id, 0);
        } else if !pending && requested {
            overrides.insert(id, u32::MAX);
        }
    }
    overrides
}

/// The block size the caching allocator uses for a request of `size` bytes.
pub fn block_size(size: u64) -> u64 {
    size.max(1).div_ceil(512) * 512
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_sizes_round_up_to_512_bytes() {
        assert_eq!(block_size(0), 512);
        assert_eq!(block_size(1), 512);
        assert_eq!(block_size(512), 512);
        assert_eq!(block_size(513), 1024);
    }
    use crate::analysis::Analysed;
    use crate::model::{Action, Block, Segment, SegmentType, Value};
    use Action::{
        Alloc, FreeCompleted, FreeRequested, SegmentAlloc, SegmentFree, SegmentMap, SegmentUnmap,
    };
    use BlockKind::*;
    use BlockState::{ActiveAllocated, ActivePendingFree, Inactive};

    const MIB: u64 = 1 << 20;
    const BASE: u64 = 0x7f00_0000_0000;

    /// A final segment: address, whether expandable, and its blocks as (size, state, requested).
    type FinalSegment<'a> = (u64, bool, &'a [(u64, BlockState, u64)]);

    fn analysed(
        rows: &[(Action, u64, u64)],
        segments: &[FinalSegment],
        settings: Option<Value>,
    ) -> Analysed {
        let mut device = crate::analysis::test_traces::device(rows);
        for &(address, expandable, blocks) in segments {
            let first = device.blocks.len() as u32;
            let mut at = address;
            for &(size, state, requested) in blocks {
                device.blocks.push(Block {
                    address: at,
                    size,
                    requested_size: Some(requested),
                    state,
                    ..Block::default()
                });
                at += size;
            }
            let total_size = at - address;
            device.segments.push(Segment {
                address,
                total_size,
                segment_type: if total_size == 2 * MIB && !expandable {
                    SegmentType::Small
                } else {
                    SegmentType::Large
                },
                is_expandable: expandable,
                blocks: first..device.blocks.len() as u32,
                ..Segment::default()
            });
        }
        Analysed::new(Snapshot {
            devices: vec![device],
            streams: vec![0],
            allocator_settings: settings,
            ..Snapshot::default()
        })
    }

    /// A trace and one final segment at `BASE`, not expandable, with the default settings.
    fn one_segment(rows: &[(Action, u64, u64)], blocks: &[(u64, BlockState, u64)]) -> Analysed {
        analysed(rows, &[(BASE, false, blocks)], None)
    }

    /// Builds the history, checks every state against a walk without the index and against
    /// the invariants, and the last state against the final segments.
    fn history(analysed: &Analysed) -> AllocatorHistory {
        let (device, facts) = (&analysed.snapshot.devices[0], &analysed.facts[0]);
        let history = AllocatorHistory::new(&analysed.snapshot, device, facts);
        for state in 0..=history.last_state() {
            let answer = history.state_at(facts, state);
            assert_eq!(
                answer,
                history.replayed_state_at(&analysed.snapshot, device, facts, state),
                "state {state}"
            );
            for segment in &answer.segments {
                let mut at = segment.address;
                for block in &segment.blocks {
                    assert_eq!(block.address, at, "state {state}: blocks end to end");
                    at += block.size;
                }
                assert_eq!(at, segment.address + segment.size, "state {state}");
            }
        }
        let last = history.state_at(facts, history.last_state());
        let mut summary = last.clone();
        summary.segments.iter_mut().for_each(|s| s.blocks.clear());
        assert_eq!(history.summary_at(facts, history.last_state()), summary);
        let blocks: Vec<(u64, u64, BlockState)> = last
            .segments
            .iter()
            .flat_map(|s| &s.blocks)
            .map(|b| {
                let state = match b.kind {
                    Allocated => ActiveAllocated,
                    PendingFree => ActivePendingFree,
                    CachedFree => Inactive,
                };
                (b.address, b.size, state)
            })
            .collect();
        let expected: Vec<(u64, u64, BlockState)> = device
            .blocks
            .iter()
            .map(|b| (b.address, b.size, b.state))
            .collect();
        assert_eq!(blocks, expected, "the last state is the final segments");
        history
    }

    /// Blocks of the one segment at `state`, as (size, kind).
    fn layout(
        analysed: &Analysed,
        history: &AllocatorHistory,
        state: u32,
    ) -> Vec<Vec<(u64, BlockKind)>> {
        history
            .state_at(&analysed.facts[0], state)
            .segments
            .iter()
            .map(|s| s.blocks.iter().map(|b| (b.size, b.kind)).collect())
            .collect()
    }

    #[test]
    fn large_blocks_split_unless_little_would_remain() {
        let rows = [
            (SegmentAlloc, BASE, 20 * MIB),
            (Alloc, BASE, 3 * MIB),
            (Alloc, BASE + 3 * MIB, 16 * MIB + MIB / 2),
            (FreeRequested, BASE, 3 * MIB),
            (FreeCompleted, BASE, 3 * MIB),
        ];
        let a = one_segment(
            &rows,
            &[
                (3 * MIB, Inactive, 0),
                (17 * MIB, ActiveAllocated, 16 * MIB + MIB / 2),
            ],
        );
        let h = history(&a);
        assert_eq!(h.block_sizes(), [3 * MIB, 17 * MIB]);
        assert_eq!(h.unreconciled().total(), 0);
        assert!(layout(&a, &h, 0).is_empty());
        assert_eq!(layout(&a, &h, 1), [vec![(20 * MIB, CachedFree)]]);
        assert_eq!(
            layout(&a, &h, 2),
            [vec![(3 * MIB, Allocated), (17 * MIB, CachedFree)]]
        );
        assert_eq!(
            layout(&a, &h, 4),
            [vec![(3 * MIB, PendingFree), (17 * MIB, Allocated)]]
        );
        let state = h.state_at(&a.facts[0], 3);
        assert_eq!(state.totals.requested, 3 * MIB + 16 * MIB + MIB / 2);
        assert_eq!(state.totals.rounding_waste, MIB / 2);
        assert_eq!(state.totals.reserved, 20 * MIB);
        assert_eq!(state.totals.cached_free, 0);
    }

    #[test]
    fn small_blocks_round_to_512_bytes_and_freed_neighbours_merge() {
        let rows = [
            (SegmentAlloc, BASE, 2 * MIB),
            (Alloc, BASE, 1000),
            (Alloc, BASE + 1024, 100),
            (Alloc, BASE + 1536, 5000),
            (FreeCompleted, BASE, 1000),
            (FreeCompleted, BASE + 1536, 5000),
            (FreeCompleted, BASE + 1024, 100),
        ];
        let a = one_segment(&rows, &[(2 * MIB, Inactive, 0)]);
        let h = history(&a);
        assert_eq!(h.block_sizes(), [1024, 512, 5120]);
        let left = 2 * MIB - 1024 - 512 - 5120;
        assert_eq!(
            layout(&a, &h, 6),
            [vec![
                (1024, CachedFree),
                (512, Allocated),
                (5120, CachedFree),
                (left, CachedFree)
            ]]
            .map(|mut v| {
                // Free neighbours are one block.
                v.splice(2..4, [(5120 + left, CachedFree)]);
                v
            })
        );
        let state = h.state_at(&a.facts[0], 6).totals;
        assert_eq!(
            (state.largest_free_block, state.cached_free),
            (5120 + left, 1024 + 5120 + left)
        );
        assert!((state.fragmentation - 1024.0 / (1024 + 5120 + left) as f64).abs() < 1e-12);
        assert_eq!(layout(&a, &h, 7), [vec![(2 * MIB, CachedFree)]]);
    }

    #[test]
    fn segments_come_and_go() {
        let rows = [
            (SegmentAlloc, BASE + 64 * MIB, 20 * MIB),
            (Alloc, BASE + 64 * MIB, 2 * MIB),
            (FreeCompleted, BASE + 64 * MIB, 2 * MIB),
            (SegmentFree, BASE + 64 * MIB, 20 * MIB),
            (SegmentFree, BASE, 2 * MIB),
        ];
        let a = analysed(&rows, &[], None);
        let h = history(&a);
        let addresses = |state| -> Vec<u64> {
            h.state_at(&a.facts[0], state)
                .segments
                .iter()
                .map(|s| s.address)
                .collect()
        };
        // The segment freed last existed from the start; the other only in between.
        assert_eq!(addresses(0), [BASE]);
        assert_eq!(addresses(2), [BASE, BASE + 64 * MIB]);
        assert_eq!(addresses(5), Vec::<u64>::new());
        let first = &h.state_at(&a.facts[0], 0).segments[0];
        assert_eq!(first.pool, Some(SegmentPool::Small));
        assert_eq!(h.unreconciled().total(), 0);
    }

    #[test]
    fn expandable_segments_grow_and_shrink() {
        let settings = Value::Dict(vec![(
            Value::Str("expandable_segments".into()),
            Value::Bool(true),
        )]);
        let rows = [
            (SegmentMap, BASE, 20 * MIB),
            (Alloc, BASE, 19 * MIB),
            (SegmentMap, BASE + 20 * MIB, 20 * MIB),
            (Alloc, BASE + 19 * MIB, 10 * MIB),
            (FreeCompleted, BASE, 19 * MIB),
            (SegmentUnmap, BASE, 19 * MIB),
        ];
        let a = analysed(
            &rows,
            &[(
                BASE + 19 * MIB,
                true,
                &[
                    (10 * MIB, ActiveAllocated, 10 * MIB),
                    (11 * MIB, Inactive, 0),
                ],
            )],
            Some(settings),
        );
        let h = history(&a);
        // With expandable segments, blocks split whenever 512 bytes remain.
        assert_eq!(h.block_sizes(), [19 * MIB, 10 * MIB]);
        assert_eq!(
            layout(&a, &h, 2),
            [vec![(19 * MIB, Allocated), (MIB, CachedFree)]]
        );
        assert_eq!(
            layout(&a, &h, 3),
            [vec![(19 * MIB, Allocated), (21 * MIB, CachedFree)]]
        );
        assert_eq!(
            layout(&a, &h, 5),
            [vec![
                (19 * MIB, CachedFree),
                (10 * MIB, Allocated),
                (11 * MIB, CachedFree)
            ]]
        );
        assert_eq!(h.state_at(&a.facts[0], 5).segments[0].address, BASE);
        assert!(h.state_at(&a.facts[0], 5).segments[0].expandable);
        assert_eq!(h.unreconciled().total(), 0);
    }

    #[test]
    fn a_wrapped_trace_starts_with_the_blocks_freed_before_any_alloc() {
        // The buffer lost the allocs of two blocks; the trace opens with their frees.
        let rows = [
            (FreeRequested, BASE, 3000),
            (FreeCompleted, BASE, 3000),
            (FreeCompleted, BASE + 4096, 100),
            (Alloc, BASE + 8192, 700),
        ];
        let a = one_segment(
            &rows,
            &[
                (8192, Inactive, 0),
                (1024, ActiveAllocated, 700),
                (2 * MIB - 9216, ActivePendingFree, 7),
            ],
        );
        let h = history(&a);
        let facts = &a.facts[0];
        let sizes: FxHashMap<u64, u64> = facts
            .allocations
            .iter()
            .zip(h.block_sizes())
            .map(|(a, &s)| (a.addr, s))
            .collect();
        assert_eq!(sizes[&BASE], 3072);
        assert_eq!(sizes[&(BASE + 4096)], 512);
        assert_eq!(sizes[&(BASE + 8192)], 1024);
        let live = 2 * MIB - 9216;
        assert_eq!(
            layout(&a, &h, 0),
            [vec![
                (3072, Allocated),
                (1024, CachedFree),
                (512, Allocated),
                (4608, CachedFree),
                (live, PendingFree)
            ]]
        );
        assert_eq!(layout(&a, &h, 1)[0][0], (3072, PendingFree));
        assert_eq!(h.state_at(facts, 0).totals.requested, facts.allocated_at(0));
        assert_eq!(h.unreconciled().total(), 0);
    }

    #[test]
    fn events_that_do_not_fit_are_counted_and_the_memory_stays_well_formed() {
        let rows = [
            // Freed in no segment.
            (FreeCompleted, BASE + 100 * MIB, 512),
            // Freed inside a block alive throughout.
            (FreeCompleted, BASE + 512, 100),
            // A segment freed over one that exists at the end.
            (SegmentFree, BASE, 2 * MIB),
        ];
        let a = one_segment(
            &rows,
            &[(4096, ActiveAllocated, 4096), (2 * MIB - 4096, Inactive, 0)],
        );
        let h = history(&a);
        assert_eq!(
            h.unreconciled(),
            Unreconciled {
                block_outside_segments: 1,
                block_overlaps: 1,
                segment_overlaps: 1,
                ..Unreconciled::default()
            }
        );
        assert_eq!(h.unreconciled().total(), 3);
        assert_eq!(
            layout(&a, &h, 0),
            [vec![(4096, Allocated), (2 * MIB - 4096, CachedFree)]]
        );
    }

    #[test]
    fn states_travel_as_json() {
        let a = one_segment(
            &[(SegmentAlloc, BASE, 2 * MIB), (Alloc, BASE, 10)],
            &[(512, ActiveAllocated, 10), (2 * MIB - 512, Inactive, 0)],
        );
        let h = history(&a);
        let state = h.state_at(&a.facts[0], 2);
        let json = serde_json::to_value(&state).unwrap();
        assert_eq!(json["segments"][0]["blocks"][0]["kind"], "allocated");
        assert_eq!(json["segments"][0]["pool"], "small");
        assert_eq!(json["totals"]["rounding_waste"], 502);
        let back: AllocatorState = serde_json::from_value(json).unwrap();
        assert_eq!(back, state);
    }
}
