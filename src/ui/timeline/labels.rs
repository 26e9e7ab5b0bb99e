//! Where the overlay's marks and labels go: byte and time ticks, `external_annotations` scopes
//! in lanes along the top, OOM marks and the peak, placed so that no two labels overlap and
//! none is cut by the plot's edges.
//!
//! Pure geometry in CSS pixels, unit-tested natively; `overlay` draws what this lays out, and
//! the plot asks it which scope is under the pointer. Text widths come from a `measure`
//! function (the canvas' `measureText` in the browser). Labels are placed by priority (OOM
//! marks, the peak, scopes, then ticks): each takes the first of its candidate positions that
//! is free, or is left out.

use crate::analysis::axis::AxisMode;
use crate::format;
use crate::model::State;
use crate::timeline::service::TimelineInfo;

/// Height of one lane of scopes along the top; nested or overlapping scopes take the next
/// lane, up to [`SCOPE_LANES`].
pub const SCOPE_LANE: f64 = 14.0;
pub const SCOPE_LANES: usize = 3;
/// Height of a line of label text.
pub const TEXT_HEIGHT: f64 = 13.0;
/// Scopes narrower than this are drawn without their name.
const MIN_LABEL_WIDTH: f64 = 24.0;
const ELLIPSIS: &str = "…";

/// A rectangle: left, top, width, height.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LabelRect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

impl LabelRect {
    pub fn overlaps(&self, other: &LabelRect) -> bool {
        self.x < other.x + other.w
            && other.x < self.x + self.w
            && self.y < other.y + other.h
            && other.y < self.y + self.h
    }

    fn inside(&self, w: f64, h: f64) -> bool {
        self.x >= 0.0 && self.y >= 0.0 && self.x + self.w <= w && self.y + self.h <= h
    }
}

/// What a label names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelKind {
    YTick,
    XTick,
    Scope,
    Oom,
    Peak,
}

impl LabelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LabelKind::YTick => "y-tick",
            LabelKind::XTick => "x-tick",
            LabelKind::Scope => "scope",
            LabelKind::Oom => "oom",
            LabelKind::Peak => "peak",
        }
    }
}

/// A placed label: its text and box (text drawn left-aligned at the box's left, vertically
/// centred).
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub kind: LabelKind,
    pub text: String,
    pub rect: LabelRect,
}

/// A scope band: where it is drawn, its lane, and its name when it fits.
#[derive(Clone, Debug, PartialEq)]
pub struct ScopeBand {
    /// Index in `TimelineInfo::scopes`.
    pub index: usize,
    pub lane: usize,
    pub x0: f64,
    pub x1: f64,
}

/// Everything the overlay draws.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Layout {
    /// y of each byte grid line.
    pub y_grid: Vec<f64>,
    /// x of each time or event grid line.
    pub x_grid: Vec<f64>,
    pub scopes: Vec<ScopeBand>,
    /// Each OOM mark in view: its index in `TimelineInfo::ooms`, and its x.
    pub ooms: Vec<(usize, f64)>,
    /// Where the peak is, when in view.
    pub peak: Option<(f64, f64)>,
    pub labels: Vec<Label>,
}

impl Layout {
    /// The scope band under a point, if any.
    pub fn scope_at(&self, x: f64, y: f64) -> Option<&ScopeBand> {
        self.scopes.iter().rev().find(|p| {
            let top = p.lane as f64 * SCOPE_LANE;
            y >= top && y < top + SCOPE_LANE && x >= p.x0 && x < p.x1.max(p.x0 + 1.0)
        })
    }

    /// The OOM mark within `reach` pixels of `x`, if any (the nearest).
    pub fn oom_at(&self, x: f64, reach: f64) -> Option<usize> {
        self.ooms
            .iter()
            .filter(|(_, ox)| (ox - x).abs() <= reach)
            .min_by(|a, b| (a.1 - x).abs().total_cmp(&(b.1 - x).abs()))
            .map(|(nth, _)| *nth)
    }

    /// Height of the scope lanes in use.
    pub fn scope_band(&self) -> f64 {
        self.scopes
            .iter()
            .map(|p| (p.lane + 1) as f64 * SCOPE_LANE)
            .fold(0.0, f64::max)
    }
}

/// What is in view, in CSS pixels and axis units.
pub struct InView<'a> {
    pub width: f64,
    pub height: f64,
    pub x0: f64,
    pub x1: f64,
    pub mode: AxisMode,
    pub y_min: u64,
    pub y_max: u64,
    pub info: &'a TimelineInfo,
}

/// A power of two giving about five byte ticks over `span` bytes.
fn byte_step(span: u64) -> u64 {
    (span / 5).max(1).next_power_of_two()
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

/// Labels placed so far.
struct Placer<'a> {
    w: f64,
    h: f64,
    placed: Vec<Label>,
    measure: &'a dyn Fn(&str) -> f64,
}

impl Placer<'_> {
    fn rect_at(&self, text: &str, x: f64, y: f64) -> LabelRect {
        LabelRect {
            x,
            y,
            w: (self.measure)(text).ceil(),
            h: TEXT_HEIGHT,
        }
    }

    fn free(&self, rect: &LabelRect, avoid: &[LabelRect]) -> bool {
        rect.inside(self.w, self.h)
            && !self.placed.iter().any(|l| l.rect.overlaps(rect))
            && !avoid.iter().any(|a| a.overlaps(rect))
    }

    /// Places `text` at the first free candidate (left, top corners); false when none is.
    fn place(
        &mut self,
        kind: LabelKind,
        text: &str,
        candidates: &[(f64, f64)],
        avoid: &[LabelRect],
    ) -> bool {
        for &(x, y) in candidates {
            let rect = self.rect_at(text, x, y);
            if self.free(&rect, avoid) {
                self.placed.push(Label {
                    kind,
                    text: text.to_string(),
                    rect,
                });
                return true;
            }
        }
        false
    }
}

/// What a scope's band says of its name when space is short: without the `#` marks profiler
/// scopes wrap names in (`## forward ##`) and, for `Class.method#Instance.method` scopes, the
/// part after the `#` (`AdamW.step`) — so a narrow band reads `forw…`, never `#…`.
fn band_name(name: &str) -> &str {
    let bare = name.trim_matches(|c: char| c == '#' || c.is_whitespace());
    let last = bare.rsplit('#').next().unwrap_or(bare).trim();
    if last.is_empty() {
        bare
    } else {
        last
    }
}

/// `text` cut with an ellipsis to fit `width`, or `None` when not even one letter fits.
fn fitted(text: &str, width: f64, measure: &dyn Fn(&str) -> f64) -> Option<String> {
    if measure(text) <= width {
        return Some(text.to_string());
    }
    let chars: Vec<char> = text.chars().collect();
    let (mut lo, mut hi) = (0usize, chars.len());
    // The longest prefix that fits with the ellipsis.
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let candidate: String = chars[..mid].iter().collect::<String>() + ELLIPSIS;
        if measure(&candidate) <= width {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    (lo > 0).then(|| chars[..lo].iter().collect::<String>() + ELLIPSIS)
}

/// Lays the overlay of `scene` out.
pub fn lay_out(scene: &InView<'_>, measure: &dyn Fn(&str) -> f64) -> Layout {
    let (w, h) = (scene.width, scene.height);
    let info = scene.info;
    let span = (scene.x1 - scene.x0).max(f64::MIN_POSITIVE);
    let x_px = |x: f64| (x - scene.x0) / span * w;
    let y_span = scene.y_max.saturating_sub(scene.y_min).max(1);
    let y_px = |bytes: u64| h - (bytes as f64 - scene.y_min as f64) / y_span as f64 * h;
    let x_of = |state: State, time: Option<i64>| match scene.mode {
        AxisMode::Events => Some(f64::from(state.get())),
        AxisMode::Time => time.map(|t| t as f64),
    };
    let mut out = Layout::default();
    let mut placer = Placer {
        w,
        h,
        placed: Vec::new(),
        measure,
    };

    // Scopes: each takes the first lane whose previous scope ended before it starts. Thousands
    // can share a pixel when zoomed out: each pixel of a lane is kept once.
    let end_x = match scene.mode {
        AxisMode::Events => info.events_range.1,
        AxisMode::Time => info.time_range.map_or(0.0, |r| r.1),
    };
    let mut lane_ends: Vec<f64> = Vec::new();
    let mut lane_columns: Vec<i64> = Vec::new();
    for (index, scope) in info.scopes.iter().enumerate() {
        let Some(a) = x_of(scope.start_state, Some(scope.start_time_us)) else {
            continue;
        };
        let b = scope
            .end_state
            .and_then(|e| x_of(e, scope.end_time_us))
            .unwrap_or(end_x);
        let lane = match lane_ends.iter().position(|&end| end <= a) {
            Some(lane) => lane,
            None if lane_ends.len() < SCOPE_LANES => {
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
        let column = pa.floor() as i64;
        if pb - pa < 1.0 && lane_columns.get(lane).copied() == Some(column) {
            continue;
        }
        if lane_columns.len() <= lane {
            lane_columns.resize(lane + 1, i64::MIN);
        }
        lane_columns[lane] = column;
        out.scopes.push(ScopeBand {
            index,
            lane,
            x0: pa,
            x1: pb,
        });
    }
    let band = out.scope_band();

    // OOM marks first: they matter most.
    for (nth, oom) in info.ooms.iter().enumerate() {
        let Some(x) = x_of(oom.state, oom.time_us) else {
            continue;
        };
        let px = x_px(x);
        if !(0.0..=w).contains(&px) {
            continue;
        }
        out.ooms.push((nth, px));
        let size = format::bytes(oom.requested);
        // The whole text where it fits, else shorter ones: beside the mark, then anywhere on
        // its line, then a line lower.
        for text in [
            format!("OOM: {size} requested"),
            format!("OOM {size}"),
            "OOM".into(),
        ] {
            let tw = measure(&text).ceil();
            let clamped = (px - tw / 2.0).clamp(0.0, (w - tw).max(0.0));
            let (y, lower) = (band + 2.0, band + 4.0 + TEXT_HEIGHT);
            let candidates = [
                (px + 4.0, y),
                (px - 4.0 - tw, y),
                (clamped, y),
                (px + 4.0, lower),
                (px - 4.0 - tw, lower),
                (clamped, lower),
            ];
            if placer.place(LabelKind::Oom, &text, &candidates, &[]) {
                break;
            }
        }
    }

    // The peak, beside its marker, on whichever side is free.
    if let Some(x) = x_of(info.peak_state, info.peak_time_us) {
        let half_state = if scene.mode == AxisMode::Events {
            0.5_f64.min(span / 2.0)
        } else {
            0.0
        };
        let px = x_px(x + half_state);
        let py = y_px(info.peak_bytes);
        if (0.0..=w).contains(&px) && py >= 0.0 && py <= h {
            out.peak = Some((px, py));
            let text = format!("peak {}", format::bytes(info.peak_bytes));
            let tw = measure(&text).ceil();
            let above = py - 4.0 - TEXT_HEIGHT;
            let below = py + 2.0;
            let scopes: Vec<LabelRect> = out
                .scopes
                .iter()
                .map(|p| LabelRect {
                    x: p.x0,
                    y: p.lane as f64 * SCOPE_LANE,
                    w: (p.x1 - p.x0).max(1.0),
                    h: SCOPE_LANE,
                })
                .collect();
            // Beside the marker, above or below it; near the top, a line or two lower.
            let mut candidates = vec![];
            for y in [above, below, below + TEXT_HEIGHT, below + 2.0 * TEXT_HEIGHT] {
                candidates.push((px + 8.0, y));
                candidates.push((px - 8.0 - tw, y));
            }
            placer.place(LabelKind::Peak, &text, &candidates, &scopes);
        }
    }

    // Scope names inside their bands, cut with an ellipsis (the full name shows on hover).
    for p in &out.scopes {
        if p.x1 - p.x0 < MIN_LABEL_WIDTH {
            continue;
        }
        let name = band_name(&info.scopes[p.index].name);
        if let Some(text) = fitted(name, p.x1 - p.x0 - 6.0, measure) {
            let top = p.lane as f64 * SCOPE_LANE + (SCOPE_LANE - TEXT_HEIGHT) / 2.0;
            placer.place(LabelKind::Scope, &text, &[(p.x0 + 3.0, top.max(0.0))], &[]);
        }
    }

    // Bytes: grid lines and labels on the left, above their line, below the scopes.
    let step = byte_step(y_span);
    let mut tick = scene.y_min.div_ceil(step).max(1) * step;
    while tick < scene.y_max {
        let y = y_px(tick).round() + 0.5;
        out.y_grid.push(y);
        let text = format::bytes_tick(tick, step);
        let top = y - 2.0 - TEXT_HEIGHT;
        if top >= band {
            placer.place(LabelKind::YTick, &text, &[(4.0, top)], &[]);
        }
        tick += step;
    }

    // Events or time along the bottom, kept whole inside the plot.
    let xstep = nice_step(span, (w / 110.0).max(2.0));
    let origin = match scene.mode {
        AxisMode::Time => info.time_range.map_or(0.0, |r| r.0),
        AxisMode::Events => 0.0,
    };
    let mut x = ((scene.x0 - origin) / xstep).ceil() * xstep + origin;
    while x < scene.x1 {
        let px = x_px(x).round() + 0.5;
        out.x_grid.push(px);
        let text = match scene.mode {
            AxisMode::Events => format::count((x - origin).max(0.0) as u64),
            AxisMode::Time => format!("+{}", format::duration_us((x - origin).max(0.0) as u64)),
        };
        let tw = measure(&text).ceil();
        let top = h - 2.0 - TEXT_HEIGHT;
        let left = (px - tw / 2.0).clamp(0.0, (w - tw).max(0.0));
        placer.place(LabelKind::XTick, &text, &[(left, top)], &[]);
        x += xstep;
    }

    out.labels = placer.placed;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::service::{OomMark, ScopeMark};
    use crate::timeline::TimelineKind;

    /// 7 pixels per character, like an 11 px UI font.
    fn measure(text: &str) -> f64 {
        text.chars().count() as f64 * 7.0
    }

    fn info() -> TimelineInfo {
        TimelineInfo {
            device: 0,
            kind: TimelineKind::Allocations,
            states: 1001,
            has_time: false,
            events_range: (0.0, 1001.0),
            time_range: None,
            elements: 10,
            detail: 10,
            default_detail: 10,
            peak_state: State::new(500),
            peak_bytes: 50 << 30,
            peak_time_us: None,
            scopes: vec![],
            ooms: vec![],
            pools: vec![],
            layout_ms: 0.0,
        }
    }

    fn scene(info: &TimelineInfo, width: f64, height: f64) -> InView<'_> {
        InView {
            width,
            height,
            x0: 0.0,
            x1: 1001.0,
            mode: AxisMode::Events,
            y_min: 0,
            y_max: 55 << 30,
            info,
        }
    }

    fn assert_no_overlaps(layout: &Layout, w: f64, h: f64) {
        for (i, a) in layout.labels.iter().enumerate() {
            assert!(a.rect.inside(w, h), "{a:?} is cut by the edges");
            for b in &layout.labels[i + 1..] {
                assert!(!a.rect.overlaps(&b.rect), "{a:?} overlaps {b:?}");
            }
        }
    }

    #[test]
    fn an_oom_next_to_the_peak_takes_the_other_side_and_nothing_overlaps() {
        let mut info = info();
        // The OOM right at the peak: "OOM: …" used to print over "peak …".
        info.ooms = vec![OomMark {
            state: State::new(500),
            time_us: None,
            requested: 2 << 30,
            device_free: 0,
        }];
        info.peak_bytes = 54 << 30;
        info.scopes = (0..40)
            .map(|i| ScopeMark {
                phase: None,
                name: format!("Optimizer.step#AdamW.step {i}"),
                start_state: State::new(i * 25),
                end_state: Some(State::new(i * 25 + 20)),
                start_time_us: 0,
                end_time_us: None,
            })
            .collect();
        for (w, h) in [(1024.0, 300.0), (1900.0, 700.0), (300.0, 120.0)] {
            let layout = lay_out(&scene(&info, w, h), &measure);
            assert_no_overlaps(&layout, w, h);
            assert!(
                layout.labels.iter().any(|l| l.kind == LabelKind::Oom),
                "the OOM keeps its label at {w}×{h}"
            );
        }
        let layout = lay_out(&scene(&info, 1024.0, 300.0), &measure);
        assert!(layout.labels.iter().any(|l| l.kind == LabelKind::Peak));
        // The OOM mark can be hovered a few pixels either side.
        let x = layout.ooms[0].1;
        assert_eq!(layout.oom_at(x + 3.0, 5.0), Some(0));
        assert_eq!(layout.oom_at(x + 30.0, 5.0), None);
    }

    #[test]
    fn tick_labels_stay_whole_below_the_scopes() {
        let mut info = info();
        info.scopes = vec![ScopeMark {
            phase: None,
            name: "forward".into(),
            start_state: State::BEFORE_TRACE,
            end_state: Some(State::new(1001)),
            start_time_us: 0,
            end_time_us: None,
        }];
        let layout = lay_out(&scene(&info, 800.0, 200.0), &measure);
        assert_no_overlaps(&layout, 800.0, 200.0);
        let band = layout.scope_band();
        assert_eq!(band, SCOPE_LANE);
        for label in layout.labels.iter().filter(|l| l.kind == LabelKind::YTick) {
            assert!(label.rect.y >= band, "{label:?} under the scopes");
        }
        // The first x tick (0) is whole at the left edge, not centred off the plot.
        let first = layout
            .labels
            .iter()
            .find(|l| l.kind == LabelKind::XTick)
            .unwrap();
        assert_eq!(first.text, "0");
        assert_eq!(first.rect.x, 0.0);
    }

    #[test]
    fn bands_name_scopes_without_their_marks() {
        assert_eq!(band_name("## forward ##"), "forward");
        assert_eq!(band_name("Optimizer.step#AdamW.step"), "AdamW.step");
        assert_eq!(band_name("## Optimizer.step#SGD.step ##"), "SGD.step");
        assert_eq!(band_name("backward"), "backward");
        assert_eq!(band_name("###"), "");
        let measure = |s: &str| s.chars().count() as f64 * 7.0;
        assert_eq!(
            fitted(band_name("## forward ##"), 35.0, &measure).as_deref(),
            Some("forw…")
        );
    }

    #[test]
    fn long_scope_names_end_with_an_ellipsis_and_show_whole_on_hover() {
        let mut info = info();
        info.scopes = vec![ScopeMark {
            phase: None,
            name: "Optimizer.step#AdamW.step".into(),
            start_state: State::new(100),
            end_state: Some(State::new(200)),
            start_time_us: 0,
            end_time_us: None,
        }];
        // 100 states of 1001 over 1001 px: a 100 px band.
        let layout = lay_out(&scene(&info, 1001.0, 200.0), &measure);
        let scope = layout
            .labels
            .iter()
            .find(|l| l.kind == LabelKind::Scope)
            .unwrap();
        assert!(scope.text.starts_with("AdamW"), "{}", scope.text);
        assert!(scope.rect.w <= 100.0);
        let band = layout
            .scope_at(150.0, 5.0)
            .expect("the band under the pointer");
        assert_eq!(info.scopes[band.index].name, "Optimizer.step#AdamW.step");
        assert!(layout.scope_at(150.0, 40.0).is_none());
    }

    #[test]
    fn zoomed_byte_ticks_start_at_the_bottom_edge_and_read_apart() {
        let info = info();
        let mut s = scene(&info, 800.0, 300.0);
        s.y_min = 51 << 30;
        s.y_max = (51 << 30) + (100 << 20);
        let layout = lay_out(&s, &measure);
        let ticks: Vec<&str> = layout
            .labels
            .iter()
            .filter(|l| l.kind == LabelKind::YTick)
            .map(|l| l.text.as_str())
            .collect();
        assert!(ticks.len() >= 3, "{ticks:?}");
        let mut unique = ticks.clone();
        unique.dedup();
        assert_eq!(unique, ticks, "neighbouring ticks read differently");
        assert!(ticks[0].starts_with("51."), "{ticks:?}");
    }

    #[test]
    fn text_is_fitted_with_an_ellipsis() {
        assert_eq!(
            fitted("forward", 100.0, &measure).as_deref(),
            Some("forward")
        );
        assert_eq!(fitted("forward", 35.0, &measure).as_deref(), Some("forw…"));
        assert_eq!(fitted("forward", 5.0, &measure), None);
    }
}
