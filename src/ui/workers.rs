//! The page side of the worker transport: starts one Web Worker per open file, posts
//! messages to it as `[json, file?]`, and turns its JSON messages back into lifecycle events
//! (handed to the page state) and answers (handed, through the worker's table of pending
//! requests, to whoever asked).
//!
//! A file of which only a digest is open needs no worker: the pool keeps the digest and
//! answers its requests on the page, a moment later as a worker would
//! ([`WorkerPool::hold_digest`]), so views ask every file alike.
//!
//! Raw `web_sys::Worker` rather than `gloo-worker`: a worker decoding a file runs synchronously
//! for seconds, so Cancel and Close must be able to `terminate()` it at once, and the load
//! message carries a `File` object next to the JSON, which gloo-worker's serde codecs cannot
//! send. Not the place for deciding what to send: that is `state` and the views.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use js_sys::Array;
use wasm_bindgen::prelude::*;
use web_sys::{Blob, ErrorEvent, MessageEvent, Worker, WorkerOptions, WorkerType};

use super::requests::{Pending, ScopeId};
use super::state::FileId;
use super::startup::plan::StartupPlan;
use crate::protocol::{Answer, FileEvent, FromWorker, Request, RequestId, ToWorker, ViewError};
use crate::session::digested::DigestedFile;

/// The worker script, relative to the page so the site works under any sub-path. It queues
/// early messages, then loads `worker.js` and `worker_bg.wasm` (built by Trunk).
const WORKER_URL: &str = "./worker_loader.js";
/// The query that tells a worker to start plain (read by `worker/startup.rs`).
const PLAIN_STARTUP: &str = "startup=plain";

/// An answer as it reaches whoever asked.
pub struct Answered {
    pub id: RequestId,
    pub result: Result<Answer, ViewError>,
    /// Bytes sent beside the answer (a frame's pixels, as a `Uint8ClampedArray`).
    pub attachment: Option<JsValue>,
}

/// Whoever waits for an answer.
pub type Asker = Box<dyn FnOnce(Answered)>;

struct Entry {
    worker: Worker,
    pending: Rc<RefCell<Pending<Asker>>>,
    on_message: Closure<dyn FnMut(MessageEvent)>,
    on_error: Closure<dyn FnMut(ErrorEvent)>,
}

/// A digest held on the page in place of a worker, and who waits for its answers.
struct HeldDigest {
    digest: Rc<DigestedFile>,
    pending: Rc<RefCell<Pending<Asker>>>,
}

/// The running workers, by file, and one idle worker started ahead of need.
#[derive(Default)]
pub struct WorkerPool {
    entries: HashMap<FileId, Entry>,
    /// Files of which only a digest is open.
    digests: HashMap<FileId, HeldDigest>,
    /// Starting a worker (fetching and compiling its wasm) takes a noticeable part of a small
    /// file's load time, so the next file's worker is started before the file is picked.
    spare: Option<Worker>,
    /// Workers told to start plain (`startup=plain` on their address): no warm-up.
    plain: bool,
}

impl WorkerPool {
    /// The pool of a page started as `plan` says: a worker started ahead (warming its
    /// decoder) or none, workers told to start plain or not.
    pub fn of(plan: &StartupPlan) -> Self {
        let mut pool = WorkerPool {
            plain: plan.plain_workers,
            ..WorkerPool::default()
        };
        if plan.worker_ahead {
            pool.prepare_spare();
        }
        pool
    }

    fn start_worker(&self) -> Result<Worker, String> {
        let options = WorkerOptions::new();
        options.set_type(WorkerType::Classic);
        options.set_name("memsight worker");
        let url = if self.plain {
            format!("{WORKER_URL}?{PLAIN_STARTUP}")
        } else {
            WORKER_URL.to_string()
        };
        Worker::new_with_options(&url, &options).map_err(|e| js_text(&e))
    }

    /// Starts the next file's worker if none is waiting. Called when no file is loading, so a
    /// starting worker (compiling and warming its decoder up) never competes with a load.
    pub fn prepare_spare(&mut self) {
        if self.spare.is_none() {
            self.spare = self.start_worker().ok();
        }
    }

    /// Starts the worker of file `id` and has it load `blob`. Its lifecycle events go to
    /// `on_event`; a worker that fails to start or dies goes to `on_error`.
    pub fn spawn(
        &mut self,
        id: FileId,
        load: &ToWorker,
        blob: &Blob,
        on_event: impl Fn(FileEvent, Option<JsValue>) + 'static,
        on_error: impl Fn(String) + 'static,
    ) -> Result<(), String> {
        let worker = match self.spare.take() {
            Some(worker) => worker,
            None => self.start_worker()?,
        };
        let pending: Rc<RefCell<Pending<Asker>>> = Rc::default();

        let on_error = Rc::new(on_error);
        let on_message = {
            let on_error = on_error.clone();
            let pending = pending.clone();
            Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
                // Text, or `[text, attachment]`.
                let data = event.data();
                let (text, attachment) = if Array::is_array(&data) {
                    let parts = Array::from(&data);
                    (parts.get(0).as_string(), Some(parts.get(1)))
                } else {
                    (data.as_string(), None)
                };
                let Some(text) = text else {
                    on_error("the worker sent a message that is not text".into());
                    return;
                };
                match serde_json::from_str::<FromWorker>(&text) {
                    Ok(FromWorker::Event(event)) => on_event(event, attachment),
                    Ok(FromWorker::Answer { id, result }) => {
                        // Taken out before it runs: an asker may ask again.
                        let asker = pending.borrow_mut().take(id);
                        if let Some(asker) = asker {
                            asker(Answered {
                                id,
                                result,
                                attachment,
                            });
                        }
                    }
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

        let message = Array::of2(&JsValue::from_str(&to_json(load)), blob);
        worker.post_message(&message).map_err(|e| js_text(&e))?;
        self.entries.insert(
            id,
            Entry {
                worker,
                pending,
                on_message,
                on_error,
            },
        );
        Ok(())
    }

    /// Asks the worker of file `id`; `asker` gets the answer unless `scope` is forgotten
    /// first. `None` when the file has no worker (it failed or was closed).
    pub fn ask(
        &self,
        id: FileId,
        scope: ScopeId,
        request: Request,
        asker: Asker,
    ) -> Option<RequestId> {
        if let Some(held) = self.digests.get(&id) {
            return Some(held.ask(scope, request, asker));
        }
        let entry = self.entries.get(&id)?;
        let request_id = entry.pending.borrow_mut().register(scope, asker);
        post(&entry.worker, request_id, request);
        Some(request_id)
    }

    /// Keeps the digest of file `id` in place of a worker: its requests are answered on the
    /// page.
    pub fn hold_digest(&mut self, id: FileId, digest: DigestedFile) {
        self.digests.insert(
            id,
            HeldDigest {
                digest: Rc::new(digest),
                pending: Rc::default(),
            },
        );
    }

    /// The digest held for file `id`, if only a digest of it is open.
    pub fn digest(&self, id: FileId) -> Option<Rc<DigestedFile>> {
        self.digests.get(&id).map(|held| held.digest.clone())
    }

    /// Sends a request whose answer nobody waits for (a digest needs none: its roles were
    /// taken when it was written).
    pub fn tell(&self, id: FileId, request: Request) {
        if let Some(entry) = self.entries.get(&id) {
            let request_id = entry.pending.borrow_mut().fresh_id();
            post(&entry.worker, request_id, request);
        }
    }

    /// Drops the answers still to come for `scope`'s requests to file `id`'s worker.
    pub fn forget_scope(&self, id: FileId, scope: ScopeId) {
        let pending = self
            .entries
            .get(&id)
            .map(|e| &e.pending)
            .or_else(|| self.digests.get(&id).map(|h| &h.pending));
        if let Some(pending) = pending {
            pending.borrow_mut().forget_scope(scope);
        }
    }

    /// Ends the worker of file `id` at once, even in the middle of decoding; its memory is
    /// freed and the answers it still owed reach nobody.
    pub fn terminate(&mut self, id: FileId) {
        if let Some(held) = self.digests.remove(&id) {
            // Answers already on their way reach nobody.
            *held.pending.borrow_mut() = Pending::default();
        }
        if let Some(entry) = self.entries.remove(&id) {
            entry.worker.set_onmessage(None);
            entry.worker.set_onerror(None);
            entry.worker.terminate();
            // This may run inside one of the entry's own callbacks: drop them afterwards.
            let Entry {
                on_message,
                on_error,
                pending,
                ..
            } = entry;
            leptos::prelude::set_timeout(
                move || drop((on_message, on_error, pending)),
                std::time::Duration::ZERO,
            );
        }
    }
}

impl HeldDigest {
    /// Answers `request` from the digest in a task of its own, as a worker's answer arrives:
    /// whoever asks never runs inside its own request, and a scope forgotten meanwhile
    /// drops the answer.
    fn ask(&self, scope: ScopeId, request: Request, asker: Asker) -> RequestId {
        let id = self.pending.borrow_mut().register(scope, asker);
        let (digest, pending) = (self.digest.clone(), self.pending.clone());
        leptos::task::spawn_local(async move {
            let asker = pending.borrow_mut().take(id);
            if let Some(asker) = asker {
                asker(Answered {
                    id,
                    result: digest.answer(&request),
                    attachment: None,
                });
            }
        });
        id
    }
}

fn post(worker: &Worker, id: RequestId, request: Request) {
    let message = Array::of1(&JsValue::from_str(&to_json(&ToWorker::Ask { id, request })));
    let _ = worker.post_message(&message);
}

fn to_json(message: &ToWorker) -> String {
    serde_json::to_string(message).expect("messages to workers always serialize")
}

/// Text of a JS exception.
pub fn js_text(value: &JsValue) -> String {
    if let Some(error) = value.dyn_ref::<js_sys::Error>() {
        return String::from(error.message());
    }
    value.as_string().unwrap_or_else(|| format!("{value:?}"))
}
