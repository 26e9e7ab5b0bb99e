//! The page: a Leptos (client-side rendered) app that opens snapshot files, hands each one to
//! its own Web Worker, and shows what the workers answer.
//!
//! Layout of this module, one component per file:
//! - [`state`]: the page state and its state machine (pure, natively tested);
//! - [`requests`]: the table of requests in flight to each worker, and "latest wins" (pure,
//!   natively tested);
//! - `actions`: what the user can do, and carrying out what the state machine asks;
//! - `workers`: the page side of the worker transport (one table of pending requests each);
//! - `app` and the components it is built from (`toolbar`, `file_list`, `file_view`,
//!   `load_progress`, `error_report`, `snapshot_view`, `device_picker`, `welcome`,
//!   `drop_overlay`);
//! - one folder per view: `overview`, `timeline`, `breakdown` (where the memory went: charts,
//!   the estimate, findings, rules, the report), `table`, `allocator`; `files` (the files side
//!   by side, and the digests asked of many workers) and `compare` (two files compared); `phases` (the phase report); `categories`: what they share about
//!   categories (the rules, the picked moment, the highlighted category); `charts`: drawing
//!   charts on a canvas (plotters);
//! - `segmented`: one button of a segmented group, bound to a signal;
//! - `near_screen`: when an element first comes near the screen (charts below the fold are
//!   drawn then);
//! - `theme`: the system's light or dark theme, followed live, for the canvases;
//! - `rehearsal`: a first load rehearsed off screen once the page starts, so a user's first
//!   file does not pay for compiling the views;
//! - `panic_banner`: shows a Rust panic instead of a dead page.
//!
//! State lives in signals created by `App` and passed down; nothing here is global. File data
//! is only ever rendered as text nodes, never as HTML.

pub mod link;
pub mod requests;
pub mod state;

mod actions;
mod allocator;
mod app;
mod breakdown;
mod categories;
mod charts;
mod compare;
mod debounce;
mod deep_link;
mod device_picker;
mod drop_overlay;
mod embed;
mod error_report;
mod file_list;
mod file_view;
mod files;
mod load_progress;
mod moment_notice;
mod near_screen;
mod overview;
mod page_query;
mod panic_banner;
mod perf;
mod phases;
mod rehearsal;
mod remote;
mod segmented;
mod snapshot_view;
mod table;
mod theme;
mod timeline;
mod toolbar;
mod view_asker;
mod welcome;
mod workers;

/// Entry point of the page binary (`src/main.rs`): installs the panic hook and mounts the app.
pub fn start() {
    panic_banner::install_hook();
    leptos::mount::mount_to_body(app::App);
}
