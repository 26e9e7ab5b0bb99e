//! The importer of `torch.profiler`'s `export_memory_timeline` output: the `.json`
//! (`[times_us, sizes]`, each `sizes[i]` the bytes of every category at `times_us[i]`) and the
//! `.raw.json(.gz)` (`[[t_ns, action, numbytes, category], …]`, one row per change of a
//! category's bytes), brought into the snapshot model on one device.
//!
//! Neither records tensors, only bytes per category (parameters, optimizer state, inputs,
//! temporaries, activations, gradients, autograd detail, unknown): each change becomes
//! allocations and frees such that every category's bytes at every time are exactly the
//! profiler's — a decrease frees the latest allocation of that size in its category, else the
//! latest ones, re-allocating what is left of the last. Each allocation's one frame names its
//! category ([`PROFILER_CATEGORY_FILE`]), which the categories read as its role. Not the place
//! for roles ([`crate::analysis::categories`]).

use serde_json::Value;

use super::profiled::Profiled;
use super::DecodeError;
use crate::model::{
    Action, ImportNote, Snapshot, Source, StackId, TraceRow, PROFILER_CATEGORY_FILE,
};

/// The profiler's categories in the order both files index them (`_memory_profiler`'s
/// `_CATEGORY_TO_INDEX`; the last is "no category").
pub const CATEGORIES: [&str; 8] = [
    "PARAMETER",
    "OPTIMIZER_STATE",
    "INPUT",
    "TEMPORARY",
    "ACTIVATION",
    "GRADIENT",
    "AUTOGRAD_DETAIL",
    "Unknown",
];

/// `export_memory_timeline_raw`'s actions.
const PREEXISTING: i64 = 1;
const CREATE: i64 = 2;
const INCREMENT_VERSION: i64 = 3;
const DESTROY: i64 = 4;

/// Whether `value` has the shape of the `.json` (`[times, sizes]`).
pub fn is_timeline(value: &Value) -> bool {
    matches!(value.as_array().map(Vec::as_slice), Some([Value::Array(times), Value::Array(sizes)])
        if times.len() == sizes.len() && times.first().is_none_or(Value::is_number)
            && sizes.first().is_none_or(Value::is_array))
}

/// Whether `value` has the shape of the `.raw.json` (rows of four numbers).
pub fn is_raw(value: &Value) -> bool {
    value.as_array().is_some_and(|rows| {
        !rows.is_empty()
            && rows.iter().take(16).all(|r| {
                r.as_array()
                    .is_some_and(|r| r.len() == 4 && r.iter().all(Value::is_number))
            })
    })
}

/// One category's allocations, latest last.
#[derive(Default)]
struct Ledger {
    live: Vec<(u64, u64)>,
}

struct Builder {
    profiled: Profiled,
    ledgers: Vec<Ledger>,
    stacks: Vec<StackId>,
    next_addr: u64,
}

impl Builder {
    fn new(source: Source) -> Self {
        let mut profiled = Profiled::new(source);
        let stacks = CATEGORIES
            .iter()
            .map(|name| {
                let frame = profiled.frame(PROFILER_CATEGORY_FILE, -1, name);
                profiled.stack(&[frame])
            })
            .collect();
        profiled.note(ImportNote::CategoriesOnly);
        Builder {
            profiled,
            ledgers: (0..CATEGORIES.len()).map(|_| Ledger::default()).collect(),
            stacks,
            next_addr: 0x1000,
        }
    }

    fn row(&mut self, action: Action, category: usize, addr: u64, size: u64, time_us: i64) {
        let stack = self.stacks[category];
        self.profiled.push(
            0,
            TraceRow {
                addr,
                size,
                time_us,
                stack,
                ..TraceRow::new(action)
            },
        );
    }

    /// Changes `category`'s bytes by `delta` at `time_us`.
    fn change(&mut self, category: usize, delta: i128, time_us: i64) {
        if delta > 0 {
            let size = delta.min(u64::MAX as i128) as u64;
            self.next_addr += size.div_ceil(512).max(1) * 512;
            let addr = self.next_addr;
            self.ledgers[category].live.push((addr, size));
            self.row(Action::Alloc, category, addr, size, time_us);
            return;
        }
        let mut left = delta.unsigned_abs().min(u64::MAX as u128) as u64;
        // The latest allocation of exactly that size (looked for among the latest few).
        let live = &self.ledgers[category].live;
        let exact = live
            .iter()
            .rev()
            .take(64)
            .position(|&(_, s)| s == left)
            .map(|k| live.len() - 1 - k);
        if let Some(i) = exact {
            let (addr, size) = self.ledgers[category].live.remove(i);
            self.row(Action::FreeCompleted, category, addr, size, time_us);
            return;
        }
        while left > 0 {
            let Some((addr, size)) = self.ledgers[category].live.pop() else {
                // More freed than the category held: the files never do this; stop at zero.
                break;
            };
            self.row(Action::FreeCompleted, category, addr, size, time_us);
            if size > left {
                self.change(category, (size - left) as i128, time_us);
                left = 0;
            } else {
                left -= size;
            }
        }
    }
}

fn bad(what: String) -> DecodeError {
    DecodeError::new(None, what).with_hint(
        "expected torch.profiler's export_memory_timeline output (.json or .raw.json.gz)",
    )
}

/// `[times_us, sizes]`.
pub fn import_timeline(value: &Value) -> Result<Snapshot, DecodeError> {
    let (times, sizes) = match value.as_array().map(Vec::as_slice) {
        Some([Value::Array(t), Value::Array(s)]) => (t, s),
        _ => return Err(bad("a memory timeline is a list [times, sizes]".into())),
    };
    let mut builder = Builder::new(Source::MemoryTimeline);
    let mut previous = vec![0i128; CATEGORIES.len()];
    let mut skipped = (0u64, 0u64);
    for (i, (time, row)) in times.iter().zip(sizes).enumerate() {
        let (Some(t), Some(row)) = (time.as_f64().filter(|t| t.is_finite()), row.as_array()) else {
            if skipped.0 == 0 {
                skipped.1 = i as u64;
            }
            skipped.0 += 1;
            continue;
        };
        // Index 0 of each list is always 0; the categories follow.
        for (c, value) in row.iter().skip(1).take(CATEGORIES.len()).enumerate() {
            let bytes = value
                .as_f64()
                .filter(|b| b.is_finite() && *b >= 0.0)
                .unwrap_or(0.0) as i128;
            let delta = bytes - previous[c];
            if delta != 0 {
                builder.change(c, delta, t.round() as i64);
                previous[c] = bytes;
            }
        }
    }
    if skipped.0 > 0 {
        builder.profiled.note(ImportNote::Skipped {
            rows: skipped.0,
            first: skipped.1,
        });
    }
    Ok(builder.profiled.finish())
}

/// `[[t_ns, action, numbytes, category], …]`.
pub fn import_raw(value: &Value) -> Result<Snapshot, DecodeError> {
    let rows = value
        .as_array()
        .ok_or_else(|| bad("a raw memory timeline is a list of rows".into()))?;
    let mut builder = Builder::new(Source::MemoryTimelineRaw);
    let mut parsed: Vec<(i64, i64, i128, usize)> = Vec::with_capacity(rows.len());
    let mut skipped = (0u64, 0u64);
    // Integers are read as integers: nanosecond times since the epoch need all 64 bits.
    let int = |v: &Value| {
        v.as_i64().or_else(|| {
            v.as_f64()
                .filter(|f| f.is_finite() && f.abs() < 9.0e18)
                .map(|f| f as i64)
        })
    };
    for (i, row) in rows.iter().enumerate() {
        let fields = row
            .as_array()
            .map(|r| r.iter().map(int).collect::<Vec<_>>());
        match fields.as_deref() {
            Some(&[Some(t), Some(action), Some(bytes), Some(category)])
                if (PREEXISTING..=DESTROY).contains(&action)
                    && (0..CATEGORIES.len() as i64).contains(&category) =>
            {
                parsed.push((t, action, bytes as i128, category as usize));
            }
            _ => {
                if skipped.0 == 0 {
                    skipped.1 = i as u64;
                }
                skipped.0 += 1;
            }
        }
    }
    // In time order (a version's pair of rows keeps its order).
    parsed.sort_by_key(|r| r.0);
    // What existed before profiling started is written at t = -1: it is there from the first
    // real time on.
    let first = parsed
        .iter()
        .map(|r| r.0)
        .filter(|&t| t >= 0)
        .min()
        .unwrap_or(0);
    for (t, action, bytes, category) in parsed {
        let time_us = t.max(first) / 1000;
        let delta = match action {
            PREEXISTING | CREATE => bytes.abs(),
            DESTROY => -bytes.abs(),
            // Written as a pair: −n in the old category, +n in the new.
            INCREMENT_VERSION => bytes,
            _ => 0,
        };
        if delta != 0 {
            builder.change(category, delta, time_us);
        }
    }
    if skipped.0 > 0 {
        builder.profiled.note(ImportNote::Skipped {
            rows: skipped.0,
            first: skipped.1,
        });
    }
    Ok(builder.profiled.finish())
}
