//! Which rows of a long list are laid out (the files table of a job's thousand ranks): those
//! in the scroll box's view and a margin either side, with the height of the rows left out
//! above and below, so a thousand rows cost the page a few dozen and the scroll bar still
//! measures them all. A list of fewer than [`WINDOWED_FROM`] rows is laid out whole.
//!
//! Pure arithmetic, tested natively; the rows' fixed height is the stylesheet's
//! (`.windowed` boxes). Not the place for what a row shows.

use std::ops::Range;

/// Tables of this many rows or more are windowed.
pub const WINDOWED_FROM: usize = 200;

/// CSS pixels of a row of a windowed table (the stylesheet fixes it).
pub const ROW_HEIGHT: f64 = 30.0;

/// Rows laid out beyond each edge of the view, so a scroll shows rows already there.
const MARGIN_ROWS: usize = 20;

/// The view's height assumed before the scroll box is measured.
pub const FIRST_VIEW_HEIGHT: f64 = 600.0;

/// The rows laid out and the space standing for the others.
#[derive(Clone, Debug, PartialEq)]
pub struct RowWindow {
    pub rows: Range<usize>,
    /// CSS pixels of the rows above `rows`.
    pub above: f64,
    /// CSS pixels of the rows below `rows`.
    pub below: f64,
}

/// The window of `total` rows for a scroll box scrolled `scroll_top` pixels down and
/// `view_height` tall.
pub fn row_window(total: usize, scroll_top: f64, view_height: f64) -> RowWindow {
    if total < WINDOWED_FROM {
        return RowWindow {
            rows: 0..total,
            above: 0.0,
            below: 0.0,
        };
    }
    let first_seen = (scroll_top.max(0.0) / ROW_HEIGHT).floor() as usize;
    let seen = (view_height.max(0.0) / ROW_HEIGHT).ceil() as usize + 1;
    let end = first_seen
        .saturating_add(seen)
        .saturating_add(MARGIN_ROWS)
        .min(total);
    let first = first_seen.saturating_sub(MARGIN_ROWS).min(end);
    RowWindow {
        rows: first..end,
        above: first as f64 * ROW_HEIGHT,
        below: (total - end) as f64 * ROW_HEIGHT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_table_is_laid_out_whole() {
        let w = row_window(WINDOWED_FROM - 1, 5000.0, 300.0);
        assert_eq!(w.rows, 0..WINDOWED_FROM - 1);
        assert_eq!((w.above, w.below), (0.0, 0.0));
    }

    #[test]
    fn a_long_table_lays_out_the_rows_in_view_and_a_margin() {
        let top = row_window(1000, 0.0, 300.0);
        assert_eq!(top.rows, 0..11 + MARGIN_ROWS);
        assert_eq!(top.above, 0.0);
        assert_eq!(top.below, (1000 - top.rows.end) as f64 * ROW_HEIGHT);

        // Scrolled to row 500: rows 480.. are laid out, and every row's height is kept.
        let middle = row_window(1000, 500.0 * ROW_HEIGHT, 300.0);
        assert_eq!(middle.rows.start, 500 - MARGIN_ROWS);
        assert!(middle.rows.contains(&510));
        let laid_out = middle.rows.len() as f64 * ROW_HEIGHT;
        assert_eq!(middle.above + laid_out + middle.below, 1000.0 * ROW_HEIGHT);
    }

    #[test]
    fn the_end_and_beyond_show_the_last_rows() {
        let end = row_window(1000, 1000.0 * ROW_HEIGHT - 300.0, 300.0);
        assert_eq!(end.rows.end, 1000);
        assert_eq!(end.below, 0.0);
        // A scroll position from before the table shrank.
        let beyond = row_window(300, 1e6, 300.0);
        assert_eq!(beyond.rows, 300..300);
        assert_eq!(beyond.above, 300.0 * ROW_HEIGHT);
    }
}
