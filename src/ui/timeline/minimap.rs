//! The minimap: the whole run's curve (highest total per column, and the reserved line) with
//! the visible window on it, which can be dragged, resized by its edges, or moved by clicking
//! elsewhere (what a press grabs and where a drag moves the window: `gestures.rs`).

use leptos::html::{Canvas, Div};
use leptos::prelude::*;
use web_sys::PointerEvent;

use super::canvas::context;
use super::gestures::{minimap_x, Grab};
use super::Timeline;

const HEIGHT: f64 = 56.0;

#[component]
pub fn Minimap(tl: Timeline) -> impl IntoView {
    let canvas = NodeRef::<Canvas>::new();
    let strip = NodeRef::<Div>::new();
    let grab = StoredValue::new(Grab::None);

    Effect::new(move |_| {
        let minimap = tl.minimap.get();
        let (w, _, dpr) = tl.size.get();
        let dark = tl.dark.get();
        let (Some(c), Some(m)) = (canvas.get(), minimap) else {
            return;
        };
        let (pw, ph) = ((w * dpr).round() as u32, (HEIGHT * dpr).round() as u32);
        c.set_width(pw);
        c.set_height(ph);
        let Some(ctx) = context(&c) else { return };
        let top = m
            .totals
            .iter()
            .chain(&m.line)
            .copied()
            .max()
            .unwrap_or(0)
            .max(1) as f64;
        let n = m.totals.len().max(1) as f64;
        let (fill, stroke) = if dark {
            ("rgba(139,140,247,0.55)", "rgba(235,235,235,0.8)")
        } else {
            ("rgba(79,70,229,0.45)", "rgba(30,30,30,0.7)")
        };
        ctx.clear_rect(0.0, 0.0, pw as f64, ph as f64);
        ctx.set_fill_style_str(fill);
        ctx.begin_path();
        ctx.move_to(0.0, ph as f64);
        for (i, &v) in m.totals.iter().enumerate() {
            let x = i as f64 / n * pw as f64;
            let y = ph as f64 - v as f64 / top * (ph as f64 - 2.0);
            ctx.line_to(x, y);
            ctx.line_to(x + pw as f64 / n, y);
        }
        ctx.line_to(pw as f64, ph as f64);
        ctx.close_path();
        ctx.fill();
        if m.line.iter().any(|&v| v > 0) {
            ctx.set_stroke_style_str(stroke);
            ctx.set_line_width(dpr);
            ctx.begin_path();
            for (i, &v) in m.line.iter().enumerate() {
                let x = i as f64 / n * pw as f64;
                let y = ph as f64 - v as f64 / top * (ph as f64 - 2.0);
                if i == 0 {
                    ctx.move_to(x, y);
                } else {
                    ctx.line_to(x, y);
                }
            }
            ctx.stroke();
        }
    });

    // Where the pointer is on the strip, in pixels from its inner left edge, and the strip's
    // inner width. From client coordinates: `offsetX` would be relative to whichever child
    // (the window, its edges) is under the pointer.
    let position = move |event: &PointerEvent| {
        let s = strip.get_untracked()?;
        let client_x = js_sys::Reflect::get(event, &"clientX".into())
            .ok()
            .and_then(|v| v.as_f64())?;
        let left = s.get_bounding_client_rect().left() + s.client_left() as f64;
        Some((client_x - left, (s.client_width() as f64).max(1.0)))
    };
    let on_down = move |event: PointerEvent| {
        let (Some((px, width)), Some(full)) = (position(&event), tl.full()) else {
            return;
        };
        let (g, centred) = Grab::press(px, width, full, tl.range.get_untracked());
        if let Some(range) = centred {
            tl.set_range(range);
        }
        grab.set_value(g);
        if let Some(s) = strip.get_untracked() {
            let _ = s.set_pointer_capture(event.pointer_id());
        }
    };
    let on_move = move |event: PointerEvent| {
        let (Some((px, width)), Some(full)) = (position(&event), tl.full()) else {
            return;
        };
        let x = minimap_x(px, width, full);
        let range = tl.range.get_untracked();
        if let Some(range) = grab.get_value().drag_to(x, range, tl.min_span()) {
            tl.set_range(range);
        }
    };
    let on_up = move |_: PointerEvent| grab.set_value(Grab::None);

    // Left edge and width of the window, in percent of the strip.
    let window_box = move || {
        let range = tl.range.get();
        match tl.full() {
            Some(full) if full.span() > 0.0 => (
                (range.x0 - full.x0) / full.span() * 100.0,
                range.span() / full.span() * 100.0,
            ),
            _ => (0.0, 100.0),
        }
    };

    view! {
        <div
            class="minimap"
            id="timeline-minimap"
            node_ref=strip
            style:height=format!("{HEIGHT}px")
            on:pointerdown=on_down
            on:pointermove=on_move
            on:pointerup=on_up
            title="The whole run: drag the window, its edges, or click to move it"
        >
            <canvas class="minimap-canvas" node_ref=canvas style:height=format!("{HEIGHT}px") aria-hidden="true"></canvas>
            <div class="minimap-window" id="timeline-minimap-window" style:left=move || format!("{:.4}%", window_box().0) style:width=move || format!("{:.4}%", window_box().1)>
                <span class="minimap-edge left"></span>
                <span class="minimap-edge right"></span>
            </div>
        </div>
    }
}
