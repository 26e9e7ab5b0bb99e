//! Measures natively the heap a load holds after each step between a file's bytes and the
//! timeline's first frame, as a worker runs them (the pickle pushed in 4 MiB parts, the end of
//! decoding with the analysis, the first view prepared, the first frame), and the most it held
//! at once during the step: a WebAssembly memory never shrinks, so the highest of these is the
//! least memory the worker's tab keeps for the file.
//! `cargo run --release -p memsight-core --example memory_profile -- FILE`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use memsight_core::protocol::{FileEvent, Request};
use memsight_core::session::Session;
use memsight_core::timeline::service::{FrameRequest, TimelineRequest};
use memsight_core::timeline::TimelineKind;

const PART: usize = 4 << 20;

/// The system allocator, counting the bytes in use and the most in use since the last reset.
struct Counting;

static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            grew(layout.size());
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        unsafe { System.dealloc(pointer, layout) };
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            // A move holds both blocks for a moment; the count only sees the new size.
            if new_size > layout.size() {
                grew(new_size - layout.size());
            } else {
                IN_USE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        moved
    }
}

fn grew(bytes: usize) {
    let now = IN_USE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn main() {
    let path = std::env::args().nth(1).expect("usage: memory_profile FILE");
    let bytes = std::fs::read(path.as_str()).expect("a readable file");
    // The file's bytes are the page's, not the worker's: measured without them.
    let file_bytes = IN_USE.load(Ordering::Relaxed);
    let base = file_bytes;
    PEAK.store(base, Ordering::Relaxed);
    let now = || 0.0;
    let mut entries = 0u64;
    let mut rows: Vec<(&str, usize, usize)> = Vec::new();
    let step = |name, rows: &mut Vec<(&str, usize, usize)>| {
        let held = IN_USE.load(Ordering::Relaxed).saturating_sub(base);
        let peak = PEAK.swap(IN_USE.load(Ordering::Relaxed), Ordering::Relaxed);
        rows.push((name, held, peak.saturating_sub(base)));
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
    step("decode (parts pushed)", &mut rows);
    let event = session.finish_feeding(feeding, &now);
    let FileEvent::Loaded(summary) = &event else {
        panic!("not a snapshot: {event:?}")
    };
    let device = summary.default_device;
    if let Some(analysed) = session.analysed() {
        entries = analysed
            .snapshot
            .devices
            .iter()
            .map(|d| d.trace.len() as u64)
            .sum();
    }
    step("finish, analyse, overview", &mut rows);
    session.prepare_first_view(&now);
    step("first view prepared", &mut rows);
    let layout = TimelineRequest::Layout {
        device,
        kind: TimelineKind::Allocations,
        detail: None,
    };
    let _ = session.answer(Request::Timeline(layout), &now);
    step("layout", &mut rows);
    let frame = TimelineRequest::Frame(FrameRequest::first(device, 1200, 400));
    let _ = session.answer(Request::Timeline(frame), &now);
    step("first frame", &mut rows);

    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    let per_entry = |b: usize| b as f64 / entries.max(1) as f64;
    println!(
        "{path} ({:.1} MB, {entries} trace entries): heap held after each step and its peak during it",
        bytes.len() as f64 / 1e6
    );
    println!(
        "  {:<28} {:>10} {:>8} {:>10} {:>8}",
        "step", "held MiB", "B/entry", "peak MiB", "B/entry"
    );
    for (name, held, peak) in rows {
        println!(
            "  {name:<28} {:>10.1} {:>8.1} {:>10.1} {:>8.1}",
            mib(held),
            per_entry(held),
            mib(peak),
            per_entry(peak)
        );
    }
}
