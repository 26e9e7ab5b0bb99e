//! What is drawn over the worker's pixels, as `labels` lays it out: the byte and time grids
//! with their labels, the `external_annotations` scope bands, the peak marker, OOM marks and
//! the pinned allocation's lifetime.
//!
//! Text from the file (scope names) is drawn with `fillText`, never as HTML.

use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

use super::canvas::context;
use super::labels::{self, Layout, SCOPE_LANE, TEXT_HEIGHT};
use crate::analysis::axis::AxisMode;
use crate::timeline::service::TimelineInfo;

/// The overlay's font: labels are measured and drawn with it.
const FONT: &str = "11px system-ui, sans-serif";

/// What the overlay shows, in CSS pixels.
pub struct Scene<'a> {
    pub width: f64,
    pub height: f64,
    pub dpr: f64,
    pub x0: f64,
    pub x1: f64,
    pub mode: AxisMode,
    pub y_min: u64,
    pub y_max: u64,
    pub info: &'a TimelineInfo,
    /// The pinned allocation's lifetime, marked along the bottom even when it is too small to
    /// be drawn individually.
    pub pinned: Option<(f64, f64)>,
    pub dark: bool,
}

/// Lays the scene out with the canvas' own text measure.
pub fn lay_out(ctx: &CanvasRenderingContext2d, scene: &Scene<'_>) -> Layout {
    ctx.set_font(FONT);
    let measure = |text: &str| ctx.measure_text(text).map_or(0.0, |m| m.width());
    labels::lay_out(
        &labels::InView {
            width: scene.width,
            height: scene.height,
            x0: scene.x0,
            x1: scene.x1,
            mode: scene.mode,
            y_min: scene.y_min,
            y_max: scene.y_max,
            info: scene.info,
        },
        &measure,
    )
}

/// Draws the scene; returns its layout (for hovering scopes, and for tests).
pub fn draw(canvas: &HtmlCanvasElement, scene: &Scene<'_>) -> Option<Layout> {
    let (w, h) = (scene.width, scene.height);
    let (pw, ph) = (
        (w * scene.dpr).round() as u32,
        (h * scene.dpr).round() as u32,
    );
    if canvas.width() != pw {
        canvas.set_width(pw);
    }
    if canvas.height() != ph {
        canvas.set_height(ph);
    }
    let ctx = context(canvas)?;
    let _ = ctx.set_transform(scene.dpr, 0.0, 0.0, scene.dpr, 0.0, 0.0);
    ctx.clear_rect(0.0, 0.0, w, h);
    let layout = lay_out(&ctx, scene);
    let (text, grid) = if scene.dark {
        ("rgba(230,232,238,0.9)", "rgba(255,255,255,0.08)")
    } else {
        ("rgba(27,31,39,0.85)", "rgba(0,0,0,0.07)")
    };
    let band = layout.scope_band();
    ctx.set_line_width(1.0);
    ctx.set_stroke_style_str(grid);
    for &y in &layout.y_grid {
        line(&ctx, (0.0, y), (w, y));
    }
    for &x in &layout.x_grid {
        line(&ctx, (x, band), (x, h));
    }

    for p in &layout.scopes {
        let fill = if p.index % 2 == 0 {
            "rgba(79,70,229,0.22)"
        } else {
            "rgba(13,148,136,0.22)"
        };
        ctx.set_fill_style_str(fill);
        let top = p.lane as f64 * SCOPE_LANE;
        ctx.fill_rect(p.x0, top, (p.x1 - p.x0).max(1.0), SCOPE_LANE - 1.0);
    }

    let red = "rgba(220,20,60,0.95)";
    ctx.set_stroke_style_str(red);
    ctx.set_line_width(1.5);
    for &(_, x) in &layout.ooms {
        let x = x.round() + 0.5;
        line(&ctx, (x, band), (x, h));
    }

    // The pinned allocation's lifetime: a bar along the bottom and its two ends.
    if let Some((a, b)) = scene.pinned {
        let span = (scene.x1 - scene.x0).max(f64::MIN_POSITIVE);
        let (pa, pb) = ((a - scene.x0) / span * w, (b - scene.x0) / span * w);
        if pb >= 0.0 && pa <= w {
            let colour = "rgba(220,20,60,0.9)";
            ctx.set_fill_style_str(colour);
            let (left, right) = (pa.max(0.0), pb.min(w));
            ctx.fill_rect(left, h - 4.0, (right - left).max(2.0), 4.0);
            ctx.set_stroke_style_str(colour);
            ctx.set_line_width(1.0);
            let _ = ctx.set_line_dash(&js_sys::Array::of2(&4.0.into(), &3.0.into()));
            for x in [pa, pb] {
                if (0.0..=w).contains(&x) {
                    line(&ctx, (x.round() + 0.5, band), (x.round() + 0.5, h));
                }
            }
            let _ = ctx.set_line_dash(&js_sys::Array::new());
        }
    }

    if let Some((px, py)) = layout.peak {
        ctx.set_fill_style_str(text);
        ctx.begin_path();
        ctx.move_to(px, py - 2.0);
        ctx.line_to(px - 5.0, py - 10.0);
        ctx.line_to(px + 5.0, py - 10.0);
        ctx.close_path();
        ctx.fill();
    }

    ctx.set_text_align("left");
    ctx.set_text_baseline("middle");
    for label in &layout.labels {
        ctx.set_fill_style_str(match label.kind {
            labels::LabelKind::Oom => red,
            _ => text,
        });
        let _ = ctx.fill_text(&label.text, label.rect.x, label.rect.y + TEXT_HEIGHT / 2.0);
    }
    Some(layout)
}

fn line(ctx: &CanvasRenderingContext2d, (x0, y0): (f64, f64), (x1, y1): (f64, f64)) {
    ctx.begin_path();
    ctx.move_to(x0, y0);
    ctx.line_to(x1, y1);
    ctx.stroke();
}

/// The labels' boxes as JSON, for tests: `[{"kind", "text", "x", "y", "w", "h"}, …]`.
pub fn labels_json(layout: &Layout) -> String {
    let labels: Vec<serde_json::Value> = layout
        .labels
        .iter()
        .map(|l| {
            serde_json::json!({
                "kind": l.kind.as_str(),
                "text": l.text,
                "x": l.rect.x,
                "y": l.rect.y,
                "w": l.rect.w,
                "h": l.rect.h,
            })
        })
        .collect();
    serde_json::Value::Array(labels).to_string()
}
