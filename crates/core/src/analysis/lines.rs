//! Which lines of code hold memory: for a set of allocations (those a table scope chooses:
//! alive at a moment, made in a window), each source line of their stacks with the bytes made
//! there (the line is the allocation's call site, as the table groups call sites) and the
//! bytes passing through it (the line is anywhere in the allocation's stack as the user reads
//! it, counted once per allocation), by file, with each function's total: lines of Python
//! code, the user's and libraries'. The numbers behind a source view's margins.
//!
//! Not the place for choosing the allocations (the table's scopes) or for reading source files
//! and matching their paths.

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
    fn add(&mut self, bytes: u64) {
        self.count += 1;
        self.bytes += bytes;
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
    pub lines: Vec<LineBytes>,
    /// Largest first.
    pub functions: Vec<FunctionBytes>,
}

/// What one stack contributes: its call site's place and every place it passes, once each.
struct Places {
    made: Option<(usize, i64)>,
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
    let mut places: FxHashMap<StackId, Places> = FxHashMap::default();
    // (path, line) → (function, made, through); (path, function) → through.
    let mut by_line: FxHashMap<(usize, i64), (usize, Tally, Tally)> = FxHashMap::default();
    let mut by_function: FxHashMap<(usize, usize), (i64, Tally)> = FxHashMap::default();
    // A file's own total: each allocation once, however many of its lines it passes.
    let mut file_through: FxHashMap<usize, Tally> = FxHashMap::default();
    for &i in chosen {
        let a = facts.allocations.at(i as usize);
        let stack = allocation_stack(&device.trace, &a);
        let here = places.entry(stack).or_insert_with(|| {
            let text = stack_text(snapshot, stack, true);
            let id_of = |table: &mut Vec<String>, ids: &mut FxHashMap<String, usize>, s: &str| {
                *ids.entry(s.to_string()).or_insert_with(|| {
                    table.push(s.to_string());
                    table.len() - 1
                })
            };
            let mut seen = FxHashSet::default();
            let mut through = Vec::new();
            // Lines of Python code, the user's and libraries': what a source view shows.
            let python = |f: &super::stacks::FrameText| {
                matches!(f.class, FrameClass::UserPython | FrameClass::LibraryPython)
            };
            for frame in text.frames.iter().filter(|f| python(f)) {
                let path = id_of(&mut paths, &mut path_ids, &frame.filename);
                let function = id_of(&mut functions, &mut function_ids, &frame.name);
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
                through,
                files,
            }
        });
        let mut functions_seen = FxHashSet::default();
        for &(path, line, function) in &here.through {
            let entry = by_line.entry((path, line)).or_insert((
                function,
                Tally::default(),
                Tally::default(),
            ));
            entry.2.add(a.size);
            if functions_seen.insert((path, function)) {
                let f = by_function
                    .entry((path, function))
                    .or_insert((line, Tally::default()));
                f.0 = f.0.min(line);
                f.1.add(a.size);
            }
        }
        for &path in &here.files {
            file_through.entry(path).or_default().add(a.size);
        }
        if let Some((path, line)) = here.made {
            if let Some(entry) = by_line.get_mut(&(path, line)) {
                entry.1.add(a.size);
            }
        }
    }
    let mut files: Vec<FileBytes> = paths
        .iter()
        .map(|path| FileBytes {
            path: path.clone(),
            made: Tally::default(),
            through: Tally::default(),
            lines: Vec::new(),
            functions: Vec::new(),
        })
        .collect();
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
}
