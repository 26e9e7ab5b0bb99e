//! Cuts each snapshot's trace at several events, as if recording had started there, and
//! prints where the roles of the cut file differ from the whole file's for the same
//! allocations (at the cut file's peak and end).
//!
//! cargo run --release -p memsight-core --example cut_roles -- FILE… [--at 0.25,0.5] [--show N]

use std::collections::BTreeMap;

use memsight_core::analysis::categories::rules::{CompiledRules, Rules};
use memsight_core::analysis::categories::signals::Phase;
use memsight_core::analysis::categories::{categorise, totals_at, Explainer, Role};
use memsight_core::analysis::Analysed;
use memsight_core::decode;
use memsight_core::format::breakdown::role_reason;
use memsight_core::model::cut::{cut_trace, Cut};
use memsight_core::model::Action;

fn main() {
    let mut files = Vec::new();
    let mut fractions: Vec<f64> = vec![];
    let mut show = 3usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--at" => {
                fractions = args
                    .next()
                    .unwrap()
                    .split(',')
                    .map(|f| f.parse().unwrap())
                    .collect()
            }
            "--show" => show = args.next().unwrap().parse().unwrap(),
            _ => files.push(arg),
        }
    }
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        let Ok(snapshot) = decode::decode_bytes(&bytes) else {
            continue;
        };
        let full = Analysed::new(snapshot);
        let rules = CompiledRules::none();
        let cats = categorise(&full, &rules);
        let name = file.rsplit('/').next().unwrap();
        for (position, device) in full.snapshot.devices.iter().enumerate() {
            let trace = &device.trace;
            let allocs = (0..trace.len())
                .filter(|&r| trace.action[r] == Action::Alloc)
                .count();
            if allocs < 10 {
                continue;
            }
            let phases = &cats.devices[position].phases.phase;
            let mut cuts: Vec<(String, usize)> = Vec::new();
            for &f in &fractions {
                cuts.push((format!("{f}"), (trace.len() as f64 * f) as usize));
            }
            if fractions.is_empty() {
                for phase in [Phase::Forward, Phase::Backward, Phase::OptimizerStep] {
                    if let Some(r) = phases.iter().position(|&p| p == phase) {
                        cuts.push((format!("{phase:?}"), r));
                        // The middle of that phase's first run.
                        let end = r + phases[r..].iter().take_while(|&&p| p == phase).count();
                        cuts.push((format!("mid-{phase:?}"), (r + end) / 2));
                    }
                }
            }
            for (label, k) in cuts {
                for how in [Cut::LateStart, Cut::Wrapped] {
                    let cut = Analysed::new(cut_trace(&full.snapshot, position, k, how));
                    let cut_cats = categorise(&cut, &rules);
                    let facts = &cut.facts[position];
                    let full_facts = &full.facts[position];
                    let peak = facts.peak_allocated.row.map_or(0, |r| r + 1);
                    let end = facts.allocated.len() as u32;
                    let mut line = format!("{name} dev{} cut {label}@{k} {how:?}:", device.id);
                    let mut off = false;
                    for (moment, state) in [("peak", peak), ("end", end)] {
                        let got = totals_at(facts, &cut_cats.devices[position], state);
                        let want = totals_at(full_facts, &cats.devices[position], state + k as u32);
                        assert_eq!(got.live_bytes, want.live_bytes, "{name} {label} {moment}");
                        let diff: u64 = Role::ALL
                            .iter()
                            .map(|&r| got.role(r).abs_diff(want.role(r)))
                            .sum::<u64>()
                            / 2;
                        line.push_str(&format!(
                            " {moment} {:.3}% off of {:.2} GiB",
                            100.0 * diff as f64 / want.live_bytes.max(1) as f64,
                            want.live_bytes as f64 / (1u64 << 30) as f64
                        ));
                        off |= diff > 0;
                    }
                    println!("{line}");
                    if off && show > 0 {
                        explain_differences(&full, &cats, &cut, &cut_cats, position, k, show);
                    }
                }
            }
        }
    }
}

/// The allocations alive at the cut's end whose roles differ, grouped by (full, cut) role.
fn explain_differences(
    full: &Analysed,
    cats: &memsight_core::analysis::categories::Categories,
    cut: &Analysed,
    cut_cats: &memsight_core::analysis::categories::Categories,
    position: usize,
    k: usize,
    show: usize,
) {
    let full_facts = &full.facts[position];
    let facts = &cut.facts[position];
    let peak = facts.peak_allocated.row.map_or(0, |r| r + 1);
    // Match allocations by address and free row (shifted), alive at the cut's peak.
    let mut by_key: BTreeMap<(u64, u32), usize> = BTreeMap::new();
    for (i, a) in full_facts.allocations.iter().enumerate() {
        if a.is_alive_at(peak + k as u32) {
            by_key.insert((a.addr, a.free_row), i);
        }
    }
    let rules = Rules::default();
    let mut explainer = Explainer::new(cut, position, &cut_cats.devices[position], &rules);
    let mut groups: BTreeMap<(Role, Role), (u64, u32, String)> = BTreeMap::new();
    for (i, a) in facts.allocations.iter().enumerate() {
        if !a.is_alive_at(peak) {
            continue;
        }
        let free = if a.free_row == u32::MAX {
            u32::MAX
        } else {
            a.free_row + k as u32
        };
        let Some(&j) = by_key.get(&(a.addr, free)) else {
            continue;
        };
        let (want, got) = (
            cats.devices[position].roles[j],
            cut_cats.devices[position].roles[i],
        );
        if want != got {
            let entry = groups.entry((want, got)).or_insert((0, 0, String::new()));
            entry.0 += a.size;
            entry.1 += 1;
            if entry.2.is_empty() {
                entry.2 = role_reason(&explainer.explain(i));
            }
        }
    }
    // Swaps between allocations of one size (a parameter labelled as its state and the state
    // as the parameter) leave the totals alike: only net changes are shown.
    let mut net: BTreeMap<Role, i64> = BTreeMap::new();
    for (&(want, got), &(bytes, _, _)) in &groups {
        *net.entry(want).or_default() -= bytes as i64;
        *net.entry(got).or_default() += bytes as i64;
    }
    let moved = |role: Role| net.get(&role).copied().unwrap_or(0) != 0;
    let mut groups: Vec<_> = groups
        .into_iter()
        .filter(|((want, got), _)| moved(*want) && moved(*got))
        .collect();
    groups.sort_by_key(|(_, (bytes, _, _))| std::cmp::Reverse(*bytes));
    for ((want, got), (bytes, n, why)) in groups.into_iter().take(show) {
        println!(
            "    {want:?} -> {got:?}: {n} allocations, {:.1} MiB: {why}",
            bytes as f64 / (1u64 << 20) as f64
        );
    }
}
