//! memsight's web app: the page ([`ui`], started by the `page` binary, `src/main.rs`) and the
//! Web Worker that owns one snapshot file ([`worker`], started by the `worker` binary,
//! `src/bin/worker.rs`).
//!
//! Everything that decodes, analyses or draws is in `memsight-core` (`crates/core`), pure and
//! tested natively; this package only carries messages between the page and its workers and
//! shows what the core computes.
//!
//! The page is one module tree, [`ui`]: its pure modules are compiled everywhere and
//! unit-tested natively, its browser parts (Leptos, web-sys) only for wasm32 and only with the
//! `page` feature, which the page's build has and the worker's has not. A binary that links
//! Leptos keeps exports of Leptos' own whether it calls them or not, so the worker's build
//! leaves the page out rather than count on the linker to drop it.

// The page names the core's modules as `crate::…` (natively only its pure modules are
// compiled, which name a few of them; the worker names none).
#[cfg_attr(
    not(all(target_arch = "wasm32", feature = "page")),
    allow(unused_imports)
)]
use memsight_core::{
    analysis, breakdown, compare, decode, export, format, model, overview, phases, protocol,
    session, table, timeline,
};

#[cfg(any(feature = "page", not(target_arch = "wasm32")))]
pub mod ui;
pub mod worker;
