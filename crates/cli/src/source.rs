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

use std::collections::HashSet;
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

use memsight_core::decode::ErrorReport;

use crate::open::{
    for_each_input_into, not_a_snapshot, read_whole, regular_file, with_context, Opened,
    SnapshotOrDigests,
};

/// How the annotated files are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceOutput {
    Text,
    Markdown,
    Json,
}

/// The largest file read from a checkout: a source file is far smaller; a larger one is
/// skipped with a note (a sparse file can claim any size).
pub const MAX_SOURCE_BYTES: u64 = 16 << 20;

/// Where the text of source files comes from besides the snapshot: the files under a folder.
/// The folder is data too: links are followed only to folders and files inside it (each
/// folder walked once, so links back into it end), and only regular files no larger than
/// [`MAX_SOURCE_BYTES`] are read.
pub struct SourceRoot {
    root: PathBuf,
    /// Relative paths of the `.py` files under it, `/`-separated, in order.
    files: Vec<String>,
    /// Each file's path with its links resolved, and why it is not read when it is not.
    found: Vec<(PathBuf, Option<String>)>,
}

/// The text of a source file (from the snapshot or under `--root`), or why it was not read.
pub struct RootText {
    /// Where it comes from: the snapshot, or a file under `--root`.
    pub from: String,
    pub text: Result<String, String>,
}

impl SourceRoot {
    /// Every `.py` file under `root` a source view looks for
    /// (`analysis::lines::is_checkout_source`), skipped folders not walked.
    pub fn read(root: &Path) -> Result<SourceRoot, String> {
        let unreadable = |e: std::io::Error| format!("{} cannot be read: {e}", root.display());
        let base = std::fs::canonicalize(root).map_err(unreadable)?;
        let top = std::fs::metadata(&base).map_err(unreadable)?;
        let mut found: Vec<(String, PathBuf, Option<String>)> = Vec::new();
        let mut visited = HashSet::from([folder_identity(&base, &top)]);
        let mut folders = vec![(base.clone(), String::new())];
        while let Some((folder, prefix)) = folders.pop() {
            let entries = match std::fs::read_dir(&folder) {
                Ok(entries) => entries,
                Err(e) if folder == base => return Err(unreadable(e)),
                Err(_) => continue,
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().to_string();
                let relative = match prefix.as_str() {
                    "" => name.clone(),
                    prefix => format!("{prefix}/{name}"),
                };
                let Some((path, metadata)) = inside(&base, &entry) else {
                    continue;
                };
                if metadata.is_dir() {
                    if !is_skipped_folder(&name)
                        && visited.insert(folder_identity(&path, &metadata))
                    {
                        folders.push((path, relative));
                    }
                } else if is_checkout_source(&relative) {
                    let why_not = regular_file(&metadata)
                        .and_then(|()| within_limit(metadata.len()))
                        .err();
                    found.push((relative, path, why_not));
                }
            }
        }
        found.sort();
        let (files, found) = found
            .into_iter()
            .map(|(relative, path, why_not)| (relative, (path, why_not)))
            .unzip();
        Ok(SourceRoot {
            root: root.to_path_buf(),
            files,
            found,
        })
    }

    fn text_of(&self, path: &str) -> Option<RootText> {
        let i = match_by_suffix(path, &self.files)?;
        let (resolved, why_not) = &self.found[i];
        let text = match why_not {
            Some(why) => Err(why.clone()),
            None => read_source(resolved),
        };
        Some(RootText {
            from: format!("{}/{}", self.root.display(), self.files[i]),
            text,
        })
    }
}

/// The entry's path with its links resolved and what it is, when that is inside `base` (a
/// canonical folder); `None` for a link out of it, or one that leads nowhere.
fn inside(base: &Path, entry: &std::fs::DirEntry) -> Option<(PathBuf, std::fs::Metadata)> {
    if !entry.file_type().ok()?.is_symlink() {
        return Some((entry.path(), entry.metadata().ok()?));
    }
    let resolved = std::fs::canonicalize(entry.path()).ok()?;
    if !resolved.starts_with(base) {
        return None;
    }
    let metadata = std::fs::metadata(&resolved).ok()?;
    Some((resolved, metadata))
}

/// What tells a folder apart from every other: its device and inode where there are such (a
/// bind mount shows one folder at two paths), else its path with links resolved.
#[cfg(unix)]
fn folder_identity(_: &Path, metadata: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (metadata.dev(), metadata.ino())
}

#[cfg(not(unix))]
fn folder_identity(path: &Path, _: &std::fs::Metadata) -> PathBuf {
    path.to_path_buf()
}

/// `Err` with why a file of `size` bytes is not read.
fn within_limit(size: u64) -> Result<(), String> {
    if size > MAX_SOURCE_BYTES {
        return Err(too_large(size));
    }
    Ok(())
}

/// Why a file of `size` bytes, more than [`MAX_SOURCE_BYTES`], is not read.
fn too_large(size: u64) -> String {
    format!(
        "it is {}, more than the {} read from a checkout",
        format::bytes(size),
        format::bytes(MAX_SOURCE_BYTES)
    )
}

/// The text of the regular file at `path`, read up to [`MAX_SOURCE_BYTES`] (bytes that are
/// not UTF-8 replaced), or why not.
fn read_source(path: &Path) -> Result<String, String> {
    let bytes = read_whole(path, MAX_SOURCE_BYTES, too_large)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
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
    let as_json = query.output == SourceOutput::Json;
    for_each_input_into(
        &mut std::io::stdout(),
        files,
        as_json,
        |path, input| match input {
            SnapshotOrDigests::Snapshot(opened) => sources_of(path, opened, rules, query),
            SnapshotOrDigests::Digests(_) => Err(not_a_snapshot()),
        },
    )
}

/// The annotated files of the snapshot at `path`; an error when `--file` matches none.
fn sources_of(
    path: &Path,
    opened: &Opened,
    rules: &Rules,
    query: &SourceQuery<'_>,
) -> Result<String, ErrorReport> {
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
        let mut matched = false;
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
            matched |= !files.is_empty();
            let texts: Vec<Option<RootText>> = files
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
        if let Some(only) = only.filter(|_| !matched) {
            return Err(ErrorReport::message(format!(
                "No file of the code holding memory has a path containing `{only}`."
            )));
        }
        if output == SourceOutput::Json {
            let shown = crate::open::shown(path);
            return Ok(json!({ "file": shown, "devices": by_device }).to_string());
        }
        Ok(out)
    })
}

/// The text of `path`: the snapshot's own copy (the same path, else the longest shared end),
/// else the file under `root`.
fn text_of(
    snapshot: &memsight_core::model::Snapshot,
    root: Option<&SourceRoot>,
    path: &str,
) -> Option<RootText> {
    if let Some(i) = carried_text(snapshot, path) {
        let (from, text) = &snapshot.source_code[i];
        return Some(RootText {
            from: format!("{from} (in the snapshot)"),
            text: Ok(text.clone()),
        });
    }
    root?.text_of(path)
}

fn tally(t: &Tally) -> Value {
    json!({ "count": t.count, "bytes": t.bytes })
}

fn file_json(f: &FileBytes, text: Option<&RootText>) -> Value {
    let read = |t: &&RootText| t.text.is_ok();
    json!({
        "path": f.path,
        "source": text.filter(read).map(|t| t.from.clone()),
        "not_read": text.and_then(|t| t.text.as_ref().err().map(|why| format!("{}: {why}", t.from))),
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
    text: Option<&RootText>,
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
    let mut head = String::new();
    match text {
        Some(RootText { from, text: Ok(_) }) => {
            let _ = writeln!(head, "Source: {from}");
        }
        Some(RootText {
            from,
            text: Err(why),
        }) => {
            let _ = writeln!(
                head,
                "Source: {from} not read: {why}; only its lines with memory are listed."
            );
        }
        None => {
            let _ = writeln!(
                head,
                "Source not found (--root DIR reads a checkout): only its lines with memory are listed."
            );
        }
    }
    for g in &f.functions {
        let _ = writeln!(
            head,
            "  {} (from line {}): {}",
            g.name,
            g.first_line,
            format::source::margin(&g.through)
        );
    }
    if markdown {
        // Outside the code block, the file's names and paths are text, never Markdown or HTML.
        for line in head.lines() {
            let _ = writeln!(out, "{}", format::document::escape(line));
        }
    } else {
        out.push_str(&head);
    }
    let mut body = String::new();
    let _ = writeln!(
        body,
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
    let code = text.and_then(|t| t.text.as_deref().ok());
    for row in lay_out(code, &lines, &functions) {
        match row {
            ListedRow::Function { name, total } => {
                let _ = writeln!(
                    body,
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
                let _ = writeln!(body, "{made:>20} {through:>20} {number:>6}  {code}");
            }
        }
    }
    if markdown {
        // A fence longer than any run of backticks in the code, so none of it closes the block.
        let fence =
            "`".repeat(memsight_core::format::document::longest_backtick_run(&body).max(2) + 1);
        let _ = write!(out, "\n{fence}text\n{body}{fence}\n");
    } else {
        out.push_str(&body);
    }
    out.push('\n');
}
