//! A small file read by the decoding worker itself, front to back from one `Blob.stream()`,
//! in parts of [`STREAM_PART_BYTES`] read into a few buffers that come back once decoded
//! ([`Streaming`]). A read only moves on while this worker is idle, so the parts are small: the
//! first arrives in a few ms and the decoder starts on it, and the browser fills the stream's
//! pipe while each part decodes. Measured (docs/decisions/0003-a-small-file-read-as-one-stream.md):
//! against three 4 MiB slices read at once with `Blob.arrayBuffer()`, a 9.4 MB file waits 6–12 ms less
//! for its bytes (its decoding, sharing the thread with the reading, takes 5–9 ms longer), and
//! no slice is registered with the browser (a synchronous call, 0.4–1.7 ms each in a trace).
//!
//! Not the place for a large file (`read_ahead.rs`: read on a thread of its own) nor for
//! browsers whose Blob streams cannot read into a given buffer (`feed.rs` then reads slices).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{ArrayBuffer, Reflect, Uint8Array};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, ReadableStreamByobReader};

use super::{js_error_text, JsPart};

/// Bytes of a part. Measured on a 9.4 MB file, each part decoded as it came: 4 MiB parts
/// finished reading and decoding ~3 ms later than 1 MiB ones; 256 KiB and 512 KiB parts no
/// sooner than 1 MiB.
pub const STREAM_PART_BYTES: usize = 1 << 20;

/// Buffers kept for parts: one decodes while the next is read.
const BUFFERS: usize = 2;

/// What a worker keeps for the streams its files are read from: the buffers parts are read
/// into, each [`STREAM_PART_BYTES`] long, kept from its warm-up on so that its file's parts are
/// read into memory already there (a buffer just allocated faults its pages in as the browser
/// writes to it: a 9.4 MB file's reading ~4 ms slower in the measurement above), and whether
/// this browser refused to read a stream into them.
#[derive(Clone, Default)]
pub struct Streaming(Rc<Kept>);

#[derive(Default)]
struct Kept {
    free: RefCell<Vec<ArrayBuffer>>,
    refused: Cell<bool>,
}

impl Streaming {
    /// Allocates the buffers not there yet and writes to every page of each.
    pub fn touch(&self) {
        let mut free = self.0.free.borrow_mut();
        while free.len() < BUFFERS {
            free.push(ArrayBuffer::new(STREAM_PART_BYTES as u32));
        }
        for buffer in free.iter() {
            Uint8Array::new(buffer).fill(1, 0, STREAM_PART_BYTES as u32);
        }
    }

    fn take(&self) -> ArrayBuffer {
        self.0
            .free
            .borrow_mut()
            .pop()
            .unwrap_or_else(|| ArrayBuffer::new(STREAM_PART_BYTES as u32))
    }

    /// Keeps `buffer` for the next part (a part's buffer, once decoded).
    pub(super) fn give_back(&self, buffer: ArrayBuffer) {
        let mut free = self.0.free.borrow_mut();
        if free.len() < BUFFERS && buffer.byte_length() as usize == STREAM_PART_BYTES {
            free.push(buffer);
        }
    }
}

/// One stream's reads, part after part.
pub struct StreamedReads {
    reader: ReadableStreamByobReader,
    total: u64,
    /// Bytes read so far.
    read: u64,
    streaming: Streaming,
}

impl StreamedReads {
    /// Reads of `blob` (of `total` bytes) from its start; none if this browser's Blob streams
    /// cannot read into a given buffer (said on the console once per worker).
    pub fn new(blob: &Blob, total: u64, streaming: Streaming) -> Option<StreamedReads> {
        if streaming.0.refused.get() {
            return None;
        }
        match ReadableStreamByobReader::new(&blob.stream()) {
            Ok(reader) => Some(StreamedReads {
                reader,
                total,
                read: 0,
                streaming,
            }),
            Err(error) => {
                streaming.0.refused.set(true);
                web_sys::console::warn_1(
                    &format!(
                        "the file's stream cannot be read into buffers ({}): it is read in slices",
                        js_error_text(&error)
                    )
                    .into(),
                );
                None
            }
        }
    }

    /// The next part: [`STREAM_PART_BYTES`] or the rest of the file, fewer if the stream ended
    /// early (a file that shrank: the caller tells).
    pub async fn next(&mut self) -> Result<JsPart, String> {
        let len = (self.total - self.read).min(STREAM_PART_BYTES as u64) as u32;
        let mut buffer = self.streaming.take();
        let mut filled = 0;
        while filled < len {
            let view = Uint8Array::new_with_byte_offset_and_length(&buffer, filled, len - filled);
            let result = JsFuture::from(self.reader.read_with_array_buffer_view(&view))
                .await
                .map_err(|e| js_error_text(&e))?;
            let value = Reflect::get(&result, &"value".into()).map_err(|e| js_error_text(&e))?;
            // The view comes back on the same memory, moved to a new buffer (the one given is
            // detached); at the stream's end it is empty.
            let Some(value) = value.dyn_ref::<Uint8Array>() else {
                return Err("the file's stream gave no bytes".into());
            };
            buffer = value.buffer();
            filled += value.byte_length();
            if Reflect::get(&result, &"done".into()).map_or(true, |done| done.is_truthy()) {
                break;
            }
        }
        self.read += filled as u64;
        Ok(JsPart::kept_in(&buffer, filled as usize, &self.streaming))
    }
}

impl Drop for StreamedReads {
    fn drop(&mut self) {
        // A file read to its end leaves nothing to cancel, and its load drops these reads
        // before it finishes decoding: no call and no task there.
        if self.read >= self.total {
            return;
        }
        // The rest of the stream is not wanted (the load failed, or the file's format is read
        // another way). Cancelling a stream that failed fails too: that was the load's error
        // already, not another one for the console.
        let cancelled = JsFuture::from(self.reader.cancel());
        wasm_bindgen_futures::spawn_local(async move {
            let _ = cancelled.await;
        });
    }
}
