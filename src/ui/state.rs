//! The page's state: which snapshot files are open, how far each one has loaded (and which
//! wait for their turn: loads run side by side up to the machine's cores and a memory
//! budget), which one and which device are shown — or the files side by side —, the labels
//! the user gave files, and the overviews received so far. Files fetched from the page's own
//! site (`?url=`) are listed while they download, then load like any other.
//!
//! Pure logic with no browser dependency, unit-tested natively. Every change goes through a method that returns the [`Command`]s the page
//! must carry out (start a file's worker, ask it for a view, end it, set a performance mark),
//! so the state machine is tested without workers. A file's lifecycle arrives as
//! [`FileEvent`]s; the answers to what the state asked for (overviews) come back to
//! [`AppState::answered`]. Views other than the overview ask for their own answers. Not the
//! place for rendering or for the worker transport: components read this state through a
//! signal, and `actions.rs` carries out the commands.

use std::collections::BTreeMap;

use crate::model::DeviceKind;
use crate::overview::service::OverviewRequest;
use crate::overview::Overview;
use crate::protocol::{typed, Answer, ErrorReport, FileEvent, LoadedSummary, Request, ViewError};
use crate::timeline::service::TimelineRequest;
use crate::timeline::TimelineKind;

/// Identifies one open file (and its worker) for the life of the page.
pub type FileId = u64;

/// User Timing marks set around every load (read by benchmarks with the User Timing API).
pub const MARK_FILE_START: &str = "memsight:file-start";
pub const MARK_DECODED: &str = "memsight:decoded";
pub const MARK_FIRST_PAINT: &str = "memsight:first-paint";

/// Where a file is in its life.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    /// Being fetched from the page's site (`?url=`); `total` when the server said it.
    Downloading { received: u64, total: Option<u64> },
    /// Waiting for other loads to end: loads run side by side only up to
    /// [`AppState::parallel_loads`] and [`LOAD_BUDGET_BYTES`].
    Queued,
    /// The worker is reading and decoding the file.
    Loading { bytes_read: u64, total: u64 },
    /// Decoded: the worker holds the model and answers view requests.
    Ready(LoadedSummary),
    /// Could not be decoded (or its worker died); the worker has been ended.
    Failed(ErrorReport),
}

/// One open snapshot file.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenFile {
    pub id: FileId,
    pub name: String,
    /// Size of the file in bytes.
    pub size: u64,
    pub status: Status,
    /// The device shown, once the file is decoded.
    pub device: Option<u32>,
    /// Overviews received (or why they could not be computed), by device.
    pub overviews: BTreeMap<u32, Result<Overview, ViewError>>,
    /// What the user calls the file (`ctx 512 / bf16`), shown instead of its name beside
    /// other files.
    pub label: Option<String>,
    /// The device a link asked for, shown once decoded if the file has it.
    pub wanted_device: Option<u32>,
    /// The first overview after loading has not been shown yet (for `memsight:first-paint`).
    awaiting_first_paint: bool,
}

impl OpenFile {
    /// Ready as a digest: its default device shown (else its first), no frame to wait for.
    fn hold_digest(&mut self, summary: LoadedSummary) {
        self.device = Some(summary.default_device)
            .filter(|d| summary.devices.contains(d))
            .or_else(|| summary.devices.first().copied());
        self.awaiting_first_paint = false;
        self.status = Status::Ready(summary);
    }

    /// The overview of the device shown (or its error), when it has arrived.
    pub fn overview(&self) -> Option<&Result<Overview, ViewError>> {
        self.device.and_then(|d| self.overviews.get(&d))
    }

    /// Devices the user can pick from (empty until decoded).
    pub fn devices(&self) -> &[u32] {
        match &self.status {
            Status::Ready(summary) => &summary.devices,
            _ => &[],
        }
    }

    /// Of [`OpenFile::devices`], those that used no memory.
    pub fn unused_devices(&self) -> &[u32] {
        match &self.status {
            Status::Ready(summary) => &summary.unused_devices,
            _ => &[],
        }
    }

    /// The kind of device its memory is on (CUDA until it is decoded).
    pub fn device_kind(&self) -> DeviceKind {
        match &self.status {
            Status::Ready(summary) => summary.device_kind,
            _ => DeviceKind::default(),
        }
    }

    pub fn is_loading(&self) -> bool {
        matches!(self.status, Status::Loading { .. })
    }

    /// Downloading, waiting for its turn, or loading.
    pub fn is_pending(&self) -> bool {
        matches!(
            self.status,
            Status::Downloading { .. } | Status::Loading { .. } | Status::Queued
        )
    }

    /// Only the snapshot's digest is open: the files table and comparisons have its
    /// numbers, the views of the trace need the snapshot.
    pub fn is_digest(&self) -> bool {
        matches!(&self.status, Status::Ready(summary) if summary.digest)
    }

    pub fn is_ready(&self) -> bool {
        matches!(self.status, Status::Ready(_))
    }

    /// A short status line for the file list.
    pub fn status_text(&self) -> String {
        match &self.status {
            Status::Downloading { received, total } => match total {
                Some(total) => format!(
                    "Downloading {}%",
                    crate::format::percent_of(*received, *total)
                ),
                None => format!("Downloading {}", crate::format::bytes(*received)),
            },
            Status::Queued => "Waiting".to_string(),
            Status::Loading { bytes_read, total } => {
                format!(
                    "Loading {}%",
                    crate::format::percent_of(*bytes_read, *total)
                )
            }
            Status::Ready(summary) => {
                let devices = match summary.devices.len() {
                    0 => "No devices".to_string(),
                    1 => "1 device".to_string(),
                    n => format!("{n} devices"),
                };
                if summary.digest {
                    format!("Digest, {}", devices.to_lowercase())
                } else {
                    devices
                }
            }
            Status::Failed(_) => "Failed".to_string(),
        }
    }

    /// A stable keyword for styling and tests: `downloading`, `queued`, `loading`, `ready` or
    /// `failed`.
    pub fn status_kind(&self) -> &'static str {
        match self.status {
            Status::Downloading { .. } => "downloading",
            Status::Queued => "queued",
            Status::Loading { .. } => "loading",
            Status::Ready(_) => "ready",
            Status::Failed(_) => "failed",
        }
    }
}

/// Something the page must do after a state change.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Start the file's worker and have it load the file.
    Load {
        file: FileId,
        name: String,
        size: u64,
    },
    /// Ask the file's worker; the answer comes back to [`AppState::answered`].
    Ask(FileId, Request),
    /// Ask the file's worker to prepare something a view will ask for; nobody waits for
    /// the answer.
    Prepare(FileId, Request),
    /// End the file's worker (frees its memory).
    Terminate(FileId),
    /// `performance.mark(name)` now.
    Mark(&'static str),
    /// `performance.mark(name)` once the page has rendered the current state.
    MarkAfterRender(&'static str),
}

/// The bytes of files loading at once, beyond the first: a model takes a few times its
/// file's size, and each worker has its own wasm memory.
pub const LOAD_BUDGET_BYTES: u64 = 1 << 30;

/// What the main area shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Showing {
    /// The selected file's views.
    #[default]
    File,
    /// Every open file side by side (the files table, ranks).
    Files,
    /// Two files (or two devices) compared.
    Compare,
}

/// All open files and the selection.
#[derive(Clone, Debug, PartialEq)]
pub struct AppState {
    files: Vec<OpenFile>,
    selected: Option<FileId>,
    showing: Showing,
    next_id: FileId,
    /// How many files load at once (the machine's cores).
    parallel_loads: usize,
}

impl Default for AppState {
    fn default() -> Self {
        Self::new()
    }
}

impl AppState {
    pub fn new() -> Self {
        Self::with_parallel_loads(4)
    }

    /// A state that loads up to `n` files at once (at least one).
    pub fn with_parallel_loads(n: usize) -> Self {
        AppState {
            files: Vec::new(),
            selected: None,
            showing: Showing::File,
            next_id: 0,
            parallel_loads: n.max(1),
        }
    }

    pub fn parallel_loads(&self) -> usize {
        self.parallel_loads
    }

    pub fn showing(&self) -> Showing {
        self.showing
    }

    /// Shows the files side by side, or two of them compared (or the selected file again).
    pub fn show(&mut self, showing: Showing) {
        self.showing = showing;
    }

    /// Names what the user calls a file (an empty label gives it back its name).
    pub fn set_label(&mut self, id: FileId, label: &str) {
        if let Some(file) = self.file_mut(id) {
            let label = label.trim();
            file.label = (!label.is_empty()).then(|| label.to_string());
        }
    }

    /// Whether a file of `size` bytes may start loading now.
    fn may_start(&self, size: u64) -> bool {
        let loading: Vec<&OpenFile> = self.files.iter().filter(|f| f.is_loading()).collect();
        let bytes: u64 = loading.iter().map(|f| f.size).sum();
        loading.is_empty()
            || (loading.len() < self.parallel_loads
                && bytes.saturating_add(size) <= LOAD_BUDGET_BYTES)
    }

    /// Starts the loads that waited for their turn, in the order they were opened.
    fn start_queued(&mut self) -> Vec<Command> {
        let mut commands = Vec::new();
        while let Some(next) = self.files.iter().position(|f| f.status == Status::Queued) {
            let size = self.files[next].size;
            if !self.may_start(size) {
                break;
            }
            let file = &mut self.files[next];
            file.status = Status::Loading {
                bytes_read: 0,
                total: size,
            };
            commands.push(Command::Mark(MARK_FILE_START));
            commands.push(Command::Load {
                file: file.id,
                name: file.name.clone(),
                size,
            });
        }
        commands
    }

    /// Open files, in the order they were opened.
    pub fn files(&self) -> &[OpenFile] {
        &self.files
    }

    pub fn file(&self, id: FileId) -> Option<&OpenFile> {
        self.position(id).map(|i| &self.files[i])
    }

    /// Where file `id` is in the list. Files are listed in the order they were opened, so
    /// their ids ascend and a binary search finds one (every file's list item looks its file
    /// up at each change of the state).
    fn position(&self, id: FileId) -> Option<usize> {
        self.files.binary_search_by_key(&id, |f| f.id).ok()
    }

    /// What each file is called beside the other open files, in the list's order: the label
    /// the user gave it, else the part of its name that differs from theirs
    /// ([`crate::format::names::distinct_parts`]: `ctx512_forward` among
    /// `…_ctx128_forward_…` and `…_ctx512_forward_…`). The names are compared once for all
    /// (a job's thousand files would compare them a thousand times, one title at a time).
    pub fn short_titles(&self) -> Vec<String> {
        let names: Vec<&str> = self.files.iter().map(|f| f.name.as_str()).collect();
        let parts = crate::format::names::distinct_parts(&names);
        self.files
            .iter()
            .zip(parts)
            .map(|(file, part)| match file.label.as_deref() {
                Some(label) if !label.trim().is_empty() => label.to_string(),
                _ => part,
            })
            .collect()
    }

    fn file_mut(&mut self, id: FileId) -> Option<&mut OpenFile> {
        self.position(id).map(|i| &mut self.files[i])
    }

    pub fn selected_id(&self) -> Option<FileId> {
        self.selected
    }

    pub fn selected(&self) -> Option<&OpenFile> {
        self.selected.and_then(|id| self.file(id))
    }

    /// Opens a file: adds it, selects it, and asks for its worker to be started with the
    /// returned `Load` command (the page spawns the worker; see `workers.rs`) — or queues it
    /// when enough files load already; its `Load` comes when another load ends.
    pub fn open(&mut self, name: &str, size: u64) -> (FileId, Vec<Command>) {
        let id = self.add(name, size, Status::Queued);
        self.showing = Showing::File;
        (id, self.start_queued())
    }

    /// Adds a file that failed before any worker was started (e.g. the example could not be
    /// fetched, or the worker could not be created).
    pub fn open_failed(&mut self, name: &str, size: u64, error: ErrorReport) -> FileId {
        self.add(name, size, Status::Failed(error))
    }

    /// Lists files of which only a digest is open (`memsight digest`; each with its
    /// summary): ready at once, with no worker to start, each showing its default device.
    /// The last is selected. Returns their ids in order.
    pub fn open_digests(&mut self, digests: Vec<(String, u64, LoadedSummary)>) -> Vec<FileId> {
        let ids = digests
            .into_iter()
            .map(|(name, size, summary)| {
                let id = self.add(&name, size, Status::Queued);
                if let Some(file) = self.file_mut(id) {
                    file.hold_digest(summary);
                }
                id
            })
            .collect();
        self.showing = Showing::File;
        ids
    }

    /// A download (`?url=`) ended with a digest of `size` bytes: the file is ready at once,
    /// held on the page like a digest opened from disk, with no worker.
    pub fn downloaded_digest(&mut self, id: FileId, size: u64, summary: LoadedSummary) {
        if let Some(file) = self.file_mut(id) {
            if matches!(file.status, Status::Downloading { .. }) {
                file.size = size;
                file.hold_digest(summary);
            }
        }
    }

    /// Lists a file that is being fetched (`?url=`) and selects it; it loads once
    /// [`Self::downloaded`] says its bytes are all here.
    pub fn open_download(&mut self, name: &str) -> FileId {
        let id = self.add(
            name,
            0,
            Status::Downloading {
                received: 0,
                total: None,
            },
        );
        self.showing = Showing::File;
        id
    }

    /// Bytes of a download received so far, of `total` when the server said it.
    pub fn download_progress(&mut self, id: FileId, received: u64, total: Option<u64>) {
        if let Some(file) = self.file_mut(id) {
            if matches!(file.status, Status::Downloading { .. }) {
                file.status = Status::Downloading { received, total };
                file.size = total.unwrap_or(received);
            }
        }
    }

    /// A download ended with `size` bytes: the file waits for its turn to load like any other.
    pub fn downloaded(&mut self, id: FileId, size: u64) -> Vec<Command> {
        match self.file_mut(id) {
            Some(file) if matches!(file.status, Status::Downloading { .. }) => {
                file.size = size;
                file.status = Status::Queued;
                self.start_queued()
            }
            _ => Vec::new(),
        }
    }

    /// A download could not be completed; no worker was started for it.
    pub fn download_failed(&mut self, id: FileId, error: ErrorReport) {
        if let Some(file) = self.file_mut(id) {
            if matches!(file.status, Status::Downloading { .. }) {
                file.status = Status::Failed(error);
            }
        }
    }

    /// Shows `device` of file `id` once it is decoded, if it has one (a link names it).
    pub fn want_device(&mut self, id: FileId, device: u32) -> Vec<Command> {
        let Some(file) = self.file_mut(id) else {
            return Vec::new();
        };
        file.wanted_device = Some(device);
        if file.is_ready() && file.device != Some(device) {
            self.select_device(id, device)
        } else {
            Vec::new()
        }
    }

    fn add(&mut self, name: &str, size: u64, status: Status) -> FileId {
        let id = self.next_id;
        self.next_id += 1;
        self.files.push(OpenFile {
            id,
            name: name.to_string(),
            size,
            status,
            device: None,
            overviews: BTreeMap::new(),
            label: None,
            wanted_device: None,
            awaiting_first_paint: true,
        });
        self.selected = Some(id);
        id
    }

    /// Shows another open file. Unknown ids are ignored.
    pub fn select(&mut self, id: FileId) {
        if self.file(id).is_some() {
            self.selected = Some(id);
            self.showing = Showing::File;
        }
    }

    /// Closes a file (or cancels its load): removes it and ends its worker. The selection moves
    /// to the file that took its place in the list, else the one before it.
    pub fn close(&mut self, id: FileId) -> Vec<Command> {
        let Some(index) = self.position(id) else {
            return Vec::new();
        };
        let file = self.files.remove(index);
        if self.selected == Some(id) {
            self.selected = self
                .files
                .get(index)
                .or_else(|| index.checked_sub(1).and_then(|i| self.files.get(i)))
                .map(|f| f.id);
        }
        let mut commands = match file.status {
            // A failed file's worker has already been ended; a queued or downloading one had
            // none (the page stops the download).
            Status::Failed(_) | Status::Queued | Status::Downloading { .. } => Vec::new(),
            _ => vec![Command::Terminate(id)],
        };
        commands.extend(self.start_queued());
        commands
    }

    /// Shows another device of a decoded file, asking its worker for the overview if it has
    /// not arrived yet.
    pub fn select_device(&mut self, id: FileId, device: u32) -> Vec<Command> {
        let Some(file) = self.file_mut(id) else {
            return Vec::new();
        };
        if !file.devices().contains(&device) {
            return Vec::new();
        }
        file.device = Some(device);
        // A digest has no overview to ask for: its view shows the digest's own numbers.
        if file.overviews.contains_key(&device) || file.is_digest() {
            Vec::new()
        } else {
            vec![Command::Ask(id, overview_request(device))]
        }
    }

    /// The worker of file `id` could not be started or died (a script error, not a message).
    pub fn worker_failed(&mut self, id: FileId, error: ErrorReport) -> Vec<Command> {
        self.on_event(id, FileEvent::Failed(error))
    }

    /// Applies a lifecycle event from the worker of file `id`. Events for closed files are
    /// ignored.
    pub fn on_event(&mut self, id: FileId, event: FileEvent) -> Vec<Command> {
        let Some(file) = self.file_mut(id) else {
            return Vec::new();
        };
        match event {
            FileEvent::Progress { bytes_read, total } => {
                if file.is_loading() {
                    file.status = Status::Loading { bytes_read, total };
                }
                Vec::new()
            }
            FileEvent::Loaded(mut summary) => {
                if !file.is_loading() {
                    return Vec::new();
                }
                let device = match file.wanted_device {
                    Some(wanted) if summary.devices.contains(&wanted) => Some(wanted),
                    _ if summary.devices.contains(&summary.default_device) => {
                        Some(summary.default_device)
                    }
                    _ => summary.devices.first().copied(),
                };
                // The default device's overview comes with the news (kept here, not twice).
                if let Some(overview) = summary.overview.take() {
                    file.overviews.insert(summary.default_device, Ok(overview));
                }
                file.device = device;
                let mut commands = vec![Command::Mark(MARK_DECODED)];
                match device {
                    Some(device) if file.overviews.contains_key(&device) => {
                        file.awaiting_first_paint = false;
                        commands.push(Command::MarkAfterRender(MARK_FIRST_PAINT));
                    }
                    Some(device) => commands.push(Command::Ask(id, overview_request(device))),
                    // Nothing to ask for: the empty snapshot is what gets painted.
                    None => {
                        file.awaiting_first_paint = false;
                        commands.push(Command::MarkAfterRender(MARK_FIRST_PAINT));
                    }
                }
                // The worker prepares the default device's timeline itself; another device's
                // is laid out while the page shows the overview, so the view finds it ready.
                if let Some(device) = device.filter(|d| *d != summary.default_device) {
                    commands.push(Command::Prepare(
                        id,
                        Request::Timeline(TimelineRequest::Layout {
                            device,
                            kind: TimelineKind::Allocations,
                            detail: None,
                        }),
                    ));
                }
                file.status = Status::Ready(summary);
                // The next file's load starts once this one's first questions are asked.
                commands.extend(self.start_queued());
                commands
            }
            FileEvent::Failed(error) => {
                if matches!(file.status, Status::Failed(_)) {
                    return Vec::new();
                }
                if let Status::Ready(_) = file.status {
                    // The model was lost with its worker: say so rather than keep stale views.
                    file.overviews.clear();
                    file.device = None;
                }
                let was_loading = file.is_loading();
                file.status = Status::Failed(error);
                let mut commands = vec![Command::Terminate(id)];
                if was_loading {
                    commands.extend(self.start_queued());
                }
                commands
            }
        }
    }

    /// The answer to what the state asked file `id`'s worker (`request`, sent by
    /// [`Command::Ask`]). An error is kept for the view that shows it; the file stays open.
    pub fn answered(
        &mut self,
        id: FileId,
        request: &Request,
        result: Result<Answer, ViewError>,
    ) -> Vec<Command> {
        let Some(file) = self.file_mut(id) else {
            return Vec::new();
        };
        if !matches!(file.status, Status::Ready(_)) {
            return Vec::new();
        }
        let Request::Overview(OverviewRequest { device }) = *request else {
            return Vec::new();
        };
        let overview = typed::<OverviewRequest>(result);
        file.overviews.insert(device, overview);
        if file.awaiting_first_paint && file.device == Some(device) {
            file.awaiting_first_paint = false;
            vec![Command::MarkAfterRender(MARK_FIRST_PAINT)]
        } else {
            Vec::new()
        }
    }
}

fn overview_request(device: u32) -> Request {
    Request::Overview(OverviewRequest { device })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overview::{Era, FormatFacts, Metric, MetricKey};

    fn summary(devices: Vec<u32>, default_device: u32) -> LoadedSummary {
        LoadedSummary {
            devices,
            unused_devices: Vec::new(),
            device_kind: DeviceKind::Cuda,
            default_device,
            default_reason: crate::protocol::DeviceChoice::Only,
            file_bytes: 100,
            decode_ms: 1.0,
            read_ms: 0.5,
            analyse_ms: 0.1,
            categorise_ms: 0.1,
            overview: None,
            first_view: None,
            digest: false,
        }
    }

    /// A summary that brings the default device's overview, as a worker's does.
    fn summary_with_overview(devices: Vec<u32>, default_device: u32) -> LoadedSummary {
        LoadedSummary {
            overview: Some(overview(default_device)),
            ..summary(devices, default_device)
        }
    }

    fn overview(device: u32) -> Overview {
        Overview {
            device,
            device_kind: DeviceKind::Cuda,
            metrics: vec![Metric {
                key: MetricKey::ReservedEndBytes,
                value: 42,
            }],
            format: FormatFacts {
                source: Default::default(),
                era: Era::Since2_5,
                segment_list_only: false,
            },
            allocator_settings: Vec::new(),
            warnings: Vec::new(),
            unused: false,
            unknown_actions: Vec::new(),
        }
    }

    /// The state's answer to its overview request for `device`.
    fn answer_overview(state: &mut AppState, id: FileId, overview: Overview) -> Vec<Command> {
        let request = overview_request(overview.device);
        state.answered(id, &request, Ok(Answer::Overview(overview)))
    }

    fn error(message: &str) -> ErrorReport {
        ErrorReport {
            message: message.into(),
            offset: Some(7),
            hint: None,
        }
    }

    #[test]
    fn opening_selects_the_file_and_starts_its_load() {
        let mut state = AppState::new();
        let (a, commands) = state.open("a.pickle", 100);
        assert_eq!(
            commands,
            vec![
                Command::Mark(MARK_FILE_START),
                Command::Load {
                    file: a,
                    name: "a.pickle".into(),
                    size: 100
                },
            ]
        );
        assert_eq!(state.selected_id(), Some(a));
        let (b, _) = state.open("b.pickle", 5);
        assert_ne!(a, b);
        assert_eq!(state.selected_id(), Some(b));
        assert_eq!(state.files().len(), 2);
        assert_eq!(state.selected().unwrap().status_text(), "Loading 0%");
        assert_eq!(state.selected().unwrap().status_kind(), "loading");
    }

    #[test]
    fn a_full_load_marks_decoded_asks_for_the_overview_and_marks_first_paint_once() {
        let mut state = AppState::new();
        let (id, _) = state.open("a.pickle", 100);
        assert!(state
            .on_event(
                id,
                FileEvent::Progress {
                    bytes_read: 40,
                    total: 100
                }
            )
            .is_empty());
        assert_eq!(state.file(id).unwrap().status_text(), "Loading 40%");

        let commands = state.on_event(id, FileEvent::Loaded(summary(vec![0, 1], 1)));
        assert_eq!(
            commands,
            vec![
                Command::Mark(MARK_DECODED),
                Command::Ask(id, overview_request(1)),
            ]
        );
        let file = state.file(id).unwrap();
        assert_eq!(file.device, Some(1));
        assert_eq!(file.devices(), &[0, 1]);
        assert_eq!(file.status_text(), "2 devices");
        assert!(file.overview().is_none());

        let commands = answer_overview(&mut state, id, overview(1));
        assert_eq!(commands, vec![Command::MarkAfterRender(MARK_FIRST_PAINT)]);
        assert_eq!(state.file(id).unwrap().overview(), Some(&Ok(overview(1))));

        // Switching devices asks once, and never marks first paint again.
        assert_eq!(
            state.select_device(id, 0),
            vec![Command::Ask(id, overview_request(0))]
        );
        assert!(answer_overview(&mut state, id, overview(0)).is_empty());
        assert!(state.select_device(id, 1).is_empty());
        assert_eq!(
            state
                .file(id)
                .unwrap()
                .overview()
                .unwrap()
                .as_ref()
                .unwrap()
                .device,
            1
        );
        // Devices the file does not have are refused.
        assert!(state.select_device(id, 9).is_empty());
        assert_eq!(state.file(id).unwrap().device, Some(1));
    }

    #[test]
    fn the_overview_that_comes_with_the_file_is_shown_without_asking() {
        let mut state = AppState::new();
        let (id, _) = state.open("a.pickle", 100);
        let commands = state.on_event(id, FileEvent::Loaded(summary_with_overview(vec![0, 1], 1)));
        assert_eq!(
            commands,
            vec![
                Command::Mark(MARK_DECODED),
                Command::MarkAfterRender(MARK_FIRST_PAINT)
            ]
        );
        let file = state.file(id).unwrap();
        assert_eq!(file.overview(), Some(&Ok(overview(1))));
        // Kept once: in the overviews, not in the summary.
        assert!(matches!(&file.status, Status::Ready(s) if s.overview.is_none()));
        assert!(answer_overview(&mut state, id, overview(1)).is_empty());
        // The other device's is asked for when it is picked.
        assert_eq!(
            state.select_device(id, 0),
            vec![Command::Ask(id, overview_request(0))]
        );
    }

    #[test]
    fn a_device_a_link_wants_is_asked_for_and_laid_out_and_the_default_kept() {
        let mut state = AppState::new();
        let (id, _) = state.open("a.pickle", 100);
        state.want_device(id, 0);
        let commands = state.on_event(id, FileEvent::Loaded(summary_with_overview(vec![0, 1], 1)));
        assert_eq!(
            commands,
            vec![
                Command::Mark(MARK_DECODED),
                Command::Ask(id, overview_request(0)),
                Command::Prepare(
                    id,
                    Request::Timeline(TimelineRequest::Layout {
                        device: 0,
                        kind: TimelineKind::Allocations,
                        detail: None
                    })
                ),
            ]
        );
        assert_eq!(
            answer_overview(&mut state, id, overview(0)),
            vec![Command::MarkAfterRender(MARK_FIRST_PAINT)]
        );
        assert!(state.select_device(id, 1).is_empty());
        assert_eq!(state.file(id).unwrap().overview(), Some(&Ok(overview(1))));
    }

    #[test]
    fn a_default_device_missing_from_the_list_falls_back_to_the_first() {
        let mut state = AppState::new();
        let (id, _) = state.open("a.pickle", 1);
        state.on_event(id, FileEvent::Loaded(summary(vec![2, 3], 0)));
        assert_eq!(state.file(id).unwrap().device, Some(2));
    }

    #[test]
    fn an_empty_snapshot_is_painted_without_an_overview_request() {
        let mut state = AppState::new();
        let (id, _) = state.open("empty.pickle", 1);
        let commands = state.on_event(id, FileEvent::Loaded(summary(vec![], 0)));
        assert_eq!(
            commands,
            vec![
                Command::Mark(MARK_DECODED),
                Command::MarkAfterRender(MARK_FIRST_PAINT)
            ]
        );
        assert_eq!(state.file(id).unwrap().status_text(), "No devices");
    }

    #[test]
    fn a_failure_ends_the_worker_and_leaves_other_files_intact() {
        let mut state = AppState::new();
        let (good, _) = state.open("good.pickle", 10);
        state.on_event(good, FileEvent::Loaded(summary(vec![0], 0)));
        answer_overview(&mut state, good, overview(0));
        let before = state.file(good).cloned();

        let (bad, _) = state.open("bad.pickle", 10);
        let commands = state.on_event(bad, FileEvent::Failed(error("truncated")));
        assert_eq!(commands, vec![Command::Terminate(bad)]);
        assert_eq!(
            state.file(bad).unwrap().status,
            Status::Failed(error("truncated"))
        );
        assert_eq!(state.file(good).cloned(), before);
        // Late messages from the ended worker change nothing.
        assert!(state
            .on_event(
                bad,
                FileEvent::Progress {
                    bytes_read: 5,
                    total: 10
                }
            )
            .is_empty());
        assert!(state
            .on_event(bad, FileEvent::Failed(error("again")))
            .is_empty());
        assert_eq!(
            state.file(bad).unwrap().status,
            Status::Failed(error("truncated"))
        );
        // Closing a failed file has no worker left to end.
        assert!(state.close(bad).is_empty());
        assert_eq!(state.selected_id(), Some(good));
    }

    #[test]
    fn a_worker_dying_after_load_drops_its_views() {
        let mut state = AppState::new();
        let (id, _) = state.open("a.pickle", 10);
        state.on_event(id, FileEvent::Loaded(summary(vec![0], 0)));
        answer_overview(&mut state, id, overview(0));
        let commands = state.worker_failed(id, error("worker crashed"));
        assert_eq!(commands, vec![Command::Terminate(id)]);
        let file = state.file(id).unwrap();
        assert!(file.overview().is_none());
        assert!(file.devices().is_empty());
    }

    #[test]
    fn digests_open_ready_without_a_worker_and_close_like_any_file() {
        let mut state = AppState::new();
        let digest = |devices: Vec<u32>, default_device| LoadedSummary {
            digest: true,
            ..summary(devices, default_device)
        };
        let ids = state.open_digests(vec![
            ("job/rank0.pickle".into(), 4000, digest(vec![0, 1], 1)),
            ("job/rank1.pickle".into(), 4000, digest(vec![2], 5)),
        ]);
        assert_eq!(ids.len(), 2);
        assert_eq!(state.selected_id(), Some(ids[1]));
        let first = state.file(ids[0]).unwrap();
        assert!(first.is_ready() && first.is_digest());
        assert_eq!(first.device, Some(1), "its default device");
        assert_eq!(first.status_text(), "Digest, 2 devices");
        assert_eq!(
            state.file(ids[1]).unwrap().device,
            Some(2),
            "a default device it lacks falls back to its first"
        );
        // Another device has no overview to ask for.
        assert!(state.select_device(ids[0], 0).is_empty());
        assert_eq!(state.file(ids[0]).unwrap().device, Some(0));
        // Closed, what holds the digest is ended as a worker is.
        assert_eq!(state.close(ids[0]), vec![Command::Terminate(ids[0])]);
    }

    #[test]
    fn files_are_found_by_id_after_others_close() {
        let mut state = AppState::new();
        let ids: Vec<FileId> = (0..7).map(|i| state.open(&format!("f{i}"), 1).0).collect();
        for &gone in &[ids[1], ids[4], ids[6]] {
            state.close(gone);
        }
        let (late, _) = state.open("late", 1);
        for &id in ids.iter().chain([&late]) {
            let closed = [ids[1], ids[4], ids[6]].contains(&id);
            assert_eq!(
                state.file(id).map(|f| f.id),
                (!closed).then_some(id),
                "{id}"
            );
        }
        assert_eq!(state.file(FileId::MAX), None);
    }

    #[test]
    fn a_downloaded_digest_is_ready_at_once_with_no_worker() {
        let mut state = AppState::new();
        let id = state.open_download("runs/rank0.digest.json");
        let summary = LoadedSummary {
            digest: true,
            ..summary(vec![0, 1], 1)
        };
        state.downloaded_digest(id, 5000, summary.clone());
        let file = state.file(id).unwrap();
        assert!(file.is_ready() && file.is_digest());
        assert_eq!((file.size, file.device), (5000, Some(1)));
        // Only a download becomes one: a file already loading is left alone.
        let (other, _) = state.open("b.pickle", 10);
        state.downloaded_digest(other, 5000, summary);
        assert!(!state.file(other).unwrap().is_digest());
    }

    #[test]
    fn closing_moves_the_selection_to_a_neighbour_and_ends_the_worker() {
        let mut state = AppState::new();
        let (a, _) = state.open("a", 1);
        let (b, _) = state.open("b", 1);
        let (c, _) = state.open("c", 1);
        state.select(b);
        assert_eq!(state.close(b), vec![Command::Terminate(b)]);
        assert_eq!(state.selected_id(), Some(c));
        assert_eq!(state.close(c), vec![Command::Terminate(c)]);
        assert_eq!(state.selected_id(), Some(a));
        // Closing a file that is not selected keeps the selection.
        let (d, _) = state.open("d", 1);
        state.select(a);
        state.close(d);
        assert_eq!(state.selected_id(), Some(a));
        state.close(a);
        assert_eq!(state.selected_id(), None);
        assert!(state.files().is_empty());
        // Unknown ids are ignored everywhere.
        assert!(state.close(a).is_empty());
        assert!(answer_overview(&mut state, a, overview(0)).is_empty());
        state.select(a);
        assert_eq!(state.selected_id(), None);
    }

    #[test]
    fn messages_for_a_closed_file_are_ignored() {
        let mut state = AppState::new();
        let (a, _) = state.open("a", 1);
        let (b, _) = state.open("b", 1);
        state.close(a);
        assert!(state
            .on_event(a, FileEvent::Loaded(summary(vec![0], 0)))
            .is_empty());
        assert_eq!(state.files().len(), 1);
        assert_eq!(state.selected_id(), Some(b));
    }

    #[test]
    fn a_file_that_failed_before_its_worker_started_is_listed() {
        let mut state = AppState::new();
        let id = state.open_failed("example.pickle", 0, error("HTTP 404"));
        assert_eq!(state.selected_id(), Some(id));
        assert_eq!(state.file(id).unwrap().status_kind(), "failed");
        assert!(state.close(id).is_empty());
    }

    #[test]
    fn progress_after_load_does_not_reset_the_status() {
        let mut state = AppState::new();
        let (id, _) = state.open("a", 10);
        state.on_event(id, FileEvent::Loaded(summary(vec![0], 0)));
        state.on_event(
            id,
            FileEvent::Progress {
                bytes_read: 1,
                total: 10,
            },
        );
        assert_eq!(state.file(id).unwrap().status_kind(), "ready");
        // A second Loaded is ignored too.
        assert!(state
            .on_event(id, FileEvent::Loaded(summary(vec![0], 0)))
            .is_empty());
    }

    #[test]
    fn an_overview_that_cannot_be_computed_is_an_error_in_its_view_and_the_file_stays() {
        let mut state = AppState::new();
        let (id, _) = state.open("a.pickle", 10);
        state.on_event(id, FileEvent::Loaded(summary(vec![0, 1], 0)));
        let refused = ViewError::NoSuchDevice { device: 0 };
        let commands = state.answered(id, &overview_request(0), Err(refused.clone()));
        // Nothing is ended: the error is shown where the overview would be.
        assert_eq!(commands, vec![Command::MarkAfterRender(MARK_FIRST_PAINT)]);
        let file = state.file(id).unwrap();
        assert_eq!(file.status_kind(), "ready");
        assert_eq!(file.overview(), Some(&Err(refused)));
        // The other device still asks for and shows its overview.
        assert_eq!(
            state.select_device(id, 1),
            vec![Command::Ask(id, overview_request(1))]
        );
        answer_overview(&mut state, id, overview(1));
        assert_eq!(state.file(id).unwrap().overview(), Some(&Ok(overview(1))));
    }

    #[test]
    fn answers_for_a_file_not_ready_or_to_other_requests_change_nothing() {
        let mut state = AppState::new();
        let (id, _) = state.open("a.pickle", 10);
        // Still loading.
        assert!(answer_overview(&mut state, id, overview(0)).is_empty());
        assert!(state.file(id).unwrap().overviews.is_empty());
        state.on_event(id, FileEvent::Loaded(summary(vec![0], 0)));
        let layout = Request::Timeline(TimelineRequest::Layout {
            device: 0,
            kind: TimelineKind::Allocations,
            detail: None,
        });
        assert!(state
            .answered(id, &layout, Err(ViewError::NotLoaded))
            .is_empty());
        assert!(state.file(id).unwrap().overviews.is_empty());
    }

    fn loads(commands: &[Command]) -> Vec<FileId> {
        commands
            .iter()
            .filter_map(|c| match c {
                Command::Load { file, .. } => Some(*file),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn loads_wait_for_their_turn_beyond_the_cores_and_the_memory_budget() {
        let mut state = AppState::with_parallel_loads(2);
        let (a, c) = state.open("a", 100);
        assert_eq!(loads(&c), [a]);
        let (b, c) = state.open("b", 100);
        assert_eq!(loads(&c), [b]);
        let (q, c) = state.open("c", 100);
        assert!(loads(&c).is_empty());
        assert_eq!(state.file(q).unwrap().status_kind(), "queued");
        assert_eq!(state.file(q).unwrap().status_text(), "Waiting");
        let (r, _) = state.open("d", 100);
        // A load that ends starts the next in the order they were opened.
        let c = state.on_event(a, FileEvent::Loaded(summary(vec![0], 0)));
        assert_eq!(loads(&c), [q]);
        // Closing a queued file ends no worker; a failed load lets the next start.
        assert_eq!(state.close(r), Vec::new());
        let (s, _) = state.open("e", 100);
        let c = state.on_event(b, FileEvent::Failed(error("bad")));
        assert_eq!(loads(&c), [s]);
        // Cancelling a load starts the next too.
        let (t, _) = state.open("f", 100);
        let c = state.close(q);
        assert_eq!(loads(&c), [t]);

        // Memory: a second large file waits even with a core free; the first never waits.
        let mut state = AppState::with_parallel_loads(8);
        let (big, c) = state.open("big", LOAD_BUDGET_BYTES + 1);
        assert_eq!(loads(&c), [big]);
        let (small, c) = state.open("small", 1);
        assert!(loads(&c).is_empty());
        let c = state.on_event(big, FileEvent::Loaded(summary(vec![0], 0)));
        assert_eq!(loads(&c), [small]);
    }

    /// What file `id` is called beside the others.
    fn title(state: &AppState, id: FileId) -> String {
        let position = state.files().iter().position(|f| f.id == id).unwrap();
        state.short_titles().swap_remove(position)
    }

    #[test]
    fn labels_and_what_the_main_area_shows() {
        let mut state = AppState::new();
        let (a, _) = state.open("runs/memory_ctx128_forward_bf16.pickle", 1);
        assert_eq!(title(&state, a), "memory_ctx128_forward_bf16.pickle");
        let (b, _) = state.open("runs/memory_ctx512_forward_bf16.pickle", 1);
        // Beside another file, what tells them apart.
        assert_eq!(title(&state, a), "ctx128");
        assert_eq!(title(&state, b), "ctx512");
        state.set_label(a, "  ctx 128 / bf16 ");
        assert_eq!(title(&state, a), "ctx 128 / bf16");
        state.set_label(a, " ");
        assert_eq!(state.file(a).unwrap().label, None);
        assert_eq!(title(&state, a), "ctx128");
        state.close(b);
        state.show(Showing::Files);
        assert_eq!(state.showing(), Showing::Files);
        state.select(a);
        assert_eq!(state.showing(), Showing::File);
        state.show(Showing::Compare);
        state.open("b.pickle", 1);
        assert_eq!(state.showing(), Showing::File);
    }

    #[test]
    fn a_download_is_listed_then_loads_in_its_turn() {
        let mut state = AppState::with_parallel_loads(1);
        let (busy, _) = state.open("busy.pickle", 10);
        let id = state.open_download("runs/rank0.pickle");
        assert_eq!(state.selected_id(), Some(id));
        let file = state.file(id).unwrap();
        assert_eq!(file.status_kind(), "downloading");
        assert!(file.is_pending() && !file.is_loading());
        assert_eq!(file.status_text(), "Downloading 0 B");
        state.download_progress(id, 256, Some(1024));
        assert_eq!(state.file(id).unwrap().status_text(), "Downloading 25%");
        assert_eq!(state.file(id).unwrap().size, 1024);
        // A download never takes a load's turn; once complete it waits for one.
        assert!(state.downloaded(id, 1024).is_empty());
        assert_eq!(state.file(id).unwrap().status, Status::Queued);
        let commands = state.on_event(busy, FileEvent::Loaded(summary(vec![0], 0)));
        assert_eq!(loads(&commands), [id]);
        // Late progress and a second end change nothing.
        state.download_progress(id, 1, None);
        assert!(state.downloaded(id, 5).is_empty());
        assert_eq!(state.file(id).unwrap().size, 1024);
    }

    #[test]
    fn a_failed_or_cancelled_download_has_no_worker_to_end() {
        let mut state = AppState::new();
        let id = state.open_download("a.pickle");
        state.download_failed(id, error("HTTP 404 Not Found"));
        assert_eq!(state.file(id).unwrap().status_kind(), "failed");
        let other = state.open_download("b.pickle");
        assert!(state.close(other).is_empty());
        assert!(state.file(other).is_none());
    }

    #[test]
    fn a_wanted_device_is_shown_when_the_file_has_it() {
        let mut state = AppState::new();
        let (id, _) = state.open("a.pickle", 1);
        assert!(state.want_device(id, 1).is_empty());
        let commands = state.on_event(id, FileEvent::Loaded(summary(vec![0, 1, 2], 2)));
        assert_eq!(state.file(id).unwrap().device, Some(1));
        assert!(commands.contains(&Command::Ask(id, overview_request(1))));
        // A device the file lacks leaves the page's own choice.
        let (other, _) = state.open("b.pickle", 1);
        state.want_device(other, 7);
        state.on_event(other, FileEvent::Loaded(summary(vec![0, 2], 2)));
        assert_eq!(state.file(other).unwrap().device, Some(2));
        // Asked once decoded, it moves there at once.
        assert_eq!(
            state.want_device(other, 0),
            vec![Command::Ask(other, overview_request(0))]
        );
        assert_eq!(state.file(other).unwrap().device, Some(0));
    }
}
