//! Which elements a timeline draws individually, and the live stack of those at any state.
//!
//! The `detail` largest elements are drawn individually (ties go to the earlier element);
//! the rest are summed into the band on top. Drawn elements are numbered by *rank* (their
//! order among drawn elements, which is stack order) and their sizes and start states are
//! copied into compact arrays, so drawing never touches the element records. The layout keeps
//! only the drawn elements' push/remove events, sorted by state, plus checkpoints of the live
//! stack every `interval` events, so [`Cursor::seek`] reaches any state in at most `interval`
//! event steps: building is O(N + K log K) for N elements of which K are drawn, memory is
//! O(K + checkpoints), and no per-state or per-pixel geometry is ever stored.

use crate::analysis::elements::Elements;
use crate::analysis::elements::ALIVE;

/// Live-stack entries kept across all checkpoints, at most (sets the checkpoint interval).
const CHECKPOINT_BUDGET: u64 = 2 << 20;
/// Smallest checkpoint interval, in events.
const MIN_INTERVAL: u64 = 64;

/// Events are packed as `state << 33 | push << 32 | rank`, so one sort orders them by state,
/// removals before pushes, and pushes in stack order.
const PUSH: u64 = 1 << 32;

fn event_state(e: u64) -> u32 {
    (e >> 33) as u32
}

#[derive(Clone, Debug, PartialEq)]
struct Checkpoint {
    /// Offset of this checkpoint's live stack in `TimelineLayout::pool`.
    start: u32,
    len: u32,
    drawn_total: u64,
}

/// The drawn set of a timeline and its events.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimelineLayout {
    /// Elements drawn individually (the `detail` largest, fewer if there are fewer).
    pub drawn: u32,
    /// All elements.
    pub total: u32,
    /// Element index of each drawn rank, ascending.
    ids: Vec<u32>,
    /// Size and first live state of each drawn rank.
    pub sizes: Vec<u64>,
    pub starts: Vec<u32>,
    events: Vec<u64>,
    interval: u32,
    /// Checkpoint `j` is the live stack after events `0..j * interval`.
    checkpoints: Vec<Checkpoint>,
    pool: Vec<u32>,
}

impl TimelineLayout {
    /// Lays out `elements` with the `detail` largest drawn individually.
    pub fn build(elements: &impl Elements, detail: u32) -> Self {
        let total = elements.count();
        let drawn_target = detail.min(total);
        let (threshold, ties) = cut(elements, drawn_target);
        let mut layout = TimelineLayout {
            drawn: 0,
            total,
            ..TimelineLayout::default()
        };
        let mut ties_left = ties;
        // As many elements are drawn as the target: the columns are made that long at once
        // rather than grown (a grown column keeps up to as much again unused).
        let drawn_rows = drawn_target as usize;
        layout.ids.reserve_exact(drawn_rows);
        layout.sizes.reserve_exact(drawn_rows);
        layout.starts.reserve_exact(drawn_rows);
        layout.events.reserve_exact(drawn_rows);
        // Elements come in stack order, so their pushes are already in order of state and
        // rank: only the removes need sorting before both are merged.
        let mut removes = Vec::with_capacity(drawn_rows);
        for i in 0..total {
            let size = elements.size(i);
            let drawn = if drawn_target == 0 {
                false
            } else if size > threshold {
                true
            } else if size == threshold && ties_left > 0 {
                ties_left -= 1;
                true
            } else {
                false
            };
            if drawn {
                let rank = layout.drawn as u64;
                layout.drawn += 1;
                let start = elements.start(i);
                layout.ids.push(i);
                layout.sizes.push(size);
                layout.starts.push(start);
                layout.events.push((start as u64) << 33 | PUSH | rank);
                let end = elements.end(i);
                if end != ALIVE {
                    removes.push((end as u64) << 33 | rank);
                }
            }
        }
        if !layout.events.is_sorted() {
            layout.events.sort_unstable();
        }
        removes.sort_unstable();
        layout.events = merge_sorted(&layout.events, &removes);

        // Size the checkpoint interval so all checkpoints fit the budget.
        let mut live = 0u64;
        let mut live_sum = 0u64;
        for &e in &layout.events {
            if e & PUSH != 0 {
                live += 1;
            } else {
                live -= 1;
            }
            live_sum += live;
        }
        let interval = (live_sum / CHECKPOINT_BUDGET).max(MIN_INTERVAL);
        layout.interval = interval.min(u32::MAX as u64) as u32;

        let mut live = LiveList::new(layout.drawn);
        let step = layout.interval as usize;
        let mut at = 0usize;
        loop {
            let start = layout.pool.len() as u32;
            live.copy_to(&mut layout.pool);
            layout.checkpoints.push(Checkpoint {
                start,
                len: layout.pool.len() as u32 - start,
                drawn_total: live.drawn_total,
            });
            if at + step > layout.events.len() {
                break;
            }
            for &e in &layout.events[at..at + step] {
                live.apply(e, &layout.sizes);
            }
            at += step;
        }
        layout
    }

    /// Whether element `i` is drawn individually.
    pub fn is_drawn(&self, i: u32) -> bool {
        self.ids.binary_search(&i).is_ok()
    }

    /// The element index of drawn rank `rank`.
    pub fn id(&self, rank: u32) -> u32 {
        self.ids[rank as usize]
    }

    /// The drawn rank of element `i`, if it is drawn.
    pub fn rank(&self, i: u32) -> Option<u32> {
        self.ids.binary_search(&i).ok().map(|r| r as u32)
    }

    pub fn heap_bytes(&self) -> usize {
        self.ids.capacity() * 4
            + self.sizes.capacity() * 8
            + self.starts.capacity() * 4
            + self.events.capacity() * 8
            + self.pool.capacity() * 4
            + self.checkpoints.capacity() * std::mem::size_of::<Checkpoint>()
    }
}

/// The size threshold and number of ties at it that select the `k` largest elements.
fn cut(elements: &impl Elements, k: u32) -> (u64, u32) {
    let n = elements.count();
    if k == 0 || n == 0 {
        return (u64::MAX, 0);
    }
    if k >= n {
        return (0, n);
    }
    // Collected only to select from: the layout reads sizes again rather than keep a second
    // copy while it is built (8 bytes an element: about 32 MB at 12M trace entries).
    let mut sizes: Vec<u64> = (0..n).map(|i| elements.size(i)).collect();
    let (_, &mut kth, _) = sizes.select_nth_unstable_by(k as usize - 1, |a, b| b.cmp(a));
    let above = sizes.iter().filter(|&&s| s > kth).count() as u32;
    (kth, k - above)
}

/// The live drawn elements while the checkpoints are built: [`Cursor::apply`]'s stack, as a
/// list linked in rank order, so a removal anywhere, and a push in stack order, take a few
/// steps instead of a search and a shift of the ranks above (a real snapshot's live stack
/// holds hundreds to thousands, and building visits every event once).
struct LiveList {
    /// Neighbours of each live rank in rank order ([`OUT`] for a rank not live); `end` (one
    /// past the last rank) is the list's head and tail.
    next: Vec<u32>,
    prev: Vec<u32>,
    end: u32,
    drawn_total: u64,
}

/// [`LiveList::next`] of a rank that is not live.
const OUT: u32 = u32::MAX;

impl LiveList {
    fn new(drawn: u32) -> Self {
        let mut next = vec![OUT; drawn as usize + 1];
        next[drawn as usize] = drawn;
        LiveList {
            next,
            prev: vec![drawn; drawn as usize + 1],
            end: drawn,
            drawn_total: 0,
        }
    }

    fn apply(&mut self, e: u64, sizes: &[u64]) {
        let rank = e as u32;
        let r = rank as usize;
        let live = self.next[r] != OUT;
        if e & PUSH != 0 {
            if live {
                return;
            }
            // Pushes come in stack order: the rank before is almost always the last.
            let mut before = self.prev[self.end as usize];
            while before != self.end && before > rank {
                before = self.prev[before as usize];
            }
            let after = self.next[before as usize];
            self.next[before as usize] = rank;
            self.prev[after as usize] = rank;
            self.prev[r] = before;
            self.next[r] = after;
            self.drawn_total += sizes[r];
        } else if live {
            let (before, after) = (self.prev[r], self.next[r]);
            self.next[before as usize] = after;
            self.prev[after as usize] = before;
            self.next[r] = OUT;
            self.drawn_total -= sizes[r];
        }
    }

    /// Appends the live ranks, in rank order.
    fn copy_to(&self, out: &mut Vec<u32>) {
        let mut rank = self.next[self.end as usize];
        while rank != self.end {
            out.push(rank);
            rank = self.next[rank as usize];
        }
    }
}

/// The live stack of drawn elements at some point of the event list.
#[derive(Clone, Debug, Default)]
pub struct Cursor {
    /// Events applied so far.
    event: usize,
    /// Ranks of the drawn elements alive, in stack order (bottom first).
    pub live: Vec<u32>,
    /// Bytes of `live`.
    pub drawn_total: u64,
    /// The lowest position of `live` the last [`Cursor::seek`] changed: the elements below it
    /// are the ones that were there before, in the same places (`live.len()` if none moved).
    pub unchanged_below: usize,
}

impl Cursor {
    fn apply(&mut self, e: u64, sizes: &[u64]) {
        let rank = e as u32;
        if e & PUSH != 0 {
            // Pushes come in stack order, so this is almost always the end.
            let at = self.live.partition_point(|&x| x < rank);
            self.live.insert(at, rank);
            self.drawn_total += sizes[rank as usize];
            self.unchanged_below = self.unchanged_below.min(at);
        } else if let Ok(at) = self.live.binary_search(&rank) {
            self.live.remove(at);
            self.drawn_total -= sizes[rank as usize];
            self.unchanged_below = self.unchanged_below.min(at);
        }
    }

    /// Moves to `state`: afterwards `live` holds the ranks of the drawn elements alive in it.
    pub fn seek(&mut self, layout: &TimelineLayout, state: u32) {
        let target = layout.events.partition_point(|&e| event_state(e) <= state);
        let interval = layout.interval.max(1) as usize;
        self.unchanged_below = usize::MAX;
        if target < self.event || target - self.event > interval {
            self.unchanged_below = 0;
            let j = (target / interval).min(layout.checkpoints.len() - 1);
            let c = &layout.checkpoints[j];
            self.live.clear();
            self.live
                .extend_from_slice(&layout.pool[c.start as usize..(c.start + c.len) as usize]);
            self.drawn_total = c.drawn_total;
            self.event = j * interval;
        }
        for &e in &layout.events[self.event..target] {
            self.apply(e, &layout.sizes);
        }
        self.event = target;
        self.unchanged_below = self.unchanged_below.min(self.live.len());
    }
}

/// The values of two sorted lists, in order.
fn merge_sorted(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_sorted_lists_sorts_their_values() {
        assert_eq!(
            merge_sorted(&[1, 4, 4, 9], &[0, 4, 5, 10, 11]),
            [0, 1, 4, 4, 4, 5, 9, 10, 11]
        );
        assert_eq!(merge_sorted(&[], &[2, 3]), [2, 3]);
        assert_eq!(merge_sorted(&[2, 3], &[]), [2, 3]);
    }

    /// Hand-made elements: (size, start, end).
    struct Fixed(Vec<(u64, u32, u32)>);
    impl Elements for Fixed {
        fn count(&self) -> u32 {
            self.0.len() as u32
        }
        fn size(&self, i: u32) -> u64 {
            self.0[i as usize].0
        }
        fn start(&self, i: u32) -> u32 {
            self.0[i as usize].1
        }
        fn end(&self, i: u32) -> u32 {
            self.0[i as usize].2
        }
    }

    /// Element indices (not ranks) alive at `state`, and their bytes.
    fn live_at(layout: &TimelineLayout, state: u32) -> (Vec<u32>, u64) {
        let mut c = Cursor::default();
        c.seek(layout, state);
        (
            c.live.iter().map(|&r| layout.id(r)).collect(),
            c.drawn_total,
        )
    }

    #[test]
    fn the_stack_follows_allocation_order_and_slides_down_on_free() {
        // 0 is a baseline element; 1, 2, 3 are allocated at states 1, 2, 3; 1 is freed first.
        let e = Fixed(vec![(5, 0, ALIVE), (10, 1, 4), (20, 2, 6), (30, 3, 5)]);
        let layout = TimelineLayout::build(&e, 4);
        assert_eq!(layout.drawn, 4);
        assert_eq!(live_at(&layout, 0), (vec![0], 5));
        assert_eq!(live_at(&layout, 3), (vec![0, 1, 2, 3], 65));
        // 1 freed at state 4: 2 and 3 slide down onto 0.
        assert_eq!(live_at(&layout, 4), (vec![0, 2, 3], 55));
        assert_eq!(live_at(&layout, 6), (vec![0], 5));
    }

    #[test]
    fn only_the_largest_are_drawn_and_ties_go_to_earlier_elements() {
        let e = Fixed(vec![
            (7, 0, ALIVE),
            (3, 1, 2),
            (7, 1, 3),
            (7, 2, 3),
            (1, 2, 3),
        ]);
        let layout = TimelineLayout::build(&e, 2);
        assert_eq!(layout.drawn, 2);
        let drawn: Vec<u32> = (0..5).filter(|&i| layout.is_drawn(i)).collect();
        assert_eq!(drawn, vec![0, 2]);
        assert_eq!(live_at(&layout, 2), (vec![0, 2], 14));
        assert_eq!(TimelineLayout::build(&e, 0).drawn, 0);
        assert_eq!(TimelineLayout::build(&e, 99).drawn, 5);
    }

    /// Checkpoints and forward/backward seeks must agree with the definition of the live
    /// stack: the drawn elements alive in the state, in element order.
    fn assert_seeks_match_a_direct_scan(e: &Fixed, detail: u32, rand: &mut impl FnMut(u64) -> u64) {
        let layout = TimelineLayout::build(e, detail);
        let last = (e.0.iter())
            .map(|&(_, start, end)| if end == ALIVE { start } else { end })
            .max()
            .unwrap_or(0);
        let mut cursor = Cursor::default();
        let states: Vec<u32> = (0..400).map(|_| rand(last as u64 + 2) as u32).collect();
        for &s in states.iter().chain(&[0, 1, last]) {
            cursor.seek(&layout, s);
            let expected: Vec<u32> = (0..e.count())
                .filter(|&i| layout.is_drawn(i))
                .filter(|&i| e.start(i) <= s && s < e.end(i))
                .collect();
            let live: Vec<u32> = cursor.live.iter().map(|&r| layout.id(r)).collect();
            assert_eq!(live, expected, "state {s}");
            let bytes: u64 = expected.iter().map(|&i| e.size(i)).sum();
            assert_eq!(cursor.drawn_total, bytes);
        }
    }

    #[test]
    fn seeking_anywhere_matches_a_direct_scan() {
        // Many elements with pseudo-random lifetimes, allocated one per state.
        let mut rand = crate::analysis::test_traces::random(99);
        let mut items = Vec::new();
        for s in 0..3000u32 {
            let size = 1 + rand(1000);
            let life = 1 + rand(400) as u32;
            let end = if rand(10) == 0 { ALIVE } else { s + 1 + life };
            items.push((size, s + 1, end));
        }
        assert_seeks_match_a_direct_scan(&Fixed(items), 700, &mut rand);
    }

    #[test]
    fn seeking_matches_a_direct_scan_when_elements_are_not_in_allocation_order() {
        // Elements whose starts go back and forth, many alive at once: an element pushed
        // lands below live elements that were pushed before it.
        let mut rand = crate::analysis::test_traces::random(7);
        let mut items = Vec::new();
        for _ in 0..3000u32 {
            let size = 1 + rand(1000);
            let start = rand(2500) as u32;
            let end = if rand(10) == 0 {
                ALIVE
            } else {
                start + 1 + rand(900) as u32
            };
            items.push((size, start, end));
        }
        assert_seeks_match_a_direct_scan(&Fixed(items), 1500, &mut rand);
    }
}
