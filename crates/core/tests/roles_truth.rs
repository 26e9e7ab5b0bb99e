//! Roles checked against a truth, on real snapshots: cut a trace at an event as if recording
//! had started there (`model::cut`) and the roles of the memory the cut hides must come out
//! as the whole trace says; and every run that steps an optimizer must add up as training
//! does (one gradient per parameter, the optimizer's states per parameter, little unknown).

mod common;

use common::*;
use memsight_core::analysis::categories::index::CategoryIndex;
use memsight_core::analysis::categories::rules::CompiledRules;
use memsight_core::analysis::categories::signals::Phase;
use memsight_core::analysis::categories::{categorise, totals_at, Categories, Role};
use memsight_core::analysis::Analysed;
use memsight_core::breakdown::physics::physics;
use memsight_core::model::cut::{cut_trace, Cut};
use memsight_core::model::Action;

/// Training steps recorded after the model was built (the weights from before the trace): a
/// first step making AdamW's states, a later step with them from before, a bf16 step.
const STEPS: [&str; 4] = [
    "kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_fullstep_.pickle",
    "LINYUNLinYun__CS336-assignment2-systems__cs336_systems__results__memory_profiles__xl_ctx512_full_step_bf16.pickle",
    "notHanmin__assignment2-systems__memory_snapshot.pickle",
    "bcrafton__assignment2-systems__memory_snapshot.pickle",
];

/// Forward passes and inference, fp32, bf16 and mixed precision, with the model built before
/// recording.
const FORWARDS: [&str; 5] = [
    "LINYUNLinYun__CS336-assignment2-systems__cs336_systems__results__memory_profiles__xl_ctx128_forward_bf16@e1139f5.pickle",
    "bolongcheng__assignment2-systems__benchmarks__memory_snapshot_xl_fwd_cl128_dtypetorch.float32.pickle",
    "Wedsonlin__assignment2-systems__results__medium_1024_inference_memory_snapshot.pickle",
    "sidsoc12__spring2024-assignment2-systems__cs336_systems__mem_snapshot_ctx512_bf16_infer.pickle",
    "kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_forward_mixed.pickle",
];

/// The most of the bytes alive a cut file may give a role the whole file does not, as a share.
/// Not zero for one reason: the loss the training loop computes outside any module is an
/// activation when the trace shows it follows a forward, but an input when only its own frames
/// are left (4 bytes of 51 GiB in the CS336 full step).
const WRONG_AT_MOST: f64 = 1e-6;
/// The most a cut file may leave unknown that the whole file knows: what the forward made for
/// the training loop and the loop drops after the cut (the logits and the loss, when the cut
/// is past the forward) has nothing in the rest of the trace to tell it by.
const UNKNOWN_AT_MOST: f64 = 5e-3;

fn analysed(name: &str) -> Option<Analysed> {
    let dir = real_fixtures_dir()?;
    Some(Analysed::new(decode_file(&dir.join(name)).expect(name)))
}

/// Events to cut the trace of device `position` at, each named: where recording could have
/// started after the model was built (before a forward whose memory the trace holds all of,
/// and inside the first forward of a run that trains), or where a ring buffer could have
/// wrapped (anywhere the rest still makes memory with stacks).
fn cut_points(full: &Analysed, cats: &Categories, position: usize) -> Vec<(String, usize, Cut)> {
    let trace = &full.snapshot.devices[position].trace;
    let phases = &cats.devices[position].phases.phase;
    let rows = trace.len();
    let mut points = Vec::new();
    // Where an iteration starts: the first allocation of the first forward, made again.
    let first_forward =
        (0..rows).find(|&r| trace.action[r] == Action::Alloc && phases[r] == Phase::Forward);
    if let Some(first) = first_forward {
        let starts: Vec<usize> = (first..rows)
            .filter(|&r| trace.action[r] == Action::Alloc && trace.stack[r] == trace.stack[first])
            .collect();
        for k in [0, starts.len() / 2, starts.len() - 1] {
            points.push((
                format!("iteration@{}", starts[k]),
                starts[k],
                Cut::LateStart,
            ));
        }
    }
    let trains = phases.contains(&Phase::Backward);
    if let Some(start) = first_forward {
        let end = start
            + phases[start..]
                .iter()
                .take_while(|&&p| p == Phase::Forward)
                .count();
        if trains {
            for quarter in 1..=3 {
                let row = start + (end - start) * quarter / 4;
                points.push((format!("forward {quarter}/4@{row}"), row, Cut::LateStart));
            }
        }
    }
    for quarter in 1..=3 {
        let row = rows * quarter / 4;
        let makes = (row..rows).any(|r| {
            trace.action[r] == Action::Alloc && trace.stack[r] != memsight_core::model::NO_STACK
        });
        if makes {
            points.push((format!("{quarter}/4@{row}"), row, Cut::Wrapped));
        }
    }
    points.sort_by_key(|p| (p.1, p.2 == Cut::Wrapped));
    points.dedup_by_key(|p| (p.1, p.2));
    points
}

/// Cuts `name` at its cut points and checks the roles at the cut file's peak and end.
fn check_cuts(name: &str) -> Vec<String> {
    let Some(full) = analysed(name) else {
        eprintln!("skipped: the real fixtures are not beside the repository");
        return Vec::new();
    };
    check_cuts_of(name, &full)
}

fn check_cuts_of(name: &str, full: &Analysed) -> Vec<String> {
    let full = full.clone();
    let rules = CompiledRules::none();
    let cats = categorise(&full, &rules);
    let mut lines = Vec::new();
    for position in 0..full.snapshot.devices.len() {
        if full.facts[position].allocations.first_traced() == full.facts[position].allocations.len()
        {
            continue;
        }
        for (label, row, how) in cut_points(&full, &cats, position) {
            let cut = Analysed::new(cut_trace(&full.snapshot, position, row, how));
            let cut_cats = categorise(&cut, &rules);
            let facts = &cut.facts[position];
            let peak = facts.peak_allocated.row.map_or(0, |r| r + 1);
            let end = facts.allocated.len() as u32;
            for (moment, state) in [("peak", peak), ("end", end)] {
                let got = totals_at(facts, &cut_cats.devices[position], state);
                let want = totals_at(
                    &full.facts[position],
                    &cats.devices[position],
                    state + row as u32,
                );
                assert_eq!(got.live_bytes, want.live_bytes, "{name} {label}: {moment}");
                // Bytes given a role they do not have, and bytes left unknown that the whole
                // trace knows.
                let gained = |r: Role| got.role(r).saturating_sub(want.role(r));
                let wrong: u64 = Role::ALL
                    .iter()
                    .filter(|&&r| r != Role::Unknown)
                    .map(|&r| gained(r))
                    .sum();
                let unknown = gained(Role::Unknown);
                let share = |bytes: u64| bytes as f64 / want.live_bytes.max(1) as f64;
                lines.push(format!(
                    "{name} {label} {how:?} {moment}: {wrong} bytes in another role, {unknown} unknown, of {}",
                    want.live_bytes
                ));
                let moved: Vec<String> = Role::ALL
                    .iter()
                    .filter(|&&r| got.role(r) != want.role(r))
                    .map(|&r| format!("{r:?} {} -> {}", want.role(r), got.role(r)))
                    .collect();
                assert!(
                    share(wrong) <= WRONG_AT_MOST && share(unknown) <= UNKNOWN_AT_MOST,
                    "{name} cut at {label} ({how:?}), {moment}: {:.4}% of {} bytes in another role, {:.4}% unknown: {}",
                    100.0 * share(wrong),
                    want.live_bytes,
                    100.0 * share(unknown),
                    moved.join(", ")
                );
            }
        }
    }
    lines
}

#[test]
fn a_training_step_recorded_later_keeps_its_roles() {
    for name in STEPS {
        for line in check_cuts(name) {
            eprintln!("{line}");
        }
    }
}

#[test]
fn a_forward_recorded_later_keeps_its_roles() {
    for name in FORWARDS {
        for line in check_cuts(name) {
            eprintln!("{line}");
        }
    }
}

#[test]
fn every_run_that_steps_an_optimizer_adds_up_as_training_does() {
    let files = real_fixture_files();
    if files.is_empty() {
        eprintln!("skipped: the real fixtures are not beside the repository");
    }
    let mut stepped = 0;
    for path in files {
        let Ok(snapshot) = decode_file(&path) else {
            continue;
        };
        let name = file_name(&path);
        let full = Analysed::new(snapshot);
        let cats = categorise(&full, &CompiledRules::none());
        for (position, facts) in full.facts.iter().enumerate() {
            let device = &cats.devices[position];
            let index = CategoryIndex::new(facts, device);
            let peak = facts.peak_allocated.row.map_or(0, |r| r + 1);
            let found = physics(index.lookup(facts, device), device, peak);
            stepped += found.steps as u32;
            let failed: Vec<String> = found
                .checks
                .iter()
                .filter(|c| !c.passes)
                .map(|c| format!("{:?} at {:.3}", c.kind, c.ratio))
                .collect();
            assert!(
                failed.is_empty(),
                "{name} device {position}: {} (parameters {}, gradients {}, optimizer state {}, unknown {} of {})",
                failed.join(", "),
                found.parameters,
                found.gradients,
                found.optimizer_state,
                found.unknown_at_peak,
                found.peak
            );
        }
    }
    if real_fixtures_dir().is_some() {
        assert!(stepped >= 4, "{stepped} runs step an optimizer");
    }
}

/// `snapshot` as `torch_npu` writes it: the same format, its allocator's C++ names and its
/// Python package in the frames, and an action of its own (`workspace_snapshot`) in the trace.
fn as_npu(mut snapshot: memsight_core::model::Snapshot) -> memsight_core::model::Snapshot {
    for i in 0..snapshot.frames.len() {
        let frame = snapshot.frames[i].clone();
        let name = snapshot
            .str(frame.name)
            .replace(
                "c10::cuda::CUDACachingAllocator",
                "c10_npu::NPUCachingAllocator",
            )
            .replace("at::detail::empty_cuda", "at_npu::native::empty_npu");
        let file = snapshot
            .str(frame.filename)
            .replace("torch/cuda/", "torch_npu/npu/")
            .replace("CUDACachingAllocator.cpp", "NPUCachingAllocator.cpp");
        snapshot.frames[i].name = snapshot.strings.intern(&name);
        snapshot.frames[i].filename = snapshot.strings.intern(&file);
    }
    let action = snapshot.strings.intern("workspace_snapshot");
    for device in &mut snapshot.devices {
        let mut row = memsight_core::model::TraceRow::new(Action::Other);
        row.unknown_action = Some(action);
        device.trace.push(row);
        device.trace.finish();
    }
    snapshot.device_kind = snapshot.frames_device_kind();
    snapshot
}

#[test]
fn an_npu_trace_is_named_so_and_read_as_a_cuda_one() {
    let name = STEPS[0];
    let Some(dir) = real_fixtures_dir() else {
        return;
    };
    let cuda = Analysed::new(decode_file(&dir.join(name)).expect(name));
    let npu = Analysed::new(as_npu(cuda.snapshot.clone()));
    assert_eq!(npu.snapshot.device_name(0), "npu:0");
    assert_eq!(cuda.snapshot.device_name(0), "cuda:0");
    let rules = CompiledRules::none();
    let (a, b) = (categorise(&cuda, &rules), categorise(&npu, &rules));
    let facts = &cuda.facts[0];
    for state in (0..=facts.allocated.len() as u32).step_by(997) {
        assert_eq!(
            totals_at(facts, &a.devices[0], state),
            totals_at(&npu.facts[0], &b.devices[0], state),
            "state {state}"
        );
    }
    // Its action of its own is counted, not an error.
    assert_eq!(npu.facts[0].action_counts[Action::Other as usize], 1);
    for line in check_cuts_of("npu-like", &npu) {
        eprintln!("{line}");
    }
}

/// A role a user wrote on an allocation (`_annotate_tensor`) is its role, whether recording
/// saw it made or started after it: the same snapshot cut between the `alloc` and the
/// `annotate` as if recording had started there gives the same role (and the cut is seen:
/// the allocation is from before the trace).
#[test]
fn an_annotated_role_holds_when_recording_starts_after_the_allocation() {
    use memsight_core::analysis::categories::rules::Rules;
    use memsight_core::analysis::Origin;
    use memsight_core::decode::decode_bytes;

    const MIB: u64 = 1 << 20;
    let frame = |file: &str, line: u32, name: &str| {
        format!(r#"{{"filename":"{file}","line":{line},"name":"{name}"}}"#)
    };
    let made = format!(
        "[{},{}]",
        frame("/x/optim.py", 40, "init_state"),
        frame("/x/train.py", 10, "main")
    );
    let step = format!("[{}]", frame("/x/train.py", 12, "main"));
    let state = 0x7f00_0000_0000u64;
    let temp = state + 8 * MIB;
    let rows = [
        format!(
            r#"{{"action":"alloc","addr":{state},"size":{},"stream":0,"frames":{made}}}"#,
            4 * MIB
        ),
        format!(
            r#"{{"action":"annotate","addr":{state},"size":{},"stream":0,"frames":{step},"user_metadata":"optimizer_state"}}"#,
            4 * MIB
        ),
        format!(r#"{{"action":"alloc","addr":{temp},"size":{MIB},"stream":0,"frames":{step}}}"#),
        format!(
            r#"{{"action":"free_completed","addr":{temp},"size":{MIB},"stream":0,"frames":{step}}}"#
        ),
    ];
    let segment = format!(
        r#"{{"device":0,"address":{state},"total_size":{},"stream":0,"segment_type":"large","allocated_size":{},"active_size":{},"blocks":[{{"address":{state},"size":{},"requested_size":{},"state":"active_allocated","frames":{made}}},{{"address":{temp},"size":{},"state":"inactive"}}]}}"#,
        20 * MIB,
        4 * MIB,
        4 * MIB,
        4 * MIB,
        4 * MIB,
        16 * MIB
    );
    let json = format!(
        r#"{{"segments":[{segment}],"device_traces":[[{}]]}}"#,
        rows.join(",")
    );
    let snapshot = decode_bytes(json.as_bytes()).expect("the snapshot decodes");
    let role_at = |analysed: &Analysed, addr: u64| {
        let rules = Rules::default().compile().unwrap();
        let cats = categorise(analysed, &rules);
        let facts = &analysed.facts[0];
        let i = (0..facts.allocations.len())
            .find(|&i| facts.allocations.at(i).addr == addr)
            .expect("the allocation");
        (cats.devices[0].roles[i], facts.allocations.at(i).origin())
    };
    let full = Analysed::new(snapshot.clone());
    assert_eq!(role_at(&full, state), (Role::OptimizerState, Origin::Trace));
    let cut = Analysed::new(cut_trace(&snapshot, 0, 1, Cut::LateStart));
    let (role, origin) = role_at(&cut, state);
    assert_ne!(origin, Origin::Trace, "the cut hides its alloc");
    assert_eq!(
        role,
        Role::OptimizerState,
        "the annotation still says what it is"
    );
    // Without the annotation, nothing in the trace says so: the role came from it.
    let unannotated = json.replace(&format!("{},", rows[1]), "");
    let plain = Analysed::new(decode_bytes(unannotated.as_bytes()).unwrap());
    assert_ne!(role_at(&plain, state).0, Role::OptimizerState);
}
