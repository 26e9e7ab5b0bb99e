//! The in-memory snapshot model every view is built on.
//!
//! One model for every input format and every PyTorch era: importers in [`crate::decode`]
//! produce it, views and [`crate::analysis`] read it. Strings, frames and stacks are interned
//! (each unique one stored once, referred to by a `u32` id); trace events are stored in columns
//! so that views can scan, filter and group them cheaply. Nothing here knows about pickle,
//! JSON or the browser.

pub mod cut;
mod intern;
pub mod redact;
mod rows;
pub mod text;
mod trace;
mod value;

pub use intern::{Frame, FrameId, FrameInterner, StackId, Stacks, StrId, Strings, NO_STACK};
pub use rows::{Row, State};
pub use trace::{Action, Trace, TraceRow, TraceStaging, NO_TIME};
pub use value::Value;

/// What produced the model: an allocator snapshot, or another of the profiler's memory
/// outputs brought into the same model by its importer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `torch.cuda.memory._dump_snapshot()` (pickle, gzip or JSON).
    #[default]
    AllocatorSnapshot,
    /// A `torch.profiler` / Kineto Chrome trace with `[memory]` events (`profile_memory=True`).
    KinetoTrace,
    /// `export_memory_timeline(…json)`: bytes per profiler category over time.
    MemoryTimeline,
    /// `export_memory_timeline(…raw.json.gz)`: the profiler's category changes, row by row.
    MemoryTimelineRaw,
    /// The peak-memory JSON of single-GPU memory profilers: the tensors alive at the peak,
    /// with shape, module and phase.
    PeakTensors,
}

impl Source {
    /// Whether the allocator's segments and blocks were recorded (only snapshots have them).
    pub fn has_segments(self) -> bool {
        self == Source::AllocatorSnapshot
    }
}

/// Something an importer could not bring into the model as it was, or had to work out: the
/// overview shows each as a warning.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ImportNote {
    /// Memory events of the CPU (or of a device type other than CUDA) are not devices here.
    CpuMemoryNotShown { events: u64 },
    /// The trace has no addresses (`Addr`, older profilers): `frees` frees were matched to
    /// the latest earlier allocation of the same size; `unmatched` matched none (memory from
    /// before the trace).
    FreesPairedBySize { frees: u64, unmatched: u64 },
    /// No reserved memory was recorded (no `Total Reserved`): only allocated memory is known.
    NoReservedRecorded,
    /// Only bytes per category were recorded: each allocation stands for a change of a
    /// category's bytes, not one tensor.
    CategoriesOnly,
    /// `rows` rows or events could not be read and were skipped (the first at `first`).
    Skipped { rows: u64, first: u64 },
}

impl ImportNote {
    /// The stable kind, as in `data-warning` and the command line's JSON.
    pub fn kind(&self) -> &'static str {
        match self {
            ImportNote::CpuMemoryNotShown { .. } => "cpu-memory-not-shown",
            ImportNote::FreesPairedBySize { .. } => "frees-paired-by-size",
            ImportNote::NoReservedRecorded => "no-reserved-recorded",
            ImportNote::CategoriesOnly => "categories-only",
            ImportNote::Skipped { .. } => "skipped",
        }
    }
}

/// The file name of the frame an importer gives an allocation whose only known fact is its
/// profiler category (`export_memory_timeline`); the frame's name is the category
/// (`ACTIVATION`, `PARAMETER`…), which the categories read as its role.
pub const PROFILER_CATEGORY_FILE: &str = "<torch.profiler memory category>";

/// The file name of the frames an importer gives the modules a tensor was made in (the
/// peak-memory JSON's `module` path, outermost first): the frame's name is the module's part
/// of the path, numbered siblings folded (`layers.*`). The tables' model modules read them.
pub const MODULE_FILE: &str = "<nn.Module>";

/// The file name of the frame naming the phase a profiler says a tensor was made in
/// (`setup_model_and_optimizer`, `forward_backward_iter_3`, `optimizer_step_iter_3`), which
/// the categories read as its phase and role.
pub const PROFILER_PHASE_FILE: &str = "<memory profiler phase>";

/// What a profiler reported for a device whose allocator segments were not recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reported {
    /// Reserved bytes after the last event (`Total Reserved`).
    pub reserved_end: u64,
    /// Bytes allocated before the first event and never freed in the trace (`Total
    /// Allocated` before it, less what the trace frees of it).
    pub held_from_before: u64,
}

/// What kind of device a snapshot's memory is on. Every backend that writes PyTorch's
/// snapshot format (`torch_npu`, XPU, MTIA) writes it as CUDA does; which one wrote it shows in
/// its frames: its allocator's C++ names and its Python package.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceKind {
    #[default]
    Cuda,
    /// Ascend NPUs (`torch_npu`).
    Npu,
    /// Intel GPUs (`torch.xpu`).
    Xpu,
    /// Meta's accelerators (`torch.mtia`).
    Mtia,
    /// Page-locked host memory of the pinned memory allocator (`host_segments`,
    /// `host_traces`): the device [`PINNED_HOST_DEVICE`], beside the accelerators.
    PinnedHost,
}

/// The device id pinned host memory gets: one past every index PyTorch gives an accelerator,
/// so it sorts after them and no accelerator's index can take it.
pub const PINNED_HOST_DEVICE: u32 = u32::MAX;

impl DeviceKind {
    /// The name PyTorch gives its devices: `cuda`, `npu`.
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Cuda => "cuda",
            DeviceKind::Npu => "npu",
            DeviceKind::Xpu => "xpu",
            DeviceKind::Mtia => "mtia",
            DeviceKind::PinnedHost => "host",
        }
    }

    /// What device `id` of this kind is called: `cuda:0`, `npu:3`, `host (pinned)` (the host
    /// has one pinned allocator, so no index). [`PINNED_HOST_DEVICE`] is the host whatever
    /// kind it is named with, so a view that knows only the snapshot's kind still names it.
    pub fn device_name(self, id: u32) -> String {
        if self == DeviceKind::PinnedHost || id == PINNED_HOST_DEVICE {
            "host (pinned)".to_string()
        } else {
            format!("{}:{id}", self.name())
        }
    }

    /// The kind whose allocator or package a frame (`file`, function `name`) belongs to, if
    /// any but CUDA's.
    pub fn of_frame(file: &str, name: &str) -> Option<DeviceKind> {
        let in_either =
            |needles: &[&str]| needles.iter().any(|n| file.contains(n) || name.contains(n));
        if in_either(&["torch_npu", "c10_npu", "NPUCachingAllocator"]) {
            Some(DeviceKind::Npu)
        } else if in_either(&[
            "c10::xpu",
            "torch/xpu/",
            "XPUCachingAllocator",
            "intel_extension_for_pytorch",
        ]) {
            Some(DeviceKind::Xpu)
        } else if in_either(&["c10::mtia", "torch/mtia/", "MTIACachingAllocator"]) {
            Some(DeviceKind::Mtia)
        } else {
            None
        }
    }
}

/// A decoded snapshot: everything `torch.cuda.memory._snapshot()` recorded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// What produced it.
    pub source: Source,
    /// What its importer could not bring in as it was, or worked out.
    pub notes: Vec<ImportNote>,
    pub strings: Strings,
    pub frames: Vec<Frame>,
    pub stacks: Stacks,
    /// Raw `cudaStream_t` values; trace rows refer to them by index.
    pub streams: Vec<u64>,
    /// Private pool ids `(owner, id)` referred to by index from trace rows.
    pub pools: Vec<(i64, i64)>,
    /// One entry per device that has a trace list or a segment, ascending by id.
    pub devices: Vec<Device>,
    /// `allocator_settings`, as written (absent before PyTorch 2.3).
    pub allocator_settings: Option<Value>,
    /// `external_annotations`: named phase markers.
    pub annotations: Vec<Annotation>,
    /// How the file was laid out at the top level.
    pub top_level: TopLevel,
    /// Top-level keys this model does not know, kept as written.
    pub extra: Vec<(String, Value)>,
    /// Which optional keys the file used, to tell its PyTorch era.
    pub features: Features,
    /// The kind of device its memory is on.
    pub device_kind: DeviceKind,
    /// What `augment_with_fx_traces` says of frames of compiled code, by frame.
    pub fx_nodes: Vec<FxNode>,
    /// `source_code`, as capture helpers add it: the text of the program's files by path, in
    /// file order.
    pub source_code: Vec<(String, String)>,
}

/// What `_dump_snapshot(augment_with_fx_traces=True)` adds to a frame of a compiled graph's
/// generated code (`fx_generated_<hash>.py`): the graph node its line runs, and the model code
/// the node was traced from.
#[derive(Clone, Debug, PartialEq)]
pub struct FxNode {
    /// The frame of the generated code.
    pub frame: FrameId,
    /// `fx_node_op`: `call_function`, `call_module`, `placeholder`…
    pub op: Option<StrId>,
    /// `fx_node_name`: `addmm_1`.
    pub name: Option<StrId>,
    /// `fx_node_target` (`fx_node_info` in some releases): `aten.addmm.default`.
    pub target: Option<StrId>,
    /// `fx_original_trace` read as frames, innermost first ([`NO_STACK`] when absent or not
    /// traceback text).
    pub original: StackId,
}

/// Optional keys seen anywhere in the file. Each arrived in a known PyTorch release.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// Blocks with `history` and no `address` (2.0).
    pub block_history: bool,
    /// Blocks with their own `frames` (2.1).
    pub block_frames: bool,
    pub trace_frames: bool,
    /// `time_us` on trace entries (2.2).
    pub time_us: bool,
    /// `compile_context` on trace entries (2.7).
    pub compile_context: bool,
    /// `user_metadata` on trace entries (2.10).
    pub user_metadata: bool,
    /// `pool_id` or `forward_frames` on trace entries (2026).
    pub pool_id: bool,
    pub forward_frames: bool,
    pub expandable_segments: bool,
    pub segment_pool_ids: bool,
}

/// The top-level shape of the input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TopLevel {
    /// `{segments, device_traces, ...}`, as written by `_dump_snapshot`.
    #[default]
    Dict,
    /// A bare list of segment dicts, as written by pickling `torch.cuda.memory_snapshot()`.
    SegmentList,
}

/// Everything recorded for one CUDA device.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Device {
    pub id: u32,
    /// True when `device_traces` had a list for this device (even an empty one).
    pub has_trace_list: bool,
    pub trace: Trace,
    /// Segments in file order.
    pub segments: Vec<Segment>,
    /// Blocks of all segments, in segment order; each segment refers to a range of them.
    pub blocks: Vec<Block>,
    /// What a profiler reported in place of segments (profiler traces only).
    pub reported: Option<Reported>,
}

/// One cudaMalloc'd region (or one expandable segment) at the time of the snapshot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Segment {
    pub address: u64,
    pub total_size: u64,
    /// As written by PyTorch; `None` when the key was absent.
    pub allocated_size: Option<u64>,
    pub active_size: Option<u64>,
    pub requested_size: Option<u64>,
    pub stream: u64,
    pub segment_type: SegmentType,
    /// `(owner, id)`; `(0, 0)` is the default pool. `None` when absent (before 2.1).
    pub pool_id: Option<(i64, i64)>,
    pub is_expandable: bool,
    /// Stack of the cudaMalloc, when recorded.
    pub stack: StackId,
    /// Range of this segment's blocks in [`Device::blocks`].
    pub blocks: std::ops::Range<u32>,
    pub extra: Vec<(StrId, Value)>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SegmentType {
    #[default]
    Unknown,
    Large,
    Small,
}

/// A piece of a segment: allocated, waiting to be freed, or cached free memory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Block {
    pub address: u64,
    pub size: u64,
    pub requested_size: Option<u64>,
    pub state: BlockState,
    pub stack: StackId,
    /// Legacy (2.0) per-block allocation history, oldest first.
    pub history: Vec<HistoryEntry>,
    pub extra: Vec<(StrId, Value)>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BlockState {
    ActiveAllocated,
    ActivePendingFree,
    #[default]
    Inactive,
    /// A state this model does not know, kept by name.
    Other(StrId),
}

impl BlockState {
    /// Whether the block counts as allocated memory (everything but cached free memory).
    pub fn is_allocated(self) -> bool {
        !matches!(self, BlockState::Inactive)
    }
}

/// One `history` item of a legacy block.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistoryEntry {
    pub addr: u64,
    pub real_size: u64,
    pub stack: StackId,
}

/// One `external_annotations` item: the start or end of a named scope.
#[derive(Clone, Debug, PartialEq)]
pub struct Annotation {
    pub name: StrId,
    pub stage: AnnotationStage,
    pub device: u32,
    pub time_us: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnnotationStage {
    Start,
    End,
    Other(StrId),
}

impl Snapshot {
    /// Device indices present in the snapshot (from traces or segments), ascending.
    pub fn device_ids(&self) -> Vec<u32> {
        self.devices.iter().map(|d| d.id).collect()
    }

    pub fn device(&self, id: u32) -> Option<&Device> {
        self.devices.iter().find(|d| d.id == id)
    }

    /// The device to show first: most trace entries, then most segments, then lowest id.
    pub fn default_device(&self) -> Option<u32> {
        self.devices
            .iter()
            .max_by_key(|d| (d.trace.len(), d.segments.len(), std::cmp::Reverse(d.id)))
            .map(|d| d.id)
    }

    /// The text of an interned string.
    pub fn str(&self, id: StrId) -> &str {
        self.strings.get(id)
    }

    /// The kind of device its frames say its memory is on (CUDA when none says another),
    /// each distinct frame read once.
    pub fn frames_device_kind(&self) -> DeviceKind {
        self.frames
            .iter()
            .find_map(|f| DeviceKind::of_frame(self.str(f.filename), self.str(f.name)))
            .unwrap_or_default()
    }

    /// The kind of device `id` is: the snapshot's, or pinned host memory.
    pub fn kind_of(&self, id: u32) -> DeviceKind {
        if id == PINNED_HOST_DEVICE {
            DeviceKind::PinnedHost
        } else {
            self.device_kind
        }
    }

    /// What device `id` is called: `cuda:0`, `npu:3`, `host (pinned)`.
    pub fn device_name(&self, id: u32) -> String {
        self.kind_of(id).device_name(id)
    }

    /// What augmentation says of frame `frame`, when it is a compiled graph's.
    pub fn fx_node(&self, frame: FrameId) -> Option<&FxNode> {
        self.fx_nodes
            .binary_search_by_key(&frame, |n| n.frame)
            .ok()
            .map(|i| &self.fx_nodes[i])
    }

    /// The frames of a stack, innermost first (empty for [`NO_STACK`]).
    pub fn stack_frames(&self, stack: StackId) -> impl Iterator<Item = &Frame> + '_ {
        self.stacks
            .frames(stack)
            .iter()
            .map(move |&f| &self.frames[f as usize])
    }

    /// Heap bytes held by the model (columns, tables and interned text), for benchmarks.
    pub fn heap_bytes(&self) -> usize {
        let devices: usize = self
            .devices
            .iter()
            .map(|d| {
                d.trace.heap_bytes()
                    + d.segments.capacity() * std::mem::size_of::<Segment>()
                    + d.blocks.capacity() * std::mem::size_of::<Block>()
            })
            .sum();
        devices
            + self.strings.heap_bytes()
            + self.frames.capacity() * std::mem::size_of::<Frame>()
            + self.stacks.heap_bytes()
            + self.streams.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(id: u32, rows: usize, segments: usize) -> Device {
        let mut trace = Trace::default();
        for _ in 0..rows {
            trace.push(TraceRow::new(Action::Alloc));
        }
        Device {
            id,
            trace,
            segments: vec![Segment::default(); segments],
            ..Device::default()
        }
    }

    #[test]
    fn pinned_host_memory_is_named_as_the_host_whatever_kind_names_it() {
        assert_eq!(DeviceKind::Cuda.device_name(1), "cuda:1");
        assert_eq!(DeviceKind::Npu.device_name(0), "npu:0");
        assert_eq!(DeviceKind::PinnedHost.device_name(7), "host (pinned)");
        assert_eq!(
            DeviceKind::Cuda.device_name(PINNED_HOST_DEVICE),
            "host (pinned)"
        );
        let s = Snapshot::default();
        assert_eq!(s.kind_of(PINNED_HOST_DEVICE), DeviceKind::PinnedHost);
        assert_eq!(s.kind_of(0), DeviceKind::Cuda);
    }

    #[test]
    fn default_device_prefers_trace_then_segments_then_lowest_id() {
        let mut s = Snapshot {
            devices: vec![device(0, 0, 5), device(1, 3, 0), device(2, 3, 1)],
            ..Snapshot::default()
        };
        assert_eq!(s.default_device(), Some(2));
        s.devices = vec![device(0, 0, 1), device(3, 0, 2)];
        assert_eq!(s.default_device(), Some(3));
        s.devices = vec![device(4, 0, 0), device(1, 0, 0)];
        assert_eq!(s.default_device(), Some(1));
        s.devices.clear();
        assert_eq!(s.default_device(), None);
    }
}
