//! The page: a Leptos (client-side rendered) app that opens snapshot files, hands each one to
//! its own Web Worker, and shows what the workers answer.
//!
//! A module of the library (`src/lib.rs`), started by the `page` binary (`src/main.rs`). Its
//! browser parts (Leptos components, web-sys) are compiled for wasm32 only; its pure modules
//! are compiled everywhere and unit-tested natively, so a pure module declared here is tested
//! without a browser. Nothing but their tests uses the pure modules natively.
//!
//! Layout of this module, one component per file:
//! - `state`: the page state and its state machine (pure, natively tested);
//! - `requests`: the table of requests in flight to each worker, and "latest wins" (pure,
//!   natively tested);
//! - `link` (a view as a URL fragment) and `page_query` (the page's own query): pure, natively
//!   tested;
//! - `row_window`: which rows of a long list are laid out (pure, natively tested);
//! - `plot_size` (pure, natively tested) and `plot_share`: the timeline's plot's size, which
//!   the actions also need to ask for a file's first frame;
//! - `actions`: what the user can do, and carrying out what the state machine asks;
//! - `workers`: the page side of the worker transport (one table of pending requests each);
//! - `app` and the components it is built from (`toolbar`, `file_list`, `file_view`,
//!   `load_progress`, `error_report`, `snapshot_view`, `device_picker`, `welcome`,
//!   `drop_overlay`); `opening` (the files opened, sorted into snapshots for workers and
//!   digests read on the page) and `digest_view` (a file of which only the digest is open);
//! - one folder per view: `overview`, `timeline`, `breakdown` (where the memory went: charts,
//!   the estimate, findings, rules, the report), `table`, `allocator`; `files` (the files side
//!   by side) and `compare` (two files compared); `phases` (the phase report); `source` (a
//!   file of the code with the bytes of each line). No view imports another: the shell
//!   (`app`, `file_view`, `snapshot_view`, `embed`, `startup`) composes them, and what two
//!   views share is a widget;
//! - `widgets`: what several views share (the chart card, downloads, a stack, the source
//!   button and listing, the folder of the user's code, digests of many files);
//! - `file_context`: what the views of one file share (the moment picked and the allocation
//!   selected on each device, the highlighted category, what each device's timeline shows, the
//!   rules, the file's part of the address, its asker), provided by `snapshot_view` and read
//!   with `use_file()`; `categories`: each category's label and colour in the page's theme;
//!   `charts`: drawing charts on a canvas (plotters);
//! - `segmented`: one button of a segmented group, bound to a signal;
//! - `near_screen`: when an element first comes near the screen (charts below the fold are
//!   drawn then);
//! - `theme`: the system's light or dark theme, followed live, for the canvases;
//! - `redact_paths`: whether downloads redact the snapshot's paths (remembered, in context);
//! - `kept`: the settings remembered across visits, in memory when the browser refuses
//!   storage;
//! - `startup`: what a page does ahead of need as it starts (`plan`: a worker started ahead,
//!   a first frame painted with the file, a first load rehearsed off screen so a user's first
//!   file does not pay for compiling the views) and the order a file's views mount in
//!   (`stages`), pure and natively tested, with the rehearsal beside them;
//! - `panic_banner`: shows a Rust panic instead of a dead page.
//!
//! State lives in signals created by `App`: the page state and the address are passed down,
//! the actions are provided in context (`use_actions()`) as each file's context is
//! (`use_file()`), so no component takes either as a prop; nothing here is global. File data
//! is only ever rendered as text nodes, never as HTML.

// Natively only the pure modules are compiled, and nothing but their tests uses them.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

/// Declares modules compiled for wasm32 only (with a visibility first, if any: `pub a, b`).
/// Defined before the modules so that the ones with browser parts of their own use it too.
macro_rules! browser_modules {
    ($vis:vis $($name:ident),* $(,)?) => {
        $(
            #[cfg(target_arch = "wasm32")]
            $vis mod $name;
        )*
    };
}

// Pure: compiled everywhere, unit-tested natively.
mod link;
mod page_query;
mod plot_size;
mod requests;
mod row_window;
mod state;
// The start-up's, the timeline's and the widgets' pure modules are compiled everywhere, their
// components for wasm32 only.
mod startup;
mod timeline;
mod widgets;

// The browser's: Leptos components and what they need of web-sys.
browser_modules!(
    actions,
    allocator,
    app,
    breakdown,
    categories,
    charts,
    compare,
    debounce,
    deep_link,
    device_picker,
    digest_view,
    drop_overlay,
    embed,
    error_report,
    file_context,
    file_list,
    file_view,
    kept,
    files,
    load_progress,
    moment_notice,
    near_screen,
    opening,
    overview,
    panic_banner,
    perf,
    phases,
    plot_share,
    redact_paths,
    remote,
    segmented,
    snapshot_view,
    source,
    table,
    theme,
    toolbar,
    welcome,
    workers,
);

/// Starts the page (the `page` binary's `main`): installs the panic hook and mounts the app.
#[cfg(target_arch = "wasm32")]
pub fn start() {
    panic_banner::install_hook();
    leptos::mount::mount_to_body(app::App);
}
