//! The table's allocations by line of code, for a source view: which files the code holding
//! them spans (each with the bytes made in it and passing through it), and one file line by
//! line with its functions' totals and, when the snapshot carries its text (`source_code`),
//! that text. The allocations are the table's (its scope and filter), so a line's bytes made
//! there are its call-site group in the table.
//!
//! The numbers are [`crate::analysis::lines`]'; the service keeps the last scope's files so
//! moving between files only looks them up. Not the place for reading the user's own copy of
//! a file (the page reads a folder) or for words.

use serde::{Deserialize, Serialize};

use super::{Filter, Scope};
use crate::analysis::lines::{carried_text, find_file, FileBytes, Tally};
use crate::model::Snapshot;
use crate::model::State;

/// Lines of code of the allocations `scope` and `filter` choose on `device`: every file
/// listed, and `path` line by line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SourceRequest {
    pub device: u32,
    pub scope: Scope,
    #[serde(default)]
    pub filter: Filter,
    /// The file to list line by line, as a frame names it, in this snapshot or another run's
    /// (matched by the longest shared end of the path); `None`: the file with the most bytes
    /// made in it.
    #[serde(default)]
    pub path: Option<String>,
    /// The asker holds the text of the file `path` names already: the snapshot's copy is not
    /// sent again (a file of the program can be large, and every change of scope asks again).
    #[serde(default)]
    pub text_held: bool,
}

/// A file the code holding memory spans.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceFile {
    /// As the frames name it.
    pub path: String,
    pub made: Tally,
    pub through: Tally,
    /// The user's code (not a library's).
    pub user: bool,
    /// The snapshot carries its text.
    pub carried: bool,
}

/// A file's text as the snapshot carries it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarriedText {
    /// As `source_code` names it.
    pub path: String,
    pub text: String,
}

/// Lines of code at a scope.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SourceView {
    pub device: u32,
    pub generation: u32,
    pub scope: Scope,
    /// The state a moment's scope stands for.
    pub state: Option<State>,
    /// The allocations chosen, whose lines these are.
    pub chosen: Tally,
    /// The most memory passing through first.
    pub files: Vec<SourceFile>,
    /// The file asked for (or the one with the most bytes made), line by line; `None` when no
    /// file holds memory or none matches the path asked.
    pub file: Option<FileBytes>,
    /// Its text, when the snapshot carries it.
    pub text: Option<CarriedText>,
    /// Why nothing was chosen (a regular expression that does not compile).
    pub problem: Option<String>,
    pub compute_ms: f64,
}

/// The files of `lines` (as [`crate::analysis::lines::lines_of`] lists them) and the one
/// `path` asks for, with the text the snapshot carries for it.
pub fn listed(
    snapshot: &Snapshot,
    lines: &[FileBytes],
    path: Option<&str>,
) -> (Vec<SourceFile>, Option<FileBytes>, Option<CarriedText>) {
    let files = lines
        .iter()
        .map(|f| SourceFile {
            path: f.path.clone(),
            made: f.made,
            through: f.through,
            user: f.user,
            carried: carried_text(snapshot, &f.path).is_some(),
        })
        .collect();
    let chosen = match path {
        Some(path) => find_file(lines, path),
        // The file the most memory is made in: where the user's attention goes first.
        None => lines
            .iter()
            .enumerate()
            .max_by_key(|(i, f)| (f.made.bytes, std::cmp::Reverse(*i)))
            .filter(|(_, f)| f.made.bytes > 0)
            .map(|(i, _)| i),
    };
    let file = chosen.map(|i| lines[i].clone());
    // A file asked for that holds nothing at this scope is still shown, with empty margins.
    let text = file
        .as_ref()
        .map(|f| f.path.as_str())
        .or(path)
        .and_then(|p| carried_text(snapshot, p))
        .map(|i| {
            let (path, text) = &snapshot.source_code[i];
            CarriedText {
                path: path.clone(),
                text: text.clone(),
            }
        });
    (files, file, text)
}
