//! `memsight report FILE… [--device N] [--rules RULES.json] [--output PATH] [--json [--only
//! CATEGORY]]`: the
//! Markdown report of each device (or of the one asked for) — the summary, bytes by role and
//! by component at the peak, the peak estimate, the largest allocations, fragmentation and
//! findings — exactly as the page downloads it (the core's `export::report`).
//! With `--json`, the numbers behind it (the service's summary and breakdown at the peak, its
//! lists narrowed to one category with `--only`, as the page narrows them).
//!
//! Reports of several devices or files are separated by a blank line and `---`. An output
//! path that does not end in `.md` is a folder of report pages instead ([`folder`]).

mod charts;
pub mod folder;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{json, Map, Value};

use memsight_core::analysis::categories::rules::Rules;
use memsight_core::analysis::categories::Category;
use memsight_core::breakdown::service::{AtRequest, BreakdownService};
use memsight_core::compare::digest::Digest;
use memsight_core::compare::digest_file::DigestFile;
use memsight_core::decode::ErrorReport;
use memsight_core::export;
use memsight_core::format;
use memsight_core::format::report::{DigestReport, TOP_ALLOCATIONS};
use memsight_core::service::{Context, ViewError};

use crate::digest::say_rules_do_not_apply;
use crate::open::{for_each_input_into, shown, with_context, Opened, SnapshotOrDigests};
use crate::written::{refuse_unwritable, write_regular};

/// Between two reports: a blank line (the previous report ends with a line break), a rule and
/// another blank line.
const SEPARATOR: &str = "\n---\n\n";

/// What the report is printed as.
#[derive(Clone, Copy, Debug)]
pub enum ReportFormat {
    Markdown,
    /// The numbers behind the report, with the peak's lists narrowed to `only` when given.
    Json {
        only: Option<Category>,
    },
}

/// Prints (or writes to `output`) the report of every device of every file, or of `device`
/// only. Fails (exit code 1) when a file cannot be read or has no such device, after reporting
/// the others.
pub fn run(
    files: &[impl AsRef<Path>],
    device: Option<u32>,
    rules: &Rules,
    output: Option<&Path>,
    format: ReportFormat,
) -> ExitCode {
    let as_json = matches!(format, ReportFormat::Json { .. });
    let mut failed = false;
    let mut reports = 0usize;
    let show = |path: &Path, input: &SnapshotOrDigests| {
        let (text, ok) = match (input, format) {
            (SnapshotOrDigests::Snapshot(opened), ReportFormat::Json { only }) => {
                numbers_of(path, opened, device, rules, only)
            }
            (SnapshotOrDigests::Snapshot(opened), ReportFormat::Markdown) => {
                reports_of(path, opened, device, rules)
            }
            (SnapshotOrDigests::Digests(files), format) => {
                say_rules_do_not_apply(path, rules);
                digest_reports(files, device, matches!(format, ReportFormat::Json { .. }))?
            }
        };
        failed |= !ok;
        // `for_each_file_into` already ends the previous file with a blank line.
        let separator = if reports > 0 && !text.is_empty() && !as_json {
            &SEPARATOR[1..]
        } else {
            ""
        };
        reports += usize::from(!text.is_empty());
        Ok(format!("{separator}{text}"))
    };
    if let Err(code) = refuse_unwritable(output) {
        return code;
    }
    let code = match output {
        None => for_each_input_into(&mut std::io::stdout(), files, as_json, show),
        Some(output) => {
            let mut text: Vec<u8> = Vec::new();
            let code = for_each_input_into(&mut text, files, as_json, show);
            if let Err(e) = write_regular(output, &text) {
                say!("memsight: {}: cannot be written: {e}", output.display());
                return ExitCode::FAILURE;
            }
            code
        }
    };
    if failed {
        ExitCode::FAILURE
    } else {
        code
    }
}

/// The reports of digests (of `device` only, when given): Markdown, or with `as_json` one
/// line per digest, `{"file", "from_digest": true, "devices": {"<device>": <digest>}}`. A
/// digest without that device is the file's error.
fn digest_reports(
    files: &[DigestFile],
    device: Option<u32>,
    as_json: bool,
) -> Result<(String, bool), ErrorReport> {
    let mut out = String::new();
    for file in files {
        let devices = digest_devices(file, device)?;
        if as_json {
            let by_device: Map<String, Value> = devices
                .iter()
                .map(|d| (d.device.to_string(), json!(d)))
                .collect();
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(
                &json!({ "file": file.name, "from_digest": true, "devices": by_device })
                    .to_string(),
            );
            continue;
        }
        for digest in devices {
            if !out.is_empty() {
                out.push_str(SEPARATOR);
            }
            let report = DigestReport {
                file_name: &file.name,
                digest,
            };
            out.push_str(&report.document().markdown());
        }
    }
    Ok((out, true))
}

/// A digest's devices (`device` only, when given); none is the file's error.
fn digest_devices(file: &DigestFile, device: Option<u32>) -> Result<Vec<&Digest>, ErrorReport> {
    let devices: Vec<&Digest> = file
        .devices
        .iter()
        .filter(|d| device.is_none_or(|wanted| d.device == wanted))
        .collect();
    if devices.is_empty() {
        return Err(ErrorReport::message(match device {
            Some(d) => format!("The digest of {} holds no device {d}.", file.name),
            None => format!("The digest of {} holds no device.", file.name),
        }));
    }
    Ok(devices)
}

/// The file's name as the report titles it.
fn display_name(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "standard input".to_string()
    } else {
        shown(path)
    }
}

/// Asks the breakdown service about each device of the file (or `device`) under `rules`;
/// `answer` turns one device's answers into text. `false` when a device could not be
/// answered (said on standard error).
fn each_device(
    path: &Path,
    opened: &Opened,
    device: Option<u32>,
    rules: &Rules,
    mut answer: impl FnMut(&mut BreakdownService, &Context<'_>, u32) -> Result<(), ViewError>,
) -> bool {
    with_context(opened, rules, device, |cx, devices| {
        let mut service = BreakdownService::default();
        let mut ok = true;
        for d in devices {
            if let Err(error) = answer(&mut service, cx, d) {
                ok = false;
                say!(
                    "memsight: {}: {}",
                    path.display(),
                    format::problems::view_error(&error)
                );
            }
        }
        ok
    })
}

/// The Markdown reports of one file's devices, separated.
fn reports_of(path: &Path, opened: &Opened, device: Option<u32>, rules: &Rules) -> (String, bool) {
    let name = display_name(path);
    if opened.analysed.snapshot.devices.is_empty() {
        return (
            format!(
                "# Memory report: {}\n\nThis snapshot holds no device.\n",
                format::document::escape(&name)
            ),
            true,
        );
    }
    let mut out = String::new();
    // Devices that used no memory get one line, not a report of zeros.
    let mut unused = Vec::new();
    let ok = each_device(path, opened, device, rules, |service, cx, device| {
        if memsight_core::overview::build(cx.analysed, device).is_some_and(|o| o.unused) {
            unused.push((cx.analysed.snapshot.kind_of(device), device));
            return Ok(());
        }
        let report = export::report(cx, service, device, &name)?;
        if !out.is_empty() {
            out.push_str(SEPARATOR);
        }
        out.push_str(&report);
        Ok(())
    });
    if !unused.is_empty() {
        let line = format::overview::unused_devices(&unused);
        if out.is_empty() {
            out = format!(
                "# Memory report: {}\n\n{line}\n",
                format::document::escape(&name)
            );
        } else {
            out.push_str(&format!("\n{line}\n"));
        }
    }
    (out, ok)
}

/// `{"file", "devices": {"<device>": {"summary": {…}, "peak": {…}, "efficiency_at_peak": …}}}`: the
/// service's answers the report is written from, every number exact.
fn numbers_of(
    path: &Path,
    opened: &Opened,
    device: Option<u32>,
    rules: &Rules,
    only: Option<Category>,
) -> (String, bool) {
    let mut devices = Map::new();
    let ok = each_device(path, opened, device, rules, |service, cx, device| {
        let summary = service.summary(cx, device)?;
        let peak = service.at(
            cx,
            AtRequest {
                only,
                ..AtRequest::at_peak(device, TOP_ALLOCATIONS as u32)
            },
        )?;
        devices.insert(
            device.to_string(),
            json!({
                "summary": summary,
                "peak": peak,
                "efficiency_at_peak": summary.efficiency_at_peak(),
            }),
        );
        Ok(())
    });
    let value: Value = json!({ "file": shown(path), "devices": devices });
    (value.to_string(), ok)
}

/// Where reports go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    /// Standard output (no `--output`, or `-`).
    Print,
    /// One file: Markdown (a path ending in `.md`), or JSON lines with `--json`.
    File(PathBuf),
    /// A folder of report pages and their Markdown, with a summary across files.
    Folder(PathBuf),
}

impl Destination {
    /// Where `--output` sends reports printed as JSON (`json`) or Markdown.
    pub fn of(output: Option<PathBuf>, json: bool) -> Self {
        let Some(path) = output.filter(|p| p.as_os_str() != "-") else {
            return Destination::Print;
        };
        let markdown = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("md"));
        if json || markdown {
            Destination::File(path)
        } else {
            Destination::Folder(path)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_ending_in_md_is_a_file_and_any_other_a_folder() {
        let of = |path: &str, json| Destination::of(Some(PathBuf::from(path)), json);
        assert_eq!(Destination::of(None, false), Destination::Print);
        assert_eq!(of("-", false), Destination::Print);
        assert_eq!(
            of("report.md", false),
            Destination::File("report.md".into())
        );
        assert_eq!(
            of("out/REPORT.MD", false),
            Destination::File("out/REPORT.MD".into())
        );
        assert_eq!(
            of("memory-report", false),
            Destination::Folder("memory-report".into())
        );
        assert_eq!(
            of("report.html", false),
            Destination::Folder("report.html".into())
        );
        assert_eq!(
            of("numbers.json", true),
            Destination::File("numbers.json".into())
        );
        assert_eq!(of("numbers", true), Destination::File("numbers".into()));
    }
}
