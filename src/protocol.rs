//! Messages between the page and the decoding worker.
//!
//! One worker owns one snapshot: it decodes the file, keeps the model, and answers requests
//! for views of it. The page never holds the model, only what a view needs to draw. Messages
//! are plain serde types (sent as JSON text) so the protocol is testable natively and can grow
//! new requests (tables, timeline tiles, comparisons) without changing the transport.
//! This module is not the transport itself: that lives in `worker` and `ui`.

use serde::{Deserialize, Serialize};

use crate::analysis::overview::Overview;

/// What the page asks a worker to do.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// Decode the `File` sent alongside this message (as the second element of the message).
    Load { name: String, size: u64 },
    /// The overview of one device of the loaded snapshot.
    Overview { device: u32 },
}

/// What a worker answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Response {
    /// Bytes of the file read so far.
    Progress {
        bytes_read: u64,
        total: u64,
    },
    /// The file decoded; views may now be requested.
    Loaded(LoadedSummary),
    /// The file could not be decoded; nothing was kept.
    Failed(ErrorReport),
    Overview(Overview),
}

/// Facts about a freshly decoded snapshot that the page needs before asking for any view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadedSummary {
    /// Device indices present in the snapshot, ascending.
    pub devices: Vec<u32>,
    /// The device to show first: the one with the most trace entries, then the most segments.
    pub default_device: u32,
    /// Bytes of the input file (compressed size for gzip input).
    pub file_bytes: u64,
    /// Milliseconds from the start of reading to the analysed model, measured in the worker.
    pub decode_ms: f64,
    /// Of `decode_ms`, milliseconds spent waiting for the file's bytes.
    #[serde(default)]
    pub read_ms: f64,
    /// Of `decode_ms`, milliseconds spent deriving facts (pairing, curves, peaks).
    #[serde(default)]
    pub analyse_ms: f64,
}

/// A decoding failure as shown to the user.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorReport {
    /// What is wrong, in one sentence.
    pub message: String,
    /// Byte offset in the (decompressed) input where the problem was found, when known.
    pub offset: Option<u64>,
    /// What the file probably is, or what to do about it.
    pub hint: Option<String>,
}
