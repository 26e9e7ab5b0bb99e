//! `memsight files FILE… [--markdown|--csv|--json [--curves]] [--sort COLUMN[:asc|desc]]`: the
//! page's files table — one row per file and device with its peaks, its end, efficiency, trace
//! entries, time span and the bytes of each role at its peak, ranks, iterations and the
//! settings that tell the files apart (`ctx512`, `bs8`) read from the names, and outlier ranks
//! flagged — from the core's digests. Takes snapshots and digests (`memsight digest`) alike.
//! Its JSON also says where each run's peak falls, as the files view's chart of every run
//! places it (`compare::overlay`), and with `--curves` gives the curves that chart draws.
//!
//! Not the place for the numbers themselves (the core's) or for a report folder's summary
//! (`report`).

use std::path::Path;
use std::process::ExitCode;

use memsight_core::analysis::categories::rules::Rules;
use memsight_core::compare::files::{
    flag_outliers, iteration_summaries, name_order, read_settings, shown_devices, sort_order,
    FileRow, FilesColumn,
};
use memsight_core::compare::overlay::{run_curve, OverlayX, OverlayY, RunCurve};
use memsight_core::compare::Digest;
use memsight_core::format::compare as words;
use serde_json::{json, Value};

use crate::digest::read_as_digests;
use crate::escape::{escape_control, escape_output};
use crate::open::describe_error;

/// How the table is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilesOutput {
    Markdown,
    Csv,
    /// With each run's curves when `curves` is set.
    Json {
        curves: bool,
    },
}

/// A sort order as typed: `peak_allocated_bytes`, `rank:asc`, or a setting the files'
/// names carry (`ctx:asc`), which is known only once the files are read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilesSort {
    pub key: String,
    pub descending: bool,
}

pub fn parse_sort(text: &str) -> Result<FilesSort, String> {
    let (key, direction) = text.split_once(':').unwrap_or((text, "desc"));
    let descending = match direction {
        "asc" => false,
        "desc" => true,
        other => return Err(format!("'{other}' is not an order: say asc or desc")),
    };
    if key.is_empty() {
        return Err("say a column to sort by".into());
    }
    Ok(FilesSort {
        key: key.to_string(),
        descending,
    })
}

/// The column `sort` names among `rows`' columns, or why there is none.
fn sort_column(rows: &[FileRow], sort: &FilesSort) -> Result<FilesColumn, String> {
    FilesColumn::parse_in(rows, &sort.key).ok_or_else(|| {
        let keys: Vec<String> = FilesColumn::all()
            .chain(FilesColumn::settings(rows))
            .map(|c| c.key_in(rows))
            .collect();
        format!(
            "'{}' is not a column: say one of {} (settings are the words before numbers that tell the files' names apart, such as ctx in ctx512)",
            sort.key,
            keys.join(", ")
        )
    })
}

/// Prints one row per file and device that used memory (a file none of whose devices did
/// gets one row for its first device). Files are read one at a time; one that cannot be read
/// is reported and the others are still listed, with exit code 1.
pub fn run(
    files: &[impl AsRef<Path>],
    rules: &Rules,
    sort: Option<FilesSort>,
    output: FilesOutput,
) -> ExitCode {
    let mut failed = false;
    let mut rows = Vec::new();
    // Beside each row, its run as the files view's chart draws it.
    let mut runs = Vec::new();
    for path in files {
        let path = path.as_ref();
        match read_as_digests(path, rules, false, true) {
            Ok(files) => {
                for file in files {
                    for digest in shown_devices(&file.devices) {
                        rows.push(FileRow::new(&file.name, None, digest));
                        runs.push(RunShape::of(digest));
                    }
                }
            }
            Err(report) => {
                failed = true;
                say!("{}", describe_error(path, &report));
            }
        }
    }
    flag_outliers(&mut rows);
    read_settings(&mut rows);
    let order = match sort {
        Some(sort) => match sort_column(&rows, &sort) {
            Ok(column) => sort_order(&rows, column, sort.descending),
            Err(why) => {
                say!("memsight: --sort: {why}");
                return ExitCode::from(2);
            }
        },
        None => name_order(&rows),
    };
    rows = in_order(rows, &order);
    runs = in_order(runs, &order);
    let printed: String = match output {
        FilesOutput::Markdown => words::files_markdown(&rows),
        FilesOutput::Csv => words::files_csv(&rows),
        FilesOutput::Json { curves } => {
            let rows: Vec<Value> = rows
                .iter()
                .zip(&runs)
                .map(|(row, run)| run.json_row(row, curves))
                .collect();
            let mut out = serde_json::to_string(&json!({ "files": rows })).expect("rows serialize");
            out.push('\n');
            out
        }
    };
    print!(
        "{}",
        escape_output(&printed, matches!(output, FilesOutput::Json { .. }))
    );
    if output == FilesOutput::Markdown {
        let summaries = iteration_summaries(&rows);
        if !summaries.is_empty() {
            println!();
        }
        for summary in &summaries {
            println!("{}", escape_control(&words::iteration_sentence(summary)));
        }
        if rows.iter().any(|r| r.outlier) {
            println!("\n{}", words::OUTLIER_MEANING);
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// One run as the files view's chart of every run draws it: its curve over its events and,
/// when its trace has times, over its time, each with its peak's place (the first highest
/// point). Allocated bytes as recorded; the chart's "from its start" is the same curve less
/// its first value, with its peak in the same place.
struct RunShape {
    /// The event after which the run's allocated peak is first reached; `None` when it was
    /// reached before the first event.
    peak_event: Option<u32>,
    over_events: Option<RunCurve>,
    over_time: Option<RunCurve>,
}

impl RunShape {
    fn of(digest: &Digest) -> Self {
        RunShape {
            peak_event: digest.peak_state.row_before().map(|row| row.get()),
            over_events: run_curve(digest, OverlayX::Events, OverlayY::Absolute),
            over_time: run_curve(digest, OverlayX::Time, OverlayY::Absolute),
        }
    }

    /// `row` as JSON with this run's peak position (in parts per million of its events and of
    /// its time) and, with `curves`, the values drawn.
    fn json_row(&self, row: &FileRow, curves: bool) -> Value {
        let share = |c: &Option<RunCurve>| c.as_ref().map(|c| c.peak_share_ppm);
        let values = |c: &Option<RunCurve>| c.as_ref().map(|c| c.values.clone());
        let mut value = serde_json::to_value(row).expect("a row serializes");
        let fields = value.as_object_mut().expect("a row is an object");
        fields.insert("peak_event".into(), json!(self.peak_event));
        fields.insert("peak_at_events_ppm".into(), json!(share(&self.over_events)));
        fields.insert("peak_at_time_ppm".into(), json!(share(&self.over_time)));
        if curves {
            fields.insert(
                "curve_over_events_bytes".into(),
                json!(values(&self.over_events)),
            );
            fields.insert(
                "curve_over_time_bytes".into(),
                json!(values(&self.over_time)),
            );
        }
        value
    }
}

/// `items` in `order` (each index once), as the rows they go with were sorted.
fn in_order<T>(items: Vec<T>, order: &[usize]) -> Vec<T> {
    let mut items: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order
        .iter()
        .map(|&i| items[i].take().expect("each index once"))
        .collect()
}
