//! Bytes by source line (`analysis::lines`) on every real snapshot, against the table: at each
//! device's peak, the bytes made at a line are the table's call-site group of that line, and a
//! line's bytes passing through hold those made there.

mod common;

use common::*;
use memsight_core::analysis::categories::categorised::Categorised;
use memsight_core::analysis::lines::lines_of;
use memsight_core::analysis::Analysed;
use memsight_core::table::columns::{DeviceColumns, Rows};
use memsight_core::table::filter::select;
use memsight_core::table::groups::{group, NO_FRAME};
use memsight_core::table::{Filter, GroupBy, Scope};

#[test]
fn bytes_made_at_a_line_are_its_call_site_group_at_the_peak() {
    let files = real_fixture_files();
    if files.is_empty() {
        eprintln!("skipped: no real snapshots (../shared/fixtures/real)");
        return;
    }
    let mut lines_checked = 0;
    for path in files {
        let Ok(snapshot) = decode_file(&path) else {
            continue;
        };
        let analysed = Analysed::new(snapshot);
        let categorised = Categorised::new(&analysed, Default::default(), &|| 0.0).unwrap();
        for (position, (device, facts)) in analysed
            .snapshot
            .devices
            .iter()
            .zip(&analysed.facts)
            .enumerate()
        {
            let columns = DeviceColumns::new(&analysed.snapshot, device, facts);
            let rows = Rows {
                snapshot: &analysed.snapshot,
                device,
                facts,
                categories: categorised.device(position),
                columns: &columns,
                block_sizes: None,
            };
            let peak = facts.peak_allocated.state();
            let chosen = select(&rows, Scope::State(peak), &Filter::default())
                .unwrap()
                .chosen;
            let files = lines_of(&analysed.snapshot, device, facts, &chosen);
            let made: u64 = files.iter().map(|f| f.made.bytes).sum();
            for site in group(&rows, &chosen, GroupBy::CallSite).roots {
                if site.label == NO_FRAME {
                    continue;
                }
                let mut parts = site.label.rsplitn(3, ':');
                let (_, line, file) = (parts.next(), parts.next(), parts.next());
                let (Some(line), Some(file)) = (line.and_then(|l| l.parse::<i64>().ok()), file)
                else {
                    continue;
                };
                // A source view shows Python files; a native call site has no line there.
                if !file.ends_with(".py") {
                    continue;
                }
                let name = format!("{} device {}: {}", path.display(), device.id, site.label);
                let at = files
                    .iter()
                    .find(|f| f.path == file)
                    .and_then(|f| f.lines.iter().find(|l| l.line == line))
                    .unwrap_or_else(|| panic!("{name}: no line"));
                assert_eq!(at.made.count, site.count, "{name}");
                assert_eq!(at.made.bytes, site.requested_bytes, "{name}");
                assert!(at.through.bytes >= at.made.bytes, "{name}");
                lines_checked += 1;
            }
            // Every allocation made at a line is counted once among the files' lines.
            let made_at_lines: u64 = files
                .iter()
                .flat_map(|f| &f.lines)
                .map(|l| l.made.bytes)
                .sum();
            assert_eq!(made, made_at_lines);
            // A file holds each allocation once: at least its busiest line, at most the scope.
            let scope: u64 = chosen
                .iter()
                .map(|&i| facts.allocations.at(i as usize).size)
                .sum();
            for f in &files {
                let busiest = f.lines.iter().map(|l| l.through.bytes).max().unwrap_or(0);
                assert!(
                    busiest <= f.through.bytes && f.through.bytes <= scope,
                    "{}",
                    f.path
                );
            }
        }
    }
    assert!(lines_checked > 100, "{lines_checked} call sites checked");
}
