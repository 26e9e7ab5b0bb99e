//! What the user can do (open, select, close, cancel, pick a device) and what workers report,
//! applied to the state; then the [`Command`]s the state machine returns are carried out:
//! starting and ending workers, sending requests, setting performance marks.
//!
//! A `Copy` handle passed down to components as a prop. Not the place for decisions (those are
//! in `state`) or for the transport (that is `workers`).

use std::collections::HashMap;
use std::rc::Rc;

use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, FileList};

use super::perf;
use super::state::{AppState, Command, FileId};
use super::workers::{js_text, WorkerPool};
use crate::protocol::{ErrorReport, Request, Response};

/// How long after a load ends the next file's worker starts.
const SPARE_WORKER_DELAY: std::time::Duration = std::time::Duration::from_millis(1500);

/// The example snapshot shipped next to the page (`static/example.pickle`).
const EXAMPLE_URL: &str = "./example.pickle";
const EXAMPLE_NAME: &str = "example.pickle";

/// Receives a file's timeline answers (with a frame's pixels).
pub type ViewListener = Rc<dyn Fn(Response, Option<JsValue>)>;

#[derive(Clone, Copy)]
pub struct Actions {
    state: RwSignal<AppState>,
    workers: StoredValue<WorkerPool, LocalStorage>,
    /// The timeline view of each file, if one is shown.
    listeners: StoredValue<HashMap<FileId, ViewListener>, LocalStorage>,
}

impl Actions {
    pub fn new(state: RwSignal<AppState>) -> Self {
        Actions {
            state,
            workers: StoredValue::new_local(WorkerPool::warm()),
            listeners: StoredValue::new_local(HashMap::new()),
        }
    }

    /// Routes file `id`'s view answers (timeline, frames, hits…) to `listener`.
    pub fn listen(self, id: FileId, listener: ViewListener) {
        self.listeners.update_value(|l| {
            l.insert(id, listener);
        });
    }

    pub fn unlisten(self, id: FileId) {
        self.listeners.try_update_value(|l| l.remove(&id));
    }

    /// Sends a view request to file `id`'s worker.
    pub fn send(self, id: FileId, request: &Request) {
        self.workers.with_value(|pool| pool.send(id, request));
    }

    /// Opens every file of a file input or a drop.
    pub fn open_files(self, files: &FileList) {
        for i in 0..files.length() {
            if let Some(file) = files.item(i) {
                self.open_blob(file.name(), file.unchecked_into());
            }
        }
    }

    /// Opens one file (or any blob) in a new worker.
    pub fn open_blob(self, name: String, blob: Blob) {
        let size = blob.size() as u64;
        let Some((id, commands)) = self.state.try_update(|s| s.open(&name, size)) else {
            return;
        };
        for command in commands {
            match command {
                Command::Send(_, request @ Request::Load { .. }) => {
                    let spawned = self.workers.try_update_value(|pool| {
                        pool.spawn(
                            id,
                            &request,
                            &blob,
                            move |response, pixels| self.on_response(id, response, pixels),
                            move |message| self.on_worker_error(id, message),
                        )
                    });
                    if let Some(Err(error)) = spawned {
                        self.on_worker_error(id, error);
                    }
                }
                other => self.run(other),
            }
        }
    }

    /// Fetches the example snapshot shipped with the page and opens it.
    pub fn open_example(self) {
        wasm_bindgen_futures::spawn_local(async move {
            match fetch_blob(EXAMPLE_URL).await {
                Ok(blob) => self.open_blob(EXAMPLE_NAME.to_string(), blob),
                Err(message) => {
                    self.state.update(|s| {
                        s.open_failed(
                            EXAMPLE_NAME,
                            0,
                            ErrorReport {
                                message: format!("The example could not be loaded: {message}"),
                                offset: None,
                                hint: Some("Open a snapshot file of your own instead.".into()),
                            },
                        );
                    });
                }
            }
        });
    }

    pub fn select(self, id: FileId) {
        self.state.update(|s| s.select(id));
    }

    /// Closes a file, or cancels its load: its worker is ended at once.
    pub fn close(self, id: FileId) {
        let commands = self.state.try_update(|s| s.close(id)).unwrap_or_default();
        self.run_all(commands);
        self.prepare_spare_when_idle();
    }

    pub fn select_device(self, id: FileId, device: u32) {
        let commands = self
            .state
            .try_update(|s| s.select_device(id, device))
            .unwrap_or_default();
        self.run_all(commands);
    }

    fn on_response(self, id: FileId, response: Response, pixels: Option<JsValue>) {
        if is_view_answer(&response) {
            if let Some(listener) = self.listeners.with_value(|l| l.get(&id).cloned()) {
                listener(response, pixels);
            }
            return;
        }
        let finished = matches!(response, Response::Loaded(_) | Response::Failed(_));
        let commands = self
            .state
            .try_update(|s| s.apply(id, response))
            .unwrap_or_default();
        self.run_all(commands);
        if finished {
            self.prepare_spare_when_idle();
        }
    }

    /// Starts the next file's worker a moment after the last load ends (when no file is
    /// loading then), so its start-up competes neither with a load nor with drawing the file
    /// that just arrived.
    fn prepare_spare_when_idle(self) {
        set_timeout(
            move || {
                let loading = self
                    .state
                    .try_with_untracked(|s| s.files().iter().any(|f| f.is_loading()));
                if loading == Some(false) {
                    self.workers.try_update_value(WorkerPool::prepare_spare);
                }
            },
            SPARE_WORKER_DELAY,
        );
    }

    fn on_worker_error(self, id: FileId, message: String) {
        let error = ErrorReport {
            message: format!("The decoding worker stopped: {message}"),
            offset: None,
            hint: Some(
                "This is a problem of memsight or of this browser, not of your file.".into(),
            ),
        };
        let commands = self
            .state
            .try_update(|s| s.worker_failed(id, error))
            .unwrap_or_default();
        self.run_all(commands);
        self.prepare_spare_when_idle();
    }

    fn run_all(self, commands: Vec<Command>) {
        for command in commands {
            self.run(command);
        }
    }

    fn run(self, command: Command) {
        match command {
            Command::Send(id, request) => self.workers.with_value(|pool| pool.send(id, &request)),
            Command::Terminate(id) => self.workers.update_value(|pool| pool.terminate(id)),
            Command::Mark(name) => perf::mark(name),
            Command::MarkAfterRender(name) => perf::mark_after_render(name),
        }
    }
}

/// Answers that belong to the view that asked rather than to the page state.
fn is_view_answer(response: &Response) -> bool {
    matches!(
        response,
        Response::Timeline(_)
            | Response::Frame(_)
            | Response::Hit(_)
            | Response::Element { .. }
            | Response::Search(_)
            | Response::Minimap(_)
            | Response::ViewError(_)
    )
}

/// Fetches a same-origin URL as a blob.
async fn fetch_blob(url: &str) -> Result<Blob, String> {
    let window = web_sys::window().ok_or("no window")?;
    let response = JsFuture::from(window.fetch_with_str(url))
        .await
        .map_err(|e| js_text(&e))?;
    let response: web_sys::Response = response.dyn_into().map_err(|e| js_text(&e))?;
    if !response.ok() {
        return Err(format!(
            "HTTP {} {}",
            response.status(),
            response.status_text()
        ));
    }
    let blob = JsFuture::from(response.blob().map_err(|e| js_text(&e))?)
        .await
        .map_err(|e| js_text(&e))?;
    blob.dyn_into::<Blob>().map_err(|e| js_text(&e))
}
