//! Findings about one device's memory: the patterns worth a user's attention — cached memory
//! that did not serve a request that then failed or that grows from one iteration to the next
//! (a training loop's cache, reused every iteration, is none), segments reserved because the
//! cached memory was too fragmented to serve a request,
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

use crate::analysis::allocator::rules::SizeRules;
use crate::analysis::allocator::{AllocatorHistory, SegmentPool};
use crate::analysis::moment::state_after;
use crate::model::{Row, State};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::analysis::categories::phases::RowPhases;
use crate::analysis::categories::signals::Phase;
use crate::analysis::categories::{DeviceCategories, Role};
use crate::analysis::{Analysed, Warning};
use crate::analysis::{DeviceFacts, Origin, NO_ROW};
use crate::model::{Action, BlockState, Device, SegmentType, Snapshot, StackId, Trace, NO_TIME};

const MIB: u64 = 1 << 20;

/// At most this many allocations are listed behind a finding.
pub const MAX_ALLOCATIONS: usize = 50;

/// Cached memory matters when at least this much is cached where it hurts (at an
/// out-of-memory, or grown across iterations); below it no one should change a setting (a
/// small program always reserves a few 2 MiB and 20 MiB segments it barely fills).
pub const CACHE_OVERHEAD_MIN_BYTES: u64 = 64 * MIB;

/// The largest request the allocator serves from its small pool, whose segments are
/// [`SMALL_SEGMENT_BYTES`].
pub const SMALL_REQUEST_MAX_BYTES: u64 = MIB;
pub const SMALL_SEGMENT_BYTES: u64 = 2 * MIB;

/// Fragmentation: a request that got a new segment while the cache held its bytes in pieces
/// counts when that cached memory was at least this much…
pub const FRAGMENTATION_MIN_BYTES: u64 = 256 * MIB;
/// …or to this share of the peak reserved…
pub const FRAGMENTATION_MIN_PERCENT: u64 = 10;
/// …and never below this much (10% of a tiny reserve is nothing to act on).
pub const FRAGMENTATION_FLOOR_BYTES: u64 = 64 * MIB;

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
    /// What the file's allocator settings already turn on: advice never recommends them again.
    #[serde(default)]
    pub settings: SettingsOn,
}

/// The allocator settings a file says were on (its `allocator_settings`, or for older files
/// its expandable segments).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsOn {
    pub expandable_segments: bool,
    /// `max_split_size_mb`, in bytes, when set.
    pub max_split_size: Option<u64>,
}

impl SettingsOn {
    /// The settings of `device` of `snapshot`.
    pub fn of(snapshot: &Snapshot, device: &Device) -> SettingsOn {
        let expandable = device.segments.iter().any(|s| s.is_expandable);
        let rules = SizeRules::from_settings(snapshot.allocator_settings.as_ref(), expandable);
        SettingsOn {
            expandable_segments: rules.expandable_segments,
            max_split_size: (rules.max_split_size != u64::MAX).then_some(rules.max_split_size),
        }
    }
}

impl Finding {
    /// A finding with the allocations behind it; [`findings`] sets its settings.
    pub fn new(kind: FindingKind, allocations: Vec<u32>) -> Finding {
        Finding {
            kind,
            allocations,
            settings: SettingsOn::default(),
        }
    }

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
        row: Row,
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
        row: Row,
        stack: StackId,
        role: Role,
        peak_allocated: u64,
        count: u32,
    },
    /// `requests` requests made the allocator reserve a new segment (`reserved_for_them`
    /// bytes in all, each still reserved when reserved memory peaks at `peak_reserved`, state
    /// `peak_state`, the state of that peak with the most allocated) although the memory it had
    /// cached in their pool on their stream would have held them: no free block was large
    /// enough. `worst` is the one with the most cached memory it could not use.
    ///
    /// What the pieces cost at the peak, `wasted`, is at most what sat cached and free there in
    /// those pools (`cached_free_at_peak`): had the pieces been one block, the peak reserve could
    /// have been that much lower, and no more.
    Fragmentation {
        requests: u32,
        reserved_for_them: u64,
        worst: FragmentedRequest,
        peak_reserved: u64,
        #[serde(default)]
        peak_state: State,
        #[serde(default)]
        cached_free_at_peak: u64,
        #[serde(default)]
        wasted: u64,
    },
    /// Cached memory that mattered: see [`CacheReason`].
    CachedMemory { reason: CacheReason },
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
        peak_state: State,
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
            FindingKind::CachedMemory { .. } => "cached-memory",
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
    pub state: State,
    pub allocated: u64,
}

/// Reserved and allocated bytes at one state, and what the allocator cached beyond use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overhead {
    pub state: State,
    pub reserved: u64,
    pub allocated: u64,
    /// `reserved − allocated`.
    pub overhead: u64,
}

impl Overhead {
    fn new(state: State, reserved: u64, allocated: u64) -> Self {
        Overhead {
            state,
            reserved,
            allocated,
            overhead: reserved.saturating_sub(allocated),
        }
    }
}

/// Why cached memory is a finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheReason {
    /// The request at trace row `row` (`requested` bytes) failed while the allocator held
    /// `at.overhead` bytes cached that it could not give it.
    AtOutOfMemory {
        row: Row,
        requested: u64,
        at: Overhead,
    },
    /// Cached memory at the start of each iteration after the first (warm-up) one grew by
    /// `growth` bytes while reserved memory never shrank: the cache does not settle.
    Growing {
        iterations: Vec<Overhead>,
        growth: u64,
    },
}

/// A request the cache held the bytes for but could not serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FragmentedRequest {
    /// Its `alloc` row.
    pub row: Row,
    pub requested: u64,
    /// Cached free bytes in its pool on its stream just before.
    pub cached_free: u64,
    /// The segment reserved for it, and the row that reserved it.
    pub segment: u64,
    pub segment_row: Row,
    /// The largest cached free block in its pool on its stream just before, as the
    /// allocator's history rebuilds it (`None` where it could not be rebuilt): smaller than
    /// the request, or the cache would have served it.
    #[serde(default)]
    pub largest_free_block: Option<u64>,
}

/// One allocation's wait between `free_requested` and `free_completed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wait {
    /// Index into [`DeviceFacts::allocations`].
    pub allocation: u32,
    pub size: u64,
    /// The `free_requested` row.
    pub requested_row: Row,
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
    let fragmented = fragmentation(&analysed.snapshot, dev, facts);
    let was_fragmented = fragmented.is_some();
    out.extend(fragmented);
    out.extend(cached_memory(
        dev,
        facts,
        &categories.phases,
        was_fragmented,
    ));
    out.extend(rounding_waste(dev, facts));
    out.extend(long_free_waits(dev, facts));
    out.extend(wrapped_trace(facts));
    let settings = SettingsOn::of(&analysed.snapshot, dev);
    for finding in &mut out {
        finding.settings = settings;
    }
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
            let state = state_after(row);
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
            Finding::new(
                FindingKind::OutOfMemory {
                    row: Row::new(row),
                    requested: trace.size[r],
                    device_free: trace.addr[r],
                    allocated: facts.allocated_at(state),
                    reserved: facts.reserved_after(Some(row)),
                    live: live.len() as u32,
                    roles,
                    stacks: top_stacks(stacks, OOM_TOP_STACKS),
                },
                heaviest_first(live),
            )
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
            state: State::new(state),
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
    let before = stack_bytes_at(facts, first.state.get());
    let mut grown = stack_bytes_at(facts, last.state.get());
    for (stack, bytes) in grown.iter_mut() {
        *bytes = bytes.saturating_sub(before.get(stack).copied().unwrap_or(0));
    }
    let stacks = top_stacks(grown, LEAK_TOP_STACKS);
    // What was made since the very first iteration and is still alive: the leaked tensors of
    // every iteration, warm-up included.
    let since = iterations[0].state.get();
    let kept = facts
        .allocations
        .iter()
        .enumerate()
        .filter(|(_, a)| {
            a.origin() == Origin::Trace
                && a.alive_states().0 > since
                && a.is_alive_at(last.state.get())
                && stacks.iter().any(|s| s.stack == a.stack)
        })
        .map(|(i, a)| (a.size, i as u32))
        .collect();
    Some(Finding::new(
        FindingKind::LeakSuspect {
            iterations,
            growth,
            peak_allocated: peak,
            stacks,
        },
        heaviest_first(kept),
    ))
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
    Some(Finding::new(
        FindingKind::SuddenSpike {
            size: a.size,
            row: Row::new(a.alloc_row),
            stack: a.stack,
            role: role_of(categories, largest as usize),
            peak_allocated: peak,
            count,
        },
        allocations,
    ))
}

/// The caching allocator's pools: requests of at most 1 MiB are served from 2 MiB segments
/// of their own, larger ones from the rest; memory cached in one never serves the other, nor
/// a request on another stream.
fn pool_of_request(size: u64) -> bool {
    size > SMALL_REQUEST_MAX_BYTES
}

fn pool_of_segment(size: u64, segment_type: SegmentType) -> bool {
    match segment_type {
        SegmentType::Large => true,
        SegmentType::Small => false,
        SegmentType::Unknown => size != SMALL_SEGMENT_BYTES,
    }
}

/// Cached free bytes (reserved − allocated) of each pool on each stream, replayed row by row
/// from the end the final segments show back to the start the trace implies.
struct PoolFree {
    /// `(raw stream, large pool)` → reserved − allocated at the start of the trace.
    free: FxHashMap<(u64, bool), i128>,
}

impl PoolFree {
    fn new(snapshot: &Snapshot, device: &Device) -> PoolFree {
        let mut free: FxHashMap<(u64, bool), i128> = FxHashMap::default();
        for segment in &device.segments {
            let key = (
                segment.stream,
                pool_of_segment(segment.total_size, segment.segment_type),
            );
            let range = segment.blocks.start as usize..segment.blocks.end as usize;
            let allocated: u64 = device
                .blocks
                .get(range)
                .unwrap_or(&[])
                .iter()
                .filter(|b| b.state.is_allocated())
                .map(|b| b.requested_size.unwrap_or(b.size))
                .sum();
            *free.entry(key).or_default() += segment.total_size as i128 - allocated as i128;
        }
        let trace = &device.trace;
        for r in 0..trace.len() {
            if let Some((key, delta)) = Self::change(snapshot, trace, r) {
                *free.entry(key).or_default() -= delta;
            }
        }
        PoolFree { free }
    }

    /// What row `r` changes: the pool and the change of its cached free bytes.
    fn change(snapshot: &Snapshot, trace: &Trace, r: usize) -> Option<((u64, bool), i128)> {
        let stream = snapshot
            .streams
            .get(trace.stream[r] as usize)
            .copied()
            .unwrap_or(0);
        let size = trace.size[r];
        let (large, delta) = match trace.action[r] {
            Action::Alloc => (pool_of_request(size), -(size as i128)),
            Action::FreeCompleted => (pool_of_request(size), size as i128),
            Action::SegmentAlloc | Action::SegmentMap => {
                (pool_of_segment(size, SegmentType::Unknown), size as i128)
            }
            Action::SegmentFree | Action::SegmentUnmap => {
                (pool_of_segment(size, SegmentType::Unknown), -(size as i128))
            }
            _ => return None,
        };
        Some(((stream, large), delta))
    }
}

/// Fragmentation where it hurts: requests for which the allocator reserved a new segment, still
/// reserved when reserved memory peaks, although the memory it had cached in that request's
/// pool, on its stream, would have held it — so no free block was large enough. Free memory
/// at the end hurts nobody and is not counted
/// (`docs/decisions/0002-cached-memory-findings-only-where-they-hurt.md`).
fn fragmentation(snapshot: &Snapshot, device: &Device, facts: &DeviceFacts) -> Option<Finding> {
    let trace = &device.trace;
    let peak_row = facts.peak_reserved.row?;
    let mut pools = PoolFree::new(snapshot, device);
    // Requests the cache held the bytes for, with their pool and the address of the segment
    // each got.
    let mut candidates: Vec<(FragmentedRequest, (u64, bool), u64)> = Vec::new();
    let mut pending: Option<(usize, u64, (u64, bool), i128)> = None;
    // Each pool's cached free bytes at the peak's state.
    let mut free_at_peak: FxHashMap<(u64, bool), i128> = FxHashMap::default();
    let mut peak_state: Option<(u32, u64)> = None;
    let mut plateau = true;
    for r in 0..trace.len() {
        let action = trace.action[r];
        if matches!(action, Action::SegmentAlloc | Action::SegmentMap) {
            let large = pool_of_segment(trace.size[r], SegmentType::Unknown);
            let stream = snapshot
                .streams
                .get(trace.stream[r] as usize)
                .copied()
                .unwrap_or(0);
            let free = pools.free.get(&(stream, large)).copied().unwrap_or(0);
            pending = Some((r, trace.size[r], (stream, large), free));
        } else if action == Action::Alloc {
            // The request a new segment was reserved for comes right after it.
            if let Some((segment_row, segment, pool, free)) = pending.take() {
                let requested = trace.size[r];
                if free >= requested as i128 && free > 0 {
                    let request = FragmentedRequest {
                        row: Row::new(r as u32),
                        requested,
                        cached_free: free as u64,
                        segment,
                        segment_row: Row::new(segment_row as u32),
                        largest_free_block: None,
                    };
                    candidates.push((request, pool, trace.addr[segment_row]));
                }
            }
        }
        if let Some((key, delta)) = PoolFree::change(snapshot, trace, r) {
            *pools.free.entry(key).or_default() += delta;
        }
        // The moment the pieces are weighed: while reserved memory first stays at its peak,
        // the state with the most allocated (a new segment is reserved a row before its
        // request takes it, and is not cached memory the pieces cost).
        if plateau && r >= peak_row as usize {
            if facts.reserved_after(Some(r as u32)) < facts.peak_reserved.bytes {
                plateau = false;
            } else {
                let allocated = facts.allocated_at(state_after(r as u32));
                if peak_state.is_none_or(|(_, most)| allocated > most) {
                    peak_state = Some((state_after(r as u32), allocated));
                    free_at_peak = pools.free.clone();
                }
            }
        }
    }
    // Where it hurts: segments still reserved when reserved memory peaks, which they raised.
    // One reserved and released in between cost nothing at the peak.
    let mut released: FxHashMap<u64, u32> = FxHashMap::default();
    for r in 0..=(peak_row as usize).min(trace.len().saturating_sub(1)) {
        if matches!(trace.action[r], Action::SegmentFree | Action::SegmentUnmap) {
            released.insert(trace.addr[r], r as u32);
        }
    }
    let at_peak: Vec<(FragmentedRequest, (u64, bool))> = candidates
        .into_iter()
        .filter(|(request, _, address)| {
            request.segment_row.get() <= peak_row
                && released
                    .get(address)
                    .is_none_or(|&f| f < request.segment_row.get())
        })
        .map(|(request, pool, _)| (request, pool))
        .collect();
    // Physics: in each pool, the pieces cost the peak at most what sat cached and free there.
    let mut reserved_by_pool: FxHashMap<(u64, bool), u64> = FxHashMap::default();
    for (request, pool) in &at_peak {
        *reserved_by_pool.entry(*pool).or_default() += request.segment;
    }
    let free_there =
        |pool: &(u64, bool)| free_at_peak.get(pool).copied().unwrap_or(0).max(0) as u64;
    let cached_free_at_peak: u64 = reserved_by_pool.keys().map(free_there).sum();
    let wasted: u64 = reserved_by_pool
        .iter()
        .map(|(pool, &reserved)| reserved.min(free_there(pool)))
        .sum();
    let (mut worst, worst_pool) = at_peak
        .iter()
        .max_by(|a, b| {
            a.0.cached_free
                .cmp(&b.0.cached_free)
                .then(b.0.row.cmp(&a.0.row))
        })
        .copied()?;
    let peak_reserved = facts.peak_reserved.bytes;
    // What hurts is how much of the peak reserve the pieces held twice over. Many small holes
    // beside the parameters of a large model (a few MiB among tens of GiB) are not worth a
    // setting.
    let significant = wasted >= FRAGMENTATION_FLOOR_BYTES
        && (wasted >= FRAGMENTATION_MIN_BYTES
            || at_least_percent(wasted, peak_reserved, FRAGMENTATION_MIN_PERCENT));
    if !significant {
        return None;
    }
    worst.largest_free_block = largest_free_block(snapshot, device, facts, &worst, worst_pool);
    // The allocations those segments were reserved for.
    let mut rows: Vec<u32> = at_peak.iter().map(|(r, _)| r.row.get()).collect();
    rows.sort_unstable();
    let behind = facts
        .allocations
        .iter()
        .enumerate()
        .filter(|(_, a)| a.origin() == Origin::Trace && rows.binary_search(&a.alloc_row).is_ok())
        .map(|(i, a)| (a.size, i as u32))
        .collect();
    Some(Finding::new(
        FindingKind::Fragmentation {
            requests: at_peak.len() as u32,
            reserved_for_them: at_peak.iter().map(|(r, _)| r.segment).sum(),
            worst,
            peak_reserved,
            peak_state: State::new(
                peak_state.map_or(facts.peak_reserved.state(), |(state, _)| state),
            ),
            cached_free_at_peak,
            wasted,
        },
        heaviest_first(behind),
    ))
}

/// The largest cached free block in `pool` (raw stream, large pool) just before `request`'s
/// segment was reserved, from the allocator's history; `None` when the history cannot be
/// reconciled with the trace there. Built only for a finding already worth showing: the
/// history costs a walk of the trace.
fn largest_free_block(
    snapshot: &Snapshot,
    device: &Device,
    facts: &DeviceFacts,
    request: &FragmentedRequest,
    (stream, large): (u64, bool),
) -> Option<u64> {
    let history = AllocatorHistory::new(snapshot, device, facts);
    if history.unreconciled().total() > 0 {
        return None;
    }
    let state = history.summary_at(facts, request.segment_row.get());
    state
        .segments
        .iter()
        .filter(|s| s.stream == stream && pool_of_segment(s.size, pool_type(s.pool)) == large)
        .map(|s| s.totals.largest_free_block)
        .max()
        .or(Some(0))
}

fn pool_type(pool: Option<SegmentPool>) -> SegmentType {
    match pool {
        Some(SegmentPool::Large) => SegmentType::Large,
        Some(SegmentPool::Small) => SegmentType::Small,
        None => SegmentType::Unknown,
    }
}

/// Memory the allocator keeps cached is reused by the next iteration and costs nothing, unless
/// it did not serve a request that then failed, or it keeps growing from one iteration to the
/// next: only then is it a finding.
fn cached_memory(
    device: &Device,
    facts: &DeviceFacts,
    phases: &RowPhases,
    fragmented: bool,
) -> Option<Finding> {
    let trace = &device.trace;
    let at_oom = (0..trace.len())
        .find(|&r| trace.action[r] == Action::Oom)
        .map(|r| {
            let row = Row::new(r as u32);
            let at = Overhead::new(
                State::after(row),
                facts.reserved_after(Some(row.get())),
                facts.allocated_at(State::after(row).get()),
            );
            (at, trace.size[r], trace.addr[r])
        })
        // Cached memory is to blame only when, usable, it would have served the request.
        .filter(|(o, requested, device_free)| {
            o.overhead >= CACHE_OVERHEAD_MIN_BYTES
                && o.overhead.saturating_add(*device_free) >= *requested
        })
        .map(|(o, _, _)| o);
    let reason = if let Some(at) = at_oom {
        let row = at.state.row_before().unwrap_or_default();
        CacheReason::AtOutOfMemory {
            row,
            requested: trace.size[row.index()],
            at,
        }
    } else if fragmented {
        // Growth the fragmentation finding already explains is not said twice.
        return None;
    } else {
        let starts: Vec<Overhead> = iteration_starts(phases)
            .into_iter()
            .map(|state| {
                let row = state.checked_sub(1);
                Overhead::new(
                    State::new(state),
                    facts.reserved_after(row),
                    facts.allocated_at(state),
                )
            })
            .collect();
        if starts.len() < LEAK_MIN_ITERATIONS {
            return None;
        }
        // As for leaks, the first iteration is a warm-up that fills the cache once.
        let measured = &starts[1..];
        let (first, last) = (measured[0], measured[measured.len() - 1]);
        let growth = last.overhead.saturating_sub(first.overhead);
        let steady = measured.windows(2).all(|w| w[1].reserved >= w[0].reserved);
        if !(steady && last.reserved > first.reserved && growth >= CACHE_OVERHEAD_MIN_BYTES) {
            return None;
        }
        CacheReason::Growing {
            iterations: starts,
            growth,
        }
    };
    Some(Finding::new(
        FindingKind::CachedMemory { reason },
        // Cached memory belongs to no allocation: what was freed last into the blocks cached
        // at the end is what the cache holds the room of.
        last_freed_into_cache(device, facts),
    ))
}

fn last_freed_into_cache(device: &Device, facts: &DeviceFacts) -> Vec<u32> {
    let mut spans: Vec<(u64, u64)> = device
        .blocks
        .iter()
        .filter(|b| b.state == BlockState::Inactive)
        .map(|b| (b.address, b.address.saturating_add(b.size)))
        .collect();
    spans.sort_unstable();
    let mut last_freed: FxHashMap<u64, (u32, u32)> = FxHashMap::default();
    for (i, a) in facts.allocations.iter().enumerate() {
        if a.free_row != NO_ROW && inside(&spans, a.addr, a.size.max(1)) {
            let entry = last_freed.entry(a.addr).or_insert((a.free_row, i as u32));
            if a.free_row >= entry.0 {
                *entry = (a.free_row, i as u32);
            }
        }
    }
    heaviest_first(
        last_freed
            .into_values()
            .map(|(_, i)| (facts.allocations.size(i as usize), i))
            .collect(),
    )
}

/// Whether `[addr, addr + size)` lies within one of `spans` (`[start, end)`, sorted, not
/// overlapping).
fn inside(spans: &[(u64, u64)], addr: u64, size: u64) -> bool {
    let i = spans.partition_point(|&(start, _)| start <= addr);
    i > 0 && addr.saturating_add(size) <= spans[i - 1].1
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
    Some(Finding::new(
        FindingKind::RoundingWaste {
            waste,
            allocated,
            requested,
            blocks,
        },
        heaviest_first(behind),
    ))
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
    let peak_state = facts.peak_allocated.state();
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
            requested_row: Row::new(requested),
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
    Some(Finding::new(
        FindingKind::LongFreeWaits {
            waits,
            waited_bytes,
            longest_in_rows,
            longest_in_time,
            pending_at_peak,
            peak_state: State::new(peak_state),
        },
        heaviest_first(waited),
    ))
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
    Some(Finding::new(
        FindingKind::WrappedTrace {
            before,
            freed_during_trace,
            still_alive,
            freed_bytes,
            alive_bytes,
        },
        heaviest_first(earlier),
    ))
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
        let overhead = Overhead::new(crate::model::State::new(1), 10, 4);
        let wait = Wait {
            allocation: 0,
            size: 1,
            requested_row: crate::model::Row::new(0),
            rows: 2,
            us: None,
            completed: true,
        };
        let all = [
            FindingKind::OutOfMemory {
                row: crate::model::Row::new(1),
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
                    state: crate::model::State::new(1),
                    allocated: 2,
                }],
                growth: 1,
                peak_allocated: 2,
                stacks: vec![],
            },
            FindingKind::SuddenSpike {
                size: 1,
                row: crate::model::Row::new(2),
                stack: NO_STACK,
                role: Role::Activations,
                peak_allocated: 3,
                count: 1,
            },
            FindingKind::Fragmentation {
                requests: 1,
                reserved_for_them: 1,
                worst: FragmentedRequest {
                    row: crate::model::Row::new(1),
                    requested: 1,
                    cached_free: 2,
                    segment: 2,
                    segment_row: crate::model::Row::new(0),
                    largest_free_block: None,
                },
                peak_reserved: 3,
                peak_state: crate::model::State::new(1),
                cached_free_at_peak: 1,
                wasted: 1,
            },
            FindingKind::CachedMemory {
                reason: CacheReason::AtOutOfMemory {
                    row: crate::model::Row::new(1),
                    requested: 2,
                    at: overhead,
                },
            },
            FindingKind::CachedMemory {
                reason: CacheReason::Growing {
                    iterations: vec![overhead],
                    growth: 1,
                },
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
                peak_state: crate::model::State::new(0),
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
