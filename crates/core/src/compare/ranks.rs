//! Where a file sits in a distributed job, read from its name or its path in an opened
//! folder (`outputs/memory_snapshot/iteration_3/rank5_memory_snapshot.pickle`): its rank and
//! its iteration; the settings its name carries (`ctx512`, `bs8`); and which ranks' peaks
//! stand out from the others'.
//!
//! Names only: a file carries no rank of its own. Not the place for grouping rows.

/// A file's rank and iteration, when its name says them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobPosition {
    pub rank: Option<u32>,
    pub iteration: Option<u32>,
}

/// Reads `rank<N>` (also `rank_N`, `rank-N`) from the file name, and `iteration_<N>`
/// (`iter<N>`, `step_<N>`) from the name or its folders; the last one in the path wins.
pub fn job_position(path: &str) -> JobPosition {
    let lower = path.to_ascii_lowercase();
    let file = lower.rsplit(['/', '\\']).next().unwrap_or(&lower);
    JobPosition {
        rank: number_after(file, &["rank"]),
        iteration: number_after(&lower, &["iteration", "iter", "step"]),
    }
}

/// Words before a number that are not settings: what [`job_position`] reads, and number
/// formats (`bf16`, `fp32`), which name a dtype rather than a quantity.
const NOT_SETTINGS: [&str; 10] = [
    "rank",
    "iteration",
    "iter",
    "step",
    "bf",
    "fp",
    "float",
    "int",
    "uint",
    "cuda",
];

/// The settings a name carries, in order: every word of letters directly followed by a
/// number (`ctx512` → `("ctx", 512)`, `bs8`, `seq1024`, `layers24`), in the file's name or
/// its folders; the last of a word wins.
pub fn settings_of(path: &str) -> Vec<(String, u64)> {
    let mut found: Vec<(String, u64)> = Vec::new();
    for token in path.split(|c: char| !c.is_ascii_alphanumeric()) {
        let letters = token.bytes().take_while(u8::is_ascii_alphabetic).count();
        let (word, digits) = token.split_at(letters);
        if word.is_empty()
            || digits.is_empty()
            || digits.len() > 12
            || !digits.bytes().all(|b| b.is_ascii_digit())
        {
            continue;
        }
        let word = word.to_ascii_lowercase();
        if NOT_SETTINGS.contains(&word.as_str()) {
            continue;
        }
        let Ok(value) = digits.parse() else { continue };
        found.retain(|(w, _)| *w != word);
        found.push((word, value));
    }
    found
}

/// The settings that tell `paths` apart: words found in at least two of them with at least
/// two values between them, in the order they first appear.
pub fn shared_settings(paths: &[&str]) -> Vec<String> {
    let read: Vec<Vec<(String, u64)>> = paths.iter().map(|p| settings_of(p)).collect();
    let mut words: Vec<String> = Vec::new();
    for (word, _) in read.iter().flatten() {
        if words.contains(word) {
            continue;
        }
        let values: Vec<u64> = read
            .iter()
            .filter_map(|s| s.iter().find(|(w, _)| w == word).map(|&(_, v)| v))
            .collect();
        if values.len() >= 2 && values.iter().any(|&v| v != values[0]) {
            words.push(word.clone());
        }
    }
    words
}

/// The number following the last of `words` in `text` (a `_` or `-` may come between), where
/// the word does not continue a longer word's letters.
fn number_after(text: &str, words: &[&str]) -> Option<u32> {
    let bytes = text.as_bytes();
    let mut found = None;
    for word in words {
        let mut from = 0;
        while let Some(at) = text[from..].find(word) {
            let start = from + at;
            from = start + word.len();
            if start > 0 && bytes[start - 1].is_ascii_alphabetic() {
                continue;
            }
            let mut i = from;
            if matches!(bytes.get(i), Some(b'_' | b'-')) {
                i += 1;
            }
            let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
            if digits == 0 || digits > 9 {
                continue;
            }
            let n = text[i..i + digits].parse().ok();
            if found.is_none_or(|(s, _)| start > s) {
                found = n.map(|n| (start, n));
            }
        }
    }
    found.map(|(_, n)| n)
}

/// Which values stand out from the others: further from their median than 5 % of it and
/// than three robust standard deviations (1.4826 × the median absolute deviation). Fewer
/// than three values have no outlier.
pub fn outliers(values: &[u64]) -> Vec<bool> {
    if values.len() < 3 {
        return vec![false; values.len()];
    }
    let median = |xs: &mut Vec<f64>| {
        xs.sort_by(|a, b| a.total_cmp(b));
        let n = xs.len();
        if n % 2 == 1 {
            xs[n / 2]
        } else {
            (xs[n / 2 - 1] + xs[n / 2]) / 2.0
        }
    };
    let mut xs: Vec<f64> = values.iter().map(|&v| v as f64).collect();
    let m = median(&mut xs);
    let mut deviations: Vec<f64> = values.iter().map(|&v| (v as f64 - m).abs()).collect();
    let mad = median(&mut deviations);
    let limit = (0.05 * m).max(3.0 * 1.4826 * mad);
    values
        .iter()
        .map(|&v| (v as f64 - m).abs() > limit)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_and_iterations_come_from_names_and_folders() {
        let p = job_position("outputs/memory_snapshot/iteration_3/rank5_memory_snapshot.pickle");
        assert_eq!((p.rank, p.iteration), (Some(5), Some(3)));
        let p = job_position("run/Rank-12.iter40.pickle");
        assert_eq!((p.rank, p.iteration), (Some(12), Some(40)));
        let p = job_position("step_7/rank_0.pickle");
        assert_eq!((p.rank, p.iteration), (Some(0), Some(7)));
        // "frank3" is not a rank; "ranking" has no number.
        let p = job_position("frank3_ranking.pickle");
        assert_eq!((p.rank, p.iteration), (None, None));
        let p = job_position("memory_ctx128_forward.pickle");
        assert_eq!(p, JobPosition::default());
    }

    #[test]
    fn an_outlier_stands_out_by_more_than_noise_and_five_percent() {
        let gib = 1u64 << 30;
        let ranks = [40 * gib, 40 * gib + 1, 40 * gib - 3, 52 * gib, 40 * gib];
        assert_eq!(outliers(&ranks), [false, false, false, true, false]);
        // Within 5 %: no outlier however quiet the others are.
        let close = [100, 100, 100, 104];
        assert_eq!(outliers(&close), [false; 4]);
        assert_eq!(outliers(&[1, 1000]), [false, false]);
    }

    #[test]
    fn settings_are_read_from_names_and_kept_where_they_differ() {
        let name = "runs/bs8/memory_ctx512_forward_bf16_rank3.pickle";
        assert_eq!(
            settings_of(name),
            vec![("bs".to_string(), 8), ("ctx".to_string(), 512)]
        );
        let names = [
            "memory_ctx128_forward_bf16.pickle",
            "memory_ctx512_forward_bf16.pickle",
            "memory_ctx512_fullstep_bs8.pickle",
            "memory_2.7b_forward.pickle",
        ];
        // `bs` is in one name only; `bf16` is a dtype; `ctx` differs.
        assert_eq!(shared_settings(&names), vec!["ctx".to_string()]);
        assert!(shared_settings(&["a_ctx512.pickle", "b_ctx512.pickle"]).is_empty());
    }
}
