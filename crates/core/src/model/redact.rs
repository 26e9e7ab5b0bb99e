//! Paths that say which code, not whose machine: a snapshot's frames carry absolute paths
//! (`/home/<user>/…`, cluster mounts, virtual environments), and every export repeats them.
//! Redaction rewrites each path's prefix to what identifies the code —
//! `site-packages/torch/…`, `<python>/threading.py`, `<home>/project/model.py`,
//! `<tmp>/ab/generated.py`, `<root>/train/model.py` — and the user names found in those
//! prefixes to `<user>` wherever else they appear.
//!
//! The rewrite is planned once from the snapshot's paths and applied to every string of the
//! model, so every view and export reads the same redacted text, and two different paths
//! never become one (a placeholder is numbered when it would join two): grouping, call sites
//! and comparisons give the same numbers redacted and not. A path keeps at least its last
//! two parts, the part comparisons key frames by. Not the place for deciding which exports offer
//! it (the command line's `--redact`, the page's toggle).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use aho_corasick::{AhoCorasick, MatchKind};

use super::{Snapshot, StrId, Value};

/// What a prefix is replaced by, by kind of place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// Installed packages: the prefix up to `site-packages` (or `dist-packages`).
    Packages,
    /// Python's own library: up to `lib/python3.X` (`Lib` on Windows).
    Python,
    /// A temporary folder's first folder (`/tmp/torchinductor_<user>`).
    Tmp,
    /// A home folder (`/home/<user>`, `/Users/<user>`, `/root`, `C:\Users\<user>`).
    Home,
    /// Any other absolute path: all but its last two parts.
    Root,
}

impl Kind {
    fn placeholder(self, packages_word: &str) -> String {
        match self {
            Kind::Packages => packages_word.to_string(),
            Kind::Python => "<python>".to_string(),
            Kind::Tmp => "<tmp>".to_string(),
            Kind::Home => "<home>".to_string(),
            Kind::Root => "<root>".to_string(),
        }
    }
}

/// The rewrite of one snapshot's paths: each planned path's redacted form, the removed
/// prefixes for paths met in other text, and the user names to replace elsewhere.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Redaction {
    /// Each planned path and what it becomes.
    exact: HashMap<String, String>,
    /// `(prefix, replacement)`, the prefix ending with its separator, longest first: for
    /// paths inside other text (a traceback, a setting).
    prefixes: Vec<(String, String)>,
    /// User names read from home and temporary folders, replaced as whole words.
    users: Vec<String>,
}

/// How a path divides: the byte length of the prefix to remove (through a separator), its
/// kind, the word that replaces a packages prefix, and the user it names.
struct Split<'a> {
    len: usize,
    kind: Kind,
    packages_word: &'a str,
    user: Option<&'a str>,
}

/// The parts of `path` that are not empty, each with the byte offset just past the separators
/// after it: `//home//jdoe//` and `\\home\\jdoe\\` divide as `/home/jdoe/` does.
fn parts(path: &str) -> Vec<(&str, usize)> {
    let is_separator = |c: char| c == '/' || c == '\\';
    let mut out: Vec<(&str, usize)> = Vec::new();
    let mut start = 0;
    for (i, c) in path.char_indices() {
        if !is_separator(c) {
            continue;
        }
        if i > start {
            out.push((&path[start..i], i + 1));
        } else if let Some(last) = out.last_mut() {
            // Another separator after the same part.
            last.1 = i + 1;
        }
        start = i + 1;
    }
    out.push((&path[start..], path.len()));
    out
}

fn is_absolute(path: &str) -> bool {
    let bytes = path.as_bytes();
    path.starts_with(['/', '\\'])
        || (bytes.len() > 2
            && bytes[0].is_ascii_alphabetic()
            && bytes[1] == b':'
            && (bytes[2] == b'\\' || bytes[2] == b'/'))
}

/// Where `path`'s prefix ends and what kind it is; `None` for a path left as it is (relative,
/// `<frozen …>`, or too short to hide anything).
fn split(path: &str) -> Option<Split<'_>> {
    if !is_absolute(path) {
        return None;
    }
    let parts = parts(path);
    // The file itself is the last part; only folders are looked at.
    let folders = &parts[..parts.len() - 1];
    let plain = |len, kind, user| Split {
        len,
        kind,
        packages_word: "",
        user,
    };
    if let Some(&(word, end)) = folders.iter().rev().find(|(p, _)| {
        p.eq_ignore_ascii_case("site-packages") || p.eq_ignore_ascii_case("dist-packages")
    }) {
        return Some(Split {
            len: end,
            kind: Kind::Packages,
            packages_word: word,
            user: None,
        });
    }
    let windows = path.as_bytes().get(1) == Some(&b':');
    // The first folder of the root: after the drive (`C:`) on Windows.
    let top = usize::from(windows);
    for (i, &(part, end)) in folders.iter().enumerate() {
        // `lib/python3.11`, `lib/python3`, `lib/python` (not `lib/python_utils`).
        let version = part
            .strip_prefix("python")
            .is_some_and(|v| v.is_empty() || v.starts_with(|c: char| c.is_ascii_digit()));
        if i > 0 && folders[i - 1].0 == "lib" && version {
            return Some(plain(end, Kind::Python, None));
        }
        if windows && part == "Lib" {
            return Some(plain(end, Kind::Python, None));
        }
    }
    let first = folders.get(top).map(|&(p, _)| p);
    match (first, folders.get(top + 1)) {
        (Some("tmp"), Some(&(dir, end))) if !windows => {
            let user = dir.strip_prefix("torchinductor_").filter(|u| !u.is_empty());
            return Some(plain(end, Kind::Tmp, user));
        }
        (Some("home" | "Users" | "users"), Some(&(user, end))) => {
            return Some(plain(end, Kind::Home, Some(user)));
        }
        (Some("root"), _) if !windows => {
            let end = folders[top].1;
            return Some(plain(end, Kind::Home, None));
        }
        _ => {}
    }
    // Keep the last two parts: the folder and the file.
    if parts.len() < top + 3 {
        return None;
    }
    Some(plain(parts[parts.len() - 3].1, Kind::Root, None))
}

impl Redaction {
    /// Plans the rewrite of `paths` (a snapshot's frame file names, or any paths).
    pub fn plan<'a>(paths: impl IntoIterator<Item = &'a str>) -> Redaction {
        struct Planned<'a> {
            path: &'a str,
            prefix: &'a str,
            placeholder: String,
        }
        let mut planned: Vec<Planned<'a>> = Vec::new();
        let mut users = BTreeSet::new();
        let mut seen = BTreeSet::new();
        for path in paths {
            if !seen.insert(path) {
                continue;
            }
            let Some(split) = split(path) else {
                continue;
            };
            let prefix = &path[..split.len];
            let separator = &prefix[prefix.len() - 1..];
            planned.push(Planned {
                path,
                prefix,
                placeholder: format!("{}{separator}", split.kind.placeholder(split.packages_word)),
            });
            if let Some(user) = split.user.filter(|u| u.len() >= 3) {
                users.insert(user.to_string());
            }
        }
        // A placeholder whose prefixes would make two paths one is numbered, one number per
        // prefix, so that grouping by file never joins different files.
        let mut prefixes_of: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        let mut made: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
        for p in &planned {
            prefixes_of
                .entry(&p.placeholder)
                .or_default()
                .insert(p.prefix);
            made.entry((&p.placeholder, &p.path[p.prefix.len()..]))
                .or_default()
                .insert(p.path);
        }
        let numbered: BTreeSet<&str> = made
            .iter()
            .filter(|(_, paths)| paths.len() > 1)
            .map(|((placeholder, _), _)| *placeholder)
            .collect();
        let replacement = |placeholder: &str, prefix: &str| -> String {
            if !numbered.contains(placeholder) {
                return placeholder.to_string();
            }
            let n = prefixes_of[placeholder]
                .iter()
                .position(|p| *p == prefix)
                .expect("each prefix is listed")
                + 1;
            let (body, separator) = placeholder.split_at(placeholder.len() - 1);
            match body.strip_suffix('>') {
                Some(open) => format!("{open}-{n}>{separator}"),
                None => format!("{body}-{n}{separator}"),
            }
        };
        let mut exact = HashMap::new();
        let mut prefixes: BTreeMap<String, String> = BTreeMap::new();
        for p in &planned {
            let replaced = replacement(&p.placeholder, p.prefix);
            exact.insert(
                p.path.to_string(),
                format!("{replaced}{}", &p.path[p.prefix.len()..]),
            );
            prefixes.insert(p.prefix.to_string(), replaced);
        }
        let mut prefixes: Vec<(String, String)> = prefixes.into_iter().collect();
        prefixes.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        Redaction {
            exact,
            prefixes,
            users: users.into_iter().collect(),
        }
    }

    /// The rewrite of a snapshot's paths: planned from its frames' file names.
    pub fn of_snapshot(snapshot: &Snapshot) -> Redaction {
        Redaction::plan(
            snapshot
                .frames
                .iter()
                .map(|f| snapshot.strings.get(f.filename)),
        )
    }

    /// Whether nothing would be rewritten.
    pub fn is_empty(&self) -> bool {
        self.prefixes.is_empty() && self.users.is_empty()
    }

    /// The prefixes removed, longest first (for tests and for saying what was hidden).
    pub fn removed_prefixes(&self) -> impl Iterator<Item = &str> {
        self.prefixes.iter().map(|(p, _)| p.as_str())
    }

    /// The user names hidden.
    pub fn users(&self) -> &[String] {
        &self.users
    }

    /// A planned path as planned; any other text with every removed prefix replaced wherever
    /// it appears (longest first); then every user name that stands as a word of its own.
    pub fn apply<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if let Some(path) = self.exact.get(text) {
            return Cow::Owned(self.hide_users(path).into_owned());
        }
        let out = self.apply_to_paths(text);
        match self.hide_users(&out) {
            Cow::Borrowed(_) => out,
            Cow::Owned(hidden) => Cow::Owned(hidden),
        }
    }

    /// `text` with every removed prefix replaced wherever it appears, user names left as
    /// they are: for a frame's function, which is code.
    pub fn apply_to_paths<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for (prefix, replacement) in &self.prefixes {
            if out.contains(prefix.as_str()) {
                out = Cow::Owned(out.replace(prefix.as_str(), replacement));
            }
        }
        out
    }

    /// `text` (a document: a report, a table as CSV) with every planned path in it rewritten
    /// as [`Redaction::apply`] rewrites it alone, any other text beginning with a removed
    /// prefix rewritten by the prefix, and user names hidden. One pass over the text, however
    /// many paths are planned.
    pub fn apply_in_text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if self.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut patterns: Vec<&str> = Vec::with_capacity(self.exact.len() + self.prefixes.len());
        let mut replacements: Vec<&str> = Vec::with_capacity(patterns.capacity());
        for (path, redacted) in &self.exact {
            patterns.push(path);
            replacements.push(redacted);
        }
        for (prefix, replacement) in &self.prefixes {
            patterns.push(prefix);
            replacements.push(replacement);
        }
        let paths = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&patterns)
            .expect("paths make an automaton");
        let replaced = if paths.is_match(text) {
            Cow::Owned(paths.replace_all(text, &replacements))
        } else {
            Cow::Borrowed(text)
        };
        match self.hide_users(&replaced) {
            Cow::Borrowed(_) => replaced,
            Cow::Owned(hidden) => Cow::Owned(hidden),
        }
    }

    fn hide_users<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for user in &self.users {
            if out.contains(user.as_str()) {
                out = Cow::Owned(replace_word(&out, user, "<user>"));
            }
        }
        out
    }
}

/// `text` with `word` replaced where it is not part of a longer name (letters, digits, `_`
/// or `-` on either side) and is not a frame's function (`model.py:12:main`: after a line
/// number), which is code.
fn replace_word(text: &str, word: &str, by: &str) -> String {
    let is_name = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut done = 0;
    while let Some(at) = rest.find(word) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + word.len()..].chars().next();
        out.push_str(&rest[..at]);
        let function = after_line_number(&text[..done + at]);
        done += at + word.len();
        if function || before.is_some_and(is_name) || after.is_some_and(is_name) {
            out.push_str(word);
        } else {
            out.push_str(by);
        }
        rest = &rest[at + word.len()..];
    }
    out.push_str(rest);
    out
}

/// Whether `text` ends with `:<digits>:`, as a frame's text does before its function.
fn after_line_number(text: &str) -> bool {
    let Some(head) = text.strip_suffix(':') else {
        return false;
    };
    let digits = head.len() - head.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    digits > 0 && head[..head.len() - digits].ends_with(':')
}

/// Redacts `snapshot` in place: plans from its frames' file names, then rewrites every
/// string of the model (frames, names, annotations, values kept as written, the program's
/// source files). Returns the
/// plan.
pub fn redact_snapshot(snapshot: &mut Snapshot) -> Redaction {
    let redaction = Redaction::of_snapshot(snapshot);
    if redaction.is_empty() {
        return redaction;
    }
    // A frame's function is code, not a person: a function named as a user is (`main` run
    // from `/home/main/…`) keeps its name.
    let functions: rustc_hash::FxHashSet<StrId> = snapshot.frames.iter().map(|f| f.name).collect();
    snapshot.strings.rewrite(|id, text| {
        let redacted = if functions.contains(&id) {
            redaction.apply_to_paths(text)
        } else {
            redaction.apply(text)
        };
        match redacted {
            Cow::Borrowed(_) => None,
            Cow::Owned(changed) => Some(changed),
        }
    });
    for frame in &mut snapshot.frames {
        for (_, value) in &mut frame.extra {
            redact_value(value, &redaction);
        }
    }
    if let Some(settings) = &mut snapshot.allocator_settings {
        redact_value(settings, &redaction);
    }
    for (_, value) in &mut snapshot.extra {
        redact_value(value, &redaction);
    }
    // The program's files: their paths, and the paths their text names.
    for (path, text) in &mut snapshot.source_code {
        if let Cow::Owned(changed) = redaction.apply(path) {
            *path = changed;
        }
        if let Cow::Owned(changed) = redaction.apply_in_text(text) {
            *text = changed;
        }
    }
    redaction
}

fn redact_value(value: &mut Value, redaction: &Redaction) {
    match value {
        Value::Str(text) => {
            if let Cow::Owned(changed) = redaction.apply(text) {
                *text = changed;
            }
        }
        Value::List(items) | Value::Tuple(items) | Value::Set(items) => {
            for item in items {
                redact_value(item, redaction);
            }
        }
        Value::Dict(entries) => {
            for (key, item) in entries {
                redact_value(key, redaction);
                redact_value(item, redaction);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacted(paths: &[&str]) -> Vec<String> {
        let plan = Redaction::plan(paths.iter().copied());
        paths.iter().map(|p| plan.apply(p).into_owned()).collect()
    }

    #[test]
    fn each_kind_of_path_keeps_what_identifies_the_code() {
        assert_eq!(
            redacted(&[
                "/home/jdoe/.venv/lib/python3.11/site-packages/torch/nn/functional.py",
                "/home/jdoe/proj/model.py",
                "/usr/lib/python3.10/threading.py",
                "/tmp/torchinductor_jdoe/ik/cik3x.py",
                "/mnt/data3/jdoe/CurProject/src/train/x.py",
                "/root/assignment2/cs336_systems/bench.py",
                "D:\\Dev\\a2\\.venv\\Lib\\site-packages\\torch\\functional.py",
                "C:\\Users\\Jo\\AppData\\Local\\Programs\\Python\\Python311\\Lib\\runpy.py",
                "D:\\Dev\\assignment2-systems\\cs336_systems\\benchmark.py",
                "<frozen runpy>",
                "torch/nn/modules/module.py",
                "??",
                "/app/train.py",
            ]),
            [
                "site-packages/torch/nn/functional.py",
                "<home>/proj/model.py",
                "<python>/threading.py",
                "<tmp>/ik/cik3x.py",
                "<root>/train/x.py",
                "<home>/assignment2/cs336_systems/bench.py",
                "site-packages\\torch\\functional.py",
                "<python>\\runpy.py",
                "<root>\\cs336_systems\\benchmark.py",
                "<frozen runpy>",
                "torch/nn/modules/module.py",
                "??",
                "/app/train.py",
            ]
        );
    }

    #[test]
    fn two_paths_never_become_one() {
        let out = redacted(&["/home/al/proj/model.py", "/home/bob/proj/model.py"]);
        assert_eq!(out, ["<home-1>/proj/model.py", "<home-2>/proj/model.py"]);
        let out = redacted(&["/data/x/train/m.py", "/scratch/y/train/m.py"]);
        assert_eq!(out, ["<root-1>/train/m.py", "<root-2>/train/m.py"]);
        // Nested folders of one project keep one placeholder and their last two parts.
        let out = redacted(&["/mnt/u/p/src/train/x.py", "/mnt/u/p/src/train/sub/y.py"]);
        assert_eq!(out, ["<root>/train/x.py", "<root>/sub/y.py"]);
        // A project folder that looks like Python's library is not taken for it.
        let out = redacted(&["/srv/app/lib/python_utils/x.py"]);
        assert_eq!(out, ["<root>/python_utils/x.py"]);
    }

    #[test]
    fn paths_in_a_document_read_as_each_path_alone() {
        let paths = [
            "/mnt/u/p/src/train/x.py",
            "/mnt/u/p/src/train/sub/y.py",
            "/home/jdoe/proj/model.py",
        ];
        let plan = Redaction::plan(paths);
        let document =
            "| `/mnt/u/p/src/train/x.py:3:f` | 1 |\n\"/mnt/u/p/src/train/sub/y.py:9:g\",\n\
                        see /home/jdoe/proj/model.py:5 and /home/jdoe/other.py";
        assert_eq!(
            plan.apply_in_text(document),
            "| `<root>/train/x.py:3:f` | 1 |\n\"<root>/sub/y.py:9:g\",\n\
             see <home>/proj/model.py:5 and <home>/other.py"
        );
        for path in paths {
            assert_eq!(plan.apply_in_text(path), plan.apply(path));
        }
        assert!(matches!(
            plan.apply_in_text("nothing here"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn repeated_separators_and_backslashes_divide_as_one_slash() {
        let paths = [
            "//home//jdoe//proj//model.py",
            r"\\home\\kwang\\proj\\model.py",
            r"\Users\lmiller\proj\train.py",
            r"C:\\Users\\nsmith\\proj\\data.py",
            "///mnt///data3///team///src///x.py",
        ];
        let plan = Redaction::plan(paths);
        assert_eq!(plan.users(), ["jdoe", "kwang", "lmiller", "nsmith"]);
        let out: Vec<String> = paths.iter().map(|p| plan.apply(p).into_owned()).collect();
        assert_eq!(
            out,
            [
                "<home>/proj//model.py",
                r"<home>\proj\\model.py",
                r"<home>\proj\train.py",
                r"<home>\proj\\data.py",
                "<root>/src///x.py",
            ]
        );
    }

    #[test]
    fn user_names_from_home_and_temporary_folders_are_hidden_as_words() {
        let plan = Redaction::plan([
            "/home/jdoe/proj/model.py",
            "/tmp/torchinductor_kwang/ab/c.py",
        ]);
        assert_eq!(plan.users(), ["jdoe", "kwang"]);
        assert_eq!(
            plan.apply("run by jdoe at /scratch/jdoe/out, not jdoe_2 or kwangs"),
            "run by <user> at /scratch/<user>/out, not jdoe_2 or kwangs"
        );
        // Text with nothing to hide is not copied.
        assert!(matches!(plan.apply("forward"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_function_named_as_a_user_keeps_its_name() {
        let mut snapshot = Snapshot::default();
        let frame = |s: &mut Snapshot, file: &str, name: &str| {
            let filename = s.strings.intern(file);
            let name = s.strings.intern(name);
            s.frames.push(crate::model::Frame {
                filename,
                line: 12,
                name,
                extra: Vec::new(),
            });
        };
        frame(&mut snapshot, "/home/main/proj/train.py", "main");
        frame(&mut snapshot, "/home/main/proj/train.py", "step");
        let note = snapshot.strings.intern("written by main on node1");
        let plan = redact_snapshot(&mut snapshot);
        assert_eq!(plan.users(), ["main"]);
        let text = |id| snapshot.strings.get(id).to_string();
        assert_eq!(
            text(snapshot.frames[0].name),
            "main",
            "the function is code"
        );
        assert_eq!(text(snapshot.frames[0].filename), "<home>/proj/train.py");
        assert_eq!(
            text(note),
            "written by <user> on node1",
            "the person is hidden"
        );
        // In a document, a frame's function after its line number is kept too.
        assert_eq!(
            plan.apply_in_text("/home/main/proj/train.py:12:main, run by main"),
            "<home>/proj/train.py:12:main, run by <user>"
        );
    }
}
