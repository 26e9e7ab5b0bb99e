//! memsight's page: the Leptos app (`src/ui/`), built for the browser by Trunk (`index.html`).
//!
//! The UI lives in this binary, not in the library, so the worker binary does not link it.
//! Natively (for `cargo test`) `main` is an empty stub and only the UI's pure logic (the page
//! state, the table of pending requests, timeline navigation) is compiled, so its unit tests
//! run without a browser.

// The UI names the core's modules as `crate::…`.
#[allow(unused_imports)]
use memsight_core::{
    analysis, breakdown, compare, export, format, model, overview, phases, protocol, service,
    table, timeline,
};

#[cfg(target_arch = "wasm32")]
mod ui;

#[cfg(target_arch = "wasm32")]
fn main() {
    ui::start();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(dead_code)]
mod ui {
    pub mod link;
    pub mod page_query;
    pub mod requests;
    pub mod state;
    pub mod timeline {
        pub mod detail;
        pub mod folding;
        pub mod labels;
        pub mod plot_size;
        pub mod range;
    }
}
