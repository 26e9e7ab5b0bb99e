//! Autocast's cached weight copies: under `torch.autocast`, the first op to use an fp32 weight
//! casts it to bf16/fp16 and the cast is cached until the region exits
//! (`at::autocast::cached_cast`, emptied by `autocast.__exit__`). Each copy is a weight in
//! another dtype, sized by the model and not by the batch or the sequence: a parameter
//! (`docs/roles.md`). Read as an activation it makes activations look constant across context
//! lengths, and a bf16 forward larger than an fp32 one.
//!
//! What tells a copy, strongest first:
//! - freed by the region's exit (its free's frame): the exit empties the cache of copies and
//!   frees nothing else, so each such free is a copy's, whenever it was made;
//! - made by autocast's cast (its C++ frame) in a forward, half a parameter's size (fp32 to a
//!   16-bit type; sizes round to 512 bytes), no more of a size in one autocast region than
//!   parameters of twice it (each weight is cast once per region): inputs autocast casts pass
//!   through the same frame but are sized by the batch, and where a size could be either the
//!   earliest are taken;
//! - with Python frames only, in a run that shows autocast (a copy freed by an exit, or a cast's
//!   frame): made in a forward, kept past it for the backward, half a parameter's size, within
//!   the same count.
//!
//! Regions end where an exit frees copies. Not the place for what autocast computes
//! (activations, temporaries: the phases say).

use rustc_hash::FxHashMap;

use super::phases::RowPhases;
use super::signals::Phase;
use super::{DeviceSignals, Role};
use crate::analysis::{DeviceFacts, Origin, NO_ROW};
use crate::model::Device;

/// A copy of a weight autocast cached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WeightCopy {
    pub allocation: u32,
    /// The size of the parameters it halves (twice its own when no parameter of that size is
    /// known: made before recording).
    pub parameter_size: u64,
    /// Freed by autocast's region ending (else by what holds it, the backward).
    pub freed_at_exit: bool,
}

/// The caching allocator's rounding of requests.
fn rounded(size: u64) -> u64 {
    size.div_ceil(512) * 512
}

/// Finds `device`'s weight copies, making them parameters in `roles`; `stated`: allocations
/// whose role a user wrote.
pub(super) fn weight_copies(
    device: &Device,
    facts: &DeviceFacts,
    phases: &RowPhases,
    signals: &mut DeviceSignals<'_>,
    stated: &dyn Fn(usize) -> bool,
    roles: &mut [Role],
) -> Vec<WeightCopy> {
    let allocations = &facts.allocations;
    let trace = &device.trace;
    // Parameters by the size of their half.
    let mut halves: FxHashMap<u64, (u64, u32)> = FxHashMap::default();
    for (i, &role) in roles.iter().enumerate() {
        if role == Role::Parameters {
            let size = allocations.size(i);
            let entry = halves.entry(rounded(size / 2)).or_insert((size, 0));
            entry.1 += 1;
        }
    }
    let mut copies = Vec::new();
    let mut is_copy = vec![false; allocations.len()];
    // The rows where an exit freed copies, ascending: the regions' ends.
    let mut exits: Vec<u32> = Vec::new();
    let mut casts_recorded = false;
    for (i, a) in allocations.iter().enumerate() {
        if a.origin() == Origin::Trace && !casts_recorded {
            casts_recorded = signals.of(a.stack).autocast_cast;
        }
        if a.free_row == NO_ROW || stated(i) {
            continue;
        }
        if signals.of(trace.stack[a.free_row as usize]).autocast_exit {
            let parameter_size = halves
                .get(&rounded(a.size))
                .map_or(2 * a.size, |&(size, _)| size);
            copies.push(WeightCopy {
                allocation: i as u32,
                parameter_size,
                freed_at_exit: true,
            });
            is_copy[i] = true;
            exits.push(a.free_row);
        }
    }
    exits.sort_unstable();
    exits.dedup();
    let autocast_ran = casts_recorded || !exits.is_empty();
    if autocast_ran && !halves.is_empty() {
        let region_of = |row: u32| exits.partition_point(|&e| e <= row);
        // Copies already found per (region, half).
        let mut found: FxHashMap<(usize, u64), u32> = FxHashMap::default();
        for c in &copies {
            let a = allocations.at(c.allocation as usize);
            if a.origin() == Origin::Trace {
                *found
                    .entry((region_of(a.alloc_row), rounded(a.size)))
                    .or_default() += 1;
            }
        }
        // Candidates per (region, half), in the order they were made.
        let mut candidates: FxHashMap<(usize, u64), Vec<usize>> = FxHashMap::default();
        // Blocks from before the trace whose own frames are autocast's cast (a ring buffer
        // that wrapped keeps them): the first region's.
        for (i, a) in allocations
            .iter()
            .enumerate()
            .take(allocations.first_traced())
        {
            let half = rounded(a.size);
            if a.origin() == Origin::LiveBlock
                && !stated(i)
                && halves.contains_key(&half)
                && signals.of(a.stack).autocast_cast
            {
                candidates.entry((0, half)).or_default().push(i);
            }
        }
        let mut run_ends = phases.run_ends();
        for (i, a) in allocations
            .iter()
            .enumerate()
            .skip(allocations.first_traced())
        {
            let half = rounded(a.size);
            if is_copy[i] || stated(i) || !halves.contains_key(&half) {
                continue;
            }
            let row = a.alloc_row as usize;
            if phases.phase.get(row) != Some(&Phase::Forward) {
                continue;
            }
            let signal = signals.of(a.stack);
            let candidate = if casts_recorded {
                signal.autocast_cast
            } else {
                // Python frames only: a copy a matmul saved lives past its forward.
                let Some(run_end) = run_ends.after(row) else {
                    continue;
                };
                signal.role.is_none()
                    && signal.lifetime.is_none()
                    && (a.free_row == NO_ROW || a.free_row as usize >= run_end)
            };
            if candidate {
                candidates
                    .entry((region_of(a.alloc_row), half))
                    .or_default()
                    .push(i);
            }
        }
        for ((region, half), list) in candidates {
            let (parameter_size, parameters) = halves[&half];
            let room = parameters.saturating_sub(found.get(&(region, half)).copied().unwrap_or(0));
            for i in list.into_iter().take(room as usize) {
                copies.push(WeightCopy {
                    allocation: i as u32,
                    parameter_size,
                    freed_at_exit: false,
                });
            }
        }
    }
    for c in &copies {
        roles[c.allocation as usize] = Role::Parameters;
    }
    copies.sort_unstable_by_key(|c| c.allocation);
    copies
}
