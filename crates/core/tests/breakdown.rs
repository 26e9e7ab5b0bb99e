//! The breakdown through the session, as the page asks for it, on real snapshots: bytes by
//! category at a moment and over the run add up to the allocated curve, the estimate's terms
//! are the roles' maxima, rules re-categorise every view (a refused rule changes nothing), and
//! a timeline coloured by role paints only role colours, its small band split by role.

mod common;

use common::*;
use memsight_core::analysis::axis::AxisMode;
use memsight_core::analysis::categories::rules::{Rule, Rules};
use memsight_core::analysis::categories::{Category, Component, Dimension, Role};
use memsight_core::analysis::moment::Moment;
use memsight_core::analysis::palette::Style;
use memsight_core::breakdown::estimate::EstimateKind;
use memsight_core::breakdown::service::{AtRequest, SeriesRequest, SummaryRequest};
use memsight_core::protocol::{Answer, Ask, Request};
use memsight_core::session::Session;
use memsight_core::timeline::colouring::ColourBy;
use memsight_core::timeline::service::{FrameRequest, TimelineAnswer, TimelineRequest};
use memsight_core::timeline::TimelineKind;

const FULL_STEP: &str =
    "kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_fullstep_.pickle";

/// `request`'s own answer, asked as the page asks.
fn ask<R: Ask>(session: &mut Session, request: R) -> R::Answer {
    session
        .ask(request, &|| 0.0)
        .unwrap_or_else(|e| panic!("{e:?}"))
}

fn at(
    session: &mut Session,
    device: u32,
    moment: Moment,
) -> Box<memsight_core::breakdown::service::MomentBreakdown> {
    ask(
        session,
        AtRequest {
            device,
            moment,
            top: 30,
            only: None,
        },
    )
}

fn allocated_at(facts: &memsight_core::analysis::DeviceFacts, state: u32) -> u64 {
    match state {
        0 => facts.baseline_allocated,
        s => facts.allocated[s as usize - 1],
    }
}

#[test]
fn moments_and_series_add_up_to_the_allocated_curve_on_every_fixture() {
    let files = real_fixture_files();
    if files.is_empty() {
        eprintln!("skipped: the real fixtures are not beside the repository");
    }
    for path in files
        .iter()
        .chain([&edge("two_devices.pickle"), &edge("oom.pickle")])
    {
        let name = file_name(path);
        let Some(mut session) = load_session(path) else {
            continue;
        };
        let analysed = session.analysed().unwrap().clone();
        for (dev, facts) in analysed.snapshot.devices.iter().zip(&analysed.facts) {
            let peak = at(&mut session, dev.id, Moment::Peak);
            assert_eq!(peak.live_bytes, facts.peak_allocated.bytes, "{name}");
            assert_eq!(peak.roles.iter().sum::<u64>(), peak.live_bytes, "{name}");
            assert_eq!(
                peak.components.iter().sum::<u64>(),
                peak.live_bytes,
                "{name}"
            );
            // The largest allocations, largest first, each at most the live bytes.
            assert!(
                peak.largest.windows(2).all(|w| w[0].size >= w[1].size),
                "{name}"
            );
            let live_sizes: u64 = peak.live_sizes.iter().map(|b| b.bytes).sum();
            assert_eq!(
                live_sizes, peak.live_bytes,
                "{name}: the histogram holds every byte"
            );
            for (dimension, totals) in [
                (Dimension::Role, &peak.roles),
                (Dimension::Component, &peak.components),
            ] {
                for (k, &bytes) in totals.iter().enumerate() {
                    let only = Category {
                        dimension,
                        index: k as u32,
                    };
                    let narrowed = ask(
                        &mut session,
                        AtRequest {
                            device: dev.id,
                            moment: Moment::Peak,
                            top: 30,
                            only: Some(only),
                        },
                    );
                    let sized: u64 = narrowed.live_sizes.iter().map(|b| b.bytes).sum();
                    assert_eq!(sized, bytes, "{name}: {dimension:?} {k}");
                    let sited: u64 = narrowed.call_sites.iter().map(|c| c.bytes).sum();
                    assert!(sited <= bytes, "{name}: {dimension:?} {k}");
                    assert!(narrowed.largest.iter().all(|a| match dimension {
                        Dimension::Role => a.role == Role::ALL[k],
                        Dimension::Component => a.component == Component::ALL[k],
                    }));
                    // Everything else is the whole moment, whatever the narrowing.
                    assert_eq!(narrowed.roles, peak.roles, "{name}");
                    assert_eq!(narrowed.only, Some(only));
                }
            }
            let end = at(&mut session, dev.id, Moment::End);
            assert_eq!(end.state.get() as usize, dev.trace.len(), "{name}");

            let series = ask(
                &mut session,
                SeriesRequest {
                    device: dev.id,
                    dimension: Dimension::Role,
                    mode: AxisMode::Events,
                    x0: 0.0,
                    x1: 0.0,
                    width: 97,
                },
            );
            for (column, state) in series.states.iter().enumerate() {
                let Some(state) = *state else { continue };
                let sum: u64 = series.values.iter().map(|v| v[column]).sum();
                assert_eq!(sum, allocated_at(facts, state), "{name}, state {state}");
            }

            let summary = ask(&mut session, SummaryRequest { device: dev.id });
            let e = &summary.estimate;
            assert_eq!(e.observed, facts.peak_allocated.bytes);
            let expected = match e.kind {
                EstimateKind::Serving => {
                    e.parameters + e.kv_cache + e.cuda_graphs + e.step_temporaries
                }
                EstimateKind::Training => {
                    e.parameters
                        + e.optimizer_state
                        + (e.gradients + e.optimizer_temporaries)
                            .max(e.activations + e.weight_copies)
                }
            };
            assert_eq!(e.estimate, expected, "{name}");
            assert!(summary.efficiency_at_peak() <= 1.0);
            // Each finding's allocations are listed in its order, each pinnable on the
            // allocations timeline (its element is the allocation).
            assert_eq!(summary.finding_allocations.len(), summary.findings.len());
            let elements = memsight_core::analysis::elements::AllocationElements::new(facts);
            for (finding, listed) in summary.findings.iter().zip(&summary.finding_allocations) {
                let indices: Vec<u32> = listed.iter().map(|a| a.allocation).collect();
                assert_eq!(indices, finding.allocations, "{name}");
                for a in listed {
                    assert_eq!(elements.allocation_index(a.index), a.allocation as usize);
                    assert_eq!(a.size, facts.allocations.at(a.allocation as usize).size);
                }
            }
        }
    }
}

fn frame(session: &mut Session, device: u32, colour_by: ColourBy, detail: u32) -> Vec<u8> {
    let layout = Request::Timeline(TimelineRequest::Layout {
        device,
        kind: TimelineKind::Allocations,
        detail: Some(detail),
    });
    session.answer(layout, &|| 0.0).unwrap();
    let request = Request::Timeline(TimelineRequest::Frame(FrameRequest {
        show_line: false,
        colour_by,
        ..FrameRequest::first(device, 400, 200)
    }));
    let reply = session.answer(request, &|| 0.0).unwrap();
    assert!(matches!(
        reply.answer,
        Answer::Timeline(TimelineAnswer::Frame(_))
    ));
    reply.attachment.unwrap()
}

#[test]
fn a_timeline_coloured_by_role_paints_only_role_colours_and_follows_the_rules() {
    let Some(dir) = real_fixtures_dir() else {
        eprintln!("skipped: the real fixtures are not beside the repository");
        return;
    };
    let mut session = load_session(&dir.join(FULL_STEP)).unwrap();
    let device = session.analysed().unwrap().snapshot.devices[0].id;
    let style = Style::light();
    let role_of = |pixel: &[u8]| style.roles.iter().position(|c| c[..] == pixel[..]);
    // Few elements drawn: most of the picture is the band, split by role.
    for detail in [20, 100_000] {
        let pixels = frame(&mut session, device, ColourBy::Role, detail);
        let mut seen = std::collections::BTreeSet::new();
        for pixel in pixels.chunks(4) {
            if pixel == style.background {
                continue;
            }
            let role = role_of(pixel);
            assert!(
                role.is_some(),
                "detail {detail}: {pixel:?} is no role's colour"
            );
            seen.extend(role);
        }
        assert!(seen.len() >= 4, "detail {detail}: only {seen:?}");
    }

    // A rule making everything of the optimizer "workspace" repaints the timeline and moves
    // the bytes at the peak, keeping their sum.
    let before = at(&mut session, device, Moment::Peak);
    let pixels_before = frame(&mut session, device, ColourBy::Role, 100_000);
    let summary = |session: &mut Session| ask(session, SummaryRequest { device });
    // The summary is asked twice as a file opens (the overview strip, the breakdown): the
    // second answer is the first, kept.
    let summary_before = summary(&mut session);
    let mut again = summary(&mut session);
    again.compute_ms = summary_before.compute_ms;
    assert_eq!(again, summary_before);
    let rules = Rules {
        rules: vec![Rule {
            pattern: "optim".into(),
            regex: false,
            role: Some(Role::Workspace),
            component: None,
            name: None,
        }],
    };
    let reply = session.answer(Request::SetRules(rules), &|| 0.0).unwrap();
    let Answer::Rules(applied) = reply.answer else {
        unreachable!()
    };
    assert!(applied.error.is_none());
    let after = at(&mut session, device, Moment::Peak);
    assert_eq!(after.generation, applied.generation);
    assert_ne!(before.generation, after.generation);
    let (os, ws) = (Role::OptimizerState as usize, Role::Workspace as usize);
    assert_eq!(after.roles[os], 0, "optimizer state became workspace");
    // (It also takes the optimizer's temporaries, and whatever else an optimizer frame made.)
    assert!(after.roles[ws] >= before.roles[ws] + before.roles[os]);
    assert_eq!(after.live_bytes, before.live_bytes);
    assert_ne!(
        frame(&mut session, device, ColourBy::Role, 100_000),
        pixels_before
    );
    // The kept summary is of the old categories: a new one is made under the rule.
    let summary_after = summary(&mut session);
    assert_eq!(summary_after.generation, applied.generation);
    assert_ne!(summary_after.estimate, summary_before.estimate);

    // A rule that cannot compile is refused by position and changes nothing.
    let bad = Rules {
        rules: vec![Rule {
            pattern: "(".into(),
            regex: true,
            role: Some(Role::Inputs),
            component: None,
            name: None,
        }],
    };
    let reply = session.answer(Request::SetRules(bad), &|| 0.0).unwrap();
    let Answer::Rules(refused) = reply.answer else {
        unreachable!()
    };
    assert_eq!(refused.error.as_ref().map(|e| e.index), Some(0));
    assert_eq!(refused.generation, applied.generation);
    assert_eq!(at(&mut session, device, Moment::Peak).roles, after.roles);
}
