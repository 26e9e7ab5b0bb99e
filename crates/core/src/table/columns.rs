//! One allocation's row: every column's value, and the keys the table sorts by.
//!
//! What is shared by many rows is worked out once per device ([`DeviceColumns`]): the frame
//! that names each distinct stack, the order of those names, the stream of blocks that were
//! alive before the trace. Not the place for choosing or grouping rows.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::{Column, Sort};
use crate::analysis::allocator::block_size;
use crate::analysis::axis::Axis;
use crate::analysis::categories::signals::Phase;
use crate::analysis::categories::{Component, DeviceCategories, Role};
use crate::analysis::elements::AllocationElements;
use crate::analysis::stacks::{
    allocation_stack, annotations_text, innermost_compiled_node, stack_text, AnnotationText,
    CompiledNode,
};
use crate::analysis::{Allocation, DeviceFacts, Origin, NO_ROW};
use crate::model::Row;
use crate::model::{Device, Snapshot, StackId, NO_STACK, NO_TIME};

/// One allocation as the table shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableRow {
    /// Index into the replay's allocations.
    pub allocation: u32,
    /// Element index on the allocations timeline (to pin it there).
    pub index: u32,
    /// The allocator's block size.
    pub size_bytes: u64,
    /// What the program asked for (what the allocated curve counts).
    pub requested_bytes: u64,
    pub address: u64,
    /// The raw `cudaStream_t`.
    pub stream: u64,
    /// The pool its memory is in, `(owner, id)`: `(0, 0)` for the default pool, another for
    /// a private pool (a CUDA graph's, a `torch.cuda.MemPool`).
    #[serde(default)]
    pub pool: (i64, i64),
    pub role: Role,
    /// Whether the role was deduced rather than observed (memory made before the trace).
    #[serde(default)]
    pub role_inferred: bool,
    pub component: Component,
    /// The phase it was made in; `None` when made before the trace.
    pub phase: Option<Phase>,
    /// The `alloc` event; `None` when allocated before the trace.
    pub alloc_event: Option<Row>,
    pub alloc_time_us: Option<i64>,
    /// The `free_completed` event; `None` while alive at the end.
    pub free_event: Option<Row>,
    pub free_time_us: Option<i64>,
    /// States from the first it is alive in to the first it is not (or to the end).
    pub lifetime_events: u32,
    /// Microseconds from its alloc to its free, when both have times.
    pub lifetime_us: Option<i64>,
    /// What made it: the user's frame as `file:line:name`, else the most telling framework
    /// frame.
    pub top_frame: Option<String>,
    pub top_frame_is_user: bool,
    /// The tensor's shape, when the file records tensors (`[8, 1024]`).
    #[serde(default)]
    pub shape: Option<String>,
    /// The tensor's dtype, when the file records it (`torch.float32`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    /// The compiled graph's node that made it, when made by compiled code
    /// (`augment_with_fx_traces`): its `top_frame` is then the node's original model code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiled_node: Option<Box<CompiledNode>>,
    /// What `annotate` rows attached to it, oldest first (decision 0028).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotations: Vec<AnnotationText>,
}

/// The number of elements of a shape written as `[8, 1024]` or `(8, 1024)`: the product of its
/// numbers (1 for a scalar's `[]`).
pub fn elements(shape: &str) -> u64 {
    shape
        .split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .filter_map(|p| p.parse::<u64>().ok())
        .fold(1u64, |n, d| n.saturating_mul(d))
}

/// What the table works out once per device (none of it depends on the categories).
pub struct DeviceColumns {
    /// `(top frame, is the user's code)`, `names[0]` is "no frame".
    pub names: Vec<(Option<String>, bool)>,
    /// Per name, its place in alphabetical order (no frame first).
    name_rank: Vec<u32>,
    /// Per allocation, its name.
    pub name: Vec<u32>,
    /// Segments by address: `(start, end, stream)`, for blocks alive before the trace.
    segments: Vec<(u64, u64, u64)>,
    pub has_time: bool,
}

impl DeviceColumns {
    pub fn new(snapshot: &Snapshot, device: &Device, facts: &DeviceFacts) -> Self {
        let mut name_of_stack: FxHashMap<StackId, u32> = FxHashMap::default();
        let mut names: Vec<(Option<String>, bool)> = vec![(None, false)];
        let mut index: FxHashMap<Option<String>, u32> = FxHashMap::default();
        index.insert(None, 0);
        let name = facts
            .allocations
            .iter()
            .map(|a| {
                let stack = allocation_stack(&device.trace, &a);
                if stack == NO_STACK {
                    return 0;
                }
                *name_of_stack.entry(stack).or_insert_with(|| {
                    let text = stack_text(snapshot, stack, false);
                    let next = names.len() as u32;
                    let id = *index.entry(text.top_frame.clone()).or_insert(next);
                    if id == next {
                        names.push((text.top_frame, text.top_frame_is_user));
                    }
                    id
                })
            })
            .collect();
        let mut order: Vec<u32> = (0..names.len() as u32).collect();
        order.sort_by(|&a, &b| names[a as usize].0.cmp(&names[b as usize].0));
        let mut name_rank = vec![0; names.len()];
        for (rank, &n) in order.iter().enumerate() {
            name_rank[n as usize] = rank as u32;
        }
        let mut segments: Vec<(u64, u64, u64)> = device
            .segments
            .iter()
            .map(|s| (s.address, s.address.saturating_add(s.total_size), s.stream))
            .collect();
        segments.sort_unstable();
        DeviceColumns {
            names,
            name_rank,
            name,
            segments,
            has_time: Axis::new(&device.trace).has_time(),
        }
    }
}

/// A device's rows: the model, the replay, the categories and what was worked out once.
#[derive(Clone, Copy)]
pub struct Rows<'a> {
    pub snapshot: &'a Snapshot,
    pub device: &'a Device,
    pub facts: &'a DeviceFacts,
    pub categories: &'a DeviceCategories,
    pub columns: &'a DeviceColumns,
    /// The allocator's block size of each allocation, when reconstructed; otherwise the
    /// request rounded up as the allocator rounds it.
    pub block_sizes: Option<&'a [u64]>,
}

impl<'a> Rows<'a> {
    pub fn allocation(&self, i: u32) -> Allocation {
        self.facts.allocations.at(i as usize)
    }

    pub fn block_size(&self, i: u32) -> u64 {
        match self.block_sizes.and_then(|b| b.get(i as usize)) {
            Some(&size) => size,
            None => block_size(self.allocation(i).size),
        }
    }

    /// The raw stream of allocation `i`: its event's, else its segment's.
    pub fn stream(&self, i: u32) -> u64 {
        let a = self.allocation(i);
        let row = if a.alloc_row != NO_ROW {
            a.alloc_row
        } else {
            a.free_row
        };
        if row != NO_ROW {
            let index = self.device.trace.stream[row as usize];
            return self
                .snapshot
                .streams
                .get(index as usize)
                .copied()
                .unwrap_or(0);
        }
        let segments = &self.columns.segments;
        match segments.partition_point(|s| s.0 <= a.addr) {
            0 => 0,
            n => {
                let (_, end, stream) = segments[n - 1];
                if a.addr < end {
                    stream
                } else {
                    0
                }
            }
        }
    }

    /// The pool allocation `i` is in (`(0, 0)`: the default pool).
    pub fn pool(&self, i: u32) -> (i64, i64) {
        self.categories.pooled.pool_id(i as usize)
    }

    pub fn role(&self, i: u32) -> Role {
        self.categories.roles[i as usize]
    }

    pub fn component(&self, i: u32) -> Component {
        self.categories.components[i as usize]
    }

    pub fn phase(&self, i: u32) -> Option<Phase> {
        let a = self.allocation(i);
        if a.origin() != Origin::Trace {
            return None;
        }
        self.categories
            .phases
            .phase
            .get(a.alloc_row as usize)
            .copied()
    }

    /// The first state allocation `i` is alive in, and the first it is not (the number of
    /// states when alive at the end).
    pub fn states(&self, i: u32) -> (u32, u32) {
        let (start, end) = self.allocation(i).alive_states();
        let states = self.device.trace.len() as u32 + 1;
        (start, end.min(states))
    }

    fn time(&self, row: u32) -> Option<i64> {
        if row == NO_ROW || !self.columns.has_time {
            return None;
        }
        self.device
            .trace
            .time_us
            .get(row as usize)
            .copied()
            .filter(|&t| t != NO_TIME)
    }

    /// Every column of allocation `i`.
    pub fn row(&self, i: u32) -> TableRow {
        let a = self.allocation(i);
        let (start, end) = self.states(i);
        let alloc_event =
            (a.origin() == Origin::Trace && a.alloc_row != NO_ROW).then_some(a.alloc_row);
        let free_event = (a.free_row != NO_ROW).then_some(a.free_row);
        let alloc_time_us = alloc_event.and_then(|r| self.time(r));
        let free_time_us = free_event.and_then(|r| self.time(r));
        let (alloc_event, free_event) = (alloc_event.map(Row::new), free_event.map(Row::new));
        let (top_frame, top_frame_is_user) =
            self.columns.names[self.columns.name[i as usize] as usize].clone();
        TableRow {
            allocation: i,
            index: AllocationElements::new(self.facts).position(i as usize),
            size_bytes: self.block_size(i),
            requested_bytes: a.size,
            address: a.addr,
            stream: self.stream(i),
            pool: self.pool(i),
            role: self.role(i),
            role_inferred: self.categories.is_inferred(i as usize),
            component: self.component(i),
            phase: self.phase(i),
            alloc_event,
            alloc_time_us,
            free_event,
            free_time_us,
            lifetime_events: end - start,
            lifetime_us: alloc_time_us.zip(free_time_us).map(|(a, f)| f - a),
            top_frame,
            top_frame_is_user,
            shape: self.shape(i).map(str::to_string),
            dtype: self.dtype(i).map(str::to_string),
            compiled_node: innermost_compiled_node(self.snapshot, a.stack).map(Box::new),
            annotations: self.annotations(i),
        }
    }

    /// The dtype of the tensor allocation `i` was made for, when the file records one (for
    /// a block alive before the trace too).
    pub fn dtype(&self, i: u32) -> Option<&'a str> {
        let id = self.allocation(i).dtype(&self.device.trace)?;
        Some(self.snapshot.str(id))
    }

    /// What `annotate` rows attached to allocation `i`, oldest first.
    pub fn annotations(&self, i: u32) -> Vec<AnnotationText> {
        annotations_text(self.snapshot, &self.device.trace, self.facts, i)
    }

    /// The shape of the tensor allocation `i` was made for, when the file records one (for a
    /// block alive before the trace too).
    pub fn shape(&self, i: u32) -> Option<&'a str> {
        let id = self.allocation(i).shape(&self.device.trace)?;
        Some(self.snapshot.str(id))
    }

    /// The value allocation `i` sorts by in `column` (ascending).
    pub fn sort_key(&self, column: Column, i: u32) -> u64 {
        let a = self.allocation(i);
        match column {
            Column::Size => self.block_size(i),
            Column::Requested => a.size,
            Column::Address => a.addr,
            Column::Stream => self.stream(i),
            Column::Role => self.role(i) as u64,
            Column::Component => self.component(i) as u64,
            Column::Phase => self.phase(i).map_or(0, |p| p as u64 + 1),
            Column::Allocated => self.states(i).0 as u64,
            Column::Freed => self.states(i).1 as u64,
            Column::Lifetime => {
                let (start, end) = self.states(i);
                (end - start) as u64
            }
            Column::TopFrame => {
                self.columns.name_rank[self.columns.name[i as usize] as usize] as u64
            }
            Column::Shape => self.shape(i).map_or(0, elements),
            // The default pool first, then private pools by id.
            Column::Pool => {
                let (owner, id) = self.pool(i);
                ((owner as u64) << 32) ^ (id as u64 & 0xffff_ffff)
            }
        }
    }

    /// Sorts allocation indices by `sort`; equal keys stay in allocation order.
    pub fn sort(&self, indices: &mut [u32], sort: Sort) {
        let mut keyed: Vec<(u64, u32)> = indices
            .iter()
            .map(|&i| {
                let key = self.sort_key(sort.column, i);
                (if sort.descending { !key } else { key }, i)
            })
            .collect();
        keyed.sort_unstable();
        for (slot, (_, i)) in indices.iter_mut().zip(keyed) {
            *slot = i;
        }
    }
}
