//! One device's memory as a Markdown report, to paste into an issue, a pull request or a
//! notebook: the summary, bytes by role and by component at the allocated peak (tables that add
//! up to the live bytes), the peak estimate and its terms, the largest allocations at the peak,
//! fragmentation of the final segments, the findings with their advice, and how many user
//! rules were in use.
//!
//! Words only, from numbers the breakdown computed ([`DeviceSummary`], [`MomentBreakdown`]),
//! in the same labels and units as the page. Text that comes from the file (its name, call
//! sites) is escaped, so it is read as text: it never opens a link, emphasis or raw HTML, and
//! never breaks a table.

use super::breakdown::{component_label, role_label, side_label};
use super::{bytes, bytes_delta, count, findings, percent_ppm, timestamp_us};
use crate::analysis::categories::{Component, Role};
use crate::analysis::Analysed;
use crate::breakdown::service::{DeviceSummary, MomentBreakdown};
use crate::model::BlockState;

/// How many of the largest allocations at the peak the report lists.
pub const TOP_ALLOCATIONS: usize = 50;

/// The Markdown report of one device of `file_name`: `summary` of its run, `peak` the
/// breakdown at its allocated peak (with its largest allocations), `analysed` the file (for the
/// final segments), `rules_in_use` how many user rules categorised it.
pub fn markdown(
    file_name: &str,
    summary: &DeviceSummary,
    peak: &MomentBreakdown,
    analysed: &Analysed,
    rules_in_use: usize,
) -> String {
    let mut out = String::new();
    let device = summary.device;
    out.push_str(&format!(
        "# Memory report: {}, cuda:{device}\n\n",
        escape(file_name)
    ));
    summary_section(&mut out, summary, peak);
    category_table(
        &mut out,
        "By role at the peak",
        "Role",
        Role::ALL
            .iter()
            .zip(&peak.roles)
            .map(|(&r, &b)| (role_label(r), b)),
        peak.live_bytes,
    );
    category_table(
        &mut out,
        "By component at the peak",
        "Component",
        Component::ALL
            .iter()
            .zip(&peak.components)
            .map(|(&c, &b)| (component_label(c), b)),
        peak.live_bytes,
    );
    estimate_section(&mut out, summary);
    largest_section(&mut out, peak);
    fragmentation_section(&mut out, analysed, device);
    findings_section(&mut out, summary);
    out.push_str("## Rules\n\n");
    out.push_str(&match rules_in_use {
        0 => "No user rules were in use: every role and component was inferred from the \
              allocation's stack, the phase it was made in and its lifetime.\n"
            .to_string(),
        1 => "1 user rule was in use, applied before the inference.\n".to_string(),
        n => format!(
            "{} user rules were in use, applied before the inference.\n",
            count(n as u64)
        ),
    });
    out
}

/// `bytes` in binary units with the exact count: `1.50 KiB (1,536 bytes)`.
fn bytes_exact(n: u64) -> String {
    format!("{} ({} bytes)", bytes(n), count(n))
}

/// `part` of `whole` as a percentage with one decimal: `37.5%` (`0.0%` of nothing).
fn share(part: u64, whole: u64) -> String {
    if whole == 0 {
        return percent_ppm(0);
    }
    percent_ppm((part as u128 * 1_000_000 / whole as u128) as u64)
}

/// When a state is: `after event 1,234`, or `before the first event`.
fn when(state: u32) -> String {
    match state.checked_sub(1) {
        Some(event) => format!("after event {}", count(event as u64)),
        None => "before the first event".to_string(),
    }
}

fn summary_section(out: &mut String, summary: &DeviceSummary, peak: &MomentBreakdown) {
    out.push_str("## Summary\n\n");
    let mut at = when(summary.peak_state);
    if let Some(us) = peak.time_us.filter(|&us| us > 0) {
        at.push_str(&format!(", at {}", timestamp_us(us as u64)));
    }
    out.push_str(&format!(
        "- **Peak allocated:** {}, {at}, in {} live allocations\n",
        bytes_exact(summary.peak_allocated),
        count(peak.live_count as u64)
    ));
    out.push_str(&format!(
        "- **Peak reserved:** {}, {}\n",
        bytes_exact(summary.peak_reserved),
        when(summary.reserved_peak_state)
    ));
    out.push_str(&format!(
        "- **Allocated at the reserved peak:** {}\n",
        bytes_exact(summary.allocated_at_reserved_peak)
    ));
    let efficiency = (summary.efficiency().clamp(0.0, 1.0) * 1e6).round() as u64;
    out.push_str(&format!(
        "- **Efficiency:** {} (allocated / reserved where reserved memory peaks)\n\n",
        percent_ppm(efficiency)
    ));
}

/// A table of bytes by category, non-empty categories only, with a total row of `total`.
fn category_table<'a>(
    out: &mut String,
    title: &str,
    header: &str,
    rows: impl Iterator<Item = (&'a str, u64)>,
    total: u64,
) {
    out.push_str(&format!("## {title}\n\n"));
    out.push_str(&format!(
        "| {header} | Bytes | Exact bytes | Share |\n|---|---:|---:|---:|\n"
    ));
    for (label, b) in rows.filter(|&(_, b)| b > 0) {
        out.push_str(&format!(
            "| {label} | {} | {} | {} |\n",
            bytes(b),
            count(b),
            share(b, total)
        ));
    }
    out.push_str(&format!(
        "| **Total** | **{}** | **{}** | **{}** |\n\n",
        bytes(total),
        count(total),
        share(total, total)
    ));
}

fn estimate_section(out: &mut String, summary: &DeviceSummary) {
    let e = &summary.estimate;
    out.push_str("## Peak estimate\n\n");
    out.push_str(
        "Parameters + optimizer state + max(gradients + optimizer temporaries, activations), \
         each term the most bytes its role held at any moment of the run.\n\n",
    );
    out.push_str("| Term | Bytes | Exact bytes |\n|---|---:|---:|\n");
    let terms = [
        ("Parameters", e.parameters),
        ("Optimizer state", e.optimizer_state),
        ("Gradients", e.gradients),
        ("Optimizer temporaries", e.optimizer_temporaries),
        ("Activations", e.activations),
    ];
    for (label, b) in terms {
        out.push_str(&format!("| {label} | {} | {} |\n", bytes(b), count(b)));
    }
    let difference = e.difference();
    let sign = if difference < 0 { "\u{2212}" } else { "" };
    out.push_str(&format!(
        "| **Estimate** | **{}** | **{}** |\n| Observed peak | {} | {} |\n\
         | Estimate \u{2212} observed | {} | {sign}{} |\n\n",
        bytes(e.estimate),
        count(e.estimate),
        bytes(e.observed),
        count(e.observed),
        bytes_delta(difference),
        count(difference.unsigned_abs())
    ));
    let step = e.gradients + e.optimizer_temporaries;
    out.push_str(&format!(
        "The max is set by {}: {} against {}.",
        side_label(e.side),
        bytes(step.max(e.activations)),
        bytes(step.min(e.activations))
    ));
    let apart = format!(
        "{} ({})",
        bytes(difference.unsigned_abs()),
        share(difference.unsigned_abs(), e.observed)
    );
    out.push_str(&match difference {
        0 => " The estimate equals the observed peak.\n\n".to_string(),
        d if d > 0 => format!(
            " The estimate is {apart} above the observed peak: the terms' maxima were not all \
             reached at the same moment.\n\n"
        ),
        _ => format!(
            " The estimate is {apart} below the observed peak: the run peaked higher than its \
             terms explain (temporaries, workspaces or unknown memory on top).\n\n"
        ),
    });
}

fn largest_section(out: &mut String, peak: &MomentBreakdown) {
    out.push_str("## Largest allocations at the peak\n\n");
    let listed = &peak.largest[..peak.largest.len().min(TOP_ALLOCATIONS)];
    if listed.is_empty() {
        out.push_str("Nothing was alive at the peak.\n\n");
        return;
    }
    let listed_bytes: u64 = listed.iter().map(|a| a.size).sum();
    out.push_str(&format!(
        "The {} largest of {} live allocations: {} of {} ({}).\n\n",
        count(listed.len() as u64),
        count(peak.live_count as u64),
        bytes(listed_bytes),
        bytes(peak.live_bytes),
        share(listed_bytes, peak.live_bytes)
    ));
    out.push_str(
        "| # | Size | Exact bytes | Role | Component | Call site |\n\
         |---:|---:|---:|---|---|---|\n",
    );
    for (i, a) in listed.iter().enumerate() {
        let site = match a.name.as_deref() {
            Some(name) => code(name),
            None => "*no stack recorded*".to_string(),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {site} |\n",
            i + 1,
            bytes(a.size),
            count(a.size),
            role_label(a.role),
            component_label(a.component)
        ));
    }
    out.push('\n');
}

fn fragmentation_section(out: &mut String, analysed: &Analysed, device: u32) {
    out.push_str("## Fragmentation at the end\n\n");
    let Some(dev) = analysed.snapshot.devices.iter().find(|d| d.id == device) else {
        out.push_str("This device has no segments.\n\n");
        return;
    };
    if dev.segments.is_empty() {
        out.push_str("No segments were reserved at the end.\n\n");
        return;
    }
    let reserved: u64 = dev.segments.iter().map(|s| s.total_size).sum();
    let free = dev
        .blocks
        .iter()
        .filter(|b| b.state == BlockState::Inactive);
    let (free_bytes, free_blocks, largest) = free.fold((0u64, 0u64, 0u64), |(b, n, m), block| {
        (b + block.size, n + 1, m.max(block.size))
    });
    out.push_str(&format!(
        "- **Reserved:** {} in {} segments\n",
        bytes_exact(reserved),
        count(dev.segments.len() as u64)
    ));
    out.push_str(&format!(
        "- **Cached free:** {}, {} of reserved\n",
        bytes_exact(free_bytes),
        share(free_bytes, reserved)
    ));
    out.push_str(&format!(
        "- **Largest free block:** {}, {} of cached free\n",
        bytes_exact(largest),
        share(largest, free_bytes)
    ));
    out.push_str(&format!("- **Free blocks:** {}\n", count(free_blocks)));
    if dev.blocks.is_empty() {
        out.push_str("\nThe snapshot lists no blocks, so its free blocks are unknown.\n");
    }
    out.push('\n');
}

fn findings_section(out: &mut String, summary: &DeviceSummary) {
    out.push_str("## Findings\n\n");
    if summary.findings.is_empty() {
        out.push_str("Nothing worth attention was found.\n\n");
        return;
    }
    for (i, f) in summary.findings.iter().enumerate() {
        out.push_str(&format!(
            "### {}. {}\n\n{}\n\n**What to try:** {}\n\n",
            i + 1,
            escape(&findings::title(f)),
            escape(&findings::why(f)),
            escape(&findings::what_to_try(f))
        ));
    }
}

/// Line breaks and other control characters as spaces: a table row or a list item stays on
/// one line.
fn one_line(text: &str) -> impl Iterator<Item = char> + '_ {
    text.chars().map(|c| if c.is_control() { ' ' } else { c })
}

/// `text` as Markdown that reads as the same text, on one line: every character Markdown (or
/// GitHub's flavour: tables, strikethrough, math) could read as syntax is escaped with a
/// backslash, `&` and `<` included, so no entity, autolink or HTML comes from it. An
/// underscore between two letters or digits is left alone (it cannot start emphasis there),
/// so `expandable_segments` stays readable.
pub fn escape(text: &str) -> String {
    let chars: Vec<char> = one_line(text).collect();
    let mut out = String::with_capacity(text.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let special = match c {
            '_' => {
                let word = |c: Option<&char>| c.is_some_and(|c| c.is_alphanumeric());
                !(i > 0 && word(chars.get(i - 1)) && word(chars.get(i + 1)))
            }
            '\\' | '`' | '*' | '[' | ']' | '<' | '>' | '&' | '|' | '~' | '$' | '#' | '!' => true,
            _ => false,
        };
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `text` as a code span that may sit in a table cell: fenced with one backtick more than its
/// longest run of backticks (padded with a space when it starts or ends with a backtick or a
/// space, so the content stays exact), its pipes escaped (`\|`, which GitHub's tables read as
/// a pipe of the cell, even in code), on one line. Code spans show HTML as text.
pub fn code(text: &str) -> String {
    let text: String = one_line(text).collect();
    if text.is_empty() {
        return "*empty*".to_string();
    }
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with(['`', ' ']) || text.ends_with(['`', ' ']) {
        " "
    } else {
        ""
    };
    let body = text.replace('|', "\\|");
    format!("{fence}{pad}{body}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::breakdown::estimate::{Estimate, PeakSide};
    use crate::breakdown::findings::{Finding, FindingKind};
    use crate::breakdown::service::{BreakdownAnswer, BreakdownRequest, Moment, TopAllocation};
    use crate::model::{Block, Device, Segment, Snapshot};
    use crate::protocol::{Answer, Request};
    use crate::session::Session;

    const MIB: u64 = 1 << 20;

    /// The cells of a table row as GitHub splits them: at pipes not escaped by a backslash.
    fn cells(row: &str) -> Vec<String> {
        let mut cells = vec![String::new()];
        let mut escaped = false;
        for c in row.chars() {
            if c == '|' && !escaped {
                cells.push(String::new());
            } else {
                cells.last_mut().unwrap().push(c);
            }
            escaped = c == '\\';
        }
        // Drop what is outside the leading and trailing pipes.
        cells.remove(0);
        cells.pop();
        cells.into_iter().map(|c| c.trim().to_string()).collect()
    }

    /// The rows of the table under `heading`, without its header and delimiter rows.
    fn table<'a>(report: &'a str, heading: &str) -> Vec<&'a str> {
        let start = report.find(heading).unwrap_or_else(|| panic!("{heading}"));
        report[start..]
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2)
            .collect()
    }

    fn exact(cell: &str) -> u64 {
        cell.trim_matches('*').replace(',', "").parse().unwrap()
    }

    fn device() -> Device {
        let sizes = [
            (8 * MIB, BlockState::ActiveAllocated),
            (3 * MIB, BlockState::Inactive),
            (5 * MIB, BlockState::Inactive),
            (4 * MIB, BlockState::ActiveAllocated),
        ];
        Device {
            id: 1,
            segments: vec![
                Segment {
                    total_size: 11 * MIB,
                    blocks: 0..2,
                    ..Segment::default()
                },
                Segment {
                    address: 0x1000_0000,
                    total_size: 9 * MIB,
                    blocks: 2..4,
                    ..Segment::default()
                },
            ],
            blocks: sizes
                .iter()
                .map(|&(size, state)| Block {
                    size,
                    state,
                    ..Block::default()
                })
                .collect(),
            ..Device::default()
        }
    }

    fn summary() -> DeviceSummary {
        DeviceSummary {
            device: 1,
            generation: 1,
            states: 11,
            peak_state: 7,
            peak_allocated: 12 * MIB,
            peak_reserved: 20 * MIB,
            allocated_at_reserved_peak: 15 * MIB,
            finding_allocations: vec![],
            reserved_peak_state: 8,
            estimate: Estimate {
                parameters: 4 * MIB,
                optimizer_state: 0,
                gradients: 2 * MIB,
                optimizer_temporaries: 0,
                activations: 6 * MIB,
                estimate: 10 * MIB,
                side: PeakSide::Activations,
                observed: 12 * MIB,
            },
            cached_free: vec![],
            findings: vec![Finding {
                kind: FindingKind::CachedFree {
                    bytes: 150 * MIB,
                    blocks: 1,
                    largest: 150 * MIB,
                    reserved: 2048 * MIB,
                },
                allocations: vec![],
            }],
            compute_ms: 0.0,
        }
    }

    fn peak(names: &[Option<&str>]) -> MomentBreakdown {
        let mut roles = vec![0; Role::ALL.len()];
        roles[Role::Parameters as usize] = 4 * MIB;
        roles[Role::Activations as usize] = 8 * MIB;
        let mut components = vec![0; Component::ALL.len()];
        components[Component::Attention as usize] = 8 * MIB;
        components[Component::Other as usize] = 4 * MIB;
        MomentBreakdown {
            device: 1,
            only: None,
            moment: Moment::Peak,
            state: 7,
            event: Some(6),
            time_us: None,
            live_count: names.len() as u32,
            live_bytes: 12 * MIB,
            reserved: 20 * MIB,
            roles,
            components,
            largest: names
                .iter()
                .enumerate()
                .map(|(i, name)| TopAllocation {
                    index: i as u32,
                    allocation: i as u32,
                    size: (8 * MIB) >> i,
                    role: Role::Activations,
                    component: Component::Attention,
                    name: name.map(str::to_string),
                    user: true,
                })
                .collect(),
            call_sites: vec![],
            live_sizes: vec![],
            generation: 1,
            compute_ms: 0.0,
        }
    }

    fn analysed() -> Analysed {
        Analysed::new(Snapshot {
            devices: vec![device()],
            ..Snapshot::default()
        })
    }

    #[test]
    fn escaped_text_is_never_markdown_syntax() {
        assert_eq!(escape("plain text 1.5"), "plain text 1.5");
        assert_eq!(
            escape("<img src=x onerror=alert(1)>"),
            "\\<img src=x onerror=alert(1)\\>"
        );
        assert_eq!(
            escape("[a](javascript:x) *b* `c`"),
            "\\[a\\](javascript:x) \\*b\\* \\`c\\`"
        );
        assert_eq!(
            escape("a|b\\c &amp; ~~d~~"),
            "a\\|b\\\\c \\&amp; \\~\\~d\\~\\~"
        );
        assert_eq!(escape("line\nbreak\r\tend"), "line break  end");
        // Underscores inside words stay; those that could open or close emphasis do not.
        assert_eq!(
            escape("expandable_segments:True"),
            "expandable_segments:True"
        );
        assert_eq!(
            escape("_private __dunder__"),
            "\\_private \\_\\_dunder\\_\\_"
        );
    }

    #[test]
    fn code_spans_hold_any_name_in_one_cell() {
        assert_eq!(code("model.py:3:forward"), "`model.py:3:forward`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("``x``"), "``` ``x`` ```");
        assert_eq!(code("a|b"), "`a\\|b`");
        assert_eq!(code("<b>\nx</b>"), "`<b> x</b>`");
        assert_eq!(code(""), "*empty*");
        let row = format!("| 1 | {} | end |", code("f|`g`|h\\|i"));
        assert_eq!(cells(&row).len(), 3, "{row}");
        assert_eq!(cells(&row)[2], "end");
    }

    #[test]
    fn tables_add_up_and_hostile_names_stay_in_their_cells() {
        let hostile = "evil.py:1:f|g`|`<script>alert(1)</script>";
        let report = markdown(
            "run [1] <b>.pickle",
            &summary(),
            &peak(&[Some(hostile), None]),
            &analysed(),
            2,
        );
        assert!(
            report.starts_with("# Memory report: run \\[1\\] \\<b\\>.pickle, cuda:1\n"),
            "{report}"
        );
        for heading in ["## By role at the peak", "## By component at the peak"] {
            let rows = table(&report, heading);
            let (total, rows) = rows.split_last().unwrap();
            let sum: u64 = rows.iter().map(|r| exact(&cells(r)[2])).sum();
            assert_eq!(sum, 12 * MIB, "{heading}");
            assert_eq!(exact(&cells(total)[2]), 12 * MIB, "{heading}");
            assert_eq!(cells(total)[3], "**100.0%**");
            assert!(rows.iter().all(|r| cells(r).len() == 4), "{heading}");
        }
        let role_rows = table(&report, "## By role at the peak");
        assert_eq!(
            cells(role_rows[1]),
            ["Activations", "8.00 MiB", "8,388,608", "66.7%"]
        );

        let largest = table(&report, "## Largest allocations");
        assert_eq!(largest.len(), 2);
        let first = cells(largest[0]);
        assert_eq!(first.len(), 6, "{}", largest[0]);
        assert_eq!(
            first[5],
            "``evil.py:1:f\\|g`\\|`<script>alert(1)</script>``"
        );
        assert_eq!(first[3..5], ["Activations", "Attention"]);
        assert_eq!(cells(largest[1])[5], "*no stack recorded*");
        // The only HTML-like text is inside the code span.
        assert_eq!(report.matches("<script>").count(), 1);

        assert!(report.contains("- **Peak allocated:** 12.0 MiB (12,582,912 bytes), after event 6, in 2 live allocations"));
        assert!(report.contains("- **Efficiency:** 75.0%"), "{report}");
        assert!(report.contains("The max is set by activations"), "{report}");
        assert!(
            report.contains("The estimate is 2.00 MiB (16.7%) below the observed peak"),
            "{report}"
        );
        assert!(report.contains("- **Cached free:** 8.00 MiB (8,388,608 bytes), 40.0% of reserved"));
        assert!(report
            .contains("| Estimate \u{2212} observed | \u{2212}2.00 MiB | \u{2212}2,097,152 |"));
        assert!(report.contains("- **Largest free block:** 5.00 MiB"));
        assert!(report.contains("- **Free blocks:** 2\n"));
        assert!(report.contains("### 1. 150 MiB of cached free blocks at the end"));
        assert!(report.contains("**What to try:** Within a training loop"));
        assert!(report.contains("2 user rules were in use"));
    }

    #[test]
    fn a_report_of_a_loaded_file_adds_up_to_its_peak() {
        let file = include_bytes!("../../../../tests/fixtures/small.json");
        let mut session = Session::new();
        session
            .load(&file[..], file.len() as u64, &|| 0.0, &mut |_| {})
            .unwrap();
        let device = session.analysed().unwrap().snapshot.devices[0].id;
        let ask = |session: &mut Session, request| match session
            .answer(Request::Breakdown(request), &|| 0.0)
            .unwrap()
            .answer
        {
            Answer::Breakdown(answer) => answer,
            other => panic!("{}", other.feature()),
        };
        let BreakdownAnswer::Summary(summary) =
            ask(&mut session, BreakdownRequest::Summary { device })
        else {
            panic!("not a summary")
        };
        let at = BreakdownRequest::At {
            device,
            moment: Moment::Peak,
            top: TOP_ALLOCATIONS as u32,
            only: None,
        };
        let BreakdownAnswer::At(peak) = ask(&mut session, at) else {
            panic!("not a moment")
        };
        let report = markdown(
            "small.json",
            &summary,
            &peak,
            session.analysed().unwrap(),
            0,
        );
        let roles = table(&report, "## By role at the peak");
        assert_eq!(
            exact(&cells(roles.last().unwrap())[2]),
            summary.peak_allocated
        );
        let sum: u64 = roles[..roles.len() - 1]
            .iter()
            .map(|r| exact(&cells(r)[2]))
            .sum();
        assert_eq!(sum, summary.peak_allocated);
        let largest = table(&report, "## Largest allocations");
        assert_eq!(largest.len(), peak.largest.len().min(TOP_ALLOCATIONS));
        let first = cells(largest[0]);
        assert_eq!(exact(&first[2]), peak.largest[0].size);
        assert_eq!(
            first[5],
            code(peak.largest[0].name.as_deref().unwrap()),
            "{report}"
        );
        assert!(report.contains("No user rules were in use"));
    }
}
