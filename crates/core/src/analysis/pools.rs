//! Which pool each allocation's memory is in: the default pool, or a private one (a CUDA
//! graph's, or a `torch.cuda.MemPool` such as vLLM's sleep mode keeps its weights and KV cache
//! in), and each private pool's reserved bytes over the trace, its envelope.
//!
//! PyTorch records an allocation's pool on its trace entry only since 2026 (`pool_id`); before,
//! only the final segments say (`segment_pool_id`). An allocation alive at the end is in its
//! block's segment's pool; one the trace made is in the pool of the final segment its address
//! falls in when that segment was already made (its last `segment_alloc` is earlier), else in
//! none this file can tell (the default pool is assumed, as for every file without pools).
//! Computed only for devices with a private pool. What a pool is for (a graph's or a memory
//! pool's) is read from its allocations' frames by the categories, not here.

use serde::{Deserialize, Serialize};

use super::allocations::Origin;
use super::moment::state_after;
use super::replay::DeviceFacts;
use crate::model::{Action, Device, Snapshot};

/// A private pool of one device.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrivatePool {
    /// `(owner, id)`, as PyTorch writes `segment_pool_id`.
    pub id: (i64, i64),
    /// Bytes of its segments at the end of the trace.
    pub reserved_at_end: u64,
    /// Its reserved bytes over the trace, as `(state, bytes from that state on)`, from state 0:
    /// its segments as they were made (those of the final snapshot; one freed before the end
    /// names no pool).
    pub reserved: Vec<(u32, u64)>,
}

impl PrivatePool {
    /// Its reserved bytes at `state`.
    pub fn reserved_at(&self, state: u32) -> u64 {
        match self.reserved.partition_point(|&(s, _)| s <= state) {
            0 => 0,
            k => self.reserved[k - 1].1,
        }
    }
}

/// The private pools of one device and the allocations in them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DevicePools {
    pub pools: Vec<PrivatePool>,
    /// `(allocation, position in pools)` of every allocation in a private pool, by allocation.
    pub members: Vec<(u32, u16)>,
}

impl DevicePools {
    /// The private pool allocation `i` is in (its position in `pools`), if any.
    pub fn pool_of(&self, i: usize) -> Option<u16> {
        self.members
            .binary_search_by_key(&(i as u32), |&(a, _)| a)
            .ok()
            .map(|k| self.members[k].1)
    }

    /// The pool id allocation `i` is in: `(0, 0)` for the default pool.
    pub fn pool_id_of(&self, i: usize) -> (i64, i64) {
        self.pool_of(i)
            .map_or((0, 0), |p| self.pools[p as usize].id)
    }

    /// Whether the device has any private pool.
    pub fn any(&self) -> bool {
        !self.pools.is_empty()
    }
}

/// The pools of `device`, whose allocations are `facts`'s.
pub fn locate(snapshot: &Snapshot, device: &Device, facts: &DeviceFacts) -> DevicePools {
    let private = |id: Option<(i64, i64)>| id.filter(|&p| p != (0, 0));
    let trace = &device.trace;
    let traced_pools = snapshot.features.pool_id;
    if !device.segments.iter().any(|s| private(s.pool_id).is_some()) && !traced_pools {
        return DevicePools::default();
    }
    let mut out = DevicePools::default();
    let position = |out: &mut DevicePools, id: (i64, i64)| -> u16 {
        match out.pools.iter().position(|p| p.id == id) {
            Some(k) => k as u16,
            None => {
                out.pools.push(PrivatePool {
                    id,
                    ..Default::default()
                });
                (out.pools.len() - 1) as u16
            }
        }
    };
    // The final segments of private pools, by address, each with the row it was made at
    // (`None`: before the trace).
    let mut segments: Vec<(u64, u64, u16, Option<u32>)> = Vec::new();
    let mut last_made: rustc_hash::FxHashMap<u64, u32> = rustc_hash::FxHashMap::default();
    for row in 0..trace.len() {
        if matches!(trace.action[row], Action::SegmentAlloc | Action::SegmentMap) {
            last_made.insert(trace.addr[row], row as u32);
        }
    }
    for segment in &device.segments {
        let Some(id) = private(segment.pool_id) else {
            continue;
        };
        let k = position(&mut out, id);
        let made = last_made.get(&segment.address).copied();
        segments.push((segment.address, segment.total_size, k, made));
        let pool = &mut out.pools[k as usize];
        pool.reserved_at_end += segment.total_size;
        pool.reserved
            .push((made.map_or(0, state_after), segment.total_size));
    }
    for pool in &mut out.pools {
        pool.reserved.sort_unstable();
        let mut total = 0;
        for step in &mut pool.reserved {
            total += step.1;
            step.1 = total;
        }
        pool.reserved.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                earlier.1 = later.1;
            }
            same
        });
    }
    segments.sort_unstable_by_key(|s| s.0);
    for (i, a) in facts.allocations.iter().enumerate() {
        let traced = a.origin() == Origin::Trace;
        let by_row = (traced && traced_pools)
            .then(|| trace.pool(a.alloc_row as usize))
            .flatten()
            .and_then(|p| snapshot.pools.get(p as usize).copied())
            .and_then(|id| private(Some(id)));
        let pool = match by_row {
            Some(id) => Some(position(&mut out, id)),
            None => {
                let at = segments.partition_point(|s| s.0 <= a.addr);
                at.checked_sub(1).and_then(|k| {
                    let (start, size, pool, made) = segments[k];
                    let inside = a.addr < start + size;
                    let made_before = !traced || made.is_none_or(|m| m < a.alloc_row);
                    (inside && made_before).then_some(pool)
                })
            }
        };
        if let Some(pool) = pool {
            out.members.push((i as u32, pool));
        }
    }
    out
}
