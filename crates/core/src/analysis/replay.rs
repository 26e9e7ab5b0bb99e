//! Replaying one device's trace: allocations with their events, memory curves, peaks, and a
//! check of the trace against the final segments.
//!
//! Semantics follow PyTorch's own viewer so numbers can be compared: an allocation lives from
//! `alloc` to `free_completed`, its size is the trace's (requested) size, events pair by
//! address in order (addresses are reused), and allocations that existed before the trace
//! window (frees without an alloc, live blocks without an alloc) form a baseline from the
//! first event. Reserved memory moves with `segment_alloc`/`segment_map` and
//! `segment_free`/`segment_unmap`. This module computes; it does not format or draw.

use rustc_hash::FxHashMap;

use super::allocations::{Allocations, Record, NO_ROW};
use super::moment::state_after;
use super::warning::Warning;
use crate::model::{Action, Device, StackId, NO_STACK};

/// A maximum of a curve and where it is first reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Peak {
    pub bytes: u64,
    /// The row after which the value is first reached; `None` when the baseline (before the
    /// first row) is already the peak.
    pub row: Option<u32>,
}

impl Peak {
    /// The state where the value is first reached (0: before the first row).
    pub fn state(&self) -> u32 {
        self.row.map_or(0, state_after)
    }
}

/// Everything derived from one device's trace and segments.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceFacts {
    /// Pre-window allocations first, then trace allocations in `alloc` order.
    pub allocations: Allocations,
    /// Allocated bytes before the first row.
    pub baseline_allocated: u64,
    /// Allocated bytes after each row (one value per row).
    pub allocated: Vec<u64>,
    /// Reserved bytes before the first row.
    pub baseline_reserved: u64,
    /// `(row, reserved bytes after it)` for every row that changes reserved memory.
    pub reserved_changes: Vec<(u32, u64)>,
    pub peak_allocated: Peak,
    pub peak_reserved: Peak,
    /// Rows per action, indexed by `Action as usize`.
    pub action_counts: [u64; 11],
    pub frees_without_alloc: u64,
    pub live_blocks_without_alloc: u64,
    /// Allocations alive at the end of the trace that no allocated block accounts for.
    pub missing_from_segments: u64,
    pub missing_from_segments_bytes: u64,
    /// What the replay found that limits the views (not the OOMs: see the overview).
    pub warnings: Vec<Warning>,
    /// `(allocation, row)` of every `annotate` row, by allocation then row: the annotations
    /// an allocation accumulated (each row keeps its metadata, time and stack). An annotation
    /// of an address nothing held is in none.
    pub annotations: Vec<(u32, u32)>,
}

impl DeviceFacts {
    /// The `annotate` rows of allocation `i`, oldest first.
    pub fn annotations_of(&self, i: u32) -> impl Iterator<Item = u32> + '_ {
        let start = self.annotations.partition_point(|&(a, _)| a < i);
        self.annotations[start..]
            .iter()
            .take_while(move |&&(a, _)| a == i)
            .map(|&(_, row)| row)
    }

    /// Allocated bytes after the trace's last row (the baseline for an empty trace).
    pub fn allocated_at_end(&self) -> u64 {
        self.allocated
            .last()
            .copied()
            .unwrap_or(self.baseline_allocated)
    }

    /// The allocated curve at `state` (state 0 is before the first row; a state past the
    /// trace holds the value at its end).
    pub fn allocated_at(&self, state: u32) -> u64 {
        match state.checked_sub(1) {
            None => self.baseline_allocated,
            Some(row) => self
                .allocated
                .get(row as usize)
                .copied()
                .unwrap_or_else(|| self.allocated_at_end()),
        }
    }

    /// Efficiency at the allocated peak, in parts per million: allocated over reserved bytes
    /// where allocated memory peaks (first reached). The one efficiency every view, the
    /// report and the command line show
    /// (`docs/decisions/0002-cached-memory-findings-only-where-they-hurt.md`); `None` when
    /// nothing is reserved there.
    pub fn efficiency_at_peak_ppm(&self) -> Option<u64> {
        let state = self.peak_allocated.state();
        efficiency_ppm(
            self.allocated_at(state),
            self.reserved_after(self.peak_allocated.row),
        )
    }

    /// Allocations alive at the end by address (index into `allocations`): what the final
    /// segments' allocated blocks hold.
    pub fn alive_at_end_by_address(&self) -> FxHashMap<u64, u32> {
        self.allocations
            .iter()
            .enumerate()
            .filter(|(_, a)| a.is_alive_at_end())
            .map(|(i, a)| (a.addr, i as u32))
            .collect()
    }

    /// Reserved bytes after `row` (`None` = before the first row).
    pub fn reserved_after(&self, row: Option<u32>) -> u64 {
        let Some(row) = row else {
            return self.baseline_reserved;
        };
        match self.reserved_changes.partition_point(|&(r, _)| r <= row) {
            0 => self.baseline_reserved,
            i => self.reserved_changes[i - 1].1,
        }
    }
}

/// Allocated over reserved bytes in parts per million, at most 1,000,000 (`None` when nothing
/// is reserved).
pub fn efficiency_ppm(allocated: u64, reserved: u64) -> Option<u64> {
    (reserved > 0).then(|| (allocated.min(reserved) as u128 * 1_000_000 / reserved as u128) as u64)
}

/// Replays `device`'s trace against its segments.
pub fn replay(device: &Device) -> DeviceFacts {
    let trace = &device.trace;
    let rows = trace.len();
    let mut facts = DeviceFacts::default();
    // The allocations made in the trace come last in the facts' list, after those from before
    // it: live blocks (at most one per block, and one a profiler reports) and frees without an
    // alloc (usually few). Made that long at once, the list is not grown while the trace is
    // replayed, nor copied to put the others first.
    let allocs = trace.action.iter().filter(|&&a| a == Action::Alloc).count();
    let mut trace_allocs: Vec<Record> = Vec::with_capacity(allocs + device.blocks.len() + 1);
    let mut freed_before: Vec<Record> = Vec::new();
    let mut open: FxHashMap<u64, u32> = FxHashMap::default();

    // Pass 1: pair events and track the net change of allocated and reserved bytes.
    let mut net: i128 = 0;
    let mut min_net: i128 = 0;
    let mut reserved_net: i128 = 0;
    let mut reserved_min: i128 = 0;
    let mut net_after: Vec<i64> = Vec::with_capacity(rows);
    // `(row, address, the trace allocation open there)` of each `annotate` row.
    let mut annotated: Vec<(u32, u64, Option<u32>)> = Vec::new();
    for row in 0..rows {
        let action = trace.action[row];
        facts.action_counts[action as usize] += 1;
        let addr = trace.addr[row];
        let size = trace.size[row];
        match action {
            Action::Alloc => {
                if let Some(prev) = open.insert(addr, trace_allocs.len() as u32) {
                    // A second alloc at a live address: the free was lost; close it here.
                    let prev = &mut trace_allocs[prev as usize];
                    prev.free_row = row as u32;
                    net -= trace.size[prev.alloc_row as usize] as i128;
                }
                trace_allocs.push(Record {
                    alloc_row: row as u32,
                    free_requested_row: NO_ROW,
                    free_row: NO_ROW,
                    stack: trace.stack[row],
                });
                net += size as i128;
            }
            Action::FreeRequested => {
                if let Some(&i) = open.get(&addr) {
                    trace_allocs[i as usize].free_requested_row = row as u32;
                }
            }
            Action::FreeCompleted => match open.remove(&addr) {
                Some(i) => {
                    let a = &mut trace_allocs[i as usize];
                    a.free_row = row as u32;
                    net -= trace.size[a.alloc_row as usize] as i128;
                }
                None => {
                    freed_before.push(Record {
                        alloc_row: NO_ROW,
                        free_requested_row: NO_ROW,
                        free_row: row as u32,
                        stack: trace.stack[row],
                    });
                    net -= size as i128;
                }
            },
            // Keyed to the allocation's base address, and changes no memory: as PyTorch's
            // viewer does, the curves skip it (decision 0028).
            Action::Annotate => annotated.push((row as u32, addr, open.get(&addr).copied())),
            Action::SegmentAlloc | Action::SegmentMap => {
                reserved_net += size as i128;
                facts.reserved_changes.push((row as u32, 0));
            }
            Action::SegmentFree | Action::SegmentUnmap => {
                reserved_net -= size as i128;
                reserved_min = reserved_min.min(reserved_net);
                facts.reserved_changes.push((row as u32, 0));
            }
            _ => {}
        }
        min_net = min_net.min(net);
        net_after.push(net.clamp(i64::MIN as i128, i64::MAX as i128) as i64);
    }
    // Mark which `free_requested` rows belong to pre-window allocations.
    for a in &mut freed_before {
        if a.free_row > 0 {
            let prev = a.free_row as usize - 1;
            let addr = trace.addr[a.free_row as usize];
            if trace.action[prev] == Action::FreeRequested && trace.addr[prev] == addr {
                a.free_requested_row = prev as u32;
            }
        }
    }

    // Pass 2: live blocks the trace does not account for existed before the window; trace
    // allocations still open that no block accounts for disagree with the segments.
    let mut live_blocks: Vec<(Record, (u64, u64))> = Vec::new();
    let mut block_at: FxHashMap<u64, usize> = FxHashMap::default();
    for (i, block) in device.blocks.iter().enumerate() {
        if block.state.is_allocated() {
            block_at.insert(block.address, i);
            if !open.contains_key(&block.address) {
                let record = Record {
                    alloc_row: NO_ROW,
                    free_requested_row: NO_ROW,
                    free_row: NO_ROW,
                    stack: first_stack(block),
                };
                let size = block.requested_size.unwrap_or(block.size);
                live_blocks.push((record, (block.address, size)));
            }
        }
    }
    if let Some(reported) = device.reported.filter(|r| r.held_from_before > 0) {
        // Memory a profiler says was held from before its trace and never freed in it: one
        // allocation, so the curve and the categories count it.
        let record = Record {
            alloc_row: NO_ROW,
            free_requested_row: NO_ROW,
            free_row: NO_ROW,
            stack: NO_STACK,
        };
        live_blocks.push((record, (u64::MAX, reported.held_from_before)));
    }
    let has_segments = !device.segments.is_empty();
    for (&addr, &i) in &open {
        if has_segments && !block_at.contains_key(&addr) {
            facts.missing_from_segments += 1;
            facts.missing_from_segments_bytes +=
                trace.size[trace_allocs[i as usize].alloc_row as usize];
        }
    }

    facts.frees_without_alloc = freed_before.len() as u64;
    facts.live_blocks_without_alloc = live_blocks.len() as u64;
    let freed_before_bytes: u64 = freed_before
        .iter()
        .map(|a| trace.size[a.free_row as usize])
        .sum();
    let live_block_bytes: u64 = live_blocks.iter().map(|(_, (_, size))| size).sum();
    // Frees without an alloc must have had their memory from the start; never let the curve
    // dip below zero even if the trace is inconsistent.
    let baseline = (freed_before_bytes + live_block_bytes) as i128;
    let baseline = baseline.max(-min_net);
    facts.baseline_allocated = baseline as u64;
    // Reuse the buffer: the curve is never needed alongside the net changes.
    facts.allocated = net_after
        .into_iter()
        .map(|n| (baseline + n as i128) as u64)
        .collect();
    facts.peak_allocated = peak(facts.baseline_allocated, &facts.allocated);

    let reserved_end: u64 = match device.reported {
        Some(r) if device.segments.is_empty() => r.reserved_end,
        _ => device.segments.iter().map(|s| s.total_size).sum(),
    };
    let mut baseline_reserved = reserved_end as i128 - reserved_net;
    if baseline_reserved + reserved_min < 0 {
        facts.warnings.push(Warning::ReservedInconsistent);
        baseline_reserved = -reserved_min;
    }
    facts.baseline_reserved = baseline_reserved as u64;
    let mut reserved = baseline_reserved;
    for change in &mut facts.reserved_changes {
        let row = change.0 as usize;
        match trace.action[row] {
            Action::SegmentAlloc | Action::SegmentMap => reserved += trace.size[row] as i128,
            _ => reserved -= trace.size[row] as i128,
        }
        change.1 = reserved as u64;
    }
    let mut peak_reserved = Peak {
        bytes: facts.baseline_reserved,
        row: None,
    };
    for &(row, bytes) in &facts.reserved_changes {
        if bytes > peak_reserved.bytes {
            peak_reserved = Peak {
                bytes,
                row: Some(row),
            };
        }
    }
    facts.peak_reserved = peak_reserved;

    facts.annotations = annotations(&annotated, &live_blocks, &freed_before, trace);
    let mut records = trace_allocs;
    records.reserve_exact(live_blocks.len() + freed_before.len());
    let own = live_blocks.iter().map(|&(_, own)| own).collect();
    records.splice(
        0..0,
        live_blocks.into_iter().map(|(r, _)| r).chain(freed_before),
    );
    facts.allocations = Allocations::new(own, records, trace);
    warnings(device, &mut facts);
    facts
}

/// `(allocation, row)` of the annotations, by allocation then row. Allocations are numbered
/// as [`DeviceFacts::allocations`] lists them: live blocks, frees without an alloc, then the
/// trace's. An annotation no trace allocation was open for belongs to one from before the
/// trace at its address: the first freed after it, else the live block.
fn annotations(
    annotated: &[(u32, u64, Option<u32>)],
    live_blocks: &[(Record, (u64, u64))],
    freed_before: &[Record],
    trace: &crate::model::Trace,
) -> Vec<(u32, u32)> {
    let before = (live_blocks.len() + freed_before.len()) as u32;
    let mut out: Vec<(u32, u32)> = annotated
        .iter()
        .filter_map(|&(row, addr, open)| {
            let i = match open {
                Some(i) => before + i,
                None => match freed_before
                    .iter()
                    .position(|r| r.free_row > row && trace.addr[r.free_row as usize] == addr)
                {
                    Some(i) => (live_blocks.len() + i) as u32,
                    None => live_blocks.iter().position(|(_, (a, _))| *a == addr)? as u32,
                },
            };
            Some((i, row))
        })
        .collect();
    out.sort_unstable();
    out
}

fn first_stack(block: &crate::model::Block) -> StackId {
    if block.stack != NO_STACK {
        return block.stack;
    }
    block.history.last().map_or(NO_STACK, |h| h.stack)
}

fn peak(baseline: u64, curve: &[u64]) -> Peak {
    let mut best = Peak {
        bytes: baseline,
        row: None,
    };
    for (row, &bytes) in curve.iter().enumerate() {
        if bytes > best.bytes {
            best = Peak {
                bytes,
                row: Some(row as u32),
            };
        }
    }
    best
}

fn warnings(device: &Device, facts: &mut DeviceFacts) {
    let trace = &device.trace;
    let allocs = facts.action_counts[Action::Alloc as usize];
    let before = facts.frees_without_alloc + facts.live_blocks_without_alloc;
    // A device that used no memory at all needs no advice.
    let used = !trace.is_empty() || !device.segments.is_empty();
    if allocs == 0 && used {
        facts.warnings.push(Warning::TraceEmpty {
            events: trace.len() as u64,
        });
    }
    if allocs > 0 && before > 0 {
        facts.warnings.push(Warning::RingBufferWrapped {
            before,
            freed_during_trace: facts.frees_without_alloc,
            still_alive: facts.live_blocks_without_alloc,
        });
    }
    if facts.missing_from_segments > 0 {
        facts.warnings.push(Warning::TraceSegmentsMismatch {
            allocations: facts.missing_from_segments,
            bytes: facts.missing_from_segments_bytes,
        });
    }
    if allocs > 0 && (0..trace.len()).all(|r| trace.stack[r] == NO_STACK) {
        facts.warnings.push(Warning::NoStacks);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Origin;
    use crate::model::{Block, BlockState, Segment, Trace, TraceRow};

    fn row(action: Action, addr: u64, size: u64) -> TraceRow {
        TraceRow {
            addr,
            size,
            ..TraceRow::new(action)
        }
    }

    fn device(rows: &[(Action, u64, u64)], blocks: &[(u64, u64, BlockState)]) -> Device {
        let mut trace = Trace::default();
        for &(a, addr, size) in rows {
            trace.push(row(a, addr, size));
        }
        trace.finish();
        let total: u64 = blocks.iter().map(|b| b.1).sum();
        let segments = if blocks.is_empty() {
            vec![]
        } else {
            vec![Segment {
                address: blocks[0].0,
                total_size: total,
                blocks: 0..blocks.len() as u32,
                ..Segment::default()
            }]
        };
        Device {
            id: 0,
            has_trace_list: true,
            trace,
            segments,
            blocks: blocks
                .iter()
                .map(|&(address, size, state)| Block {
                    address,
                    size,
                    requested_size: Some(size),
                    state,
                    stack: NO_STACK,
                    ..Block::default()
                })
                .collect(),
            reported: None,
        }
    }

    use Action::*;
    use BlockState::*;

    #[test]
    fn annotations_belong_to_the_allocation_at_their_address_and_change_no_memory() {
        // A block from before the trace (0x100), annotated; a trace allocation (0x200)
        // annotated twice, freed, and its address annotated again once nothing holds it.
        let d = device(
            &[
                (Annotate, 0x100, 0),
                (Alloc, 0x200, 64),
                (Annotate, 0x200, 64),
                (Annotate, 0x200, 64),
                (FreeRequested, 0x200, 64),
                (FreeCompleted, 0x200, 64),
                (Annotate, 0x200, 64),
            ],
            &[(0x100, 32, ActiveAllocated), (0x120, 224, Inactive)],
        );
        let f = replay(&d);
        assert_eq!(f.allocations.len(), 2);
        assert_eq!(f.annotations, vec![(0, 0), (1, 2), (1, 3)]);
        assert_eq!(f.annotations_of(1).collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(f.annotations_of(0).collect::<Vec<_>>(), vec![0]);
        assert_eq!(f.allocated, vec![32, 96, 96, 96, 96, 32, 32]);
        assert_eq!(f.action_counts[Annotate as usize], 4);
    }

    #[test]
    fn pairs_reused_addresses_in_order() {
        let d = device(
            &[
                (Alloc, 0x100, 10),
                (FreeRequested, 0x100, 10),
                (FreeCompleted, 0x100, 10),
                (Alloc, 0x100, 20),
            ],
            &[(0x100, 20, ActiveAllocated)],
        );
        let f = replay(&d);
        assert_eq!(f.allocations.len(), 2);
        assert_eq!(
            (
                f.allocations.at(0).alloc_row,
                f.allocations.at(0).free_requested_row,
                f.allocations.at(0).free_row
            ),
            (0, 1, 2)
        );
        assert_eq!(
            (f.allocations.at(1).alloc_row, f.allocations.at(1).free_row),
            (3, NO_ROW)
        );
        assert_eq!(f.allocated, vec![10, 10, 0, 20]);
        assert_eq!(
            f.peak_allocated,
            Peak {
                bytes: 20,
                row: Some(3)
            }
        );
        let kinds: Vec<_> = f.warnings.iter().map(|x| x.kind()).collect();
        assert_eq!(kinds, ["no-stacks"]);
    }

    #[test]
    fn unmatched_frees_and_untraced_blocks_form_the_baseline() {
        let d = device(
            &[
                (FreeRequested, 0x200, 50),
                (FreeCompleted, 0x200, 50),
                (Alloc, 0x300, 5),
            ],
            &[
                (0x300, 5, ActiveAllocated),
                (0x400, 7, ActiveAllocated),
                (0x500, 100, Inactive),
            ],
        );
        let f = replay(&d);
        assert_eq!(f.baseline_allocated, 57);
        assert_eq!(f.allocated, vec![57, 7, 12]);
        assert_eq!(
            f.peak_allocated,
            Peak {
                bytes: 57,
                row: None
            }
        );
        assert_eq!(f.frees_without_alloc, 1);
        assert_eq!(f.live_blocks_without_alloc, 1);
        let freed = f
            .allocations
            .iter()
            .find(|a| a.origin() == Origin::FreedBeforeAlloc)
            .unwrap();
        assert_eq!((freed.free_requested_row, freed.free_row), (0, 1));
        assert!(f.warnings.iter().any(|x| x.kind() == "ring-buffer-wrapped"));
        assert_eq!(f.allocated_at_end(), 12);
    }

    #[test]
    fn every_origin_is_told_by_the_rows_and_a_record_takes_16_bytes() {
        let d = device(
            &[
                (FreeRequested, 0x2000, 50),
                (FreeCompleted, 0x2000, 50),
                (Alloc, 0x1000, 7),
            ],
            &[(0x1000, 7, ActiveAllocated), (0x3000, 9, ActiveAllocated)],
        );
        let f = replay(&d);
        let told: Vec<_> = f
            .allocations
            .iter()
            .map(|a| (a.addr, a.size, a.origin()))
            .collect();
        // Live blocks first, then frees without an alloc, then the trace's allocations.
        assert_eq!(
            told,
            [
                (0x3000, 9, Origin::LiveBlock),
                (0x2000, 50, Origin::FreedBeforeAlloc),
                (0x1000, 7, Origin::Trace),
            ]
        );
        assert_eq!(f.allocations.size(1), 50);
        assert_eq!(f.allocations.last().map(|a| a.alloc_row), Some(2));
        assert_eq!(f.allocations.first_traced(), 2);
        assert_eq!(
            std::mem::size_of::<crate::analysis::allocations::Record>(),
            16
        );
    }

    #[test]
    fn reserved_curve_starts_from_what_the_segments_imply() {
        let d = device(
            &[
                (SegmentAlloc, 0x1000, 64),
                (Alloc, 0x1000, 8),
                (SegmentFree, 0x9000, 32),
            ],
            &[(0x1000, 8, ActiveAllocated), (0x1008, 56, Inactive)],
        );
        let f = replay(&d);
        // End reserved 64 = baseline + 64 - 32, so the baseline was 32.
        assert_eq!(f.baseline_reserved, 32);
        assert_eq!(f.reserved_changes, vec![(0, 96), (2, 64)]);
        assert_eq!(
            f.peak_reserved,
            Peak {
                bytes: 96,
                row: Some(0)
            }
        );
        assert_eq!(f.reserved_after(Some(1)), 96);
        assert_eq!(f.reserved_after(None), 32);
    }

    #[test]
    fn live_trace_allocations_missing_from_segments_are_reported() {
        let d = device(
            &[(Alloc, 0x100, 10), (Alloc, 0x200, 30)],
            &[(0x100, 10, ActiveAllocated)],
        );
        let f = replay(&d);
        assert_eq!(
            (f.missing_from_segments, f.missing_from_segments_bytes),
            (1, 30)
        );
        assert!(f
            .warnings
            .iter()
            .any(|x| x.kind() == "trace-segments-mismatch"));
        assert!(f.warnings.iter().any(|x| x.kind() == "no-stacks"));
    }

    #[test]
    fn empty_trace_is_reported() {
        let f = replay(&device(&[], &[(0x100, 10, ActiveAllocated)]));
        assert_eq!(f.baseline_allocated, 10);
        assert_eq!(
            f.peak_allocated,
            Peak {
                bytes: 10,
                row: None
            }
        );
        assert!(f.warnings.iter().any(|x| x.kind() == "trace-empty"));
    }
}
