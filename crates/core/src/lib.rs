//! memsight's core: decode PyTorch CUDA memory snapshots into one compact model and analyse
//! them.
//!
//! Pure Rust with no browser dependency, tested natively; the page, its worker and the
//! command line are thin layers over it.
//! - [`decode`] turns bytes (pickle, gzip, JSON) into a [`model::Snapshot`];
//! - [`model`] is the in-memory model every view is built on;
//! - [`analysis`] derives facts from the model (pairing, curves, peaks, overview);
//! - [`timeline`] lays out and paints the memory timeline;
//! - [`format`] writes numbers for people (binary units, durations);
//! - [`protocol`] and [`engine`] are the page↔worker messages and what answers them.

pub mod analysis;
pub mod decode;
pub mod engine;
pub mod format;
pub mod model;
pub mod protocol;
pub mod timeline;
