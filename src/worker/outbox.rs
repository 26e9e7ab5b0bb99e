//! Where the worker's messages go: posting events and answers to the page as JSON text (a
//! frame's pixels transferred beside it), the worker's one clock, and its User Timing marks.
//! An [`Outbox`] is the page or, for the warm-up's loads, nowhere. Not the place for what a
//! message says (the core's protocol) or for reading the file.

use js_sys::Array;
use memsight_core::protocol::{Answer, FileEvent, FromWorker, Request, RequestId, ViewError};
use memsight_core::service::Reply;
use memsight_core::session::Session;
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use web_sys::DedicatedWorkerGlobalScope;

use super::memory;

pub(super) fn scope() -> DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

pub(super) fn console_error(text: &str) {
    web_sys::console::error_1(&format!("memsight worker: {text}").into());
}

/// Posts a message to the page as JSON text, with an attachment (a frame's pixels) as a second
/// element whose buffer is transferred rather than copied.
fn post(message: &FromWorker, attachment: Option<Vec<u8>>) {
    let json = match serde_json::to_string(message) {
        Ok(json) => JsValue::from_str(&json),
        Err(error) => return console_error(&error.to_string()),
    };
    let Some(bytes) = attachment else {
        let _ = scope().post_message(&json);
        return;
    };
    let array = js_sys::Uint8ClampedArray::new_with_length(bytes.len() as u32);
    array.copy_from(&bytes);
    drop(bytes);
    let message = Array::of2(&json, &array);
    let transfer = Array::of1(&array.buffer());
    let _ = scope().post_message_with_transfer(&message, &transfer);
}

/// The worker's clock in milliseconds: `performance.now()`, sub-millisecond unlike
/// `Date.now()`. Every load passes this one function to the core, the warm-up's too: the core
/// calls it through `&dyn Fn() -> f64`, and a call that reaches a function other than the one
/// the warm-up's loads called throws away the optimised code around it (V8 inlines the target
/// it saw, then de-optimises on "wrong call target" and compiles again during the load).
pub(super) fn clock() -> f64 {
    scope()
        .performance()
        .map_or_else(js_sys::Date::now, |performance| performance.now())
}

/// Where a load's events go: to the page, or, for the warm-up's loads, nowhere (they are
/// only encoded, as posting would). One type for both, so that a warm-up load runs the very
/// functions and callbacks a file's load runs (see [`clock`]).
#[derive(Clone, Copy)]
pub(super) enum Outbox {
    Page,
    Nowhere,
}

impl Outbox {
    /// Sends a load's progress or failure.
    pub(super) fn event(self, event: FileEvent) {
        match self {
            Outbox::Page => post_event(event),
            Outbox::Nowhere => {
                if let FileEvent::Failed(report) = &event {
                    console_error(&format!(
                        "the warm-up snapshot did not load: {}",
                        report.message
                    ));
                }
                encode_only(&FromWorker::Event(event));
            }
        }
    }

    /// Sends the end of a load, with the first frame's pixels when it brings one.
    pub(super) fn end(self, event: FileEvent, pixels: Option<Vec<u8>>) {
        match self {
            Outbox::Page => post(&FromWorker::Event(event), pixels),
            Outbox::Nowhere => encode_only(&FromWorker::Event(event)),
        }
    }

    /// Sends the answer to request `id`, with its attachment.
    pub(super) fn answer(self, id: RequestId, result: Result<Reply<Answer>, ViewError>) {
        let (result, attachment) = match result {
            Ok(reply) => (Ok(reply.answer), reply.attachment),
            Err(error) => (Err(error), None),
        };
        let message = FromWorker::Answer { id, result };
        match self {
            Outbox::Page => post(&message, attachment),
            Outbox::Nowhere => encode_only(&message),
        }
    }
}

/// Encodes a message as [`post`] does, and drops it.
fn encode_only(message: &FromWorker) {
    let _ = serde_json::to_string(message);
}

pub(super) fn post_event(event: FileEvent) {
    if let FileEvent::Progress { bytes_read, total } = event {
        memory::loading(bytes_read, total);
    }
    post(&FromWorker::Event(event), None);
}

/// The mark each answer's measure starts from.
const ANSWER_START: &str = "memsight:worker-ask";

/// Answers request `id` to `outbox`, measured (`memsight:worker <feature>`).
pub(super) fn answer(session: &RefCell<Session>, id: RequestId, request: Request, outbox: Outbox) {
    mark(ANSWER_START);
    let now = clock;
    let result = session.borrow_mut().answer(request, &now);
    let name = match &result {
        Ok(reply) => reply.answer.feature(),
        Err(_) => "view error",
    };
    outbox.answer(id, result);
    measure_since(ANSWER_START, name);
}

/// `performance.mark(name)` in the worker.
pub(super) fn mark(name: &str) {
    if let Some(performance) = scope().performance() {
        let _ = performance.mark(name);
    }
}

/// A User Timing measure `memsight:worker <what>` from mark `start` to now, which performance
/// traces show on the worker's thread (where each answer's milliseconds go). The entries are
/// cleared at once: nobody reads them in the worker, and a gesture asks for thousands.
pub(super) fn measure_since(start: &str, what: &str) {
    if let Some(performance) = scope().performance() {
        let name = format!("memsight:worker {what}");
        let _ = performance.measure_with_start_mark(&name, start);
        performance.clear_marks_with_mark_name(start);
        performance.clear_measures_with_measure_name(&name);
    }
}
