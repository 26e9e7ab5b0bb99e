//! Memory budgets, for CI: each device of each file (as a [`DigestFile`]) against limits on
//! its peak, its reserved memory, its efficiency, the share whose role is unknown and the
//! bytes of any role, and — with a baseline — against the growth of its peak and of each role
//! since then, naming what grew most. Every figure checked is kept, so a verdict can be
//! printed whole.
//!
//! Not the place for words ([`crate::format::check`]) or for reading files.

use serde::{Deserialize, Serialize};

use super::diff::{compare, Comparison};
use super::digest::Digest;
use super::digest_file::DigestFile;
use super::files::shown_devices;
use super::ranks::job_position;
use crate::analysis::categories::signals::Phase;
use crate::analysis::categories::Role;
use crate::analysis::oom::OomRecord;
use crate::model::text::natural_cmp;
use crate::model::DeviceKind;
use crate::overview::MetricKey;

/// Parts per million in a percent.
pub const PPM_PER_PERCENT: u64 = 10_000;

/// The limits a device is held to; `None` checks nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budgets {
    /// Allocated bytes at the peak.
    pub max_peak_bytes: Option<u64>,
    /// Reserved bytes at their peak.
    pub max_reserved_bytes: Option<u64>,
    /// Allocated / reserved at the allocated peak, in parts per million.
    pub min_efficiency_ppm: Option<u64>,
    /// Of the allocated bytes at the peak, the share whose role is unknown, in parts per
    /// million.
    pub max_unknown_ppm: Option<u64>,
    /// Bytes of one role at the peak.
    pub max_role_bytes: Vec<RoleBytes>,
    /// Against the baseline: growth of the peak allocated and reserved bytes, in parts per
    /// million of the baseline's; and growth of any role's bytes at the peak, in parts per
    /// million of the baseline's peak allocated bytes (so a role that was small may double
    /// without failing, but not take a real share of the device).
    pub max_growth_ppm: Option<u64>,
    /// An out-of-memory error recorded in a trace does not fail the check (by default it
    /// does, whatever the limits).
    #[serde(default)]
    pub allow_oom: bool,
}

impl Budgets {
    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        self.max_peak_bytes.is_some()
            || self.max_reserved_bytes.is_some()
            || self.min_efficiency_ppm.is_some()
            || self.max_unknown_ppm.is_some()
            || !self.max_role_bytes.is_empty()
            || self.max_growth_ppm.is_some()
    }
}

/// Bytes of one role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleBytes {
    pub role: Role,
    pub bytes: u64,
}

/// What a limit is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "role")]
pub enum Checked {
    PeakAllocated,
    PeakReserved,
    EfficiencyAtPeak,
    UnknownShare,
    Role(Role),
    /// Growth against the baseline of the peak allocated bytes.
    PeakGrowth,
    /// Growth against the baseline of the peak reserved bytes.
    ReservedGrowth,
    /// Growth against the baseline of one role's bytes at the peak.
    RoleGrowth(Role),
    /// The trace recorded an out-of-memory error (the value is how many; the limit 0).
    OutOfMemory,
}

/// One limit a device went past.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Breach {
    pub checked: Checked,
    /// The figure: bytes, or parts per million for efficiency, the unknown share and growth.
    pub value: u64,
    pub limit: u64,
    /// For growth: the bytes before and after (baseline, this file).
    pub before_bytes: Option<u64>,
    pub after_bytes: Option<u64>,
}

/// What grew most against the baseline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Growth {
    /// The baseline's file name and device.
    pub baseline_file: String,
    pub baseline_device: u32,
    pub peak_delta_bytes: i64,
    /// The phase of training and iteration each peak falls in (the baseline's, this run's),
    /// when known.
    #[serde(default)]
    pub baseline_phase: Option<Phase>,
    #[serde(default)]
    pub baseline_iteration: Option<u32>,
    #[serde(default)]
    pub phase: Option<Phase>,
    #[serde(default)]
    pub iteration: Option<u32>,
    /// The two peaks fall in different phases (or iterations) of training: only the whole-run
    /// peaks are compared, and no role or call site is named or checked for growth, since what
    /// each phase holds differs.
    #[serde(default)]
    pub phases_differ: bool,
    /// The role whose bytes at the peak grew most (`None` when none grew).
    pub largest_role: Option<RoleGrowth>,
    /// The call site whose bytes at the peak grew most (`None` when none grew).
    pub largest_call_site: Option<CallSiteGrowth>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleGrowth {
    pub role: Role,
    pub delta_bytes: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallSiteGrowth {
    /// The frame as written (`model.py:88:forward`).
    pub label: String,
    pub delta_bytes: i64,
}

/// One device of one file, checked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceCheck {
    pub file: String,
    pub rank: Option<u32>,
    pub iteration: Option<u32>,
    pub device: u32,
    pub device_kind: DeviceKind,
    pub peak_allocated_bytes: u64,
    pub peak_reserved_bytes: u64,
    pub efficiency_at_peak_ppm: Option<u64>,
    pub unknown_at_peak_bytes: u64,
    pub unknown_share_ppm: u64,
    /// Bytes at the peak by role, in [`Role::ALL`]'s order.
    pub roles_at_peak: Vec<RoleBytes>,
    /// Against the baseline, when one matched this device.
    pub growth: Option<Growth>,
    /// With `max_growth`, a baseline was given but none of its devices matched this one.
    pub no_baseline: bool,
    /// What the trace says about running out of memory.
    pub oom: OomRecord,
    pub breaches: Vec<Breach>,
}

/// Every device checked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// No device went past any limit.
    pub pass: bool,
    pub budgets: Budgets,
    /// The devices that went past a limit first, then the others, each by file name in
    /// natural order (`rank2` before `rank10`).
    pub devices: Vec<DeviceCheck>,
    /// Each limit on a device's own figures, with the device closest to it (or furthest
    /// past it).
    pub headroom: Vec<Headroom>,
}

/// How close the devices came to one limit: the device nearest it (or furthest past it),
/// its figure and the room left.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Headroom {
    pub checked: Checked,
    /// Bytes, or parts per million for efficiency and the unknown share.
    pub limit: u64,
    pub value: u64,
    /// `limit − value` (for efficiency, `value − limit`): below 0 past the limit.
    pub headroom: i64,
    /// The device's place in [`Verdict::devices`].
    pub device: usize,
}

impl Verdict {
    /// The devices that went past a limit.
    pub fn breached(&self) -> impl Iterator<Item = &DeviceCheck> {
        self.devices.iter().filter(|d| !d.breaches.is_empty())
    }
}

/// Checks every [shown device](shown_devices) of `files` against `budgets`, and against the
/// matching device of `baseline` when given.
pub fn check(files: &[DigestFile], baseline: &[DigestFile], budgets: &Budgets) -> Verdict {
    let mut devices = Vec::new();
    for file in files {
        for digest in shown_devices(&file.devices) {
            let matched = (!baseline.is_empty())
                .then(|| baseline_of(file, digest, baseline))
                .flatten();
            devices.push(check_device(
                file,
                digest,
                matched,
                !baseline.is_empty(),
                budgets,
            ));
        }
    }
    // Failing devices first; then files by name as people read them (`rank2` before
    // `rank10`), each file's devices in their order.
    devices.sort_by(|a, b| {
        a.breaches
            .is_empty()
            .cmp(&b.breaches.is_empty())
            .then_with(|| natural_cmp(&a.file, &b.file))
    });
    Verdict {
        pass: devices.iter().all(|d| d.breaches.is_empty()),
        budgets: budgets.clone(),
        headroom: headroom(&devices, budgets),
        devices,
    }
}

/// Each limit on the devices' own figures, at the device nearest it.
fn headroom(devices: &[DeviceCheck], budgets: &Budgets) -> Vec<Headroom> {
    let mut limits: Vec<(Checked, u64)> = [
        (Checked::PeakAllocated, budgets.max_peak_bytes),
        (Checked::PeakReserved, budgets.max_reserved_bytes),
        (Checked::EfficiencyAtPeak, budgets.min_efficiency_ppm),
        (Checked::UnknownShare, budgets.max_unknown_ppm),
    ]
    .into_iter()
    .filter_map(|(checked, limit)| Some((checked, limit?)))
    .collect();
    limits.extend(
        budgets
            .max_role_bytes
            .iter()
            .map(|r| (Checked::Role(r.role), r.bytes)),
    );
    limits
        .into_iter()
        .filter_map(|(checked, limit)| {
            // Efficiency is a floor: its lowest figure is nearest; the others are ceilings.
            let floor = checked == Checked::EfficiencyAtPeak;
            let figures = devices
                .iter()
                .enumerate()
                .filter_map(|(i, d)| figure(d, checked).map(|v| (i, v)));
            let (device, value) = if floor {
                figures.min_by_key(|&(_, v)| v)
            } else {
                figures.max_by_key(|&(i, v)| (v, std::cmp::Reverse(i)))
            }?;
            let room = if floor {
                value as i64 - limit as i64
            } else {
                limit as i64 - value as i64
            };
            Some(Headroom {
                checked,
                limit,
                value,
                headroom: room,
                device,
            })
        })
        .collect()
}

/// A device's figure that `checked` limits (`None` for growth, and for efficiency
/// without one).
fn figure(d: &DeviceCheck, checked: Checked) -> Option<u64> {
    match checked {
        Checked::PeakAllocated => Some(d.peak_allocated_bytes),
        Checked::PeakReserved => Some(d.peak_reserved_bytes),
        Checked::EfficiencyAtPeak => d.efficiency_at_peak_ppm,
        Checked::UnknownShare => Some(d.unknown_share_ppm),
        Checked::Role(role) => d
            .roles_at_peak
            .iter()
            .find(|r| r.role == role)
            .map(|r| r.bytes),
        _ => None,
    }
}

/// The baseline's device for `digest` of `file`: the same rank's (when both names carry
/// one), else the same file name's, else — when the baseline is one file — that file's; in
/// each, the same device id.
pub fn baseline_of<'b>(
    file: &DigestFile,
    digest: &Digest,
    baseline: &'b [DigestFile],
) -> Option<(&'b DigestFile, &'b Digest)> {
    let position = job_position(&file.name);
    let base_name = |name: &str| name.rsplit(['/', '\\']).next().unwrap_or(name).to_string();
    let same_device = |b: &'b DigestFile| b.device(digest.device).map(|d| (b, d));
    let by_rank = position.rank.and_then(|rank| {
        baseline
            .iter()
            .find(|b| job_position(&b.name).rank == Some(rank))
    });
    let by_name = || {
        baseline
            .iter()
            .find(|b| base_name(&b.name) == base_name(&file.name))
    };
    let only = || (baseline.len() == 1).then(|| &baseline[0]);
    by_rank.or_else(by_name).or_else(only).and_then(same_device)
}

fn check_device(
    file: &DigestFile,
    digest: &Digest,
    baseline: Option<(&DigestFile, &Digest)>,
    baseline_given: bool,
    budgets: &Budgets,
) -> DeviceCheck {
    let metric = |key| digest.metric(key).unwrap_or(0);
    let peak = metric(MetricKey::PeakAllocatedBytes);
    let reserved = metric(MetricKey::PeakReservedBytes);
    let efficiency = digest.metric(MetricKey::EfficiencyAtPeakPpm);
    let unknown = digest.role(Role::Unknown);
    // The roles' bytes are taken at the digest's peak state, whose total is the peak.
    let unknown_share = ppm(unknown, digest.peak_bytes.max(1));
    let mut breaches = Vec::new();
    let mut over = |checked, value: u64, limit: u64, exceeded: bool| {
        if exceeded {
            breaches.push(Breach {
                checked,
                value,
                limit,
                before_bytes: None,
                after_bytes: None,
            });
        }
    };
    if let Some(limit) = budgets.max_peak_bytes {
        over(Checked::PeakAllocated, peak, limit, peak > limit);
    }
    if let Some(limit) = budgets.max_reserved_bytes {
        over(Checked::PeakReserved, reserved, limit, reserved > limit);
    }
    if let (Some(limit), Some(value)) = (budgets.min_efficiency_ppm, efficiency) {
        over(Checked::EfficiencyAtPeak, value, limit, value < limit);
    }
    if let Some(limit) = budgets.max_unknown_ppm {
        over(
            Checked::UnknownShare,
            unknown_share,
            limit,
            unknown_share > limit,
        );
    }
    for &RoleBytes { role, bytes: limit } in &budgets.max_role_bytes {
        let value = digest.role(role);
        over(Checked::Role(role), value, limit, value > limit);
    }
    let oom = digest.oom();
    if !budgets.allow_oom && oom.count() > 0 {
        breaches.insert(
            0,
            Breach {
                checked: Checked::OutOfMemory,
                value: oom.count(),
                limit: 0,
                before_bytes: None,
                after_bytes: None,
            },
        );
    }
    let growth = baseline.map(|(base_file, base)| {
        let comparison = compare(base, digest);
        let differ = phases_differ(base, digest);
        if let Some(limit) = budgets.max_growth_ppm {
            breaches.extend(growth_breaches(base, digest, &comparison, limit, differ));
        }
        growth_of(base_file, base, digest, &comparison, differ)
    });
    let position = job_position(&file.name);
    DeviceCheck {
        file: file.name.clone(),
        rank: position.rank,
        iteration: position.iteration,
        device: digest.device,
        device_kind: digest.device_kind,
        peak_allocated_bytes: peak,
        peak_reserved_bytes: reserved,
        efficiency_at_peak_ppm: efficiency,
        unknown_at_peak_bytes: unknown,
        unknown_share_ppm: unknown_share,
        roles_at_peak: Role::ALL
            .iter()
            .map(|&role| RoleBytes {
                role,
                bytes: digest.role(role),
            })
            .collect(),
        no_baseline: baseline_given && baseline.is_none(),
        oom,
        growth,
        breaches,
    }
}

/// Whether two digests' peaks fall in different known phases (or iterations) of training.
/// A phase not recognised, or not recorded (a report's numbers), tells nothing.
pub fn phases_differ(base: &Digest, digest: &Digest) -> bool {
    let known = |d: &Digest| d.peak_phase.filter(|&p| p != Phase::Other);
    match (known(base), known(digest)) {
        (Some(a), Some(b)) => a != b || base.peak_iteration != digest.peak_iteration,
        _ => false,
    }
}

/// The growth limits `base` → `digest` goes past; the roles' only when both peaks fall in one
/// phase (`phases_differ` unset).
fn growth_breaches(
    base: &Digest,
    digest: &Digest,
    comparison: &Comparison,
    limit: u64,
    phases_differ: bool,
) -> Vec<Breach> {
    let mut out = Vec::new();
    let mut grew = |checked, before: u64, after: u64, of: u64| {
        let growth = after.saturating_sub(before);
        let share = ppm(growth, of.max(1));
        if growth > 0 && share > limit {
            out.push(Breach {
                checked,
                value: share,
                limit,
                before_bytes: Some(before),
                after_bytes: Some(after),
            });
        }
    };
    let metric = |d: &Digest, key| d.metric(key).unwrap_or(0);
    let (peak_a, peak_b) = (
        metric(base, MetricKey::PeakAllocatedBytes),
        metric(digest, MetricKey::PeakAllocatedBytes),
    );
    grew(Checked::PeakGrowth, peak_a, peak_b, peak_a);
    let (reserved_a, reserved_b) = (
        metric(base, MetricKey::PeakReservedBytes),
        metric(digest, MetricKey::PeakReservedBytes),
    );
    grew(Checked::ReservedGrowth, reserved_a, reserved_b, reserved_a);
    if phases_differ {
        return out;
    }
    for (role, delta) in Role::ALL.iter().zip(&comparison.roles) {
        grew(
            Checked::RoleGrowth(*role),
            delta.a_bytes,
            delta.b_bytes,
            peak_a,
        );
    }
    out
}

fn growth_of(
    base_file: &DigestFile,
    base: &Digest,
    digest: &Digest,
    comparison: &Comparison,
    phases_differ: bool,
) -> Growth {
    let peak_delta_bytes = comparison
        .metrics
        .iter()
        .find(|m| m.key == MetricKey::PeakAllocatedBytes)
        .and_then(|m| m.delta)
        .unwrap_or(0);
    let (roles, call_sites) = match phases_differ {
        true => (&[][..], &[][..]),
        false => (&comparison.roles[..], &comparison.call_sites[..]),
    };
    let largest_role = Role::ALL
        .iter()
        .zip(roles)
        .filter(|(_, d)| d.delta_bytes > 0)
        .max_by_key(|(_, d)| d.delta_bytes)
        .map(|(role, d)| RoleGrowth {
            role: *role,
            delta_bytes: d.delta_bytes,
        });
    let largest_call_site = call_sites
        .iter()
        .filter(|c| c.delta_bytes > 0)
        .max_by_key(|c| c.delta_bytes)
        .map(|c| CallSiteGrowth {
            label: c.label.clone(),
            delta_bytes: c.delta_bytes,
        });
    Growth {
        baseline_file: base_file.name.clone(),
        baseline_device: base.device,
        peak_delta_bytes,
        baseline_phase: base.peak_phase,
        baseline_iteration: base.peak_iteration,
        phase: digest.peak_phase,
        iteration: digest.peak_iteration,
        phases_differ,
        largest_role,
        largest_call_site,
    }
}

/// `part` of `whole` in parts per million, rounded down.
fn ppm(part: u64, whole: u64) -> u64 {
    (part as u128 * 1_000_000 / whole.max(1) as u128) as u64
}
