//! memsight: decode PyTorch CUDA memory snapshots into one compact model and analyse them.
//!
//! The crate is split so that everything except the user interface is pure Rust with no
//! browser dependency, tested natively:
//! - [`decode`] turns bytes (pickle, gzip, JSON) into a [`model::Snapshot`];
//! - [`model`] is the in-memory model every view is built on;
//! - [`analysis`] derives facts from the model (pairing, curves, peaks, overview);
//! - [`format`] writes numbers for people (binary units, durations);
//! - [`protocol`] and [`worker`] are the page↔worker messages and the worker's logic (its
//!   browser transport is wasm32-only); the Leptos page itself is in the `memsight` binary
//!   (`src/main.rs`, `src/ui/`), so the worker does not link the UI.

pub mod analysis;
pub mod decode;
pub mod format;
pub mod model;
pub mod protocol;
pub mod timeline;
pub mod worker;
