//! Times natively each step between a file's bytes and the timeline's first frame, as a
//! worker runs them: the pickle pushed in 4 MiB parts, the end of decoding with the analysis,
//! the categories and the overview (the news of the decoded file, as JSON), the first view
//! prepared (the layout and the band's categories), then the page's requests for the layout and
//! the first frame (JSON encoding included, as the worker posts every answer as JSON):
//! `cargo run --release -p memsight-core --example load_profile -- FILE [RUNS]`.
//! Prints the median of `RUNS` (default 5) for every step, and the heap the step left held and
//! the most it held during the step (the first run's): a WebAssembly memory never shrinks, so
//! the highest of these is the least memory the worker's tab keeps for the file.

use std::time::Instant;

use memsight_core::protocol::{FileEvent, FromWorker, Request};
use memsight_core::session::Session;
use memsight_core::timeline::service::{FrameRequest, TimelineRequest};
use memsight_core::timeline::TimelineKind;

#[path = "common/counting.rs"]
mod counting;

const PART: usize = 4 << 20;

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

/// One step of a load: its name, milliseconds, and the heap it left held and held at most
/// (bytes, not counting what was held before the load).
struct Step {
    name: &'static str,
    ms: f64,
    held: usize,
    peak: usize,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: load_profile FILE [RUNS]");
    let runs: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5);
    let bytes = std::fs::read(path).expect("a readable file");
    let mut steps: Vec<(Step, Vec<f64>)> = Vec::new();
    for _ in 0..runs {
        for (i, step) in run(&bytes).into_iter().enumerate() {
            if steps.len() <= i {
                steps.push((step, Vec::new()));
            } else {
                steps[i].1.push(step.ms);
            }
        }
    }
    println!(
        "{} ({:.1} MB), medians of {runs} runs; heap of the first:",
        path,
        bytes.len() as f64 / 1e6
    );
    println!(
        "  {:<28} {:>9} {:>11} {:>11}",
        "step", "ms", "held MiB", "peak MiB"
    );
    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    let mut total = 0.0;
    for (first, mut times) in steps {
        times.push(first.ms);
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        total += median;
        println!(
            "  {:<28} {median:>9.1} {:>11.1} {:>11.1}",
            first.name,
            mib(first.held),
            mib(first.peak)
        );
    }
    println!("  {:<28} {total:>9.1}", "total");
}

/// One load, step by step: (step, milliseconds).
fn run(bytes: &[u8]) -> Vec<Step> {
    let epoch = Instant::now();
    let now = move || epoch.elapsed().as_secs_f64() * 1e3;
    let mut steps = Vec::new();
    // What was held before the load (the file's bytes are the page's, not the worker's).
    let base = counting::in_use();
    counting::take_peak();
    let mut lap = {
        let mut last = now();
        move |steps: &mut Vec<Step>, name| {
            let t = now();
            let held = counting::in_use();
            let peak = counting::take_peak();
            steps.push(Step {
                name,
                ms: t - last,
                held: held.saturating_sub(base),
                peak: peak.saturating_sub(base),
            });
            last = now();
        }
    };
    let mut session = Session::new();
    let mut ignore = |_: FileEvent| {};
    let mut feeding = session
        .start_feeding(bytes.len() as u64, &now, &mut ignore)
        .expect("a first load");
    for part in bytes.chunks(PART) {
        feeding
            .push(part.to_vec(), &now, &mut ignore)
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
