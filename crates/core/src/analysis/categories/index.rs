//! Bytes by category at any state of a device, fast: a checkpoint of the totals every
//! [`CHECKPOINT_STATES`] states, and from there the allocations that start or end before the
//! state asked for. Answers in O(checkpoint spacing) instead of a pass over every allocation,
//! so a chart at a new moment, a stacked area over the run and the timeline's small-allocations
//! band split by category all cost little.
//!
//! Built from the replay's allocations (trace allocations are in `alloc` order, so by start)
//! and one list of allocation indices by end. An index may cover only some allocations (the
//! timeline's band: those not drawn one by one). It keeps each allocation's states and its
//! index, not its size and categories, which it looks up in the facts and categories it was
//! built from ([`CategoryIndex::lookup`]): 12 bytes an allocation instead of 24, for a 12M-entry
//! file about 90 MB less in the worker. Not the place for choosing categories
//! ([`crate::analysis::categories`]) or moments.

use crate::analysis::categories::{Component, DeviceCategories, Role, Totals};
use crate::analysis::{Allocations, DeviceFacts};

/// States between two checkpoints.
pub const CHECKPOINT_STATES: u32 = 1024;

const ROLES: usize = Role::ALL.len();
const COMPONENTS: usize = Component::ALL.len();

/// Running totals: count, bytes, bytes by role, bytes by component, and of each role's
/// bytes those whose role was deduced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Sums {
    count: u32,
    bytes: u64,
    roles: [u64; ROLES],
    components: [u64; COMPONENTS],
    inferred: [u64; ROLES],
}

/// What an allocation adds to the sums.
#[derive(Clone, Copy)]
struct Parts {
    size: u64,
    role: Role,
    component: Component,
    inferred: bool,
}

impl Sums {
    fn add(&mut self, p: Parts) {
        self.count += 1;
        self.bytes += p.size;
        self.roles[p.role as usize] += p.size;
        self.components[p.component as usize] += p.size;
        if p.inferred {
            self.inferred[p.role as usize] += p.size;
        }
    }

    fn remove(&mut self, p: Parts) {
        self.count -= 1;
        self.bytes -= p.size;
        self.roles[p.role as usize] -= p.size;
        self.components[p.component as usize] -= p.size;
        if p.inferred {
            self.inferred[p.role as usize] -= p.size;
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Checkpoint {
    sums: Sums,
    /// Position in `by_start` of the first allocation starting after the checkpoint's state.
    next_start: u32,
    /// Position in `by_end` of the first allocation ending after it.
    next_end: u32,
}

/// One allocation as the index orders it: its index into the facts' allocations.
#[derive(Clone, Copy, Debug)]
struct Entry {
    start: u32,
    end: u32,
    allocation: u32,
}

/// Bytes by category of (some of) a device's allocations at any state.
#[derive(Clone, Debug, Default)]
pub struct CategoryIndex {
    /// The covered allocations, ordered by the state they start in.
    by_start: Vec<Entry>,
    /// Positions in `by_start` of allocations that end, ordered by the state they end in.
    by_end: Vec<u32>,
    checkpoints: Vec<Checkpoint>,
}

impl CategoryIndex {
    /// An index of every allocation of `facts`.
    pub fn new(facts: &DeviceFacts, categories: &DeviceCategories) -> Self {
        Self::covering(facts, categories, |_| true)
    }

    /// An index of the allocations whose index into `facts.allocations` passes `covered`.
    pub fn covering(
        facts: &DeviceFacts,
        categories: &DeviceCategories,
        covered: impl Fn(usize) -> bool,
    ) -> Self {
        let entries = || {
            facts
                .allocations
                .iter()
                .enumerate()
                .filter(|&(i, _)| covered(i))
                .map(|(i, a)| {
                    let (start, end) = a.alive_states();
                    Entry {
                        start,
                        end,
                        allocation: i as u32,
                    }
                })
                .filter(|e| e.start < e.end)
        };
        // Already in order but for pre-window allocations (all start at 0): those first, then
        // the others, gives the order without sorting; a stable sort (which takes half the
        // entries again in scratch memory) is left for input out of order.
        let mut by_start: Vec<Entry> = Vec::with_capacity(entries().count());
        by_start.extend(entries().filter(|e| e.start == 0));
        by_start.extend(entries().filter(|e| e.start != 0));
        if !by_start.is_sorted_by_key(|e| e.start) {
            by_start.sort_by_key(|e| e.start);
        }
        // Ordered by end, then by position: sorted as (position, end) pairs in the list that
        // keeps the result, then the positions moved down over the pairs and the rest given
        // back, so the order needs no scratch list beside the kept one (at 12M entries the
        // heap's top is 13 MiB lower while a first view is prepared).
        // Sorting the positions alone, looking each end up at every comparison, took a third
        // of laying a large file's first view out.
        let ending = by_start.iter().filter(|e| e.end != u32::MAX).count();
        let mut by_end: Vec<u32> = Vec::with_capacity(2 * ending);
        for (position, entry) in by_start.iter().enumerate() {
            if entry.end != u32::MAX {
                by_end.extend([position as u32, entry.end]);
            }
        }
        let (pairs, _) = by_end.as_chunks_mut::<2>();
        pairs.sort_unstable_by_key(|&[position, end]| u64::from(end) << 32 | u64::from(position));
        for i in 0..ending {
            by_end[i] = by_end[2 * i];
        }
        by_end.truncate(ending);
        by_end.shrink_to_fit();

        let last_state = by_start
            .iter()
            .map(|e| if e.end == u32::MAX { e.start } else { e.end })
            .max()
            .unwrap_or(0);
        let mut index = CategoryIndex {
            by_start,
            by_end,
            checkpoints: Vec::new(),
        };
        let mut at = Checkpoint {
            sums: Sums::default(),
            next_start: 0,
            next_end: 0,
        };
        let mut state = 0u32;
        // A checkpoint is a few hundred bytes and a large trace has thousands: made that
        // long at once, the list never holds grown-out copies of itself.
        let mut checkpoints = Vec::with_capacity((last_state / CHECKPOINT_STATES) as usize + 1);
        loop {
            index.lookup(facts, categories).advance(&mut at, state);
            checkpoints.push(at);
            if state >= last_state {
                break;
            }
            state = state.saturating_add(CHECKPOINT_STATES);
        }
        index.checkpoints = checkpoints;
        index
    }

    /// The index with the facts and categories it was built from, to answer from.
    pub fn lookup<'a>(
        &'a self,
        facts: &'a DeviceFacts,
        categories: &'a DeviceCategories,
    ) -> Lookup<'a> {
        Lookup {
            index: self,
            allocations: &facts.allocations,
            categories,
        }
    }

    /// Bytes the index holds in memory, for the benchmark's table.
    pub fn heap_bytes(&self) -> usize {
        self.by_start.capacity() * std::mem::size_of::<Entry>()
            + self.by_end.capacity() * 4
            + self.checkpoints.capacity() * std::mem::size_of::<Checkpoint>()
    }
}

/// A [`CategoryIndex`] with what it looks its allocations' sizes and categories up in.
#[derive(Clone, Copy)]
pub struct Lookup<'a> {
    index: &'a CategoryIndex,
    allocations: &'a Allocations,
    categories: &'a DeviceCategories,
}

impl Lookup<'_> {
    /// The size, role and component of the allocation `entry` stands for.
    fn parts(&self, entry: Entry) -> Parts {
        let i = entry.allocation as usize;
        Parts {
            size: self.allocations.size(i),
            role: self.categories.roles[i],
            component: self.categories.components[i],
            inferred: self.categories.is_inferred(i),
        }
    }

    /// Moves `at` from its state to `state` (not before it).
    fn advance(&self, at: &mut Checkpoint, state: u32) {
        // Apply starts and ends in state order, so the sums never go below zero.
        loop {
            let index = self.index;
            let start = index
                .by_start
                .get(at.next_start as usize)
                .map(|e| e.start)
                .filter(|&s| s <= state);
            let end = index
                .by_end
                .get(at.next_end as usize)
                .map(|&p| index.by_start[p as usize].end)
                .filter(|&s| s <= state);
            match (start, end) {
                (Some(s), Some(e)) if e <= s => self.end_next(at),
                (Some(_), _) => {
                    at.sums
                        .add(self.parts(self.index.by_start[at.next_start as usize]));
                    at.next_start += 1;
                }
                (None, Some(_)) => self.end_next(at),
                (None, None) => break,
            }
        }
    }

    fn end_next(&self, at: &mut Checkpoint) {
        let index = self.index;
        at.sums
            .remove(self.parts(index.by_start[index.by_end[at.next_end as usize] as usize]));
        at.next_end += 1;
    }

    fn sums_at(&self, state: u32) -> Sums {
        let Some(checkpoint) = self
            .index
            .checkpoints
            .get((state / CHECKPOINT_STATES) as usize)
            .or(self.index.checkpoints.last())
        else {
            return Sums::default();
        };
        let mut at = *checkpoint;
        self.advance(&mut at, state);
        at.sums
    }

    /// Bytes by role and component of the covered allocations alive at `state`.
    pub fn totals_at(&self, state: u32) -> Totals {
        let sums = self.sums_at(state);
        Totals {
            state,
            count: sums.count,
            live_bytes: sums.bytes,
            roles: sums.roles.to_vec(),
            components: sums.components.to_vec(),
            inferred_roles: sums.inferred.to_vec(),
        }
    }

    /// Bytes by role at `state`, indexed like [`Role::ALL`], without allocating.
    pub fn roles_at(&self, state: u32) -> [u64; ROLES] {
        self.sums_at(state).roles
    }

    /// Bytes by component at `state`, indexed like [`Component::ALL`], without allocating.
    pub fn components_at(&self, state: u32) -> [u64; COMPONENTS] {
        self.sums_at(state).components
    }

    /// The most bytes each role and each component holds at any state (each at its own
    /// state), in one pass over the allocations' starts and ends.
    /// The most bytes parameters held at once, autocast's cached copies of weights left out:
    /// the weights training's arithmetic counts gradients and states against.
    pub fn weights_peak(&self) -> u64 {
        let cats = self.categories;
        self.most_held(|i| cats.roles[i] == Role::Parameters && cats.weight_copy(i).is_none())
    }

    /// The most bytes autocast's cached copies of weights held at once.
    pub fn weight_copies_peak(&self) -> u64 {
        if self.categories.weight_copies.is_empty() {
            return 0;
        }
        self.most_held(|i| self.categories.weight_copy(i).is_some())
    }

    /// The most bytes the allocations `counted` held at once.
    fn most_held(&self, counted: impl Fn(usize) -> bool) -> u64 {
        let mut changes: Vec<(u32, i64)> = Vec::new();
        for (i, a) in self.allocations.iter().enumerate() {
            if !counted(i) {
                continue;
            }
            let (start, end) = a.alive_states();
            changes.push((start, a.size as i64));
            if end != u32::MAX {
                changes.push((end, -(a.size as i64)));
            }
        }
        // Within a state, ends before starts.
        changes.sort_unstable_by_key(|&(state, delta)| (state, delta > 0));
        let (mut held, mut most) = (0i64, 0i64);
        for (_, delta) in changes {
            held += delta;
            most = most.max(held);
        }
        most as u64
    }

    pub fn peaks(&self) -> ([u64; ROLES], [u64; COMPONENTS]) {
        let mut at = Checkpoint {
            sums: Sums::default(),
            next_start: 0,
            next_end: 0,
        };
        let (mut roles, mut components) = ([0u64; ROLES], [0u64; COMPONENTS]);
        let mut keep_maxima = |sums: &Sums| {
            for (m, &b) in roles.iter_mut().zip(&sums.roles) {
                *m = (*m).max(b);
            }
            for (m, &b) in components.iter_mut().zip(&sums.components) {
                *m = (*m).max(b);
            }
        };
        // Within a state, ends come before starts, so sums only grow after its last end:
        // the maxima after each start are the maxima over states.
        while (at.next_start as usize) < self.index.by_start.len() {
            let state = self.index.by_start[at.next_start as usize].start;
            self.advance(&mut at, state);
            keep_maxima(&at.sums);
        }
        keep_maxima(&at.sums);
        (roles, components)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::categories::{totals_at, Deduced};
    use crate::analysis::test_traces;
    use crate::analysis::{categories, Analysed};
    use crate::model::Action;

    fn analysed(device: crate::model::Device) -> Analysed {
        Analysed::new(crate::model::Snapshot {
            devices: vec![device],
            ..Default::default()
        })
    }

    #[test]
    fn totals_equal_a_pass_over_every_allocation_at_every_state() {
        for seed in 1..6 {
            let device = test_traces::device(&test_traces::random_rows(seed, 5000));
            let analysed = analysed(device);
            let facts = &analysed.facts[0];
            // Every role and component, mixed (the trace has no stacks to infer them from).
            let n = facts.allocations.len();
            // Half the allocations from before the trace deduced, half observed.
            let before = (0..facts.allocations.first_traced())
                .map(|i| {
                    if i % 2 == 0 {
                        Deduced::ModelState
                    } else {
                        Deduced::Observed
                    }
                })
                .collect();
            let cats = &DeviceCategories {
                roles: (0..n).map(|i| Role::ALL[i * 7 % ROLES]).collect(),
                components: (0..n).map(|i| Component::ALL[i % COMPONENTS]).collect(),
                before,
                ..Default::default()
            };
            let built = CategoryIndex::new(facts, cats);
            let ending = built.by_start.iter().filter(|e| e.end != u32::MAX).count();
            assert_eq!(built.by_end.len(), ending, "seed {seed}");
            // Sorted as pairs in the same list: the pairs' half is given back.
            assert_eq!(built.by_end.capacity(), ending, "seed {seed}");
            let index = built.lookup(facts, cats);
            let rows = analysed.snapshot.devices[0].trace.len() as u32;
            for state in (0..=rows + 1).step_by(7).chain([CHECKPOINT_STATES, rows]) {
                assert_eq!(
                    index.totals_at(state),
                    totals_at(facts, cats, state),
                    "seed {seed}, state {state}"
                );
            }
        }
    }

    #[test]
    fn peaks_are_the_maxima_over_states() {
        let device = test_traces::device(&test_traces::random_rows(3, 3000));
        let analysed = analysed(device);
        let facts = &analysed.facts[0];
        let n = facts.allocations.len();
        let cats = &DeviceCategories {
            roles: (0..n).map(|i| Role::ALL[i % 3]).collect(),
            components: (0..n).map(|i| Component::ALL[i % 2]).collect(),
            ..Default::default()
        };
        let built = CategoryIndex::new(facts, cats);
        let index = built.lookup(facts, cats);
        let rows = analysed.snapshot.devices[0].trace.len() as u32;
        let mut roles = [0u64; ROLES];
        for state in 0..=rows {
            for (m, b) in roles.iter_mut().zip(index.roles_at(state)) {
                *m = (*m).max(b);
            }
        }
        assert_eq!(index.peaks().0, roles);
        assert!(roles[0] > 0 && roles[3] == 0);
    }

    #[test]
    fn an_index_covering_some_allocations_counts_only_them() {
        let device = test_traces::device(&[
            (Action::Alloc, 0x100, 10),
            (Action::Alloc, 0x200, 20),
            (Action::FreeCompleted, 0x100, 10),
            (Action::Alloc, 0x300, 40),
        ]);
        let analysed = analysed(device);
        let cats = categories::categorise(&analysed, &categories::rules::CompiledRules::none());
        let (facts, cats) = (&analysed.facts[0], &cats.devices[0]);
        let built = CategoryIndex::covering(facts, cats, |i| i != 1);
        let index = built.lookup(facts, cats);
        let bytes: Vec<u64> = (0..=4).map(|s| index.totals_at(s).live_bytes).collect();
        assert_eq!(bytes, [0, 10, 10, 0, 40]);
        assert_eq!(index.totals_at(99).live_bytes, 40, "after the last state");
    }
}
