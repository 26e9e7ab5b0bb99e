//! The charts on a `<canvas>`: memsight-charts' drawings (`crates/charts`, shared with the
//! command line's reports) painted through plotters' HTML canvas backend, at the canvas's
//! device pixel ratio, plus the PNG export.
//!
//! A thin adapter: every function here opens the canvas as a [`Chart`] and hands it to the
//! drawing of the same name, so call sites say `charts::pie(canvas, theme, …)`; the layouts,
//! the hit tests (`charts::hit_*`) and [`Slice`] / [`Theme`] are memsight-charts' own.
//! Components size the canvas (backing store = CSS size × `devicePixelRatio`), then call a
//! drawing function from an effect, and call the `hit_*` helpers with CSS pixels for
//! tooltips. Nothing here formats bytes: callers pass the core's `format::bytes`.

use plotters_canvas::CanvasBackend;
use web_sys::HtmlCanvasElement;

use memsight_charts::Chart;
// Re-exported so callers say `charts::hit_pie`, `charts::Slice`, `charts::geometry::Piece`.
// Allowed unused: a chart nobody draws yet is reported as dead code where it is defined.
#[allow(unused_imports)]
pub use memsight_charts::{
    geometry, hit_bars, hit_histogram, hit_pie, hit_runs, hit_segments, hit_stacked_area, Slice,
    Theme,
};

/// Opens `canvas` as a chart cleared to the theme's background; `None` for a canvas with no
/// pixels.
fn open(canvas: &HtmlCanvasElement, theme: &Theme) -> Result<Option<Chart<CanvasBackend>>, String> {
    if canvas.width() == 0 || canvas.height() == 0 {
        return Ok(None);
    }
    // `with_canvas_object` takes the element by value and answers `None` (no reason
    // given) when the canvas has no 2D context, e.g. one already taken as WebGL.
    let backend = CanvasBackend::with_canvas_object(canvas.clone())
        .ok_or_else(|| "the canvas has no 2D context".to_string())?;
    Chart::new(backend, scale_of(canvas), theme)
}

/// Defines `charts::NAME(canvas, theme, …)` for each drawing `memsight_charts::NAME(chart, …)`.
macro_rules! on_canvas {
    ($($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        $(#[$doc])*
        pub fn $name(canvas: &HtmlCanvasElement, theme: &Theme, $($arg: $ty),*) -> Result<(), String> {
            match open(canvas, theme)? {
                Some(chart) => memsight_charts::$name(&chart, $($arg),*),
                None => Ok(()),
            }
        }
    )*};
}

on_canvas! {
    /// A pie with a legend of label, bytes and share ([`memsight_charts::pie`]).
    pie(slices: &[Slice], title: &str, fmt: &dyn Fn(u64) -> String);
    /// Horizontal bars, largest first ([`memsight_charts::bars`]).
    bars(slices: &[Slice], title: &str, fmt: &dyn Fn(u64) -> String);
    /// Bytes by category over `xs`, stacked ([`memsight_charts::stacked_area`]).
    stacked_area(
        xs: &[f64],
        series: &[(Slice, Vec<u64>)],
        x_label: &str,
        title: &str,
        fmt: &dyn Fn(u64) -> String
    );
    /// Curves over one normalised axis ([`memsight_charts::overlaid_lines`]).
    overlaid_lines(
        series: &[(Slice, Vec<u64>)],
        x_label: &str,
        title: &str,
        fmt: &dyn Fn(u64) -> String
    );
    /// Runs' curves on one signed axis, each peak marked ([`memsight_charts::runs`]).
    runs(
        runs: &[(Slice, Vec<i64>)],
        x_label: &str,
        title: &str,
        fmt: &dyn Fn(i64) -> String
    );
    /// A histogram of sizes ([`memsight_charts::histogram`]).
    histogram(bins: &[(u64, u64, u64)], title: &str, fmt: &dyn Fn(u64) -> String);
    /// A half-circle gauge ([`memsight_charts::gauge`]).
    gauge(fraction: f64, label: &str);
    /// The allocator's segments ([`memsight_charts::segments`]).
    segments(
        title: &str,
        sizes: &[u64],
        largest: u64,
        pieces: &[Vec<geometry::Piece>],
        labels: &[String]
    );
}

/// The canvas as it is now, as a PNG `data:` URL (for "save as image").
pub fn png_data_url(canvas: &HtmlCanvasElement) -> Result<String, String> {
    canvas
        .to_data_url()
        .map_err(|e| e.as_string().unwrap_or_else(|| format!("{e:?}")))
}

/// The ratio of backing-store pixels to CSS pixels: the canvas's width over the CSS width its
/// inline style sets, else the window's `devicePixelRatio`. Read from the style, not the laid
/// out size: asking for the layout after the previous chart resized its canvas would lay the
/// page out again for every chart.
fn scale_of(canvas: &HtmlCanvasElement) -> f64 {
    let css = canvas
        .style()
        .get_property_value("width")
        .ok()
        .and_then(|w| {
            w.strip_suffix("px")
                .and_then(|n| n.trim().parse::<f64>().ok())
        })
        .filter(|&w| w > 0.0);
    let scale = match css {
        Some(css) => f64::from(canvas.width()) / css,
        None => web_sys::window().map_or(1.0, |w| w.device_pixel_ratio()),
    };
    if scale.is_finite() && scale > 0.0 {
        scale.clamp(0.25, 8.0)
    } else {
        1.0
    }
}
