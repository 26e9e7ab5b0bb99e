//! Pixels of a timeline view, and what lies under a pixel.
//!
//! Painting goes column by column: each column shows the stack at the state where the total
//! peaks within the column ([`Curve::argmax`]), seeking the [`Cursor`] forward as columns
//! advance. An element owns the pixel rows between the floors of its bottom and top edges, so
//! stacked elements tile the column exactly; one less than a pixel tall is painted in the
//! small-allocations colour rather than its own. The cost of a frame is O(width × (live drawn
//! elements + height)), independent of the trace length. Hit-testing repeats the same
//! arithmetic for one column, so a hover always names what is painted under the cursor.

use super::axis::{Axis, StateRange};
use super::curve::Curve;
use super::elements::Elements;
use super::layout::{Cursor, Layout};
use super::Viewport;

/// Colours, as RGBA.
#[derive(Clone, Debug, PartialEq)]
pub struct Style {
    pub background: [u8; 4],
    /// The band of elements not drawn individually (and those under a pixel tall).
    pub small: [u8; 4],
    /// The line drawn over the stack (reserved bytes on the allocations timeline).
    pub line: [u8; 4],
    pub pinned: [u8; 4],
    pub matched: [u8; 4],
    pub palette: Vec<[u8; 4]>,
    /// Thickness of the line, in pixels.
    pub line_width: u32,
}

impl Style {
    pub fn light() -> Self {
        Style {
            background: [255, 255, 255, 255],
            small: [170, 176, 186, 255],
            line: [30, 30, 30, 255],
            pinned: [220, 20, 60, 255],
            matched: [250, 204, 21, 255],
            palette: PALETTE.to_vec(),
            line_width: 2,
        }
    }

    pub fn dark() -> Self {
        Style {
            background: [24, 26, 31, 255],
            small: [90, 96, 108, 255],
            line: [235, 235, 235, 255],
            ..Style::light()
        }
    }

    /// The colour of element `i`: stable across views, zooms and page loads.
    pub fn colour(&self, i: u32) -> [u8; 4] {
        let hash = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
        self.palette[(hash % self.palette.len() as u64) as usize]
    }
}

/// Tableau 10, the palette memory_viz uses, minus its grey (which is the small band's).
const PALETTE: [[u8; 4]; 9] = [
    [0x4e, 0x79, 0xa7, 255],
    [0xf2, 0x8e, 0x2c, 255],
    [0xe1, 0x57, 0x59, 255],
    [0x76, 0xb7, 0xb2, 255],
    [0x59, 0xa1, 0x4f, 255],
    [0xed, 0xc9, 0x49, 255],
    [0xaf, 0x7a, 0xa1, 255],
    [0xff, 0x9d, 0xa7, 255],
    [0x9c, 0x75, 0x5f, 255],
];

/// Everything a track needs to be drawn.
pub struct Track<'a, E: Elements> {
    pub elements: &'a E,
    pub layout: &'a Layout,
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

/// A painted view.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// `width × height` RGBA pixels, top row first.
    pub pixels: Vec<u8>,
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

struct Scale {
    px_per_byte: f64,
}

impl Scale {
    fn new(height: u32, y_max: u64) -> Self {
        Scale {
            px_per_byte: height as f64 / y_max.max(1) as f64,
        }
    }

    /// Bottom-up pixel row of a byte offset (may exceed the height).
    fn row(&self, bytes: u64) -> u32 {
        (bytes as f64 * self.px_per_byte)
            .floor()
            .min(u32::MAX as f64) as u32
    }
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

/// Paints `view` of `track`, with `y_max` bytes at the top edge (`None` fits the view's
/// highest value).
pub fn paint<E: Elements>(
    track: &Track<'_, E>,
    view: &Viewport,
    y_max: Option<u64>,
    style: &Style,
    marks: Marks<'_>,
) -> Frame {
    let (w, h) = (view.width as usize, view.height as usize);
    let mut pixels = vec![0u8; w * h * 4];
    for px in pixels.chunks_exact_mut(4) {
        px.copy_from_slice(&style.background);
    }
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
    let y_max = y_max.unwrap_or_else(|| fitted_y_max(highest));
    let scale = Scale::new(view.height, y_max);

    let layout = track.layout;
    let pinned = marks.pinned.and_then(|i| layout.rank(i));
    let mut cursor = Cursor::default();
    let mut drawn_individually = 0u32;
    let mut previous_state: Option<u32> = None;
    let mut previous_line: Option<u32> = None;
    let put = |pixels: &mut Vec<u8>, x: usize, rows: std::ops::Range<u32>, colour: [u8; 4]| {
        let top = rows.end.min(h as u32);
        for r in rows.start.min(top)..top {
            let y = h - 1 - r as usize;
            let at = (y * w + x) * 4;
            pixels[at..at + 4].copy_from_slice(&colour);
        }
    };
    for (x, c) in cols.iter().enumerate() {
        if c.span.is_none() {
            previous_line = None;
            continue;
        }
        cursor.seek(layout, c.state);
        let mut offset = 0u64;
        for &r in &cursor.live {
            let size = layout.sizes[r as usize];
            let (r0, r1) = (scale.row(offset), scale.row(offset + size));
            offset += size;
            let tall = size as f64 * scale.px_per_byte >= 1.0;
            if tall && previous_state.is_none_or(|p| layout.starts[r as usize] > p) {
                drawn_individually += 1;
            }
            if r0 >= h as u32 || r0 == r1 {
                // Above the top edge (a fixed y_max lower than the stack), or no whole row.
                continue;
            }
            let colour = if pinned == Some(r) {
                style.pinned
            } else if marks.matches.is_some() && is_marked(marks.matches, layout.id(r)) {
                style.matched
            } else if tall {
                style.colour(layout.id(r))
            } else {
                style.small
            };
            put(&mut pixels, x, r0..r1, colour);
        }
        let small_top = c.total.max(offset);
        put(
            &mut pixels,
            x,
            scale.row(offset)..scale.row(small_top),
            style.small,
        );
        if let Some(line) = c.line {
            let row = scale.row(line).min(h as u32 - 1);
            let half = style.line_width / 2;
            let (lo, hi) = match previous_line {
                Some(p) => (p.min(row), p.max(row)),
                None => (row, row),
            };
            put(
                &mut pixels,
                x,
                lo.saturating_sub(half)..(hi + style.line_width - half),
                style.line,
            );
            previous_line = Some(row);
        }
        previous_state = Some(c.state);
    }
    Frame {
        pixels,
        y_max,
        drawn_individually,
        peak,
        states,
    }
}

/// What is painted at pixel `(x, y)` (y from the top) of `view`, painted with `y_max` bytes at
/// its top edge. `cursor` may be kept between calls: nearby hovers then seek only a few
/// events.
pub fn hit<E: Elements>(
    track: &Track<'_, E>,
    view: &Viewport,
    y_max: u64,
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
    let scale = Scale::new(view.height, y_max);
    let row = view.height - 1 - y;
    let layout = track.layout;
    cursor.seek(layout, state);
    let mut offset = 0u64;
    for &r in &cursor.live {
        let size = layout.sizes[r as usize];
        let (r0, r1) = (scale.row(offset), scale.row(offset + size));
        offset += size;
        if (r0..r1).contains(&row) {
            return Hit::Element {
                index: layout.id(r),
                state,
            };
        }
        if r0 > row {
            break;
        }
    }
    let drawn = cursor.drawn_total;
    let small_top = total.max(drawn);
    if (scale.row(drawn)..scale.row(small_top)).contains(&row) {
        return Hit::Small {
            state,
            bytes: small_top - drawn,
        };
    }
    Hit::Nothing
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::replay::replay;
    use crate::model::{Action, Device};
    use crate::timeline::curve::Envelope;
    use crate::timeline::elements::AllocationElements;
    use crate::timeline::test_traces::device;
    use crate::timeline::AxisMode;

    /// Paints a device's allocations with `detail` drawn and calls `check` with the frame.
    fn with_frame(
        d: &Device,
        detail: u32,
        view: impl Fn(u32) -> (Viewport, Option<u64>),
        check: impl Fn(&Frame, &dyn Fn(u32, u32) -> Hit),
    ) {
        let facts = replay(d);
        let elements = AllocationElements::new(&facts);
        let layout = Layout::build(&elements, detail);
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
        let frame = paint(&track, &v, y_max, &Style::light(), Marks::default());
        check(&frame, &|x, y| {
            hit(&track, &v, frame.y_max, x, y, &mut Cursor::default())
        });
    }

    fn pixel(frame: &Frame, width: u32, x: u32, y: u32) -> [u8; 4] {
        let at = ((y * width + x) * 4) as usize;
        frame.pixels[at..at + 4].try_into().unwrap()
    }

    /// Height in pixels of the painted (non-background) part of column `x`.
    fn column_height(frame: &Frame, width: u32, height: u32, x: u32) -> u32 {
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
        let view = |states: u32| {
            (
                Viewport {
                    mode: AxisMode::Events,
                    x0: 0.0,
                    x1: states as f64,
                    width: states,
                    height: 105,
                },
                Some(105),
            )
        };
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
        let view = |states: u32| {
            (
                Viewport {
                    mode: AxisMode::Events,
                    x0: 0.0,
                    x1: states as f64,
                    width: states,
                    height: 102,
                },
                Some(102),
            )
        };
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
        let view = |states: u32| {
            (
                Viewport {
                    mode: AxisMode::Events,
                    x0: 0.0,
                    x1: states as f64,
                    width: states,
                    height: 100,
                },
                Some(100),
            )
        };
        with_frame(&d, 10, view, |frame, hit| {
            assert_eq!(hit(0, 99), Hit::Element { index: 0, state: 0 });
            assert_eq!(column_height(frame, 3, 100, 0), 50);
            assert_eq!(column_height(frame, 3, 100, 1), 80);
            // After its free, the trace allocation slides to the bottom.
            assert_eq!(hit(2, 99), Hit::Element { index: 1, state: 2 });
            assert_eq!(column_height(frame, 3, 100, 2), 30);
        });
    }
}
