//! What was alive at one moment of a timeline: its allocations, the largest first, and their
//! bytes by call site (the frame that names each allocation) — what an out-of-memory's
//! panel shows, and what "alive at a moment" views build on.
//!
//! One pass over the allocations (O(N)), each stack named once.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::elements::AllocationElements;
use crate::analysis::stacks::{allocation_stack, stack_text};
use crate::analysis::DeviceFacts;
use crate::model::{Snapshot, StackId, Trace, NO_STACK};

/// One allocation alive at the moment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LiveAllocation {
    /// Element index on the allocations timeline (to pin it).
    pub index: u32,
    pub size: u64,
    /// What made it (see [`crate::analysis::stacks::StackText::top_frame`]).
    pub name: Option<String>,
    pub user: bool,
    /// The tensor's shape and dtype, when the file records them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
}

/// The allocations alive at the moment that one call site made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallSite {
    /// `None` for allocations recorded without a stack.
    pub name: Option<String>,
    pub user: bool,
    pub count: u32,
    pub bytes: u64,
}

/// What was alive at one state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveSet {
    pub count: u32,
    pub bytes: u64,
    /// The largest allocations, largest first.
    pub largest: Vec<LiveAllocation>,
    /// Call sites by bytes, most first.
    pub call_sites: Vec<CallSite>,
}

/// The allocations alive at `state`, with the `top` largest and the `top` call sites holding
/// the most.
pub fn live_at(
    snapshot: &Snapshot,
    trace: &Trace,
    facts: &DeviceFacts,
    state: u32,
    top: usize,
) -> LiveSet {
    live_at_where(snapshot, trace, facts, state, top, |_| true)
}

/// [`live_at`] counting only the allocations `keep` accepts (told their index into
/// [`DeviceFacts::allocations`]).
pub fn live_at_where(
    snapshot: &Snapshot,
    trace: &Trace,
    facts: &DeviceFacts,
    state: u32,
    top: usize,
    keep: impl Fn(usize) -> bool,
) -> LiveSet {
    live_set(snapshot, trace, facts, &alive_at(facts, state, keep), top)
}

/// Indices into [`DeviceFacts::allocations`] of the allocations alive at `state` that `keep`
/// accepts, in order: one pass over the allocations.
pub fn alive_at(facts: &DeviceFacts, state: u32, keep: impl Fn(usize) -> bool) -> Vec<u32> {
    facts
        .allocations
        .iter()
        .enumerate()
        .filter(|&(i, a)| a.is_alive_at(state) && keep(i))
        .map(|(i, _)| i as u32)
        .collect()
}

/// The live set of `alive` (indices into [`DeviceFacts::allocations`], as [`alive_at`] gives
/// them), with the `top` largest and the `top` call sites holding the most; each named by the
/// stack that tells who made it (`trace` holds their rows).
pub fn live_set(
    snapshot: &Snapshot,
    trace: &Trace,
    facts: &DeviceFacts,
    alive: &[u32],
    top: usize,
) -> LiveSet {
    let elements = AllocationElements::new(facts);
    let mut names: FxHashMap<StackId, (Option<String>, bool)> = FxHashMap::default();
    let mut name_of = |stack: StackId| {
        names
            .entry(stack)
            .or_insert_with(|| {
                if stack == NO_STACK {
                    return (None, false);
                }
                let text = stack_text(snapshot, stack, false);
                (text.top_frame, text.top_frame_is_user)
            })
            .clone()
    };
    let mut live: Vec<(u64, u32)> = Vec::new();
    let mut sites: FxHashMap<Option<String>, CallSite> = FxHashMap::default();
    let mut set = LiveSet::default();
    for &index in alive {
        let a = facts.allocations.at(index as usize);
        let i = elements.position(index as usize);
        set.count += 1;
        set.bytes += a.size;
        live.push((a.size, i));
        let (name, user) = name_of(allocation_stack(trace, &a));
        let site = sites.entry(name.clone()).or_insert(CallSite {
            name,
            user,
            count: 0,
            bytes: 0,
        });
        site.count += 1;
        site.bytes += a.size;
    }
    // Largest first; equal sizes in stack order.
    live.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    set.largest = live
        .into_iter()
        .take(top)
        .map(|(size, index)| {
            let a = elements.allocation(index);
            let (name, user) = name_of(allocation_stack(trace, &a));
            let text = |id: Option<crate::model::StrId>| id.map(|id| snapshot.str(id).to_string());
            LiveAllocation {
                index,
                size,
                name,
                user,
                shape: text(a.shape(trace)),
                dtype: text(a.dtype(trace)),
            }
        })
        .collect();
    let mut sites: Vec<CallSite> = sites.into_values().collect();
    sites.sort_unstable_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    sites.truncate(top);
    set.call_sites = sites;
    set
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::replay::replay;
    use crate::analysis::test_traces::device;
    use crate::model::Action;

    #[test]
    fn the_live_set_adds_up_to_the_allocated_curve() {
        let d = device(&[
            (Action::Alloc, 1, 40),
            (Action::Alloc, 2, 20),
            (Action::Alloc, 3, 40),
            (Action::FreeCompleted, 1, 40),
        ]);
        let facts = replay(&d);
        let snapshot = Snapshot::default();
        for state in 0..=4u32 {
            let set = live_at(&snapshot, &d.trace, &facts, state, 2);
            let curve = if state == 0 {
                facts.baseline_allocated
            } else {
                facts.allocated[state as usize - 1]
            };
            assert_eq!(set.bytes, curve, "state {state}");
        }
        let set = live_at(&snapshot, &d.trace, &facts, 3, 2);
        assert_eq!(set.count, 3);
        // Largest first, ties in stack order; two asked for.
        let largest: Vec<(u32, u64)> = set.largest.iter().map(|a| (a.index, a.size)).collect();
        assert_eq!(largest, vec![(0, 40), (2, 40)]);
        // No stacks recorded: one call site without a name holds everything.
        assert_eq!(
            set.call_sites,
            vec![CallSite {
                name: None,
                user: false,
                count: 3,
                bytes: 100
            }]
        );
    }
}
