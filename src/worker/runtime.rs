//! The worker's browser side: message transport, reading the `File`, panic reporting.
//! The logic it drives is in `session` (pure, tested natively).

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Reflect};
use wasm_bindgen::prelude::*;
use web_sys::{Blob, DedicatedWorkerGlobalScope, MessageEvent};

use super::blob::BlobSource;
use super::reader::{ChunkSource, ChunkedReader, CHUNK_BYTES};
use memsight_core::engine::Session;
use memsight_core::timeline::service::Reply;
use memsight_core::protocol::{ErrorReport, Request, Response};

/// Name of the queue `static/worker_loader.js` fills while the module loads.
const EARLY_QUEUE: &str = "__memsightQueue";

fn scope() -> DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

/// Posts a reply: its response as JSON text, with a frame's pixels as a second element whose
/// buffer is transferred rather than copied.
fn post_reply(reply: Reply) {
    let Some(pixels) = reply.pixels else {
        post(&reply.response);
        return;
    };
    let json = match serde_json::to_string(&reply.response) {
        Ok(json) => json,
        Err(error) => {
            web_sys::console::error_1(&format!("memsight worker: {error}").into());
            return;
        }
    };
    let array = js_sys::Uint8ClampedArray::new_with_length(pixels.len() as u32);
    array.copy_from(&pixels);
    drop(pixels);
    let message = Array::of2(&JsValue::from_str(&json), &array);
    let transfer = Array::of1(&array.buffer());
    let _ = scope().post_message_with_transfer(&message, &transfer);
}

/// Posts one response to the page.
fn post(response: &Response) {
    match serde_json::to_string(response) {
        Ok(json) => {
            let _ = scope().post_message(&JsValue::from_str(&json));
        }
        Err(error) => web_sys::console::error_1(&format!("memsight worker: {error}").into()),
    }
}

/// Text of a JS exception or value, for error messages.
pub(crate) fn js_error_text(value: &JsValue) -> String {
    if let Some(error) = value.dyn_ref::<js_sys::Error>() {
        return format!(
            "{}: {}",
            String::from(error.name()),
            String::from(error.message())
        );
    }
    value.as_string().unwrap_or_else(|| format!("{value:?}"))
}

fn failed(message: String) -> Response {
    Response::Failed(ErrorReport {
        message,
        offset: None,
        hint: None,
    })
}

/// Entry point of the worker binary (`src/bin/worker.rs`).
pub fn start() {
    std::panic::set_hook(Box::new(|info| {
        web_sys::console::error_1(&format!("memsight worker panicked: {info}").into());
        post(&Response::Failed(ErrorReport {
            message: format!("memsight crashed while working on this file: {info}"),
            offset: None,
            hint: Some("This is a bug in memsight: please report it.".into()),
        }));
    }));

    warm_up();
    let session = Rc::new(RefCell::new(Session::new()));
    let on_message = {
        let session = session.clone();
        Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            handle(&session, event.data());
        })
    };
    let scope = scope();
    scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();

    // Replay what arrived while the module was loading.
    if let Ok(queue) = Reflect::get(&scope, &JsValue::from_str(EARLY_QUEUE)) {
        if let Some(queue) = queue.dyn_ref::<Array>() {
            for event in queue.iter() {
                if let Ok(event) = event.dyn_into::<MessageEvent>() {
                    handle(&session, event.data());
                }
            }
        }
        let _ = Reflect::delete_property(
            scope.unchecked_ref::<js_sys::Object>(),
            &JsValue::from_str(EARLY_QUEUE),
        );
    }
}

/// A small generated snapshot (`tests/python/gen_snapshot.py --entries 1000 --seed 11
/// --depth-min 6 --depth-max 10`), decoded a few times at start-up.
const WARM_UP_SNAPSHOT: &[u8] = include_bytes!("warmup.pickle");

/// Decodes the warm-up snapshot a few times. WebAssembly engines first run code from a quick
/// baseline compiler and switch a function to optimised code only once it has run for a
/// while; the page starts the next file's worker ahead of need, so this makes the decoder's
/// hot functions fast before a real file arrives.
fn warm_up() {
    for _ in 0..24 {
        let _ = memsight_core::decode::decode_bytes(WARM_UP_SNAPSHOT).map(memsight_core::analysis::Analysed::new);
    }
}

/// Handles one message from the page.
fn handle(session: &Rc<RefCell<Session>>, data: JsValue) {
    let message = Array::from(&data);
    let Some(json) = message.get(0).as_string() else {
        post(&failed(
            "The worker received a message it does not understand.".into(),
        ));
        return;
    };
    let request: Request = match serde_json::from_str(&json) {
        Ok(request) => request,
        Err(error) => {
            post(&failed(format!(
                "The worker received a bad request: {error}"
            )));
            return;
        }
    };
    // performance.now(): sub-millisecond, unlike Date.now().
    let clock = scope().performance();
    let now = move || clock.as_ref().map_or_else(js_sys::Date::now, |p| p.now());
    let response = match request {
        Request::Load { .. } => match message.get(1).dyn_into::<Blob>() {
            Ok(blob) => match BlobSource::new(blob) {
                Ok(source) => {
                    // The blob's own length is authoritative.
                    let total = source.size();
                    let reader = ChunkedReader::new(source, CHUNK_BYTES);
                    session
                        .borrow_mut()
                        .load(reader, total, &now, &mut |progress| post(&progress))
                }
                Err(error) => failed(format!("The file cannot be read in this browser: {error}")),
            },
            Err(_) => failed("The load request came without a file.".into()),
        },
        other => {
            let reply = session.borrow_mut().handle(&other, &now);
            post_reply(reply);
            return;
        }
    };
    post(&response);
}
