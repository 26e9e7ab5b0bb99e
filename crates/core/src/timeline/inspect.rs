//! Details of one timeline element (for the tooltip and the pinned panel), stacks with the
//! interpreter's noise marked, and search by address or frame text.
//!
//! Reads the model; computes no layout and draws nothing.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::elements::{AllocationElements, Elements, SegmentElements};
use super::{Kind, ALIVE};
use crate::analysis::{DeviceFacts, Origin, NO_ROW};
use crate::model::{Device, Frame, Snapshot, StackId};

/// One frame of a stack, as text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrameText {
    pub filename: String,
    pub line: i64,
    pub name: String,
    /// Interpreter or dispatcher machinery rather than code someone wrote.
    pub noise: bool,
}

/// Everything known about one element.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElementDetail {
    pub kind: Kind,
    /// Stack position: the element's id within its timeline.
    pub index: u32,
    pub addr: u64,
    /// Bytes as recorded (the requested size for allocations).
    pub size: u64,
    /// The caching allocator's block size for this request (rounded up to 512 bytes), for
    /// allocations.
    pub block_size: Option<u64>,
    /// The raw `cudaStream_t`.
    pub stream: u64,
    /// "trace", "freed-before-alloc" (allocated before the trace window) or "live-block"
    /// (alive at the end, allocated before the window).
    pub origin: String,
    /// First state it is alive in, and the first state it is not (`None`: alive at the end).
    pub start_state: u32,
    pub end_state: Option<u32>,
    /// State of its `free_requested`, when freeing waited for streams.
    pub free_requested_state: Option<u32>,
    pub alloc_time_us: Option<i64>,
    pub free_time_us: Option<i64>,
    /// The first frame outside interpreter noise, as `file:line:name`.
    pub top_frame: Option<String>,
    /// Innermost first; empty when not requested or not recorded.
    pub frames: Vec<FrameText>,
    pub frame_count: u32,
    pub compile_context: Option<String>,
    pub user_metadata: Option<String>,
}

/// Function-name and file-name fragments of frames that are machinery, not user code (the
/// same lists PyTorch's memory_viz hides).
const NOISE_FUNCTIONS: [&str; 8] = [
    "unwind::unwind",
    "CapturedTraceback::gather",
    "gather_with_cpp",
    "_start",
    "__libc_start_main",
    "PyEval_",
    "PyObject_",
    "PyFunction_",
];
const NOISE_FILES: [&str; 10] = [
    "core/boxing",
    "/Register",
    "/Redispatch",
    "pythonrun.c",
    "Modules/main.c",
    "Objects/call.c",
    "Objects/methodobject.c",
    "pycore_ceval.h",
    "ceval.c",
    "cpython/abstract.h",
];

pub fn is_noise(filename: &str, name: &str) -> bool {
    NOISE_FUNCTIONS.iter().any(|f| name.contains(f))
        || NOISE_FILES.iter().any(|f| filename.contains(f))
}

fn frame_text(snapshot: &Snapshot, frame: &Frame) -> FrameText {
    let filename = snapshot.str(frame.filename).to_string();
    let name = snapshot.str(frame.name).to_string();
    FrameText {
        noise: is_noise(&filename, &name),
        filename,
        line: frame.line,
        name,
    }
}

/// How much a frame looks like the user's own code: their Python (2), a library's Python (1),
/// anything else that is not noise (0).
fn user_rank(frame: &FrameText) -> Option<u8> {
    if frame.noise {
        return None;
    }
    let python = frame.filename.ends_with(".py");
    let library = ["/torch/", "site-packages/", "dist-packages/", "/lib/python"]
        .iter()
        .any(|p| frame.filename.contains(p));
    Some(match (python, library) {
        (true, false) => 2,
        (true, true) => 1,
        _ => 0,
    })
}

/// The frames of `stack` (when asked for), its top user frame and its frame count.
fn stack_text(
    snapshot: &Snapshot,
    stack: StackId,
    with_frames: bool,
) -> (Option<String>, Vec<FrameText>, u32) {
    let mut top: Option<(u8, String)> = None;
    let mut frames = Vec::new();
    for frame in snapshot.stack_frames(stack) {
        let text = frame_text(snapshot, frame);
        if let Some(rank) = user_rank(&text) {
            if top.as_ref().is_none_or(|(best, _)| rank > *best) {
                top = Some((
                    rank,
                    format!("{}:{}:{}", text.filename, text.line, text.name),
                ));
            }
        }
        if with_frames {
            frames.push(text);
        } else if top.as_ref().is_some_and(|(rank, _)| *rank == 2) {
            break;
        }
    }
    (
        top.map(|(_, text)| text),
        frames,
        snapshot.stacks.frames(stack).len() as u32,
    )
}

/// The block size the caching allocator uses for a request of `size` bytes.
pub fn block_size(size: u64) -> u64 {
    size.max(1).div_ceil(512) * 512
}

fn origin_name(origin: Origin) -> &'static str {
    match origin {
        Origin::Trace => "trace",
        Origin::FreedBeforeAlloc => "freed-before-alloc",
        Origin::LiveBlock => "live-block",
    }
}

fn opt_state(state: u32) -> Option<u32> {
    (state != ALIVE).then_some(state)
}

/// Details of element `index` of device `device`'s `kind` timeline, or `None` if out of range.
pub fn detail(
    snapshot: &Snapshot,
    device: &Device,
    facts: &DeviceFacts,
    segments: Option<&SegmentElements>,
    kind: Kind,
    index: u32,
    with_frames: bool,
) -> Option<ElementDetail> {
    let trace = &device.trace;
    let time = |row: u32| {
        (row != NO_ROW && snapshot.features.time_us)
            .then(|| trace.time_us.get(row as usize).copied())
            .flatten()
            .filter(|&t| t != crate::model::NO_TIME)
    };
    let stream_of = |index: u16| snapshot.streams.get(index as usize).copied().unwrap_or(0);
    match kind {
        Kind::Allocations => {
            let elements = AllocationElements::new(facts);
            if index >= elements.count() {
                return None;
            }
            let a = elements.allocation(index);
            // The row that tells most: the alloc, else the free of a pre-window allocation.
            let row = if a.alloc_row != NO_ROW {
                a.alloc_row
            } else {
                a.free_row
            };
            let (top_frame, frames, frame_count) = stack_text(snapshot, a.stack, with_frames);
            let text = |id: Option<u32>| id.map(|s| snapshot.str(s).to_string());
            let (stream, compile_context, user_metadata) = if row != NO_ROW {
                let r = row as usize;
                (
                    stream_of(trace.stream[r]),
                    text(trace.compile_context(r)),
                    text(trace.user_metadata(r)),
                )
            } else {
                let stream = device
                    .segments
                    .iter()
                    .find(|s| (s.address..s.address + s.total_size).contains(&a.addr))
                    .map_or(0, |s| s.stream);
                (stream, None, None)
            };
            Some(ElementDetail {
                kind,
                index,
                addr: a.addr,
                size: a.size,
                block_size: Some(block_size(a.size)),
                stream,
                origin: origin_name(a.origin).into(),
                start_state: elements.start(index),
                end_state: opt_state(elements.end(index)),
                free_requested_state: (a.free_requested_row != NO_ROW)
                    .then(|| a.free_requested_row + 1),
                alloc_time_us: time(a.alloc_row),
                free_time_us: time(a.free_row),
                top_frame,
                frames,
                frame_count,
                compile_context,
                user_metadata,
            })
        }
        Kind::Segments => {
            let segments = segments?;
            let s = segments.items.get(index as usize)?;
            let (top_frame, frames, frame_count) = stack_text(snapshot, s.stack, with_frames);
            let stream = if s.alloc_row != NO_ROW || s.free_row != NO_ROW {
                stream_of(s.stream)
            } else {
                s.stream as u64
            };
            Some(ElementDetail {
                kind,
                index,
                addr: s.addr,
                size: s.size,
                block_size: None,
                stream,
                origin: origin_name(s.origin).into(),
                start_state: segments.start(index),
                end_state: opt_state(segments.end(index)),
                free_requested_state: None,
                alloc_time_us: time(s.alloc_row),
                free_time_us: time(s.free_row),
                top_frame,
                frames,
                frame_count,
                compile_context: None,
                user_metadata: None,
            })
        }
    }
}

/// What a search query looks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Query {
    /// Elements containing this address.
    Address(u64),
    /// Elements with a frame whose file or function name contains this text (lower case).
    Text(String),
}

impl Query {
    /// `0x7f00…` (or bare hex of 6+ digits with a digit a–f or 0–9 only) is an address;
    /// anything else is frame text. Empty queries find nothing.
    pub fn parse(text: &str) -> Option<Query> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        let hex = text
            .strip_prefix("0x")
            .or_else(|| text.strip_prefix("0X"))
            .or_else(|| {
                (text.len() >= 6
                    && text.chars().all(|c| c.is_ascii_hexdigit())
                    && text.chars().any(|c| c.is_ascii_digit()))
                .then_some(text)
            });
        if let Some(hex) = hex {
            if let Ok(addr) = u64::from_str_radix(hex, 16) {
                return Some(Query::Address(addr));
            }
        }
        Some(Query::Text(text.to_lowercase()))
    }
}

/// Stack positions of the elements matching `query`, ascending.
pub fn search(
    snapshot: &Snapshot,
    facts: &DeviceFacts,
    segments: Option<&SegmentElements>,
    kind: Kind,
    query: &Query,
) -> Vec<u32> {
    let mut stack_matches: FxHashMap<StackId, bool> = FxHashMap::default();
    let mut frame_matches: FxHashMap<u32, bool> = FxHashMap::default();
    let mut matches_stack = |stack: StackId, needle: &str| -> bool {
        *stack_matches.entry(stack).or_insert_with(|| {
            snapshot.stacks.frames(stack).iter().any(|&f| {
                *frame_matches.entry(f).or_insert_with(|| {
                    let frame = &snapshot.frames[f as usize];
                    snapshot.str(frame.filename).to_lowercase().contains(needle)
                        || snapshot.str(frame.name).to_lowercase().contains(needle)
                })
            })
        })
    };
    let mut test = |addr: u64, size: u64, stack: StackId| match query {
        Query::Address(a) => addr <= *a && *a < addr.saturating_add(size.max(1)),
        Query::Text(needle) => matches_stack(stack, needle),
    };
    match kind {
        Kind::Allocations => {
            let elements = AllocationElements::new(facts);
            (0..elements.count())
                .filter(|&i| {
                    let a = elements.allocation(i);
                    test(a.addr, a.size, a.stack)
                })
                .collect()
        }
        Kind::Segments => segments.map_or_else(Vec::new, |s| {
            (0..s.count())
                .filter(|&i| {
                    let e = &s.items[i as usize];
                    test(e.addr, e.size, e.stack)
                })
                .collect()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_tell_addresses_from_text() {
        assert_eq!(Query::parse(" 0x7f12 "), Some(Query::Address(0x7f12)));
        assert_eq!(
            Query::parse("7f0012ab00"),
            Some(Query::Address(0x7f0012ab00))
        );
        assert_eq!(Query::parse("Linear"), Some(Query::Text("linear".into())));
        assert_eq!(Query::parse("facade"), Some(Query::Text("facade".into())));
        assert_eq!(Query::parse("   "), None);
    }

    #[test]
    fn interpreter_frames_are_noise() {
        assert!(is_noise("Python/ceval.c", "_PyEval_EvalFrameDefault"));
        assert!(is_noise("??", "PyObject_Call"));
        assert!(!is_noise("/home/me/train.py", "forward"));
    }

    #[test]
    fn the_top_user_frame_is_the_innermost_frame_of_the_users_python() {
        let frame = |filename: &str, name: &str| FrameText {
            filename: filename.into(),
            line: 1,
            name: name.into(),
            noise: is_noise(filename, name),
        };
        let rank = |f: &str, n: &str| user_rank(&frame(f, n));
        assert_eq!(rank("Python/ceval.c", "_PyEval_EvalFrameDefault"), None);
        assert_eq!(rank("CUDACachingAllocator.cpp", "malloc"), Some(0));
        assert_eq!(
            rank(
                "/usr/lib/python3/site-packages/torch/nn/modules/linear.py",
                "forward"
            ),
            Some(1)
        );
        assert_eq!(rank("/home/me/train.py", "step"), Some(2));
    }

    #[test]
    fn block_sizes_round_up_to_512_bytes() {
        assert_eq!(block_size(0), 512);
        assert_eq!(block_size(1), 512);
        assert_eq!(block_size(512), 512);
        assert_eq!(block_size(513), 1024);
    }
}
