//! The Web Worker that owns one snapshot file: it receives the `File` with a `Load` message,
//! reads it in parts, hands it to the core's [`Session`](memsight_core::session::Session)
//! and posts its progress and answers to the page. One worker per open file, so closing a file
//! (terminating its worker) frees all its memory, and a slow or broken file never blocks the
//! page or another file.
//! - `runtime`: the entry; receives messages, starts a load or answers a request;
//! - `feed`: a plain pickle decoded while it is read (the next parts read while the last one
//!   decodes: a large file's by a reading worker started for it, `read_ahead`; a small one
//!   from one stream, `streamed`); other formats from a synchronous reader ([`reader`] over `blob`);
//! - `first_view`: the end of a load, the first frame painted and posted with the news;
//! - `warmup` and `touch_ahead`: what a worker started ahead of need does while it waits;
//!   `startup`: whether the page asked for none of it (`?startup=plain`);
//! - `outbox`: posting events and answers, the clock and the timing marks;
//! - [`memory`]: the worker's memory limit, and the message when a file does not fit.
//!
//! Transport: the page posts a JS array `[json, file?]` where `json` is a
//! [`ToWorker`](memsight_core::protocol::ToWorker) as JSON text; the worker answers with
//! [`FromWorker`](memsight_core::protocol::FromWorker) messages as JSON text (a frame's pixels
//! transferred beside them). Messages that arrive before the wasm module is ready are queued
//! by `static/worker_loader.js` and replayed here. A panic is reported to the page as a
//! `Failed` event before the module traps.
//!
//! Not the place for decoding or analysis logic (see `memsight-core`) or for state that
//! outlives the file.

pub mod memory;
pub mod reader;

#[cfg(target_arch = "wasm32")]
mod blob;
#[cfg(target_arch = "wasm32")]
mod feed;
#[cfg(target_arch = "wasm32")]
mod first_view;
#[cfg(target_arch = "wasm32")]
mod outbox;
#[cfg(target_arch = "wasm32")]
mod read_ahead;
#[cfg(target_arch = "wasm32")]
mod runtime;
#[cfg(target_arch = "wasm32")]
mod startup;
#[cfg(target_arch = "wasm32")]
mod streamed;
#[cfg(target_arch = "wasm32")]
mod touch_ahead;
#[cfg(target_arch = "wasm32")]
mod warmup;
#[cfg(target_arch = "wasm32")]
pub use runtime::start;

#[cfg(target_arch = "wasm32")]
use wasm_bindgen::{JsCast, JsValue};

#[cfg(target_arch = "wasm32")]
/// Text of a JS exception or value, for error messages.
fn js_error_text(value: &JsValue) -> String {
    if let Some(error) = value.dyn_ref::<js_sys::Error>() {
        return format!(
            "{}: {}",
            String::from(error.name()),
            String::from(error.message())
        );
    }
    value.as_string().unwrap_or_else(|| format!("{value:?}"))
}

#[cfg(target_arch = "wasm32")]
/// A part of a file just read, left in the `ArrayBuffer` it was read into: the decoder
/// copies its bytes straight into its window as it reads them ([`Part`]), one copy where
/// taking them into a `Vec` first ([`take_bytes`]) made two, and the module's memory never
/// holds a whole part. Dropped once the decoder has read it, its buffer goes back to the
/// reading worker that read it or to the buffers this worker reads into (to read another part
/// into), or is detached (see [`take_bytes`]).
///
/// [`Part`]: memsight_core::decode::Part
struct JsPart {
    bytes: js_sys::Uint8Array,
    len: usize,
    /// Where the buffer goes once read.
    home: Home,
}

#[cfg(target_arch = "wasm32")]
enum Home {
    /// Nowhere: it is detached.
    None,
    /// The reading worker that read it.
    Reader(web_sys::Worker),
    /// This worker's buffers for a stream's parts.
    Streaming(streamed::Streaming),
}

#[cfg(target_arch = "wasm32")]
impl JsPart {
    /// All of `buffer`, detached once read.
    fn new(buffer: &js_sys::ArrayBuffer) -> JsPart {
        let bytes = js_sys::Uint8Array::new(buffer);
        let len = bytes.length() as usize;
        JsPart {
            bytes,
            len,
            home: Home::None,
        }
    }

    /// The first `len` bytes of `buffer`, which goes back to `reader` once read.
    fn given_back_to(buffer: &js_sys::ArrayBuffer, len: usize, reader: &web_sys::Worker) -> JsPart {
        JsPart::first_bytes(buffer, len, Home::Reader(reader.clone()))
    }

    /// The first `len` bytes of `buffer`, which goes back to `streaming`'s buffers once read.
    fn kept_in(
        buffer: &js_sys::ArrayBuffer,
        len: usize,
        streaming: &streamed::Streaming,
    ) -> JsPart {
        JsPart::first_bytes(buffer, len, Home::Streaming(streaming.clone()))
    }

    fn first_bytes(buffer: &js_sys::ArrayBuffer, len: usize, home: Home) -> JsPart {
        let len = len.min(buffer.byte_length() as usize);
        JsPart {
            bytes: js_sys::Uint8Array::new_with_byte_offset_and_length(buffer, 0, len as u32),
            len,
            home,
        }
    }

    /// Its first bytes (at most `n`), to tell the file's format.
    fn head(&self, n: usize) -> Vec<u8> {
        self.bytes.subarray(0, n.min(self.len) as u32).to_vec()
    }

    /// All its bytes, copied into the module's memory (its buffer detached as it goes).
    fn into_vec(self) -> Vec<u8> {
        self.bytes.to_vec()
    }
}

#[cfg(target_arch = "wasm32")]
impl memsight_core::decode::Part for JsPart {
    fn len(&self) -> usize {
        self.len
    }

    fn copy_to(&self, from: usize, out: &mut [u8]) {
        self.bytes
            .subarray(from as u32, (from + out.len()) as u32)
            .copy_to(out);
    }
}

#[cfg(target_arch = "wasm32")]
impl Drop for JsPart {
    fn drop(&mut self) {
        let buffer = self.bytes.buffer();
        match &self.home {
            Home::Reader(reader) => {
                let taken = js_sys::Object::new();
                let _ = js_sys::Reflect::set(&taken, &"taken".into(), &JsValue::TRUE);
                let _ = js_sys::Reflect::set(&taken, &"buffer".into(), &buffer);
                let _ = reader.post_message_with_transfer(&taken, &js_sys::Array::of1(&buffer));
            }
            Home::Streaming(streaming) => streaming.give_back(buffer),
            Home::None => {
                let _ = buffer.transfer_with_length(0);
            }
        }
    }
}

#[cfg(target_arch = "wasm32")]
/// The bytes of a part just read, copied into the module's memory, and the part detached
/// (`transfer(0)`). Detaching lets JavaScript's engine (V8) go of the bytes, but not the page's
/// (Blink), which owns a buffer the browser read a file into as well and keeps its bytes until
/// its garbage collector next runs, seldom while a worker decodes: a memory dump 0.9 s into a
/// 6M-entry load held 429–489 MiB of array buffers, the parts read so far
/// (docs/decisions/0006-a-large-files-parts-and-the-pages-memory.md).
fn take_bytes(buffer: &js_sys::ArrayBuffer) -> Vec<u8> {
    JsPart::new(buffer).into_vec()
}
