//! memsight's web app: the page (the `page` binary, `src/main.rs` and `src/ui/`) and the Web
//! Worker that owns one snapshot file (the `worker` binary, `src/bin/worker.rs` and
//! [`worker`]).
//!
//! Everything that decodes, analyses or draws is in `memsight-core` (`crates/core`), pure and
//! tested natively; this package only carries messages between the page and its workers and
//! shows what the core computes.

pub mod worker;
