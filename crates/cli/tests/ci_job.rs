//! The README's "Memory budgets in CI" job, run as written by `tests/ci/budget-job.sh` with this
//! build's `memsight` on two real snapshots: the job fails (and its summary says why) on a run
//! that grew past the budget, and passes on the run its baseline was written from.

#[path = "../../core/tests/common/mod.rs"]
mod common;

use std::process::Command;

use common::{real_fixtures_dir, repo};

#[test]
fn the_readme_budget_job_fails_on_growth_and_passes_on_its_baseline_run() {
    let Some(fixtures) = real_fixtures_dir() else {
        return;
    };
    let output = Command::new("bash")
        .arg(repo().join("tests/ci/budget-job.sh"))
        .env("MEMSIGHT", env!("CARGO_BIN_EXE_memsight"))
        .env("MEMSIGHT_REAL_FIXTURES", &fixtures)
        .output()
        .expect("bash runs tests/ci/budget-job.sh");
    assert!(
        output.status.success(),
        "tests/ci/budget-job.sh exited with {:?}\n--- stdout\n{}--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
