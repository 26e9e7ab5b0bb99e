//! Reads a package's sources for the tests that check which modules name which: each file's
//! module path and the module paths it names in `use` lines and in code (comments and test
//! modules skipped). Shared by the core's layers (`layers.rs`) and the page's
//! (`tests/page_layers.rs` at the workspace's root, which includes this file by path). Not a
//! Rust parser: it reads lines as rustfmt lays them out.

// Each test uses part of the reader.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// One source file: its module path (`["analysis", "axis"]`) and the module paths it names.
pub struct SourceFile {
    pub path: PathBuf,
    pub module: Vec<String>,
    pub names: BTreeSet<Vec<String>>,
    /// Modules named by `pub use` only (a module's interface, not something it depends on).
    pub reexports: BTreeSet<Vec<String>>,
}

/// Every non-test source file under `src`, with what it names.
pub fn read_package(src: &Path) -> Vec<SourceFile> {
    let mut paths = Vec::new();
    collect(src, &mut paths);
    let mut test_only = BTreeSet::new();
    let mut files: Vec<SourceFile> = paths
        .into_iter()
        .map(|path| {
            let module = module_of(src, &path);
            let text = fs::read_to_string(&path).expect("a source file reads");
            let (names, reexports, tests) = names_in(&text, &module);
            test_only.extend(tests);
            SourceFile {
                path: path.strip_prefix(src).unwrap_or(&path).to_path_buf(),
                module,
                names,
                reexports,
            }
        })
        .collect();
    files.retain(|f| !test_only.contains(&f.module));
    files
}

pub fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `analysis/categories/index.rs` → `[analysis, categories, index]`; `mod.rs`, `lib.rs` and
/// `main.rs` are their folder's module; a binary under `bin/` is its own root.
fn module_of(src: &Path, path: &Path) -> Vec<String> {
    let relative = path.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    if parts.first().is_some_and(|p| p == "bin") {
        return vec![format!("bin::{}", parts[1..].join("::"))];
    }
    parts
}

/// The module paths a file names outside comments and test modules (absolute, from its
/// package's root), those it only re-exports, and the child modules declared for tests only.
type Named = (
    BTreeSet<Vec<String>>,
    BTreeSet<Vec<String>>,
    BTreeSet<Vec<String>>,
);

fn names_in(text: &str, module: &[String]) -> Named {
    let code = code_of(text, module);
    let mut names = BTreeSet::new();
    let mut used = BTreeSet::new();
    let mut reexported = BTreeSet::new();
    for statement in use_statements(&code.text) {
        let public = statement.starts_with("pub");
        let body = statement
            .trim_start_matches("pub(crate)")
            .trim_start_matches("pub(super)")
            .trim_start_matches("pub")
            .trim()
            .trim_start_matches("use")
            .trim()
            .trim_end_matches(';');
        for path in expand(body) {
            if let Some(absolute) = absolute(&path, module) {
                if public {
                    reexported.insert(absolute.clone());
                } else {
                    used.insert(absolute.clone());
                }
                names.insert(absolute);
            }
        }
    }
    for path in inline_paths(&code.text) {
        if let Some(absolute) = absolute(&path, module) {
            used.insert(absolute.clone());
            names.insert(absolute);
        }
    }
    let reexports = reexported.difference(&used).cloned().collect();
    (names, reexports, code.test_modules)
}

struct Code {
    text: String,
    test_modules: BTreeSet<Vec<String>>,
}

/// The file without comment lines and without `#[cfg(test)]` items; the modules declared
/// `#[cfg(test)] mod name;` are returned to be skipped.
fn code_of(text: &str, module: &[String]) -> Code {
    let mut out = String::new();
    let mut test_modules = BTreeSet::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        if trimmed.starts_with("//") {
            continue;
        }
        if trimmed == "#[cfg(test)]" {
            // Skip the item that follows: a declaration `mod x;` or a braced block.
            let Some(item) = lines.next() else { break };
            let item = item.trim();
            if let Some(name) = item
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ")
                .strip_prefix("mod ")
                .and_then(|rest| rest.strip_suffix(';'))
            {
                let mut child = module.to_vec();
                child.push(name.trim().to_string());
                test_modules.insert(child);
                continue;
            }
            let mut depth = braces(item);
            let mut opened = item.contains('{');
            while !opened || depth > 0 {
                let Some(next) = lines.next() else { break };
                depth += braces(next);
                opened |= next.contains('{');
                if !opened && next.trim_end().ends_with(';') {
                    break;
                }
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    Code {
        text: out,
        test_modules,
    }
}

fn braces(line: &str) -> i32 {
    line.chars().fold(0, |d, c| match c {
        '{' => d + 1,
        '}' => d - 1,
        _ => d,
    })
}

/// The `use` statements of `code`, each whole (they may span lines).
fn use_statements(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in code.lines() {
        let trimmed = line.trim();
        if current.is_none() {
            let rest = trimmed
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub(super) ")
                .trim_start_matches("pub ");
            if rest.starts_with("use ") {
                current = Some(String::new());
            }
        }
        if let Some(statement) = current.as_mut() {
            statement.push_str(trimmed);
            statement.push(' ');
            if trimmed.ends_with(';') {
                out.push(current.take().unwrap().trim().to_string());
            }
        }
    }
    out
}

/// `a::{b, c::{d, e}}` → `a::b`, `a::c::d`, `a::c::e` (as segments).
fn expand(tree: &str) -> Vec<Vec<String>> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or(tree);
        return vec![segments(path)];
    };
    let prefix = segments(tree[..open].trim_end_matches("::"));
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items
        .into_iter()
        .filter(|item| !item.trim().is_empty())
        .flat_map(|item| {
            expand(item).into_iter().map(|tail| {
                let mut path = prefix.clone();
                path.extend(tail.into_iter().filter(|s| s != "self"));
                path
            })
        })
        .collect()
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && s != "*")
        .collect()
}

/// `crate::a::b` and `super::x` paths written in code rather than in `use` lines.
fn inline_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for line in code.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("use ") || trimmed.starts_with("pub use ") {
            continue;
        }
        for start in ["crate::", "super::"] {
            let mut from = 0;
            while let Some(at) = line[from..].find(start) {
                let begin = from + at;
                let before = line[..begin].chars().last();
                from = begin + start.len();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                let end = line[begin..]
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                    .map_or(line.len(), |e| begin + e);
                out.push(segments(&line[begin..end]));
            }
        }
    }
    out
}

/// `path` from the package's root, or `None` for another crate's path.
fn absolute(path: &[String], module: &[String]) -> Option<Vec<String>> {
    let first = path.first()?;
    let mut out: Vec<String> = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => module.to_vec(),
        _ => return None,
    };
    let mut rest = &path[1..];
    if first == "super" {
        out.pop();
        while rest.first().is_some_and(|s| s == "super") {
            out.pop();
            rest = &rest[1..];
        }
    }
    out.extend(rest.iter().cloned());
    Some(out)
}
