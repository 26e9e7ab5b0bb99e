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
use super::{overlay, Timeline, PLOT_HEIGHT};

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

#[derive(Clone, Copy, Default)]
struct Drag {
    active: bool,
    start_x: f64,
    start_y: f64,
    moved: bool,
    x0: f64,
    x1: f64,
}

#[component]
pub fn Plot(tl: Timeline) -> impl IntoView {
    let container = NodeRef::<Div>::new();
    let canvas = NodeRef::<Canvas>::new();
    let overlay_canvas = NodeRef::<Canvas>::new();
    let drag = StoredValue::new_local(Drag::default());

    // Measure the plot and keep the canvas in the timeline state.
    let measure = move || {
        if let Some(div) = container.get_untracked() {
            let width = div.client_width() as f64;
            let dpr = web_sys::window()
                .map_or(1.0, |w| w.device_pixel_ratio())
                .max(1.0);
            if width > 0.0 {
                let size = (width, PLOT_HEIGHT, dpr);
                if tl.size.get_untracked() != size {
                    tl.size.set(size);
                }
            }
        }
    };
    Effect::new(move |_| {
        if let Some(c) = canvas.get() {
            let element: &HtmlCanvasElement = &c;
            tl.canvas.set_value(Some(element.clone()));
            measure();
        }
    });
    let resize = window_event_listener(ev::resize, move |_| measure());
    on_cleanup(move || resize.remove());

    // Keys: W/S zoom, A/D pan, 0 reset, Esc unpins, Ctrl/Cmd+F searches.
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
        let handled = match event.key().as_str() {
            "w" | "W" | "+" | "=" => {
                tl.zoom(0.5, 0.8);
                true
            }
            "s" | "S" | "-" => {
                tl.zoom(0.5, 1.25);
                true
            }
            "a" | "A" | "ArrowLeft" => {
                tl.pan(-0.1);
                true
            }
            "d" | "D" | "ArrowRight" => {
                tl.pan(0.1);
                true
            }
            "0" => {
                tl.reset();
                true
            }
            _ => false,
        };
        if handled {
            event.prevent_default();
        }
    });
    on_cleanup(move || keys.remove());

    // Wheel zooms around the cursor (pinch arrives as a wheel with ctrlKey); horizontal
    // wheel pans. Registered by hand as non-passive so the page does not scroll instead.
    let wheel = StoredValue::new_local(None::<Closure<dyn FnMut(WheelEvent)>>);
    Effect::new(move |_| {
        let Some(c) = canvas.get() else { return };
        let handler = Closure::<dyn FnMut(WheelEvent)>::new(move |event: WheelEvent| {
            event.prevent_default();
            let (w, _, _) = tl.size.get_untracked();
            let scale = match event.delta_mode() {
                1 => 16.0,
                2 => 400.0,
                _ => 1.0,
            };
            let (dx, dy) = (event.delta_x() * scale, event.delta_y() * scale);
            if dx.abs() > dy.abs() {
                tl.pan(dx / w.max(1.0));
            } else {
                let fraction = offset(&event).0 / w.max(1.0);
                let speed = if event.ctrl_key() { 0.01 } else { 0.002 };
                tl.zoom(fraction, (dy * speed).exp());
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
        let range = tl.range.get_untracked();
        let (x, y) = offset(&event);
        drag.set_value(Drag {
            active: true,
            start_x: x,
            start_y: y,
            moved: false,
            x0: range.x0,
            x1: range.x1,
        });
        if let Some(c) = canvas.get_untracked() {
            let _ = c.set_pointer_capture(event.pointer_id());
        }
    };
    let on_move = move |event: PointerEvent| {
        let (x, y) = offset(&event);
        let d = drag.get_value();
        if d.active {
            let dx = x - d.start_x;
            if d.moved || dx.abs() > CLICK_SLOP || (y - d.start_y).abs() > CLICK_SLOP {
                drag.update_value(|d| d.moved = true);
                let (w, _, _) = tl.size.get_untracked();
                let shift = -dx / w.max(1.0) * (d.x1 - d.x0);
                tl.set_range(super::range::XRange::new(d.x0 + shift, d.x1 + shift));
                tl.clear_hover();
                return;
            }
        }
        tl.pointer_at(x, y);
        tl.hit_test(x, y, false);
    };
    let on_up = move |event: PointerEvent| {
        let d = drag.get_value();
        drag.update_value(|d| d.active = false);
        if d.active && !d.moved {
            let (x, y) = offset(&event);
            tl.pointer_at(x, y);
            tl.hit_test(x, y, true);
        }
    };

    // Axes and marks follow the frame on screen.
    Effect::new(move |_| {
        let frame = tl.frame.get();
        let info = tl.info.get();
        let (w, h, dpr) = tl.size.get();
        let dark = tl.dark.get();
        let (Some(c), Some(frame), Some(info)) = (overlay_canvas.get(), frame, info) else {
            return;
        };
        let pinned = tl
            .pinned
            .with(|p| p.as_ref().and_then(|d| tl.lifetime_x(d, frame.view.mode)));
        overlay::draw(
            &c,
            &overlay::Scene {
                width: w,
                height: h,
                dpr,
                x0: frame.view.x0,
                x1: frame.view.x1,
                mode: frame.view.mode,
                y_max: frame.y_max,
                info: &info,
                pinned,
                dark,
            },
        );
    });

    view! {
        <div class="timeline-plot" node_ref=container>
            <canvas
                id="timeline-canvas"
                class="timeline-canvas"
                node_ref=canvas
                tabindex="0"
                aria-label="Memory timeline: wheel or W/S to zoom, drag or A/D to pan, 0 to reset, click to pin an allocation"
                style:height=format!("{PLOT_HEIGHT}px")
                on:pointerdown=on_down
                on:pointermove=on_move
                on:pointerup=on_up
                on:pointerleave=move |_| {
                    if !drag.get_value().active {
                        tl.clear_hover();
                    }
                }
            ></canvas>
            <canvas
                id="timeline-overlay"
                class="timeline-overlay"
                node_ref=overlay_canvas
                aria-hidden="true"
                style:height=format!("{PLOT_HEIGHT}px")
            ></canvas>
            <Tooltip tl=tl />
        </div>
    }
}
