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

mod sources;

use sources::{collect, read_package, SourceFile};

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
