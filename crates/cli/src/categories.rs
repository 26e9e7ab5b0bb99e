//! `memsight categories FILE… [--at peak|end|EVENT] [--rules RULES.json] [--json]`: per
//! device, the bytes alive at one moment by role and by component, from the core's
//! categories (the user's rules first, as in the page).

use memsight_core::analysis::moment::Moment;
use memsight_core::model::State;
use std::path::Path;
use std::process::ExitCode;

use memsight_core::analysis::categories::index::CategoryIndex;
use memsight_core::analysis::categories::rules::CompiledRules;
use memsight_core::analysis::categories::{categorise, totals_at, Component, Role, Totals};
use memsight_core::breakdown::physics::{physics, Physics};
use memsight_core::format;
use serde_json::{json, Map, Value};

use crate::moment;
use crate::open::{for_each_file, shown};

/// Prints the categories of every file; fails (exit code 1) when any file cannot be read,
/// after printing the others.
pub fn run(
    files: &[impl AsRef<Path>],
    at: Moment,
    rules: &CompiledRules,
    as_json: bool,
) -> ExitCode {
    for_each_file(files, as_json, |path, opened| {
        let analysed = &opened.analysed;
        let categories = categorise(analysed, rules);
        let devices: Vec<Counted> = analysed
            .snapshot
            .devices
            .iter()
            .zip(&analysed.facts)
            .zip(&categories.devices)
            .map(|((device, facts), cats)| {
                let index = CategoryIndex::new(facts, cats);
                let peak = moment::state(Moment::Peak, facts).unwrap_or(State::BEFORE_TRACE);
                Counted {
                    device: device.id,
                    name: analysed.snapshot.device_name(device.id),
                    totals: moment::state(at, facts).map(|s| totals_at(facts, cats, s.get())),
                    physics: physics(index.lookup(facts, cats), cats, peak.get()),
                }
            })
            .collect();
        if as_json {
            to_json(path, at, &devices).to_string()
        } else {
            to_text(path, at, &devices)
        }
    })
}

/// One device's categories at the moment asked for, and its training terms.
struct Counted {
    device: u32,
    /// What the device is called (`cuda:0`).
    name: String,
    totals: Result<Totals, String>,
    physics: Physics,
}

/// `{"file", "devices": {"<device>": {"moment", "state", "event", "count", "live_bytes",
/// "roles": {"<role>": bytes}, "inferred_roles": {"<role>": bytes}, "components":
/// {"<component>": bytes}, "training": {…}}}}`; the roles and the components each add up to
/// `live_bytes`; `inferred_roles` holds, of each role's bytes, those deduced rather than
/// observed; `training` the most bytes parameters, gradients and optimizer state held and
/// the checks of training's arithmetic that apply.
fn to_json(path: &Path, at: Moment, devices: &[Counted]) -> Value {
    let mut out = Map::new();
    for counted in devices {
        let value = match &counted.totals {
            Ok(t) => json!({
                "moment": moment::name(at),
                "state": t.state,
                "event": t.state.checked_sub(1),
                "count": t.count,
                "live_bytes": t.live_bytes,
                "roles": Role::ALL.iter().map(|&r| (r.key().to_string(), json!(t.role(r)))).collect::<Map<_, _>>(),
                "inferred_roles": Role::ALL.iter().map(|&r| (r.key().to_string(), json!(t.inferred(r)))).collect::<Map<_, _>>(),
                "components": Component::ALL.iter().map(|&c| (c.key().to_string(), json!(t.component(c)))).collect::<Map<_, _>>(),
                "training": counted.physics,
            }),
            Err(why) => json!({"moment": moment::name(at), "error": why}),
        };
        out.insert(counted.device.to_string(), value);
    }
    json!({"file": shown(path), "devices": out})
}

fn to_text(path: &Path, at: Moment, devices: &[Counted]) -> String {
    let mut out = format!("{}\n", shown(path));
    if devices.is_empty() {
        out.push_str("This snapshot holds no device.\n");
    }
    for Counted {
        name,
        totals,
        physics,
        ..
    } in devices
    {
        let t = match totals {
            Ok(t) => t,
            Err(why) => {
                out.push_str(&format!("\n{name}: {why}\n"));
                continue;
            }
        };
        let when = match t.state {
            0 => "before the first event".to_string(),
            s => format!("after event {}", s - 1),
        };
        out.push_str(&format!(
            "\n{name} at {} ({when}): {} in {} allocations\n",
            moment::name(at),
            format::bytes(t.live_bytes),
            t.count
        ));
        let mut table = |title: &str, rows: Vec<(&str, u64, u64)>| {
            out.push_str(&format!("  {title}\n"));
            let width = rows.iter().map(|(n, _, _)| n.len()).max().unwrap_or(0);
            for (name, bytes, inferred) in rows.into_iter().filter(|&(_, b, _)| b > 0) {
                let inferred = match inferred {
                    0 => String::new(),
                    i if i == bytes => "  inferred".to_string(),
                    i => format!("  {} inferred", format::bytes(i)),
                };
                out.push_str(&format!(
                    "    {name:<width$}  {:>10}  {:>3}%{inferred}\n",
                    format::bytes(bytes),
                    format::percent_of(bytes, t.live_bytes)
                ));
            }
        };
        table(
            "by role",
            Role::ALL
                .iter()
                .map(|&r| (r.key(), t.role(r), t.inferred(r)))
                .collect(),
        );
        table(
            "by component",
            Component::ALL
                .iter()
                .map(|&c| (c.key(), t.component(c), 0))
                .collect(),
        );
        if let Some(line) = format::breakdown::training_line(physics) {
            out.push_str(&format!("  training: {line}\n"));
        }
    }
    out
}
