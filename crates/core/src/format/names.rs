//! What tells open files apart. Files of one study share most of their names
//! (`memory_ctx128_forward_bf16.pickle`, `memory_ctx512_forward_bf16.pickle`): the part that
//! differs is what a reader needs in a narrow list, a chart's legend or a picker, and it is
//! often in the middle, where cutting a long name loses it.
//!
//! Words only, over names as given; not for reading ranks or iterations (see
//! [`crate::compare::files`]).

/// Each name's distinguishing part: its file name (no folders) without the words and
/// separators every name starts and ends with. A name with nothing left (two files of one
/// name, or one name the others extend) keeps its whole file name. One name alone is its file
/// name.
pub fn distinct_parts(names: &[&str]) -> Vec<String> {
    let files: Vec<&str> = names.iter().map(|n| file_name(n)).collect();
    if files.len() < 2 {
        return files.iter().map(|f| f.to_string()).collect();
    }
    let tokens: Vec<Vec<&str>> = files.iter().map(|f| tokenize(f)).collect();
    let shortest = tokens.iter().map(Vec::len).min().unwrap_or(0);
    let prefix = (0..shortest)
        .take_while(|&i| tokens.iter().all(|t| t[i] == tokens[0][i]))
        .count();
    let suffix = (0..shortest - prefix)
        .take_while(|&i| {
            let last = &tokens[0][tokens[0].len() - 1 - i];
            tokens.iter().all(|t| t[t.len() - 1 - i] == *last)
        })
        .count();
    tokens
        .iter()
        .zip(&files)
        .map(|(t, file)| {
            let middle = &t[prefix..t.len() - suffix];
            let start = middle.iter().position(|w| !is_separator(w));
            let end = middle.iter().rposition(|w| !is_separator(w));
            match start.zip(end) {
                Some((s, e)) => middle[s..=e].concat(),
                None => file.to_string(),
            }
        })
        .collect()
}

/// `text` cut to at most `max` characters by dropping whole words from its start, so a name's
/// end (where runs' settings usually are: `…xl_ctx256_forward_bf16`) stays whole. A text whose
/// last word alone does not fit is cut in the middle ([`super::shorten_middle`]).
pub fn keep_last_words(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let tokens = tokenize(text);
    // Start at a word, after a separator: `…ctx256_forward`, not `…_ctx256_forward`.
    let mut kept = 0;
    let mut best = None;
    for (i, token) in tokens.iter().enumerate().rev() {
        kept += token.chars().count();
        if kept + 1 > max {
            break;
        }
        if !is_separator(token) {
            best = Some(i);
        }
    }
    match best {
        Some(i) => format!("…{}", tokens[i..].concat()),
        None => super::shorten_middle(text, max),
    }
}

/// Names told apart (each [`distinct_parts`]' part, or a label) fitted to `room(i)` characters
/// each: beside other names, each keeps its last words ([`keep_last_words`]), unless that
/// makes two different names alike, which then keep both ends, cut in the middle; a name
/// alone keeps both ends ([`super::shorten_middle`]).
pub fn fit_all(texts: &[String], room: &dyn Fn(usize) -> usize) -> Vec<String> {
    if texts.len() < 2 {
        return texts
            .iter()
            .enumerate()
            .map(|(i, t)| super::shorten_middle(t, room(i)))
            .collect();
    }
    let tails: Vec<String> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| keep_last_words(t, room(i)))
        .collect();
    // Names grouped by their shortened form: only names in one group can have become alike
    // (a job's thousand files stay linear).
    let mut by_tail: std::collections::HashMap<&str, Vec<usize>> = Default::default();
    for (i, tail) in tails.iter().enumerate() {
        by_tail.entry(tail.as_str()).or_default().push(i);
    }
    (0..texts.len())
        .map(|i| {
            let alike = by_tail[tails[i].as_str()]
                .iter()
                .any(|&j| texts[j] != texts[i]);
            match alike {
                true => super::shorten_middle(&texts[i], room(i)),
                false => tails[i].clone(),
            }
        })
        .collect()
}

fn file_name(name: &str) -> &str {
    name.rsplit(['/', '\\']).next().unwrap_or(name)
}

fn is_separator(token: &str) -> bool {
    !token.starts_with(|c: char| c.is_alphanumeric())
}

/// Runs of letters and digits, and runs of anything else between them.
fn tokenize(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut word = None;
    for (i, c) in text.char_indices() {
        let is_word = c.is_alphanumeric();
        if word.is_some_and(|w| w != is_word) {
            out.push(&text[start..i]);
            start = i;
        }
        word = Some(is_word);
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_differ_in_the_middle_keep_the_middle() {
        let names = [
            "results/memory_profiles/xl_ctx128_forward_bf16.pickle",
            "results/memory_profiles/xl_ctx512_forward_bf16.pickle",
            "results/memory_profiles/xl_ctx512_full_step_bf16.pickle",
        ];
        assert_eq!(
            distinct_parts(&names),
            ["ctx128_forward", "ctx512_forward", "ctx512_full_step"]
        );
        assert_eq!(
            distinct_parts(&["run/rank0.pickle", "run/rank1.pickle", "run/rank12.pickle"]),
            ["rank0", "rank1", "rank12"]
        );
    }

    #[test]
    fn long_names_keep_their_last_words_whole() {
        assert_eq!(
            keep_last_words(
                "LINYUNLinYun__CS336-assignment2-systems__xl_ctx256_forward_bf16",
                31
            ),
            "…xl_ctx256_forward_bf16"
        );
        assert_eq!(keep_last_words("short_name", 31), "short_name");
        // No whole last word fits: cut in the middle.
        assert_eq!(
            keep_last_words("abcdefghijklmnopqrstuvwxyz", 10),
            "abc…uvwxyz"
        );
    }

    #[test]
    fn a_name_with_nothing_left_keeps_its_file_name() {
        assert_eq!(
            distinct_parts(&["a/snap.pickle", "b/snap.pickle"]),
            ["snap.pickle", "snap.pickle"]
        );
        assert_eq!(
            distinct_parts(&["snap.pickle", "snap_2.pickle"]),
            ["snap.pickle", "2"]
        );
        assert_eq!(distinct_parts(&["/tmp/only.pickle"]), ["only.pickle"]);
        assert!(distinct_parts(&[]).is_empty());
        assert_eq!(
            distinct_parts(&["C:\\runs\\bs8.json", "C:\\runs\\bs16.json"]),
            ["bs8", "bs16"]
        );
        // Words, not characters: a shared "ctx" stays with its number.
        assert_eq!(
            distinct_parts(&["ctx128.pkl", "ctx1024.pkl"]),
            ["ctx128", "ctx1024"]
        );
        assert_eq!(distinct_parts(&["é_1.pkl", "é_2.pkl"]), ["1", "2"]);
    }
}
