//! The hostile corpus, through the built command: files made to exhaust memory (memo bombs,
//! one trace named for many devices, wide integers, a hundred thousand devices, sizes beyond
//! any device, a deep stack shared by many allocations), names holding terminal control
//! sequences, and named pipes where a file is read or written. Each run is bounded in time
//! (killed after [`SECONDS`]) and in memory (its peak resident memory within twice an ordinary
//! snapshot's of the same size, [`FLOOR`] at least), never panics, refuses clearly (with the
//! byte where the core names one) and writes no raw control character.
//!
//! Not the place for the decoder's own refusals in detail (the core's `robustness` tests).
#![cfg(unix)]

mod command;
#[path = "../../core/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use command::{memsight_measured, tempdir};
use common::pickle;

/// Longest any run may take: every case takes well under a second when it is right.
const SECONDS: u64 = 10;

/// The least memory a run is allowed, whatever the ordinary file measured: the program's own
/// size and its allocator's slack, so that tiny files are not compared with noise.
const FLOOR: u64 = 64 << 20;

/// The commands each snapshot is read by.
const COMMANDS: [&[&str]; 3] = [&["overview"], &["table"], &["source"]];

/// What a run must have said.
enum Expect {
    /// It succeeded.
    Read,
    /// It failed, its standard error holding these words and the byte where the file went
    /// wrong.
    RefusedAtByte(&'static str),
    /// It failed, its standard error holding these words.
    Refused(&'static str),
}

/// Peak resident memory of `memsight overview` on an ordinary snapshot of about `bytes`
/// bytes, kept in `dir`.
fn ordinary_peak(dir: &Path, bytes: usize) -> u64 {
    let path = dir.join(format!("ordinary_{bytes}.pickle"));
    std::fs::write(&path, pickle::ordinary(bytes)).unwrap();
    let (output, peak) = memsight_measured(SECONDS, &["overview"], &[path]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    peak
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Fails when `bytes` hold what a terminal acts on: a C0 control other than a newline or a
/// tab, DEL, or a C1 control (U+0080–U+009F, as UTF-8).
fn assert_no_raw_control(what: &str, bytes: &[u8]) {
    let raw = bytes
        .iter()
        .position(|&b| (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f);
    assert!(
        raw.is_none(),
        "{what} holds a raw control byte at {raw:?}: {:?}",
        text(bytes)
    );
    let c1 = text(bytes)
        .chars()
        .find(|c| ('\u{80}'..='\u{9f}').contains(c));
    assert!(c1.is_none(), "{what} holds a raw {c1:?}: {:?}", text(bytes));
}

/// Runs `args`, bounded; checks what every run must do and what this one must have said.
fn run_bounded(args: &[&str], files: &[PathBuf], expect: &Expect, budget: u64) -> Output {
    let (output, peak) = memsight_measured(SECONDS, args, files);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    let said = format!("memsight {args:?} {files:?}:\n{stderr}");
    assert!(!stderr.contains("panicked"), "{said}");
    assert_no_raw_control("standard output", &output.stdout);
    assert_no_raw_control("standard error", &output.stderr);
    assert!(
        peak <= budget,
        "{said}: peak memory {} MiB, more than {} MiB",
        peak >> 20,
        budget >> 20
    );
    match expect {
        Expect::Read => assert!(output.status.success(), "{said}\n{stdout}"),
        Expect::RefusedAtByte(words) | Expect::Refused(words) => {
            assert!(!output.status.success(), "{said}");
            assert!(stderr.contains(words), "{said}");
        }
    }
    if let Expect::RefusedAtByte(_) = expect {
        assert!(stderr.contains("At byte "), "{said}");
    }
    output
}

/// Each hostile file, by every command, against an ordinary file of its size.
fn read_by_every_command(dir: &Path, name: &str, bytes: &[u8], expect: Expect) {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let budget = 2 * ordinary_peak(dir, bytes.len()).max(FLOOR);
    for args in COMMANDS {
        run_bounded(args, std::slice::from_ref(&path), &expect, budget);
    }
}

#[test]
fn files_made_to_exhaust_memory_are_refused_within_bounds() {
    let dir = tempdir("hostile-refused");
    let bomb = pickle::memo_bomb("extra_key", 30);
    assert!(bomb.len() < 500, "{} bytes", bomb.len());
    let cases = [
        ("memo_bomb.pickle", bomb, "memo references expand"),
        (
            "one_trace_many_devices.pickle",
            pickle::one_trace_for_many_devices(1000, 1000),
            "memo references expand",
        ),
        (
            "wide_integer.pickle",
            pickle::wide_integer(200_000),
            "200000 bytes wide",
        ),
        (
            "many_devices.pickle",
            pickle::empty_devices(100_000),
            "100000 devices",
        ),
        (
            "size_2_64.pickle",
            pickle::one_allocation_of(u64::MAX),
            "no device holds more than",
        ),
    ];
    for (name, bytes, words) in cases {
        read_by_every_command(&dir, name, &bytes, Expect::RefusedAtByte(words));
    }
}

/// One memoized stack of 100,000 frames shared by 2,000 allocations (a 7 MB file) is read,
/// and its lines tallied once per stack, within the same bounds as any file of its size.
#[test]
fn a_deep_stack_shared_by_many_allocations_is_read_within_bounds() {
    let dir = tempdir("hostile-stack");
    let bytes = pickle::shared_deep_stack(100_000, 2_000);
    read_by_every_command(&dir, "shared_stack.pickle", &bytes, Expect::Read);
}

/// Frame names and file names holding ESC, BEL, CSI (7-bit and C1), NUL and DEL are shown
/// escaped, by every command and in JSON; so is a snapshot's own path holding them.
#[test]
fn control_characters_in_names_never_reach_the_terminal_raw() {
    let dir = tempdir("hostile-control");
    let bytes = pickle::control_names();
    read_by_every_command(&dir, "control.pickle", &bytes, Expect::Read);
    let path = dir.join("control.pickle");
    let budget = 2 * FLOOR;
    for args in [
        &["table", "--json"][..],
        &["table", "--group-by", "file"],
        &["source", "--json"],
        &["report"],
    ] {
        run_bounded(args, std::slice::from_ref(&path), &Expect::Read, budget);
    }
    let named = dir.join("bad\x1b[2J\x07name.pickle");
    std::fs::write(&named, b"\x1b]0;not a snapshot\x07").unwrap();
    run_bounded(
        &["overview"],
        &[named],
        &Expect::Refused("bad\\e[2J\\x07name.pickle"),
        budget,
    );
}

/// A named pipe (FIFO) made in `dir`.
fn fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    path
}

/// A named pipe given where a file is read (the snapshot, `--baseline`, `--rules`) is refused
/// at once, by name: opened, it would wait for a writer forever.
#[test]
fn named_pipes_given_to_read_are_refused() {
    let dir = tempdir("hostile-fifo-read");
    let pipe = fifo(&dir, "pipe");
    let pipe_arg = pipe.to_str().unwrap();
    let snapshot = dir.join("ordinary.pickle");
    std::fs::write(&snapshot, pickle::ordinary(10_000)).unwrap();
    let budget = 2 * FLOOR;
    let refused = Expect::Refused("it is a named pipe (FIFO), not a regular file");
    for args in COMMANDS {
        run_bounded(args, std::slice::from_ref(&pipe), &refused, budget);
    }
    let snapshot = std::slice::from_ref(&snapshot);
    for args in [
        &["check", "--max-growth", "5", "--baseline", pipe_arg][..],
        &["table", "--rules", pipe_arg],
    ] {
        let output = run_bounded(args, snapshot, &refused, budget);
        assert!(text(&output.stderr).contains(pipe_arg));
    }
    // A rules file larger than any needs to be is refused before it is read whole.
    let large = dir.join("rules.json");
    std::fs::write(&large, vec![b' '; 2 << 20]).unwrap();
    run_bounded(
        &["table", "--rules", large.to_str().unwrap()],
        snapshot,
        &Expect::Refused("it is larger than 1.00 MiB, which no rules file needs to be"),
        budget,
    );
}

/// A named pipe where an output goes (`--write-baseline`, `report --output`, a report
/// folder's page, `digest --output`, a digest folder's file) is refused with exit code 2,
/// before any input is read: writing to it would block until a reader came.
#[test]
fn named_pipes_given_to_write_are_refused() {
    let dir = tempdir("hostile-fifo-write");
    let snapshot = dir.join("run.pickle");
    std::fs::write(&snapshot, pickle::ordinary(10_000)).unwrap();
    let pipe = fifo(&dir, "pipe.md");
    let json_pipe = fifo(&dir, "pipe.json");
    let reports = dir.join("reports");
    std::fs::create_dir(&reports).unwrap();
    let page = fifo(&reports, "run.html");
    let digests = dir.join("digests");
    std::fs::create_dir(&digests).unwrap();
    let digest = fifo(&digests, "run.digest.json");
    let budget = 2 * FLOOR;
    let refused =
        Expect::Refused("cannot be written: it is a named pipe (FIFO), not a regular file");
    let arg = |p: &Path| p.to_str().unwrap().to_string();
    let cases: [(Vec<String>, &Path); 6] = [
        (
            vec!["check".into(), "--write-baseline".into(), arg(&json_pipe)],
            &json_pipe,
        ),
        (vec!["report".into(), "--output".into(), arg(&pipe)], &pipe),
        (
            vec![
                "report".into(),
                "--json".into(),
                "--output".into(),
                arg(&json_pipe),
            ],
            &json_pipe,
        ),
        (
            vec!["report".into(), "--output".into(), arg(&reports)],
            &page,
        ),
        (
            vec!["digest".into(), "--output".into(), arg(&json_pipe)],
            &json_pipe,
        ),
        (
            vec!["digest".into(), "--output".into(), arg(&digests)],
            &digest,
        ),
    ];
    for (args, refused_path) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = run_bounded(&args, std::slice::from_ref(&snapshot), &refused, budget);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(refused_path.to_str().unwrap()), "{stderr}");
        // Refused before the snapshot was read: the refusal is all it says.
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    // A named pipe where a folder of outputs goes is named for what it is.
    let output = run_bounded(
        &["digest", "--output", pipe.to_str().unwrap()],
        std::slice::from_ref(&snapshot),
        &Expect::Refused("it is a named pipe (FIFO), not a folder"),
        budget,
    );
    assert_eq!(output.status.code(), Some(2));
}
