//! `memsight source FILE… [--root DIR] [--device N|host] [--at peak|end|EVENT]
//! [--file TEXT] [--markdown|--json]`: the source files of the code that holds memory at a
//! moment, each line with the bytes made there (the table's call-site group of that line) and
//! the bytes passing through it, each function's total above its lines. The text comes from
//! the snapshot's `source_code` when it carries one, else from `--root` (a checkout: files
//! matched to the snapshot's paths by their longest shared end); a file found in neither is
//! listed by its lines alone, and said so.
//!
//! The numbers are the core's (`analysis::lines`). Not the place for choosing allocations
//! (the table's scopes).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{json, Value};

use memsight_core::analysis::categories::rules::Rules;
use memsight_core::analysis::lines::{
    carried_text, is_checkout_source, is_skipped_folder, lines_of, match_by_suffix, FileBytes,
    LineBytes, Tally,
};
use memsight_core::analysis::listing::{lay_out, ListedRow};
use memsight_core::format;
use memsight_core::table::columns::{DeviceColumns, Rows};
use memsight_core::table::filter::select;
use memsight_core::table::{Filter, Scope};

use crate::open::{for_each_file, with_context, Opened};

/// How the annotated files are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceOutput {
    Text,
    Markdown,
    Json,
}

/// Where the text of source files comes from besides the snapshot: the files under a folder.
pub struct SourceRoot {
    root: PathBuf,
    /// Relative paths of the `.py` files under it, `/`-separated.
    files: Vec<String>,
}

impl SourceRoot {
    /// Every `.py` file under `root` a source view looks for
    /// (`analysis::lines::is_checkout_source`), skipped folders not walked.
    pub fn read(root: &Path) -> Result<SourceRoot, String> {
        let mut files = Vec::new();
        let mut folders = vec![root.to_path_buf()];
        while let Some(folder) = folders.pop() {
            let entries = std::fs::read_dir(&folder)
                .map_err(|e| format!("{} cannot be read: {e}", folder.display()))?;
            for entry in entries.flatten() {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().to_string();
                if path.is_dir() {
                    if !is_skipped_folder(&name) {
                        folders.push(path);
                    }
                } else if let Ok(relative) = path.strip_prefix(root) {
                    let relative = relative.to_string_lossy().replace('\\', "/");
                    if is_checkout_source(&relative) {
                        files.push(relative);
                    }
                }
            }
        }
        files.sort();
        Ok(SourceRoot {
            root: root.to_path_buf(),
            files,
        })
    }

    fn text_of(&self, path: &str) -> Option<(String, String)> {
        let found = &self.files[match_by_suffix(path, &self.files)?];
        let text = std::fs::read_to_string(self.root.join(found)).ok()?;
        Some((format!("{}/{found}", self.root.display()), text))
    }
}

/// What to annotate and how to print it.
pub struct SourceQuery<'a> {
    pub device: Option<u32>,
    pub scope: Scope,
    pub root: Option<&'a SourceRoot>,
    /// Only files whose path contains this text.
    pub only: Option<&'a str>,
    pub output: SourceOutput,
}

pub fn run(files: &[PathBuf], rules: &Rules, query: &SourceQuery<'_>) -> ExitCode {
    for_each_file(files, query.output == SourceOutput::Json, |path, opened| {
        sources_of(path, opened, rules, query)
    })
}

fn sources_of(path: &Path, opened: &Opened, rules: &Rules, query: &SourceQuery<'_>) -> String {
    let SourceQuery {
        device,
        scope,
        root,
        only,
        output,
    } = *query;
    with_context(opened, rules, device, |cx, devices| {
        let analysed = cx.analysed;
        let snapshot = &analysed.snapshot;
        let mut out = String::new();
        let mut by_device = serde_json::Map::new();
        for d in devices {
            let Some(position) = analysed.device_position(d) else {
                let _ = writeln!(out, "{}: no device {d}", path.display());
                continue;
            };
            let (dev, facts) = (&snapshot.devices[position], &analysed.facts[position]);
            let columns = DeviceColumns::new(snapshot, dev, facts);
            let rows = Rows {
                snapshot,
                device: dev,
                facts,
                categories: cx.categorised.device(position),
                columns: &columns,
                block_sizes: None,
            };
            let Ok(chosen) = select(&rows, scope, &Filter::default()).map(|s| s.chosen) else {
                continue;
            };
            let files: Vec<FileBytes> = lines_of(snapshot, dev, facts, &chosen)
                .into_iter()
                .filter(|f| only.is_none_or(|o| f.path.contains(o)))
                .collect();
            let texts: Vec<Option<(String, String)>> = files
                .iter()
                .map(|f| text_of(snapshot, root, &f.path))
                .collect();
            let name = format::device(snapshot.kind_of(d), d);
            match output {
                SourceOutput::Json => {
                    let list: Vec<Value> = files
                        .iter()
                        .zip(&texts)
                        .map(|(f, text)| file_json(f, text.as_ref()))
                        .collect();
                    by_device.insert(
                        format::device_key(d),
                        json!({ "device": name, "files": list }),
                    );
                }
                SourceOutput::Text | SourceOutput::Markdown => {
                    for (f, text) in files.iter().zip(&texts) {
                        annotated(&mut out, f, text.as_ref(), &name, output);
                    }
                }
            }
        }
        if output == SourceOutput::Json {
            return json!({ "file": crate::open::shown(path), "devices": by_device }).to_string();
        }
        out
    })
}

/// The text of `path`: the snapshot's own copy (the same path, else the longest shared end),
/// else the file under `root`.
fn text_of(
    snapshot: &memsight_core::model::Snapshot,
    root: Option<&SourceRoot>,
    path: &str,
) -> Option<(String, String)> {
    if let Some(i) = carried_text(snapshot, path) {
        let (from, text) = &snapshot.source_code[i];
        return Some((format!("{from} (in the snapshot)"), text.clone()));
    }
    root?.text_of(path)
}

fn tally(t: &Tally) -> Value {
    json!({ "count": t.count, "bytes": t.bytes })
}

fn file_json(f: &FileBytes, text: Option<&(String, String)>) -> Value {
    json!({
        "path": f.path,
        "source": text.map(|(from, _)| from.clone()),
        "user": f.user,
        "made": tally(&f.made),
        "through": tally(&f.through),
        "functions": f.functions.iter().map(|g| json!({
            "name": g.name, "first_line": g.first_line, "through": tally(&g.through),
        })).collect::<Vec<_>>(),
        "lines": f.lines.iter().map(|l| json!({
            "line": l.line, "function": l.function, "made": tally(&l.made), "through": tally(&l.through),
        })).collect::<Vec<_>>(),
    })
}

/// One file with its margins: made here, passing through, the line's number and text.
fn annotated(
    out: &mut String,
    f: &FileBytes,
    text: Option<&(String, String)>,
    device: &str,
    output: SourceOutput,
) {
    let markdown = output == SourceOutput::Markdown;
    let heading = format!(
        "{} ({device}): {} made here, {} passing through",
        f.path,
        format::bytes(f.made.bytes),
        format::bytes(f.through.bytes)
    );
    if markdown {
        let _ = writeln!(out, "### {}\n", format::document::escape(&heading));
    } else {
        let _ = writeln!(out, "== {heading}");
    }
    match text {
        Some((from, _)) => {
            let _ = writeln!(out, "Source: {from}");
        }
        None => {
            let _ = writeln!(
                out,
                "Source not found (--root DIR reads a checkout): only its lines with memory are listed."
            );
        }
    }
    for g in &f.functions {
        let _ = writeln!(
            out,
            "  {} (from line {}): {}",
            g.name,
            g.first_line,
            format::source::margin(&g.through)
        );
    }
    if markdown {
        out.push_str("\n```text\n");
    }
    let _ = writeln!(
        out,
        "{:>20} {:>20} {:>6}  code",
        "made here", "through", "line"
    );
    // The page's layout: each function's total above its `def`, lines with memory the text
    // does not reach (a file changed since, or none found) after it.
    let lines: Vec<(i64, &LineBytes)> = f.lines.iter().map(|l| (l.line, l)).collect();
    let functions: Vec<(String, i64, Tally)> = f
        .functions
        .iter()
        .map(|g| (g.name.clone(), g.first_line, g.through))
        .collect();
    let code = text.map(|(_, text)| text.as_str());
    for row in lay_out(code, &lines, &functions) {
        match row {
            ListedRow::Function { name, total } => {
                let _ = writeln!(
                    out,
                    "{:>49}  ── {}",
                    "",
                    format::source::function_total(&name, &total)
                );
            }
            ListedRow::Code {
                number,
                code,
                margin,
            } => {
                let (made, through) = margin.map_or((String::new(), String::new()), |l| {
                    (
                        format::source::margin(&l.made),
                        format::source::margin(&l.through),
                    )
                });
                let _ = writeln!(out, "{made:>20} {through:>20} {number:>6}  {code}");
            }
        }
    }
    if markdown {
        out.push_str("```\n");
    }
    out.push('\n');
}
