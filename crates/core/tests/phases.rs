//! The phase report against one computed by hand on a small trace (inferred phases, and
//! scopes), and on every real snapshot: phases tile the trace, each row's before and after
//! are the allocated curve there, its peak the curve's highest point in it, and after =
//! before + allocated − freed.

mod common;

use memsight_core::analysis::categories::signals::Phase;
use memsight_core::analysis::categories::Role;
use memsight_core::phases::service::PhasesRequest;
use memsight_core::phases::{PhaseReport, PhaseSource};
use memsight_core::protocol::{Answer, Request};
use memsight_core::session::Session;

fn report(bytes: &[u8], device: u32) -> PhaseReport {
    let mut s = Session::new();
    s.load(bytes, bytes.len() as u64, &|| 0.0, &mut |_| {})
        .unwrap();
    match s
        .answer(Request::Phases(PhasesRequest { device }), &|| 0.0)
        .unwrap()
        .answer
    {
        Answer::Phases(r) => r,
        other => panic!("answered {}", other.feature()),
    }
}

fn frame(file: &str, line: u32, name: &str) -> String {
    format!(r#"{{"filename":"{file}","line":{line},"name":"{name}"}}"#)
}

/// Setup, a forward with a temporary, a backward, an optimizer step, and the next forward.
fn training(annotations: &str) -> Vec<u8> {
    let train = frame("/x/train.py", 3, "<module>");
    let setup = format!("[{},{train}]", frame("/t/torch/nn/init.py", 10, "normal_"));
    let forward = format!(
        "[{},{},{train}]",
        frame("/x/model.py", 5, "forward"),
        frame("/t/torch/nn/modules/module.py", 1501, "_call_impl")
    );
    let backward = format!(
        "[{},{train}]",
        frame("/t/torch/_tensor.py", 520, "backward")
    );
    let step = format!("[{},{train}]", frame("/t/torch/optim/adam.py", 100, "step"));
    let rows = [
        ("alloc", 0x1000, 1000, &setup),
        ("alloc", 0x2000, 200, &forward),
        ("alloc", 0x3000, 50, &forward),
        ("free_completed", 0x3000, 50, &forward),
        ("alloc", 0x4000, 1100, &backward),
        ("free_completed", 0x2000, 200, &backward),
        ("alloc", 0x5000, 2000, &step),
        ("alloc", 0x6000, 200, &forward),
    ];
    let trace: Vec<String> = rows
        .iter()
        .enumerate()
        .map(|(r, (action, addr, size, frames))| {
            format!(
                r#"{{"action":"{action}","addr":{addr},"size":{size},"stream":0,"time_us":{},"frames":{frames}}}"#,
                100 * (r + 1)
            )
        })
        .collect();
    format!(
        r#"{{"segments":[],"device_traces":[[{}]],"external_annotations":[{annotations}]}}"#,
        trace.join(",")
    )
    .into_bytes()
}

type Expected = (
    Phase,
    Option<u32>,
    u32,
    u32,
    u64,
    u64,
    u64,
    u64,
    u64,
    u32,
    Option<Role>,
    u64,
);

#[test]
fn inferred_phases_match_a_report_made_by_hand() {
    let r = report(&training(""), 0);
    assert_eq!(r.source, PhaseSource::Frames);
    assert!(r.scopes.is_empty());
    use Phase::*;
    // phase, iteration, first, last, before, after, allocated, freed, peak, peak event, top role, its bytes
    let expected: [Expected; 5] = [
        (
            Setup,
            None,
            0,
            0,
            0,
            1000,
            1000,
            0,
            1000,
            0,
            Some(Role::Parameters),
            1000,
        ),
        (
            Forward,
            Some(1),
            1,
            3,
            1000,
            1200,
            250,
            50,
            1250,
            2,
            Some(Role::Parameters),
            1000,
        ),
        (
            Backward,
            Some(1),
            4,
            5,
            1200,
            2100,
            1100,
            200,
            2300,
            4,
            Some(Role::Gradients),
            1100,
        ),
        (
            OptimizerStep,
            Some(1),
            6,
            6,
            2100,
            4100,
            2000,
            0,
            4100,
            6,
            Some(Role::OptimizerState),
            2000,
        ),
        (
            Forward,
            Some(2),
            7,
            7,
            4100,
            4300,
            200,
            0,
            4300,
            7,
            Some(Role::OptimizerState),
            2000,
        ),
    ];
    let got: Vec<Expected> = r
        .rows
        .iter()
        .map(|x| {
            (
                x.phase.unwrap(),
                x.iteration,
                x.first_event.get(),
                x.last_event.get(),
                x.before_bytes,
                x.after_bytes,
                x.allocated_bytes,
                x.freed_bytes,
                x.peak_bytes,
                x.peak_event.get(),
                x.top_role,
                x.top_role_bytes,
            )
        })
        .collect();
    assert_eq!(got, expected);
    assert_eq!(r.rows[2].delta_bytes, 900);
    assert_eq!(r.rows[0].start_us, Some(0));
    assert_eq!(r.rows[4].end_us, Some(700));
}

#[test]
fn scopes_are_listed_and_name_phases() {
    let scope = |name: &str, stage: &str, t: u32| {
        format!(r#"{{"name":"{name}","stage":"{stage}","device":0,"time_us":{t}}}"#)
    };
    let annotations = [
        scope("my_block", "START", 150),
        scope("inner", "START", 190),
        scope("inner", "END", 310),
        scope("my_block", "END", 350),
        scope("Optimizer.step#Adam.step", "START", 650),
        scope("Optimizer.step#Adam.step", "END", 750),
    ]
    .join(",");
    let r = report(&training(&annotations), 0);
    assert_eq!(r.source, PhaseSource::Annotations);
    let scopes: Vec<(&str, u32, u32, u32, i64)> = r
        .scopes
        .iter()
        .map(|s| {
            (
                s.label.as_str(),
                s.depth,
                s.first_event.get(),
                s.last_event.get(),
                s.delta_bytes,
            )
        })
        .collect();
    assert_eq!(
        scopes,
        [
            ("my_block", 0, 1, 2, 250),
            ("inner", 1, 1, 2, 250),
            ("Optimizer.step#Adam.step", 0, 6, 6, 2000),
        ]
    );
    assert_eq!(r.scopes[2].phase, Some(Phase::OptimizerStep));
}

#[test]
fn on_every_real_snapshot_phases_tile_the_trace_and_add_up() {
    for path in common::real_fixture_files() {
        let name = common::file_name(&path);
        let bytes = std::fs::read(&path).unwrap();
        let mut s = Session::new();
        s.load(&bytes[..], bytes.len() as u64, &|| 0.0, &mut |_| {})
            .unwrap();
        let analysed = s.analysed().unwrap();
        let ids = analysed.snapshot.device_ids();
        let curves: Vec<(u32, Vec<u64>, u64)> = ids
            .iter()
            .map(|&d| {
                let (_, f) = analysed.device_facts(d).unwrap();
                (d, f.allocated.clone(), f.baseline_allocated)
            })
            .collect();
        for (device, curve, baseline) in curves {
            let r = match s
                .answer(Request::Phases(PhasesRequest { device }), &|| 0.0)
                .unwrap()
                .answer
            {
                Answer::Phases(r) => r,
                _ => unreachable!(),
            };
            let at = |state: u32| {
                if state == 0 {
                    baseline
                } else {
                    curve[state as usize - 1]
                }
            };
            let mut next = 0u32;
            for row in &r.rows {
                assert_eq!(row.first_event.get(), next, "{name}: phases tile the trace");
                next = row.last_event.get() + 1;
            }
            assert_eq!(
                next as usize,
                curve.len(),
                "{name}: the last phase ends the trace"
            );
            for row in r.rows.iter().chain(&r.scopes) {
                assert_eq!(row.before_bytes, at(row.first_event.get()), "{name}");
                assert_eq!(row.after_bytes, at(row.last_event.get() + 1), "{name}");
                assert_eq!(
                    row.after_bytes as i128,
                    row.before_bytes as i128 + row.allocated_bytes as i128
                        - row.freed_bytes as i128,
                    "{name}: {}",
                    row.label
                );
                let high = (row.first_event.get()..=row.last_event.get())
                    .map(|e| curve[e as usize])
                    .max()
                    .unwrap();
                assert_eq!(row.peak_bytes, high, "{name}");
                assert_eq!(curve[row.peak_event.index()], high, "{name}");
            }
        }
    }
}
