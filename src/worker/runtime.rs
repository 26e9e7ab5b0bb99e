//! The worker's browser side: receiving the page's messages, reading the `File` (a plain
//! pickle as it decodes, see `feed`), posting events and answers, reporting panics. What it carries out is the core's
//! [`Session`] (pure, tested natively).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Array, Reflect};
use memsight_core::breakdown::service::{BreakdownRequest, Moment};
use memsight_core::protocol::{
    Answer, ErrorReport, FileEvent, FromWorker, Request, RequestId, ToWorker, ViewError,
};
use memsight_core::service::Reply;
use memsight_core::session::Session;
use memsight_core::timeline::service::{FirstFrame, TimelineRequest};
use memsight_core::timeline::{AxisMode, TimelineKind};
use wasm_bindgen::prelude::*;
use web_sys::{Blob, DedicatedWorkerGlobalScope, MessageEvent};

use super::blob::BlobSource;
use super::feed::{self, Readers};
use super::memory::{self, Shortage};
use super::read_ahead::ReadAhead;
use super::reader::{ChunkSource, ChunkedReader, CHUNK_BYTES};

/// Name of the queue `static/worker_loader.js` fills while the module loads.
const EARLY_QUEUE: &str = "__memsightQueue";

fn scope() -> DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

fn console_error(text: &str) {
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
    fn end(self, event: FileEvent, pixels: Option<Vec<u8>>) {
        match self {
            Outbox::Page => post(&FromWorker::Event(event), pixels),
            Outbox::Nowhere => encode_only(&FromWorker::Event(event)),
        }
    }

    /// Sends the answer to request `id`, with its attachment.
    fn answer(self, id: RequestId, result: Result<Reply<Answer>, ViewError>) {
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

fn post_event(event: FileEvent) {
    if let FileEvent::Progress { bytes_read, total } = event {
        memory::loading(bytes_read, total);
    }
    post(&FromWorker::Event(event), None);
}

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
    // A file already here is served at once: warming up first would keep it waiting longer
    // than it saves (the decoder's hot functions are optimised during a large file's first
    // parts anyway).
    if !busy.get() {
        match warm_up_blob() {
            Some(snapshot) => {
                mark(WARM_UP_START);
                warm_up_from(0, busy, snapshot, readers);
            }
            None => console_error("the warm-up snapshot cannot be made a Blob"),
        }
    }
}

/// A small generated snapshot (`tests/python/gen_snapshot.py --entries 1000 --seed 11
/// --depth-min 6 --depth-max 10`), loaded a few times at start-up.
const WARM_UP_SNAPSHOT: &[u8] = include_bytes!("warmup.pickle");

/// The first frame the warm-up's loads paint: its size only sets how much painting is trained.
const WARM_UP_FRAME: FirstFrame = FirstFrame {
    width: 1856,
    height: 560,
    dark: false,
    line_width: 1,
};

/// Loads the warm-up snapshot [`WARM_UP_ROUNDS`] times. WebAssembly engines compile a function
/// the first time it runs, from a quick baseline compiler, and switch it to optimised code only
/// once it has run for a while, and a long loop in a function called once runs from the code
/// it started with: the page starts the next file's worker ahead of need, so this makes the
/// decoder's hot functions fast before a real file arrives, and with them everything else a
/// load runs before the first frame (the analysis, the overview, the first view prepared and
/// painted, the messages as JSON), so none of it runs unoptimised while someone waits, nor is
/// optimised then on the other core. Each round loads the snapshot as a file is loaded,
/// through [`feed::load`] from a `Blob`, with the same clock and callbacks: the optimised code
/// then expects the calls a file's load makes (see [`clock`]). One round per task, from
/// `round` on, until `busy`: a file that arrives meanwhile waits for one round at most. Once
/// the decoder is warm ([`READERS_AFTER_ROUNDS`]), starts the reading worker a large file will
/// use and touches the buffers a small one is read into (both kept in `readers`); after the
/// last round, touches memory ahead (`touch_ahead`).
fn warm_up_from(round: usize, busy: Rc<Cell<bool>>, snapshot: Blob, readers: Readers) {
    if busy.get() {
        return measure_since(WARM_UP_START, "warm-up");
    }
    if round == READERS_AFTER_ROUNDS {
        *readers.ahead.borrow_mut() = ReadAhead::start();
        readers.streaming.touch();
    }
    if round == WARM_UP_ROUNDS {
        measure_since(WARM_UP_START, "warm-up");
        return super::touch_ahead::touch_from(Vec::new(), busy);
    }
    let session = Rc::new(RefCell::new(Session::new()));
    let total = WARM_UP_SNAPSHOT.len() as u64;
    wasm_bindgen_futures::spawn_local(async move {
        feed::load(
            session.clone(),
            snapshot.clone(),
            total,
            Some(WARM_UP_FRAME),
            Outbox::Nowhere,
            Readers {
                ahead: Rc::default(),
                streaming: readers.streaming.clone(),
            },
        )
        .await;
        // A round that failed has said why (`Outbox::Nowhere`); the next would fail alike.
        if !session.borrow().is_loaded() {
            return measure_since(WARM_UP_START, "warm-up");
        }
        let asked = asked_after_first_frame(&session.borrow());
        for request in asked {
            answer(&session, 0, request, Outbox::Nowhere);
        }
        gloo_timers::callback::Timeout::new(0, move || {
            warm_up_from(round + 1, busy, snapshot, readers)
        })
        .forget();
    });
}

/// What the page asks as soon as a file's first frame is on screen (the timeline's minimap
/// and its legend's totals at the peak, `ui/timeline`), of the default device, so that the
/// warm-up trains those answers too: the totals' first build of their index is otherwise
/// optimised on the other core during the first file's load. None without a loaded file.
fn asked_after_first_frame(session: &Session) -> Vec<Request> {
    let Some((device, _)) = session.analysed().and_then(|a| a.default_device()) else {
        return Vec::new();
    };
    vec![
        Request::Timeline(TimelineRequest::Minimap {
            device,
            kind: TimelineKind::Allocations,
            mode: AxisMode::Events,
            width: WARM_UP_FRAME.width,
        }),
        Request::Breakdown(BreakdownRequest::Totals {
            device,
            moment: Moment::Peak,
        }),
    ]
}

/// The warm-up snapshot as a `Blob`, as a file is.
fn warm_up_blob() -> Option<Blob> {
    let bytes = js_sys::Uint8Array::from(WARM_UP_SNAPSHOT);
    Blob::new_with_u8_array_sequence(&Array::of1(&bytes)).ok()
}

/// Rounds of the warm-up. V8 optimises a function once it has run a budget of code (about
/// 13 MB of WebAssembly executed): in 24 rounds the decoder's functions reach it, but the
/// ones that run once per load over every allocation (the overview, the timeline's layout and
/// band, their sorting) reached it only during the next file's load, and a 100k-entry load
/// then spent ~60 ms optimising them on the other core while the worker and the page needed
/// both (Chromium's `--js-flags=--trace-wasm-compilation-times`). After 160 rounds (~0.75 s
/// in all, off the page's thread), with the answers asked after the first frame, such a load
/// optimises under 1 ms of code before its first frame
/// (docs/decisions/0005-the-warm-up-runs-until-the-views-functions-are-optimised.md).
const WARM_UP_ROUNDS: usize = 160;

/// Rounds after which the decoder is warm and the readers are readied (`warm_up_from`), so
/// that a file that comes during the rest of the warm-up has them.
const READERS_AFTER_ROUNDS: usize = 24;

const WARM_UP_START: &str = "memsight:worker-warm-up";

/// Loads a file that is not a plain pickle (gzip, JSON, or no snapshot at all, which the core
/// tells) from a synchronous reader over `blob`, sending its events to `outbox`.
pub(super) fn load_read(
    session: &RefCell<Session>,
    blob: Blob,
    first_frame: Option<FirstFrame>,
    outbox: Outbox,
) {
    let source = match BlobSource::new(blob) {
        Ok(source) => source,
        Err(error) => {
            return outbox.event(FileEvent::Failed(ErrorReport::message(format!(
                "The file cannot be read in this browser: {error}"
            ))))
        }
    };
    let total = source.size();
    let reader = ChunkedReader::new(source, CHUNK_BYTES);
    let now = clock;
    let event = session
        .borrow_mut()
        .load_event(reader, total, &now, &mut |event| outbox.event(event));
    loaded(session, event, first_frame, &now, outbox);
}

/// Posts the end of a load. With a `first_frame` to paint, prepares the first view and paints
/// that frame first, so the page gets it with the news and shows the timeline at once;
/// without one, posts first and then prepares what the page asks for next (while the page
/// renders the file's overview), so its first timeline frame is only painted.
pub(super) fn loaded(
    session: &RefCell<Session>,
    event: FileEvent,
    first_frame: Option<FirstFrame>,
    now: &dyn Fn() -> f64,
    outbox: Outbox,
) {
    let FileEvent::Loaded(mut summary) = event else {
        return outbox.end(event, None);
    };
    let Some(first_frame) = first_frame else {
        outbox.end(FileEvent::Loaded(summary), None);
        return prepare(session, now);
    };
    prepare(session, now);
    mark(FIRST_FRAME_START);
    let painted = session
        .borrow_mut()
        .first_view(&first_frame, summary.default_device, now);
    measure_since(FIRST_FRAME_START, "first frame painted");
    let pixels = painted.map(|(view, pixels)| {
        summary.first_view = Some(Box::new(view));
        pixels
    });
    outbox.end(FileEvent::Loaded(summary), pixels);
}

fn prepare(session: &RefCell<Session>, now: &dyn Fn() -> f64) {
    mark(PREPARE_START);
    session.borrow_mut().prepare_first_view(now);
    measure_since(PREPARE_START, "first view prepared");
}

const FIRST_FRAME_START: &str = "memsight:worker-first-frame";
const PREPARE_START: &str = "memsight:worker-prepare";

/// The mark each answer's measure starts from.
const ANSWER_START: &str = "memsight:worker-ask";

/// Answers request `id` to `outbox`, measured (`memsight:worker <feature>`).
fn answer(session: &RefCell<Session>, id: RequestId, request: Request, outbox: Outbox) {
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
