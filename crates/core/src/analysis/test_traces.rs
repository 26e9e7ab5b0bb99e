//! Hand-made traces for unit tests: random allocations, and a device from (action, address,
//! size) rows. Test code only.

use crate::model::{Action, Device, Trace, TraceRow};

/// Repeatable pseudo-random numbers below `m` (xorshift), from a non-zero `seed`.
pub fn random(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut x = seed;
    move |m| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    }
}

/// Pseudo-random allocations from bytes to megabytes at addresses `1..allocations`, freed
/// in any order, some never.
pub fn random_rows(seed: u64, allocations: u64) -> Vec<(Action, u64, u64)> {
    let mut rand = random(seed);
    let mut rows = Vec::new();
    let mut live: Vec<(u64, u64)> = Vec::new();
    for addr in 1..allocations {
        let magnitude = 4 + rand(20);
        let size = 1 + rand(1 << magnitude);
        rows.push((Action::Alloc, addr, size));
        live.push((addr, size));
        while !live.is_empty() && rand(3) == 0 {
            let (a, s) = live.swap_remove(rand(live.len() as u64) as usize);
            rows.push((Action::FreeCompleted, a, s));
        }
    }
    rows
}

/// A device whose trace is `rows` of (action, address, size), with no final segments.
pub fn device(rows: &[(Action, u64, u64)]) -> Device {
    let mut trace = Trace::default();
    for &(action, addr, size) in rows {
        let mut row = TraceRow::new(action);
        row.addr = addr;
        row.size = size;
        trace.push(row);
    }
    trace.finish();
    Device {
        id: 0,
        has_trace_list: true,
        trace,
        segments: Vec::new(),
        blocks: Vec::new(),
        reported: None,
    }
}
