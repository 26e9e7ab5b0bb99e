//! Autocast's cached weight copies: under `torch.autocast`, the first op to use an fp32 weight
//! casts it to bf16/fp16 and the cast is cached until the region exits
//! (`at::autocast::cached_cast`, emptied by `autocast.__exit__`). Each copy is a weight in
//! another dtype, sized by the model and not by the batch or the sequence: a parameter
//! (`docs/roles.md`). Read as an activation it makes activations look constant across context
//! lengths, and a bf16 forward larger than an fp32 one.
//!
//! A copy is told by three facts together: it is made by autocast's cast (its C++ frame) or
//! freed by the region's exit (its free's frame); its size is half a parameter's (fp32 to a
//! 16-bit type; sizes round to 512 bytes); and each run of a forward casts each weight at most
//! once, so there are no more copies of a size than parameters of twice it. Inputs autocast
//! casts pass through the same frame but are sized by the batch; where a size could be either,
//! the copies freed by the exit come first, then the earliest, up to the parameters' count.
//! Not the place for what autocast computes (activations, temporaries: the phases say).

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
    /// The size of the parameters it halves.
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
    // Parameters by the size of their half.
    let mut halves: FxHashMap<u64, (u64, u32)> = FxHashMap::default();
    for (i, &role) in roles.iter().enumerate() {
        if role == Role::Parameters {
            let size = allocations.size(i);
            let entry = halves.entry(rounded(size / 2)).or_insert((size, 0));
            entry.1 += 1;
        }
    }
    if halves.is_empty() {
        return Vec::new();
    }
    // Candidates per run of a forward and half-size: (freed at exit, allocation).
    let mut by_run: FxHashMap<(usize, u64), Vec<(bool, usize)>> = FxHashMap::default();
    let mut run_ends = phases.run_ends();
    let trace = &device.trace;
    for (i, a) in allocations.iter().enumerate().skip(allocations.first_traced()) {
        let half = rounded(a.size);
        if a.origin() != Origin::Trace || stated(i) || !halves.contains_key(&half) {
            continue;
        }
        let row = a.alloc_row as usize;
        if phases.phase.get(row) != Some(&Phase::Forward) {
            continue;
        }
        let cast = signals.of(a.stack).autocast_cast;
        let freed_at_exit =
            a.free_row != NO_ROW && signals.of(trace.stack[a.free_row as usize]).autocast_exit;
        if !(cast || freed_at_exit) {
            continue;
        }
        let Some(run_end) = run_ends.after(row) else {
            continue;
        };
        by_run
            .entry((run_end, half))
            .or_default()
            .push((freed_at_exit, i));
    }
    let mut copies = Vec::new();
    for ((_, half), mut candidates) in by_run {
        let (parameter_size, parameters) = halves[&half];
        // Those the exit freed first, then in the order they were made.
        candidates.sort_by_key(|&(at_exit, i)| (!at_exit, i));
        for (freed_at_exit, i) in candidates.into_iter().take(parameters as usize) {
            roles[i] = Role::Parameters;
            copies.push(WeightCopy {
                allocation: i as u32,
                parameter_size,
                freed_at_exit,
            });
        }
    }
    copies.sort_unstable_by_key(|c| c.allocation);
    copies
}
