//! The timeline's elements against the replay's curves on every real snapshot and hand-made
//! fixture: at every sampled state, the allocations alive add up to the allocated curve and
//! the segments alive to the reserved curve, and a layout's live stack agrees with them.

mod common;

use memsight_core::analysis::elements::{AllocationElements, Elements, SegmentElements};
use memsight_core::analysis::Analysed;
use memsight_core::timeline::layout::{Cursor, TimelineLayout};

/// Up to this many states are checked per device, evenly spread (plus the peaks).
const SAMPLES: u32 = 400;

fn alive_bytes(elements: &impl Elements, state: u32) -> u64 {
    (0..elements.count())
        .filter(|&i| elements.start(i) <= state && state < elements.end(i))
        .map(|i| elements.size(i))
        .sum()
}

fn check(name: &str, analysed: &Analysed) {
    for (device, facts) in analysed.snapshot.devices.iter().zip(&analysed.facts) {
        let states = device.trace.len() as u32 + 1;
        let step = (states / SAMPLES).max(1);
        let mut sampled: Vec<u32> = (0..states).step_by(step as usize).collect();
        sampled.push(states - 1);
        sampled.extend(facts.peak_allocated.row.map(|r| r + 1));
        sampled.extend(facts.peak_reserved.row.map(|r| r + 1));

        let allocations = AllocationElements::new(facts);
        let layout = TimelineLayout::build(&allocations, allocations.count());
        let mut cursor = Cursor::default();
        let reserved_consistent = !facts
            .warnings
            .iter()
            .any(|f| f.kind() == "reserved-inconsistent");
        let segments = SegmentElements::build(device, facts);
        for &state in &sampled {
            let allocated = match state {
                0 => facts.baseline_allocated,
                s => facts.allocated[s as usize - 1],
            };
            let alive = alive_bytes(&allocations, state);
            assert_eq!(
                alive, allocated,
                "{name} device {}: allocations at state {state}",
                device.id
            );
            cursor.seek(&layout, state);
            assert_eq!(
                cursor.drawn_total, alive,
                "{name}: the layout's stack at state {state}"
            );
            if reserved_consistent {
                let reserved = facts.reserved_after(state.checked_sub(1));
                assert_eq!(
                    alive_bytes(&segments, state),
                    reserved,
                    "{name} device {}: segments at state {state}",
                    device.id
                );
            }
        }
    }
}

#[test]
fn elements_add_up_to_the_curves_on_hand_made_fixtures() {
    let manifest = common::read_json(&common::edge("manifest.json"));
    let mut checked = 0;
    for (file, _) in manifest.as_object().expect("manifest is an object") {
        let Ok(snapshot) = common::decode_file(&common::edge(file)) else {
            continue; // the fixtures of bad input
        };
        check(file, &Analysed::new(snapshot));
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} fixtures decoded");
}

#[test]
fn elements_add_up_to_the_curves_on_real_snapshots() {
    let files = common::real_fixture_files();
    if files.is_empty() {
        eprintln!("skipped: no real snapshots beside the repository (../shared/fixtures/real)");
        return;
    }
    for path in files {
        let snapshot = common::decode_file(&path).expect("real snapshots decode");
        check(&common::file_name(&path), &Analysed::new(snapshot));
    }
}
