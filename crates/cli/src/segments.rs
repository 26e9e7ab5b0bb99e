//! `memsight segments FILE… [--device N] [--at peak|end|EVENT] [--sort ORDER] [--json]`: the caching
//! allocator's segments at one moment as the page's allocator state shows them — the totals
//! (reserved, allocated, requested, rounding waste, waiting to be freed, cached free, the
//! largest free block, fragmentation) and every segment with its own — from the core's
//! reconstructed allocator history.

use std::path::Path;
use std::process::ExitCode;

use memsight_core::analysis::allocator::SegmentOrder;
use memsight_core::analysis::categories::rules::Rules;
use memsight_core::format;
use memsight_core::protocol::Answer;
use memsight_core::service::{Service, ViewError};
use memsight_core::table::service::{
    AllocatorRequest, TableAnswer, TableRequest, TableService, MAX_SEGMENTS,
};
use serde_json::{json, Map, Value};

use crate::moment;
use crate::open::{for_each_file, shown, with_context};
use memsight_core::analysis::moment::Moment;

/// Prints the segments of every device of every file (or of `device`) at `at`; fails (exit
/// code 1) when a file cannot be read or a moment or device does not exist.
pub fn run(
    files: &[impl AsRef<Path>],
    device: Option<u32>,
    at: Moment,
    order: SegmentOrder,
    as_json: bool,
) -> ExitCode {
    let mut failed = false;
    let code = for_each_file(files, as_json, |path, opened| {
        with_context(opened, &Rules::default(), device, |cx, devices| {
            let mut service = TableService::default();
            let mut text = String::new();
            let mut json_devices = Map::new();
            for d in devices {
                let Some((_, facts)) = cx.analysed.device_facts(d) else {
                    failed = true;
                    say!(
                        "memsight: {}: {}",
                        path.display(),
                        format::problems::view_error(&ViewError::NoSuchDevice { device: d })
                    );
                    continue;
                };
                let state = match moment::state(at, facts) {
                    Ok(state) => state,
                    Err(why) => {
                        failed = true;
                        say!(
                            "memsight: {}: {}: {why}",
                            path.display(),
                            cx.analysed.snapshot.device_name(d)
                        );
                        continue;
                    }
                };
                let mut segments = Vec::new();
                let mut view = None;
                // Every segment, a page at a time as the service answers them.
                loop {
                    let request = TableRequest::Allocator(AllocatorRequest {
                        device: d,
                        state: Some(state),
                        first_segment: segments.len() as u32,
                        segment_count: MAX_SEGMENTS,
                        order,
                    });
                    let answer = service.answer(cx, request).map(|r| Answer::Table(r.answer));
                    let Ok(Answer::Table(TableAnswer::Allocator(page))) = answer else {
                        failed = true;
                        say!(
                            "memsight: {}: {}: no allocator state",
                            path.display(),
                            cx.analysed.snapshot.device_name(d)
                        );
                        break;
                    };
                    let done = page.segments.is_empty()
                        || segments.len() + page.segments.len() >= page.segment_count as usize;
                    segments.extend(page.segments.iter().cloned());
                    view = Some(page);
                    if done {
                        break;
                    }
                }
                let Some(mut view) = view else { continue };
                view.first_segment = 0;
                view.segments = segments;
                if as_json {
                    json_devices.insert(
                        format::device_key(d),
                        serde_json::to_value(&*view).expect("states serialize"),
                    );
                } else {
                    text.push_str(&format!(
                        "{} — {}, {} (event {}): {}\n",
                        shown(path),
                        cx.analysed.snapshot.device_name(d),
                        moment::name(at),
                        view.event.map_or("none".to_string(), |e| e.to_string()),
                        format::table::allocator_totals(view.segment_count, &view.totals),
                    ));
                    for s in &view.segments {
                        text.push_str(&format!(
                            "  {:#x} {:>10} stream {:#x}: {} allocated, {} cached free, {} blocks\n",
                            s.address,
                            format::bytes(s.size),
                            s.stream,
                            format::bytes(s.totals.allocated),
                            format::bytes(s.totals.cached_free),
                            s.blocks.len(),
                        ));
                    }
                }
            }
            if as_json {
                text = Value::to_string(&json!({ "file": shown(path), "devices": json_devices }));
            }
            text
        })
    });
    if failed {
        ExitCode::FAILURE
    } else {
        code
    }
}
