//! `memsight report FILE… [--device N] [--rules RULES.json] [--output PATH]`: a Markdown report
//! of each device (or of the one asked for): the summary, bytes by role and by component at the
//! peak, the peak estimate, the largest allocations, fragmentation and findings, from the
//! breakdown service the page asks and the core's words ([`format::report`]).
//!
//! Reports of several devices or files are separated by a blank line and `---`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use memsight_core::analysis::categories::rules::Rules;
use memsight_core::breakdown::categorised::Categorised;
use memsight_core::breakdown::service::{
    BreakdownAnswer, BreakdownRequest, BreakdownService, DeviceSummary, Moment, MomentBreakdown,
};
use memsight_core::format::{self, report::TOP_ALLOCATIONS};
use memsight_core::service::{Context, Service, ViewError};

use crate::open::{describe_error, for_each_file, open, Opened};

/// Between two reports: a blank line (the previous report ends with a line break), a rule and
/// another blank line.
const SEPARATOR: &str = "\n---\n\n";

/// Reads a rules file (`{"rules": [{"pattern", "regex", "role", "component"}]}`) and checks
/// that every rule compiles.
pub fn read_rules(path: &Path) -> Result<Rules, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot be read: {e}", path.display()))?;
    let rules: Rules = serde_json::from_str(&text)
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

/// Prints (or writes to `output`) the report of every device of every file, or of `device`
/// only. Fails (exit code 1) when a file cannot be read or has no such device, after reporting
/// the others.
pub fn run(
    files: &[impl AsRef<Path>],
    device: Option<u32>,
    rules: &Rules,
    output: Option<&Path>,
) -> ExitCode {
    let mut failed = false;
    let mut reports = 0usize;
    let mut report_of = |path: &Path, opened: &Opened| {
        let (text, ok) = reports_of(path, opened, device, rules);
        failed |= !ok;
        let separator = if reports > 0 && !text.is_empty() {
            // `for_each_file` already ends the previous file with a blank line.
            &SEPARATOR[1..]
        } else {
            ""
        };
        reports += usize::from(!text.is_empty());
        format!("{separator}{text}")
    };
    let code = match output {
        None => for_each_file(files, false, report_of),
        Some(output) => {
            let mut text = String::new();
            let mut unread = false;
            for path in files {
                let path = path.as_ref();
                match open(path) {
                    Ok(opened) => {
                        let report = report_of(path, &opened);
                        if !text.is_empty() && !report.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(&report);
                    }
                    Err(error) => {
                        unread = true;
                        eprintln!("{}", describe_error(path, &error));
                    }
                }
            }
            if let Err(e) = std::fs::write(output, text) {
                eprintln!("memsight: {}: cannot be written: {e}", output.display());
                return ExitCode::FAILURE;
            }
            if unread {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
    };
    if failed {
        ExitCode::FAILURE
    } else {
        code
    }
}

/// The reports of one file's devices (or of `device`), separated; `false` when a device could
/// not be reported (said on standard error).
fn reports_of(path: &Path, opened: &Opened, device: Option<u32>, rules: &Rules) -> (String, bool) {
    let analysed = &opened.analysed;
    let name = if path.as_os_str() == "-" {
        "standard input".to_string()
    } else {
        path.display().to_string()
    };
    let now = || 0.0;
    let categorised = match Categorised::new(analysed, rules.clone(), &now) {
        Ok(c) => c,
        Err(e) => {
            // The rules were checked before any file was opened.
            eprintln!(
                "memsight: rule {} cannot be used: {}",
                e.index + 1,
                e.message
            );
            return (String::new(), false);
        }
    };
    let cx = Context {
        analysed,
        categorised: &categorised,
        now: &now,
    };
    let mut service = BreakdownService::default();
    let devices = match device {
        Some(d) => vec![d],
        None => analysed.snapshot.device_ids(),
    };
    if devices.is_empty() {
        return (
            format!(
                "# Memory report: {}\n\nThis snapshot holds no device.\n",
                format::report::escape(&name)
            ),
            true,
        );
    }
    let mut out = String::new();
    let mut ok = true;
    for d in devices {
        match device_report(&mut service, &cx, d) {
            Ok((summary, peak)) => {
                if !out.is_empty() {
                    out.push_str(SEPARATOR);
                }
                out.push_str(&format::report::markdown(
                    &name,
                    &summary,
                    &peak,
                    analysed,
                    rules.rules.len(),
                ));
            }
            Err(error) => {
                ok = false;
                eprintln!(
                    "memsight: {}: {}",
                    path.display(),
                    format::problems::view_error(&error)
                );
            }
        }
    }
    (out, ok)
}

/// Asks the breakdown service for a device's summary and its breakdown at the peak.
fn device_report(
    service: &mut BreakdownService,
    cx: &Context<'_>,
    device: u32,
) -> Result<(DeviceSummary, MomentBreakdown), ViewError> {
    let mut ask = |request| service.answer(cx, request).map(|reply| reply.answer);
    let BreakdownAnswer::Summary(summary) = ask(BreakdownRequest::Summary { device })? else {
        return Err(malformed("a summary"));
    };
    let BreakdownAnswer::At(peak) = ask(BreakdownRequest::At {
        device,
        moment: Moment::Peak,
        top: TOP_ALLOCATIONS as u32,
    })?
    else {
        return Err(malformed("a breakdown at the peak"));
    };
    Ok((*summary, *peak))
}

fn malformed(wanted: &str) -> ViewError {
    ViewError::Malformed {
        detail: format!("the breakdown did not answer with {wanted}"),
    }
}

/// The output path, when one was given (`-` is standard output).
pub fn output_path(output: Option<PathBuf>) -> Option<PathBuf> {
    output.filter(|p| p.as_os_str() != "-")
}
