//! A source file as a source view lays it out (the page's and `memsight source`'s): each line of its text with its margin (the
//! bytes of one run, or of two runs and their change), each function's total on its own row
//! above its `def`, and the lines holding memory that the text does not reach (a file changed
//! since the run, or no text at all) after it. Which rows have memory and how much is the
//! core's (`analysis::lines`); this only interleaves.
//!
//! Not the place for words or for choosing the allocations.

use super::lines::def_line;

/// One row of a laid-out file.
#[derive(Clone, Debug, PartialEq)]
pub enum ListedRow<M, F> {
    /// A function's total, above its `def` (or its first line with memory).
    Function { name: String, total: F },
    /// A line: its number (from 1), its code (empty beyond the text), its margin when it holds
    /// memory.
    Code {
        number: i64,
        code: String,
        margin: Option<M>,
    },
}

/// `text` (when known) with `lines` (line number → margin, in line order) and `functions`
/// (name, first line with memory, total) set in it.
pub fn lay_out<M: Clone, F: Clone>(
    text: Option<&str>,
    lines: &[(i64, M)],
    functions: &[(String, i64, F)],
) -> Vec<ListedRow<M, F>> {
    let code: Vec<&str> = text.map_or(Vec::new(), |t| t.lines().collect());
    let reached = code.len() as i64;
    // Each function's total goes above the line it starts at.
    let mut heads: Vec<(i64, ListedRow<M, F>)> = functions
        .iter()
        .map(|(name, first_line, total)| {
            let at = text
                .and_then(|t| def_line(t, name, *first_line))
                .unwrap_or(*first_line);
            (
                at,
                ListedRow::Function {
                    name: name.clone(),
                    total: total.clone(),
                },
            )
        })
        .collect();
    heads.sort_by_key(|(at, _)| *at);
    let mut heads = heads.into_iter().peekable();
    let mut margins = lines.iter().peekable();
    let mut rows = Vec::with_capacity(code.len() + functions.len() + lines.len());
    let mut push_line = |rows: &mut Vec<ListedRow<M, F>>, number: i64, code: &str| {
        let margin = loop {
            match margins.peek() {
                Some((n, _)) if *n < number => {
                    margins.next();
                }
                Some((n, m)) if *n == number => break Some(m.clone()),
                _ => break None,
            }
        };
        rows.push(ListedRow::Code {
            number,
            code: code.to_string(),
            margin,
        });
    };
    let mut heads_up_to = |rows: &mut Vec<ListedRow<M, F>>, number: i64| {
        while heads.peek().is_some_and(|(at, _)| *at <= number) {
            rows.push(heads.next().expect("peeked").1);
        }
    };
    for (k, line) in code.iter().enumerate() {
        let number = k as i64 + 1;
        heads_up_to(&mut rows, number);
        push_line(&mut rows, number, line);
    }
    // Lines with memory the text does not reach, in line order.
    for (number, margin) in lines.iter().filter(|(n, _)| *n < 1 || *n > reached) {
        heads_up_to(&mut rows, *number);
        rows.push(ListedRow::Code {
            number: *number,
            code: String::new(),
            margin: Some(margin.clone()),
        });
    }
    rows.extend(heads.map(|(_, row)| row));
    rows
}

/// The row showing line `number`, for scrolling to it.
pub fn row_of<M, F>(rows: &[ListedRow<M, F>], number: i64) -> Option<usize> {
    rows.iter()
        .position(|r| matches!(r, ListedRow::Code { number: n, .. } if *n == number))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "import torch\n\ndef make(n):\n    a = torch.zeros(n)\n    return a\n";

    fn numbers(rows: &[ListedRow<u64, u64>]) -> Vec<String> {
        rows.iter()
            .map(|r| match r {
                ListedRow::Function { name, total } => format!("{name}={total}"),
                ListedRow::Code { number, margin, .. } => match margin {
                    Some(m) => format!("{number}:{m}"),
                    None => number.to_string(),
                },
            })
            .collect()
    }

    #[test]
    fn a_function_total_sits_above_its_def_and_margins_on_their_lines() {
        let rows = lay_out(Some(TEXT), &[(4, 100u64)], &[("make".into(), 4, 100u64)]);
        assert_eq!(numbers(&rows), ["1", "2", "make=100", "3", "4:100", "5"]);
        assert_eq!(row_of(&rows, 4), Some(4));
        match &rows[4] {
            ListedRow::Code { code, .. } => assert_eq!(code, "    a = torch.zeros(n)"),
            _ => panic!("a line"),
        }
    }

    #[test]
    fn lines_beyond_the_text_follow_it_and_no_text_lists_only_memory() {
        let rows = lay_out(
            Some(TEXT),
            &[(4, 1u64), (40, 2)],
            &[("make".into(), 4, 1u64), ("later".into(), 40, 2)],
        );
        assert_eq!(
            numbers(&rows),
            ["1", "2", "make=1", "3", "4:1", "5", "later=2", "40:2"]
        );
        let none = lay_out(None, &[(7, 5u64), (9, 6)], &[("f".into(), 7, 11u64)]);
        assert_eq!(numbers(&none), ["f=11", "7:5", "9:6"]);
        let empty: Vec<ListedRow<u64, u64>> = lay_out(None, &[], &[]);
        assert!(empty.is_empty());
    }
}
