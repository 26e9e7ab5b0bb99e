//! User Timing marks (`performance.mark`) around every load, so benchmarks can read
//! file→decoded and file→first-paint times with the User Timing API.
//!
//! Only sets marks; what to mark and when is decided by `state`.

/// `performance.mark(name)` now.
pub fn mark(name: &str) {
    if let Some(performance) = web_sys::window().and_then(|w| w.performance()) {
        let _ = performance.mark(name);
    }
}

/// `performance.mark(name)` in the next animation frame, i.e. after the reactive DOM updates
/// queued by the current state change have been applied.
pub fn mark_after_render(name: &'static str) {
    leptos::prelude::request_animation_frame(move || mark(name));
}
