//! Fixed sets of keywords looked for in the text of stack frames, compiled once into one
//! Aho-Corasick automaton per text they are looked for in: one pass over a frame's text says
//! which of the sets have a keyword in it. Looking for each keyword with `str::contains` set a
//! substring searcher up every time, and was the largest part of analysing a real snapshot in
//! WebAssembly (where `contains` has no SIMD to lean on). Not the place for what the keywords
//! mean (the callers: `stacks`, `categories::signals`) or for the user's rules
//! (`categories::rules`).

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

/// Up to 32 sets of keywords looked for in the same text, compiled the first time they are
/// used.
pub struct KeywordSets {
    sets: &'static [&'static [&'static str]],
    /// The automaton over every keyword, and the set of each keyword (by pattern index).
    compiled: OnceLock<(AhoCorasick, Vec<u8>)>,
}

/// Which sets have a keyword in a text: bit `i` for set `i`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Found(u32);

impl Found {
    /// Whether set `set` has a keyword in the text.
    pub fn has(self, set: usize) -> bool {
        self.0 & (1 << set) != 0
    }
}

impl KeywordSets {
    pub const fn new(sets: &'static [&'static [&'static str]]) -> Self {
        assert!(sets.len() <= 32, "at most 32 sets");
        KeywordSets {
            sets,
            compiled: OnceLock::new(),
        }
    }

    /// Which sets have a keyword occurring in `text` (case-sensitive, as `str::contains`).
    pub fn find(&self, text: &str) -> Found {
        let (automaton, set_of) = self.compiled.get_or_init(|| {
            let words = self.sets.iter().flat_map(|set| set.iter());
            let set_of = self
                .sets
                .iter()
                .enumerate()
                .flat_map(|(i, set)| std::iter::repeat_n(i as u8, set.len()))
                .collect();
            // A frame's text is short: a DFA with no prefilter is fastest on it. Standard
            // matching reports every keyword that occurs, overlapping or not.
            let automaton = AhoCorasick::builder()
                .kind(Some(AhoCorasickKind::DFA))
                .match_kind(MatchKind::Standard)
                .prefilter(false)
                .build(words)
                .expect("a few short keywords compile");
            (automaton, set_of)
        });
        let all = if self.sets.len() == 32 {
            u32::MAX
        } else {
            (1 << self.sets.len()) - 1
        };
        let mut found = 0u32;
        for hit in automaton.find_overlapping_iter(text) {
            found |= 1 << set_of[hit.pattern().as_usize()];
            if found == all {
                break;
            }
        }
        Found(found)
    }

    /// The sets, in the order they were given.
    pub fn sets(&self) -> &'static [&'static [&'static str]] {
        self.sets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static SETS: KeywordSets =
        KeywordSets::new(&[&["nccl", "all_to_all"], &["a"], &[], &["to_all", "all"]]);

    #[test]
    fn finds_what_contains_finds_set_by_set() {
        let texts = [
            "",
            "nccl",
            "ProcessGroupNCCL",
            "xall_to_allx",
            "all_to_",
            "b",
            "banana",
            "nc",
            "c10d::nccl::all_to_all",
            "to_al",
        ];
        for text in texts {
            let found = SETS.find(text);
            for (i, set) in SETS.sets().iter().enumerate() {
                let expected = set.iter().any(|w| text.contains(w));
                assert_eq!(found.has(i), expected, "set {i} in {text:?}");
            }
        }
    }
}
