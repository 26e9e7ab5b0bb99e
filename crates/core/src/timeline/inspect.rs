//! Details of one timeline element (for the tooltip and the pinned panel) and search by
//! address or frame text.
//!
//! Reads the model; computes no layout and draws nothing. What a frame is, and which frame
//! names an allocation, is decided by [`crate::analysis::stacks`].

use crate::model::{Row, State};
use serde::{Deserialize, Serialize};

use super::TimelineKind;
use crate::analysis::allocator::block_size;
use crate::analysis::categories::RoleReason;
use crate::analysis::elements::ALIVE;
use crate::analysis::elements::{AllocationElements, Elements, PoolElements, SegmentElements};
use crate::analysis::live::{live_at, LiveSet};
use crate::analysis::query::Query;
use crate::analysis::stacks::{
    annotations_text, stack_text, AnnotationText, FrameSearch, FrameText, StackText,
};
use crate::analysis::{DeviceFacts, Origin, NO_ROW};
use crate::model::{Action, Device, Snapshot, StackId};

/// The elements of a timeline that owns them (segments, a pool's allocations), for the
/// kinds that need them.
#[derive(Clone, Copy, Default)]
pub struct KindElements<'a> {
    pub segments: Option<&'a SegmentElements>,
    pub pool: Option<&'a PoolElements>,
}

/// Everything known about one element.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElementDetail {
    pub kind: TimelineKind,
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
    pub start_state: State,
    pub end_state: Option<State>,
    /// State of its `free_requested`, when freeing waited for streams.
    pub free_requested_state: Option<State>,
    pub alloc_time_us: Option<i64>,
    pub free_time_us: Option<i64>,
    /// What made it: the innermost frame of the user's code as `file:line:name`, else the most
    /// telling framework frame (`BmmBackward0`, `Adam.step`, `aten::einsum`).
    pub top_frame: Option<String>,
    /// Whether `top_frame` is the user's code.
    pub top_frame_is_user: bool,
    /// Index in `frames` of the frame `top_frame` names (with the frames).
    pub top_frame_index: Option<u32>,
    /// Innermost first; empty when not requested or not recorded.
    pub frames: Vec<FrameText>,
    pub frame_count: u32,
    pub compile_context: Option<String>,
    pub user_metadata: Option<String>,
    /// An allocation's role and why (set by the service, which has the categories).
    #[serde(default)]
    pub role: Option<RoleReason>,
    /// The tensor's shape and dtype, when the file records them (`[8, 1024]`,
    /// `torch.float32`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    /// What `annotate` rows attached to an allocation, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotations: Vec<AnnotationText>,
    /// For a backward allocation (`forward_frames`), the forward code that created its
    /// autograd node: its top frame, as the table names the allocation, and its frames
    /// (innermost first, with the frames).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_top_frame: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forward_frames: Vec<FrameText>,
}

fn origin_name(origin: Origin) -> &'static str {
    match origin {
        Origin::Trace => "trace",
        Origin::FreedBeforeAlloc => "freed-before-alloc",
        Origin::LiveBlock => "live-block",
    }
}

fn opt_state(state: u32) -> Option<State> {
    (state != ALIVE).then_some(State::new(state))
}

/// Details of element `index` of device `device`'s `kind` timeline, or `None` if out of range.
pub fn detail(
    snapshot: &Snapshot,
    device: &Device,
    facts: &DeviceFacts,
    of_kind: KindElements<'_>,
    kind: TimelineKind,
    index: u32,
    with_frames: bool,
) -> Option<ElementDetail> {
    let segments = of_kind.segments;
    let trace = &device.trace;
    let time = |row: u32| {
        (row != NO_ROW && snapshot.features.time_us)
            .then(|| trace.time_us.get(row as usize).copied())
            .flatten()
            .filter(|&t| t != crate::model::NO_TIME)
    };
    let stream_of = |index: u16| snapshot.streams.get(index as usize).copied().unwrap_or(0);
    match kind {
        TimelineKind::Allocations => {
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
            let StackText {
                top_frame,
                top_frame_is_user,
                top_frame_index,
                frames,
                frame_count,
            } = stack_text(snapshot, a.stack, with_frames);
            let text = |id: Option<u32>| id.map(|s| snapshot.str(s).to_string());
            // What only an alloc row records: the forward code of a backward allocation.
            let alloc_row = (a.alloc_row != NO_ROW).then_some(a.alloc_row as usize);
            let (shape, dtype) = (text(a.shape(trace)), text(a.dtype(trace)));
            let forward = alloc_row
                .map(|r| trace.forward_stack(r))
                .filter(|&s| s != crate::model::NO_STACK)
                .map(|s| stack_text(snapshot, s, with_frames));
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
                origin: origin_name(a.origin()).into(),
                start_state: State::new(elements.start(index)),
                end_state: opt_state(elements.end(index)),
                free_requested_state: (a.free_requested_row != NO_ROW)
                    .then(|| State::after(Row::new(a.free_requested_row))),
                alloc_time_us: time(a.alloc_row),
                free_time_us: time(a.free_row),
                top_frame,
                top_frame_is_user,
                top_frame_index,
                frames,
                frame_count,
                compile_context,
                user_metadata,
                role: None,
                shape,
                dtype,
                annotations: annotations_text(
                    snapshot,
                    trace,
                    facts,
                    elements.allocation_index(index) as u32,
                ),
                forward_top_frame: forward.as_ref().and_then(|f| f.top_frame.clone()),
                forward_frames: forward.map(|f| f.frames).unwrap_or_default(),
            })
        }
        TimelineKind::Pool(_) => {
            // A pool's element is an allocation: described as the allocations timeline does,
            // under the pool's own index.
            let allocation = *of_kind.pool?.members.get(index as usize)?;
            let position = AllocationElements::new(facts).position(allocation as usize);
            let mut d = detail(
                snapshot,
                device,
                facts,
                KindElements::default(),
                TimelineKind::Allocations,
                position,
                with_frames,
            )?;
            d.kind = kind;
            d.index = index;
            Some(d)
        }
        TimelineKind::Segments => {
            let segments = segments?;
            let s = segments.items.get(index as usize)?;
            let StackText {
                top_frame,
                top_frame_is_user,
                top_frame_index,
                frames,
                frame_count,
            } = stack_text(snapshot, s.stack, with_frames);
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
                start_state: State::new(segments.start(index)),
                end_state: opt_state(segments.end(index)),
                free_requested_state: None,
                alloc_time_us: time(s.alloc_row),
                free_time_us: time(s.free_row),
                top_frame,
                top_frame_is_user,
                top_frame_index,
                frames,
                frame_count,
                compile_context: None,
                user_metadata: None,
                role: None,
                shape: None,
                dtype: None,
                annotations: Vec::new(),
                forward_top_frame: None,
                forward_frames: Vec::new(),
            })
        }
    }
}

/// An out-of-memory: the request that failed, what the device had free, where in the code,
/// and what was alive then.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OomDetail {
    /// Which OOM of the device (0 = the first).
    pub nth: u32,
    /// Its trace row, and the state it shows in.
    pub event: Row,
    pub state: State,
    pub time_us: Option<i64>,
    /// Bytes of the request that failed.
    pub requested: u64,
    /// Bytes the device reported free.
    pub device_free: u64,
    /// The raw `cudaStream_t`.
    pub stream: u64,
    /// Allocated (the curve's requested bytes) and reserved bytes at that moment.
    pub allocated: u64,
    pub reserved: u64,
    pub top_frame: Option<String>,
    pub top_frame_is_user: bool,
    pub top_frame_index: Option<u32>,
    /// The failed request's stack, innermost first.
    pub frames: Vec<FrameText>,
    pub frame_count: u32,
    /// What was alive then.
    pub live: LiveSet,
}

/// How many of the largest allocations and call sites an OOM's detail lists.
pub const OOM_TOP: usize = 10;

/// The `nth` out-of-memory of `device`, or `None` when it has fewer.
pub fn oom_detail(
    snapshot: &Snapshot,
    device: &Device,
    facts: &DeviceFacts,
    nth: u32,
) -> Option<OomDetail> {
    let trace = &device.trace;
    let row = (0..trace.len())
        .filter(|&r| trace.action[r] == Action::Oom)
        .nth(nth as usize)?;
    let event = Row::new(row as u32);
    let state = State::after(event);
    let StackText {
        top_frame,
        top_frame_is_user,
        top_frame_index,
        frames,
        frame_count,
    } = stack_text(snapshot, trace.stack[row], true);
    Some(OomDetail {
        nth,
        event,
        state,
        time_us: (snapshot.features.time_us && trace.time_us[row] != crate::model::NO_TIME)
            .then_some(trace.time_us[row]),
        requested: trace.size[row],
        device_free: trace.addr[row],
        stream: snapshot
            .streams
            .get(trace.stream[row] as usize)
            .copied()
            .unwrap_or(0),
        allocated: facts.allocated[row],
        reserved: facts.reserved_after(Some(row as u32)),
        top_frame,
        top_frame_is_user,
        top_frame_index,
        frames,
        frame_count,
        live: live_at(snapshot, trace, facts, state.get(), OOM_TOP),
    })
}

/// Stack positions of the elements matching `query`, ascending.
pub fn search(
    snapshot: &Snapshot,
    facts: &DeviceFacts,
    of_kind: KindElements<'_>,
    kind: TimelineKind,
    query: &Query,
) -> Vec<u32> {
    let segments = of_kind.segments;
    let mut frames = match query {
        Query::Text(needle) => Some(FrameSearch::new(snapshot, needle)),
        Query::Address(_) => None,
    };
    let mut test = |addr: u64, size: u64, stack: StackId| match (query, &mut frames) {
        (Query::Address(a), _) => addr <= *a && *a < addr.saturating_add(size.max(1)),
        (Query::Text(_), Some(frames)) => frames.matches(stack),
        (Query::Text(_), None) => false,
    };
    match kind {
        TimelineKind::Allocations => {
            let elements = AllocationElements::new(facts);
            (0..elements.count())
                .filter(|&i| {
                    let a = elements.allocation(i);
                    test(a.addr, a.size, a.stack)
                })
                .collect()
        }
        TimelineKind::Pool(_) => of_kind.pool.map_or_else(Vec::new, |p| {
            (0..p.count())
                .filter(|&i| {
                    let a = facts.allocations.at(p.members[i as usize] as usize);
                    test(a.addr, a.size, a.stack)
                })
                .collect()
        }),
        TimelineKind::Segments => segments.map_or_else(Vec::new, |s| {
            (0..s.count())
                .filter(|&i| {
                    let e = &s.items[i as usize];
                    test(e.addr, e.size, e.stack)
                })
                .collect()
        }),
    }
}
