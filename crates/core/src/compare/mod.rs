//! Beyond one file: what a device of a file comes to at its peak, in a form small enough to
//! set beside other files' — a [`digest::Digest`] — and what sets them side by side: the
//! comparison of two digests ([`diff`]), the rows of the files table ([`files`]) and the
//! ranks and iterations a job's files are named after ([`ranks`]); a snapshot's digests as a
//! versioned file of its own ([`digest_file`]); the limits CI holds them to ([`budget`]).
//!
//! A digest is made where the file is (its worker, or the command line's process) and is
//! compared anywhere: the page compares two files held by two workers without moving either
//! file's model. Keys are frame text, not ids, so that they mean the same in two files.
//! Not the place for words or units ([`crate::format::compare`]) or for drawing.

pub mod budget;
pub mod diff;
pub mod digest;
pub mod digest_file;
pub mod files;
pub mod overlay;
pub mod ranks;
pub mod service;

pub use diff::{compare, Change, Comparison, KeyedDelta, MetricDelta};
pub use digest::{Digest, Keyed, NormalisedCurve};
