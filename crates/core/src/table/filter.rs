//! Which allocations a table shows: its scope (alive at a moment, allocated in a window, or
//! all) narrowed by its filter (frame text or an address, sizes, role, component, stream).
//!
//! One pass over the allocations; frame text is tested once per distinct stack. Also reads
//! sizes and streams as people type them (`1.5 MiB`, `0x7f…`), for the page's filter fields.
//! Not the place for sorting or grouping.

use regex_lite::{Regex, RegexBuilder};
use rustc_hash::FxHashMap;

use super::columns::Rows;
use super::{Filter, Scope};
use crate::analysis::axis::Axis;
use crate::analysis::query::Query;
use crate::analysis::stacks::{allocation_stack, FrameSearch};
use crate::analysis::Origin;
use crate::model::{Snapshot, StackId};

/// The states a scope covers, and what a share of it is measured against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopeStates {
    /// Alive in this state.
    At(u32),
    /// Allocated in a state of `first..=last`; `None` for a window outside the trace.
    AllocatedIn(Option<(u32, u32)>),
    All,
}

/// The states `scope` names on `rows`' device.
pub fn scope_states(rows: &Rows<'_>, scope: Scope) -> ScopeStates {
    let last = rows.device.trace.len() as u32;
    match scope {
        Scope::Peak => ScopeStates::At(rows.facts.peak_allocated.state()),
        Scope::End => ScopeStates::At(last),
        Scope::State(s) => ScopeStates::At(s.get().min(last)),
        Scope::Window { mode, x0, x1 } => {
            let axis = Axis::known(&rows.device.trace, rows.columns.has_time);
            ScopeStates::AllocatedIn(axis.states_in(mode, x0, x1).map(|r| (r.first, r.last)))
        }
        Scope::All => ScopeStates::All,
    }
}

/// Whether allocation `i` is in the scope.
pub fn in_scope(rows: &Rows<'_>, states: ScopeStates, i: u32) -> bool {
    let a = rows.allocation(i);
    match states {
        ScopeStates::At(state) => a.is_alive_at(state),
        ScopeStates::AllocatedIn(None) => false,
        ScopeStates::AllocatedIn(Some((first, last))) => {
            a.origin() == Origin::Trace && (first..=last).contains(&(a.alloc_row + 1))
        }
        ScopeStates::All => true,
    }
}

/// A filter made ready to test allocations: text parsed, a regular expression compiled.
pub struct Matcher<'a> {
    filter: &'a Filter,
    text: Option<Text<'a>>,
}

enum Text<'a> {
    Address(u64),
    Frames(FrameSearch<'a>),
    Regex {
        snapshot: &'a Snapshot,
        regex: Regex,
        stacks: FxHashMap<StackId, bool>,
    },
}

impl<'a> Matcher<'a> {
    /// Refuses a regular expression that does not compile, saying why.
    pub fn new(snapshot: &'a Snapshot, filter: &'a Filter) -> Result<Self, String> {
        let text = if filter.text.trim().is_empty() {
            None
        } else if filter.regex {
            let regex = RegexBuilder::new(filter.text.trim())
                .case_insensitive(true)
                .build()
                .map_err(|e| format!("The regular expression does not compile: {e}"))?;
            Some(Text::Regex {
                snapshot,
                regex,
                stacks: FxHashMap::default(),
            })
        } else {
            match Query::parse(&filter.text) {
                Some(Query::Address(addr)) => Some(Text::Address(addr)),
                Some(Query::Text(needle)) => {
                    Some(Text::Frames(FrameSearch::new(snapshot, &needle)))
                }
                None => None,
            }
        };
        Ok(Matcher { filter, text })
    }

    /// Whether allocation `i` passes every condition.
    pub fn accepts(&mut self, rows: &Rows<'_>, i: u32) -> bool {
        let f = self.filter;
        let a = rows.allocation(i);
        if f.min_bytes.is_some_and(|min| a.size < min)
            || f.max_bytes.is_some_and(|max| a.size > max)
        {
            return false;
        }
        if f.role.is_some_and(|r| rows.role(i) != r)
            || f.component.is_some_and(|c| rows.component(i) != c)
        {
            return false;
        }
        if f.stream.is_some_and(|s| rows.stream(i) != s) {
            return false;
        }
        match &mut self.text {
            None => true,
            Some(Text::Address(addr)) => {
                a.addr <= *addr && *addr < a.addr.saturating_add(a.size.max(1))
            }
            Some(Text::Frames(search)) => {
                let trace = &rows.device.trace;
                let stack = allocation_stack(trace, &a);
                search.matches(a.stack)
                    || (stack != a.stack && search.matches(stack))
                    || rows.annotations(i).iter().any(|n| {
                        n.metadata
                            .as_deref()
                            .is_some_and(|m| search.matches_text(m))
                    })
                    || rows.dtype(i).is_some_and(|d| search.matches_text(d))
            }
            Some(Text::Regex {
                snapshot,
                regex,
                stacks,
            }) => *stacks.entry(a.stack).or_insert_with(|| {
                snapshot.stack_frames(a.stack).any(|frame| {
                    let text = format!(
                        "{}:{}:{}",
                        snapshot.str(frame.filename),
                        frame.line,
                        snapshot.str(frame.name)
                    );
                    regex.is_match(&text)
                })
            }),
        }
    }
}

/// What [`select`] chose.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selection {
    /// Allocations of the scope that pass the filter, in allocation order.
    pub chosen: Vec<u32>,
    /// Allocations and requested bytes of the whole scope (what shares are measured against).
    pub scope_count: u32,
    pub scope_bytes: u64,
}

/// The allocations of `scope` that pass `filter`. A regular expression that does not compile
/// is refused, saying why.
pub fn select(rows: &Rows<'_>, scope: Scope, filter: &Filter) -> Result<Selection, String> {
    let states = scope_states(rows, scope);
    let mut matcher = Matcher::new(rows.snapshot, filter)?;
    let mut selection = Selection::default();
    for i in 0..rows.facts.allocations.len() as u32 {
        if !in_scope(rows, states, i) {
            continue;
        }
        selection.scope_count += 1;
        selection.scope_bytes += rows.allocation(i).size;
        if matcher.accepts(rows, i) {
            selection.chosen.push(i);
        }
    }
    Ok(selection)
}

/// Reads a byte count: `1048576`, `512 KiB`, `1.5 MiB`, `2G` (binary units); empty is none.
pub fn parse_bytes(text: &str) -> Result<Option<u64>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let not_a_size = || format!("'{text}' is not a size: say 1048576, 512 KiB or 1.5 MiB");
    let too_large = || format!("'{text}' is 2^64 bytes or more: no device holds that much");
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1u64,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        "t" | "tib" | "tb" => 1 << 40,
        other => {
            return Err(format!(
                "'{other}' is not a unit: say B, KiB, MiB, GiB or TiB"
            ))
        }
    };
    if !number.contains('.') {
        // Whole bytes are read exactly, up to 2^64 − 1.
        let whole: u64 = number
            .parse()
            .map_err(|e: std::num::ParseIntError| match e.kind() {
                std::num::IntErrorKind::PosOverflow => too_large(),
                _ => not_a_size(),
            })?;
        return whole.checked_mul(scale).map(Some).ok_or_else(too_large);
    }
    let number: f64 = number.parse().map_err(|_| not_a_size())?;
    let bytes = (number * scale as f64).round();
    // 2^64 as a float: a budget beyond it would saturate to 2^64 − 1.
    if bytes >= 18_446_744_073_709_551_616.0 {
        return Err(too_large());
    }
    Ok(Some(bytes as u64))
}

/// Reads a stream: `0x7f…` or a decimal number; empty is none.
pub fn parse_stream(text: &str) -> Result<Option<u64>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed
        .map(Some)
        .map_err(|_| format!("'{text}' is not a stream: say 0x… or a number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_streams_read_as_people_write_them() {
        assert_eq!(parse_bytes(""), Ok(None));
        assert_eq!(parse_bytes("1048576"), Ok(Some(1 << 20)));
        assert_eq!(parse_bytes("512 KiB"), Ok(Some(512 << 10)));
        assert_eq!(parse_bytes("1.5MiB"), Ok(Some(3 << 19)));
        assert_eq!(parse_bytes("2G"), Ok(Some(2 << 30)));
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("3 parsecs").is_err());
        assert_eq!(parse_bytes("18446744073709551615"), Ok(Some(u64::MAX)));
        assert!(parse_bytes("18446744073709551616").is_err());
        assert!(parse_bytes("99999999999999999999TiB").is_err());
        assert!(parse_bytes("16777216TiB").is_err());
        assert_eq!(parse_bytes("16777215TiB"), Ok(Some(16_777_215 << 40)));
        assert!(parse_bytes("16777216.0 TiB").is_err());
        assert!(parse_bytes(".").is_err());
        assert_eq!(parse_stream("0x1f"), Ok(Some(31)));
        assert_eq!(parse_stream(""), Ok(None));
    }
}
