//! `memsight table FILE… [--device N] [--scope peak|end|all|EVENT] [--group-by KEY] [--sort
//! COLUMN[:asc|desc]] [filters] [--csv | --json] [--limit N]`: the allocations table of each
//! device as the page shows it — its rows (or groups), totals and order — from the core's
//! table service.
//!
//! Text shows the first `--limit` lines in binary units; `--csv` writes every row (or every
//! group) with exact values, as the page's download does; `--json` prints one object per file
//! with the totals and every row or group, exact.

use std::path::Path;
use std::process::ExitCode;

use memsight_core::analysis::categories::rules::Rules;
use memsight_core::analysis::categories::{Component, Explainer, Role};
use memsight_core::format::breakdown::{component_label, phase_label, role_label, role_reason};
use memsight_core::format::{self, table::cell};
use memsight_core::model::{Row, State};
use memsight_core::table::groups::{every_group, share};
use memsight_core::table::service::{Table, TableService};
use memsight_core::table::{Column, Scope, Sort, TableQuery};
use serde_json::{json, Map, Value};

use crate::open::{for_each_file, shown, with_context, Opened};

/// What is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableOutput {
    Text { limit: usize },
    Csv,
    Json,
}

/// Reads `peak`, `end`, `all` or an event number (the state after it).
pub fn parse_scope(text: &str) -> Result<Scope, String> {
    match text {
        "peak" => Ok(Scope::Peak),
        "end" => Ok(Scope::End),
        "all" => Ok(Scope::All),
        n => n
            .parse::<u32>()
            .map(|event| Scope::State(State::after(Row::new(event))))
            .map_err(|_| format!("'{n}' is not a scope: say peak, end, all, or an event number")),
    }
}

/// Reads `COLUMN`, `COLUMN:asc` or `COLUMN:desc` (descending unless asked).
pub fn parse_sort(text: &str) -> Result<Sort, String> {
    let (key, order) = text.split_once(':').unwrap_or((text, "desc"));
    let column = Column::ALL
        .into_iter()
        .find(|c| c.key() == key)
        .ok_or_else(|| {
            let keys: Vec<&str> = Column::ALL.iter().map(|c| c.key()).collect();
            format!("'{key}' is not a column: say one of {}", keys.join(", "))
        })?;
    let descending = match order {
        "desc" => true,
        "asc" => false,
        other => return Err(format!("'{other}' is not an order: say asc or desc")),
    };
    Ok(Sort { column, descending })
}

/// Reads a size as the page's filter fields do (`1048576`, `512KiB`, `1.5MiB`).
pub fn parse_size(text: &str) -> Result<u64, String> {
    memsight_core::table::filter::parse_bytes(text)?.ok_or_else(|| "a size is needed".to_string())
}

/// Reads a role key (`activations`).
pub fn parse_role(text: &str) -> Result<Role, String> {
    Role::ALL
        .into_iter()
        .find(|r| r.key() == text)
        .ok_or_else(|| format!("'{text}' is not a role"))
}

/// Reads a component key (`attention`).
pub fn parse_component(text: &str) -> Result<Component, String> {
    Component::ALL
        .into_iter()
        .find(|c| c.key() == text)
        .ok_or_else(|| format!("'{text}' is not a component"))
}

/// Prints the table of every device of every file (or of `device`); fails (exit code 1) when
/// a file cannot be read, a device is missing, or the filter cannot be used.
pub fn run(
    files: &[impl AsRef<Path>],
    device: Option<u32>,
    rules: &Rules,
    query: &TableQuery,
    output: TableOutput,
) -> ExitCode {
    let mut failed = false;
    let code = for_each_file(files, output == TableOutput::Json, |path, opened| {
        let (text, ok) = tables_of(path, opened, device, rules, query, output);
        failed |= !ok;
        text
    });
    if failed {
        ExitCode::FAILURE
    } else {
        code
    }
}

fn tables_of(
    path: &Path,
    opened: &Opened,
    device: Option<u32>,
    rules: &Rules,
    query: &TableQuery,
    output: TableOutput,
) -> (String, bool) {
    with_context(opened, rules, device, |cx, devices| {
        let mut service = TableService::default();
        let mut ok = true;
        let mut text = String::new();
        let mut json_devices = Map::new();
        for d in devices {
            let table = match service.table(cx, d, query) {
                Ok(table) => table,
                Err(error) => {
                    ok = false;
                    say(path, &format::problems::view_error(&error));
                    continue;
                }
            };
            if let Some(problem) = table.problem {
                ok = false;
                say(path, problem);
                continue;
            }
            match output {
                TableOutput::Csv => text.push_str(&csv(&table)),
                TableOutput::Json => {
                    let position = cx.analysed.device_position(d).unwrap_or_default();
                    let mut explainer = Explainer::new(
                        cx.analysed,
                        position,
                        cx.categorised.device(position),
                        cx.categorised.rules(),
                    );
                    json_devices.insert(format::device_key(d), as_json(&table, &mut explainer));
                }
                TableOutput::Text { limit } => {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    let name = cx.analysed.snapshot.device_name(d);
                    text.push_str(&as_text(path, &name, query, &table, limit));
                }
            }
        }
        if output == TableOutput::Json {
            text = json!({ "file": shown(path), "devices": json_devices }).to_string();
        }
        (text, ok)
    })
}

fn say(path: &Path, problem: &str) {
    say!("memsight: {}: {problem}", path.display());
}

fn csv(table: &Table<'_>) -> String {
    match table.tree {
        None => format::table::rows_csv(&table.rows, table.sorted),
        Some(tree) => format::table::groups_csv(tree, table.totals.scope_bytes).0,
    }
}

/// `{"totals": {…}, "rows": [{…}]}` or `{"totals", "groups": [{"path": […], …}]}`; each row
/// with its `role_reason` in words.
fn as_json(table: &Table<'_>, explainer: &mut Explainer<'_>) -> Value {
    match table.tree {
        None => {
            let rows: Vec<Value> = table
                .sorted
                .iter()
                .map(|&i| {
                    let r = table.rows.row(i);
                    let compiled = r.compiled_node.as_deref().map(format::compiled_node);
                    let mut row = serde_json::to_value(r).expect("rows serialize");
                    let reason = explainer.explain(i as usize);
                    row["role_reason"] = json!(role_reason(&reason));
                    if let Some(words) = compiled {
                        row["compiled"] = json!(words);
                    }
                    row
                })
                .collect();
            json!({ "totals": table.totals, "rows": rows })
        }
        Some(tree) => {
            let groups: Vec<Value> = every_group(tree)
                .into_iter()
                .map(|(path, node)| {
                    json!({
                        "path": path,
                        "label": node.label,
                        "count": node.count,
                        "requested_bytes": node.requested_bytes,
                        "size_bytes": node.size_bytes,
                        "share": share(node.requested_bytes, table.totals.scope_bytes),
                        "occurrences": node.occurrences,
                    })
                })
                .collect();
            json!({ "totals": table.totals, "groups": groups })
        }
    }
}

fn scope_name(scope: Scope) -> String {
    match scope {
        Scope::Peak => "alive at the peak".into(),
        Scope::End => "alive at the end".into(),
        Scope::State(s) => format!("alive {}", format::after_state(s)),
        Scope::Window { x0, x1, .. } => format!("allocated in {x0}..{x1}"),
        Scope::All => "every allocation".into(),
    }
}

fn as_text(
    path: &Path,
    device: &str,
    query: &TableQuery,
    table: &Table<'_>,
    limit: usize,
) -> String {
    let t = table.totals;
    let mut out = format!(
        "{} — {device}, {}: {} allocations, {} requested ({} in blocks), {:.1}% of {} in scope\n",
        shown(path),
        scope_name(query.scope),
        format::count(t.count as u64),
        format::bytes(t.requested_bytes),
        format::bytes(t.size_bytes),
        t.share * 100.0,
        format::bytes(t.scope_bytes),
    );
    match table.tree {
        None => {
            out.push_str(&format!(
                "{:>10} {:>10} {:>14} {:<20} {:<14} {:<15} {:>9} {:>9} top frame\n",
                "size", "requested", "address", "role", "component", "phase", "alloc", "free"
            ));
            for &i in table.sorted.iter().take(limit) {
                let r = table.rows.row(i);
                let event =
                    |e: Option<Row>, none: &str| e.map_or(none.to_string(), |e| e.to_string());
                out.push_str(&format!(
                    "{:>10} {:>10} {:>14} {:<20} {:<14} {:<15} {:>9} {:>9} {}\n",
                    format::bytes(r.size_bytes),
                    format::bytes(r.requested_bytes),
                    format!("0x{:x}", r.address),
                    role_label(r.role),
                    component_label(r.component),
                    r.phase.map_or("Before the trace", phase_label),
                    event(r.alloc_event, "before"),
                    event(r.free_event, "alive"),
                    match (&r.top_frame, r.alloc_event, r.free_event) {
                        (Some(frame), None, Some(_)) =>
                            format!("(made before the trace) freed by {frame}"),
                        (Some(frame), _, _) => frame.clone(),
                        (None, _, _) => "(no frame)".into(),
                    } + &format::table::row_notes(&r),
                ));
            }
            if table.sorted.len() > limit {
                out.push_str(&format!(
                    "… {} more rows (--limit)\n",
                    table.sorted.len() - limit
                ));
            }
        }
        Some(tree) => {
            let groups = every_group(tree);
            for (path, node) in groups.iter().take(limit) {
                out.push_str(&format!(
                    "{:>10} {:>7} {:>6.1}%  {}{}\n",
                    format::bytes(node.requested_bytes),
                    format::count(node.count as u64),
                    share(node.requested_bytes, t.scope_bytes) * 100.0,
                    "  ".repeat(path.len() - 1),
                    cell(&node.label),
                ));
            }
            if groups.len() > limit {
                out.push_str(&format!(
                    "… {} more groups (--limit)\n",
                    groups.len() - limit
                ));
            }
        }
    }
    out
}
