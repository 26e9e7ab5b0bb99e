//! The order of the core's layers, read from its `use` lines and paths: each module names only
//! modules of its own layer or below, no feature names another feature, and no two files of
//! the workspace's packages name each other.
//!
//! The layers, lowest first (ARCHITECTURE.md draws them):
//! `model` → `decode` → `analysis` → `service` (the seam) → the features (`overview`,
//! `timeline`, `breakdown`, `table`, `phases`) → `compare` (files side by side, from the
//! features' numbers) → `format` (words) → `export` (documents) → `protocol` → `session`.
//!
//! Unit tests inside a module (`#[cfg(test)] mod …`) are exempt: a test may build its input
//! with any layer. Comments are skipped; a path is resolved to the longest module file it
//! names.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The core's top-level modules by layer, lowest first. Modules sharing a layer are
/// features: none may name another.
const LAYERS: &[&[&str]] = &[
    &["model"],
    &["decode"],
    &["analysis"],
    &["service"],
    &["overview", "timeline", "breakdown", "table", "phases"],
    &["compare"],
    &["format"],
    &["export"],
    &["protocol"],
    &["session"],
];

/// One source file: its module path (`["analysis", "axis"]`) and the module paths it names.
struct SourceFile {
    path: PathBuf,
    module: Vec<String>,
    names: BTreeSet<Vec<String>>,
    /// Modules named by `pub use` only (a module's interface, not something it depends on).
    reexports: BTreeSet<Vec<String>>,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn layer_of(top: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&top))
}

#[test]
fn each_core_module_names_only_its_own_layer_and_below_and_no_feature_names_another() {
    let files = read_package(&workspace().join("crates/core/src"));
    assert!(files.len() > 50, "the core's sources were not found");
    let mut breaches = Vec::new();
    for file in &files {
        let Some(top) = file.module.first() else {
            continue; // lib.rs declares the layers
        };
        let own = layer_of(top).unwrap_or_else(|| {
            panic!(
                "{} is in no layer: add `{top}` to LAYERS and ARCHITECTURE.md",
                file.path.display()
            )
        });
        for named in &file.names {
            let Some(other) = named.first() else { continue };
            if other == top {
                continue;
            }
            let Some(layer) = layer_of(other) else {
                continue;
            };
            if layer > own {
                breaches.push(format!(
                    "{} ({top}) names {} ({other}), a higher layer",
                    file.path.display(),
                    named.join("::")
                ));
            } else if layer == own {
                breaches.push(format!(
                    "{} names {}: a feature names another feature",
                    file.path.display(),
                    named.join("::")
                ));
            }
        }
    }
    assert!(breaches.is_empty(), "\n{}", breaches.join("\n"));
}

#[test]
fn no_two_files_name_each_other() {
    let root = workspace();
    let mut pairs = Vec::new();
    for package in [
        "crates/core/src",
        "crates/charts/src",
        "crates/cli/src",
        "src",
    ] {
        let files = read_package(&root.join(package));
        let by_module: BTreeMap<&[String], &SourceFile> =
            files.iter().map(|f| (f.module.as_slice(), f)).collect();
        let edges = |file: &SourceFile| -> BTreeSet<Vec<String>> {
            file.names
                .iter()
                .filter(|n| !file.reexports.contains(*n))
                .filter_map(|n| resolve(n, &by_module))
                .filter(|m| *m != file.module)
                .collect()
        };
        let all: BTreeMap<&[String], BTreeSet<Vec<String>>> = files
            .iter()
            .map(|f| (f.module.as_slice(), edges(f)))
            .collect();
        for (a, named) in &all {
            for b in named {
                if a < &b.as_slice()
                    && all
                        .get(b.as_slice())
                        .is_some_and(|back| back.iter().any(|m| m.as_slice() == *a))
                {
                    pairs.push(format!(
                        "{} and {} name each other",
                        by_module[a].path.display(),
                        by_module[b.as_slice()].path.display()
                    ));
                }
            }
        }
    }
    assert!(pairs.is_empty(), "\n{}", pairs.join("\n"));
}

#[test]
fn no_two_public_types_share_a_name() {
    let root = workspace();
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for package in [
        "crates/core/src",
        "crates/charts/src",
        "crates/cli/src",
        "src",
    ] {
        let mut paths = Vec::new();
        collect(&root.join(package), &mut paths);
        for path in paths {
            let text = fs::read_to_string(&path).expect("a source file reads");
            for line in text.lines() {
                let line = line.trim_start();
                let Some(rest) = ["pub ", "pub(crate) ", "pub(super) "]
                    .iter()
                    .find_map(|p| line.strip_prefix(p))
                else {
                    continue;
                };
                let Some(rest) = ["struct ", "enum ", "type ", "trait "]
                    .iter()
                    .find_map(|k| rest.strip_prefix(k))
                else {
                    continue;
                };
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let place = path
                    .strip_prefix(&root)
                    .unwrap_or(&path)
                    .display()
                    .to_string();
                seen.entry(name).or_default().push(place);
            }
        }
    }
    let shared: Vec<String> = seen
        .into_iter()
        .filter(|(_, places)| places.len() > 1)
        .map(|(name, places)| format!("{name}: {}", places.join(", ")))
        .collect();
    assert!(shared.is_empty(), "\n{}", shared.join("\n"));
}

/// The longest module path that `named` starts with.
fn resolve(named: &[String], modules: &BTreeMap<&[String], &SourceFile>) -> Option<Vec<String>> {
    (1..=named.len())
        .rev()
        .map(|n| &named[..n])
        .find(|prefix| modules.contains_key(prefix))
        .map(<[String]>::to_vec)
}

/// Every non-test source file under `src`, with what it names.
fn read_package(src: &Path) -> Vec<SourceFile> {
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

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
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
