//! `memsight check FILE… [--max-peak SIZE] [--max-reserved SIZE] [--min-efficiency PCT]
//! [--max-unknown PCT] [--max ROLE=SIZE …] [--baseline BASELINE] [--max-growth PCT]
//! [--write-baseline FILE] [--markdown|--json]`: memory budgets for CI. Every device of every
//! file (snapshots or digests) against the limits, exit code 0 when all are within them and
//! 1 otherwise, one line per breach in words a reviewer reads (the core's
//! [`format::check`](memsight_core::format::check)). A baseline is digests one after another
//! (what `--write-baseline` and `memsight digest` write), a folder of digests, a snapshot, or
//! an earlier `memsight report --json` (its peaks, roles, components and call sites).

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use memsight_core::analysis::categories::rules::Rules;
use memsight_core::breakdown::service::{DeviceSummary, MomentBreakdown};
use memsight_core::compare::budget::{check, Budgets, RoleBytes, PPM_PER_PERCENT};
use memsight_core::compare::digest::portable;
use memsight_core::compare::digest_file::{DigestFile, MAX_DIGESTS_BYTES};
use memsight_core::compare::{Digest, Keyed, NormalisedCurve};
use memsight_core::format::check as words;
use memsight_core::model::text::natural_cmp;
use memsight_core::overview::{Metric, MetricKey};
use memsight_core::table::groups::NO_FRAME;

use crate::digest::read_as_digests;
use crate::escape::{escape_control, escape_json};
use crate::open::describe_error;
use crate::parallel::parallel_map;
use crate::table::{parse_role, parse_size};
use crate::written::{refuse_unwritable, write_regular};

/// How the verdict is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckOutput {
    /// One line per breach, then the verdict.
    Text,
    /// The verdict, the breaches and a table of every device's figures (for a job summary).
    Markdown,
    /// The verdict and every figure checked, exact.
    Json,
}

/// Exit code when a file or the baseline cannot be read: there is no verdict.
const CANNOT_CHECK: u8 = 2;

/// A percentage as typed (`5`, `12.5`, `5%`), in parts per million.
pub fn parse_percent(text: &str) -> Result<u64, String> {
    let number = text.trim().trim_end_matches('%').trim();
    match number.parse::<f64>() {
        Ok(value) if (0.0..=100_000.0).contains(&value) => {
            Ok((value * PPM_PER_PERCENT as f64).round() as u64)
        }
        _ => Err(format!("'{text}' is not a percentage: say 5 or 12.5")),
    }
}

/// A role's limit as typed: `activations=12GiB`.
pub fn parse_role_limit(text: &str) -> Result<RoleBytes, String> {
    let (role, size) = text
        .split_once('=')
        .ok_or_else(|| format!("'{text}' is not ROLE=SIZE: say activations=12GiB"))?;
    Ok(RoleBytes {
        role: parse_role(role.trim())?,
        bytes: parse_size(size)?,
    })
}

/// Checks `files` against `budgets` (and the baseline), writes the baseline when asked, and
/// prints the verdict.
pub fn run(
    files: &[PathBuf],
    budgets: &Budgets,
    baseline: Option<&Path>,
    write_baseline: Option<&Path>,
    rules: &Rules,
    output: CheckOutput,
    jobs: usize,
) -> ExitCode {
    if !budgets.any() && write_baseline.is_none() {
        say!(
            "memsight check: no budget given: say --max-peak, --max-reserved, --min-efficiency, \
             --max-unknown, --max ROLE=SIZE or --baseline with --max-growth (or \
             --write-baseline to only write one)"
        );
        return ExitCode::from(CANNOT_CHECK);
    }
    if let Err(code) = refuse_unwritable(write_baseline) {
        return code;
    }
    let read = parallel_map(files, jobs, |path| {
        read_as_digests(path, rules, true, files.len() == 1)
    });
    let mut digests: Vec<DigestFile> = Vec::new();
    let mut unreadable = false;
    for (path, result) in files.iter().zip(read) {
        match result {
            Ok(read) => digests.extend(read),
            Err(report) => {
                unreadable = true;
                say!("{}", describe_error(path, &report));
            }
        }
    }
    if unreadable {
        say!("memsight check: not every file could be read, so there is no verdict");
        return ExitCode::from(CANNOT_CHECK);
    }
    let baseline = match baseline.map(|path| read_baseline(path, rules)).transpose() {
        Ok(baseline) => baseline.unwrap_or_default(),
        Err(why) => {
            say!("{why}");
            return ExitCode::from(CANNOT_CHECK);
        }
    };
    if let Some(path) = write_baseline {
        let text: String = digests.iter().map(DigestFile::to_json).collect();
        if let Err(e) = write_regular(path, escape_json(&text).as_bytes()) {
            say!(
                "memsight: {}: the baseline cannot be written: {e}",
                path.display()
            );
            return ExitCode::from(CANNOT_CHECK);
        }
        say!(
            "Wrote the baseline of {} to {}",
            memsight_core::format::counted(digests.len() as u64, "file", "files"),
            path.display()
        );
    }
    let verdict = check(&digests, &baseline, budgets);
    match output {
        CheckOutput::Json => println!(
            "{}",
            escape_json(&serde_json::to_string(&verdict).expect("a verdict serializes"))
        ),
        CheckOutput::Markdown => print!("{}", escape_control(&words::markdown(&verdict))),
        CheckOutput::Text => {
            for line in words::breach_lines(&verdict)
                .into_iter()
                .chain(words::oom_lines(&verdict))
                .chain(words::unmatched_lines(&verdict))
                .chain(words::headroom_lines(&verdict))
            {
                println!("{}", escape_control(&line));
            }
            println!("{}", escape_control(&words::verdict_line(&verdict)));
        }
    }
    if verdict.pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The baseline's digests: a file of digests, a folder of them (`*.json`, in natural name
/// order), a
/// snapshot, or a report's numbers (`memsight report --json`).
fn read_baseline(path: &Path, rules: &Rules) -> Result<Vec<DigestFile>, String> {
    let paths = if path.is_dir() {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| {
                format!(
                    "memsight: {}: the baseline cannot be read: {e}",
                    path.display()
                )
            })?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        paths.sort_by(|a, b| natural_cmp(&a.to_string_lossy(), &b.to_string_lossy()));
        if paths.is_empty() {
            return Err(format!(
                "memsight: {}: the baseline folder holds no digest (*.json)",
                path.display()
            ));
        }
        paths
    } else {
        vec![path.to_path_buf()]
    };
    let mut out = Vec::new();
    for path in paths {
        if let Some(report) = report_as_baseline(&path) {
            out.push(report);
            continue;
        }
        let read = read_as_digests(&path, rules, true, true)
            .map_err(|report| format!("{} (the baseline)", describe_error(&path, &report)))?;
        out.extend(read);
    }
    Ok(out)
}

/// An earlier report's numbers (`memsight report --json`: `{"file", "devices": {"<device>":
/// {"summary", "peak"}}}`) as a baseline: each device's peaks, roles, components and call sites
/// at its peak, which is what growth is checked on. `None` for any other file.
fn report_as_baseline(path: &Path) -> Option<DigestFile> {
    let mut head = [0u8; 1];
    let mut file = crate::open::open_regular(path).ok()?;
    // A report is JSON: a pickle (the usual baseline snapshot) is not read twice.
    if file.read(&mut head).ok()? != 1 || head[0] != b'{' {
        return None;
    }
    // Parsed as it is read, what a report does not hold skipped unkept, and no further than
    // any report goes: a snapshot's JSON form, as large as it may be, is never held whole
    // here (it is then decoded as a snapshot).
    let within = BufReader::new(head.chain(file).take(MAX_DIGESTS_BYTES));
    let report: ReportNumbers = serde_json::from_reader(within).ok()?;
    let mut devices = Vec::new();
    for (device, numbers) in &report.devices {
        let device: u32 = device.parse().ok()?;
        devices.push(digest_of_report(device, &numbers.summary, &numbers.peak));
    }
    let name = report.file.as_str();
    devices.sort_by_key(|d| d.device);
    let default_device = devices
        .iter()
        .max_by_key(|d| d.peak_bytes)
        .map(|d| d.device);
    Some(DigestFile::new(
        name,
        &format!("memsight report --json ({})", path.display()),
        0,
        default_device,
        devices,
    ))
}

/// What a baseline reads of `memsight report --json`; the rest is skipped.
#[derive(serde::Deserialize)]
struct ReportNumbers {
    file: String,
    devices: std::collections::BTreeMap<String, DeviceNumbers>,
}

/// A device's numbers in a report, as a baseline reads them.
#[derive(serde::Deserialize)]
struct DeviceNumbers {
    summary: DeviceSummary,
    peak: MomentBreakdown,
}

/// A device's digest from a report's numbers: no modules and no curve (a report holds none).
fn digest_of_report(device: u32, summary: &DeviceSummary, peak: &MomentBreakdown) -> Digest {
    let metric = |key, value| Metric { key, value };
    let mut metrics = vec![
        metric(MetricKey::PeakAllocatedBytes, summary.peak_allocated),
        metric(MetricKey::ReservedAtPeakBytes, summary.reserved_at_peak),
        metric(MetricKey::PeakReservedBytes, summary.peak_reserved),
    ];
    if let Some(ppm) = summary.efficiency_at_peak_ppm {
        metrics.push(metric(MetricKey::EfficiencyAtPeakPpm, ppm));
    }
    let call_sites = peak
        .call_sites
        .iter()
        .map(|site| {
            let label = site.name.clone().unwrap_or_else(|| NO_FRAME.to_string());
            Keyed {
                key: portable(&label),
                label,
                depth: 0,
                user: site.user,
                count: site.count,
                bytes: site.bytes,
                occurrences: 1,
            }
        })
        .collect();
    Digest {
        device,
        device_kind: Default::default(),
        metrics,
        unused: false,
        peak_state: summary.peak_state,
        at_phase: None,
        peak_phase: None,
        peak_iteration: None,
        peak_bytes: summary.peak_allocated,
        roles: peak.roles.clone(),
        inferred_roles: peak.inferred_roles.clone(),
        components: peak.components.clone(),
        generation: peak.generation,
        call_sites,
        modules: Vec::new(),
        curve: NormalisedCurve::default(),
        oom: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memsight_core::analysis::categories::Role;

    #[test]
    fn percentages_and_role_limits_read_as_typed() {
        assert_eq!(parse_percent("5"), Ok(50_000));
        assert_eq!(parse_percent("12.5%"), Ok(125_000));
        assert!(parse_percent("five").is_err());
        assert!(parse_percent("-3").is_err());
        assert_eq!(
            parse_role_limit("activations=1.5GiB"),
            Ok(RoleBytes {
                role: Role::Activations,
                bytes: 3 << 29
            })
        );
        assert!(parse_role_limit("activations").is_err());
        assert!(parse_role_limit("weights=1GiB").is_err());
    }
}
