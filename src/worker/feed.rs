//! Reading a plain pickle while decoding it: the `File` is read part by part with
//! `Blob.arrayBuffer()`, and the next parts are asked for before the current one is decoded,
//! so the browser reads them (off this thread) while the wasm decodes. Each part is pushed into the
//! core's [`Feeding`]. Not the place for decoding (the core's `PickleFeed`) nor for the formats
//! decoded from a reader (gzip, JSON: `reader.rs` over `blob.rs`).

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::Uint8Array;
use memsight_core::protocol::{ErrorReport, FileEvent};
use memsight_core::session::Session;
use memsight_core::timeline::service::FirstFrame;
use wasm_bindgen_futures::JsFuture;
use web_sys::Blob;

use super::js_error_text;

/// Bytes read at a time, and how many parts are asked for ahead of the decoder. Measured with
/// `benches/browser.mjs` at 1M entries (see the README): one 8 MiB part ahead left 230 ms of
/// waiting for bytes of 1 s; three 4 MiB parts ahead leave 150 ms (FileReaderSync's chunks,
/// read only when the decoder needs them: 340 ms).
pub const PART_BYTES: u64 = 4 * 1024 * 1024;
const PARTS_AHEAD: usize = 3;

/// Marks the load's measures start from.
const LOAD_START: &str = "memsight:worker-load";
const FINISH_START: &str = "memsight:worker-finish";

/// Reads `blob` (of `total` bytes) part by part into `session`, posting progress and failures
/// through `post`, then the `Loaded` event (with `first_frame` painted, see
/// `runtime::loaded`).
pub async fn load(
    session: Rc<RefCell<Session>>,
    blob: Blob,
    total: u64,
    first_frame: Option<FirstFrame>,
    now: impl Fn() -> f64,
    post: impl Fn(FileEvent),
) {
    super::runtime::mark(LOAD_START);
    let mut on_progress = |event| post(event);
    let started = session
        .borrow_mut()
        .start_feeding(total, &now, &mut on_progress);
    let mut feeding = match started {
        Ok(feeding) => feeding,
        Err(report) => return post(FileEvent::Failed(report)),
    };
    // Parts asked for and not decoded yet, in order; `asked` bytes asked for so far.
    let mut reading = std::collections::VecDeque::new();
    let mut asked = 0;
    while asked < total && reading.len() < PARTS_AHEAD {
        reading.push_back(read_part(&blob, asked, total));
        asked = total.min(asked + PART_BYTES);
    }
    let mut offset = 0;
    while let Some(part) = reading.pop_front() {
        let waiting = now();
        let bytes = match part.await {
            Ok(bytes) => bytes,
            Err(message) => {
                return post(FileEvent::Failed(ErrorReport::message(format!(
                    "The file could not be read at byte {offset}: {message}"
                ))))
            }
        };
        feeding.waited(now() - waiting);
        let expected = PART_BYTES.min(total - offset);
        if bytes.len() as u64 != expected {
            return post(FileEvent::Failed(ErrorReport::message(format!(
                "The file changed while it was read: {expected} bytes were asked for at byte {offset}, {} came.",
                bytes.len()
            ))));
        }
        offset += expected;
        if asked < total {
            reading.push_back(read_part(&blob, asked, total));
            asked = total.min(asked + PART_BYTES);
        }
        if let Err(report) = feeding.push(bytes, &mut on_progress) {
            return post(FileEvent::Failed(report));
        }
    }
    super::runtime::measure_since(LOAD_START, "parts decoded");
    super::runtime::mark(FINISH_START);
    let event = session.borrow_mut().finish_feeding(feeding, &now);
    super::runtime::measure_since(FINISH_START, "decoding finished and analysed");
    super::runtime::loaded(&session, event, first_frame, &now);
}

/// Starts reading bytes `start..` (one part, at most `total`) of `blob`.
fn read_part(
    blob: &Blob,
    start: u64,
    total: u64,
) -> impl std::future::Future<Output = Result<Vec<u8>, String>> {
    let end = total.min(start + PART_BYTES);
    let promise = blob
        .slice_with_f64_and_f64(start as f64, end as f64)
        .map(|slice| JsFuture::from(slice.array_buffer()));
    async move {
        let buffer = promise
            .map_err(|e| js_error_text(&e))?
            .await
            .map_err(|e| js_error_text(&e))?;
        Ok(Uint8Array::new(&buffer).to_vec())
    }
}
