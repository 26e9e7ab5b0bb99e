//! What the user can do (open, select, close, cancel, pick a device) and what workers report,
//! applied to the state; then the [`Command`]s the state machine returns are carried out:
//! starting and ending workers, asking them, setting performance marks. Views ask their
//! file's worker through a [`ViewAsker`] (`asker`), the only way to: answers come typed.
//!
//! A `Copy` handle provided in context by whoever starts a page (the app, an embedded viewer,
//! a rehearsal) and read by components with [`use_actions`], never passed as a prop. Not the
//! place for decisions (those are in `state` and the views) or for the transport (that is
//! `workers`).

use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, Blob, FileList};

mod asker;

pub use asker::{FilesAsker, ViewAsker};

use super::opening;
use super::page_query::FetchProblem;
use super::perf;
use super::plot_size::{self, PlotWidths, Window};
use super::remote;
use super::requests::ScopeId;
use super::state::{AppState, Command, FileId, Showing};
use super::startup::plan::{Opening, StartupPlan};
use super::workers::{js_text, Answered, WorkerPool};
use crate::protocol::{ErrorReport, FileEvent, Request, RequestId, ToWorker};
use crate::session::digested::DigestedFile;
use crate::timeline::service::{FirstFrame, FirstView};

/// How long after a load ends the next file's worker starts.
const SPARE_WORKER_DELAY: std::time::Duration = std::time::Duration::from_millis(1500);

/// The example snapshot shipped next to the page (`static/example.pickle`).
const EXAMPLE_URL: &str = "./example.pickle";
const EXAMPLE_NAME: &str = "example.pickle";

/// The scope of the page state's own requests (overviews); views get scopes of their own.
const STATE_SCOPE: ScopeId = 0;

#[derive(Clone, Copy)]
pub struct Actions {
    state: RwSignal<AppState>,
    workers: StoredValue<WorkerPool, LocalStorage>,
    /// The last scope handed to a view.
    last_scope: StoredValue<ScopeId, LocalStorage>,
    /// The bytes of files opened and not yet handed to a worker (those waiting their turn).
    blobs: StoredValue<std::collections::HashMap<FileId, Blob>, LocalStorage>,
    /// Downloads in progress (`?url=`), to stop when their file is closed.
    downloads: StoredValue<std::collections::HashMap<FileId, AbortController>, LocalStorage>,
    /// What is done ahead of need (`startup::plan`): workers started ahead, a first frame
    /// painted with the file, performance marks.
    plan: StartupPlan,
    /// The plot's width the page has laid out, shared with the rehearsal's actions, which lay
    /// one out before any file is opened.
    plot_widths: StoredValue<PlotWidths, LocalStorage>,
    /// The first view each file's worker painted with the news of its load, with its pixels,
    /// until the file's timeline takes it.
    first_views:
        StoredValue<std::collections::HashMap<FileId, (Box<FirstView>, JsValue)>, LocalStorage>,
}

/// The actions of the page this component is part of.
pub fn use_actions() -> Actions {
    use_context::<Actions>().expect("the page provides its actions")
}

impl Actions {
    /// The actions of a page started as `plan` says.
    pub fn new(state: RwSignal<AppState>, plan: StartupPlan) -> Self {
        let plot_widths = StoredValue::new_local(PlotWidths::default());
        Self::with(state, plan, plot_widths)
    }

    /// The actions of a rehearsal (`startup::rehearsal`): its own workers and its plan
    /// (`Opening::Rehearsal`). A rehearsal laid out as the `page`'s views are shares the plot
    /// widths it lays out with the page.
    pub fn rehearsing(state: RwSignal<AppState>, page: Option<Actions>) -> Self {
        let plot_widths = page.map_or_else(
            || StoredValue::new_local(PlotWidths::default()),
            |page| page.plot_widths,
        );
        Self::with(state, StartupPlan::of(Opening::Rehearsal), plot_widths)
    }

    fn with(
        state: RwSignal<AppState>,
        plan: StartupPlan,
        plot_widths: StoredValue<PlotWidths, LocalStorage>,
    ) -> Self {
        Actions {
            state,
            workers: StoredValue::new_local(WorkerPool::of(&plan)),
            last_scope: StoredValue::new_local(STATE_SCOPE),
            blobs: StoredValue::new_local(Default::default()),
            downloads: StoredValue::new_local(Default::default()),
            plan,
            plot_widths,
            first_views: StoredValue::new_local(Default::default()),
        }
    }

    /// The first view the worker of file `id` painted, if it was painted for `device`. Taken
    /// by the file's first timeline, whichever device it shows: a later one is not first.
    pub fn take_first_view(self, id: FileId, device: u32) -> Option<(Box<FirstView>, JsValue)> {
        self.first_views
            .try_update_value(|views| views.remove(&id))
            .flatten()
            .filter(|(view, _)| view.request.device == device)
    }

    /// The first frame a file's worker paints before it reports the file loaded: the
    /// timeline's first frame as it will be asked for, when the page expects its plot's size
    /// and will show the file alone.
    fn first_frame(self, id: FileId) -> Option<FirstFrame> {
        if !self.plan.first_frame_with_file {
            return None;
        }
        let shown_alone = self
            .state
            .try_with_untracked(|s| s.showing() == Showing::File && s.selected_id() == Some(id))
            .unwrap_or(false);
        let window = Window::now().filter(|_| shown_alone)?;
        let width = self.expected_plot_width(window)?;
        let size = window.plot_size(width, super::plot_share::stored_plot_share());
        let (width, height, line_width) = plot_size::device_pixels(size);
        Some(FirstFrame {
            width,
            height,
            dark: super::theme::prefers_dark(),
            line_width,
        })
    }

    /// A timeline's plot was laid out `width` CSS pixels wide in `window`.
    pub fn remember_plot_width(self, window: Window, width: f64) {
        self.plot_widths
            .try_update_value(|w| w.remember(window, width));
    }

    /// The width a plot laid out in `window` is expected to have, if the page has laid one
    /// out in a window of that size.
    pub fn expected_plot_width(self, window: Window) -> Option<f64> {
        self.plot_widths
            .try_with_value(|w| w.expected(window))
            .flatten()
    }

    /// `performance.mark(name)` once the page has rendered what changed (none in a rehearsal).
    pub fn mark_after_render(self, name: &'static str) {
        if self.plan.performance_marks {
            perf::mark_after_render(name);
        }
    }

    /// A scope for one view's requests, to forget them all when the view goes away.
    fn new_scope(self) -> ScopeId {
        self.last_scope
            .try_update_value(|s| {
                *s += 1;
                *s
            })
            .unwrap_or(STATE_SCOPE)
    }

    /// Asks file `id`'s worker; `on_answer` receives the answer (or the view's error) unless
    /// the scope is forgotten first. `None` when the file has no worker any more.
    fn ask(
        self,
        id: FileId,
        scope: ScopeId,
        request: Request,
        on_answer: impl FnOnce(Answered) + 'static,
    ) -> Option<RequestId> {
        self.workers
            .try_with_value(|pool| pool.ask(id, scope, request, Box::new(on_answer)))
            .flatten()
    }

    /// Sends a request to file `id`'s worker whose answer nobody waits for.
    fn tell(self, id: FileId, request: Request) {
        self.workers.try_with_value(|pool| pool.tell(id, request));
    }

    /// Drops the answers still to come for `scope`'s requests (the view went away).
    fn forget_scope(self, id: FileId, scope: ScopeId) {
        self.workers
            .try_with_value(|pool| pool.forget_scope(id, scope));
    }

    /// Opens every file of a file input, a folder or a drop; several at once are shown side
    /// by side (a folder's files by their path in it, so ranks and iterations read from it).
    pub fn open_files(self, files: &FileList) {
        let named: Vec<(String, Blob)> = (0..files.length())
            .filter_map(|i| files.item(i))
            .map(|file| {
                // A folder's files are named by their path in it (`iteration_3/rank5_…`).
                let path = js_sys::Reflect::get(&file, &"webkitRelativePath".into())
                    .ok()
                    .and_then(|p| p.as_string())
                    .unwrap_or_default();
                let name = if path.is_empty() { file.name() } else { path };
                (name, file.unchecked_into())
            })
            .collect();
        self.open_named(named);
    }

    /// Opens files named by their path, in the order people read them (rank2 before rank10,
    /// whatever the browser's order); several at once are shown side by side. Digests among
    /// them are read on the page first (`opening.rs`) and open at once, with no worker.
    pub fn open_named(self, mut named: Vec<(String, Blob)>) {
        named.sort_by(|(a, _), (b, _)| crate::model::text::natural_cmp(a, b));
        let several = named.len() >= 2;
        if !named.iter().any(|(name, _)| opening::may_be_digest(name)) {
            self.open_snapshots(named, several);
            return;
        }
        wasm_bindgen_futures::spawn_local(async move {
            let sorted = opening::sort_out(named).await;
            let several = several || sorted.digests.len() >= 2;
            for (name, size, report) in sorted.unreadable {
                self.state
                    .try_update(|s| s.open_failed(&name, size, report));
            }
            self.open_digests(sorted.digests);
            self.open_snapshots(sorted.snapshots, several);
        });
    }

    /// Lists files of which only a digest is open, each held in place of a worker.
    fn open_digests(self, digests: Vec<(String, u64, DigestedFile)>) {
        if digests.is_empty() {
            return;
        }
        let (listed, held): (Vec<_>, Vec<_>) = digests
            .into_iter()
            .map(|(name, size, digest)| ((name, size, digest.summary()), digest))
            .unzip();
        // One change of the state for all: a job's thousand digests lay the page out once.
        let Some(ids) = self.state.try_update(|s| s.open_digests(listed)) else {
            return;
        };
        self.workers.update_value(|pool| {
            for (id, digest) in ids.into_iter().zip(held) {
                pool.hold_digest(id, digest);
            }
        });
    }

    /// The digest held for file `id`, when only its digest is open.
    pub fn digest(self, id: FileId) -> Option<std::rc::Rc<DigestedFile>> {
        self.workers
            .try_with_value(|pool| pool.digest(id))
            .flatten()
    }

    /// Queues snapshots for their workers; several opened together are shown side by side.
    fn open_snapshots(self, named: Vec<(String, Blob)>, several: bool) {
        let mut commands = Vec::new();
        for (name, blob) in named {
            if let Some((_, started)) = self.queue_blob(name, blob) {
                commands.extend(started);
            }
        }
        if several {
            self.show(Showing::Files);
        }
        // Loads start once the page shows what it will show: files side by side get no first
        // frame painted for a file shown alone.
        self.run_all(commands);
    }

    /// Opens one file (or any blob) in a new worker, now or when its turn comes.
    pub fn open_blob(self, name: String, blob: Blob) -> Option<FileId> {
        let (id, commands) = self.queue_blob(name, blob)?;
        self.run_all(commands);
        Some(id)
    }

    /// Lists a file with its bytes kept for its load; returns what starts it, to be run.
    fn queue_blob(self, name: String, blob: Blob) -> Option<(FileId, Vec<Command>)> {
        let size = blob.size() as u64;
        let (id, commands) = self.state.try_update(|s| s.open(&name, size))?;
        self.blobs.update_value(|blobs| {
            blobs.insert(id, blob);
        });
        Some((id, commands))
    }

    /// Opens snapshots hosted beside the page (the page's `?url=`), each listed while it
    /// downloads, in the order people read their names; several are shown side by side.
    /// Returns the files in that order.
    pub fn open_urls(self, urls: &[String]) -> Vec<FileId> {
        let mut resolved: Vec<_> = urls.iter().map(|url| remote::resolve(url)).collect();
        let name = |r: &Result<remote::Resolved, (String, FetchProblem)>| match r {
            Ok(r) => r.name.clone(),
            Err((name, _)) => name.clone(),
        };
        resolved.sort_by(|a, b| crate::model::text::natural_cmp(&name(a), &name(b)));
        let ids: Vec<FileId> = resolved
            .into_iter()
            .filter_map(|r| match r {
                Ok(resolved) => self.download(resolved),
                Err((name, problem)) => self
                    .state
                    .try_update(|s| s.open_failed(&name, 0, problem.report())),
            })
            .collect();
        if ids.len() >= 2 {
            self.show(Showing::Files);
        }
        ids
    }

    /// Lists a file and fetches it; once all its bytes are here it loads like a dropped file.
    fn download(self, resolved: remote::Resolved) -> Option<FileId> {
        let id = self.state.try_update(|s| s.open_download(&resolved.name))?;
        let controller = AbortController::new().ok()?;
        let signal = controller.signal();
        self.downloads.update_value(|d| {
            d.insert(id, controller);
        });
        wasm_bindgen_futures::spawn_local(async move {
            // Progress at most every 1/200th of the file (or MiB): a state change re-renders
            // the list, and a large file comes in thousands of chunks.
            let mut shown = 0u64;
            let progress = |received: u64, total: Option<u64>| {
                let step = total.map_or(1 << 20, |t| (t / 200).max(1 << 20));
                if received == 0 || received - shown >= step || Some(received) == total {
                    shown = received;
                    self.state
                        .try_update(|s| s.download_progress(id, received, total));
                }
            };
            let fetched = remote::fetch(&resolved, &signal, progress).await;
            let still_open = self
                .downloads
                .try_update_value(|d| d.remove(&id).is_some())
                .unwrap_or(false);
            if !still_open {
                return;
            }
            match fetched {
                // A digest hosted beside the page is held here, as one opened from disk is.
                Ok(blob) if opening::may_be_digest(&resolved.name) => {
                    let size = blob.size() as u64;
                    let sorted = opening::sort_out(vec![(resolved.name.clone(), blob)]).await;
                    if let Some((_, _, digest)) = sorted.digests.into_iter().next() {
                        let summary = digest.summary();
                        self.state
                            .try_update(|s| s.downloaded_digest(id, size, summary));
                        self.workers
                            .update_value(|pool| pool.hold_digest(id, digest));
                    } else if let Some((_, _, report)) = sorted.unreadable.into_iter().next() {
                        self.state.try_update(|s| s.download_failed(id, report));
                    } else if let Some((_, blob)) = sorted.snapshots.into_iter().next() {
                        self.loaded_download(id, blob);
                    }
                }
                Ok(blob) => self.loaded_download(id, blob),
                Err(Some(problem)) => {
                    self.state
                        .try_update(|s| s.download_failed(id, problem.report()));
                }
                Err(None) => {}
            }
        });
        Some(id)
    }

    /// A download's bytes are all here: it loads like a dropped file.
    fn loaded_download(self, id: FileId, blob: Blob) {
        let size = blob.size() as u64;
        self.blobs.update_value(|blobs| {
            blobs.insert(id, blob);
        });
        let commands = self
            .state
            .try_update(|s| s.downloaded(id, size))
            .unwrap_or_default();
        self.run_all(commands);
    }

    /// Shows the files side by side, two compared, or the selected file.
    pub fn show(self, showing: Showing) {
        self.state.update(|s| s.show(showing));
    }

    /// Names what the user calls a file.
    pub fn set_label(self, id: FileId, label: &str) {
        self.state.update(|s| s.set_label(id, label));
    }

    /// Fetches the example snapshot shipped with the page and opens it.
    pub fn open_example(self) {
        wasm_bindgen_futures::spawn_local(async move {
            match fetch_blob(EXAMPLE_URL).await {
                Ok(blob) => {
                    self.open_blob(EXAMPLE_NAME.to_string(), blob);
                }
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

    /// Closes a file, or cancels its download or load: its worker is ended at once.
    pub fn close(self, id: FileId) {
        self.blobs.update_value(|blobs| {
            blobs.remove(&id);
        });
        self.first_views.update_value(|views| {
            views.remove(&id);
        });
        if let Some(Some(download)) = self.downloads.try_update_value(|d| d.remove(&id)) {
            download.abort();
        }
        let commands = self.state.try_update(|s| s.close(id)).unwrap_or_default();
        self.run_all(commands);
        self.prepare_spare_when_idle();
    }

    /// Shows `device` of file `id` once it is decoded (a link names it).
    pub fn want_device(self, id: FileId, device: u32) {
        let commands = self
            .state
            .try_update(|s| s.want_device(id, device))
            .unwrap_or_default();
        self.run_all(commands);
    }

    pub fn select_device(self, id: FileId, device: u32) {
        let commands = self
            .state
            .try_update(|s| s.select_device(id, device))
            .unwrap_or_default();
        self.run_all(commands);
    }

    fn on_event(self, id: FileId, mut event: FileEvent, attachment: Option<JsValue>) {
        let finished = matches!(event, FileEvent::Loaded(_) | FileEvent::Failed(_));
        // Kept before the state changes: the file's timeline takes it as it is created.
        if let (FileEvent::Loaded(summary), Some(pixels)) = (&mut event, attachment) {
            if let Some(view) = summary.first_view.take() {
                self.first_views.update_value(|views| {
                    views.insert(id, (view, pixels));
                });
            }
        }
        let commands = self
            .state
            .try_update(|s| s.on_event(id, event))
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
        if !self.plan.spare_worker_after_load {
            return;
        }
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
            Command::Ask(id, request) => {
                let asked = request.clone();
                self.ask(id, STATE_SCOPE, request, move |answered| {
                    let commands = self
                        .state
                        .try_update(|s| s.answered(id, &asked, answered.result))
                        .unwrap_or_default();
                    self.run_all(commands);
                });
            }
            Command::Prepare(id, request) => self.tell(id, request),
            Command::Terminate(id) => {
                self.workers.try_update_value(|pool| pool.terminate(id));
            }
            Command::Mark(name) => {
                if self.plan.performance_marks {
                    perf::mark(name);
                }
            }
            Command::MarkAfterRender(name) => self.mark_after_render(name),
            Command::Load { file, name, size } => {
                let Some(blob) = self
                    .blobs
                    .try_update_value(|blobs| blobs.remove(&file))
                    .flatten()
                else {
                    self.on_worker_error(
                        file,
                        "a load was asked for without the file's bytes".into(),
                    );
                    return;
                };
                let load = ToWorker::Load {
                    name,
                    size,
                    first_frame: self.first_frame(file),
                };
                let spawned = self.workers.try_update_value(|pool| {
                    pool.spawn(
                        file,
                        &load,
                        &blob,
                        move |event, attachment| self.on_event(file, event, attachment),
                        move |message| self.on_worker_error(file, message),
                    )
                });
                if let Some(Err(error)) = spawned {
                    self.on_worker_error(file, error);
                }
            }
        }
    }
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
