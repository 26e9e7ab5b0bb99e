//! Bytes by source line (`analysis::lines`) on every real snapshot, against the table: at each
//! device's peak, the bytes made at a line are the table's call-site group of that line, and a
//! line's bytes passing through hold those made there. Through the session as the page asks:
//! a call-site, file or module group's place opens a file whose margins are the group's.

mod common;

use common::*;
use memsight_core::analysis::categories::categorised::Categorised;
use memsight_core::analysis::lines::lines_of;
use memsight_core::analysis::Analysed;
use memsight_core::protocol::{Answer, Request};
use memsight_core::session::Session;
use memsight_core::table::columns::{DeviceColumns, Rows};
use memsight_core::table::filter::select;
use memsight_core::table::groups::Line;
use memsight_core::table::groups::{group, NO_FRAME};
use memsight_core::table::service::{TableAnswer, TableRequest, TableView, ViewRequest};
use memsight_core::table::source::{SourceRequest, SourceView};
use memsight_core::table::{Filter, GroupBy, Scope, TableQuery};

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
            let chosen = select(
                &rows,
                Scope::State(memsight_core::model::State::new(peak)),
                &Filter::default(),
            )
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

fn ask_table(session: &mut Session, request: TableRequest) -> TableAnswer {
    match session.answer(Request::Table(request), &|| 0.0) {
        Ok(reply) => match reply.answer {
            Answer::Table(answer) => answer,
            other => panic!("not a table: {}", other.feature()),
        },
        Err(e) => panic!("{e:?}"),
    }
}

fn groups_of(session: &mut Session, device: u32, query: TableQuery) -> TableView {
    let request = TableRequest::View(ViewRequest {
        device,
        query,
        open: Vec::new(),
        first: 0,
        count: 2000,
        reveal: None,
    });
    match ask_table(session, request) {
        TableAnswer::View(view) => *view,
        _ => panic!("not a table view"),
    }
}

fn source(session: &mut Session, request: SourceRequest) -> SourceView {
    match ask_table(session, TableRequest::Source(request)) {
        TableAnswer::Source(view) => *view,
        _ => panic!("not lines of code"),
    }
}

#[test]
fn a_groups_place_opens_its_file_with_the_groups_bytes_in_the_margin() {
    let files = real_fixture_files();
    if files.is_empty() {
        eprintln!("skipped: no real snapshots (../shared/fixtures/real)");
        return;
    }
    let mut opened = 0;
    // A filter the table and the source view share: only sizes of a mebibyte or more.
    let filter = Filter {
        min_bytes: Some(1 << 20),
        ..Filter::default()
    };
    for path in files.iter().take(6) {
        let Some(mut session) = load_session(path) else {
            continue;
        };
        let devices: Vec<u32> = session
            .analysed()
            .unwrap()
            .snapshot
            .devices
            .iter()
            .map(|d| d.id)
            .collect();
        for device in devices {
            for (by, filter) in [
                (GroupBy::CallSite, Filter::default()),
                (GroupBy::CallSite, filter.clone()),
                (GroupBy::File, Filter::default()),
            ] {
                let query = TableQuery {
                    scope: Scope::Peak,
                    filter: filter.clone(),
                    group_by: Some(by),
                    ..TableQuery::default()
                };
                let table = groups_of(&mut session, device, query);
                for line in &table.lines {
                    let Line::Group(group) = line else { continue };
                    let Some(place) = &group.place else { continue };
                    let view = source(
                        &mut session,
                        SourceRequest {
                            device,
                            scope: Scope::Peak,
                            filter: filter.clone(),
                            path: Some(place.path.clone()),
                            text_held: false,
                        },
                    );
                    let name = format!("{} {:?} {}", file_name(path), by, group.label);
                    assert_eq!(view.state, table.state, "{name}");
                    assert_eq!(view.chosen.bytes, table.totals.requested_bytes, "{name}");
                    let file = view.file.unwrap_or_else(|| panic!("{name}: no file"));
                    assert_eq!(file.path, place.path, "{name}");
                    match (by, place.line) {
                        (GroupBy::File, None) => {
                            assert_eq!(file.made.bytes, group.requested_bytes, "{name}");
                            assert_eq!(file.made.count, group.count, "{name}");
                        }
                        (GroupBy::CallSite, Some(at)) => {
                            let l = file.lines.iter().find(|l| l.line == at).unwrap();
                            assert_eq!(l.made.bytes, group.requested_bytes, "{name}");
                            assert_eq!(l.made.count, group.count, "{name}");
                        }
                        other => panic!("{name}: place {other:?}"),
                    }
                    opened += 1;
                }
            }
            // Module groups name the line of the call that runs the module: its bytes pass
            // through that line.
            let query = TableQuery {
                scope: Scope::Peak,
                group_by: Some(GroupBy::Module),
                ..TableQuery::default()
            };
            let table = groups_of(&mut session, device, query);
            for line in &table.lines {
                let Line::Group(group) = line else { continue };
                let Some(place) = &group.place else { continue };
                let view = source(
                    &mut session,
                    SourceRequest {
                        device,
                        scope: Scope::Peak,
                        filter: Filter::default(),
                        path: Some(place.path.clone()),
                        text_held: false,
                    },
                );
                let file = view.file.expect("a module's file");
                let l = file
                    .lines
                    .iter()
                    .find(|l| Some(l.line) == place.line)
                    .expect("a module's line");
                assert!(l.through.bytes >= group.requested_bytes, "{}", group.label);
                opened += 1;
            }
        }
    }
    assert!(opened > 20, "{opened} places opened");
}

#[test]
fn a_snapshot_carrying_its_source_sends_the_text_and_another_runs_path_finds_the_file() {
    let path = repo().join("tests/fixtures/source_and_shapes.pickle");
    let mut session = load_session(&path).expect("the fixture loads");
    let view = source(
        &mut session,
        SourceRequest {
            device: 0,
            scope: Scope::All,
            filter: Filter::default(),
            path: None,
            text_held: false,
        },
    );
    let file = view.file.expect("the file with the most bytes made");
    let most = view.files.iter().map(|f| f.made.bytes).max().unwrap();
    assert_eq!(file.made.bytes, most);
    let text = view.text.expect("its text, carried");
    assert!(view.files.iter().any(|f| f.carried));
    assert!(!text.text.is_empty());
    // The same file asked by a path from another machine.
    let base = file.path.rsplit('/').next().unwrap();
    let other = source(
        &mut session,
        SourceRequest {
            device: 0,
            scope: Scope::All,
            filter: Filter::default(),
            path: Some(format!("/elsewhere/checkout/{base}")),
            text_held: false,
        },
    );
    assert_eq!(other.file.map(|f| f.path), Some(file.path.clone()));
    // Held by the asker already, the text is not sent again; the lines are.
    let held = source(
        &mut session,
        SourceRequest {
            device: 0,
            scope: Scope::All,
            filter: Filter::default(),
            path: Some(file.path.clone()),
            text_held: true,
        },
    );
    assert!(held.text.is_none());
    assert_eq!(held.file.as_ref(), Some(&file));
    // A path matching nothing lists the files and no file.
    let none = source(
        &mut session,
        SourceRequest {
            device: 0,
            scope: Scope::All,
            filter: Filter::default(),
            path: Some("/nowhere/absent.py".into()),
            text_held: false,
        },
    );
    assert!(none.file.is_none() && none.text.is_none());
    assert_eq!(none.files.len(), view.files.len());
}
