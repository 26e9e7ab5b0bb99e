//! The timeline's gestures as arithmetic: what a press, a drag and its release on the plot,
//! a wheel turn, a key, a drag of the bar under the plot, or a press and drag on the minimap
//! ask of the view, and what the pointer is over. Positions are CSS pixels from the plot's
//! (or the minimap's) top-left corner.
//!
//! Pure, unit-tested natively. The handlers (`plot.rs`, `minimap.rs`) read the browser's
//! events, pass their numbers here and carry out what comes back on the [`Timeline`]. Not the
//! place for the ranges' own rules (clamping, the narrowest span: `range.rs`) or for what is
//! asked of the worker (`client.rs`).
//!
//! [`Timeline`]: super::Timeline

use super::labels;
use super::range::{XRange, YRange};

/// Pixels a press may move and still count as a click.
pub const CLICK_SLOP: f64 = 4.0;

/// Width of the strip along the plot's left edge, over the byte labels, where a vertical drag
/// zooms the y axis.
pub const Y_AXIS_STRIP: f64 = 56.0;

/// Pixels either side of an out-of-memory mark that hover or click it.
pub const OOM_REACH: f64 = 5.0;

/// Pixels either side of the minimap window's edge that grab the edge.
pub const MINIMAP_EDGE: f64 = 6.0;

/// What a press on the plot does as the pointer moves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DragKind {
    /// Pans the x range (and a zoomed y range).
    Pan,
    /// Zooms the y axis around where the press started (drag up to zoom in).
    YAxis,
    /// Draws a box to zoom into (Shift + drag).
    Box,
}

/// A press on the plot, from the view it started on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Drag {
    pub kind: DragKind,
    start: (f64, f64),
    /// Moved past [`CLICK_SLOP`]: no longer a click.
    moved: bool,
    x: XRange,
    y: Option<YRange>,
    /// The y range on screen when the press started (a fitted axis has none of its own).
    painted_y: YRange,
}

/// What a drag does to the view as the pointer moves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DragStep {
    /// The view follows the pointer: this x range (clamped by the view), and this y range
    /// when the bytes are zoomed.
    Pan { x: XRange, y: Option<YRange> },
    /// The bytes zoomed to this range.
    ZoomY(YRange),
    /// The box to zoom into, drawn over the plot.
    Box(ZoomBox),
}

/// A box drawn over the plot: left, top, width and height.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ZoomBox {
    pub left: f64,
    pub top: f64,
    pub width: f64,
    pub height: f64,
}

/// What the release of a press does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Release {
    /// Zoom into the box between these corners.
    ZoomToBox { from: (f64, f64), to: (f64, f64) },
    /// A Shift+click here: the other views show its moment.
    PickMoment(f64, f64),
    /// A click here: pin what is there.
    Click(f64, f64),
    /// A drag ended: the view is where it went.
    Done,
}

impl Drag {
    /// A press at `at`: a box with Shift, a zoom of the bytes over the byte labels, else a
    /// pan; from the view on screen (`x`, `y`, and the bytes painted, `painted_y`).
    pub fn press(
        at: (f64, f64),
        shift: bool,
        x: XRange,
        y: Option<YRange>,
        painted_y: YRange,
    ) -> Drag {
        let kind = if shift {
            DragKind::Box
        } else if at.0 < Y_AXIS_STRIP {
            DragKind::YAxis
        } else {
            DragKind::Pan
        };
        Drag {
            kind,
            start: at,
            moved: false,
            x,
            y,
            painted_y,
        }
    }

    /// The pointer moved to `at` over a plot of `(width, height)`: what the view becomes, or
    /// `None` while the press is still a click.
    pub fn move_to(&mut self, at: (f64, f64), (w, h): (f64, f64)) -> Option<DragStep> {
        let (dx, dy) = (at.0 - self.start.0, at.1 - self.start.1);
        if !self.moved && dx.abs() <= CLICK_SLOP && dy.abs() <= CLICK_SLOP {
            return None;
        }
        self.moved = true;
        Some(match self.kind {
            DragKind::Pan => {
                let shift = -dx / w.max(1.0) * self.x.span();
                DragStep::Pan {
                    x: XRange::new(self.x.x0 + shift, self.x.x1 + shift),
                    y: self.y.map(|y| y.pan(dy / h.max(1.0))),
                }
            }
            DragKind::YAxis => {
                let start = self.y.unwrap_or(self.painted_y);
                let anchor = 1.0 - self.start.1 / h.max(1.0);
                DragStep::ZoomY(start.zoom(anchor, (dy * 0.01).exp()))
            }
            DragKind::Box => DragStep::Box(ZoomBox {
                left: self.start.0.min(at.0),
                top: self.start.1.min(at.1),
                width: dx.abs(),
                height: dy.abs(),
            }),
        })
    }

    /// The press ends at `at`.
    pub fn release(self, at: (f64, f64)) -> Release {
        match (self.kind, self.moved) {
            (DragKind::Box, true) => Release::ZoomToBox {
                from: self.start,
                to: at,
            },
            (DragKind::Box, false) => Release::PickMoment(at.0, at.1),
            (_, false) => Release::Click(at.0, at.1),
            (_, true) => Release::Done,
        }
    }
}

/// The view that shows the box between `from` and `to` on a plot of `size` (CSS pixels and
/// pixel ratio) showing `x` and the bytes `y`: its x extent along the trace (widened to
/// `min_span` around its middle when narrower), its y extent in bytes.
pub fn box_view(
    from: (f64, f64),
    to: (f64, f64),
    (w, h, _): (f64, f64, f64),
    x: XRange,
    y: YRange,
    min_span: f64,
) -> (XRange, YRange) {
    let x_at = |px: f64| x.x0 + (px / w.max(1.0)).clamp(0.0, 1.0) * x.span();
    let y_at = |py: f64| y.min + (1.0 - (py / h.max(1.0)).clamp(0.0, 1.0)) * y.span();
    let (x0, x1) = (x_at(from.0.min(to.0)), x_at(from.0.max(to.0)));
    let x = if x1 - x0 >= min_span {
        XRange::new(x0, x1)
    } else {
        let mid = (x0 + x1) / 2.0;
        let half = min_span / 2.0;
        XRange::new(mid - half, mid + half)
    };
    let y = YRange::new(y_at(from.1.max(to.1)), y_at(from.1.min(to.1)));
    (x, y)
}

/// What a wheel turn does: `fraction` is where it turned, along the axis it zooms, and
/// `factor` < 1 zooms in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Wheel {
    /// Zoom the bytes around the point at `fraction` of the height from the bottom.
    ZoomY { fraction: f64, factor: f64 },
    /// Pan by `fraction` of the visible width.
    Pan(f64),
    /// Zoom the trace around the point at `fraction` of the width.
    Zoom { fraction: f64, factor: f64 },
}

/// A wheel event's deltas and what was held.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WheelTurn {
    pub delta: (f64, f64),
    /// The deltas' unit: 0 pixels, 1 lines, 2 pages.
    pub delta_mode: u32,
    pub at: (f64, f64),
    pub shift: bool,
    /// Held by a pinch on a touchpad too.
    pub ctrl: bool,
}

/// A wheel turn over a plot of `(width, height)`: Shift zooms the bytes around the pointer, a
/// horizontal turn pans, a vertical one zooms the trace around the pointer (a pinch, which
/// arrives with Ctrl, five times as fast).
pub fn wheel(turn: WheelTurn, (w, h): (f64, f64)) -> Wheel {
    let scale = match turn.delta_mode {
        1 => 16.0,
        2 => 400.0,
        _ => 1.0,
    };
    let (dx, dy) = (turn.delta.0 * scale, turn.delta.1 * scale);
    let (px, py) = turn.at;
    if turn.shift {
        // Browsers may turn a shifted wheel into a horizontal one.
        let d = if dy != 0.0 { dy } else { dx };
        Wheel::ZoomY {
            fraction: 1.0 - py / h.max(1.0),
            factor: (d * 0.002).exp(),
        }
    } else if dx.abs() > dy.abs() {
        Wheel::Pan(dx / w.max(1.0))
    } else {
        let speed = if turn.ctrl { 0.01 } else { 0.002 };
        Wheel::Zoom {
            fraction: px / w.max(1.0),
            factor: (dy * speed).exp(),
        }
    }
}

/// What a key does to the timeline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Key {
    /// Ctrl/Cmd+F: the timeline's search field takes the keys.
    FocusSearch,
    /// Esc: nothing pinned, no tooltip.
    Unpin,
    /// Zoom the trace around the middle by this factor (< 1 zooms in).
    Zoom(f64),
    /// Zoom the bytes around the middle by this factor.
    ZoomY(f64),
    /// Pan by this fraction of the visible width.
    Pan(f64),
    /// Pan zoomed bytes by this fraction of the height (nothing to do when fitted).
    PanY(f64),
    FitY,
    Reset,
    /// Open or close the keys' reference.
    ToggleHelp,
}

/// A key pressed, and what was held.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KeyPress<'a> {
    /// The key's value (`KeyboardEvent.key`).
    pub key: &'a str,
    pub shift: bool,
    /// Ctrl, or Cmd on a Mac.
    pub ctrl_or_meta: bool,
    pub alt: bool,
    /// The keys go to a text field.
    pub typing: bool,
}

/// What `press` does: W/S zoom, A/D pan, 0 resets, Shift+W/S zoom the bytes, ↑/↓ pan zoomed
/// bytes, F fits them, ? shows every key, Esc unpins, Ctrl/Cmd+F searches. Keys typed into a
/// text field, or with Ctrl, Cmd or Alt, are not the timeline's (but Esc and Ctrl/Cmd+F).
pub fn key(press: KeyPress) -> Option<Key> {
    if press.ctrl_or_meta && press.key.eq_ignore_ascii_case("f") {
        return Some(Key::FocusSearch);
    }
    if press.key == "Escape" {
        return Some(Key::Unpin);
    }
    if press.typing || press.ctrl_or_meta || press.alt {
        return None;
    }
    Some(match (press.key, press.shift) {
        ("W", true) => Key::ZoomY(0.8),
        ("S", true) => Key::ZoomY(1.25),
        ("w" | "W" | "+" | "=", _) => Key::Zoom(0.8),
        ("s" | "S" | "-", _) => Key::Zoom(1.25),
        ("a" | "A" | "ArrowLeft", _) => Key::Pan(-0.1),
        ("d" | "D" | "ArrowRight", _) => Key::Pan(0.1),
        ("ArrowUp", _) => Key::PanY(0.1),
        ("ArrowDown", _) => Key::PanY(-0.1),
        ("f" | "F", _) => Key::FitY,
        ("0", _) => Key::Reset,
        ("?", _) => Key::ToggleHelp,
        _ => return None,
    })
}

/// The plot's share of the window's height is kept within these.
pub const PLOT_SHARE_RANGE: (f64, f64) = (0.1, 0.95);

/// A drag of the bar under the plot, which resizes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlotResize {
    start_y: f64,
    start_share: f64,
}

impl PlotResize {
    /// A press at `client_y` (CSS pixels from the window's top) on the bar under a plot
    /// `plot_height` high in a window `window_height` high.
    pub fn press(client_y: f64, plot_height: f64, window_height: f64) -> PlotResize {
        PlotResize {
            start_y: client_y,
            start_share: plot_height / window_height,
        }
    }

    /// The plot's share of the window's height with the bar at `client_y`.
    pub fn share_at(&self, client_y: f64, window_height: f64) -> f64 {
        let (low, high) = PLOT_SHARE_RANGE;
        let share = self.start_share + (client_y - self.start_y) / window_height.max(1.0);
        share.clamp(low, high)
    }
}

/// What a press on the minimap holds as the pointer moves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Grab {
    None,
    /// The window, `offset` (axis units) right of its left edge.
    Move {
        offset: f64,
    },
    /// The window's left edge.
    Left,
    /// The window's right edge.
    Right,
}

/// The x (axis units) under `px` on a minimap `width` pixels wide showing `full`.
pub fn minimap_x(px: f64, width: f64, full: XRange) -> f64 {
    full.x0 + (px / width).clamp(0.0, 1.0) * full.span()
}

impl Grab {
    /// A press at `px` on a minimap `width` pixels wide showing `full`, with `range` in view:
    /// an edge of the window, the window, or elsewhere, which moves the window there first
    /// (the range returned) and then holds it by its middle.
    pub fn press(px: f64, width: f64, full: XRange, range: XRange) -> (Grab, Option<XRange>) {
        let x = minimap_x(px, width, full);
        let px_per_unit = width / full.span();
        let left = (range.x0 - full.x0) * px_per_unit;
        let right = (range.x1 - full.x0) * px_per_unit;
        if (px - left).abs() <= MINIMAP_EDGE {
            (Grab::Left, None)
        } else if (px - right).abs() <= MINIMAP_EDGE {
            (Grab::Right, None)
        } else if px > left && px < right {
            let offset = x - range.x0;
            (Grab::Move { offset }, None)
        } else {
            let span = range.span();
            let centred = XRange::new(x - span / 2.0, x + span / 2.0);
            (Grab::Move { offset: span / 2.0 }, Some(centred))
        }
    }

    /// The range in view once the pointer holding this is at `x` (axis units), from `range`,
    /// never narrower than `min_span`; `None` when nothing is held.
    pub fn drag_to(self, x: f64, range: XRange, min_span: f64) -> Option<XRange> {
        match self {
            Grab::None => None,
            Grab::Move { offset } => Some(XRange::new(x - offset, x - offset + range.span())),
            Grab::Left => Some(XRange::new(x.min(range.x1 - min_span), range.x1)),
            Grab::Right => Some(XRange::new(range.x0, x.max(range.x0 + min_span))),
        }
    }
}

/// What the pointer is over on the plot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Over {
    /// A scope's lane along the top (its index in the layout's scopes).
    Scope(usize),
    /// An out-of-memory mark (its index in the layout's OOMs).
    Oom(usize),
    /// The painted pixels.
    Plot,
}

/// What is under `(x, y)` given the overlay as last drawn: over the scope lanes the scope,
/// below them near an out-of-memory mark the mark, else the painted pixels.
pub fn over(overlay: Option<&labels::Layout>, x: f64, y: f64) -> Over {
    let Some(overlay) = overlay else {
        return Over::Plot;
    };
    if let Some(scope) = overlay.scope_at(x, y) {
        return Over::Scope(scope.index);
    }
    let oom = (y >= overlay.scope_band())
        .then(|| overlay.oom_at(x, OOM_REACH))
        .flatten();
    oom.map_or(Over::Plot, Over::Oom)
}

/// The out-of-memory mark a click at `x` pins, if any (at any height).
pub fn clicked_oom(overlay: Option<&labels::Layout>, x: f64) -> Option<usize> {
    overlay.and_then(|overlay| overlay.oom_at(x, OOM_REACH))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLOT: (f64, f64) = (1000.0, 200.0);
    const FULL: XRange = XRange {
        x0: 0.0,
        x1: 1000.0,
    };

    fn bytes(min: f64, max: f64) -> YRange {
        YRange::new(min, max)
    }

    fn press(at: (f64, f64), shift: bool, y: Option<YRange>) -> Drag {
        let x = XRange::new(100.0, 300.0);
        Drag::press(at, shift, x, y, bytes(0.0, 2000.0))
    }

    #[test]
    fn a_press_is_a_click_until_it_moves_past_the_slop() {
        let mut drag = press((500.0, 100.0), false, None);
        assert_eq!(drag.kind, DragKind::Pan);
        assert_eq!(drag.move_to((503.0, 97.0), PLOT), None);
        assert_eq!(drag.release((503.0, 97.0)), Release::Click(503.0, 97.0));

        let mut drag = press((500.0, 100.0), false, None);
        assert!(drag.move_to((505.0, 100.0), PLOT).is_some());
        // Back within the slop, it is still a drag.
        assert!(drag.move_to((501.0, 100.0), PLOT).is_some());
        assert_eq!(drag.release((501.0, 100.0)), Release::Done);
    }

    #[test]
    fn a_drag_pans_the_view_it_started_from_and_zoomed_bytes_with_it() {
        let mut drag = press((500.0, 100.0), false, None);
        // Half the plot to the left: the view moves half its span right.
        assert_eq!(
            drag.move_to((0.0, 100.0), PLOT),
            Some(DragStep::Pan {
                x: XRange::new(200.0, 400.0),
                y: None,
            })
        );
        let mut drag = press((500.0, 100.0), false, Some(bytes(1000.0, 2000.0)));
        assert_eq!(
            drag.move_to((500.0, 200.0), PLOT),
            Some(DragStep::Pan {
                x: XRange::new(100.0, 300.0),
                y: Some(bytes(1500.0, 2500.0)),
            })
        );
    }

    #[test]
    fn a_drag_along_the_byte_axis_zooms_the_bytes_around_where_it_started() {
        let mut drag = press((20.0, 100.0), false, None);
        assert_eq!(drag.kind, DragKind::YAxis);
        // Up zooms in, around the middle of the fitted bytes painted.
        let Some(DragStep::ZoomY(y)) = drag.move_to((20.0, 0.0), PLOT) else {
            panic!("a zoom of the bytes");
        };
        assert!(y.span() < 2000.0);
        assert!(((y.min + y.max) / 2.0 - 1000.0).abs() < 1e-6);
    }

    #[test]
    fn a_shift_drag_draws_a_box_and_zooms_into_it_a_shift_click_picks_the_moment() {
        let mut drag = press((500.0, 150.0), true, None);
        assert_eq!(drag.kind, DragKind::Box);
        assert_eq!(
            drag.move_to((400.0, 50.0), PLOT),
            Some(DragStep::Box(ZoomBox {
                left: 400.0,
                top: 50.0,
                width: 100.0,
                height: 100.0,
            }))
        );
        assert_eq!(
            drag.release((400.0, 50.0)),
            Release::ZoomToBox {
                from: (500.0, 150.0),
                to: (400.0, 50.0),
            }
        );
        let drag = press((500.0, 150.0), true, None);
        assert_eq!(
            drag.release((501.0, 150.0)),
            Release::PickMoment(501.0, 150.0)
        );
    }

    #[test]
    fn a_box_shows_its_extent_and_never_narrower_than_the_narrowest_view() {
        let size = (1000.0, 200.0, 2.0);
        let (x, y) = box_view(
            (500.0, 150.0),
            (250.0, 50.0),
            size,
            FULL,
            bytes(0.0, 2000.0),
            4.0,
        );
        assert_eq!(x, XRange::new(250.0, 500.0));
        assert_eq!(y, bytes(500.0, 1500.0));
        // A sliver: the narrowest view around its middle.
        let (x, _) = box_view(
            (500.0, 0.0),
            (501.0, 200.0),
            size,
            FULL,
            bytes(0.0, 2000.0),
            4.0,
        );
        assert_eq!(x, XRange::new(498.5, 502.5));
    }

    fn turn(delta: (f64, f64), delta_mode: u32, shift: bool, ctrl: bool) -> WheelTurn {
        WheelTurn {
            delta,
            delta_mode,
            at: (250.0, 50.0),
            shift,
            ctrl,
        }
    }

    #[test]
    fn the_wheel_zooms_around_the_pointer_pans_sideways_and_zooms_bytes_with_shift() {
        let Wheel::Zoom { fraction, factor } = wheel(turn((0.0, 100.0), 0, false, false), PLOT)
        else {
            panic!("a zoom");
        };
        assert_eq!(fraction, 0.25);
        assert!((factor - 0.2f64.exp()).abs() < 1e-12, "out");
        // Lines count 16 pixels; a pinch (Ctrl) is five times as fast.
        let lines = wheel(turn((0.0, -1.0), 1, false, false), PLOT);
        let pinch = wheel(turn((0.0, -16.0), 0, false, true), PLOT);
        let (Wheel::Zoom { factor: a, .. }, Wheel::Zoom { factor: b, .. }) = (lines, pinch) else {
            panic!("zooms");
        };
        assert!((a - (-0.032f64).exp()).abs() < 1e-12);
        assert!((b - (-0.16f64).exp()).abs() < 1e-12);
        assert_eq!(
            wheel(turn((100.0, 10.0), 0, false, false), PLOT),
            Wheel::Pan(0.1)
        );
        // Shift: the bytes, around the pointer's height from the bottom, even when the
        // browser turned the wheel sideways.
        let Wheel::ZoomY { fraction, .. } = wheel(turn((100.0, 0.0), 0, true, false), PLOT) else {
            panic!("a zoom of the bytes");
        };
        assert_eq!(fraction, 0.75);
    }

    fn keyed(key: &str) -> KeyPress<'_> {
        KeyPress {
            key,
            ..KeyPress::default()
        }
    }

    #[test]
    fn keys_navigate_unless_typed_into_a_field_or_held_with_ctrl() {
        assert_eq!(key(keyed("w")), Some(Key::Zoom(0.8)));
        assert_eq!(key(keyed("-")), Some(Key::Zoom(1.25)));
        assert_eq!(key(keyed("ArrowLeft")), Some(Key::Pan(-0.1)));
        assert_eq!(key(keyed("ArrowUp")), Some(Key::PanY(0.1)));
        assert_eq!(key(keyed("0")), Some(Key::Reset));
        assert_eq!(key(keyed("?")), Some(Key::ToggleHelp));
        assert_eq!(key(keyed("x")), None);
        let shifted = |key| KeyPress {
            shift: true,
            ..keyed(key)
        };
        assert_eq!(super::key(shifted("W")), Some(Key::ZoomY(0.8)));
        assert_eq!(super::key(shifted("S")), Some(Key::ZoomY(1.25)));
        // Caps Lock: a capital without Shift zooms the trace.
        assert_eq!(key(keyed("W")), Some(Key::Zoom(0.8)));

        let typing = |key| KeyPress {
            typing: true,
            ..keyed(key)
        };
        assert_eq!(super::key(typing("w")), None);
        assert_eq!(super::key(typing("Escape")), Some(Key::Unpin));
        let ctrl = |key| KeyPress {
            ctrl_or_meta: true,
            ..keyed(key)
        };
        assert_eq!(super::key(ctrl("w")), None);
        assert_eq!(
            super::key(KeyPress {
                typing: true,
                ..ctrl("F")
            }),
            Some(Key::FocusSearch)
        );
        let alt = KeyPress {
            alt: true,
            ..keyed("w")
        };
        assert_eq!(key(alt), None);
    }

    #[test]
    fn the_bar_under_the_plot_resizes_it_within_bounds() {
        let resize = PlotResize::press(400.0, 368.0, 800.0);
        assert_eq!(resize.share_at(400.0, 800.0), 0.46);
        assert_eq!(resize.share_at(480.0, 800.0), 0.56);
        assert_eq!(resize.share_at(0.0, 800.0), PLOT_SHARE_RANGE.0);
        assert_eq!(resize.share_at(2000.0, 800.0), PLOT_SHARE_RANGE.1);
    }

    #[test]
    fn a_press_on_the_minimap_grabs_an_edge_the_window_or_moves_it_there() {
        // The window shows 100..300 of 0..1000 on a minimap 500 pixels wide: 50..150 px.
        let range = XRange::new(100.0, 300.0);
        assert_eq!(Grab::press(52.0, 500.0, FULL, range), (Grab::Left, None));
        assert_eq!(Grab::press(146.0, 500.0, FULL, range), (Grab::Right, None));
        assert_eq!(
            Grab::press(100.0, 500.0, FULL, range),
            (Grab::Move { offset: 100.0 }, None)
        );
        // Elsewhere: the window is centred there, and held by its middle.
        assert_eq!(
            Grab::press(400.0, 500.0, FULL, range),
            (
                Grab::Move { offset: 100.0 },
                Some(XRange::new(700.0, 900.0))
            )
        );
    }

    #[test]
    fn a_drag_on_the_minimap_moves_or_resizes_the_window_never_too_narrow() {
        let range = XRange::new(100.0, 300.0);
        let moved = Grab::Move { offset: 50.0 }.drag_to(500.0, range, 4.0);
        assert_eq!(moved, Some(XRange::new(450.0, 650.0)));
        assert_eq!(
            Grab::Left.drag_to(50.0, range, 4.0),
            Some(XRange::new(50.0, 300.0))
        );
        assert_eq!(
            Grab::Left.drag_to(299.0, range, 4.0),
            Some(XRange::new(296.0, 300.0))
        );
        assert_eq!(
            Grab::Right.drag_to(90.0, range, 4.0),
            Some(XRange::new(100.0, 104.0))
        );
        assert_eq!(Grab::None.drag_to(500.0, range, 4.0), None);
        assert_eq!(minimap_x(250.0, 500.0, FULL), 500.0);
        assert_eq!(minimap_x(-10.0, 500.0, FULL), 0.0);
    }

    #[test]
    fn the_pointer_is_over_a_scope_then_an_out_of_memory_mark_then_the_plot() {
        let overlay = labels::Layout {
            scopes: vec![labels::ScopeBand {
                index: 2,
                lane: 0,
                x0: 0.0,
                x1: 400.0,
            }],
            ooms: vec![(0, 300.0), (1, 600.0)],
            ..labels::Layout::default()
        };
        let band = overlay.scope_band();
        assert_eq!(over(Some(&overlay), 300.0, band / 2.0), Over::Scope(2));
        assert_eq!(over(Some(&overlay), 303.0, band + 10.0), Over::Oom(0));
        // Over the lanes but not a scope: an out-of-memory mark is hovered only below them.
        assert_eq!(over(Some(&overlay), 600.0, band / 2.0), Over::Plot);
        assert_eq!(over(Some(&overlay), 450.0, band + 10.0), Over::Plot);
        assert_eq!(over(None, 300.0, 0.0), Over::Plot);
        // A click pins a mark at any height.
        assert_eq!(clicked_oom(Some(&overlay), 598.0), Some(1));
        assert_eq!(clicked_oom(Some(&overlay), 500.0), None);
    }
}
