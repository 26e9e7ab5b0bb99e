//! The decoding worker's end of its reading worker (`static/reader.js`), which reads a pickle's
//! parts ahead of the decoder on a thread of its own. A `Blob` read this worker starts only
//! moves on while this worker is idle, and it is not idle while a part decodes; a read the
//! reading worker starts moves on meanwhile, and the part is complete when the decoder asks for
//! it. Not the place for decoding, nor for reading without a reading worker (`feed.rs` then
//! reads the parts itself).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::task::{Poll, Waker};

use js_sys::{ArrayBuffer, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Blob, Event, MessageEvent, Worker};

use super::{js_error_text, JsPart};

/// Relative to the decoding worker's own script, so the site works under any sub-path.
const READER_URL: &str = "./reader.js";

/// What the reading worker has sent and the decoder has not taken yet.
#[derive(Default)]
struct Inbox {
    /// Parts by their offset in the file (reads may finish out of order): the buffer read
    /// into, and how many of its bytes are the part's.
    parts: BTreeMap<u64, Result<(ArrayBuffer, usize), String>>,
    /// The reading worker failed (its script did not load, or threw).
    failed: Option<String>,
    /// The decoder, waiting for a part.
    waker: Option<Waker>,
}

impl Inbox {
    fn wake(&mut self) {
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }
}

/// Why a part did not come.
pub enum Missing {
    /// The reading worker stopped (its script did not load, or threw): read it another way.
    Stopped(String),
    /// The browser could not read it.
    Unreadable(String),
}

/// A reading worker, started for one large file and terminated when this is dropped.
pub struct ReadAhead {
    worker: Worker,
    inbox: Rc<RefCell<Inbox>>,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_error: Closure<dyn FnMut(Event)>,
}

impl ReadAhead {
    /// Starts a reading worker; none if this browser cannot start a worker from a worker.
    pub fn start() -> Option<ReadAhead> {
        let worker = Worker::new(READER_URL).ok()?;
        let inbox = Rc::new(RefCell::new(Inbox::default()));
        let on_message = {
            let inbox = inbox.clone();
            Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
                let data = event.data();
                let Some(offset) = field(&data, "offset").as_f64() else {
                    return;
                };
                let length = field(&data, "length").as_f64();
                let part = match (field(&data, "buffer").dyn_into::<ArrayBuffer>(), length) {
                    (Ok(buffer), Some(length)) => Ok((buffer, length as usize)),
                    _ => Err(field(&data, "error")
                        .as_string()
                        .unwrap_or_else(|| "the reading worker sent no bytes".into())),
                };
                let mut inbox = inbox.borrow_mut();
                inbox.parts.insert(offset as u64, part);
                inbox.wake();
            })
        };
        let on_error = {
            let inbox = inbox.clone();
            Closure::<dyn FnMut(Event)>::new(move |event: Event| {
                let message = field(&event, "message")
                    .as_string()
                    .unwrap_or_else(|| "its script could not be loaded".into());
                let mut inbox = inbox.borrow_mut();
                inbox.failed = Some(message);
                inbox.wake();
            })
        };
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        Some(ReadAhead {
            worker,
            inbox,
            _on_message: on_message,
            _on_error: on_error,
        })
    }

    /// Asks for `blob` (of `total` bytes) in parts of `part` bytes, read into `buffers`
    /// buffers: the parts read and not yet decoded are at most that many.
    pub fn read(&self, blob: &Blob, total: u64, part: u64, buffers: usize) -> Result<(), String> {
        let message = Object::new();
        for (key, value) in [
            ("file", JsValue::from(blob)),
            ("total", JsValue::from(total as f64)),
            ("part", JsValue::from(part as f64)),
            ("buffers", JsValue::from(buffers as f64)),
        ] {
            Reflect::set(&message, &key.into(), &value).map_err(|e| js_error_text(&e))?;
        }
        self.worker
            .post_message(&message)
            .map_err(|e| js_error_text(&e))
    }

    /// The part that starts at `offset`, once it has been read. Its buffer goes back to the
    /// reading worker, for another part, once the part is dropped (decoded).
    pub async fn take(&self, offset: u64) -> Result<JsPart, Missing> {
        let (buffer, length) = std::future::poll_fn(|cx| {
            let mut inbox = self.inbox.borrow_mut();
            if let Some(part) = inbox.parts.remove(&offset) {
                return Poll::Ready(part.map_err(Missing::Unreadable));
            }
            if let Some(error) = &inbox.failed {
                return Poll::Ready(Err(Missing::Stopped(error.clone())));
            }
            inbox.waker = Some(cx.waker().clone());
            Poll::Pending
        })
        .await?;
        Ok(JsPart::given_back_to(&buffer, length, &self.worker))
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        self.worker.set_onmessage(None);
        self.worker.set_onerror(None);
        self.worker.terminate();
    }
}

fn field(value: &JsValue, key: &str) -> JsValue {
    Reflect::get(value, &key.into()).unwrap_or(JsValue::UNDEFINED)
}
