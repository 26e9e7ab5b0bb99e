//! Opening a snapshot file (or standard input, `-`): streamed through the core's decoder
//! (the file is never read whole), with progress on a terminal, and a file that cannot be
//! read reported with the same message, byte offset and hint as the page. A file of digests
//! (`memsight digest`) is told apart by its first bytes and read whole; commands that need
//! the trace refuse it. `--redact` applies here, to every file opened and every name shown.
//! Every other file a command reads (rules, a report as a baseline, source files) is opened
//! here too, only when it is a regular file, and read whole only up to a limit of its kind
//! ([`read_whole`]). Not the place for files written ([`crate::written`]).

use std::fs::File;
use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use memsight_core::analysis::categories::categorised::Categorised;
use memsight_core::analysis::categories::rules::{Rules, MAX_RULES_BYTES};
use memsight_core::analysis::Analysed;
use memsight_core::compare::digest_file::{
    read_digests, redact_digest, DigestFile, MAX_DIGESTS_BYTES,
};
use memsight_core::decode::{decode_reader, digest_is_not_a_snapshot, is_digest, ErrorReport};
use memsight_core::format;
use memsight_core::model::redact::{redact_snapshot, Redaction};
use memsight_core::service::Context;

use crate::escape::{escape_control, escape_json, escape_output};

/// Whether paths are redacted in everything printed and written (`--redact`), set once by
/// `main` before any file is opened.
static REDACT: AtomicBool = AtomicBool::new(false);

/// Redacts every file opened from now on, and the names they are shown by.
pub fn redact_from_now() {
    REDACT.store(true, Ordering::Relaxed);
}

pub fn redacting() -> bool {
    REDACT.load(Ordering::Relaxed)
}

/// How outputs name the file at `path`: as given, or with `--redact` its path redacted as
/// the snapshot's own paths are (`/home/jdoe/runs/rank3.pickle` → `<home>/runs/rank3.pickle`).
pub fn shown(path: &Path) -> String {
    let given = path.display().to_string();
    if redacting() {
        Redaction::plan([given.as_str()]).apply(&given).into_owned()
    } else {
        given
    }
}

/// `Err` with why, when what `metadata` describes is not a regular file: reading a named pipe,
/// a socket or a device may block forever or never end, and a folder is no file.
pub fn regular_file(metadata: &std::fs::Metadata) -> Result<(), String> {
    let kind = metadata.file_type();
    if kind.is_file() {
        return Ok(());
    }
    Err(format!("it is {}, not a regular file", what_it_is(&kind)))
}

/// What a file of this kind is, in words: `a folder`, `a named pipe (FIFO)`…
pub fn what_it_is(kind: &std::fs::FileType) -> &'static str {
    if kind.is_file() {
        "a regular file"
    } else if kind.is_dir() {
        "a folder"
    } else {
        special_kind(kind)
    }
}

#[cfg(unix)]
fn special_kind(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "a named pipe (FIFO)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
fn special_kind(_: &std::fs::FileType) -> &'static str {
    "a special file"
}

/// Opens `path` for reading when it is a regular file (links followed), checked before it is
/// opened, so a named pipe is never opened, and again once open. Every file a command reads
/// is opened here (standard input is `-`).
pub fn open_regular(path: &Path) -> Result<File, String> {
    regular_file(&std::fs::metadata(path).map_err(|e| e.to_string())?)?;
    let file = File::open(path).map_err(|e| e.to_string())?;
    regular_file(&file.metadata().map_err(|e| e.to_string())?)?;
    Ok(file)
}

/// The bytes of the regular file at `path` when it holds at most `limit` bytes, else why not:
/// `too_large` says it for a file of the size given. The size is checked before reading, and
/// the reading stops one byte past the limit, so a file that grows while read (or claims a
/// size it does not hold) never fills the memory.
pub fn read_whole(
    path: &Path,
    limit: u64,
    too_large: impl Fn(u64) -> String,
) -> Result<Vec<u8>, String> {
    let file = open_regular(path)?;
    let size = file.metadata().map_err(|e| e.to_string())?.len();
    if size > limit {
        return Err(too_large(size));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// A decoded and analysed snapshot, with how long that took.
pub struct Opened {
    pub analysed: Analysed,
    /// Bytes read from the file (compressed bytes for gzip input).
    pub file_bytes: u64,
    pub decode_ms: f64,
}

/// Why a command that reads the trace cannot read a digest: the decoder's words, as a
/// sentence (a digest is known by its start, so no offset is worth showing).
pub fn not_a_snapshot() -> ErrorReport {
    let report = digest_is_not_a_snapshot().into_report();
    ErrorReport {
        message: format::problems::as_sentence(&report.message),
        offset: None,
        hint: report.hint,
    }
}

/// What a file given to a command that reads both turned out to be.
pub enum SnapshotOrDigests {
    Snapshot(Box<Opened>),
    /// One digest, or several one after another (a baseline).
    Digests(Vec<DigestFile>),
}

/// Opens `path` (`-` reads standard input) as digests when it begins as one
/// ([`is_digest`]), else decodes and analyses it as a snapshot, with a progress line
/// on a terminal for a large file when `progress` is set (files opened side by side would
/// overwrite each other's). With `--redact`, either comes redacted.
pub fn open_input(path: &Path, progress: bool) -> Result<SnapshotOrDigests, ErrorReport> {
    let start = Instant::now();
    let (source, size): (Box<dyn Read>, u64) = if path.as_os_str() == "-" {
        (Box::new(std::io::stdin().lock()), 0)
    } else {
        let file = open_regular(path).map_err(|error| {
            ErrorReport::message(format!("The file cannot be opened: {error}."))
        })?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        (Box::new(file), size)
    };
    let mut counted = Counted {
        inner: BufReader::with_capacity(64 << 10, source),
        bytes: 0,
    };
    let head = counted
        .inner
        .fill_buf()
        .map_err(|error| ErrorReport::message(format!("The file cannot be read: {error}.")))?;
    if is_digest(head) {
        let mut bytes = Vec::new();
        (&mut counted)
            .take(MAX_DIGESTS_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|error| ErrorReport::message(format!("The file cannot be read: {error}.")))?;
        if bytes.len() as u64 > MAX_DIGESTS_BYTES {
            return Err(format::problems::digests_too_large(MAX_DIGESTS_BYTES));
        }
        let digests = read_digests(&bytes)
            .map_err(|(at, error)| format::problems::unreadable_digest(at, &error))?;
        return Ok(SnapshotOrDigests::Digests(if redacting() {
            digests.into_iter().map(redact_digest).collect()
        } else {
            digests
        }));
    }
    let mut progress = Progress::new(path, if progress { size } else { 0 });
    let snapshot = decode_reader(&mut counted, &mut |read| progress.show(read));
    progress.clear();
    let mut snapshot = snapshot.map_err(|error| error.into_report())?;
    if redacting() {
        redact_snapshot(&mut snapshot);
    }
    let analysed = Analysed::new(snapshot);
    Ok(SnapshotOrDigests::Snapshot(Box::new(Opened {
        analysed,
        file_bytes: counted.bytes,
        decode_ms: start.elapsed().as_secs_f64() * 1e3,
    })))
}

/// Opens each file in turn and prints what `show` makes of it: one line of JSON, or text
/// separated from the previous file's by a blank line. A file that cannot be read is reported
/// on standard error as the page reports it (and as `{"file", "error"}` with `as_json`); the
/// others are still printed, and the exit code is then 1. Each file is dropped before the
/// next is opened, so memory stays bounded by the largest file's model.
pub fn for_each_file<P: AsRef<Path>>(
    files: &[P],
    as_json: bool,
    show: impl FnMut(&Path, &Opened) -> String,
) -> ExitCode {
    for_each_file_into(&mut std::io::stdout(), files, as_json, show)
}

/// [`for_each_file`], printing into `out`.
pub fn for_each_file_into<P: AsRef<Path>>(
    out: &mut dyn Write,
    files: &[P],
    as_json: bool,
    mut show: impl FnMut(&Path, &Opened) -> String,
) -> ExitCode {
    for_each_input_into(out, files, as_json, |path, input| match input {
        SnapshotOrDigests::Snapshot(opened) => Ok(show(path, opened)),
        SnapshotOrDigests::Digests(_) => Err(not_a_snapshot()),
    })
}

/// [`for_each_file_into`] for a command that reads digests too: `show` is handed what each
/// file turned out to be, and may refuse it with a report.
pub fn for_each_input_into<P: AsRef<Path>>(
    out: &mut dyn Write,
    files: &[P],
    as_json: bool,
    mut show: impl FnMut(&Path, &SnapshotOrDigests) -> Result<String, ErrorReport>,
) -> ExitCode {
    let mut failed = false;
    for (i, path) in files.iter().enumerate() {
        let path = path.as_ref();
        let shown_or_error = open_input(path, true).and_then(|input| show(path, &input));
        let printed = match shown_or_error {
            Ok(shown) => {
                let shown = escape_output(&shown, as_json);
                if as_json {
                    writeln!(out, "{shown}")
                } else {
                    let separator = if i > 0 { "\n" } else { "" };
                    write!(out, "{separator}{shown}")
                }
            }
            Err(report) => {
                failed = true;
                say!("{}", describe_error(path, &report));
                if as_json {
                    let error = serde_json::json!({
                        "file": shown(path),
                        "error": report,
                    });
                    writeln!(out, "{}", escape_json(&error.to_string()))
                } else {
                    Ok(())
                }
            }
        };
        if printed.is_err() {
            // Standard output was closed (e.g. piped into `head`): nothing more to say.
            return ExitCode::FAILURE;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The digests in the file at `path` (redacted with `--redact`) when it holds digests; `None`
/// for a snapshot, standard input, or a file that cannot be read (whose error its reader
/// reports). Read once, ahead: a report folder names a digest's report after its snapshot.
pub fn digests_in(path: &Path) -> Option<Vec<DigestFile>> {
    if path.as_os_str() == "-" {
        return None;
    }
    let mut head = [0u8; 4096];
    let n = open_regular(path).ok()?.read(&mut head).ok()?;
    if !is_digest(&head[..n]) {
        return None;
    }
    match open_input(path, false).ok()? {
        SnapshotOrDigests::Digests(files) => Some(files),
        SnapshotOrDigests::Snapshot(_) => None,
    }
}

/// Counts the bytes read through it.
struct Counted<R> {
    inner: R,
    bytes: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(out)?;
        self.bytes += n as u64;
        Ok(n)
    }
}

/// A file that cannot be read, as the page shows it: the message, where in the file, and the
/// hint, every control character in them escaped.
pub fn describe_error(path: &Path, report: &ErrorReport) -> String {
    let mut text = format!("memsight: {}: {}", path.display(), report.message);
    if let Some(offset) = report.offset {
        text.push_str(&format!("\n  {}", format::problems::error_offset(offset)));
    }
    if let Some(hint) = &report.hint {
        text.push_str(&format!("\n  {hint}"));
    }
    escape_control(&text).into_owned()
}

/// Bytes read so far, on standard error when it is a terminal, for files large enough to
/// wait for.
struct Progress<'a> {
    path: &'a Path,
    total: u64,
    shown_percent: Option<u64>,
    enabled: bool,
}

impl<'a> Progress<'a> {
    /// Files smaller than this load too fast to need a progress line.
    const MIN_BYTES: u64 = 64 << 20;

    fn new(path: &'a Path, total: u64) -> Self {
        Progress {
            path,
            total,
            shown_percent: None,
            enabled: total >= Self::MIN_BYTES && std::io::stderr().is_terminal(),
        }
    }

    fn show(&mut self, read: u64) {
        if !self.enabled {
            return;
        }
        let percent = format::percent_of(read, self.total) as u64;
        if self.shown_percent != Some(percent) {
            self.shown_percent = Some(percent);
            let mut err = std::io::stderr().lock();
            let _ = write!(
                err,
                "\rreading {}: {percent}% of {}",
                escape_control(&self.path.display().to_string()),
                format::bytes(self.total)
            );
            let _ = err.flush();
        }
    }

    fn clear(&mut self) {
        if self.enabled && self.shown_percent.is_some() {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

/// Reads a rules file as the page exports it (`{"rules": [{"pattern", "regex", "role",
/// "component"}]}`) and checks that every rule compiles.
pub fn read_rules(path: &Path) -> Result<Rules, String> {
    // The message may quote the file's patterns: never raw.
    rules_in(path).map_err(|why| escape_control(&why).into_owned())
}

fn rules_in(path: &Path) -> Result<Rules, String> {
    let too_large =
        |_| format::problems::file_too_large(MAX_RULES_BYTES, "no rules file needs to be");
    let bytes = read_whole(path, MAX_RULES_BYTES, too_large)
        .map_err(|e| format!("{}: cannot be read: {e}", path.display()))?;
    let rules: Rules = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{}: not a rules file: {e}", path.display()))?;
    match rules.compile() {
        Ok(_) => Ok(rules),
        Err(e) => Err(format!(
            "{}: rule {} cannot be used: {}",
            path.display(),
            e.index + 1,
            e.message
        )),
    }
}

/// Runs `ask` with a service context over `opened` under `rules` (checked when read), and the
/// devices asked about: `device`, or every device of the file.
pub fn with_context<T>(
    opened: &Opened,
    rules: &Rules,
    device: Option<u32>,
    ask: impl FnOnce(&Context<'_>, Vec<u32>) -> T,
) -> T {
    let analysed = &opened.analysed;
    let now = || 0.0;
    let categorised = Categorised::new(analysed, rules.clone(), &now)
        .expect("the rules were compiled before any file was opened");
    let cx = Context {
        analysed,
        categorised: &categorised,
        now: &now,
    };
    let devices = match device {
        Some(d) => vec![d],
        None => analysed.snapshot.device_ids(),
    };
    ask(&cx, devices)
}
