//! Small charts of byte breakdowns: a pie, horizontal bars, a stacked area over time, curves
//! overlaid on one axis (two runs compared, or every run of a job with its peak marked), a histogram of sizes, a half-circle gauge and the allocator's
//! segments, plus the hover helpers that say which part of a chart is under the pointer.
//!
//! - this file: the plain data the charts take ([`Slice`], [`Theme`]);
//! - [`geometry`]: where every part of every chart goes, in pixels, and the hit tests (pure,
//!   natively tested). Drawing and hovering both ask it, so they always agree;
//! - [`draw`]: paints a chart through any plotters `DrawingBackend` (the page's HTML canvas,
//!   or SVG);
//! - `svg` (feature `svg`): a chart drawn into an SVG string, for reports that carry their
//!   charts inline.
//!
//! Shared by the page (`src/ui/charts`, which adapts a `<canvas>` and its device pixel ratio)
//! and the command line's HTML reports, so both draw the same picture. Not a component and
//! not a formatter: nothing here knows the DOM, Leptos or signals, and every function that
//! shows bytes takes the formatter (the core's `format::bytes`), so the charts say sizes
//! exactly as the rest of memsight does.

pub mod draw;
pub mod geometry;
#[cfg(feature = "svg")]
pub mod svg;

pub use draw::{bars, gauge, histogram, overlaid_lines, pie, runs, segments, stacked_area, Chart};
pub use geometry::{hit_bars, hit_histogram, hit_pie, hit_runs, hit_segments, hit_stacked_area};

/// One category of bytes: a pie slice, a bar, or (with its value ignored) a stacked series.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slice {
    /// A stable name for the category (`"activations"`), for the caller's own lookups.
    pub key: String,
    /// What the chart writes next to it.
    pub label: String,
    /// Bytes.
    pub value: u64,
    /// Fill colour, RGB.
    pub colour: [u8; 3],
}

/// The colours a chart is drawn in, matching the page's light or dark stylesheet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Theme {
    /// Behind everything (the chart's card): an exported picture is opaque, so this is painted.
    pub background: [u8; 3],
    /// Titles, labels and tick labels.
    pub text: [u8; 3],
    /// Grid lines, axes and the gauge's empty track.
    pub grid: [u8; 3],
}

impl Theme {
    /// `--surface`, `--text` and `--border` of `static/style.css`'s light theme.
    pub fn light() -> Self {
        Self {
            background: [0xff, 0xff, 0xff],
            text: [0x1b, 0x1f, 0x27],
            grid: [0xdf, 0xe3, 0xea],
        }
    }

    /// `--surface`, `--text` and `--border` of `static/style.css`'s dark theme.
    pub fn dark() -> Self {
        Self {
            background: [0x17, 0x1a, 0x21],
            text: [0xe6, 0xe8, 0xee],
            grid: [0x2b, 0x30, 0x3b],
        }
    }
}
