//! The worker's entry: receiving the page's messages (those that came while the module loaded
//! first), starting a file's load (`feed`) or answering a request, reporting panics, and
//! starting the warm-up (`warmup`) while no file has come. Messages go out through `outbox`.
//! What it carries out is the core's [`Session`] (pure, tested natively).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Array, Reflect};
use memsight_core::protocol::{ErrorReport, FileEvent, ToWorker};
use memsight_core::session::Session;
use wasm_bindgen::prelude::*;
use web_sys::{Blob, MessageEvent};

use super::feed::{self, Readers};
use super::memory::{self, Shortage};
use super::outbox::{answer, console_error, post_event, scope, Outbox};
use super::{startup, warmup};

/// Name of the queue `static/worker_loader.js` fills while the module loads.
const EARLY_QUEUE: &str = "__memsightQueue";

/// Entry point of the worker binary (`src/bin/worker.rs`).
pub fn start() {
    std::panic::set_hook(Box::new(|info| {
        console_error(&format!("panicked: {info}"));
        // A table that would pass 2 GiB: the file is too large for the tab, not a bug.
        let payload = info.payload();
        let text = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
        let report = if text == Some("capacity overflow") {
            let mut message = String::new();
            let _ = memory::write_message(&mut message, Shortage::OneTable, &memory::progress());
            ErrorReport {
                message,
                offset: None,
                hint: Some(memory::HINT.into()),
            }
        } else {
            ErrorReport {
                message: format!("memsight crashed while working on this file: {info}"),
                offset: None,
                hint: Some("This is a bug in memsight: please report it.".into()),
            }
        };
        post_event(FileEvent::Failed(report));
    }));

    let session = Rc::new(RefCell::new(Session::new()));
    // Set by the first message: the worker then has a file, and warms up no more.
    let busy = Rc::new(Cell::new(false));
    // A reading worker started once the warm-up is over, and buffers, for the file to come.
    let readers = Readers::default();
    let on_message = {
        let session = session.clone();
        let busy = busy.clone();
        let readers = readers.clone();
        Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            busy.set(true);
            handle(&session, &readers, event.data());
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
                    busy.set(true);
                    handle(&session, &readers, event.data());
                }
            }
        }
        let _ = Reflect::delete_property(
            scope.unchecked_ref::<js_sys::Object>(),
            &JsValue::from_str(EARLY_QUEUE),
        );
    }
    if !startup::plain() {
        warmup::begin(busy, readers);
    }
}

/// Handles one message from the page: `[json, file?]`.
fn handle(session: &Rc<RefCell<Session>>, readers: &Readers, data: JsValue) {
    let message = Array::from(&data);
    let Some(json) = message.get(0).as_string() else {
        return console_error("received a message that is not text");
    };
    match ToWorker::parse(&json) {
        Ok(ToWorker::Ask { id, request }) => answer(session, id, request, Outbox::Page),
        Ok(ToWorker::Load { first_frame, .. }) => {
            let Ok(blob) = message.get(1).dyn_into::<Blob>() else {
                return post_event(FileEvent::Failed(ErrorReport::message(
                    "The load request came without a file.",
                )));
            };
            if session.borrow().is_loaded() {
                // A page bug, not a broken file: the loaded file stays.
                return console_error("refused a second file: each file has its own worker");
            }
            // The blob's own length is authoritative.
            let total = blob.size() as u64;
            wasm_bindgen_futures::spawn_local(feed::load(
                session.clone(),
                blob,
                total,
                first_frame,
                Outbox::Page,
                readers.clone(),
            ));
        }
        // Not understood: that request's view shows the error; nothing else changes.
        Err((Some(id), error)) => Outbox::Page.answer(id, Err(error)),
        Err((None, error)) => console_error(&format!("received a bad message: {error:?}")),
    }
}
