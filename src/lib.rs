//! memsight: decode PyTorch CUDA memory snapshots into one compact model and analyse them.
//!
//! The crate is split so that everything except the user interface is pure Rust with no
//! browser dependency, tested natively:
//! - [`decode`] turns bytes (pickle, gzip, JSON) into a [`model::Snapshot`];
//! - [`model`] is the in-memory model every view is built on;
//! - [`analysis`] derives facts from the model (pairing, curves, peaks, overview);
//! - `ui` and `worker` (wasm32 only) are the Leptos app and its Web Worker.

pub mod analysis;
pub mod decode;
pub mod model;
pub mod protocol;

#[cfg(target_arch = "wasm32")]
pub mod ui;
#[cfg(target_arch = "wasm32")]
pub mod worker;
