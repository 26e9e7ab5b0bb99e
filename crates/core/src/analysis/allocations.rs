//! The list of one device's allocations, stored compactly: a record keeps its rows and its
//! stack and reads its address and size from the row that tells them (its `alloc`, or its
//! `free_completed` for one allocated before the trace), in the trace's own columns, shared
//! rather than copied. A record takes 16 bytes instead of 32: a 12M-entry file has 4M
//! allocations, so 61 MiB less of a WebAssembly memory that never shrinks. Only the
//! allocations no row tells (alive in the final segments with no `alloc`) keep their own.
//!
//! Here too: what one allocation is ([`Allocation`], [`Origin`]). Not the place for pairing
//! events into allocations (see `replay`).

use std::sync::Arc;

use super::moment::state_after;
use crate::model::{StackId, StrId, Trace};

/// Row index of "no such event".
pub const NO_ROW: u32 = u32::MAX;

/// Where an allocation's record comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Its `alloc` is in the trace.
    Trace,
    /// Freed in the trace, allocated before it (an unmatched `free_completed`).
    FreedBeforeAlloc,
    /// Alive in the final segments with no `alloc` in the trace.
    LiveBlock,
}

/// One allocation with its events, as [`Allocations::at`] gives it (the list stores less).
/// Its origin is told by its rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Allocation {
    pub addr: u64,
    /// Size as the trace records it (the requested size); for live blocks without a trace
    /// record, the block's requested size.
    pub size: u64,
    pub alloc_row: u32,
    pub free_requested_row: u32,
    /// `free_completed` row, or [`NO_ROW`] when alive at the end.
    pub free_row: u32,
    pub stack: StackId,
}

impl Allocation {
    /// Where the record comes from: an allocation from before the trace has no `alloc` row,
    /// and one freed in the trace has a `free_completed` row.
    pub fn origin(&self) -> Origin {
        if self.alloc_row != NO_ROW {
            Origin::Trace
        } else if self.free_row != NO_ROW {
            Origin::FreedBeforeAlloc
        } else {
            Origin::LiveBlock
        }
    }

    pub fn is_alive_at_end(&self) -> bool {
        self.free_row == NO_ROW
    }

    /// The first state it is alive in and the first it no longer is (`u32::MAX` when alive at
    /// the end); state `r + 1` is after row `r`, so an allocation from before the window is
    /// alive from state 0.
    pub fn alive_states(&self) -> (u32, u32) {
        let start = if self.origin() == Origin::Trace {
            state_after(self.alloc_row)
        } else {
            0
        };
        (start, state_after(self.free_row))
    }

    /// Whether it is alive in `state`.
    pub fn is_alive_at(&self, state: u32) -> bool {
        let (start, end) = self.alive_states();
        start <= state && state < end
    }

    /// The shape of the tensor it was made for, when the file records one: on its `alloc`
    /// row, or for one made before the trace, at its address ([`Trace::tensor_before`]).
    pub fn shape(&self, trace: &Trace) -> Option<StrId> {
        match self.origin() {
            Origin::Trace => trace.shape(self.alloc_row as usize),
            _ => trace.tensor_before(self.addr).map(|(shape, _)| shape),
        }
    }

    /// The dtype of the tensor it was made for, when the file records one (as [`Self::shape`]).
    pub fn dtype(&self, trace: &Trace) -> Option<StrId> {
        match self.origin() {
            Origin::Trace => trace.dtype(self.alloc_row as usize),
            _ => trace.tensor_before(self.addr).and_then(|(_, dtype)| dtype),
        }
    }
}

/// One allocation's rows and stack.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Record {
    pub alloc_row: u32,
    pub free_requested_row: u32,
    pub free_row: u32,
    pub stack: StackId,
}

impl Record {
    /// The row that tells its address and size, when one does.
    fn row(&self) -> Option<u32> {
        if self.alloc_row != NO_ROW {
            Some(self.alloc_row)
        } else if self.free_row != NO_ROW {
            Some(self.free_row)
        } else {
            None
        }
    }
}

/// A device's allocations: those from before its trace first (the live blocks with no
/// `alloc`, then those freed with no `alloc`), then the trace's in `alloc` order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Allocations {
    /// Address and size of the first `own.len()` allocations, which no row tells.
    own: Vec<(u64, u64)>,
    records: Vec<Record>,
    addr: Arc<Vec<u64>>,
    size: Arc<Vec<u64>>,
}

impl Allocations {
    /// `records` read their address and size from `trace`'s rows, except the first
    /// `own.len()`, whose are in `own`.
    pub(super) fn new(own: Vec<(u64, u64)>, records: Vec<Record>, trace: &Trace) -> Self {
        debug_assert!(own.len() <= records.len());
        debug_assert!(records[own.len()..]
            .iter()
            .all(|r| r.row().is_some_and(|row| (row as usize) < trace.len())));
        Allocations {
            own,
            records,
            addr: trace.addr.clone(),
            size: trace.size.clone(),
        }
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Allocation `i`. Panics when `i` is out of range, as indexing does.
    pub fn at(&self, i: usize) -> Allocation {
        let record = self.records[i];
        Allocation {
            addr: self.addr_at(i, &record),
            size: self.size_at(i, &record),
            alloc_row: record.alloc_row,
            free_requested_row: record.free_requested_row,
            free_row: record.free_row,
            stack: record.stack,
        }
    }

    /// The size of allocation `i` (what [`Self::at`] gives, without the rest).
    pub fn size(&self, i: usize) -> u64 {
        self.size_at(i, &self.records[i])
    }

    pub fn iter(&self) -> Iter<'_> {
        Iter {
            list: self,
            range: 0..self.len(),
        }
    }

    /// The index of the first allocation made in the trace (those from before it come
    /// first): the number of allocations from before the trace.
    pub fn first_traced(&self) -> usize {
        self.records.partition_point(|r| r.alloc_row == NO_ROW)
    }

    pub fn last(&self) -> Option<Allocation> {
        self.len().checked_sub(1).map(|i| self.at(i))
    }

    /// Heap bytes of the records (the trace's columns they read are the trace's).
    pub fn heap_bytes(&self) -> usize {
        self.records.capacity() * std::mem::size_of::<Record>() + self.own.capacity() * 16
    }

    // Rows are in range and every record past `own` has one (checked in `new`): looked up
    // without a panic path, so a load whose value is not used can be left out.
    fn addr_at(&self, i: usize, record: &Record) -> u64 {
        match self.own.get(i) {
            Some(&(addr, _)) => addr,
            None => row_value(&self.addr, record),
        }
    }

    fn size_at(&self, i: usize, record: &Record) -> u64 {
        match self.own.get(i) {
            Some(&(_, size)) => size,
            None => row_value(&self.size, record),
        }
    }
}

fn row_value(column: &[u64], record: &Record) -> u64 {
    record
        .row()
        .and_then(|row| column.get(row as usize))
        .copied()
        .unwrap_or_default()
}

/// The allocations of a list, in order.
pub struct Iter<'a> {
    list: &'a Allocations,
    range: std::ops::Range<usize>,
}

impl Iterator for Iter<'_> {
    type Item = Allocation;

    fn next(&mut self) -> Option<Allocation> {
        self.range.next().map(|i| self.list.at(i))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.range.size_hint()
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Allocations {
    type Item = Allocation;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}
