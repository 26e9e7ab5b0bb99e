//! The memory timeline: allocations (or segments) stacked over time, laid out once and drawn
//! at any zoom.
//!
//! Semantics follow PyTorch's memory_viz so pictures can be compared: an element lives from
//! its alloc to its free; live elements are stacked in allocation order, so when one is freed
//! those above it slide down; elements alive before the trace window form the baseline from
//! the first state; elements too small to draw individually are merged into one band on top.
//!
//! The x axis is a *state* index: state 0 is memory before the first trace row, state `r + 1`
//! is memory after row `r`. Unlike memory_viz, nothing is precomputed per element and state
//! (its polygons cost O(N × live)): [`layout::Layout`] keeps the drawn elements' push/remove
//! events with checkpoints of the live stack, so the stack at any state is a seek away, and
//! [`raster`] paints one pixel column at a time, each showing the state where memory peaks
//! within the column. Everything here is pure and tested natively; the worker owns it and the
//! page only shows the pixels.
//!
//! - [`elements`]: what is stacked (allocations or segments), in stack order;
//! - [`curve`]: the total a track must reach (allocated or reserved bytes) and its range maxima;
//! - [`axis`]: mapping a view (event index or wall-clock time) to pixel columns of states;
//! - [`layout`]: which elements are drawn individually and the live stack at any state;
//! - [`raster`]: pixels of a view, and what is under a pixel;
//! - [`colouring`]: the colour of each element (its own, or its role's or component's) and the
//!   small band split by category;
//! - [`inspect`]: an element's details and search (stacks are read through
//!   [`crate::analysis::stacks`]);
//! - [`live`]: what was alive at one moment (largest allocations, call sites);
//! - [`service`]: the timeline's requests and answers, and the service that keeps layouts and
//!   answers them.

pub mod axis;
pub mod colouring;
pub mod curve;
pub mod elements;
pub mod inspect;
pub mod layout;
pub mod live;
pub mod raster;
pub mod service;

use serde::{Deserialize, Serialize};

/// Which timeline of a device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimelineKind {
    /// Active allocations (blocks handed to tensors), with the reserved total as a line.
    #[default]
    Allocations,
    /// Cached segments (cudaMalloc'd or mapped memory).
    Segments,
}

/// Units of the x axis.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AxisMode {
    /// State index (0 = before the first trace row).
    #[default]
    Events,
    /// Microseconds of wall-clock time (`time_us`).
    Time,
}

/// What a canvas shows of a timeline: `[x0, x1)` in `mode` units over `width × height` device
/// pixels. Frames are asked for and answered with one, and hit tests name the one painted.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Viewport {
    pub mode: AxisMode,
    pub x0: f64,
    pub x1: f64,
    pub width: u32,
    pub height: u32,
}

/// "Not freed within the trace": the end state of an element alive at the end.
pub const ALIVE: u32 = u32::MAX;

/// Hand-made traces for the timeline's unit tests.
#[cfg(test)]
pub(crate) mod test_traces {
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
}
