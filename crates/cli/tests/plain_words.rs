//! The command line's smaller words kept true: one event is "1 event"; a device that used no
//! memory is one line, not a report of zeros; `compare --at-phase` labels the overview it prints
//! beside the phase's roles as each whole run's.

mod command;
#[path = "../../core/tests/common/mod.rs"]
mod common;

use command::printed;
use common::{real_fixture, repo};

#[test]
fn one_event_is_one_event() {
    // A 2.0-era trace: its one entry is the snapshot call.
    let text = printed(
        &["overview"],
        &[repo().join("tests/fixtures/legacy_2_0.pickle")],
    );
    assert!(
        text.contains("The trace holds 1 event but no allocation"),
        "{text}"
    );
    assert!(!text.contains("1 events"), "{text}");
}

#[test]
fn devices_that_used_no_memory_are_one_line() {
    // Four devices; only cuda:0 holds segments and a trace.
    let Some(file) = real_fixture("Maphsge4__select_n__snapshot@ec5be11.pickle") else {
        return;
    };
    let line = "cuda:1, cuda:2 and cuda:3 used no memory: no segments and no trace entries.";
    let overview = printed(&["overview"], std::slice::from_ref(&file));
    assert!(overview.contains(&format!("\n{line}\n")), "{overview}");
    assert!(
        !overview.contains("\ncuda:3\n") && overview.contains("\ncuda:0\n"),
        "{overview}"
    );
    let report = printed(&["report"], std::slice::from_ref(&file));
    assert_eq!(report.matches("# Memory report").count(), 1, "{report}");
    assert!(report.trim_end().ends_with(line), "{report}");
    let one = printed(&["report", "--device", "2"], &[file]);
    assert!(
        one.ends_with("\n\ncuda:2 used no memory: no segments and no trace entries.\n"),
        "{one}"
    );
}

#[test]
fn an_overview_beside_a_phases_roles_says_it_is_each_whole_runs() {
    let (Some(a), Some(b)) = (
        real_fixture("kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_fullstep_.pickle"),
        real_fixture(
            "kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_forward_mixed.pickle",
        ),
    ) else {
        return;
    };
    let files = [a, b];
    let at_phase = printed(&["compare", "--at-phase", "forward"], &files);
    assert!(
        at_phase.contains("\nOverview of each whole run, not of the phase (A, B, B − A)\n"),
        "{at_phase}"
    );
    let peaks = printed(&["compare"], &files);
    assert!(peaks.contains("\nOverview (A, B, B − A)\n"), "{peaks}");
}
