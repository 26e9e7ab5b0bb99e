//! The visible x range of a timeline and how navigation moves it: zoom around a point, pan,
//! reset, centre on an element. Pure arithmetic, unit-tested natively.
//!
//! Ranges are in the axis' units (events or microseconds) and always stay inside the whole
//! trace, never narrower than [`MIN_SPAN_EVENTS`] states' worth.

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
}
