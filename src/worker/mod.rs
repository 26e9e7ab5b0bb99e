//! The Web Worker that owns one snapshot file: it receives the `File` with a `Load` request,
//! reads it in 4 MiB chunks, decodes it with progress messages, keeps the model and answers
//! view requests. One worker per open file, so closing a file (terminating its worker) frees
//! all its memory, and a slow or broken file never blocks the page or another file.
//!
//! Transport: the page posts a JS array `[json, file?]` where `json` is a
//! [`Request`](crate::protocol::Request) as JSON text; the worker answers with
//! [`Response`](crate::protocol::Response)s as JSON text. Messages that arrive before the wasm
//! module is ready are queued by `static/worker_loader.js` and replayed here.
//! A panic is reported to the page as a `Failed` response before the module traps.
//!
//! Not the place for decoding or analysis logic (see `decode`, `analysis`) or for state that
//! outlives the file.

mod blob;
pub mod reader;
pub mod session;

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Reflect};
use wasm_bindgen::prelude::*;
use web_sys::{Blob, DedicatedWorkerGlobalScope, MessageEvent};

use crate::protocol::{ErrorReport, Request, Response};
use blob::BlobSource;
use reader::{ChunkSource, ChunkedReader, CHUNK_BYTES};
use session::Session;

/// Name of the queue `static/worker_loader.js` fills while the module loads.
const EARLY_QUEUE: &str = "__memsightQueue";

fn scope() -> DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
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
    let response = match request {
        Request::Load { .. } => match message.get(1).dyn_into::<Blob>() {
            Ok(blob) => match BlobSource::new(blob) {
                Ok(source) => {
                    // The blob's own length is authoritative.
                    let total = source.size();
                    let reader = ChunkedReader::new(source, CHUNK_BYTES);
                    let now = || js_sys::Date::now();
                    session
                        .borrow_mut()
                        .load(reader, total, &now, &mut |progress| post(&progress))
                }
                Err(error) => failed(format!("The file cannot be read in this browser: {error}")),
            },
            Err(_) => failed("The load request came without a file.".into()),
        },
        other => session.borrow_mut().handle(&other),
    };
    post(&response);
}
