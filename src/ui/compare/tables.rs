//! A comparison's tables: the overview's numbers, the categories at both peaks, and the call
//! sites or modules (a tree, indented by depth) with what changed. Each row carries its exact
//! values (`data-a`, `data-b`, `data-delta`); text from files is only ever text nodes.

use leptos::prelude::*;

use crate::analysis::lines::SourcePlace;
use crate::compare::diff::{CategoryDelta, KeyedDelta, MetricDelta};
use crate::compare::Change;
use crate::format::{self, compare as words};

/// Lines of call sites or modules shown before "Show all".
const FIRST_LINES: usize = 40;

fn opt(v: Option<impl ToString>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

fn delta_class(delta: i64) -> &'static str {
    match delta {
        0 => "delta zero",
        d if d > 0 => "delta up",
        _ => "delta down",
    }
}

#[component]
pub fn MetricTable(
    metrics: Vec<MetricDelta>,
    /// The tables beside it are at a phase: say these numbers are the whole run's.
    #[prop(default = false)]
    beside_a_phase: bool,
) -> impl IntoView {
    let rows = metrics
        .into_iter()
        .filter(|m| m.a.is_some() || m.b.is_some())
        .map(|m| {
            view! {
                <tr data-key=m.key.as_str() data-a=opt(m.a) data-b=opt(m.b) data-delta=opt(m.delta)>
                    <th scope="row">{words::metric_title(&m)}</th>
                    <td class="num">{words::metric_text(&m, m.a)}</td>
                    <td class="num">{words::metric_text(&m, m.b)}</td>
                    <td class=format!("num {}", delta_class(m.delta.unwrap_or(0)))>{words::metric_delta_text(&m)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="top-table compare-table" id="compare-metrics">
            <thead><tr><th scope="col">{if beside_a_phase { "Overview (the whole run's, not at the phase)" } else { "Overview" }}</th><th scope="col" class="num">"A"</th><th scope="col" class="num">"B"</th><th scope="col" class="num">"B − A"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

#[component]
pub fn CategoryTable(
    id: &'static str,
    title: &'static str,
    rows: Vec<CategoryDelta>,
) -> impl IntoView {
    let rows = rows
        .into_iter()
        .filter(|r| r.a_bytes > 0 || r.b_bytes > 0)
        .map(|r| {
            view! {
                <tr data-category=r.key.clone() data-a=r.a_bytes.to_string() data-b=r.b_bytes.to_string() data-delta=r.delta_bytes.to_string()>
                    <th scope="row">{words::category_title(&r.key)}</th>
                    <td class="num">{format::bytes(r.a_bytes)}</td>
                    <td class="num">{format::bytes(r.b_bytes)}</td>
                    <td class=format!("num {}", delta_class(r.delta_bytes))>{format::bytes_delta(r.delta_bytes)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="top-table compare-table" id=id>
            <thead><tr><th scope="col">{title}</th><th scope="col" class="num">"A"</th><th scope="col" class="num">"B"</th><th scope="col" class="num">"B − A"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

#[component]
pub fn KeyedTable(
    id: &'static str,
    title: &'static str,
    rows: Vec<KeyedDelta>,
    tree: bool,
    /// Opens a call site's code in the source view of both runs.
    #[prop(optional)]
    on_source: Option<Callback<SourcePlace>>,
) -> impl IntoView {
    let changed_only = RwSignal::new(true);
    let all = RwSignal::new(false);
    let total = rows.len();
    let changed = rows.iter().filter(|r| r.change != Change::Same).count();
    let rows = StoredValue::new(rows);
    let shown = move || {
        rows.with_value(|rows| {
            let chosen: Vec<KeyedDelta> = rows
                .iter()
                .filter(|r| !changed_only.get() || r.change != Change::Same)
                .cloned()
                .collect();
            let limit = if all.get() { chosen.len() } else { FIRST_LINES };
            (
                chosen.len(),
                chosen.into_iter().take(limit).collect::<Vec<_>>(),
            )
        })
    };
    view! {
        <section class="compare-keyed" id=id data-rows=total.to_string() data-changed=changed.to_string()>
            <header class="chart-header">
                <h3>{title}</h3>
                <label class="hint">
                    <input type="checkbox" prop:checked=move || changed_only.get()
                        on:change=move |e| changed_only.set(event_target_checked(&e)) />
                    " Changed only"
                </label>
            </header>
            {move || (changed == 0).then(|| view! { <p class="hint">"Nothing changed here."</p> })}
            <table class="top-table compare-table">
                <thead><tr>
                    <th scope="col">{if tree { "Module" } else { "Call site" }}</th>
                    <th scope="col">"Change"</th>
                    <th scope="col" class="num">"A"</th>
                    <th scope="col" class="num">"B"</th>
                    <th scope="col" class="num">"B − A"</th>
                </tr></thead>
                <tbody>
                    {move || shown().1.into_iter().map(|r| {
                        let calls = words::occurrences_text(r.a_occurrences, r.b_occurrences);
                        let indent = if tree { r.depth as f64 * 14.0 } else { 0.0 };
                        view! {
                            <tr class="keyed-row" data-key=r.key.clone() data-change=r.change.key()
                                data-a=r.a_bytes.to_string() data-b=r.b_bytes.to_string()
                                data-delta=r.delta_bytes.to_string() data-depth=r.depth.to_string()
                            >
                                <td class="keyed-label" style:padding-left=format!("{}px", 6.0 + indent)>
                                    <code class:user-frame=r.user title=r.key.clone()>{r.label.clone()}</code>
                                    {on_source.zip(SourcePlace::of_frame_text(&r.label)).map(|(open, place)| view! {
                                        <button type="button" class="source-open" data-path=place.path.clone()
                                            data-line=place.line.map(|l| l.to_string()).unwrap_or_default()
                                            title="Show this file with the bytes of each line in A and B"
                                            on:click=move |_| open.run(place.clone())>"code"</button>
                                    })}
                                    {(!calls.is_empty()).then(|| view! { <span class="calls">{format!(" {calls}")}</span> })}
                                </td>
                                <td><span class=format!("badge change-{}", r.change.key())>{words::change_label(r.change)}</span></td>
                                <td class="num" title=format!("{} allocations", format::count(r.a_count as u64))>{format::bytes(r.a_bytes)}</td>
                                <td class="num" title=format!("{} allocations", format::count(r.b_count as u64))>{format::bytes(r.b_bytes)}</td>
                                <td class=format!("num {}", delta_class(r.delta_bytes))>{format::bytes_delta(r.delta_bytes)}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
            {move || {
                let (count, lines) = shown();
                (count > lines.len()).then(|| view! {
                    <button type="button" class="button quiet" on:click=move |_| all.set(true)>
                        {format!("Show all {}", format::count(count as u64))}
                    </button>
                })
            }}
        </section>
    }
}
