//! Findings about one device's memory: the patterns worth a user's attention — memory the
//! allocator caches but nobody uses, free space too fragmented to serve a large request,
//! padding from rounding, memory that grows from one iteration to the next, a single
//! allocation large next to the peak, frees waiting on other streams, out-of-memory errors,
//! and a trace that does not cover the whole run — each with the numbers behind it and the
//! allocations that make it up.
//!
//! Typed and numbers only: the words are [`crate::format::findings`]'s, and thresholds are
//! the constants below (not user settings). Findings read the replay ([`DeviceFacts`]), the
//! final segments and, for roles and training iterations, [`DeviceCategories`]. Odd input (no
//! trace, no segments, no stacks, no times, no phases) gives fewer findings, never a panic.
//! Not the place for ranking findings across devices or for drawing them.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::analysis::categories::phases::RowPhases;
use crate::analysis::categories::signals::Phase;
use crate::analysis::categories::{DeviceCategories, Role};
use crate::analysis::replay::{DeviceFacts, Origin, NO_ROW};
use crate::analysis::{Analysed, Warning};
use crate::model::{Action, BlockState, Device, StackId, NO_TIME};

const MIB: u64 = 1 << 20;

/// At most this many allocations are listed behind a finding.
pub const MAX_ALLOCATIONS: usize = 50;

/// Cache overhead: reserved − allocated above this share of reserved…
pub const CACHE_OVERHEAD_PERCENT: u64 = 10;
/// …and at least this much; below it no one should change a setting (a small program always
/// reserves a few 2 MiB and 20 MiB segments it barely fills).
pub const CACHE_OVERHEAD_MIN_BYTES: u64 = 64 * MIB;

/// Cached free blocks at the end above this many bytes.
pub const CACHED_FREE_MIN_BYTES: u64 = 100 * MIB;

/// Fragmentation: free memory counts when it is at least this much…
pub const FRAGMENTATION_MIN_FREE_BYTES: u64 = 256 * MIB;
/// …or at least this share of reserved…
pub const FRAGMENTATION_MIN_FREE_PERCENT: u64 = 10;
/// …and never below this much (10% of a tiny reserve is nothing to act on).
pub const FRAGMENTATION_FLOOR_BYTES: u64 = 64 * MIB;
/// It is fragmented when its largest block is less than this share of it.
pub const FRAGMENTATION_LARGEST_FREE_PERCENT: u64 = 50;
/// How many segments a fragmentation finding names.
pub const FRAGMENTATION_WORST_SEGMENTS: usize = 10;

/// Rounding waste: block bytes beyond the requested bytes above this share of allocated…
pub const ROUNDING_WASTE_PERCENT: u64 = 5;
/// …and at least this much.
pub const ROUNDING_WASTE_MIN_BYTES: u64 = 64 * MIB;

/// Leak suspects need at least this many iteration starts (the first is a warm-up).
pub const LEAK_MIN_ITERATIONS: usize = 3;
/// Growth after the warm-up of at least this much…
pub const LEAK_MIN_GROWTH_BYTES: u64 = 64 * MIB;
/// …or of at least this share of the peak allocated bytes.
pub const LEAK_MIN_GROWTH_PERCENT_OF_PEAK: u64 = 5;
/// How many call sites a leak finding names.
pub const LEAK_TOP_STACKS: usize = 10;

/// A sudden spike: one allocation of at least this share of the peak allocated bytes…
pub const SPIKE_PERCENT_OF_PEAK: u64 = 25;
/// …and at least this much.
pub const SPIKE_MIN_BYTES: u64 = 256 * MIB;

/// Long free waits: bytes waiting between `free_requested` and `free_completed` at the peak…
pub const PENDING_FREE_MIN_BYTES: u64 = 64 * MIB;
/// …or a wait of at least this many trace rows…
pub const LONG_WAIT_ROWS: u32 = 1000;
/// …or of at least this many microseconds, when the trace has times.
pub const LONG_WAIT_US: u64 = 100_000;

/// How many call sites an out-of-memory finding names.
pub const OOM_TOP_STACKS: usize = 10;
/// Out-of-memory findings per device: each costs a pass over the allocations, and a run that
/// retries after every failure says nothing new after the first few.
pub const MAX_OOM_FINDINGS: usize = 10;

/// One finding about a device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: FindingKind,
    /// Indices into [`DeviceFacts::allocations`] of the allocations behind it, the largest
    /// (or, for rounding waste, the most wasteful) first, at most [`MAX_ALLOCATIONS`].
    pub allocations: Vec<u32>,
}

impl Finding {
    /// The stable kind, as in `data-finding` attributes.
    pub fn key(&self) -> &'static str {
        self.kind.key()
    }
}

/// What was found, with the numbers behind it. States are the timeline's: state 0 is before
/// the first trace row, state `r + 1` after row `r`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// An allocation failed at trace row `row`: `requested` bytes, with `device_free` bytes
    /// free on the device; what was alive then (`live` allocations, `allocated` bytes) by
    /// role (`roles`, indexed like [`Role::ALL`]) and by call site (the most first).
    OutOfMemory {
        row: u32,
        requested: u64,
        device_free: u64,
        allocated: u64,
        reserved: u64,
        live: u32,
        roles: Vec<u64>,
        stacks: Vec<StackBytes>,
    },
    /// Allocated bytes at the start of each training iteration keep growing after the first
    /// (warm-up) iteration: by `growth` bytes from `iterations[1]` to the last one. `stacks`
    /// are the call sites whose live bytes grew the most over that span.
    LeakSuspect {
        iterations: Vec<Iteration>,
        growth: u64,
        peak_allocated: u64,
        stacks: Vec<StackBytes>,
    },
    /// `count` allocations of the trace were each at least [`SPIKE_PERCENT_OF_PEAK`] of the
    /// peak; the largest is `size` bytes at row `row`.
    SuddenSpike {
        size: u64,
        row: u32,
        stack: StackId,
        role: Role,
        peak_allocated: u64,
        count: u32,
    },
    /// At the end, `free` bytes of `reserved` are cached in `free_blocks` blocks of
    /// `segments` segments that also hold live blocks (wholly free segments are left to
    /// `cache-overhead` and `cached-free`), but the largest of those blocks is only
    /// `largest_free`; `worst` are the segments holding the most of that free memory.
    Fragmentation {
        reserved: u64,
        free: u64,
        largest_free: u64,
        free_blocks: u32,
        segments: u32,
        worst: Vec<FreeSegment>,
    },
    /// Reserved memory well above allocated memory, while reserved was at its peak (at the
    /// fullest state of that stretch) and at the end.
    CacheOverhead {
        at_peak_reserved: Overhead,
        at_end: Overhead,
    },
    /// `bytes` of cached free (inactive) blocks at the end, in `blocks` blocks, the largest
    /// `largest` bytes, out of `reserved`.
    CachedFree {
        bytes: u64,
        blocks: u32,
        largest: u64,
        reserved: u64,
    },
    /// The blocks allocated at the end hold `allocated` bytes for `requested` bytes asked:
    /// `waste` bytes of padding over `blocks` blocks.
    RoundingWaste {
        waste: u64,
        allocated: u64,
        requested: u64,
        blocks: u32,
    },
    /// `waits` allocations (`waited_bytes`) stayed allocated after their `free_requested`
    /// until work on other streams completed; `pending_at_peak` bytes were waiting at the
    /// allocated peak (state `peak_state`).
    LongFreeWaits {
        waits: u32,
        waited_bytes: u64,
        longest_in_rows: Wait,
        /// `None` when the trace has no times.
        longest_in_time: Option<Wait>,
        pending_at_peak: u64,
        peak_state: u32,
    },
    /// `before` allocations existed before the first recorded event: `freed_during_trace`
    /// of them (`freed_bytes`) were freed in the trace, `still_alive` (`alive_bytes`) were
    /// alive at the end.
    WrappedTrace {
        before: u64,
        freed_during_trace: u64,
        still_alive: u64,
        freed_bytes: u64,
        alive_bytes: u64,
    },
}

impl FindingKind {
    /// The stable kebab-case kind: the serialized tag, and what `data-finding` holds.
    pub fn key(&self) -> &'static str {
        match self {
            FindingKind::OutOfMemory { .. } => "out-of-memory",
            FindingKind::LeakSuspect { .. } => "leak-suspect",
            FindingKind::SuddenSpike { .. } => "sudden-spike",
            FindingKind::Fragmentation { .. } => "fragmentation",
            FindingKind::CacheOverhead { .. } => "cache-overhead",
            FindingKind::CachedFree { .. } => "cached-free",
            FindingKind::RoundingWaste { .. } => "rounding-waste",
            FindingKind::LongFreeWaits { .. } => "long-free-waits",
            FindingKind::WrappedTrace { .. } => "wrapped-trace",
        }
    }
}

/// Bytes held by one call site. [`crate::model::NO_STACK`] stands for the allocations
/// recorded without a stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackBytes {
    pub stack: StackId,
    pub bytes: u64,
}

/// Allocated bytes at the state where one training iteration starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Iteration {
    pub state: u32,
    pub allocated: u64,
}

/// Reserved and allocated bytes at one state, and what the allocator cached beyond use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overhead {
    pub state: u32,
    pub reserved: u64,
    pub allocated: u64,
    /// `reserved − allocated`.
    pub overhead: u64,
}

impl Overhead {
    fn new(state: u32, reserved: u64, allocated: u64) -> Self {
        Overhead {
            state,
            reserved,
            allocated,
            overhead: reserved.saturating_sub(allocated),
        }
    }

    /// Whether this overhead alone makes a finding.
    pub fn is_significant(&self) -> bool {
        self.overhead >= CACHE_OVERHEAD_MIN_BYTES
            && above_percent(self.overhead, self.reserved, CACHE_OVERHEAD_PERCENT)
    }
}

/// One final segment's free memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FreeSegment {
    pub address: u64,
    pub size: u64,
    pub free: u64,
    pub largest_free: u64,
    pub free_blocks: u32,
}

/// One allocation's wait between `free_requested` and `free_completed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wait {
    /// Index into [`DeviceFacts::allocations`].
    pub allocation: u32,
    pub size: u64,
    /// The `free_requested` row.
    pub requested_row: u32,
    /// Rows from the request to the completion (to the end of the trace when still waiting).
    pub rows: u32,
    /// Microseconds from the request to the completion, when both rows have times.
    pub us: Option<u64>,
    /// `false` when the free had not completed by the end of the trace.
    pub completed: bool,
}

/// Every finding about device `device` (an index into `analysed.snapshot.devices` and
/// `analysed.facts`), its out-of-memory errors first, then leaks and spikes, then what the
/// final segments show, then what limits the trace. Nothing for an unknown index.
pub fn findings(analysed: &Analysed, device: usize, categories: &DeviceCategories) -> Vec<Finding> {
    let (Some(dev), Some(facts)) = (
        analysed.snapshot.devices.get(device),
        analysed.facts.get(device),
    ) else {
        return Vec::new();
    };
    let mut out = out_of_memory(dev, facts, categories);
    out.extend(leak_suspect(facts, &categories.phases));
    out.extend(sudden_spike(facts, categories));
    out.extend(fragmentation(dev, facts));
    out.extend(cache_overhead(dev, facts));
    out.extend(cached_free(dev, facts));
    out.extend(rounding_waste(dev, facts));
    out.extend(long_free_waits(dev, facts));
    out.extend(wrapped_trace(facts));
    out
}

/// `part > whole × percent / 100`, without overflow.
fn above_percent(part: u64, whole: u64, percent: u64) -> bool {
    part as u128 * 100 > whole as u128 * percent as u128
}

/// `part ≥ whole × percent / 100`, without overflow.
fn at_least_percent(part: u64, whole: u64, percent: u64) -> bool {
    part as u128 * 100 >= whole as u128 * percent as u128
}

/// The state in which the effect of `row` is first visible (`None`: before the first row).
fn state_after(row: Option<u32>) -> u32 {
    row.map_or(0, |r| r.saturating_add(1))
}

/// Allocation indices by `weight`, the heaviest first (ties in index order), at most
/// [`MAX_ALLOCATIONS`].
fn heaviest_first(mut weighted: Vec<(u64, u32)>) -> Vec<u32> {
    weighted.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    weighted.truncate(MAX_ALLOCATIONS);
    weighted.into_iter().map(|(_, i)| i).collect()
}

/// The `top` call sites with the most bytes.
fn top_stacks(bytes: FxHashMap<StackId, u64>, top: usize) -> Vec<StackBytes> {
    let mut stacks: Vec<StackBytes> = bytes
        .into_iter()
        .filter(|&(_, bytes)| bytes > 0)
        .map(|(stack, bytes)| StackBytes { stack, bytes })
        .collect();
    stacks.sort_unstable_by(|a, b| b.bytes.cmp(&a.bytes).then(a.stack.cmp(&b.stack)));
    stacks.truncate(top);
    stacks
}

/// Live bytes per call site at `state`.
fn stack_bytes_at(facts: &DeviceFacts, state: u32) -> FxHashMap<StackId, u64> {
    let mut bytes: FxHashMap<StackId, u64> = FxHashMap::default();
    for a in facts.allocations.iter().filter(|a| a.is_alive_at(state)) {
        *bytes.entry(a.stack).or_default() += a.size;
    }
    bytes
}

fn role_of(categories: &DeviceCategories, index: usize) -> Role {
    categories
        .roles
        .get(index)
        .copied()
        .unwrap_or(Role::Unknown)
}

fn out_of_memory(
    device: &Device,
    facts: &DeviceFacts,
    categories: &DeviceCategories,
) -> Vec<Finding> {
    let trace = &device.trace;
    (0..trace.len())
        .filter(|&r| trace.action[r] == Action::Oom)
        .take(MAX_OOM_FINDINGS)
        .map(|r| {
            let row = r as u32;
            let state = row + 1;
            let mut roles = vec![0u64; Role::ALL.len()];
            let mut stacks: FxHashMap<StackId, u64> = FxHashMap::default();
            let mut live = Vec::new();
            for (i, a) in facts.allocations.iter().enumerate() {
                if a.is_alive_at(state) {
                    roles[role_of(categories, i) as usize] += a.size;
                    *stacks.entry(a.stack).or_default() += a.size;
                    live.push((a.size, i as u32));
                }
            }
            Finding {
                kind: FindingKind::OutOfMemory {
                    row,
                    requested: trace.size[r],
                    device_free: trace.addr[r],
                    allocated: facts.allocated_at(state),
                    reserved: facts.reserved_after(Some(row)),
                    live: live.len() as u32,
                    roles,
                    stacks: top_stacks(stacks, OOM_TOP_STACKS),
                },
                allocations: heaviest_first(live),
            }
        })
        .collect()
}

/// The states where training iterations start: where each run of forward rows starts. When
/// the trace also has backward or optimizer rows, a forward run counts only after one of
/// them, so a forward interrupted by a stray setup allocation is still one iteration.
fn iteration_starts(phases: &RowPhases) -> Vec<u32> {
    let rows = phases.phase.len();
    let trains = |p: Phase| matches!(p, Phase::Backward | Phase::OptimizerStep | Phase::ZeroGrad);
    let training = phases.phase[..rows].iter().any(|&p| trains(p));
    let mut starts = Vec::new();
    let mut trained_since = true;
    for r in 0..rows {
        let phase = phases.phase[r];
        if trains(phase) {
            trained_since = true;
        }
        let new_run = r == 0 || phase != phases.phase[r - 1];
        if phase == Phase::Forward && new_run && (trained_since || !training) {
            starts.push(r as u32);
            trained_since = false;
        }
    }
    starts
}

fn leak_suspect(facts: &DeviceFacts, phases: &RowPhases) -> Option<Finding> {
    let iterations: Vec<Iteration> = iteration_starts(phases)
        .into_iter()
        .map(|state| Iteration {
            state,
            allocated: facts.allocated_at(state),
        })
        .collect();
    if iterations.len() < LEAK_MIN_ITERATIONS {
        return None;
    }
    // The first iteration is a warm-up: optimizer state, workspaces and caches are made once
    // there, so growth counts from the second iteration on, and must be steady.
    let measured = &iterations[1..];
    if !measured.windows(2).all(|w| w[1].allocated > w[0].allocated) {
        return None;
    }
    let (first, last) = (measured[0], measured[measured.len() - 1]);
    let growth = last.allocated - first.allocated;
    let peak = facts.peak_allocated.bytes;
    if growth < LEAK_MIN_GROWTH_BYTES
        && !at_least_percent(growth, peak, LEAK_MIN_GROWTH_PERCENT_OF_PEAK)
    {
        return None;
    }
    let before = stack_bytes_at(facts, first.state);
    let mut grown = stack_bytes_at(facts, last.state);
    for (stack, bytes) in grown.iter_mut() {
        *bytes = bytes.saturating_sub(before.get(stack).copied().unwrap_or(0));
    }
    let stacks = top_stacks(grown, LEAK_TOP_STACKS);
    // What was made since the very first iteration and is still alive: the leaked tensors of
    // every iteration, warm-up included.
    let since = iterations[0].state;
    let kept = facts
        .allocations
        .iter()
        .enumerate()
        .filter(|(_, a)| {
            a.origin() == Origin::Trace
                && a.alive_states().0 > since
                && a.is_alive_at(last.state)
                && stacks.iter().any(|s| s.stack == a.stack)
        })
        .map(|(i, a)| (a.size, i as u32))
        .collect();
    Some(Finding {
        kind: FindingKind::LeakSuspect {
            iterations,
            growth,
            peak_allocated: peak,
            stacks,
        },
        allocations: heaviest_first(kept),
    })
}

fn sudden_spike(facts: &DeviceFacts, categories: &DeviceCategories) -> Option<Finding> {
    let peak = facts.peak_allocated.bytes;
    let spikes: Vec<(u64, u32)> = facts
        .allocations
        .iter()
        .enumerate()
        .filter(|(_, a)| {
            a.origin() == Origin::Trace
                && a.size >= SPIKE_MIN_BYTES
                && at_least_percent(a.size, peak, SPIKE_PERCENT_OF_PEAK)
        })
        .map(|(i, a)| (a.size, i as u32))
        .collect();
    let count = spikes.len() as u32;
    let allocations = heaviest_first(spikes);
    let &largest = allocations.first()?;
    let a = facts.allocations.at(largest as usize);
    Some(Finding {
        kind: FindingKind::SuddenSpike {
            size: a.size,
            row: a.alloc_row,
            stack: a.stack,
            role: role_of(categories, largest as usize),
            peak_allocated: peak,
            count,
        },
        allocations,
    })
}

fn fragmentation(device: &Device, facts: &DeviceFacts) -> Option<Finding> {
    let mut reserved = 0u64;
    let mut free = 0u64;
    let mut largest_free = 0u64;
    let mut free_blocks = 0u32;
    let mut segments: Vec<FreeSegment> = Vec::new();
    for segment in &device.segments {
        reserved += segment.total_size;
        let range = segment.blocks.start as usize..segment.blocks.end as usize;
        let blocks = device.blocks.get(range).unwrap_or(&[]);
        let mut this = FreeSegment {
            address: segment.address,
            size: segment.total_size,
            free: 0,
            largest_free: 0,
            free_blocks: 0,
        };
        let mut used = false;
        for b in blocks {
            if b.state == BlockState::Inactive {
                this.free += b.size;
                this.largest_free = this.largest_free.max(b.size);
                this.free_blocks += 1;
            } else {
                used = true;
            }
        }
        // A wholly free segment is cache, not fragmentation: the allocator releases it
        // before it reports an out-of-memory. Free blocks beside live ones stay reserved.
        if used && this.free > 0 {
            free += this.free;
            largest_free = largest_free.max(this.largest_free);
            free_blocks += this.free_blocks;
            segments.push(this);
        }
    }
    let significant = free >= FRAGMENTATION_FLOOR_BYTES
        && (free >= FRAGMENTATION_MIN_FREE_BYTES
            || at_least_percent(free, reserved, FRAGMENTATION_MIN_FREE_PERCENT));
    let fragmented = !at_least_percent(largest_free, free, FRAGMENTATION_LARGEST_FREE_PERCENT);
    if !(significant && fragmented) {
        return None;
    }
    let segment_count = segments.len() as u32;
    segments.sort_unstable_by(|a, b| {
        b.free
            .cmp(&a.free)
            .then(a.largest_free.cmp(&b.largest_free))
            .then(a.address.cmp(&b.address))
    });
    segments.truncate(FRAGMENTATION_WORST_SEGMENTS);
    // The allocations still alive in those segments pin their free blocks apart.
    let mut spans: Vec<(u64, u64)> = segments
        .iter()
        .map(|s| (s.address, s.address.saturating_add(s.size)))
        .collect();
    spans.sort_unstable();
    let pinning = facts
        .allocations
        .iter()
        .enumerate()
        .filter(|(_, a)| a.is_alive_at_end() && inside(&spans, a.addr, 1))
        .map(|(i, a)| (a.size, i as u32))
        .collect();
    Some(Finding {
        kind: FindingKind::Fragmentation {
            reserved,
            free,
            largest_free,
            free_blocks,
            segments: segment_count,
            worst: segments,
        },
        allocations: heaviest_first(pinning),
    })
}

/// Whether `[addr, addr + size)` lies within one of `spans` (`[start, end)`, sorted, not
/// overlapping).
fn inside(spans: &[(u64, u64)], addr: u64, size: u64) -> bool {
    let i = spans.partition_point(|&(start, _)| start <= addr);
    i > 0 && addr.saturating_add(size) <= spans[i - 1].1
}

fn cache_overhead(device: &Device, facts: &DeviceFacts) -> Option<Finding> {
    let rows = device.trace.len() as u32;
    let peak = facts.peak_reserved;
    // Reserved stays at its peak until the next row that changes it; the overhead there is
    // measured where allocated is highest, so it is what the peak reserve never used.
    let from = state_after(peak.row);
    let next_change = facts
        .reserved_changes
        .iter()
        .map(|&(row, _)| row)
        .find(|&row| peak.row.is_none_or(|p| row > p));
    let to = next_change.unwrap_or(rows).min(rows);
    let (mut best_state, mut best) = (from, facts.allocated_at(from));
    for state in from.saturating_add(1)..=to {
        let allocated = facts.allocated_at(state);
        if allocated > best {
            (best_state, best) = (state, allocated);
        }
    }
    let at_peak_reserved = Overhead::new(best_state, peak.bytes, best);
    let end_reserved = match rows {
        0 => facts.baseline_reserved,
        n => facts.reserved_after(Some(n - 1)),
    };
    let at_end = Overhead::new(rows, end_reserved, facts.allocated_at_end());
    if !(at_peak_reserved.is_significant() || at_end.is_significant()) {
        return None;
    }
    Some(Finding {
        kind: FindingKind::CacheOverhead {
            at_peak_reserved,
            at_end,
        },
        // Cached memory belongs to no allocation; `cached-free` lists what was freed there.
        allocations: Vec::new(),
    })
}

fn cached_free(device: &Device, facts: &DeviceFacts) -> Option<Finding> {
    let mut spans: Vec<(u64, u64)> = device
        .blocks
        .iter()
        .filter(|b| b.state == BlockState::Inactive)
        .map(|b| (b.address, b.address.saturating_add(b.size)))
        .collect();
    let bytes: u64 = spans.iter().map(|&(start, end)| end - start).sum();
    if bytes <= CACHED_FREE_MIN_BYTES {
        return None;
    }
    let largest = spans.iter().map(|&(start, end)| end - start).max()?;
    let blocks = spans.len() as u32;
    spans.sort_unstable();
    // The allocations freed last into those blocks: the memory they held is what is cached.
    let mut last_freed: FxHashMap<u64, (u32, u32)> = FxHashMap::default();
    for (i, a) in facts.allocations.iter().enumerate() {
        if a.free_row != NO_ROW && inside(&spans, a.addr, a.size.max(1)) {
            let entry = last_freed.entry(a.addr).or_insert((a.free_row, i as u32));
            if a.free_row >= entry.0 {
                *entry = (a.free_row, i as u32);
            }
        }
    }
    let freed = last_freed
        .into_values()
        .map(|(_, i)| (facts.allocations.size(i as usize), i))
        .collect();
    Some(Finding {
        kind: FindingKind::CachedFree {
            bytes,
            blocks,
            largest,
            reserved: device.segments.iter().map(|s| s.total_size).sum(),
        },
        allocations: heaviest_first(freed),
    })
}

fn rounding_waste(device: &Device, facts: &DeviceFacts) -> Option<Finding> {
    let (mut waste, mut allocated, mut requested, mut blocks) = (0u64, 0u64, 0u64, 0u32);
    let mut wasteful: Vec<(u64, u64)> = Vec::new();
    // Legacy (2.0) blocks do not record what was requested: they count for nothing.
    for b in device.blocks.iter().filter(|b| b.state.is_allocated()) {
        let Some(asked) = b.requested_size else {
            continue;
        };
        let padding = b.size.saturating_sub(asked);
        waste += padding;
        allocated += b.size;
        requested += asked.min(b.size);
        blocks += 1;
        if padding > 0 {
            wasteful.push((padding, b.address));
        }
    }
    if waste < ROUNDING_WASTE_MIN_BYTES || !above_percent(waste, allocated, ROUNDING_WASTE_PERCENT)
    {
        return None;
    }
    let by_address = facts.alive_at_end_by_address();
    let behind = wasteful
        .into_iter()
        .filter_map(|(padding, addr)| by_address.get(&addr).map(|&i| (padding, i)))
        .collect();
    Some(Finding {
        kind: FindingKind::RoundingWaste {
            waste,
            allocated,
            requested,
            blocks,
        },
        allocations: heaviest_first(behind),
    })
}

fn long_free_waits(device: &Device, facts: &DeviceFacts) -> Option<Finding> {
    let trace = &device.trace;
    let rows = trace.len() as u32;
    let time = |row: u32| {
        trace
            .time_us
            .get(row as usize)
            .copied()
            .filter(|&t| t != NO_TIME)
    };
    let peak_state = state_after(facts.peak_allocated.row);
    let (mut waits, mut waited_bytes, mut pending_at_peak) = (0u32, 0u64, 0u64);
    let mut longest_in_rows: Option<Wait> = None;
    let mut longest_in_time: Option<Wait> = None;
    let mut waited = Vec::new();
    for (i, a) in facts.allocations.iter().enumerate() {
        let requested = a.free_requested_row;
        if requested == NO_ROW {
            continue;
        }
        let completed = a.free_row != NO_ROW;
        let end = if completed { a.free_row } else { rows };
        if end <= requested {
            continue;
        }
        if requested < peak_state && (!completed || a.free_row >= peak_state) {
            pending_at_peak += a.size;
        }
        // A free with nothing on other streams completes on the very next row.
        if end - requested <= 1 {
            continue;
        }
        let us = match (time(requested), completed.then(|| time(end)).flatten()) {
            (Some(from), Some(to)) if to >= from => Some((to - from) as u64),
            _ => None,
        };
        let wait = Wait {
            allocation: i as u32,
            size: a.size,
            requested_row: requested,
            rows: end - requested,
            us,
            completed,
        };
        waits += 1;
        waited_bytes += a.size;
        waited.push((a.size, i as u32));
        if longest_in_rows.is_none_or(|w| (wait.rows, wait.size) > (w.rows, w.size)) {
            longest_in_rows = Some(wait);
        }
        if us.is_some() && longest_in_time.is_none_or(|w| (wait.us, wait.size) > (w.us, w.size)) {
            longest_in_time = Some(wait);
        }
    }
    let longest_in_rows = longest_in_rows?;
    let long = longest_in_rows.rows >= LONG_WAIT_ROWS
        || longest_in_time.is_some_and(|w| w.us.unwrap_or(0) >= LONG_WAIT_US);
    if !(long || pending_at_peak >= PENDING_FREE_MIN_BYTES) {
        return None;
    }
    Some(Finding {
        kind: FindingKind::LongFreeWaits {
            waits,
            waited_bytes,
            longest_in_rows,
            longest_in_time,
            pending_at_peak,
            peak_state,
        },
        allocations: heaviest_first(waited),
    })
}

fn wrapped_trace(facts: &DeviceFacts) -> Option<Finding> {
    let (before, freed_during_trace, still_alive) =
        facts.warnings.iter().find_map(|w| match *w {
            Warning::RingBufferWrapped {
                before,
                freed_during_trace,
                still_alive,
            } => Some((before, freed_during_trace, still_alive)),
            _ => None,
        })?;
    let (mut freed_bytes, mut alive_bytes) = (0u64, 0u64);
    let mut earlier = Vec::new();
    for (i, a) in facts.allocations.iter().enumerate() {
        match a.origin() {
            Origin::Trace => continue,
            Origin::FreedBeforeAlloc => freed_bytes += a.size,
            Origin::LiveBlock => alive_bytes += a.size,
        }
        earlier.push((a.size, i as u32));
    }
    Some(Finding {
        kind: FindingKind::WrappedTrace {
            before,
            freed_during_trace,
            still_alive,
            freed_bytes,
            alive_bytes,
        },
        allocations: heaviest_first(earlier),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Block, Segment, Snapshot, Trace, TraceRow, NO_STACK};

    fn analysed(device: Device) -> Analysed {
        Analysed::new(Snapshot {
            devices: vec![device],
            ..Snapshot::default()
        })
    }

    fn categories(analysed: &Analysed) -> DeviceCategories {
        DeviceCategories {
            roles: vec![Role::Unknown; analysed.facts[0].allocations.len()],
            ..DeviceCategories::default()
        }
    }

    fn device(rows: &[(Action, u64, u64)], blocks: &[(u64, BlockState, Option<u64>)]) -> Device {
        let mut trace = Trace::default();
        for &(action, addr, size) in rows {
            trace.push(TraceRow {
                addr,
                size,
                ..TraceRow::new(action)
            });
        }
        trace.finish();
        let mut address = 0x1000;
        let blocks: Vec<Block> = blocks
            .iter()
            .map(|&(size, state, requested_size)| {
                let block = Block {
                    address,
                    size,
                    requested_size,
                    state,
                    stack: NO_STACK,
                    ..Block::default()
                };
                address += size;
                block
            })
            .collect();
        let segments = if blocks.is_empty() {
            vec![]
        } else {
            vec![Segment {
                address: 0x1000,
                total_size: address - 0x1000,
                blocks: 0..blocks.len() as u32,
                ..Segment::default()
            }]
        };
        Device {
            id: 0,
            has_trace_list: true,
            trace,
            segments,
            blocks,
            reported: None,
        }
    }

    fn keys(found: &[Finding]) -> Vec<&'static str> {
        found.iter().map(Finding::key).collect()
    }

    #[test]
    fn keys_are_the_serialized_tags() {
        let overhead = Overhead::new(1, 10, 4);
        let wait = Wait {
            allocation: 0,
            size: 1,
            requested_row: 0,
            rows: 2,
            us: None,
            completed: true,
        };
        let all = [
            FindingKind::OutOfMemory {
                row: 1,
                requested: 2,
                device_free: 3,
                allocated: 4,
                reserved: 5,
                live: 6,
                roles: vec![0; Role::ALL.len()],
                stacks: vec![StackBytes { stack: 1, bytes: 2 }],
            },
            FindingKind::LeakSuspect {
                iterations: vec![Iteration {
                    state: 1,
                    allocated: 2,
                }],
                growth: 1,
                peak_allocated: 2,
                stacks: vec![],
            },
            FindingKind::SuddenSpike {
                size: 1,
                row: 2,
                stack: NO_STACK,
                role: Role::Activations,
                peak_allocated: 3,
                count: 1,
            },
            FindingKind::Fragmentation {
                reserved: 1,
                free: 1,
                largest_free: 1,
                free_blocks: 1,
                segments: 1,
                worst: vec![],
            },
            FindingKind::CacheOverhead {
                at_peak_reserved: overhead,
                at_end: overhead,
            },
            FindingKind::CachedFree {
                bytes: 1,
                blocks: 1,
                largest: 1,
                reserved: 1,
            },
            FindingKind::RoundingWaste {
                waste: 1,
                allocated: 2,
                requested: 1,
                blocks: 1,
            },
            FindingKind::LongFreeWaits {
                waits: 1,
                waited_bytes: 1,
                longest_in_rows: wait,
                longest_in_time: None,
                pending_at_peak: 0,
                peak_state: 0,
            },
            FindingKind::WrappedTrace {
                before: 1,
                freed_during_trace: 1,
                still_alive: 0,
                freed_bytes: 1,
                alive_bytes: 0,
            },
        ];
        for kind in all {
            let json = serde_json::to_value(&kind).unwrap();
            let tag = json.as_object().unwrap().keys().next().unwrap().clone();
            assert_eq!(tag, kind.key());
            assert_eq!(serde_json::from_value::<FindingKind>(json).unwrap(), kind);
        }
    }

    #[test]
    fn odd_input_finds_nothing() {
        let empty = Analysed::default();
        assert!(findings(&empty, 0, &DeviceCategories::default()).is_empty());
        let a = analysed(device(&[], &[]));
        assert!(findings(&a, 0, &categories(&a)).is_empty());
        assert!(findings(&a, 7, &categories(&a)).is_empty());
        // Categories that do not match the allocations are tolerated.
        let a = analysed(device(
            &[
                (Action::Alloc, 0x1000, 300 * MIB),
                (Action::Oom, 0, 1 << 40),
            ],
            &[(300 * MIB, BlockState::ActiveAllocated, Some(300 * MIB))],
        ));
        let found = findings(&a, 0, &DeviceCategories::default());
        assert_eq!(keys(&found), ["out-of-memory", "sudden-spike"]);
    }

    #[test]
    fn iterations_start_at_forwards_that_follow_training() {
        use Phase::*;
        let phases = |p: &[Phase]| RowPhases::new(p.to_vec());
        let training = phases(&[
            Other,
            Forward,
            Setup,
            Forward,
            Backward,
            OptimizerStep,
            Forward,
            Forward,
            Backward,
        ]);
        assert_eq!(iteration_starts(&training), [1, 6]);
        let inference = phases(&[Forward, Other, Forward, Forward, Other, Forward]);
        assert_eq!(iteration_starts(&inference), [0, 2, 5]);
        assert!(iteration_starts(&RowPhases::default()).is_empty());
    }

    #[test]
    fn rounding_waste_counts_padding_of_allocated_blocks_only() {
        let a = analysed(device(
            &[(Action::Alloc, 0x1000, 900 * MIB)],
            &[
                (1000 * MIB, BlockState::ActiveAllocated, Some(900 * MIB)),
                (50 * MIB, BlockState::Inactive, Some(0)),
            ],
        ));
        let found = findings(&a, 0, &categories(&a));
        let waste = found.iter().find(|f| f.key() == "rounding-waste").unwrap();
        assert_eq!(
            waste.kind,
            FindingKind::RoundingWaste {
                waste: 100 * MIB,
                allocated: 1000 * MIB,
                requested: 900 * MIB,
                blocks: 1,
            }
        );
        assert_eq!(waste.allocations, [0]);
    }

    #[test]
    fn percent_checks_do_not_overflow() {
        assert!(above_percent(u64::MAX, u64::MAX, 99));
        assert!(!above_percent(10, 100, 10));
        assert!(at_least_percent(10, 100, 10));
        assert!(at_least_percent(0, 0, 50));
    }
}
