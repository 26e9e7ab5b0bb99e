//! Times natively each step between a file's bytes and the timeline's first frame, as a
//! worker runs them: the pickle pushed in 4 MiB parts, the end of decoding with the analysis,
//! the categories and the overview (the news of the decoded file, as JSON), the first view
//! prepared (the layout and the band's categories), then the page's requests for the layout and
//! the first frame (JSON encoding included, as the worker posts every answer as JSON):
//! `cargo run --release -p memsight-core --example load_profile -- FILE [RUNS]`.
//! Prints the median of `RUNS` (default 5) for every step.

use std::time::Instant;

use memsight_core::protocol::{FileEvent, FromWorker, Request};
use memsight_core::session::Session;
use memsight_core::timeline::service::{FrameRequest, TimelineRequest};
use memsight_core::timeline::TimelineKind;

const PART: usize = 4 << 20;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: load_profile FILE [RUNS]");
    let runs: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5);
    let bytes = std::fs::read(path).expect("a readable file");
    let mut steps: Vec<(&'static str, Vec<f64>)> = Vec::new();
    for _ in 0..runs {
        for (i, (name, ms)) in run(&bytes).into_iter().enumerate() {
            if steps.len() <= i {
                steps.push((name, Vec::new()));
            }
            steps[i].1.push(ms);
        }
    }
    println!(
        "{} ({:.1} MB), medians of {runs} runs:",
        path,
        bytes.len() as f64 / 1e6
    );
    let mut total = 0.0;
    for (name, mut times) in steps {
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        total += median;
        println!("  {name:<28} {median:>9.1} ms");
    }
    println!("  {:<28} {total:>9.1} ms", "total");
}

/// One load, step by step: (step, milliseconds).
fn run(bytes: &[u8]) -> Vec<(&'static str, f64)> {
    let epoch = Instant::now();
    let now = move || epoch.elapsed().as_secs_f64() * 1e3;
    let mut steps = Vec::new();
    let mut lap = {
        let mut last = now();
        move |steps: &mut Vec<(&'static str, f64)>, name| {
            let t = now();
            steps.push((name, t - last));
            last = t;
        }
    };
    let mut session = Session::new();
    let mut ignore = |_: FileEvent| {};
    let mut feeding = session
        .start_feeding(bytes.len() as u64, &now, &mut ignore)
        .expect("a first load");
    for part in bytes.chunks(PART) {
        feeding
            .push(part.to_vec(), &mut ignore)
            .expect("a snapshot");
    }
    lap(&mut steps, "decode (parts pushed)");
    let event = session.finish_feeding(feeding, &now);
    let FileEvent::Loaded(summary) = &event else {
        panic!("not a snapshot: {event:?}")
    };
    let device = summary.default_device;
    let _ = serde_json::to_string(&FromWorker::Event(event.clone()));
    lap(&mut steps, "finish, analyse, overview");
    session.prepare_first_view(&now);
    lap(&mut steps, "first view prepared");
    let ask = |session: &mut Session, request: Request| {
        let reply = session.answer(request, &now).expect("an answer");
        serde_json::to_string(&reply.answer).expect("JSON")
    };
    let layout = TimelineRequest::Layout {
        device,
        kind: TimelineKind::Allocations,
        detail: None,
    };
    ask(&mut session, Request::Timeline(layout));
    lap(&mut steps, "layout (+ JSON)");
    let frame = TimelineRequest::Frame(FrameRequest::first(device, 1200, 400));
    ask(&mut session, Request::Timeline(frame));
    lap(&mut steps, "first frame (+ JSON)");
    steps
}
