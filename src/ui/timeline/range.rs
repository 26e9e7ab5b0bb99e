//! The visible ranges of a timeline and how navigation moves them: along x, zoom around a
//! point, pan, reset, centre on an element ([`XRange`]); along y, zoom and pan a fixed byte
//! range ([`YRange`]). Pure arithmetic, unit-tested natively.
//!
//! x ranges are in the axis' units (events or microseconds) and always stay inside the whole
//! trace, never narrower than [`MIN_SPAN_EVENTS`] states' worth. y ranges are in bytes, never
//! below 0 nor narrower than [`MIN_SPAN_BYTES`].

/// The narrowest view, as a fraction of one unit per pixel column.
pub const MIN_SPAN_EVENTS: f64 = 4.0;

/// A visible range `[x0, x1)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct XRange {
    pub x0: f64,
    pub x1: f64,
}

impl XRange {
    pub fn new(x0: f64, x1: f64) -> Self {
        XRange { x0, x1 }
    }

    pub fn span(&self) -> f64 {
        self.x1 - self.x0
    }

    /// Zooms by `factor` (< 1 zooms in) keeping the point at `fraction` of the width fixed.
    pub fn zoom(self, fraction: f64, factor: f64, full: XRange, min_span: f64) -> XRange {
        let fraction = fraction.clamp(0.0, 1.0);
        let at = self.x0 + self.span() * fraction;
        let span = (self.span() * factor).clamp(min_span.min(full.span()), full.span());
        let x0 = at - span * fraction;
        XRange::new(x0, x0 + span).clamped(full)
    }

    /// Moves by `fraction` of the visible width (positive moves right).
    pub fn pan(self, fraction: f64, full: XRange) -> XRange {
        let dx = self.span() * fraction;
        XRange::new(self.x0 + dx, self.x1 + dx).clamped(full)
    }

    /// Shifted back inside `full`, keeping the span when it fits.
    pub fn clamped(self, full: XRange) -> XRange {
        let span = self.span().min(full.span()).max(f64::MIN_POSITIVE);
        let x0 = self.x0.clamp(full.x0, full.x1 - span);
        XRange::new(x0, x0 + span)
    }

    /// A window showing `[a, b)` with a margin, keeping the current zoom when `[a, b)` fits.
    pub fn centred_on(self, a: f64, b: f64, full: XRange, min_span: f64) -> XRange {
        let width = (b - a).max(0.0);
        let span = if width * 1.25 <= self.span() {
            self.span()
        } else {
            (width * 1.5).max(min_span)
        };
        let mid = (a + b) / 2.0;
        XRange::new(mid - span / 2.0, mid + span / 2.0).clamped(full)
    }
}

/// The narrowest y range: a few hundred bytes over the whole plot.
pub const MIN_SPAN_BYTES: f64 = 256.0;

/// A fixed range of bytes `[min, max)` along y (a zoomed y axis).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct YRange {
    pub min: f64,
    pub max: f64,
}

impl YRange {
    pub fn new(min: f64, max: f64) -> Self {
        let min = min.max(0.0);
        YRange {
            min,
            max: max.max(min + MIN_SPAN_BYTES),
        }
    }

    pub fn span(&self) -> f64 {
        self.max - self.min
    }

    /// Zooms by `factor` (< 1 zooms in) keeping the byte at `fraction` of the height (from the
    /// bottom) where it is.
    pub fn zoom(self, fraction: f64, factor: f64) -> YRange {
        let fraction = fraction.clamp(0.0, 1.0);
        let at = self.min + self.span() * fraction;
        let span = (self.span() * factor).max(MIN_SPAN_BYTES);
        let min = (at - span * fraction).max(0.0);
        YRange::new(min, min + span)
    }

    /// Moves by `fraction` of the visible height (positive moves up).
    pub fn pan(self, fraction: f64) -> YRange {
        let dy = self.span() * fraction;
        let min = (self.min + dy).max(0.0);
        YRange::new(min, min + self.span())
    }

    /// The range as whole bytes, for a frame request.
    pub fn bytes(&self) -> (u64, u64) {
        (
            self.min.round() as u64,
            self.max.round().max(self.min + 1.0) as u64,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: XRange = XRange {
        x0: 0.0,
        x1: 1000.0,
    };

    #[test]
    fn zoom_keeps_the_point_under_the_cursor() {
        let w = FULL.zoom(0.25, 0.5, FULL, 4.0);
        assert_eq!(w, XRange::new(125.0, 625.0));
        assert!(((250.0 - w.x0) / w.span() - 0.25).abs() < 1e-12);
        // Zooming out never goes past the whole trace.
        assert_eq!(w.zoom(0.5, 10.0, FULL, 4.0), FULL);
        // Nor in past the narrowest view.
        assert_eq!(FULL.zoom(0.0, 1e-9, FULL, 4.0).span(), 4.0);
    }

    #[test]
    fn pan_stops_at_the_ends() {
        let w = XRange::new(100.0, 200.0);
        assert_eq!(w.pan(0.5, FULL), XRange::new(150.0, 250.0));
        assert_eq!(w.pan(-5.0, FULL), XRange::new(0.0, 100.0));
        assert_eq!(w.pan(50.0, FULL), XRange::new(900.0, 1000.0));
    }

    #[test]
    fn centring_keeps_the_zoom_when_the_element_fits() {
        let w = XRange::new(0.0, 100.0);
        assert_eq!(
            w.centred_on(500.0, 520.0, FULL, 4.0),
            XRange::new(460.0, 560.0)
        );
        // Too long for the view: zoom out to show it with a margin.
        assert_eq!(
            w.centred_on(400.0, 600.0, FULL, 4.0),
            XRange::new(350.0, 650.0)
        );
        // Alive to the end of the trace: clamped.
        assert_eq!(
            w.centred_on(990.0, 1000.0, FULL, 4.0),
            XRange::new(900.0, 1000.0)
        );
    }

    #[test]
    fn y_zoom_keeps_the_byte_under_the_cursor_and_stays_above_zero() {
        let y = YRange::new(0.0, 1000.0);
        let z = y.zoom(0.5, 0.5);
        assert_eq!(z, YRange::new(250.0, 750.0));
        // Zooming around the bottom edge keeps 0 at the bottom.
        assert_eq!(y.zoom(0.0, 0.1), YRange::new(0.0, 100.0));
        // Never narrower than the narrowest span, never below zero.
        assert_eq!(y.zoom(0.0, 1e-9).span(), MIN_SPAN_BYTES);
        assert_eq!(YRange::new(-50.0, 10.0), YRange::new(0.0, MIN_SPAN_BYTES));
        assert_eq!(z.bytes(), (250, 750));
    }

    #[test]
    fn y_pan_stops_at_zero() {
        let y = YRange::new(1000.0, 3000.0);
        assert_eq!(y.pan(0.5), YRange::new(2000.0, 4000.0));
        assert_eq!(y.pan(-5.0), YRange::new(0.0, 2000.0));
    }
}
