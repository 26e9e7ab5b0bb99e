//! Which of many state intervals contain a given state, in O(log N) per tree level plus the
//! number found: a centred interval tree laid out in two sorted arrays of ids.
//!
//! Each interval `lo..hi` belongs to the smallest node of an implicit binary tree over states
//! (node `(level, prefix)` covers states `prefix << level ..(prefix + 1) << level`) holding
//! both its first and last state, so it contains that node's middle. Asking for state `s`
//! visits the one node per level that holds `s`: left of the middle, the intervals that start
//! at or before `s` (a prefix when sorted by start); right of it, those that end after `s` (a
//! prefix when sorted by end, descending). Memory is two `u32` per interval, which is why this
//! replaces full checkpoints of every block: a checkpoint every 1024 states would repeat each
//! long-lived block in every checkpoint. It stores ids only; the intervals stay with the
//! caller.

use std::cmp::Reverse;

/// A level past the last (states are `u32`, so the root is at level 32).
const LEVELS: u32 = 33;

#[derive(Clone, Debug, Default)]
pub(super) struct StabbingIndex {
    /// Ids of non-empty intervals, by node, then by start.
    by_start: Vec<u32>,
    /// The same ids, by node, then by end descending (node ranges line up with `by_start`).
    by_end: Vec<u32>,
}

/// The node of interval `lo..hi` (not empty), as a sortable key.
fn node(lo: u32, hi: u32) -> u64 {
    let (first, last) = (lo as u64, hi as u64 - 1);
    let level = 64 - (first ^ last).leading_zeros() as u64;
    node_key(level, first >> level)
}

fn node_key(level: u64, prefix: u64) -> u64 {
    (level << 33) | prefix
}

impl StabbingIndex {
    /// An index of `intervals` (`(lo, hi)` by id; empty ones are never found).
    pub fn new(intervals: &[(u32, u32)]) -> Self {
        let mut keyed: Vec<(u64, u32, u32)> = intervals
            .iter()
            .enumerate()
            .filter(|(_, &(lo, hi))| lo < hi)
            .map(|(id, &(lo, hi))| (node(lo, hi), lo, id as u32))
            .collect();
        keyed.sort_unstable();
        let by_start = keyed.iter().map(|&(_, _, id)| id).collect();
        for k in &mut keyed {
            k.1 = intervals[k.2 as usize].1;
        }
        keyed.sort_unstable_by_key(|&(node, hi, id)| (node, Reverse(hi), id));
        let by_end = keyed.iter().map(|&(_, _, id)| id).collect();
        StabbingIndex { by_start, by_end }
    }

    /// Appends to `found` the ids of the intervals holding `state`, in no particular order.
    pub fn stab(&self, intervals: &[(u32, u32)], state: u32, found: &mut Vec<u32>) {
        let key_of = |id: u32| {
            let (lo, hi) = intervals[id as usize];
            node(lo, hi)
        };
        let s = state as u64;
        for level in 0..LEVELS as u64 {
            let key = node_key(level, s >> level);
            let first = self.by_start.partition_point(|&id| key_of(id) < key);
            let last = first + self.by_start[first..].partition_point(|&id| key_of(id) == key);
            if first == last {
                continue;
            }
            let middle = ((s >> level) << level) + (1u64 << level >> 1);
            if level == 0 || s < middle {
                // Every interval here ends at or after the middle, so after `state`.
                found.extend(
                    self.by_start[first..last]
                        .iter()
                        .take_while(|&&id| intervals[id as usize].0 <= state),
                );
            } else {
                // Every interval here starts before the middle, so at or before `state`.
                found.extend(
                    self.by_end[first..last]
                        .iter()
                        .take_while(|&&id| intervals[id as usize].1 > state),
                );
            }
        }
    }

    pub fn heap_bytes(&self) -> usize {
        (self.by_start.capacity() + self.by_end.capacity()) * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::test_traces::random;

    #[test]
    fn finds_exactly_the_intervals_holding_each_state() {
        let mut rand = random(7);
        let mut intervals: Vec<(u32, u32)> = (0..3000)
            .map(|_| {
                let lo = rand(5000) as u32;
                let len = match rand(4) {
                    0 => rand(3) as u32,
                    1 => rand(40) as u32,
                    _ => rand(3000) as u32,
                };
                (lo, lo + len)
            })
            .collect();
        intervals.push((0, u32::MAX));
        intervals.push((4999, u32::MAX));
        let index = StabbingIndex::new(&intervals);
        for state in (0..8200).chain([u32::MAX - 1, u32::MAX]) {
            let mut found = Vec::new();
            index.stab(&intervals, state, &mut found);
            found.sort_unstable();
            let expected: Vec<u32> = (0..intervals.len() as u32)
                .filter(|&i| intervals[i as usize].0 <= state && state < intervals[i as usize].1)
                .collect();
            assert_eq!(found, expected, "state {state}");
        }
    }
}
