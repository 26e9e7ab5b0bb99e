//! Times the timeline's layout, frames and hit tests natively on one snapshot file:
//! `cargo run --release -p memsight-core --example timeline_profile -- FILE [WIDTH HEIGHT]`.

use std::time::Instant;

use memsight_core::analysis::Analysed;
use memsight_core::protocol::{FrameRequest, HitRequest, Request, Response};
use memsight_core::timeline::{AxisMode, Kind, Viewport};
use memsight_core::timeline::service::Timelines;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .expect("usage: timeline_profile FILE [WIDTH HEIGHT]");
    let width: u32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1600);
    let height: u32 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(720);
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
    let mut timelines = Timelines::default();
    let start = Instant::now();
    let reply = timelines
        .handle(
            &analysed,
            &Request::Timeline {
                device,
                kind: Kind::Allocations,
                detail: None,
            },
            &now,
        )
        .unwrap();
    let Response::Timeline(info) = reply.response else {
        panic!("no timeline")
    };
    println!(
        "layout         {:>8.1} ms  ({} elements, {} drawn)",
        start.elapsed().as_secs_f64() * 1e3,
        info.elements,
        info.detail
    );
    let (x0, x1) = info.events_range;
    let mut frame_ms = Vec::new();
    let mut y_max = 1;
    for i in 0..20 {
        // Zoom in towards the peak, frame by frame.
        let f = 0.8f64.powi(i);
        let centre = info.peak_state as f64;
        let half = (x1 - x0) * f / 2.0;
        let request = FrameRequest {
            device,
            kind: Kind::Allocations,
            seq: i as u32,
            view: Viewport {
                mode: AxisMode::Events,
                x0: (centre - half).max(x0),
                x1: (centre + half).min(x1),
                width,
                height,
            },
            whole: false,
            dark: false,
            line_width: 2,
            pinned: None,
            show_matches: false,
            show_line: true,
        };
        let start = Instant::now();
        let reply = timelines
            .handle(&analysed, &Request::Frame(request), &now)
            .unwrap();
        frame_ms.push(start.elapsed().as_secs_f64() * 1e3);
        if let Response::Frame(f) = reply.response {
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
    let mut hit_ms = Vec::new();
    for x in (0..width).step_by((width / 50).max(1) as usize) {
        let request = HitRequest {
            device,
            kind: Kind::Allocations,
            seq: 0,
            view: Viewport {
                mode: AxisMode::Events,
                x0,
                x1,
                width,
                height,
            },
            y_max,
            x,
            y: height - 3,
        };
        let start = Instant::now();
        timelines
            .handle(&analysed, &Request::Hit(request), &now)
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
