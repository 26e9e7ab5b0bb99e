//! What is drawn over the worker's pixels: the byte and time axes with grid lines, the peak
//! marker, OOM marks and `external_annotations` phase bands.
//!
//! Text from the file (phase names) is drawn with `fillText`, never as HTML.

use web_sys::HtmlCanvasElement;

use super::canvas::context;
use crate::format;
use crate::timeline::service::TimelineInfo;
use crate::timeline::AxisMode;

/// What the overlay shows, in CSS pixels.
pub struct Scene<'a> {
    pub width: f64,
    pub height: f64,
    pub dpr: f64,
    pub x0: f64,
    pub x1: f64,
    pub mode: AxisMode,
    pub y_max: u64,
    pub info: &'a TimelineInfo,
    /// The pinned allocation's lifetime, marked along the bottom even when it is too small to
    /// be drawn individually.
    pub pinned: Option<(f64, f64)>,
    pub dark: bool,
}

/// Height of one lane of phases along the top; nested or overlapping phases take the next
/// lane, up to [`PHASE_LANES`].
const PHASE_LANE: f64 = 14.0;
const PHASE_LANES: usize = 3;
/// Phases narrower than this (CSS pixels) are drawn without their name.
const MIN_LABEL_WIDTH: f64 = 24.0;
/// Where the plot's own marks start below the phases.
const PHASE_BAND: f64 = PHASE_LANE;

/// A power of two giving about five byte ticks.
fn byte_step(y_max: u64) -> u64 {
    (y_max / 5).max(1).next_power_of_two()
}

/// A 1-2-5 step giving about `count` ticks over `span`.
fn nice_step(span: f64, count: f64) -> f64 {
    let raw = (span / count).max(f64::MIN_POSITIVE);
    let magnitude = 10f64.powf(raw.log10().floor());
    let base = raw / magnitude;
    let nice = if base <= 1.0 {
        1.0
    } else if base <= 2.0 {
        2.0
    } else if base <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

pub fn draw(canvas: &HtmlCanvasElement, scene: &Scene<'_>) {
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
    let Some(ctx) = context(canvas) else { return };
    let _ = ctx.set_transform(scene.dpr, 0.0, 0.0, scene.dpr, 0.0, 0.0);
    ctx.clear_rect(0.0, 0.0, w, h);
    let (text, grid) = if scene.dark {
        ("rgba(230,232,238,0.9)", "rgba(255,255,255,0.08)")
    } else {
        ("rgba(27,31,39,0.85)", "rgba(0,0,0,0.07)")
    };
    ctx.set_font("11px system-ui, sans-serif");
    ctx.set_line_width(1.0);
    let span = (scene.x1 - scene.x0).max(f64::MIN_POSITIVE);
    let x_px = |x: f64| (x - scene.x0) / span * w;
    let y_px = |bytes: u64| h - bytes as f64 / scene.y_max.max(1) as f64 * h;

    // Bytes: grid lines and labels on the left.
    let step = byte_step(scene.y_max);
    let mut tick = step;
    ctx.set_text_baseline("bottom");
    ctx.set_text_align("left");
    while tick < scene.y_max {
        let y = y_px(tick).round() + 0.5;
        ctx.set_stroke_style_str(grid);
        ctx.begin_path();
        ctx.move_to(0.0, y);
        ctx.line_to(w, y);
        ctx.stroke();
        ctx.set_fill_style_str(text);
        let _ = ctx.fill_text(&format::bytes(tick), 4.0, y - 2.0);
        tick += step;
    }

    // Events or time along the bottom.
    let xstep = nice_step(span, (w / 110.0).max(2.0));
    let origin = match scene.mode {
        AxisMode::Time => scene.info.time_range.map_or(0.0, |r| r.0),
        AxisMode::Events => 0.0,
    };
    let mut x = ((scene.x0 - origin) / xstep).ceil() * xstep + origin;
    ctx.set_text_align("center");
    ctx.set_text_baseline("bottom");
    while x < scene.x1 {
        let px = x_px(x).round() + 0.5;
        ctx.set_stroke_style_str(grid);
        ctx.begin_path();
        ctx.move_to(px, PHASE_BAND);
        ctx.line_to(px, h);
        ctx.stroke();
        let label = match scene.mode {
            AxisMode::Events => format::count((x - origin).max(0.0) as u64),
            AxisMode::Time => format!("+{}", format::duration_us((x - origin).max(0.0) as u64)),
        };
        ctx.set_fill_style_str(text);
        let _ = ctx.fill_text(&label, px, h - 2.0);
        x += xstep;
    }

    let x_of = |state: u32, time: Option<i64>| match scene.mode {
        AxisMode::Events => Some(state as f64),
        AxisMode::Time => time.map(|t| t as f64),
    };

    // Phases along the top.
    ctx.set_text_align("left");
    ctx.set_text_baseline("middle");
    let end_x = match scene.mode {
        AxisMode::Events => scene.info.events_range.1,
        AxisMode::Time => scene.info.time_range.map_or(0.0, |r| r.1),
    };
    // Each phase takes the first lane whose previous phase ended before it starts.
    let mut lane_ends: Vec<f64> = Vec::new();
    let mut lane_columns: Vec<i64> = Vec::new();
    for (i, phase) in scene.info.phases.iter().enumerate() {
        let (Some(a), b) = (
            x_of(phase.start_state, Some(phase.start_time_us)),
            phase
                .end_state
                .and_then(|e| x_of(e, phase.end_time_us))
                .unwrap_or(end_x),
        ) else {
            continue;
        };
        let lane = match lane_ends.iter().position(|&end| end <= a) {
            Some(lane) => lane,
            None if lane_ends.len() < PHASE_LANES => {
                lane_ends.push(f64::NEG_INFINITY);
                lane_ends.len() - 1
            }
            None => continue,
        };
        lane_ends[lane] = b;
        let (pa, pb) = (x_px(a).max(0.0), x_px(b).min(w));
        if pb <= 0.0 || pa >= w {
            continue;
        }
        // Thousands of phases can share a pixel when zoomed out: paint each pixel of a lane
        // once, and name only phases wide enough to read.
        let column = pa.floor() as i64;
        if pb - pa < 1.0 && lane_columns.get(lane).copied() == Some(column) {
            continue;
        }
        if lane_columns.len() <= lane {
            lane_columns.resize(lane + 1, i64::MIN);
        }
        lane_columns[lane] = column;
        let top = lane as f64 * PHASE_LANE;
        let fill = if i % 2 == 0 {
            "rgba(79,70,229,0.22)"
        } else {
            "rgba(13,148,136,0.22)"
        };
        ctx.set_fill_style_str(fill);
        ctx.fill_rect(pa, top, (pb - pa).max(1.0), PHASE_LANE - 1.0);
        if pb - pa >= MIN_LABEL_WIDTH {
            ctx.save();
            ctx.begin_path();
            ctx.rect(pa, top, pb - pa, PHASE_LANE);
            ctx.clip();
            ctx.set_fill_style_str(text);
            let _ = ctx.fill_text(&phase.name, pa + 3.0, top + PHASE_LANE / 2.0);
            ctx.restore();
        }
    }

    // OOM marks.
    for oom in &scene.info.ooms {
        let Some(x) = x_of(oom.state, oom.time_us) else {
            continue;
        };
        let px = x_px(x).round() + 0.5;
        if !(0.0..=w).contains(&px) {
            continue;
        }
        ctx.set_stroke_style_str("rgba(220,20,60,0.95)");
        ctx.set_line_width(1.5);
        ctx.begin_path();
        ctx.move_to(px, PHASE_BAND);
        ctx.line_to(px, h);
        ctx.stroke();
        ctx.set_fill_style_str("rgba(220,20,60,0.95)");
        ctx.set_text_baseline("top");
        let _ = ctx.fill_text(
            &format!("OOM: {} requested", format::bytes(oom.requested)),
            px + 4.0,
            PHASE_BAND + 2.0,
        );
    }

    // The pinned allocation's lifetime: a bar along the bottom and its two ends.
    if let Some((a, b)) = scene.pinned {
        let (pa, pb) = (x_px(a), x_px(b));
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
                    ctx.begin_path();
                    ctx.move_to(x.round() + 0.5, PHASE_BAND);
                    ctx.line_to(x.round() + 0.5, h);
                    ctx.stroke();
                }
            }
            let _ = ctx.set_line_dash(&js_sys::Array::new());
        }
    }

    // The peak.
    if let Some(x) = x_of(scene.info.peak_state, scene.info.peak_time_us) {
        let px = x_px(x + 0.5_f64.min(span / 2.0) * (scene.mode == AxisMode::Events) as u8 as f64);
        if (0.0..=w).contains(&px) {
            let py = y_px(scene.info.peak_bytes);
            ctx.set_fill_style_str(text);
            ctx.begin_path();
            ctx.move_to(px, py - 2.0);
            ctx.line_to(px - 5.0, py - 10.0);
            ctx.line_to(px + 5.0, py - 10.0);
            ctx.close_path();
            ctx.fill();
            ctx.set_text_align(if px > w - 120.0 { "right" } else { "left" });
            let label = format!("peak {}", format::bytes(scene.info.peak_bytes));
            let lx = if px > w - 120.0 { px - 8.0 } else { px + 8.0 };
            let below = py < PHASE_LANE * PHASE_LANES as f64 + 14.0;
            ctx.set_text_baseline(if below { "top" } else { "bottom" });
            let _ = ctx.fill_text(&label, lx, if below { py + 2.0 } else { py - 4.0 });
        }
    }
}
