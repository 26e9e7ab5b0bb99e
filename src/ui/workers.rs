//! The page side of the worker transport: starts one Web Worker per open file, posts
//! requests to it as `[json, file?]`, turns its JSON answers into [`Response`]s, and ends it.
//!
//! Raw `web_sys::Worker` rather than `gloo-worker`: a worker decoding a file runs synchronously
//! for seconds, so Cancel and Close must be able to `terminate()` it at once, and the request
//! carries a `File` object next to the JSON, which gloo-worker's serde codecs cannot send.
//! Not the place for deciding what to send: that is `state`.

use std::collections::HashMap;

use js_sys::Array;
use wasm_bindgen::prelude::*;
use web_sys::{Blob, ErrorEvent, MessageEvent, Worker, WorkerOptions, WorkerType};

use super::state::FileId;
use crate::protocol::{Request, Response};

/// The worker script, relative to the page so the site works under any sub-path. It queues
/// early messages, then loads `worker.js` and `worker_bg.wasm` (built by Trunk).
const WORKER_URL: &str = "./worker_loader.js";

struct Entry {
    worker: Worker,
    on_message: Closure<dyn FnMut(MessageEvent)>,
    on_error: Closure<dyn FnMut(ErrorEvent)>,
}

/// The running workers, by file, and one idle worker started ahead of need.
#[derive(Default)]
pub struct WorkerPool {
    entries: HashMap<FileId, Entry>,
    /// Starting a worker (fetching and compiling its wasm) takes a noticeable part of a small
    /// file's load time, so the next file's worker is started before the file is picked.
    spare: Option<Worker>,
}

impl WorkerPool {
    /// A pool with its spare worker already starting.
    pub fn warm() -> Self {
        let mut pool = WorkerPool::default();
        pool.prepare_spare();
        pool
    }

    fn start_worker() -> Result<Worker, String> {
        let options = WorkerOptions::new();
        options.set_type(WorkerType::Classic);
        options.set_name("memsight worker");
        Worker::new_with_options(WORKER_URL, &options).map_err(|e| js_text(&e))
    }

    /// Starts the next file's worker if none is waiting. Called when no file is loading, so a
    /// starting worker (compiling and warming its decoder up) never competes with a load.
    pub fn prepare_spare(&mut self) {
        if self.spare.is_none() {
            self.spare = Self::start_worker().ok();
        }
    }

    /// Starts the worker of file `id` and sends it `request` with `blob`. Answers go to
    /// `on_response`; a worker that fails to start or dies goes to `on_error`.
    pub fn spawn(
        &mut self,
        id: FileId,
        request: &Request,
        blob: &Blob,
        on_response: impl Fn(Response, Option<JsValue>) + 'static,
        on_error: impl Fn(String) + 'static,
    ) -> Result<(), String> {
        let worker = match self.spare.take() {
            Some(worker) => worker,
            None => Self::start_worker()?,
        };

        let on_error = std::rc::Rc::new(on_error);
        let on_message = {
            let on_error = on_error.clone();
            Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
                // Text, or `[text, pixels]` for a painted frame.
                let data = event.data();
                let (text, pixels) = if Array::is_array(&data) {
                    let parts = Array::from(&data);
                    (parts.get(0).as_string(), Some(parts.get(1)))
                } else {
                    (data.as_string(), None)
                };
                let Some(text) = text else {
                    on_error("the worker sent a message that is not text".into());
                    return;
                };
                match serde_json::from_str::<Response>(&text) {
                    Ok(response) => on_response(response, pixels),
                    Err(error) => on_error(format!("the worker sent a bad message: {error}")),
                }
            })
        };
        let on_error = Closure::<dyn FnMut(ErrorEvent)>::new(move |event: ErrorEvent| {
            event.prevent_default();
            let message = event.message();
            on_error(if message.is_empty() {
                "the worker could not be started".into()
            } else {
                message
            });
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));

        let message = Array::of2(&JsValue::from_str(&to_json(request)), blob);
        worker.post_message(&message).map_err(|e| js_text(&e))?;
        self.entries.insert(
            id,
            Entry {
                worker,
                on_message,
                on_error,
            },
        );
        Ok(())
    }

    /// Sends a request to the worker of file `id`, if it is running.
    pub fn send(&self, id: FileId, request: &Request) {
        if let Some(entry) = self.entries.get(&id) {
            let message = Array::of1(&JsValue::from_str(&to_json(request)));
            let _ = entry.worker.post_message(&message);
        }
    }

    /// Ends the worker of file `id` at once, even in the middle of decoding; its memory is freed.
    pub fn terminate(&mut self, id: FileId) {
        if let Some(entry) = self.entries.remove(&id) {
            entry.worker.set_onmessage(None);
            entry.worker.set_onerror(None);
            entry.worker.terminate();
            // This may run inside one of the entry's own callbacks: drop them afterwards.
            let Entry {
                on_message,
                on_error,
                ..
            } = entry;
            leptos::prelude::set_timeout(
                move || drop((on_message, on_error)),
                std::time::Duration::ZERO,
            );
        }
    }
}

fn to_json(request: &Request) -> String {
    serde_json::to_string(request).expect("requests always serialize")
}

/// Text of a JS exception.
pub fn js_text(value: &JsValue) -> String {
    if let Some(error) = value.dyn_ref::<js_sys::Error>() {
        return String::from(error.message());
    }
    value.as_string().unwrap_or_else(|| format!("{value:?}"))
}
