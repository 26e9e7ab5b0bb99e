//! What each input's files are called in an output folder (reports, digests): its path below
//! the folders every input shares, its folders joined by `__` (`iteration_3/rank5.pickle` →
//! `iteration_3__rank5`), without the snapshot's extensions, in characters any file system
//! takes, and unique (`-2`, `-3`… in the inputs' order, ignoring case, as some file systems
//! do). `index` and `summary` are the folder's own, so an input named so gets a `_`.
//!
//! Names only: not the place for writing files.

/// Extensions a snapshot or profiler output ends with, left out of its report's name.
const EXTENSIONS: [&str; 9] = [
    ".gz", ".pickle", ".pkl", ".pt", ".json", ".trace", ".raw", ".bin", ".zip",
];

/// Names no report may take: the folder's summary, and names Windows keeps for devices.
const RESERVED: [&str; 6] = ["index", "summary", "con", "prn", "aux", "nul"];

/// Longest name, in bytes (the report's extension comes on top).
const MAX_LEN: usize = 120;

/// What one input is called in the report folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Named {
    /// Its reports' file name, without extension.
    pub file: String,
    /// Its path below the folders every input shares, as the summary lists it.
    pub label: String,
}

/// The report name and label of each of `paths` (as given; `-` is standard input), in their
/// order.
pub fn report_names(paths: &[String]) -> Vec<Named> {
    let parts: Vec<Vec<&str>> = paths.iter().map(|p| components(p)).collect();
    let shared = shared_folders(&parts);
    let mut taken: Vec<String> = Vec::new();
    let mut names = Vec::with_capacity(paths.len());
    for (path, parts) in paths.iter().zip(&parts) {
        let below = &parts[shared.min(parts.len().saturating_sub(1))..];
        let label = if path == "-" {
            "standard input".to_string()
        } else {
            below.join("/")
        };
        let mut name = base_name(below);
        let mut n = 1;
        let base = name.clone();
        while taken.contains(&name.to_ascii_lowercase()) {
            n += 1;
            name = format!("{base}-{n}");
        }
        taken.push(name.to_ascii_lowercase());
        names.push(Named { file: name, label });
    }
    names
}

/// The parts of a path that name something: no root, `.` or `..`; standard input is `stdin`.
fn components(path: &str) -> Vec<&str> {
    if path == "-" {
        return vec!["stdin"];
    }
    let parts: Vec<&str> = path
        .split(['/', '\\'])
        .filter(|p| !p.is_empty() && *p != "." && *p != "..")
        .collect();
    if parts.is_empty() {
        vec!["snapshot"]
    } else {
        parts
    }
}

/// How many leading folders every path shares (never a file's own name).
fn shared_folders(parts: &[Vec<&str>]) -> usize {
    let Some(first) = parts.first() else {
        return 0;
    };
    let folders = parts.iter().map(|p| p.len() - 1).min().unwrap_or(0);
    (0..folders)
        .take_while(|&i| parts.iter().all(|p| p[i] == first[i]))
        .count()
}

/// The parts joined by `__`, the file's extensions left out, every character outside
/// `A-Za-z0-9._-` as `_`, no leading dot, at most [`MAX_LEN`] bytes, never a reserved name.
fn base_name(parts: &[&str]) -> String {
    let (file, folders) = parts.split_last().expect("a path has a file name");
    let mut file: &str = file;
    while let Some(stem) = EXTENSIONS.iter().find_map(|ext| strip_suffix_ci(file, ext)) {
        if stem.is_empty() {
            break;
        }
        file = stem;
    }
    let joined = folders
        .iter()
        .copied()
        .chain([file])
        .collect::<Vec<_>>()
        .join("__");
    let mut name: String = joined
        .chars()
        .map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '-' | '_' | '.' => c,
            _ => '_',
        })
        .collect();
    if name.starts_with('.') {
        name.replace_range(0..1, "_");
    }
    if name.len() > MAX_LEN {
        // The end says most (the rank, the iteration): keep it.
        name = name[name.len() - MAX_LEN..].to_string();
    }
    let stem = name.split('.').next().unwrap_or("").to_ascii_lowercase();
    let device = ["com", "lpt"]
        .iter()
        .any(|p| stem.len() == 4 && stem.starts_with(p) && stem.as_bytes()[3].is_ascii_digit());
    if RESERVED.contains(&stem.as_str()) || device {
        name.push('_');
    }
    name
}

/// `text` without `suffix`, compared ignoring ASCII case.
fn strip_suffix_ci<'a>(text: &'a str, suffix: &str) -> Option<&'a str> {
    let cut = text.len().checked_sub(suffix.len())?;
    (text.is_char_boundary(cut) && text[cut..].eq_ignore_ascii_case(suffix)).then(|| &text[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(paths: &[&str]) -> Vec<Named> {
        report_names(&paths.iter().map(|p| p.to_string()).collect::<Vec<_>>())
    }

    fn names(paths: &[&str]) -> Vec<String> {
        named(paths).into_iter().map(|n| n.file).collect()
    }

    #[test]
    fn labels_are_the_paths_below_the_shared_folders() {
        let labels: Vec<String> = named(&[
            "/runs/a/iteration_1/rank0.pickle",
            "/runs/a/iteration_2/rank0.pickle",
            "-",
        ])
        .into_iter()
        .map(|n| n.label)
        .collect();
        assert_eq!(
            labels,
            [
                "runs/a/iteration_1/rank0.pickle",
                "runs/a/iteration_2/rank0.pickle",
                "standard input"
            ]
        );
        let labels: Vec<String> = named(&[
            "/runs/a/iteration_1/rank0.pickle",
            "/runs/a/iteration_1/rank1.pickle",
        ])
        .into_iter()
        .map(|n| n.label)
        .collect();
        assert_eq!(labels, ["rank0.pickle", "rank1.pickle"]);
    }

    #[test]
    fn names_keep_the_folders_that_tell_files_apart() {
        assert_eq!(
            names(&[
                "outputs/memory_snapshot/iteration_3/rank5_memory_snapshot.pickle",
                "outputs/memory_snapshot/iteration_10/rank5_memory_snapshot.pickle",
            ]),
            [
                "iteration_3__rank5_memory_snapshot",
                "iteration_10__rank5_memory_snapshot"
            ]
        );
        assert_eq!(names(&["/tmp/run/rank0.pickle.gz"]), ["rank0"]);
        assert_eq!(
            names(&["a/rank0.pickle", "a/b/rank1.pkl"]),
            ["rank0", "b__rank1"]
        );
        assert_eq!(
            names(&["worker0.1623143089861.pt.trace.json.gz", "-"]),
            ["worker0.1623143089861", "stdin"]
        );
    }

    #[test]
    fn names_are_safe_unique_and_never_the_folders_own() {
        assert_eq!(
            names(&[
                "x/<script>alert(1)<script>.pickle",
                "x/.hidden.json",
                "x/ünï cödé.pkl"
            ]),
            ["_script_alert_1__script_", "_hidden", "_n__c_d_"]
        );
        assert_eq!(
            names(&["a/Rank0.pickle", "b/rank0.pickle", "c/rank0.json"]),
            ["a__Rank0", "b__rank0", "c__rank0"]
        );
        assert_eq!(
            names(&["a/rank0.pickle", "a/rank0.pickle", "a/RANK0.json"]),
            ["rank0", "rank0-2", "RANK0-3"]
        );
        assert_eq!(
            names(&[
                "index.pickle",
                "summary.json",
                "CON.pkl",
                "com1.pickle",
                "console.pkl"
            ]),
            ["index_", "summary_", "CON_", "com1_", "console"]
        );
        assert_eq!(names(&[".pickle", "../../"]), ["_pickle", "snapshot"]);
        let long = format!("{}rank7.pickle", "x".repeat(300));
        let name = &names(&[&long])[0];
        assert_eq!(name.len(), MAX_LEN);
        assert!(name.ends_with("xrank7"), "{name}");
    }
}
