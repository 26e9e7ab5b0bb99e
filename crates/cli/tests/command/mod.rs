//! What the command line's tests share: running the built `memsight`, checking that a run
//! succeeded, reading its JSON lines, and the real fixtures an expectations file names.
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Runs the built `memsight` with `args`, then `files`.
pub fn memsight(args: &[&str], files: &[PathBuf]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_memsight"))
        .args(args)
        .args(files)
        .output()
        .expect("memsight runs")
}

/// Runs the built `memsight` with `args`, then `files`, and fails if it has not finished
/// within `seconds` (it is killed then): for inputs that once made it hang.
pub fn memsight_within(seconds: u64, args: &[&str], files: &[PathBuf]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_memsight"))
        .args(args)
        .args(files)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("memsight runs");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let status = loop {
        if let Some(status) = child.try_wait().expect("memsight is waited for") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("memsight {args:?} {files:?} took more than {seconds} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Fails with the run's standard error unless it succeeded.
pub fn assert_succeeded(output: &Output) {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// What a run of `memsight` with `args`, then `files`, printed; fails unless it succeeded.
pub fn printed(args: &[&str], files: &[PathBuf]) -> String {
    let output = memsight(args, files);
    assert_succeeded(&output);
    String::from_utf8(output.stdout).unwrap()
}

/// The JSON value of each line a run printed.
pub fn json_lines(output: &Output) -> Vec<Value> {
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The files named in `expectations` (its `files` object, or itself) that exist in `dir`:
/// their names and paths.
pub fn named_files<'a>(dir: &Path, expectations: &'a Value) -> (Vec<&'a String>, Vec<PathBuf>) {
    let expectations = expectations.get("files").unwrap_or(expectations);
    let names: Vec<&String> = expectations
        .as_object()
        .unwrap()
        .keys()
        .filter(|name| dir.join(name).is_file())
        .collect();
    let files = names.iter().map(|n| dir.join(n)).collect();
    (names, files)
}

/// A fresh folder for one test's files, named after the test process and `name`.
pub fn tempdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("memsight-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
