//! The timeline's requests and answers, and the service that answers them: it lays each
//! (device, kind) timeline out on request, keeps the layout and the last search, and answers
//! frame, hit, element, search and minimap requests.
//!
//! Pure logic over [`crate::timeline`], tested natively; the
//! [`Session`](crate::session::Session) routes [`TimelineRequest`]s here.

use crate::model::{Row, State};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::colouring::{ByCategory, ColourBy, PoolByCategory};
use super::inspect::{self, ElementDetail, KindElements, OomDetail};
use super::layout::{Cursor, TimelineLayout};
use super::raster::{self, ByElement, Hit, Marks, Track, YScale};
use super::{TimelineKind, Viewport};
use crate::analysis::axis::Axis;
use crate::analysis::axis::AxisMode;
use crate::analysis::categories::index::CategoryIndex;
use crate::analysis::categories::labels::phase_label;
use crate::analysis::categories::pooled::PoolKind;
use crate::analysis::categories::signals::Phase;
use crate::analysis::categories::Explainer;
use crate::analysis::categories::Role;
use crate::analysis::curve::{Curve, Envelope};
use crate::analysis::elements::{
    AllocationElements, AnyElements, Elements, PoolElements, SegmentElements,
};
use crate::analysis::palette::{category_colours, highlighted, Style};
use crate::analysis::query::Query;
use crate::analysis::scopes::scope_ranges;
use crate::analysis::{Analysed, DeviceFacts};
use crate::model::{Action, Device};
use crate::service::{Context, Prerequisite, Reply, Service, ViewError};

/// What a timeline view asks for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimelineRequest {
    /// Lay a timeline out (again, when `detail` changes) and describe it.
    Layout {
        device: u32,
        kind: TimelineKind,
        /// Elements to draw individually; `None` keeps the current (or default) detail.
        detail: Option<u32>,
    },
    /// Paint a view of a timeline laid out before; the pixels travel beside the answer.
    Frame(FrameRequest),
    /// What is painted at one pixel of a view.
    Hit(HitRequest),
    /// Everything about one element, with its stack.
    Element {
        device: u32,
        kind: TimelineKind,
        index: u32,
    },
    /// Find elements by address or frame text; the matches are kept for `Frame` and `Match`.
    Search {
        device: u32,
        kind: TimelineKind,
        query: String,
    },
    /// The `nth` match of the last search, as an `Element`.
    Match {
        device: u32,
        kind: TimelineKind,
        nth: u32,
    },
    /// The whole run's totals, one maximum per pixel column, for the minimap.
    Minimap {
        device: u32,
        kind: TimelineKind,
        mode: AxisMode,
        width: u32,
    },
    /// The `nth` out-of-memory of a device: its request, stack and what was alive.
    Oom { device: u32, nth: u32 },
}

/// What the timeline service answers, one variant per request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimelineAnswer {
    Layout(TimelineInfo),
    /// A painted view; its `width × height` RGBA pixels are the reply's attachment.
    Frame(FrameInfo),
    Hit(HitInfo),
    /// `None` when the element does not exist (or the search has fewer matches); answers both
    /// `Element` and `Match`.
    Element(Option<ElementDetail>),
    Search(SearchInfo),
    Minimap(MinimapInfo),
    /// `None` when the device has fewer OOMs.
    Oom(Option<Box<OomDetail>>),
}

impl TimelineAnswer {
    /// Which answer this is: `timeline layout`, `timeline frame`…
    pub fn name(&self) -> &'static str {
        match self {
            TimelineAnswer::Layout(_) => "timeline layout",
            TimelineAnswer::Frame(_) => "timeline frame",
            TimelineAnswer::Hit(_) => "timeline hit",
            TimelineAnswer::Element(_) => "timeline element",
            TimelineAnswer::Search(_) => "timeline search",
            TimelineAnswer::Minimap(_) => "timeline minimap",
            TimelineAnswer::Oom(_) => "timeline out-of-memory",
        }
    }
}

/// A view of a timeline to paint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrameRequest {
    pub device: u32,
    pub kind: TimelineKind,
    pub view: Viewport,
    /// Show the whole trace instead of the view's range (the page may ask for a first frame
    /// before it knows the trace's range).
    #[serde(default)]
    pub whole: bool,
    /// Bytes at the bottom and top edges (a zoomed y axis); `None` fits the view's highest
    /// value.
    #[serde(default)]
    pub y_range: Option<(u64, u64)>,
    pub dark: bool,
    /// Thickness of the reserved line, in device pixels.
    pub line_width: u32,
    pub pinned: Option<u32>,
    /// Paint the last search's matches in the match colour.
    pub show_matches: bool,
    /// Draw the line (reserved bytes) over the allocations.
    pub show_line: bool,
    /// Colour allocations by themselves, by role or by component (segments always by
    /// themselves).
    #[serde(default)]
    pub colour_by: ColourBy,
    /// With a colouring by category: the category shown in full colour, the others dimmed.
    #[serde(default)]
    pub highlight: Option<u32>,
}

impl FrameRequest {
    /// The frame a page first asks of `device`'s allocations timeline: the whole run, bytes
    /// fitted, light, the reserved line two pixels thick, coloured as a timeline first is
    /// ([`ColourBy::FIRST_SHOWN`]).
    pub fn first(device: u32, width: u32, height: u32) -> Self {
        FrameRequest {
            device,
            kind: TimelineKind::Allocations,
            view: Viewport {
                mode: AxisMode::Events,
                x0: 0.0,
                x1: 0.0,
                width,
                height,
            },
            whole: true,
            y_range: None,
            dark: false,
            line_width: 2,
            pinned: None,
            show_matches: false,
            show_line: true,
            colour_by: ColourBy::FIRST_SHOWN,
            highlight: None,
        }
    }
}

/// The first frame a page will ask of a file's timeline, sent with the file: the default
/// device's allocations over the whole run ([`FrameRequest::first`]) at the plot's expected
/// size, in the page's theme. The worker paints it before it reports the file loaded, so the
/// page shows the timeline with the rest of the file's views instead of asking after them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FirstFrame {
    pub width: u32,
    pub height: u32,
    pub dark: bool,
    /// Thickness of the reserved line, in device pixels.
    pub line_width: u32,
}

impl FirstFrame {
    /// The request this frame answers, for `device`.
    pub fn request(&self, device: u32) -> FrameRequest {
        FrameRequest {
            dark: self.dark,
            line_width: self.line_width,
            ..FrameRequest::first(device, self.width, self.height)
        }
    }
}

/// A [`FirstFrame`] painted: the request it answers, the timeline's layout and the frame (its
/// pixels travel beside the message that carries it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FirstView {
    pub request: FrameRequest,
    pub layout: TimelineInfo,
    pub frame: FrameInfo,
}

/// A pixel of a painted view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HitRequest {
    pub device: u32,
    pub kind: TimelineKind,
    /// The view of the painted frame.
    pub view: Viewport,
    /// The painted frame's bottom and top edges in bytes.
    pub y_min: u64,
    pub y_max: u64,
    /// Device pixels from the top-left corner.
    pub x: u32,
    pub y: u32,
}

/// A laid-out timeline: what the page needs to set up its view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimelineInfo {
    pub device: u32,
    pub kind: TimelineKind,
    /// States: trace rows + 1 (state 0 is before the first row).
    pub states: u32,
    /// Whether the x axis can show wall-clock time.
    pub has_time: bool,
    /// The whole trace in event units and, with `has_time`, in microseconds.
    pub events_range: (f64, f64),
    pub time_range: Option<(f64, f64)>,
    /// Elements in the timeline, and how many are drawn individually.
    pub elements: u32,
    pub detail: u32,
    /// The detail chosen when none is asked for: every element of a timeline of up to 20,000,
    /// otherwise every element at least 1/4096 of the peak (at most 500,000).
    pub default_detail: u32,
    /// Where the total peaks (state and bytes) and its time.
    pub peak_state: State,
    pub peak_bytes: u64,
    pub peak_time_us: Option<i64>,
    /// Annotation scopes (`external_annotations`, start and end paired by name) as state ranges.
    pub scopes: Vec<ScopeMark>,
    /// Out-of-memory events.
    pub ooms: Vec<OomMark>,
    /// The device's private pools, each with a timeline of its own.
    #[serde(default)]
    pub pools: Vec<PoolMark>,
    /// Milliseconds the worker spent laying the timeline out.
    pub layout_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScopeMark {
    /// The scope's name, or the phase's words for a band of a serving engine's phase.
    pub name: String,
    /// For a band of a serving engine's phase (from its frames, not a profiler's scope): the
    /// phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    pub start_state: State,
    /// `None` when the scope never ended within the trace.
    pub end_state: Option<State>,
    pub start_time_us: i64,
    pub end_time_us: Option<i64>,
}

/// A private pool of the device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoolMark {
    /// Its position among the device's pools: its timeline is `TimelineKind::Pool(pool)`.
    pub pool: u16,
    /// `(owner, id)`.
    pub id: (i64, i64),
    pub kind: PoolKind,
    /// Bytes of its segments at the end.
    pub reserved_at_end: u64,
    /// The role holding most of its blocks' bytes.
    pub top_role: Option<Role>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OomMark {
    pub state: State,
    pub time_us: Option<i64>,
    /// Bytes requested by the allocation that failed.
    pub requested: u64,
    /// Bytes the device reported free.
    pub device_free: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrameInfo {
    /// What was painted: time falls back to events when the trace has no times, and a request
    /// for the whole trace names its range.
    pub view: Viewport,
    /// Bytes at the bottom and the top edge (fitted: 0 and the view's highest value plus 5 %).
    pub y_min: u64,
    pub y_max: u64,
    /// Distinct elements painted at least one pixel tall.
    pub drawn_individually: u32,
    /// The highest total in view.
    pub peak_state: Option<State>,
    pub peak_bytes: u64,
    pub first_state: Option<State>,
    pub last_state: Option<State>,
    pub paint_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HitInfo {
    /// The state shown in the hovered column (`None` outside the trace).
    pub state: Option<State>,
    pub time_us: Option<i64>,
    /// Total and line (reserved) bytes at that state.
    pub total: u64,
    pub line: Option<u64>,
    /// The element under the pixel, without its full stack.
    pub element: Option<ElementDetail>,
    /// Bytes of the small-allocations band, when the pixel is in it.
    pub small_bytes: Option<u64>,
    pub hit_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchInfo {
    pub query: String,
    /// Whether the query was understood ("0x…" address or frame text).
    pub valid: bool,
    pub count: u32,
    /// Of the matches, how many are drawn individually (the others are in the small band).
    pub drawn: u32,
    /// Bytes of the matches alive where allocated memory peaks.
    #[serde(default)]
    pub bytes_at_peak: u64,
    /// The largest match's bytes (the first one walked: matches go largest first).
    #[serde(default)]
    pub largest: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MinimapInfo {
    pub mode: AxisMode,
    /// Highest total and line per column over the whole trace.
    pub totals: Vec<u64>,
    pub line: Vec<u64>,
}

/// Timelines with at most this many elements draw all of them by default.
const DRAW_ALL_UP_TO: u32 = 20_000;
/// Largest detail offered by default; more can be asked for.
const DEFAULT_DETAIL_CAP: u32 = 500_000;
/// Elements at least this fraction of the peak are drawn by default (a pixel of a 4K-tall plot).
const DEFAULT_DETAIL_FRACTION: u64 = 4096;
/// Largest frame painted, in pixels per side (guards against absurd requests).
const MAX_SIDE: u32 = 8192;

struct Found {
    /// Matching elements, ascending.
    ids: Vec<u32>,
    /// One bit per element.
    bits: Vec<u64>,
}

struct Entry {
    device: u32,
    kind: TimelineKind,
    layout: TimelineLayout,
    /// Kept between hit tests: a hover moves little, so its seeks are short.
    hover: std::cell::RefCell<Cursor>,
    segments: Option<SegmentElements>,
    /// A private pool's allocations and curves, for its timeline.
    pool: Option<PoolElements>,
    info: TimelineInfo,
    found: Option<Found>,
    /// The allocations not drawn one by one, by category, for the categories' generation it
    /// was built for (rebuilt with the layout or the categories).
    band: std::cell::RefCell<Option<(u32, std::rc::Rc<CategoryIndex>)>>,
}

/// Laid-out timelines of one snapshot: the timeline feature's service.
#[derive(Default)]
pub struct TimelineService {
    entries: Vec<Entry>,
    /// Block maxima of each device's allocated curve.
    envelopes: FxHashMap<u32, Envelope>,
}

type Answered = Result<Reply<TimelineAnswer>, ViewError>;

const NOT_LAID_OUT: ViewError = ViewError::NotPrepared {
    needs: Prerequisite::TimelineLayout,
};

impl Service for TimelineService {
    type Request = TimelineRequest;
    type Answer = TimelineAnswer;

    /// Each request's handler is a function of its own (`#[inline(never)]`): a WebAssembly
    /// engine optimises a function as a whole once it has run a while, so a dispatcher with
    /// every handler inlined is optimised (for hundreds of milliseconds of a core) as soon as
    /// any one request is hot, while a file loads.
    fn answer(&mut self, cx: &Context<'_>, request: TimelineRequest) -> Answered {
        let (analysed, now) = (cx.analysed, cx.now);
        match request {
            TimelineRequest::Layout {
                device,
                kind,
                detail,
            } => self.layout(cx, device, kind, detail),
            TimelineRequest::Frame(frame) => self.frame(cx, &frame),
            TimelineRequest::Hit(hit) => self.hit(analysed, &hit, now),
            TimelineRequest::Element {
                device,
                kind,
                index,
            } => self.element(cx, device, kind, index),
            TimelineRequest::Search {
                device,
                kind,
                query,
            } => self.search(analysed, device, kind, &query),
            TimelineRequest::Match { device, kind, nth } => {
                let index = self
                    .entry(device, kind)
                    .and_then(|e| e.found.as_ref())
                    .and_then(|f| f.ids.get(nth as usize).copied());
                match index {
                    Some(index) => self.element(cx, device, kind, index),
                    None => Ok(TimelineAnswer::Element(None).into()),
                }
            }
            TimelineRequest::Minimap {
                device,
                kind,
                mode,
                width,
            } => self.minimap(analysed, device, kind, mode, width),
            TimelineRequest::Oom { device, nth } => {
                let (dev, facts) = analysed
                    .device_facts(device)
                    .ok_or(ViewError::NoSuchDevice { device })?;
                let detail = inspect::oom_detail(&analysed.snapshot, dev, facts, nth);
                Ok(TimelineAnswer::Oom(detail.map(Box::new)).into())
            }
        }
    }
}

impl TimelineService {
    /// Lays out `device`'s allocations timeline at its default detail, with the band of what
    /// is not drawn one by one split by the categories it is first coloured by
    /// ([`ColourBy::FIRST_SHOWN`]): the first frame asked for is then only painted. A device
    /// that cannot be laid out is left for the request that will say why.
    pub fn prepare(&mut self, cx: &Context<'_>, device: u32) {
        let kind = TimelineKind::Allocations;
        if self.layout(cx, device, kind, None).is_err() {
            return;
        }
        let Ok((entry, _, facts)) = self.lookup(cx.analysed, device, kind) else {
            return;
        };
        if ColourBy::FIRST_SHOWN.dimension().is_some() {
            let _ = self.band(cx, entry, facts);
        }
    }

    fn entry(&self, device: u32, kind: TimelineKind) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.device == device && e.kind == kind)
    }

    /// Lays a timeline out (or only again, for a new detail) and describes it.
    #[inline(never)]
    fn layout(
        &mut self,
        cx: &Context<'_>,
        device: u32,
        kind: TimelineKind,
        detail: Option<u32>,
    ) -> Answered {
        let (analysed, now) = (cx.analysed, cx.now);
        let start = now();
        let (dev, facts) = analysed
            .device_facts(device)
            .ok_or(ViewError::NoSuchDevice { device })?;
        if kind == TimelineKind::Allocations && !self.envelopes.contains_key(&device) {
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
            let elements = any_elements(facts, entry.segments.as_ref(), entry.pool.as_ref());
            let detail = detail.unwrap_or(entry.info.detail).min(elements.count());
            if detail != entry.info.detail {
                entry.layout = TimelineLayout::build(&elements, detail);
                // Ranks changed: a kept cursor would name the wrong elements.
                entry.hover = Default::default();
                entry.band = Default::default();
                entry.info.detail = entry.layout.drawn;
                entry.info.layout_ms = now() - start;
            }
            return Ok(TimelineAnswer::Layout(entry.info.clone()).into());
        }
        let segments = (kind == TimelineKind::Segments).then(|| SegmentElements::build(dev, facts));
        let position = analysed
            .device_position(device)
            .ok_or(ViewError::NoSuchDevice { device })?;
        let pool = match kind {
            TimelineKind::Pool(pool) => Some(
                PoolElements::build(facts, &analysed.pools[position], pool)
                    .ok_or(ViewError::NoSuchPool { device, pool })?,
            ),
            _ => None,
        };
        let elements = any_elements(facts, segments.as_ref(), pool.as_ref());
        let peak = match (kind, &pool) {
            (TimelineKind::Pool(_), Some(pool)) => pool_peak(pool),
            (TimelineKind::Segments, _) => facts.peak_reserved,
            _ => facts.peak_allocated,
        };
        let default_detail = default_detail(&elements, peak.bytes);
        let layout = TimelineLayout::build(
            &elements,
            detail.unwrap_or(default_detail).min(elements.count()),
        );
        let axis = Axis::new(&dev.trace);
        let peak_state = State::new(peak.state());
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
            scopes: scopes(analysed, dev, &axis)
                .into_iter()
                .chain(phase_bands(cx, position, &axis))
                .collect(),
            ooms: ooms(dev, &axis),
            pools: pool_marks(cx, position),
            layout_ms: now() - start,
        };
        self.entries.push(Entry {
            device,
            kind,
            layout,
            hover: Default::default(),
            segments,
            pool,
            info: info.clone(),
            found: None,
            band: Default::default(),
        });
        Ok(TimelineAnswer::Layout(info).into())
    }

    #[inline(never)]
    fn frame(&self, cx: &Context<'_>, request: &FrameRequest) -> Answered {
        let (analysed, now) = (cx.analysed, cx.now);
        let start = now();
        let (entry, dev, facts) = self.lookup(analysed, request.device, request.kind)?;
        let (width, height) = (
            request.view.width.clamp(1, MAX_SIDE),
            request.view.height.clamp(1, MAX_SIDE),
        );
        let elements = any_elements(facts, entry.segments.as_ref(), entry.pool.as_ref());
        let track = self.track(entry, dev, facts, &elements);
        let mode = track.axis.mode(request.view.mode);
        // A range that is empty, reversed or NaN shows the whole trace.
        let usable = request.view.x0 < request.view.x1;
        let (x0, x1) = if request.whole || !usable {
            track.axis.full_range(mode)
        } else {
            (request.view.x0, request.view.x1)
        };
        let view = Viewport {
            mode,
            x0,
            x1,
            width,
            height,
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
        let y = match request.y_range {
            Some((min, max)) if min < max => YScale::Bytes { min, max },
            _ => YScale::Fit,
        };
        if let (Some(dimension), Some(pool)) = (request.colour_by.dimension(), &entry.pool) {
            // A pool's blocks are few and all drawn: each in its category's colour.
            let position = cx
                .analysed
                .device_position(request.device)
                .unwrap_or_default();
            let colours = highlighted(
                category_colours(&style, dimension),
                request.highlight,
                style.background,
            );
            let colouring = PoolByCategory {
                members: &pool.members,
                categories: cx.categorised.device(position),
                dimension,
                colours: &colours,
            };
            let frame = raster::paint(&track, &view, y, &style, &colouring, marks);
            return Ok(Reply::with_attachment(
                TimelineAnswer::Frame(frame_info(view, &frame, now() - start)),
                frame.pixels,
            ));
        }
        let by_category = match (request.colour_by.dimension(), &entry.segments) {
            (Some(dimension), None) => Some((dimension, self.band(cx, entry, facts)?)),
            _ => None,
        };
        let frame = match by_category {
            Some((dimension, (position, band))) => {
                let elements = AllocationElements::new(facts);
                let colours = highlighted(
                    category_colours(&style, dimension),
                    request.highlight,
                    style.background,
                );
                let categories = cx.categorised.device(position);
                let colouring = ByCategory {
                    elements: &elements,
                    categories,
                    dimension,
                    colours: &colours,
                    band: band.lookup(facts, categories),
                };
                raster::paint(&track, &view, y, &style, &colouring, marks)
            }
            None => raster::paint(&track, &view, y, &style, &ByElement(&style), marks),
        };
        Ok(Reply::with_attachment(
            TimelineAnswer::Frame(frame_info(view, &frame, now() - start)),
            frame.pixels,
        ))
    }

    #[inline(never)]
    fn hit(&self, analysed: &Analysed, request: &HitRequest, now: &dyn Fn() -> f64) -> Answered {
        let start = now();
        let (entry, dev, facts) = self.lookup(analysed, request.device, request.kind)?;
        let elements = any_elements(facts, entry.segments.as_ref(), entry.pool.as_ref());
        let track = self.track(entry, dev, facts, &elements);
        let view = Viewport {
            width: request.view.width.clamp(1, MAX_SIDE),
            height: request.view.height.clamp(1, MAX_SIDE),
            ..request.view
        };
        let hit = raster::hit(
            &track,
            &view,
            (request.y_min, request.y_max.max(request.y_min + 1)),
            request.x,
            request.y,
            &mut entry.hover.borrow_mut(),
        );
        let hit_ms = now() - start;
        let state = match hit {
            Hit::Element { state, .. } | Hit::Small { state, .. } => Some(State::new(state)),
            Hit::Nothing => {
                let dx = (view.x1 - view.x0) / view.width as f64;
                let a = view.x0 + request.x as f64 * dx;
                track
                    .axis
                    .states_in(view.mode, a, a + dx)
                    .map(|s| State::new(track.total.argmax(s.first, s.last).0))
            }
        };
        let element = match hit {
            Hit::Element { index, .. } => inspect::detail(
                &analysed.snapshot,
                dev,
                facts,
                kind_elements(entry),
                request.kind,
                index,
                false,
            ),
            _ => None,
        };
        let info = HitInfo {
            state,
            time_us: state
                .and_then(|s| track.axis.time_of_state(s))
                .filter(|_| track.axis.has_time()),
            total: state.map_or(0, |s| track.total.value(s.get())),
            line: state.and_then(|s| track.line.map(|l| l.value(s.get()))),
            element,
            small_bytes: match hit {
                Hit::Small { bytes, .. } => Some(bytes),
                _ => None,
            },
            hit_ms,
        };
        Ok(TimelineAnswer::Hit(info).into())
    }

    #[inline(never)]
    fn element(&self, cx: &Context<'_>, device: u32, kind: TimelineKind, index: u32) -> Answered {
        let analysed = cx.analysed;
        let (dev, facts) = analysed
            .device_facts(device)
            .ok_or(ViewError::NoSuchDevice { device })?;
        let entry = self.entry(device, kind);
        let of_kind = entry.map(kind_elements).unwrap_or_default();
        let mut detail =
            inspect::detail(&analysed.snapshot, dev, facts, of_kind, kind, index, true);
        let allocation = match kind {
            TimelineKind::Allocations => {
                Some(AllocationElements::new(facts).allocation_index(index))
            }
            TimelineKind::Pool(_) => of_kind
                .pool
                .and_then(|p| p.members.get(index as usize))
                .map(|&i| i as usize),
            TimelineKind::Segments => None,
        };
        if let (Some(detail), Some(allocation)) = (detail.as_mut(), allocation) {
            let position = analysed.device_position(device).unwrap_or_default();
            let categorised = cx.categorised;
            let mut explainer = Explainer::new(
                analysed,
                position,
                categorised.device(position),
                categorised.rules(),
            );
            detail.role = Some(explainer.explain(allocation));
        }
        Ok(TimelineAnswer::Element(detail).into())
    }

    #[inline(never)]
    fn search(
        &mut self,
        analysed: &Analysed,
        device: u32,
        kind: TimelineKind,
        query: &str,
    ) -> Answered {
        let (_, facts) = analysed
            .device_facts(device)
            .ok_or(ViewError::NoSuchDevice { device })?;
        let i = self
            .entries
            .iter()
            .position(|e| e.device == device && e.kind == kind)
            .ok_or(NOT_LAID_OUT)?;
        let entry = &mut self.entries[i];
        let parsed = Query::parse(query);
        let Some(parsed) = parsed else {
            entry.found = None;
            return Ok(TimelineAnswer::Search(SearchInfo {
                query: query.into(),
                valid: false,
                count: 0,
                drawn: 0,
                bytes_at_peak: 0,
                largest: 0,
            })
            .into());
        };
        let mut ids = inspect::search(
            &analysed.snapshot,
            facts,
            kind_elements(entry),
            kind,
            &parsed,
        );
        let elements = any_elements(facts, entry.segments.as_ref(), entry.pool.as_ref());
        // Walked largest first: what holds the memory comes first (equal sizes in stack order).
        ids.sort_by_key(|&id| (std::cmp::Reverse(elements.size(id)), id));
        let peak = facts.peak_allocated.state();
        let bytes_at_peak = ids
            .iter()
            .filter(|&&id| elements.start(id) <= peak && peak < elements.end(id))
            .map(|&id| elements.size(id))
            .sum();
        let largest = ids.first().map_or(0, |&id| elements.size(id));
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
            bytes_at_peak,
            largest,
        };
        entry.found = Some(Found { ids, bits });
        Ok(TimelineAnswer::Search(info).into())
    }

    #[inline(never)]
    fn minimap(
        &self,
        analysed: &Analysed,
        device: u32,
        kind: TimelineKind,
        mode: AxisMode,
        width: u32,
    ) -> Answered {
        let (entry, dev, facts) = self.lookup(analysed, device, kind)?;
        let elements = any_elements(facts, entry.segments.as_ref(), entry.pool.as_ref());
        let track = self.track(entry, dev, facts, &elements);
        let mode = track.axis.mode(mode);
        let (x0, x1) = track.axis.full_range(mode);
        let mut totals = Vec::new();
        let mut line = Vec::new();
        for states in track.axis.columns(mode, x0, x1, width.clamp(1, MAX_SIDE)) {
            let Some(s) = states else {
                totals.push(0);
                line.push(0);
                continue;
            };
            totals.push(track.total.argmax(s.first, s.last).1);
            line.push(track.line.map_or(0, |l| l.argmax(s.first, s.last).1));
        }
        Ok(TimelineAnswer::Minimap(MinimapInfo { mode, totals, line }).into())
    }

    /// The device's position among the snapshot's devices, and the index of its allocations
    /// not drawn one by one (built once per layout and categorisation).
    fn band(
        &self,
        cx: &Context<'_>,
        entry: &Entry,
        facts: &DeviceFacts,
    ) -> Result<(usize, std::rc::Rc<CategoryIndex>), ViewError> {
        let position =
            cx.analysed
                .device_position(entry.device)
                .ok_or(ViewError::NoSuchDevice {
                    device: entry.device,
                })?;
        let generation = cx.categorised.generation();
        if let Some((built_for, index)) = &*entry.band.borrow() {
            if *built_for == generation {
                return Ok((position, index.clone()));
            }
        }
        let elements = AllocationElements::new(facts);
        let mut drawn = vec![false; facts.allocations.len()];
        for rank in 0..entry.layout.drawn {
            drawn[elements.allocation_index(entry.layout.id(rank))] = true;
        }
        let index = std::rc::Rc::new(CategoryIndex::covering(
            facts,
            cx.categorised.device(position),
            |i| !drawn[i],
        ));
        *entry.band.borrow_mut() = Some((generation, index.clone()));
        Ok((position, index))
    }

    fn lookup<'a>(
        &'a self,
        analysed: &'a Analysed,
        device: u32,
        kind: TimelineKind,
    ) -> Result<(&'a Entry, &'a Device, &'a DeviceFacts), ViewError> {
        let (dev, facts) = analysed
            .device_facts(device)
            .ok_or(ViewError::NoSuchDevice { device })?;
        let entry = self.entry(device, kind).ok_or(NOT_LAID_OUT)?;
        Ok((entry, dev, facts))
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
            (TimelineKind::Pool(_), _) => {
                let pool = entry.pool.as_ref().expect("a pool's timeline has its pool");
                (
                    Curve::Steps {
                        baseline: pool.allocated_baseline,
                        changes: &pool.allocated,
                    },
                    Some(Curve::Steps {
                        baseline: pool.reserved_baseline,
                        changes: &pool.reserved,
                    }),
                )
            }
            (TimelineKind::Allocations, Some(envelope)) => (
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
    pool: Option<&'a PoolElements>,
) -> AnyElements<'a> {
    match (segments, pool) {
        (Some(s), _) => AnyElements::Segments(s),
        (None, Some(p)) => AnyElements::Pool(p),
        (None, None) => AnyElements::Allocations(AllocationElements::new(facts)),
    }
}

/// The elements an entry owns, for inspecting them.
fn kind_elements(entry: &Entry) -> KindElements<'_> {
    KindElements {
        segments: entry.segments.as_ref(),
        pool: entry.pool.as_ref(),
    }
}

/// Where a pool's allocated bytes first peak.
fn pool_peak(pool: &PoolElements) -> crate::analysis::Peak {
    let mut peak = crate::analysis::Peak {
        bytes: pool.allocated_baseline,
        row: None,
    };
    for &(row, bytes) in &pool.allocated {
        if bytes > peak.bytes {
            peak = crate::analysis::Peak {
                bytes,
                row: Some(row),
            };
        }
    }
    peak
}

/// The device's private pools, for the views that offer their timelines.
fn pool_marks(cx: &Context<'_>, position: usize) -> Vec<PoolMark> {
    let pools = &cx.analysed.pools[position];
    let pooled = &cx.categorised.device(position).pooled;
    let roles = &cx.categorised.device(position).roles;
    pools
        .pools
        .iter()
        .enumerate()
        .map(|(k, p)| {
            // The role holding most of its blocks' bytes.
            let mut by_role = [0u64; Role::ALL.len()];
            for &(i, pool) in &pools.members {
                if pool as usize == k {
                    by_role[roles[i as usize] as usize] +=
                        cx.analysed.facts[position].allocations.size(i as usize);
                }
            }
            let top = (0..by_role.len())
                .max_by_key(|&r| by_role[r])
                .filter(|&r| by_role[r] > 0)
                .map(|r| Role::ALL[r]);
            PoolMark {
                pool: k as u16,
                id: p.id,
                kind: pooled.pools.get(k).map_or(PoolKind::Unknown, |f| f.kind),
                reserved_at_end: p.reserved_at_end,
                top_role: top,
            }
        })
        .collect()
}

/// What a frame painted.
fn frame_info(view: Viewport, frame: &raster::PaintedFrame, paint_ms: f64) -> FrameInfo {
    FrameInfo {
        view,
        y_min: frame.y_min,
        y_max: frame.y_max,
        drawn_individually: frame.drawn_individually,
        peak_state: frame.peak.map(|p| State::new(p.0)),
        peak_bytes: frame.peak.map_or(0, |p| p.1),
        first_state: frame.states.map(|s| State::new(s.0)),
        last_state: frame.states.map(|s| State::new(s.1)),
        paint_ms,
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
fn scopes(analysed: &Analysed, dev: &Device, axis: &Axis<'_>) -> Vec<ScopeMark> {
    if !axis.has_time() {
        return Vec::new();
    }
    let snapshot = &analysed.snapshot;
    let (first, end) = axis.full_range(AxisMode::Time);
    let state_at = |t: i64| {
        let t = (t as f64).clamp(first, end - 1.0);
        State::new(axis.state_at(AxisMode::Time, t).unwrap_or(0))
    };
    scope_ranges(snapshot, dev.id)
        .into_iter()
        .map(|s| ScopeMark {
            name: snapshot.str(s.name).to_string(),
            phase: None,
            start_state: state_at(s.start_us),
            end_state: s.end_us.map(state_at),
            start_time_us: s.start_us,
            end_time_us: s.end_us,
        })
        .collect()
}

/// A serving engine's phases as bands (loading the weights, the profile run, the KV cache's
/// allocation, graph capture, prefill and decode steps): each run of rows in one, with the
/// steps between them in the band of the phase they continue; and the unwinding after an
/// out-of-memory error, whose frees are the exception's, not the program's.
fn phase_bands(cx: &Context<'_>, position: usize, axis: &Axis<'_>) -> Vec<ScopeMark> {
    let phases = &cx.categorised.device(position).phases.phase;
    let mut bands: Vec<ScopeMark> = Vec::new();
    let mut row = 0;
    while row < phases.len() {
        let phase = phases[row];
        let end = row + phases[row..].iter().take_while(|&&p| p == phase).count();
        if phase.is_serving() || phase == Phase::Unwinding {
            let (start_state, end_state) = (State::new(row as u32), State::new(end as u32));
            let time = |state: State| axis.time_of_state(state).filter(|_| axis.has_time());
            match bands.last_mut() {
                // A phase that goes on after other rows (a decode step, then the next).
                Some(last) if last.phase == Some(phase) => {
                    last.end_state = Some(end_state);
                    last.end_time_us = time(end_state);
                }
                _ => bands.push(ScopeMark {
                    name: phase_label(phase).to_string(),
                    phase: Some(phase),
                    start_state,
                    end_state: Some(end_state),
                    start_time_us: time(start_state).unwrap_or(0),
                    end_time_us: time(end_state),
                }),
            }
        }
        row = end;
    }
    bands
}

fn ooms(dev: &Device, axis: &Axis<'_>) -> Vec<OomMark> {
    let trace = &dev.trace;
    (0..trace.len())
        .filter(|&r| trace.action[r] == Action::Oom)
        .map(|r| OomMark {
            state: State::after(Row::new(r as u32)),
            time_us: axis
                .time_of_state(State::after(Row::new(r as u32)))
                .filter(|_| axis.has_time()),
            requested: trace.size[r],
            device_free: trace.addr[r],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::categories::categorised::Categorised;
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

    fn ask(t: &mut TimelineService, a: &Analysed, request: TimelineRequest) -> Answered {
        let categorised = Categorised::new(a, Default::default(), &clock).unwrap();
        let cx = Context {
            analysed: a,
            categorised: &categorised,
            now: &clock,
        };
        t.answer(&cx, request)
    }

    fn answer(t: &mut TimelineService, a: &Analysed, request: TimelineRequest) -> TimelineAnswer {
        ask(t, a, request).expect("an answer").answer
    }

    fn timeline(
        t: &mut TimelineService,
        a: &Analysed,
        kind: TimelineKind,
        detail: Option<u32>,
    ) -> TimelineInfo {
        let device = a.snapshot.default_device().unwrap();
        match answer(
            t,
            a,
            TimelineRequest::Layout {
                device,
                kind,
                detail,
            },
        ) {
            TimelineAnswer::Layout(info) => info,
            other => panic!("{other:?}"),
        }
    }

    fn frame_request(info: &TimelineInfo, width: u32, height: u32) -> FrameRequest {
        FrameRequest {
            device: info.device,
            kind: info.kind,
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
            y_range: None,
            pinned: None,
            show_matches: false,
            show_line: true,
            colour_by: Default::default(),
            highlight: None,
        }
    }

    #[test]
    fn a_frame_of_the_whole_run_reaches_the_peak() {
        let a = example();
        let mut t = TimelineService::default();
        let info = timeline(&mut t, &a, TimelineKind::Allocations, None);
        let (_, facts) = a.device_facts(info.device).unwrap();
        assert_eq!(info.peak_bytes, facts.peak_allocated.bytes);
        assert!(info.detail > 0 && info.detail <= info.elements);
        let reply = ask(
            &mut t,
            &a,
            TimelineRequest::Frame(frame_request(&info, 800, 300)),
        )
        .unwrap();
        let TimelineAnswer::Frame(frame) = reply.answer else {
            panic!()
        };
        assert_eq!(frame.view, frame_request(&info, 800, 300).view);
        assert_eq!(frame.peak_bytes, info.peak_bytes);
        assert_eq!(frame.peak_state, Some(info.peak_state));
        assert_eq!(reply.attachment.unwrap().len(), 800 * 300 * 4);
        assert!(frame.drawn_individually > 0);
    }

    #[test]
    fn hovering_the_bottom_of_the_peak_names_an_allocation_and_its_stack_is_available() {
        let a = example();
        let mut t = TimelineService::default();
        let info = timeline(&mut t, &a, TimelineKind::Allocations, None);
        let request = frame_request(&info, 400, 200);
        let TimelineAnswer::Frame(frame) =
            answer(&mut t, &a, TimelineRequest::Frame(request.clone()))
        else {
            panic!()
        };
        // The column holding the peak state.
        let view = request.view;
        let x = ((info.peak_state.get() as f64 - view.x0) / (view.x1 - view.x0) * 400.0) as u32;
        let hit = HitRequest {
            device: info.device,
            kind: info.kind,
            view,
            y_min: frame.y_min,
            y_max: frame.y_max,
            x,
            y: 199,
        };
        let TimelineAnswer::Hit(hit) = answer(&mut t, &a, TimelineRequest::Hit(hit)) else {
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
        let TimelineAnswer::Element(Some(full)) = answer(
            &mut t,
            &a,
            TimelineRequest::Element {
                device: info.device,
                kind: info.kind,
                index: element.index,
            },
        ) else {
            panic!()
        };
        assert_eq!(full.frame_count as usize, full.frames.len());
        assert_eq!(full.addr, element.addr);
    }

    #[test]
    fn search_counts_matches_and_walks_them() {
        let a = example();
        let mut t = TimelineService::default();
        let info = timeline(&mut t, &a, TimelineKind::Allocations, None);
        let (_, facts) = a.device_facts(info.device).unwrap();
        let target = facts.allocations.last().unwrap().addr;
        let request = TimelineRequest::Search {
            device: info.device,
            kind: info.kind,
            query: format!("{target:#x}"),
        };
        let TimelineAnswer::Search(found) = answer(&mut t, &a, request) else {
            panic!()
        };
        assert!(found.valid);
        let expected = facts
            .allocations
            .iter()
            .filter(|x| x.addr <= target && target < x.addr + x.size.max(1))
            .count();
        assert_eq!(found.count as usize, expected);
        let TimelineAnswer::Element(Some(first)) = answer(
            &mut t,
            &a,
            TimelineRequest::Match {
                device: info.device,
                kind: info.kind,
                nth: 0,
            },
        ) else {
            panic!()
        };
        assert!(first.addr <= target && target < first.addr + first.size.max(1));
        let past_end = TimelineRequest::Match {
            device: info.device,
            kind: info.kind,
            nth: found.count,
        };
        assert_eq!(answer(&mut t, &a, past_end), TimelineAnswer::Element(None));
    }

    #[test]
    fn changing_the_detail_relays_out_and_segments_have_their_own_timeline() {
        let a = example();
        let mut t = TimelineService::default();
        let first = timeline(&mut t, &a, TimelineKind::Allocations, Some(3));
        assert_eq!(first.detail, 3.min(first.elements));
        let again = timeline(&mut t, &a, TimelineKind::Allocations, None);
        assert_eq!(again.detail, first.detail, "the detail is kept");
        let segments = timeline(&mut t, &a, TimelineKind::Segments, None);
        let (_, facts) = a.device_facts(segments.device).unwrap();
        assert_eq!(segments.peak_bytes, facts.peak_reserved.bytes);
        let TimelineAnswer::Minimap(m) = answer(
            &mut t,
            &a,
            TimelineRequest::Minimap {
                device: segments.device,
                kind: TimelineKind::Segments,
                mode: AxisMode::Events,
                width: 50,
            },
        ) else {
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
        let mut t = TimelineService::default();
        let info = TimelineInfo {
            device: 0,
            kind: TimelineKind::Allocations,
            states: 1,
            has_time: false,
            events_range: (0.0, 1.0),
            time_range: None,
            elements: 0,
            detail: 0,
            default_detail: 0,
            peak_state: State::BEFORE_TRACE,
            peak_bytes: 0,
            peak_time_us: None,
            scopes: vec![],
            ooms: vec![],
            pools: vec![],
            layout_ms: 0.0,
        };
        let refused = ask(
            &mut t,
            &a,
            TimelineRequest::Frame(frame_request(&info, 10, 10)),
        );
        assert_eq!(refused, Err(NOT_LAID_OUT));
        let search = TimelineRequest::Search {
            device: 0,
            kind: TimelineKind::Allocations,
            query: "x".into(),
        };
        assert_eq!(ask(&mut t, &a, search), Err(NOT_LAID_OUT));
    }

    #[test]
    fn an_unknown_device_is_a_view_error() {
        let a = example();
        let mut t = TimelineService::default();
        let layout = TimelineRequest::Layout {
            device: 77,
            kind: TimelineKind::Allocations,
            detail: None,
        };
        assert_eq!(
            ask(&mut t, &a, layout),
            Err(ViewError::NoSuchDevice { device: 77 })
        );
    }
}
