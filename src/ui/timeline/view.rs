//! The view state of one device's timeline in signals ([`Timeline`]), shared by the
//! components of the timeline's folder, and the timeline's [`Client`] put to work: each
//! event (a change of the view, an input, an answer) is fed to the client, and the commands it
//! returns are carried out here, on the signals and with the file's worker. The navigation
//! the toolbar, the plot and the minimap ask for (zoom, pan, reset…) moves the ranges and asks
//! for their frame at once.
//!
//! Not the place for deciding what to ask and when (`client.rs`), for the arithmetic of
//! gestures and ranges (`gestures.rs`, `range.rs`) or for the component and its effects
//! (`panel.rs`).

use leptos::prelude::*;
use wasm_bindgen::JsValue;

use super::client::{Client, Purpose, TimelineCommand};
use super::gestures;
use super::range::{self, XRange, YRange};
use super::{canvas, labels};
use crate::analysis::axis::AxisMode;
use crate::format;
use crate::model::State;
use crate::protocol::{RequestId, ViewError};
use crate::timeline::colouring::ColourBy;
use crate::timeline::inspect::{ElementDetail, OomDetail};
use crate::timeline::service::{
    FrameInfo, FrameRequest, HitInfo, MinimapInfo, SearchInfo, TimelineAnswer, TimelineInfo,
    TimelineRequest,
};
use crate::timeline::{TimelineKind, Viewport};
use crate::ui::actions::{Actions, ViewAsker};
use crate::ui::file_context::FileContext;
use crate::ui::link::{TimelineLink, ViewLink};
use crate::ui::plot_share::stored_plot_share;
use crate::ui::plot_size::{self, Window};
use crate::ui::state::FileId;

/// Set when a timeline's first frame is on screen (read by benchmarks).
pub const MARK_TIMELINE_PAINTED: &str = "memsight:timeline-painted";

/// The plot's size until it is measured or expected (CSS pixels, pixel ratio); no frame is
/// asked for at it.
const UNKNOWN_SIZE: (f64, f64, f64) = (800.0, 360.0, 1.0);

/// The view state of one device's timeline, shared by its components.
#[derive(Clone, Copy)]
pub struct Timeline {
    pub file: FileId,
    pub device: u32,
    /// The page's actions: the plot's expected width, the first view painted with the file.
    pub(super) actions: Actions,
    /// This view's requests, forgotten when it goes away.
    pub(super) asker: ViewAsker,
    pub kind: RwSignal<TimelineKind>,
    pub mode: RwSignal<AxisMode>,
    /// Allocations in their own colours, or their role's or component's.
    pub colour_by: RwSignal<ColourBy>,
    /// What the file's views share.
    pub cx: FileContext,
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
    /// The scope under the pointer (index in the layout's scopes), with the pointer's position.
    pub scope_hover: RwSignal<Option<(usize, f64, f64)>>,
    /// The keyboard and mouse reference is open.
    pub show_help: RwSignal<bool>,
    /// The overlay as last drawn: where its scopes are, for hovering them.
    pub(super) overlay: StoredValue<Option<labels::Layout>, LocalStorage>,
    pub(super) canvas: StoredValue<Option<web_sys::HtmlCanvasElement>, LocalStorage>,
    /// A frame's pixels that arrived before the canvas was there.
    waiting_pixels: StoredValue<Option<JsValue>, LocalStorage>,
    /// What is asked of the worker and when, and which answers count.
    client: StoredValue<Client, LocalStorage>,
}

impl Timeline {
    /// Whether the view has gone away (another file or device shown, the file closed): work
    /// it asked for in a later animation frame or task must then not touch its signals.
    pub fn is_gone(&self) -> bool {
        self.frame.is_disposed()
    }

    /// Pins allocation `element`, showing the allocations tab first if another is shown:
    /// laying the allocations out unpins, so the pin waits until that request has gone out.
    pub(super) fn pin_on_allocations(self, element: u32) {
        if self.kind.get_untracked() == TimelineKind::Allocations {
            return self.pin_allocation(element);
        }
        self.kind.set(TimelineKind::Allocations);
        request_animation_frame(move || {
            if !self.is_gone() {
                self.pin_allocation(element);
            }
        });
    }

    pub(super) fn new(
        file: FileId,
        device: u32,
        actions: Actions,
        cx: FileContext,
        dark: RwSignal<bool>,
        painted: RwSignal<bool>,
    ) -> Self {
        let kind = TimelineKind::Allocations;
        Timeline {
            file,
            device,
            actions,
            asker: ViewAsker::new(actions, file),
            kind: RwSignal::new(kind),
            mode: RwSignal::new(AxisMode::Events),
            colour_by: RwSignal::new(ColourBy::FIRST_SHOWN),
            cx,
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
            size: RwSignal::new(UNKNOWN_SIZE),
            plot_share: RwSignal::new(stored_plot_share()),
            dark,
            frames_painted: RwSignal::new(0),
            first_with_file: RwSignal::new(false),
            painted,
            scope_hover: RwSignal::new(None),
            show_help: RwSignal::new(false),
            overlay: StoredValue::new_local(None),
            canvas: StoredValue::new_local(None),
            waiting_pixels: StoredValue::new_local(None),
            client: StoredValue::new_local(Client::new(device, kind, UNKNOWN_SIZE)),
        }
    }

    /// Takes the timeline's part of a link being restored: its tab, axis and colouring now,
    /// its detail with the first layout, and its ranges, pin and search once that has arrived.
    pub(super) fn restore_from(&self, link: ViewLink) {
        self.kind.set(link.timeline.kind);
        self.mode.set(link.timeline.axis);
        self.colour_by.set(link.timeline.colour);
        self.client.update_value(|c| c.restore(link));
    }

    /// The timeline's part of the view's link (tracked); `None` until its layout has arrived
    /// (and while a link's part waits for it), so a link's ranges are not written over.
    pub(super) fn link_part(&self) -> Option<(TimelineLink, Option<u32>)> {
        // Not `get`: the layout's description holds every scope's name, and this runs on
        // each move of the view.
        let (detail, default_detail) = self
            .info
            .with(|i| i.as_ref().map(|i| (i.detail, i.default_detail)))?;
        if self.client.with_value(Client::restoring) {
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
            search: self.cx.search.get(),
        };
        Some((part, pin))
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

    // ---- Navigation: the ranges moved, their frame asked for at once.

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
        let (min, max) = self.client.with_value(Client::painted_y);
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
    pub fn zoom_to_box(&self, from: (f64, f64), to: (f64, f64)) {
        let y = self
            .y_range
            .get_untracked()
            .unwrap_or_else(|| self.painted_y());
        let (x, y) = gestures::box_view(
            from,
            to,
            self.size.get_untracked(),
            self.range.get_untracked(),
            y,
            self.min_span(),
        );
        self.move_range(x);
        self.y_range.set(Some(y));
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
    pub fn x_of(&self, state: State, time_us: Option<i64>) -> Option<f64> {
        match self.mode.get_untracked() {
            AxisMode::Events => Some(f64::from(state.get())),
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
                f64::from(detail.start_state.get()),
                detail.end_state.map_or(full.x1, |e| f64::from(e.get())),
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

    // ---- The client's events and commands.

    /// Feeds the client an event and carries out the commands it returns.
    fn feed(&self, event: impl FnOnce(&mut Client) -> Vec<TimelineCommand>) {
        self.feed_with_pixels(event, None);
    }

    /// [`Self::feed`], with the pixels of the frame the event brought.
    fn feed_with_pixels(
        &self,
        event: impl FnOnce(&mut Client) -> Vec<TimelineCommand>,
        mut pixels: Option<JsValue>,
    ) {
        // Carried out once the client is put back: a command may feed it another event.
        let commands = self.client.try_update_value(event).unwrap_or_default();
        for command in commands {
            self.carry_out(command, &mut pixels);
        }
    }

    fn carry_out(&self, command: TimelineCommand, pixels: &mut Option<JsValue>) {
        match command {
            TimelineCommand::Ask(purpose, request) => self.ask_for(purpose, request),
            TimelineCommand::Tell(request) => self.asker.tell(request),
            TimelineCommand::RequestFrame => self.request_frame(),
            TimelineCommand::RequestMinimap => self.request_minimap(),
            TimelineCommand::Resize(size) => self.size.set(size),
            TimelineCommand::ShowLayout(info) => {
                if !info.has_time && self.mode.get_untracked() == AxisMode::Time {
                    self.mode.set(AxisMode::Events);
                }
                self.error.set(None);
                self.info.set(Some(info));
            }
            TimelineCommand::ShowWhole => self.show_whole(),
            TimelineCommand::ShowRanges { x, y } => {
                match x {
                    Some(x) => self.move_range(x),
                    None => {
                        if let Some(full) = self.full() {
                            self.range.set(full);
                        }
                    }
                }
                self.y_range.set(y);
            }
            TimelineCommand::ForgetLayout => {
                self.info.set(None);
                self.search.set(None);
                self.minimap.set(None);
            }
            TimelineCommand::ShowFrame { frame, first } => {
                self.show_frame(frame, pixels.take(), first)
            }
            TimelineCommand::ShowHit { hit, at: (x, y) } => self.hover.set(Some((*hit, x, y))),
            TimelineCommand::HideHit => self.hover.set(None),
            TimelineCommand::Pin { detail, centre } => {
                if centre {
                    self.centre_on(&detail);
                }
                self.pinned_oom.set(None);
                self.pinned.set(Some(*detail));
            }
            TimelineCommand::PinOom(detail) => {
                self.pinned.set(None);
                self.pinned_oom.set(Some(*detail));
            }
            TimelineCommand::Unpin => {
                self.pinned.set(None);
                self.pinned_oom.set(None);
            }
            TimelineCommand::PickMoment(state) => self.cx.picked.set(Some(state)),
            TimelineCommand::SearchFor(query) => {
                self.match_nth.set(0);
                self.cx.search.set(query);
            }
            TimelineCommand::ShowSearch(found) => self.search.set(Some(found)),
            TimelineCommand::ClearSearch => {
                self.cx.search.set(String::new());
                self.search.set(None);
            }
            TimelineCommand::ShowMatch(nth) => self.match_nth.set(nth),
            TimelineCommand::ShowMinimap(minimap) => self.minimap.set(Some(minimap)),
            TimelineCommand::ShowError(error) => self.show_error(&error),
        }
    }

    /// Asks the worker for `purpose`; the client learns the request's id, and gets its
    /// answer.
    fn ask_for(&self, purpose: Purpose, request: TimelineRequest) {
        let sent = self.ask(request, move |tl, id, result, pixels| {
            tl.feed_with_pixels(|c| c.answered(purpose, id, result), pixels);
        });
        if let Some(id) = sent {
            self.client.update_value(|c| c.sent(purpose, id));
        }
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
        self.asker.ask(request, move |answered| {
            on_answer(tl, answered.id, answered.result, answered.attachment);
        })
    }

    /// The timeline shows `kind`: its layout is asked for, unless it is on screen.
    pub(super) fn show_kind(&self, kind: TimelineKind) {
        self.feed(|c| c.show_kind(kind));
    }

    /// Lays the current kind out again (`detail` = `None` keeps the current detail) and asks
    /// for a frame right behind it.
    pub fn lay_out(&self, detail: Option<u32>) {
        self.feed(|c| c.lay_out(detail));
    }

    /// Asks for a frame of the current view, or marks one as wanted if a frame is in flight.
    /// Before the layout's description arrives, asks for the whole trace, so the first frame
    /// does not wait for an extra round trip.
    pub fn request_frame(&self) {
        let wanted = self.frame_request();
        self.feed(|c| c.frame_wanted(wanted));
    }

    /// Asks for a frame of the current view now, from an input handler, so the worker starts
    /// painting before the page's effects run.
    pub fn request_frame_now(&self) {
        let wanted = self.frame_request();
        self.feed(|c| c.frame_wanted_now(wanted));
    }

    /// The frame request for the current view (the client asks for none before the plot's
    /// size is known).
    fn frame_request(&self) -> FrameRequest {
        let shown = self.info.with_untracked(|i| i.as_ref().map(|i| i.kind));
        let kind = shown.unwrap_or_else(|| self.kind.get_untracked());
        let (width, height, line_width) = plot_size::device_pixels(self.size.get_untracked());
        let range = self.range.get_untracked();
        FrameRequest {
            device: self.device,
            kind,
            view: Viewport {
                mode: self.mode.get_untracked(),
                x0: range.x0,
                x1: range.x1,
                width,
                height,
            },
            whole: shown.is_none(),
            y_range: self.y_range.get_untracked().map(|y| y.bytes()),
            dark: self.dark.get_untracked(),
            line_width,
            pinned: self.pinned.with_untracked(|p| p.as_ref().map(|d| d.index)),
            show_matches: self
                .search
                .with_untracked(|s| s.as_ref().is_some_and(|s| s.count > 0)),
            show_line: self.show_line.get_untracked() && kind != TimelineKind::Segments,
            colour_by: self.colour_by.get_untracked(),
            highlight: self
                .cx
                .highlight
                .get_untracked()
                .filter(|c| Some(c.dimension) == self.colour_by.get_untracked().dimension())
                .map(|c| c.index),
        }
    }

    pub(super) fn request_minimap(&self) {
        let (w, _, dpr) = self.size.get_untracked();
        let width = (w * dpr).round().max(1.0) as u32;
        let mode = self.mode.get_untracked();
        self.feed(|c| c.minimap_wanted(mode, width));
    }

    /// Takes the plot's size from the width a plot had in a window of this size, if the page
    /// has laid one out: the first frame is asked for with the layout, without measuring the
    /// new plot first. A wrong guess costs a frame: the measure asks again at the real size.
    pub(super) fn expect_size(&self) {
        let Some(window) = Window::now() else { return };
        let Some(width) = self.actions.expected_plot_width(window) else {
            return;
        };
        let size = window.plot_size(width, self.plot_share.get_untracked());
        self.feed(|c| c.expect_size(size));
    }

    /// Shows the first view the worker painted with the file, if it is the one this timeline
    /// would ask for first (its size as expected, no link to restore): its layout and its
    /// frame, whose pixels go on the canvas as soon as there is one. Otherwise the timeline
    /// asks as usual.
    pub(super) fn adopt_first_view(&self) {
        let Some((view, pixels)) = self.actions.take_first_view(self.file, self.device) else {
            return;
        };
        let wanted = self.frame_request();
        let Some(commands) = self
            .client
            .try_update_value(|c| c.first_view(*view, &wanted))
            .flatten()
        else {
            return;
        };
        self.first_with_file.set(true);
        let mut pixels = Some(pixels);
        for command in commands {
            self.carry_out(command, &mut pixels);
        }
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
        self.client.with_value(Client::size_expected)
    }

    /// The plot laid out `width` CSS pixels wide in `window`; the first measure lets frames be
    /// asked for.
    pub fn measured(&self, window: Window, width: f64) {
        self.actions.remember_plot_width(window, width);
        let size = window.plot_size(width, self.plot_share.get_untracked());
        self.feed(|c| c.measured(size));
    }

    /// Shows a painted frame: its pixels on the canvas (or waiting for it) and its figures;
    /// the first of a layout puts the timeline on screen.
    fn show_frame(&self, frame: FrameInfo, pixels: Option<JsValue>, first: bool) {
        match (pixels, self.canvas.get_value()) {
            (Some(pixels), Some(canvas)) => canvas::put_pixels(&canvas, &frame, &pixels),
            (Some(pixels), None) => self.waiting_pixels.set_value(Some(pixels)),
            (None, _) => {}
        }
        self.frames_painted.update(|n| *n += 1);
        self.frame.set(Some(frame));
        if first {
            self.actions.mark_after_render(MARK_TIMELINE_PAINTED);
            self.first_frame_shown();
        }
    }

    /// Records where the pointer is (CSS pixels), before its hit answer arrives.
    pub fn pointer_at(&self, x: f64, y: f64) {
        self.client.update_value(|c| c.pointer_at(x, y));
    }

    /// Shows what is under `(x, y)` (CSS pixels in the plot) in the tooltip.
    pub fn hover_at(&self, x: f64, y: f64) {
        self.feed(|c| c.hover(x, y));
    }

    /// A click at `(x, y)`: pins the allocation there, or, where there is none, picks its
    /// moment for the other views.
    pub fn click_at(&self, x: f64, y: f64) {
        self.feed(|c| c.click(x, y));
    }

    /// Picks the moment under `(x, y)` for the other views (Shift+click), leaving what is
    /// pinned as it is.
    pub fn pick_moment_at(&self, x: f64, y: f64) {
        self.feed(|c| c.pick_moment_at(x, y));
    }

    /// The pointer is over a scope or an out-of-memory mark: no allocation's tooltip shows.
    pub fn hover_elsewhere(&self) {
        self.feed(Client::hover_elsewhere);
    }

    pub fn clear_hover(&self) {
        self.feed(Client::pointer_left);
        self.scope_hover.set(None);
        self.oom_hover.set(None);
    }

    pub fn unpin(&self) {
        self.feed(Client::unpin);
    }

    /// Pins the `nth` out-of-memory of the device: its request, stack and what was alive.
    pub fn pin_oom(&self, nth: usize) {
        self.feed(|c| c.pin_oom(nth as u32));
    }

    /// Pins an allocation of the allocations timeline and centres the view on it.
    pub fn pin_allocation(&self, index: u32) {
        self.feed(|c| c.pin_allocation(index));
    }

    /// Searches and goes to the first match when the answer comes.
    pub fn run_search(&self, query: String) {
        self.feed(|c| c.run_search(query));
    }

    /// Searches for what is being typed: the matches are highlighted and counted, and the
    /// view stays where it is until the user asks for a match (Enter). Nothing is asked when
    /// the query is the one already searched.
    pub fn type_search(&self, query: String) {
        self.feed(|c| c.type_search(query));
    }

    pub fn clear_search(&self) {
        self.feed(Client::clear_search);
    }

    /// Shows the `nth` search match (wrapping around), pinned and centred.
    pub fn go_to_match(&self, nth: i64) {
        self.feed(|c| c.go_to_match(nth));
    }
}
