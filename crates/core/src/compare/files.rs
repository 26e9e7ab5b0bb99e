//! The files table: one row per open file and device — its peak allocated and reserved
//! memory, allocated and reserved at the end, efficiency at the peak, trace entries, time
//! span, and the bytes of each role at its peak — sortable by any column.
//!
//! Rows are made from digests, so every number is the one that file's overview and
//! breakdown show. Not the place for words ([`crate::format::compare`]) or for choosing
//! which files are open.

use serde::{Deserialize, Serialize};

use super::digest::Digest;
use super::ranks::{job_position, outliers, settings_of, shared_settings, JobPosition};
use crate::analysis::categories::Role;
use crate::analysis::oom::OomRecord;
use crate::model::text::natural_cmp;
use crate::overview::MetricKey;

/// One file's device in the files table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRow {
    /// The file's name (or its path inside an opened folder).
    pub name: String,
    /// What the user calls it (`ctx 512 / bf16`); the name when not set.
    pub label: String,
    pub device: u32,
    /// The kind of device it is (`cuda`, `npu`…).
    #[serde(default)]
    pub device_kind: crate::model::DeviceKind,
    pub rank: Option<u32>,
    pub iteration: Option<u32>,
    /// The settings that tell the table's files apart (`ctx`, `bs`…), the same words in the
    /// same order on every row (see [`read_settings`]); `None` where this name has none.
    #[serde(default)]
    pub settings: Vec<(String, Option<u64>)>,
    pub peak_allocated_bytes: u64,
    pub reserved_at_peak_bytes: u64,
    pub peak_reserved_bytes: u64,
    pub allocated_end_bytes: u64,
    pub reserved_end_bytes: u64,
    /// Allocated / reserved at the allocated peak, in parts per million.
    pub efficiency_at_peak_ppm: Option<u64>,
    pub trace_entries: u64,
    pub time_span_us: Option<u64>,
    /// Bytes alive at the peak by role, in [`Role::ALL`]'s order.
    pub roles_at_peak: Vec<u64>,
    /// Of them, the bytes whose role was deduced rather than observed.
    #[serde(default)]
    pub inferred_at_peak_bytes: u64,
    /// Its peak is far from the other ranks' of its iteration (see [`super::ranks`]).
    pub outlier: bool,
    /// The out-of-memory errors its trace recorded, or that it could not have recorded one.
    pub oom: OomRecord,
}

impl FileRow {
    pub fn new(name: &str, label: Option<&str>, digest: &Digest) -> Self {
        let metric = |key| digest.metric(key).unwrap_or(0);
        let JobPosition { rank, iteration } = job_position(name);
        FileRow {
            name: name.to_string(),
            label: label
                .filter(|l| !l.trim().is_empty())
                .unwrap_or(name)
                .to_string(),
            device: digest.device,
            device_kind: digest.device_kind,
            rank,
            iteration,
            settings: Vec::new(),
            peak_allocated_bytes: metric(MetricKey::PeakAllocatedBytes),
            reserved_at_peak_bytes: metric(MetricKey::ReservedAtPeakBytes),
            peak_reserved_bytes: metric(MetricKey::PeakReservedBytes),
            allocated_end_bytes: metric(MetricKey::AllocatedEndBytes),
            reserved_end_bytes: metric(MetricKey::ReservedEndBytes),
            efficiency_at_peak_ppm: digest.metric(MetricKey::EfficiencyAtPeakPpm),
            trace_entries: metric(MetricKey::TraceEntries),
            time_span_us: digest.metric(MetricKey::TimeSpanUs),
            roles_at_peak: Role::ALL.iter().map(|&r| digest.role(r)).collect(),
            inferred_at_peak_bytes: digest.inferred_roles.iter().sum(),
            outlier: false,
            oom: digest.oom(),
        }
    }

    /// The out-of-memory errors its trace recorded; `None` when it could not record one.
    pub fn oom_count(&self) -> Option<u64> {
        match self.oom {
            OomRecord::CannotRecord { .. } => None,
            ref recorded => Some(recorded.count()),
        }
    }

    /// The bytes of `role` at the peak.
    pub fn role(&self, role: Role) -> u64 {
        self.roles_at_peak.get(role as usize).copied().unwrap_or(0)
    }
}

/// The devices of one file that views set beside other files': every device that used
/// memory, or its first device when none did.
pub fn shown_devices(digests: &[Digest]) -> Vec<&Digest> {
    let used: Vec<&Digest> = digests.iter().filter(|d| !d.unused).collect();
    if used.is_empty() {
        digests.iter().take(1).collect()
    } else {
        used
    }
}

/// The rows of one file: one per [shown device](shown_devices).
pub fn rows_of(name: &str, label: Option<&str>, digests: &[Digest]) -> Vec<FileRow> {
    shown_devices(digests)
        .into_iter()
        .map(|d| FileRow::new(name, label, d))
        .collect()
}

/// Gives every row the settings that tell the rows' names apart (`ctx512` beside `ctx128`),
/// as columns like rank and iteration; a word every name has with one value says nothing.
pub fn read_settings(rows: &mut [FileRow]) {
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    let words = shared_settings(&names);
    for row in rows.iter_mut() {
        let own = settings_of(&row.name);
        row.settings = words
            .iter()
            .map(|w| {
                let value = own.iter().find(|(o, _)| o == w).map(|&(_, v)| v);
                (w.clone(), value)
            })
            .collect();
    }
}

/// The ranks of one iteration (and device) at a glance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterationSummary {
    /// `None` for ranks whose names carry no iteration.
    pub iteration: Option<u32>,
    pub device: u32,
    #[serde(default)]
    pub device_kind: crate::model::DeviceKind,
    pub ranks: u32,
    pub min_peak_allocated_bytes: u64,
    pub median_peak_allocated_bytes: u64,
    pub max_peak_allocated_bytes: u64,
    pub max_peak_reserved_bytes: u64,
    /// The ranks flagged as outliers, ascending.
    pub outlier_ranks: Vec<u32>,
}

/// One summary per iteration and device of the rows that carry a rank, in ascending order
/// (flag outliers first).
pub fn iteration_summaries(rows: &[FileRow]) -> Vec<IterationSummary> {
    let mut keys: Vec<(Option<u32>, u32)> = rows
        .iter()
        .filter(|r| r.rank.is_some())
        .map(|r| (r.iteration, r.device))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .map(|(iteration, device)| {
            let members: Vec<&FileRow> = rows
                .iter()
                .filter(|r| r.rank.is_some() && r.iteration == iteration && r.device == device)
                .collect();
            let mut peaks: Vec<u64> = members.iter().map(|r| r.peak_allocated_bytes).collect();
            peaks.sort_unstable();
            let mut outlier_ranks: Vec<u32> = members
                .iter()
                .filter(|r| r.outlier)
                .filter_map(|r| r.rank)
                .collect();
            outlier_ranks.sort_unstable();
            IterationSummary {
                iteration,
                device,
                device_kind: members[0].device_kind,
                ranks: members.len() as u32,
                min_peak_allocated_bytes: peaks[0],
                median_peak_allocated_bytes: peaks[(peaks.len() - 1) / 2],
                max_peak_allocated_bytes: peaks[peaks.len() - 1],
                max_peak_reserved_bytes: members
                    .iter()
                    .map(|r| r.peak_reserved_bytes)
                    .max()
                    .unwrap_or(0),
                outlier_ranks,
            }
        })
        .collect()
}

/// Flags the rows whose peak is an outlier among the rows of the same iteration and device
/// that carry a rank (files not named after ranks are never flagged).
pub fn flag_outliers(rows: &mut [FileRow]) {
    // (iteration, device) → the rows of its ranks.
    type Group = ((Option<u32>, u32), Vec<usize>);
    let mut groups: Vec<Group> = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        if row.rank.is_none() {
            continue;
        }
        let key = (row.iteration, row.device);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    for row in rows.iter_mut() {
        row.outlier = false;
    }
    for (_, members) in groups {
        let peaks: Vec<u64> = members
            .iter()
            .map(|&i| rows[i].peak_allocated_bytes)
            .collect();
        for (&i, flagged) in members.iter().zip(outliers(&peaks)) {
            rows[i].outlier = flagged;
        }
    }
}

/// A column of the files table (also what it sorts by).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FilesColumn {
    Label,
    Device,
    Rank,
    Iteration,
    PeakAllocated,
    ReservedAtPeak,
    PeakReserved,
    AllocatedEnd,
    ReservedEnd,
    EfficiencyAtPeak,
    TraceEntries,
    TimeSpan,
    /// Out-of-memory errors its trace recorded (none when it could not record one).
    Oom,
    Role(Role),
    /// Of the bytes at the peak, those whose role was deduced rather than observed.
    Inferred,
    /// The `n`th of the rows' settings (see [`read_settings`]).
    Setting(u8),
}

impl FilesColumn {
    /// The columns before the roles, in the table's order.
    pub const FIXED: [FilesColumn; 13] = [
        FilesColumn::Label,
        FilesColumn::Device,
        FilesColumn::Rank,
        FilesColumn::Iteration,
        FilesColumn::PeakAllocated,
        FilesColumn::ReservedAtPeak,
        FilesColumn::PeakReserved,
        FilesColumn::AllocatedEnd,
        FilesColumn::ReservedEnd,
        FilesColumn::EfficiencyAtPeak,
        FilesColumn::TraceEntries,
        FilesColumn::TimeSpan,
        FilesColumn::Oom,
    ];

    /// Every column: the fixed ones, one per role, and the bytes of roles deduced.
    pub fn all() -> impl Iterator<Item = FilesColumn> {
        Self::FIXED
            .into_iter()
            .chain(Role::ALL.into_iter().map(FilesColumn::Role))
            .chain([FilesColumn::Inferred])
    }

    /// The key in CSV headers, JSON and `data-column` attributes.
    pub fn key(self) -> String {
        match self {
            FilesColumn::Label => "file".into(),
            FilesColumn::Device => "device".into(),
            FilesColumn::Rank => "rank".into(),
            FilesColumn::Iteration => "iteration".into(),
            FilesColumn::PeakAllocated => "peak_allocated_bytes".into(),
            FilesColumn::ReservedAtPeak => "reserved_at_peak_bytes".into(),
            FilesColumn::PeakReserved => "peak_reserved_bytes".into(),
            FilesColumn::AllocatedEnd => "allocated_end_bytes".into(),
            FilesColumn::ReservedEnd => "reserved_end_bytes".into(),
            FilesColumn::EfficiencyAtPeak => "efficiency_at_peak_ppm".into(),
            FilesColumn::TraceEntries => "trace_entries".into(),
            FilesColumn::TimeSpan => "time_span_us".into(),
            FilesColumn::Oom => "oom_count".into(),
            FilesColumn::Role(role) => format!("{}_at_peak_bytes", role.key()),
            FilesColumn::Inferred => "inferred_at_peak_bytes".into(),
            FilesColumn::Setting(n) => format!("setting_{n}"),
        }
    }

    /// The settings' columns of `rows`, after the iteration's in the table.
    pub fn settings(rows: &[FileRow]) -> impl Iterator<Item = FilesColumn> {
        let count = rows
            .first()
            .map_or(0, |r| r.settings.len())
            .min(u8::MAX as usize);
        (0..count as u8).map(FilesColumn::Setting)
    }

    /// The column `key` names among `rows`' columns: a fixed one, a role's, or a setting's
    /// word (`ctx`).
    pub fn parse_in(rows: &[FileRow], key: &str) -> Option<FilesColumn> {
        FilesColumn::parse(key).or_else(|| {
            let words = &rows.first()?.settings;
            let n = words.iter().position(|(w, _)| w == key)?;
            u8::try_from(n).ok().map(FilesColumn::Setting)
        })
    }

    /// The word of a setting's column in `rows`, its key otherwise: CSV headers and
    /// `data-column` attributes.
    pub fn key_in(self, rows: &[FileRow]) -> String {
        match self {
            FilesColumn::Setting(n) => rows
                .first()
                .and_then(|r| r.settings.get(n as usize))
                .map_or_else(|| self.key(), |(w, _)| w.clone()),
            _ => self.key(),
        }
    }

    /// The column whose key is `key`.
    pub fn parse(key: &str) -> Option<FilesColumn> {
        FilesColumn::all().find(|c| c.key() == key)
    }

    /// A row's value in this column, as a number to sort by (`None` sorts first).
    fn number(self, row: &FileRow) -> Option<u64> {
        match self {
            FilesColumn::Label => None,
            FilesColumn::Device => Some(row.device as u64),
            FilesColumn::Rank => row.rank.map(u64::from),
            FilesColumn::Iteration => row.iteration.map(u64::from),
            FilesColumn::PeakAllocated => Some(row.peak_allocated_bytes),
            FilesColumn::ReservedAtPeak => Some(row.reserved_at_peak_bytes),
            FilesColumn::PeakReserved => Some(row.peak_reserved_bytes),
            FilesColumn::AllocatedEnd => Some(row.allocated_end_bytes),
            FilesColumn::ReservedEnd => Some(row.reserved_end_bytes),
            FilesColumn::EfficiencyAtPeak => row.efficiency_at_peak_ppm,
            FilesColumn::TraceEntries => Some(row.trace_entries),
            FilesColumn::TimeSpan => row.time_span_us,
            FilesColumn::Oom => row.oom_count(),
            FilesColumn::Role(role) => Some(row.role(role)),
            FilesColumn::Inferred => Some(row.inferred_at_peak_bytes),
            FilesColumn::Setting(n) => row.settings.get(n as usize).and_then(|&(_, v)| v),
        }
    }
}

/// Sorts rows by `column`; ties keep their order (the order files were opened in).
pub fn sort_rows(rows: &mut [FileRow], column: FilesColumn, descending: bool) {
    rows.sort_by(|x, y| row_order(x, y, column, descending));
}

/// The order [`sort_rows`] puts `rows` in, as the index of each row from first to last, so
/// that what goes with each row (its digest, its curve) can follow it.
pub fn sort_order(rows: &[FileRow], column: FilesColumn, descending: bool) -> Vec<usize> {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&x, &y| row_order(&rows[x], &rows[y], column, descending));
    order
}

/// The order of `rows` by their files' names as people read them (`rank2` before `rank10`),
/// each file's devices in the order they came: the table's order when no column is chosen.
pub fn name_order(rows: &[FileRow]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&x, &y| natural_cmp(&rows[x].name, &rows[y].name));
    order
}

/// Which of two rows comes first sorted by `column`.
fn row_order(
    x: &FileRow,
    y: &FileRow,
    column: FilesColumn,
    descending: bool,
) -> std::cmp::Ordering {
    let order = match column {
        FilesColumn::Label => natural_cmp(&x.label, &y.label),
        _ => column.number(x).cmp(&column.number(y)),
    };
    if descending {
        order.reverse()
    } else {
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, peak: u64) -> FileRow {
        FileRow {
            name: name.into(),
            label: name.into(),
            device: 0,
            device_kind: Default::default(),
            rank: job_position(name).rank,
            iteration: job_position(name).iteration,
            settings: Vec::new(),
            peak_allocated_bytes: peak,
            reserved_at_peak_bytes: 0,
            peak_reserved_bytes: 0,
            allocated_end_bytes: 0,
            reserved_end_bytes: 0,
            efficiency_at_peak_ppm: None,
            trace_entries: 0,
            time_span_us: None,
            roles_at_peak: vec![0; Role::ALL.len()],
            inferred_at_peak_bytes: 0,
            outlier: false,
            oom: OomRecord::NoneRecorded,
        }
    }

    #[test]
    fn sorting_is_stable_and_labels_ignore_case() {
        let mut rows = vec![row("b", 2), row("A", 2), row("c", 1)];
        sort_rows(&mut rows, FilesColumn::PeakAllocated, true);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["b", "A", "c"]);
        sort_rows(&mut rows, FilesColumn::Label, false);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["A", "b", "c"]);
    }

    #[test]
    fn the_sort_order_is_the_order_rows_are_sorted_in_ties_and_all() {
        let rows = vec![row("b", 2), row("A", 2), row("c", 1), row("a", 3)];
        for column in [FilesColumn::PeakAllocated, FilesColumn::Label] {
            for descending in [false, true] {
                let mut sorted = rows.clone();
                sort_rows(&mut sorted, column, descending);
                let order = sort_order(&rows, column, descending);
                let followed: Vec<&FileRow> = order.iter().map(|&i| &rows[i]).collect();
                assert_eq!(followed, sorted.iter().collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn outliers_are_judged_within_an_iteration() {
        let mut rows: Vec<FileRow> = (0..8)
            .map(|r| {
                row(
                    &format!("iteration_1/rank{r}_memory_snapshot.pickle"),
                    100 << 30,
                )
            })
            .chain((0..8).map(|r| {
                row(
                    &format!("iteration_2/rank{r}_memory_snapshot.pickle"),
                    if r == 5 { 130 << 30 } else { 120 << 30 },
                )
            }))
            .chain([row("other.pickle", 1)])
            .collect();
        flag_outliers(&mut rows);
        let summaries = iteration_summaries(&rows);
        assert_eq!(summaries.len(), 2);
        assert_eq!(summaries[1].iteration, Some(2));
        assert_eq!(summaries[1].ranks, 8);
        assert_eq!(summaries[1].outlier_ranks, [5]);
        assert_eq!(
            (
                summaries[1].min_peak_allocated_bytes,
                summaries[1].max_peak_allocated_bytes
            ),
            (120 << 30, 130 << 30)
        );
        let flagged: Vec<(Option<u32>, Option<u32>)> = rows
            .iter()
            .filter(|r| r.outlier)
            .map(|r| (r.iteration, r.rank))
            .collect();
        assert_eq!(flagged, [(Some(2), Some(5))]);
    }

    #[test]
    fn every_column_has_a_key_that_reads_back() {
        for column in FilesColumn::all() {
            assert_eq!(FilesColumn::parse(&column.key()), Some(column));
        }
    }
}
