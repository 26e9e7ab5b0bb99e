//! Ranks in the order people count them, whatever order the shell gives the files in: `files`
//! lists rank 0, 1, 2 … 9, 10, 11 (not 0, 1, 10, 11, 2 …), and `check` lists its devices so,
//! the failing ones first.

mod command;
#[path = "../../core/tests/common/mod.rs"]
mod common;

use std::path::PathBuf;

use command::{json_lines, memsight, tempdir};
use common::repo;

/// Twelve ranks' files in the shell's order (`rank0, rank1, rank10, rank11, rank2, …`); rank 7
/// is a run that ran out of memory.
fn ranks(dir: &std::path::Path) -> Vec<PathBuf> {
    let fixtures = repo().join("tests/fixtures");
    let mut names: Vec<String> = (0..12).map(|r| format!("rank{r}.pickle")).collect();
    names.sort();
    names
        .iter()
        .map(|name| {
            let source = if name == "rank7.pickle" {
                "oom.pickle"
            } else {
                "small_p4.pickle"
            };
            let path = dir.join(name);
            std::fs::copy(fixtures.join(source), &path).unwrap();
            path
        })
        .collect()
}

#[test]
fn files_and_check_list_ranks_in_natural_order() {
    let dir = tempdir("natural-order");
    let files = ranks(&dir);
    assert!(files[2].ends_with("rank10.pickle"), "the shell's order");

    let json = &json_lines(&memsight(&["files", "--json"], &files))[0];
    let listed: Vec<u64> = json["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["rank"].as_u64().unwrap())
        .collect();
    assert_eq!(listed, (0..12).collect::<Vec<u64>>());
    let markdown = String::from_utf8(memsight(&["files"], &files).stdout).unwrap();
    let first_cells: Vec<&str> = markdown
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.split(" | ").next().unwrap())
        .collect();
    assert!(first_cells[2].ends_with("rank2.pickle"), "{markdown}");
    assert!(first_cells[10].ends_with("rank10.pickle"), "{markdown}");

    // The failing rank first, then the others as people count them.
    let output = memsight(&["check", "--markdown", "--max-peak", "1TiB"], &files);
    assert_eq!(output.status.code(), Some(1));
    let markdown = String::from_utf8(output.stdout).unwrap();
    let rows: Vec<&str> = markdown
        .lines()
        .filter(|l| l.starts_with("| rank "))
        .map(|l| l.split(" | ").next().unwrap())
        .collect();
    let expected: Vec<String> = [7]
        .into_iter()
        .chain((0..12).filter(|&r| r != 7))
        .map(|r| format!("| rank {r} cuda:0"))
        .collect();
    assert_eq!(rows, expected, "{markdown}");
}
