//! `memsight files --json` says where each run's peak falls, as the files view's chart of every
//! run places it, and with `--curves` gives the curves that chart draws: on every real
//! snapshot, the numbers equal the core's overlay of each file's digest, and the peak's share
//! of events and of time points at the state of the run's peak in its trace.

mod command;
#[path = "../../core/tests/common/mod.rs"]
mod common;

use std::collections::HashMap;

use command::{assert_succeeded, json_lines, memsight};
use common::{decode_file, real_fixture_files};
use memsight_core::compare::digest_file::read_digests;
use memsight_core::compare::overlay::{run_curve, OverlayX, OverlayY};
use memsight_core::model::NO_TIME;
use serde_json::Value;

const MILLION: u64 = 1_000_000;

/// The rows `memsight files` prints for `args`, each keyed by its file and device.
fn rows(args: &[&str], files: &[std::path::PathBuf]) -> Vec<Value> {
    let output = memsight(args, files);
    assert_succeeded(&output);
    json_lines(&output)[0]["files"].as_array().unwrap().clone()
}

fn key(row: &Value) -> (String, u64) {
    (
        row["name"].as_str().unwrap().to_string(),
        row["device"].as_u64().unwrap(),
    )
}

/// The share of a curve's points, in parts per million, point `k` of `points` is at.
fn share_of_point(k: u64, points: u64) -> u64 {
    if points <= 1 {
        0
    } else {
        k * MILLION / (points - 1)
    }
}

#[test]
fn each_runs_peak_position_and_curves_are_the_cores_and_point_at_its_peak() {
    let files = real_fixture_files();
    if files.is_empty() {
        return;
    }
    let rows = rows(&["files", "--json", "--curves"], &files);
    // The digests the rows are made from, read by the core.
    let printed = memsight(&["digest"], &files);
    assert_succeeded(&printed);
    let digests = read_digests(&printed.stdout).expect("digests read");
    let mut timed = 0;
    for row in &rows {
        let (name, device) = key(row);
        let digest = digests
            .iter()
            .find(|f| f.name == name)
            .and_then(|f| f.devices.iter().find(|d| u64::from(d.device) == device))
            .unwrap_or_else(|| panic!("{name} cuda:{device} has a digest"));
        let what = format!("{name} cuda:{device}");

        // The core's numbers, as the page's chart takes them.
        let events = run_curve(digest, OverlayX::Events, OverlayY::Absolute).unwrap();
        assert_eq!(row["peak_at_events_ppm"], events.peak_share_ppm, "{what}");
        assert_eq!(
            row["curve_over_events_bytes"],
            Value::from(events.values.clone())
        );
        match run_curve(digest, OverlayX::Time, OverlayY::Absolute) {
            Some(time) => {
                assert_eq!(row["peak_at_time_ppm"], time.peak_share_ppm, "{what}");
                assert_eq!(row["curve_over_time_bytes"], Value::from(time.values));
            }
            None => {
                assert!(row["peak_at_time_ppm"].is_null(), "{what}");
                assert!(row["curve_over_time_bytes"].is_null(), "{what}");
            }
        }
        // The chart's "from its start" has its peak in the same place.
        let from_start = run_curve(digest, OverlayX::Events, OverlayY::FromStart).unwrap();
        assert_eq!(from_start.peak_share_ppm, events.peak_share_ppm, "{what}");

        // A share of the run.
        let at_events = row["peak_at_events_ppm"].as_u64().unwrap();
        assert!(at_events <= MILLION, "{what}: {at_events}");

        // It points at the state of the run's peak: state `event + 1` of `trace_entries + 1`,
        // in the point of the curve that state falls in (each point the highest of an equal
        // share of the states), and that point holds the row's peak.
        let trace_entries = row["trace_entries"].as_u64().unwrap();
        let states = trace_entries + 1;
        let peak_state = match row["peak_event"].as_u64() {
            Some(event) => {
                assert!(event < trace_entries, "{what}: event {event}");
                event + 1
            }
            None => 0,
        };
        let curve = row["curve_over_events_bytes"].as_array().unwrap();
        let points = curve.len() as u64;
        let k = peak_state * points / states;
        assert_eq!(at_events, share_of_point(k, points), "{what}");
        assert_eq!(
            curve[k as usize], row["peak_allocated_bytes"],
            "{what}: the point of the peak holds it"
        );
        // Within one point of the exact share of events.
        let exact = (peak_state * MILLION).checked_div(states - 1).unwrap_or(0);
        assert!(
            exact.abs_diff(at_events) <= MILLION / (points - 1).max(1) + 2,
            "{what}: {at_events} for {exact}"
        );

        // Over time: the point the peak event's time falls in, of the trace's time span.
        if let Some(at_time) = row["peak_at_time_ppm"].as_u64() {
            assert!(at_time <= MILLION, "{what}: {at_time}");
            let snapshot = decode_file(std::path::Path::new(&name)).unwrap();
            let trace = &snapshot
                .devices
                .iter()
                .find(|d| u64::from(d.id) == device)
                .unwrap()
                .trace;
            let times = &trace.time_us;
            assert!(times.iter().all(|&t| t != NO_TIME), "{what}");
            let (first, last) = (times[0], *times.last().unwrap());
            assert_eq!(
                row["time_span_us"].as_u64(),
                Some((last - first) as u64),
                "{what}"
            );
            let t = row["peak_event"]
                .as_u64()
                .map_or(first, |e| times[e as usize]);
            let points = row["curve_over_time_bytes"].as_array().unwrap().len() as u64;
            let span = (last - first).max(1) as f64;
            let k = ((((t - first) as f64 / span) * points as f64) as u64).min(points - 1);
            assert_eq!(at_time, share_of_point(k, points), "{what}");
            timed += 1;
        }
    }
    assert!(rows.len() >= files.len(), "a row for every file");
    assert!(timed > 10, "only {timed} runs with times");
}

#[test]
fn peak_positions_follow_their_rows_when_sorted_and_curves_come_only_when_asked() {
    let files = real_fixture_files();
    if files.is_empty() {
        return;
    }
    let unsorted = rows(&["files", "--json"], &files);
    let sorted = rows(
        &["files", "--json", "--sort", "peak_allocated_bytes:asc"],
        &files,
    );
    assert_eq!(sorted.len(), unsorted.len());
    let by_key: HashMap<(String, u64), &Value> = unsorted.iter().map(|r| (key(r), r)).collect();
    let peaks: Vec<u64> = sorted
        .iter()
        .map(|r| r["peak_allocated_bytes"].as_u64().unwrap())
        .collect();
    assert!(peaks.windows(2).all(|w| w[0] <= w[1]), "sorted ascending");
    for row in &sorted {
        assert_eq!(*row, *by_key[&key(row)], "{:?}", key(row));
        assert!(row.get("curve_over_events_bytes").is_none());
        assert!(row.get("curve_over_time_bytes").is_none());
    }
    // Curves are JSON's only.
    let refused = memsight(&["files", "--curves"], &files[..1]);
    assert_eq!(refused.status.code(), Some(2));
}
