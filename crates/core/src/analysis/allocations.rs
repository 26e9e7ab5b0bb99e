//! The list of one device's allocations, stored compactly: a record keeps its rows and its
//! stack and reads its address and size from the row that tells them (its `alloc`, or its
//! `free_completed` for one allocated before the trace), in the trace's own columns, shared
//! rather than copied. A record takes 16 bytes instead of 32: a 12M-entry file has 4M
//! allocations, so 61 MiB less of a WebAssembly memory that never shrinks. Only the
//! allocations no row tells (alive in the final segments with no `alloc`) keep their own.
//!
//! Not the place for pairing events into allocations (see `replay`).

use std::sync::Arc;

use super::replay::{Allocation, NO_ROW};
use crate::model::{StackId, Trace};

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
