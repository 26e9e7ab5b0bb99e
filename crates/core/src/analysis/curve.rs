//! The total a timeline's stack reaches at each state (allocated bytes for allocations,
//! reserved bytes for segments), and where it peaks within a range of states.
//!
//! Each pixel column of a zoomed-out timeline covers many states; it shows the one where the
//! total peaks, so no peak is ever lost between columns. Range maxima of the allocated curve
//! come from block maxima at two levels (64 and 4096 states), about one value per 64 states.

/// Block sizes of the two levels of [`Envelope`].
const FINE: usize = 64;
const COARSE: usize = 4096;

/// Block maxima of a per-state curve.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Envelope {
    fine: Vec<u64>,
    coarse: Vec<u64>,
}

impl Envelope {
    pub fn new(values: impl Iterator<Item = u64>) -> Self {
        let mut fine = Vec::new();
        let mut coarse = Vec::new();
        for (s, v) in values.enumerate() {
            if s.is_multiple_of(FINE) {
                fine.push(v);
            } else {
                let last = fine.last_mut().expect("pushed at s.is_multiple_of(FINE)");
                *last = (*last).max(v);
            }
            if s.is_multiple_of(COARSE) {
                coarse.push(v);
            } else {
                let last = coarse
                    .last_mut()
                    .expect("pushed at s.is_multiple_of(COARSE)");
                *last = (*last).max(v);
            }
        }
        Envelope { fine, coarse }
    }

    pub fn heap_bytes(&self) -> usize {
        (self.fine.capacity() + self.coarse.capacity()) * 8
    }
}

/// A per-state total.
#[derive(Clone, Copy, Debug)]
pub enum Curve<'a> {
    /// One value per trace row (`values[r]` is the total after row `r`), with a baseline.
    Dense {
        baseline: u64,
        values: &'a [u64],
        envelope: &'a Envelope,
    },
    /// A step function: the baseline, then `(row, total after it)` at each change.
    Steps {
        baseline: u64,
        changes: &'a [(u32, u64)],
    },
}

impl Curve<'_> {
    pub fn value(&self, state: u32) -> u64 {
        match *self {
            Curve::Dense {
                baseline, values, ..
            } => match state {
                0 => baseline,
                s => values
                    .get(s as usize - 1)
                    .or(values.last())
                    .copied()
                    .unwrap_or(baseline),
            },
            Curve::Steps { baseline, changes } => {
                match changes.partition_point(|&(row, _)| row < state) {
                    0 => baseline,
                    i => changes[i - 1].1,
                }
            }
        }
    }

    /// The first state in `first..=last` where the curve is highest, and its value.
    pub fn argmax(&self, first: u32, last: u32) -> (u32, u64) {
        debug_assert!(first <= last);
        match *self {
            Curve::Dense {
                baseline,
                values,
                envelope,
            } => {
                let value = |s: usize| if s == 0 { baseline } else { values[s - 1] };
                let last = (last as usize).min(values.len());
                let first = (first as usize).min(last);
                argmax_dense(&value, envelope, first, last)
            }
            Curve::Steps { .. } => {
                let Curve::Steps { changes, .. } = *self else {
                    unreachable!()
                };
                let mut best = (first, self.value(first));
                // Changes visible in states first+1..=last are rows first..last.
                let from = changes.partition_point(|&(row, _)| row < first);
                for &(row, v) in &changes[from..] {
                    if row + 1 > last {
                        break;
                    }
                    if v > best.1 {
                        best = (row + 1, v);
                    }
                }
                best
            }
        }
    }
}

fn argmax_dense(
    value: &dyn Fn(usize) -> u64,
    envelope: &Envelope,
    first: usize,
    last: usize,
) -> (u32, u64) {
    // Find the highest value by blocks, then the first state reaching it.
    let mut best = 0u64;
    let mut s = first;
    while s <= last {
        if s.is_multiple_of(COARSE) && s + COARSE - 1 <= last {
            best = best.max(envelope.coarse[s / COARSE]);
            s += COARSE;
        } else if s.is_multiple_of(FINE) && s + FINE - 1 <= last {
            best = best.max(envelope.fine[s / FINE]);
            s += FINE;
        } else {
            best = best.max(value(s));
            s += 1;
        }
    }
    let mut s = first;
    while s <= last {
        if s.is_multiple_of(COARSE) && s + COARSE - 1 <= last && envelope.coarse[s / COARSE] < best
        {
            s += COARSE;
        } else if s.is_multiple_of(FINE) && s + FINE - 1 <= last && envelope.fine[s / FINE] < best {
            s += FINE;
        } else {
            if value(s) == best {
                return (s as u32, best);
            }
            s += 1;
        }
    }
    (first as u32, value(first))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(values: &[u64], baseline: u64, first: u32, last: u32) -> (u32, u64) {
        let v = |s: u32| {
            if s == 0 {
                baseline
            } else {
                values[s as usize - 1]
            }
        };
        let mut best = (first, v(first));
        for s in first..=last {
            if v(s) > best.1 {
                best = (s, v(s));
            }
        }
        best
    }

    #[test]
    fn dense_range_maxima_match_a_scan() {
        let mut x = 12345u64;
        let values: Vec<u64> = (0..20_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % 1000
            })
            .collect();
        let baseline = 7;
        let envelope = Envelope::new(std::iter::once(baseline).chain(values.iter().copied()));
        let curve = Curve::Dense {
            baseline,
            values: &values,
            envelope: &envelope,
        };
        let states = values.len() as u32 + 1;
        let ranges = [
            (0, 0),
            (0, states - 1),
            (5, 70),
            (63, 64),
            (100, 9000),
            (4095, 12289),
        ];
        for &(a, b) in &ranges {
            assert_eq!(
                curve.argmax(a, b),
                naive(&values, baseline, a, b),
                "{a}..={b}"
            );
        }
        for a in (0..states).step_by(997) {
            for len in [1, 50, 700, 5000] {
                let b = (a + len).min(states - 1);
                assert_eq!(curve.argmax(a, b), naive(&values, baseline, a, b));
            }
        }
    }

    #[test]
    fn steps_read_the_last_change_at_or_before_a_state() {
        let changes = [(2u32, 50u64), (5, 20), (6, 80)];
        let curve = Curve::Steps {
            baseline: 10,
            changes: &changes,
        };
        let values: Vec<u64> = (0..9).map(|s| curve.value(s)).collect();
        assert_eq!(values, vec![10, 10, 10, 50, 50, 50, 20, 80, 80]);
        assert_eq!(curve.argmax(0, 8), (7, 80));
        assert_eq!(curve.argmax(0, 6), (3, 50));
        assert_eq!(curve.argmax(4, 6), (4, 50));
    }
}
