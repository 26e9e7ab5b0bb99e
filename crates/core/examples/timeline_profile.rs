//! Times the timeline's layout, frames and hit tests natively on one snapshot file:
//! `cargo run --release -p memsight-core --example timeline_profile -- FILE [WIDTH HEIGHT
//! [allocation|role|component]]` (frames zooming towards the peak, a box zoom's frame, hit
//! tests; coloured by allocation unless a dimension is named).

use std::time::Instant;

use memsight_core::analysis::axis::AxisMode;
use memsight_core::analysis::categories::categorised::Categorised;
use memsight_core::analysis::Analysed;
use memsight_core::service::{Context, Service};
use memsight_core::timeline::colouring::ColourBy;
use memsight_core::timeline::service::{
    FrameRequest, HitRequest, TimelineAnswer, TimelineRequest, TimelineService,
};
use memsight_core::timeline::{TimelineKind, Viewport};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .expect("usage: timeline_profile FILE [WIDTH HEIGHT [allocation|role|component]]");
    let width: u32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1600);
    let height: u32 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(720);
    let colour_by: ColourBy = args
        .get(4)
        .map(|a| serde_json::from_value(serde_json::Value::String(a.clone())).expect("a colouring"))
        .unwrap_or_default();
    let bytes = std::fs::read(path).expect("readable file");
    let start = Instant::now();
    let analysed = Analysed::new(memsight_core::decode::decode_bytes(&bytes).expect("a snapshot"));
    println!(
        "decode+analyse {:>8.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    let device = analysed.snapshot.default_device().unwrap_or(0);
    let epoch = Instant::now();
    let now = move || epoch.elapsed().as_secs_f64() * 1e3;
    let categorised = Categorised::new(&analysed, Default::default(), &now).expect("no rules");
    let cx = Context {
        analysed: &analysed,
        categorised: &categorised,
        now: &now,
    };
    let mut timelines = TimelineService::default();
    let start = Instant::now();
    let reply = timelines
        .answer(
            &cx,
            TimelineRequest::Layout {
                device,
                kind: TimelineKind::Allocations,
                detail: None,
            },
        )
        .unwrap();
    let TimelineAnswer::Layout(info) = reply.answer else {
        panic!("no timeline")
    };
    println!(
        "layout         {:>8.1} ms  ({} elements, {} drawn)",
        start.elapsed().as_secs_f64() * 1e3,
        info.elements,
        info.detail
    );
    let (x0, x1) = info.events_range;
    // A frame of the allocations timeline over events `a..b`, bytes fitted or fixed.
    let frame = |a: f64, b: f64, y_range: Option<(u64, u64)>| {
        TimelineRequest::Frame(FrameRequest {
            device,
            kind: TimelineKind::Allocations,
            view: Viewport {
                mode: AxisMode::Events,
                x0: a,
                x1: b,
                width,
                height,
            },
            whole: false,
            y_range,
            dark: false,
            line_width: 2,
            pinned: None,
            show_matches: false,
            show_line: true,
            colour_by,
            highlight: None,
        })
    };
    let mut frame_ms = Vec::new();
    let mut y_max = 1;
    for i in 0..20 {
        // Zoom in towards the peak, frame by frame.
        let f = 0.8f64.powi(i);
        let centre = info.peak_state.get() as f64;
        let half = (x1 - x0) * f / 2.0;
        let request = frame((centre - half).max(x0), (centre + half).min(x1), None);
        let start = Instant::now();
        let reply = timelines.answer(&cx, request).unwrap();
        frame_ms.push(start.elapsed().as_secs_f64() * 1e3);
        if let TimelineAnswer::Frame(f) = reply.answer {
            if i == 0 {
                y_max = f.y_max;
            }
        }
    }
    frame_ms.sort_by(f64::total_cmp);
    println!(
        "frame median   {:>8.1} ms  (max {:.1}, {width}×{height})",
        frame_ms[10], frame_ms[19]
    );
    // A box zoom from the whole run: the middle 30% of it, the lower half of the bytes (every
    // pixel column a different moment, the most a frame can cost).
    let mut box_ms = Vec::new();
    for _ in 0..9 {
        let request = frame(
            x0 + (x1 - x0) * 0.3,
            x0 + (x1 - x0) * 0.6,
            Some((y_max / 10, y_max * 6 / 10)),
        );
        let start = Instant::now();
        timelines.answer(&cx, request).unwrap();
        box_ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    box_ms.sort_by(f64::total_cmp);
    println!(
        "box zoom       {:>8.1} ms  (max {:.1})",
        box_ms[4], box_ms[8]
    );
    let mut hit_ms = Vec::new();
    for x in (0..width).step_by((width / 50).max(1) as usize) {
        let request = HitRequest {
            device,
            kind: TimelineKind::Allocations,
            view: Viewport {
                mode: AxisMode::Events,
                x0,
                x1,
                width,
                height,
            },
            y_min: 0,
            y_max,
            x,
            y: height - 3,
        };
        let start = Instant::now();
        timelines
            .answer(&cx, TimelineRequest::Hit(request))
            .unwrap();
        hit_ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    hit_ms.sort_by(f64::total_cmp);
    println!(
        "hit median     {:>8.3} ms  (max {:.3})",
        hit_ms[hit_ms.len() / 2],
        hit_ms[hit_ms.len() - 1]
    );
}
