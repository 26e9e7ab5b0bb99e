//! Chunked input: a window over a `Read` that never holds more of the stream than the value
//! being decoded needs, and knows the stream offset of every byte for error messages.
//!
//! A reader that has nothing yet but more to come answers `WouldBlock`: the input is then
//! *starved*, and the decoder steps back to the start of the opcode it was reading (kept in the
//! window since [`Input::mark`]) to run it again once more bytes are pushed (see `feed`).

use std::io::{self, Read};

use super::DecodeError;

/// How much is requested from the reader at a time.
pub const CHUNK: usize = 1 << 20;

/// The largest single string or bytes value accepted (the buffer grows only as data arrives,
/// so a lying length field costs nothing until this much data is actually read).
pub const MAX_VALUE_BYTES: usize = 256 << 20;

pub struct Input<R> {
    reader: R,
    buf: Vec<u8>,
    pub pos: usize,
    pub len: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    eof: bool,
    /// The window keeps the bytes from here on (at most `pos`): where the opcode being read
    /// started, to step back to when the input starves in its middle.
    pub mark: usize,
    /// Set when the reader had nothing yet but more to come (`WouldBlock`).
    pub starved: bool,
}

impl<R: Read> Input<R> {
    pub fn new(reader: R) -> Self {
        Input {
            reader,
            buf: vec![0; CHUNK],
            pos: 0,
            len: 0,
            base: 0,
            eof: false,
            mark: 0,
            starved: false,
        }
    }

    /// The reader, to hand it more bytes.
    pub fn reader_mut(&mut self) -> &mut R {
        &mut self.reader
    }

    /// Steps back to [`Self::mark`] after the input starved.
    pub fn rewind_to_mark(&mut self) {
        self.pos = self.mark;
        self.starved = false;
    }

    /// Stream offset of the next unread byte.
    #[inline]
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    #[inline]
    pub fn available(&self) -> usize {
        self.len - self.pos
    }

    /// All buffered bytes (the unread ones start at `pos`).
    #[inline(always)]
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// The next 16 bytes, when that many are buffered.
    #[inline(always)]
    pub fn peek16(&self) -> Option<[u8; 16]> {
        self.buf
            .get(self.pos..self.pos + 16)
            .filter(|_| self.pos + 16 <= self.len)
            .map(|b| b.try_into().unwrap())
    }

    /// Makes at least `want` bytes available unless the stream ends first.
    /// Returns the number available afterwards.
    pub fn fill(&mut self, want: usize) -> Result<usize, DecodeError> {
        if self.available() >= want || self.eof {
            return Ok(self.available());
        }
        // Slide the unread tail (and the marked opcode) to the front.
        let keep = self.mark.min(self.pos);
        if keep > 0 {
            self.buf.copy_within(keep..self.len, 0);
            self.base += keep as u64;
            self.len -= keep;
            self.pos -= keep;
            self.mark -= keep;
        }
        while self.len - self.pos < want && !self.eof {
            if self.len == self.buf.len() {
                // Grow by one chunk at a time: only as much as has actually arrived.
                self.buf.resize(self.len + CHUNK, 0);
            }
            let end = self.buf.len();
            match self.reader.read(&mut self.buf[self.len..end]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.starved = true;
                    return Err(DecodeError::at(
                        self.base + self.len as u64,
                        "the rest of the file has not arrived",
                    ));
                }
                Err(e) => return Err(read_error(self.base + self.len as u64, &e)),
            }
        }
        Ok(self.available())
    }

    /// Takes exactly `n` bytes, or fails with a truncation error naming `what`.
    #[inline]
    pub fn take(&mut self, n: usize, what: &str) -> Result<&[u8], DecodeError> {
        if self.available() < n {
            if n > MAX_VALUE_BYTES {
                return Err(DecodeError::at(
                    self.offset(),
                    format!("{what} declares {n} bytes, more than the {MAX_VALUE_BYTES}-byte limit for one value"),
                ));
            }
            if self.fill(n)? < n {
                return Err(truncated(self.base + self.len as u64, what));
            }
        }
        let start = self.pos;
        self.pos += n;
        Ok(&self.buf[start..start + n])
    }

    /// True when no byte follows (reads ahead to know).
    pub fn at_end(&mut self) -> Result<bool, DecodeError> {
        Ok(self.fill(1)? == 0)
    }
}

/// A part of a file pushed to a [`Queue`], which copies its bytes out as the decoder needs
/// them: a `Vec<u8>`, or bytes held outside this program (a browser's `ArrayBuffer`), which are
/// then copied once, straight into the decoder's window, rather than into a vector first.
pub trait Part {
    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies bytes `from..from + out.len()` of the part into `out`.
    fn copy_to(&self, from: usize, out: &mut [u8]);
}

impl Part for Vec<u8> {
    fn len(&self) -> usize {
        Vec::len(self)
    }

    fn copy_to(&self, from: usize, out: &mut [u8]) {
        out.copy_from_slice(&self[from..from + out.len()]);
    }
}

/// The parts pushed so far, read in order: `WouldBlock` when all are read and more are to
/// come, the end of the stream once [`Queue::end`] is called.
#[derive(Default)]
pub struct Queue {
    parts: std::collections::VecDeque<Box<dyn Part>>,
    /// Bytes of the front part already read.
    head: usize,
    ended: bool,
}

impl Queue {
    pub fn push(&mut self, part: Box<dyn Part>) {
        if !part.is_empty() {
            self.parts.push_back(part);
        }
    }

    /// No byte follows those pushed.
    pub fn end(&mut self) {
        self.ended = true;
    }
}

impl Read for Queue {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while let Some(front) = self.parts.front() {
            let rest = front.len() - self.head;
            if rest > 0 {
                let n = rest.min(out.len());
                front.copy_to(self.head, &mut out[..n]);
                self.head += n;
                return Ok(n);
            }
            // Dropped as soon as it is read: a part held outside this program is given back.
            self.parts.pop_front();
            self.head = 0;
        }
        if self.ended {
            Ok(0)
        } else {
            Err(io::ErrorKind::WouldBlock.into())
        }
    }
}

pub fn truncated(offset: u64, what: &str) -> DecodeError {
    DecodeError::at(offset, format!("the file ends in the middle of {what}"))
        .with_hint("the file is truncated: was it copied or downloaded completely?")
}

fn read_error(offset: u64, e: &io::Error) -> DecodeError {
    if e.kind() == io::ErrorKind::InvalidInput || e.kind() == io::ErrorKind::InvalidData {
        DecodeError::at(offset, format!("the compressed stream is corrupt: {e}"))
            .with_hint("the gzip data is damaged or truncated")
    } else if e.kind() == io::ErrorKind::UnexpectedEof {
        truncated(offset, "the compressed stream")
    } else {
        DecodeError::at(offset, format!("reading the file failed: {e}"))
    }
}

/// Counts raw bytes read and reports them, at most once per mebibyte and at the end.
pub struct Counting<'p, R> {
    pub inner: R,
    pub count: u64,
    reported: u64,
    progress: &'p mut dyn FnMut(u64),
}

impl<'p, R> Counting<'p, R> {
    pub fn new(inner: R, progress: &'p mut dyn FnMut(u64)) -> Self {
        Counting {
            inner,
            count: 0,
            reported: 0,
            progress,
        }
    }
}

impl<R: Read> Read for Counting<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(out)?;
        self.count += n as u64;
        if n == 0 || self.count - self.reported >= 1 << 20 {
            self.reported = self.count;
            (self.progress)(self.count);
        }
        Ok(n)
    }
}
