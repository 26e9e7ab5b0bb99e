//! `memsight overview FILE… [--json]`: per device, the overview the page shows, with the same
//! metric keys as its `data-metric` attributes and the same words.
//!
//! Files are read one after another and each is dropped before the next, so memory stays
//! bounded by the largest file's model.

use std::path::Path;
use std::process::ExitCode;

use memsight_core::analysis::categories::categorise;
use memsight_core::analysis::categories::rules::CompiledRules;
use memsight_core::analysis::categories::workload::Workload;
use memsight_core::analysis::Warning;
use memsight_core::format::workload::{workload_evidence, workload_title};
use memsight_core::format::{self, overview as words};
use memsight_core::overview::{self, Group, Overview};
use serde_json::{json, Map, Value};

use crate::open::{for_each_file, shown, Opened};

/// Prints the overview of every file; fails (exit code 1) when any file cannot be read, after
/// printing the others.
pub fn run(files: &[impl AsRef<Path>], as_json: bool) -> ExitCode {
    for_each_file(files, as_json, |path, opened| {
        let overviews = overviews(opened);
        let workloads = workloads(opened, &overviews);
        if as_json {
            to_json(path, opened, &overviews, &workloads).to_string()
        } else {
            to_text(path, opened, &overviews, &workloads)
        }
    })
}

/// What each device's run is, as the page's summary says (categories without rules).
fn workloads(opened: &Opened, overviews: &[Overview]) -> Vec<Workload> {
    let analysed = &opened.analysed;
    let categories = categorise(analysed, &CompiledRules::none());
    overviews
        .iter()
        .map(|o| {
            analysed
                .device_position(o.device)
                .map(|p| categories.devices[p].workload.clone())
                .unwrap_or_default()
        })
        .collect()
}

/// The overview of every device, ascending.
fn overviews(opened: &Opened) -> Vec<Overview> {
    let analysed = &opened.analysed;
    analysed
        .snapshot
        .device_ids()
        .into_iter()
        .filter_map(|device| overview::build(analysed, device))
        .collect()
}

/// One line of JSON: `{"file", "devices": {"<device>": {"<metric key>": value}},
/// "device_names": {"<device>": "cuda:0"}, "unknown_actions": {"<device>": {"<action>": rows}},
/// …}`; a device's key is its index, `host` for pinned host memory.
fn to_json(path: &Path, opened: &Opened, overviews: &[Overview], workloads: &[Workload]) -> Value {
    let mut devices = Map::new();
    let mut runs = Map::new();
    let mut names = Map::new();
    let mut unknown_actions = Map::new();
    let mut warnings = Map::new();
    let mut settings = Value::Null;
    let mut era = Value::Null;
    for o in overviews {
        let metrics: Map<String, Value> = o
            .metrics
            .iter()
            .map(|m| (m.key.as_str().to_string(), json!(m.value)))
            .collect();
        let key = format::device_key(o.device);
        devices.insert(key.clone(), Value::Object(metrics));
        let workload = &workloads[overviews
            .iter()
            .position(|x| x.device == o.device)
            .unwrap_or(0)];
        runs.insert(
            key.clone(),
            json!({
                "title": workload_title(workload),
                "kind": workload.kind,
                "frameworks": workload.frameworks,
                "optimizer": workload.optimizer,
                "autocast": workload.autocast,
                "evidence": workload_evidence(workload),
            }),
        );
        names.insert(key.clone(), json!(format::device(o.device_kind, o.device)));
        if !o.unknown_actions.is_empty() {
            let counts: Map<String, Value> = o
                .unknown_actions
                .iter()
                .map(|(name, n)| (name.clone(), json!(n)))
                .collect();
            unknown_actions.insert(key.clone(), Value::Object(counts));
        }
        let listed: Vec<Value> = o.warnings.iter().map(warning_json).collect();
        warnings.insert(key, Value::Array(listed));
        era = json!(words::era(&o.format));
        settings = Value::Object(
            o.allocator_settings
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect(),
        );
    }
    json!({
        "file": shown(path),
        "file_bytes": opened.file_bytes,
        "devices": devices,
        "device_names": names,
        "unknown_actions": unknown_actions,
        "warnings": warnings,
        "workload": runs,
        "era": era,
        "source": opened.analysed.snapshot.source,
        "allocator_settings": settings,
        "source_code": source_code(opened),
    })
}

/// `{"<path>": <bytes of text>}` of the program's files a capture helper added (`source_code`).
fn source_code(opened: &Opened) -> Value {
    let files: Map<String, Value> = opened
        .analysed
        .snapshot
        .source_code
        .iter()
        .map(|(path, text)| (path.clone(), json!(text.len())))
        .collect();
    Value::Object(files)
}

/// `{"kind": "oom", "message": "Out of memory…", "event": 420, …}`: the warning's kind, its
/// sentence and its numbers.
fn warning_json(warning: &Warning) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), json!(warning.kind()));
    out.insert("message".into(), json!(words::warning(warning)));
    // Serialized as `"kind"` or `{"kind": {fields}}`.
    if let Ok(Value::Object(tagged)) = serde_json::to_value(warning) {
        for (_, fields) in tagged {
            if let Value::Object(fields) = fields {
                out.extend(fields);
            }
        }
    }
    Value::Object(out)
}

/// The overview as the page lays it out: per device, its groups of metrics, then the
/// warnings, the era and the allocator settings.
fn to_text(path: &Path, opened: &Opened, overviews: &[Overview], workloads: &[Workload]) -> String {
    let mut out = format!(
        "{} · {} · decoded in {}\n",
        shown(path),
        format::bytes(opened.file_bytes),
        format::duration_us((opened.decode_ms * 1e3) as u64)
    );
    if overviews.is_empty() {
        out.push_str(
            "This snapshot holds no device: no segments and no trace entries were recorded.\n",
        );
        return out;
    }
    let width = overviews
        .iter()
        .flat_map(|o| &o.metrics)
        .map(|m| words::metric_label(m.key).chars().count())
        .max()
        .unwrap_or(0);
    let unused: Vec<_> = overviews
        .iter()
        .filter(|o| o.unused)
        .map(|o| (o.device_kind, o.device))
        .collect();
    for (o, workload) in overviews.iter().zip(workloads) {
        if o.unused {
            continue;
        }
        out.push_str(&format!("\n{}\n", format::device(o.device_kind, o.device)));
        if let Some(title) = workload_title(workload) {
            out.push_str(&format!("  The run: {title}\n"));
            for line in workload_evidence(workload) {
                out.push_str(&format!("    {line}\n"));
            }
        }
        for group in Group::ALL {
            let metrics: Vec<_> = o
                .metrics
                .iter()
                .filter(|m| m.key.group() == group)
                .collect();
            if metrics.is_empty() {
                continue;
            }
            out.push_str(&format!("  {}\n", words::group_title(group)));
            for m in metrics {
                let label = words::metric_label(m.key);
                let pad = width - label.chars().count();
                out.push_str(&format!(
                    "    {label}{}  {}\n",
                    " ".repeat(pad),
                    words::metric_value(m)
                ));
            }
        }
        if !o.unknown_actions.is_empty() {
            out.push_str(&format!(
                "  {}\n",
                words::unknown_actions(&o.unknown_actions)
            ));
        }
        for w in &o.warnings {
            out.push_str(&format!("  ! {}\n", words::warning(w)));
        }
    }
    if !unused.is_empty() {
        out.push_str(&format!("\n{}\n", words::unused_devices(&unused)));
    }
    let first = &overviews[0];
    out.push_str(&format!("\nFormat: {}\n", words::era(&first.format)));
    if first.allocator_settings.is_empty() {
        out.push_str(&format!(
            "Allocator settings: {}\n",
            words::no_allocator_settings(&first.format)
        ));
    } else {
        out.push_str("Allocator settings:\n");
        for (name, value) in &first.allocator_settings {
            out.push_str(&format!("  {name} = {value}\n"));
        }
    }
    out
}
