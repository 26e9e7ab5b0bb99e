//! Messages between the page and the decoding worker.
//!
//! One worker owns one snapshot: it decodes the file, keeps the model, and answers requests
//! for views of it. The page never holds the model, only what a view needs to draw. Messages
//! are plain serde types (sent as JSON text) so the protocol is testable natively and can grow
//! new requests (tables, timeline tiles, comparisons) without changing the transport.
//! This module is not the transport itself: that lives in `worker` and `ui`.

use serde::{Deserialize, Serialize};

use crate::analysis::overview::Overview;
use crate::timeline::inspect::ElementDetail;
use crate::timeline::{AxisMode, Kind, Viewport};

/// What the page asks a worker to do.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// Decode the `File` sent alongside this message (as the second element of the message).
    Load { name: String, size: u64 },
    /// The overview of one device of the loaded snapshot.
    Overview { device: u32 },
    /// Lay out a timeline (again, when `detail` changes) and describe it.
    Timeline {
        device: u32,
        kind: Kind,
        /// Elements to draw individually; `None` keeps the current (or default) detail.
        detail: Option<u32>,
    },
    /// Paint a view of a timeline laid out before. Answered by `Frame` with the pixels.
    Frame(FrameRequest),
    /// What is painted at one pixel of a view.
    Hit(HitRequest),
    /// Everything about one element, with its stack.
    Element { device: u32, kind: Kind, index: u32 },
    /// Find elements by address or frame text; the matches are kept for `Frame` and `Match`.
    Search {
        device: u32,
        kind: Kind,
        query: String,
    },
    /// The `nth` match of the last search, as an `Element`.
    Match { device: u32, kind: Kind, nth: u32 },
    /// The whole run's totals, one maximum per pixel column, for the minimap.
    Minimap {
        device: u32,
        kind: Kind,
        mode: AxisMode,
        width: u32,
    },
}

/// A view of a timeline to paint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrameRequest {
    pub device: u32,
    pub kind: Kind,
    /// Echoed in the answer, so the page can drop stale frames.
    pub seq: u32,
    pub view: Viewport,
    /// Show the whole trace instead of the view's range (the page may ask for a first frame
    /// before it knows the trace's range).
    #[serde(default)]
    pub whole: bool,
    pub dark: bool,
    /// Thickness of the reserved line, in device pixels.
    pub line_width: u32,
    pub pinned: Option<u32>,
    /// Paint the last search's matches in the match colour.
    pub show_matches: bool,
    /// Draw the line (reserved bytes) over the allocations.
    pub show_line: bool,
}

/// A pixel of a painted view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HitRequest {
    pub device: u32,
    pub kind: Kind,
    pub seq: u32,
    /// The view of the painted frame.
    pub view: Viewport,
    /// The painted frame's top edge in bytes.
    pub y_max: u64,
    /// Device pixels from the top-left corner.
    pub x: u32,
    pub y: u32,
}

/// What a worker answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Response {
    /// Bytes of the file read so far.
    Progress {
        bytes_read: u64,
        total: u64,
    },
    /// The file decoded; views may now be requested.
    Loaded(LoadedSummary),
    /// The file could not be decoded; nothing was kept.
    Failed(ErrorReport),
    Overview(Overview),
    Timeline(TimelineInfo),
    /// A painted view; the pixels (`width × height` RGBA) travel next to the message.
    Frame(FrameInfo),
    Hit(HitInfo),
    /// `None` when the element does not exist (or the search has fewer matches).
    Element {
        detail: Option<ElementDetail>,
    },
    Search(SearchInfo),
    Minimap(MinimapInfo),
    /// A view request could not be answered; the snapshot stays loaded.
    ViewError(String),
}

/// A laid-out timeline: what the page needs to set up its view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimelineInfo {
    pub device: u32,
    pub kind: Kind,
    /// States: trace rows + 1 (state 0 is before the first row).
    pub states: u32,
    /// Whether the x axis can show wall-clock time.
    pub has_time: bool,
    /// The whole trace in event units and, with `has_time`, in microseconds.
    pub events_range: (f64, f64),
    pub time_range: Option<(f64, f64)>,
    /// Elements in the timeline, and how many are drawn individually.
    pub elements: u32,
    pub detail: u32,
    /// The detail chosen when none is asked for: every element of a timeline of up to 20,000,
    /// otherwise every element at least 1/4096 of the peak (at most 500,000).
    pub default_detail: u32,
    /// Where the total peaks (state and bytes) and its time.
    pub peak_state: u32,
    pub peak_bytes: u64,
    pub peak_time_us: Option<i64>,
    /// Named phases (`external_annotations`) as state ranges.
    pub phases: Vec<Phase>,
    /// Out-of-memory events.
    pub ooms: Vec<OomMark>,
    /// Milliseconds the worker spent laying the timeline out.
    pub layout_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    pub name: String,
    pub start_state: u32,
    /// `None` when the phase never ended within the trace.
    pub end_state: Option<u32>,
    pub start_time_us: i64,
    pub end_time_us: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OomMark {
    pub state: u32,
    pub time_us: Option<i64>,
    /// Bytes requested by the allocation that failed.
    pub requested: u64,
    /// Bytes the device reported free.
    pub device_free: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrameInfo {
    pub seq: u32,
    /// What was painted: time falls back to events when the trace has no times, and a request
    /// for the whole trace names its range.
    pub view: Viewport,
    /// Bytes at the top edge (the view's highest value plus 5 %).
    pub y_max: u64,
    /// Distinct elements painted at least one pixel tall.
    pub drawn_individually: u32,
    /// The highest total in view.
    pub peak_state: Option<u32>,
    pub peak_bytes: u64,
    pub first_state: Option<u32>,
    pub last_state: Option<u32>,
    pub paint_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HitInfo {
    pub seq: u32,
    /// The state shown in the hovered column (`None` outside the trace).
    pub state: Option<u32>,
    pub time_us: Option<i64>,
    /// Total and line (reserved) bytes at that state.
    pub total: u64,
    pub line: Option<u64>,
    /// The element under the pixel, without its full stack.
    pub element: Option<ElementDetail>,
    /// Bytes of the small-allocations band, when the pixel is in it.
    pub small_bytes: Option<u64>,
    pub hit_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchInfo {
    pub query: String,
    /// Whether the query was understood ("0x…" address or frame text).
    pub valid: bool,
    pub count: u32,
    /// Of the matches, how many are drawn individually (the others are in the small band).
    pub drawn: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MinimapInfo {
    pub mode: AxisMode,
    /// Highest total and line per column over the whole trace.
    pub totals: Vec<u64>,
    pub line: Vec<u64>,
}

/// Facts about a freshly decoded snapshot that the page needs before asking for any view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadedSummary {
    /// Device indices present in the snapshot, ascending.
    pub devices: Vec<u32>,
    /// The device to show first: the one with the most trace entries, then the most segments.
    pub default_device: u32,
    /// Bytes of the input file (compressed size for gzip input).
    pub file_bytes: u64,
    /// Milliseconds from the start of reading to the analysed model, measured in the worker.
    pub decode_ms: f64,
    /// Of `decode_ms`, milliseconds spent waiting for the file's bytes.
    #[serde(default)]
    pub read_ms: f64,
    /// Of `decode_ms`, milliseconds spent deriving facts (pairing, curves, peaks).
    #[serde(default)]
    pub analyse_ms: f64,
}

/// A decoding failure as shown to the user.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorReport {
    /// What is wrong, in one sentence.
    pub message: String,
    /// Byte offset in the (decompressed) input where the problem was found, when known.
    pub offset: Option<u64>,
    /// What the file probably is, or what to do about it.
    pub hint: Option<String>,
}
