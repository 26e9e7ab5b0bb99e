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
//! (its polygons cost O(N × live)): [`layout::TimelineLayout`] keeps the drawn elements' push/remove
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

pub mod colouring;
pub mod inspect;
pub mod layout;
pub mod raster;
pub mod service;

use serde::{Deserialize, Serialize};

use crate::analysis::axis::AxisMode;

/// Which timeline of a device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimelineKind {
    /// Active allocations (blocks handed to tensors), with the reserved total as a line.
    #[default]
    Allocations,
    /// Cached segments (cudaMalloc'd or mapped memory).
    Segments,
    /// The allocations of one private pool (its position among the device's pools), with the
    /// pool's reserved bytes as a line: its envelope, its blocks inside.
    Pool(u16),
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
