//! Reading a file part by part, the next parts read while the current one decodes: a large
//! file's by a reading worker (`read_ahead.rs`; the spare worker starts one once warmed up), a
//! small one's by this worker from one stream, the browser filling it meanwhile
//! (`streamed.rs`), and any (if neither can be used) in slices read with `Blob.arrayBuffer()`
//! here, asked for ahead of the decoder. The first part tells the format: a plain
//! pickle's parts are pushed into the core's [`Feeding`] as they come; any other file goes to
//! the formats decoded from a reader (gzip, JSON: `load_read`, `reader.rs` over
//! `blob.rs`). Not the place for decoding (the core's `PickleFeed`).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use memsight_core::decode::{feeds, Part};
use memsight_core::protocol::{ErrorReport, FileEvent};
use memsight_core::session::Session;
use memsight_core::timeline::service::FirstFrame;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::Blob;

use super::blob::BlobSource;
use super::first_view::loaded;
use super::outbox::{clock, mark, measure_since, Outbox};
use super::read_ahead::{Missing, ReadAhead};
use super::reader::{ChunkSource, ChunkedReader, CHUNK_BYTES};
use super::streamed::{StreamedReads, Streaming, STREAM_PART_BYTES};
use super::{js_error_text, JsPart};

/// How a file is read ahead of its decoder, as measured in
/// docs/decisions/0004-a-reading-worker-and-parts-read-ahead-into-the-same-buffers.md.
///
/// Bytes read at a time, and how many parts are asked for ahead of the decoder: measured with
/// `benches/browser.mjs` at 1M entries, one 8 MiB part ahead left 230 ms of waiting for bytes
/// of 1 s; three 4 MiB parts ahead leave 150 ms (FileReaderSync's chunks, read only when the
/// decoder needs them: 340 ms).
pub const PART_BYTES: u64 = 4 * 1024 * 1024;
const PARTS_AHEAD: usize = 3;
/// Buffers the reading worker reads parts into: one is decoded while the others are read or
/// wait. With four read ahead, the decoder waited less than with `Blob.arrayBuffer()`'s four
/// parts ahead, in 20 MiB in all.
const READ_AHEAD_BUFFERS: usize = 5;
/// Files larger than the parts this worker asks for at once are read by a reading worker: the
/// one the spare worker started once warmed up, or one started for them. A file of 94 MB or
/// more waits less for its bytes (6M entries: 216 against 681 ms) and loads sooner in most
/// runs (6M 2722 against 3124 ms), and one started ahead saves 1M entries another 10 ms; a
/// small file gained nothing from it, and ending the idle one during a small file's load cost
/// it a few ms (so it is left idle).
const READ_AHEAD_FROM: u64 = PARTS_AHEAD as u64 * PART_BYTES;

/// Bytes of a file's start that tell its format (`feeds` needs 4).
const FORMAT_HEAD_BYTES: usize = 16;

/// Marks the load's measures start from.
const LOAD_START: &str = "memsight:worker-load";
const FINISH_START: &str = "memsight:worker-finish";

/// Loads `blob` (of `total` bytes) into `session`, sending progress and failures to
/// `outbox`, then the `Loaded` event (with `first_frame` painted, see `first_view::loaded`). The
/// first part tells the file's format: a plain pickle is decoded part by part as it is read;
/// any other file is loaded from a synchronous reader (`load_read`), and the parts
/// read ahead (and, over 12 MiB, the reading worker) are dropped: a few parts read twice for
/// a gzip or JSON file, so that no pickle waits for the file twice before it decodes. A file
/// over 12 MiB takes the reading worker started ahead in `readers`, or starts one; a smaller
/// one is read into its buffers.
pub async fn load(
    session: Rc<RefCell<Session>>,
    blob: Blob,
    total: u64,
    first_frame: Option<FirstFrame>,
    outbox: Outbox,
    readers: Readers,
) {
    mark(LOAD_START);
    let now = clock;
    if total == 0 {
        return load_read(&session, blob, first_frame, outbox);
    }
    let mut parts = Parts::new(blob.clone(), total, readers);
    let waiting = now();
    let mut bytes = match parts.next(0).await {
        Ok(bytes) => bytes,
        Err(message) => return outbox.event(unreadable(0, &message)),
    };
    if !feeds(&bytes.head(FORMAT_HEAD_BYTES)) {
        drop(parts);
        return load_read(&session, blob, first_frame, outbox);
    }
    let mut on_progress = |event| outbox.event(event);
    let started = session
        .borrow_mut()
        .start_feeding(total, &now, &mut on_progress);
    let mut feeding = match started {
        Ok(feeding) => feeding,
        Err(report) => return outbox.event(FileEvent::Failed(report)),
    };
    feeding.waited_before_start(now() - waiting);
    let mut offset = 0;
    loop {
        let expected = parts.bytes_each().min(total - offset);
        if Part::len(&bytes) as u64 != expected {
            return outbox.event(FileEvent::Failed(ErrorReport::message(format!(
                "The file changed while it was read: {expected} bytes were asked for at byte {offset}, {} came.",
                Part::len(&bytes)
            ))));
        }
        offset += expected;
        if let Err(report) = feeding.push(bytes, &now, &mut on_progress) {
            return outbox.event(FileEvent::Failed(report));
        }
        if offset == total {
            break;
        }
        let waiting = now();
        bytes = match parts.next(offset).await {
            Ok(bytes) => bytes,
            Err(message) => return outbox.event(unreadable(offset, &message)),
        };
        feeding.waited(now() - waiting);
    }
    // The reading worker has read everything: it goes.
    drop(parts);
    measure_since(LOAD_START, "parts decoded");
    mark(FINISH_START);
    let event = session.borrow_mut().finish_feeding(feeding, &now);
    measure_since(FINISH_START, "decoding finished and analysed");
    loaded(&session, event, first_frame, &now, outbox);
}

/// What a worker keeps ahead for reading its file: the reading worker a large file takes,
/// started once the worker is warmed up, and the buffers a small file's parts are read into.
#[derive(Clone, Default)]
pub struct Readers {
    pub ahead: Rc<RefCell<Option<ReadAhead>>>,
    pub streaming: Streaming,
}

/// The failure of a part that could not be read at byte `offset`.
fn unreadable(offset: u64, message: &str) -> FileEvent {
    FileEvent::Failed(ErrorReport::message(format!(
        "The file could not be read at byte {offset}: {message}"
    )))
}

fn warn_reading_here(why: &str) {
    web_sys::console::warn_1(
        &format!("the reading worker cannot read the file ({why}): it is read here").into(),
    );
}

/// A part being read.
type PartRead = Pin<Box<dyn Future<Output = Result<JsPart, String>>>>;

/// Where a pickle's parts come from, in order.
enum Parts {
    /// The reading worker reads them, off this thread.
    Ahead {
        read_ahead: ReadAhead,
        blob: Blob,
        total: u64,
    },
    /// This worker reads them from one stream (a small file).
    Streamed(StreamedReads),
    /// This worker reads them in slices.
    Own(OwnReads),
}

impl Parts {
    /// The parts of `blob`; a large file's read by the reading worker in `readers` if one was
    /// started ahead. A smaller file leaves it idle there (ending it during the load cost the
    /// load a few ms, and it ends with this worker) and is read into the buffers there.
    fn new(blob: Blob, total: u64, readers: Readers) -> Parts {
        if total <= READ_AHEAD_FROM {
            if let Some(streamed) = StreamedReads::new(&blob, total, readers.streaming) {
                return Parts::Streamed(streamed);
            }
        } else if let Some(read_ahead) = readers.ahead.borrow_mut().take().or_else(ReadAhead::start)
        {
            match read_ahead.read(&blob, total, PART_BYTES, READ_AHEAD_BUFFERS) {
                Ok(()) => {
                    return Parts::Ahead {
                        read_ahead,
                        blob,
                        total,
                    }
                }
                Err(error) => warn_reading_here(&error),
            }
        }
        Parts::Own(OwnReads::from(blob, total, 0))
    }

    /// Bytes of each part but the last.
    fn bytes_each(&self) -> u64 {
        match self {
            Parts::Streamed(_) => STREAM_PART_BYTES as u64,
            Parts::Ahead { .. } | Parts::Own(_) => PART_BYTES,
        }
    }

    /// The part that starts at `offset` (the one after the last part taken).
    async fn next(&mut self, offset: u64) -> Result<JsPart, String> {
        loop {
            match self {
                Parts::Streamed(streamed) => return streamed.next().await,
                Parts::Own(own) => return own.next().await,
                Parts::Ahead {
                    read_ahead,
                    blob,
                    total,
                } => match read_ahead.take(offset).await {
                    Ok(bytes) => return Ok(bytes),
                    Err(Missing::Unreadable(error)) => return Err(error),
                    // The file is read here from this part on.
                    Err(Missing::Stopped(error)) => {
                        warn_reading_here(&error);
                        *self = Parts::Own(OwnReads::from(blob.clone(), *total, offset));
                    }
                },
            }
        }
    }
}

/// This worker's own reads of a blob: the parts asked for and not taken yet, in order, with
/// `PARTS_AHEAD` of them kept asked for.
struct OwnReads {
    blob: Blob,
    total: u64,
    /// Bytes asked for so far.
    asked: u64,
    reading: VecDeque<PartRead>,
}

impl OwnReads {
    /// Reads of `blob` from `offset` on.
    fn from(blob: Blob, total: u64, offset: u64) -> OwnReads {
        let mut own = OwnReads {
            blob,
            total,
            asked: offset,
            reading: VecDeque::new(),
        };
        own.ask_ahead();
        own
    }

    fn ask_ahead(&mut self) {
        while self.asked < self.total && self.reading.len() < PARTS_AHEAD {
            let part = read_part(&self.blob, self.asked, self.total);
            self.reading.push_back(Box::pin(part));
            self.asked = self.total.min(self.asked + PART_BYTES);
        }
    }

    /// The next part.
    async fn next(&mut self) -> Result<JsPart, String> {
        let part = self
            .reading
            .pop_front()
            .ok_or("no part was asked for: the file ends before")?;
        let bytes = part.await;
        self.ask_ahead();
        bytes
    }
}

/// Starts reading bytes `start..` (one part, at most `total`) of `blob`.
fn read_part(
    blob: &Blob,
    start: u64,
    total: u64,
) -> impl std::future::Future<Output = Result<JsPart, String>> {
    let end = total.min(start + PART_BYTES);
    let promise = blob
        .slice_with_f64_and_f64(start as f64, end as f64)
        .map(|slice| JsFuture::from(slice.array_buffer()));
    async move {
        let buffer = promise
            .map_err(|e| js_error_text(&e))?
            .await
            .map_err(|e| js_error_text(&e))?;
        Ok(JsPart::new(buffer.unchecked_ref()))
    }
}

/// Loads a file that is not a plain pickle (gzip, JSON, or no snapshot at all, which the core
/// tells) from a synchronous reader over `blob`, sending its events to `outbox`.
fn load_read(
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
