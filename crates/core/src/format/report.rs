//! One device's memory as a report, to paste into an issue, a pull request, a CI summary or
//! a notebook, or to open as a page: the summary, bytes by role and by component at the
//! allocated peak (charts, and tables that add up to the live bytes), the peak estimate and
//! its terms, the largest allocations at the peak, fragmentation of the final segments, the
//! findings with their advice, the overview's metrics when asked ([`DeviceReport::overview`]),
//! and how many user rules were in use. A device known only by its digest
//! ([`DigestReport`]) gets what a digest holds.
//!
//! Words only, from numbers the breakdown computed ([`DeviceSummary`], [`MomentBreakdown`]),
//! in the same labels and units as the page, built once as a [`Document`] and rendered as
//! Markdown ([`markdown`], the page's **Download report**) or HTML (the command line's report
//! pages). Text that comes from the file (its name, call sites) is escaped by the renderers,
//! so it is read as text: it never opens a link, emphasis or raw HTML, and never breaks a
//! table.

use super::breakdown::{component_label, role_label, side_label};
use super::document::{
    Align, Cell, ChartKind, ChartSlice, DocBlock, DocChart, DocColumn, Document,
};
use super::document::{DocRow, DocTable, Inline};
use super::overview::{era, group_title, metric_exact, metric_label, metric_value};
use super::overview::{no_allocator_settings, warning};
use super::workload::{workload_evidence, workload_title};
use super::{bytes, bytes_delta, count, findings, percent_ppm, timestamp_us};
use crate::analysis::categories::{Component, Role};
use crate::analysis::palette::Style;
use crate::analysis::Analysed;
use crate::breakdown::estimate::EstimateKind;
use crate::breakdown::service::{DeviceSummary, MomentBreakdown};
use crate::compare::digest::{Digest, Keyed};
use crate::model::BlockState;
use crate::overview::{Group, Metric, Overview};

/// How many of the largest allocations at the peak the report lists.
pub const TOP_ALLOCATIONS: usize = 50;

/// The Markdown report of one device of `file_name`: `summary` of its run, `peak` the
/// breakdown at its allocated peak (with its largest allocations), `analysed` the file (for the
/// final segments), `rules_in_use` how many user rules categorised it.
pub fn markdown(
    file_name: &str,
    summary: &DeviceSummary,
    peak: &MomentBreakdown,
    analysed: &Analysed,
    rules_in_use: usize,
) -> String {
    DeviceReport {
        file_name,
        summary,
        peak,
        analysed,
        rules_in_use,
        overview: None,
    }
    .document()
    .markdown()
}

/// What one device's report is made of.
pub struct DeviceReport<'a> {
    /// The file's name as the report titles it.
    pub file_name: &'a str,
    /// The device's run as a whole.
    pub summary: &'a DeviceSummary,
    /// The breakdown at the allocated peak, with its largest allocations.
    pub peak: &'a MomentBreakdown,
    /// The file, for the final segments.
    pub analysed: &'a Analysed,
    /// How many user rules categorised it.
    pub rules_in_use: usize,
    /// The device's overview, listed after the findings when given (the page's **Download
    /// report** has none: the page shows it beside).
    pub overview: Option<&'a Overview>,
}

impl DeviceReport<'_> {
    /// The report as a document.
    pub fn document(&self) -> Document {
        let (summary, peak) = (self.summary, self.peak);
        let mut doc = Document::default();
        let device = summary.device;
        doc.push(DocBlock::Heading(
            1,
            vec![
                Inline::text("Memory report: "),
                Inline::text(self.file_name),
                Inline::text(format!(", {}", self.analysed.snapshot.device_name(device))),
            ],
        ));
        summary_section(&mut doc, summary, peak);
        let light = Style::light();
        category_section(
            &mut doc,
            ("roles", "By role at the peak", "Role"),
            Role::ALL.iter().zip(&peak.roles).map(|(&r, &b)| {
                let colour = light.roles[r as usize];
                let inferred = peak.inferred_roles.get(r as usize).copied().unwrap_or(0);
                (r.key(), role_label(r), b, colour, Some(inferred))
            }),
            peak.live_bytes,
        );
        category_section(
            &mut doc,
            ("components", "By component at the peak", "Component"),
            Component::ALL.iter().zip(&peak.components).map(|(&c, &b)| {
                let colour = light.components[c as usize];
                (c.key(), component_label(c), b, colour, None)
            }),
            peak.live_bytes,
        );
        estimate_section(&mut doc, summary);
        largest_section(&mut doc, peak);
        fragmentation_section(&mut doc, self.analysed, device);
        findings_section(&mut doc, summary);
        if let Some(overview) = self.overview {
            overview_section(&mut doc, overview);
        }
        doc.heading(2, "Rules");
        doc.paragraph(match self.rules_in_use {
            0 => "No user rules were in use: every role and component was inferred from the \
                  allocation's stack, the phase it was made in and its lifetime."
                .to_string(),
            1 => "1 user rule was in use, applied before the inference.".to_string(),
            n => format!(
                "{} user rules were in use, applied before the inference.",
                count(n as u64)
            ),
        });
        doc
    }
}

/// How many call sites and modules at the peak a report from a digest lists.
pub const TOP_KEYED: usize = 20;

/// One device's report from its digest (`memsight digest`): the overview's numbers, bytes by
/// role and component at the peak, and the call sites and modules holding most there. The
/// largest allocations, the estimate, the cached memory and the findings need the trace, so
/// the report says to read the snapshot for them.
pub struct DigestReport<'a> {
    /// The snapshot's name as the digest holds it.
    pub file_name: &'a str,
    pub digest: &'a Digest,
}

impl DigestReport<'_> {
    pub fn document(&self) -> Document {
        let d = self.digest;
        let mut doc = Document::default();
        doc.push(DocBlock::Heading(
            1,
            vec![
                Inline::text("Memory report: "),
                Inline::text(self.file_name),
                Inline::text(format!(", {}", super::device(d.device_kind, d.device))),
            ],
        ));
        doc.paragraph(format!(
            "From the snapshot's digest, at the allocated peak ({}). The largest allocations, \
             the peak estimate, the cached memory and the findings need the snapshot itself \
             (`memsight report SNAPSHOT`).",
            super::after_state(d.peak_state)
        ));
        let light = Style::light();
        category_section(
            &mut doc,
            ("roles", "By role at the peak", "Role"),
            Role::ALL.iter().map(|&r| {
                let inferred = d.inferred_roles.get(r as usize).copied().unwrap_or(0);
                (
                    r.key(),
                    role_label(r),
                    d.role(r),
                    light.roles[r as usize],
                    Some(inferred),
                )
            }),
            d.peak_bytes,
        );
        category_section(
            &mut doc,
            ("components", "By component at the peak", "Component"),
            Component::ALL.iter().map(|&c| {
                let bytes = d.components.get(c as usize).copied().unwrap_or(0);
                (
                    c.key(),
                    component_label(c),
                    bytes,
                    light.components[c as usize],
                    None,
                )
            }),
            d.peak_bytes,
        );
        keyed_section(
            &mut doc,
            "Call sites at the peak",
            "Call site",
            &d.call_sites,
            d.peak_bytes,
        );
        let top_modules: Vec<Keyed> = d.modules.iter().filter(|m| m.depth == 0).cloned().collect();
        keyed_section(
            &mut doc,
            "Model modules at the peak",
            "Module",
            &top_modules,
            d.peak_bytes,
        );
        doc.heading(2, "Overview");
        metric_tables(&mut doc, &d.metrics);
        doc
    }
}

/// The [`TOP_KEYED`] largest of `keyed`, with their count of allocations and share of `total`.
fn keyed_section(doc: &mut Document, title: &str, header: &str, keyed: &[Keyed], total: u64) {
    if keyed.is_empty() {
        return;
    }
    doc.heading(2, title);
    let mut largest: Vec<&Keyed> = keyed.iter().collect();
    largest.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.key.cmp(&b.key)));
    let rows = largest
        .iter()
        .take(TOP_KEYED)
        .map(|k| {
            vec![
                Cell::of(vec![Inline::Code(k.label.clone())]),
                bytes_cell(k.bytes),
                count_cell(k.count as u64),
                Cell::text(share(k.bytes, total)),
            ]
            .into()
        })
        .collect();
    doc.push(DocBlock::Table(DocTable {
        columns: vec![
            DocColumn::new(header, Align::Left),
            DocColumn::new("Bytes", Align::Right),
            DocColumn::new("Allocations", Align::Right),
            DocColumn::new("Share", Align::Right),
        ],
        rows,
    }));
    if keyed.len() > TOP_KEYED {
        doc.paragraph(format!(
            "The {TOP_KEYED} largest of {}.",
            count(keyed.len() as u64)
        ));
    }
}

/// `bytes` in binary units with the exact count: `1.50 KiB (1,536 bytes)`, carrying the exact
/// count as `data-bytes`.
fn bytes_exact(n: u64) -> Inline {
    Inline::value(format!("{} ({} bytes)", bytes(n), count(n)), "bytes", n)
}

/// A list item: `**label** ` then `rest`.
fn item(label: &str, rest: Vec<Inline>) -> Vec<Inline> {
    let mut inlines = vec![Inline::strong(label), Inline::text(" ")];
    inlines.extend(rest);
    inlines
}

/// A right-aligned cell of bytes in binary units, carrying the exact count.
fn bytes_cell(n: u64) -> Cell {
    Cell::text(bytes(n)).with("bytes", n)
}

/// A right-aligned cell of the exact count.
fn count_cell(n: u64) -> Cell {
    Cell::text(count(n))
}

/// `part` of `whole` as a percentage with one decimal: `37.5%` (`0.0%` of nothing).
fn share(part: u64, whole: u64) -> String {
    if whole == 0 {
        return percent_ppm(0);
    }
    percent_ppm((part as u128 * 1_000_000 / whole as u128) as u64)
}

/// Why a run whose roles give the estimate no term has no estimate (rather than one of
/// 0 B, 100% below the peak).
pub const NO_ESTIMATE: &str = "No estimate: no memory of this run was identified as \
     parameters, optimizer state, gradients, activations or a KV cache, the terms a peak is \
     estimated from. The roles at the peak say what held it.";

/// What a snapshot with no trace shows, and how to record one.
pub const STATE_ONLY: &str =
    "This snapshot holds no trace (taken with `torch.cuda.memory._snapshot()` \
     while recording was off, or after its history was cleared): what it shows is the memory at \
     the moment it was taken, each block's role read from the frames it was made with. For a \
     timeline, call `torch.cuda.memory._record_memory_history(max_entries=100000)` before the \
     work and `torch.cuda.memory._dump_snapshot(\"snapshot.pickle\")` after it.";

fn summary_section(doc: &mut Document, summary: &DeviceSummary, peak: &MomentBreakdown) {
    doc.heading(2, "Summary");
    if let Some(title) = workload_title(&summary.workload) {
        let evidence = workload_evidence(&summary.workload);
        let mut text = format!("The run: {title}.");
        if !evidence.is_empty() {
            text.push_str(&format!(" Evidence: {}.", evidence.join("; ")));
        }
        doc.paragraph(text);
    }
    if summary.state_only {
        doc.paragraph(STATE_ONLY);
    }
    let mut at = super::after_state(summary.peak_state);
    if let Some(us) = peak.time_us.filter(|&us| us > 0) {
        at.push_str(&format!(", at {}", timestamp_us(us as u64)));
    }
    doc.push(DocBlock::List(vec![
        item(
            "Peak allocated:",
            vec![
                bytes_exact(summary.peak_allocated),
                Inline::text(format!(
                    ", {at}, in {} live allocations",
                    count(peak.live_count as u64)
                )),
            ],
        ),
        item(
            "Reserved at the peak:",
            vec![bytes_exact(summary.reserved_at_peak)],
        ),
        item(
            "Efficiency at the peak:",
            match summary.efficiency_at_peak_ppm {
                Some(ppm) => vec![
                    Inline::value(percent_ppm(ppm), "ppm", ppm),
                    Inline::text(" (allocated / reserved at the allocated peak)"),
                ],
                None => vec![Inline::text("— (nothing reserved at the peak)")],
            },
        ),
        item(
            "Peak reserved:",
            vec![
                bytes_exact(summary.peak_reserved),
                Inline::text(format!(
                    ", {}, with {} allocated then",
                    super::after_state(summary.reserved_peak_state),
                    crate::format::bytes(summary.allocated_at_reserved_peak)
                )),
            ],
        ),
    ]));
}

/// The overview's metrics by group (`data-metric` and `data-value` on each value), its
/// warnings, the file's format and its allocator settings.
fn overview_section(doc: &mut Document, overview: &Overview) {
    doc.heading(2, "Overview");
    metric_tables(doc, &overview.metrics);
    if !overview.warnings.is_empty() {
        doc.heading(3, "Warnings");
        let items = overview
            .warnings
            .iter()
            .map(|w| vec![Inline::text(warning(w))]);
        doc.push(DocBlock::List(items.collect()));
    }
    doc.heading(3, "File");
    let mut items = vec![item("Format:", vec![Inline::text(era(&overview.format))])];
    if overview.allocator_settings.is_empty() {
        let why = no_allocator_settings(&overview.format);
        items.push(item("Allocator settings:", vec![Inline::text(why)]));
    }
    for (name, value) in &overview.allocator_settings {
        let setting = vec![
            Inline::Code(name.clone()),
            Inline::text(" = "),
            Inline::Code(value.clone()),
        ];
        items.push(item("Allocator setting:", setting));
    }
    doc.push(DocBlock::List(items));
}

/// The overview's numbers, a table per group of them.
fn metric_tables(doc: &mut Document, metrics: &[Metric]) {
    for group in Group::ALL {
        let rows: Vec<_> = metrics
            .iter()
            .filter(|m| m.key.group() == group)
            .map(|m| {
                vec![
                    Cell::text(metric_label(m.key)),
                    Cell::text(metric_value(m))
                        .with("metric", m.key.as_str())
                        .with("value", m.value),
                    Cell::text(metric_exact(m)),
                ]
                .into()
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        doc.heading(3, group_title(group));
        doc.push(DocBlock::Table(DocTable {
            columns: vec![
                DocColumn::new("Metric", Align::Left),
                DocColumn::new("Value", Align::Right),
                DocColumn::new("Exact", Align::Right),
            ],
            rows,
        }));
    }
}

/// A chart and a table of bytes by category, non-empty categories only, with a total row of
/// `total`. `names` are the chart's key, the section's title and the first column's header;
/// `rows` are each category's key, label, bytes and colour (RGBA).
/// One category's row: its key, label, bytes, colour and, for roles, the bytes of it whose role
/// was deduced rather than observed.
type CategoryRow<'a> = (&'static str, &'a str, u64, [u8; 4], Option<u64>);

/// A category's label in a chart, marked when some or all of its bytes' role was deduced.
pub fn inferred_label(label: &str, bytes: u64, inferred: u64) -> String {
    match inferred {
        0 => label.to_string(),
        i if i >= bytes => format!("{label} (inferred)"),
        _ => format!("{label} (partly inferred)"),
    }
}

fn category_section<'a>(
    doc: &mut Document,
    (key, title, header): (&'static str, &str, &str),
    rows: impl Iterator<Item = CategoryRow<'a>>,
    total: u64,
) {
    doc.heading(2, title);
    let rows: Vec<_> = rows.filter(|&(_, _, b, _, _)| b > 0).collect();
    let deduced = rows.iter().any(|r| r.4.is_some_and(|i| i > 0));
    doc.push(DocBlock::Chart(DocChart {
        key,
        title: format!("Bytes by {}", header.to_lowercase()),
        kind: ChartKind::Pie,
        slices: rows
            .iter()
            .map(|&(key, label, bytes, [r, g, b, _], inferred)| ChartSlice {
                key: key.to_string(),
                label: inferred_label(label, bytes, inferred.unwrap_or(0)),
                bytes,
                colour: [r, g, b],
            })
            .collect(),
        curves: Vec::new(),
    }));
    let mut table_rows: Vec<_> = rows
        .iter()
        .map(|&(key, label, b, _, inferred)| {
            let mut cells = vec![
                Cell::text(label),
                bytes_cell(b),
                count_cell(b),
                Cell::text(share(b, total)),
            ];
            if deduced {
                cells.push(bytes_cell(inferred.unwrap_or(0)));
            }
            let mut row: DocRow = cells.into();
            row.data.push(("category", key.to_string()));
            row
        })
        .collect();
    let inferred_total: u64 = rows.iter().filter_map(|r| r.4).sum();
    let mut totals = vec![
        Cell::text("Total"),
        bytes_cell(total),
        count_cell(total),
        Cell::text(share(total, total)),
    ];
    let mut columns = vec![
        DocColumn::new(header, Align::Left),
        DocColumn::new("Bytes", Align::Right),
        DocColumn::new("Exact bytes", Align::Right),
        DocColumn::new("Share", Align::Right),
    ];
    if deduced {
        totals.push(bytes_cell(inferred_total));
        columns.push(DocColumn::new("Of which inferred", Align::Right));
    }
    table_rows.push(total_row(&totals));
    doc.push(DocBlock::Table(DocTable {
        columns,
        rows: table_rows,
    }));
    if deduced {
        doc.paragraph(
            "Inferred: memory made before recording started, whose role is deduced from what the trace shows of it (its free, a gradient or optimizer state of its size), not observed where it was made.",
        );
    }
}

/// A table's total row: its cells in strong text, the row marked `data-total`.
fn total_row(cells: &[Cell]) -> DocRow {
    DocRow {
        cells: cells.iter().cloned().map(Cell::strong).collect(),
        data: vec![("total", "true".to_string())],
    }
}

fn estimate_section(doc: &mut Document, summary: &DeviceSummary) {
    let e = &summary.estimate;
    doc.heading(2, "Peak estimate");
    if e.estimate == 0 {
        doc.paragraph(NO_ESTIMATE);
        return;
    }
    let serving = e.kind == EstimateKind::Serving;
    doc.paragraph(if serving {
        "A serving engine's: parameters + KV cache + CUDA graphs + the largest step's \
         temporaries, each term the most bytes its role held at any moment of the run."
    } else if e.weight_copies > 0 {
        "Parameters + optimizer state + max(gradients + optimizer temporaries, activations \
         + autocast's weight copies), each term the most bytes its role held at any moment \
         of the run; the parameters without the copies, which live through the forward only."
    } else {
        "Parameters + optimizer state + max(gradients + optimizer temporaries, activations), \
         each term the most bytes its role held at any moment of the run."
    });
    let terms: Vec<(&str, u64)> = if serving {
        vec![
            ("Parameters", e.parameters),
            ("KV cache", e.kv_cache),
            ("CUDA graphs", e.cuda_graphs),
            ("Step temporaries", e.step_temporaries),
        ]
    } else {
        let mut terms = vec![
            ("Parameters", e.parameters),
            ("Optimizer state", e.optimizer_state),
            ("Gradients", e.gradients),
            ("Optimizer temporaries", e.optimizer_temporaries),
            ("Activations", e.activations),
        ];
        if e.weight_copies > 0 {
            terms.push(("Autocast's weight copies", e.weight_copies));
        }
        terms
    };
    let mut rows: Vec<_> = terms
        .iter()
        .map(|&(label, b)| vec![Cell::text(label), bytes_cell(b), count_cell(b)].into())
        .collect();
    rows.push(total_row(&[
        Cell::text("Estimate"),
        bytes_cell(e.estimate),
        count_cell(e.estimate),
    ]));
    rows.push(
        vec![
            Cell::text("Observed peak"),
            bytes_cell(e.observed),
            count_cell(e.observed),
        ]
        .into(),
    );
    let difference = e.difference();
    let sign = if difference < 0 { "\u{2212}" } else { "" };
    rows.push(
        vec![
            Cell::text("Estimate \u{2212} observed"),
            Cell::text(bytes_delta(difference)).with("bytes", difference),
            Cell::text(format!("{sign}{}", count(difference.unsigned_abs()))),
        ]
        .into(),
    );
    doc.push(DocBlock::Table(DocTable {
        columns: vec![
            DocColumn::new("Term", Align::Left),
            DocColumn::new("Bytes", Align::Right),
            DocColumn::new("Exact bytes", Align::Right),
        ],
        rows,
    }));
    let mut text = if serving {
        String::new()
    } else {
        let step = e.gradients + e.optimizer_temporaries;
        let forward = e.activations + e.weight_copies;
        format!(
            "The max is set by {}: {} against {}. ",
            side_label(e.side),
            bytes(step.max(forward)),
            bytes(step.min(forward))
        )
    };
    let apart = format!(
        "{} ({})",
        bytes(difference.unsigned_abs()),
        share(difference.unsigned_abs(), e.observed)
    );
    text.push_str(&match difference {
        0 => "The estimate equals the observed peak.".to_string(),
        d if d > 0 => format!(
            "The estimate is {apart} above the observed peak: the terms' maxima were not all \
             reached at the same moment."
        ),
        _ => format!(
            "The estimate is {apart} below the observed peak: the run peaked higher than its \
             terms explain (temporaries, workspaces or unknown memory on top)."
        ),
    });
    doc.paragraph(text);
    if let Some(line) = summary
        .training
        .as_ref()
        .and_then(super::breakdown::training_line)
    {
        doc.paragraph(format!("Training's arithmetic: {line}."));
    }
}

fn largest_section(doc: &mut Document, peak: &MomentBreakdown) {
    doc.heading(2, "Largest allocations at the peak");
    let listed = &peak.largest[..peak.largest.len().min(TOP_ALLOCATIONS)];
    if listed.is_empty() {
        doc.paragraph("Nothing was alive at the peak.");
        return;
    }
    let listed_bytes: u64 = listed.iter().map(|a| a.size).sum();
    doc.paragraph(format!(
        "The {} largest of {} live allocations: {} of {} ({}).",
        count(listed.len() as u64),
        count(peak.live_count as u64),
        bytes(listed_bytes),
        bytes(peak.live_bytes),
        share(listed_bytes, peak.live_bytes)
    ));
    // A file that records tensors (`shape_data`) gets their column.
    let tensors = listed.iter().any(|a| a.shape.is_some());
    let rows = listed
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let site = match a.name.as_deref() {
                Some(name) => Inline::Code(name.to_string()),
                None => Inline::Emphasis(vec![Inline::text("no stack recorded")]),
            };
            let mut row = vec![
                Cell::text((i + 1).to_string()),
                bytes_cell(a.size),
                count_cell(a.size),
                Cell::text(role_label(a.role)).with("role", a.role.key()),
                Cell::text(component_label(a.component)).with("component", a.component.key()),
                Cell::of(vec![site]),
            ];
            if tensors {
                let tensor = super::table::tensor(a.shape.as_deref(), a.dtype.as_deref());
                row.push(Cell::text(tensor.unwrap_or_default()));
            }
            row.into()
        })
        .collect();
    let mut columns = vec![
        DocColumn {
            title: vec![Inline::Literal("#")],
            align: Align::Right,
        },
        DocColumn::new("Size", Align::Right),
        DocColumn::new("Exact bytes", Align::Right),
        DocColumn::new("Role", Align::Left),
        DocColumn::new("Component", Align::Left),
        DocColumn::new("Call site", Align::Left),
    ];
    if tensors {
        columns.push(DocColumn::new("Tensor", Align::Left));
    }
    doc.push(DocBlock::Table(DocTable { columns, rows }));
}

fn fragmentation_section(doc: &mut Document, analysed: &Analysed, device: u32) {
    doc.heading(2, "Cached memory at the end");
    let Some(dev) = analysed.snapshot.devices.iter().find(|d| d.id == device) else {
        doc.paragraph("This device has no segments.");
        return;
    };
    if dev.segments.is_empty() {
        doc.paragraph("No segments were reserved at the end.");
        return;
    }
    let reserved: u64 = dev.segments.iter().map(|s| s.total_size).sum();
    let free = dev
        .blocks
        .iter()
        .filter(|b| b.state == BlockState::Inactive);
    let (free_bytes, free_blocks, largest) = free.fold((0u64, 0u64, 0u64), |(b, n, m), block| {
        (b + block.size, n + 1, m.max(block.size))
    });
    doc.push(DocBlock::List(vec![
        item(
            "Reserved:",
            vec![
                bytes_exact(reserved),
                Inline::text(format!(
                    " in {}",
                    super::counted(dev.segments.len() as u64, "segment", "segments")
                )),
            ],
        ),
        item(
            "Cached free:",
            vec![
                bytes_exact(free_bytes),
                Inline::text(format!(", {} of reserved", share(free_bytes, reserved))),
            ],
        ),
        item(
            "Largest free block:",
            vec![
                bytes_exact(largest),
                Inline::text(format!(", {} of cached free", share(largest, free_bytes))),
            ],
        ),
        item(
            "Free blocks:",
            vec![Inline::value(count(free_blocks), "count", free_blocks)],
        ),
    ]));
    if dev.blocks.is_empty() {
        doc.paragraph("The snapshot lists no blocks, so its free blocks are unknown.");
    }
}

fn findings_section(doc: &mut Document, summary: &DeviceSummary) {
    doc.heading(2, "Findings");
    if summary.findings.is_empty() {
        doc.paragraph(findings::nothing_found(summary.oom.as_ref()));
        return;
    }
    for (i, f) in summary.findings.iter().enumerate() {
        doc.heading(3, format!("{}. {}", i + 1, findings::title(f)));
        doc.paragraph(findings::why(f));
        doc.push(DocBlock::Paragraph(vec![
            Inline::strong("What to try:"),
            Inline::text(" "),
            Inline::text(findings::what_to_try(f)),
        ]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::moment::Moment;
    use crate::breakdown::estimate::{Estimate, PeakSide};
    use crate::breakdown::findings::{CacheReason, Finding, FindingKind, Overhead};
    use crate::breakdown::service::{AtRequest, SummaryRequest, TopAllocation};
    use crate::format::document::code;
    use crate::model::{Block, Device, Segment, Snapshot};
    use crate::session::Session;

    const MIB: u64 = 1 << 20;

    /// The cells of a table row as GitHub splits them: at pipes not escaped by a backslash.
    fn cells(row: &str) -> Vec<String> {
        let mut cells = vec![String::new()];
        let mut escaped = false;
        for c in row.chars() {
            if c == '|' && !escaped {
                cells.push(String::new());
            } else {
                cells.last_mut().unwrap().push(c);
            }
            escaped = c == '\\';
        }
        // Drop what is outside the leading and trailing pipes.
        cells.remove(0);
        cells.pop();
        cells.into_iter().map(|c| c.trim().to_string()).collect()
    }

    /// The rows of the table under `heading`, without its header and delimiter rows.
    fn table<'a>(report: &'a str, heading: &str) -> Vec<&'a str> {
        let start = report.find(heading).unwrap_or_else(|| panic!("{heading}"));
        report[start..]
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2)
            .collect()
    }

    fn exact(cell: &str) -> u64 {
        cell.trim_matches('*').replace(',', "").parse().unwrap()
    }

    fn device() -> Device {
        let sizes = [
            (8 * MIB, BlockState::ActiveAllocated),
            (3 * MIB, BlockState::Inactive),
            (5 * MIB, BlockState::Inactive),
            (4 * MIB, BlockState::ActiveAllocated),
        ];
        Device {
            id: 1,
            segments: vec![
                Segment {
                    total_size: 11 * MIB,
                    blocks: 0..2,
                    ..Segment::default()
                },
                Segment {
                    address: 0x1000_0000,
                    total_size: 9 * MIB,
                    blocks: 2..4,
                    ..Segment::default()
                },
            ],
            blocks: sizes
                .iter()
                .map(|&(size, state)| Block {
                    size,
                    state,
                    ..Block::default()
                })
                .collect(),
            ..Device::default()
        }
    }

    fn summary() -> DeviceSummary {
        DeviceSummary {
            device: 1,
            generation: 1,
            states: 11,
            peak_state: crate::model::State::new(7),
            peak_allocated: 12 * MIB,
            peak_reserved: 20 * MIB,
            reserved_at_peak: 20 * MIB,
            efficiency_at_peak_ppm: Some(600_000),
            allocated_at_reserved_peak: 15 * MIB,
            finding_allocations: vec![],
            reserved_peak_state: crate::model::State::new(8),
            workload: Default::default(),
            state_only: false,
            estimate: Estimate {
                parameters: 4 * MIB,
                optimizer_state: 0,
                gradients: 2 * MIB,
                optimizer_temporaries: 0,
                activations: 6 * MIB,
                weight_copies: 0,
                kind: Default::default(),
                kv_cache: 0,
                cuda_graphs: 0,
                step_temporaries: 0,
                estimate: 10 * MIB,
                side: PeakSide::Activations,
                observed: 12 * MIB,
            },
            cached_free: vec![],
            findings: vec![Finding::new(
                FindingKind::CachedMemory {
                    reason: CacheReason::AtOutOfMemory {
                        row: crate::model::Row::new(9),
                        requested: 300 * MIB,
                        at: Overhead {
                            state: crate::model::State::new(10),
                            reserved: 2048 * MIB,
                            allocated: 1898 * MIB,
                            overhead: 150 * MIB,
                        },
                    },
                },
                vec![],
            )],
            training: None,
            oom: None,
            compute_ms: 0.0,
        }
    }

    fn peak(names: &[Option<&str>]) -> MomentBreakdown {
        let mut roles = vec![0; Role::ALL.len()];
        roles[Role::Parameters as usize] = 4 * MIB;
        roles[Role::Activations as usize] = 8 * MIB;
        let mut components = vec![0; Component::ALL.len()];
        components[Component::Attention as usize] = 8 * MIB;
        components[Component::Other as usize] = 4 * MIB;
        MomentBreakdown {
            device: 1,
            only: None,
            moment: Moment::Peak,
            state: crate::model::State::new(7),
            event: Some(crate::model::Row::new(6)),
            time_us: None,
            live_count: names.len() as u32,
            live_bytes: 12 * MIB,
            reserved: 20 * MIB,
            roles,
            components,
            inferred_roles: Vec::new(),
            largest: names
                .iter()
                .enumerate()
                .map(|(i, name)| TopAllocation {
                    index: i as u32,
                    allocation: i as u32,
                    size: (8 * MIB) >> i,
                    role: Role::Activations,
                    component: Component::Attention,
                    name: name.map(str::to_string),
                    user: true,
                    shape: None,
                    dtype: None,
                })
                .collect(),
            call_sites: vec![],
            live_sizes: vec![],
            generation: 1,
            compute_ms: 0.0,
        }
    }

    fn analysed() -> Analysed {
        Analysed::new(Snapshot {
            devices: vec![device()],
            ..Snapshot::default()
        })
    }

    #[test]
    fn tables_add_up_and_hostile_names_stay_in_their_cells() {
        let hostile = "evil.py:1:f|g`|`<script>alert(1)</script>";
        let report = markdown(
            "run [1] <b>.pickle",
            &summary(),
            &peak(&[Some(hostile), None]),
            &analysed(),
            2,
        );
        assert!(
            report.starts_with("# Memory report: run \\[1\\] \\<b\\>.pickle, cuda:1\n"),
            "{report}"
        );
        for heading in ["## By role at the peak", "## By component at the peak"] {
            let rows = table(&report, heading);
            let (total, rows) = rows.split_last().unwrap();
            let sum: u64 = rows.iter().map(|r| exact(&cells(r)[2])).sum();
            assert_eq!(sum, 12 * MIB, "{heading}");
            assert_eq!(exact(&cells(total)[2]), 12 * MIB, "{heading}");
            assert_eq!(cells(total)[3], "**100.0%**");
            assert!(rows.iter().all(|r| cells(r).len() == 4), "{heading}");
        }
        let role_rows = table(&report, "## By role at the peak");
        assert_eq!(
            cells(role_rows[1]),
            ["Activations", "8.00 MiB", "8,388,608", "66.7%"]
        );

        let largest = table(&report, "## Largest allocations");
        assert_eq!(largest.len(), 2);
        let first = cells(largest[0]);
        assert_eq!(first.len(), 6, "{}", largest[0]);
        assert_eq!(
            first[5],
            "``evil.py:1:f\\|g`\\|`<script>alert(1)</script>``"
        );
        assert_eq!(first[3..5], ["Activations", "Attention"]);
        assert_eq!(cells(largest[1])[5], "*no stack recorded*");
        // The only HTML-like text is inside the code span.
        assert_eq!(report.matches("<script>").count(), 1);

        assert!(report.contains("- **Peak allocated:** 12.0 MiB (12,582,912 bytes), after event 6, in 2 live allocations"));
        assert!(
            report.contains("- **Efficiency at the peak:** 60.0%"),
            "{report}"
        );
        assert!(report.contains("The max is set by activations"), "{report}");
        assert!(
            report.contains("The estimate is 2.00 MiB (16.7%) below the observed peak"),
            "{report}"
        );
        assert!(report.contains("- **Cached free:** 8.00 MiB (8,388,608 bytes), 40.0% of reserved"));
        assert!(report
            .contains("| Estimate \u{2212} observed | \u{2212}2.00 MiB | \u{2212}2,097,152 |"));
        assert!(report.contains("- **Largest free block:** 5.00 MiB"));
        assert!(report.contains("- **Free blocks:** 2\n"));
        assert!(report.contains("### 1. 150 MiB cached could not serve the request that failed"));
        assert!(report
            .contains("**What to try:** Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"));
        assert!(report.contains("2 user rules were in use"));
    }

    #[test]
    fn a_report_of_a_loaded_file_adds_up_to_its_peak() {
        let file = include_bytes!("../../../../tests/fixtures/small.json");
        let mut session = Session::new();
        session
            .load(&file[..], file.len() as u64, &|| 0.0, &mut |_| {})
            .unwrap();
        let device = session.analysed().unwrap().snapshot.devices[0].id;
        let summary = session
            .ask(SummaryRequest { device }, &|| 0.0)
            .expect("a summary");
        let at = AtRequest {
            device,
            moment: Moment::Peak,
            top: TOP_ALLOCATIONS as u32,
            only: None,
        };
        let peak = session.ask(at, &|| 0.0).expect("a moment");
        let report = markdown(
            "small.json",
            &summary,
            &peak,
            session.analysed().unwrap(),
            0,
        );
        let roles = table(&report, "## By role at the peak");
        assert_eq!(
            exact(&cells(roles.last().unwrap())[2]),
            summary.peak_allocated
        );
        let sum: u64 = roles[..roles.len() - 1]
            .iter()
            .map(|r| exact(&cells(r)[2]))
            .sum();
        assert_eq!(sum, summary.peak_allocated);
        let largest = table(&report, "## Largest allocations");
        assert_eq!(largest.len(), peak.largest.len().min(TOP_ALLOCATIONS));
        let first = cells(largest[0]);
        assert_eq!(exact(&first[2]), peak.largest[0].size);
        assert_eq!(
            first[5],
            code(peak.largest[0].name.as_deref().unwrap()),
            "{report}"
        );
        assert!(report.contains("No user rules were in use"));
    }
}
