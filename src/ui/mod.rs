//! The page: a Leptos (client-side rendered) app that opens snapshot files, hands each one to
//! its own Web Worker, and shows what the workers answer.
//!
//! Layout of this module, one component per file:
//! - [`state`]: the page state and its state machine (pure, natively tested);
//! - [`format`]: human units (pure, natively tested);
//! - `actions`: carries out what the state machine asks (workers, performance marks);
//! - `workers`: the page side of the worker transport;
//! - `app` and the components it is built from (`toolbar`, `file_list`, `file_view`,
//!   `load_progress`, `error_report`, `snapshot_view`, `device_picker`, `metric_groups`,
//!   `allocator_settings`, `warnings`, `welcome`, `drop_overlay`);
//! - `panic_banner`: shows a Rust panic instead of a dead page.
//!
//! State lives in signals created by `App` and passed down; nothing here is global. File data
//! is only ever rendered as text nodes, never as HTML.

pub use memsight_core::format;
pub mod state;

mod actions;
mod allocator_settings;
mod app;
mod device_picker;
mod drop_overlay;
mod error_report;
mod file_list;
mod file_view;
mod load_progress;
mod metric_groups;
mod panic_banner;
mod perf;
mod snapshot_view;
mod timeline;
mod toolbar;
mod warnings;
mod welcome;
mod workers;

/// Entry point of the page binary (`src/main.rs`): installs the panic hook and mounts the app.
pub fn start() {
    panic_banner::install_hook();
    leptos::mount::mount_to_body(app::App);
}
