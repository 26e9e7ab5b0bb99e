//! The tables through the session, as the page asks for them, on real snapshots: a scope's
//! rows add up to the allocated curve, every grouping's groups add up to the rows, model
//! modules fold a model's repeated layers into one group of equal calls, and the CSV lists
//! what the table shows.

mod common;

use common::*;
use memsight_core::analysis::allocator::{SegmentOrder, SegmentState};
use memsight_core::export::CsvRequest;
use memsight_core::protocol::{Answer, Request};
use memsight_core::service::Reply;
use memsight_core::session::Session;
use memsight_core::table::groups::Line;
use memsight_core::table::service::{
    AllocatorRequest, TableAnswer, TableRequest, TableView, ViewRequest,
};
use memsight_core::table::{GroupBy, Scope, TableQuery};

/// A 24-layer model's inference (`medium` of the CS336 assignment).
const MEDIUM: &str =
    "Wedsonlin__assignment2-systems__results__medium_1024_inference_memory_snapshot.pickle";

fn view(
    session: &mut Session,
    device: u32,
    query: TableQuery,
    open: Vec<Vec<String>>,
) -> TableView {
    let request = TableRequest::View(ViewRequest {
        device,
        query,
        open,
        first: 0,
        count: 2000,
        reveal: None,
    });
    match session.answer(Request::Table(request), &|| 0.0) {
        Ok(reply) => match reply.answer {
            Answer::Table(TableAnswer::View(view)) => *view,
            other => panic!("not a table: {}", other.feature()),
        },
        Err(e) => panic!("{e:?}"),
    }
}

fn groups(view: &TableView) -> Vec<&memsight_core::table::groups::GroupLine> {
    view.lines
        .iter()
        .filter_map(|l| match l {
            Line::Group(g) => Some(g),
            Line::Row { .. } => None,
        })
        .collect()
}

#[test]
fn scopes_add_up_to_the_allocated_curve_and_groups_to_their_scope() {
    for path in real_fixture_files() {
        let name = file_name(&path);
        let Some(mut session) = load_session(&path) else {
            continue;
        };
        let analysed = session.analysed().unwrap();
        let devices: Vec<(u32, u64, u64, u32)> = analysed
            .snapshot
            .devices
            .iter()
            .zip(&analysed.facts)
            .map(|(d, f)| {
                let peak = f.peak_allocated.row.map_or(0, |r| r + 1);
                (
                    d.id,
                    f.allocated_at(peak),
                    f.allocated_at_end(),
                    f.allocations.len() as u32,
                )
            })
            .collect();
        for (device, at_peak, at_end, allocations) in devices {
            for (scope, expected) in [(Scope::Peak, at_peak), (Scope::End, at_end)] {
                let flat = view(
                    &mut session,
                    device,
                    TableQuery {
                        scope,
                        ..TableQuery::default()
                    },
                    vec![],
                );
                assert_eq!(
                    flat.totals.requested_bytes, expected,
                    "{name} {device} {scope:?}"
                );
                assert_eq!(
                    flat.totals.scope_bytes, expected,
                    "{name} {device} {scope:?}"
                );
                let listed: u64 = flat
                    .lines
                    .iter()
                    .map(|l| match l {
                        Line::Row { row, .. } => row.requested_bytes,
                        Line::Group(_) => 0,
                    })
                    .sum();
                if flat.line_count <= 2000 {
                    assert_eq!(listed, expected, "{name} {device} {scope:?}");
                }
                for by in GroupBy::ALL {
                    let query = TableQuery {
                        scope,
                        group_by: Some(by),
                        ..TableQuery::default()
                    };
                    let grouped = view(&mut session, device, query, vec![]);
                    let roots = groups(&grouped);
                    let bytes: u64 = roots.iter().map(|g| g.requested_bytes).sum();
                    let count: u32 = roots.iter().map(|g| g.count).sum();
                    assert_eq!(bytes, expected, "{name} {device} {scope:?} {by:?}");
                    assert_eq!(count, flat.totals.count, "{name} {device} {scope:?} {by:?}");
                }
            }
            let all = view(
                &mut session,
                device,
                TableQuery {
                    scope: Scope::All,
                    ..TableQuery::default()
                },
                vec![],
            );
            assert_eq!(all.totals.count, allocations, "{name} {device}");
        }
    }
}

#[test]
fn a_24_layer_model_folds_into_one_group_of_24_equal_calls() {
    let Some(dir) = real_fixtures_dir() else {
        return;
    };
    let Some(mut session) = load_session(&dir.join(MEDIUM)) else {
        panic!("{MEDIUM} does not load");
    };
    let query = TableQuery {
        scope: Scope::All,
        group_by: Some(GroupBy::Module),
        ..TableQuery::default()
    };
    let closed = view(&mut session, 0, query.clone(), vec![]);
    let folded: Vec<_> = groups(&closed)
        .into_iter()
        .filter(|g| g.occurrences > 0)
        .collect();
    assert_eq!(folded.len(), 1, "{:?}", groups(&closed));
    let layers = folded[0].clone();
    assert_eq!(layers.occurrences, 24);
    assert!(layers.label.ends_with("forward ×24"), "{}", layers.label);
    let opened = view(&mut session, 0, query, vec![layers.path.clone()]);
    let calls: Vec<_> = groups(&opened)
        .into_iter()
        .filter(|g| g.depth == 1 && g.path[0] == layers.path[0])
        .collect();
    assert_eq!(calls.len(), 24);
    let per_call = calls[0].count;
    assert!(per_call > 1);
    for call in &calls {
        assert_eq!(call.count, per_call, "{}", call.label);
        assert_eq!(
            call.requested_bytes, calls[0].requested_bytes,
            "{}",
            call.label
        );
    }
    assert_eq!(layers.count, 24 * per_call);
}

#[test]
fn the_csv_lists_every_row_with_requested_and_block_sizes() {
    let Some(dir) = real_fixtures_dir() else {
        return;
    };
    let Some(mut session) = load_session(&dir.join(MEDIUM)) else {
        panic!("{MEDIUM} does not load");
    };
    let query = TableQuery::default();
    let flat = view(&mut session, 0, query.clone(), vec![]);
    let reply = session
        .answer(
            CsvRequest {
                device: 0,
                query,
                redact: false,
            }
            .into(),
            &|| 0.0,
        )
        .unwrap();
    let text = String::from_utf8(reply.attachment.unwrap()).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let requested = header.iter().position(|&c| c == "requested_bytes").unwrap();
    let size = header.iter().position(|&c| c == "size_bytes").unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len() as u32, flat.totals.count);
    let sum: u64 = rows
        .iter()
        .map(|r| r[requested].parse::<u64>().unwrap())
        .sum();
    assert_eq!(sum, flat.totals.requested_bytes);
    let blocks: u64 = rows.iter().map(|r| r[size].parse::<u64>().unwrap()).sum();
    assert_eq!(blocks, flat.totals.size_bytes);
    assert!(rows
        .iter()
        .all(|r| r[size].parse::<u64>().unwrap() >= r[requested].parse::<u64>().unwrap()));
}

#[test]
fn block_sizes_at_the_end_are_the_final_segments_blocks_and_the_allocator_state_follows() {
    for path in real_fixture_files() {
        let name = file_name(&path);
        let Some(mut session) = load_session(&path) else {
            continue;
        };
        let devices: Vec<(u32, std::collections::HashMap<u64, u64>, usize, u64)> = {
            let analysed = session.analysed().unwrap();
            analysed
                .snapshot
                .devices
                .iter()
                .zip(&analysed.facts)
                .map(|(d, f)| {
                    let blocks = d
                        .blocks
                        .iter()
                        .filter(|b| b.state.is_allocated())
                        .map(|b| (b.address, b.size))
                        .collect();
                    (
                        d.id,
                        blocks,
                        d.segments.len(),
                        f.reserved_after(d.trace.len().checked_sub(1).map(|r| r as u32)),
                    )
                })
                .collect()
        };
        for (device, blocks, segments, reserved) in devices {
            let query = TableQuery {
                scope: Scope::End,
                ..TableQuery::default()
            };
            let end = view(&mut session, device, query, vec![]);
            for line in &end.lines {
                let Line::Row { row, .. } = line else {
                    continue;
                };
                if let Some(&size) = blocks.get(&row.address) {
                    assert_eq!(row.size_bytes, size, "{name} {device} {:#x}", row.address);
                }
            }
            let request = TableRequest::Allocator(AllocatorRequest {
                device,
                state: Some(memsight_core::model::State::new(u32::MAX)),
                first_segment: 0,
                segment_count: 10,
                order: SegmentOrder::Address,
            });
            let Ok(reply) = session.answer(Request::Table(request), &|| 0.0) else {
                panic!("{name} {device}: no allocator state");
            };
            let Answer::Table(TableAnswer::Allocator(state)) = reply.answer else {
                panic!("{name} {device}: not an allocator state");
            };
            assert_eq!(state.segment_count as usize, segments, "{name} {device}");
            assert_eq!(state.totals.reserved, reserved, "{name} {device}");
            assert!(state.segments.len() <= 10);
            for segment in &state.segments {
                let covered: u64 = segment.blocks.iter().map(|b| b.size).sum();
                assert_eq!(
                    covered, segment.size,
                    "{name} {device}: blocks cover their segment"
                );
            }
            // Every order lists every segment once, a page at a time, largest first by its key.
            let mut by_address = Vec::new();
            for order in SegmentOrder::ALL {
                let mut listed: Vec<SegmentState> = Vec::new();
                loop {
                    let request = TableRequest::Allocator(AllocatorRequest {
                        device,
                        state: Some(memsight_core::model::State::new(u32::MAX)),
                        first_segment: listed.len() as u32,
                        segment_count: 7,
                        order,
                    });
                    let Ok(Reply {
                        answer: Answer::Table(TableAnswer::Allocator(page)),
                        ..
                    }) = session.answer(Request::Table(request), &|| 0.0)
                    else {
                        panic!("{name} {device} {order:?}: no allocator state");
                    };
                    assert_eq!(page.order, order);
                    if page.segments.is_empty() {
                        break;
                    }
                    listed.extend(page.segments);
                }
                assert_eq!(listed.len(), segments, "{name} {device} {order:?}");
                let key = |s: &SegmentState| match order {
                    SegmentOrder::Address => u64::MAX - s.address,
                    SegmentOrder::Size => s.size,
                    SegmentOrder::CachedFree => s.totals.cached_free,
                    SegmentOrder::LargestFree => s.totals.largest_free_block,
                };
                assert!(
                    listed.windows(2).all(|w| key(&w[0]) >= key(&w[1])),
                    "{name} {device}: segments by {order:?}"
                );
                let mut addresses: Vec<u64> = listed.iter().map(|s| s.address).collect();
                addresses.sort_unstable();
                if order == SegmentOrder::Address {
                    by_address = addresses;
                } else {
                    assert_eq!(addresses, by_address, "{name} {device} {order:?}");
                }
            }
        }
    }
}
