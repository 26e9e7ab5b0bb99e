//! `memsight report FILE… -o DIR`: a folder of reports, for docs and CI. Per input file, a
//! page (`NAME.html`: self-contained, no script, charts as inline SVG) and the same report in
//! Markdown (`NAME.md`), each device's report with the file's overview; with several files,
//! one summary across them (`index.html`, `summary.md`): the files table of `memsight files`
//! — ranks and iterations read from the names, outliers flagged, each iteration's ranks
//! summed up — every file linked to its report, and the files that could not be read, with
//! the page's message. A digest (`memsight digest`) gets the report a digest allows and the
//! same rows in the summary as its snapshot.
//!
//! Files are reported in parallel (`--jobs`): each worker takes the next file, decodes,
//! analyses, writes and drops it before taking another, so at most `jobs` models are held at
//! once; only each file's rows for the summary are kept. What is written depends on the files
//! alone (names in natural order, no times), whatever the number of jobs.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};

use memsight_core::analysis::categories::rules::Rules;
use memsight_core::breakdown::service::AtRequest;
use memsight_core::compare::digest::{digest, Digest};
use memsight_core::compare::digest_file::DigestFile;
use memsight_core::compare::files::{flag_outliers, rows_of, FileRow};
use memsight_core::decode::ErrorReport;
use memsight_core::format::compare::{files_blocks, runs_blocks, ReportLink};
use memsight_core::format::document::{html_page, Align, Cell, DocBlock, DocColumn, Document};
use memsight_core::format::document::{DocTable, Inline};
use memsight_core::format::report::{DeviceReport, DigestReport, TOP_ALLOCATIONS};
use memsight_core::format::{self, problems};
use memsight_core::model::text::natural_cmp;
use memsight_core::overview;
use memsight_core::service::ViewError;

use super::charts::chart_markup;
use super::{digest_devices, display_name};
use crate::escape::escape_control;
use crate::open::{
    describe_error, digests_in, open_input, shown, with_context, Opened, SnapshotOrDigests,
};
use crate::output_names::report_names;
use crate::parallel::parallel_map;
use crate::written::{make_folder, refuse_unwritable, write_regular};

/// One input: its path, how reports name it, its reports' file name, how the summary lists
/// it and the name its rows carry.
struct Input {
    path: PathBuf,
    shown: String,
    name: String,
    label: String,
    /// The path as given (redacted with --redact), so ranks and iterations are read from its
    /// folders too; for a digest, its snapshot's name, so that a folder made from digests
    /// reads as the one made from their snapshots.
    row_name: String,
    /// Its digests, when it holds digests (read once, while naming the inputs).
    digests: Option<Vec<DigestFile>>,
}

/// What became of one input.
enum Outcome {
    /// Its reports were written; its rows for the summary.
    Written(SummaryRows),
    /// It could not be read (or a device could not be reported): why, as the page says it.
    Failed(ErrorReport),
}

/// Writes the reports of `files` (of `device` only, when given) into `folder`, created when
/// missing, `jobs` files at a time; prints where they went. Exit code 1 when a file could not
/// be reported (the others are still written), 2 when the folder cannot be made.
pub fn run(
    files: &[PathBuf],
    device: Option<u32>,
    rules: &Rules,
    folder: &Path,
    jobs: usize,
) -> ExitCode {
    if let Err(e) = make_folder(folder) {
        say!(
            "memsight: {}: the report folder cannot be made: {e} (to write Markdown to one \
             file, name it *.md)",
            folder.display()
        );
        return ExitCode::from(2);
    }
    // Named after the paths as outputs show them (redacted with --redact; a digest by its
    // snapshot's name); `-` stays `-`. In that name's natural order.
    let mut named: Vec<(&PathBuf, String, Option<Vec<DigestFile>>)> = files
        .iter()
        .map(|p| {
            let digests = digests_in(p);
            let given = match (
                p.as_os_str() == "-",
                digests.as_ref().and_then(|d| d.first()),
            ) {
                (true, _) => "-".to_string(),
                (false, Some(first)) => first.name.clone(),
                (false, None) => shown(p),
            };
            (p, given, digests)
        })
        .collect();
    let order = |given: &str, path: &Path| match given {
        "-" => display_name(path),
        _ => given.to_string(),
    };
    named.sort_by(|(pa, a, _), (pb, b, _)| natural_cmp(&order(a, pa), &order(b, pb)));
    let names = report_names(&named.iter().map(|(_, g, _)| g.clone()).collect::<Vec<_>>());
    let inputs: Vec<Input> = named
        .into_iter()
        .zip(names)
        .map(|((path, given, digests), named)| Input {
            path: path.to_path_buf(),
            shown: order(&given, path),
            name: named.file,
            label: named.label,
            row_name: given,
            digests,
        })
        .collect();
    let several = inputs.len() > 1;
    let summary: &[&str] = if several {
        &["index.html", "summary.md"]
    } else {
        &[]
    };
    let pages = inputs
        .iter()
        .flat_map(|input| ["html", "md"].map(|kind| format!("{}.{kind}", input.name)));
    let targets: Vec<PathBuf> = pages
        .chain(summary.iter().map(|name| name.to_string()))
        .map(|name| folder.join(name))
        .collect();
    if let Err(code) = refuse_unwritable(targets.iter().map(PathBuf::as_path)) {
        return code;
    }
    let progress = Progress::new(inputs.len());
    let outcomes = parallel_map(&inputs, jobs, |input| {
        let outcome = report_file(input, device, rules, folder, several);
        progress.one_done();
        outcome
    });
    progress.clear();

    let mut failed = 0usize;
    for (input, outcome) in inputs.iter().zip(&outcomes) {
        if let Outcome::Failed(report) = outcome {
            failed += 1;
            say!("{}", describe_error(&input.path, report));
        }
    }
    let written = inputs.len() - failed;
    if several {
        if let Err(e) = write_summary(folder, &inputs, &outcomes) {
            say!("memsight: {}: {e}", folder.display());
            return ExitCode::FAILURE;
        }
    }
    let folder_shown = folder.display();
    let reports = match written {
        1 => "1 report".to_string(),
        n => format!("{} reports", format::count(n as u64)),
    };
    let mut said = format!("Wrote {reports} (HTML and Markdown) to {folder_shown}\n");
    if several {
        said.push_str(&format!(
            "Summary of {} files: {}, {}\n",
            format::count(inputs.len() as u64),
            folder.join("index.html").display(),
            folder.join("summary.md").display()
        ));
    } else if written == 1 {
        let name = &inputs[0].name;
        let page = folder.join(format!("{name}.html"));
        said.push_str(&format!("{}\n", page.display()));
    }
    print!("{}", escape_control(&said));
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Reads one file and writes its reports; the file's model is dropped on return.
fn report_file(
    input: &Input,
    device: Option<u32>,
    rules: &Rules,
    folder: &Path,
    several: bool,
) -> Outcome {
    let from_digests = |files: &[DigestFile]| match digest_document(input, files, device, several) {
        Ok((document, rows)) => write_report(input, folder, &document, rows),
        Err(report) => Outcome::Failed(report),
    };
    if let Some(files) = &input.digests {
        return from_digests(files);
    }
    let opened = match open_input(&input.path, false) {
        Ok(SnapshotOrDigests::Snapshot(opened)) => opened,
        // Digests on standard input, which is not read ahead.
        Ok(SnapshotOrDigests::Digests(files)) => return from_digests(&files),
        Err(report) => return Outcome::Failed(report),
    };
    let (document, rows) = match file_document(input, &opened, device, rules, several) {
        Ok(made) => made,
        Err(error) => {
            return Outcome::Failed(ErrorReport::message(problems::view_error(&error)));
        }
    };
    drop(opened);
    write_report(input, folder, &document, rows)
}

/// Writes one input's report page and its Markdown.
fn write_report(input: &Input, folder: &Path, document: &Document, rows: SummaryRows) -> Outcome {
    let title = format!("Memory report: {}", input.shown);
    let html = html_page(&title, &document.html(&chart_markup));
    let written = write_regular(
        &folder.join(format!("{}.html", input.name)),
        html.as_bytes(),
    )
    .and_then(|()| {
        write_regular(
            &folder.join(format!("{}.md", input.name)),
            escape_control(&document.markdown()).as_bytes(),
        )
    });
    match written {
        Ok(()) => Outcome::Written(rows),
        Err(e) => Outcome::Failed(ErrorReport::message(format!(
            "Its report cannot be written in {}: {e}.",
            folder.display()
        ))),
    }
}

/// One file's report: a link back to the summary (when there is one), each device's report
/// with its overview, separated by rules, and what made it; and its rows for the summary.
fn file_document(
    input: &Input,
    opened: &Opened,
    device: Option<u32>,
    rules: &Rules,
    several: bool,
) -> Result<(Document, SummaryRows), ViewError> {
    let mut doc = Document::default();
    if several {
        back_to_summary(&mut doc);
    }
    let analysed = &opened.analysed;
    if analysed.snapshot.devices.is_empty() {
        doc.heading(1, format!("Memory report: {}", input.shown));
        doc.paragraph("This snapshot holds no device.");
        footer(&mut doc, opened);
        return Ok((doc, Vec::new()));
    }
    let rows = with_context(opened, rules, device, |cx, devices| {
        let mut service = memsight_core::breakdown::service::BreakdownService::default();
        let mut digests = Vec::new();
        // Devices that used no memory get one line, not a report of zeros.
        let mut unused = Vec::new();
        let mut sections = 0;
        for &d in devices.iter() {
            if overview::build(analysed, d).is_some_and(|o| o.unused) {
                unused.push((analysed.snapshot.kind_of(d), d));
                digests.push(digest(cx, d, false, None)?);
                continue;
            }
            let summary = service.summary(cx, d)?;
            let peak = service.at(cx, AtRequest::at_peak(d, TOP_ALLOCATIONS as u32))?;
            let overview =
                overview::build(analysed, d).ok_or(ViewError::NoSuchDevice { device: d })?;
            let report = DeviceReport {
                file_name: &input.shown,
                summary: &summary,
                peak: &peak,
                analysed,
                rules_in_use: cx.categorised.rules().rules.len(),
                overview: Some(&overview),
            };
            if sections > 0 {
                doc.push(DocBlock::Rule);
            }
            sections += 1;
            doc.push(DocBlock::Section {
                data: vec![("device", d.to_string())],
                blocks: report.document().blocks,
            });
            digests.push(digest(cx, d, false, None)?);
        }
        if !unused.is_empty() {
            if sections == 0 {
                doc.heading(1, format!("Memory report: {}", input.shown));
            }
            doc.paragraph(format::overview::unused_devices(&unused));
        }
        Ok(summary_rows(&input.row_name(), &input.label, digests))
    })?;
    footer(&mut doc, opened);
    Ok((doc, rows))
}

/// The report of digests: each device's [`DigestReport`], and the rows for the summary.
fn digest_document(
    input: &Input,
    files: &[DigestFile],
    device: Option<u32>,
    several: bool,
) -> Result<(Document, SummaryRows), ErrorReport> {
    let mut doc = Document::default();
    if several {
        back_to_summary(&mut doc);
    }
    let mut rows = Vec::new();
    for file in files {
        let digests: Vec<Digest> = digest_devices(file, device)?.into_iter().cloned().collect();
        for (i, digest) in digests.iter().enumerate() {
            if i > 0 || !rows.is_empty() {
                doc.push(DocBlock::Rule);
            }
            let report = DigestReport {
                file_name: &file.name,
                digest,
            };
            doc.push(DocBlock::Section {
                data: vec![("device", digest.device.to_string())],
                blocks: report.document().blocks,
            });
        }
        rows.extend(summary_rows(&file.name, &input.label, digests));
    }
    doc.push(DocBlock::Rule);
    doc.paragraph(format!(
        "Made by memsight {} from a digest written by {}.",
        env!("CARGO_PKG_VERSION"),
        files.first().map_or("memsight", |f| f.writer.as_str())
    ));
    Ok((doc, rows))
}

/// A file's rows for the summary, each with its device's digest (whose curve the summary's
/// runs chart draws).
type SummaryRows = Vec<(FileRow, Digest)>;

fn summary_rows(name: &str, label: &str, digests: Vec<Digest>) -> SummaryRows {
    rows_of(name, Some(label), &digests)
        .into_iter()
        .filter_map(|row| {
            let digest = digests.iter().find(|d| d.device == row.device)?.clone();
            Some((row, digest))
        })
        .collect()
}

/// A link back to the summary, atop a report among several.
fn back_to_summary(doc: &mut Document) {
    doc.push(DocBlock::Paragraph(vec![Inline::Link {
        content: vec![Inline::text("← All files")],
        markdown: "summary.md".into(),
        html: "index.html".into(),
    }]));
}

/// What the report was made from and by.
fn footer(doc: &mut Document, opened: &Opened) {
    doc.push(DocBlock::Rule);
    doc.paragraph(format!(
        "Made by memsight {} from a file of {} ({} bytes).",
        env!("CARGO_PKG_VERSION"),
        format::bytes(opened.file_bytes),
        format::count(opened.file_bytes)
    ));
}

/// `index.html` and `summary.md`: the files table across every file that was reported, linked
/// to each report, and the files that could not be.
fn write_summary(folder: &Path, inputs: &[Input], outcomes: &[Outcome]) -> Result<(), String> {
    let mut rows: Vec<FileRow> = Vec::new();
    let mut digests: Vec<&Digest> = Vec::new();
    let mut reported: Vec<(String, &str)> = Vec::new();
    let mut failures = Vec::new();
    for (input, outcome) in inputs.iter().zip(outcomes) {
        match outcome {
            Outcome::Written(file_rows) => {
                rows.extend(file_rows.iter().map(|(row, _)| row.clone()));
                digests.extend(file_rows.iter().map(|(_, digest)| digest));
                reported.push((input.row_name(), &input.name));
            }
            Outcome::Failed(report) => failures.push((input, report)),
        }
    }
    flag_outliers(&mut rows);
    let mut doc = Document::default();
    doc.heading(1, "Memory reports");
    doc.paragraph(format!(
        "{} of {} files reported: one row per file and device that used memory; each \
         file's name opens its report.",
        format::count(inputs.len() as u64 - failures.len() as u64),
        format::count(inputs.len() as u64)
    ));
    let link = |row: &FileRow| {
        let (_, name) = reported.iter().find(|(path, _)| *path == row.name)?;
        Some(ReportLink {
            markdown: format!("{name}.md"),
            html: format!("{name}.html"),
        })
    };
    doc.heading(2, "Files");
    if rows.is_empty() {
        doc.paragraph("No file used memory.");
    } else {
        doc.blocks.extend(files_blocks(&rows, &link));
        let runs: Vec<(&FileRow, &Digest)> = rows.iter().zip(digests).collect();
        doc.blocks.extend(runs_blocks(&runs));
    }
    if !failures.is_empty() {
        doc.heading(2, "Files that could not be reported");
        let rows = failures
            .iter()
            .map(|(input, report)| {
                let offset = report.offset.map(problems::error_offset);
                vec![
                    Cell::of(vec![Inline::Code(input.label.clone())]),
                    Cell::text(&report.message),
                    Cell::text(offset.unwrap_or_default()).with(
                        "offset",
                        report.offset.map_or(String::new(), |o| o.to_string()),
                    ),
                    Cell::text(report.hint.clone().unwrap_or_default()),
                ]
                .into()
            })
            .collect();
        doc.push(DocBlock::Table(DocTable {
            columns: vec![
                DocColumn::new("File", Align::Left),
                DocColumn::new("Problem", Align::Left),
                DocColumn::new("Where", Align::Left),
                DocColumn::new("Hint", Align::Left),
            ],
            rows,
        }));
    }
    doc.push(DocBlock::Rule);
    doc.paragraph(format!("Made by memsight {}.", env!("CARGO_PKG_VERSION")));
    let html = html_page("Memory reports", &doc.html(&chart_markup));
    let write = |name: &str, text: String| {
        write_regular(&folder.join(name), text.as_bytes())
            .map_err(|e| format!("{name} cannot be written: {e}"))
    };
    write("index.html", html)?;
    write("summary.md", escape_control(&doc.markdown()).into_owned())
}

impl Input {
    /// The name its rows carry, by which a row finds its report.
    fn row_name(&self) -> String {
        self.row_name.clone()
    }
}

/// `reports: 3 of 8` on standard error while files are reported, when it is a terminal.
struct Progress {
    total: usize,
    done: AtomicUsize,
    enabled: bool,
}

impl Progress {
    fn new(total: usize) -> Self {
        Progress {
            total,
            done: AtomicUsize::new(0),
            enabled: total > 1 && std::io::stderr().is_terminal(),
        }
    }

    fn one_done(&self) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if self.enabled {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\rreports: {done} of {}", self.total);
            let _ = err.flush();
        }
    }

    fn clear(&self) {
        if self.enabled {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}
