//! One device of one file, reduced to what other files are compared on: the overview's
//! numbers, the bytes by role and by component at the allocated peak, the bytes at the peak
//! by call site and by model module (keyed by frame text, repeated layers folded), and the
//! allocated curve on a normalised axis.
//!
//! Built from the same pieces the views use (the overview, the categories under the user's
//! rules, the table's grouping), so a digest's numbers are the numbers each view shows. Not
//! the place for comparing ([`super::diff`]).

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::analysis::categories::signals::Phase;
use crate::analysis::categories::totals_at;
use crate::analysis::replay::DeviceFacts;
use crate::model::State;
use crate::model::{Device, NO_TIME};
use crate::overview::{self, Metric};
use crate::service::{Context, ViewError};
use crate::table::columns::{DeviceColumns, Rows};
use crate::table::filter::select;
use crate::table::groups::{group, Node};
use crate::table::{Filter, GroupBy, Scope};

/// Points of a digest's curves: enough for a chart as wide as a screen.
pub const CURVE_POINTS: usize = 512;

/// What a part of the model at the peak is known by across files, and what it holds there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Keyed {
    /// The same in any file for the same code: a frame's `file:line:name` (its path cut as
    /// [`portable`] cuts it), or a module's path of `file:line forward` frames joined by ` › `.
    pub key: String,
    /// What the views show: the frame as written, or the module path's last part.
    pub label: String,
    /// 0 for a top-level group; a module nested in another is one deeper.
    pub depth: u32,
    /// The frame is the user's code.
    pub user: bool,
    /// Allocations alive at the peak.
    pub count: u32,
    /// Their requested bytes.
    pub bytes: u64,
    /// Calls of a repeated module folded into this key (1 when it ran once).
    pub occurrences: u32,
}

/// The allocated curve on a normalised axis: point `k` of `n` holds the highest value in its
/// `1/n` of the axis, so the peak is never smoothed away.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NormalisedCurve {
    /// Over trace events, from before the first to after the last.
    pub by_event: Vec<u64>,
    /// Over time, from the first event's time to the last's; empty without times.
    pub by_time: Vec<u64>,
}

/// One device of one file at its peak.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Digest {
    pub device: u32,
    /// The kind of device it is (`cuda`, `npu`…).
    #[serde(default)]
    pub device_kind: crate::model::DeviceKind,
    /// The overview's numbers, under its keys.
    pub metrics: Vec<Metric>,
    /// The device used no memory.
    pub unused: bool,
    /// The state the roles, components, call sites and modules are taken at: the allocated
    /// peak (first reached), or the peak within the phase asked for (`at_phase`).
    pub peak_state: State,
    /// The phase of training asked for, when the digest is of that phase's peak rather than
    /// the run's.
    #[serde(default)]
    pub at_phase: Option<Phase>,
    /// The phase of training `peak_state` falls in, and its iteration (1 from the first
    /// forward), so two digests taken at different moments say so.
    #[serde(default)]
    pub peak_phase: Option<Phase>,
    #[serde(default)]
    pub peak_iteration: Option<u32>,
    /// Allocated bytes at `peak_state`.
    #[serde(default)]
    pub peak_bytes: u64,
    /// Bytes alive at the peak by role, in [`Role::ALL`](crate::analysis::categories::Role)'s
    /// order, under the rules of categories' `generation`.
    pub roles: Vec<u64>,
    /// Of the bytes of each role at the peak, those deduced rather than observed.
    #[serde(default)]
    pub inferred_roles: Vec<u64>,
    /// Bytes alive at the peak by component, in
    /// [`Component::ALL`](crate::analysis::categories::Component)'s order.
    pub components: Vec<u64>,
    pub generation: u32,
    /// Largest first; empty unless asked for in detail.
    pub call_sites: Vec<Keyed>,
    /// Outermost first, children after their parent; empty unless asked for in detail.
    pub modules: Vec<Keyed>,
    pub curve: NormalisedCurve,
    /// What the trace says about running out of memory (`None` in a digest written before
    /// it was kept: see [`Digest::oom`]).
    #[serde(default)]
    pub oom: Option<crate::analysis::oom::OomRecord>,
}

impl Digest {
    /// What the trace says about running out of memory; for a digest written before that was
    /// kept, the count its overview numbers hold.
    pub fn oom(&self) -> crate::analysis::oom::OomRecord {
        self.oom.clone().unwrap_or_else(|| {
            match self.metric(overview::MetricKey::ActionCount(crate::model::Action::Oom)) {
                Some(count) if count > 0 => {
                    crate::analysis::oom::OomRecord::Recorded { count, first: None }
                }
                _ => crate::analysis::oom::OomRecord::NoneRecorded,
            }
        })
    }

    /// The value of overview metric `key`.
    pub fn metric(&self, key: overview::MetricKey) -> Option<u64> {
        self.metrics.iter().find(|m| m.key == key).map(|m| m.value)
    }

    /// Bytes at the peak of one role.
    pub fn role(&self, role: crate::analysis::categories::Role) -> u64 {
        self.roles.get(role as usize).copied().unwrap_or(0)
    }
}

/// The digest of `device`, with call sites and modules when `detail` is set, at the run's
/// allocated peak or, with `at_phase`, at the peak within that phase of training.
pub fn digest(
    cx: &Context<'_>,
    device: u32,
    detail: bool,
    at_phase: Option<Phase>,
) -> Result<Digest, ViewError> {
    let analysed = cx.analysed;
    let position = analysed
        .device_position(device)
        .ok_or(ViewError::NoSuchDevice { device })?;
    let overview = overview::build(analysed, device).ok_or(ViewError::NoSuchDevice { device })?;
    let dev = &analysed.snapshot.devices[position];
    let facts = &analysed.facts[position];
    let categories = cx.categorised.device(position);
    let phases = &categories.phases;
    let (peak_state, at_phase) = match at_phase
        .and_then(|p| crate::phases::phase_peak(dev, facts, phases, p).map(|(s, _, _)| (s, p)))
    {
        Some((state, phase)) => (State::new(state), Some(phase)),
        None => (State::new(facts.peak_allocated.state()), None),
    };
    let (peak_phase, peak_iteration) = peak_state
        .row_before()
        .and_then(|row| crate::phases::moment_of_row(dev, phases, row.get()))
        .map_or((None, None), |(p, i)| (Some(p), i));
    let totals = totals_at(facts, categories, peak_state.get());
    let (call_sites, modules) = if detail {
        let columns = DeviceColumns::new(&analysed.snapshot, dev, facts);
        let rows = Rows {
            snapshot: &analysed.snapshot,
            device: dev,
            facts,
            categories,
            columns: &columns,
            block_sizes: None,
        };
        let chosen = select(&rows, Scope::State(peak_state), &Filter::default())
            .expect("no filter always applies")
            .chosen;
        let sites = group(&rows, &chosen, GroupBy::CallSite)
            .roots
            .iter()
            .map(|n| Keyed {
                key: portable(&n.label),
                label: n.label.clone(),
                depth: 0,
                user: n.user,
                count: n.count,
                bytes: n.requested_bytes,
                occurrences: 1,
            })
            .collect();
        let mut modules = Modules::default();
        modules.add(&group(&rows, &chosen, GroupBy::Module).roots, "", 0);
        (sites, modules.keyed)
    } else {
        (Vec::new(), Vec::new())
    };
    Ok(Digest {
        device,
        device_kind: cx.analysed.snapshot.kind_of(device),
        metrics: overview.metrics,
        unused: overview.unused,
        peak_state,
        at_phase,
        peak_phase,
        peak_iteration,
        peak_bytes: facts.allocated_at(peak_state.get()),
        roles: totals.roles,
        inferred_roles: totals.inferred_roles,
        components: totals.components,
        generation: cx.categorised.generation(),
        call_sites,
        modules,
        curve: curve(dev, facts),
        oom: crate::analysis::oom::oom_record(analysed, device),
    })
}

/// A frame's `file:line:name` as the same code reads on any machine: from the package on
/// for installed code (what follows `site-packages/`), else the last two parts of the path,
/// so two runs from different checkouts or environments match.
pub fn portable(frame: &str) -> String {
    for marker in ["site-packages/", "dist-packages/"] {
        if let Some(at) = frame.rfind(marker) {
            return frame[at + marker.len()..].to_string();
        }
    }
    let (path, rest) = match frame.rfind(':').and_then(|i| frame[..i].rfind(':')) {
        Some(i) => frame.split_at(i),
        None => (frame, ""),
    };
    let parts: Vec<&str> = path.split(['/', '\\']).collect();
    let keep = parts.len().saturating_sub(2);
    format!("{}{rest}", parts[keep..].join("/"))
}

/// The separator of a module path's parts.
pub const PATH_SEPARATOR: &str = " › ";

/// The module tree as keyed paths, parents before children.
#[derive(Default)]
struct Modules {
    keyed: Vec<Keyed>,
    at: FxHashMap<String, usize>,
}

impl Modules {
    /// Adds `nodes` under `prefix`. The calls of a repeated module are added up under the
    /// module's own path (their number in `occurrences`), since two runs may repeat a layer
    /// a different number of times.
    fn add(&mut self, nodes: &[Node], prefix: &str, depth: u32) {
        for node in nodes {
            let label = match node.occurrences {
                0 | 1 => node.label.clone(),
                n => node
                    .label
                    .strip_suffix(&format!(" ×{n}"))
                    .unwrap_or(&node.label)
                    .to_string(),
            };
            let key = if prefix.is_empty() {
                label.clone()
            } else {
                format!("{prefix}{PATH_SEPARATOR}{label}")
            };
            let at = match self.at.get(&key) {
                Some(&at) => at,
                None => {
                    self.keyed.push(Keyed {
                        key: key.clone(),
                        label,
                        depth,
                        user: node.user,
                        count: 0,
                        bytes: 0,
                        occurrences: 0,
                    });
                    self.at.insert(key.clone(), self.keyed.len() - 1);
                    self.keyed.len() - 1
                }
            };
            let entry = &mut self.keyed[at];
            entry.count += node.count;
            entry.bytes += node.requested_bytes;
            entry.occurrences += node.occurrences.max(1);
            if node.occurrences >= 2 {
                // The calls ("call k of N") are not a level of their own across files.
                for call in &node.children {
                    self.add(&call.children, &key, depth + 1);
                }
            } else {
                self.add(&node.children, &key, depth + 1);
            }
        }
    }
}

/// The allocated curve of a device on a normalised axis.
fn curve(device: &Device, facts: &DeviceFacts) -> NormalisedCurve {
    let rows = device.trace.len();
    let states = rows + 1;
    let points = states.min(CURVE_POINTS);
    let mut by_event = vec![0u64; points];
    for state in 0..states {
        let k = state * points / states;
        let value = facts.allocated_at(state as u32);
        by_event[k] = by_event[k].max(value);
    }
    let times = &device.trace.time_us;
    let timed = rows > 0
        && times.len() == rows
        && times[0] != NO_TIME
        && times.windows(2).all(|w| w[0] <= w[1]);
    let by_time = if timed {
        let (t0, t1) = (times[0], times[rows - 1]);
        let span = (t1 - t0).max(1) as f64;
        let points = CURVE_POINTS;
        // Per point: the highest value in it and the value after its last event.
        let mut out: Vec<Option<(u64, u64)>> = vec![None; points];
        let mut put = |t: i64, value: u64| {
            let k = (((t - t0) as f64 / span) * points as f64) as usize;
            let slot = &mut out[k.min(points - 1)];
            *slot = Some(slot.map_or((value, value), |(high, _)| (high.max(value), value)));
        };
        put(t0, facts.baseline_allocated);
        for (row, &t) in times.iter().enumerate() {
            put(t, facts.allocated[row]);
        }
        // A stretch with no event holds the value after the last one before it.
        let mut last = facts.baseline_allocated;
        out.into_iter()
            .map(|point| match point {
                Some((high, after)) => {
                    last = after;
                    high
                }
                None => last,
            })
            .collect()
    } else {
        Vec::new()
    };
    NormalisedCurve { by_event, by_time }
}

#[cfg(test)]
mod tests {
    use super::portable;

    #[test]
    fn frames_read_the_same_from_any_checkout_or_environment() {
        assert_eq!(
            portable("/home/a/venv/lib/python3.11/site-packages/torch/nn/functional.py:12:linear"),
            "torch/nn/functional.py:12:linear"
        );
        assert_eq!(
            portable("/home/a/src/proj/model.py:50:forward"),
            "proj/model.py:50:forward"
        );
        assert_eq!(portable("C:\\x\\proj\\model.py:5:f"), "proj/model.py:5:f");
        assert_eq!(portable("model.py:5:f"), "model.py:5:f");
        assert_eq!(portable("??:0:at::empty"), "??:0:at::empty");
    }
}
