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
