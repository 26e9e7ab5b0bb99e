//! The timeline of one device as a Leptos component ([`TimelinePanel`]) and its view state in
//! signals ([`Timeline`]), shared by the components of the timeline's folder.

use leptos::prelude::*;
use wasm_bindgen::JsValue;

use super::plot_size::{self, Window};
use super::range::{self, XRange, YRange};
use super::{canvas, details, help, labels, legend, minimap, plot, toolbar};
use crate::analysis::axis::AxisMode;
use crate::analysis::categories::Dimension;
use crate::format;
use crate::protocol::{Answer, Request, RequestId, ViewError};
use crate::timeline::colouring::ColourBy;
use crate::timeline::inspect::{ElementDetail, OomDetail};
use crate::timeline::service::{
    FirstView, FrameInfo, FrameRequest, HitInfo, HitRequest, MinimapInfo, SearchInfo,
    TimelineAnswer, TimelineInfo, TimelineRequest,
};
use crate::timeline::{TimelineKind, Viewport};
use crate::ui::actions::Actions;
use crate::ui::categories::CategoryView;
use crate::ui::link::{TimelineLink, ViewLink};
use crate::ui::requests::{Latest, ScopeId};
use crate::ui::state::FileId;

/// Set when a timeline's first frame is on screen (read by benchmarks).
pub const MARK_TIMELINE_PAINTED: &str = "memsight:timeline-painted";

/// The plot's share of the window's height, unless the user resized it.
pub const DEFAULT_PLOT_SHARE: f64 = 0.46;
/// Where the user's plot share is remembered.
const PLOT_SHARE_KEY: &str = "memsight:plot-share";
/// The requests in flight and what waits behind them.
#[derive(Default)]
struct Pacing {
    /// The layout whose description counts.
    layout: Latest,
    /// The frame in flight (at most one), and what it asked for.
    frame: Latest,
    frame_asked: Option<FrameRequest>,
    /// Another view changed while a frame was in flight: ask again when it arrives.
    dirty: bool,
    /// The plot's size is known (measured, or expected from a plot laid out before): frames
    /// are asked for at its size, never before.
    measured: bool,
    /// The size is the expected one, not yet measured: the page's own layout will tell.
    expected: bool,
    /// A frame asked for by an input handler itself (or that came with the file), before the
    /// effect that follows every change of the view runs: that effect's identical request is
    /// not asked again.
    asked_directly: Option<FrameRequest>,
    /// The view of the frame on screen, for hit-testing what is painted.
    painted: Option<Viewport>,
    /// The painted frame's bottom and top edges in bytes.
    painted_y: (u64, u64),
    /// A hit test is in flight: a hover waits in `hover_next` behind it.
    hover_in_flight: bool,
    hover_next: Option<(f64, f64)>,
    /// The hit whose answer shows in the tooltip.
    hover: Latest,
    /// The click whose hit should pin an element.
    pin: Latest,
    /// The element (a pinned one, or a search match) whose details count.
    element: Latest,
    /// The search whose count counts.
    search: Latest,
    minimap: Latest,
    /// The first frame of this layout has not been painted yet.
    awaiting_first_frame: bool,
    /// Where the pointer is in the plot, in CSS pixels.
    pointer: (f64, f64),
    /// A search restored from a link: highlight its matches without moving to the first.
    quiet_search: bool,
    /// The latest click picks its moment rather than pinning (Shift+click).
    click_picks_moment: bool,
}

/// What an `Element` answer is for.
#[derive(Clone, Copy, Debug, PartialEq)]
enum ElementPurpose {
    /// A click: pin it.
    Pin,
    /// Search navigation: pin it and centre the view on it.
    Match,
}

/// The view state of one device's timeline, shared by its components.
#[derive(Clone, Copy)]
pub struct Timeline {
    pub file: FileId,
    pub device: u32,
    pub(super) actions: Actions,
    /// This view's requests, forgotten when it goes away.
    pub(super) scope: ScopeId,
    pub kind: RwSignal<TimelineKind>,
    pub mode: RwSignal<AxisMode>,
    /// Allocations in their own colours, or their role's or component's.
    pub colour_by: RwSignal<ColourBy>,
    /// The categories shared with the other views of the file.
    pub categories: CategoryView,
    pub info: RwSignal<Option<TimelineInfo>>,
    /// The visible x range.
    pub range: RwSignal<XRange>,
    /// The visible bytes when the y axis is zoomed; `None` fits the highest value in view.
    pub y_range: RwSignal<Option<YRange>>,
    pub frame: RwSignal<Option<FrameInfo>>,
    /// The hovered pixel's answer, with the pointer's position in CSS pixels in the plot.
    pub hover: RwSignal<Option<(HitInfo, f64, f64)>>,
    pub pinned: RwSignal<Option<ElementDetail>>,
    /// The out-of-memory pinned instead of an element, with what was alive then.
    pub pinned_oom: RwSignal<Option<OomDetail>>,
    /// The OOM mark under the pointer (its index in the layout's OOMs), with the pointer.
    pub oom_hover: RwSignal<Option<(usize, f64, f64)>>,
    pub search: RwSignal<Option<SearchInfo>>,
    pub match_nth: RwSignal<u32>,
    pub show_line: RwSignal<bool>,
    pub show_all_frames: RwSignal<bool>,
    pub minimap: RwSignal<Option<MinimapInfo>>,
    /// Why the last request could not be answered, in words.
    pub error: RwSignal<Option<String>>,
    /// Plot size in CSS pixels, and the device pixel ratio.
    pub size: RwSignal<(f64, f64, f64)>,
    /// The plot's share of the window's height (resizable, remembered).
    pub plot_share: RwSignal<f64>,
    pub dark: RwSignal<bool>,
    /// Frames painted so far (for tests).
    pub frames_painted: RwSignal<u32>,
    /// The first frame came with the file, painted before the page asked (for tests).
    pub first_with_file: RwSignal<bool>,
    /// Set once the first frame, or an error in its place, is on screen (the views below wait
    /// for it).
    pub(super) painted: RwSignal<bool>,
    /// The phase under the pointer (index in the layout's phases), with the pointer's position.
    pub phase_hover: RwSignal<Option<(usize, f64, f64)>>,
    /// The keyboard and mouse reference is open.
    pub show_help: RwSignal<bool>,
    /// The overlay as last drawn: where its phases are, for hovering them.
    pub(super) overlay: StoredValue<Option<labels::Layout>, LocalStorage>,
    pub(super) canvas: StoredValue<Option<web_sys::HtmlCanvasElement>, LocalStorage>,
    /// A frame's pixels that arrived before the canvas was there.
    waiting_pixels: StoredValue<Option<JsValue>, LocalStorage>,
    pacing: StoredValue<Pacing, LocalStorage>,
    /// What a link restores once the first layout has arrived (ranges, pin, search).
    restore: StoredValue<Option<ViewLink>, LocalStorage>,
}

impl Timeline {
    /// Whether the view has gone away (another file or device shown, the file closed): work
    /// it asked for in a later animation frame or task must then not touch its signals.
    pub fn is_gone(&self) -> bool {
        self.frame.is_disposed()
    }

    fn new(
        file: FileId,
        device: u32,
        actions: Actions,
        categories: CategoryView,
        dark: RwSignal<bool>,
        painted: RwSignal<bool>,
    ) -> Self {
        Timeline {
            file,
            device,
            actions,
            scope: actions.new_scope(),
            kind: RwSignal::new(TimelineKind::Allocations),
            mode: RwSignal::new(AxisMode::Events),
            colour_by: RwSignal::new(ColourBy::FIRST_SHOWN),
            categories,
            info: RwSignal::new(None),
            range: RwSignal::new(XRange::new(0.0, 1.0)),
            y_range: RwSignal::new(None),
            frame: RwSignal::new(None),
            hover: RwSignal::new(None),
            pinned: RwSignal::new(None),
            pinned_oom: RwSignal::new(None),
            oom_hover: RwSignal::new(None),
            search: RwSignal::new(None),
            match_nth: RwSignal::new(0),
            show_line: RwSignal::new(true),
            show_all_frames: RwSignal::new(false),
            minimap: RwSignal::new(None),
            error: RwSignal::new(None),
            size: RwSignal::new((800.0, 360.0, 1.0)),
            plot_share: RwSignal::new(stored_plot_share()),
            dark,
            frames_painted: RwSignal::new(0),
            first_with_file: RwSignal::new(false),
            painted,
            phase_hover: RwSignal::new(None),
            show_help: RwSignal::new(false),
            overlay: StoredValue::new_local(None),
            canvas: StoredValue::new_local(None),
            waiting_pixels: StoredValue::new_local(None),
            pacing: StoredValue::new_local(Pacing::default()),
            restore: StoredValue::new_local(None),
        }
    }

    /// Takes the timeline's part of a link being restored: its tab, axis and colouring now,
    /// its detail with the first layout, and its ranges, pin and search once that has arrived.
    fn restore_from(&self, link: ViewLink) {
        self.kind.set(link.timeline.kind);
        self.mode.set(link.timeline.axis);
        self.colour_by.set(link.timeline.colour);
        self.restore.set_value(Some(link));
    }

    /// The link's part that waits for the layout, once.
    fn take_restore(&self) -> Option<ViewLink> {
        self.restore.try_update_value(Option::take).flatten()
    }

    /// The timeline's part of the view's link (tracked); `None` until its layout has arrived
    /// (and while a link's part waits for it), so a link's ranges are not written over.
    fn link_part(&self) -> Option<(TimelineLink, Option<u32>)> {
        // Not `get`: the layout's description holds every phase's name, and this runs on
        // each move of the view.
        let (detail, default_detail) = self
            .info
            .with(|i| i.as_ref().map(|i| (i.detail, i.default_detail)))?;
        if self.restore.with_value(Option::is_some) {
            return None;
        }
        let range = self.range.get();
        let full = self.full()?;
        let whole = (range.x0 - full.x0).abs() < 1e-9 && (range.x1 - full.x1).abs() < 1e-9;
        let pin = self.pinned.with(|p| {
            p.as_ref()
                .filter(|d| d.kind == TimelineKind::Allocations)
                .map(|d| d.index)
        });
        let part = TimelineLink {
            kind: self.kind.get(),
            axis: self.mode.get(),
            x: (!whole).then_some((range.x0, range.x1)),
            y: self.y_range.get().map(|y| (y.min, y.max)),
            detail: (detail != default_detail).then_some(detail),
            colour: self.colour_by.get(),
            search: self.categories.search.get(),
        };
        Some((part, pin))
    }

    /// Asks the worker; `on_answer` gets this view, the request's id and the timeline's
    /// answer (or the view's error) with its attachment. `None` when the file has no worker.
    fn ask(
        &self,
        request: TimelineRequest,
        on_answer: impl FnOnce(Timeline, RequestId, Result<TimelineAnswer, ViewError>, Option<JsValue>)
            + 'static,
    ) -> Option<RequestId> {
        let tl = *self;
        self.actions.ask(
            self.file,
            self.scope,
            Request::Timeline(request),
            move |answered| {
                let result = answered.result.and_then(|answer| match answer {
                    Answer::Timeline(answer) => Ok(answer),
                    other => Err(unexpected(&other)),
                });
                on_answer(tl, answered.id, result, answered.attachment);
            },
        )
    }

    /// [`Self::ask`], and makes this request the one whose answer counts for `latest`.
    fn ask_latest(
        &self,
        latest: fn(&mut Pacing) -> &mut Latest,
        request: TimelineRequest,
        on_answer: impl FnOnce(Timeline, RequestId, Result<TimelineAnswer, ViewError>, Option<JsValue>)
            + 'static,
    ) {
        if let Some(id) = self.ask(request, on_answer) {
            self.pacing.update_value(|p| latest(p).sent(id));
        }
    }

    /// Shows why a request could not be answered.
    fn show_error(&self, error: &ViewError) {
        self.error.set(Some(format::problems::view_error(error)));
        self.first_frame_shown();
    }

    /// The first frame (or an error in its place) is on screen.
    fn first_frame_shown(&self) {
        if !self.painted.get_untracked() {
            self.painted.set(true);
        }
    }

    /// [`Self::full`], outside any reactive tracking.
    fn full_untracked(&self) -> Option<XRange> {
        untrack(|| self.full())
    }

    /// The whole trace in the current axis units.
    pub fn full(&self) -> Option<XRange> {
        let mode = self.mode.get();
        self.info.with(|i| {
            i.as_ref().map(|i| {
                let (a, b) = match (mode, i.time_range) {
                    (AxisMode::Time, Some(r)) => r,
                    _ => i.events_range,
                };
                XRange::new(a, b)
            })
        })
    }

    /// The narrowest range: a few states wide in event units, a few microseconds in time.
    pub fn min_span(&self) -> f64 {
        range::MIN_SPAN_EVENTS
    }

    /// Moves the view (clamped to the trace).
    pub fn set_range(&self, r: XRange) {
        self.move_range(r);
        self.request_frame_now();
    }

    /// Moves the view (clamped to the trace) without asking for its frame yet.
    fn move_range(&self, r: XRange) {
        if let Some(full) = self.full() {
            self.range.set(r.clamped(full));
        }
    }

    /// Shows the whole trace, with the y axis fitted to it.
    pub fn reset(&self) {
        self.show_whole();
        self.request_frame_now();
    }

    /// Moves the view to the whole trace, with the y axis fitted to it, without asking for
    /// its frame yet.
    fn show_whole(&self) {
        if let Some(full) = self.full() {
            self.range.set(full);
        }
        self.fit_y();
    }

    /// Fits the y axis to the highest value in view again.
    pub fn fit_y(&self) {
        if self.y_range.with_untracked(Option::is_some) {
            self.y_range.set(None);
        }
    }

    /// The bytes of the frame on screen, bottom and top edges.
    pub fn painted_y(&self) -> YRange {
        let (min, max) = self.pacing.with_value(|p| p.painted_y);
        YRange::new(min as f64, max as f64)
    }

    /// Zooms the y axis by `factor` (< 1 zooms in) around the byte at `fraction` of the
    /// height from the bottom; the first zoom starts from the fitted range on screen.
    pub fn zoom_y(&self, fraction: f64, factor: f64) {
        let current = self
            .y_range
            .get_untracked()
            .unwrap_or_else(|| self.painted_y());
        self.y_range.set(Some(current.zoom(fraction, factor)));
        self.request_frame_now();
    }

    /// Moves a zoomed y axis by `fraction` of the height (positive moves up); false when the
    /// y axis is fitted (nothing to move).
    pub fn pan_y(&self, fraction: f64) -> bool {
        let Some(current) = self.y_range.get_untracked() else {
            return false;
        };
        self.y_range.set(Some(current.pan(fraction)));
        self.request_frame_now();
        true
    }

    /// Shows the box between two points of the plot (CSS pixels from its top-left corner):
    /// its x extent along the trace, its y extent in bytes.
    pub fn zoom_to_box(&self, (ax, ay): (f64, f64), (bx, by): (f64, f64)) {
        let (w, h, _) = self.size.get_untracked();
        let range = self.range.get_untracked();
        let y = self
            .y_range
            .get_untracked()
            .unwrap_or_else(|| self.painted_y());
        let x_at = |px: f64| range.x0 + (px / w.max(1.0)).clamp(0.0, 1.0) * range.span();
        let y_at = |py: f64| y.min + (1.0 - (py / h.max(1.0)).clamp(0.0, 1.0)) * y.span();
        let (x0, x1) = (x_at(ax.min(bx)), x_at(ax.max(bx)));
        if x1 - x0 >= self.min_span() {
            self.move_range(XRange::new(x0, x1));
        } else {
            let mid = (x0 + x1) / 2.0;
            let half = self.min_span() / 2.0;
            self.move_range(XRange::new(mid - half, mid + half));
        }
        self.y_range
            .set(Some(YRange::new(y_at(ay.max(by)), y_at(ay.min(by)))));
        self.request_frame_now();
    }

    pub fn zoom(&self, fraction: f64, factor: f64) {
        if let Some(full) = self.full() {
            let min = self.min_span();
            self.range
                .update(|r| *r = r.zoom(fraction, factor, full, min));
            self.request_frame_now();
        }
    }

    pub fn pan(&self, fraction: f64) {
        if let Some(full) = self.full() {
            self.range.update(|r| *r = r.pan(fraction, full));
            self.request_frame_now();
        }
    }

    /// x (current units) of a state or time mark.
    pub fn x_of(&self, state: u32, time_us: Option<i64>) -> Option<f64> {
        match self.mode.get_untracked() {
            AxisMode::Events => Some(state as f64),
            AxisMode::Time => time_us.map(|t| t as f64),
        }
    }

    /// Shows the peak, zoomed to a fiftieth of the trace.
    pub fn jump_to_peak(&self) {
        let (Some(info), Some(full)) = (self.info.get_untracked(), self.full()) else {
            return;
        };
        let Some(x) = self.x_of(info.peak_state, info.peak_time_us) else {
            return;
        };
        let span = (full.span() / 50.0).max(self.min_span());
        self.set_range(XRange::new(x - span / 2.0, x + span / 2.0));
    }

    /// Where an element lives along the x axis of `mode`: from its alloc to its free.
    pub fn lifetime_x(&self, detail: &ElementDetail, mode: AxisMode) -> Option<(f64, f64)> {
        let full = self.full()?;
        Some(match mode {
            AxisMode::Events => (
                detail.start_state as f64,
                detail.end_state.map_or(full.x1, |e| e as f64),
            ),
            AxisMode::Time => (
                detail.alloc_time_us.map_or(full.x0, |t| t as f64),
                detail.free_time_us.map_or(full.x1, |t| t as f64),
            ),
        })
    }

    /// Centres the view on an element, keeping the zoom when it fits.
    fn centre_on(&self, detail: &ElementDetail) {
        let Some(full) = self.full() else { return };
        let Some((a, b)) = self.lifetime_x(detail, self.mode.get_untracked()) else {
            return;
        };
        let min = self.min_span();
        self.range.update(|r| *r = r.centred_on(a, b, full, min));
    }

    /// Lays the current kind out again (`detail` = `None` keeps the current detail) and asks
    /// for a frame right behind it.
    pub fn lay_out(&self, detail: Option<u32>) {
        self.pacing.update_value(|p| p.awaiting_first_frame = true);
        let request = TimelineRequest::Layout {
            device: self.device,
            kind: self.kind.get_untracked(),
            detail,
        };
        self.ask_latest(
            |p| &mut p.layout,
            request,
            |tl, id, result, _| tl.on_layout(id, result),
        );
        self.request_frame();
    }

    fn on_layout(&self, id: RequestId, result: Result<TimelineAnswer, ViewError>) {
        if self.pacing.try_update_value(|p| p.layout.answered(id)) != Some(true) {
            return;
        }
        match result {
            Ok(TimelineAnswer::Layout(info)) => self.show_layout(info),
            other => return self.show_error(&failure(other)),
        }
        self.request_frame();
    }

    /// Shows a layout's description; a new layout starts at the whole trace (or at the view a
    /// link restores). Asks for no frame.
    fn show_layout(&self, info: TimelineInfo) {
        let same_layout = self
            .info
            .with_untracked(|i| i.as_ref().is_some_and(|i| i.kind == info.kind));
        if !info.has_time && self.mode.get_untracked() == AxisMode::Time {
            self.mode.set(AxisMode::Events);
        }
        self.error.set(None);
        self.info.set(Some(info));
        if !same_layout {
            match self.take_restore() {
                Some(link) => self.restore_view(&link),
                None => self.show_whole(),
            }
            self.request_minimap();
        }
    }

    /// A link's ranges, pin and search, over the layout that has just arrived.
    fn restore_view(&self, link: &ViewLink) {
        match link.timeline.x {
            Some((x0, x1)) => self.move_range(XRange::new(x0, x1)),
            None => {
                if let Some(full) = self.full() {
                    self.range.set(full);
                }
            }
        }
        self.y_range.set(
            link.timeline
                .y
                .map(|(min, max)| YRange::new(min.max(0.0), max)),
        );
        // Only allocations are pinned (a segment is not a selection other views share).
        let allocations = self.kind.get_untracked() == TimelineKind::Allocations;
        if let Some(element) = link.pin.filter(|_| allocations) {
            self.request_element(TimelineKind::Allocations, element, ElementPurpose::Pin);
        }
        if !link.timeline.search.is_empty() {
            self.search_quietly(link.timeline.search.clone());
        }
    }

    /// Asks for a frame of the current view, or marks one as wanted if a frame is in flight.
    /// Before the layout's description arrives, asks for the whole trace, so the first frame
    /// does not wait for an extra round trip.
    pub fn request_frame(&self) {
        if let Some(request) = self.frame_request() {
            let direct = self
                .pacing
                .try_update_value(|p| p.asked_directly.take())
                .flatten();
            if direct.as_ref() != Some(&request) {
                self.ask_frame(request);
            }
        }
    }

    /// Asks for a frame of the current view now, from an input handler, so the worker starts
    /// painting before the page's effects run.
    pub fn request_frame_now(&self) {
        if let Some(request) = self.frame_request() {
            let in_flight = self.pacing.with_value(|p| p.frame.awaited());
            if !in_flight {
                self.pacing
                    .update_value(|p| p.asked_directly = Some(request.clone()));
            }
            self.ask_frame(request);
        }
    }

    /// Takes the plot's size from the width a plot had in a window of this size, if the page
    /// has laid one out: the first frame is asked for with the layout, without measuring the
    /// new plot first. A wrong guess costs a frame: the measure asks again at the real size.
    fn expect_size(&self) {
        let Some(window) = Window::now() else { return };
        let Some(width) = self.actions.expected_plot_width(window) else {
            return;
        };
        self.size
            .set(window.plot_size(width, self.plot_share.get_untracked()));
        self.pacing.update_value(|p| {
            p.measured = true;
            p.expected = true;
        });
    }

    /// Shows the first view the worker painted with the file, if it is the one this timeline
    /// would ask for first (its size as expected, no link to restore): its layout and its
    /// frame, whose pixels go on the canvas as soon as there is one. Otherwise the timeline
    /// asks as usual.
    fn adopt_first_view(&self) {
        let Some((view, pixels)) = self.actions.take_first_view(self.file, self.device) else {
            return;
        };
        if self.restore.with_value(Option::is_some) {
            return;
        }
        let wanted = self.frame_request();
        if !wanted.is_some_and(|wanted| same_picture(&view.request, &wanted, None)) {
            return;
        }
        let FirstView { layout, frame, .. } = *view;
        self.pacing.update_value(|p| p.awaiting_first_frame = true);
        self.show_layout(layout);
        // The effect that follows every change of the view would ask for this frame again.
        let shown = self.frame_request();
        self.pacing.update_value(|p| p.asked_directly = shown);
        self.first_with_file.set(true);
        self.show_frame(frame, Some(pixels));
    }

    /// Puts pixels that arrived before the canvas on it.
    pub(super) fn show_waiting_pixels(&self, canvas: &web_sys::HtmlCanvasElement) {
        let pixels = self.waiting_pixels.try_update_value(Option::take).flatten();
        if let (Some(pixels), Some(frame)) = (pixels, self.frame.get_untracked()) {
            canvas::put_pixels(canvas, &frame, &pixels);
        }
    }

    /// The size is expected, the plot not measured yet.
    pub fn size_expected(&self) -> bool {
        self.pacing.with_value(|p| p.expected)
    }

    /// The plot laid out `width` CSS pixels wide in `window`; the first measure lets frames be
    /// asked for.
    pub fn measured(&self, window: Window, width: f64) {
        self.actions.remember_plot_width(window, width);
        let size = window.plot_size(width, self.plot_share.get_untracked());
        let first = self
            .pacing
            .try_update_value(|p| {
                p.expected = false;
                !std::mem::replace(&mut p.measured, true)
            })
            .unwrap_or(false);
        if self.size.get_untracked() != size {
            self.size.set(size);
        } else if first {
            self.request_frame();
        }
    }

    /// The frame request for the current view; none before the plot is measured.
    fn frame_request(&self) -> Option<FrameRequest> {
        if !self.pacing.with_value(|p| p.measured) {
            return None;
        }
        let info = self.info.get_untracked();
        let kind = info.as_ref().map_or(self.kind.get_untracked(), |i| i.kind);
        let (width, height, line_width) = plot_size::device_pixels(self.size.get_untracked());
        let range = self.range.get_untracked();
        Some(FrameRequest {
            device: self.device,
            kind,
            view: Viewport {
                mode: self.mode.get_untracked(),
                x0: range.x0,
                x1: range.x1,
                width,
                height,
            },
            whole: info.is_none(),
            y_range: self.y_range.get_untracked().map(|y| y.bytes()),
            dark: self.dark.get_untracked(),
            line_width,
            pinned: self.pinned.with_untracked(|p| p.as_ref().map(|d| d.index)),
            show_matches: self
                .search
                .with_untracked(|s| s.as_ref().is_some_and(|s| s.count > 0)),
            show_line: self.show_line.get_untracked() && kind == TimelineKind::Allocations,
            colour_by: self.colour_by.get_untracked(),
            highlight: self
                .categories
                .highlight
                .get_untracked()
                .filter(|c| Some(c.dimension) == self.colour_by.get_untracked().dimension())
                .map(|c| c.index),
        })
    }

    /// Asks for `request`, or marks a frame as wanted if one is in flight for another view.
    fn ask_frame(&self, request: FrameRequest) {
        let full = self.full_untracked();
        let in_flight = self
            .pacing
            .try_update_value(|p| {
                let in_flight = p.frame.awaited();
                if in_flight {
                    let same = p
                        .frame_asked
                        .as_ref()
                        .is_some_and(|asked| same_picture(asked, &request, full));
                    p.dirty |= !same;
                } else {
                    p.dirty = false;
                    p.frame_asked = Some(request.clone());
                }
                in_flight
            })
            .unwrap_or(true);
        if in_flight {
            return;
        }
        self.ask_latest(
            |p| &mut p.frame,
            TimelineRequest::Frame(request),
            |tl, id, result, pixels| tl.on_frame(id, result, pixels),
        );
    }

    fn on_frame(
        &self,
        id: RequestId,
        result: Result<TimelineAnswer, ViewError>,
        pixels: Option<JsValue>,
    ) {
        let answered = self.pacing.try_update_value(|p| {
            p.asked_directly = None;
            p.frame.answered(id)
        });
        if answered != Some(true) {
            return;
        }
        match result {
            Ok(TimelineAnswer::Frame(frame)) => self.show_frame(frame, pixels),
            other => self.show_error(&failure(other)),
        }
        let again = self
            .pacing
            .try_update_value(|p| std::mem::take(&mut p.dirty));
        if again == Some(true) {
            self.request_frame();
        }
    }

    /// Shows a painted frame: its pixels on the canvas (or waiting for it), its view for
    /// hit tests, and its figures.
    fn show_frame(&self, frame: FrameInfo, pixels: Option<JsValue>) {
        match (pixels, self.canvas.get_value()) {
            (Some(pixels), Some(canvas)) => canvas::put_pixels(&canvas, &frame, &pixels),
            (Some(pixels), None) => self.waiting_pixels.set_value(Some(pixels)),
            (None, _) => {}
        }
        let first = self.pacing.try_update_value(|p| {
            p.painted = Some(frame.view);
            p.painted_y = (frame.y_min, frame.y_max);
            std::mem::take(&mut p.awaiting_first_frame)
        });
        self.frames_painted.update(|n| *n += 1);
        self.frame.set(Some(frame));
        if first == Some(true) {
            self.actions.mark_after_render(MARK_TIMELINE_PAINTED);
            self.first_frame_shown();
        }
        // The tooltip follows the view: what is under the pointer may have changed.
        if self.hover.with_untracked(Option::is_some) {
            let (x, y) = self.pacing.with_value(|p| p.pointer);
            self.hit_test(x, y, false);
        }
    }

    /// Picks the moment under `(x, y)` (CSS pixels in the plot) for the other views
    /// (Shift+click), leaving what is pinned as it is.
    pub fn pick_moment_at(&self, x: f64, y: f64) {
        self.ask_hit(x, y, true, true);
    }

    /// Asks what is under `(x, y)` (CSS pixels in the plot): to show it on hover, or, for a
    /// click (`pin`), to pin the allocation there — a click where there is none picks its
    /// moment instead.
    pub fn hit_test(&self, x: f64, y: f64, pin: bool) {
        self.ask_hit(x, y, pin, false);
    }

    fn ask_hit(&self, x: f64, y: f64, pin: bool, picks_moment: bool) {
        let (_, _, dpr) = self.size.get_untracked();
        let mut request = None;
        self.pacing.update_value(|p| {
            if p.hover_in_flight && !pin {
                p.hover_next = Some((x, y));
                return;
            }
            if pin {
                // The latest click's answer counts: what it asked for with it.
                p.click_picks_moment = picks_moment;
            }
            let Some(painted) = p.painted else { return };
            request = Some(HitRequest {
                device: self.device,
                kind: self.kind.get_untracked(),
                view: painted,
                y_min: p.painted_y.0,
                y_max: p.painted_y.1,
                x: (x * dpr).floor().max(0.0) as u32,
                y: (y * dpr).floor().max(0.0) as u32,
            });
        });
        let Some(request) = request else { return };
        let sent = self.ask(TimelineRequest::Hit(request), |tl, id, result, _| {
            tl.on_hit(id, result)
        });
        if let Some(id) = sent {
            self.pacing.update_value(|p| {
                p.hover_in_flight = true;
                p.hover.sent(id);
                if pin {
                    p.pin.sent(id);
                }
            });
        }
    }

    fn on_hit(&self, id: RequestId, result: Result<TimelineAnswer, ViewError>) {
        let (latest, pin, picks_moment, next) = self
            .pacing
            .try_update_value(|p| {
                p.hover_in_flight = false;
                let pin = p.pin.answered(id);
                (
                    p.hover.answered(id),
                    pin,
                    p.click_picks_moment,
                    p.hover_next.take(),
                )
            })
            .unwrap_or((false, false, false, None));
        match result {
            Ok(TimelineAnswer::Hit(hit)) => {
                // Pinning shows an allocation and leaves the other views at their moment (a
                // student copying "peak" numbers must get the peak); the moment changes only
                // when asked: Shift+click, or a click where there is no allocation.
                if pin {
                    match (&hit.element, picks_moment) {
                        (Some(e), false) => {
                            self.request_element(e.kind, e.index, ElementPurpose::Pin)
                        }
                        (_, true) => {
                            if hit.state.is_some() {
                                self.categories.picked.set(hit.state);
                            }
                        }
                        (None, false) => {
                            self.unpin();
                            if hit.state.is_some() {
                                self.categories.picked.set(hit.state);
                            }
                        }
                    }
                }
                if latest {
                    let (x, y) = self.pacing.with_value(|p| p.pointer);
                    self.hover.set(Some((hit, x, y)));
                }
            }
            other => self.show_error(&failure(other)),
        }
        if let Some((x, y)) = next {
            self.hit_test(x, y, false);
        }
    }

    pub fn clear_hover(&self) {
        self.pacing.update_value(|p| p.hover_next = None);
        self.hover.set(None);
        self.phase_hover.set(None);
        self.oom_hover.set(None);
    }

    pub fn unpin(&self) {
        self.cancel_pending_elements();
        self.pinned.set(None);
        self.pinned_oom.set(None);
    }

    /// Pins the `nth` out-of-memory of the device: its request, stack and what was alive.
    pub fn pin_oom(&self, nth: usize) {
        let request = TimelineRequest::Oom {
            device: self.device,
            nth: nth as u32,
        };
        self.ask_latest(
            |p| &mut p.element,
            request,
            |tl, id, result, _| {
                if tl.pacing.try_update_value(|p| p.element.answered(id)) != Some(true) {
                    return;
                }
                match result {
                    Ok(TimelineAnswer::Oom(Some(detail))) => {
                        tl.pinned.set(None);
                        tl.pinned_oom.set(Some(*detail));
                    }
                    Ok(TimelineAnswer::Oom(None)) => {}
                    other => tl.show_error(&failure(other)),
                }
            },
        );
    }

    /// Pins an allocation of the allocations timeline and centres the view on it.
    pub fn pin_allocation(&self, index: u32) {
        self.request_element(TimelineKind::Allocations, index, ElementPurpose::Match);
    }

    /// Answers still to come for pins or matches must not pin anything any more.
    fn cancel_pending_elements(&self) {
        self.pacing.update_value(|p| {
            p.pin.cancel();
            p.element.cancel();
        });
    }

    fn request_element(&self, kind: TimelineKind, index: u32, purpose: ElementPurpose) {
        let request = TimelineRequest::Element {
            device: self.device,
            kind,
            index,
        };
        self.request_element_with(request, purpose);
    }

    /// Asks for an element (or a search match) to pin; only the latest one asked for counts.
    fn request_element_with(&self, request: TimelineRequest, purpose: ElementPurpose) {
        self.ask_latest(
            |p| &mut p.element,
            request,
            move |tl, id, result, _| tl.on_element(id, purpose, result),
        );
    }

    fn on_element(
        &self,
        id: RequestId,
        purpose: ElementPurpose,
        result: Result<TimelineAnswer, ViewError>,
    ) {
        if self.pacing.try_update_value(|p| p.element.answered(id)) != Some(true) {
            return;
        }
        match result {
            Ok(TimelineAnswer::Element(Some(detail))) => {
                if purpose == ElementPurpose::Match {
                    self.centre_on(&detail);
                }
                self.pinned_oom.set(None);
                self.pinned.set(Some(detail));
            }
            Ok(TimelineAnswer::Element(None)) => {}
            other => self.show_error(&failure(other)),
        }
    }

    /// Searches and goes to the first match when the answer comes.
    pub fn run_search(&self, query: String) {
        self.search_with(query, false);
    }

    /// Searches, highlighting and counting the matches without moving the view.
    fn search_quietly(&self, query: String) {
        self.search_with(query, true);
    }

    fn search_with(&self, query: String, quiet: bool) {
        self.pacing.update_value(|p| p.quiet_search = quiet);
        self.match_nth.set(0);
        self.categories.search.set(query.clone());
        let request = TimelineRequest::Search {
            device: self.device,
            kind: self.kind.get_untracked(),
            query,
        };
        self.ask_latest(
            |p| &mut p.search,
            request,
            |tl, id, result, _| tl.on_search(id, result),
        );
    }

    /// Searches for what is being typed: the matches are highlighted and counted, and the
    /// view stays where it is until the user asks for a match (Enter). Nothing is asked when
    /// the query is the one already searched.
    pub fn type_search(&self, query: String) {
        let same = self
            .search
            .with_untracked(|s| s.as_ref().is_some_and(|s| s.query == query));
        if same {
            return;
        }
        self.search_quietly(query);
    }

    fn on_search(&self, id: RequestId, result: Result<TimelineAnswer, ViewError>) {
        if self.pacing.try_update_value(|p| p.search.answered(id)) != Some(true) {
            return;
        }
        let found = match result {
            Ok(TimelineAnswer::Search(found)) => found,
            other => return self.show_error(&failure(other)),
        };
        let any = found.count > 0;
        self.search.set(Some(found));
        let quiet = self
            .pacing
            .try_update_value(|p| std::mem::take(&mut p.quiet_search))
            .unwrap_or(false);
        if any && !quiet {
            self.go_to_match(0);
        }
    }

    pub fn clear_search(&self) {
        self.categories.search.set(String::new());
        self.pacing.update_value(|p| p.search.cancel());
        self.cancel_pending_elements();
        self.search.set(None);
        // The worker forgets its matches (no longer highlighted); nobody needs the answer.
        self.actions.tell(
            self.file,
            Request::Timeline(TimelineRequest::Search {
                device: self.device,
                kind: self.kind.get_untracked(),
                query: String::new(),
            }),
        );
    }

    /// Shows the `nth` search match (wrapping around), pinned and centred.
    pub fn go_to_match(&self, nth: i64) {
        let Some(count) = self.search.with_untracked(|s| s.as_ref().map(|s| s.count)) else {
            return;
        };
        if count == 0 {
            return;
        }
        let nth = nth.rem_euclid(count as i64) as u32;
        self.match_nth.set(nth);
        let request = TimelineRequest::Match {
            device: self.device,
            kind: self.kind.get_untracked(),
            nth,
        };
        self.request_element_with(request, ElementPurpose::Match);
    }

    fn request_minimap(&self) {
        let (w, _, dpr) = self.size.get_untracked();
        let request = TimelineRequest::Minimap {
            device: self.device,
            kind: self.kind.get_untracked(),
            mode: self.mode.get_untracked(),
            width: (w * dpr).round().max(1.0) as u32,
        };
        self.ask_latest(
            |p| &mut p.minimap,
            request,
            |tl, id, result, _| {
                if tl.pacing.try_update_value(|p| p.minimap.answered(id)) != Some(true) {
                    return;
                }
                match result {
                    Ok(TimelineAnswer::Minimap(minimap)) => tl.minimap.set(Some(minimap)),
                    other => tl.show_error(&failure(other)),
                }
            },
        );
    }

    /// Records where the pointer is (CSS pixels), before its hit answer arrives.
    pub fn pointer_at(&self, x: f64, y: f64) {
        self.pacing.update_value(|p| p.pointer = (x, y));
    }

    /// Forgets everything asked before the layout changes: answers about the previous
    /// layout must not reach the new one.
    fn forget_view(&self) {
        self.info.set(None);
        self.unpin();
        self.pacing.update_value(|p| {
            p.search.cancel();
            p.minimap.cancel();
        });
        self.search.set(None);
        self.minimap.set(None);
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

/// The error of an answer that is not the one a handler expects.
fn failure(result: Result<TimelineAnswer, ViewError>) -> ViewError {
    match result {
        Err(error) => error,
        Ok(answer) => ViewError::Malformed {
            detail: format!("unexpected {} answer", answer.name()),
        },
    }
}

fn unexpected(answer: &Answer) -> ViewError {
    ViewError::Malformed {
        detail: format!(
            "a timeline request was answered with a {} answer",
            answer.feature()
        ),
    }
}

/// The plot share the user chose last time, if any.
pub fn stored_plot_share() -> f64 {
    use gloo_storage::Storage;
    gloo_storage::LocalStorage::get::<f64>(PLOT_SHARE_KEY)
        .ok()
        .filter(|s| (0.1..=0.95).contains(s))
        .unwrap_or(DEFAULT_PLOT_SHARE)
}

/// Remembers the plot share the user chose.
pub fn store_plot_share(share: f64) {
    use gloo_storage::Storage;
    let _ = gloo_storage::LocalStorage::set(PLOT_SHARE_KEY, share);
}

/// The timeline section of a device.
#[component]
pub fn TimelinePanel(
    file: FileId,
    device: u32,
    actions: Actions,
    categories: CategoryView,
    /// Follows the system's theme.
    dark: RwSignal<bool>,
    /// Set once the first frame (or why there is none) is on screen.
    painted: RwSignal<bool>,
) -> impl IntoView {
    let tl = Timeline::new(file, device, actions, categories, dark, painted);
    tl.expect_size();
    // Answers still to come for this view reach nobody once it is gone.
    let scope = tl.scope;
    on_cleanup(move || actions.forget_scope(file, scope));
    if let Some(link) = categories.link.restoring(file, Some(device)) {
        tl.restore_from(link);
    }
    tl.adopt_first_view();

    // Lay out again when the kind changes (at the detail a link asks for, the first time);
    // frames follow every change of the view.
    Effect::new(move |_| {
        let kind = tl.kind.get();
        // The first layout may have come with the file.
        if tl
            .info
            .with_untracked(|i| i.as_ref().is_some_and(|i| i.kind == kind))
        {
            return;
        }
        let detail = tl
            .restore
            .with_value(|r| r.as_ref().and_then(|l| l.timeline.detail));
        tl.forget_view();
        tl.lay_out(detail);
    });
    // The timeline's part of the page's address.
    Effect::new(move |_| {
        if let Some((part, pin)) = tl.link_part() {
            categories.link.set(|l| {
                l.timeline = part;
                l.pin = pin;
            });
        }
    });
    // Another view asked to see an allocation: pin it on the allocations timeline, centred,
    // and bring the timeline into view (not on mounting: the request was for an earlier view).
    Effect::new(move |mounted: Option<()>| {
        let shown = categories.shown.get();
        let Some((for_device, element)) = shown.filter(|_| mounted.is_some()) else {
            return;
        };
        if for_device != device {
            return;
        }
        if tl.kind.get_untracked() != TimelineKind::Allocations {
            // Laying the allocations out unpins; pin once that request has gone out.
            tl.kind.set(TimelineKind::Allocations);
            request_animation_frame(move || {
                if !tl.is_gone() {
                    tl.pin_allocation(element);
                }
            });
        } else {
            tl.pin_allocation(element);
        }
        if let Some(root) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id("timeline"))
        {
            root.scroll_into_view();
        }
    });
    // The pinned allocation is the one selected in every view; an allocation selected in
    // another view (a table row) is pinned here, without moving the page.
    Effect::new(move |_| {
        let pinned = tl.pinned.with(|p| {
            p.as_ref()
                .map(|d| (d.kind == TimelineKind::Allocations).then_some(d.index))
        });
        match pinned {
            Some(Some(element)) => categories.select(Some((device, element))),
            Some(None) => {}
            None => {
                if categories
                    .selected
                    .get_untracked()
                    .is_some_and(|(d, _)| d == device)
                {
                    categories.select(None);
                }
            }
        }
    });
    Effect::new(move |mounted: Option<()>| {
        let selected = categories.selected.get();
        if mounted.is_none() {
            return;
        }
        let pinned = tl.pinned.with_untracked(|p| {
            p.as_ref()
                .filter(|d| d.kind == TimelineKind::Allocations)
                .map(|d| d.index)
        });
        match selected {
            Some((for_device, element)) if for_device == device && pinned != Some(element) => {
                if tl.kind.get_untracked() != TimelineKind::Allocations {
                    tl.kind.set(TimelineKind::Allocations);
                    request_animation_frame(move || {
                        if !tl.is_gone() {
                            tl.pin_allocation(element);
                        }
                    });
                } else {
                    tl.pin_allocation(element);
                }
            }
            None if pinned.is_some() => tl.unpin(),
            _ => {}
        }
    });
    // What the timeline shows is the table's "window" scope.
    Effect::new(move |_| {
        let range = tl.range.get();
        let mode = tl.mode.get();
        if tl.info.with(Option::is_some) {
            categories.window.set(Some((mode, range.x0, range.x1)));
        }
    });
    // A category picked in another view (a chart, a legend) shows on the timeline: colour by
    // its dimension.
    Effect::new(move |mounted: Option<()>| {
        let Some(category) = categories.highlight.get().filter(|_| mounted.is_some()) else {
            return;
        };
        if tl.colour_by.get_untracked().dimension() != Some(category.dimension) {
            tl.colour_by.set(match category.dimension {
                Dimension::Role => ColourBy::Role,
                Dimension::Component => ColourBy::Component,
            });
        }
    });
    Effect::new(move |previous: Option<AxisMode>| {
        let mode = tl.mode.get();
        if previous.is_some_and(|p| p != mode) {
            tl.reset();
            tl.request_minimap();
        }
        mode
    });
    Effect::new(move |_| {
        tl.range.track();
        tl.y_range.track();
        tl.size.track();
        tl.dark.track();
        tl.show_line.track();
        tl.pinned.with(|p| p.as_ref().map(|d| d.index));
        tl.search.track();
        tl.colour_by.track();
        categories.generation.track();
        categories.highlight.track();
        tl.request_frame();
    });
    Effect::new(move |previous: Option<f64>| {
        let width = tl.size.get().0;
        if previous.is_some_and(|p| (p - width).abs() > 0.5) {
            tl.request_minimap();
        }
        width
    });

    let info = tl.info;
    let frame = tl.frame;
    let range = tl.range;
    let attr = move |f: fn(&TimelineInfo) -> String| {
        move || info.with(|i| i.as_ref().map(f).unwrap_or_default())
    };
    let frame_attr = move |f: fn(&FrameInfo) -> String| {
        move || frame.with(|i| i.as_ref().map(f).unwrap_or_default())
    };

    view! {
        <section
            class="panel timeline"
            id="timeline"
            data-device=device.to_string()
            data-kind=move || match tl.kind.get() { TimelineKind::Allocations => "allocations", TimelineKind::Segments => "segments" }
            data-mode=move || match tl.mode.get() { AxisMode::Events => "events", AxisMode::Time => "time" }
            data-ready=move || info.with(|i| i.is_some()).to_string()
            data-view-start=move || range.get().x0.to_string()
            data-view-end=move || range.get().x1.to_string()
            data-states=attr(|i| i.states.to_string())
            data-elements=attr(|i| i.elements.to_string())
            data-detail=attr(|i| i.detail.to_string())
            data-default-detail=attr(|i| i.default_detail.to_string())
            data-peak-state=attr(|i| i.peak_state.to_string())
            data-peak-bytes=attr(|i| i.peak_bytes.to_string())
            data-layout-ms=attr(|i| i.layout_ms.to_string())
            data-full-start=move || tl.full().map(|w| w.x0.to_string()).unwrap_or_default()
            data-full-end=move || tl.full().map(|w| w.x1.to_string()).unwrap_or_default()
            data-frames-painted=move || tl.frames_painted.get().to_string()
            data-first-frame=move || if tl.first_with_file.get() { "with-file" } else { "asked" }
            data-pinned=move || tl.pinned.with(|p| p.as_ref().map(|d| d.index.to_string()).unwrap_or_default())
            data-pinned-oom=move || tl.pinned_oom.with(|p| p.as_ref().map(|o| o.nth.to_string()).unwrap_or_default())
            data-search-count=move || tl.search.with(|s| s.as_ref().map(|s| s.count.to_string()).unwrap_or_default())
            data-y-zoomed=move || tl.y_range.with(Option::is_some).to_string()
            data-colour-by=move || match tl.colour_by.get() { ColourBy::Allocation => "allocation", ColourBy::Role => "role", ColourBy::Component => "component" }
        >
            <toolbar::TimelineToolbar tl=tl />
            <legend::Legend tl=tl />
            {move || tl.error.get().map(|message| view! { <p class="timeline-error" role="alert">{message}</p> })}
            <div class="timeline-body">
            <div class="timeline-main">
            // The frame on screen (exact values for tests and benchmarks).
            <div
                class="timeline-frame"
                id="timeline-frame"
                data-y-min=frame_attr(|f| f.y_min.to_string())
                data-y-max=frame_attr(|f| f.y_max.to_string())
                data-width=frame_attr(|f| f.view.width.to_string())
                data-height=frame_attr(|f| f.view.height.to_string())
                data-first-state=frame_attr(|f| f.first_state.map(|s| s.to_string()).unwrap_or_default())
                data-last-state=frame_attr(|f| f.last_state.map(|s| s.to_string()).unwrap_or_default())
                data-peak-bytes=frame_attr(|f| f.peak_bytes.to_string())
                data-drawn=frame_attr(|f| f.drawn_individually.to_string())
                data-paint-ms=frame_attr(|f| f.paint_ms.to_string())
            >
                <plot::Plot tl=tl />
            </div>
            <minimap::Minimap tl=tl />
            </div>
            // Beside the plot on wide screens, below it on narrow ones.
            <aside class="timeline-pane" id="timeline-pane" aria-label="Pinned" style:--plot-height=move || format!("{}px", tl.size.get().1)>
                <details::PinnedDetails tl=tl />
            </aside>
            </div>
            <help::Help tl=tl />
        </section>
    }
}
