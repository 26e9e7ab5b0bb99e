//! Paints the charts through any plotters `DrawingBackend`: the page's HTML canvas
//! (`plotters_canvas::CanvasBackend`) or SVG (the command line's reports).
//!
//! Every position comes from [`super::geometry`], the same layout the `hit_*` helpers use, so
//! what a tooltip names is what is drawn under the pointer. plotters is used as a drawing
//! surface (shapes and anchored text), not for its chart layout: `ChartBuilder` sizes label
//! areas by measuring text and decides the plot rectangle itself, which hover could not
//! reproduce, and its numeric ticks are decimal where byte axes want binary ones.
//!
//! Scale: a [`Chart`] draws in the backend's pixels with fonts and lines scaled by its
//! `scale` (the page passes the canvas's device pixel ratio, so charts are sharp on
//! high-density screens; SVG passes 1).
//!
//! Not here: sizing a canvas, listening to the pointer, formatting bytes (callers pass the
//! core's formatter) or choosing slice colours.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::geometry::{self as g, Rect};
use super::{Slice, Theme};

/// The page's own font stack (`static/style.css`), so chart text matches the page.
const FAMILY: &str = "system-ui, -apple-system, \"Segoe UI\", Roboto, sans-serif";

/// Histogram bars: one category only, so one colour, readable on both themes.
const BAR: [u8; 3] = [99, 102, 241];

/// Gauge colours by efficiency: good (≥ 80%), middling (≥ 50%), poor.
const GOOD: [u8; 3] = [34, 160, 107];
const FAIR: [u8; 3] = [224, 161, 0];
const POOR: [u8; 3] = [229, 72, 77];

/// A pie of `slices` (zero slices left out, one slice a full disc) with a legend of label,
/// bytes and share. All zero or empty: "nothing to show".
pub fn pie<DB: DrawingBackend>(
    c: &Chart<DB>,
    slices: &[Slice],
    title: &str,
    fmt: &dyn Fn(u64) -> String,
) -> Result<(), String> {
    let theme = &c.theme;
    let values: Vec<u64> = slices.iter().map(|s| s.value).collect();
    let sweeps = g::pie_sweeps(&values);
    let l = g::pie_layout(c.w, c.h, c.s, sweeps.len());
    c.title(&l.frame, title)?;
    if sweeps.is_empty() {
        return c.nothing(l.frame.body);
    }
    let total: u128 = values.iter().map(|&v| u128::from(v)).sum();
    if let [(i, _, _)] = sweeps[..] {
        c.circle((l.cx, l.cy), l.r, slices[i].colour)?;
    } else {
        for &(i, a0, a1) in &sweeps {
            let mut points = vec![(l.cx, l.cy)];
            points.extend(g::arc_points(l.cx, l.cy, l.r, a0, a1));
            c.polygon(&points, slices[i].colour)?;
        }
        // Hairlines in the background colour keep neighbouring slices of close colours apart.
        for &(_, a0, _) in &sweeps {
            let edge = g::polar(l.cx, l.cy, l.r, a0);
            c.line((l.cx, l.cy), edge, theme.background, 1.0)?;
        }
    }
    // Shares inside the slices that have room for them.
    let font = g::FONT * c.s;
    if l.r >= 36.0 * c.s {
        for &(i, a0, a1) in &sweeps {
            if a1 - a0 < 0.3 {
                continue;
            }
            let at = g::polar(l.cx, l.cy, l.r * 0.62, (a0 + a1) / 2.0);
            let share = g::percent(values[i], total).unwrap_or_default();
            let colour = text_on(slices[i].colour);
            c.text(&share, at, font, colour, HPos::Center, VPos::Center, true)?;
        }
    }
    for (row, &(i, _, _)) in sweeps.iter().enumerate().take(l.legend_rows) {
        let rect = g::legend_row(l.legend, l.legend_top, l.row_h, row);
        let share = g::percent(values[i], total).unwrap_or_default();
        let value = format!("{} · {}", fmt(values[i]), share);
        c.legend_entry(rect, slices[i].colour, &slices[i].label, &value)?;
    }
    Ok(())
}

/// Horizontal bars, one per slice (zero ones too, as empty rows), largest first, each with
/// its label on the left and its bytes at its end, over a byte axis.
pub fn bars<DB: DrawingBackend>(
    c: &Chart<DB>,
    slices: &[Slice],
    title: &str,
    fmt: &dyn Fn(u64) -> String,
) -> Result<(), String> {
    let theme = &c.theme;
    let values: Vec<u64> = slices.iter().map(|s| s.value).collect();
    let l = g::bars_layout(c.w, c.h, c.s, &values);
    c.title(&l.frame, title)?;
    if slices.is_empty() {
        return c.nothing(l.frame.body);
    }
    let tick_y = l.axis.y0 + g::AXIS_H * c.s / 2.0;
    for &t in &l.ticks {
        let x = l.x_of(t);
        c.line((x, l.plot.y0), (x, l.plot.y1), theme.grid, 1.0)?;
        let font = g::FONT * c.s;
        c.label(&fmt(t), (x, tick_y), font, HPos::Center, VPos::Center)?;
    }
    // Rows can get thin with many slices: shrink the text with them, and drop it when unreadable.
    let font = (g::FONT * c.s).min(l.row_h * 0.85);
    for (row, &i) in l.order.iter().enumerate() {
        let bar = l.bar(row, values[i]);
        c.rect(bar, slices[i].colour)?;
        if font < 7.0 * c.s {
            continue;
        }
        let mid = (bar.y0 + bar.y1) / 2.0;
        let label = g::fit_text(&slices[i].label, l.labels.width(), font);
        let at = (l.labels.x1, mid);
        c.label(&label, at, font, HPos::Right, VPos::Center)?;
        let at = (bar.x1 + 4.0 * c.s, mid);
        c.label(&fmt(values[i]), at, font, HPos::Left, VPos::Center)?;
    }
    c.line(
        (l.plot.x0, l.plot.y0),
        (l.plot.x0, l.plot.y1),
        theme.text,
        1.0,
    )
}

/// Bytes by category over `xs`, stacked bottom up in the order of `series` (each slice's
/// value is ignored; a series shorter than `xs` is zero past its end), with a byte axis, an x
/// axis titled `x_label` and a legend listing the top band first.
pub fn stacked_area<DB: DrawingBackend>(
    c: &Chart<DB>,
    xs: &[f64],
    series: &[(Slice, Vec<u64>)],
    x_label: &str,
    title: &str,
    fmt: &dyn Fn(u64) -> String,
) -> Result<(), String> {
    let theme = &c.theme;
    let values: Vec<&[u64]> = series.iter().map(|(_, v)| v.as_slice()).collect();
    let stacked = g::stack(xs.len(), &values);
    let l = g::area_layout(c.w, c.h, c.s, xs, &stacked, series.len());
    c.title(&l.frame, title)?;
    // Points left to right; an x that is not a number has no place on the axis.
    let mut points: Vec<usize> = (0..xs.len()).filter(|&i| xs[i].is_finite()).collect();
    points.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
    if points.is_empty() || series.is_empty() {
        return c.nothing(l.frame.body);
    }
    let font = g::FONT * c.s;
    for &t in &l.y_ticks {
        let y = l.y_of(u128::from(t));
        c.line((l.plot.x0, y), (l.plot.x1, y), theme.grid, 1.0)?;
        let at = (l.y_axis.x1 - 4.0 * c.s, y);
        c.label(&fmt(t), at, font, HPos::Right, VPos::Center)?;
    }
    let tick_y = l.x_axis.y0 + g::AXIS_H * c.s / 2.0;
    for &t in &l.x_ticks {
        let x = l.x_of(t);
        c.line((x, l.plot.y1), (x, l.plot.y1 + 3.0 * c.s), theme.text, 1.0)?;
        let label = g::number_label(t, l.x_step);
        c.label(&label, (x, tick_y), font, HPos::Center, VPos::Center)?;
    }
    let at = ((l.plot.x0 + l.plot.x1) / 2.0, tick_y + g::AXIS_H * c.s);
    let label = g::fit_text(x_label, l.plot.width(), font);
    c.label(&label, at, font, HPos::Center, VPos::Center)?;
    for (k, (slice, _)) in series.iter().enumerate() {
        if let [i] = points[..] {
            // A single x has no width: draw the stack as a narrow column instead.
            let x = l.x_of(xs[i]);
            let (lo, hi) = (l.y_of(stacked[i][k]), l.y_of(stacked[i][k + 1]));
            c.rect(
                Rect::new(x - 2.0 * c.s, hi, x + 2.0 * c.s, lo),
                slice.colour,
            )?;
            continue;
        }
        let upper = points
            .iter()
            .map(|&i| (l.x_of(xs[i]), l.y_of(stacked[i][k + 1])));
        let lower = points
            .iter()
            .rev()
            .map(|&i| (l.x_of(xs[i]), l.y_of(stacked[i][k])));
        let outline: Vec<(f64, f64)> = upper.chain(lower).collect();
        c.polygon(&outline, slice.colour)?;
    }
    c.line(
        (l.plot.x0, l.plot.y1),
        (l.plot.x1, l.plot.y1),
        theme.text,
        1.0,
    )?;
    for row in 0..l.legend_rows {
        let (slice, _) = &series[series.len() - 1 - row];
        let rect = g::legend_row(l.legend, l.legend_top, l.row_h, row);
        c.legend_entry(rect, slice.colour, &slice.label, "")?;
    }
    Ok(())
}

/// Curves drawn over one another on a shared axis from 0 to 100 % of each series' length
/// (each series spread over the whole width, whatever its number of points), with a byte axis,
/// an x axis titled `x_label` and a legend: [`runs`] with no peak marked.
pub fn overlaid_lines<DB: DrawingBackend>(
    c: &Chart<DB>,
    series: &[(Slice, Vec<u64>)],
    x_label: &str,
    title: &str,
    fmt: &dyn Fn(u64) -> String,
) -> Result<(), String> {
    let signed: Vec<(Slice, Vec<i64>)> = series
        .iter()
        .map(|(slice, values)| {
            let values = values
                .iter()
                .map(|&v| i64::try_from(v).unwrap_or(i64::MAX))
                .collect();
            (slice.clone(), values)
        })
        .collect();
    let fmt = |v: i64| fmt(v.unsigned_abs());
    curves(c, &signed, x_label, title, &fmt, Marks::None)
}

/// Whether each curve's peak is marked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Marks {
    None,
    Peaks,
}

/// Runs' curves on one axis from 0 to 100 % of each run (each spread over the whole width),
/// on a signed byte axis (a run's memory, or its change from its start), each run's highest
/// point marked with a dot, with an x axis titled `x_label` and a legend.
pub fn runs<DB: DrawingBackend>(
    c: &Chart<DB>,
    runs: &[(Slice, Vec<i64>)],
    x_label: &str,
    title: &str,
    fmt: &dyn Fn(i64) -> String,
) -> Result<(), String> {
    curves(c, runs, x_label, title, fmt, Marks::Peaks)
}

/// Curves on one signed byte axis holding 0 and every value, each spread over the width.
fn curves<DB: DrawingBackend>(
    c: &Chart<DB>,
    runs: &[(Slice, Vec<i64>)],
    x_label: &str,
    title: &str,
    fmt: &dyn Fn(i64) -> String,
    marks: Marks,
) -> Result<(), String> {
    let theme = &c.theme;
    let values: Vec<&[i64]> = runs.iter().map(|(_, v)| v.as_slice()).collect();
    let l = g::runs_layout(c.w, c.h, c.s, &values);
    c.title(&l.area.frame, title)?;
    if values.iter().all(|v| v.is_empty()) {
        return c.nothing(l.area.frame.body);
    }
    let font = g::FONT * c.s;
    for &t in &l.y_ticks {
        let y = l.y_of(t);
        let colour = if t == 0 { theme.text } else { theme.grid };
        c.line((l.area.plot.x0, y), (l.area.plot.x1, y), colour, 1.0)?;
        let at = (l.area.y_axis.x1 - 4.0 * c.s, y);
        c.label(&fmt(t), at, font, HPos::Right, VPos::Center)?;
    }
    let tick_y = l.area.x_axis.y0 + g::AXIS_H * c.s / 2.0;
    for &t in &l.area.x_ticks {
        let x = l.area.x_of(t);
        c.line(
            (x, l.area.plot.y1),
            (x, l.area.plot.y1 + 3.0 * c.s),
            theme.text,
            1.0,
        )?;
        let label = format!("{}%", g::number_label(t, l.area.x_step));
        c.label(&label, (x, tick_y), font, HPos::Center, VPos::Center)?;
    }
    let at = (
        (l.area.plot.x0 + l.area.plot.x1) / 2.0,
        tick_y + g::AXIS_H * c.s,
    );
    let label = g::fit_text(x_label, l.area.plot.width(), font);
    c.label(&label, at, font, HPos::Center, VPos::Center)?;
    for (slice, values) in runs {
        let n = values.len();
        let points: Vec<(f64, f64)> = values
            .iter()
            .enumerate()
            .map(|(k, &v)| (l.x_at(k, n), l.y_of(v)))
            .collect();
        if points.len() >= 2 {
            c.path(&points, slice.colour, 1.5)?;
        }
        if marks == Marks::None {
            continue;
        }
        // The run's peak: its first highest point.
        let peak = values
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
            .map(|(k, _)| k);
        if let Some(k) = peak {
            c.circle(points[k], 3.5 * c.s, slice.colour)?;
        }
    }
    for (row, (slice, _)) in runs.iter().enumerate().take(l.area.legend_rows) {
        let rect = g::legend_row(l.area.legend, l.area.legend_top, l.area.row_h, row);
        c.legend_entry(rect, slice.colour, &slice.label, "")?;
    }
    Ok(())
}

/// A histogram: one column per bin in the order given (callers pass ascending power-of-two
/// lower bounds), height = count, labelled under it by its lower bound in binary units (as
/// many labels as fit). The bins' bytes are not drawn; they are for the caller's tooltip.
pub fn histogram<DB: DrawingBackend>(
    c: &Chart<DB>,
    bins: &[(u64, u64, u64)],
    title: &str,
    fmt: &dyn Fn(u64) -> String,
) -> Result<(), String> {
    let theme = &c.theme;
    let counts: Vec<u64> = bins.iter().map(|&(_, count, _)| count).collect();
    let l = g::histogram_layout(c.w, c.h, c.s, &counts);
    c.title(&l.frame, title)?;
    if bins.is_empty() {
        return c.nothing(l.frame.body);
    }
    let font = g::FONT * c.s;
    for &t in &l.ticks {
        let y = l.y_of(t);
        c.line((l.plot.x0, y), (l.plot.x1, y), theme.grid, 1.0)?;
        let at = (l.y_axis.x1 - 4.0 * c.s, y);
        c.label(&g::count_label(t), at, font, HPos::Right, VPos::Center)?;
    }
    let label_y = l.x_axis.y0 + g::AXIS_H * c.s / 2.0;
    for (k, &(lower, count, _)) in bins.iter().enumerate() {
        c.rect(l.bar(k, count), BAR)?;
        if k % l.label_every == 0 {
            let x = l.plot.x0 + (k as f64 + 0.5) * l.slot_w;
            c.label(&fmt(lower), (x, label_y), font, HPos::Center, VPos::Center)?;
        }
    }
    c.line(
        (l.plot.x0, l.plot.y1),
        (l.plot.x1, l.plot.y1),
        theme.text,
        1.0,
    )
}

/// A half-circle gauge filled to `fraction` (clamped to 0..=1, not-a-number as 0), coloured
/// by how good that is, with the percentage inside and `label` under it.
pub fn gauge<DB: DrawingBackend>(c: &Chart<DB>, fraction: f64, label: &str) -> Result<(), String> {
    let theme = &c.theme;
    let l = g::gauge_layout(c.w, c.h, c.s);
    if l.r < 2.0 {
        return Ok(());
    }
    let f = g::clamp_fraction(fraction);
    let start = g::gauge_angle(0.0);
    c.polygon(&annulus(&l, start, g::gauge_angle(1.0)), theme.grid)?;
    if f > 0.0 {
        let colour = match f {
            f if f >= 0.8 => GOOD,
            f if f >= 0.5 => FAIR,
            _ => POOR,
        };
        c.polygon(&annulus(&l, start, g::gauge_angle(f)), colour)?;
    }
    let value = format!("{:.0}%", f * 100.0);
    let at = (l.cx, l.cy - 2.0 * c.s);
    c.text(
        &value,
        at,
        l.value_font,
        theme.text,
        HPos::Center,
        VPos::Bottom,
        true,
    )?;
    let font = g::FONT * c.s;
    let label = g::fit_text(label, c.w - 2.0 * g::PAD * c.s, font);
    let at = (l.cx, l.label_y);
    c.label(&label, at, font, HPos::Center, VPos::Center)
}

/// The outline of the gauge's band from angle `a0` to `a1`.
fn annulus(l: &g::GaugeLayout, a0: f64, a1: f64) -> Vec<(f64, f64)> {
    let inner = (l.r - l.thickness).max(0.0);
    let mut points = g::arc_points(l.cx, l.cy, l.r, a0, a1);
    points.extend(g::arc_points(l.cx, l.cy, inner, a1, a0));
    points
}

/// Dark text on light fills, white on dark ones (Rec. 709 luma).
fn text_on(fill: [u8; 3]) -> [u8; 3] {
    let [r, g, b] = fill.map(f64::from);
    if 0.2126 * r + 0.7152 * g + 0.0722 * b > 150.0 {
        [0x1b, 0x1f, 0x27]
    } else {
        [0xff, 0xff, 0xff]
    }
}

fn rgb([r, g, b]: [u8; 3]) -> RGBColor {
    RGBColor(r, g, b)
}

/// Backing-store pixels to the backend's integer pixels (`as` saturates; NaN becomes 0).
fn px((x, y): (f64, f64)) -> (i32, i32) {
    (x.round() as i32, y.round() as i32)
}

/// The error's own text: plotters' `DrawingAreaErrorKind` says what the canvas refused.
fn error_text<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Colours of the allocator's blocks: allocated, its rounding waste, waiting to be freed, and
/// cached free (drawn in the grid colour, as empty room).
const ALLOCATED: [u8; 3] = [99, 102, 241];
const WASTE: [u8; 3] = [229, 72, 77];
const PENDING: [u8; 3] = [224, 161, 0];

/// The allocator's segments, one bar per segment scaled to the largest, its blocks coloured by
/// what they hold (rounding waste at the end of each allocated block) and parted by a thin
/// edge; `labels` on the left.
pub fn segments<DB: DrawingBackend>(
    c: &Chart<DB>,
    title: &str,
    sizes: &[u64],
    largest: u64,
    pieces: &[Vec<g::Piece>],
    labels: &[String],
) -> Result<(), String> {
    let theme = &c.theme;
    let l = g::segments_layout(c.w, c.h, c.s, sizes, largest);
    c.title(&l.frame, title)?;
    if sizes.is_empty() {
        return c.nothing(l.frame.body);
    }
    let font = (g::FONT * c.s).min(l.bars[0].height() * 0.9);
    for (row, bar) in l.bars.iter().enumerate() {
        c.rect(*bar, theme.grid)?;
        for piece in pieces.get(row).into_iter().flatten() {
            let (x0, x1) = g::piece_span(*bar, sizes[row], piece);
            // Every block at least a hairline wide, so none vanishes at this scale.
            let x1 = x1.max(x0 + c.s.min(bar.x1 - x0));
            let span = Rect::new(x0, bar.y0, x1, bar.y1);
            match piece.kind {
                g::PieceKind::CachedFree => {}
                g::PieceKind::PendingFree => c.rect(span, PENDING)?,
                g::PieceKind::Allocated => {
                    c.rect(span, ALLOCATED)?;
                    if piece.requested < piece.size && piece.requested > 0 {
                        let used = g::Piece {
                            size: piece.requested,
                            ..*piece
                        };
                        let (_, w0) = g::piece_span(*bar, sizes[row], &used);
                        c.rect(Rect::new(w0, bar.y0, x1, bar.y1), WASTE)?;
                    }
                }
            }
        }
        // Block edges, one CSS pixel of background where a block starts, so neighbours of one
        // kind read as separate blocks; where blocks are too thin for an edge each, an edge
        // every few pixels at most keeps the bar from turning into background.
        let edge = c.s;
        let mut last_edge = bar.x0;
        for piece in pieces.get(row).into_iter().flatten() {
            let (x0, _) = g::piece_span(*bar, sizes[row], piece);
            if piece.offset > 0 && x0 - last_edge >= 3.0 * edge && x0 + edge <= bar.x1 {
                c.rect(Rect::new(x0, bar.y0, x0 + edge, bar.y1), theme.background)?;
                last_edge = x0;
            }
        }
        if let Some(label) = labels.get(row) {
            let at = (l.labels.x0, (bar.y0 + bar.y1) / 2.0);
            let text = g::fit_text(label, l.labels.width(), font);
            c.label(&text, at, font, HPos::Left, VPos::Center)?;
        }
    }
    Ok(())
}

/// One drawing: a backend's plotters area, its size in the backend's pixels, its scale (the
/// backend's pixels per CSS pixel) and its colours.
pub struct Chart<DB: DrawingBackend> {
    area: DrawingArea<DB, Shift>,
    w: f64,
    h: f64,
    s: f64,
    theme: Theme,
    /// What a font size is multiplied by before the backend sees it: a backend that writes
    /// sizes smaller than it is told (plotters' SVG writes `size / 1.24`) is told more.
    font_scale: f64,
}

impl<DB: DrawingBackend> Chart<DB> {
    /// Clears `backend` to the theme's background; `None` for a backend with no pixels.
    /// `scale` is the backend's pixels per CSS pixel (the device pixel ratio of a canvas).
    pub fn new(backend: DB, scale: f64, theme: &Theme) -> Result<Option<Self>, String> {
        let (width, height) = backend.get_size();
        if width == 0 || height == 0 {
            return Ok(None);
        }
        let area = backend.into_drawing_area();
        area.fill(&rgb(theme.background)).map_err(error_text)?;
        Ok(Some(Self {
            w: f64::from(width),
            h: f64::from(height),
            s: scale,
            area,
            theme: *theme,
            font_scale: 1.0,
        }))
    }

    /// Font sizes multiplied by `factor` on their way to the backend (see `font_scale`).
    pub fn with_font_scale(mut self, factor: f64) -> Self {
        self.font_scale = factor;
        self
    }

    /// Flushes what was drawn to the backend (an SVG's closing tags).
    pub fn present(&self) -> Result<(), String> {
        self.area.present().map_err(error_text)
    }

    fn stroke(&self, width: f64) -> u32 {
        (width * self.s).round().max(1.0) as u32
    }

    fn rect(&self, r: Rect, colour: [u8; 3]) -> Result<(), String> {
        if r.width() <= 0.0 || r.height() <= 0.0 {
            return Ok(());
        }
        let corners = [px((r.x0, r.y0)), px((r.x1, r.y1))];
        let shape = Rectangle::new(corners, rgb(colour).filled());
        self.area.draw(&shape).map_err(error_text)
    }

    fn polygon(&self, points: &[(f64, f64)], colour: [u8; 3]) -> Result<(), String> {
        let points: Vec<(i32, i32)> = points.iter().copied().map(px).collect();
        let shape = Polygon::new(points, rgb(colour).filled());
        self.area.draw(&shape).map_err(error_text)
    }

    fn circle(&self, centre: (f64, f64), r: f64, colour: [u8; 3]) -> Result<(), String> {
        let r = r.round().max(0.0) as u32;
        let shape = Circle::new(px(centre), r, rgb(colour).filled());
        self.area.draw(&shape).map_err(error_text)
    }

    /// A line `width` CSS pixels wide.
    /// A polyline through `points`, in one path.
    fn path(&self, points: &[(f64, f64)], colour: [u8; 3], width: f64) -> Result<(), String> {
        let style = rgb(colour).stroke_width(self.stroke(width));
        let shape = PathElement::new(points.iter().map(|&p| px(p)).collect::<Vec<_>>(), style);
        self.area.draw(&shape).map_err(error_text)
    }

    fn line(
        &self,
        from: (f64, f64),
        to: (f64, f64),
        colour: [u8; 3],
        width: f64,
    ) -> Result<(), String> {
        let style = rgb(colour).stroke_width(self.stroke(width));
        let shape = PathElement::new(vec![px(from), px(to)], style);
        self.area.draw(&shape).map_err(error_text)
    }

    /// `text` anchored at `at` (the canvas aligns it: plotters measures nothing here).
    #[allow(clippy::too_many_arguments)]
    fn text(
        &self,
        text: &str,
        at: (f64, f64),
        size: f64,
        colour: [u8; 3],
        h: HPos,
        v: VPos,
        bold: bool,
    ) -> Result<(), String> {
        if text.is_empty() || size <= 0.0 {
            return Ok(());
        }
        let weight = if bold {
            FontStyle::Bold
        } else {
            FontStyle::Normal
        };
        let size = size * self.font_scale;
        let style = FontDesc::new(FontFamily::Name(FAMILY), size, weight)
            .color(&rgb(colour))
            .pos(Pos::new(h, v));
        self.area
            .draw(&Text::new(text.to_string(), px(at), style))
            .map_err(error_text)
    }

    /// `text` in the theme's text colour, normal weight.
    fn label(&self, text: &str, at: (f64, f64), size: f64, h: HPos, v: VPos) -> Result<(), String> {
        self.text(text, at, size, self.theme.text, h, v, false)
    }

    fn title(&self, frame: &g::TitledArea, title: &str) -> Result<(), String> {
        let size = g::TITLE_FONT * self.s;
        let t = frame.title;
        let title = g::fit_text(title, t.width(), size);
        let at = (t.x0, (t.y0 + t.y1) / 2.0);
        self.text(
            &title,
            at,
            size,
            self.theme.text,
            HPos::Left,
            VPos::Center,
            true,
        )
    }

    fn nothing(&self, body: Rect) -> Result<(), String> {
        let at = ((body.x0 + body.x1) / 2.0, (body.y0 + body.y1) / 2.0);
        let size = g::FONT * self.s;
        self.label("nothing to show", at, size, HPos::Center, VPos::Center)
    }

    /// A legend row: a colour swatch, the label, and `value` (if any) right-aligned; the label
    /// is the one cut short when the row is narrow, since the value is what is read.
    fn legend_entry(
        &self,
        row: Rect,
        colour: [u8; 3],
        label: &str,
        value: &str,
    ) -> Result<(), String> {
        let s = self.s;
        let mid = (row.y0 + row.y1) / 2.0;
        let swatch = 10.0 * s;
        let square = Rect::new(
            row.x0,
            mid - swatch / 2.0,
            row.x0 + swatch,
            mid + swatch / 2.0,
        );
        self.rect(square, colour)?;
        let size = g::FONT * s;
        let text = self.theme.text;
        let left = row.x0 + swatch + 6.0 * s;
        let value_w = g::text_width(value, size);
        let right = row.x1 - value_w - if value.is_empty() { 0.0 } else { 8.0 * s };
        let label = g::fit_text(label, right - left, size);
        self.text(
            &label,
            (left, mid),
            size,
            text,
            HPos::Left,
            VPos::Center,
            false,
        )?;
        self.text(
            value,
            (row.x1, mid),
            size,
            text,
            HPos::Right,
            VPos::Center,
            false,
        )
    }
}
