//! memsight's core: decode PyTorch CUDA memory snapshots into one compact model, analyse them,
//! and answer every view's requests.
//!
//! Pure Rust with no browser dependency, tested natively; the web app (page and worker) and
//! the command line are thin layers over it.
//! - [`decode`] turns bytes (pickle, gzip, JSON) into a [`model::Snapshot`], the one model
//!   every view is built on ([`model`]);
//! - [`analysis`] derives the facts many views share: the replay of each trace (pairing,
//!   curves, peaks), stack analysis, typed warnings;
//! - one module per feature, each with its computation and its [`service`]:
//!   [`overview`], [`timeline`], [`breakdown`], [`table`], [`compare`] (files side by side), [`phases`] (the phase report);
//! - [`session`] holds one loaded file and routes the [`protocol`]'s requests to the services;
//! - [`format`] turns numbers and typed facts into words and human units for the page and the
//!   command line alike.

pub mod analysis;
pub mod breakdown;
pub mod compare;
pub mod decode;
pub mod export;
pub mod format;
pub mod model;
pub mod overview;
pub mod phases;
pub mod protocol;
pub mod service;
pub mod session;
pub mod table;
pub mod timeline;
