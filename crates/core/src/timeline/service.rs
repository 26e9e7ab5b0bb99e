//! The worker's timelines: lays each (device, kind) timeline out on request, keeps the layout
//! and the last search, and answers frame, hit, element, search and minimap requests.
//!
//! Pure logic over [`crate::timeline`], tested natively; `session` routes requests here.

use rustc_hash::FxHashMap;

use crate::analysis::{Analysed, DeviceFacts};
use crate::model::{Action, AnnotationStage, Device};
use crate::protocol::{
    FrameInfo, FrameRequest, HitInfo, HitRequest, MinimapInfo, OomMark, Phase, Request, Response,
    SearchInfo, TimelineInfo,
};
use crate::timeline::axis::Axis;
use crate::timeline::curve::{Curve, Envelope};
use crate::timeline::elements::{AllocationElements, AnyElements, Elements, SegmentElements};
use crate::timeline::inspect::{self, Query};
use crate::timeline::layout::{Cursor, Layout};
use crate::timeline::raster::{self, Hit, Marks, Style, Track, View};
use crate::timeline::{AxisMode, Kind, Viewport};

/// Timelines with at most this many elements draw all of them by default.
const DRAW_ALL_UP_TO: u32 = 20_000;
/// Largest detail offered by default; more can be asked for.
const DEFAULT_DETAIL_CAP: u32 = 500_000;
/// Elements at least this fraction of the peak are drawn by default (a pixel of a 4K-tall plot).
const DEFAULT_DETAIL_FRACTION: u64 = 4096;
/// Largest frame painted, in pixels per side (guards against absurd requests).
const MAX_SIDE: u32 = 8192;

/// An answer, with pixels for a frame.
#[derive(Debug, PartialEq)]
pub struct Reply {
    pub response: Response,
    /// `width × height` RGBA of a `Frame` response.
    pub pixels: Option<Vec<u8>>,
}

impl From<Response> for Reply {
    fn from(response: Response) -> Self {
        Reply {
            response,
            pixels: None,
        }
    }
}

struct Found {
    /// Matching elements, ascending.
    ids: Vec<u32>,
    /// One bit per element.
    bits: Vec<u64>,
}

struct Entry {
    device: u32,
    kind: Kind,
    layout: Layout,
    /// Kept between hit tests: a hover moves little, so its seeks are short.
    hover: std::cell::RefCell<Cursor>,
    segments: Option<SegmentElements>,
    info: TimelineInfo,
    found: Option<Found>,
}

/// Laid-out timelines of one snapshot.
#[derive(Default)]
pub struct Timelines {
    entries: Vec<Entry>,
    /// Block maxima of each device's allocated curve.
    envelopes: FxHashMap<u32, Envelope>,
}

fn failed(message: &str) -> Reply {
    Response::ViewError(message.into()).into()
}

impl Timelines {
    /// Answers a timeline request; `None` for requests that are not about timelines.
    pub fn handle(
        &mut self,
        analysed: &Analysed,
        request: &Request,
        now: &dyn Fn() -> f64,
    ) -> Option<Reply> {
        Some(match request {
            Request::Timeline {
                device,
                kind,
                detail,
            } => self.timeline(analysed, *device, *kind, *detail, now),
            Request::Frame(frame) => self.frame(analysed, frame, now),
            Request::Hit(hit) => self.hit(analysed, hit, now),
            Request::Element {
                device,
                kind,
                index,
            } => self.element(analysed, *device, *kind, *index),
            Request::Search {
                device,
                kind,
                query,
            } => self.search(analysed, *device, *kind, query),
            Request::Match { device, kind, nth } => {
                let index = self
                    .entry(*device, *kind)
                    .and_then(|e| e.found.as_ref())
                    .and_then(|f| f.ids.get(*nth as usize).copied());
                match index {
                    Some(index) => self.element(analysed, *device, *kind, index),
                    None => Response::Element { detail: None }.into(),
                }
            }
            Request::Minimap {
                device,
                kind,
                mode,
                width,
            } => self.minimap(analysed, *device, *kind, *mode, *width),
            Request::Load { .. } | Request::Overview { .. } => return None,
        })
    }

    fn entry(&self, device: u32, kind: Kind) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.device == device && e.kind == kind)
    }

    fn timeline(
        &mut self,
        analysed: &Analysed,
        device: u32,
        kind: Kind,
        detail: Option<u32>,
        now: &dyn Fn() -> f64,
    ) -> Reply {
        let start = now();
        let Some((dev, facts)) = analysed.device_facts(device) else {
            return failed("This snapshot has no such device.");
        };
        if kind == Kind::Allocations && !self.envelopes.contains_key(&device) {
            let envelope = Envelope::new(
                std::iter::once(facts.baseline_allocated).chain(facts.allocated.iter().copied()),
            );
            self.envelopes.insert(device, envelope);
        }
        if let Some(entry) = self
            .entries
            .iter_mut()
            .find(|e| e.device == device && e.kind == kind)
        {
            // Laid out before: only a new detail changes anything.
            let elements = any_elements(facts, entry.segments.as_ref());
            let detail = detail.unwrap_or(entry.info.detail).min(elements.count());
            if detail != entry.info.detail {
                entry.layout = Layout::build(&elements, detail);
                // Ranks changed: a kept cursor would name the wrong elements.
                entry.hover = Default::default();
                entry.info.detail = entry.layout.drawn;
                entry.info.layout_ms = now() - start;
            }
            return Response::Timeline(entry.info.clone()).into();
        }
        let segments = (kind == Kind::Segments).then(|| SegmentElements::build(dev, facts));
        let elements = any_elements(facts, segments.as_ref());
        let peak = match kind {
            Kind::Allocations => facts.peak_allocated,
            Kind::Segments => facts.peak_reserved,
        };
        let default_detail = default_detail(&elements, peak.bytes);
        let layout = Layout::build(
            &elements,
            detail.unwrap_or(default_detail).min(elements.count()),
        );
        let axis = Axis::new(&dev.trace);
        let peak_state = peak.row.map_or(0, |r| r + 1);
        let info = TimelineInfo {
            device,
            kind,
            states: axis.states,
            has_time: axis.has_time(),
            events_range: axis.full_range(AxisMode::Events),
            time_range: axis.has_time().then(|| axis.full_range(AxisMode::Time)),
            elements: elements.count(),
            detail: layout.drawn,
            default_detail,
            peak_state,
            peak_bytes: peak.bytes,
            peak_time_us: axis.time_of_state(peak_state).filter(|_| axis.has_time()),
            phases: phases(analysed, dev, &axis),
            ooms: ooms(dev, &axis),
            layout_ms: now() - start,
        };
        self.entries.push(Entry {
            device,
            kind,
            layout,
            hover: Default::default(),
            segments,
            info: info.clone(),
            found: None,
        });
        Response::Timeline(info).into()
    }

    fn frame(&self, analysed: &Analysed, request: &FrameRequest, now: &dyn Fn() -> f64) -> Reply {
        let start = now();
        let Some((entry, dev, facts)) = self.lookup(analysed, request.device, request.kind) else {
            return failed("Lay the timeline out before asking for a frame.");
        };
        let (width, height) = (
            request.view.width.clamp(1, MAX_SIDE),
            request.view.height.clamp(1, MAX_SIDE),
        );
        let elements = any_elements(facts, entry.segments.as_ref());
        let track = self.track(entry, dev, facts, &elements);
        let mode = track.axis.mode(request.view.mode);
        // A range that is empty, reversed or NaN shows the whole trace.
        let usable = request.view.x0 < request.view.x1;
        let (x0, x1) = if request.whole || !usable {
            track.axis.full_range(mode)
        } else {
            (request.view.x0, request.view.x1)
        };
        let view = View {
            mode,
            x0,
            x1,
            width,
            height,
            y_max: None,
        };
        let mut style = if request.dark {
            Style::dark()
        } else {
            Style::light()
        };
        style.line_width = request.line_width.clamp(1, 16);
        let marks = Marks {
            pinned: request.pinned,
            matches: if request.show_matches {
                entry.found.as_ref().map(|f| &f.bits[..])
            } else {
                None
            },
        };
        let track = Track {
            line: track.line.filter(|_| request.show_line),
            ..track
        };
        let frame = raster::paint(&track, &view, &style, marks);
        let info = FrameInfo {
            seq: request.seq,
            view: Viewport {
                mode,
                x0,
                x1,
                width,
                height,
            },
            y_max: frame.y_max,
            drawn_individually: frame.drawn_individually,
            peak_state: frame.peak.map(|p| p.0),
            peak_bytes: frame.peak.map_or(0, |p| p.1),
            first_state: frame.states.map(|s| s.0),
            last_state: frame.states.map(|s| s.1),
            paint_ms: now() - start,
        };
        Reply {
            response: Response::Frame(info),
            pixels: Some(frame.pixels),
        }
    }

    fn hit(&self, analysed: &Analysed, request: &HitRequest, now: &dyn Fn() -> f64) -> Reply {
        let start = now();
        let Some((entry, dev, facts)) = self.lookup(analysed, request.device, request.kind) else {
            return failed("Lay the timeline out before hovering it.");
        };
        let elements = any_elements(facts, entry.segments.as_ref());
        let track = self.track(entry, dev, facts, &elements);
        let view = View {
            mode: request.view.mode,
            x0: request.view.x0,
            x1: request.view.x1,
            width: request.view.width.clamp(1, MAX_SIDE),
            height: request.view.height.clamp(1, MAX_SIDE),
            y_max: Some(request.y_max.max(1)),
        };
        let hit = raster::hit(
            &track,
            &view,
            request.x,
            request.y,
            &mut entry.hover.borrow_mut(),
        );
        let hit_ms = now() - start;
        let state = match hit {
            Hit::Element { state, .. } | Hit::Small { state, .. } => Some(state),
            Hit::Nothing => {
                let dx = (view.x1 - view.x0) / view.width as f64;
                let a = view.x0 + request.x as f64 * dx;
                track
                    .axis
                    .span(view.mode, a, a + dx)
                    .map(|s| track.total.argmax(s.first, s.last).0)
            }
        };
        let element = match hit {
            Hit::Element { index, .. } => inspect::detail(
                &analysed.snapshot,
                dev,
                facts,
                entry.segments.as_ref(),
                request.kind,
                index,
                false,
            ),
            _ => None,
        };
        let info = HitInfo {
            seq: request.seq,
            state,
            time_us: state
                .and_then(|s| track.axis.time_of_state(s))
                .filter(|_| track.axis.has_time()),
            total: state.map_or(0, |s| track.total.value(s)),
            line: state.and_then(|s| track.line.map(|l| l.value(s))),
            element,
            small_bytes: match hit {
                Hit::Small { bytes, .. } => Some(bytes),
                _ => None,
            },
            hit_ms,
        };
        Response::Hit(info).into()
    }

    fn element(&self, analysed: &Analysed, device: u32, kind: Kind, index: u32) -> Reply {
        let Some((dev, facts)) = analysed.device_facts(device) else {
            return Response::Element { detail: None }.into();
        };
        let segments = self.entry(device, kind).and_then(|e| e.segments.as_ref());
        Response::Element {
            detail: inspect::detail(&analysed.snapshot, dev, facts, segments, kind, index, true),
        }
        .into()
    }

    fn search(&mut self, analysed: &Analysed, device: u32, kind: Kind, query: &str) -> Reply {
        let Some((_, facts)) = analysed.device_facts(device) else {
            return failed("This snapshot has no such device.");
        };
        let Some(i) = self
            .entries
            .iter()
            .position(|e| e.device == device && e.kind == kind)
        else {
            return failed("Lay the timeline out before searching it.");
        };
        let entry = &mut self.entries[i];
        let parsed = Query::parse(query);
        let Some(parsed) = parsed else {
            entry.found = None;
            return Response::Search(SearchInfo {
                query: query.into(),
                valid: false,
                count: 0,
                drawn: 0,
            })
            .into();
        };
        let ids = inspect::search(
            &analysed.snapshot,
            facts,
            entry.segments.as_ref(),
            kind,
            &parsed,
        );
        let elements = any_elements(facts, entry.segments.as_ref());
        let mut bits = vec![0u64; (elements.count() as usize).div_ceil(64)];
        let mut drawn = 0;
        for &id in &ids {
            bits[id as usize / 64] |= 1 << (id % 64);
            if entry.layout.is_drawn(id) {
                drawn += 1;
            }
        }
        let info = SearchInfo {
            query: query.into(),
            valid: true,
            count: ids.len() as u32,
            drawn,
        };
        entry.found = Some(Found { ids, bits });
        Response::Search(info).into()
    }

    fn minimap(
        &self,
        analysed: &Analysed,
        device: u32,
        kind: Kind,
        mode: AxisMode,
        width: u32,
    ) -> Reply {
        let Some((entry, dev, facts)) = self.lookup(analysed, device, kind) else {
            return failed("Lay the timeline out before asking for its minimap.");
        };
        let elements = any_elements(facts, entry.segments.as_ref());
        let track = self.track(entry, dev, facts, &elements);
        let mode = track.axis.mode(mode);
        let (x0, x1) = track.axis.full_range(mode);
        let mut totals = Vec::new();
        let mut line = Vec::new();
        for span in track.axis.columns(mode, x0, x1, width.clamp(1, MAX_SIDE)) {
            let Some(s) = span else {
                totals.push(0);
                line.push(0);
                continue;
            };
            totals.push(track.total.argmax(s.first, s.last).1);
            line.push(track.line.map_or(0, |l| l.argmax(s.first, s.last).1));
        }
        Response::Minimap(MinimapInfo { mode, totals, line }).into()
    }

    fn lookup<'a>(
        &'a self,
        analysed: &'a Analysed,
        device: u32,
        kind: Kind,
    ) -> Option<(&'a Entry, &'a Device, &'a DeviceFacts)> {
        let entry = self.entry(device, kind)?;
        let (dev, facts) = analysed.device_facts(device)?;
        Some((entry, dev, facts))
    }

    fn track<'a>(
        &'a self,
        entry: &'a Entry,
        dev: &'a Device,
        facts: &'a DeviceFacts,
        elements: &'a AnyElements<'a>,
    ) -> Track<'a, AnyElements<'a>> {
        let reserved = Curve::Steps {
            baseline: facts.baseline_reserved,
            changes: &facts.reserved_changes,
        };
        let (total, line) = match (entry.kind, self.envelopes.get(&entry.device)) {
            (Kind::Allocations, Some(envelope)) => (
                Curve::Dense {
                    baseline: facts.baseline_allocated,
                    values: &facts.allocated,
                    envelope,
                },
                Some(reserved),
            ),
            _ => (reserved, None),
        };
        Track {
            elements,
            layout: &entry.layout,
            total,
            line,
            axis: Axis::known(&dev.trace, entry.info.has_time),
        }
    }
}

fn any_elements<'a>(
    facts: &'a DeviceFacts,
    segments: Option<&'a SegmentElements>,
) -> AnyElements<'a> {
    match segments {
        Some(s) => AnyElements::Segments(s),
        None => AnyElements::Allocations(AllocationElements::new(facts)),
    }
}

/// Every element of a small timeline; otherwise those at least 1/4096 of the peak (every one
/// that is a pixel tall at the full view), up to [`DEFAULT_DETAIL_CAP`].
fn default_detail(elements: &impl Elements, peak: u64) -> u32 {
    if elements.count() <= DRAW_ALL_UP_TO {
        return elements.count();
    }
    let floor = (peak / DEFAULT_DETAIL_FRACTION).max(1);
    let count = (0..elements.count())
        .filter(|&i| elements.size(i) >= floor)
        .count() as u32;
    count.min(DEFAULT_DETAIL_CAP)
}

/// `external_annotations` of this device as state ranges (start/end paired by name).
fn phases(analysed: &Analysed, dev: &Device, axis: &Axis<'_>) -> Vec<Phase> {
    if !axis.has_time() {
        return Vec::new();
    }
    let snapshot = &analysed.snapshot;
    let (first, end) = axis.full_range(AxisMode::Time);
    let state_at = |t: i64| {
        let t = (t as f64).clamp(first, end - 1.0);
        axis.state_at(AxisMode::Time, t).unwrap_or(0)
    };
    let mut open: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
    let mut phases: Vec<Phase> = Vec::new();
    for a in snapshot.annotations.iter().filter(|a| a.device == dev.id) {
        match a.stage {
            AnnotationStage::Start => {
                open.entry(a.name).or_default().push(phases.len());
                phases.push(Phase {
                    name: snapshot.str(a.name).to_string(),
                    start_state: state_at(a.time_us),
                    end_state: None,
                    start_time_us: a.time_us,
                    end_time_us: None,
                });
            }
            AnnotationStage::End => {
                if let Some(i) = open.get_mut(&a.name).and_then(Vec::pop) {
                    phases[i].end_state = Some(state_at(a.time_us));
                    phases[i].end_time_us = Some(a.time_us);
                }
            }
            AnnotationStage::Other(_) => {}
        }
    }
    phases
}

fn ooms(dev: &Device, axis: &Axis<'_>) -> Vec<OomMark> {
    let trace = &dev.trace;
    (0..trace.len())
        .filter(|&r| trace.action[r] == Action::Oom)
        .map(|r| OomMark {
            state: r as u32 + 1,
            time_us: axis.time_of_state(r as u32 + 1).filter(|_| axis.has_time()),
            requested: trace.size[r],
            device_free: trace.addr[r],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::decode_bytes;

    fn example() -> Analysed {
        let bytes = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../static/example.pickle"
        ))
        .expect("the bundled example");
        Analysed::new(decode_bytes(&bytes).expect("the example decodes"))
    }

    fn clock() -> f64 {
        0.0
    }

    fn timeline(t: &mut Timelines, a: &Analysed, kind: Kind, detail: Option<u32>) -> TimelineInfo {
        let device = a.snapshot.default_device().unwrap();
        match t
            .handle(
                a,
                &Request::Timeline {
                    device,
                    kind,
                    detail,
                },
                &clock,
            )
            .unwrap()
            .response
        {
            Response::Timeline(info) => info,
            other => panic!("{other:?}"),
        }
    }

    fn frame_request(info: &TimelineInfo, width: u32, height: u32) -> FrameRequest {
        FrameRequest {
            device: info.device,
            kind: info.kind,
            seq: 7,
            view: Viewport {
                mode: AxisMode::Events,
                x0: info.events_range.0,
                x1: info.events_range.1,
                width,
                height,
            },
            dark: false,
            line_width: 2,
            whole: false,
            pinned: None,
            show_matches: false,
            show_line: true,
        }
    }

    #[test]
    fn a_frame_of_the_whole_run_reaches_the_peak() {
        let a = example();
        let mut t = Timelines::default();
        let info = timeline(&mut t, &a, Kind::Allocations, None);
        let (_, facts) = a.device_facts(info.device).unwrap();
        assert_eq!(info.peak_bytes, facts.peak_allocated.bytes);
        assert!(info.detail > 0 && info.detail <= info.elements);
        let reply = t
            .handle(&a, &Request::Frame(frame_request(&info, 800, 300)), &clock)
            .unwrap();
        let Response::Frame(frame) = reply.response else {
            panic!()
        };
        assert_eq!(frame.seq, 7);
        assert_eq!(frame.peak_bytes, info.peak_bytes);
        assert_eq!(frame.peak_state, Some(info.peak_state));
        assert_eq!(reply.pixels.unwrap().len(), 800 * 300 * 4);
        assert!(frame.drawn_individually > 0);
    }

    #[test]
    fn hovering_the_bottom_of_the_peak_names_an_allocation_and_its_stack_is_available() {
        let a = example();
        let mut t = Timelines::default();
        let info = timeline(&mut t, &a, Kind::Allocations, None);
        let request = frame_request(&info, 400, 200);
        let Response::Frame(frame) = t
            .handle(&a, &Request::Frame(request.clone()), &clock)
            .unwrap()
            .response
        else {
            panic!()
        };
        // The column holding the peak state.
        let view = request.view;
        let x = ((info.peak_state as f64 - view.x0) / (view.x1 - view.x0) * 400.0) as u32;
        let hit = HitRequest {
            device: info.device,
            kind: info.kind,
            seq: 1,
            view,
            y_max: frame.y_max,
            x,
            y: 199,
        };
        let Response::Hit(hit) = t.handle(&a, &Request::Hit(hit), &clock).unwrap().response else {
            panic!()
        };
        let element = hit
            .element
            .expect("an allocation at the bottom of the peak column");
        assert!(element.size > 0);
        assert!(
            element.frames.is_empty(),
            "hover details come without the stack"
        );
        let Response::Element { detail: Some(full) } = t
            .handle(
                &a,
                &Request::Element {
                    device: info.device,
                    kind: info.kind,
                    index: element.index,
                },
                &clock,
            )
            .unwrap()
            .response
        else {
            panic!()
        };
        assert_eq!(full.frame_count as usize, full.frames.len());
        assert_eq!(full.addr, element.addr);
    }

    #[test]
    fn search_counts_matches_and_walks_them() {
        let a = example();
        let mut t = Timelines::default();
        let info = timeline(&mut t, &a, Kind::Allocations, None);
        let (_, facts) = a.device_facts(info.device).unwrap();
        let target = facts.allocations.last().unwrap().addr;
        let request = Request::Search {
            device: info.device,
            kind: info.kind,
            query: format!("{target:#x}"),
        };
        let Response::Search(found) = t.handle(&a, &request, &clock).unwrap().response else {
            panic!()
        };
        assert!(found.valid);
        let expected = facts
            .allocations
            .iter()
            .filter(|x| x.addr <= target && target < x.addr + x.size.max(1))
            .count();
        assert_eq!(found.count as usize, expected);
        let Response::Element {
            detail: Some(first),
        } = t
            .handle(
                &a,
                &Request::Match {
                    device: info.device,
                    kind: info.kind,
                    nth: 0,
                },
                &clock,
            )
            .unwrap()
            .response
        else {
            panic!()
        };
        assert!(first.addr <= target && target < first.addr + first.size.max(1));
        let past_end = Request::Match {
            device: info.device,
            kind: info.kind,
            nth: found.count,
        };
        assert_eq!(
            t.handle(&a, &past_end, &clock).unwrap().response,
            Response::Element { detail: None }
        );
    }

    #[test]
    fn changing_the_detail_relays_out_and_segments_have_their_own_timeline() {
        let a = example();
        let mut t = Timelines::default();
        let first = timeline(&mut t, &a, Kind::Allocations, Some(3));
        assert_eq!(first.detail, 3.min(first.elements));
        let again = timeline(&mut t, &a, Kind::Allocations, None);
        assert_eq!(again.detail, first.detail, "the detail is kept");
        let segments = timeline(&mut t, &a, Kind::Segments, None);
        let (_, facts) = a.device_facts(segments.device).unwrap();
        assert_eq!(segments.peak_bytes, facts.peak_reserved.bytes);
        let reply = t
            .handle(
                &a,
                &Request::Minimap {
                    device: segments.device,
                    kind: Kind::Segments,
                    mode: AxisMode::Events,
                    width: 50,
                },
                &clock,
            )
            .unwrap();
        let Response::Minimap(m) = reply.response else {
            panic!()
        };
        assert_eq!(m.totals.len(), 50);
        assert_eq!(
            m.totals.iter().max().copied(),
            Some(facts.peak_reserved.bytes)
        );
    }

    #[test]
    fn frames_before_layout_are_refused() {
        let a = example();
        let t = Timelines::default();
        let info = TimelineInfo {
            device: 0,
            kind: Kind::Allocations,
            states: 1,
            has_time: false,
            events_range: (0.0, 1.0),
            time_range: None,
            elements: 0,
            detail: 0,
            default_detail: 0,
            peak_state: 0,
            peak_bytes: 0,
            peak_time_us: None,
            phases: vec![],
            ooms: vec![],
            layout_ms: 0.0,
        };
        let mut t = t;
        let reply = t
            .handle(&a, &Request::Frame(frame_request(&info, 10, 10)), &clock)
            .unwrap();
        assert!(matches!(reply.response, Response::ViewError(_)));
    }
}
