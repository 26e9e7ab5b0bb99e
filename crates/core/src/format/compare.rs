//! Files side by side in words: the files table's column titles, cells, Markdown and CSV (and
//! as a document, for a summary across files that links to each file's report), and a
//! comparison's labels and deltas. The page and `memsight files` / `memsight compare` /
//! `memsight report` print these, so they read the same.
//!
//! File names and frames come from the user's files: Markdown escapes them
//! ([`super::document::escape`]) and CSV keeps them from running as formulas
//! ([`super::table::cell`]). Not the place for computing rows or deltas.

use std::fmt::Write;

use super::breakdown::{component_label, role_label};
use super::document::escape;
use super::document::{
    Align, Cell, ChartKind, ChartSlice, DocBlock, DocChart, DocColumn, DocRow, DocTable, Inline,
};
use super::overview::metric_label;
use super::table::cell;
use super::{bytes, bytes_delta, count, duration_us, percent_ppm};
use crate::analysis::categories::signals::Phase;
use crate::analysis::categories::{Component, Role};
use crate::analysis::oom::OomRecord;
use crate::analysis::palette::Style;
use crate::compare::diff::{Change, MetricDelta};
use crate::compare::files::{iteration_summaries, FileRow, FilesColumn, IterationSummary};
use crate::compare::overlay::{run_curve, OverlayX, OverlayY, RunCurve, MOST_RUNS};
use crate::compare::Digest;
use crate::overview::{Metric, Unit};

/// A files-table column's title.
pub fn column_title(column: FilesColumn) -> String {
    match column {
        FilesColumn::Label => "File".into(),
        FilesColumn::Device => "Device".into(),
        FilesColumn::Rank => "Rank".into(),
        FilesColumn::Iteration => "Iteration".into(),
        FilesColumn::PeakAllocated => "Peak allocated".into(),
        FilesColumn::ReservedAtPeak => "Reserved at the peak".into(),
        FilesColumn::PeakReserved => "Peak reserved".into(),
        FilesColumn::AllocatedEnd => "Allocated at end".into(),
        FilesColumn::ReservedEnd => "Reserved at end".into(),
        FilesColumn::EfficiencyAtPeak => "Efficiency at the peak".into(),
        FilesColumn::TraceEntries => "Trace entries".into(),
        FilesColumn::TimeSpan => "Time span".into(),
        FilesColumn::Oom => "Out of memory".into(),
        FilesColumn::Role(role) => format!("{} at the peak", role_label(role)),
        FilesColumn::Inferred => "Inferred at the peak".into(),
        FilesColumn::Setting(n) => format!("Setting {}", n as usize + 1),
    }
}

/// A files-table column's title among `rows`: a setting's column is titled by its word.
pub fn column_title_in(rows: &[FileRow], column: FilesColumn) -> String {
    match column {
        FilesColumn::Setting(_) => column.key_in(rows),
        _ => column_title(column),
    }
}

/// A row's cell in human units (`—` where the file has no such number).
pub fn cell_text(row: &FileRow, column: FilesColumn) -> String {
    let dash = || "—".to_string();
    match column {
        FilesColumn::Label => row.label.clone(),
        FilesColumn::Device => super::device(row.device_kind, row.device),
        FilesColumn::Rank => row.rank.map_or_else(dash, |r| r.to_string()),
        FilesColumn::Iteration => row.iteration.map_or_else(dash, |i| i.to_string()),
        FilesColumn::PeakAllocated => bytes(row.peak_allocated_bytes),
        FilesColumn::ReservedAtPeak => bytes(row.reserved_at_peak_bytes),
        FilesColumn::PeakReserved => bytes(row.peak_reserved_bytes),
        FilesColumn::AllocatedEnd => bytes(row.allocated_end_bytes),
        FilesColumn::ReservedEnd => bytes(row.reserved_end_bytes),
        FilesColumn::EfficiencyAtPeak => row.efficiency_at_peak_ppm.map_or_else(dash, percent_ppm),
        FilesColumn::TraceEntries => count(row.trace_entries),
        FilesColumn::TimeSpan => row.time_span_us.map_or_else(dash, duration_us),
        FilesColumn::Oom => oom_cell(&row.oom),
        FilesColumn::Role(role) => bytes(row.role(role)),
        FilesColumn::Inferred => bytes(row.inferred_at_peak_bytes),
        FilesColumn::Setting(n) => row
            .settings
            .get(n as usize)
            .and_then(|&(_, v)| v)
            .map_or_else(dash, |v| v.to_string()),
    }
}

/// A row's cell exact (bytes, counts, µs, ppm), as CSV and `data-*` attributes carry it;
/// empty where the file has no such number.
pub fn cell_exact(row: &FileRow, column: FilesColumn) -> String {
    let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
    match column {
        FilesColumn::Label => row.label.clone(),
        FilesColumn::Device => row.device.to_string(),
        FilesColumn::Rank => opt(row.rank.map(u64::from)),
        FilesColumn::Iteration => opt(row.iteration.map(u64::from)),
        FilesColumn::PeakAllocated => row.peak_allocated_bytes.to_string(),
        FilesColumn::ReservedAtPeak => row.reserved_at_peak_bytes.to_string(),
        FilesColumn::PeakReserved => row.peak_reserved_bytes.to_string(),
        FilesColumn::AllocatedEnd => row.allocated_end_bytes.to_string(),
        FilesColumn::ReservedEnd => row.reserved_end_bytes.to_string(),
        FilesColumn::EfficiencyAtPeak => opt(row.efficiency_at_peak_ppm),
        FilesColumn::TraceEntries => row.trace_entries.to_string(),
        FilesColumn::TimeSpan => opt(row.time_span_us),
        FilesColumn::Oom => opt(row.oom_count()),
        FilesColumn::Role(role) => row.role(role).to_string(),
        FilesColumn::Inferred => row.inferred_at_peak_bytes.to_string(),
        FilesColumn::Setting(n) => opt(row.settings.get(n as usize).and_then(|&(_, v)| v)),
    }
}

/// The columns a files table shows: rank and iteration only when some file has one, then the
/// settings that tell the files apart, roles only when some file holds memory in them.
pub fn shown_columns(rows: &[FileRow]) -> Vec<FilesColumn> {
    with_settings(rows, FilesColumn::all())
        .into_iter()
        .filter(|&c| match c {
            FilesColumn::Rank => rows.iter().any(|r| r.rank.is_some()),
            FilesColumn::Iteration => rows.iter().any(|r| r.iteration.is_some()),
            FilesColumn::Role(role) => rows.iter().any(|r| r.role(role) > 0),
            FilesColumn::Inferred => rows.iter().any(|r| r.inferred_at_peak_bytes > 0),
            _ => true,
        })
        .collect()
}

/// `columns` with `rows`' settings after the iteration's.
fn with_settings(rows: &[FileRow], columns: impl Iterator<Item = FilesColumn>) -> Vec<FilesColumn> {
    let mut out = Vec::new();
    for column in columns {
        out.push(column);
        if column == FilesColumn::Iteration {
            out.extend(FilesColumn::settings(rows));
        }
    }
    out
}

/// The files table as Markdown, in human units, outliers marked.
pub fn files_markdown(rows: &[FileRow]) -> String {
    let columns = shown_columns(rows);
    let mut out = String::new();
    let titles: Vec<String> = columns.iter().map(|&c| column_title_in(rows, c)).collect();
    let _ = writeln!(out, "| {} |", titles.join(" | "));
    let rule: Vec<&str> = columns
        .iter()
        .map(|&c| match c {
            FilesColumn::Label => "---",
            _ => "---:",
        })
        .collect();
    let _ = writeln!(out, "| {} |", rule.join(" | "));
    for row in rows {
        let cells: Vec<String> = columns
            .iter()
            .map(|&c| {
                let text = escape(&cell_text(row, c));
                if c == FilesColumn::Label && row.outlier {
                    format!("{text} (outlier)")
                } else {
                    text
                }
            })
            .collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

/// When a digest was taken, in words: `the optimizer step of iteration 2`, `the forward`,
/// `an unrecognised phase` — the moment its roles and call sites are at.
pub fn moment_words(d: &Digest) -> String {
    phase_words(d.peak_phase, d.peak_iteration)
}

/// A phase of training and its iteration in words: `the optimizer step of iteration 2`.
pub fn phase_words(phase: Option<Phase>, iteration: Option<u32>) -> String {
    let phase = match phase {
        None | Some(Phase::Other) => return "a moment no phase is recognised at".to_string(),
        Some(p) => super::breakdown::phase_label(p).to_lowercase(),
    };
    match iteration {
        Some(i) => format!("the {phase} of iteration {i}"),
        None => format!("the {phase}"),
    }
}

/// Said when A's and B's digests are at different moments of training, so their deltas are
/// not read as one change: `A peaks in the optimizer step of iteration 1, B in the forward of
/// iteration 1: …`. `None` when both are at the same phase and iteration.
pub fn moments_differ(a: &Digest, b: &Digest) -> Option<String> {
    if a.peak_phase == b.peak_phase && a.peak_iteration == b.peak_iteration {
        return None;
    }
    let verb = if a.at_phase.is_some() {
        "is taken at"
    } else {
        "peaks in"
    };
    Some(format!(
        "A {verb} {}, B {} {}: the deltas set different moments of training side by side (what each phase holds differs). Compare at one phase to see the same moment in both.",
        moment_words(a),
        if b.at_phase.is_some() { "at" } else { "in" },
        moment_words(b),
    ))
}

/// Each row's short name for a bar or a legend, in order: the user's label, else the part of
/// its name that differs from the other rows' ([`super::names::distinct_parts`]), and its
/// device, in at most 40 characters ([`super::names::fit_all`]: a long part keeps its last
/// words, so the settings of `…_ctx256_…` and `…_ctx512_…` stay whole whatever the projects'
/// prefixes).
pub fn short_labels(rows: &[&FileRow]) -> Vec<String> {
    const MOST: usize = 40;
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    let texts: Vec<String> = super::names::distinct_parts(&names)
        .into_iter()
        .zip(rows)
        .map(|(part, row)| match row.label != row.name {
            true => row.label.clone(),
            false => part,
        })
        .collect();
    let devices: Vec<String> = rows
        .iter()
        .map(|row| format!(" · {}", super::device(row.device_kind, row.device)))
        .collect();
    let room = |i: usize| MOST.saturating_sub(devices[i].chars().count()).max(8);
    super::names::fit_all(&texts, &room)
        .into_iter()
        .zip(devices)
        .map(|(text, device)| format!("{text}{device}"))
        .collect()
}

/// Where a row's file is reported: the relative paths the Markdown and the HTML rendering
/// link to.
pub struct ReportLink {
    pub markdown: String,
    pub html: String,
}

/// Every run's allocated curve on one axis (the first [`MOST_RUNS`] of `runs`, each with its
/// row's colour in [`files_blocks`]' chart) and a table of each run's peak and where in the
/// run it came, as the files view's chart shows them.
pub fn runs_blocks(runs: &[(&FileRow, &Digest)]) -> Vec<DocBlock> {
    let palette = Style::light().palette;
    let drawn: Vec<(usize, &FileRow, RunCurve)> = runs
        .iter()
        .enumerate()
        .take(MOST_RUNS)
        .filter_map(|(i, (row, digest))| {
            run_curve(digest, OverlayX::Events, OverlayY::Absolute).map(|c| (i, *row, c))
        })
        .collect();
    if drawn.is_empty() {
        return Vec::new();
    }
    let labels = short_labels(&drawn.iter().map(|(_, row, _)| *row).collect::<Vec<_>>());
    let slices = drawn
        .iter()
        .zip(&labels)
        .map(|((i, row, curve), label)| {
            let [r, g, b, _] = palette[i % palette.len()];
            ChartSlice {
                key: format!("{}:{}", row.name, row.device),
                label: label.clone(),
                bytes: curve.peak.unsigned_abs(),
                colour: [r, g, b],
            }
        })
        .collect();
    let chart = DocChart {
        key: "runs",
        title: "Allocated memory of each run".to_string(),
        kind: ChartKind::Runs,
        slices,
        curves: drawn.iter().map(|(_, _, c)| c.values.clone()).collect(),
    };
    let table = DocTable {
        columns: vec![
            DocColumn::new("Run", Align::Left),
            DocColumn::new("Peak", Align::Right),
            DocColumn::new("At", Align::Right),
        ],
        rows: drawn
            .iter()
            .zip(labels)
            .map(|((_, row, curve), label)| DocRow {
                cells: vec![
                    Cell::text(label),
                    Cell::text(super::bytes_signed(curve.peak)).with("bytes", curve.peak),
                    Cell::text(format!(
                        "{} of its events",
                        super::percent_ppm(curve.peak_share_ppm)
                    ))
                    .with("ppm", curve.peak_share_ppm),
                ],
                // Not `file`: the files table's rows are known by it.
                data: vec![
                    ("run", row.name.clone()),
                    ("run-device", row.device.to_string()),
                ],
            })
            .collect(),
    };
    let mut blocks = vec![
        DocBlock::Heading(2, vec![Inline::text("Every run on one axis")]),
        DocBlock::Chart(chart),
        DocBlock::Table(table),
    ];
    if runs.len() > MOST_RUNS {
        blocks.push(DocBlock::Paragraph(vec![Inline::text(format!(
            "The first {MOST_RUNS} of {} runs.",
            super::count(runs.len() as u64)
        ))]));
    }
    blocks
}

/// The files table as a document: the table in human units (each number's column key and
/// exact value in `data-column` and `data-value`, each row's file and device in `data-file`
/// and `data-device`, an outlier's row `data-outlier`), each file's
/// name linked to its report when `link` gives one; a chart of each row's peak allocated
/// bytes; each iteration's ranks in a sentence, and what an outlier is when there is one.
pub fn files_blocks(
    rows: &[FileRow],
    link: &dyn Fn(&FileRow) -> Option<ReportLink>,
) -> Vec<DocBlock> {
    let columns = shown_columns(rows);
    let table_rows = rows
        .iter()
        .map(|row| {
            let cells = columns
                .iter()
                .map(|&c| {
                    if c != FilesColumn::Label {
                        return Cell::text(cell_text(row, c))
                            .with("column", c.key())
                            .with("value", cell_exact(row, c));
                    }
                    let name = Inline::text(cell_text(row, c));
                    let mut content = vec![match link(row) {
                        Some(to) => Inline::Link {
                            content: vec![name],
                            markdown: to.markdown,
                            html: to.html,
                        },
                        None => name,
                    }];
                    if row.outlier {
                        content.push(Inline::text(" (outlier)"));
                    }
                    Cell::of(content)
                })
                .collect();
            let mut data = vec![
                ("file", row.name.clone()),
                ("device", row.device.to_string()),
            ];
            if row.outlier {
                data.push(("outlier", "true".to_string()));
            }
            super::document::DocRow { cells, data }
        })
        .collect();
    let table = DocTable {
        columns: columns
            .iter()
            .map(|&c| {
                let align = match c {
                    FilesColumn::Label => Align::Left,
                    _ => Align::Right,
                };
                DocColumn::new(&column_title_in(rows, c), align)
            })
            .collect(),
        rows: table_rows,
    };
    let palette = Style::light().palette;
    let chart = DocChart {
        key: "peaks",
        title: format!("{} by file", column_title(FilesColumn::PeakAllocated)),
        kind: ChartKind::Bars,
        slices: rows
            .iter()
            .zip(short_labels(&rows.iter().collect::<Vec<_>>()))
            .enumerate()
            .map(|(i, (row, label))| {
                let [r, g, b, _] = palette[i % palette.len()];
                ChartSlice {
                    key: format!("{}:{}", row.name, row.device),
                    label,
                    bytes: row.peak_allocated_bytes,
                    colour: [r, g, b],
                }
            })
            .collect(),
        curves: Vec::new(),
    };
    let mut blocks = vec![DocBlock::Table(table), DocBlock::Chart(chart)];
    let sentences: Vec<Vec<Inline>> = iteration_summaries(rows)
        .iter()
        .map(|s| vec![Inline::text(iteration_sentence(s))])
        .collect();
    if !sentences.is_empty() {
        blocks.push(DocBlock::List(sentences));
    }
    if rows.iter().any(|r| r.outlier) {
        blocks.push(DocBlock::Paragraph(vec![Inline::text(OUTLIER_MEANING)]));
    }
    blocks
}

/// What an outlier rank is, in a sentence.
pub const OUTLIER_MEANING: &str = "An outlier's peak is further from its iteration's median \
     than 5% and than three robust deviations of the other ranks'.";

/// The files table as CSV with exact values: every column, an `outlier` column last.
pub fn files_csv(rows: &[FileRow]) -> String {
    let columns = with_settings(rows, FilesColumn::all());
    let mut out = String::new();
    let header: Vec<String> = columns.iter().map(|c| c.key_in(rows)).collect();
    let _ = writeln!(out, "name,{},outlier", header.join(","));
    for row in rows {
        let cells: Vec<String> = columns.iter().map(|&c| cell(&cell_exact(row, c))).collect();
        let _ = writeln!(
            out,
            "{},{},{}",
            cell(&row.name),
            cells.join(","),
            row.outlier
        );
    }
    out
}

/// One iteration's ranks in a sentence: `Iteration 3 (cuda:0): 8 ranks, peak allocated
/// 40.0–52.0 GiB (median 40.0 GiB), peak reserved up to 54.0 GiB; outlier: rank 5.`
pub fn iteration_sentence(s: &IterationSummary) -> String {
    let which = match s.iteration {
        Some(i) => format!("Iteration {i}"),
        None => "Ranks".to_string(),
    };
    let ranks = super::counted(u64::from(s.ranks), "rank", "ranks");
    let mut text = format!(
        "{which} ({}): {ranks}, peak allocated {}–{} (median {}), peak reserved up to {}",
        super::device(s.device_kind, s.device),
        bytes(s.min_peak_allocated_bytes),
        bytes(s.max_peak_allocated_bytes),
        bytes(s.median_peak_allocated_bytes),
        bytes(s.max_peak_reserved_bytes),
    );
    match s.outlier_ranks.as_slice() {
        [] => text.push('.'),
        [r] => text.push_str(&format!("; outlier: rank {r}.")),
        ranks => {
            let list: Vec<String> = ranks.iter().map(|r| r.to_string()).collect();
            text.push_str(&format!("; outliers: ranks {}.", list.join(", ")));
        }
    }
    text
}

/// A compared number in human units (`—` when the file has none).
pub fn metric_text(delta: &MetricDelta, value: Option<u64>) -> String {
    value.map_or("—".to_string(), |value| {
        super::overview::metric_value(&Metric {
            key: delta.key,
            value,
        })
    })
}

/// A compared number's delta in human units: `+1.50 GiB`, `−3`, `+2.0 pp`, `0 B`.
pub fn metric_delta_text(delta: &MetricDelta) -> String {
    let Some(d) = delta.delta else {
        return "—".to_string();
    };
    let sign = |d: i64| match d {
        0 => String::new(),
        d if d > 0 => "+".to_string(),
        _ => "\u{2212}".to_string(),
    };
    match delta.key.unit() {
        Unit::Bytes => bytes_delta(d),
        Unit::Count => format!("{}{}", sign(d), count(d.unsigned_abs())),
        Unit::Micros => format!("{}{}", sign(d), duration_us(d.unsigned_abs())),
        // Efficiencies are percentages: their difference is in percentage points.
        Unit::Ppm => format!("{}{:.1} pp", sign(d), d.unsigned_abs() as f64 / 1e4),
    }
}

/// A compared number's label.
pub fn metric_title(delta: &MetricDelta) -> String {
    metric_label(delta.key)
}

/// A role's or component's label from its key.
pub fn category_title(key: &str) -> String {
    Role::ALL
        .iter()
        .find(|r| r.key() == key)
        .map(|&r| role_label(r).to_string())
        .or_else(|| {
            Component::ALL
                .iter()
                .find(|c| c.key() == key)
                .map(|&c| component_label(c).to_string())
        })
        .unwrap_or_else(|| key.to_string())
}

/// What became of a call site or module, in a word.
pub fn change_label(change: Change) -> &'static str {
    match change {
        Change::New => "new",
        Change::Vanished => "vanished",
        Change::Grew => "grew",
        Change::Shrank => "shrank",
        Change::Same => "same",
    }
}

/// A count of calls on each side, for modules run more than once: `×24 → ×12`.
pub fn occurrences_text(a: u32, b: u32) -> String {
    match (a, b) {
        (0 | 1, 0 | 1) => String::new(),
        (a, b) if a == b => format!("×{a}"),
        (a, b) => format!("×{a} → ×{b}"),
    }
}

/// A device's out-of-memory errors in a table's cell: "none", "1 (event 421)", "not recorded".
pub fn oom_cell(oom: &OomRecord) -> String {
    match oom {
        OomRecord::Recorded {
            count: n,
            first: Some(first),
        } => format!(
            "{} (event {})",
            count(*n),
            count(u64::from(first.event.get()))
        ),
        OomRecord::Recorded { count: n, .. } => count(*n),
        OomRecord::NoneRecorded => "none".into(),
        OomRecord::CannotRecord { .. } => "not recorded".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> FileRow {
        let mut roles = vec![0; Role::ALL.len()];
        roles[Role::Activations as usize] = 3 << 30;
        FileRow {
            name: "=cmd|x.pickle".into(),
            label: "ctx 512 | bf16".into(),
            device: 0,
            device_kind: Default::default(),
            rank: None,
            iteration: None,
            settings: Vec::new(),
            peak_allocated_bytes: 3 << 30,
            reserved_at_peak_bytes: 4 << 30,
            peak_reserved_bytes: 4 << 30,
            allocated_end_bytes: 1 << 20,
            reserved_end_bytes: 4 << 30,
            efficiency_at_peak_ppm: Some(750_000),
            trace_entries: 1234,
            time_span_us: None,
            roles_at_peak: roles,
            inferred_at_peak_bytes: 0,
            outlier: true,
            oom: crate::analysis::oom::OomRecord::NoneRecorded,
        }
    }

    #[test]
    fn markdown_escapes_labels_and_shows_only_used_columns() {
        let md = files_markdown(&[row()]);
        let lines: Vec<&str> = md.lines().collect();
        assert!(
            lines[0].starts_with("| File | Device | Peak allocated |"),
            "{md}"
        );
        assert!(lines[0].contains("Activations at the peak"), "{md}");
        assert!(!lines[0].contains("Rank"), "{md}");
        assert!(!lines[0].contains("Parameters"), "{md}");
        assert!(
            lines[2].starts_with("| ctx 512 \\| bf16 (outlier) | cuda:0 | 3.00 GiB |"),
            "{md}"
        );
        assert!(lines[2].contains("| 75.0% |"), "{md}");
    }

    #[test]
    fn csv_is_exact_and_safe() {
        let csv = files_csv(&[row()]);
        let mut lines = csv.lines();
        let header = lines.next().unwrap();
        assert!(header.starts_with("name,file,device,rank,iteration,peak_allocated_bytes,"));
        assert!(header.ends_with(",outlier"));
        let line = lines.next().unwrap();
        assert!(
            line.starts_with("'=cmd|x.pickle,ctx 512 | bf16,0,,,3221225472,"),
            "{line}"
        );
        assert!(line.ends_with(",true"), "{line}");
    }

    #[test]
    fn settings_that_tell_names_apart_are_columns_after_the_iteration() {
        let named = |name: &str| FileRow {
            name: name.into(),
            label: name.into(),
            ..row()
        };
        let mut rows = vec![
            named("memory_ctx512_bs8.pickle"),
            named("memory_ctx128_bs8.pickle"),
            named("memory_ctx2048.pickle"),
        ];
        crate::compare::files::read_settings(&mut rows);
        let markdown = files_markdown(&rows);
        let header = markdown.lines().next().unwrap();
        assert!(
            header.starts_with("| File | Device | ctx | Peak allocated |"),
            "{header}"
        );
        let csv = files_csv(&rows);
        assert!(
            csv.starts_with("name,file,device,rank,iteration,ctx,peak_allocated_bytes,"),
            "{csv}"
        );
        // `bs` is the same where it is present: it tells nothing apart.
        assert!(!csv.lines().next().unwrap().contains(",bs,"));
        crate::compare::files::sort_rows(&mut rows, FilesColumn::Setting(0), false);
        let order: Vec<String> = rows
            .iter()
            .map(|r| cell_text(r, FilesColumn::Setting(0)))
            .collect();
        assert_eq!(order, ["128", "512", "2048"]);
    }

    #[test]
    fn short_labels_keep_the_settings_that_differ_across_projects() {
        let named = |name: &str| FileRow {
            name: name.into(),
            label: name.into(),
            ..row()
        };
        let rows = [
            named("LINYUNLinYun__CS336-assignment2-systems__cs336_systems__results__memory_profiles__xl_ctx256_forward_bf16.pickle"),
            named("/data/sidsoc12__spring2024-assignment2-systems__cs336_systems__mem_snapshot_ctx512_bf16_infer.pickle"),
        ];
        let labels = short_labels(&rows.iter().collect::<Vec<_>>());
        assert!(labels[0].contains("ctx256"), "{labels:?}");
        assert!(labels[1].contains("ctx512"), "{labels:?}");
        assert!(labels.iter().all(|l| l.chars().count() <= 40), "{labels:?}");
        // Two projects' runs of one setting keep what tells them apart: their beginnings.
        let rows = [
            named("projectA_memory_profile_ctx256_forward_bf16.pickle"),
            named("projectB_memory_profile_ctx256_forward_bf16_again.pickle"),
            named("somethingelse_entirely_memory_profile_ctx256_forward_bf16.pickle"),
        ];
        let labels = short_labels(&rows.iter().collect::<Vec<_>>());
        assert_eq!(
            labels
                .iter()
                .collect::<std::collections::HashSet<_>>()
                .len(),
            3,
            "{labels:?}"
        );
        // One project's runs keep only what tells them apart.
        let rows = [
            named("runs/memory_ctx256_forward.pickle"),
            named("runs/memory_ctx512_forward.pickle"),
        ];
        assert_eq!(
            short_labels(&rows.iter().collect::<Vec<_>>()),
            ["ctx256 · cuda:0", "ctx512 · cuda:0"]
        );
        // A label the user gave wins.
        let labelled = FileRow {
            label: "baseline".into(),
            ..rows[0].clone()
        };
        assert_eq!(short_labels(&[&labelled, &rows[1]])[0], "baseline · cuda:0");
    }

    #[test]
    fn deltas_are_signed_in_their_unit() {
        use crate::overview::MetricKey;
        let d = |key, delta| MetricDelta {
            key,
            a: Some(0),
            b: Some(0),
            delta: Some(delta),
        };
        assert_eq!(
            metric_delta_text(&d(MetricKey::PeakAllocatedBytes, 3 << 29)),
            "+1.50 GiB"
        );
        assert_eq!(
            metric_delta_text(&d(MetricKey::TraceEntries, -1234)),
            "\u{2212}1,234"
        );
        assert_eq!(
            metric_delta_text(&d(MetricKey::EfficiencyAtPeakPpm, 25_000)),
            "+2.5 pp"
        );
        assert_eq!(
            metric_delta_text(&d(MetricKey::PeakAllocatedBytes, 0)),
            "0 B"
        );
        assert_eq!(occurrences_text(24, 12), "×24 → ×12");
        assert_eq!(occurrences_text(1, 1), "");
    }
}
