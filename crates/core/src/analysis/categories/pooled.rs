//! Roles an allocation's private pool gives it. Every block of a CUDA graph's pool is the
//! graph's memory (its static buffers and intermediates) whatever code made it; a memory pool
//! (`torch.cuda.MemPool`: vLLM's sleep mode keeps its weights in one and its KV cache in
//! another) whose blocks' own frames say one role holds that role in the blocks that say
//! nothing (made before recording).
//!
//! What a pool is, strongest evidence first: its blocks' frames (a graph's capture, a
//! framework's site naming another role), then its id (a graph captured with no pool given
//! gets `(N, 0)`, where `graph_pool_handle()` and every `MemPool` get `(0, N)`), then its
//! streams (CUDA cannot capture a graph on the legacy default stream, so a pool whose blocks
//! were all made on stream 0 is no graph's, and one made on side streams alone likely is).
//! Not the place for finding which pool an allocation is in (`analysis::pools`).

use serde::{Deserialize, Serialize};

use super::signals::Phase;
use super::{DeviceSignals, Role};
use crate::analysis::pools::DevicePools;
use crate::analysis::{DeviceFacts, Origin};
use crate::model::{Device, Snapshot, NO_STACK};

/// What a private pool is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PoolKind {
    /// A CUDA graph's private pool.
    Graph,
    /// A memory pool a program routes allocations to (`torch.cuda.MemPool`, `use_mem_pool`).
    Memory,
    /// Nothing says.
    Unknown,
}

/// What told a pool's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PoolEvidence {
    /// Its blocks' frames: a graph's capture, or a framework's site naming another role.
    Frames,
    /// Its id, `(N, 0)`: a graph captured without a pool given.
    CaptureId,
    /// Its blocks were all made on side streams (a graph's capture) or all on the default
    /// stream (no graph's).
    Streams,
    Nothing,
}

/// One private pool: its id, its kind and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolFacts {
    pub id: (i64, i64),
    pub kind: PoolKind,
    pub evidence: PoolEvidence,
}

/// Roles the pools gave, by allocation: `(allocation, role)`, and each pool's facts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pooled {
    /// Indexed like [`DevicePools::pools`].
    pub pools: Vec<PoolFacts>,
    /// Allocations whose role their pool gave: a graph's, or their pool-mates', by allocation.
    pub given: Vec<u32>,
    /// `(allocation, position in pools)` of every allocation in a private pool, by allocation
    /// (as [`DevicePools::members`]).
    pub members: Vec<(u32, u16)>,
}

impl Pooled {
    pub fn gave(&self, i: usize) -> bool {
        self.given.binary_search(&(i as u32)).is_ok()
    }

    /// The private pool allocation `i` is in, if any.
    pub fn pool_of(&self, i: usize) -> Option<&PoolFacts> {
        let k = self
            .members
            .binary_search_by_key(&(i as u32), |&(a, _)| a)
            .ok()?;
        self.pools.get(self.members[k].1 as usize)
    }

    /// The id of the pool allocation `i` is in: `(0, 0)` for the default pool.
    pub fn pool_id(&self, i: usize) -> (i64, i64) {
        self.pool_of(i).map_or((0, 0), |p| p.id)
    }
}

/// The share of a memory pool's observed bytes one role must hold to be given to the rest.
const MATES_AGREE: f64 = 0.9;

/// Gives roles by pool to `device`'s allocations in `pools`, but those a user `stated` (a rule
/// or an annotation).
pub(super) fn roles_from_pools(
    snapshot: &Snapshot,
    device: &Device,
    facts: &DeviceFacts,
    pools: &DevicePools,
    signals: &mut DeviceSignals<'_>,
    stated: &dyn Fn(usize) -> bool,
    roles: &mut [Role],
) -> Pooled {
    if !pools.any() {
        return Pooled::default();
    }
    let n = pools.pools.len();
    // Per pool: bytes whose frames say graph, say another role (by role), and the streams.
    let mut graph = vec![0u64; n];
    let mut other = vec![[0u64; Role::ALL.len()]; n];
    let mut side_stream = vec![false; n];
    let mut default_stream = vec![false; n];
    let trace = &device.trace;
    for &(i, pool) in &pools.members {
        let (i, pool) = (i as usize, pool as usize);
        let a = facts.allocations.at(i);
        let signal = signals.of(a.stack);
        let graphed = signal.phase == Some(Phase::GraphCapture)
            || signal.role == Some(Role::CudaGraph)
            || signal
                .lifetime
                .is_some_and(|(kept, _)| kept == Role::CudaGraph);
        if graphed {
            graph[pool] += a.size;
        } else if signal.site.is_some() && roles[i] != Role::Unknown {
            other[pool][roles[i] as usize] += a.size;
        }
        if a.origin() == Origin::Trace {
            let stream = trace.stream[a.alloc_row as usize];
            if snapshot.streams.get(stream as usize).copied().unwrap_or(0) == 0 {
                default_stream[pool] = true;
            } else {
                side_stream[pool] = true;
            }
        }
    }
    for segment in &device.segments {
        if let Some(k) = pools
            .pools
            .iter()
            .position(|p| Some(p.id) == segment.pool_id)
        {
            if segment.stream == 0 {
                default_stream[k] = true;
            } else {
                side_stream[k] = true;
            }
        }
    }
    let facts_of = |k: usize| {
        let others: u64 = other[k].iter().sum();
        let id = pools.pools[k].id;
        let (kind, evidence) = if graph[k] > 0 || others > 0 {
            let kind = if graph[k] >= others {
                PoolKind::Graph
            } else {
                PoolKind::Memory
            };
            (kind, PoolEvidence::Frames)
        } else if id.0 != 0 && id.1 == 0 {
            (PoolKind::Graph, PoolEvidence::CaptureId)
        } else if side_stream[k] && !default_stream[k] {
            (PoolKind::Graph, PoolEvidence::Streams)
        } else if default_stream[k] && !side_stream[k] {
            (PoolKind::Memory, PoolEvidence::Streams)
        } else {
            (PoolKind::Unknown, PoolEvidence::Nothing)
        };
        PoolFacts { id, kind, evidence }
    };
    let facts_by_pool: Vec<PoolFacts> = (0..n).map(facts_of).collect();
    // The role a memory pool's observed blocks agree on.
    let agreed: Vec<Option<Role>> = (0..n)
        .map(|k| {
            let total: u64 = other[k].iter().sum();
            let (top, bytes) = other[k]
                .iter()
                .enumerate()
                .max_by_key(|&(_, b)| *b)
                .unwrap_or((0, &0));
            (total > 0 && *bytes as f64 >= MATES_AGREE * total as f64).then(|| Role::ALL[top])
        })
        .collect();
    let mut given = Vec::new();
    for &(i, pool) in &pools.members {
        let (i, pool) = (i as usize, pool as usize);
        if stated(i) {
            continue;
        }
        match facts_by_pool[pool].kind {
            // A block its own frames already call the graph's keeps their reason.
            PoolKind::Graph if roles[i] != Role::CudaGraph => {
                roles[i] = Role::CudaGraph;
                given.push(i as u32);
            }
            PoolKind::Memory
                if roles[i] == Role::Unknown || facts.allocations.at(i).stack == NO_STACK =>
            {
                if let Some(role) = agreed[pool] {
                    roles[i] = role;
                    given.push(i as u32);
                }
            }
            _ => {}
        }
    }
    Pooled {
        pools: facts_by_pool,
        given,
        members: pools.members.clone(),
    }
}
