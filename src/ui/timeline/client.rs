//! The timeline's conversation with its file's worker, as a state machine: events come in
//! (the view changed, an answer arrived with its id, the pointer hovered or clicked, the plot
//! was measured, a search was typed or restored from a link…) and [`TimelineCommand`]s go out (ask
//! the worker this, show that). It decides what is asked for and when, and which answers
//! count:
//! - one frame in flight: a view that changes while a frame is out is asked for when that
//!   frame arrives, and only the latest view;
//! - no frame before the plot's size is known (measured, or expected from a plot laid out
//!   before); a frame asked for by an input handler itself, or that came with the file, is not
//!   asked for again by the effect that follows every change of the view;
//! - a hover waits behind the hit test in flight, and only the last one is asked;
//! - each kind of request keeps its latest id ([`Latest`]): an answer superseded by a newer
//!   request, or to a request cancelled (a search or a pin cleared), is dropped;
//! - a new layout starts at the whole trace, or at the view a link restores (its search
//!   highlighted without moving the view), and the first frame of each layout is told apart.
//!
//! Pure: no signals, no browser; unit-tested natively. The timeline's view state (`view.rs`)
//! keeps the view in signals (the ranges, the axis, the colouring…), describes it as the frame
//! it would ask for, feeds the events in and carries the commands out. Not the place for navigation
//! arithmetic (`range.rs`, `gestures.rs`) or for how answers are drawn.

use super::range::{XRange, YRange};
use crate::analysis::axis::AxisMode;
use crate::model::State;
use crate::protocol::{RequestId, ViewError};
use crate::timeline::inspect::{ElementDetail, OomDetail};
use crate::timeline::service::{
    FirstView, FrameInfo, FrameRequest, HitInfo, HitRequest, MinimapInfo, SearchInfo,
    TimelineAnswer, TimelineInfo, TimelineRequest,
};
use crate::timeline::{TimelineKind, Viewport};
use crate::ui::link::ViewLink;
use crate::ui::requests::Latest;

/// The plot's size in CSS pixels, and the device pixel ratio.
pub type PlotSize = (f64, f64, f64);

/// What a request was asked for: its answer comes back to [`Client::answered`] with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    Layout,
    Frame,
    /// What is under a pixel: for the tooltip, or for a click (`click`), whose answer may pin.
    Hit {
        click: bool,
    },
    /// An element to pin (one clicked, or a search match).
    Element(ElementPurpose),
    /// An out-of-memory to pin.
    Oom,
    Search,
    Minimap,
}

/// What an element's answer is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementPurpose {
    /// A click (or a link): pin it.
    Pin,
    /// Search navigation (or another view asking to show it): pin it and centre the view on it.
    Match,
}

/// What the component does for the client.
#[derive(Clone, Debug, PartialEq)]
pub enum TimelineCommand {
    /// Ask the worker, then tell the client the id the request went out with
    /// ([`Client::sent`]); its answer goes to [`Client::answered`] with `Purpose`.
    Ask(Purpose, TimelineRequest),
    /// Tell the worker something nobody waits for an answer to.
    Tell(TimelineRequest),
    /// Describe the view as it is now to [`Client::frame_wanted`]: the client changed it, or
    /// wants it again.
    RequestFrame,
    /// Describe the minimap to ask for to [`Client::minimap_wanted`].
    RequestMinimap,
    /// The plot's new size.
    Resize(PlotSize),
    /// A layout's description (an axis in time goes back to events when the layout has no
    /// times); no error shows any more.
    ShowLayout(TimelineInfo),
    /// Show the whole trace, the bytes fitted.
    ShowWhole,
    /// Show the ranges a link restores: `x` (the whole trace when `None`), `y` (fitted when
    /// `None`).
    ShowRanges {
        x: Option<XRange>,
        y: Option<YRange>,
    },
    /// The layout is being replaced: its description, search count and minimap go.
    ForgetLayout,
    /// A painted frame, its pixels beside the answer; `first` for the first of its layout,
    /// which puts the timeline on screen.
    ShowFrame {
        frame: FrameInfo,
        first: bool,
    },
    /// The tooltip shows what is under the pointer, at `at` (CSS pixels in the plot).
    ShowHit {
        hit: Box<HitInfo>,
        at: (f64, f64),
    },
    HideHit,
    /// Pin an element (nothing else stays pinned), the view centred on it if `centre`.
    Pin {
        detail: Box<ElementDetail>,
        centre: bool,
    },
    /// Pin an out-of-memory (nothing else stays pinned).
    PinOom(Box<OomDetail>),
    Unpin,
    /// The other views show this state.
    PickMoment(State),
    /// A search asked for: its query is what the timeline searches for, and the match shown
    /// goes back to the first.
    SearchFor(String),
    /// A search's answer: its count, and its matches highlighted in the next frames.
    ShowSearch(SearchInfo),
    /// The search is cleared: no query, no count.
    ClearSearch,
    /// The search match shown (counting from 0).
    ShowMatch(u32),
    ShowMinimap(MinimapInfo),
    /// Why a request could not be answered; on screen in place of the first frame.
    ShowError(ViewError),
}

/// What is known of the plot's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SizeKnown {
    /// Nothing: no frame is asked for.
    No,
    /// Expected from a plot laid out before in a window of this size; the page's own layout
    /// will tell.
    Expected,
    Measured,
}

/// The x extents of the layout on screen, in either axis.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Extents {
    kind: TimelineKind,
    events: (f64, f64),
    time: Option<(f64, f64)>,
}

impl Extents {
    fn of(info: &TimelineInfo) -> Extents {
        Extents {
            kind: info.kind,
            events: info.events_range,
            time: info.time_range,
        }
    }

    /// The whole trace in `mode`'s units.
    fn full(&self, mode: AxisMode) -> XRange {
        let (a, b) = match (mode, self.time) {
            (AxisMode::Time, Some(r)) => r,
            _ => self.events,
        };
        XRange::new(a, b)
    }
}

/// The frame on screen, for hit-testing what is painted.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Painted {
    view: Viewport,
    /// Its bottom and top edges in bytes.
    y: (u64, u64),
}

/// One device's timeline as its worker's client: what it asked for, what waits behind it,
/// and what of the answers it has shown that its decisions depend on.
#[derive(Debug)]
pub struct Client {
    device: u32,
    /// The kind of the layout asked for last.
    kind: TimelineKind,
    size: PlotSize,
    size_known: SizeKnown,
    /// What a link restores once the first layout has arrived (ranges, pin, search).
    restore: Option<ViewLink>,
    /// The layout on screen.
    shown: Option<Extents>,

    /// The layout whose description counts.
    layout: Latest,
    /// The frame in flight (at most one), and what it asked for.
    frame: Latest,
    frame_asked: Option<FrameRequest>,
    /// Another view was wanted while a frame was in flight: ask again when it arrives.
    frame_wanted_again: bool,
    /// A frame asked for by an input handler itself (or that came with the file), before the
    /// effect that follows every change of the view runs: that effect's request for the same
    /// picture is not asked again.
    asked_directly: Option<FrameRequest>,
    /// No frame of the layout asked for last has been shown yet.
    awaiting_first_frame: bool,
    painted: Option<Painted>,

    /// A hit test is in flight: a hover waits in `hover_next` behind it.
    hit_in_flight: bool,
    hover_next: Option<(f64, f64)>,
    /// The hit whose answer shows in the tooltip.
    hover: Latest,
    /// The click whose hit may pin an element.
    click: Latest,
    /// The latest click picks its moment rather than pinning (Shift+click).
    click_picks_moment: bool,
    /// Where the pointer is in the plot, in CSS pixels.
    pointer: (f64, f64),
    /// The tooltip shows a hit: it follows the view when a new frame comes.
    hit_shown: bool,

    /// The element (a pinned one, an out-of-memory, or a search match) whose details count.
    element: Latest,
    /// The search whose count counts.
    search: Latest,
    /// The search asked for highlights its matches without moving to the first (restored
    /// from a link, or being typed).
    quiet_search: bool,
    /// The query and count of the search shown.
    search_shown: Option<(String, u32)>,
    minimap: Latest,
}

impl Client {
    /// The client of `device`'s timeline, showing `kind`, its plot `size` until measured.
    pub fn new(device: u32, kind: TimelineKind, size: PlotSize) -> Client {
        Client {
            device,
            kind,
            size,
            size_known: SizeKnown::No,
            restore: None,
            shown: None,
            layout: Latest::default(),
            frame: Latest::default(),
            frame_asked: None,
            frame_wanted_again: false,
            asked_directly: None,
            awaiting_first_frame: false,
            painted: None,
            hit_in_flight: false,
            hover_next: None,
            hover: Latest::default(),
            click: Latest::default(),
            click_picks_moment: false,
            pointer: (0.0, 0.0),
            hit_shown: false,
            element: Latest::default(),
            search: Latest::default(),
            quiet_search: false,
            search_shown: None,
            minimap: Latest::default(),
        }
    }

    // ---- What the component asks of the client.

    /// Whether a link's ranges, pin and search wait for the first layout.
    pub fn restoring(&self) -> bool {
        self.restore.is_some()
    }

    /// Whether the plot's size is expected, not measured yet.
    pub fn size_expected(&self) -> bool {
        self.size_known == SizeKnown::Expected
    }

    /// The bytes at the bottom and top edges of the frame on screen.
    pub fn painted_y(&self) -> (u64, u64) {
        self.painted.map_or((0, 0), |p| p.y)
    }

    // ---- Events: the view and the plot.

    /// A link is being restored: its ranges, pin and search wait for the first layout (its
    /// tab, axis and colouring are the component's to set now).
    pub fn restore(&mut self, link: ViewLink) {
        self.kind = link.timeline.kind;
        self.restore = Some(link);
    }

    /// The plot's size is expected to be `size` (a plot was laid out in a window of this
    /// size): frames may be asked for at once, without measuring the new plot first.
    pub fn expect_size(&mut self, size: PlotSize) -> Vec<TimelineCommand> {
        self.size = size;
        self.size_known = SizeKnown::Expected;
        vec![TimelineCommand::Resize(size)]
    }

    /// The plot was measured at `size`: the first measure lets frames be asked for.
    pub fn measured(&mut self, size: PlotSize) -> Vec<TimelineCommand> {
        let first = self.size_known == SizeKnown::No;
        self.size_known = SizeKnown::Measured;
        if self.size != size {
            // The view changed: the effect that follows it asks for its frame.
            self.size = size;
            vec![TimelineCommand::Resize(size)]
        } else if first {
            vec![TimelineCommand::RequestFrame]
        } else {
            Vec::new()
        }
    }

    /// The first view the worker painted with the file, shown if it is what this timeline
    /// would ask for first (`wanted`: the same size, no link to restore); `None` otherwise,
    /// and the timeline asks as usual.
    pub fn first_view(
        &mut self,
        view: FirstView,
        wanted: &FrameRequest,
    ) -> Option<Vec<TimelineCommand>> {
        if self.restoring() || !self.size_known() || !same_picture(&view.request, wanted, None) {
            return None;
        }
        let FirstView {
            request,
            layout,
            frame,
        } = view;
        self.awaiting_first_frame = true;
        let mut commands = self.show_layout(layout);
        // The effect that follows every change of the view would ask for this picture again.
        self.asked_directly = Some(request);
        commands.extend(self.show_frame(frame));
        Some(commands)
    }

    /// The timeline shows `kind`: its layout is asked for (at the detail a link asks for,
    /// the first time), and what was asked of the previous one is forgotten. Nothing is asked
    /// when the layout on screen is of this kind (it came with the file).
    pub fn show_kind(&mut self, kind: TimelineKind) -> Vec<TimelineCommand> {
        self.kind = kind;
        if self.shown.is_some_and(|shown| shown.kind == kind) {
            return Vec::new();
        }
        let detail = self.restore.as_ref().and_then(|link| link.timeline.detail);
        let mut commands = self.forget_layout();
        commands.extend(self.lay_out(detail));
        commands
    }

    /// Lays the current kind out again (`detail` = `None` keeps the current detail), a
    /// frame asked for right behind it.
    pub fn lay_out(&mut self, detail: Option<u32>) -> Vec<TimelineCommand> {
        self.awaiting_first_frame = true;
        let request = TimelineRequest::Layout {
            device: self.device,
            kind: self.kind,
            detail,
        };
        vec![
            TimelineCommand::Ask(Purpose::Layout, request),
            TimelineCommand::RequestFrame,
        ]
    }

    /// The view is now `wanted` (from the effect that follows every change of the view, or
    /// because the client asked to describe it): ask for its frame, unless it is the one
    /// asked for directly just before.
    pub fn frame_wanted(&mut self, wanted: FrameRequest) -> Vec<TimelineCommand> {
        if !self.size_known() {
            return Vec::new();
        }
        let full = self.full(wanted.view.mode);
        let direct = self.asked_directly.take();
        if direct.is_some_and(|direct| same_picture(&direct, &wanted, full)) {
            return Vec::new();
        }
        self.ask_frame(wanted)
    }

    /// An input handler moved the view to `wanted`: ask for its frame now, so the worker
    /// starts painting before the page's effects run.
    pub fn frame_wanted_now(&mut self, wanted: FrameRequest) -> Vec<TimelineCommand> {
        if !self.size_known() {
            return Vec::new();
        }
        if !self.frame.awaited() {
            self.asked_directly = Some(wanted.clone());
        }
        self.ask_frame(wanted)
    }

    /// The minimap `width` device pixels wide, along `mode`'s axis.
    pub fn minimap_wanted(&mut self, mode: AxisMode, width: u32) -> Vec<TimelineCommand> {
        let request = TimelineRequest::Minimap {
            device: self.device,
            kind: self.kind,
            mode,
            width,
        };
        vec![TimelineCommand::Ask(Purpose::Minimap, request)]
    }

    // ---- Events: the pointer.

    /// The pointer is at `(x, y)` (CSS pixels in the plot), before its hit's answer arrives.
    pub fn pointer_at(&mut self, x: f64, y: f64) {
        self.pointer = (x, y);
    }

    /// The pointer hovers `(x, y)`: what is there shows in the tooltip.
    pub fn hover(&mut self, x: f64, y: f64) -> Vec<TimelineCommand> {
        self.ask_hit(x, y, None)
    }

    /// A click at `(x, y)`: pins the allocation there; a click where there is none picks its
    /// moment instead.
    pub fn click(&mut self, x: f64, y: f64) -> Vec<TimelineCommand> {
        self.ask_hit(x, y, Some(false))
    }

    /// A Shift+click at `(x, y)`: the other views show its moment; what is pinned stays.
    pub fn pick_moment_at(&mut self, x: f64, y: f64) -> Vec<TimelineCommand> {
        self.ask_hit(x, y, Some(true))
    }

    /// The pointer is over something other than the painted pixels (a scope, an
    /// out-of-memory mark): no hit shows.
    pub fn hover_elsewhere(&mut self) -> Vec<TimelineCommand> {
        self.hit_shown = false;
        vec![TimelineCommand::HideHit]
    }

    /// The pointer left the plot (or a drag started): no hit shows, and none waits.
    pub fn pointer_left(&mut self) -> Vec<TimelineCommand> {
        self.hover_next = None;
        self.hover_elsewhere()
    }

    // ---- Events: pins and searches.

    pub fn unpin(&mut self) -> Vec<TimelineCommand> {
        self.cancel_pending_elements();
        vec![TimelineCommand::Unpin]
    }

    /// Pins the `nth` out-of-memory of the device.
    pub fn pin_oom(&mut self, nth: u32) -> Vec<TimelineCommand> {
        let request = TimelineRequest::Oom {
            device: self.device,
            nth,
        };
        vec![TimelineCommand::Ask(Purpose::Oom, request)]
    }

    /// Pins an allocation of the allocations timeline and centres the view on it.
    pub fn pin_allocation(&mut self, index: u32) -> Vec<TimelineCommand> {
        self.ask_element(TimelineKind::Allocations, index, ElementPurpose::Match)
    }

    /// Searches, and goes to the first match when the answer comes.
    pub fn run_search(&mut self, query: String) -> Vec<TimelineCommand> {
        self.search_with(query, false)
    }

    /// Searches for what is being typed: the matches are highlighted and counted, and the
    /// view stays where it is until the user asks for a match. Nothing is asked when the
    /// query is the one already searched.
    pub fn type_search(&mut self, query: String) -> Vec<TimelineCommand> {
        if self
            .search_shown
            .as_ref()
            .is_some_and(|(shown, _)| *shown == query)
        {
            return Vec::new();
        }
        self.search_with(query, true)
    }

    pub fn clear_search(&mut self) -> Vec<TimelineCommand> {
        self.search.cancel();
        self.cancel_pending_elements();
        self.search_shown = None;
        // The worker forgets its matches (no longer highlighted); nobody needs the answer.
        let forget = TimelineRequest::Search {
            device: self.device,
            kind: self.kind,
            query: String::new(),
        };
        vec![TimelineCommand::ClearSearch, TimelineCommand::Tell(forget)]
    }

    /// Shows the `nth` search match (wrapping around), pinned and centred.
    pub fn go_to_match(&mut self, nth: i64) -> Vec<TimelineCommand> {
        let Some(count) = self.search_shown.as_ref().map(|(_, count)| *count) else {
            return Vec::new();
        };
        if count == 0 {
            return Vec::new();
        }
        let nth = nth.rem_euclid(count as i64) as u32;
        let request = TimelineRequest::Match {
            device: self.device,
            kind: self.kind,
            nth,
        };
        vec![
            TimelineCommand::ShowMatch(nth),
            TimelineCommand::Ask(Purpose::Element(ElementPurpose::Match), request),
        ]
    }

    // ---- Events: the worker.

    /// A request went out with `id`: its answer is the one that counts for its purpose.
    pub fn sent(&mut self, purpose: Purpose, id: RequestId) {
        match purpose {
            Purpose::Layout => self.layout.sent(id),
            Purpose::Frame => self.frame.sent(id),
            Purpose::Hit { click } => {
                self.hit_in_flight = true;
                self.hover.sent(id);
                if click {
                    self.click.sent(id);
                }
            }
            Purpose::Element(_) | Purpose::Oom => self.element.sent(id),
            Purpose::Search => self.search.sent(id),
            Purpose::Minimap => self.minimap.sent(id),
        }
    }

    /// The answer to request `id`, asked for `purpose` (a view error, or an answer of
    /// another kind than asked, is shown as an error).
    pub fn answered(
        &mut self,
        purpose: Purpose,
        id: RequestId,
        result: Result<TimelineAnswer, ViewError>,
    ) -> Vec<TimelineCommand> {
        match purpose {
            Purpose::Layout => self.layout_answered(id, result),
            Purpose::Frame => self.frame_answered(id, result),
            Purpose::Hit { .. } => self.hit_answered(id, result),
            Purpose::Element(purpose) => self.element_answered(id, purpose, result),
            Purpose::Oom => self.oom_answered(id, result),
            Purpose::Search => self.search_answered(id, result),
            Purpose::Minimap => self.minimap_answered(id, result),
        }
    }

    fn layout_answered(
        &mut self,
        id: RequestId,
        result: Result<TimelineAnswer, ViewError>,
    ) -> Vec<TimelineCommand> {
        if !self.layout.answered(id) {
            return Vec::new();
        }
        let mut commands = match result {
            Ok(TimelineAnswer::Layout(info)) => self.show_layout(info),
            other => return vec![TimelineCommand::ShowError(failure(other))],
        };
        commands.push(TimelineCommand::RequestFrame);
        commands
    }

    fn frame_answered(
        &mut self,
        id: RequestId,
        result: Result<TimelineAnswer, ViewError>,
    ) -> Vec<TimelineCommand> {
        self.asked_directly = None;
        if !self.frame.answered(id) {
            return Vec::new();
        }
        let mut commands = match result {
            Ok(TimelineAnswer::Frame(frame)) => self.show_frame(frame),
            other => vec![TimelineCommand::ShowError(failure(other))],
        };
        if std::mem::take(&mut self.frame_wanted_again) {
            commands.push(TimelineCommand::RequestFrame);
        }
        commands
    }

    fn hit_answered(
        &mut self,
        id: RequestId,
        result: Result<TimelineAnswer, ViewError>,
    ) -> Vec<TimelineCommand> {
        self.hit_in_flight = false;
        let click = self.click.answered(id);
        let latest = self.hover.answered(id);
        let next = self.hover_next.take();
        let mut commands = Vec::new();
        match result {
            Ok(TimelineAnswer::Hit(hit)) => {
                // Pinning shows an allocation and leaves the other views at their moment (a
                // student copying "peak" numbers must get the peak); the moment changes only
                // when asked: Shift+click, or a click where there is no allocation.
                if click {
                    match (&hit.element, self.click_picks_moment) {
                        (Some(e), false) => {
                            commands.extend(self.ask_element(e.kind, e.index, ElementPurpose::Pin))
                        }
                        (_, true) => commands.extend(hit.state.map(TimelineCommand::PickMoment)),
                        (None, false) => {
                            commands.extend(self.unpin());
                            commands.extend(hit.state.map(TimelineCommand::PickMoment));
                        }
                    }
                }
                if latest {
                    self.hit_shown = true;
                    commands.push(TimelineCommand::ShowHit {
                        hit: Box::new(hit),
                        at: self.pointer,
                    });
                }
            }
            other => commands.push(TimelineCommand::ShowError(failure(other))),
        }
        if let Some((x, y)) = next {
            commands.extend(self.hover(x, y));
        }
        commands
    }

    fn element_answered(
        &mut self,
        id: RequestId,
        purpose: ElementPurpose,
        result: Result<TimelineAnswer, ViewError>,
    ) -> Vec<TimelineCommand> {
        if !self.element.answered(id) {
            return Vec::new();
        }
        match result {
            Ok(TimelineAnswer::Element(Some(detail))) => vec![TimelineCommand::Pin {
                detail: Box::new(detail),
                centre: purpose == ElementPurpose::Match,
            }],
            Ok(TimelineAnswer::Element(None)) => Vec::new(),
            other => vec![TimelineCommand::ShowError(failure(other))],
        }
    }

    fn oom_answered(
        &mut self,
        id: RequestId,
        result: Result<TimelineAnswer, ViewError>,
    ) -> Vec<TimelineCommand> {
        if !self.element.answered(id) {
            return Vec::new();
        }
        match result {
            Ok(TimelineAnswer::Oom(Some(detail))) => vec![TimelineCommand::PinOom(detail)],
            Ok(TimelineAnswer::Oom(None)) => Vec::new(),
            other => vec![TimelineCommand::ShowError(failure(other))],
        }
    }

    fn search_answered(
        &mut self,
        id: RequestId,
        result: Result<TimelineAnswer, ViewError>,
    ) -> Vec<TimelineCommand> {
        if !self.search.answered(id) {
            return Vec::new();
        }
        let found = match result {
            Ok(TimelineAnswer::Search(found)) => found,
            other => return vec![TimelineCommand::ShowError(failure(other))],
        };
        let any = found.count > 0;
        self.search_shown = Some((found.query.clone(), found.count));
        let mut commands = vec![TimelineCommand::ShowSearch(found)];
        let quiet = std::mem::take(&mut self.quiet_search);
        if any && !quiet {
            commands.extend(self.go_to_match(0));
        }
        commands
    }

    fn minimap_answered(
        &mut self,
        id: RequestId,
        result: Result<TimelineAnswer, ViewError>,
    ) -> Vec<TimelineCommand> {
        if !self.minimap.answered(id) {
            return Vec::new();
        }
        match result {
            Ok(TimelineAnswer::Minimap(minimap)) => vec![TimelineCommand::ShowMinimap(minimap)],
            other => vec![TimelineCommand::ShowError(failure(other))],
        }
    }

    // ---- What the events share.

    fn size_known(&self) -> bool {
        self.size_known != SizeKnown::No
    }

    /// The whole trace in `mode`'s units, once a layout is on screen.
    fn full(&self, mode: AxisMode) -> Option<XRange> {
        self.shown.map(|shown| shown.full(mode))
    }

    /// Asks for `wanted`, or, while a frame is in flight, remembers to ask for the view then
    /// (unless the frame in flight paints the same picture).
    fn ask_frame(&mut self, wanted: FrameRequest) -> Vec<TimelineCommand> {
        if self.frame.awaited() {
            let full = self.full(wanted.view.mode);
            let same = self
                .frame_asked
                .as_ref()
                .is_some_and(|asked| same_picture(asked, &wanted, full));
            self.frame_wanted_again |= !same;
            return Vec::new();
        }
        self.frame_wanted_again = false;
        self.frame_asked = Some(wanted.clone());
        vec![TimelineCommand::Ask(
            Purpose::Frame,
            TimelineRequest::Frame(wanted),
        )]
    }

    /// Shows a painted frame: its view for hit tests, and what is under the pointer again
    /// when the tooltip shows (the frame moved under it).
    fn show_frame(&mut self, frame: FrameInfo) -> Vec<TimelineCommand> {
        self.painted = Some(Painted {
            view: frame.view,
            y: (frame.y_min, frame.y_max),
        });
        let first = std::mem::take(&mut self.awaiting_first_frame);
        let mut commands = vec![TimelineCommand::ShowFrame { frame, first }];
        if self.hit_shown {
            let (x, y) = self.pointer;
            commands.extend(self.hover(x, y));
        }
        commands
    }

    /// Shows a layout's description; a new layout starts at the whole trace (or at the view
    /// a link restores). Asks for no frame.
    fn show_layout(&mut self, info: TimelineInfo) -> Vec<TimelineCommand> {
        let same_layout = self.shown.is_some_and(|shown| shown.kind == info.kind);
        self.shown = Some(Extents::of(&info));
        let mut commands = vec![TimelineCommand::ShowLayout(info)];
        if !same_layout {
            match self.restore.take() {
                Some(link) => commands.extend(self.restore_view(link)),
                None => commands.push(TimelineCommand::ShowWhole),
            }
            commands.push(TimelineCommand::RequestMinimap);
        }
        commands
    }

    /// A link's ranges, pin and search, over the layout that has just arrived.
    fn restore_view(&mut self, link: ViewLink) -> Vec<TimelineCommand> {
        let mut commands = vec![TimelineCommand::ShowRanges {
            x: link.timeline.x.map(|(x0, x1)| XRange::new(x0, x1)),
            y: link
                .timeline
                .y
                .map(|(min, max)| YRange::new(min.max(0.0), max)),
        }];
        // Only allocations are pinned (a segment is not a selection other views share).
        let allocations = self.kind == TimelineKind::Allocations;
        if let Some(element) = link.pin.filter(|_| allocations) {
            commands.extend(self.ask_element(
                TimelineKind::Allocations,
                element,
                ElementPurpose::Pin,
            ));
        }
        if !link.timeline.search.is_empty() {
            commands.extend(self.search_with(link.timeline.search, true));
        }
        commands
    }

    /// Forgets everything asked before the layout changes: answers about the previous
    /// layout must not reach the new one.
    fn forget_layout(&mut self) -> Vec<TimelineCommand> {
        self.shown = None;
        self.search_shown = None;
        let mut commands = vec![TimelineCommand::ForgetLayout];
        commands.extend(self.unpin());
        self.search.cancel();
        self.minimap.cancel();
        commands
    }

    /// Asks what is under `(x, y)`: for a hover (`click` = `None`), which waits behind a hit
    /// in flight, or for a click, which picks its moment (`Some(true)`) or pins.
    fn ask_hit(&mut self, x: f64, y: f64, click: Option<bool>) -> Vec<TimelineCommand> {
        if self.hit_in_flight && click.is_none() {
            self.hover_next = Some((x, y));
            return Vec::new();
        }
        if let Some(picks_moment) = click {
            // The latest click's answer counts: what it asked for with it.
            self.click_picks_moment = picks_moment;
        }
        let Some(painted) = self.painted else {
            return Vec::new();
        };
        let (_, _, dpr) = self.size;
        let request = HitRequest {
            device: self.device,
            kind: self.kind,
            view: painted.view,
            y_min: painted.y.0,
            y_max: painted.y.1,
            x: (x * dpr).floor().max(0.0) as u32,
            y: (y * dpr).floor().max(0.0) as u32,
        };
        let purpose = Purpose::Hit {
            click: click.is_some(),
        };
        vec![TimelineCommand::Ask(purpose, TimelineRequest::Hit(request))]
    }

    /// Asks for an element to pin; only the latest one asked for counts.
    fn ask_element(
        &mut self,
        kind: TimelineKind,
        index: u32,
        purpose: ElementPurpose,
    ) -> Vec<TimelineCommand> {
        let request = TimelineRequest::Element {
            device: self.device,
            kind,
            index,
        };
        vec![TimelineCommand::Ask(Purpose::Element(purpose), request)]
    }

    /// Answers still to come for pins or matches must not pin anything any more.
    fn cancel_pending_elements(&mut self) {
        self.click.cancel();
        self.element.cancel();
    }

    fn search_with(&mut self, query: String, quiet: bool) -> Vec<TimelineCommand> {
        self.quiet_search = quiet;
        let request = TimelineRequest::Search {
            device: self.device,
            kind: self.kind,
            query: query.clone(),
        };
        vec![
            TimelineCommand::SearchFor(query),
            TimelineCommand::Ask(Purpose::Search, request),
        ]
    }
}

/// Whether two frame requests paint the same picture: a request for the whole trace (asked
/// before the layout's extent was known) is the same as one for its full range, or as
/// another whole one.
fn same_picture(a: &FrameRequest, b: &FrameRequest, full: Option<XRange>) -> bool {
    let settled = |r: &FrameRequest| {
        let mut r = r.clone();
        if r.whole {
            // The worker paints the whole trace whatever range a whole frame names: its full
            // range once that is known.
            let (x0, x1) = full.map_or((0.0, 0.0), |full| (full.x0, full.x1));
            r.whole = full.is_none();
            r.view.x0 = x0;
            r.view.x1 = x1;
        }
        r
    };
    settled(a) == settled(b)
}

/// The error of an answer that is not the one a request expects.
fn failure(result: Result<TimelineAnswer, ViewError>) -> ViewError {
    match result {
        Err(error) => error,
        Ok(answer) => ViewError::Malformed {
            detail: format!("unexpected {} answer", answer.name()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::colouring::ColourBy;
    use crate::ui::link::TimelineLink;
    use crate::ui::plot_size;

    const DEVICE: u32 = 0;
    /// The size a timeline starts with, before its plot is measured.
    const UNKNOWN: PlotSize = (800.0, 360.0, 1.0);
    const MEASURED: PlotSize = (500.0, 200.0, 1.0);
    /// The whole trace, in events.
    const WHOLE: (f64, f64) = (0.0, 1000.0);

    fn layout_info(kind: TimelineKind) -> TimelineInfo {
        TimelineInfo {
            device: DEVICE,
            kind,
            states: 1001,
            has_time: false,
            events_range: WHOLE,
            time_range: None,
            elements: 10,
            detail: 10,
            default_detail: 10,
            peak_state: State::new(500),
            peak_bytes: 1 << 30,
            peak_time_us: None,
            scopes: vec![],
            ooms: vec![],
            pools: vec![],
            layout_ms: 0.0,
        }
    }

    /// The frame the worker paints for `request`: a whole one over the whole trace.
    fn painted(request: &FrameRequest) -> FrameInfo {
        let mut view = request.view;
        if request.whole {
            (view.x0, view.x1) = WHOLE;
        }
        FrameInfo {
            view,
            y_min: 0,
            y_max: 1 << 30,
            drawn_individually: 0,
            peak_state: None,
            peak_bytes: 0,
            first_state: None,
            last_state: None,
            paint_ms: 0.0,
        }
    }

    fn element(index: u32) -> ElementDetail {
        ElementDetail {
            kind: TimelineKind::Allocations,
            index,
            addr: 0,
            size: 512,
            block_size: None,
            stream: 0,
            origin: "trace".into(),
            start_state: State::new(100 + index),
            end_state: Some(State::new(110 + index)),
            free_requested_state: None,
            alloc_time_us: None,
            free_time_us: None,
            top_frame: None,
            top_frame_is_user: false,
            top_frame_index: None,
            frames: vec![],
            frame_count: 0,
            compile_context: None,
            user_metadata: None,
            role: None,
            shape: None,
            dtype: None,
            annotations: vec![],
            forward_top_frame: None,
            forward_frames: vec![],
        }
    }

    fn hit(element_there: Option<u32>, state: u32) -> HitInfo {
        HitInfo {
            state: Some(State::new(state)),
            time_us: None,
            total: 0,
            line: None,
            element: element_there.map(element),
            small_bytes: None,
            hit_ms: 0.0,
        }
    }

    fn found(query: &str, count: u32) -> SearchInfo {
        SearchInfo {
            query: query.into(),
            valid: true,
            count,
            drawn: count,
            bytes_at_peak: 0,
            largest: 0,
        }
    }

    /// The timeline component in miniature: the view it keeps in signals, the requests it
    /// sent to the worker and not yet answered, and everything else the client had it do.
    /// After each event, the effect that follows every change of the view describes the view
    /// to the client, as the page's does once the event's handler has run.
    struct Page {
        client: Client,
        size: PlotSize,
        layout: Option<TimelineKind>,
        range: XRange,
        y: Option<YRange>,
        pinned: Option<u32>,
        search_count: u32,
        /// Something the frames' effect follows changed.
        view_changed: bool,
        next_id: RequestId,
        asked: Vec<(RequestId, Purpose, TimelineRequest)>,
        told: Vec<TimelineRequest>,
        /// The commands carried out that do not change the view or ask the worker, in order.
        done: Vec<TimelineCommand>,
    }

    impl Page {
        /// A timeline as it is made, restoring `link`, before its effects first run.
        fn new(link: Option<ViewLink>) -> Page {
            let mut client = Client::new(DEVICE, TimelineKind::Allocations, UNKNOWN);
            if let Some(link) = link {
                client.restore(link);
            }
            Page {
                client,
                size: UNKNOWN,
                layout: None,
                range: XRange::new(0.0, 1.0),
                y: None,
                pinned: None,
                search_count: 0,
                view_changed: false,
                next_id: 1,
                asked: Vec::new(),
                told: Vec::new(),
                done: Vec::new(),
            }
        }

        /// The effects' first run: the kind's layout, then the frames'.
        fn mount(&mut self) {
            let kind = self.client.kind;
            self.view_changed = true;
            self.on(|c| c.show_kind(kind));
        }

        /// A timeline as it mounts: its layout asked for, its plot not measured yet.
        fn mounted() -> Page {
            Page::mounted_with(None)
        }

        /// A timeline that mounts restoring `link`.
        fn mounted_with(link: Option<ViewLink>) -> Page {
            let mut page = Page::new(link);
            page.mount();
            page
        }

        /// A timeline showing the whole trace, measured, its first frame on screen and
        /// nothing in flight.
        fn showing_the_whole_trace() -> Page {
            let mut page = Page::mounted();
            page.on(|c| c.measured(MEASURED));
            let layout = page.only(Purpose::Layout);
            page.answer_layout(layout);
            let frame = page.only(Purpose::Frame);
            page.answer_frame(frame);
            let minimap = page.only(Purpose::Minimap);
            let curve = MinimapInfo {
                mode: AxisMode::Events,
                totals: vec![1, 2],
                line: vec![],
            };
            page.answer(minimap, Ok(TimelineAnswer::Minimap(curve)));
            assert!(page.asked.is_empty());
            page.done.clear();
            page
        }

        /// Feeds the client an event, carries out its commands, then lets the view's
        /// effect run.
        fn on(&mut self, event: impl FnOnce(&mut Client) -> Vec<TimelineCommand>) {
            let commands = event(&mut self.client);
            self.run(commands);
            while std::mem::take(&mut self.view_changed) {
                let wanted = self.wanted();
                let commands = self.client.frame_wanted(wanted);
                self.run(commands);
            }
        }

        fn run(&mut self, commands: Vec<TimelineCommand>) {
            for command in commands {
                self.carry_out(command);
            }
        }

        fn carry_out(&mut self, command: TimelineCommand) {
            match command {
                TimelineCommand::Ask(purpose, request) => {
                    let id = self.next_id;
                    self.next_id += 1;
                    self.asked.push((id, purpose, request));
                    self.client.sent(purpose, id);
                }
                TimelineCommand::Tell(request) => self.told.push(request),
                TimelineCommand::RequestFrame => {
                    let wanted = self.wanted();
                    let commands = self.client.frame_wanted(wanted);
                    self.run(commands);
                }
                TimelineCommand::RequestMinimap => {
                    let commands = self.client.minimap_wanted(AxisMode::Events, 500);
                    self.run(commands);
                }
                TimelineCommand::Resize(size) => {
                    self.size = size;
                    self.view_changed = true;
                }
                TimelineCommand::ShowLayout(ref info) => {
                    self.layout = Some(info.kind);
                    self.done.push(command);
                }
                TimelineCommand::ShowWhole => {
                    self.range = XRange::new(WHOLE.0, WHOLE.1);
                    self.y = None;
                    self.view_changed = true;
                }
                TimelineCommand::ShowRanges { x, y } => {
                    self.range = x.unwrap_or(XRange::new(WHOLE.0, WHOLE.1));
                    self.y = y;
                    self.view_changed = true;
                }
                TimelineCommand::ForgetLayout => {
                    self.layout = None;
                    self.search_count = 0;
                    self.view_changed = true;
                }
                TimelineCommand::Pin { ref detail, centre } => {
                    self.pinned = Some(detail.index);
                    if centre {
                        let full = XRange::new(WHOLE.0, WHOLE.1);
                        let (a, b) = (
                            f64::from(detail.start_state.get()),
                            f64::from(detail.end_state.unwrap().get()),
                        );
                        self.range = self.range.centred_on(a, b, full, 4.0);
                    }
                    self.view_changed = true;
                    self.done.push(command);
                }
                TimelineCommand::Unpin => {
                    self.pinned = None;
                    self.view_changed = true;
                    self.done.push(command);
                }
                TimelineCommand::ShowSearch(ref found) => {
                    self.search_count = found.count;
                    self.view_changed = true;
                    self.done.push(command);
                }
                TimelineCommand::ClearSearch => {
                    self.search_count = 0;
                    self.view_changed = true;
                    self.done.push(command);
                }
                other => self.done.push(other),
            }
        }

        /// The frame the view asks for, as the component describes it.
        fn wanted(&self) -> FrameRequest {
            let (width, height, line_width) = plot_size::device_pixels(self.size);
            FrameRequest {
                device: DEVICE,
                kind: self.layout.unwrap_or(self.client.kind),
                view: Viewport {
                    mode: AxisMode::Events,
                    x0: self.range.x0,
                    x1: self.range.x1,
                    width,
                    height,
                },
                whole: self.layout.is_none(),
                y_range: self.y.map(|y| y.bytes()),
                dark: false,
                line_width,
                pinned: self.pinned,
                show_matches: self.search_count > 0,
                show_line: true,
                colour_by: ColourBy::FIRST_SHOWN,
                highlight: None,
            }
        }

        /// An input handler moves the view to `[x0, x1)` and asks for its frame at once.
        fn zoom_to(&mut self, x0: f64, x1: f64) {
            self.range = XRange::new(x0, x1);
            self.view_changed = true;
            let wanted = self.wanted();
            self.on(|c| c.frame_wanted_now(wanted));
        }

        /// The requests of `purpose` awaiting their answer.
        fn asked_for(&self, purpose: Purpose) -> Vec<(RequestId, TimelineRequest)> {
            self.asked
                .iter()
                .filter(|(_, p, _)| *p == purpose)
                .map(|(id, _, request)| (*id, request.clone()))
                .collect()
        }

        /// The one request of `purpose` awaiting its answer.
        fn only(&self, purpose: Purpose) -> RequestId {
            let asked = self.asked_for(purpose);
            assert_eq!(asked.len(), 1, "one {purpose:?} in flight: {asked:?}");
            asked[0].0
        }

        /// The frames asked for and not yet answered.
        fn frames_asked(&self) -> Vec<FrameRequest> {
            self.asked_for(Purpose::Frame)
                .into_iter()
                .map(|(_, request)| match request {
                    TimelineRequest::Frame(frame) => frame,
                    other => panic!("not a frame: {other:?}"),
                })
                .collect()
        }

        /// The worker answers request `id`.
        fn answer(&mut self, id: RequestId, result: Result<TimelineAnswer, ViewError>) {
            let at = self.asked.iter().position(|(asked, _, _)| *asked == id);
            let (_, purpose, _) = self.asked.remove(at.expect("asked"));
            self.on(|c| c.answered(purpose, id, result));
        }

        fn answer_layout(&mut self, id: RequestId) {
            let kind = match self.asked.iter().find(|(asked, _, _)| *asked == id) {
                Some((_, _, TimelineRequest::Layout { kind, .. })) => *kind,
                other => panic!("not a layout: {other:?}"),
            };
            self.answer(id, Ok(TimelineAnswer::Layout(layout_info(kind))));
        }

        /// The worker paints the frame asked for with `id`.
        fn answer_frame(&mut self, id: RequestId) {
            let frame = match self.asked.iter().find(|(asked, _, _)| *asked == id) {
                Some((_, _, TimelineRequest::Frame(request))) => painted(request),
                other => panic!("not a frame: {other:?}"),
            };
            self.answer(id, Ok(TimelineAnswer::Frame(frame)));
        }

        /// The frames shown so far (their x range), and whether each was the first of its
        /// layout.
        fn frames_shown(&self) -> Vec<((f64, f64), bool)> {
            self.done
                .iter()
                .filter_map(|c| match c {
                    TimelineCommand::ShowFrame { frame, first } => {
                        Some(((frame.view.x0, frame.view.x1), *first))
                    }
                    _ => None,
                })
                .collect()
        }

        /// The hits shown in the tooltip, by where they were asked.
        fn hits_shown(&self) -> Vec<(f64, f64)> {
            self.done
                .iter()
                .filter_map(|c| match c {
                    TimelineCommand::ShowHit { at, .. } => Some(*at),
                    _ => None,
                })
                .collect()
        }
    }

    fn hit_at(request: &TimelineRequest) -> (u32, u32) {
        match request {
            TimelineRequest::Hit(hit) => (hit.x, hit.y),
            other => panic!("not a hit: {other:?}"),
        }
    }

    #[test]
    fn one_frame_in_flight_a_view_changed_meanwhile_is_asked_for_when_it_arrives_the_latest_only() {
        let mut page = Page::showing_the_whole_trace();
        page.zoom_to(100.0, 200.0);
        assert_eq!(page.frames_asked().len(), 1);
        // The view moves on while that frame is painted: nothing more is asked yet.
        page.zoom_to(150.0, 250.0);
        page.zoom_to(300.0, 400.0);
        let asked = page.frames_asked();
        assert_eq!(asked.len(), 1, "one frame in flight");
        assert_eq!((asked[0].view.x0, asked[0].view.x1), (100.0, 200.0));

        // It arrives and is shown; the latest view is asked for then, and only it.
        let first = page.only(Purpose::Frame);
        page.answer_frame(first);
        assert_eq!(page.frames_shown(), [((100.0, 200.0), false)]);
        let asked = page.frames_asked();
        assert_eq!(asked.len(), 1);
        assert_eq!((asked[0].view.x0, asked[0].view.x1), (300.0, 400.0));

        // Once the view is on screen, nothing more is asked for.
        let latest = page.only(Purpose::Frame);
        page.answer_frame(latest);
        assert!(page.frames_asked().is_empty());
        assert_eq!(page.frames_shown().len(), 2);
    }

    #[test]
    fn answers_to_superseded_requests_are_dropped() {
        let mut page = Page::showing_the_whole_trace();

        // Two searches typed: the first one's answer is stale.
        page.on(|c| c.type_search("a".into()));
        page.on(|c| c.type_search("ab".into()));
        let searches = page.asked_for(Purpose::Search);
        assert_eq!(searches.len(), 2);
        page.answer(searches[0].0, Ok(TimelineAnswer::Search(found("a", 5))));
        assert!(!page
            .done
            .iter()
            .any(|c| matches!(c, TimelineCommand::ShowSearch(_))));
        page.answer(searches[1].0, Ok(TimelineAnswer::Search(found("ab", 2))));
        assert!(page
            .done
            .contains(&TimelineCommand::ShowSearch(found("ab", 2))));

        // Two allocations pinned: only the latest is.
        page.on(|c| c.pin_allocation(1));
        page.on(|c| c.pin_allocation(2));
        let pins = page.asked_for(Purpose::Element(ElementPurpose::Match));
        page.answer(pins[1].0, Ok(TimelineAnswer::Element(Some(element(2)))));
        page.answer(pins[0].0, Ok(TimelineAnswer::Element(Some(element(1)))));
        assert_eq!(page.pinned, Some(2));

        // A frame's answer counts once.
        page.zoom_to(100.0, 200.0);
        let frame = page.only(Purpose::Frame);
        let painted = painted(&page.frames_asked()[0]);
        page.answer_frame(frame);
        page.on(|c| c.answered(Purpose::Frame, frame, Ok(TimelineAnswer::Frame(painted))));
        assert_eq!(page.frames_shown().len(), 1);

        // Two details asked for: the first layout's description is not shown.
        page.done.clear();
        page.on(|c| c.lay_out(Some(20)));
        page.on(|c| c.lay_out(Some(40)));
        let layouts = page.asked_for(Purpose::Layout);
        let mut stale = layout_info(TimelineKind::Allocations);
        stale.detail = 20;
        page.answer(layouts[0].0, Ok(TimelineAnswer::Layout(stale)));
        assert!(!page
            .done
            .iter()
            .any(|c| matches!(c, TimelineCommand::ShowLayout(_))));

        // Two hovers' hits, the second a click that went out while the first was in
        // flight: the tooltip shows the click's.
        let mut page = Page::showing_the_whole_trace();
        page.on(|c| c.hover(10.0, 10.0));
        page.client.pointer_at(20.0, 20.0);
        page.on(|c| c.click(20.0, 20.0));
        let hits = page.asked_for(Purpose::Hit { click: false });
        let clicks = page.asked_for(Purpose::Hit { click: true });
        page.answer(hits[0].0, Ok(TimelineAnswer::Hit(hit(None, 1))));
        assert!(page.hits_shown().is_empty(), "superseded by the click");
        page.answer(clicks[0].0, Ok(TimelineAnswer::Hit(hit(Some(3), 2))));
        assert_eq!(page.hits_shown(), [(20.0, 20.0)]);
    }

    #[test]
    fn clearing_a_search_or_a_pin_drops_what_was_awaited() {
        let mut page = Page::showing_the_whole_trace();
        page.on(|c| c.run_search("a".into()));
        let search = page.only(Purpose::Search);
        page.on(Client::clear_search);
        assert_eq!(
            page.told,
            [TimelineRequest::Search {
                device: DEVICE,
                kind: TimelineKind::Allocations,
                query: String::new(),
            }]
        );
        page.answer(search, Ok(TimelineAnswer::Search(found("a", 5))));
        assert_eq!(page.search_count, 0);
        assert!(page
            .asked_for(Purpose::Element(ElementPurpose::Match))
            .is_empty());

        page.on(|c| c.pin_allocation(7));
        let pin = page.only(Purpose::Element(ElementPurpose::Match));
        page.on(Client::unpin);
        page.answer(pin, Ok(TimelineAnswer::Element(Some(element(7)))));
        assert_eq!(page.pinned, None);
    }

    #[test]
    fn a_hover_during_a_hit_in_flight_waits_and_only_the_last_is_asked() {
        let mut page = Page::showing_the_whole_trace();
        let hovers = Purpose::Hit { click: false };
        page.client.pointer_at(10.0, 10.0);
        page.on(|c| c.hover(10.0, 10.0));
        let first = page.only(hovers);
        // The pointer moves on while that hit is answered: the moves wait.
        for x in [20.0, 30.0, 40.0] {
            page.client.pointer_at(x, 10.0);
            page.on(|c| c.hover(x, 10.0));
        }
        assert_eq!(page.asked_for(hovers).len(), 1, "one hit in flight");

        // Its answer shows, and the last move is asked for then, only it.
        page.answer(first, Ok(TimelineAnswer::Hit(hit(None, 1))));
        assert_eq!(page.hits_shown(), [(40.0, 10.0)]);
        let last = page.asked_for(hovers);
        assert_eq!(last.len(), 1);
        assert_eq!(hit_at(&last[0].1), (40, 10));
        page.answer(last[0].0, Ok(TimelineAnswer::Hit(hit(None, 2))));
        assert!(page.asked.is_empty());

        // A move that waits is forgotten when the pointer leaves.
        page.on(|c| c.hover(50.0, 10.0));
        let pending = page.only(hovers);
        page.on(|c| c.hover(60.0, 10.0));
        page.on(Client::pointer_left);
        page.answer(pending, Ok(TimelineAnswer::Hit(hit(None, 3))));
        assert!(page.asked.is_empty());
    }

    #[test]
    fn a_hover_during_a_frame_hits_the_frame_on_screen_and_follows_the_next() {
        let mut page = Page::showing_the_whole_trace();
        let hovers = Purpose::Hit { click: false };
        page.zoom_to(100.0, 200.0);
        page.client.pointer_at(250.0, 100.0);
        page.on(|c| c.hover(250.0, 100.0));
        // What is under the pointer is what is painted: the whole trace, not the frame asked.
        let (id, request) = page.asked_for(hovers).remove(0);
        match &request {
            TimelineRequest::Hit(hit) => assert_eq!((hit.view.x0, hit.view.x1), WHOLE),
            other => panic!("not a hit: {other:?}"),
        }
        page.answer(id, Ok(TimelineAnswer::Hit(hit(None, 1))));
        // The new frame moves the trace under the pointer: its hit is asked again over it.
        let frame = page.only(Purpose::Frame);
        page.answer_frame(frame);
        let (_, request) = page.asked_for(hovers).remove(0);
        match &request {
            TimelineRequest::Hit(hit) => {
                assert_eq!((hit.view.x0, hit.view.x1), (100.0, 200.0));
                assert_eq!((hit.x, hit.y), (250, 100));
            }
            other => panic!("not a hit: {other:?}"),
        }
    }

    #[test]
    fn a_click_pins_what_is_there_and_a_shift_click_picks_the_moment() {
        let mut page = Page::showing_the_whole_trace();
        let clicks = Purpose::Hit { click: true };
        page.on(|c| c.click(10.0, 10.0));
        let click = page.only(clicks);
        page.answer(click, Ok(TimelineAnswer::Hit(hit(Some(4), 40))));
        let pin = page.only(Purpose::Element(ElementPurpose::Pin));
        page.answer(pin, Ok(TimelineAnswer::Element(Some(element(4)))));
        assert_eq!(page.pinned, Some(4));
        assert!(!page
            .done
            .iter()
            .any(|c| matches!(c, TimelineCommand::PickMoment(_))));

        // Shift+click over an allocation: its moment, and the pin stays.
        page.on(|c| c.pick_moment_at(20.0, 10.0));
        let click = page.only(clicks);
        page.answer(click, Ok(TimelineAnswer::Hit(hit(Some(5), 50))));
        assert!(page
            .asked_for(Purpose::Element(ElementPurpose::Pin))
            .is_empty());
        assert_eq!(page.pinned, Some(4));
        assert!(page
            .done
            .contains(&TimelineCommand::PickMoment(State::new(50))));

        // A click where there is nothing: unpinned, and its moment picked.
        page.on(|c| c.click(30.0, 190.0));
        let click = page.only(clicks);
        page.answer(click, Ok(TimelineAnswer::Hit(hit(None, 60))));
        assert_eq!(page.pinned, None);
        assert!(page
            .done
            .contains(&TimelineCommand::PickMoment(State::new(60))));
    }

    #[test]
    fn a_search_typed_while_zooming_keeps_its_count_and_highlight_with_the_latest_view() {
        let mut page = Page::showing_the_whole_trace();
        page.zoom_to(100.0, 200.0);
        page.on(|c| c.type_search("optimizer".into()));
        page.zoom_to(300.0, 400.0);
        let search = page.only(Purpose::Search);
        page.answer(search, Ok(TimelineAnswer::Search(found("optimizer", 3))));
        // Counted, and the view stays where the user zoomed: a typed search does not move it.
        assert_eq!(page.search_count, 3);
        assert_eq!(page.range, XRange::new(300.0, 400.0));
        assert!(page
            .asked_for(Purpose::Element(ElementPurpose::Match))
            .is_empty());

        // The frame in flight was asked before the matches: the next one shows them, over the
        // latest view.
        let frame = page.only(Purpose::Frame);
        assert!(!page.frames_asked()[0].show_matches);
        page.answer_frame(frame);
        let next = page.frames_asked();
        assert_eq!(next.len(), 1);
        assert!(next[0].show_matches);
        assert_eq!((next[0].view.x0, next[0].view.x1), (300.0, 400.0));

        // The same query again asks nothing.
        page.on(|c| c.type_search("optimizer".into()));
        assert!(page.asked_for(Purpose::Search).is_empty());
        // Enter goes to the next match, wrapping around.
        page.on(|c| c.go_to_match(3));
        assert!(page.done.contains(&TimelineCommand::ShowMatch(0)));
    }

    #[test]
    fn a_search_run_goes_to_its_first_match() {
        let mut page = Page::showing_the_whole_trace();
        page.on(|c| c.run_search("optimizer".into()));
        let search = page.only(Purpose::Search);
        page.answer(search, Ok(TimelineAnswer::Search(found("optimizer", 3))));
        let (id, request) = page
            .asked_for(Purpose::Element(ElementPurpose::Match))
            .remove(0);
        assert!(matches!(request, TimelineRequest::Match { nth: 0, .. }));
        page.answer(id, Ok(TimelineAnswer::Element(Some(element(8)))));
        assert_eq!(page.pinned, Some(8));
        let centred = TimelineCommand::Pin {
            detail: Box::new(element(8)),
            centre: true,
        };
        assert!(page.done.contains(&centred));
    }

    fn link(x: Option<(f64, f64)>, pin: Option<u32>, search: &str) -> ViewLink {
        ViewLink {
            timeline: TimelineLink {
                x,
                search: search.into(),
                ..TimelineLink::default()
            },
            pin,
            ..ViewLink::default()
        }
    }

    #[test]
    fn a_search_restored_from_a_link_highlights_its_matches_without_moving_the_view() {
        let mut page = Page::mounted_with(Some(link(Some((100.0, 200.0)), None, "optimizer")));
        assert!(page.client.restoring());
        page.on(|c| c.measured(MEASURED));
        let layout = page.only(Purpose::Layout);
        page.answer_layout(layout);
        assert!(!page.client.restoring());
        assert_eq!(page.range, XRange::new(100.0, 200.0));
        assert!(page
            .done
            .contains(&TimelineCommand::SearchFor("optimizer".to_string())));

        let search = page.only(Purpose::Search);
        page.answer(search, Ok(TimelineAnswer::Search(found("optimizer", 3))));
        assert_eq!(page.search_count, 3);
        assert!(page
            .asked_for(Purpose::Element(ElementPurpose::Match))
            .is_empty());
        assert_eq!(
            page.range,
            XRange::new(100.0, 200.0),
            "the link's view stays"
        );
    }

    #[test]
    fn a_link_restores_its_pin_once_the_layout_arrives() {
        let mut page = Page::mounted_with(Some(link(None, Some(9), "")));
        page.on(|c| c.measured(MEASURED));
        assert!(page
            .asked_for(Purpose::Element(ElementPurpose::Pin))
            .is_empty());
        let layout = page.only(Purpose::Layout);
        page.answer_layout(layout);
        assert_eq!(page.range, XRange::new(WHOLE.0, WHOLE.1));
        let pin = page.only(Purpose::Element(ElementPurpose::Pin));
        page.answer(pin, Ok(TimelineAnswer::Element(Some(element(9)))));
        assert_eq!(page.pinned, Some(9));
        assert_eq!(
            page.range,
            XRange::new(WHOLE.0, WHOLE.1),
            "a pin does not move"
        );
    }

    #[test]
    fn a_frame_asked_directly_by_a_handler_is_not_asked_again_by_the_effect() {
        let mut page = Page::showing_the_whole_trace();
        page.range = XRange::new(100.0, 200.0);
        let wanted = page.wanted();
        // The handler asks at once, before the page's effects run...
        let commands = page.client.frame_wanted_now(wanted.clone());
        let asked = TimelineCommand::Ask(Purpose::Frame, TimelineRequest::Frame(wanted.clone()));
        assert_eq!(commands, [asked]);
        page.run(commands);
        // ...and the effect that follows the view wants the same frame: nothing more.
        assert!(page.client.frame_wanted(wanted).is_empty());
        let frame = page.only(Purpose::Frame);
        page.answer_frame(frame);
        assert!(page.frames_asked().is_empty(), "nothing left wanted");
        assert_eq!(page.frames_shown(), [((100.0, 200.0), false)]);
    }

    #[test]
    fn no_frame_is_asked_before_the_plots_size_is_known() {
        let mut page = Page::mounted();
        let layout = page.only(Purpose::Layout);
        assert!(page.frames_asked().is_empty());
        page.answer_layout(layout);
        page.zoom_to(100.0, 200.0);
        assert!(page.frames_asked().is_empty(), "not at a guessed size");

        page.on(|c| c.measured(MEASURED));
        let asked = page.frames_asked();
        assert_eq!(asked.len(), 1);
        assert_eq!((asked[0].view.width, asked[0].view.height), (500, 200));
        assert_eq!((asked[0].view.x0, asked[0].view.x1), (100.0, 200.0));
    }

    #[test]
    fn a_plot_measured_at_the_size_it_started_with_asks_for_its_frame() {
        let mut page = Page::mounted();
        page.on(|c| c.measured(UNKNOWN));
        assert_eq!(page.frames_asked().len(), 1);
    }

    #[test]
    fn an_expected_size_asks_at_once_and_its_measure_only_when_it_differs() {
        let mut page = Page::mounted();
        page.on(|c| c.expect_size(MEASURED));
        assert!(page.client.size_expected());
        let frame = page.only(Purpose::Frame);
        page.on(|c| c.measured(MEASURED));
        assert!(!page.client.size_expected());
        assert_eq!(page.frames_asked().len(), 1, "the same size asks nothing");
        page.answer_frame(frame);
        assert!(page.frames_asked().is_empty());

        // The page laid the plot out wider than expected: a frame at its real size.
        page.on(|c| c.measured((600.0, 200.0, 1.0)));
        assert_eq!(page.frames_asked()[0].view.width, 600);
    }

    #[test]
    fn the_first_frame_of_each_layout_is_told_apart() {
        let mut page = Page::mounted();
        page.on(|c| c.measured(MEASURED));
        // The whole trace is asked for with the layout, before its extent is known...
        let frame = page.only(Purpose::Frame);
        assert!(page.frames_asked()[0].whole);
        let layout = page.only(Purpose::Layout);
        page.answer_layout(layout);
        // ...and the layout's full range, the same picture, is not asked for again.
        assert_eq!(page.frames_asked().len(), 1);
        page.answer_frame(frame);
        assert!(page.frames_asked().is_empty());
        assert_eq!(page.frames_shown(), [(WHOLE, true)]);

        page.zoom_to(100.0, 200.0);
        let frame = page.only(Purpose::Frame);
        page.answer_frame(frame);
        assert_eq!(page.frames_shown()[1], ((100.0, 200.0), false));

        // Another kind: a new layout, whose first frame is first again.
        page.on(|c| c.show_kind(TimelineKind::Segments));
        assert!(page.done.contains(&TimelineCommand::ForgetLayout) || page.layout.is_none());
        let layout = page.only(Purpose::Layout);
        let frame = page.only(Purpose::Frame);
        page.answer_layout(layout);
        assert_eq!(
            page.range,
            XRange::new(WHOLE.0, WHOLE.1),
            "a new layout shows it whole"
        );
        page.answer_frame(frame);
        assert_eq!(page.frames_shown()[2], (WHOLE, true));
    }

    #[test]
    fn answers_about_the_previous_layout_do_not_reach_the_next() {
        let mut page = Page::showing_the_whole_trace();
        page.on(|c| c.run_search("a".into()));
        let search = page.only(Purpose::Search);
        page.on(|c| c.show_kind(TimelineKind::Segments));
        page.answer(search, Ok(TimelineAnswer::Search(found("a", 5))));
        assert_eq!(page.search_count, 0);
        // Showing the kind already on screen asks nothing.
        let layout = page.only(Purpose::Layout);
        page.answer_layout(layout);
        let before = page.asked.len();
        page.on(|c| c.show_kind(TimelineKind::Segments));
        assert_eq!(page.asked.len(), before);
    }

    fn first_view(size: PlotSize) -> FirstView {
        let (width, height, _) = plot_size::device_pixels(size);
        let request = FrameRequest::first(DEVICE, width, height);
        FirstView {
            frame: painted(&request),
            layout: layout_info(TimelineKind::Allocations),
            request,
        }
    }

    /// A timeline whose plot's size is expected, before its effects first run (when the
    /// first view painted with the file is offered to it).
    fn expecting(size: PlotSize) -> Page {
        let mut page = Page::new(None);
        let commands = page.client.expect_size(size);
        page.run(commands);
        page
    }

    #[test]
    fn the_first_view_painted_with_the_file_is_shown_and_not_asked_for_again() {
        let mut page = expecting(MEASURED);
        let wanted = page.wanted();
        let commands = page
            .client
            .first_view(first_view(MEASURED), &wanted)
            .expect("the view this timeline would ask for");
        page.run(commands);
        assert_eq!(page.frames_shown(), [(WHOLE, true)]);
        assert_eq!(page.layout, Some(TimelineKind::Allocations));
        // The effects' first run: the layout is on screen, and so is its frame.
        page.mount();
        assert!(page.asked_for(Purpose::Layout).is_empty());
        assert!(
            page.frames_asked().is_empty(),
            "the frame came with the file"
        );
        // The minimap is asked for with the layout.
        assert_eq!(page.asked_for(Purpose::Minimap).len(), 1);

        // Once on screen, a change of the view asks as usual.
        page.zoom_to(100.0, 200.0);
        assert_eq!(page.frames_asked().len(), 1);
    }

    #[test]
    fn a_first_view_at_another_size_or_under_a_link_is_not_shown() {
        let mut page = expecting((600.0, 200.0, 1.0));
        let wanted = page.wanted();
        assert!(page
            .client
            .first_view(first_view(MEASURED), &wanted)
            .is_none());

        let mut page = expecting(MEASURED);
        page.client.restore(link(Some((1.0, 2.0)), None, ""));
        let wanted = page.wanted();
        assert!(page
            .client
            .first_view(first_view(MEASURED), &wanted)
            .is_none());
    }

    #[test]
    fn an_unexpected_answer_or_a_view_error_is_shown_as_an_error() {
        let mut page = Page::showing_the_whole_trace();
        page.zoom_to(100.0, 200.0);
        let frame = page.only(Purpose::Frame);
        page.answer(frame, Ok(TimelineAnswer::Hit(hit(None, 1))));
        assert!(page
            .done
            .contains(&TimelineCommand::ShowError(ViewError::Malformed {
                detail: "unexpected timeline hit answer".into()
            })));
        page.zoom_to(300.0, 400.0);
        let frame = page.only(Purpose::Frame);
        page.answer(frame, Err(ViewError::NotLoaded));
        assert!(page
            .done
            .contains(&TimelineCommand::ShowError(ViewError::NotLoaded)));
    }
}
