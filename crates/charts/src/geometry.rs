//! Where each part of each chart goes, in pixels, and which part is under a point.
//!
//! Every layout takes the canvas size and a `scale`: drawing passes the backing store's size
//! and the device pixel ratio, hovering passes the CSS size and 1. Every length here is a
//! constant in CSS pixels times `scale`, or a share of the size, so the two layouts are the
//! same picture at two resolutions and a tooltip always names what is drawn under the pointer.
//!
//! Pure arithmetic, natively tested. Not for painting (that is `draw`, wasm32 only) and not for
//! words: byte labels come from the formatter the caller passes to the drawing functions.

use crate::Slice;
use std::f64::consts::{FRAC_PI_2, PI, TAU};

/// Space around and between parts, CSS pixels.
pub const PAD: f64 = 8.0;
/// The band at the top that holds the title; always reserved, so hit tests need no title.
pub const TITLE_H: f64 = 24.0;
/// Title font size, CSS pixels.
pub const TITLE_FONT: f64 = 14.0;
/// Label, legend and tick font size, CSS pixels.
pub const FONT: f64 = 12.0;
/// Height of one legend row, CSS pixels.
pub const ROW_H: f64 = 18.0;
/// Height of the band under a plot that holds the x tick labels, CSS pixels.
pub const AXIS_H: f64 = 20.0;
/// Room right of the longest bar for its value label, CSS pixels.
pub const VALUE_W: f64 = 76.0;
/// Width of the band left of a plot that holds the y tick labels, CSS pixels.
pub const Y_AXIS_W: f64 = 64.0;
/// Room a histogram's x label needs before the next one may be written, CSS pixels.
pub const BIN_LABEL_W: f64 = 60.0;

/// An axis-aligned rectangle, `x0 <= x1` and `y0 <= y1` (empty rather than inverted).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rect {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl Rect {
    /// A rectangle from its corners; a negative size is clamped to zero, never inverted.
    pub fn new(x0: f64, y0: f64, x1: f64, y1: f64) -> Self {
        Self {
            x0,
            y0,
            x1: x1.max(x0),
            y1: y1.max(y0),
        }
    }

    pub fn width(&self) -> f64 {
        self.x1 - self.x0
    }

    pub fn height(&self) -> f64 {
        self.y1 - self.y0
    }

    /// Half-open, so a point on the border between two rows belongs to exactly one.
    pub fn contains(&self, x: f64, y: f64) -> bool {
        x >= self.x0 && x < self.x1 && y >= self.y0 && y < self.y1
    }
}

/// The title band and the rest of the canvas, inside the padding.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TitledArea {
    pub title: Rect,
    pub body: Rect,
}

/// Splits a `width` × `height` canvas into the title band and the body below it.
pub fn frame(width: f64, height: f64, scale: f64) -> TitledArea {
    let (w, h, s) = (finite(width), finite(height), finite_scale(scale));
    let title = Rect::new(PAD * s, PAD * s, w - PAD * s, PAD * s + TITLE_H * s);
    let body = Rect::new(PAD * s, title.y1 + PAD * s / 2.0, w - PAD * s, h - PAD * s);
    TitledArea { title, body }
}

/// Where a pie, its legend and its legend rows go.
#[derive(Clone, Debug, PartialEq)]
pub struct PieLayout {
    pub frame: TitledArea,
    pub cx: f64,
    pub cy: f64,
    pub r: f64,
    /// The legend's column (right of the pie when the body is wide, below it otherwise).
    pub legend: Rect,
    /// Top of the first legend row (rows are centred in a side legend).
    pub legend_top: f64,
    pub row_h: f64,
    /// How many legend rows fit; later entries are not listed.
    pub legend_rows: usize,
}

/// Lays out a pie with `entries` legend rows (its non-zero slices).
pub fn pie_layout(width: f64, height: f64, scale: f64, entries: usize) -> PieLayout {
    let s = finite_scale(scale);
    let frame = frame(width, height, s);
    let body = frame.body;
    let row_h = ROW_H * s;
    let wanted = entries as f64 * row_h;
    let (pie_area, legend) = if entries == 0 {
        (body, Rect::new(body.x1, body.y0, body.x1, body.y0))
    } else if body.width() >= body.height() * 1.4 {
        // Wide: legend on the right, the pie gets what is left.
        let legend_w = (body.width() * 0.45).min(260.0 * s);
        let legend = Rect::new(body.x1 - legend_w, body.y0, body.x1, body.y1);
        let pie = Rect::new(body.x0, body.y0, legend.x0 - PAD * s, body.y1);
        (pie, legend)
    } else {
        // Tall or square: legend below, never taking more than 45% of the height.
        let legend_h = wanted.min(body.height() * 0.45);
        let legend = Rect::new(body.x0, body.y1 - legend_h, body.x1, body.y1);
        let pie = Rect::new(body.x0, body.y0, body.x1, legend.y0 - PAD * s / 2.0);
        (pie, legend)
    };
    let legend_rows = if row_h > 0.0 {
        entries.min((legend.height() / row_h + 1e-9).floor() as usize)
    } else {
        0
    };
    let legend_top = legend.y0 + ((legend.height() - legend_rows as f64 * row_h) / 2.0).max(0.0);
    PieLayout {
        frame,
        cx: (pie_area.x0 + pie_area.x1) / 2.0,
        cy: (pie_area.y0 + pie_area.y1) / 2.0,
        r: (pie_area.width().min(pie_area.height()) / 2.0).max(0.0),
        legend,
        legend_top,
        row_h,
        legend_rows,
    }
}

/// The rectangle of legend row `row` (a swatch and its text).
pub fn legend_row(legend: Rect, top: f64, row_h: f64, row: usize) -> Rect {
    let y0 = top + row as f64 * row_h;
    Rect::new(legend.x0, y0, legend.x1, y0 + row_h)
}

/// A pie's slices: `(index into the values, start, end)` for every non-zero value, in order.
/// Angles are radians clockwise from 12 o'clock; the last slice ends at exactly 2π, so a
/// single non-zero value is a full disc.
pub fn pie_sweeps(values: &[u64]) -> Vec<(usize, f64, f64)> {
    // u128: the sum of many u64 byte counts may not fit in a u64.
    let total: u128 = values.iter().map(|&v| u128::from(v)).sum();
    if total == 0 {
        return Vec::new();
    }
    let mut sweeps = Vec::new();
    let mut done: u128 = 0;
    for (i, &v) in values.iter().enumerate() {
        if v == 0 {
            continue;
        }
        let start = TAU * (done as f64 / total as f64);
        done += u128::from(v);
        let end = TAU * (done as f64 / total as f64);
        sweeps.push((i, start, end));
    }
    sweeps
}

/// The point at angle `a` (clockwise from 12 o'clock) on the circle of radius `r`.
pub fn polar(cx: f64, cy: f64, r: f64, a: f64) -> (f64, f64) {
    (cx + r * a.sin(), cy - r * a.cos())
}

/// Points along an arc from `a0` to `a1`, close enough together that the polygon reads as a
/// curve (about every 2 pixels), ends included.
pub fn arc_points(cx: f64, cy: f64, r: f64, a0: f64, a1: f64) -> Vec<(f64, f64)> {
    let steps = ((a1 - a0).abs() * r.max(1.0) / 2.0)
        .ceil()
        .clamp(1.0, 1440.0) as usize;
    (0..=steps)
        .map(|k| polar(cx, cy, r, a0 + (a1 - a0) * k as f64 / steps as f64))
        .collect()
}

/// Which slice (index into `slices`) is under CSS pixel `(x, y)` of a pie drawn on a `width`
/// × `height` CSS pixel canvas: a point in the disc or on the slice's legend row.
pub fn hit_pie(width: f64, height: f64, slices: &[Slice], x: f64, y: f64) -> Option<usize> {
    let values: Vec<u64> = slices.iter().map(|s| s.value).collect();
    let sweeps = pie_sweeps(&values);
    let layout = pie_layout(width, height, 1.0, sweeps.len());
    let (dx, dy) = (x - layout.cx, y - layout.cy);
    if layout.r > 0.0 && dx * dx + dy * dy <= layout.r * layout.r {
        let mut a = dx.atan2(-dy);
        if a < 0.0 {
            a += TAU;
        }
        return sweeps
            .iter()
            .find(|&&(_, start, end)| a >= start && a < end)
            .or(sweeps.last())
            .map(|&(i, _, _)| i);
    }
    (0..layout.legend_rows)
        .find(|&row| legend_row(layout.legend, layout.legend_top, layout.row_h, row).contains(x, y))
        .map(|row| sweeps[row].0)
}

/// Where horizontal bars go: one row per slice, largest first.
#[derive(Clone, Debug, PartialEq)]
pub struct BarsLayout {
    pub frame: TitledArea,
    /// The column of category labels, right-aligned against the bars.
    pub labels: Rect,
    /// The bars: `x0` is zero bytes, `x1` is [`BarsLayout::top`]; one row each, top down.
    pub plot: Rect,
    /// The band under the bars holding the byte ticks.
    pub axis: Rect,
    pub row_h: f64,
    pub bar_h: f64,
    /// The axis's end, a whole number of ticks.
    pub top: u64,
    /// Byte tick values, 0 to `top`.
    pub ticks: Vec<u64>,
    /// Row `k` shows slice `order[k]`.
    pub order: Vec<usize>,
}

impl BarsLayout {
    /// The x of `value` bytes.
    pub fn x_of(&self, value: u64) -> f64 {
        self.plot.x0 + self.plot.width() * ratio(value, self.top)
    }

    /// The bar of row `row`, centred in its row.
    pub fn bar(&self, row: usize, value: u64) -> Rect {
        let mid = self.plot.y0 + (row as f64 + 0.5) * self.row_h;
        Rect::new(
            self.plot.x0,
            mid - self.bar_h / 2.0,
            self.x_of(value),
            mid + self.bar_h / 2.0,
        )
    }
}

/// Lays out one horizontal bar per value.
pub fn bars_layout(width: f64, height: f64, scale: f64, values: &[u64]) -> BarsLayout {
    let s = finite_scale(scale);
    let frame = frame(width, height, s);
    let body = frame.body;
    let label_w = (body.width() * 0.3).clamp(48.0 * s, 180.0 * s);
    let labels = Rect::new(body.x0, body.y0, body.x0 + label_w, body.y1 - AXIS_H * s);
    let plot = Rect::new(
        labels.x1 + PAD * s,
        body.y0,
        body.x1 - VALUE_W * s,
        labels.y1,
    );
    let axis = Rect::new(plot.x0, plot.y1, plot.x1, body.y1);
    let max = values.iter().copied().max().unwrap_or(0);
    let (step, top) = byte_ticks(max);
    let row_h = if values.is_empty() {
        0.0
    } else {
        plot.height() / values.len() as f64
    };
    BarsLayout {
        frame,
        labels,
        plot,
        axis,
        row_h,
        bar_h: (row_h * 0.72).min(24.0 * s),
        top,
        ticks: ticks(step, top),
        order: largest_first(values),
    }
}

/// Which slice (index into `slices`) is under CSS pixel `(x, y)` of bars drawn on a `width` ×
/// `height` CSS pixel canvas: anywhere on its row, label and value included.
pub fn hit_bars(width: f64, height: f64, slices: &[Slice], x: f64, y: f64) -> Option<usize> {
    let values: Vec<u64> = slices.iter().map(|s| s.value).collect();
    let layout = bars_layout(width, height, 1.0, &values);
    let rows = Rect::new(
        layout.frame.body.x0,
        layout.plot.y0,
        layout.frame.body.x1,
        layout.plot.y1,
    );
    if layout.row_h <= 0.0 || !rows.contains(x, y) {
        return None;
    }
    let row = ((y - rows.y0) / layout.row_h).floor() as usize;
    layout.order.get(row).copied()
}

/// Indices of `values`, largest value first; equal values keep their order.
pub fn largest_first(values: &[u64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[b].cmp(&values[a]));
    order
}

/// Where a histogram goes: one column per bin, in the order given.
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramLayout {
    pub frame: TitledArea,
    /// The columns: `y1` is a count of zero, `y0` is [`HistogramLayout::top`].
    pub plot: Rect,
    /// Left of the plot: the count ticks.
    pub y_axis: Rect,
    /// Under the plot: the bins' lower bounds.
    pub x_axis: Rect,
    /// Width of one bin's column.
    pub slot_w: f64,
    pub top: u64,
    pub ticks: Vec<u64>,
    /// Every how many bins an x label is written, so labels never overlap.
    pub label_every: usize,
}

impl HistogramLayout {
    /// The y of a count.
    pub fn y_of(&self, count: u64) -> f64 {
        self.plot.y1 - self.plot.height() * ratio(count, self.top)
    }

    /// The bar of bin `bin`, with a small gap on each side.
    pub fn bar(&self, bin: usize, count: u64) -> Rect {
        let x0 = self.plot.x0 + bin as f64 * self.slot_w;
        let gap = self.slot_w * 0.1;
        Rect::new(
            x0 + gap,
            self.y_of(count),
            x0 + self.slot_w - gap,
            self.plot.y1,
        )
    }
}

/// Lays out a histogram of `counts`, one column per bin.
pub fn histogram_layout(width: f64, height: f64, scale: f64, counts: &[u64]) -> HistogramLayout {
    let s = finite_scale(scale);
    let frame = frame(width, height, s);
    let body = frame.body;
    let plot = Rect::new(
        body.x0 + Y_AXIS_W * s,
        body.y0 + PAD * s,
        body.x1 - PAD * s,
        body.y1 - AXIS_H * s,
    );
    let y_axis = Rect::new(body.x0, plot.y0, plot.x0, plot.y1);
    let x_axis = Rect::new(plot.x0, plot.y1, plot.x1, body.y1);
    let (step, top) = count_ticks(counts.iter().copied().max().unwrap_or(0));
    let slot_w = if counts.is_empty() {
        0.0
    } else {
        plot.width() / counts.len() as f64
    };
    let label_every = if slot_w > 0.0 {
        ((BIN_LABEL_W * s / slot_w).ceil() as usize).max(1)
    } else {
        1
    };
    HistogramLayout {
        frame,
        plot,
        y_axis,
        x_axis,
        slot_w,
        top,
        ticks: ticks(step, top),
        label_every,
    }
}

/// Which bin (index into `counts`) is under CSS pixel `(x, y)` of a histogram drawn on a
/// `width` × `height` CSS pixel canvas: anywhere in its column, label band included.
pub fn hit_histogram(width: f64, height: f64, counts: &[u64], x: f64, y: f64) -> Option<usize> {
    let layout = histogram_layout(width, height, 1.0, counts);
    let columns = Rect::new(
        layout.plot.x0,
        layout.plot.y0,
        layout.plot.x1,
        layout.x_axis.y1,
    );
    if layout.slot_w <= 0.0 || !columns.contains(x, y) {
        return None;
    }
    let bin = ((x - columns.x0) / layout.slot_w).floor() as usize;
    (bin < counts.len()).then_some(bin)
}

/// Where a stacked area chart goes.
#[derive(Clone, Debug, PartialEq)]
pub struct AreaLayout {
    pub frame: TitledArea,
    /// The plot: `x0..x1` is `x_min..x_max`, `y1..y0` is 0 to [`AreaLayout::top`] bytes.
    pub plot: Rect,
    pub y_axis: Rect,
    /// Under the plot: x ticks, then the x axis's title.
    pub x_axis: Rect,
    /// The series legend, right of the plot; empty when the canvas is too narrow.
    pub legend: Rect,
    pub legend_top: f64,
    pub row_h: f64,
    pub legend_rows: usize,
    pub x_min: f64,
    pub x_max: f64,
    pub top: u64,
    pub y_ticks: Vec<u64>,
    pub x_ticks: Vec<f64>,
    /// Distance between x ticks, for how many decimals their labels need.
    pub x_step: f64,
}

impl AreaLayout {
    pub fn x_of(&self, x: f64) -> f64 {
        self.plot.x0 + self.plot.width() * ((x - self.x_min) / (self.x_max - self.x_min))
    }

    pub fn y_of(&self, bytes: u128) -> f64 {
        let share = if self.top == 0 {
            0.0
        } else {
            (bytes as f64 / self.top as f64).min(1.0)
        };
        self.plot.y1 - self.plot.height() * share
    }
}

/// The range of the finite `xs`, widened when it is a single point (plotting needs a width).
pub fn x_range(xs: &[f64]) -> (f64, f64) {
    let finite = xs.iter().copied().filter(|x| x.is_finite());
    let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    if lo > hi {
        (0.0, 1.0)
    } else if lo == hi {
        (lo - 0.5, hi + 0.5)
    } else {
        (lo, hi)
    }
}

/// Stacked totals: `stack[i][k]` is the sum of series `0..k` at `xs[i]` (so band `k` spans
/// `stack[i][k]..stack[i][k + 1]`). A series shorter than `xs` counts as zero past its end.
pub fn stack(len: usize, series: &[&[u64]]) -> Vec<Vec<u128>> {
    (0..len)
        .map(|i| {
            let mut sums = Vec::with_capacity(series.len() + 1);
            let mut sum: u128 = 0;
            sums.push(0);
            for values in series {
                sum += u128::from(values.get(i).copied().unwrap_or(0));
                sums.push(sum);
            }
            sums
        })
        .collect()
}

/// Lays out a stacked area chart over `xs` with these stacked totals (from [`stack`]).
pub fn area_layout(
    width: f64,
    height: f64,
    scale: f64,
    xs: &[f64],
    stacked: &[Vec<u128>],
    entries: usize,
) -> AreaLayout {
    let s = finite_scale(scale);
    let frame = frame(width, height, s);
    let body = frame.body;
    let row_h = ROW_H * s;
    let legend_w = if entries > 0 && body.width() >= 360.0 * s {
        (body.width() * 0.22).clamp(90.0 * s, 180.0 * s)
    } else {
        0.0
    };
    let legend = Rect::new(body.x1 - legend_w, body.y0, body.x1, body.y1);
    let right = if legend_w > 0.0 {
        legend.x0 - PAD * s
    } else {
        body.x1 - PAD * s
    };
    let plot = Rect::new(
        body.x0 + Y_AXIS_W * s,
        body.y0 + PAD * s,
        right,
        body.y1 - 2.0 * AXIS_H * s,
    );
    let y_axis = Rect::new(body.x0, plot.y0, plot.x0, plot.y1);
    let x_axis = Rect::new(plot.x0, plot.y1, plot.x1, body.y1);
    let legend_rows = if legend_w > 0.0 {
        entries.min((legend.height() / row_h + 1e-9).floor() as usize)
    } else {
        0
    };
    let legend_top = legend.y0 + ((legend.height() - legend_rows as f64 * row_h) / 2.0).max(0.0);
    let max = stacked
        .iter()
        .filter_map(|sums| sums.last().copied())
        .max()
        .unwrap_or(0);
    let (y_step, top) = byte_ticks(u64::try_from(max).unwrap_or(u64::MAX));
    let (x_min, x_max) = x_range(xs);
    let x_step = nice_step(x_max - x_min, 5.0);
    let first = (x_min / x_step).ceil() as i64;
    let last = (x_max / x_step).floor() as i64;
    let x_ticks = (first..=last.min(first + 50))
        .map(|k| k as f64 * x_step)
        .collect();
    AreaLayout {
        frame,
        plot,
        y_axis,
        x_axis,
        legend,
        legend_top,
        row_h,
        legend_rows,
        x_min,
        x_max,
        top,
        y_ticks: ticks(y_step, top),
        x_ticks,
        x_step,
    }
}

/// What is under CSS pixel `(x, y)` of a stacked area chart drawn on a `width` × `height` CSS
/// pixel canvas: the index of the nearest x, and the series (index into `series`) whose band
/// holds the point at that x, if any. A legend row names its series with no x.
pub fn hit_stacked_area(
    width: f64,
    height: f64,
    xs: &[f64],
    series: &[(Slice, Vec<u64>)],
    x: f64,
    y: f64,
) -> Option<(Option<usize>, Option<usize>)> {
    let values: Vec<&[u64]> = series.iter().map(|(_, v)| v.as_slice()).collect();
    let stacked = stack(xs.len(), &values);
    let layout = area_layout(width, height, 1.0, xs, &stacked, series.len());
    if let Some(row) = (0..layout.legend_rows)
        .find(|&row| legend_row(layout.legend, layout.legend_top, layout.row_h, row).contains(x, y))
    {
        // The legend lists the top band first.
        return Some((None, Some(series.len() - 1 - row)));
    }
    if xs.is_empty() || !layout.plot.contains(x, y) {
        return None;
    }
    let nearest = xs
        .iter()
        .enumerate()
        .filter(|(_, v)| v.is_finite())
        .min_by(|(_, a), (_, b)| {
            let da = (layout.x_of(**a) - x).abs();
            let db = (layout.x_of(**b) - x).abs();
            da.total_cmp(&db)
        })
        .map(|(i, _)| i)?;
    let sums = &stacked[nearest];
    let band = (0..series.len()).find(|&k| {
        sums[k + 1] > sums[k] && y <= layout.y_of(sums[k]) && y >= layout.y_of(sums[k + 1])
    });
    Some((Some(nearest), band))
}

/// Where curves of runs go on one axis (x from 0 to 100 % of each run, y signed bytes: a run's
/// memory or its change from its start), with the layout of [`area_layout`] for the frame,
/// the plot, the x ticks and the legend.
#[derive(Clone, Debug, PartialEq)]
pub struct RunsLayout {
    pub area: AreaLayout,
    /// The y axis's ends, on its ticks: `lo` at the plot's bottom, `hi` at its top.
    pub lo: i64,
    pub hi: i64,
    pub y_ticks: Vec<i64>,
}

impl RunsLayout {
    pub fn y_of(&self, bytes: i64) -> f64 {
        let span = (self.hi - self.lo).max(1) as f64;
        let share = ((bytes - self.lo) as f64 / span).clamp(0.0, 1.0);
        self.area.plot.y1 - self.area.plot.height() * share
    }

    /// Where point `k` of a run of `n` points goes across.
    pub fn x_at(&self, k: usize, n: usize) -> f64 {
        let share = if n <= 1 {
            0.0
        } else {
            100.0 * k as f64 / (n - 1) as f64
        };
        self.area.x_of(share)
    }
}

/// How near a curve a pointer picks it, in CSS pixels.
const HIT_PX: f64 = 12.0;

/// Lays out `runs` (each run's values, spread over the whole width) on one signed byte axis
/// that holds 0 and every value, ticks a power of two apart.
pub fn runs_layout(width: f64, height: f64, scale: f64, runs: &[&[i64]]) -> RunsLayout {
    let values = runs.iter().flat_map(|r| r.iter().copied());
    let (min, max) = values.fold((0i64, 0i64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let span = u64::try_from(max - min).unwrap_or(u64::MAX);
    let (step, _) = byte_ticks(span);
    let step = i64::try_from(step).unwrap_or(i64::MAX).max(1);
    let lo = min.div_euclid(step) * step;
    let hi = (max + step - 1).div_euclid(step) * step;
    let hi = if hi == lo { lo + step } else { hi };
    let area = area_layout(width, height, scale, &[0.0, 100.0], &[], runs.len());
    let y_ticks = (0..=((hi - lo) / step)).map(|k| lo + k * step).collect();
    RunsLayout {
        area,
        lo,
        hi,
        y_ticks,
    }
}

/// Which run is under CSS pixel `(x, y)` of a runs chart drawn on a `width` × `height` CSS
/// pixel canvas: its legend row, or the curve nearest the pointer up or down at that x, within
/// 12 pixels.
pub fn hit_runs(width: f64, height: f64, runs: &[&[i64]], x: f64, y: f64) -> Option<usize> {
    let l = runs_layout(width, height, 1.0, runs);
    if let Some(row) = (0..l.area.legend_rows)
        .find(|&row| legend_row(l.area.legend, l.area.legend_top, l.area.row_h, row).contains(x, y))
    {
        return Some(row);
    }
    // A curve may run along the plot's edge: the pointer may be just outside it.
    let plot = l.area.plot;
    if x < plot.x0 || x > plot.x1 || y < plot.y0 - HIT_PX || y > plot.y1 + HIT_PX {
        return None;
    }
    let share = (x - plot.x0) / plot.width().max(1.0);
    runs.iter()
        .enumerate()
        .filter(|(_, values)| !values.is_empty())
        .map(|(i, values)| {
            let k = (share * (values.len() - 1) as f64).round() as usize;
            (i, (l.y_of(values[k.min(values.len() - 1)]) - y).abs())
        })
        .filter(|&(_, distance)| distance <= HIT_PX)
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
}

/// Where a half-circle gauge goes: the arc's centre (the middle of its flat side), radius and
/// thickness, and the baseline of its label.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GaugeLayout {
    pub cx: f64,
    pub cy: f64,
    pub r: f64,
    pub thickness: f64,
    /// Font size of the percentage inside the arc.
    pub value_font: f64,
    /// Vertical middle of the label under the arc.
    pub label_y: f64,
}

/// Lays out a gauge on a `width` × `height` canvas, centred.
pub fn gauge_layout(width: f64, height: f64, scale: f64) -> GaugeLayout {
    let (w, h, s) = (finite(width), finite(height), finite_scale(scale));
    let label_h = ROW_H * s;
    let r = ((w - 2.0 * PAD * s) / 2.0)
        .min(h - 2.0 * PAD * s - label_h)
        .max(0.0);
    let group = r + label_h;
    let top = ((h - group) / 2.0).max(0.0);
    GaugeLayout {
        cx: w / 2.0,
        cy: top + r,
        r,
        thickness: r * 0.28,
        value_font: (r * 0.3).clamp(9.0 * s, 40.0 * s),
        label_y: top + r + label_h / 2.0 + 2.0 * s,
    }
}

/// The angle (clockwise from 12 o'clock) a gauge's needle reaches at `fraction`: −π/2 (left)
/// at 0, π/2 (right) at 1. Not-a-number counts as 0; the fraction is clamped to 0..=1.
pub fn gauge_angle(fraction: f64) -> f64 {
    -FRAC_PI_2 + PI * clamp_fraction(fraction)
}

/// `fraction` clamped to 0..=1, not-a-number as 0.
pub fn clamp_fraction(fraction: f64) -> f64 {
    if fraction.is_nan() {
        0.0
    } else {
        fraction.clamp(0.0, 1.0)
    }
}

/// A byte axis from 0 to at least `max`: `(step, top)`, the step a power of two (so every tick
/// reads as a round number in binary units: 0, 512 MiB, 1 GiB, 1.5 GiB…), at most 5 steps.
pub fn byte_ticks(max: u64) -> (u64, u64) {
    if max == 0 {
        return (1, 1);
    }
    let step = max.div_ceil(4).next_power_of_two();
    (step, max.div_ceil(step).saturating_mul(step))
}

/// A count axis from 0 to at least `max`: `(step, top)`, the step 1, 2 or 5 × 10ⁿ.
pub fn count_ticks(max: u64) -> (u64, u64) {
    if max == 0 {
        return (1, 1);
    }
    let raw = max.div_ceil(4);
    let mut magnitude = 1u64;
    while magnitude.saturating_mul(10) <= raw && magnitude < u64::MAX / 10 {
        magnitude *= 10;
    }
    let step = [1, 2, 5, 10]
        .iter()
        .map(|&m| magnitude.saturating_mul(m))
        .find(|&step| step >= raw)
        .unwrap_or(raw);
    (step, max.div_ceil(step).saturating_mul(step))
}

/// `0, step, 2·step, …, top`.
pub fn ticks(step: u64, top: u64) -> Vec<u64> {
    let step = step.max(1);
    (0..=top / step).map(|k| k * step).collect()
}

/// A round step (1, 2 or 5 × 10ⁿ) cutting `span` into about `target` parts.
pub fn nice_step(span: f64, target: f64) -> f64 {
    let raw = span.abs() / target.max(1.0);
    if !raw.is_finite() || raw <= 0.0 {
        return 1.0;
    }
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&step| step >= raw)
        .unwrap_or(10.0 * magnitude)
}

/// An x tick's label: as many decimals as the step needs, no more (`0`, `2.5`, `0.01`).
pub fn number_label(value: f64, step: f64) -> String {
    let decimals = if step >= 1.0 || step <= 0.0 {
        0
    } else {
        (-step.log10()).ceil().clamp(0.0, 6.0) as usize
    };
    let text = format!("{value:.decimals$}");
    // "-0" reads as a bug.
    if text
        .trim_start_matches('-')
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        text.trim_start_matches('-').to_string()
    } else {
        text
    }
}

/// A count tick's label, short enough for the y axis: `950`, `9999`, `12.5k`, `3M`.
pub fn count_label(n: u64) -> String {
    if n < 10_000 {
        return n.to_string();
    }
    let (value, unit) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .iter()
        .map(|&(size, unit)| (n as f64 / size, unit))
        .find(|&(value, _)| value >= 1.0)
        .unwrap_or((n as f64, ""));
    // One decimal while it says something (12.5k), none past that (125k).
    let decimals = if value < 100.0 { 1 } else { 0 };
    let text = format!("{value:.decimals$}");
    format!("{}{unit}", text.trim_end_matches(".0"))
}

/// `part` as a percentage of `total` with no decimals, or `None` when `total` is zero.
pub fn percent(part: u64, total: u128) -> Option<String> {
    (total > 0).then(|| format!("{:.0}%", part as f64 / total as f64 * 100.0))
}

/// The average glyph width of the page's sans-serif fonts, in ems (see [`fit_text`]).
const GLYPH_EM: f64 = 0.58;

/// About how wide `text` is at font size `font` (see [`fit_text`]).
pub fn text_width(text: &str, font: f64) -> f64 {
    text.chars().count() as f64 * GLYPH_EM * font
}

/// `text`, cut to about `max_width` pixels at font size `font` with an ellipsis. Canvas text
/// can only be measured in the browser; an average glyph of 0.58 em is close enough for the
/// sans-serif fonts the page uses and keeps labels from running into each other.
pub fn fit_text(text: &str, max_width: f64, font: f64) -> String {
    let glyph = GLYPH_EM * font;
    if glyph <= 0.0 || !max_width.is_finite() {
        return text.to_string();
    }
    let fits = (max_width / glyph).floor().max(0.0) as usize;
    if text.chars().count() <= fits {
        return text.to_string();
    }
    if fits == 0 {
        return String::new();
    }
    let mut cut: String = text.chars().take(fits - 1).collect();
    cut.push('…');
    cut
}

/// `value / top`, clamped to 0..=1 (0 when `top` is 0).
fn ratio(value: u64, top: u64) -> f64 {
    if top == 0 {
        0.0
    } else {
        (value as f64 / top as f64).min(1.0)
    }
}

fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v.max(0.0)
    } else {
        0.0
    }
}

fn finite_scale(s: f64) -> f64 {
    if s.is_finite() && s > 0.0 {
        s
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(value: u64) -> Slice {
        Slice {
            key: format!("k{value}"),
            label: format!("l{value}"),
            value,
            colour: [1, 2, 3],
        }
    }

    fn slices(values: &[u64]) -> Vec<Slice> {
        values.iter().map(|&v| slice(v)).collect()
    }

    #[test]
    fn sweeps_skip_zeros_and_close_the_circle() {
        let sweeps = pie_sweeps(&[0, 1, 0, 3]);
        assert_eq!(sweeps.len(), 2);
        assert_eq!(sweeps[0].0, 1);
        assert_eq!(sweeps[1].0, 3);
        assert_eq!(sweeps[0].1, 0.0);
        assert!((sweeps[0].2 - TAU / 4.0).abs() < 1e-12);
        assert_eq!(sweeps[1].2, TAU);
        assert!(pie_sweeps(&[]).is_empty());
        assert!(pie_sweeps(&[0, 0]).is_empty());
        assert_eq!(pie_sweeps(&[5]), vec![(0, 0.0, TAU)]);
        // Sums past u64::MAX do not overflow.
        assert_eq!(pie_sweeps(&[u64::MAX, u64::MAX]).len(), 2);
    }

    #[test]
    fn pie_hits_follow_the_sweeps_clockwise_from_noon() {
        // A quarter then three quarters: the first slice is the top-right quadrant.
        let s = slices(&[1, 3]);
        let l = pie_layout(400.0, 300.0, 1.0, 2);
        let (cx, cy, r) = (l.cx, l.cy, l.r);
        assert!(r > 50.0);
        assert_eq!(
            hit_pie(400.0, 300.0, &s, cx + r / 2.0, cy - r / 2.0),
            Some(0)
        );
        assert_eq!(
            hit_pie(400.0, 300.0, &s, cx - r / 2.0, cy - r / 2.0),
            Some(1)
        );
        assert_eq!(
            hit_pie(400.0, 300.0, &s, cx + r / 2.0, cy + r / 2.0),
            Some(1)
        );
        // Outside the disc, off the legend.
        assert_eq!(hit_pie(400.0, 300.0, &s, 1.0, 1.0), None);
        assert_eq!(hit_pie(400.0, 300.0, &s, cx, cy - r - 2.0), None);
    }

    #[test]
    fn pie_hits_ignore_zero_slices_and_name_legend_rows() {
        let s = slices(&[0, 7, 0, 7]);
        let l = pie_layout(400.0, 300.0, 1.0, 2);
        // Right half is slice 1, left half slice 3.
        assert_eq!(hit_pie(400.0, 300.0, &s, l.cx + 5.0, l.cy), Some(1));
        assert_eq!(hit_pie(400.0, 300.0, &s, l.cx - 5.0, l.cy), Some(3));
        assert_eq!(l.legend_rows, 2);
        let row = legend_row(l.legend, l.legend_top, l.row_h, 1);
        assert_eq!(
            hit_pie(400.0, 300.0, &s, row.x0 + 1.0, row.y0 + 1.0),
            Some(3)
        );
    }

    #[test]
    fn a_single_slice_is_the_whole_disc() {
        let s = slices(&[0, 9]);
        let l = pie_layout(300.0, 300.0, 1.0, 1);
        for a in [0.0, 1.0, 3.0, 6.2] {
            let (x, y) = polar(l.cx, l.cy, l.r * 0.9, a);
            assert_eq!(hit_pie(300.0, 300.0, &s, x, y), Some(1));
        }
    }

    #[test]
    fn empty_and_zero_pies_hit_nothing() {
        assert_eq!(hit_pie(300.0, 200.0, &[], 150.0, 100.0), None);
        assert_eq!(hit_pie(300.0, 200.0, &slices(&[0, 0]), 150.0, 100.0), None);
        assert_eq!(hit_pie(0.0, 0.0, &slices(&[1]), 0.0, 0.0), None);
        assert_eq!(hit_pie(f64::NAN, 10.0, &slices(&[1]), 0.0, 0.0), None);
    }

    #[test]
    fn layouts_scale_with_the_device_pixel_ratio() {
        let a = pie_layout(300.0, 200.0, 1.0, 3);
        let b = pie_layout(600.0, 400.0, 2.0, 3);
        assert!((b.r - 2.0 * a.r).abs() < 1e-9);
        assert!((b.cx - 2.0 * a.cx).abs() < 1e-9);
        assert_eq!(a.legend_rows, b.legend_rows);
        let a = bars_layout(300.0, 200.0, 1.0, &[1, 2]);
        let b = bars_layout(600.0, 400.0, 2.0, &[1, 2]);
        assert!((b.plot.x1 - 2.0 * a.plot.x1).abs() < 1e-9);
        assert!((b.row_h - 2.0 * a.row_h).abs() < 1e-9);
    }

    #[test]
    fn bars_are_largest_first_and_rows_hit_their_slice() {
        let s = slices(&[10, 30, 20, 30]);
        let l = bars_layout(400.0, 300.0, 1.0, &[10, 30, 20, 30]);
        assert_eq!(l.order, vec![1, 3, 2, 0]);
        let mid = |row: usize| l.plot.y0 + (row as f64 + 0.5) * l.row_h;
        assert_eq!(hit_bars(400.0, 300.0, &s, l.plot.x0 + 1.0, mid(0)), Some(1));
        assert_eq!(hit_bars(400.0, 300.0, &s, l.plot.x0 + 1.0, mid(1)), Some(3));
        // The label column and the value margin belong to the row too.
        assert_eq!(
            hit_bars(400.0, 300.0, &s, l.labels.x0 + 1.0, mid(2)),
            Some(2)
        );
        assert_eq!(
            hit_bars(400.0, 300.0, &s, l.plot.x1 + 10.0, mid(3)),
            Some(0)
        );
        // The title and the axis band are no row.
        assert_eq!(hit_bars(400.0, 300.0, &s, 200.0, 5.0), None);
        assert_eq!(hit_bars(400.0, 300.0, &s, 200.0, l.axis.y0 + 2.0), None);
        assert_eq!(hit_bars(400.0, 300.0, &[], 200.0, 150.0), None);
    }

    #[test]
    fn bars_fit_the_axis() {
        let l = bars_layout(400.0, 300.0, 1.0, &[3 << 30, 1 << 30]);
        assert_eq!(l.top, 3 << 30);
        assert_eq!(l.ticks, vec![0, 1 << 30, 2 << 30, 3 << 30]);
        assert!((l.bar(0, 3 << 30).x1 - l.plot.x1).abs() < 1e-9);
        assert_eq!(l.bar(1, 0).width(), 0.0);
        // All zero: a unit axis, zero-length bars, no division by zero.
        let l = bars_layout(400.0, 300.0, 1.0, &[0, 0]);
        assert_eq!(l.top, 1);
        assert_eq!(l.bar(0, 0).width(), 0.0);
    }

    #[test]
    fn byte_ticks_are_powers_of_two() {
        assert_eq!(byte_ticks(0), (1, 1));
        assert_eq!(byte_ticks(1), (1, 1));
        assert_eq!(byte_ticks(100 << 20), (32 << 20, 128 << 20));
        assert_eq!(byte_ticks(5 << 30), (2 << 30, 6 << 30));
        let (step, top) = byte_ticks(u64::MAX);
        assert!(step.is_power_of_two());
        assert!(top >= u64::MAX / 2);
        assert!(ticks(step, top).len() <= 6);
    }

    #[test]
    fn count_ticks_are_round() {
        assert_eq!(count_ticks(0), (1, 1));
        assert_eq!(count_ticks(3), (1, 3));
        assert_eq!(count_ticks(37), (10, 40));
        assert_eq!(count_ticks(1234), (500, 1500));
        let (step, top) = count_ticks(u64::MAX);
        assert!(step > 0 && top > 0);
    }

    #[test]
    fn histogram_columns_hit_their_bin() {
        let counts = [4, 0, 9];
        let l = histogram_layout(300.0, 200.0, 1.0, &counts);
        let mid = |bin: usize| l.plot.x0 + (bin as f64 + 0.5) * l.slot_w;
        assert_eq!(
            hit_histogram(300.0, 200.0, &counts, mid(1), l.plot.y0 + 1.0),
            Some(1)
        );
        assert_eq!(
            hit_histogram(300.0, 200.0, &counts, mid(2), l.x_axis.y0 + 1.0),
            Some(2)
        );
        assert_eq!(
            hit_histogram(300.0, 200.0, &counts, l.plot.x0 - 1.0, 100.0),
            None
        );
        assert_eq!(hit_histogram(300.0, 200.0, &[], 150.0, 100.0), None);
        assert_eq!(l.top, 10);
        assert_eq!(l.bar(2, 9).y1, l.plot.y1);
        assert!(l.bar(1, 0).height() == 0.0);
    }

    #[test]
    fn histogram_labels_thin_out_when_bins_are_narrow() {
        let l = histogram_layout(300.0, 200.0, 1.0, &[1; 40]);
        assert!(l.label_every as f64 * l.slot_w >= BIN_LABEL_W);
        assert!((l.label_every - 1) as f64 * l.slot_w < BIN_LABEL_W);
        let l = histogram_layout(2000.0, 200.0, 1.0, &[1; 4]);
        assert_eq!(l.label_every, 1);
    }

    #[test]
    fn stacks_sum_bands_bottom_up() {
        let a: &[u64] = &[1, 2];
        let b: &[u64] = &[10];
        assert_eq!(stack(2, &[a, b]), vec![vec![0, 1, 11], vec![0, 2, 2]]);
        assert!(stack(0, &[a]).is_empty());
    }

    #[test]
    fn stacked_area_hits_the_nearest_x_and_its_band() {
        let xs = [0.0, 10.0, 20.0];
        let series = vec![
            (slice(0), vec![100, 100, 100]),
            (slice(0), vec![100, 300, 0]),
        ];
        let (w, h) = (600.0, 300.0);
        let values: Vec<&[u64]> = series.iter().map(|(_, v)| v.as_slice()).collect();
        let stacked = stack(3, &values);
        let l = area_layout(w, h, 1.0, &xs, &stacked, 2);
        let x = l.x_of(10.0) + 3.0;
        // Bottom band near the floor, top band above it, nothing above the stack.
        assert_eq!(
            hit_stacked_area(w, h, &xs, &series, x, l.y_of(50)),
            Some((Some(1), Some(0)))
        );
        assert_eq!(
            hit_stacked_area(w, h, &xs, &series, x, l.y_of(300)),
            Some((Some(1), Some(1)))
        );
        assert_eq!(
            hit_stacked_area(w, h, &xs, &series, x, l.plot.y0 + 1.0),
            Some((Some(1), None))
        );
        // The legend lists the top band first.
        let row = legend_row(l.legend, l.legend_top, l.row_h, 0);
        assert_eq!(
            hit_stacked_area(w, h, &xs, &series, row.x0 + 1.0, row.y0 + 1.0),
            Some((None, Some(1)))
        );
        assert_eq!(hit_stacked_area(w, h, &[], &series, 300.0, 150.0), None);
        assert_eq!(
            hit_stacked_area(w, h, &xs, &[], 300.0, 150.0),
            Some((Some(1), None))
        );
    }

    #[test]
    fn x_ranges_and_labels() {
        assert_eq!(x_range(&[]), (0.0, 1.0));
        assert_eq!(x_range(&[3.0]), (2.5, 3.5));
        assert_eq!(x_range(&[f64::NAN, 2.0, -1.0]), (-1.0, 2.0));
        assert_eq!(nice_step(10.0, 5.0), 2.0);
        assert_eq!(nice_step(0.0, 5.0), 1.0);
        assert_eq!(number_label(2.5, 0.5), "2.5");
        assert_eq!(number_label(-0.0001, 0.5), "0.0");
        assert_eq!(number_label(40.0, 20.0), "40");
    }

    #[test]
    fn gauge_angles_and_layout() {
        assert_eq!(gauge_angle(0.0), -FRAC_PI_2);
        assert_eq!(gauge_angle(1.0), FRAC_PI_2);
        assert_eq!(gauge_angle(f64::NAN), -FRAC_PI_2);
        assert_eq!(gauge_angle(7.0), FRAC_PI_2);
        let g = gauge_layout(200.0, 150.0, 1.0);
        assert!(g.r > 0.0 && g.cy <= 150.0 && g.cx == 100.0);
        let g = gauge_layout(0.0, 0.0, 1.0);
        assert_eq!(g.r, 0.0);
    }

    #[test]
    fn count_labels_stay_short() {
        assert_eq!(count_label(0), "0");
        assert_eq!(count_label(9999), "9999");
        assert_eq!(count_label(12_500), "12.5k");
        assert_eq!(count_label(3_000_000), "3M");
        assert_eq!(count_label(u64::MAX), "18446744T");
    }

    #[test]
    fn text_is_cut_with_an_ellipsis() {
        assert_eq!(fit_text("short", 1000.0, 12.0), "short");
        let cut = fit_text("a very long category label", 50.0, 12.0);
        assert!(cut.ends_with('…'));
        assert!(cut.chars().count() <= 7);
        assert_eq!(fit_text("abc", 0.0, 12.0), "");
        assert_eq!(percent(1, 4).as_deref(), Some("25%"));
        assert_eq!(percent(1, 0), None);
    }
}

/// One piece of a segment's bar: where it starts in the segment, its bytes, and what it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub offset: u64,
    pub size: u64,
    /// Bytes asked for (less than `size` by the rounding waste); 0 for free memory.
    pub requested: u64,
    pub kind: PieceKind,
}

/// What a piece of a segment holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PieceKind {
    Allocated,
    PendingFree,
    CachedFree,
}

/// Where the allocator drawing puts each segment: a label column, then one bar per segment as
/// wide as its size against the largest segment's.
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentsLayout {
    pub frame: TitledArea,
    /// The labels' column.
    pub labels: Rect,
    /// The bars of the segments, in order.
    pub bars: Vec<Rect>,
    /// Width of the largest segment's bar.
    pub full: f64,
}

/// Width of the segments' label column, in CSS pixels.
const SEGMENT_LABEL_W: f64 = 190.0;

/// Lays out `sizes.len()` segments scaled to `largest` bytes on a `width` × `height` canvas.
pub fn segments_layout(
    width: f64,
    height: f64,
    scale: f64,
    sizes: &[u64],
    largest: u64,
) -> SegmentsLayout {
    let s = finite_scale(scale);
    let frame = frame(width, height, s);
    let body = frame.body;
    let labels = Rect::new(body.x0, body.y0, body.x0 + SEGMENT_LABEL_W * s, body.y1);
    let x0 = labels.x1 + PAD * s;
    let full = (body.x1 - x0).max(0.0);
    let rows = sizes.len().max(1) as f64;
    let row_h = (body.height() / rows).min(22.0 * s);
    let gap = (row_h * 0.2).min(4.0 * s);
    let bars = sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| {
            let y0 = body.y0 + i as f64 * row_h;
            let w = if largest == 0 {
                0.0
            } else {
                full * size as f64 / largest as f64
            };
            Rect::new(x0, y0, x0 + w, y0 + row_h - gap)
        })
        .collect();
    SegmentsLayout {
        frame,
        labels,
        bars,
        full,
    }
}

/// Where `piece` of a segment of `size` bytes lies on its `bar`: `[x0, x1)`.
pub fn piece_span(bar: Rect, size: u64, piece: &Piece) -> (f64, f64) {
    if size == 0 {
        return (bar.x0, bar.x0);
    }
    let x = |offset: u64| bar.x0 + bar.width() * offset.min(size) as f64 / size as f64;
    (x(piece.offset), x(piece.offset.saturating_add(piece.size)))
}

/// The segment and piece under `(x, y)` (CSS pixels): `pieces[segment][piece]` for segments of
/// `sizes`. Thin pieces are found by the nearest one, so a sliver can be pointed at.
pub fn hit_segments(
    width: f64,
    height: f64,
    sizes: &[u64],
    largest: u64,
    pieces: &[Vec<Piece>],
    x: f64,
    y: f64,
) -> Option<(usize, usize)> {
    let l = segments_layout(width, height, 1.0, sizes, largest);
    let row = l
        .bars
        .iter()
        .position(|b| b.y0 <= y && y < b.y1 && b.x0 <= x && x <= b.x1)?;
    let bar = l.bars[row];
    let list = pieces.get(row)?;
    list.iter()
        .enumerate()
        .map(|(i, p)| {
            let (a, b) = piece_span(bar, sizes[row], p);
            let distance = if x < a {
                a - x
            } else if x >= b {
                x - b
            } else {
                0.0
            };
            (distance, i)
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, i)| (row, i))
}

#[cfg(test)]
mod segment_tests {
    use super::*;

    #[test]
    fn segments_scale_to_the_largest_and_pieces_are_found_under_the_pointer() {
        let sizes = [2 << 20, 20 << 20];
        let l = segments_layout(800.0, 300.0, 1.0, &sizes, 20 << 20);
        assert_eq!(l.bars.len(), 2);
        assert!(
            (l.bars[1].width() - l.full).abs() < 1e-9,
            "the largest fills the width"
        );
        assert!(
            (l.bars[0].width() * 10.0 - l.full).abs() < 1e-6,
            "a tenth as wide"
        );
        let pieces = vec![
            vec![
                Piece {
                    offset: 0,
                    size: 1 << 20,
                    requested: 1000,
                    kind: PieceKind::Allocated,
                },
                Piece {
                    offset: 1 << 20,
                    size: 1 << 20,
                    requested: 0,
                    kind: PieceKind::CachedFree,
                },
            ],
            vec![Piece {
                offset: 0,
                size: 20 << 20,
                requested: 0,
                kind: PieceKind::CachedFree,
            }],
        ];
        let bar = l.bars[0];
        let y = (bar.y0 + bar.y1) / 2.0;
        assert_eq!(
            hit_segments(800.0, 300.0, &sizes, 20 << 20, &pieces, bar.x0 + 1.0, y),
            Some((0, 0))
        );
        assert_eq!(
            hit_segments(800.0, 300.0, &sizes, 20 << 20, &pieces, bar.x1 - 1.0, y),
            Some((0, 1))
        );
        assert_eq!(
            hit_segments(800.0, 300.0, &sizes, 20 << 20, &pieces, bar.x1 + 50.0, y),
            None,
            "right of a short bar"
        );
        let (a, b) = piece_span(bar, sizes[0], &pieces[0][1]);
        assert!((a - (bar.x0 + bar.x1) / 2.0).abs() < 1e-9 && (b - bar.x1).abs() < 1e-9);
    }

    #[test]
    fn runs_share_a_signed_axis_and_a_click_finds_the_nearest_curve() {
        let up: Vec<i64> = vec![0, 1 << 30, 2 << 30];
        let down: Vec<i64> = vec![0, -(1 << 29), -(1 << 30)];
        let runs = [up.as_slice(), down.as_slice()];
        let l = runs_layout(880.0, 260.0, 1.0, &runs);
        assert!(l.lo <= -(1 << 30) && l.hi >= 2 << 30, "{} {}", l.lo, l.hi);
        assert!(l.y_ticks.contains(&0));
        assert!(l.y_of(2 << 30) < l.y_of(0) && l.y_of(0) < l.y_of(-(1 << 30)));
        // At the right end, each curve is found at its own height.
        let x = l.x_at(2, 3) - 1.0;
        assert_eq!(hit_runs(880.0, 260.0, &runs, x, l.y_of(2 << 30)), Some(0));
        assert_eq!(
            hit_runs(880.0, 260.0, &runs, x, l.y_of(-(1 << 30))),
            Some(1)
        );
        assert_eq!(
            hit_runs(880.0, 260.0, &runs, x, l.y_of(1 << 29)),
            None,
            "far from both"
        );
    }
}
