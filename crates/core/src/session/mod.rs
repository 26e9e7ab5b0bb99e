//! One snapshot file's session: decode it from a reader while reporting progress, keep the
//! analysed model, and route each view [`Request`] to its feature's service.
//!
//! This is what a worker runs for its one file (the web app's worker only carries messages),
//! and what any other front end can drive natively. A thin router: what a view computes lives
//! in its feature's service ([`crate::overview::service`], [`crate::timeline::service`]). Not
//! the place for the transport or for reading files.

pub mod digested;
mod startup;

use std::cell::Cell;
use std::io::Read;

use crate::analysis::categories::categorised::Categorised;
use crate::analysis::{Analysed, DeviceChoice};
use crate::breakdown::service::BreakdownService;
use crate::compare::service::DigestService;
use crate::decode::{decode_reader, ErrorReport, Part, PickleFeed};
use crate::overview::service::OverviewService;
use crate::phases::service::PhasesService;
use crate::protocol::{Answer, FileEvent, LoadedSummary, Request, RulesApplied};
use crate::service::{Context, Reply, Service, ViewError};
use crate::table::service::TableService;
use crate::timeline::service::TimelineService;

/// Progress is reported at most once per this many bytes read (plus once at the end), so the
/// page gets a smooth bar without a flood of messages.
pub const PROGRESS_STEP_BYTES: u64 = 1024 * 1024;

/// And at most once per this many milliseconds after the first bytes: each report re-renders
/// the page, whose thread and cores the load shares (a 1M-entry file sent 40 reports in a
/// third of a second, and the page was busy a fifth of that time).
pub const PROGRESS_INTERVAL_MS: f64 = 100.0;

/// Every feature's service.
#[derive(Default)]
struct Services {
    overview: OverviewService,
    timeline: TimelineService,
    breakdown: BreakdownService,
    table: TableService,
    digest: DigestService,
    phases: PhasesService,
}

/// The decoded snapshot of one file, with the facts derived once at load, and the services
/// that answer views of it.
#[derive(Default)]
pub struct Session {
    analysed: Option<Analysed>,
    /// Every allocation's categories under the user's rules (none until the page sends some).
    categorised: Categorised,
    /// Whether a load was started: a session decodes one file in its life.
    started: bool,
    services: Services,
}

impl Session {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a snapshot is loaded and views can be asked for.
    pub fn is_loaded(&self) -> bool {
        self.analysed.is_some()
    }

    /// Decodes a snapshot of `total` bytes from `reader`. `on_progress` receives progress
    /// events; `now` is a clock in milliseconds. A session decodes one file: a second load is
    /// refused and leaves the first file as it was.
    pub fn load<R: Read>(
        &mut self,
        reader: R,
        total: u64,
        now: &dyn Fn() -> f64,
        on_progress: &mut dyn FnMut(FileEvent),
    ) -> Result<LoadedSummary, ErrorReport> {
        self.begin(total, on_progress)?;
        let start = now();
        let mut progress = Progress::new(total);
        let read_ms = Cell::new(0.0);
        let reader = TimedReader {
            inner: reader,
            now,
            spent: &read_ms,
        };
        let snapshot = decode_reader(reader, &mut |bytes_read| {
            progress.at(bytes_read, now(), on_progress)
        })
        .map_err(|error| error.into_report())?;
        progress.at(total, now(), on_progress);
        Ok(self.keep(snapshot, total, start, read_ms.get(), now))
    }

    /// Starts a load of `total` bytes whose bytes are pushed as they are read
    /// ([`Feeding::push`], then [`Self::finish_feeding`]): only for a plain pickle
    /// ([`crate::decode::feeds`]). Refused, like [`Self::load`], when a load was started.
    pub fn start_feeding(
        &mut self,
        total: u64,
        now: &dyn Fn() -> f64,
        on_progress: &mut dyn FnMut(FileEvent),
    ) -> Result<Feeding, ErrorReport> {
        self.begin(total, on_progress)?;
        let mut feed = PickleFeed::new();
        feed.expect_bytes(total);
        Ok(Feeding {
            feed,
            start: now(),
            read_ms: 0.0,
            progress: Progress::new(total),
        })
    }

    /// Starts the session's one load: refused when one was started.
    fn begin(
        &mut self,
        total: u64,
        on_progress: &mut dyn FnMut(FileEvent),
    ) -> Result<(), ErrorReport> {
        if std::mem::replace(&mut self.started, true) {
            return Err(ErrorReport::message(
                "This worker already has a file: open each file in its own worker.",
            ));
        }
        on_progress(FileEvent::Progress {
            bytes_read: 0,
            total,
        });
        Ok(())
    }

    /// Ends a load fed by [`Feeding::push`]: decodes the rest, analyses the snapshot and keeps
    /// it. The event the page receives: `Loaded` or `Failed`.
    pub fn finish_feeding(&mut self, feeding: Feeding, now: &dyn Fn() -> f64) -> FileEvent {
        let Feeding {
            feed,
            start,
            read_ms,
            progress,
        } = feeding;
        let total = progress.total;
        match feed.finish() {
            Ok(snapshot) => FileEvent::Loaded(self.keep(snapshot, total, start, read_ms, now)),
            Err(error) => FileEvent::Failed(error.into_report()),
        }
    }

    /// Analyses a decoded snapshot and keeps it; `start` is when its load started.
    fn keep(
        &mut self,
        snapshot: crate::model::Snapshot,
        total: u64,
        start: f64,
        read_ms: f64,
        now: &dyn Fn() -> f64,
    ) -> LoadedSummary {
        let devices = snapshot.device_ids();
        let unused_devices = snapshot
            .devices
            .iter()
            .filter(|d| d.segments.is_empty() && d.trace.is_empty())
            .map(|d| d.id)
            .collect();
        let device_kind = snapshot.device_kind;
        let analyse_start = now();
        let analysed = Analysed::new(snapshot);
        let (default_device, default_reason) =
            analysed.default_device().unwrap_or((0, DeviceChoice::Only));
        let categorise_start = now();
        self.categorised =
            Categorised::new(&analysed, Default::default(), now).expect("no rules always compile");
        let categorise_ms = now() - categorise_start;
        let overview = crate::overview::build(&analysed, default_device);
        self.analysed = Some(analysed);
        let end = now();
        LoadedSummary {
            devices,
            unused_devices,
            device_kind,
            default_device,
            default_reason,
            file_bytes: total,
            decode_ms: end - start,
            read_ms,
            analyse_ms: end - analyse_start - categorise_ms,
            categorise_ms,
            overview,
            first_view: None,
            digest: false,
        }
    }

    /// [`Self::load`] as the event the page receives: `Loaded` or `Failed`.
    pub fn load_event<R: Read>(
        &mut self,
        reader: R,
        total: u64,
        now: &dyn Fn() -> f64,
        on_progress: &mut dyn FnMut(FileEvent),
    ) -> FileEvent {
        match self.load(reader, total, now, on_progress) {
            Ok(summary) => FileEvent::Loaded(summary),
            Err(report) => FileEvent::Failed(report),
        }
    }

    /// Answers `request` as its own kind of answer (what the page's asker does over the
    /// worker's messages): for the command line and tests, which hold the session itself.
    pub fn ask<R: crate::protocol::Ask>(
        &mut self,
        request: R,
        now: &dyn Fn() -> f64,
    ) -> Result<R::Answer, ViewError> {
        crate::protocol::typed::<R>(self.answer(request.into(), now).map(|reply| reply.answer))
    }

    /// Answers a view request with its feature's service; `now` is a clock in milliseconds.
    pub fn answer(
        &mut self,
        request: Request,
        now: &dyn Fn() -> f64,
    ) -> Result<Reply<Answer>, ViewError> {
        let analysed = self.analysed.as_ref().ok_or(ViewError::NotLoaded)?;
        let cx = Context {
            analysed,
            categorised: &self.categorised,
            now,
        };
        let services = &mut self.services;
        match request {
            Request::Overview(r) => services
                .overview
                .answer(&cx, r)
                .map(|r| r.map(Answer::Overview)),
            Request::Timeline(r) => services
                .timeline
                .answer(&cx, r)
                .map(|r| r.map(Answer::Timeline)),
            Request::Breakdown(r) => services
                .breakdown
                .answer(&cx, r)
                .map(|r| r.map(Answer::Breakdown)),
            Request::Table(r) => services.table.answer(&cx, r).map(|r| r.map(Answer::Table)),
            Request::Digest(r) => services
                .digest
                .answer(&cx, r)
                .map(|r| r.map(Answer::Digest)),
            Request::Phases(r) => services
                .phases
                .answer(&cx, r)
                .map(|r| r.map(Answer::Phases)),
            Request::Export(r) => {
                crate::export::answer(&cx, &mut services.table, &mut services.breakdown, r)
                    .map(|r| r.map(Answer::Export))
            }
            Request::SetRules(rules) => {
                // The one request that changes what every service is lent.
                let error = self.categorised.set_rules(analysed, rules, now).err();
                Ok(Answer::Rules(RulesApplied {
                    generation: self.categorised.generation(),
                    error,
                    categorise_ms: self.categorised.categorise_ms,
                })
                .into())
            }
        }
    }

    /// The loaded snapshot and its derived facts, if any.
    pub fn analysed(&self) -> Option<&Analysed> {
        self.analysed.as_ref()
    }

    /// The allocations' categories under the rules in use.
    pub fn categorised(&self) -> &Categorised {
        &self.categorised
    }
}

/// A load whose bytes are pushed as they are read (see [`Session::start_feeding`]).
pub struct Feeding {
    feed: PickleFeed,
    start: f64,
    /// Time spent waiting for bytes that were not read yet.
    read_ms: f64,
    progress: Progress,
}

impl Feeding {
    /// Decodes the next bytes of the file as far as they allow; reports progress (`now`: the
    /// clock in milliseconds).
    pub fn push(
        &mut self,
        part: impl Part + 'static,
        now: &dyn Fn() -> f64,
        on_progress: &mut dyn FnMut(FileEvent),
    ) -> Result<(), ErrorReport> {
        self.feed.push(part).map_err(|e| e.into_report())?;
        self.progress.at(self.feed.pushed(), now(), on_progress);
        Ok(())
    }

    /// Counts `ms` spent waiting for the file's next bytes.
    pub fn waited(&mut self, ms: f64) {
        self.read_ms += ms;
    }

    /// Counts `ms` spent waiting for the file's first bytes before this feeding started (a
    /// reader that learns the file's format from its first part starts feeding only then):
    /// the load started that much earlier, and waited that long for its bytes.
    pub fn waited_before_start(&mut self, ms: f64) {
        self.start -= ms;
        self.read_ms += ms;
    }
}

/// The progress events of a file of `total` bytes: one per [`PROGRESS_STEP_BYTES`] and
/// [`PROGRESS_INTERVAL_MS`] at most (the first as soon as a step is read), and one once it is
/// all read.
struct Progress {
    total: u64,
    reported: u64,
    /// When bytes were last reported, in the clock's milliseconds.
    reported_at: Option<f64>,
}

impl Progress {
    fn new(total: u64) -> Self {
        Progress {
            total,
            reported: 0,
            reported_at: None,
        }
    }

    /// `bytes_read` of the file are read at `now_ms`: reports them when due.
    fn at(&mut self, bytes_read: u64, now_ms: f64, on_progress: &mut dyn FnMut(FileEvent)) {
        let step_read = bytes_read >= self.reported.saturating_add(PROGRESS_STEP_BYTES)
            && self
                .reported_at
                .is_none_or(|at| now_ms - at >= PROGRESS_INTERVAL_MS);
        let due = step_read || bytes_read >= self.total;
        if due && bytes_read > self.reported {
            self.reported = bytes_read;
            self.reported_at = Some(now_ms);
            on_progress(FileEvent::Progress {
                bytes_read: bytes_read.min(self.total),
                total: self.total,
            });
        }
    }
}

/// Adds the time spent in `read` to `spent`: how long the decoder waited for the file.
struct TimedReader<'a, R> {
    inner: R,
    now: &'a dyn Fn() -> f64,
    spent: &'a Cell<f64>,
}

impl<R: Read> Read for TimedReader<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let start = (self.now)();
        let result = self.inner.read(out);
        self.spent.set(self.spent.get() + (self.now)() - start);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::DecodeError;
    use crate::overview::service::OverviewRequest;
    use crate::timeline::colouring::ColourBy;
    use crate::timeline::service::{FirstFrame, FrameRequest, TimelineAnswer, TimelineRequest};
    use crate::timeline::TimelineKind;

    fn clock() -> impl Fn() -> f64 {
        let t = std::cell::Cell::new(0.0);
        move || {
            t.set(t.get() + 5.0);
            t.get()
        }
    }

    fn overview(device: u32) -> Request {
        Request::Overview(OverviewRequest { device })
    }

    /// The smallest real snapshot shape: `{"segments": [], "device_traces": [[]]}` pickled with
    /// protocol 4.
    const MINIMAL: &[u8] = b"\x80\x04\x95\x27\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x08segments\x94]\x94\x8c\rdevice_traces\x94]\x94]\x94au.";

    /// A frame of device `device`'s whole allocations timeline.
    fn whole_frame(device: u32, colour_by: ColourBy) -> Request {
        Request::Timeline(TimelineRequest::Frame(FrameRequest {
            colour_by,
            ..FrameRequest::first(device, 10, 10)
        }))
    }

    fn example() -> Vec<u8> {
        std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../static/example.pickle"
        ))
        .expect("the bundled example")
    }

    #[test]
    fn garbage_fails_with_a_report_and_keeps_nothing() {
        let mut session = Session::new();
        let mut posted = Vec::new();
        let bytes = b"this is not a pickle".to_vec();
        let event = session.load_event(&bytes[..], bytes.len() as u64, &clock(), &mut |r| {
            posted.push(r)
        });
        let FileEvent::Failed(report) = event else {
            panic!("expected a failure, got {event:?}")
        };
        assert!(!report.message.is_empty());
        assert_eq!(
            posted.first(),
            Some(&FileEvent::Progress {
                bytes_read: 0,
                total: bytes.len() as u64
            })
        );
        // Nothing was kept: views are refused, without ending anything.
        assert!(!session.is_loaded());
        assert_eq!(
            session.answer(overview(0), &clock()).unwrap_err(),
            ViewError::NotLoaded
        );
    }

    #[test]
    fn a_second_load_is_refused_and_the_first_file_stays() {
        let mut session = Session::new();
        session
            .load(MINIMAL, MINIMAL.len() as u64, &clock(), &mut |_| {})
            .expect("the first load");
        let bytes = example();
        let refused = session
            .load(&bytes[..], bytes.len() as u64, &clock(), &mut |_| {})
            .unwrap_err();
        assert!(
            refused.message.contains("already has a file"),
            "{refused:?}"
        );
        // The first file still answers: it has one device, cuda:0.
        assert!(session.answer(overview(0), &clock()).is_ok());
        let snapshot = &session.analysed().unwrap().snapshot;
        assert!(
            snapshot.devices.iter().all(|d| d.trace.is_empty()),
            "the second file was decoded"
        );
    }

    #[test]
    fn decode_errors_keep_offset_and_hint() {
        let error = DecodeError::at(12, "unknown opcode 0x63 (GLOBAL)")
            .with_hint("this pickle contains code");
        assert_eq!(
            error.into_report(),
            ErrorReport {
                message: "unknown opcode 0x63 (GLOBAL)".into(),
                offset: Some(12),
                hint: Some("this pickle contains code".into()),
            }
        );
    }

    #[test]
    fn progress_is_reported_per_step_at_most_every_interval_and_at_the_end() {
        const MIB: u64 = 1 << 20;
        // A 40 MiB file read a MiB at a time, every `ms_per_step` ms: (bytes, ms) reported.
        let reports = |ms_per_step: f64| {
            let mut progress = Progress::new(40 * MIB + 5);
            let mut reported = Vec::new();
            for step in 1..=41u64 {
                let now = step as f64 * ms_per_step;
                progress.at((step * MIB).min(40 * MIB + 5), now, &mut |event| {
                    let FileEvent::Progress { bytes_read, .. } = event else {
                        panic!("only progress: {event:?}")
                    };
                    reported.push((bytes_read, now));
                });
            }
            reported
        };
        let fast = reports(10.0);
        assert_eq!(fast.first(), Some(&(MIB, 10.0)), "the first step at once");
        assert_eq!(fast.last(), Some(&(40 * MIB + 5, 410.0)), "the end always");
        assert_eq!(
            fast.iter().map(|r| r.0 / MIB).collect::<Vec<_>>(),
            vec![1, 11, 21, 31, 40],
            "one per 100 ms"
        );
        let slow = reports(150.0);
        assert_eq!(
            slow.len(),
            41,
            "every step when steps are slower than the interval"
        );
    }

    #[test]
    fn a_minimal_snapshot_loads_and_reports_progress_to_the_end() {
        let bytes = MINIMAL;
        let mut session = Session::new();
        let mut posted = Vec::new();
        let event =
            session.load_event(bytes, bytes.len() as u64, &clock(), &mut |r| posted.push(r));
        match event {
            FileEvent::Loaded(summary) => {
                assert_eq!(summary.file_bytes, bytes.len() as u64);
                assert!(summary.decode_ms > 0.0);
                assert_eq!(
                    posted.last(),
                    Some(&FileEvent::Progress {
                        bytes_read: bytes.len() as u64,
                        total: bytes.len() as u64
                    })
                );
                assert!(!summary.devices.is_empty());
                for device in &summary.devices {
                    let reply = session.answer(overview(*device), &clock()).unwrap();
                    assert!(matches!(reply.answer, Answer::Overview(_)));
                    assert_eq!(reply.attachment, None);
                }
            }
            other => panic!("a valid snapshot failed: {other:?}"),
        }
    }

    #[test]
    fn a_view_that_cannot_be_answered_gets_an_error_and_the_file_stays() {
        let bytes = example();
        let mut session = Session::new();
        session
            .load(&bytes[..], bytes.len() as u64, &clock(), &mut |_| {})
            .expect("the example loads");
        assert_eq!(
            session.answer(overview(99), &clock()).unwrap_err(),
            ViewError::NoSuchDevice { device: 99 }
        );
        // A frame of a timeline never laid out.
        let frame = whole_frame(0, Default::default());
        assert!(matches!(
            session.answer(frame, &clock()).unwrap_err(),
            ViewError::NotPrepared { .. }
        ));
        // Other views still work.
        assert!(session.answer(overview(0), &clock()).is_ok());
    }

    #[test]
    fn a_loaded_file_brings_its_overview_and_prepares_its_first_view() {
        let bytes = example();
        let mut session = Session::new();
        let summary = session
            .load(&bytes[..], bytes.len() as u64, &clock(), &mut |_| {})
            .expect("the example loads");
        let device = summary.default_device;
        let Answer::Overview(asked) = session.answer(overview(device), &clock()).unwrap().answer
        else {
            panic!("not an overview")
        };
        assert_eq!(summary.overview, Some(asked));

        let first = whole_frame(device, ColourBy::FIRST_SHOWN);
        assert!(matches!(
            session.answer(first.clone(), &clock()).unwrap_err(),
            ViewError::NotPrepared { .. }
        ));
        session.prepare_first_view(&clock());
        let painted = session.answer(first, &clock()).expect("a prepared frame");
        assert_eq!(painted.attachment.map(|p| p.len()), Some(10 * 10 * 4));
        // The page's layout request finds the prepared layout: it is not laid out again.
        let layout = |session: &mut Session| {
            let request = Request::Timeline(TimelineRequest::Layout {
                device,
                kind: TimelineKind::Allocations,
                detail: None,
            });
            match session.answer(request, &clock()).unwrap().answer {
                Answer::Timeline(TimelineAnswer::Layout(info)) => info,
                other => panic!("not a layout: {other:?}"),
            }
        };
        let prepared = layout(&mut session);
        assert_eq!(layout(&mut session), prepared);
        assert!(prepared.elements > 0);
    }

    #[test]
    fn a_first_frame_sent_with_the_file_is_what_the_page_would_have_asked_for() {
        let bytes = example();
        let first = FirstFrame {
            width: 24,
            height: 16,
            dark: true,
            line_width: 3,
        };
        let loaded = || {
            let mut session = Session::new();
            let summary = session
                .load(&bytes[..], bytes.len() as u64, &clock(), &mut |_| {})
                .expect("the example loads");
            session.prepare_first_view(&clock());
            (session, summary.default_device)
        };
        let (mut session, device) = loaded();
        let (view, pixels) = session
            .first_view(&first, device, &clock())
            .expect("the default device has a timeline");
        assert_eq!(view.request, first.request(device));
        assert!(view.request.dark && view.request.whole);
        assert_eq!(pixels.len(), 24 * 16 * 4);

        // The same file asked as the page asks: the same layout, frame and pixels.
        let (mut asked, _) = loaded();
        let layout = asked
            .answer(
                Request::Timeline(TimelineRequest::Layout {
                    device,
                    kind: TimelineKind::Allocations,
                    detail: None,
                }),
                &clock(),
            )
            .unwrap()
            .answer;
        assert_eq!(
            layout,
            Answer::Timeline(TimelineAnswer::Layout(view.layout))
        );
        let frame = asked
            .answer(
                Request::Timeline(TimelineRequest::Frame(first.request(device))),
                &clock(),
            )
            .unwrap();
        assert_eq!(frame.attachment, Some(pixels));
        let Answer::Timeline(TimelineAnswer::Frame(info)) = frame.answer else {
            panic!("not a frame")
        };
        assert_eq!(info, view.frame);

        // A device the file does not have: nothing painted, the page asks as usual.
        assert!(session.first_view(&first, 99, &clock()).is_none());
    }

    #[test]
    fn a_file_without_devices_has_no_overview_and_nothing_to_prepare() {
        let mut session = Session::new();
        let empty: &[u8] = b"\x80\x04]\x94.";
        let summary = session
            .load(empty, empty.len() as u64, &clock(), &mut |_| {})
            .expect("a bare list of segments");
        assert!(summary.devices.is_empty());
        assert_eq!(summary.overview, None);
        session.prepare_first_view(&clock());
        let first = FirstFrame {
            width: 8,
            height: 8,
            dark: false,
            line_width: 2,
        };
        assert!(session.first_view(&first, 0, &clock()).is_none());
    }
}
