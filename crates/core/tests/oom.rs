//! Out-of-memory snapshots: the device shown first, and what an OOM's detail says, against
//! the values CPython computed (`tests/expectations/*.json`).

mod common;

use common::*;
use memsight_core::analysis::{Analysed, DeviceChoice};
use memsight_core::timeline::inspect::oom_detail;
use serde_json::Value as Json;

/// A real snapshot of three devices whose OOM is on cuda:1.
const MULTI_DEVICE_OOM: &str = "Constructor-Sun__code_location__memory_snapshot.pickle";

fn check_ooms(name: &str, analysed: &Analysed, expected: &Json) {
    let devices = expected["devices"].as_object().unwrap();
    let with_oom: Vec<u32> = devices
        .iter()
        .filter(|(_, d)| d.get("oom_index").is_some())
        .map(|(k, _)| k.parse().unwrap())
        .collect();
    assert!(!with_oom.is_empty(), "{name} has an OOM");
    let (first, choice) = analysed.default_device().unwrap();
    assert_eq!(first, with_oom[0], "{name} opens on its OOM's device");
    let want = &devices[&first.to_string()];
    let event = want["oom_index"].as_u64().unwrap() as u32;
    assert_eq!(choice, DeviceChoice::Oom { event });

    let (device, facts) = analysed.device_facts(first).unwrap();
    let oom = oom_detail(&analysed.snapshot, device, facts, 0).expect("the first OOM");
    assert_eq!(oom.event.get(), event);
    assert_eq!(oom.state.get(), event + 1);
    assert_eq!(oom.requested, device.trace.size[event as usize]);
    assert_eq!(
        oom.allocated,
        want["allocated_at_oom_bytes"].as_u64().unwrap()
    );
    assert_eq!(
        oom.reserved,
        want["reserved_at_oom_bytes"].as_u64().unwrap()
    );
    // What was alive adds up to what was allocated, largest first.
    assert_eq!(oom.live.bytes, oom.allocated, "{name}");
    assert!(oom.live.count > 0);
    assert!(oom.live.largest.windows(2).all(|w| w[0].size >= w[1].size));
    assert_eq!(
        oom.live.largest.first().map(|a| a.size),
        facts
            .allocations
            .iter()
            .filter(|a| {
                let start = if a.alloc_row == u32::MAX {
                    0
                } else {
                    a.alloc_row + 1
                };
                let end = if a.free_row == u32::MAX {
                    u32::MAX
                } else {
                    a.free_row + 1
                };
                start <= oom.state.get() && oom.state.get() < end
            })
            .map(|a| a.size)
            .max()
    );
    let site_bytes: u64 = oom.live.call_sites.iter().map(|s| s.bytes).sum();
    assert!(site_bytes <= oom.live.bytes);
    assert!(oom
        .live
        .call_sites
        .windows(2)
        .all(|w| w[0].bytes >= w[1].bytes));
    // There is no second OOM past the count.
    let count = (0..device.trace.len())
        .filter(|&r| device.trace.action[r] == memsight_core::model::Action::Oom)
        .count() as u32;
    assert!(oom_detail(&analysed.snapshot, device, facts, count).is_none());
}

#[test]
fn a_multi_device_oom_opens_on_its_device_and_explains_itself() {
    let Some(dir) = real_fixtures_dir() else {
        return;
    };
    let path = dir.join(MULTI_DEVICE_OOM);
    if !path.exists() {
        eprintln!("skipping: {MULTI_DEVICE_OOM} not found");
        return;
    }
    let expectations = read_json(&repo().join("tests/expectations/real.json"));
    let analysed = Analysed::new(decode_file(&path).unwrap());
    check_ooms(MULTI_DEVICE_OOM, &analysed, &expectations[MULTI_DEVICE_OOM]);
    // Its OOM has a stack, named by the user's code.
    let (device, facts) = analysed.device_facts(1).unwrap();
    let oom = oom_detail(&analysed.snapshot, device, facts, 0).unwrap();
    assert!(!oom.frames.is_empty());
    assert!(oom.top_frame.is_some());
}

#[test]
fn the_hand_made_oom_fixture_explains_itself() {
    let expectations = read_json(&repo().join("tests/expectations/edge.json"));
    let analysed = Analysed::new(decode_file(&edge("oom.pickle")).unwrap());
    check_ooms("oom.pickle", &analysed, &expectations["oom.pickle"]);
}

/// After an out-of-memory error the exception unwinds and frees what the stack held. Those
/// frees are not the phase the error broke ending: on the four-GPU run, cuda:1 (whose forward
/// hit the OOM at event 421, the unwinding freeing at events 422–595) must give a call site's
/// tensors the role cuda:2 (the same code, no OOM) gives them, and say the unwinding freed them.
#[test]
fn the_unwinding_after_an_oom_decides_no_role() {
    use memsight_core::analysis::categories::categorise;
    use memsight_core::analysis::categories::rules::{CompiledRules, Rules};
    use memsight_core::analysis::categories::signals::Phase;
    use memsight_core::analysis::categories::{Explainer, Role};
    use memsight_core::analysis::stacks::stack_text;
    use std::collections::HashMap;

    let Some(dir) = real_fixtures_dir() else {
        return;
    };
    let path = dir.join(MULTI_DEVICE_OOM);
    if !path.exists() {
        eprintln!("skipping: {MULTI_DEVICE_OOM} not found");
        return;
    }
    let analysed = Analysed::new(decode_file(&path).unwrap());
    let categories = categorise(&analysed, &CompiledRules::none());
    let rules = Rules::default();
    let (one, two) = (
        analysed.device_position(1).unwrap(),
        analysed.device_position(2).unwrap(),
    );
    let oom = 421;
    let phases = &categories.devices[one].phases.phase;
    assert_eq!(phases[oom], Phase::Forward, "the OOM is in the forward");
    assert!(
        phases[oom + 1..].iter().all(|&p| p == Phase::Unwinding),
        "everything after the OOM is its unwinding"
    );
    // The role each call site's allocations get on a device, by count.
    let roles_by_site = |position: usize| {
        let facts = &analysed.facts[position];
        let mut by_site: HashMap<String, HashMap<Role, u32>> = HashMap::new();
        for (i, a) in facts.allocations.iter().enumerate() {
            let site = stack_text(&analysed.snapshot, a.stack, false)
                .top_frame
                .unwrap_or_default();
            *by_site
                .entry(site)
                .or_default()
                .entry(categories.devices[position].roles[i])
                .or_default() += 1;
        }
        by_site
    };
    let (on_one, on_two) = (roles_by_site(one), roles_by_site(two));
    let most = |roles: &HashMap<Role, u32>| roles.iter().max_by_key(|(_, &n)| n).map(|(&r, _)| r);
    let mut compared = 0;
    for (site, roles) in &on_one {
        let Some(other) = on_two.get(site) else {
            continue;
        };
        // A site whose allocations all got one role on the device that never ran out of
        // memory gets it on the one that did.
        if other.len() == 1 && roles.len() == 1 {
            assert_eq!(most(roles), most(other), "{site}");
            compared += 1;
        }
    }
    assert!(compared >= 10, "{compared} call sites compared");
    // What the unwinding freed was alive at the error, and its reason says so.
    let facts = &analysed.facts[one];
    let mut explainer = Explainer::new(&analysed, one, &categories.devices[one], &rules);
    let unwound: Vec<usize> = (0..facts.allocations.len())
        .filter(|&i| {
            let free = facts.allocations.at(i).free_row;
            free != u32::MAX && free as usize > oom
        })
        .collect();
    assert!(unwound.len() > 50);
    for &i in &unwound {
        assert_ne!(
            categories.devices[one].roles[i],
            Role::ForwardTemporaries,
            "allocation {i} was alive at the OOM"
        );
        let reason = memsight_core::format::breakdown::role_reason(&explainer.explain(i));
        assert!(
            reason.contains("alive at the out-of-memory at event 421")
                && reason.contains("the error's unwinding freed it"),
            "{reason}"
        );
    }
}
