//! Words of a source view, for the page and `memsight source` alike: a line's margin, a
//! function's total, which allocations the lines count, and the change between two runs.

use super::{bytes, bytes_delta, count};
use crate::analysis::lines::Tally;
use crate::table::Scope;

/// A margin: bytes and how many allocations (`1.5 MiB ×3`); blank for none.
pub fn margin(t: &Tally) -> String {
    if t.count == 0 {
        String::new()
    } else {
        format!("{} ×{}", bytes(t.bytes), count(u64::from(t.count)))
    }
}

/// The change between two runs' margins (`+1.5 MiB`); blank when neither holds anything.
pub fn change(a: &Tally, b: &Tally) -> String {
    if a.count == 0 && b.count == 0 {
        String::new()
    } else {
        bytes_delta(b.bytes as i64 - a.bytes as i64)
    }
}

/// A function's total, on the row above it.
pub fn function_total(name: &str, through: &Tally) -> String {
    format!(
        "{name}: {} pass through it ({} allocation{})",
        bytes(through.bytes),
        count(u64::from(through.count)),
        if through.count == 1 { "" } else { "s" }
    )
}

/// A file shown without its text (`path`, or "this file").
pub fn no_text(path: Option<&str>) -> String {
    format!(
        "No text for {}: only its lines with memory are listed. Open a folder of your code to see it whole.",
        path.unwrap_or("this file")
    )
}

/// Which allocations the lines count.
pub fn scope_words(scope: &Scope) -> String {
    match scope {
        Scope::Peak => "alive at the peak".to_string(),
        Scope::End => "alive at the end".to_string(),
        Scope::State(state) => format!("alive {}", super::after_state(*state)),
        Scope::Window { .. } => "made in the timeline's view".to_string(),
        Scope::All => "every allocation of the trace".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn margins_are_blank_without_memory() {
        let none = Tally::default();
        let some = Tally {
            count: 3,
            bytes: 3 << 20,
        };
        assert_eq!(margin(&none), "");
        assert_eq!(margin(&some), "3.00 MiB ×3");
        assert_eq!(change(&none, &none), "");
        assert_eq!(change(&none, &some), "+3.00 MiB");
        assert_eq!(change(&some, &none), "−3.00 MiB");
        assert_eq!(
            scope_words(&Scope::State(crate::model::State::new(11))),
            "alive after event 10"
        );
    }
}
