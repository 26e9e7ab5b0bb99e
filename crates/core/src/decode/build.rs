//! Turning decoded values into the model: the snapshot schema lives here, once.
//!
//! Every importer (the streaming pickle parser, JSON, and the `serde-pickle` reference used by
//! tests) produces [`Decoded`]s and hands them to one [`Builder`]. The pickle parser converts trace
//! entries and frames as soon as they are complete (so millions of them never exist as
//! nodes); other importers hand over plain dicts and the builder converts them the same way.
//! This module knows the snapshot keys and eras; it knows nothing of bytes or opcodes.

use rustc_hash::{FxHashMap, FxHashSet};

use super::DecodeError;
use crate::model::{
    Action, Annotation, AnnotationStage, Block, BlockState, Device, Features, Frame, FrameId,
    FrameInterner, FxNode, HistoryEntry, Segment, SegmentType, Snapshot, StackId, Stacks, StrId,
    Strings, TopLevel, TraceRow, TraceStaging, Value, NO_STACK, NO_TIME, PINNED_HOST_DEVICE,
};

/// The deepest nesting accepted anywhere (snapshots need about 6 levels).
pub const MAX_DEPTH: usize = 128;

/// A decoded value on its way into the model.
#[derive(Clone, Debug, PartialEq)]
pub enum Decoded {
    None,
    Bool(bool),
    Int(i64),
    /// An integer outside `i64`, as decimal text.
    BigInt(String),
    Float(f64),
    Str(StrId),
    Bytes(Vec<u8>),
    List(Vec<Decoded>),
    Tuple(Vec<Decoded>),
    Set(Vec<Decoded>),
    Dict(Vec<(Decoded, Decoded)>),
    /// A frame dict already interned.
    Frame(FrameId),
    /// A list of frames already interned.
    Stack(StackId),
    /// Trace entries already stored as rows `start..start + len` of the staging trace.
    Rows(u32, u32),
}

impl Decoded {
    fn kind(&self) -> &'static str {
        match self {
            Decoded::None => "None",
            Decoded::Bool(_) => "a bool",
            Decoded::Int(_) | Decoded::BigInt(_) => "an integer",
            Decoded::Float(_) => "a float",
            Decoded::Str(_) => "a string",
            Decoded::Bytes(_) => "bytes",
            Decoded::List(_) | Decoded::Stack(_) | Decoded::Rows(..) => "a list",
            Decoded::Tuple(_) => "a tuple",
            Decoded::Set(_) => "a set",
            Decoded::Dict(_) | Decoded::Frame(_) => "a dict",
        }
    }
}

/// A trace entry as the parser's fast path reads it, one key and scalar value at a time,
/// before [`Builder::push_scalar_row`] stores it: [`Builder::trace_row`] for the common case of
/// an entry whose keys are all known and whose values are plain scalars or interned stacks,
/// without a list of its pairs in between.
#[derive(Clone, Debug)]
pub struct ScalarRow {
    row: TraceRow,
    has_action: bool,
    stream: u64,
    /// The format features this entry shows.
    seen: RowFeatures,
}

#[derive(Clone, Copy, Debug, Default)]
struct RowFeatures {
    time_us: bool,
    trace_frames: bool,
    compile_context: bool,
    user_metadata: bool,
}

impl Default for ScalarRow {
    fn default() -> Self {
        ScalarRow {
            row: TraceRow::new(Action::Other),
            has_action: false,
            stream: 0,
            seen: RowFeatures::default(),
        }
    }
}

impl ScalarRow {
    /// Sets the field `key` names to an integer; false when the key, or a value of this kind,
    /// is one only the general path reads (the entry then goes there whole).
    #[inline(always)]
    pub fn set_int(&mut self, key: StrId, i: i64) -> bool {
        let row = &mut self.row;
        match key {
            key::ADDR | key::DEVICE_FREE if i >= 0 => row.addr = i as u64,
            key::SIZE if i >= 0 => row.size = i as u64,
            key::STREAM if i >= 0 => self.stream = i as u64,
            key::TIME_US => {
                row.time_us = i;
                self.seen.time_us = true;
            }
            _ => return false,
        }
        true
    }

    /// [`ScalarRow::set_int`] for a string value.
    #[inline(always)]
    pub fn set_str(&mut self, key: StrId, s: StrId) -> bool {
        let row = &mut self.row;
        match key {
            key::ACTION => {
                row.action = action_of(s);
                if row.action == Action::Other {
                    return false;
                }
                self.has_action = true;
            }
            key::COMPILE_CONTEXT => {
                row.compile_context = (s != key::NA).then_some(s);
                self.seen.compile_context = true;
            }
            key::USER_METADATA => {
                row.user_metadata = (s != key::EMPTY).then_some(s);
                self.seen.user_metadata = true;
            }
            _ => return false,
        }
        true
    }

    /// [`ScalarRow::set_int`] for an interned stack.
    #[inline(always)]
    pub fn set_stack(&mut self, key: StrId, s: StackId) -> bool {
        if key != key::FRAMES {
            return false;
        }
        self.row.stack = s;
        self.seen.trace_frames |= s != NO_STACK;
        true
    }
}

macro_rules! keys {
    ($($name:ident = $text:literal),* $(,)?) => {
        /// Strings interned first, so their ids are constants.
        pub mod key {
            keys!(@ids 0u32; $($name)*);
        }
        const KEY_TEXTS: &[&str] = &[$($text),*];
    };
    (@ids $n:expr; $first:ident $($rest:ident)*) => {
        pub const $first: u32 = $n;
        keys!(@ids $n + 1; $($rest)*);
    };
    (@ids $n:expr;) => {};
}

keys! {
    ACTION = "action", ADDR = "addr", SIZE = "size", STREAM = "stream", TIME_US = "time_us",
    FRAMES = "frames", DEVICE_FREE = "device_free", COMPILE_CONTEXT = "compile_context",
    USER_METADATA = "user_metadata", POOL_ID = "pool_id", FORWARD_FRAMES = "forward_frames",
    FILENAME = "filename", LINE = "line", NAME = "name",
    SEGMENTS = "segments", DEVICE_TRACES = "device_traces",
    ALLOCATOR_SETTINGS = "allocator_settings", EXTERNAL_ANNOTATIONS = "external_annotations",
    DEVICE = "device", ADDRESS = "address", TOTAL_SIZE = "total_size",
    ALLOCATED_SIZE = "allocated_size", ACTIVE_SIZE = "active_size",
    REQUESTED_SIZE = "requested_size", SEGMENT_TYPE = "segment_type",
    SEGMENT_POOL_ID = "segment_pool_id", IS_EXPANDABLE = "is_expandable", BLOCKS = "blocks",
    STATE = "state", HISTORY = "history", REAL_SIZE = "real_size", STAGE = "stage",
    NA = "N/A", EMPTY = "", LARGE = "large", SMALL = "small",
    ACTIVE_ALLOCATED = "active_allocated", ACTIVE_PENDING_FREE = "active_pending_free",
    INACTIVE = "inactive", START = "START", END = "END",
    A_ALLOC = "alloc", A_FREE_REQUESTED = "free_requested", A_FREE_COMPLETED = "free_completed",
    A_SEGMENT_ALLOC = "segment_alloc", A_SEGMENT_FREE = "segment_free",
    A_SEGMENT_MAP = "segment_map", A_SEGMENT_UNMAP = "segment_unmap",
    A_SNAPSHOT = "snapshot", A_OOM = "oom", A_ANNOTATE = "annotate",
    HOST_SEGMENTS = "host_segments", HOST_TRACES = "host_traces",
    SOURCE_CODE = "source_code", SHAPE_DATA = "shape_data",
    FX_NODE_OP = "fx_node_op", FX_NODE_NAME = "fx_node_name",
    FX_NODE_TARGET = "fx_node_target", FX_NODE_INFO = "fx_node_info",
    FX_ORIGINAL_TRACE = "fx_original_trace",
}

/// Each device's trace rows, as `(start, len)` ranges of the staged rows, by device index.
/// Values a decoder may make from a file, beyond [`VALUES_PER_BYTE`] for each byte read.
/// A pickle's memo reference is a few bytes that name a whole container, so a chain of containers each
/// holding two references to the one before expands to 2^30 values in 500 bytes: every value
/// made from the file (each container's items converted, each copy of a memoized value) counts
/// against this budget, which keeps cost linear in the file's size. A real snapshot makes about
/// one value per byte or fewer.
pub const EXPANSION_BASE: u64 = 1 << 16;
/// See [`EXPANSION_BASE`].
pub const VALUES_PER_BYTE: u64 = 8;

/// The most values a file may expand to once `bytes` of it are read.
pub fn expansion_limit(bytes: u64) -> u64 {
    EXPANSION_BASE.saturating_add(VALUES_PER_BYTE.saturating_mul(bytes))
}

/// The refusal of a file whose values expand past [`expansion_limit`], at byte `at`.
pub fn expansion_error(at: u64, limit: u64) -> DecodeError {
    DecodeError::at(
        at,
        format!(
            "memo references expand to more than {limit} values by byte {at} (a file may make {EXPANSION_BASE} values and {VALUES_PER_BYTE} more for each byte): values shared this often are a decompression bomb, not a snapshot"
        ),
    )
    .with_hint("the file is corrupt or made to exhaust memory")
}

/// The most devices a snapshot may name (a trace list or a segment each): a process sees
/// at most a few dozen, and each device costs its views' memory however empty it is.
pub const MAX_DEVICES: usize = 1024;

/// The most bytes an allocation, block or segment may hold: 1 PiB, far beyond any device
/// (the largest hold a few hundred GiB). A larger size is a corrupt or made-up file; shown,
/// it would saturate the sums into a peak of 16 EiB at 100% efficiency. A failed request
/// (`oom`) may ask for anything: a wrong shape asks for petabytes, and that is worth showing.
pub const MAX_DEVICE_BYTES: u64 = 1 << 50;

/// Refuses a snapshot whose sizes no device could hold ([`MAX_DEVICE_BYTES`]).
fn check_sizes(devices: &[Device], at: At) -> Result<(), DecodeError> {
    let refuse = |what: String, size: u64| {
        err(
            at,
            format!("{what} is {size} bytes: no device holds more than {MAX_DEVICE_BYTES} (1 PiB)"),
        )
        .with_hint("the file is corrupt or made up")
    };
    for device in devices {
        let trace = &device.trace;
        let too_large = trace
            .size
            .iter()
            .zip(&trace.action)
            .position(|(&size, &action)| size > MAX_DEVICE_BYTES && action != Action::Oom);
        if let Some(row) = too_large {
            let what = format!(
                "device {}'s trace entry {row} ({})",
                device.id,
                trace.action[row].name()
            );
            return Err(refuse(what, trace.size[row]));
        }
        if let Some(s) = device
            .segments
            .iter()
            .find(|s| s.total_size > MAX_DEVICE_BYTES)
        {
            let what = format!("device {}'s segment at {:#x}", device.id, s.address);
            return Err(refuse(what, s.total_size));
        }
        let block = device.blocks.iter().find(|b| {
            b.size > MAX_DEVICE_BYTES || b.requested_size.is_some_and(|r| r > MAX_DEVICE_BYTES)
        });
        if let Some(b) = block {
            let what = format!("device {}'s block at {:#x}", device.id, b.address);
            return Err(refuse(what, b.size.max(b.requested_size.unwrap_or(0))));
        }
    }
    Ok(())
}

type DeviceRows = Vec<(u32, Vec<(u32, u32)>)>;

/// Builds a [`Snapshot`] from nodes; owns the interning tables while decoding.
pub struct Builder {
    pub strings: Strings,
    pub frames: Vec<Frame>,
    frame_index: FrameInterner,
    pub stacks: Stacks,
    streams: Vec<u64>,
    stream_index: FxHashMap<u64, u16>,
    /// The stream the last trace row went to and its index, as the next row nearly always
    /// goes to the same.
    last_stream: Option<(u64, u16)>,
    pools: Vec<(i64, i64)>,
    /// Rows converted as they were decoded, before they are assigned to devices.
    pub staging: TraceStaging,
    features: Features,
    scratch_frames: Vec<FrameId>,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

/// Where in the file a problem was found, for messages.
#[derive(Clone, Copy)]
pub struct At(pub Option<u64>);

fn err(at: At, message: String) -> DecodeError {
    DecodeError::new(at.0, message)
}

impl Builder {
    pub fn new() -> Self {
        let mut strings = Strings::default();
        for text in KEY_TEXTS {
            strings.intern(text);
        }
        Builder {
            strings,
            frames: Vec::new(),
            frame_index: FrameInterner::default(),
            stacks: Stacks::default(),
            streams: Vec::new(),
            stream_index: FxHashMap::default(),
            last_stream: None,
            pools: Vec::new(),
            staging: TraceStaging::default(),
            features: Features::default(),
            scratch_frames: Vec::new(),
        }
    }

    /// Makes room for `rows` more trace rows.
    pub fn reserve_rows(&mut self, rows: usize) {
        self.staging.reserve(rows);
    }

    /// How many trace rows fit without growing.
    #[cfg(test)]
    pub fn row_capacity(&self) -> usize {
        self.staging.capacity()
    }

    /// The addresses of the trace rows staged so far, in the order they were staged.
    #[cfg(test)]
    pub fn staged_addresses(&self) -> &[u64] {
        self.staging.addresses()
    }

    fn text(&self, id: StrId) -> &str {
        self.strings.get(id)
    }

    /// Why `item`, at `place`, is not a trace entry: a dict without an `action` says which
    /// keys it has instead.
    fn not_a_trace_entry(&self, place: String, item: &Decoded) -> String {
        match item {
            Decoded::Dict(pairs) => {
                let mut keys: Vec<String> = pairs
                    .iter()
                    .take(6)
                    .map(|(k, _)| self.key_name(k))
                    .collect();
                if pairs.len() > 6 {
                    keys.push("…".into());
                }
                format!(
                    "{place} has no 'action', so it is not a trace entry (its keys: {})",
                    if keys.is_empty() {
                        "none".to_string()
                    } else {
                        keys.join(", ")
                    }
                )
            }
            other => format!("{place} is {}, not a trace entry", other.kind()),
        }
    }

    fn key_name(&self, key: &Decoded) -> String {
        match key {
            Decoded::Str(id) => format!("'{}'", self.text(*id)),
            other => other.kind().to_string(),
        }
    }

    // ----- Conversions shared by every importer -------------------------------------------

    /// Whether a dict with these keys is a frame (`filename`, `line`, `name`).
    pub fn is_frame_keys<'a>(keys: impl Iterator<Item = &'a Decoded>) -> bool {
        let mut seen = 0u8;
        for k in keys {
            match k {
                Decoded::Str(key::FILENAME) => seen |= 1,
                Decoded::Str(key::LINE) => seen |= 2,
                Decoded::Str(key::NAME) => seen |= 4,
                _ => {}
            }
        }
        seen == 7
    }

    /// Interns a frame dict.
    pub fn frame(&mut self, pairs: &[(Decoded, Decoded)], at: At) -> Result<FrameId, DecodeError> {
        let (mut filename, mut line, mut name) = (None, None, None);
        let mut extra = Vec::new();
        for (k, v) in pairs {
            match (k, v) {
                (Decoded::Str(key::FILENAME), Decoded::Str(s)) => filename = Some(*s),
                (Decoded::Str(key::NAME), Decoded::Str(s)) => name = Some(*s),
                (Decoded::Str(key::LINE), Decoded::Int(i)) => line = Some(*i),
                // PyTorch writes an unknown line as 2**64 - 1; keep it as -1.
                (Decoded::Str(key::LINE), Decoded::BigInt(text)) if text.parse::<u64>().is_ok() => {
                    line = Some(text.parse::<u64>().unwrap() as i64)
                }
                (Decoded::Str(key::FILENAME | key::NAME | key::LINE), other) => {
                    return Err(err(
                        at,
                        format!("a frame's {} is {}", self.key_name(k), other.kind()),
                    ))
                }
                (Decoded::Str(id), v) => extra.push((*id, self.value(v, 0)?)),
                (other, _) => {
                    return Err(err(
                        at,
                        format!("a frame has a key that is {}", other.kind()),
                    ))
                }
            }
        }
        let (Some(filename), Some(line), Some(name)) = (filename, line, name) else {
            return Err(err(at, "a frame lacks filename, line or name".into()));
        };
        let frame = Frame {
            filename,
            line,
            name,
            extra,
        };
        Ok(self.frame_index.intern(&mut self.frames, frame))
    }

    /// Interns a list of frames (ids) as a stack.
    pub fn stack_of_ids(&mut self, frames: &[FrameId]) -> StackId {
        self.stacks.intern(frames)
    }

    /// A stack from a `frames` value: an interned stack, a list of frames or frame dicts, or
    /// (`forward_frames`) the strings `traceback.format_stack()` writes, outermost first.
    fn stack(&mut self, node: &Decoded, what: &str, at: At) -> Result<StackId, DecodeError> {
        match node {
            Decoded::Stack(id) => Ok(*id),
            Decoded::None => Ok(NO_STACK),
            Decoded::List(items)
                if !items.is_empty() && items.iter().all(|i| matches!(i, Decoded::Str(_))) =>
            {
                let text: String = items
                    .iter()
                    .filter_map(|i| match i {
                        Decoded::Str(id) => Some(self.text(*id)),
                        _ => None,
                    })
                    .collect();
                Ok(self.traceback_stack(&text))
            }
            Decoded::List(items) => {
                let mut ids = std::mem::take(&mut self.scratch_frames);
                ids.clear();
                for item in items {
                    match item {
                        Decoded::Frame(id) => ids.push(*id),
                        Decoded::Dict(pairs) => ids.push(self.frame(pairs, at)?),
                        other => {
                            self.scratch_frames = ids;
                            return Err(err(
                                at,
                                format!("{what} holds {}, not a frame", other.kind()),
                            ));
                        }
                    }
                }
                let id = self.stacks.intern(&ids);
                self.scratch_frames = ids;
                Ok(id)
            }
            other => Err(err(
                at,
                format!("{what} is {}, not a list of frames", other.kind()),
            )),
        }
    }

    /// The frames traceback text names (`  File "model.py", line 42, in forward` lines,
    /// outermost first, as Python formats tracebacks) as a stack, innermost first;
    /// [`NO_STACK`] when the text names none.
    fn traceback_stack(&mut self, text: &str) -> StackId {
        let mut ids: Vec<FrameId> = text
            .lines()
            .filter_map(traceback_line)
            .map(|(filename, line, name)| {
                let frame = Frame {
                    filename: self.strings.intern(filename),
                    line,
                    name: self.strings.intern(name),
                    extra: Vec::new(),
                };
                self.frame_index.intern(&mut self.frames, frame)
            })
            .collect();
        ids.reverse();
        self.stacks.intern(&ids)
    }

    #[inline]
    fn stream(&mut self, raw: u64, at: At) -> Result<u16, DecodeError> {
        match self.last_stream {
            Some((last, i)) if last == raw => Ok(i),
            _ => {
                let i = self.stream_slow(raw, at)?;
                self.last_stream = Some((raw, i));
                Ok(i)
            }
        }
    }

    fn stream_slow(&mut self, raw: u64, at: At) -> Result<u16, DecodeError> {
        if let Some(&i) = self.stream_index.get(&raw) {
            return Ok(i);
        }
        let i = u16::try_from(self.streams.len())
            .map_err(|_| err(at, "more than 65,535 distinct streams".into()))?;
        self.streams.push(raw);
        self.stream_index.insert(raw, i);
        Ok(i)
    }

    fn pool(&mut self, pool: (i64, i64)) -> u32 {
        match self.pools.iter().position(|&p| p == pool) {
            Some(i) => i as u32,
            None => {
                self.pools.push(pool);
                (self.pools.len() - 1) as u32
            }
        }
    }

    /// Whether a dict with these keys is a trace entry (it has `action`).
    pub fn is_trace_keys<'a>(mut keys: impl Iterator<Item = &'a Decoded>) -> bool {
        keys.any(|k| matches!(k, Decoded::Str(key::ACTION)))
    }

    /// Stores a trace entry dict as a row of the staging trace and returns its index.
    pub fn trace_row(&mut self, pairs: &[(Decoded, Decoded)], at: At) -> Result<u32, DecodeError> {
        let row_index = self.staging.len() as u32;
        let mut row = TraceRow::new(Action::Other);
        let mut has_action = false;
        let mut stream_raw = 0u64;
        for (k, v) in pairs {
            let Decoded::Str(kid) = k else {
                return Err(err(
                    at,
                    format!("a trace entry has a key that is {}", k.kind()),
                ));
            };
            match *kid {
                key::ACTION => {
                    let Decoded::Str(name) = v else {
                        return Err(err(at, format!("a trace entry's 'action' is {}", v.kind())));
                    };
                    has_action = true;
                    row.action = action_of(*name);
                    row.unknown_action = (row.action == Action::Other).then_some(*name);
                }
                key::ADDR | key::DEVICE_FREE => {
                    row.addr = self.u64_field(k, v, "trace entry", at)?
                }
                key::SIZE => row.size = self.u64_field(k, v, "trace entry", at)?,
                key::STREAM => stream_raw = self.u64_field(k, v, "trace entry", at)?,
                key::TIME_US => {
                    row.time_us = self.i64_field(k, v, "trace entry", at)?;
                    self.features.time_us = true;
                }
                key::FRAMES => {
                    row.stack = self.stack(v, "a trace entry's 'frames'", at)?;
                    self.features.trace_frames |= row.stack != NO_STACK;
                }
                // Frames, or the strings of a formatted traceback; anything else is kept as
                // written rather than refusing the file.
                key::FORWARD_FRAMES => {
                    match self.stack(v, "a trace entry's 'forward_frames'", at) {
                        Ok(stack) => {
                            row.forward_stack = stack;
                            self.features.forward_frames = true;
                        }
                        Err(_) => {
                            let value = self.value(v, 0)?;
                            self.staging.push_extra(row_index, *kid, value);
                        }
                    }
                }
                key::COMPILE_CONTEXT if matches!(v, Decoded::Str(_)) => {
                    let Decoded::Str(s) = v else { unreachable!() };
                    row.compile_context = (*s != key::NA).then_some(*s);
                    self.features.compile_context = true;
                }
                key::USER_METADATA if matches!(v, Decoded::Str(_)) => {
                    let Decoded::Str(s) = v else { unreachable!() };
                    row.user_metadata = (*s != key::EMPTY).then_some(*s);
                    self.features.user_metadata = true;
                }
                // PyTorch's viewer also takes metadata as a dict, shown `key: value` a line.
                key::USER_METADATA if matches!(v, Decoded::Dict(_)) => {
                    let Decoded::Dict(pairs) = v else {
                        unreachable!()
                    };
                    let mut text = String::new();
                    for (k, v) in pairs {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        let k = self.value(k, 0)?.display();
                        let v = self.value(v, 0)?.display();
                        text += &format!("{k}: {v}");
                    }
                    row.user_metadata = (!text.is_empty()).then(|| self.strings.intern(&text));
                    self.features.user_metadata = true;
                }
                key::POOL_ID if pool_pair(v).is_some() => {
                    row.pool = Some(self.pool(pool_pair(v).unwrap()));
                    self.features.pool_id = true;
                }
                other => {
                    let value = self.value(v, 0)?;
                    self.staging.push_extra(row_index, other, value);
                }
            }
        }
        if !has_action {
            return Err(err(at, "a trace entry lacks 'action'".into()));
        }
        row.stream = self.stream(stream_raw, at)?;
        self.staging.push(row);
        Ok(row_index)
    }

    /// Stores a trace entry the fast path read field by field ([`ScalarRow`]) as a row of the
    /// staging trace and returns its index; `None` (changing nothing) when it has no action.
    #[inline]
    pub fn push_scalar_row(&mut self, fields: &ScalarRow) -> Option<u32> {
        if !fields.has_action {
            return None;
        }
        let stream = self.stream(fields.stream, At(None)).ok()?;
        let seen = &fields.seen;
        let features = &mut self.features;
        features.time_us |= seen.time_us;
        features.trace_frames |= seen.trace_frames;
        features.compile_context |= seen.compile_context;
        features.user_metadata |= seen.user_metadata;
        let index = self.staging.len() as u32;
        self.staging.push(TraceRow {
            stream,
            ..fields.row
        });
        Some(index)
    }

    fn u64_field(&self, k: &Decoded, v: &Decoded, what: &str, at: At) -> Result<u64, DecodeError> {
        match v {
            Decoded::Int(i) if *i >= 0 => Ok(*i as u64),
            Decoded::BigInt(s) => s.parse::<u64>().map_err(|_| {
                err(
                    at,
                    format!(
                        "a {what}'s {} ({s}) does not fit in 64 bits",
                        self.key_name(k)
                    ),
                )
            }),
            Decoded::Int(i) => Err(err(
                at,
                format!("a {what}'s {} is negative ({i})", self.key_name(k)),
            )),
            other => Err(err(
                at,
                format!(
                    "a {what}'s {} is {}, not an integer",
                    self.key_name(k),
                    other.kind()
                ),
            )),
        }
    }

    fn i64_field(&self, k: &Decoded, v: &Decoded, what: &str, at: At) -> Result<i64, DecodeError> {
        match v {
            Decoded::Int(i) => Ok(*i),
            // Some writers store times as floats.
            Decoded::Float(f) if f.is_finite() => Ok(*f as i64),
            other => Err(err(
                at,
                format!(
                    "a {what}'s {} is {}, not an integer",
                    self.key_name(k),
                    other.kind()
                ),
            )),
        }
    }

    /// An owned [`Value`] for data the model keeps as written.
    pub fn value(&self, node: &Decoded, depth: usize) -> Result<Value, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::new(
                None,
                format!("values nest deeper than {MAX_DEPTH} levels"),
            ));
        }
        let list = |items: &[Decoded]| -> Result<Vec<Value>, DecodeError> {
            items.iter().map(|n| self.value(n, depth + 1)).collect()
        };
        Ok(match node {
            Decoded::None => Value::None,
            Decoded::Bool(b) => Value::Bool(*b),
            Decoded::Int(i) => Value::Int(*i),
            Decoded::BigInt(s) => Value::BigInt(s.clone()),
            Decoded::Float(f) => Value::Float(*f),
            Decoded::Str(s) => Value::Str(self.text(*s).to_string()),
            Decoded::Bytes(b) => Value::Bytes(b.clone()),
            Decoded::List(items) => Value::List(list(items)?),
            Decoded::Tuple(items) => Value::Tuple(list(items)?),
            Decoded::Set(items) => Value::Set(list(items)?),
            Decoded::Dict(pairs) => Value::Dict(
                pairs
                    .iter()
                    .map(|(k, v)| Ok((self.value(k, depth + 1)?, self.value(v, depth + 1)?)))
                    .collect::<Result<_, DecodeError>>()?,
            ),
            Decoded::Frame(id) => self.frame_value(*id),
            Decoded::Stack(id) => Value::List(
                self.stacks
                    .frames(*id)
                    .iter()
                    .map(|&f| self.frame_value(f))
                    .collect(),
            ),
            Decoded::Rows(start, len) => Value::List(
                (*start..start + len)
                    .map(|r| self.row_value(r as usize))
                    .collect(),
            ),
        })
    }

    fn frame_value(&self, id: FrameId) -> Value {
        let f = &self.frames[id as usize];
        let s = |t: &str| Value::Str(t.to_string());
        let mut pairs = vec![
            (s("filename"), s(self.text(f.filename))),
            (s("line"), Value::Int(f.line)),
            (s("name"), s(self.text(f.name))),
        ];
        pairs.extend(f.extra.iter().map(|(k, v)| (s(self.text(*k)), v.clone())));
        Value::Dict(pairs)
    }

    fn row_value(&self, row: usize) -> Value {
        let r = self.staging.row(row);
        let s = |t: &str| Value::Str(t.to_string());
        let action = match r.unknown_action {
            Some(name) => self.text(name).to_string(),
            None => r.action.name().to_string(),
        };
        let mut pairs = vec![
            (s("action"), Value::Str(action)),
            (s("addr"), Value::Int(r.addr as i64)),
            (s("size"), Value::Int(r.size as i64)),
            (
                s("stream"),
                Value::Int(self.streams[r.stream as usize] as i64),
            ),
        ];
        if r.time_us != NO_TIME {
            pairs.push((s("time_us"), Value::Int(r.time_us)));
        }
        if r.stack != NO_STACK {
            pairs.push((
                s("frames"),
                self.value(&Decoded::Stack(r.stack), 0)
                    .unwrap_or(Value::None),
            ));
        }
        Value::Dict(pairs)
    }

    // ----- The snapshot schema --------------------------------------------------------------

    /// Builds the snapshot from the decoded root value.
    pub fn finish(mut self, root: Decoded, at_end: At) -> Result<Snapshot, DecodeError> {
        let mut snapshot = Snapshot::default();
        let mut device_rows: DeviceRows = Vec::new();
        let mut segments: Vec<(u32, Segment, Vec<Block>)> = Vec::new();
        let mut shapes: Vec<(u32, Tensors)> = Vec::new();
        match root {
            Decoded::Dict(pairs) => {
                let has_schema = pairs.iter().any(|(k, _)| {
                    matches!(
                        k,
                        Decoded::Str(key::SEGMENTS) | Decoded::Str(key::DEVICE_TRACES)
                    )
                });
                if !has_schema {
                    return Err(not_a_snapshot(&self, &Decoded::Dict(pairs), at_end));
                }
                for (k, v) in pairs {
                    match k {
                        Decoded::Str(key::SEGMENTS) => {
                            self.segments(v, false, &mut segments, at_end)?
                        }
                        Decoded::Str(key::DEVICE_TRACES) => {
                            device_rows.extend(self.device_traces(v, at_end)?)
                        }
                        Decoded::Str(key::ALLOCATOR_SETTINGS) => {
                            snapshot.allocator_settings = Some(self.value(&v, 0)?)
                        }
                        Decoded::Str(key::EXTERNAL_ANNOTATIONS) => {
                            snapshot.annotations = self.annotations(v, at_end)?
                        }
                        // Pinned host memory not of the shape PyTorch writes is kept as
                        // written, as any key this reader does not know: never an error.
                        Decoded::Str(key::HOST_SEGMENTS) => {
                            let mut host = Vec::new();
                            match self.segments(v.clone(), true, &mut host, at_end) {
                                Ok(()) => segments.extend(host),
                                Err(_) => snapshot
                                    .extra
                                    .push(("host_segments".into(), self.value(&v, 0)?)),
                            }
                        }
                        Decoded::Str(key::HOST_TRACES) => {
                            match self.trace_list(v.clone(), "host_traces", at_end) {
                                Ok(ranges) if ranges.is_empty() => {}
                                Ok(ranges) => device_rows.push((PINNED_HOST_DEVICE, ranges)),
                                Err(_) => snapshot
                                    .extra
                                    .push(("host_traces".into(), self.value(&v, 0)?)),
                            }
                        }
                        Decoded::Str(key::SOURCE_CODE) if source_code(&v).is_some() => {
                            snapshot.source_code = source_code(&v)
                                .unwrap()
                                .map(|(path, text)| {
                                    (self.text(path).to_string(), self.text(text).to_string())
                                })
                                .collect()
                        }
                        Decoded::Str(key::SHAPE_DATA) => match self.shape_data(&v) {
                            Some(read) => shapes = read,
                            None => snapshot
                                .extra
                                .push(("shape_data".into(), self.value(&v, 0)?)),
                        },
                        other => {
                            let name = match &other {
                                Decoded::Str(id) => self.text(*id).to_string(),
                                k => self.value(k, 0)?.display(),
                            };
                            let value = self.value(&v, 0)?;
                            snapshot.extra.push((name, value));
                        }
                    }
                }
            }
            Decoded::List(_) => {
                snapshot.top_level = TopLevel::SegmentList;
                self.segments(root, false, &mut segments, at_end)?;
            }
            other => return Err(not_a_snapshot(&self, &other, at_end)),
        }
        // Trace entries listed more than once (a list of them memoized and named for device
        // after device) would be copied each time: they count against the file's budget.
        let listed: u64 = device_rows
            .iter()
            .flat_map(|(_, ranges)| ranges)
            .map(|&(_, len)| len as u64)
            .sum();
        let read = at_end.0.unwrap_or(0);
        let limit = expansion_limit(read);
        if listed > self.staging.len() as u64 + limit {
            return Err(expansion_error(read, limit));
        }
        let mut ids: Vec<u32> = device_rows
            .iter()
            .map(|&(id, _)| id)
            .chain(segments.iter().map(|&(id, _, _)| id))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() > MAX_DEVICES {
            return Err(err(
                at_end,
                format!(
                    "the file names {} devices: no process sees more than {MAX_DEVICES}",
                    ids.len()
                ),
            )
            .with_hint("the file is corrupt or made to exhaust memory"));
        }
        snapshot.devices = self.devices(device_rows, segments);
        check_sizes(&snapshot.devices, at_end)?;
        for (id, tensors) in shapes {
            let at = snapshot.devices.binary_search_by_key(&id, |d| d.id);
            if let Some(device) = at.ok().map(|i| &mut snapshot.devices[i]) {
                set_tensors(device, &tensors);
            }
        }
        snapshot.fx_nodes = self.fx_nodes();
        snapshot.features = self.features;
        snapshot.strings = self.strings;
        snapshot.frames = self.frames;
        snapshot.stacks = self.stacks;
        snapshot.streams = self.streams;
        snapshot.pools = self.pools;
        snapshot.device_kind = snapshot.frames_device_kind();
        Ok(snapshot)
    }

    fn devices(
        &mut self,
        device_rows: DeviceRows,
        segments: Vec<(u32, Segment, Vec<Block>)>,
    ) -> Vec<Device> {
        let mut devices: Vec<Device> = Vec::new();
        // Where each device is in `devices`: a file may name a hundred thousand of them, and
        // a search of the list for each would take time quadratic in their number.
        let mut positions: FxHashMap<u32, usize> = FxHashMap::default();
        let mut device_mut = |devices: &mut Vec<Device>, id: u32| -> usize {
            *positions.entry(id).or_insert_with(|| {
                devices.push(Device {
                    id,
                    ..Device::default()
                });
                devices.len() - 1
            })
        };
        // Each device's trace takes its rows from the staged ones, a column at a time (one
        // device owning every row in order takes them as they are).
        let owners: Vec<&(u32, Vec<(u32, u32)>)> =
            device_rows.iter().filter(|(_, r)| !r.is_empty()).collect();
        let runs: Vec<&[(u32, u32)]> = owners.iter().map(|(_, r)| &r[..]).collect();
        let traces = std::mem::take(&mut self.staging).into_trace().split(&runs);
        for ((id, _), trace) in owners.iter().zip(traces) {
            let at = device_mut(&mut devices, *id);
            devices[at].trace = trace;
        }
        for (id, _) in &device_rows {
            let at = device_mut(&mut devices, *id);
            devices[at].has_trace_list = true;
        }
        for (id, mut segment, blocks) in segments {
            let at = device_mut(&mut devices, id);
            let device = &mut devices[at];
            let start = device.blocks.len() as u32;
            device.blocks.extend(blocks);
            segment.blocks = start..device.blocks.len() as u32;
            device.segments.push(segment);
        }
        devices.sort_by_key(|d| d.id);
        devices
    }

    /// `host_traces`: the pinned host allocator's one list of trace entries (also taken as a
    /// list of such lists, read one after the other), as row ranges.
    fn trace_list(
        &mut self,
        node: Decoded,
        what: &str,
        at: At,
    ) -> Result<Vec<(u32, u32)>, DecodeError> {
        let Decoded::List(items) = node else {
            return Err(err(at, format!("'{what}' is {}, not a list", node.kind())));
        };
        let mut ranges: Vec<(u32, u32)> = Vec::new();
        let mut push = |start: u32, len: u32| match ranges.last_mut() {
            Some((s, n)) if *s + *n == start => *n += len,
            _ => ranges.push((start, len)),
        };
        for (i, item) in items.into_iter().enumerate() {
            match item {
                Decoded::Rows(start, len) => push(start, len),
                Decoded::Dict(pairs) if Self::is_trace_keys(pairs.iter().map(|p| &p.0)) => {
                    push(self.trace_row(&pairs, at)?, 1)
                }
                Decoded::List(inner) => {
                    for (start, len) in self.trace_list(Decoded::List(inner), what, at)? {
                        push(start, len);
                    }
                }
                other => {
                    return Err(err(
                        at,
                        self.not_a_trace_entry(format!("{what}[{i}]"), &other),
                    ))
                }
            }
        }
        Ok(ranges)
    }

    /// `shape_data` (`{device: {address: [[op, shape, dtype], …]}}`), as capture helpers
    /// write it: per device, the tensors made at each address, in order; `None` when it is
    /// not of that shape (it is then kept as written).
    fn shape_data(&mut self, node: &Decoded) -> Option<Vec<(u32, Tensors)>> {
        let Decoded::Dict(devices) = node else {
            return None;
        };
        let mut out = Vec::new();
        for (device, addresses) in devices {
            let device = match device {
                Decoded::Int(i) => u32::try_from(*i).ok()?,
                Decoded::Str(s) => self.text(*s).parse().ok()?,
                _ => return None,
            };
            let Decoded::Dict(addresses) = addresses else {
                return None;
            };
            let mut tensors: Tensors = FxHashMap::default();
            for (addr, list) in addresses {
                let addr = match addr {
                    Decoded::Int(i) => u64::try_from(*i).ok()?,
                    Decoded::BigInt(t) => t.parse().ok()?,
                    Decoded::Str(s) => self.text(*s).parse().ok()?,
                    _ => return None,
                };
                let (Decoded::List(items) | Decoded::Tuple(items)) = list else {
                    return None;
                };
                let mut made = Vec::with_capacity(items.len());
                for item in items {
                    let (Decoded::List(fields) | Decoded::Tuple(fields)) = item else {
                        return None;
                    };
                    let shape = match fields.get(1)? {
                        Decoded::Str(s) => *s,
                        Decoded::List(dims) | Decoded::Tuple(dims) => {
                            let dims: Option<Vec<String>> = dims
                                .iter()
                                .map(|d| match d {
                                    Decoded::Int(i) => Some(i.to_string()),
                                    Decoded::BigInt(t) => Some(t.clone()),
                                    _ => None,
                                })
                                .collect();
                            self.strings.intern(&format!("[{}]", dims?.join(", ")))
                        }
                        _ => return None,
                    };
                    let dtype = match fields.get(2) {
                        Some(Decoded::Str(s)) => Some(*s),
                        _ => None,
                    };
                    made.push((shape, dtype));
                }
                tensors.insert(addr, made);
            }
            out.push((device, tensors));
        }
        Some(out)
    }

    /// What augmentation says of frames (their `fx_*` keys), by frame, with each original
    /// trace read as a stack.
    fn fx_nodes(&mut self) -> Vec<FxNode> {
        let found: Vec<(FrameId, [Option<StrId>; 3], Option<String>)> = self
            .frames
            .iter()
            .enumerate()
            .filter_map(|(i, f)| {
                let text = |wanted: &[StrId]| {
                    f.extra.iter().find_map(|(k, v)| match v {
                        Value::Str(t) if wanted.contains(k) => Some(t.clone()),
                        _ => None,
                    })
                };
                let op = text(&[key::FX_NODE_OP]);
                let name = text(&[key::FX_NODE_NAME]);
                let target = text(&[key::FX_NODE_TARGET, key::FX_NODE_INFO]);
                let original = text(&[key::FX_ORIGINAL_TRACE]);
                (op.is_some() || name.is_some() || target.is_some() || original.is_some())
                    .then_some((i as FrameId, [op, name, target], original))
            })
            .map(|(i, texts, original)| {
                let ids = texts.map(|t| t.map(|t| self.strings.intern(&t)));
                (i, ids, original)
            })
            .collect();
        found
            .into_iter()
            .map(|(frame, [op, name, target], original)| FxNode {
                frame,
                op,
                name,
                target,
                original: original.map_or(NO_STACK, |t| self.traceback_stack(&t)),
            })
            .collect()
    }

    fn device_traces(&mut self, node: Decoded, at: At) -> Result<DeviceRows, DecodeError> {
        let Decoded::List(lists) = node else {
            return Err(err(
                at,
                format!("'device_traces' is {}, not a list", node.kind()),
            ));
        };
        let mut out = Vec::with_capacity(lists.len());
        for (device, list) in lists.into_iter().enumerate() {
            let mut ranges: Vec<(u32, u32)> = Vec::new();
            let push = |ranges: &mut Vec<(u32, u32)>, start: u32, len: u32| match ranges.last_mut()
            {
                Some((s, n)) if *s + *n == start => *n += len,
                _ => ranges.push((start, len)),
            };
            match list {
                Decoded::List(items) => {
                    for (i, item) in items.into_iter().enumerate() {
                        match item {
                            Decoded::Rows(start, len) => push(&mut ranges, start, len),
                            Decoded::Dict(pairs)
                                if Self::is_trace_keys(pairs.iter().map(|p| &p.0)) =>
                            {
                                let row = self.trace_row(&pairs, at)?;
                                push(&mut ranges, row, 1);
                            }
                            other => {
                                return Err(err(
                                    at,
                                    self.not_a_trace_entry(
                                        format!("device_traces[{device}][{i}]"),
                                        &other,
                                    ),
                                ))
                            }
                        }
                    }
                }
                Decoded::Rows(start, len) => push(&mut ranges, start, len),
                other => {
                    return Err(err(
                        at,
                        format!("device_traces[{device}] is {}, not a list", other.kind()),
                    ))
                }
            }
            out.push((device as u32, ranges));
        }
        Ok(out)
    }

    /// `segments`, or with `host` the pinned host allocator's `host_segments`: those go on
    /// [`PINNED_HOST_DEVICE`] whatever `device` they say (the host has no device index).
    fn segments(
        &mut self,
        node: Decoded,
        host: bool,
        out: &mut Vec<(u32, Segment, Vec<Block>)>,
        at: At,
    ) -> Result<(), DecodeError> {
        let what = if host { "host_segments" } else { "segments" };
        let Decoded::List(items) = node else {
            return Err(err(at, format!("'{what}' is {}, not a list", node.kind())));
        };
        for (i, item) in items.into_iter().enumerate() {
            let Decoded::Dict(mut pairs) = item else {
                return Err(err(
                    at,
                    format!("{what}[{i}] is {}, not a dict", item.kind()),
                ));
            };
            if host {
                pairs.retain(|(k, _)| *k != Decoded::Str(key::DEVICE));
            }
            let (device, segment, blocks) = self.segment(pairs, i, at)?;
            let device = if host { PINNED_HOST_DEVICE } else { device };
            out.push((device, segment, blocks));
        }
        Ok(())
    }

    fn segment(
        &mut self,
        pairs: Vec<(Decoded, Decoded)>,
        index: usize,
        at: At,
    ) -> Result<(u32, Segment, Vec<Block>), DecodeError> {
        let what = "segment";
        let mut segment = Segment {
            stack: NO_STACK,
            ..Segment::default()
        };
        let mut device = 0u32;
        let mut blocks_node = None;
        let mut has_address = false;
        for (k, v) in pairs {
            let Decoded::Str(kid) = k else {
                return Err(err(
                    at,
                    format!("segments[{index}] has a key that is {}", k.kind()),
                ));
            };
            match kid {
                key::DEVICE => {
                    device = u32::try_from(self.u64_field(&k, &v, what, at)?).map_err(|_| {
                        err(at, format!("segments[{index}] has an absurd device index"))
                    })?
                }
                key::ADDRESS => {
                    segment.address = self.u64_field(&k, &v, what, at)?;
                    has_address = true;
                }
                key::TOTAL_SIZE => segment.total_size = self.u64_field(&k, &v, what, at)?,
                key::ALLOCATED_SIZE => {
                    segment.allocated_size = Some(self.u64_field(&k, &v, what, at)?)
                }
                key::ACTIVE_SIZE => segment.active_size = Some(self.u64_field(&k, &v, what, at)?),
                key::REQUESTED_SIZE => {
                    segment.requested_size = Some(self.u64_field(&k, &v, what, at)?)
                }
                key::STREAM => segment.stream = self.u64_field(&k, &v, what, at)?,
                key::SEGMENT_TYPE if matches!(v, Decoded::Str(_)) => {
                    segment.segment_type = match v {
                        Decoded::Str(key::LARGE) => SegmentType::Large,
                        Decoded::Str(key::SMALL) => SegmentType::Small,
                        _ => SegmentType::Unknown,
                    }
                }
                key::SEGMENT_POOL_ID if pool_pair(&v).is_some() => {
                    segment.pool_id = pool_pair(&v);
                    self.features.segment_pool_ids = true;
                }
                key::IS_EXPANDABLE if matches!(v, Decoded::Bool(_)) => {
                    segment.is_expandable = v == Decoded::Bool(true);
                    self.features.expandable_segments |= segment.is_expandable;
                }
                key::FRAMES => segment.stack = self.stack(&v, "a segment's 'frames'", at)?,
                key::BLOCKS => blocks_node = Some(v),
                other => {
                    let value = self.value(&v, 0)?;
                    segment.extra.push((other, value));
                }
            }
        }
        if !has_address {
            return Err(err(at, format!("segments[{index}] has no 'address'")));
        }
        let blocks = match blocks_node {
            Some(node) => self.blocks(node, &segment, index, at)?,
            None => Vec::new(),
        };
        Ok((device, segment, blocks))
    }

    fn blocks(
        &mut self,
        node: Decoded,
        segment: &Segment,
        seg_index: usize,
        at: At,
    ) -> Result<Vec<Block>, DecodeError> {
        let Decoded::List(items) = node else {
            return Err(err(
                at,
                format!(
                    "segments[{seg_index}]['blocks'] is {}, not a list",
                    node.kind()
                ),
            ));
        };
        let what = "block";
        let mut blocks = Vec::with_capacity(items.len());
        // Legacy blocks have no address: they are contiguous from the segment's start.
        let mut next_address = segment.address;
        for (i, item) in items.into_iter().enumerate() {
            let Decoded::Dict(pairs) = item else {
                return Err(err(
                    at,
                    format!(
                        "segments[{seg_index}]['blocks'][{i}] is {}, not a dict",
                        item.kind()
                    ),
                ));
            };
            let mut block = Block {
                address: next_address,
                stack: NO_STACK,
                ..Block::default()
            };
            for (k, v) in pairs {
                let Decoded::Str(kid) = k else {
                    return Err(err(at, format!("a block has a key that is {}", k.kind())));
                };
                match kid {
                    key::ADDRESS => block.address = self.u64_field(&k, &v, what, at)?,
                    key::SIZE => block.size = self.u64_field(&k, &v, what, at)?,
                    key::REQUESTED_SIZE => {
                        block.requested_size = Some(self.u64_field(&k, &v, what, at)?)
                    }
                    key::STATE => {
                        let Decoded::Str(s) = v else {
                            return Err(err(at, format!("a block's 'state' is {}", v.kind())));
                        };
                        block.state = match s {
                            key::ACTIVE_ALLOCATED => BlockState::ActiveAllocated,
                            key::ACTIVE_PENDING_FREE => BlockState::ActivePendingFree,
                            key::INACTIVE => BlockState::Inactive,
                            other => BlockState::Other(other),
                        };
                    }
                    key::FRAMES => {
                        block.stack = self.stack(&v, "a block's 'frames'", at)?;
                        self.features.block_frames = true;
                    }
                    key::HISTORY => {
                        block.history = self.history(v, at)?;
                        self.features.block_history = true;
                    }
                    other => {
                        let value = self.value(&v, 0)?;
                        block.extra.push((other, value));
                    }
                }
            }
            next_address = block.address.saturating_add(block.size);
            blocks.push(block);
        }
        Ok(blocks)
    }

    fn history(&mut self, node: Decoded, at: At) -> Result<Vec<HistoryEntry>, DecodeError> {
        let Decoded::List(items) = node else {
            return Err(err(
                at,
                format!("a block's 'history' is {}, not a list", node.kind()),
            ));
        };
        let what = "history entry";
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let pairs = match item {
                Decoded::Dict(pairs) => pairs,
                other => return Err(err(at, format!("a block's history holds {}", other.kind()))),
            };
            let mut entry = HistoryEntry {
                addr: 0,
                real_size: 0,
                stack: NO_STACK,
            };
            for (k, v) in pairs {
                match k {
                    Decoded::Str(key::ADDR) => entry.addr = self.u64_field(&k, &v, what, at)?,
                    Decoded::Str(key::REAL_SIZE) => {
                        entry.real_size = self.u64_field(&k, &v, what, at)?
                    }
                    Decoded::Str(key::FRAMES) => {
                        entry.stack = self.stack(&v, "a history entry's 'frames'", at)?
                    }
                    _ => {}
                }
            }
            out.push(entry);
        }
        Ok(out)
    }

    fn annotations(&mut self, node: Decoded, at: At) -> Result<Vec<Annotation>, DecodeError> {
        let Decoded::List(items) = node else {
            return Err(err(
                at,
                format!("'external_annotations' is {}, not a list", node.kind()),
            ));
        };
        let what = "annotation";
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let Decoded::Dict(pairs) = item else {
                return Err(err(
                    at,
                    format!("an external annotation is {}, not a dict", item.kind()),
                ));
            };
            let mut a = Annotation {
                name: key::EMPTY,
                stage: AnnotationStage::Start,
                device: 0,
                time_us: NO_TIME,
            };
            for (k, v) in pairs {
                match (&k, &v) {
                    (Decoded::Str(key::NAME), Decoded::Str(s)) => a.name = *s,
                    (Decoded::Str(key::STAGE), Decoded::Str(s)) => {
                        a.stage = match *s {
                            key::START => AnnotationStage::Start,
                            key::END => AnnotationStage::End,
                            other => AnnotationStage::Other(other),
                        }
                    }
                    (Decoded::Str(key::DEVICE), _) => {
                        a.device =
                            u32::try_from(self.u64_field(&k, &v, what, at)?).unwrap_or(u32::MAX)
                    }
                    (Decoded::Str(key::TIME_US), _) => {
                        a.time_us = self.i64_field(&k, &v, what, at)?
                    }
                    _ => {}
                }
            }
            out.push(a);
        }
        Ok(out)
    }
}

/// Per address, the tensors made there in order: `(shape, dtype)`.
type Tensors = FxHashMap<u64, Vec<(StrId, Option<StrId>)>>;

/// Gives each allocation of `device` the shape and dtype `shape_data` lists at its address:
/// the allocations at an address take the tensors listed there in the order they were made
/// (the last one when fewer are listed). One made before the trace comes first at its
/// address and, having no `alloc` row, keeps its tensor by address: it is freed in the trace
/// before any `alloc` there, or alive at the end in a block no row names.
fn set_tensors(device: &mut Device, tensors: &Tensors) {
    // How many tensors each address has given so far.
    let mut taken: FxHashMap<u64, usize> = FxHashMap::default();
    let mut take = |addr: u64| {
        let made = tensors.get(&addr).filter(|m| !m.is_empty())?;
        let n = taken.entry(addr).or_insert(0);
        let tensor = made[(*n).min(made.len() - 1)];
        *n += 1;
        Some(tensor)
    };
    let trace = &device.trace;
    let mut named: FxHashSet<u64> = FxHashSet::default();
    let mut rows = Vec::new();
    let mut before = Vec::new();
    for row in 0..trace.len() {
        let addr = trace.addr[row];
        match trace.action[row] {
            Action::Alloc => {
                named.insert(addr);
                if let Some((shape, dtype)) = take(addr) {
                    rows.push((row as u32, shape, dtype));
                }
            }
            Action::FreeCompleted if named.insert(addr) => {
                if let Some((shape, dtype)) = take(addr) {
                    before.push((addr, shape, dtype));
                }
            }
            _ => {}
        }
    }
    for block in &device.blocks {
        if block.state.is_allocated() && !named.contains(&block.address) {
            if let Some((shape, dtype)) = take(block.address) {
                before.push((block.address, shape, dtype));
            }
        }
    }
    if !rows.is_empty() || !before.is_empty() {
        device.trace.set_tensors(&rows, before);
    }
}

/// `source_code` as `(path, text)` pairs, when it is a dict of strings.
fn source_code(node: &Decoded) -> Option<impl Iterator<Item = (StrId, StrId)> + '_> {
    let Decoded::Dict(pairs) = node else {
        return None;
    };
    pairs
        .iter()
        .all(|p| matches!(p, (Decoded::Str(_), Decoded::Str(_))))
        .then(|| {
            pairs.iter().filter_map(|p| match p {
                (Decoded::Str(k), Decoded::Str(v)) => Some((*k, *v)),
                _ => None,
            })
        })
}

/// `("model.py", 42, "forward")` of a traceback line `  File "model.py", line 42, in forward`.
fn traceback_line(line: &str) -> Option<(&str, i64, &str)> {
    let rest = line.trim_start().strip_prefix("File \"")?;
    let (file, rest) = rest.split_once("\", line ")?;
    let (number, name) = rest.split_once(", in ")?;
    Some((file, number.parse().ok()?, name.trim_end()))
}

fn action_of(name: StrId) -> Action {
    match name {
        key::A_ALLOC => Action::Alloc,
        key::A_FREE_REQUESTED => Action::FreeRequested,
        key::A_FREE_COMPLETED => Action::FreeCompleted,
        key::A_SEGMENT_ALLOC => Action::SegmentAlloc,
        key::A_SEGMENT_FREE => Action::SegmentFree,
        key::A_SEGMENT_MAP => Action::SegmentMap,
        key::A_SEGMENT_UNMAP => Action::SegmentUnmap,
        key::A_SNAPSHOT => Action::Snapshot,
        key::A_OOM => Action::Oom,
        key::A_ANNOTATE => Action::Annotate,
        _ => Action::Other,
    }
}

fn pool_pair(node: &Decoded) -> Option<(i64, i64)> {
    match node {
        Decoded::Tuple(items) | Decoded::List(items) => match items.as_slice() {
            [Decoded::Int(a), Decoded::Int(b)] => Some((*a, *b)),
            _ => None,
        },
        _ => None,
    }
}

fn not_a_snapshot(builder: &Builder, root: &Decoded, at: At) -> DecodeError {
    let described = match root {
        Decoded::Dict(pairs) => {
            let keys: Vec<String> = pairs
                .iter()
                .take(6)
                .map(|(k, _)| builder.key_name(k))
                .collect();
            if pairs
                .iter()
                .any(|(k, _)| matches!(k, Decoded::Str(s) if builder.text(*s) == "traceEvents"))
            {
                return DecodeError::new(at.0, "this is a Chrome/Kineto trace ('traceEvents'), not a memory snapshot")
                    .with_hint("Kineto traces are not supported yet: record a snapshot with torch.cuda.memory._record_memory_history() and _dump_snapshot()");
            }
            format!("a dict with keys {}", keys.join(", "))
        }
        other => other.kind().to_string(),
    };
    DecodeError::new(at.0, format!("not a memory snapshot: the top level is {described}, without 'segments' or 'device_traces'"))
        .with_hint("expected the output of torch.cuda.memory._dump_snapshot()")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_of_another_shape_than_pytorchs_are_kept_as_written() {
        let json = br#"{"segments": [], "device_traces": [[]],
            "host_traces": "not recorded", "host_segments": [{"device": -1}],
            "shape_data": [1, 2], "source_code": {"a.py": 3}}"#;
        let s = crate::decode::decode_bytes(json).unwrap();
        assert!(s.device(crate::model::PINNED_HOST_DEVICE).is_none());
        assert!(s.source_code.is_empty());
        let mut kept: Vec<&str> = s.extra.iter().map(|(k, _)| k.as_str()).collect();
        kept.sort_unstable();
        assert_eq!(
            kept,
            ["host_segments", "host_traces", "shape_data", "source_code"]
        );
    }

    #[test]
    fn shape_data_gives_allocations_from_before_the_trace_the_first_tensor_at_their_address() {
        // 4096: alive before the trace and to its end (no row names it); 8192: made before
        // the trace, freed in it, then made again; 12288: made in the trace only.
        let json = br#"{"segments": [{"device": 0, "address": 4096, "total_size": 16384,
            "blocks": [{"address": 4096, "size": 512, "requested_size": 512,
                "state": "active_allocated"},
              {"address": 4608, "size": 3584, "requested_size": 0, "state": "inactive"},
              {"address": 8192, "size": 512, "requested_size": 512,
                "state": "active_allocated"},
              {"address": 12288, "size": 512, "requested_size": 512,
                "state": "active_allocated"}]}],
            "device_traces": [[
              {"action": "free_requested", "addr": 8192, "size": 512, "stream": 0},
              {"action": "free_completed", "addr": 8192, "size": 512, "stream": 0},
              {"action": "alloc", "addr": 8192, "size": 512, "stream": 0},
              {"action": "alloc", "addr": 12288, "size": 512, "stream": 0}]],
            "shape_data": {"0": {
              "4096": [["aten::empty", [128], "torch.float32"]],
              "8192": [["aten::ones", [512], "torch.int8"], ["aten::zeros", [256], "torch.int16"]],
              "12288": [["aten::randn", [64, 2], "torch.float32"]]}}}"#;
        let s = crate::decode::decode_bytes(json).unwrap();
        let trace = &s.devices[0].trace;
        let text = |t: Option<(StrId, Option<StrId>)>| {
            t.map(|(shape, dtype)| (s.str(shape), dtype.map(|d| s.str(d))))
        };
        let row = |r: usize| text(trace.shape(r).map(|shape| (shape, trace.dtype(r))));
        assert_eq!(
            text(trace.tensor_before(4096)),
            Some(("[128]", Some("torch.float32")))
        );
        assert_eq!(
            text(trace.tensor_before(8192)),
            Some(("[512]", Some("torch.int8")))
        );
        assert_eq!(row(2), Some(("[256]", Some("torch.int16"))));
        assert_eq!(row(3), Some(("[64, 2]", Some("torch.float32"))));
        assert_eq!(trace.tensor_before(12288), None);
        assert_eq!((row(0), row(1)), (None, None));
    }

    #[test]
    fn traceback_lines_name_their_frame() {
        assert_eq!(
            traceback_line("  File \"/home/u/model.py\", line 42, in forward"),
            Some(("/home/u/model.py", 42, "forward"))
        );
        assert_eq!(traceback_line("    a = self.net1(x)"), None);
        assert_eq!(traceback_line("x = a @ b"), None);
        assert_eq!(traceback_line("  File \"m.py\", line ?, in f"), None);
    }

    #[test]
    fn forward_frames_as_strings_are_a_stack_innermost_first() {
        let mut b = Builder::new();
        let outer = b
            .strings
            .intern("  File \"train.py\", line 40, in main\n    loss = model(x)\n");
        let inner = b
            .strings
            .intern("  File \"model.py\", line 42, in forward\n    a = self.net1(x)\n");
        let node = Decoded::List(vec![Decoded::Str(outer), Decoded::Str(inner)]);
        let stack = b.stack(&node, "forward_frames", At(None)).unwrap();
        let names: Vec<(String, i64)> = b
            .stacks
            .frames(stack)
            .iter()
            .map(|&f| {
                let f = &b.frames[f as usize];
                (b.strings.get(f.filename).to_string(), f.line)
            })
            .collect();
        assert_eq!(
            names,
            vec![("model.py".to_string(), 42), ("train.py".to_string(), 40)]
        );
    }

    #[test]
    fn forward_frames_of_another_shape_are_kept_as_written() {
        let mut b = Builder::new();
        let pairs = vec![
            (Decoded::Str(key::ACTION), Decoded::Str(key::A_ALLOC)),
            (
                Decoded::Str(key::FORWARD_FRAMES),
                Decoded::List(vec![Decoded::Int(3)]),
            ),
        ];
        let row = b.trace_row(&pairs, At(None)).unwrap();
        assert_eq!(b.staging.row(row as usize).forward_stack, NO_STACK);
        let trace = std::mem::take(&mut b.staging).into_trace();
        assert_eq!(trace.extra.len(), 1);
        assert_eq!(trace.extra[0].1, key::FORWARD_FRAMES);
    }

    #[test]
    fn user_metadata_as_a_dict_reads_as_key_value_lines() {
        let mut b = Builder::new();
        let k1 = b.strings.intern("phase");
        let v1 = b.strings.intern("backward");
        let k2 = b.strings.intern("layer");
        let pairs = vec![
            (Decoded::Str(key::ACTION), Decoded::Str(key::A_ANNOTATE)),
            (Decoded::Str(key::ADDR), Decoded::Int(4096)),
            (
                Decoded::Str(key::USER_METADATA),
                Decoded::Dict(vec![
                    (Decoded::Str(k1), Decoded::Str(v1)),
                    (Decoded::Str(k2), Decoded::Int(3)),
                ]),
            ),
        ];
        let row = b.trace_row(&pairs, At(None)).unwrap();
        let metadata = b.staging.row(row as usize).user_metadata.unwrap();
        assert_eq!(b.strings.get(metadata), "phase: backward\nlayer: 3");
    }
}
