//! Decode benchmark: memsight's native decoder against `serde-pickle` and CPython's `pickle.load`.
//!
//! ```text
//! cargo bench -p memsight-core --bench decode -- [--sizes 10k,100k,1M,3M,6M] [--runs 3] [--quick]
//!                               [--seed 1] [--decoders native,serde-pickle,cpython]
//! ```
//!
//! For each size a snapshot is generated once with `tests/python/gen_snapshot.py` (30–40 frames
//! per stack) and cached in `target/bench-data/` (or `$MEMSIGHT_BENCH_DATA`); the file name
//! carries a hash of the generator, so editing the generator regenerates the data. Every
//! measurement runs in a fresh child process (this binary re-executed with the hidden
//! `--child <decoder> <file>` argument, or `python3 -c` for CPython), so its peak RSS (`VmHWM`
//! from `/proc/self/status`, `ru_maxrss` for CPython) belongs to that case alone. Times are the
//! decode alone (open to finished model, excluding process start-up and the final drop), and
//! the table quotes the median over `--runs` runs; peak RSS is the largest over the runs.
//! MB = 10^6 bytes.
//!
//! `serde-pickle` copies every memoised value on each reference, so on large files it needs
//! far more memory than the file: it is skipped when the previous size predicts more than
//! 60 s or 8 GB, and a watchdog kills it past either limit.
//!
//! The child mode is also a convenient profiling entry point:
//! `perf record -g target/release/deps/decode-<hash> --child native FILE`.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// The decoder's targets, printed beside the results.
const TARGET_NATIVE_MBPS: f64 = 400.0;
const TARGET_MODEL_BYTES_PER_ENTRY: f64 = 48.0;
const TARGET_RSS_FRACTION: f64 = 0.5;

/// Limits for the generic `serde-pickle` decoding.
const SERDE_TIME_LIMIT: Duration = Duration::from_secs(60);
const SERDE_RSS_LIMIT_KB: u64 = 8_000_000; // 8 GB
/// A case whose single run takes longer than this is run only once.
const LONG_RUN: Duration = Duration::from_secs(20);

const GENERATOR: &str = "tests/python/gen_snapshot.py";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        return match (args.get(i + 1), args.get(i + 2)) {
            (Some(kind), Some(path)) => child(kind, Path::new(path)),
            _ => {
                eprintln!("usage: --child native|serde-pickle|serde-pickle-strict FILE");
                ExitCode::FAILURE
            }
        };
    }
    if args.is_empty() {
        // `cargo test --benches` runs bench binaries with no arguments (`cargo bench` always
        // passes `--bench`): compiling is the test, the benchmark itself is not run.
        eprintln!("decode benchmark: not run (use `cargo bench -p memsight-core --bench decode`)");
        return ExitCode::SUCCESS;
    }
    match Options::parse(&args) {
        Ok(options) => match run(&options) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("error: {e}\n\n{USAGE}");
            ExitCode::FAILURE
        }
    }
}

const USAGE: &str =
    "usage: cargo bench -p memsight-core --bench decode -- [--sizes 10k,100k,1M,3M,6M] [--runs 3] [--quick]
                                   [--seed 1] [--decoders native,serde-pickle,cpython]
  --sizes     trace entries per generated snapshot (k = 1e3, M = 1e6); default 10k,100k,1M
  --runs      runs per decoder and size (median time, max peak RSS); default 3
  --quick     10k and 100k only (CI smoke)
  --decoders  which decoders to measure; default all three
Data is cached in target/bench-data/ (override with MEMSIGHT_BENCH_DATA).";

// ------------------------------------------------------------------------------------------
// Child mode: one decode, measured from inside the process.

fn child(kind: &str, path: &Path) -> ExitCode {
    let cpu_start = cpu_secs();
    let start = Instant::now();
    let line = match kind {
        "native" => {
            let file = match File::open(path) {
                Ok(f) => f,
                Err(e) => return fail(&format!("{}: {e}", path.display())),
            };
            let snapshot = match memsight_core::decode::decode_reader(file, &mut |_| {}) {
                Ok(s) => s,
                Err(e) => return fail(&format!("decode failed: {e:?}")),
            };
            let secs = start.elapsed().as_secs_f64();
            let cpu = cpu_secs() - cpu_start;
            let entries: usize = snapshot.devices.iter().map(|d| d.trace.len()).sum();
            let line = format!(
                "secs={secs} cpu={cpu} hwm_kb={} heap={} strings={} entries={}",
                vm_hwm_kb(),
                snapshot.heap_bytes(),
                snapshot.strings.heap_bytes(),
                entries
            );
            // Dropping millions of rows is not part of decoding.
            std::mem::forget(snapshot);
            line
        }
        "serde-pickle" | "serde-pickle-strict" => {
            let file = match File::open(path) {
                Ok(f) => f,
                Err(e) => return fail(&format!("{}: {e}", path.display())),
            };
            // serde-pickle stops with "recursive structure found" on torch-shaped files (a
            // shared traceback list holding shared frame dicts); the measured mode lets it
            // replace such references by None so it reads the whole file.
            let options = if kind == "serde-pickle" {
                serde_pickle::DeOptions::new().replace_recursive_structures()
            } else {
                serde_pickle::DeOptions::new()
            };
            let value = match serde_pickle::value_from_reader(
                BufReader::with_capacity(1 << 20, file),
                options,
            ) {
                Ok(v) => v,
                Err(e) => return fail(&format!("serde-pickle failed: {e}")),
            };
            let secs = start.elapsed().as_secs_f64();
            let cpu = cpu_secs() - cpu_start;
            let line = format!("secs={secs} cpu={cpu} hwm_kb={}", vm_hwm_kb());
            std::mem::forget(value);
            line
        }
        other => return fail(&format!("unknown child kind {other:?}")),
    };
    println!("{line}");
    ExitCode::SUCCESS
}

fn fail(message: &str) -> ExitCode {
    eprintln!("{message}");
    ExitCode::FAILURE
}

/// CPU time of this (single-threaded) process so far, in seconds, from `/proc/self/schedstat`.
fn cpu_secs() -> f64 {
    std::fs::read_to_string("/proc/self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(f64::NAN, |ns| ns as f64 / 1e9)
}

/// Peak resident set size of this process, in kB (0 if unknown).
fn vm_hwm_kb() -> u64 {
    status_field_kb("/proc/self/status", "VmHWM:").unwrap_or(0)
}

fn status_field_kb(path: &str, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(path).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

// ------------------------------------------------------------------------------------------
// Options.

struct Options {
    sizes: Vec<u64>,
    runs: usize,
    seed: u64,
    native: bool,
    serde: bool,
    cpython: bool,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let mut o = Options {
            sizes: vec![10_000, 100_000, 1_000_000],
            runs: 3,
            seed: 1,
            native: true,
            serde: true,
            cpython: true,
        };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let mut value = |name: &str| it.next().cloned().ok_or(format!("{name} needs a value"));
            match arg.as_str() {
                // `cargo bench` passes `--bench` to every bench binary.
                "--bench" => {}
                "--quick" => o.sizes = vec![10_000, 100_000],
                "--sizes" => {
                    o.sizes = value("--sizes")?
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(parse_size)
                        .collect::<Result<_, _>>()?
                }
                "--runs" => {
                    o.runs = value("--runs")?
                        .parse()
                        .map_err(|_| "--runs needs a number")?;
                    if o.runs == 0 {
                        return Err("--runs must be at least 1".into());
                    }
                }
                "--seed" => {
                    o.seed = value("--seed")?
                        .parse()
                        .map_err(|_| "--seed needs a number")?
                }
                "--decoders" => {
                    let list = value("--decoders")?;
                    o.native = false;
                    o.serde = false;
                    o.cpython = false;
                    for d in list.split(',') {
                        match d {
                            "native" => o.native = true,
                            "serde-pickle" | "serde" => o.serde = true,
                            "cpython" | "python" => o.cpython = true,
                            other => return Err(format!("unknown decoder {other:?}")),
                        }
                    }
                }
                "-h" | "--help" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        Ok(o)
    }
}

/// `10k` → 10 000, `1M` → 1 000 000, `2500` → 2500.
fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, scale) = match t.as_bytes().last() {
        Some(b'k' | b'K') => (&t[..t.len() - 1], 1_000.0),
        Some(b'm' | b'M') => (&t[..t.len() - 1], 1_000_000.0),
        _ => (t, 1.0),
    };
    let n: f64 = digits.parse().map_err(|_| format!("bad size {text:?}"))?;
    if n <= 0.0 {
        return Err(format!("bad size {text:?}"));
    }
    Ok((n * scale).round() as u64)
}

fn size_label(n: u64) -> String {
    if n >= 1_000_000 && n.is_multiple_of(100_000) {
        let m = n as f64 / 1e6;
        if m.fract() == 0.0 {
            format!("{m:.0}M")
        } else {
            format!("{m:.1}M")
        }
    } else if n >= 1_000 && n.is_multiple_of(1_000) {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

// ------------------------------------------------------------------------------------------
// Orchestration.

/// The repository's root (this crate is `crates/core`).
fn repo_root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("MEMSIGHT_BENCH_DATA") {
        return PathBuf::from(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"));
    let target = if target.is_absolute() {
        target
    } else {
        repo_root().join(target)
    };
    target.join("bench-data")
}

/// FNV-1a of the generator's source: cached files are tied to the generator that made them.
fn generator_hash() -> Result<String, String> {
    let path = repo_root().join(GENERATOR);
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    Ok(format!("{:08x}", h >> 32))
}

/// The cached snapshot for `entries`, generated on first use.
fn snapshot_file(entries: u64, seed: u64, hash: &str) -> Result<PathBuf, String> {
    let dir = data_dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(format!("snapshot-{entries}-seed{seed}-{hash}.pickle"));
    if path.exists() {
        return Ok(path);
    }
    let tmp = path.with_extension(format!("pickle.tmp{}", std::process::id()));
    eprintln!(
        "generating {} ({} entries, seed {seed}) ...",
        path.display(),
        entries
    );
    let started = Instant::now();
    let status = Command::new("python3")
        .current_dir(repo_root())
        .arg(GENERATOR)
        .args([
            "--entries",
            &entries.to_string(),
            "--seed",
            &seed.to_string(),
            "--quiet",
            "-o",
        ])
        .arg(&tmp)
        .status()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    if !status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("{GENERATOR} failed ({status})"));
    }
    std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!("  generated in {:.1} s", started.elapsed().as_secs_f64());
    Ok(path)
}

/// Reads the file once so every decoder starts from the page cache.
fn warm_cache(path: &Path) {
    if let Ok(mut f) = File::open(path) {
        let mut buf = vec![0u8; 1 << 20];
        while matches!(f.read(&mut buf), Ok(n) if n > 0) {}
    }
}

/// One measured run of one decoder.
#[derive(Clone, Debug, Default)]
struct Sample {
    secs: f64,
    cpu: f64,
    hwm_kb: u64,
    heap: u64,
    strings: u64,
    entries: u64,
}

/// What happened to one decoder on one size.
enum Outcome {
    Measured(Vec<Sample>),
    Skipped(String),
    Failed(String),
}

fn parse_sample(stdout: &str) -> Option<Sample> {
    let line = stdout.lines().rev().find(|l| l.contains("secs="))?;
    let mut s = Sample::default();
    for kv in line.split_whitespace() {
        let (k, v) = kv.split_once('=')?;
        match k {
            "secs" => s.secs = v.parse().ok()?,
            "cpu" => s.cpu = v.parse().ok()?,
            "hwm_kb" => s.hwm_kb = v.parse().ok()?,
            "heap" => s.heap = v.parse().ok()?,
            "strings" => s.strings = v.parse().ok()?,
            "entries" => s.entries = v.parse().ok()?,
            _ => {}
        }
    }
    Some(s)
}

/// Runs `cmd` to completion, killing it when it exceeds `limit` or `rss_limit_kb`.
/// Returns its stdout, or why it failed.
fn run_child(
    mut cmd: Command,
    limit: Option<Duration>,
    rss_limit_kb: Option<u64>,
) -> Result<String, String> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start: {e}"))?;
    let started = Instant::now();
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak_kb = 0u64;
    // Drain stdout/stderr on threads so a chatty child never blocks.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if let Some(rss) = status_field_kb(&status_path, "VmRSS:") {
            peak_kb = peak_kb.max(rss);
        }
        let over_time = limit.is_some_and(|l| started.elapsed() > l);
        let over_rss = rss_limit_kb.is_some_and(|l| peak_kb > l);
        if over_time || over_rss {
            let _ = child.kill();
            let _ = child.wait();
            return Err(if over_rss {
                format!(
                    "killed: over {:.0} GB after {:.0} s",
                    rss_limit_kb.unwrap() as f64 / 1e6,
                    started.elapsed().as_secs_f64()
                )
            } else {
                format!(
                    "killed: over {:.0} s (at {:.1} GB)",
                    limit.unwrap().as_secs_f64(),
                    peak_kb as f64 / 1e6
                )
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = out_thread.join().unwrap_or_default();
    let stderr = err_thread.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("{status}: {}", stderr.trim()));
    }
    Ok(stdout)
}

fn measure(
    runs: usize,
    label: &str,
    limit: Option<Duration>,
    rss_limit_kb: Option<u64>,
    mut make: impl FnMut() -> Command,
) -> Outcome {
    let mut samples = Vec::new();
    for run in 0..runs {
        match run_child(make(), limit, rss_limit_kb) {
            Ok(stdout) => match parse_sample(&stdout) {
                Some(s) => {
                    eprintln!(
                        "  {label} run {}: {:.3} s (CPU {:.3} s), peak RSS {:.1} MB",
                        run + 1,
                        s.secs,
                        s.cpu,
                        s.hwm_kb as f64 / 1e3
                    );
                    let long = s.secs > LONG_RUN.as_secs_f64();
                    samples.push(s);
                    if long {
                        eprintln!(
                            "  {label}: a run took over {} s, measuring it once",
                            LONG_RUN.as_secs()
                        );
                        break;
                    }
                }
                None => return Outcome::Failed(format!("unreadable output: {}", stdout.trim())),
            },
            Err(e) => {
                eprintln!("  {label}: {e}");
                return if e.starts_with("killed") {
                    Outcome::Skipped(e)
                } else {
                    Outcome::Failed(e)
                };
            }
        }
    }
    Outcome::Measured(samples)
}

const PYTHON_LOAD: &str = r#"
import pickle, resource, sys, time
f = open(sys.argv[1], "rb")
c = time.process_time()
t = time.perf_counter()
obj = pickle.load(f)
secs = time.perf_counter() - t
cpu = time.process_time() - c
print("secs=%r cpu=%r hwm_kb=%d" % (secs, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
sys.stdout.flush()
import os
os._exit(0)
"#;

struct Row {
    entries_requested: u64,
    file_bytes: u64,
    native: Option<Outcome>,
    serde: Option<Outcome>,
    cpython: Option<Outcome>,
}

fn run(o: &Options) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let hash = generator_hash()?;
    let mut rows = Vec::new();
    // serde-pickle's cost per file byte at the largest size measured so far: (s/B, kB/B).
    let mut serde_rate: Option<(f64, f64)> = None;
    let mut sizes = o.sizes.clone();
    sizes.sort_unstable();
    sizes.dedup();
    let mut notes = Vec::new();
    for &entries in &sizes {
        let path = snapshot_file(entries, o.seed, &hash)?;
        let file_bytes = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
        eprintln!(
            "{} entries: {} ({:.1} MB)",
            size_label(entries),
            path.display(),
            file_bytes as f64 / 1e6
        );
        warm_cache(&path);
        let mut row = Row {
            entries_requested: entries,
            file_bytes,
            native: None,
            serde: None,
            cpython: None,
        };
        if o.native {
            row.native = Some(measure(o.runs, "native", None, None, || {
                let mut c = Command::new(&exe);
                c.arg("--child").arg("native").arg(&path);
                c
            }));
        }
        if o.serde && entries == sizes[0] {
            // Can serde-pickle read the file as written, with its default options?
            let mut c = Command::new(&exe);
            c.arg("--child").arg("serde-pickle-strict").arg(&path);
            let verdict = match run_child(c, Some(SERDE_TIME_LIMIT), Some(SERDE_RSS_LIMIT_KB)) {
                Ok(_) => "reads it".to_string(),
                Err(e) => format!("fails: {}", e.lines().last().unwrap_or("").trim()),
            };
            eprintln!("  serde-pickle with default options: {verdict}");
            notes.push(format!(
                "serde-pickle with default `DeOptions` on the {} file: {verdict}. The serde-pickle columns use \
                 `DeOptions::replace_recursive_structures()`, which lets it read the whole file but replaces \
                 shared references it cannot resolve by `None` (so its tree is incomplete).",
                size_label(entries)
            ));
        }
        if o.serde {
            let predicted =
                serde_rate.map(|(s, kb)| (s * file_bytes as f64, kb * file_bytes as f64));
            row.serde = Some(match predicted {
                Some((secs, kb))
                    if secs > SERDE_TIME_LIMIT.as_secs_f64() || kb > SERDE_RSS_LIMIT_KB as f64 =>
                {
                    let why = format!("skipped: predicted {:.0} s, {:.1} GB", secs, kb / 1e6);
                    eprintln!("  serde-pickle: {why}");
                    Outcome::Skipped(why)
                }
                _ => measure(
                    o.runs,
                    "serde-pickle",
                    Some(SERDE_TIME_LIMIT),
                    Some(SERDE_RSS_LIMIT_KB),
                    || {
                        let mut c = Command::new(&exe);
                        c.arg("--child").arg("serde-pickle").arg(&path);
                        c
                    },
                ),
            });
            if let Some(Outcome::Measured(samples)) = &row.serde {
                let secs = median(samples.iter().map(|s| s.secs).collect());
                let kb = samples.iter().map(|s| s.hwm_kb).max().unwrap_or(0) as f64;
                serde_rate = Some((secs / file_bytes as f64, kb / file_bytes as f64));
            }
        }
        if o.cpython {
            row.cpython = Some(measure(o.runs, "cpython", None, None, || {
                let mut c = Command::new("python3");
                c.arg("-c").arg(PYTHON_LOAD).arg(&path);
                c
            }));
        }
        rows.push(row);
    }
    print!("{}", table(o, &rows));
    for note in notes {
        println!("\n{note}");
    }
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn mark(ok: bool) -> &'static str {
    if ok {
        "✓"
    } else {
        "✗"
    }
}

/// Medians of a measured case: wall seconds, MB/s by wall and by CPU time; max peak RSS (kB).
struct Summary {
    secs: f64,
    mbps: f64,
    cpu_mbps: f64,
    hwm: u64,
}

/// Median throughput and max peak RSS of a measured outcome, or the reason there are none.
fn speed_cells(outcome: &Option<Outcome>, file_bytes: u64) -> (String, String, Option<Summary>) {
    match outcome {
        None => ("–".into(), "–".into(), None),
        Some(Outcome::Skipped(why)) | Some(Outcome::Failed(why)) => (why.clone(), "–".into(), None),
        Some(Outcome::Measured(samples)) => {
            let secs = median(samples.iter().map(|s| s.secs).collect());
            let cpu = median(samples.iter().map(|s| s.cpu).collect());
            let mbps = file_bytes as f64 / 1e6 / secs;
            let cpu_mbps = file_bytes as f64 / 1e6 / cpu;
            let hwm = samples.iter().map(|s| s.hwm_kb).max().unwrap_or(0);
            (
                format!("{mbps:.0} ({secs:.2} s) · CPU {cpu_mbps:.0}"),
                format!("{:.0}", hwm as f64 / 1e3),
                Some(Summary {
                    secs,
                    mbps,
                    cpu_mbps,
                    hwm,
                }),
            )
        }
    }
}

/// `commit abc1234` (plus a note when `src/` has uncommitted changes), if git is available.
fn source_version() -> Option<String> {
    let git = |args: &[&str]| {
        Command::new("git")
            .current_dir(repo_root())
            .args(args)
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short", "HEAD"])?;
    let dirty = git(&[
        "status",
        "--porcelain",
        "--",
        "src",
        "Cargo.toml",
        "Cargo.lock",
    ])
    .is_some_and(|s| !s.is_empty());
    Some(if dirty {
        format!("commit {commit} + uncommitted changes in src/")
    } else {
        format!("commit {commit}")
    })
}

fn table(o: &Options, rows: &[Row]) -> String {
    let mut t = String::new();
    if let Some(version) = source_version() {
        let _ = writeln!(t, "\nmemsight at {version}.");
    }
    let _ = writeln!(
        t,
        "\nTargets: native ≥ {TARGET_NATIVE_MBPS:.0} MB/s; model ≤ {TARGET_MODEL_BYTES_PER_ENTRY:.0} B/entry \
         (plus interned strings); native peak RSS < {TARGET_RSS_FRACTION} × file size at 6M entries.\n\
         Median of {} run(s) per cell (runs over {} s once); peak RSS is the largest of the runs; MB = 10^6 bytes.\n\
         Throughput is file bytes / median wall time (decode only), then file bytes / median CPU time of the \
         decoding process: on a busy machine the wall time includes waiting for a core.\n",
        o.runs,
        LONG_RUN.as_secs()
    );
    let _ = writeln!(
        t,
        "| entries | file MB | native MB/s wall (time) · CPU | native peak RSS MB (× file) | model B/entry | strings KB \
         | serde-pickle MB/s wall (time) · CPU | serde-pickle peak RSS MB | CPython pickle.load MB/s wall (time) · CPU | CPython peak RSS MB \
         | native speed-up over CPython (CPU time) |"
    );
    let _ = writeln!(
        t,
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for row in rows {
        let file_mb = row.file_bytes as f64 / 1e6;
        let (mut native_speed, mut native_rss, native) = speed_cells(&row.native, row.file_bytes);
        let (mut per_entry, mut strings) = ("–".to_string(), "–".to_string());
        let mut entries = size_label(row.entries_requested);
        if let (
            Some(Summary {
                secs,
                mbps,
                cpu_mbps,
                hwm,
            }),
            Some(Outcome::Measured(samples)),
        ) = (native, &row.native)
        {
            let s = &samples[0];
            entries = format!("{} ({})", size_label(row.entries_requested), s.entries);
            native_speed = format!(
                "{mbps:.0} {} ({secs:.2} s) · CPU {cpu_mbps:.0} {}",
                mark(mbps >= TARGET_NATIVE_MBPS),
                mark(cpu_mbps >= TARGET_NATIVE_MBPS)
            );
            let fraction = hwm as f64 * 1e3 / row.file_bytes as f64;
            native_rss = format!("{native_rss} ({fraction:.2}×)");
            if row.entries_requested >= 6_000_000 {
                native_rss = format!("{native_rss} {}", mark(fraction < TARGET_RSS_FRACTION));
            }
            if s.entries > 0 {
                let b = (s.heap - s.strings) as f64 / s.entries as f64;
                per_entry = format!("{b:.1} {}", mark(b <= TARGET_MODEL_BYTES_PER_ENTRY));
            }
            strings = format!("{:.0}", s.strings as f64 / 1e3);
        }
        let (serde_speed, serde_rss, _) = speed_cells(&row.serde, row.file_bytes);
        let (py_speed, py_rss, _) = speed_cells(&row.cpython, row.file_bytes);
        let median_cpu = |o: &Option<Outcome>| match o {
            Some(Outcome::Measured(samples)) => {
                Some(median(samples.iter().map(|s| s.cpu).collect()))
            }
            _ => None,
        };
        let speedup = match (median_cpu(&row.native), median_cpu(&row.cpython)) {
            (Some(n), Some(p)) if n > 0.0 => format!("{:.1}×", p / n),
            _ => "–".into(),
        };
        let _ = writeln!(
            t,
            "| {entries} | {file_mb:.1} | {native_speed} | {native_rss} | {per_entry} | {strings} \
             | {serde_speed} | {serde_rss} | {py_speed} | {py_rss} | {speedup} |"
        );
    }
    t
}
