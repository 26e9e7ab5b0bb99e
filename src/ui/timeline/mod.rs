//! The memory timeline of one device: tabs for allocations and segments, a toolbar (axis,
//! detail, search, jump to peak), the plot with its overlay and tooltip, the minimap and the
//! pinned allocation's details.
//!
//! The worker lays the timeline out and paints it; this module only keeps the view state in
//! signals ([`Timeline`]), asks for frames when it changes (one in flight at a time, the
//! latest view wins) and shows what comes back.
//! - [`window`]: navigation arithmetic (pure, natively tested);
//! - `plot`: the canvas, its pointer, wheel and keyboard handling;
//! - `overlay`: axes, peak, OOM and phase marks drawn over the pixels;
//! - `minimap`, `toolbar`, `details`, `tooltip`: one component each.

pub mod window;

mod details;
mod minimap;
mod overlay;
mod plot;
mod toolbar;
mod tooltip;

use std::rc::Rc;

use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};

use super::actions::Actions;
use super::perf;
use super::state::FileId;
use crate::protocol::{
    FrameInfo, FrameRequest, HitInfo, HitRequest, MinimapInfo, Request, Response, SearchInfo,
    TimelineInfo,
};
use crate::timeline::inspect::ElementDetail;
use crate::timeline::{AxisMode, Kind, Viewport};
use window::Window;

/// Set when a timeline's first frame is on screen (read by benchmarks).
pub const MARK_TIMELINE_PAINTED: &str = "memsight:timeline-painted";

/// Plot height in CSS pixels.
pub const PLOT_HEIGHT: f64 = 360.0;

/// A frame request and whether another view is waiting behind it.
#[derive(Default)]
struct Pacing {
    in_flight: bool,
    dirty: bool,
    seq: u32,
    /// The view of the frame on screen, for hit-testing what is painted.
    painted: Option<Viewport>,
    /// The painted frame's top edge in bytes.
    painted_y_max: u64,
    hover_in_flight: bool,
    hover_next: Option<(f64, f64)>,
    hover_seq: u32,
    /// The click whose hit should pin an element.
    pin_seq: Option<u32>,
    /// Why each `Element` request in flight was sent, oldest first (the worker answers in
    /// order).
    element_requests: std::collections::VecDeque<ElementPurpose>,
    /// The query of the search in progress; answers to other queries are stale.
    search_query: Option<String>,
    /// The first frame of this layout has not been painted yet.
    awaiting_first_frame: bool,
    /// Where the pointer is in the plot, in CSS pixels.
    pointer: (f64, f64),
}

/// What an `Element` answer is for.
#[derive(Clone, Copy, Debug, PartialEq)]
enum ElementPurpose {
    /// A click: pin it.
    Pin,
    /// Search navigation: pin it and centre the view on it.
    Match,
    /// Asked for by a pin or search the user has since cleared: drop it.
    Cancelled,
}

/// The view state of one device's timeline, shared by its components.
#[derive(Clone, Copy)]
pub struct Timeline {
    pub file: FileId,
    pub device: u32,
    actions: Actions,
    pub kind: RwSignal<Kind>,
    pub mode: RwSignal<AxisMode>,
    pub info: RwSignal<Option<TimelineInfo>>,
    pub window: RwSignal<Window>,
    pub frame: RwSignal<Option<FrameInfo>>,
    /// The hovered pixel's answer, with the pointer's position in CSS pixels in the plot.
    pub hover: RwSignal<Option<(HitInfo, f64, f64)>>,
    pub pinned: RwSignal<Option<ElementDetail>>,
    pub search: RwSignal<Option<SearchInfo>>,
    pub match_nth: RwSignal<u32>,
    pub show_line: RwSignal<bool>,
    pub show_all_frames: RwSignal<bool>,
    pub minimap: RwSignal<Option<MinimapInfo>>,
    pub error: RwSignal<Option<String>>,
    /// Plot size in CSS pixels, and the device pixel ratio.
    pub size: RwSignal<(f64, f64, f64)>,
    pub dark: RwSignal<bool>,
    /// Frames painted so far (for tests).
    pub frames_painted: RwSignal<u32>,
    canvas: StoredValue<Option<web_sys::HtmlCanvasElement>, LocalStorage>,
    pacing: StoredValue<Pacing, LocalStorage>,
}

impl Timeline {
    fn new(file: FileId, device: u32, actions: Actions) -> Self {
        Timeline {
            file,
            device,
            actions,
            kind: RwSignal::new(Kind::Allocations),
            mode: RwSignal::new(AxisMode::Events),
            info: RwSignal::new(None),
            window: RwSignal::new(Window::new(0.0, 1.0)),
            frame: RwSignal::new(None),
            hover: RwSignal::new(None),
            pinned: RwSignal::new(None),
            search: RwSignal::new(None),
            match_nth: RwSignal::new(0),
            show_line: RwSignal::new(true),
            show_all_frames: RwSignal::new(false),
            minimap: RwSignal::new(None),
            error: RwSignal::new(None),
            size: RwSignal::new((800.0, PLOT_HEIGHT, 1.0)),
            dark: RwSignal::new(prefers_dark()),
            frames_painted: RwSignal::new(0),
            canvas: StoredValue::new_local(None),
            pacing: StoredValue::new_local(Pacing::default()),
        }
    }

    fn send(&self, request: Request) {
        self.actions.send(self.file, &request);
    }

    /// The whole trace in the current axis units.
    pub fn full(&self) -> Option<Window> {
        let mode = self.mode.get();
        self.info.with(|i| {
            i.as_ref().map(|i| {
                let (a, b) = match (mode, i.time_range) {
                    (AxisMode::Time, Some(r)) => r,
                    _ => i.events_range,
                };
                Window::new(a, b)
            })
        })
    }

    /// The narrowest window: a few states wide in event units, a few microseconds in time.
    pub fn min_span(&self) -> f64 {
        window::MIN_SPAN_EVENTS
    }

    /// Moves the view (clamped to the trace).
    pub fn set_window(&self, w: Window) {
        if let Some(full) = self.full() {
            self.window.set(w.clamped(full));
        }
    }

    pub fn reset(&self) {
        if let Some(full) = self.full() {
            self.window.set(full);
        }
    }

    pub fn zoom(&self, fraction: f64, factor: f64) {
        if let Some(full) = self.full() {
            let min = self.min_span();
            self.window
                .update(|w| *w = w.zoom(fraction, factor, full, min));
        }
    }

    pub fn pan(&self, fraction: f64) {
        if let Some(full) = self.full() {
            self.window.update(|w| *w = w.pan(fraction, full));
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
        self.set_window(Window::new(x - span / 2.0, x + span / 2.0));
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
        self.window.update(|w| *w = w.centred_on(a, b, full, min));
    }

    /// Lays the current kind out again (`detail` = `None` keeps the current detail) and asks
    /// for a frame right behind it.
    pub fn lay_out(&self, detail: Option<u32>) {
        self.pacing.update_value(|p| p.awaiting_first_frame = true);
        self.send(Request::Timeline {
            device: self.device,
            kind: self.kind.get_untracked(),
            detail,
        });
        self.request_frame();
    }

    /// Asks for a frame of the current view, or marks one as wanted if a frame is in flight.
    /// Before the layout's description arrives, asks for the whole trace, so the first frame
    /// does not wait for an extra round trip.
    pub fn request_frame(&self) {
        let info = self.info.get_untracked();
        let kind = info.as_ref().map_or(self.kind.get_untracked(), |i| i.kind);
        let (w, h, dpr) = self.size.get_untracked();
        let window = self.window.get_untracked();
        let mut request = None;
        self.pacing.update_value(|p| {
            if p.in_flight {
                p.dirty = true;
                return;
            }
            p.in_flight = true;
            p.dirty = false;
            p.seq = p.seq.wrapping_add(1);
            request = Some(FrameRequest {
                device: self.device,
                kind,
                seq: p.seq,
                view: Viewport {
                    mode: self.mode.get_untracked(),
                    x0: window.x0,
                    x1: window.x1,
                    width: (w * dpr).round().max(1.0) as u32,
                    height: (h * dpr).round().max(1.0) as u32,
                },
                whole: info.is_none(),
                dark: self.dark.get_untracked(),
                line_width: (2.0 * dpr).round().max(1.0) as u32,
                pinned: self.pinned.with_untracked(|p| p.as_ref().map(|d| d.index)),
                show_matches: self
                    .search
                    .with_untracked(|s| s.as_ref().is_some_and(|s| s.count > 0)),
                show_line: self.show_line.get_untracked() && kind == Kind::Allocations,
            });
        });
        if let Some(request) = request {
            self.send(Request::Frame(request));
        }
    }

    /// Asks what is under the pointer (CSS pixels in the plot); `pin` pins it.
    pub fn hit_test(&self, x: f64, y: f64, pin: bool) {
        let (_, _, dpr) = self.size.get_untracked();
        let mut request = None;
        self.pacing.update_value(|p| {
            if p.hover_in_flight && !pin {
                p.hover_next = Some((x, y));
                return;
            }
            let Some(painted) = p.painted else { return };
            p.hover_in_flight = true;
            p.hover_seq = p.hover_seq.wrapping_add(1);
            if pin {
                p.pin_seq = Some(p.hover_seq);
            }
            request = Some(HitRequest {
                device: self.device,
                kind: self.kind.get_untracked(),
                seq: p.hover_seq,
                view: painted,
                y_max: p.painted_y_max,
                x: (x * dpr).floor().max(0.0) as u32,
                y: (y * dpr).floor().max(0.0) as u32,
            });
        });
        if let Some(request) = request {
            self.send(Request::Hit(request));
        }
    }

    pub fn clear_hover(&self) {
        self.pacing.update_value(|p| p.hover_next = None);
        self.hover.set(None);
    }

    pub fn unpin(&self) {
        self.cancel_pending_elements();
        self.pinned.set(None);
    }

    /// Answers still to come for pins or matches must not pin anything any more.
    fn cancel_pending_elements(&self) {
        self.pacing.update_value(|p| {
            p.pin_seq = None;
            for purpose in &mut p.element_requests {
                *purpose = ElementPurpose::Cancelled;
            }
        });
    }

    fn request_element(&self, kind: Kind, index: u32, purpose: ElementPurpose) {
        self.pacing
            .update_value(|p| p.element_requests.push_back(purpose));
        self.send(Request::Element {
            device: self.device,
            kind,
            index,
        });
    }

    pub fn run_search(&self, query: String) {
        self.match_nth.set(0);
        self.pacing
            .update_value(|p| p.search_query = Some(query.clone()));
        self.send(Request::Search {
            device: self.device,
            kind: self.kind.get_untracked(),
            query,
        });
    }

    pub fn clear_search(&self) {
        self.pacing.update_value(|p| p.search_query = None);
        self.cancel_pending_elements();
        self.search.set(None);
        // The worker forgets its matches (no longer highlighted); its answer is dropped.
        self.send(Request::Search {
            device: self.device,
            kind: self.kind.get_untracked(),
            query: String::new(),
        });
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
        self.pacing
            .update_value(|p| p.element_requests.push_back(ElementPurpose::Match));
        self.send(Request::Match {
            device: self.device,
            kind: self.kind.get_untracked(),
            nth,
        });
    }

    fn request_minimap(&self) {
        let (w, _, dpr) = self.size.get_untracked();
        self.send(Request::Minimap {
            device: self.device,
            kind: self.kind.get_untracked(),
            mode: self.mode.get_untracked(),
            width: (w * dpr).round().max(1.0) as u32,
        });
    }

    /// Handles an answer from the worker.
    fn on_answer(&self, response: Response, pixels: Option<JsValue>) {
        match response {
            Response::Timeline(info) => {
                if info.device != self.device || info.kind != self.kind.get_untracked() {
                    return;
                }
                let same_layout = self
                    .info
                    .with_untracked(|i| i.as_ref().is_some_and(|i| i.kind == info.kind));
                if !info.has_time && self.mode.get_untracked() == AxisMode::Time {
                    self.mode.set(AxisMode::Events);
                }
                self.error.set(None);
                self.info.set(Some(info));
                if !same_layout {
                    self.reset();
                    self.request_minimap();
                }
                self.request_frame();
            }
            Response::Frame(frame) => {
                let expected = self.pacing.with_value(|p| p.seq);
                if frame.seq == expected {
                    if let (Some(pixels), Some(canvas)) = (pixels, self.canvas.get_value()) {
                        plot::put_pixels(&canvas, &frame, &pixels);
                    }
                    let first = self.pacing.try_update_value(|p| {
                        p.painted = Some(frame.view);
                        p.painted_y_max = frame.y_max;
                        std::mem::take(&mut p.awaiting_first_frame)
                    });
                    self.frames_painted.update(|n| *n += 1);
                    self.frame.set(Some(frame));
                    if first == Some(true) {
                        perf::mark_after_render(MARK_TIMELINE_PAINTED);
                    }
                }
                let again = self.pacing.try_update_value(|p| {
                    p.in_flight = false;
                    p.dirty
                });
                if again == Some(true) {
                    self.request_frame();
                }
            }
            Response::Hit(hit) => {
                let (latest, pin, next) = self
                    .pacing
                    .try_update_value(|p| {
                        p.hover_in_flight = false;
                        let pin = p.pin_seq == Some(hit.seq);
                        if pin {
                            p.pin_seq = None;
                        }
                        (p.hover_seq == hit.seq, pin, p.hover_next.take())
                    })
                    .unwrap_or((false, false, None));
                if pin {
                    match &hit.element {
                        Some(e) => self.request_element(e.kind, e.index, ElementPurpose::Pin),
                        None => self.unpin(),
                    }
                }
                if latest {
                    let (x, y) = self.pacing.with_value(|p| p.pointer);
                    self.hover.set(Some((hit, x, y)));
                }
                if let Some((x, y)) = next {
                    self.hit_test(x, y, false);
                }
            }
            Response::Element { detail } => {
                let purpose = self
                    .pacing
                    .try_update_value(|p| p.element_requests.pop_front())
                    .flatten()
                    .unwrap_or(ElementPurpose::Cancelled);
                if let (Some(detail), false) = (detail, purpose == ElementPurpose::Cancelled) {
                    if purpose == ElementPurpose::Match {
                        self.centre_on(&detail);
                    }
                    self.pinned.set(Some(detail));
                }
            }
            Response::Search(found) => {
                let current = self
                    .pacing
                    .with_value(|p| p.search_query.as_deref() == Some(found.query.as_str()));
                if !current {
                    return;
                }
                let any = found.count > 0;
                self.search.set(Some(found));
                if any {
                    self.go_to_match(0);
                }
            }
            Response::Minimap(minimap) => self.minimap.set(Some(minimap)),
            Response::ViewError(message) => {
                self.pacing.update_value(|p| {
                    p.in_flight = false;
                    p.hover_in_flight = false;
                });
                self.error.set(Some(message));
            }
            _ => {}
        }
    }

    /// Records where the pointer is (CSS pixels), before its hit answer arrives.
    pub fn pointer_at(&self, x: f64, y: f64) {
        self.pacing.update_value(|p| p.pointer = (x, y));
    }
}

fn prefers_dark() -> bool {
    web_sys::window()
        .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
        .is_some_and(|m| m.matches())
}

/// The timeline section of a device.
#[component]
pub fn TimelinePanel(file: FileId, device: u32, actions: Actions) -> impl IntoView {
    let tl = Timeline::new(file, device, actions);
    actions.listen(
        file,
        Rc::new(move |response, pixels| tl.on_answer(response, pixels)),
    );
    on_cleanup(move || actions.unlisten(file));

    // Lay out again when the kind changes; frames follow every change of the view.
    Effect::new(move |_| {
        let _ = tl.kind.get();
        tl.info.set(None);
        tl.unpin();
        tl.pacing.update_value(|p| p.search_query = None);
        tl.search.set(None);
        tl.minimap.set(None);
        tl.lay_out(None);
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
        tl.window.track();
        tl.size.track();
        tl.dark.track();
        tl.show_line.track();
        tl.pinned.with(|p| p.as_ref().map(|d| d.index));
        tl.search.track();
        tl.request_frame();
    });
    // Follow the system theme while the page is open.
    if let Some(query) =
        web_sys::window().and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
    {
        let on_change = wasm_bindgen::closure::Closure::<dyn FnMut()>::new(move || {
            tl.dark.set(prefers_dark());
        });
        let _ =
            query.add_event_listener_with_callback("change", on_change.as_ref().unchecked_ref());
        let handler = StoredValue::new_local(Some(on_change));
        on_cleanup(move || {
            if let Some(on_change) = handler.try_update_value(Option::take).flatten() {
                let _ = query.remove_event_listener_with_callback(
                    "change",
                    on_change.as_ref().unchecked_ref(),
                );
            }
        });
    }
    Effect::new(move |previous: Option<f64>| {
        let width = tl.size.get().0;
        if previous.is_some_and(|p| (p - width).abs() > 0.5) {
            tl.request_minimap();
        }
        width
    });

    let info = tl.info;
    let frame = tl.frame;
    let window = tl.window;
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
            data-kind=move || match tl.kind.get() { Kind::Allocations => "allocations", Kind::Segments => "segments" }
            data-mode=move || match tl.mode.get() { AxisMode::Events => "events", AxisMode::Time => "time" }
            data-ready=move || info.with(|i| i.is_some()).to_string()
            data-view-start=move || window.get().x0.to_string()
            data-view-end=move || window.get().x1.to_string()
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
            data-pinned=move || tl.pinned.with(|p| p.as_ref().map(|d| d.index.to_string()).unwrap_or_default())
            data-search-count=move || tl.search.with(|s| s.as_ref().map(|s| s.count.to_string()).unwrap_or_default())
        >
            <toolbar::TimelineToolbar tl=tl />
            {move || tl.error.get().map(|message| view! { <p class="timeline-error" role="alert">{message}</p> })}
            // The frame on screen (exact values for tests and benchmarks).
            <div
                class="timeline-frame"
                id="timeline-frame"
                data-y-max=frame_attr(|f| f.y_max.to_string())
                data-width=frame_attr(|f| f.view.width.to_string())
                data-height=frame_attr(|f| f.view.height.to_string())
                data-seq=frame_attr(|f| f.seq.to_string())
                data-first-state=frame_attr(|f| f.first_state.map(|s| s.to_string()).unwrap_or_default())
                data-last-state=frame_attr(|f| f.last_state.map(|s| s.to_string()).unwrap_or_default())
                data-peak-bytes=frame_attr(|f| f.peak_bytes.to_string())
                data-drawn=frame_attr(|f| f.drawn_individually.to_string())
                data-paint-ms=frame_attr(|f| f.paint_ms.to_string())
            >
                <plot::Plot tl=tl />
            </div>
            <minimap::Minimap tl=tl />
            <details::PinnedDetails tl=tl />
        </section>
    }
}
