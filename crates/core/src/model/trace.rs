//! The allocator's trace ring buffer for one device, stored as columns.
//!
//! One row per `TraceEntry`, oldest first. Columns that most files leave at their default
//! (`compile_context`, `user_metadata`, `pool_id`, `forward_frames`) take no memory until a row
//! has a value. This module stores rows; pairing and curves are in [`crate::analysis`].

use std::sync::Arc;

use super::{StackId, StrId, Value, NO_STACK};

/// `time_us` of a row that has none (files before PyTorch 2.2).
pub const NO_TIME: i64 = i64::MIN;

/// What a trace row records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Action {
    Alloc = 0,
    FreeRequested = 1,
    FreeCompleted = 2,
    SegmentAlloc = 3,
    SegmentFree = 4,
    SegmentMap = 5,
    SegmentUnmap = 6,
    Snapshot = 7,
    Oom = 8,
    Annotate = 9,
    /// An action this model does not know; its name is in [`Trace::unknown_actions`].
    Other = 10,
}

impl Action {
    pub const KNOWN: [Action; 10] = [
        Action::Alloc,
        Action::FreeRequested,
        Action::FreeCompleted,
        Action::SegmentAlloc,
        Action::SegmentFree,
        Action::SegmentMap,
        Action::SegmentUnmap,
        Action::Snapshot,
        Action::Oom,
        Action::Annotate,
    ];

    /// The name PyTorch writes.
    pub fn name(self) -> &'static str {
        match self {
            Action::Alloc => "alloc",
            Action::FreeRequested => "free_requested",
            Action::FreeCompleted => "free_completed",
            Action::SegmentAlloc => "segment_alloc",
            Action::SegmentFree => "segment_free",
            Action::SegmentMap => "segment_map",
            Action::SegmentUnmap => "segment_unmap",
            Action::Snapshot => "snapshot",
            Action::Oom => "oom",
            Action::Annotate => "annotate",
            Action::Other => "other",
        }
    }

    pub fn from_name(name: &str) -> Action {
        Action::KNOWN
            .into_iter()
            .find(|a| a.name() == name)
            .unwrap_or(Action::Other)
    }
}

/// A dense `u32` column that stays empty until some row differs from `default`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LazyColumn {
    values: Vec<u32>,
}

impl LazyColumn {
    /// Sets `row` (the next row, or one after a gap of defaults). A default is not stored:
    /// the rows after the last value stored read as the default, and [`LazyColumn::finish`]
    /// pads them, so the rows of a column nearly all defaults cost nothing while they come.
    #[inline(always)]
    fn set(&mut self, row: usize, value: u32, default: u32, rows_expected: usize) {
        if value != default {
            self.store(row, value, default, rows_expected);
        }
    }

    /// The first value stored makes room for `rows_expected` rows at once, as the columns
    /// every row fills have: a column of a large file grown by doubling would leave its
    /// grown-out copies behind in a WebAssembly memory, which never shrinks.
    #[inline(never)]
    fn store(&mut self, row: usize, value: u32, default: u32, rows_expected: usize) {
        if self.values.is_empty() {
            self.values.reserve_exact(rows_expected.max(row + 1));
        }
        if self.values.len() < row {
            self.values.resize(row, default);
        }
        self.values.push(value);
    }

    fn finish(&mut self, len: usize, default: u32) {
        if !self.values.is_empty() {
            self.values.resize(len, default);
        }
    }

    fn get(&self, row: usize, default: u32) -> u32 {
        self.values.get(row).copied().unwrap_or(default)
    }

    /// Whether any row has a non-default value.
    pub fn is_used(&self) -> bool {
        !self.values.is_empty()
    }

    fn heap_bytes(&self) -> usize {
        self.values.capacity() * 4
    }
}

/// One row's values, as handed to [`Trace::push`] and returned by [`Trace::row`].
#[derive(Clone, Debug, PartialEq)]
pub struct TraceRow {
    pub action: Action,
    /// `addr`; for `oom` rows, `device_free` (the free bytes PyTorch reported).
    pub addr: u64,
    pub size: u64,
    /// Index into [`crate::model::Snapshot::streams`].
    pub stream: u16,
    pub time_us: i64,
    pub stack: StackId,
    /// `compile_context`, when set to something other than "N/A".
    pub compile_context: Option<StrId>,
    /// `user_metadata`, when not empty.
    pub user_metadata: Option<StrId>,
    /// Index into [`crate::model::Snapshot::pools`].
    pub pool: Option<u32>,
    pub forward_stack: StackId,
    /// Name of an action this model does not know.
    pub unknown_action: Option<StrId>,
}

impl TraceRow {
    /// A row with only its action set: no time, no stack, defaults elsewhere.
    pub fn new(action: Action) -> Self {
        TraceRow {
            action,
            addr: 0,
            size: 0,
            stream: 0,
            time_us: NO_TIME,
            stack: NO_STACK,
            compile_context: None,
            user_metadata: None,
            pool: None,
            forward_stack: NO_STACK,
            unknown_action: None,
        }
    }
}

const NONE_U32: u32 = u32::MAX;

/// Trace rows of one device, as columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    pub action: Vec<Action>,
    /// Shared with the analysis, whose allocation records read their address and size from
    /// their rows rather than keep copies (see [`crate::analysis::Allocations`]).
    pub addr: Arc<Vec<u64>>,
    pub size: Arc<Vec<u64>>,
    pub stream: Vec<u16>,
    pub time_us: Vec<i64>,
    pub stack: Vec<StackId>,
    compile_context: LazyColumn,
    user_metadata: LazyColumn,
    pool: LazyColumn,
    forward_stack: LazyColumn,
    /// A tensor's shape as a profiler wrote it (`[8, 1024]`), for rows of files that record
    /// tensors (the peak-memory JSON); empty for snapshots.
    shape: LazyColumn,
    /// The tensor's dtype beside its shape (`torch.float32`), when the file records one.
    dtype: LazyColumn,
    /// `(address, shape, dtype)` of the tensors of allocations made before the first row, by
    /// ascending address, when the file records them: no `alloc` row carries theirs.
    tensors_before: Vec<(u64, StrId, Option<StrId>)>,
    /// `(row, name)` of rows whose action is [`Action::Other`].
    pub unknown_actions: Vec<(u32, StrId)>,
    /// `(row, key, value)` for keys this model does not know.
    pub extra: Vec<(u32, StrId, Value)>,
}

impl Trace {
    pub fn len(&self) -> usize {
        self.action.len()
    }

    pub fn is_empty(&self) -> bool {
        self.action.is_empty()
    }

    /// Makes room for exactly `rows` more rows in the columns every row fills but `addr` and
    /// `size`, which a [`TraceStaging`] keeps.
    fn reserve_unshared(&mut self, rows: usize) {
        self.action.reserve_exact(rows);
        self.stream.reserve_exact(rows);
        self.time_us.reserve_exact(rows);
        self.stack.reserve_exact(rows);
    }

    #[inline]
    pub fn push(&mut self, row: TraceRow) {
        Arc::make_mut(&mut self.addr).push(row.addr);
        Arc::make_mut(&mut self.size).push(row.size);
        self.push_unshared(row);
    }

    /// [`Trace::push`] but for `addr` and `size`, which the caller pushes.
    #[inline(always)]
    fn push_unshared(&mut self, row: TraceRow) {
        let index = self.action.len();
        self.action.push(row.action);
        self.stream.push(row.stream);
        self.time_us.push(row.time_us);
        self.stack.push(row.stack);
        let rows = self.action.capacity();
        self.compile_context.set(
            index,
            row.compile_context.unwrap_or(NONE_U32),
            NONE_U32,
            rows,
        );
        self.user_metadata
            .set(index, row.user_metadata.unwrap_or(NONE_U32), NONE_U32, rows);
        self.pool
            .set(index, row.pool.unwrap_or(NONE_U32), NONE_U32, rows);
        self.forward_stack
            .set(index, row.forward_stack, NO_STACK, rows);
        if let Some(name) = row.unknown_action {
            self.unknown_actions.push((index as u32, name));
        }
    }

    /// Pads the lazy columns to the full length and returns spare capacity; call once all
    /// rows are in.
    pub fn finish(&mut self) {
        let len = self.len();
        self.action.shrink_to_fit();
        Arc::make_mut(&mut self.addr).shrink_to_fit();
        Arc::make_mut(&mut self.size).shrink_to_fit();
        self.stream.shrink_to_fit();
        self.time_us.shrink_to_fit();
        self.stack.shrink_to_fit();
        self.compile_context.finish(len, NONE_U32);
        self.user_metadata.finish(len, NONE_U32);
        self.pool.finish(len, NONE_U32);
        self.forward_stack.finish(len, NO_STACK);
        self.shape.finish(len, NONE_U32);
        self.dtype.finish(len, NONE_U32);
    }

    /// Sets the shape of the tensor the last row pushed was made for.
    pub fn set_last_shape(&mut self, shape: StrId) {
        if let Some(row) = self.len().checked_sub(1) {
            self.shape.set(row, shape, NONE_U32, self.action.capacity());
        }
    }

    /// The shape of the tensor row `row` was made for, when the file records one.
    pub fn shape(&self, row: usize) -> Option<StrId> {
        Some(self.shape.get(row, NONE_U32)).filter(|&v| v != NONE_U32)
    }

    /// Whether any row, or any allocation made before the first row, has a shape.
    pub fn has_shapes(&self) -> bool {
        self.shape.is_used() || !self.tensors_before.is_empty()
    }

    /// Sets the shape and dtype of the tensors rows were made for, `(row, shape, dtype)` in
    /// ascending rows, and of those allocations made before the first row were made for,
    /// `(address, shape, dtype)` in any order, once every row is in (what a capture helper's
    /// `shape_data` says); replaces any shapes set before.
    pub fn set_tensors(
        &mut self,
        tensors: &[(u32, StrId, Option<StrId>)],
        mut before: Vec<(u64, StrId, Option<StrId>)>,
    ) {
        let len = self.len();
        self.shape = LazyColumn::default();
        self.dtype = LazyColumn::default();
        for (row, shape, dtype) in tensors {
            let row = *row as usize;
            if row < len {
                self.shape.set(row, *shape, NONE_U32, len);
                self.dtype
                    .set(row, dtype.unwrap_or(NONE_U32), NONE_U32, len);
            }
        }
        self.shape.finish(len, NONE_U32);
        self.dtype.finish(len, NONE_U32);
        before.sort_unstable_by_key(|&(addr, _, _)| addr);
        self.tensors_before = before;
    }

    /// The shape and dtype of the tensor the allocation at `addr` made before the first row
    /// was made for, when the file records it.
    pub fn tensor_before(&self, addr: u64) -> Option<(StrId, Option<StrId>)> {
        let i = self
            .tensors_before
            .binary_search_by_key(&addr, |&(a, _, _)| a)
            .ok()?;
        let (_, shape, dtype) = self.tensors_before[i];
        Some((shape, dtype))
    }

    /// The dtype of the tensor row `row` was made for, when the file records one.
    pub fn dtype(&self, row: usize) -> Option<StrId> {
        Some(self.dtype.get(row, NONE_U32)).filter(|&v| v != NONE_U32)
    }

    pub fn compile_context(&self, row: usize) -> Option<StrId> {
        Some(self.compile_context.get(row, NONE_U32)).filter(|&v| v != NONE_U32)
    }

    pub fn user_metadata(&self, row: usize) -> Option<StrId> {
        Some(self.user_metadata.get(row, NONE_U32)).filter(|&v| v != NONE_U32)
    }

    pub fn pool(&self, row: usize) -> Option<u32> {
        Some(self.pool.get(row, NONE_U32)).filter(|&v| v != NONE_U32)
    }

    pub fn forward_stack(&self, row: usize) -> StackId {
        self.forward_stack.get(row, NO_STACK)
    }

    pub fn has_compile_context(&self) -> bool {
        self.compile_context.is_used()
    }

    pub fn has_user_metadata(&self) -> bool {
        self.user_metadata.is_used()
    }

    /// All values of one row.
    pub fn row(&self, row: usize) -> TraceRow {
        TraceRow {
            addr: self.addr[row],
            size: self.size[row],
            ..self.row_unshared(row)
        }
    }

    /// [`Trace::row`] with `addr` and `size` left at 0, for a [`TraceStaging`] that keeps them.
    fn row_unshared(&self, row: usize) -> TraceRow {
        let unknown_action = if self.action[row] == Action::Other {
            self.unknown_actions
                .binary_search_by_key(&(row as u32), |&(r, _)| r)
                .ok()
                .map(|i| self.unknown_actions[i].1)
        } else {
            None
        };
        TraceRow {
            action: self.action[row],
            addr: 0,
            size: 0,
            stream: self.stream[row],
            time_us: self.time_us[row],
            stack: self.stack[row],
            compile_context: self.compile_context(row),
            user_metadata: self.user_metadata(row),
            pool: self.pool(row),
            forward_stack: self.forward_stack(row),
            unknown_action,
        }
    }

    /// Appends all rows of `other` (used when a device's trace arrives in pieces).
    pub fn append(&mut self, other: &Trace) {
        let base = self.len() as u32;
        for row in 0..other.len() {
            self.push(other.row(row));
        }
        self.extra.extend(
            other
                .extra
                .iter()
                .map(|(r, k, v)| (r + base, *k, v.clone())),
        );
    }

    /// Splits the rows into one trace per entry of `runs`, each holding the rows its runs
    /// (`(first row, count)`) list, in that order; a row may be listed by several traces or by
    /// none. Goes one column at a time and frees each once every trace has its part, so a
    /// split holds one column more than the rows, not a second copy of them: a large file's
    /// rows, staged in the order they were decoded, are put in their devices' order at the
    /// most memory a load needs. A single trace listing every row in order takes the columns
    /// as they are.
    pub fn split(mut self, runs: &[&[(u32, u32)]]) -> Vec<Trace> {
        let len = self.len() as u32;
        if let [[(0, count)]] = runs {
            if *count == len {
                self.finish();
                return vec![self];
            }
        }
        fn gather<T: Copy>(column: Vec<T>, runs: &[&[(u32, u32)]]) -> Vec<Vec<T>> {
            runs.iter()
                .map(|runs| {
                    let rows = runs.iter().map(|&(_, n)| n as usize).sum();
                    let mut part = Vec::with_capacity(rows);
                    for &(first, n) in runs.iter() {
                        part.extend_from_slice(&column[first as usize..(first + n) as usize]);
                    }
                    part
                })
                .collect()
        }
        fn gather_lazy(
            column: &mut LazyColumn,
            default: u32,
            runs: &[&[(u32, u32)]],
        ) -> Vec<LazyColumn> {
            let column = std::mem::take(column);
            runs.iter()
                .map(|runs| {
                    if !column.is_used() {
                        return LazyColumn::default();
                    }
                    let values: Vec<u32> = runs
                        .iter()
                        .flat_map(|&(first, n)| first..first + n)
                        .map(|row| column.get(row as usize, default))
                        .collect();
                    if values.iter().all(|&v| v == default) {
                        LazyColumn::default()
                    } else {
                        LazyColumn { values }
                    }
                })
                .collect()
        }
        let mut traces: Vec<Trace> = runs.iter().map(|_| Trace::default()).collect();
        macro_rules! split_column {
            ($field:ident) => {
                for (trace, part) in traces
                    .iter_mut()
                    .zip(gather(std::mem::take(&mut self.$field), runs))
                {
                    trace.$field = part;
                }
            };
            (shared $field:ident) => {
                let column = Arc::unwrap_or_clone(std::mem::take(&mut self.$field));
                for (trace, part) in traces.iter_mut().zip(gather(column, runs)) {
                    trace.$field = Arc::new(part);
                }
            };
            ($field:ident, $default:expr) => {
                for (trace, part) in
                    traces
                        .iter_mut()
                        .zip(gather_lazy(&mut self.$field, $default, runs))
                {
                    trace.$field = part;
                }
            };
        }
        split_column!(shared addr);
        split_column!(shared size);
        split_column!(time_us);
        split_column!(stack);
        split_column!(stream);
        split_column!(compile_context, NONE_U32);
        split_column!(user_metadata, NONE_U32);
        split_column!(pool, NONE_U32);
        split_column!(forward_stack, NO_STACK);
        split_column!(shape, NONE_U32);
        split_column!(dtype, NONE_U32);
        // Unknown actions and unknown keys are few and sorted by row: each new row finds its
        // own by binary search, before the actions go.
        for (trace, runs) in traces.iter_mut().zip(runs) {
            let rows = runs.iter().flat_map(|&(first, n)| first..first + n);
            for (new_row, row) in rows.enumerate() {
                let new_row = new_row as u32;
                if self.action[row as usize] == Action::Other {
                    if let Ok(i) = self.unknown_actions.binary_search_by_key(&row, |&(r, _)| r) {
                        trace
                            .unknown_actions
                            .push((new_row, self.unknown_actions[i].1));
                    }
                }
                if !self.extra.is_empty() {
                    let first = self.extra.partition_point(|(r, _, _)| *r < row);
                    for (_, key, value) in
                        self.extra[first..].iter().take_while(|(r, _, _)| *r == row)
                    {
                        trace.extra.push((new_row, *key, value.clone()));
                    }
                }
            }
        }
        split_column!(action);
        for trace in &mut traces {
            trace.finish();
        }
        traces
    }

    pub fn heap_bytes(&self) -> usize {
        self.action.capacity()
            + self.addr.capacity() * 8
            + self.size.capacity() * 8
            + self.stream.capacity() * 2
            + self.time_us.capacity() * 8
            + self.stack.capacity() * 4
            + self.compile_context.heap_bytes()
            + self.user_metadata.heap_bytes()
            + self.pool.heap_bytes()
            + self.forward_stack.heap_bytes()
            + self.shape.heap_bytes()
            + self.dtype.heap_bytes()
            + self.tensors_before.capacity() * std::mem::size_of::<(u64, StrId, Option<StrId>)>()
            + self.unknown_actions.capacity() * 8
    }
}

/// The rows of a trace being decoded, pushed one at a time, before they become a [`Trace`]
/// ([`TraceStaging::into_trace`]). A trace shares `addr` and `size` with the analysis, so a
/// push to it checks that nobody else holds them (`Arc::make_mut`, per column and row: 3 % of
/// the instructions of a native load of a 100k-entry file); here they are plain vectors,
/// which nobody else can hold.
#[derive(Debug, Default)]
pub struct TraceStaging {
    /// Every column but `addr` and `size`, which stay empty here.
    rest: Trace,
    addr: Vec<u64>,
    size: Vec<u64>,
}

impl TraceStaging {
    pub fn len(&self) -> usize {
        self.rest.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// Makes room for exactly `rows` more rows in the columns every row fills.
    pub fn reserve(&mut self, rows: usize) {
        self.addr.reserve_exact(rows);
        self.size.reserve_exact(rows);
        self.rest.reserve_unshared(rows);
    }

    /// How many rows fit without growing.
    pub fn capacity(&self) -> usize {
        self.addr.capacity()
    }

    #[inline]
    pub fn push(&mut self, row: TraceRow) {
        self.addr.push(row.addr);
        self.size.push(row.size);
        self.rest.push_unshared(row);
    }

    /// Keeps a key this model does not know, with its value, for row `row`.
    pub fn push_extra(&mut self, row: u32, key: StrId, value: Value) {
        self.rest.extra.push((row, key, value));
    }

    /// The addresses of the rows so far, in the order they were pushed.
    pub fn addresses(&self) -> &[u64] {
        &self.addr
    }

    /// All values of one row.
    pub fn row(&self, row: usize) -> TraceRow {
        TraceRow {
            addr: self.addr[row],
            size: self.size[row],
            ..self.rest.row_unshared(row)
        }
    }

    /// The rows as a trace, not yet finished ([`Trace::split`] finishes it).
    pub fn into_trace(self) -> Trace {
        Trace {
            addr: Arc::new(self.addr),
            size: Arc::new(self.size),
            ..self.rest
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Row `i` of a five-row trace: every column differs by row, rows 1 and 3 have a compile
    /// context, row 2 an unknown action, row 3 two unknown keys.
    fn five_rows() -> Trace {
        let mut trace = Trace::default();
        for i in 0..5u32 {
            let mut row = TraceRow::new(if i == 2 { Action::Other } else { Action::Alloc });
            row.addr = 0x1000 * u64::from(i + 1);
            row.size = 512 * u64::from(i + 1);
            row.stream = i as u16;
            row.time_us = i64::from(i) * 10;
            row.stack = i;
            row.compile_context = (i % 2 == 1).then_some(40 + i);
            row.unknown_action = (i == 2).then_some(7);
            trace.push(row);
        }
        trace.extra.push((3, 1, Value::Int(30)));
        trace.extra.push((3, 2, Value::Bool(true)));
        trace.finish();
        trace
    }

    #[test]
    fn a_column_first_used_late_takes_the_room_made_for_the_rows() {
        let mut staging = TraceStaging::default();
        staging.reserve(1000);
        for i in 0..1000u32 {
            let mut row = TraceRow::new(Action::Alloc);
            row.compile_context = (i >= 10).then_some(i);
            staging.push(row);
        }
        assert_eq!(staging.rest.compile_context.values.capacity(), 1000);
        assert!(!staging.rest.user_metadata.is_used());
        let mut trace = staging.into_trace();
        trace.finish();
        assert_eq!(trace.compile_context.values.len(), 1000);
        assert_eq!(trace.compile_context.get(9, NONE_U32), NONE_U32);
        assert_eq!(trace.compile_context.get(10, NONE_U32), 10);
    }

    /// What `split` must give: the listed rows pushed one by one, their unknown keys with them.
    fn pushed(trace: &Trace, runs: &[(u32, u32)]) -> Trace {
        let mut expected = Trace::default();
        for row in runs.iter().flat_map(|&(first, n)| first..first + n) {
            let new_row = expected.len() as u32;
            expected.push(trace.row(row as usize));
            for (r, key, value) in &trace.extra {
                if *r == row {
                    expected.extra.push((new_row, *key, value.clone()));
                }
            }
        }
        expected.finish();
        expected
    }

    #[test]
    fn staged_rows_become_the_trace_their_pushes_make() {
        let trace = five_rows();
        let mut staging = TraceStaging::default();
        staging.reserve(5);
        for row in 0..trace.len() {
            staging.push(trace.row(row));
            assert_eq!(staging.row(row), trace.row(row));
        }
        for (row, key, value) in &trace.extra {
            staging.push_extra(*row, *key, value.clone());
        }
        assert_eq!(staging.addresses(), &trace.addr[..]);
        let mut staged = staging.into_trace();
        staged.finish();
        assert_eq!(staged, trace);
    }

    #[test]
    fn splitting_every_row_in_order_keeps_the_trace() {
        let trace = five_rows();
        let split = trace.clone().split(&[&[(0, 5)]]);
        assert_eq!(split, vec![trace]);
    }

    #[test]
    fn split_rows_follow_their_runs_with_their_lazy_columns_actions_and_keys() {
        let trace = five_rows();
        // Out of order, as a file whose entries were built before the list holding them.
        let first: &[(u32, u32)] = &[(3, 2), (0, 1), (2, 1)];
        // Row 0 twice, row 1 in no run but this one; no compile context at all.
        let second: &[(u32, u32)] = &[(0, 1), (4, 1), (0, 1)];
        let split = trace.clone().split(&[first, second]);
        assert_eq!(split, vec![pushed(&trace, first), pushed(&trace, second)]);
        assert_eq!(*split[0].addr, [0x4000, 0x5000, 0x1000, 0x3000]);
        assert_eq!(split[0].compile_context(0), Some(43));
        assert_eq!(split[0].row(3).unknown_action, Some(7));
        assert_eq!(
            split[0].extra.iter().map(|e| e.0).collect::<Vec<_>>(),
            [0, 0]
        );
        assert!(!split[1].compile_context.is_used());
        assert_eq!(split[1].len(), 3);
    }
}
