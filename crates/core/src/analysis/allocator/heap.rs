//! The allocator's memory at one moment while walking the trace: segments (address ranges)
//! and the blocks that hold an allocation, each keyed by address. Free memory is not stored:
//! it is whatever lies between held blocks inside a segment, one free block per gap, because
//! the allocator merges a freed block with its free neighbours.
//!
//! Every change is checked (a block must fit in free memory of one segment, a segment must not
//! overlap another); what does not fit is refused with a [`Misfit`] and the memory stays
//! consistent, so no answer ever has overlapping blocks or blocks outside their segment. When
//! asked to, the heap logs when each block and each segment version appears and disappears,
//! so that any state can be answered later without walking again. It does not know the
//! trace's order or the direction of the walk ([`super::walk`]).

use std::collections::BTreeMap;

use super::rules::SizeRules;
use super::{Misfit, SegmentPool};

/// What a segment is, apart from its address range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SegmentInfo {
    /// Raw `cudaStream_t`.
    pub stream: u64,
    pub pool: Option<SegmentPool>,
    pub pool_id: Option<(i64, i64)>,
    pub expandable: bool,
}

impl SegmentInfo {
    fn small_pool(&self) -> bool {
        self.pool == Some(SegmentPool::Small)
    }
}

#[derive(Clone, Debug)]
pub(super) struct LiveSegment {
    pub size: u64,
    pub info: SegmentInfo,
    /// Its entry in [`Log::segments`] (unused when not logging).
    version: u32,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct LiveBlock {
    pub size: u64,
    pub allocation: u32,
}

/// A segment's address range and kind over the states `lo..hi` it kept them.
#[derive(Clone, Copy, Debug)]
pub(super) struct SegmentVersion {
    pub address: u64,
    pub size: u64,
    pub info: SegmentInfo,
    pub lo: u32,
    pub hi: u32,
}

/// When things were present, as states `lo..hi`, for a walk from the end backwards: what is
/// added while undoing a row is present up to the state after that row, what is removed was
/// present from the state after it. Anything never removed stays from state 0.
#[derive(Clone, Debug, Default)]
pub(super) struct Log {
    /// Per allocation; `(0, 0)` when never present.
    pub blocks: Vec<(u32, u32)>,
    pub segments: Vec<SegmentVersion>,
}

/// How big a block being placed is.
#[derive(Clone, Copy, Debug)]
pub(super) enum BlockSize {
    /// Known (from the final segments or an earlier walk); shortened to the free memory.
    Known(u64),
    /// Estimated with PyTorch's rules from the requested size and the free memory there.
    Rules { requested: u64 },
}

#[derive(Clone, Debug)]
pub(super) struct Heap {
    pub rules: SizeRules,
    pub segments: BTreeMap<u64, LiveSegment>,
    pub blocks: BTreeMap<u64, LiveBlock>,
    pub log: Option<Log>,
    /// The state at which logged changes take effect (see [`Log`]).
    pub boundary: u32,
}

impl Heap {
    pub fn new(rules: SizeRules, log: Option<Log>) -> Self {
        Heap {
            rules,
            segments: BTreeMap::new(),
            blocks: BTreeMap::new(),
            log,
            boundary: 0,
        }
    }

    /// The segment whose range holds `address`.
    pub fn segment_at(&self, address: u64) -> Option<(u64, &LiveSegment)> {
        let (&start, segment) = self.segments.range(..=address).next_back()?;
        (address - start < segment.size).then_some((start, segment))
    }

    fn overlaps_segment(&self, address: u64, size: u64) -> bool {
        let end = address.saturating_add(size);
        let before = self
            .segments
            .range(..address)
            .next_back()
            .is_some_and(|(&s, seg)| s + seg.size > address);
        before || self.segments.range(address..end).next().is_some()
    }

    fn open_version(&mut self, address: u64, size: u64, info: SegmentInfo) -> u32 {
        let Some(log) = &mut self.log else {
            return u32::MAX;
        };
        log.segments.push(SegmentVersion {
            address,
            size,
            info,
            lo: 0,
            hi: self.boundary,
        });
        (log.segments.len() - 1) as u32
    }

    fn close_version(&mut self, version: u32) {
        if let Some(log) = &mut self.log {
            log.segments[version as usize].lo = self.boundary;
        }
    }

    fn insert_segment(&mut self, address: u64, size: u64, info: SegmentInfo) {
        let version = self.open_version(address, size, info);
        self.segments.insert(
            address,
            LiveSegment {
                size,
                info,
                version,
            },
        );
    }

    fn take_segment(&mut self, address: u64) -> Option<LiveSegment> {
        let segment = self.segments.remove(&address)?;
        self.close_version(segment.version);
        Some(segment)
    }

    /// A new segment of free memory.
    pub fn add_segment(
        &mut self,
        address: u64,
        size: u64,
        info: SegmentInfo,
    ) -> Result<(), Misfit> {
        if size == 0 || self.overlaps_segment(address, size) {
            return Err(Misfit::SegmentOverlaps);
        }
        self.insert_segment(address, size, info);
        Ok(())
    }

    /// Removes the segment at `address` with what it holds (it should hold nothing).
    pub fn remove_segment(&mut self, address: u64, size: u64) -> Result<(), Misfit> {
        let Some(segment) = self.take_segment(address) else {
            return Err(Misfit::SegmentNotFound);
        };
        let held = self.remove_blocks_within(address, address + segment.size);
        if held > 0 {
            Err(Misfit::SegmentNotEmpty)
        } else if segment.size != size {
            Err(Misfit::SegmentSizeDiffers)
        } else {
            Ok(())
        }
    }

    /// Maps `size` bytes of free memory at `address` into an expandable segment, joining the
    /// mapped ranges it touches (a snapshot shows each contiguous mapped range as one segment).
    pub fn map_range(&mut self, address: u64, size: u64, info: SegmentInfo) -> Result<(), Misfit> {
        if size == 0 || self.overlaps_segment(address, size) {
            return Err(Misfit::SegmentOverlaps);
        }
        let stream = info.stream;
        let joins = |s: &LiveSegment| s.info.expandable && s.info.stream == stream;
        let before = self
            .segments
            .range(..address)
            .next_back()
            .filter(|(&b, segment)| b + segment.size == address && joins(segment))
            .map(|(&b, segment)| (b, segment.info));
        let after = self
            .segments
            .get(&(address + size))
            .filter(|segment| joins(segment))
            .map(|segment| segment.size);
        let (mut start, mut end, mut info) = (address, address + size, info);
        if let Some((b, joined)) = before {
            self.take_segment(b);
            (start, info) = (b, joined);
        }
        if let Some(extra) = after {
            self.take_segment(end);
            end += extra;
        }
        self.insert_segment(start, end - start, info);
        Ok(())
    }

    /// Unmaps `size` bytes at `address` from the segment holding them (they should be free),
    /// leaving the mapped memory on either side as segments of their own.
    pub fn unmap_range(&mut self, address: u64, size: u64) -> Result<(), Misfit> {
        let end = address.saturating_add(size);
        let Some((start, segment)) = self.segment_at(address) else {
            return Err(Misfit::SegmentNotFound);
        };
        let (segment_end, info) = (start + segment.size, segment.info);
        if end > segment_end || size == 0 {
            return Err(Misfit::SegmentNotFound);
        }
        let held = self.remove_blocks_within(address, end);
        self.take_segment(start);
        if start < address {
            self.insert_segment(start, address - start, info);
        }
        if end < segment_end {
            self.insert_segment(end, segment_end - end, info);
        }
        if held > 0 {
            Err(Misfit::SegmentNotEmpty)
        } else {
            Ok(())
        }
    }

    /// Places `allocation`'s block at `address`, in the free memory there; returns its size.
    pub fn place_block(
        &mut self,
        address: u64,
        allocation: u32,
        size: BlockSize,
    ) -> Result<u64, Misfit> {
        let Some((start, segment)) = self.segment_at(address) else {
            return Err(Misfit::BlockOutsideSegments);
        };
        let (segment_end, small_pool) = (start + segment.size, segment.info.small_pool());
        let held_before = self
            .blocks
            .range(..=address)
            .next_back()
            .is_some_and(|(&b, block)| b + block.size > address);
        let free_end = self
            .blocks
            .range(address..)
            .next()
            .map_or(segment_end, |(&b, _)| b.min(segment_end));
        if held_before || free_end <= address {
            return Err(Misfit::BlockOverlaps);
        }
        let free = free_end - address;
        let size = match size {
            BlockSize::Known(size) => size.clamp(1, free),
            BlockSize::Rules { requested } => self.rules.block_size(small_pool, requested, free),
        };
        self.blocks.insert(address, LiveBlock { size, allocation });
        if let Some(log) = &mut self.log {
            log.blocks[allocation as usize].1 = self.boundary;
        }
        Ok(size)
    }

    /// Frees `allocation`'s block at `address`.
    pub fn remove_block(&mut self, address: u64, allocation: u32) -> Result<(), Misfit> {
        match self.blocks.get(&address) {
            Some(block) if block.allocation == allocation => {
                self.blocks.remove(&address);
                self.note_removed(allocation);
                Ok(())
            }
            _ => Err(Misfit::BlockNotFound),
        }
    }

    fn note_removed(&mut self, allocation: u32) {
        if let Some(log) = &mut self.log {
            log.blocks[allocation as usize].0 = self.boundary;
        }
    }

    /// Removes every block overlapping `start..end`; returns how many.
    fn remove_blocks_within(&mut self, start: u64, end: u64) -> usize {
        let first = match self.blocks.range(..start).next_back() {
            Some((&b, block)) if b + block.size > start => b,
            _ => start,
        };
        let doomed: Vec<(u64, u32)> = self
            .blocks
            .range(first..end)
            .map(|(&b, block)| (b, block.allocation))
            .collect();
        for &(address, allocation) in &doomed {
            self.blocks.remove(&address);
            self.note_removed(allocation);
        }
        doomed.len()
    }
}
