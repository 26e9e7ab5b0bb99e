//! Decoding: bytes in, [`Snapshot`] out.
//!
//! Detects the container (gzip, by magic bytes) and the encoding (pickle protocols 2–5 or
//! JSON), and hands the stream to the matching importer: the pickle reader, or for JSON the
//! snapshot tree, a Kineto trace ([`kineto`]), a memory timeline ([`memory_timeline`]) or a memory
//! profiler's peak tensors ([`peak_tensors`]),
//! told apart by their content. Importers feed one
//! [`build::Builder`], which owns the snapshot schema; there is never a generic value tree of a
//! whole pickle file. Not here: anything derived from the model (see [`crate::analysis`]).

use std::io::{Cursor, Read};

use crate::model::Snapshot;

pub mod build;
mod error;
mod input;
mod json;
mod kineto;
mod memory_timeline;
mod opcodes;
mod peak_tensors;
mod pickle;
mod profiled;

pub use error::{DecodeError, ErrorReport};
pub use input::Part;
use input::{Counting, Input};

/// What the first bytes of a stream say it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Gzip,
    Pickle,
    Json,
}

/// Decodes a snapshot from any reader, reading it in chunks. `progress` is called with the
/// number of raw input bytes consumed so far (before decompression), at most once per MiB.
pub fn decode_reader<R: Read>(
    reader: R,
    progress: &mut dyn FnMut(u64),
) -> Result<Snapshot, DecodeError> {
    let counting = Counting::new(reader, progress);
    decode_stream(counting)
}

/// Decodes a plain pickle snapshot from its bytes pushed as they arrive, so that reading the
/// next part of a file overlaps with decoding the last one (the page's worker reads the `File`
/// while this decodes). The model is the one [`decode_reader`] builds from the same bytes.
/// Only for plain pickles ([`feeds`]); a compressed or JSON file is decoded from a reader.
pub struct PickleFeed {
    parser: pickle::Resumable,
    pushed: u64,
}

impl PickleFeed {
    pub fn new() -> Self {
        PickleFeed {
            parser: pickle::Resumable::new(),
            pushed: 0,
        }
    }

    /// The file is `bytes` long: once its first trace rows are read, room is made for all the
    /// rows it holds at their size, so the trace is not copied as it grows (a browser's
    /// WebAssembly memory never gives back what such copies took).
    pub fn expect_bytes(&mut self, bytes: u64) {
        self.parser.expect_bytes(bytes);
    }

    /// Decodes as far as the next bytes of the file, `part`, allow.
    pub fn push(&mut self, part: impl Part + 'static) -> Result<(), DecodeError> {
        self.pushed += part.len() as u64;
        self.parser.push(part)
    }

    /// Bytes pushed so far.
    pub fn pushed(&self) -> u64 {
        self.pushed
    }

    /// The file has ended: decodes the rest and returns the snapshot.
    pub fn finish(self) -> Result<Snapshot, DecodeError> {
        if self.pushed == 0 {
            // What any empty file is told.
            return Err(sniff(&[]).expect_err("an empty file is refused"));
        }
        self.parser.finish()
    }
}

impl Default for PickleFeed {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether a file starting with `head` (at least its first 4 bytes, or all of a shorter file)
/// is decoded by a [`PickleFeed`].
pub fn feeds(head: &[u8]) -> bool {
    matches!(sniff(head), Ok(Format::Pickle))
}

/// Decodes a snapshot held in memory.
pub fn decode_bytes(bytes: &[u8]) -> Result<Snapshot, DecodeError> {
    decode_reader(bytes, &mut |_| {})
}

fn decode_stream<R: Read>(reader: R) -> Result<Snapshot, DecodeError> {
    let (head, stream) = read_head(reader)?;
    match sniff(&head)? {
        Format::Gzip => decode_plain(flate2::read::MultiGzDecoder::new(stream)),
        Format::Pickle => pickle::decode(Input::new(stream)),
        Format::Json => json::decode(stream),
    }
}

/// Decodes a decompressed stream (gzip inside gzip is refused).
fn decode_plain<R: Read>(reader: R) -> Result<Snapshot, DecodeError> {
    let (head, stream) = read_head(reader)?;
    match sniff(&head)? {
        Format::Gzip => Err(DecodeError::at(0, "gzip inside gzip")
            .with_hint("decompress the file once and open the result")),
        Format::Pickle => pickle::decode(Input::new(stream)),
        Format::Json => json::decode(stream),
    }
}

/// A stream whose first bytes, already read, are read again.
type Replayed<R> = std::io::Chain<Cursor<Vec<u8>>, R>;

/// Reads the first bytes for [`sniff`] and returns them with a stream that replays them.
fn read_head<R: Read>(mut reader: R) -> Result<(Vec<u8>, Replayed<R>), DecodeError> {
    let mut head = [0u8; 4];
    let mut got = 0;
    while got < head.len() {
        match reader.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(
                    DecodeError::at(got as u64, format!("reading the file failed: {e}"))
                        .with_hint("for a .gz file, the compressed data may be damaged"),
                )
            }
        }
    }
    let head = head[..got].to_vec();
    Ok((head.clone(), Cursor::new(head).chain(reader)))
}

/// What a digest file (`memsight digest`, [`crate::compare::digest_file`]) says it is.
pub const DIGEST_FORMAT: &str = "memsight-digest";

/// Whether `head` (a file's first bytes, up to 64 KiB) begins a digest rather than a
/// snapshot: a JSON object that says `"memsight-digest"` — first of its keys as memsight
/// writes it, later when a tool has sorted them. A snapshot's JSON form does not say so in its
/// first bytes.
pub fn is_digest(head: &[u8]) -> bool {
    let skipped = head.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let marker = format!("\"{DIGEST_FORMAT}\"");
    head.get(skipped) == Some(&b'{') && head.windows(marker.len()).any(|w| w == marker.as_bytes())
}

/// Why a digest cannot be read where a snapshot is: what it holds, and what reads it.
pub fn digest_is_not_a_snapshot() -> DecodeError {
    DecodeError::at(
        0,
        "this is a memsight digest, not a snapshot: it holds each device's numbers at its peak, \
         not the trace",
    )
    .with_hint(
        "`memsight files`, `compare`, `report` and `check` read digests; to see the timeline \
         and the allocations, open the snapshot it was written from",
    )
}

/// Identifies a stream from its first bytes.
pub fn sniff(head: &[u8]) -> Result<Format, DecodeError> {
    match head {
        [] => Err(DecodeError::at(0, "the file is empty")),
        [0x1f, 0x8b, ..] => Ok(Format::Gzip),
        [0x80, ..] => Ok(Format::Pickle),
        // Protocol 0/1 pickles start with MARK or an empty container.
        [b'(' | b'}' | b']', ..] => Ok(Format::Pickle),
        [b'{' | b'[' | b' ' | b'\n' | b'\r' | b'\t', ..] => Ok(Format::Json),
        [b'P', b'K', 3, 4, ..] => Err(DecodeError::at(0, "this is a zip archive, not a memory snapshot")
            .with_hint("torch.save checkpoints are zip archives; a snapshot comes from torch.cuda.memory._dump_snapshot()")),
        [0xef, 0xbb, 0xbf, ..] => Ok(Format::Json),
        _ => Err(DecodeError::at(0, format!(
            "unrecognised file: it starts with bytes {}",
            head.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ")
        ))
        .with_hint("expected a pickle from torch.cuda.memory._dump_snapshot() (optionally gzipped) or its JSON form")),
    }
}
