//! Pixels of a timeline view, and what lies under a pixel.
//!
//! Painting goes column by column: each column shows the stack at the state where the total
//! peaks within the column ([`Curve::argmax`]), seeking the [`Cursor`] forward as columns
//! advance. The stack is drawn elements in stack order, then the band of elements not drawn
//! one by one. A pixel row belongs to the element that crosses its top edge, so stacked
//! elements tile the column exactly: an element at least a pixel tall paints the rows it owns
//! in its own colour, crisp; a row owned by a thinner element shows every element in it,
//! their colours blended in proportion to their bytes, so a zoomed-out run keeps the colours
//! (and the structure) of allocations too thin to draw one by one. The partial row at the top
//! of the stack is left empty, so a column is as tall as its total, floored.
//!
//! Colours come from a [`Colouring`] the caller chooses (by element, or by category). The
//! view's y range is either fitted to what it shows or fixed (zoomed), with `y_min` bytes at
//! the bottom edge. The cost of a frame is O(width × (live drawn elements + height)),
//! independent of the trace length, and usually much less: a column whose state differs from
//! its left neighbour's copies the rows below the first element that moved in between and
//! walks the stack only from there (long-lived elements sit at the bottom of the stack). Hit-testing repeats the same arithmetic for one row of
//! one column, so a hover names what is painted under the cursor (for a blended row, its
//! largest part).

use super::layout::{Cursor, TimelineLayout};
use super::Viewport;
use crate::analysis::axis::{Axis, StateRange};
use crate::analysis::curve::Curve;
use crate::analysis::elements::Elements;
use crate::analysis::palette::Style;

/// The colour of each element: what the painter is told, so a view can colour by element or
/// by category.
pub trait Colouring {
    fn colour(&self, element: u32) -> [u8; 4];

    /// The band of elements not drawn one by one at `state`, split into parts of one colour
    /// each (bottom first, with their bytes) pushed onto `parts`. Left empty, the band is one
    /// part in the style's grey; bytes the parts leave over are grey too.
    fn band(&self, _state: u32, _parts: &mut Vec<([u8; 4], u64)>) {}

    /// Whether a row shared by parts thinner than a pixel shows their colours blended (by
    /// element: the structure of thin allocations stays visible) or the colour covering most
    /// of the row (by category: every pixel is a colour of the legend).
    fn blends(&self) -> bool {
        true
    }
}

/// Each element its own colour from the style's palette, stable across views, zooms and page
/// loads.
pub struct ByElement<'a>(pub &'a Style);

impl Colouring for ByElement<'_> {
    fn colour(&self, element: u32) -> [u8; 4] {
        let palette = &self.0.palette;
        // 24 well-mixed bits, scaled to the palette without a division.
        let hash = (element as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
        palette[((hash * palette.len() as u64) >> 24) as usize]
    }
}

/// Everything a track needs to be drawn.
pub struct Track<'a, E: Elements> {
    pub elements: &'a E,
    pub layout: &'a TimelineLayout,
    /// What the stack adds up to (drawn elements plus the small band).
    pub total: Curve<'a>,
    /// A curve drawn as a line over the stack, if any.
    pub line: Option<Curve<'a>>,
    pub axis: Axis<'a>,
}

/// Elements to mark.
#[derive(Clone, Copy, Debug, Default)]
pub struct Marks<'a> {
    pub pinned: Option<u32>,
    /// One bit per element: search matches.
    pub matches: Option<&'a [u64]>,
}

fn is_marked(bits: Option<&[u64]>, i: u32) -> bool {
    bits.is_some_and(|b| {
        b.get(i as usize / 64)
            .is_some_and(|w| w >> (i % 64) & 1 == 1)
    })
}

/// The bytes a view's height spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YScale {
    /// From 0 to the highest value in view, plus headroom ([`fitted_y_max`]).
    Fit,
    /// `min` bytes at the bottom edge, `max` at the top.
    Bytes { min: u64, max: u64 },
}

/// A painted view.
#[derive(Clone, Debug, PartialEq)]
pub struct PaintedFrame {
    /// `width × height` RGBA pixels, top row first.
    pub pixels: Vec<u8>,
    /// Bytes at the bottom and the top edge.
    pub y_min: u64,
    pub y_max: u64,
    /// Distinct elements painted at least a pixel tall.
    pub drawn_individually: u32,
    /// The highest total in view and its state (`None` when the view shows no state).
    pub peak: Option<(u32, u64)>,
    /// First and last state in view.
    pub states: Option<(u32, u32)>,
}

/// What lies under a pixel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hit {
    /// Element `index`, shown at `state`.
    Element { index: u32, state: u32 },
    /// The band of small elements at `state`, `bytes` tall.
    Small { state: u32, bytes: u64 },
    /// Above the stack, or outside the trace.
    Nothing,
}

/// Where bytes land: `y_min` at the bottom edge, `px_per_byte` rows per byte above it.
#[derive(Clone, Copy, Debug)]
struct Scale {
    y_min: u64,
    px_per_byte: f64,
}

impl Scale {
    fn new(height: u32, y_min: u64, y_max: u64) -> Self {
        Scale {
            y_min,
            px_per_byte: height as f64 / y_max.saturating_sub(y_min).max(1) as f64,
        }
    }

    /// Bottom-up position of a byte offset, in rows (negative below the bottom edge).
    fn pos(&self, bytes: u64) -> f64 {
        (bytes as f64 - self.y_min as f64) * self.px_per_byte
    }
}

/// `x` rounded down to a whole row, without a call to the C library's `floor` (which the
/// baseline x86-64 target makes of `f64::floor`).
fn floor(x: f64) -> i64 {
    let t = x as i64;
    t - ((t as f64) > x) as i64
}

/// The bytes at the top of a view fitted to `highest`: 5 % headroom.
pub fn fitted_y_max(highest: u64) -> u64 {
    (highest.saturating_add(highest / 20)).max(1)
}

struct Column {
    span: Option<StateRange>,
    state: u32,
    total: u64,
    line: Option<u64>,
}

fn columns<E: Elements>(track: &Track<'_, E>, view: &Viewport) -> Vec<Column> {
    track
        .axis
        .columns(view.mode, view.x0, view.x1, view.width)
        .into_iter()
        .map(|span| match span {
            None => Column {
                span,
                state: 0,
                total: 0,
                line: None,
            },
            Some(s) => {
                let (state, total) = track.total.argmax(s.first, s.last);
                let line = track.line.map(|l| l.argmax(s.first, s.last).1);
                Column {
                    span,
                    state,
                    total,
                    line,
                }
            }
        })
        .collect()
}

/// One part of a column's stack: a drawn element (by rank), or a part of the band on top
/// (by its position in the colouring's split, or [`BAND_REST`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Rank(u32),
    Band(u16),
}

/// The band's bytes no colouring split claims: all of it, unless the colouring splits it.
const BAND_REST: u16 = u16::MAX;

/// The parts of the stack at the cursor's state, bottom first, with their byte ranges.
fn parts<'a>(
    layout: &'a TimelineLayout,
    cursor: &'a Cursor,
    total: u64,
) -> impl Iterator<Item = (Part, u64, u64)> + 'a {
    parts_from(layout, cursor, total, 0, 0, &[])
}

/// The parts of the stack from its `first` part (the band's first part being part
/// `live.len()`), which starts `offset` bytes up; the band is split into parts of `band`
/// bytes each, then the rest.
fn parts_from<'a>(
    layout: &'a TimelineLayout,
    cursor: &'a Cursor,
    total: u64,
    first: usize,
    offset: u64,
    band: &'a [u64],
) -> impl Iterator<Item = (Part, u64, u64)> + 'a {
    let mut offset = offset;
    let drawn = cursor.live[first.min(cursor.live.len())..]
        .iter()
        .map(move |&r| {
            let bottom = offset;
            offset += layout.sizes[r as usize];
            (Part::Rank(r), bottom, offset)
        });
    let band_top = total.max(cursor.drawn_total);
    let mut band_offset = cursor.drawn_total;
    let split = band.iter().enumerate().map(move |(k, &bytes)| {
        let bottom = band_offset;
        band_offset = bottom.saturating_add(bytes).min(band_top);
        (Part::Band(k as u16), bottom, band_offset)
    });
    let rest = std::iter::once(()).map(move |()| {
        let claimed: u64 = band.iter().sum();
        let bottom = cursor.drawn_total.saturating_add(claimed).min(band_top);
        (Part::Band(BAND_REST), bottom, band_top)
    });
    // The walk may start inside the band: skip what lies before `first`.
    let skip_band = first.saturating_sub(cursor.live.len());
    drawn.chain(split.chain(rest).skip(skip_band))
}

/// A blend of colours weighted by how much of a row each covers, or (as a vote) the colour
/// that covers most of it.
#[derive(Clone, Default)]
struct Blend {
    sum: [f32; 3],
    weight: f32,
    /// Colours and their weights, when the row takes the colour covering most of it.
    votes: Option<Vec<([u8; 4], f32)>>,
}

impl Blend {
    fn new(blends: bool) -> Self {
        Blend {
            votes: (!blends).then(Vec::new),
            ..Default::default()
        }
    }

    fn clear(&mut self) {
        self.sum = [0.0; 3];
        self.weight = 0.0;
        if let Some(votes) = &mut self.votes {
            votes.clear();
        }
    }

    fn add(&mut self, colour: [u8; 4], weight: f64) {
        let weight = weight as f32;
        if let Some(votes) = &mut self.votes {
            match votes.iter_mut().find(|(c, _)| *c == colour) {
                Some((_, w)) => *w += weight,
                None => votes.push((colour, weight)),
            }
            self.weight += weight;
            return;
        }
        self.sum[0] += colour[0] as f32 * weight;
        self.sum[1] += colour[1] as f32 * weight;
        self.sum[2] += colour[2] as f32 * weight;
        self.weight += weight;
    }

    fn colour(&self, fallback: [u8; 4]) -> [u8; 4] {
        if self.weight <= 0.0 {
            return fallback;
        }
        if let Some(votes) = &self.votes {
            // The first of equals wins: the lower part, as the row's owner would.
            let mut best = (fallback, 0.0f32);
            for &(c, w) in votes {
                if w > best.1 {
                    best = (c, w);
                }
            }
            return best.0;
        }
        // Non-negative: adding a half and truncating rounds, and the cast saturates at 255.
        let scale = 1.0 / self.weight;
        let c = |i: usize| (self.sum[i] * scale + 0.5) as u8;
        [c(0), c(1), c(2), 255]
    }
}

/// Paints `view` of `track` over the bytes of `y`, each element in the colour `colouring`
/// gives it (marks aside).
pub fn paint<E: Elements, C: Colouring + ?Sized>(
    track: &Track<'_, E>,
    view: &Viewport,
    y: YScale,
    style: &Style,
    colouring: &C,
    marks: Marks<'_>,
) -> PaintedFrame {
    paint_walking(
        track,
        view,
        y,
        style,
        colouring,
        marks,
        Walk::FromFirstChange,
    )
}

/// How much of each column's stack the painter walks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Walk {
    /// From the first part that moved since the column on the left (rows below are copied).
    FromFirstChange,
    /// All of it: the definition, which tests hold the shortcut to.
    #[cfg_attr(not(test), allow(dead_code))]
    Whole,
}

fn paint_walking<E: Elements, C: Colouring + ?Sized>(
    track: &Track<'_, E>,
    view: &Viewport,
    y: YScale,
    style: &Style,
    colouring: &C,
    marks: Marks<'_>,
    walk: Walk,
) -> PaintedFrame {
    let (w, h) = (view.width as usize, view.height as usize);
    let mut pixels = style.background.repeat(w * h);
    let cols = columns(track, view);
    let mut peak: Option<(u32, u64)> = None;
    let mut highest = 0u64;
    let mut states: Option<(u32, u32)> = None;
    for c in &cols {
        if let Some(span) = c.span {
            highest = highest.max(c.total).max(c.line.unwrap_or(0));
            if peak.is_none_or(|(_, b)| c.total > b) {
                peak = Some((c.state, c.total));
            }
            states = Some(match states {
                None => (span.first, span.last),
                Some((a, _)) => (a, span.last),
            });
        }
    }
    let (y_min, y_max) = match y {
        YScale::Fit => (0, fitted_y_max(highest)),
        YScale::Bytes { min, max } => (min, max.max(min.saturating_add(1))),
    };
    let scale = Scale::new(view.height, y_min, y_max);

    let layout = track.layout;
    let pinned = marks.pinned.and_then(|i| layout.rank(i));
    // The band's split at the column being painted: colours, and bytes for the walk.
    let mut band_split: Vec<([u8; 4], u64)> = Vec::new();
    let mut band_bytes: Vec<u64> = Vec::new();
    let colour_of = |part: Part, band_split: &[([u8; 4], u64)]| match part {
        Part::Band(k) => band_split.get(k as usize).map_or(style.small, |p| p.0),
        Part::Rank(r) if pinned == Some(r) => style.pinned,
        Part::Rank(r) if marks.matches.is_some() && is_marked(marks.matches, layout.id(r)) => {
            style.matched
        }
        Part::Rank(r) => colouring.colour(layout.id(r)),
    };
    let mut cursor = Cursor::default();
    let mut drawn_individually = 0u32;
    let mut previous_state: Option<u32> = None;
    let put = |pixels: &mut Vec<u8>, x: usize, rows: std::ops::Range<i64>, colour: [u8; 4]| {
        let (bottom, top) = (rows.start.max(0), rows.end.min(h as i64));
        for r in bottom..top {
            let y = h - 1 - r as usize;
            let at = (y * w + x) * 4;
            pixels[at..at + 4].copy_from_slice(&colour);
        }
    };
    // The rows below `rows` of column `x` are those of the column on its left.
    let copy_left = |pixels: &mut Vec<u8>, x: usize, rows: usize| {
        for y in h - rows..h {
            let at = (y * w + x) * 4;
            pixels.copy_within(at - 4..at, at);
        }
    };
    // Where each part of the last column walked starts, in bytes, as far as the walk went
    // (the band's too): the next column needs to walk only from its first changed part.
    let mut bottoms: Vec<u64> = Vec::new();
    // The line's row in each column, drawn over the stacks once they are all painted.
    let mut line_rows: Vec<Option<i64>> = vec![None; w];
    for (x, c) in cols.iter().enumerate() {
        if c.span.is_none() {
            continue;
        }
        line_rows[x] = c.line.map(|line| floor(scale.pos(line)));
        let left_painted = x > 0 && cols[x - 1].span.is_some();
        // Zoomed in, neighbouring columns often show the same state: the same pixels.
        if left_painted && previous_state == Some(c.state) {
            copy_left(&mut pixels, x, h);
            continue;
        }
        cursor.seek(layout, c.state);
        let left_state = previous_state.replace(c.state);
        // Below the first part that moved since the column on the left, the stack is the same
        // and so are its rows: they are copied, and the walk starts from the part holding
        // the first row that may differ.
        let (first, floor_row) = if left_painted && walk == Walk::FromFirstChange {
            let changed = cursor.unchanged_below;
            let Some(&changed_bottom) = bottoms.get(changed) else {
                // What changed is all above the top edge.
                copy_left(&mut pixels, x, h);
                continue;
            };
            let row = floor(scale.pos(changed_bottom));
            let first = bottoms[..=changed]
                .partition_point(|&b| scale.pos(b) <= row as f64)
                .saturating_sub(1);
            let floor_row = row.clamp(0, h as i64);
            copy_left(&mut pixels, x, floor_row as usize);
            (first, floor_row)
        } else {
            (0, 0)
        };
        let offset = bottoms.get(first).copied().unwrap_or(0);
        bottoms.truncate(first);
        band_split.clear();
        colouring.band(c.state, &mut band_split);
        band_bytes.clear();
        band_bytes.extend(band_split.iter().map(|p| p.1));
        let put = |pixels: &mut Vec<u8>, rows: std::ops::Range<i64>, colour: [u8; 4]| {
            put(pixels, x, rows.start.max(floor_row)..rows.end, colour)
        };
        // The row being filled by parts that do not reach its top edge.
        let mut blend = Blend::new(colouring.blends());
        let mut blend_row = i64::MIN;
        // The previous part's top, in bytes, rows and whole rows: the next part starts there.
        let mut last_top = (u64::MAX, 0.0, 0i64);
        for (part, bottom, top) in parts_from(layout, &cursor, c.total, first, offset, &band_bytes)
        {
            bottoms.push(bottom);
            // Below the bottom edge (a zoomed y axis), or nothing: skipped without arithmetic.
            if top <= scale.y_min || top == bottom {
                continue;
            }
            if bottom >= y_max {
                break;
            }
            let (pb, rb) = if last_top.0 == bottom {
                (last_top.1, last_top.2)
            } else {
                let pb = scale.pos(bottom);
                (pb, floor(pb))
            };
            let pt = scale.pos(top);
            let rt = floor(pt);
            last_top = (top, pt, rt);
            if let Part::Rank(r) = part {
                let new_here = left_state.is_none_or(|p| layout.starts[r as usize] > p);
                if pt - pb >= 1.0 && new_here {
                    drawn_individually += 1;
                }
            }
            if blend_row != rb {
                blend.clear();
                blend_row = rb;
            }
            let colour = colour_of(part, &band_split);
            if rt > rb {
                // This part crosses the top edges of rows rb..rt: they are its.
                if pt - pb >= 1.0 {
                    put(&mut pixels, rb..rt, colour);
                } else {
                    blend.add(colour, (rb + 1) as f64 - pb);
                    put(&mut pixels, rb..rb + 1, blend.colour(colour));
                }
                blend.clear();
                blend_row = rt;
                blend.add(colour, pt - rt as f64);
            } else {
                blend.add(colour, pt - pb);
            }
        }
    }
    let half = (style.line_width / 2) as i64;
    let mut previous_line: Option<i64> = None;
    for (x, &row) in line_rows.iter().enumerate() {
        let Some(row) = row else {
            previous_line = None;
            continue;
        };
        let (lo, hi) = match previous_line {
            Some(p) => (p.min(row), p.max(row)),
            None => (row, row),
        };
        if hi >= 0 && lo < h as i64 {
            put(
                &mut pixels,
                x,
                lo - half..hi + style.line_width as i64 - half,
                style.line,
            );
        }
        previous_line = Some(row);
    }
    PaintedFrame {
        pixels,
        y_min,
        y_max,
        drawn_individually,
        peak,
        states,
    }
}

/// What is painted at pixel `(x, y)` (y from the top) of `view`, painted with `y_min` and
/// `y_max` bytes at its bottom and top edges: the element owning the pixel's row when it is
/// at least a pixel tall, else the largest of the parts blended in the row. `cursor` may be
/// kept between calls: nearby hovers then seek only a few events.
pub fn hit<E: Elements>(
    track: &Track<'_, E>,
    view: &Viewport,
    (y_min, y_max): (u64, u64),
    x: u32,
    y: u32,
    cursor: &mut Cursor,
) -> Hit {
    if x >= view.width || y >= view.height {
        return Hit::Nothing;
    }
    let dx = (view.x1 - view.x0) / view.width.max(1) as f64;
    let a = view.x0 + x as f64 * dx;
    let Some(span) = track.axis.states_in(view.mode, a, a + dx) else {
        return Hit::Nothing;
    };
    let (state, total) = track.total.argmax(span.first, span.last);
    let scale = Scale::new(view.height, y_min, y_max.max(y_min.saturating_add(1)));
    let row = (view.height - 1 - y) as i64;
    let layout = track.layout;
    cursor.seek(layout, state);
    let as_hit = |part: Part, bottom: u64, top: u64| match part {
        Part::Rank(r) => Hit::Element {
            index: layout.id(r),
            state,
        },
        Part::Band(_) => Hit::Small {
            state,
            bytes: top - bottom,
        },
    };
    // The largest part seen in the row so far.
    let mut largest: Option<(f64, Hit)> = None;
    for (part, bottom, top) in parts(layout, cursor, total) {
        let (pb, pt) = (scale.pos(bottom), scale.pos(top));
        if top == bottom || pt <= row as f64 {
            continue;
        }
        if pb >= (row + 1) as f64 {
            break;
        }
        let (rb, rt) = (floor(pb), floor(pt));
        let overlap = pt.min((row + 1) as f64) - pb.max(row as f64);
        if largest.is_none_or(|(best, _)| overlap > best) {
            largest = Some((overlap, as_hit(part, bottom, top)));
        }
        if (rb..rt).contains(&row) {
            // The part crossing the row's top edge: the row is its.
            return if pt - pb >= 1.0 {
                as_hit(part, bottom, top)
            } else {
                largest.map_or(Hit::Nothing, |(_, hit)| hit)
            };
        }
    }
    Hit::Nothing
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::axis::AxisMode;
    use crate::analysis::curve::Envelope;
    use crate::analysis::elements::AllocationElements;
    use crate::analysis::replay::replay;
    use crate::analysis::test_traces::device;
    use crate::model::{Action, Device};

    /// Paints a device's allocations with `detail` drawn and calls `check` with the frame.
    fn with_frame(
        d: &Device,
        detail: u32,
        view: impl Fn(u32) -> (Viewport, Option<u64>),
        check: impl Fn(&PaintedFrame, &dyn Fn(u32, u32) -> Hit),
    ) {
        let facts = replay(d);
        let elements = AllocationElements::new(&facts);
        let layout = TimelineLayout::build(&elements, detail);
        let envelope = Envelope::new(
            std::iter::once(facts.baseline_allocated).chain(facts.allocated.iter().copied()),
        );
        let track = Track {
            elements: &elements,
            layout: &layout,
            total: Curve::Dense {
                baseline: facts.baseline_allocated,
                values: &facts.allocated,
                envelope: &envelope,
            },
            line: None,
            axis: Axis::new(&d.trace),
        };
        let (v, y_max) = view(track.axis.states);
        let y = y_max.map_or(YScale::Fit, |max| YScale::Bytes { min: 0, max });
        let style = Style::light();
        let frame = paint(&track, &v, y, &style, &ByElement(&style), Marks::default());
        check(&frame, &|x, y| {
            hit(
                &track,
                &v,
                (frame.y_min, frame.y_max),
                x,
                y,
                &mut Cursor::default(),
            )
        });
    }

    #[test]
    fn walking_from_the_first_change_paints_what_walking_everything_paints() {
        let d = device(&crate::analysis::test_traces::random_rows(7, 4000));
        let facts = replay(&d);
        let elements = AllocationElements::new(&facts);
        let envelope = Envelope::new(
            std::iter::once(facts.baseline_allocated).chain(facts.allocated.iter().copied()),
        );
        let total = Curve::Dense {
            baseline: facts.baseline_allocated,
            values: &facts.allocated,
            envelope: &envelope,
        };
        let style = Style::light();
        let peak = facts.allocated.iter().copied().max().unwrap();
        for detail in [50, 700, u32::MAX] {
            let layout = TimelineLayout::build(&elements, detail);
            let track = Track {
                elements: &elements,
                layout: &layout,
                total,
                line: Some(total),
                axis: Axis::new(&d.trace),
            };
            let states = track.axis.states as f64;
            let pinned = Some(layout.id(0));
            for (x0, x1, width, height) in [
                (0.0, states, 300, 200),
                (0.0, states, 37, 53),
                (states * 0.3, states * 0.6, 671, 460),
                (states * 0.5, states * 0.5 + 900.0, 500, 100),
                (states * 0.1, states * 0.1 + 40.0, 400, 300),
            ] {
                let view = Viewport {
                    mode: AxisMode::Events,
                    x0,
                    x1,
                    width,
                    height,
                };
                for y in [
                    YScale::Fit,
                    YScale::Bytes {
                        min: peak / 10,
                        max: peak * 6 / 10,
                    },
                    YScale::Bytes {
                        min: peak / 3,
                        max: peak / 3 + (1 << 20),
                    },
                ] {
                    let marks = Marks {
                        pinned,
                        matches: None,
                    };
                    let by_element = ByElement(&style);
                    let colourings: [&dyn Colouring; 2] = [&by_element, &Striped(&style)];
                    for colouring in colourings {
                        let paint =
                            |walk| paint_walking(&track, &view, y, &style, colouring, marks, walk);
                        let (shortcut, whole) = (paint(Walk::FromFirstChange), paint(Walk::Whole));
                        assert!(
                            shortcut == whole,
                            "detail {detail}, view {view:?}, {y:?}: the frames differ"
                        );
                    }
                }
            }
        }
    }

    /// Three colours by element, a band split by state into parts that may claim less or
    /// more than the band holds, and rows voted rather than blended.
    struct Striped<'a>(&'a Style);

    impl Colouring for Striped<'_> {
        fn colour(&self, element: u32) -> [u8; 4] {
            self.0.roles[element as usize % 3]
        }
        fn band(&self, state: u32, parts: &mut Vec<([u8; 4], u64)>) {
            let s = state as u64;
            parts.push((self.0.roles[4], s * 7919 % (1 << 20)));
            parts.push((self.0.roles[5], s * 104_729 % (1 << 22)));
        }
        fn blends(&self) -> bool {
            false
        }
    }

    #[test]
    fn a_split_band_stacks_its_parts_and_leaves_the_rest_grey() {
        // One drawn element of 4 bytes, then 8 bytes of band: 2 + 3 claimed, 3 left.
        let d = device(&[
            (Action::Alloc, 1, 4),
            (Action::Alloc, 2, 1),
            (Action::Alloc, 3, 1),
            (Action::Alloc, 4, 6),
        ]);
        let facts = replay(&d);
        let elements = AllocationElements::new(&facts);
        let layout = TimelineLayout::build(&elements, 2);
        let cursor = {
            let mut c = Cursor::default();
            c.seek(&layout, 4);
            c
        };
        let parts: Vec<(Part, u64, u64)> =
            parts_from(&layout, &cursor, 12, 0, 0, &[2, 3]).collect();
        assert_eq!(
            parts,
            [
                (Part::Rank(0), 0, 4),
                (Part::Rank(1), 4, 10),
                (Part::Band(0), 10, 12),
                (Part::Band(1), 12, 12),
                (Part::Band(BAND_REST), 12, 12),
            ]
        );
        let parts: Vec<(Part, u64, u64)> =
            parts_from(&layout, &cursor, 20, 0, 0, &[2, 3]).collect();
        assert_eq!(
            &parts[2..],
            [
                (Part::Band(0), 10, 12),
                (Part::Band(1), 12, 15),
                (Part::Band(BAND_REST), 15, 20),
            ]
        );
    }

    #[test]
    fn voting_rows_take_the_colour_covering_most_of_them() {
        let mut vote = Blend::new(false);
        vote.add([1, 0, 0, 255], 0.3);
        vote.add([2, 0, 0, 255], 0.25);
        vote.add([1, 0, 0, 255], 0.1);
        assert_eq!(vote.colour([0; 4]), [1, 0, 0, 255]);
        vote.clear();
        assert_eq!(vote.colour([9; 4]), [9; 4]);
    }

    /// A view with one pixel column per state, `height` rows for `height` bytes.
    fn one_column_per_state(height: u32) -> impl Fn(u32) -> (Viewport, Option<u64>) {
        move |states| {
            (
                Viewport {
                    mode: AxisMode::Events,
                    x0: 0.0,
                    x1: states as f64,
                    width: states,
                    height,
                },
                Some(height as u64),
            )
        }
    }

    fn pixel(frame: &PaintedFrame, width: u32, x: u32, y: u32) -> [u8; 4] {
        let at = ((y * width + x) * 4) as usize;
        frame.pixels[at..at + 4].try_into().unwrap()
    }

    /// Height in pixels of the painted (non-background) part of column `x`.
    fn column_height(frame: &PaintedFrame, width: u32, height: u32, x: u32) -> u32 {
        let bg = Style::light().background;
        (0..height)
            .filter(|&y| pixel(frame, width, x, y) != bg)
            .count() as u32
    }

    #[test]
    fn one_column_per_state_shows_stacking_and_slide_down() {
        // a(40) b(20) c(40); a is freed, so b and c slide down.
        let d = device(&[
            (Action::Alloc, 1, 40),
            (Action::Alloc, 2, 20),
            (Action::Alloc, 3, 40),
            (Action::FreeCompleted, 1, 40),
        ]);
        let view = one_column_per_state(105);
        with_frame(&d, 10, view, |frame, hit| {
            assert_eq!(frame.peak, Some((3, 100)));
            assert_eq!(frame.drawn_individually, 3);
            // State 3: a at rows 0..40, b 40..60, c 60..100 (bottom-up), i.e. y = 104 - row.
            assert_eq!(hit(3, 104), Hit::Element { index: 0, state: 3 });
            assert_eq!(hit(3, 104 - 50), Hit::Element { index: 1, state: 3 });
            assert_eq!(hit(3, 104 - 99), Hit::Element { index: 2, state: 3 });
            assert_eq!(hit(3, 104 - 100), Hit::Nothing);
            // State 4: a freed; b now at the bottom.
            assert_eq!(hit(4, 104), Hit::Element { index: 1, state: 4 });
            assert_eq!(hit(4, 104 - 59), Hit::Element { index: 2, state: 4 });
            assert_eq!(column_height(frame, 5, 105, 3), 100);
            assert_eq!(column_height(frame, 5, 105, 4), 60);
            assert_eq!(column_height(frame, 5, 105, 0), 0);
        });
    }

    #[test]
    fn a_zoomed_out_column_shows_the_peak_within_it() {
        // A short spike (state 2 only) must not vanish when 4 states share a column.
        let d = device(&[
            (Action::Alloc, 1, 10),
            (Action::Alloc, 2, 90),
            (Action::FreeCompleted, 2, 90),
            (Action::Alloc, 3, 5),
            (Action::FreeCompleted, 3, 5),
            (Action::FreeCompleted, 1, 10),
            (Action::Alloc, 4, 1),
        ]);
        let view = |_| {
            (
                Viewport {
                    mode: AxisMode::Events,
                    x0: 0.0,
                    x1: 8.0,
                    width: 2,
                    height: 200,
                },
                None,
            )
        };
        with_frame(&d, 10, view, |frame, hit| {
            assert_eq!(frame.peak, Some((2, 100)));
            assert_eq!(frame.y_max, fitted_y_max(100));
            let expected = (100.0 * 200.0 / frame.y_max as f64).floor() as u32;
            assert_eq!(column_height(frame, 2, 200, 0), expected);
            assert_eq!(hit(0, 199), Hit::Element { index: 0, state: 2 });
            // The second column (states 4..=7) peaks at state 4: 10 + 5 bytes.
            assert_eq!(hit(1, 199), Hit::Element { index: 0, state: 4 });
        });
    }

    #[test]
    fn elements_not_drawn_form_the_small_band_on_top() {
        // Only the largest (a, 100) is drawn; b and c (1 each) make the band above it.
        let d = device(&[
            (Action::Alloc, 2, 1),
            (Action::Alloc, 1, 100),
            (Action::Alloc, 3, 1),
        ]);
        let view = one_column_per_state(102);
        with_frame(&d, 1, view, |frame, hit| {
            assert_eq!(frame.drawn_individually, 1);
            // State 3: a at the bottom even though b came first (b is not drawn), band of 2.
            assert_eq!(hit(3, 101), Hit::Element { index: 1, state: 3 });
            assert_eq!(hit(3, 101 - 100), Hit::Small { state: 3, bytes: 2 });
            assert_eq!(pixel(frame, 4, 3, 101 - 101), Style::light().small);
            // State 1: only b, all in the band.
            assert_eq!(hit(1, 101), Hit::Small { state: 1, bytes: 1 });
        });
    }

    #[test]
    fn the_baseline_is_drawn_from_the_first_state() {
        // A free without an alloc: alive before the window, from state 0 to its free.
        let d = device(&[(Action::Alloc, 1, 30), (Action::FreeCompleted, 9, 50)]);
        let view = one_column_per_state(100);
        with_frame(&d, 10, view, |frame, hit| {
            assert_eq!(hit(0, 99), Hit::Element { index: 0, state: 0 });
            assert_eq!(column_height(frame, 3, 100, 0), 50);
            assert_eq!(column_height(frame, 3, 100, 1), 80);
            // After its free, the trace allocation slides to the bottom.
            assert_eq!(hit(2, 99), Hit::Element { index: 1, state: 2 });
            assert_eq!(column_height(frame, 3, 100, 2), 30);
        });
    }

    /// A track of a device's allocations, all drawn, for the tests below.
    struct Fixture {
        facts: crate::analysis::DeviceFacts,
        layout: TimelineLayout,
        envelope: Envelope,
        device: Device,
    }

    impl Fixture {
        fn new(device: Device) -> Self {
            let facts = replay(&device);
            let layout = TimelineLayout::build(&AllocationElements::new(&facts), u32::MAX);
            let envelope = Envelope::new(
                std::iter::once(facts.baseline_allocated).chain(facts.allocated.iter().copied()),
            );
            Fixture {
                facts,
                layout,
                envelope,
                device,
            }
        }

        fn paint(
            &self,
            width: u32,
            height: u32,
            y: YScale,
            colouring: &dyn Colouring,
        ) -> PaintedFrame {
            let elements = AllocationElements::new(&self.facts);
            let track = self.track(&elements);
            paint(
                &track,
                &self.view(width, height),
                y,
                &Style::light(),
                colouring,
                Marks::default(),
            )
        }

        fn hit(&self, width: u32, height: u32, frame: &PaintedFrame, x: u32, y: u32) -> Hit {
            let elements = AllocationElements::new(&self.facts);
            let track = self.track(&elements);
            hit(
                &track,
                &self.view(width, height),
                (frame.y_min, frame.y_max),
                x,
                y,
                &mut Cursor::default(),
            )
        }

        fn track<'a>(
            &'a self,
            elements: &'a AllocationElements<'a>,
        ) -> Track<'a, AllocationElements<'a>> {
            Track {
                elements,
                layout: &self.layout,
                total: Curve::Dense {
                    baseline: self.facts.baseline_allocated,
                    values: &self.facts.allocated,
                    envelope: &self.envelope,
                },
                line: None,
                axis: Axis::new(&self.device.trace),
            }
        }

        fn view(&self, width: u32, height: u32) -> Viewport {
            Viewport {
                mode: AxisMode::Events,
                x0: 0.0,
                x1: (self.device.trace.len() + 1) as f64,
                width,
                height,
            }
        }
    }

    /// Ten allocations of 1 byte each: the last state holds them all.
    fn ten_bytes() -> Device {
        let rows: Vec<_> = (0..10).map(|i| (Action::Alloc, 100 + i, 1)).collect();
        device(&rows)
    }

    #[test]
    fn elements_thinner_than_a_pixel_blend_their_colours_in_the_rows_they_share() {
        let fixture = Fixture::new(ten_bytes());
        // 11 states, one column each; 4 bytes per row: rows 0 and 1 are full at state 10.
        let style = Style::light();
        let by_element = ByElement(&style);
        let frame = fixture.paint(11, 3, YScale::Bytes { min: 0, max: 12 }, &by_element);
        let mix = |ids: std::ops::Range<u32>| {
            let mut blend = Blend::default();
            for i in ids {
                blend.add(by_element.colour(i), 0.25);
            }
            blend.colour(style.background)
        };
        assert_eq!(pixel(&frame, 11, 10, 2), mix(0..4), "row 0: elements 0–3");
        assert_eq!(pixel(&frame, 11, 10, 1), mix(4..8), "row 1: elements 4–7");
        // The partial row at the top (elements 8 and 9, half a row) is not painted.
        assert_eq!(pixel(&frame, 11, 10, 0), style.background);
        assert_ne!(
            pixel(&frame, 11, 10, 2),
            style.small,
            "never the band's grey"
        );
        assert_eq!(frame.drawn_individually, 0, "none is a pixel tall");
        // Hovering a blended row names its largest part (the first of equals).
        assert_eq!(
            fixture.hit(11, 3, &frame, 10, 2),
            Hit::Element {
                index: 0,
                state: 10
            }
        );
        assert_eq!(
            fixture.hit(11, 3, &frame, 10, 1),
            Hit::Element {
                index: 4,
                state: 10
            }
        );
        assert_eq!(fixture.hit(11, 3, &frame, 10, 0), Hit::Nothing);
    }

    #[test]
    fn the_largest_part_of_a_blended_row_is_what_a_hover_names() {
        // 1, 2 and 1 bytes in one 4-byte row: the 2-byte allocation is named.
        let fixture = Fixture::new(device(&[
            (Action::Alloc, 1, 1),
            (Action::Alloc, 2, 2),
            (Action::Alloc, 3, 1),
        ]));
        let style = Style::light();
        let frame = fixture.paint(4, 2, YScale::Bytes { min: 0, max: 8 }, &ByElement(&style));
        assert_eq!(
            fixture.hit(4, 2, &frame, 3, 1),
            Hit::Element { index: 1, state: 3 }
        );
        assert_ne!(pixel(&frame, 4, 3, 1), style.background);
    }

    #[test]
    fn a_zoomed_y_range_brings_a_small_allocation_to_many_pixels() {
        // 1000 bytes, then 10 bytes on top: zoomed to bytes 1000–1020, the 10 bytes are half
        // of a 20-pixel plot.
        let fixture = Fixture::new(device(&[(Action::Alloc, 1, 1000), (Action::Alloc, 2, 10)]));
        let style = Style::light();
        let by_element = ByElement(&style);
        let y = YScale::Bytes {
            min: 1000,
            max: 1020,
        };
        let frame = fixture.paint(3, 20, y, &by_element);
        assert_eq!((frame.y_min, frame.y_max), (1000, 1020));
        assert_eq!(column_height(&frame, 3, 20, 2), 10);
        for y in 10..20 {
            assert_eq!(pixel(&frame, 3, 2, y), by_element.colour(1), "row {y}");
            assert_eq!(
                fixture.hit(3, 20, &frame, 2, y),
                Hit::Element { index: 1, state: 2 }
            );
        }
        assert_eq!(
            frame.drawn_individually, 1,
            "the 1000 bytes are below the view"
        );
        // Fitted, the 10 bytes are less than a pixel.
        let fitted = fixture.paint(3, 20, YScale::Fit, &by_element);
        assert_eq!(fitted.y_min, 0);
        assert_eq!(fitted.drawn_individually, 1);
    }

    #[test]
    fn the_painter_takes_its_colours_from_the_colouring() {
        struct AllRed;
        impl Colouring for AllRed {
            fn colour(&self, _: u32) -> [u8; 4] {
                [255, 0, 0, 255]
            }
        }
        let fixture = Fixture::new(ten_bytes());
        let frame = fixture.paint(11, 3, YScale::Bytes { min: 0, max: 12 }, &AllRed);
        assert_eq!(pixel(&frame, 11, 10, 2), [255, 0, 0, 255]);
        assert_eq!(pixel(&frame, 11, 10, 1), [255, 0, 0, 255]);
    }
}
