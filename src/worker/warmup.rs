//! The warm-up: a worker started ahead of need loads a small bundled snapshot again and again
//! until the functions a load runs are optimised, then readies the readers and touches memory
//! ahead, and stops as soon as a file arrives
//! (docs/decisions/0005-the-warm-up-runs-until-the-views-functions-are-optimised.md). Not the
//! place for loading a file (`feed`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::Array;
use memsight_core::analysis::axis::AxisMode;
use memsight_core::analysis::moment::Moment;
use memsight_core::breakdown::service::TotalsRequest;
use memsight_core::protocol::Request;
use memsight_core::session::Session;
use memsight_core::timeline::service::{FirstFrame, TimelineRequest};
use memsight_core::timeline::TimelineKind;
use web_sys::Blob;

use super::feed::{self, Readers};
use super::outbox::{answer, console_error, mark, measure_since, Outbox};
use super::read_ahead::ReadAhead;

/// Starts the warm-up, unless a file came while the module loaded ([`warm_up_from`]).
pub(super) fn begin(busy: Rc<Cell<bool>>, readers: Readers) {
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
        TotalsRequest {
            device,
            moment: Moment::Peak,
        }
        .into(),
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
