//! Text helpers every layer shares: ordering names as people read them. Not the place for
//! words shown to the user (`format`).

/// Orders names as people do: runs of digits by their value, so `rank2` comes before
/// `rank10`, and the rest ignoring case.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn parts(text: &str) -> Vec<(bool, String)> {
        let mut out: Vec<(bool, String)> = Vec::new();
        for c in text.chars() {
            let digit = c.is_ascii_digit();
            match out.last_mut() {
                Some((d, part)) if *d == digit => part.push(c),
                _ => out.push((digit, c.to_string())),
            }
        }
        out
    }
    let (x, y) = (parts(a), parts(b));
    for ((dx, px), (dy, py)) in x.iter().zip(&y) {
        let order = match (dx, dy) {
            (true, true) => {
                let (tx, ty) = (px.trim_start_matches('0'), py.trim_start_matches('0'));
                tx.len().cmp(&ty.len()).then_with(|| tx.cmp(ty))
            }
            _ => px.to_lowercase().cmp(&py.to_lowercase()),
        };
        if order.is_ne() {
            return order;
        }
    }
    x.len().cmp(&y.len()).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_by_the_value_of_their_numbers() {
        let mut names = vec![
            "it_2/rank10.p",
            "it_2/rank2.p",
            "it_10/rank1.p",
            "It_2/Rank1.p",
        ];
        names.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            names,
            [
                "It_2/Rank1.p",
                "it_2/rank2.p",
                "it_2/rank10.p",
                "it_10/rank1.p"
            ]
        );
    }
}
