//! The plot: the canvas the worker's pixels are put on, the overlay canvas for axes and
//! marks, the tooltip, and the input that navigates (wheel, drag, keys) and inspects (hover,
//! click, Esc).
//!
//! Holds no view state of its own: everything goes through [`Timeline`].

use leptos::ev;
use leptos::html::{Canvas, Div};
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{
    AddEventListenerOptions, HtmlCanvasElement, KeyboardEvent, PointerEvent, WheelEvent,
};

use super::tooltip::Tooltip;
use super::{overlay, Timeline};

/// Milliseconds from the page's clock.
fn now() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

/// Pixels a press may move and still count as a click.
const CLICK_SLOP: f64 = 4.0;

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

/// Whether keys typed now belong to a text field rather than the timeline.
fn typing(event: &KeyboardEvent) -> bool {
    event
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|e| matches!(e.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"))
}

/// Pixels either side of an OOM mark that hover or click it.
const OOM_REACH: f64 = 5.0;

/// Width of the strip along the left edge, over the byte labels, where a vertical drag
/// zooms the y axis.
pub const Y_AXIS_STRIP: f64 = 56.0;

/// What a press on the plot does as the pointer moves.
#[derive(Clone, Copy, Debug, PartialEq)]
enum DragKind {
    /// Pans the x range (and a zoomed y range).
    Pan,
    /// Zooms the y axis around where the press started (drag up to zoom in).
    YAxis,
    /// Draws a box to zoom into (Shift + drag).
    Box,
}

#[derive(Clone, Copy)]
struct Drag {
    kind: DragKind,
    start_x: f64,
    start_y: f64,
    moved: bool,
    x: super::range::XRange,
    y: Option<super::range::YRange>,
    /// The y range on screen when the press started (a fitted axis has none of its own).
    painted_y: super::range::YRange,
}

#[component]
pub fn Plot(tl: Timeline) -> impl IntoView {
    let container = NodeRef::<Div>::new();
    let canvas = NodeRef::<Canvas>::new();
    let overlay_canvas = NodeRef::<Canvas>::new();
    let drag = StoredValue::new_local(None::<Drag>);
    // The zoom box being drawn, in CSS pixels: left, top, width, height.
    let zoom_box = RwSignal::new(None::<(f64, f64, f64, f64)>);
    let labels = RwSignal::new(String::new());
    // How long drawing the overlay took (for benchmarks).
    let overlay_ms = RwSignal::new(0.0);
    // The pointer is over the byte axis, where a vertical drag zooms the bytes.
    let over_axis = RwSignal::new(false);

    // Measure the plot (its width, its share of the window's height) and keep the canvas in
    // the timeline state. A plot whose size is expected is measured once the page lays it
    // out (the resize observer's first call), not by forcing a layout now.
    let measure = move || {
        let Some(div) = container.get_untracked() else {
            return;
        };
        let width = div.client_width() as f64;
        if let Some(window) = super::plot_size::Window::now().filter(|_| width > 0.0) {
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
    // Dragging the bar under the plot resizes it; a double click restores its share.
    let resizing = StoredValue::new_local(None::<(f64, f64)>);
    let on_resize_down = move |event: PointerEvent| {
        let inner = web_sys::window()
            .and_then(|w| w.inner_height().ok())
            .and_then(|h| h.as_f64())
            .unwrap_or(800.0);
        resizing.set_value(Some((
            event.client_y() as f64,
            tl.size.get_untracked().1 / inner,
        )));
        if let Some(target) = event
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        {
            let _ = target.set_pointer_capture(event.pointer_id());
        }
    };
    let on_resize_move = move |event: PointerEvent| {
        let Some((start_y, start_share)) = resizing.get_value() else {
            return;
        };
        let inner = web_sys::window()
            .and_then(|w| w.inner_height().ok())
            .and_then(|h| h.as_f64())
            .unwrap_or(800.0);
        let share = start_share + (event.client_y() as f64 - start_y) / inner.max(1.0);
        tl.plot_share.set(share.clamp(0.1, 0.95));
    };
    let on_resize_up = move |_: PointerEvent| {
        if resizing.get_value().is_some() {
            resizing.set_value(None);
            super::store_plot_share(tl.plot_share.get_untracked());
        }
    };

    // Keys: W/S zoom, A/D pan, 0 reset, Shift+W/S zoom y, ↑/↓ pan a zoomed y, F fits y, ?
    // shows every key, Esc unpins, Ctrl/Cmd+F searches.
    let keys = window_event_listener(ev::keydown, move |event: KeyboardEvent| {
        if (event.ctrl_key() || event.meta_key()) && event.key().eq_ignore_ascii_case("f") {
            if let Some(input) = document().get_element_by_id("timeline-search") {
                event.prevent_default();
                if let Ok(input) = input.dyn_into::<web_sys::HtmlInputElement>() {
                    let _ = input.focus();
                    input.select();
                }
            }
            return;
        }
        if event.key() == "Escape" {
            tl.unpin();
            tl.clear_hover();
            return;
        }
        if typing(&event) || event.ctrl_key() || event.meta_key() || event.alt_key() {
            return;
        }
        let handled = match (event.key().as_str(), event.shift_key()) {
            ("W", true) => {
                tl.zoom_y(0.5, 0.8);
                true
            }
            ("S", true) => {
                tl.zoom_y(0.5, 1.25);
                true
            }
            ("w" | "W" | "+" | "=", _) => {
                tl.zoom(0.5, 0.8);
                true
            }
            ("s" | "S" | "-", _) => {
                tl.zoom(0.5, 1.25);
                true
            }
            ("a" | "A" | "ArrowLeft", _) => {
                tl.pan(-0.1);
                true
            }
            ("d" | "D" | "ArrowRight", _) => {
                tl.pan(0.1);
                true
            }
            ("ArrowUp", _) => tl.pan_y(0.1),
            ("ArrowDown", _) => tl.pan_y(-0.1),
            ("f" | "F", _) => {
                tl.fit_y();
                true
            }
            ("0", _) => {
                tl.reset();
                true
            }
            ("?", _) => {
                tl.show_help.update(|shown| *shown = !*shown);
                true
            }
            _ => false,
        };
        if handled {
            event.prevent_default();
        }
    });
    on_cleanup(move || keys.remove());

    // Wheel zooms x around the cursor (pinch arrives as a wheel with ctrlKey), Shift+wheel
    // zooms y around it; a horizontal wheel pans. Registered by hand as non-passive so the
    // page does not scroll instead.
    let wheel = StoredValue::new_local(None::<Closure<dyn FnMut(WheelEvent)>>);
    Effect::new(move |_| {
        let Some(c) = canvas.get() else { return };
        let handler = Closure::<dyn FnMut(WheelEvent)>::new(move |event: WheelEvent| {
            event.prevent_default();
            let (w, h, _) = tl.size.get_untracked();
            let scale = match event.delta_mode() {
                1 => 16.0,
                2 => 400.0,
                _ => 1.0,
            };
            let (dx, dy) = (event.delta_x() * scale, event.delta_y() * scale);
            let (px, py) = offset(&event);
            if event.shift_key() {
                // Browsers may turn a shifted wheel into a horizontal one.
                let d = if dy != 0.0 { dy } else { dx };
                tl.zoom_y(1.0 - py / h.max(1.0), (d * 0.002).exp());
            } else if dx.abs() > dy.abs() {
                tl.pan(dx / w.max(1.0));
            } else {
                let speed = if event.ctrl_key() { 0.01 } else { 0.002 };
                tl.zoom(px / w.max(1.0), (dy * speed).exp());
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

    let on_down = move |event: PointerEvent| {
        if event.button() != 0 {
            return;
        }
        let (x, y) = offset(&event);
        let kind = if event.shift_key() {
            DragKind::Box
        } else if x < Y_AXIS_STRIP {
            DragKind::YAxis
        } else {
            DragKind::Pan
        };
        drag.set_value(Some(Drag {
            kind,
            start_x: x,
            start_y: y,
            moved: false,
            x: tl.range.get_untracked(),
            y: tl.y_range.get_untracked(),
            painted_y: tl.painted_y(),
        }));
        if let Some(c) = canvas.get_untracked() {
            let _ = c.set_pointer_capture(event.pointer_id());
        }
    };
    let on_move = move |event: PointerEvent| {
        let (x, y) = offset(&event);
        if let Some(d) = drag.get_value() {
            let (dx, dy) = (x - d.start_x, y - d.start_y);
            if d.moved || dx.abs() > CLICK_SLOP || dy.abs() > CLICK_SLOP {
                drag.update_value(|d| {
                    if let Some(d) = d {
                        d.moved = true;
                    }
                });
                let (w, h, _) = tl.size.get_untracked();
                match d.kind {
                    DragKind::Pan => {
                        let shift = -dx / w.max(1.0) * d.x.span();
                        if let Some(y_range) = d.y {
                            tl.y_range.set(Some(y_range.pan(dy / h.max(1.0))));
                        }
                        tl.set_range(super::range::XRange::new(d.x.x0 + shift, d.x.x1 + shift));
                    }
                    DragKind::YAxis => {
                        let start = d.y.unwrap_or(d.painted_y);
                        let anchor = 1.0 - d.start_y / h.max(1.0);
                        tl.y_range.set(Some(start.zoom(anchor, (dy * 0.01).exp())));
                    }
                    DragKind::Box => {
                        zoom_box.set(Some((
                            d.start_x.min(x),
                            d.start_y.min(y),
                            dx.abs(),
                            dy.abs(),
                        )));
                    }
                }
                tl.clear_hover();
                return;
            }
        }
        let on_axis = x < Y_AXIS_STRIP;
        if over_axis.get_untracked() != on_axis {
            over_axis.set(on_axis);
        }
        tl.pointer_at(x, y);
        // Over the phase lanes, the phase is what is hovered; near an OOM mark, the OOM.
        let (phase, oom) = tl
            .overlay
            .with_value(|l| {
                l.as_ref().map(|l| {
                    let phase = l.phase_at(x, y).map(|p| p.index);
                    let oom = (y >= l.phase_band())
                        .then(|| l.oom_at(x, OOM_REACH))
                        .flatten();
                    (phase, oom)
                })
            })
            .unwrap_or_default();
        if let Some(index) = phase {
            tl.hover.set(None);
            tl.oom_hover.set(None);
            tl.phase_hover.set(Some((index, x, y)));
            return;
        }
        tl.phase_hover.set(None);
        if let Some(nth) = oom {
            tl.hover.set(None);
            tl.oom_hover.set(Some((nth, x, y)));
            return;
        }
        tl.oom_hover.set(None);
        tl.hit_test(x, y, false);
    };
    let on_up = move |event: PointerEvent| {
        let Some(d) = drag.get_value() else { return };
        drag.set_value(None);
        let (x, y) = offset(&event);
        if d.kind == DragKind::Box {
            zoom_box.set(None);
            if d.moved {
                tl.zoom_to_box((d.start_x, d.start_y), (x, y));
            } else {
                // Shift+click: the other views show this moment.
                tl.pick_moment_at(x, y);
            }
            return;
        }
        if !d.moved {
            tl.pointer_at(x, y);
            let oom = tl
                .overlay
                .with_value(|l| l.as_ref().and_then(|l| l.oom_at(x, OOM_REACH)));
            match oom {
                Some(nth) => tl.pin_oom(nth),
                None => tl.hit_test(x, y, true),
            }
        }
    };

    // Axes and marks follow the frame on screen.
    let draw_overlay = move || {
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
        overlay_ms.set(now() - start);
        labels.set(
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
                    draw_overlay();
                }
            });
        } else {
            draw_overlay();
        }
    });

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
                style:cursor=move || if over_axis.get() { "ns-resize" } else { "crosshair" }
                on:pointerdown=on_down
                on:pointermove=on_move
                on:pointerup=on_up
                on:pointerleave=move |_| {
                    if drag.get_value().is_none() {
                        tl.clear_hover();
                    }
                }
            ></canvas>
            <canvas
                id="timeline-overlay"
                class="timeline-overlay"
                node_ref=overlay_canvas
                aria-hidden="true"
                style:height=height
                data-labels=move || labels.get()
                data-overlay-ms=move || overlay_ms.get().to_string()
            ></canvas>
            {move || zoom_box.get().map(|(x, y, w, h)| view! {
                <div class="zoom-box" id="timeline-zoom-box"
                    style:left=format!("{x}px") style:top=format!("{y}px")
                    style:width=format!("{w}px") style:height=format!("{h}px")></div>
            })}
            <Tooltip tl=tl />
        </div>
        <div class="plot-resize" id="timeline-resize" role="separator" aria-orientation="horizontal"
            title="Drag to resize the plot; double-click for its usual size"
            on:pointerdown=on_resize_down on:pointermove=on_resize_move on:pointerup=on_resize_up
            on:dblclick=move |_| {
                tl.plot_share.set(super::DEFAULT_PLOT_SHARE);
                super::store_plot_share(super::DEFAULT_PLOT_SHARE);
            }
        ></div>
    }
}
