//! Every file named on the command line is read only when it is a regular file: a named pipe
//! given as a snapshot, a baseline or a rules file, or a device, is refused at once with what it
//! is, never opened (a pipe nobody writes to would block forever).

mod command;
#[path = "../../core/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};

use command::{memsight_within, tempdir};
use common::repo;

/// A named pipe at `path`, or `None` (the test then skips) where none can be made.
fn named_pipe(path: &Path) -> Option<PathBuf> {
    let made = std::process::Command::new("mkfifo").arg(path).status();
    if made.is_ok_and(|s| s.success()) {
        Some(path.to_path_buf())
    } else {
        eprintln!("skipped: mkfifo cannot make a named pipe here");
        None
    }
}

/// Runs `args` then `files`, which must fail at once with `code`, saying `words`.
fn refused(args: &[&str], files: &[PathBuf], code: i32, words: &str) {
    let output = memsight_within(10, args, files);
    let error = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "{error}");
    assert!(error.contains(words), "{error}");
}

#[test]
fn a_named_pipe_is_refused_as_a_snapshot_a_baseline_and_rules() {
    let dir = tempdir("paths-fifo");
    let Some(pipe) = named_pipe(&dir.join("rank0.pickle")) else {
        return;
    };
    let small = repo().join("tests/fixtures/small.json");
    let words = "it is a named pipe (FIFO), not a regular file";
    refused(&["overview"], std::slice::from_ref(&pipe), 1, words);
    refused(
        &["check", "--max-peak", "1TiB"],
        std::slice::from_ref(&pipe),
        2,
        words,
    );
    let baseline = pipe.to_str().unwrap();
    refused(
        &["check", "--max-peak", "1TiB", "--baseline", baseline],
        std::slice::from_ref(&small),
        2,
        words,
    );
    refused(
        &["categories", "--rules", baseline],
        std::slice::from_ref(&small),
        2,
        words,
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn a_device_is_refused() {
    refused(
        &["overview"],
        &[PathBuf::from("/dev/null")],
        1,
        "it is a device, not a regular file",
    );
}
