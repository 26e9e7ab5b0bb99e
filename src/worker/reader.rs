//! A `std::io::Read` over a file that is fetched one chunk at a time, so the decoder streams
//! through files of any size and the whole file is never in memory.
//!
//! Pure logic over a [`ChunkSource`] (in the worker: a `Blob` read with `FileReaderSync`, see
//! `blob.rs`), unit-tested natively. Not the place for decoding or progress reporting: the
//! decoder reports how far it has read.

use std::io::{self, Read};

/// Chunk size used by the worker: 8 MiB. Measured in Chromium with `benches/browser.mjs`:
/// 4 MiB chunks cost about a third more reading time, 16 MiB saves little more and holds
/// 40 MiB more memory.
pub const CHUNK_BYTES: u64 = 8 * 1024 * 1024;

/// Something that can hand out byte ranges of a file.
pub trait ChunkSource {
    /// Size of the file in bytes.
    fn size(&self) -> u64;

    /// Bytes `start..end` of the file (`end <= size()`).
    fn read_range(&mut self, start: u64, end: u64) -> Result<Vec<u8>, String>;
}

/// Reads a [`ChunkSource`] front to back in chunks of a fixed size.
pub struct ChunkedReader<S> {
    source: S,
    len: u64,
    chunk_bytes: u64,
    /// Offset in the file of the next chunk to fetch.
    next: u64,
    chunk: Vec<u8>,
    /// Read position inside `chunk`.
    pos: usize,
}

impl<S: ChunkSource> ChunkedReader<S> {
    pub fn new(source: S, chunk_bytes: u64) -> Self {
        let len = source.size();
        ChunkedReader {
            source,
            len,
            chunk_bytes: chunk_bytes.max(1),
            next: 0,
            chunk: Vec::new(),
            pos: 0,
        }
    }

    /// Bytes handed out to the reader's caller so far.
    pub fn position(&self) -> u64 {
        self.next - (self.chunk.len() - self.pos) as u64
    }
}

impl<S: ChunkSource> Read for ChunkedReader<S> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        if self.pos == self.chunk.len() {
            if self.next >= self.len {
                return Ok(0);
            }
            let end = self.len.min(self.next.saturating_add(self.chunk_bytes));
            let chunk = self.source.read_range(self.next, end).map_err(|message| {
                io::Error::other(format!(
                    "could not read the file at byte {}: {message}",
                    self.next
                ))
            })?;
            if chunk.len() as u64 != end - self.next {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "the file changed while it was read: asked for {} bytes at byte {}, got {}",
                        end - self.next,
                        self.next,
                        chunk.len()
                    ),
                ));
            }
            // Release the previous chunk before keeping the new one.
            self.chunk = chunk;
            self.pos = 0;
            self.next = end;
        }
        let n = out.len().min(self.chunk.len() - self.pos);
        out[..n].copy_from_slice(&self.chunk[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An in-memory file that records the ranges asked for.
    struct Memory {
        bytes: Vec<u8>,
        reads: Vec<(u64, u64)>,
        /// Return this many bytes fewer than asked (a file that shrank).
        short_by: usize,
    }

    impl ChunkSource for &mut Memory {
        fn size(&self) -> u64 {
            self.bytes.len() as u64
        }
        fn read_range(&mut self, start: u64, end: u64) -> Result<Vec<u8>, String> {
            self.reads.push((start, end));
            let end = (end as usize).saturating_sub(self.short_by);
            Ok(self.bytes[start as usize..end].to_vec())
        }
    }

    fn memory(n: usize) -> Memory {
        Memory {
            bytes: (0..n).map(|i| (i * 7 % 251) as u8).collect(),
            reads: Vec::new(),
            short_by: 0,
        }
    }

    #[test]
    fn reads_every_byte_in_order_chunk_by_chunk() {
        let mut file = memory(10_000);
        let expected = file.bytes.clone();
        let mut reader = ChunkedReader::new(&mut file, 4096);
        let mut out = Vec::new();
        let mut buf = [0u8; 1000];
        loop {
            let n = reader.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
            assert_eq!(reader.position(), out.len() as u64);
        }
        assert_eq!(out, expected);
        assert_eq!(file.reads, vec![(0, 4096), (4096, 8192), (8192, 10_000)]);
    }

    #[test]
    fn read_to_end_works_with_large_buffers() {
        let mut file = memory(9);
        let expected = file.bytes.clone();
        let mut out = Vec::new();
        ChunkedReader::new(&mut file, 4)
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, expected);
    }

    #[test]
    fn an_empty_file_reads_nothing_and_fetches_nothing() {
        let mut file = memory(0);
        let mut out = Vec::new();
        ChunkedReader::new(&mut file, CHUNK_BYTES)
            .read_to_end(&mut out)
            .unwrap();
        assert!(out.is_empty());
        assert!(file.reads.is_empty());
    }

    #[test]
    fn a_file_that_shrank_is_an_error_not_a_hang() {
        let mut file = memory(100);
        file.short_by = 10;
        let mut out = Vec::new();
        let err = ChunkedReader::new(&mut file, 64)
            .read_to_end(&mut out)
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert!(err.to_string().contains("changed"), "{err}");
    }

    #[test]
    fn source_errors_carry_the_offset() {
        struct Broken;
        impl ChunkSource for Broken {
            fn size(&self) -> u64 {
                10
            }
            fn read_range(&mut self, _: u64, _: u64) -> Result<Vec<u8>, String> {
                Err("NotReadableError".into())
            }
        }
        let err = ChunkedReader::new(Broken, 4)
            .read(&mut [0u8; 4])
            .unwrap_err();
        assert!(
            err.to_string().contains("at byte 0: NotReadableError"),
            "{err}"
        );
    }
}
