//! What the command line's tests share: running the built `memsight` (within a time, and
//! with its peak memory), checking that a run succeeded, reading its JSON lines, and the
//! real fixtures an expectations file names.
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
    let (mut child, drained) = spawn_drained(args, files);
    let status = wait_until(seconds, args, files, &mut child, |child| {
        child.try_wait().expect("memsight is waited for")
    });
    drained.output(status)
}

/// [`memsight_within`], with the run's peak resident memory in bytes, as the system counted
/// it for that process (`wait4`).
#[cfg(unix)]
pub fn memsight_measured(seconds: u64, args: &[&str], files: &[PathBuf]) -> (Output, u64) {
    use std::os::unix::process::ExitStatusExt;
    let (mut child, drained) = spawn_drained(args, files);
    let pid = child.id() as libc::pid_t;
    let mut peak_kib = 0;
    let status = wait_until(seconds, args, files, &mut child, |_| {
        let mut status = 0;
        // SAFETY: `rusage` is plain data the call fills in; `pid` is this test's own child,
        // not yet reaped (it is reaped here, once).
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let done = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        assert!(done >= 0, "memsight is waited for");
        (done == pid).then(|| {
            // Linux counts kibibytes.
            peak_kib = usage.ru_maxrss as u64;
            std::process::ExitStatus::from_raw(status)
        })
    });
    (drained.output(status), peak_kib * 1024)
}

/// A running `memsight` whose standard output and error are read as they come (a full pipe
/// would stop it).
struct Drained {
    stdout: std::thread::JoinHandle<Vec<u8>>,
    stderr: std::thread::JoinHandle<Vec<u8>>,
}

impl Drained {
    fn output(self, status: std::process::ExitStatus) -> Output {
        Output {
            status,
            stdout: self.stdout.join().unwrap(),
            stderr: self.stderr.join().unwrap(),
        }
    }
}

fn spawn_drained(args: &[&str], files: &[PathBuf]) -> (std::process::Child, Drained) {
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
    (child, Drained { stdout, stderr })
}

/// Polls `finished` until it gives `child`'s exit status; past `seconds`, kills it and fails.
fn wait_until<T>(
    seconds: u64,
    args: &[&str],
    files: &[PathBuf],
    child: &mut std::process::Child,
    mut finished: impl FnMut(&mut std::process::Child) -> Option<T>,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        if let Some(status) = finished(child) {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("memsight {args:?} {files:?} took more than {seconds} s");
        }
        std::thread::sleep(Duration::from_millis(20));
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
