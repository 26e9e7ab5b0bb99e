//! The tables as CSV, and the allocator's totals in words: a header row, then one line per allocation (its exact values:
//! `requested_bytes` is what the allocated curve counts, `size_bytes` the allocator's block),
//! or one line per group of a grouped table, parents before their children.
//!
//! Text cells are quoted as RFC 4180 says, and a cell that a spreadsheet would run as a
//! formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) is prefixed with
//! `'`, since frame names come from the file. Not the place for choosing rows.

use std::fmt::Write;

use crate::analysis::allocator::AllocatorTotals;

use crate::table::columns::Rows;
use crate::table::groups::{every_group, share, Tree};

/// The allocator's memory at a moment in one sentence, as the page and `memsight segments`
/// say it.
/// What a fragmentation percentage means, said wherever one is shown.
pub const FRAGMENTATION_MEANS: &str = "1 − largest free block ÷ cached free; 0% when the cached memory is one block, near 100% when it is in many small ones";

pub fn allocator_totals(segments: u32, t: &AllocatorTotals) -> String {
    format!(
        "{} segments, {} reserved: {} allocated ({} requested, {} rounding waste), {} waiting to be freed, {} cached free (largest free block {}, fragmentation {}: {FRAGMENTATION_MEANS})",
        super::count(segments as u64),
        super::bytes(t.reserved),
        super::bytes(t.allocated),
        super::bytes(t.requested),
        super::bytes(t.rounding_waste),
        super::bytes(t.pending_free),
        super::bytes(t.cached_free),
        super::bytes(t.largest_free_block),
        super::percent_ppm((t.fragmentation * 1e6).round().max(0.0) as u64),
    )
}

/// The header of an allocations CSV.
pub const ROWS_HEADER: &str = "allocation,element,address,size_bytes,requested_bytes,stream,role,role_inferred,component,phase,alloc_event,alloc_time_us,free_event,free_time_us,lifetime_events,lifetime_us,top_frame,shape,dtype,annotations";

/// The header of a groups CSV.
pub const GROUPS_HEADER: &str =
    "level,path,group,count,requested_bytes,size_bytes,share,occurrences";

/// A text cell, quoted when needed and kept from running as a formula.
pub fn cell(text: &str) -> String {
    // A spreadsheet reads a cell starting with one of these as a formula (a tab or carriage
    // return before one is skipped by some).
    let text = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_string()
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

fn opt<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or(String::new(), |v| v.to_string())
}

/// Every row of `sorted`, in its order.
pub fn rows_csv(rows: &Rows<'_>, sorted: &[u32]) -> String {
    let mut out = String::with_capacity(sorted.len() * 120 + ROWS_HEADER.len() + 1);
    out.push_str(ROWS_HEADER);
    out.push('\n');
    for &i in sorted {
        let r = rows.row(i);
        let _ = writeln!(
            out,
            "{},{},0x{:x},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.allocation,
            r.index,
            r.address,
            r.size_bytes,
            r.requested_bytes,
            r.stream,
            r.role.key(),
            r.role_inferred,
            r.component.key(),
            r.phase.map_or("", |p| p.key()),
            opt(r.alloc_event),
            opt(r.alloc_time_us),
            opt(r.free_event),
            opt(r.free_time_us),
            r.lifetime_events,
            opt(r.lifetime_us),
            cell(r.top_frame.as_deref().unwrap_or("")),
            cell(r.shape.as_deref().unwrap_or("")),
            cell(r.dtype.as_deref().unwrap_or("")),
            cell(&annotations(&r.annotations)),
        );
    }
    out
}

/// What a row says after its top frame: ` · compiled node … · torch.float32 [8, 1024] ·
/// annotated: saved for backward | offload candidate` (each part only when known).
pub fn row_notes(r: &crate::table::columns::TableRow) -> String {
    let mut out = String::new();
    if let Some(node) = &r.compiled_node {
        out += &format!(" · {}", super::compiled_node(node));
    }
    if let Some(tensor) = tensor(r.shape.as_deref(), r.dtype.as_deref()) {
        out += &format!(" · {tensor}");
    }
    if !r.annotations.is_empty() {
        out += &format!(" · annotated: {}", annotations(&r.annotations));
    }
    out
}

/// The tensor an allocation was made for, as the file records it: `torch.float32 [8, 1024]`
/// (a dtype alone says nothing of the size).
pub fn tensor(shape: Option<&str>, dtype: Option<&str>) -> Option<String> {
    match (dtype, shape) {
        (Some(dtype), Some(shape)) => Some(format!("{dtype} {shape}")),
        (None, Some(shape)) => Some(shape.to_string()),
        _ => None,
    }
}

/// An allocation's annotations in one cell: each one's metadata, oldest first, ` | ` between.
pub fn annotations(list: &[crate::analysis::stacks::AnnotationText]) -> String {
    let texts: Vec<&str> = list
        .iter()
        .map(|a| a.metadata.as_deref().unwrap_or(""))
        .collect();
    texts.join(" | ")
}

/// Every group of `tree`, parents first, with the number of groups written.
pub fn groups_csv(tree: &Tree, scope_bytes: u64) -> (String, u64) {
    let groups = every_group(tree);
    let mut out = String::new();
    out.push_str(GROUPS_HEADER);
    out.push('\n');
    for (path, node) in &groups {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{:.6},{}",
            path.len(),
            cell(&path.join(" › ")),
            cell(&node.label),
            node.count,
            node.requested_bytes,
            node.size_bytes,
            share(node.requested_bytes, scope_bytes),
            node.occurrences,
        );
    }
    (out, groups.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_quoted_and_never_run_as_formulas() {
        assert_eq!(cell("model.py:12:forward"), "model.py:12:forward");
        assert_eq!(cell("a,b"), "\"a,b\"");
        assert_eq!(cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(cell("=HYPERLINK(1)"), "'=HYPERLINK(1)");
        assert_eq!(cell("-x,y"), "\"'-x,y\"");
        assert_eq!(cell("\t=1+1"), "'\t=1+1");
        assert_eq!(cell("\r=1+1"), "\"'\r=1+1\"");
    }
}
