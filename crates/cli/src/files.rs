//! `memsight files FILE… [--markdown|--csv|--json] [--sort COLUMN[:asc|desc]]`: the page's
//! files table — one row per file and device with its peaks, its end, efficiency, trace
//! entries, time span and the bytes of each role at its peak, ranks, iterations and the
//! settings that tell the files apart (`ctx512`, `bs8`) read from the names, and outlier ranks
//! flagged — from the core's digests. Takes snapshots and digests (`memsight digest`) alike.

use std::path::Path;
use std::process::ExitCode;

use memsight_core::analysis::categories::rules::Rules;
use memsight_core::compare::files::{
    flag_outliers, iteration_summaries, read_settings, rows_of, sort_rows, FileRow, FilesColumn,
};
use memsight_core::format::compare as words;

use crate::digest::read_as_digests;
use crate::open::describe_error;

/// How the table is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilesOutput {
    Markdown,
    Csv,
    Json,
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
    for path in files {
        let path = path.as_ref();
        match read_as_digests(path, rules, false, true) {
            Ok(files) => {
                for file in files {
                    rows.extend(rows_of(&file.name, None, &file.devices));
                }
            }
            Err(report) => {
                failed = true;
                eprintln!("{}", describe_error(path, &report));
            }
        }
    }
    flag_outliers(&mut rows);
    read_settings(&mut rows);
    if let Some(sort) = sort {
        match sort_column(&rows, &sort) {
            Ok(column) => sort_rows(&mut rows, column, sort.descending),
            Err(why) => {
                eprintln!("memsight: --sort: {why}");
                return ExitCode::from(2);
            }
        }
    }
    let printed: String = match output {
        FilesOutput::Markdown => words::files_markdown(&rows),
        FilesOutput::Csv => words::files_csv(&rows),
        FilesOutput::Json => {
            let mut out = serde_json::to_string(&serde_json::json!({ "files": rows }))
                .expect("rows serialize");
            out.push('\n');
            out
        }
    };
    print!("{printed}");
    if output == FilesOutput::Markdown {
        let summaries = iteration_summaries(&rows);
        if !summaries.is_empty() {
            println!();
        }
        for summary in &summaries {
            println!("{}", words::iteration_sentence(summary));
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
