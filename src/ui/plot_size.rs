//! The plot's size: its width as the page lays it out, its height a share of the window's.
//! Also what the page has learnt of its own layout, the plot's width at a window size
//! ([`PlotWidths`]), so a new timeline asks for its first frame at once instead of forcing
//! the page to lay out the views it has just built to measure them (which took 10–17 ms of
//! a small file's load, before its first frame was even asked for). The rehearsal of a first
//! load (`startup::rehearsal`) lays a plot out before any file is opened. Pure, unit-tested
//! natively; not the place for measuring (the plot's `measure` in `timeline/plot.rs`).

/// The plot's height is kept within these CSS pixels.
pub const PLOT_HEIGHT_RANGE: (f64, f64) = (180.0, 1400.0);

/// The window's inner size in CSS pixels and its device pixel ratio: what the plot's size
/// follows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    pub width: f64,
    pub height: f64,
    pub pixel_ratio: f64,
}

impl Window {
    /// The window's size now (reading it does not lay the page out).
    #[cfg(target_arch = "wasm32")]
    pub fn now() -> Option<Window> {
        let window = web_sys::window()?;
        let number = |v: Result<wasm_bindgen::JsValue, _>| v.ok().and_then(|v| v.as_f64());
        Some(Window {
            width: number(window.inner_width())?,
            height: number(window.inner_height())?,
            pixel_ratio: window.device_pixel_ratio().max(1.0),
        })
    }

    /// The plot's size in CSS pixels and the pixel ratio, for a plot `width` wide that takes
    /// `share` of this window's height.
    pub fn plot_size(&self, width: f64, share: f64) -> (f64, f64, f64) {
        let (low, high) = PLOT_HEIGHT_RANGE;
        let height = (self.height * share).round().clamp(low, high);
        (width, height, self.pixel_ratio)
    }
}

/// A plot's size in device pixels, and its reserved line's thickness, for its size in CSS
/// pixels and the pixel ratio: what a frame is asked for at.
pub fn device_pixels((width, height, pixel_ratio): (f64, f64, f64)) -> (u32, u32, u32) {
    let pixels = |v: f64| (v * pixel_ratio).round().max(1.0) as u32;
    (pixels(width), pixels(height), pixels(2.0))
}

/// The plot's width last laid out, and the window it was laid out in.
#[derive(Clone, Copy, Debug, Default)]
pub struct PlotWidths {
    last: Option<(Window, f64)>,
}

impl PlotWidths {
    /// A plot was laid out `width` CSS pixels wide in `window`.
    pub fn remember(&mut self, window: Window, width: f64) {
        if width > 0.0 {
            self.last = Some((window, width));
        }
    }

    /// The width a plot laid out in `window` is expected to have: the last one seen in a
    /// window of that size, none for another size.
    pub fn expected(&self, window: Window) -> Option<f64> {
        self.last
            .filter(|(seen, _)| *seen == window)
            .map(|(_, width)| width)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAPTOP: Window = Window {
        width: 1280.0,
        height: 720.0,
        pixel_ratio: 1.0,
    };

    #[test]
    fn a_width_is_expected_only_in_a_window_of_the_size_it_was_seen_in() {
        let mut widths = PlotWidths::default();
        assert_eq!(widths.expected(LAPTOP), None);
        widths.remember(LAPTOP, 900.0);
        assert_eq!(widths.expected(LAPTOP), Some(900.0));
        let narrower = Window {
            width: 1000.0,
            ..LAPTOP
        };
        assert_eq!(widths.expected(narrower), None);
        let sharper = Window {
            pixel_ratio: 2.0,
            ..LAPTOP
        };
        assert_eq!(widths.expected(sharper), None);
        // A plot not laid out (zero wide, its view hidden) teaches nothing.
        widths.remember(narrower, 0.0);
        assert_eq!(widths.expected(LAPTOP), Some(900.0));
    }

    #[test]
    fn frames_are_asked_in_device_pixels() {
        assert_eq!(device_pixels((559.0, 331.0, 1.0)), (559, 331, 2));
        assert_eq!(device_pixels((559.0, 331.0, 1.5)), (839, 497, 3));
        assert_eq!(device_pixels((0.2, 0.2, 1.0)), (1, 1, 2));
    }

    #[test]
    fn the_height_is_a_share_of_the_window_within_bounds() {
        assert_eq!(LAPTOP.plot_size(900.0, 0.46), (900.0, 331.0, 1.0));
        assert_eq!(LAPTOP.plot_size(900.0, 0.1).1, PLOT_HEIGHT_RANGE.0);
        let tall = Window {
            height: 4000.0,
            ..LAPTOP
        };
        assert_eq!(tall.plot_size(900.0, 0.9).1, PLOT_HEIGHT_RANGE.1);
    }
}
