//! Two digests side by side: each overview number with its delta, the bytes of each role and
//! component at the two peaks, and the call sites and model modules that hold memory at
//! either peak, matched by their frame text, with what changed (new, vanished, grew, shrank).
//!
//! Pure and cheap (it reads two digests, never a model), so the page runs it itself once both
//! workers have answered. Deltas are `b − a`. A digest compared with itself is zero
//! everywhere. Not the place for words.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::digest::{Digest, Keyed, PATH_SEPARATOR};
use crate::analysis::categories::{Component, Role};
use crate::overview::MetricKey;

/// The overview numbers a comparison lists, in its order.
pub const COMPARED_METRICS: [MetricKey; 13] = [
    MetricKey::PeakAllocatedBytes,
    MetricKey::ReservedAtPeakBytes,
    MetricKey::CachedFreeAtPeakBytes,
    MetricKey::EfficiencyAtPeakPpm,
    MetricKey::PeakReservedBytes,
    MetricKey::AllocatedEndBytes,
    MetricKey::ReservedEndBytes,
    MetricKey::EfficiencyAtEndPpm,
    MetricKey::SegmentCount,
    MetricKey::TraceEntries,
    MetricKey::AllocationCount,
    MetricKey::TimeSpanUs,
    MetricKey::ActionCount(crate::model::Action::Oom),
];

/// One overview number in both.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricDelta {
    pub key: MetricKey,
    pub a: Option<u64>,
    pub b: Option<u64>,
    /// `b − a`, when both have the number.
    pub delta: Option<i64>,
}

/// The bytes of one role or component at both peaks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CategoryDelta {
    /// [`Role::key`] or [`Component::key`].
    pub key: String,
    pub a_bytes: u64,
    pub b_bytes: u64,
    pub delta_bytes: i64,
}

/// What became of a call site or module from `a` to `b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Only in `b`.
    New,
    /// Only in `a`.
    Vanished,
    Grew,
    Shrank,
    Same,
}

impl Change {
    pub fn key(self) -> &'static str {
        match self {
            Change::New => "new",
            Change::Vanished => "vanished",
            Change::Grew => "grew",
            Change::Shrank => "shrank",
            Change::Same => "same",
        }
    }
}

/// A call site or module at both peaks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyedDelta {
    pub key: String,
    pub label: String,
    pub depth: u32,
    pub user: bool,
    pub a_count: u32,
    pub b_count: u32,
    pub a_bytes: u64,
    pub b_bytes: u64,
    pub delta_bytes: i64,
    pub a_occurrences: u32,
    pub b_occurrences: u32,
    pub change: Change,
}

/// Two digests compared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comparison {
    pub metrics: Vec<MetricDelta>,
    /// In [`Role::ALL`]'s order.
    pub roles: Vec<CategoryDelta>,
    /// In [`Component::ALL`]'s order.
    pub components: Vec<CategoryDelta>,
    /// Largest change first.
    pub call_sites: Vec<KeyedDelta>,
    /// A tree: parents before their children, siblings by largest change.
    pub modules: Vec<KeyedDelta>,
}

impl Comparison {
    /// Whether nothing differs: every delta is zero and nothing is new or vanished.
    pub fn is_unchanged(&self) -> bool {
        self.metrics
            .iter()
            .all(|m| m.delta.unwrap_or(0) == 0 && m.a.is_some() == m.b.is_some())
            && self
                .roles
                .iter()
                .chain(&self.components)
                .all(|c| c.delta_bytes == 0)
            && self
                .call_sites
                .iter()
                .chain(&self.modules)
                .all(|k| k.change == Change::Same)
    }
}

/// Compares `a` with `b` (deltas are `b − a`).
pub fn compare(a: &Digest, b: &Digest) -> Comparison {
    let metrics = COMPARED_METRICS
        .into_iter()
        .map(|key| {
            let (va, vb) = (a.metric(key), b.metric(key));
            MetricDelta {
                key,
                a: va,
                b: vb,
                delta: va.zip(vb).map(|(x, y)| signed(y) - signed(x)),
            }
        })
        .collect();
    let categories = |keys: &[&'static str], xs: &[u64], ys: &[u64]| -> Vec<CategoryDelta> {
        keys.iter()
            .enumerate()
            .map(|(i, key)| {
                let (x, y) = (
                    xs.get(i).copied().unwrap_or(0),
                    ys.get(i).copied().unwrap_or(0),
                );
                CategoryDelta {
                    key: key.to_string(),
                    a_bytes: x,
                    b_bytes: y,
                    delta_bytes: signed(y) - signed(x),
                }
            })
            .collect()
    };
    let role_keys: Vec<&str> = Role::ALL.iter().map(|r| r.key()).collect();
    let component_keys: Vec<&str> = Component::ALL.iter().map(|c| c.key()).collect();
    let mut call_sites = keyed(&a.call_sites, &b.call_sites);
    call_sites.sort_by(|x, y| by_change(x, y).then_with(|| x.key.cmp(&y.key)));
    let modules = as_tree(keyed(&a.modules, &b.modules));
    Comparison {
        metrics,
        roles: categories(&role_keys, &a.roles, &b.roles),
        components: categories(&component_keys, &a.components, &b.components),
        call_sites,
        modules,
    }
}

fn signed(n: u64) -> i64 {
    n.min(i64::MAX as u64) as i64
}

/// Largest change first, then what holds most.
fn by_change(x: &KeyedDelta, y: &KeyedDelta) -> std::cmp::Ordering {
    y.delta_bytes
        .unsigned_abs()
        .cmp(&x.delta_bytes.unsigned_abs())
        .then_with(|| y.a_bytes.max(y.b_bytes).cmp(&x.a_bytes.max(x.b_bytes)))
}

/// The keys of both, matched (in `a`'s order, then those only in `b`).
fn keyed(a: &[Keyed], b: &[Keyed]) -> Vec<KeyedDelta> {
    let in_b: FxHashMap<&str, &Keyed> = b.iter().map(|k| (k.key.as_str(), k)).collect();
    let in_a: FxHashMap<&str, &Keyed> = a.iter().map(|k| (k.key.as_str(), k)).collect();
    let both = a
        .iter()
        .map(|x| (Some(x), in_b.get(x.key.as_str()).copied()))
        .chain(
            b.iter()
                .filter(|y| !in_a.contains_key(y.key.as_str()))
                .map(|y| (None, Some(y))),
        );
    both.map(|(x, y)| {
        let any = x.or(y).expect("one side has it");
        let (a_bytes, b_bytes) = (x.map_or(0, |k| k.bytes), y.map_or(0, |k| k.bytes));
        let change = match (x, y) {
            (None, _) => Change::New,
            (_, None) => Change::Vanished,
            _ if b_bytes > a_bytes => Change::Grew,
            _ if b_bytes < a_bytes => Change::Shrank,
            _ => Change::Same,
        };
        KeyedDelta {
            key: any.key.clone(),
            label: any.label.clone(),
            depth: any.depth,
            user: any.user,
            a_count: x.map_or(0, |k| k.count),
            b_count: y.map_or(0, |k| k.count),
            a_bytes,
            b_bytes,
            delta_bytes: signed(b_bytes) - signed(a_bytes),
            a_occurrences: x.map_or(0, |k| k.occurrences),
            b_occurrences: y.map_or(0, |k| k.occurrences),
            change,
        }
    })
    .collect()
}

/// Orders module paths as a tree: each parent before its children, siblings by largest
/// change. A path whose parent is in neither digest goes under the nearest one that is.
fn as_tree(mut modules: Vec<KeyedDelta>) -> Vec<KeyedDelta> {
    let index: FxHashMap<String, usize> = modules
        .iter()
        .enumerate()
        .map(|(i, m)| (m.key.clone(), i))
        .collect();
    // Each module's ancestors (itself last), as indices.
    let chains: Vec<Vec<usize>> = modules
        .iter()
        .map(|m| {
            let parts: Vec<&str> = m.key.split(PATH_SEPARATOR).collect();
            (1..=parts.len())
                .filter_map(|n| index.get(&parts[..n].join(PATH_SEPARATOR)).copied())
                .collect()
        })
        .collect();
    let mut order: Vec<usize> = (0..modules.len()).collect();
    order.sort_by(|&x, &y| {
        for (&p, &q) in chains[x].iter().zip(&chains[y]) {
            if p != q {
                return by_change(&modules[p], &modules[q])
                    .then_with(|| modules[p].key.cmp(&modules[q].key));
            }
        }
        chains[x].len().cmp(&chains[y].len())
    });
    let mut taken: Vec<Option<KeyedDelta>> = modules.drain(..).map(Some).collect();
    order
        .into_iter()
        .map(|i| taken[i].take().expect("each once"))
        .collect()
}
