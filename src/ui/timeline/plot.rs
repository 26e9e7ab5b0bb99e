//! The plot: the canvas the worker's pixels are put on, the overlay canvas for axes and
//! marks, the tooltip, the bar under it that resizes it, and the input that navigates (wheel,
//! drag, keys) and inspects (hover, click, Esc).
//!
//! Each part is a function of its own: measuring the plot, the keys, the wheel, the pointer,
//! drawing the overlay, the resize bar. They read the browser's events and carry out on the
//! [`Timeline`] what the gestures' arithmetic (`gestures.rs`) makes of them; the plot holds no
//! view state of its own.

use leptos::ev;
use leptos::html::{Canvas, Div};
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{
    AddEventListenerOptions, HtmlCanvasElement, KeyboardEvent, PointerEvent, WheelEvent,
};

use super::gestures::{self, Drag, DragStep, Key, KeyPress, Over, PlotResize, Release, ZoomBox};
use super::tooltip::Tooltip;
use super::{overlay, Timeline};
use crate::ui::plot_share::{store_plot_share, DEFAULT_PLOT_SHARE};
use crate::ui::plot_size::Window;

#[component]
pub fn Plot(tl: Timeline) -> impl IntoView {
    let container = NodeRef::<Div>::new();
    let canvas = NodeRef::<Canvas>::new();
    let overlay_canvas = NodeRef::<Canvas>::new();
    measure(tl, container, canvas);
    listen_to_keys(tl);
    listen_to_wheel(tl, canvas);
    let pointer = PlotPointer::new(tl, canvas);
    let drawn = draw_overlay(tl, overlay_canvas);

    let height = move || format!("{}px", tl.size.get().1);
    view! {
        <div class="timeline-plot" node_ref=container>
            <canvas
                id="timeline-canvas"
                class="timeline-canvas"
                node_ref=canvas
                tabindex="0"
                aria-label="Memory timeline: wheel or W/S to zoom, drag or A/D to pan, Shift+wheel or a drag along the byte axis to zoom bytes, Shift+drag to zoom into a box, F to fit the bytes, 0 to reset, click to pin an allocation, Shift+click to show a moment in the other views, ? for all keys"
                style:height=height
                style:cursor=move || if pointer.over_axis.get() { "ns-resize" } else { "crosshair" }
                on:pointerdown=move |event| pointer.press(&event)
                on:pointermove=move |event| pointer.moved(&event)
                on:pointerup=move |event| pointer.release(&event)
                on:pointerleave=move |_| pointer.left()
            ></canvas>
            <canvas
                id="timeline-overlay"
                class="timeline-overlay"
                node_ref=overlay_canvas
                aria-hidden="true"
                style:height=height
                data-labels=move || drawn.labels.get()
                data-overlay-ms=move || drawn.ms.get().to_string()
            ></canvas>
            {move || pointer.zoom_box.get().map(|b| view! {
                <div class="zoom-box" id="timeline-zoom-box"
                    style:left=format!("{}px", b.left) style:top=format!("{}px", b.top)
                    style:width=format!("{}px", b.width) style:height=format!("{}px", b.height)></div>
            })}
            <Tooltip tl=tl />
        </div>
        <PlotResizeBar tl=tl />
    }
}

/// Milliseconds from the page's clock.
fn now() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

/// The pointer's position in the target, in fractional CSS pixels (`web_sys`'s `offset_x()`
/// is an integer, which at a device pixel ratio of 2 would reach only every other pixel).
pub fn offset(event: &web_sys::MouseEvent) -> (f64, f64) {
    let read = |name: &str, fallback: i32| {
        js_sys::Reflect::get(event, &JsValue::from_str(name))
            .ok()
            .and_then(|v| v.as_f64())
            .unwrap_or(fallback as f64)
    };
    (
        read("offsetX", event.offset_x()),
        read("offsetY", event.offset_y()),
    )
}

/// The window's inner height in CSS pixels.
fn window_height() -> f64 {
    web_sys::window()
        .and_then(|w| w.inner_height().ok())
        .and_then(|h| h.as_f64())
        .unwrap_or(800.0)
}

/// Measures the plot (its width, its share of the window's height) whenever the page's
/// layout may have changed it, and keeps the canvas in the timeline state. A plot whose size
/// is expected is measured once the page lays it out (the resize observer's first call), not
/// by forcing a layout now.
fn measure(tl: Timeline, container: NodeRef<Div>, canvas: NodeRef<Canvas>) {
    let measure = move || {
        let Some(div) = container.get_untracked() else {
            return;
        };
        let width = div.client_width() as f64;
        if let Some(window) = Window::now().filter(|_| width > 0.0) {
            tl.measured(window, width);
        }
    };
    Effect::new(move |_| {
        if let Some(c) = canvas.get() {
            let element: &HtmlCanvasElement = &c;
            tl.canvas.set_value(Some(element.clone()));
            tl.show_waiting_pixels(element);
            if !tl.size_expected() {
                measure();
            }
        }
    });
    Effect::new(move |mounted: Option<()>| {
        tl.plot_share.track();
        if mounted.is_some() {
            measure();
        }
    });
    let resize = window_event_listener(ev::resize, move |_| measure());
    on_cleanup(move || resize.remove());
    // The plot's width also changes with the page's layout (the sidebar folding away, the
    // pinned pane), not only with the window.
    let observer = StoredValue::new_local(None::<(web_sys::ResizeObserver, Closure<dyn FnMut()>)>);
    Effect::new(move |_| {
        let Some(div) = container.get() else { return };
        let callback = Closure::<dyn FnMut()>::new(measure);
        if let Ok(o) = web_sys::ResizeObserver::new(callback.as_ref().unchecked_ref()) {
            o.observe(&div);
            observer.set_value(Some((o, callback)));
        }
    });
    on_cleanup(move || {
        if let Some((o, _)) = observer.try_update_value(Option::take).flatten() {
            o.disconnect();
        }
    });
}

/// Whether keys typed now belong to a text field rather than the timeline.
fn typing(event: &KeyboardEvent) -> bool {
    event
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|e| matches!(e.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"))
}

/// The timeline's keys, anywhere on the page ([`gestures::key`] says which).
fn listen_to_keys(tl: Timeline) {
    let keys = window_event_listener(ev::keydown, move |event: KeyboardEvent| {
        let key = event.key();
        let press = KeyPress {
            key: &key,
            shift: event.shift_key(),
            ctrl_or_meta: event.ctrl_key() || event.meta_key(),
            alt: event.alt_key(),
            typing: typing(&event),
        };
        let Some(key) = gestures::key(press) else {
            return;
        };
        let handled = match key {
            Key::FocusSearch => {
                if let Some(input) = document().get_element_by_id("timeline-search") {
                    event.prevent_default();
                    if let Ok(input) = input.dyn_into::<web_sys::HtmlInputElement>() {
                        let _ = input.focus();
                        input.select();
                    }
                }
                return;
            }
            Key::Unpin => {
                tl.unpin();
                tl.clear_hover();
                return;
            }
            Key::Zoom(factor) => {
                tl.zoom(0.5, factor);
                true
            }
            Key::ZoomY(factor) => {
                tl.zoom_y(0.5, factor);
                true
            }
            Key::Pan(fraction) => {
                tl.pan(fraction);
                true
            }
            Key::PanY(fraction) => tl.pan_y(fraction),
            Key::FitY => {
                tl.fit_y();
                true
            }
            Key::Reset => {
                tl.reset();
                true
            }
            Key::ToggleHelp => {
                tl.show_help.update(|shown| *shown = !*shown);
                true
            }
        };
        if handled {
            event.prevent_default();
        }
    });
    on_cleanup(move || keys.remove());
}

/// The wheel over the plot ([`gestures::wheel`] says what it does). Registered by hand as
/// non-passive so the page does not scroll instead.
fn listen_to_wheel(tl: Timeline, canvas: NodeRef<Canvas>) {
    let wheel = StoredValue::new_local(None::<Closure<dyn FnMut(WheelEvent)>>);
    Effect::new(move |_| {
        let Some(c) = canvas.get() else { return };
        let handler = Closure::<dyn FnMut(WheelEvent)>::new(move |event: WheelEvent| {
            event.prevent_default();
            let (w, h, _) = tl.size.get_untracked();
            let turn = gestures::WheelTurn {
                delta: (event.delta_x(), event.delta_y()),
                delta_mode: event.delta_mode(),
                at: offset(&event),
                shift: event.shift_key(),
                ctrl: event.ctrl_key(),
            };
            match gestures::wheel(turn, (w, h)) {
                gestures::Wheel::ZoomY { fraction, factor } => tl.zoom_y(fraction, factor),
                gestures::Wheel::Pan(fraction) => tl.pan(fraction),
                gestures::Wheel::Zoom { fraction, factor } => tl.zoom(fraction, factor),
            }
        });
        let options = AddEventListenerOptions::new();
        options.set_passive(false);
        let _ = c.add_event_listener_with_callback_and_add_event_listener_options(
            "wheel",
            handler.as_ref().unchecked_ref(),
            &options,
        );
        wheel.set_value(Some(handler));
    });
}

/// The pointer on the plot: a press drags (pans, zooms the bytes, draws a box) or clicks; a
/// move without a press hovers.
#[derive(Clone, Copy)]
struct PlotPointer {
    tl: Timeline,
    canvas: NodeRef<Canvas>,
    drag: StoredValue<Option<Drag>, LocalStorage>,
    /// The zoom box being drawn.
    zoom_box: RwSignal<Option<ZoomBox>>,
    /// The pointer is over the byte axis, where a vertical drag zooms the bytes.
    over_axis: RwSignal<bool>,
}

impl PlotPointer {
    fn new(tl: Timeline, canvas: NodeRef<Canvas>) -> PlotPointer {
        PlotPointer {
            tl,
            canvas,
            drag: StoredValue::new_local(None),
            zoom_box: RwSignal::new(None),
            over_axis: RwSignal::new(false),
        }
    }

    fn press(&self, event: &PointerEvent) {
        if event.button() != 0 {
            return;
        }
        let tl = self.tl;
        let drag = Drag::press(
            offset(event),
            event.shift_key(),
            tl.range.get_untracked(),
            tl.y_range.get_untracked(),
            tl.painted_y(),
        );
        self.drag.set_value(Some(drag));
        if let Some(c) = self.canvas.get_untracked() {
            let _ = c.set_pointer_capture(event.pointer_id());
        }
    }

    fn moved(&self, event: &PointerEvent) {
        let tl = self.tl;
        let at = offset(event);
        let (w, h, _) = tl.size.get_untracked();
        let step = self
            .drag
            .try_update_value(|d| d.as_mut().and_then(|d| d.move_to(at, (w, h))))
            .flatten();
        if let Some(step) = step {
            match step {
                DragStep::Pan { x, y } => {
                    if let Some(y) = y {
                        tl.y_range.set(Some(y));
                    }
                    tl.set_range(x);
                }
                DragStep::ZoomY(y) => tl.y_range.set(Some(y)),
                DragStep::Box(b) => self.zoom_box.set(Some(b)),
            }
            tl.clear_hover();
            return;
        }
        self.hover(at);
    }

    /// Hovers `(x, y)`: a scope over the lanes, an out-of-memory mark near one, else what is
    /// painted there.
    fn hover(&self, (x, y): (f64, f64)) {
        let tl = self.tl;
        let on_axis = x < gestures::Y_AXIS_STRIP;
        if self.over_axis.get_untracked() != on_axis {
            self.over_axis.set(on_axis);
        }
        tl.pointer_at(x, y);
        match tl.overlay.with_value(|l| gestures::over(l.as_ref(), x, y)) {
            Over::Scope(index) => {
                tl.hover_elsewhere();
                tl.oom_hover.set(None);
                tl.scope_hover.set(Some((index, x, y)));
            }
            Over::Oom(nth) => {
                tl.scope_hover.set(None);
                tl.hover_elsewhere();
                tl.oom_hover.set(Some((nth, x, y)));
            }
            Over::Plot => {
                tl.scope_hover.set(None);
                tl.oom_hover.set(None);
                tl.hover_at(x, y);
            }
        }
    }

    fn release(&self, event: &PointerEvent) {
        let Some(drag) = self.drag.try_update_value(Option::take).flatten() else {
            return;
        };
        let tl = self.tl;
        if drag.kind == gestures::DragKind::Box {
            self.zoom_box.set(None);
        }
        match drag.release(offset(event)) {
            Release::ZoomToBox { from, to } => tl.zoom_to_box(from, to),
            // Shift+click: the other views show this moment.
            Release::PickMoment(x, y) => tl.pick_moment_at(x, y),
            Release::Click(x, y) => {
                tl.pointer_at(x, y);
                match tl
                    .overlay
                    .with_value(|l| gestures::clicked_oom(l.as_ref(), x))
                {
                    Some(nth) => tl.pin_oom(nth),
                    None => tl.click_at(x, y),
                }
            }
            Release::Done => {}
        }
    }

    fn left(&self) {
        if self.drag.with_value(Option::is_none) {
            self.tl.clear_hover();
        }
    }
}

/// What the overlay's last drawing left for tests and benchmarks.
#[derive(Clone, Copy)]
struct OverlayDrawn {
    /// Its labels, as JSON.
    labels: RwSignal<String>,
    /// How long drawing it took, in milliseconds.
    ms: RwSignal<f64>,
}

/// Draws the axes and marks over the frame on screen whenever it, the layout, the size, the
/// theme, the pin or the axis change.
fn draw_overlay(tl: Timeline, overlay_canvas: NodeRef<Canvas>) -> OverlayDrawn {
    let drawn = OverlayDrawn {
        labels: RwSignal::new(String::new()),
        ms: RwSignal::new(0.0),
    };
    let draw = move || {
        let frame = tl.frame.get_untracked();
        let info = tl.info.get_untracked();
        let (w, h, dpr) = tl.size.get_untracked();
        let dark = tl.dark.get_untracked();
        let (Some(c), Some(frame), Some(info)) = (overlay_canvas.get_untracked(), frame, info)
        else {
            return;
        };
        let pinned = tl
            .pinned
            .with_untracked(|p| p.as_ref().and_then(|d| tl.lifetime_x(d, frame.view.mode)));
        let start = now();
        let layout = overlay::draw(
            &c,
            &overlay::Scene {
                width: w,
                height: h,
                dpr,
                x0: frame.view.x0,
                x1: frame.view.x1,
                mode: frame.view.mode,
                y_min: frame.y_min,
                y_max: frame.y_max,
                info: &info,
                pinned,
                dark,
            },
        );
        drawn.ms.set(now() - start);
        drawn.labels.set(
            layout
                .as_ref()
                .map(overlay::labels_json)
                .unwrap_or_default(),
        );
        tl.overlay.set_value(layout);
    };
    Effect::new(move |drawn: Option<()>| {
        tl.frame.track();
        tl.info.track();
        tl.size.track();
        tl.dark.track();
        tl.pinned.track();
        tl.mode.track();
        overlay_canvas.track();
        // A first frame that came with the file is shown while the page builds the file's
        // views: the overlay's font would make the browser lay them out now, and again once
        // they are complete. Drawn in the next animation frame, before that frame's paint.
        if drawn.is_none() && tl.first_with_file.get_untracked() {
            request_animation_frame(move || {
                if !tl.is_gone() {
                    draw();
                }
            });
        } else {
            draw();
        }
    });
    drawn
}

/// The bar under the plot: dragging it resizes the plot (its share of the window's height,
/// remembered); a double click restores the usual share.
#[component]
fn PlotResizeBar(tl: Timeline) -> impl IntoView {
    let resizing = StoredValue::new_local(None::<PlotResize>);
    let on_down = move |event: PointerEvent| {
        let press = PlotResize::press(
            event.client_y() as f64,
            tl.size.get_untracked().1,
            window_height(),
        );
        resizing.set_value(Some(press));
        if let Some(target) = event
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        {
            let _ = target.set_pointer_capture(event.pointer_id());
        }
    };
    let on_move = move |event: PointerEvent| {
        let Some(resize) = resizing.get_value() else {
            return;
        };
        let share = resize.share_at(event.client_y() as f64, window_height());
        tl.plot_share.set(share);
    };
    let on_up = move |_: PointerEvent| {
        if resizing.get_value().is_some() {
            resizing.set_value(None);
            store_plot_share(tl.plot_share.get_untracked());
        }
    };
    view! {
        <div class="plot-resize" id="timeline-resize" role="separator" aria-orientation="horizontal"
            title="Drag to resize the plot; double-click for its usual size"
            on:pointerdown=on_down on:pointermove=on_move on:pointerup=on_up
            on:dblclick=move |_| {
                tl.plot_share.set(DEFAULT_PLOT_SHARE);
                store_plot_share(DEFAULT_PLOT_SHARE);
            }
        ></div>
    }
}
