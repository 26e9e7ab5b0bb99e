//! Which lines of code hold memory: for a set of allocations (those a table scope chooses:
//! alive at a moment, made in a window), each source line of their stacks with the bytes made
//! there (the line is the allocation's call site, as the table groups call sites) and the
//! bytes passing through it (the line is anywhere in the allocation's stack as the user reads
//! it, counted once per allocation), by file, with each function's total: lines of Python
//! code, the user's and libraries'. The numbers behind a source view's margins.
//!
//! Also what any source view needs besides the numbers: which file a path from another machine
//! is (`match_by_suffix`), the text a snapshot carries for it (`carried_text`), where a
//! function's total goes (`def_line`), how strongly a line is highlighted (`heat`), and two
//! runs' lines side by side (`side_by_side`). Not the place for choosing the allocations (the
//! table's scopes) or for reading files.

use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

use super::replay::DeviceFacts;
use super::stacks::{allocation_stack, stack_text, FrameClass};
use crate::model::{Device, Snapshot, StackId};

/// Allocations and their requested bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    pub count: u32,
    pub bytes: u64,
}

impl Tally {
    pub fn add(&mut self, bytes: u64) {
        self.count += 1;
        self.bytes += bytes;
    }

    /// Adds another tally's allocations and bytes.
    pub fn merge(&mut self, other: Tally) {
        self.count += other.count;
        self.bytes += other.bytes;
    }
}

/// One line of a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineBytes {
    pub line: i64,
    /// The function the line is in, as the frames name it.
    pub function: String,
    /// Allocations whose call site is this line.
    pub made: Tally,
    /// Allocations whose stack passes through this line (`made` among them).
    pub through: Tally,
}

/// One function of a file: the allocations whose stack passes through any of its lines.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionBytes {
    pub name: String,
    /// Its first line that holds memory.
    pub first_line: i64,
    pub through: Tally,
}

/// One file's lines that hold memory, in line order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileBytes {
    /// As the frames name it.
    pub path: String,
    /// Allocations made at any of its lines.
    pub made: Tally,
    /// Allocations whose stack passes through any of its lines.
    pub through: Tally,
    /// The user's code (not a library's), as its frames are classed.
    #[serde(default)]
    pub user: bool,
    pub lines: Vec<LineBytes>,
    /// Largest first.
    pub functions: Vec<FunctionBytes>,
}

/// What one stack contributes: its call site's place and every place it passes, once each.
struct Places {
    made: Option<(usize, i64)>,
    /// Files of the user's code among `files`.
    user: Vec<usize>,
    through: Vec<(usize, i64, usize)>,
    /// The files of `through`, once each.
    files: Vec<usize>,
}

/// The files whose lines the allocations `chosen` (indices into `facts.allocations`) of
/// `device` pass through, the most memory first.
pub fn lines_of(
    snapshot: &Snapshot,
    device: &Device,
    facts: &DeviceFacts,
    chosen: &[u32],
) -> Vec<FileBytes> {
    let mut paths: Vec<String> = Vec::new();
    let mut path_ids: FxHashMap<String, usize> = FxHashMap::default();
    let mut functions: Vec<String> = Vec::new();
    let mut function_ids: FxHashMap<String, usize> = FxHashMap::default();
    // (path, line) → (function, made, through); (path, function) → through.
    let mut by_line: FxHashMap<(usize, i64), (usize, Tally, Tally)> = FxHashMap::default();
    let mut by_function: FxHashMap<(usize, usize), (i64, Tally)> = FxHashMap::default();
    // A file's own total: each allocation once, however many of its lines it passes.
    let mut file_through: FxHashMap<usize, Tally> = FxHashMap::default();
    let mut user_files: FxHashSet<usize> = FxHashSet::default();
    // The allocations by stack first: each stack's lines are walked once, however many
    // allocations share it (a shared stack of 100,000 frames walked per allocation took
    // minutes).
    let mut by_stack: FxHashMap<StackId, Tally> = FxHashMap::default();
    let mut stacks: Vec<StackId> = Vec::new();
    for &i in chosen {
        let a = facts.allocations.at(i as usize);
        let stack = allocation_stack(&device.trace, &a);
        by_stack
            .entry(stack)
            .or_insert_with(|| {
                stacks.push(stack);
                Tally::default()
            })
            .add(a.size);
    }
    for stack in stacks {
        let tally = by_stack[&stack];
        let here = {
            let text = stack_text(snapshot, stack, true);
            let id_of = |table: &mut Vec<String>, ids: &mut FxHashMap<String, usize>, s: &str| {
                *ids.entry(s.to_string()).or_insert_with(|| {
                    table.push(s.to_string());
                    table.len() - 1
                })
            };
            let mut seen = FxHashSet::default();
            let mut through = Vec::new();
            let mut user = Vec::new();
            // Lines of Python code, the user's and libraries': what a source view shows.
            let python = |f: &super::stacks::FrameText| {
                matches!(f.class, FrameClass::UserPython | FrameClass::LibraryPython)
            };
            for frame in text.frames.iter().filter(|f| python(f)) {
                let path = id_of(&mut paths, &mut path_ids, &frame.filename);
                let function = id_of(&mut functions, &mut function_ids, &frame.name);
                if frame.class == FrameClass::UserPython {
                    user.push(path);
                }
                if seen.insert((path, frame.line)) {
                    through.push((path, frame.line, function));
                }
            }
            let made = text
                .top_frame_index
                .and_then(|k| text.frames.get(k as usize))
                .filter(|f| python(f))
                .map(|f| (path_ids[&f.filename], f.line));
            let mut files: Vec<usize> = through.iter().map(|&(p, _, _)| p).collect();
            files.sort_unstable();
            files.dedup();
            Places {
                made,
                user,
                through,
                files,
            }
        };
        let mut functions_seen = FxHashSet::default();
        for &(path, line, function) in &here.through {
            let entry = by_line.entry((path, line)).or_insert((
                function,
                Tally::default(),
                Tally::default(),
            ));
            entry.2.merge(tally);
            if functions_seen.insert((path, function)) {
                let f = by_function
                    .entry((path, function))
                    .or_insert((line, Tally::default()));
                f.0 = f.0.min(line);
                f.1.merge(tally);
            }
        }
        for &path in &here.files {
            file_through.entry(path).or_default().merge(tally);
        }
        user_files.extend(here.user.iter().copied());
        if let Some((path, line)) = here.made {
            if let Some(entry) = by_line.get_mut(&(path, line)) {
                entry.1.merge(tally);
            }
        }
    }
    let mut files: Vec<FileBytes> = paths
        .iter()
        .map(|path| FileBytes {
            path: path.clone(),
            made: Tally::default(),
            through: Tally::default(),
            user: false,
            lines: Vec::new(),
            functions: Vec::new(),
        })
        .collect();
    for path in user_files {
        files[path].user = true;
    }
    for ((path, line), (function, made, through)) in by_line {
        let file = &mut files[path];
        file.made.count += made.count;
        file.made.bytes += made.bytes;
        file.lines.push(LineBytes {
            line,
            function: functions[function].clone(),
            made,
            through,
        });
    }
    for ((path, function), (first_line, through)) in by_function {
        files[path].functions.push(FunctionBytes {
            name: functions[function].clone(),
            first_line,
            through,
        });
    }
    for (path, tally) in file_through {
        files[path].through = tally;
    }
    for file in &mut files {
        file.lines.sort_by_key(|l| l.line);
        file.functions.sort_by(|a, b| {
            b.through
                .bytes
                .cmp(&a.through.bytes)
                .then(a.first_line.cmp(&b.first_line))
        });
    }
    files.retain(|f| f.through.count > 0);
    files.sort_by(|a, b| {
        b.through
            .bytes
            .cmp(&a.through.bytes)
            .then(a.path.cmp(&b.path))
    });
    files
}

/// Whether a file of a checkout (`path` inside it, `/`-separated) is one a source view looks
/// for: Python code, outside hidden folders, virtual environments' `site-packages` and
/// `__pycache__` (the user's code, not installed copies of libraries).
pub fn is_checkout_source(path: &str) -> bool {
    // A hidden file is skipped as a hidden folder is.
    path.ends_with(".py") && !path.split('/').any(is_skipped_folder)
}

/// A folder of a checkout a source view does not look in: hidden, a virtual environment's
/// `site-packages`, `__pycache__`.
pub fn is_skipped_folder(name: &str) -> bool {
    name.starts_with('.') || name == "site-packages" || name == "__pycache__"
}

/// Of `candidates` (paths of files the user has, `/`-separated), the one that is `wanted` (a
/// path as the snapshot's frames name it, on another machine): the one sharing the most whole
/// trailing parts with it, at least its file name; `None` when none shares its file name or
/// two share as many parts.
pub fn match_by_suffix<S: AsRef<str>>(wanted: &str, candidates: &[S]) -> Option<usize> {
    let parts = |path: &str| -> Vec<String> {
        path.split(['/', '\\'])
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect()
    };
    let wanted = parts(wanted);
    let shared = |candidate: &str| {
        let candidate = parts(candidate);
        wanted
            .iter()
            .rev()
            .zip(candidate.iter().rev())
            .take_while(|(a, b)| a == b)
            .count()
    };
    let mut best: Option<(usize, usize)> = None;
    let mut tied = false;
    for (i, candidate) in candidates.iter().enumerate() {
        let n = shared(candidate.as_ref());
        if n == 0 {
            continue;
        }
        match best {
            Some((_, m)) if m > n => {}
            Some((_, m)) if m == n => tied = true,
            _ => {
                best = Some((i, n));
                tied = false;
            }
        }
    }
    best.filter(|_| !tied).map(|(i, _)| i)
}

/// A place in Python code a view can open: a file, at a line or not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourcePlace {
    /// As the frames name it.
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<i64>,
}

impl SourcePlace {
    /// A Python file (`.py`), at no line.
    pub fn of_file(path: &str) -> Option<SourcePlace> {
        path.ends_with(".py").then(|| SourcePlace {
            path: path.to_string(),
            line: None,
        })
    }

    /// The place a frame written `file:line:name` names, when it is Python code.
    pub fn of_frame_text(frame: &str) -> Option<SourcePlace> {
        let mut parts = frame.rsplitn(3, ':');
        let (_name, line, path) = (parts.next()?, parts.next()?, parts.next()?);
        let line = line.parse::<i64>().ok()?;
        SourcePlace::of_file(path).map(|p| SourcePlace {
            line: Some(line),
            ..p
        })
    }
}

/// Of `files` (as [`lines_of`] lists them), the one `path` names: the same path, else the
/// longest shared end (a path from another run or machine).
pub fn find_file(files: &[FileBytes], path: &str) -> Option<usize> {
    files.iter().position(|f| f.path == path).or_else(|| {
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        match_by_suffix(path, &paths)
    })
}

/// The snapshot's own copy of the text of `path` (`source_code`): its index there, by the
/// same path, else the longest shared end.
pub fn carried_text(snapshot: &Snapshot, path: &str) -> Option<usize> {
    let carried = &snapshot.source_code;
    carried.iter().position(|(p, _)| p == path).or_else(|| {
        let paths: Vec<&str> = carried.iter().map(|(p, _)| p.as_str()).collect();
        match_by_suffix(path, &paths)
    })
}

/// The line (from 1) of the `def` of `function`, the nearest at or above `first_line` (its
/// first line with memory) indented less than that line: where a view puts the function's
/// total. `None` when the text has no such line (a file changed since, a lambda, module
/// code).
pub fn def_line(text: &str, function: &str, first_line: i64) -> Option<i64> {
    let lines: Vec<&str> = text.lines().collect();
    let at = usize::try_from(first_line).ok()?.checked_sub(1)?;
    let indent = |l: &str| l.len() - l.trim_start().len();
    let body_indent = indent(lines.get(at)?);
    (0..=at).rev().find_map(|k| {
        let line = lines[k];
        let code = line.trim_start();
        let code = code.strip_prefix("async ").unwrap_or(code);
        let named = code
            .strip_prefix("def ")
            .map(str::trim_start)
            .and_then(|rest| rest.strip_prefix(function))
            .is_some_and(|rest| rest.trim_start().starts_with(['(', '[']));
        (named && (k == at || indent(line) < body_indent)).then_some(k as i64 + 1)
    })
}

/// Levels of highlight a line can have: 0 for none, up to `HEAT_LEVELS`.
pub const HEAT_LEVELS: u8 = 5;

/// How strongly a line holding `bytes` is highlighted when the file's busiest line holds
/// `most`: by the share's order of magnitude (levels a decade apart from 1‰ up), so a line of a
/// few kilobytes beside one of gigabytes still shows; 0 for no bytes.
pub fn heat(bytes: u64, most: u64) -> u8 {
    if bytes == 0 || most == 0 {
        return 0;
    }
    let share = bytes as f64 / most as f64;
    // 1 → 5, 0.1 → 4, 0.01 → 3, 0.001 → 2, less → 1.
    let level = HEAT_LEVELS as f64 + share.log10().floor();
    level.clamp(1.0, HEAT_LEVELS as f64) as u8
}

/// One line of a file in two runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinePair {
    pub line: i64,
    pub function: String,
    pub a: LineTallies,
    pub b: LineTallies,
}

/// A line's made-here and passing-through tallies in one run (zero when it holds nothing
/// there).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineTallies {
    pub made: Tally,
    pub through: Tally,
}

/// One function of a file in two runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionPair {
    pub name: String,
    pub first_line: i64,
    pub a: Tally,
    pub b: Tally,
}

/// The lines of one file in run A and run B (either may not hold it), by line number, and
/// its functions, the largest change first. Lines match by number: the two runs are taken
/// to run the same text.
pub fn side_by_side(
    a: Option<&FileBytes>,
    b: Option<&FileBytes>,
) -> (Vec<LinePair>, Vec<FunctionPair>) {
    let mut lines: std::collections::BTreeMap<i64, LinePair> = Default::default();
    let mut functions: Vec<FunctionPair> = Vec::new();
    for (file, is_a) in [(a, true), (b, false)] {
        let Some(file) = file else { continue };
        for l in &file.lines {
            let pair = lines.entry(l.line).or_insert_with(|| LinePair {
                line: l.line,
                function: l.function.clone(),
                a: LineTallies::default(),
                b: LineTallies::default(),
            });
            let side = if is_a { &mut pair.a } else { &mut pair.b };
            *side = LineTallies {
                made: l.made,
                through: l.through,
            };
        }
        for f in &file.functions {
            let k = match functions.iter().position(|p| p.name == f.name) {
                Some(k) => k,
                None => {
                    functions.push(FunctionPair {
                        name: f.name.clone(),
                        first_line: f.first_line,
                        a: Tally::default(),
                        b: Tally::default(),
                    });
                    functions.len() - 1
                }
            };
            let pair = &mut functions[k];
            pair.first_line = pair.first_line.min(f.first_line);
            if is_a {
                pair.a = f.through;
            } else {
                pair.b = f.through;
            }
        }
    }
    functions.sort_by_key(|f| {
        (
            std::cmp::Reverse((f.b.bytes as i128 - f.a.bytes as i128).unsigned_abs()),
            f.first_line,
        )
    });
    (lines.into_values().collect(), functions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_from_another_machine_is_matched_by_its_longest_shared_end() {
        let have = [
            "proj/model.py",
            "proj/train.py",
            "proj/layers/model.py",
            "other/utils.py",
        ];
        assert_eq!(
            match_by_suffix("/home/lin/work/proj/train.py", &have),
            Some(1)
        );
        assert_eq!(
            match_by_suffix("/mnt/x/proj/layers/model.py", &have),
            Some(2),
            "the most shared parts win"
        );
        assert_eq!(match_by_suffix("/a/b/missing.py", &have), None);
        // Two equally good: not guessed.
        assert_eq!(
            match_by_suffix("/srv/model.py", &["a/model.py", "b/model.py"]),
            None
        );
        assert_eq!(match_by_suffix("C:\\code\\proj\\train.py", &have), Some(1));
    }

    #[test]
    fn a_function_total_goes_on_its_def_line() {
        let text = "import torch\n\nclass M:\n    def forward(self, x):\n        y = x * 2\n        def inner(z):\n            return z\n        return inner(y)\n\nasync def forward (a):\n    pass\n";
        assert_eq!(def_line(text, "forward", 5), Some(4));
        assert_eq!(def_line(text, "forward", 8), Some(4), "past a nested def");
        assert_eq!(def_line(text, "inner", 7), Some(6));
        assert_eq!(
            def_line(text, "forward", 11),
            Some(10),
            "async, a space before ("
        );
        assert_eq!(def_line(text, "forward", 4), Some(4), "the def line itself");
        assert_eq!(def_line(text, "missing", 5), None);
        assert_eq!(def_line(text, "forward", 99), None, "beyond the text");
        assert_eq!(def_line(text, "forward", 0), None);
        assert_eq!(def_line(text, "forwar", 5), None, "a whole name");
    }

    #[test]
    fn heat_is_a_decade_per_level() {
        assert_eq!(heat(0, 100), 0);
        assert_eq!(heat(100, 100), 5);
        assert_eq!(heat(10, 100), 4);
        assert_eq!(heat(11, 100), 4);
        assert_eq!(heat(9, 100), 3);
        assert_eq!(heat(1, 1_000_000), 1);
        assert_eq!(heat(5, 0), 0);
    }

    #[test]
    fn two_runs_side_by_side_keep_every_line_of_either() {
        let tally = |count, bytes| Tally { count, bytes };
        let line = |line, made: Tally, through: Tally| LineBytes {
            line,
            function: "f".into(),
            made,
            through,
        };
        let file = |lines: Vec<LineBytes>, through: Tally| FileBytes {
            path: "m.py".into(),
            made: Tally::default(),
            through,
            user: true,
            lines,
            functions: vec![FunctionBytes {
                name: "f".into(),
                first_line: 3,
                through,
            }],
        };
        let a = file(
            vec![
                line(3, tally(1, 10), tally(1, 10)),
                line(5, tally(0, 0), tally(1, 10)),
            ],
            tally(1, 10),
        );
        let b = file(vec![line(4, tally(2, 50), tally(2, 50))], tally(2, 50));
        let (lines, functions) = side_by_side(Some(&a), Some(&b));
        assert_eq!(
            lines.iter().map(|l| l.line).collect::<Vec<_>>(),
            vec![3, 4, 5]
        );
        assert_eq!(lines[0].a.made, tally(1, 10));
        assert_eq!(lines[0].b.made, Tally::default());
        assert_eq!(lines[1].b.made, tally(2, 50));
        assert_eq!(functions.len(), 1);
        assert_eq!(
            (functions[0].a, functions[0].b),
            (tally(1, 10), tally(2, 50))
        );
        let (only_b, _) = side_by_side(None, Some(&b));
        assert_eq!(only_b.len(), 1);
        assert_eq!(only_b[0].a, LineTallies::default());
    }

    #[test]
    fn a_place_is_python_code_only() {
        assert_eq!(
            SourcePlace::of_frame_text("/x/model.py:42:forward"),
            Some(SourcePlace {
                path: "/x/model.py".into(),
                line: Some(42)
            })
        );
        assert_eq!(
            SourcePlace::of_frame_text("C:\\x\\m.py:7:f").map(|p| p.path),
            Some("C:\\x\\m.py".into())
        );
        assert_eq!(SourcePlace::of_frame_text("??:0:c10::alloc"), None);
        assert_eq!(SourcePlace::of_frame_text("/x/m.py:x:f"), None);
        assert_eq!(SourcePlace::of_file("/x/a.cpp"), None);
    }

    #[test]
    fn a_checkouts_own_python_files_are_looked_for() {
        assert!(is_checkout_source("proj/model.py"));
        assert!(is_checkout_source("model.py"));
        assert!(!is_checkout_source("proj/.venv/lib/x.py"));
        assert!(!is_checkout_source(
            "env/lib/python3.12/site-packages/torch/nn/modules/module.py"
        ));
        assert!(!is_checkout_source("proj/__pycache__/model.py"));
        assert!(!is_checkout_source("proj/model.pyc"));
        assert!(!is_checkout_source("proj/.scratch.py"));
    }
}
