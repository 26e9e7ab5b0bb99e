//! The plot's share of the window's height: the one the user chose by dragging the bar under
//! the plot, remembered in the browser, or the default. Read by the timeline and by the page's
//! actions (the size of a first frame painted with the file). Not the place for the plot's
//! size in pixels (`plot_size`).

/// The plot's share of the window's height, unless the user resized it.
pub const DEFAULT_PLOT_SHARE: f64 = 0.46;
/// Where the user's plot share is remembered.
const PLOT_SHARE_KEY: &str = "memsight:plot-share";

/// The plot share the user chose last time, if any.
pub fn stored_plot_share() -> f64 {
    crate::ui::kept::get::<f64>(PLOT_SHARE_KEY)
        .filter(|s| (0.1..=0.95).contains(s))
        .unwrap_or(DEFAULT_PLOT_SHARE)
}

/// Remembers the plot share the user chose.
pub fn store_plot_share(share: f64) {
    crate::ui::kept::set(PLOT_SHARE_KEY, &share);
}
