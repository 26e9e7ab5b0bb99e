//! `memsight phases FILE… [--device N] [--rules RULES.json] [--markdown | --json]`: the phase
//! report the page shows — each `record_function` scope (or, without any, each inferred phase
//! of each iteration) with the allocated bytes before and after it, its delta, what it
//! allocated and freed, its peak and the role holding most there — from the core's service.

use std::path::Path;
use std::process::ExitCode;

use memsight_core::analysis::categories::rules::Rules;
use memsight_core::format::{self, phases as words};
use memsight_core::phases::service::{PhasesRequest, PhasesService};
use memsight_core::service::Service;
use serde_json::{json, Map};

use crate::open::{for_each_file, shown, with_context};

/// Prints the report of every device of every file (or of `device`); fails (exit code 1)
/// when a file cannot be read or has no such device.
pub fn run(
    files: &[impl AsRef<Path>],
    device: Option<u32>,
    rules: &Rules,
    as_json: bool,
) -> ExitCode {
    let mut failed = false;
    let code = for_each_file(files, as_json, |path, opened| {
        with_context(opened, rules, device, |cx, devices| {
            let mut service = PhasesService;
            let mut text = String::new();
            let mut json_devices = Map::new();
            for d in devices {
                let report = match service.answer(cx, PhasesRequest { device: d }) {
                    Ok(reply) => reply.answer,
                    Err(e) => {
                        failed = true;
                        say!(
                            "memsight: {}: {}",
                            path.display(),
                            format::problems::view_error(&e)
                        );
                        continue;
                    }
                };
                if as_json {
                    json_devices.insert(
                        d.to_string(),
                        serde_json::to_value(&report).expect("reports serialize"),
                    );
                } else {
                    text.push_str(&format!(
                        "## {} · {}\n\n",
                        shown(path),
                        cx.analysed.snapshot.device_name(d)
                    ));
                    text.push_str(&words::markdown(&report));
                    text.push('\n');
                }
            }
            if as_json {
                json!({"file": shown(path), "devices": json_devices}).to_string()
            } else {
                text
            }
        })
    });
    if failed {
        ExitCode::FAILURE
    } else {
        code
    }
}
