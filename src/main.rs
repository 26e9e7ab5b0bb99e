//! memsight's page: the Leptos app, built for the browser by Trunk (`index.html`).
//!
//! The app itself lives in `memsight::ui`; this binary only starts it. Natively (for
//! `cargo test`) `main` is an empty stub, and the test build compiles the UI's and the worker's
//! pure modules so their unit tests run without a browser.

#[cfg(target_arch = "wasm32")]
fn main() {
    memsight::ui::start();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {}

// `memsight::ui` and `memsight::worker` are wasm32-only in the library. Their browser-free
// modules are compiled here as well, natively, so `cargo test` runs their unit tests. The
// re-exports let those modules name the library as `crate::…` in both builds.
#[cfg(all(test, not(target_arch = "wasm32")))]
use memsight::{analysis, decode, model, protocol};

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(dead_code)]
mod ui {
    pub mod format;
    pub mod state;
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(dead_code)]
mod worker {
    pub mod reader;
    pub mod session;
}
