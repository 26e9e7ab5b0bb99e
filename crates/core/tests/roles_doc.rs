//! docs/roles.md's tables are what the core holds and says: the table of framework call sites
//! is the core's data, every entry with its source, and the table of the real snapshots is
//! what memsight finds in them. A table that drifted fails here; rewrite both with
//! `MEMSIGHT_WRITE_DOCS=1 cargo test -p memsight-core --test roles_doc`.

mod common;

use std::path::PathBuf;

use common::*;
use memsight_core::analysis::categories::frameworks::{sites, Says};
use memsight_core::analysis::categories::index::CategoryIndex;
use memsight_core::analysis::categories::labels::{phase_label, role_label};
use memsight_core::analysis::categories::rules::CompiledRules;
use memsight_core::analysis::categories::{categorise, totals_at, Role};
use memsight_core::analysis::Analysed;
use memsight_core::breakdown::physics::physics;
use memsight_core::format::workload::workload_title;

fn doc() -> PathBuf {
    repo().join("docs/roles.md")
}

/// The text between `<!-- {name}:begin -->` and `<!-- {name}:end -->`.
fn section(text: &str, name: &str) -> (usize, usize) {
    let begin = format!("<!-- {name}:begin -->\n");
    let end = format!("<!-- {name}:end -->");
    let start = text
        .find(&begin)
        .unwrap_or_else(|| panic!("docs/roles.md has no {begin:?}"))
        + begin.len();
    let stop = text[start..]
        .find(&end)
        .unwrap_or_else(|| panic!("docs/roles.md has no {end:?}"))
        + start;
    (start, stop)
}

/// Checks docs/roles.md's section `name` holds `want`, or writes it there.
fn check_section(name: &str, want: &str) {
    let text = std::fs::read_to_string(doc()).unwrap();
    let (start, stop) = section(&text, name);
    if std::env::var_os("MEMSIGHT_WRITE_DOCS").is_some() {
        let written = format!("{}{want}{}", &text[..start], &text[stop..]);
        std::fs::write(doc(), written).unwrap();
        return;
    }
    assert!(
        text[start..stop] == *want,
        "docs/roles.md's {name} table is not what the core holds: rewrite it with \
         `MEMSIGHT_WRITE_DOCS=1 cargo test -p memsight-core --test roles_doc`"
    );
}

/// A table cell: no pipes, no newlines.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

#[test]
fn the_framework_table_is_the_cores_call_sites() {
    let mut out = String::from(
        "| framework | file | function | says | why | read from | versions |\n|---|---|---|---|---|---|---|\n",
    );
    for site in sites() {
        let says = match site.says {
            Says::Role(role) => role_label(role).to_string(),
            Says::Lifetime { kept, freed } => {
                format!(
                    "{} if kept, {} if freed",
                    role_label(kept),
                    role_label(freed)
                )
            }
            Says::Phase(phase) => format!("phase: {}", phase_label(phase)),
            Says::Nothing => "passes through".to_string(),
        };
        let mut function = format!("`{}`", cell(site.function));
        if !site.lines.is_empty() {
            let lines: Vec<String> = site.lines.iter().map(i64::to_string).collect();
            function.push_str(&format!(" (lines {})", lines.join(", ")));
        }
        let file = if site.file.is_empty() {
            "(C++)".to_string()
        } else {
            format!("`{}`", cell(site.file))
        };
        out.push_str(&format!(
            "| {} | {file} | {function} | {says} | {} | {} | {} |\n",
            site.framework.name(),
            cell(site.why),
            cell(site.source),
            cell(site.versions),
        ));
    }
    check_section("frameworks", &out);
}

#[test]
fn the_real_files_table_is_what_memsight_finds_in_them() {
    let files = real_fixture_files();
    if files.is_empty() {
        return;
    }
    let gib = |b: u64| format!("{:.2}", b as f64 / (1u64 << 30) as f64);
    let share = |b: u64, of: u64| format!("{:.1}%", 100.0 * b as f64 / of.max(1) as f64);
    let mut out = String::from(
        "| file | device | peak GiB | workload | unknown | inferred | parameters | gradients | optimizer state | KV cache | CUDA graphs | training checks |\n|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for path in files {
        let name = file_name(&path);
        let Ok(snapshot) = decode_file(&path) else {
            continue;
        };
        let analysed = Analysed::new(snapshot);
        let categories = categorise(&analysed, &CompiledRules::none());
        for ((device, facts), cats) in analysed
            .snapshot
            .devices
            .iter()
            .zip(&analysed.facts)
            .zip(&categories.devices)
        {
            let used = facts.peak_allocated.bytes > 0 || !device.segments.is_empty();
            if !used {
                continue;
            }
            let peak = facts.peak_allocated.state();
            let totals = totals_at(facts, cats, peak);
            let index = CategoryIndex::new(facts, cats);
            let lookup = index.lookup(facts, cats);
            let (most, _) = lookup.peaks();
            let p = physics(lookup, cats, peak);
            let checks = if p.checks.is_empty() {
                "—".to_string()
            } else if p.steps {
                let verdict = if p.passes() { "pass" } else { "off" };
                match &p.optimizer {
                    Some(o) => format!("{verdict} ({o})"),
                    None => verdict.to_string(),
                }
            } else if p.passes() {
                "unknown ok".to_string()
            } else {
                "unknown high".to_string()
            };
            let inferred: u64 = Role::ALL.iter().map(|&r| totals.inferred(r)).sum();
            let short: String = name
                .split("__")
                .skip(1)
                .collect::<Vec<_>>()
                .join(" ")
                .trim_end_matches(".pickle")
                .trim_end_matches(".pkl")
                .chars()
                .take(60)
                .collect();
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                cell(&short),
                device.id,
                gib(totals.live_bytes),
                workload_title(&cats.workload).unwrap_or_else(|| "—".into()),
                share(totals.role(Role::Unknown), totals.live_bytes),
                share(inferred, totals.live_bytes),
                gib(p.parameters),
                gib(p.gradients),
                gib(p.optimizer_state),
                gib(most[Role::KvCache as usize]),
                gib(most[Role::CudaGraph as usize]),
                checks,
            ));
        }
    }
    check_section("real-files", &out);
}
