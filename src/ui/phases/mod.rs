//! The phase report of one device: the trace in its phases of training by iteration (and the
//! `record_function` scopes, when the file has any), each with the allocated bytes before
//! and after it, its delta, what it allocated and freed, its peak and the role holding most
//! there; a bar chart of each phase's peak; a click on a phase picks its peak on the timeline
//! (so the breakdown shows it); the report downloads as Markdown.
//!
//! Asks the worker (`Request::Phases`) again when the categories' generation changes; words
//! are `format::phases`', the same as `memsight phases`. Exact values in `data-*`. A trace
//! with thousands of phases or scopes (a `record_function` per step or per layer) shows the
//! first rows of each table until asked for all, and the chart the highest peaks: thousands of
//! table rows or bars would stall the page and be read by nobody.

use leptos::prelude::*;

use super::actions::{use_actions, ViewAsker};
use super::file_context::use_file;
use super::charts::{self, Slice};
use super::requests::Latest;
use super::state::FileId;
use super::widgets::chart::{ChartCard, Draw};
use super::widgets::download::download_text;
use crate::model::State;
use crate::analysis::palette::Style;
use crate::format::{self, phases as words};
use crate::phases::service::PhasesRequest;
use crate::phases::{PhaseReport, PhaseRow};

/// Rows a table shows until "Show all" is clicked.
const ROWS_SHOWN: usize = 30;
/// Phases the chart draws at most (those with the highest peaks).
const BARS_SHOWN: usize = 40;

#[component]
pub fn PhasesPanel(
    file: FileId,
    device: u32,
    file_name: String,
    dark: Signal<bool>,
) -> impl IntoView {
    let actions = use_actions();
    let cx = use_file();

    let asker = ViewAsker::new(actions, file);
    let report = RwSignal::new(None::<Result<PhaseReport, String>>);
    let latest = StoredValue::new(Latest::default());
    Effect::new(move |_| {
        cx.generation.track();
        asker.ask_latest(latest, PhasesRequest { device }, move |answer| {
            report.set(Some(answer))
        });
    });
    let draw: Draw = std::rc::Rc::new(move |canvas, theme| {
        let (slices, phases): (Vec<Slice>, usize) = report.with(|r| match r {
            Some(Ok(r)) => {
                // The highest peaks, in the order of the run.
                let mut highest: Vec<usize> = (0..r.rows.len()).collect();
                highest.sort_by_key(|&i| std::cmp::Reverse(r.rows[i].peak_bytes));
                highest.truncate(BARS_SHOWN);
                highest.sort_unstable();
                let slices: Vec<Slice> = highest
                    .into_iter()
                    .map(|i| Slice {
                        key: i.to_string(),
                        label: phase_name(&r.rows[i]),
                        value: r.rows[i].peak_bytes,
                        colour: colour(&r.rows[i]),
                    })
                    .collect();
                (slices, r.rows.len())
            }
            _ => (Vec::new(), 0),
        });
        let title = if phases > slices.len() {
            format!(
                "Peak within each phase: the {} highest of {}",
                slices.len(),
                format::count(phases as u64)
            )
        } else {
            "Peak within each phase".to_string()
        };
        charts::bars(canvas, theme, &slices, &title, &format::bytes)
    });
    let markdown_name = format!("{}-phases.md", file_name.trim_end_matches(".pickle"));
    let download = move |_| {
        if let Some(Ok(r)) = report.get_untracked() {
            let text = format!("# {}\n\n{}", file_name, words::markdown(&r));
            download_text(&markdown_name, &text, "text/markdown");
        }
    };

    view! {
        <section class="panel phases-panel" id="phases"
            data-ready=move || report.with(|r| matches!(r, Some(Ok(_)))).to_string()
            data-rows=move || report.with(|r| r.as_ref().and_then(|r| r.as_ref().ok()).map_or(0, |r| r.rows.len())).to_string()
        >
            <header class="chart-header">
                <h2>"Phases"</h2>
                <button type="button" class="button quiet" id="phases-markdown" on:click=download>"Markdown"</button>
            </header>
            {move || match report.get() {
                None => view! { <p class="pending" aria-busy="true">"Cutting the trace into its phases…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="view-error" role="alert">{e}</p> }.into_any(),
                Some(Ok(r)) if r.rows.is_empty() => view! { <p class="hint" id="phases-empty">"No phase: the trace records no event."</p> }.into_any(),
                Some(Ok(r)) => view! {
                    <p class="hint" id="phases-source" data-source=format!("{:?}", r.source).to_lowercase()>{words::source_sentence(&r)}</p>
                    <PhaseTable id="phases-table" rows=r.rows.clone() scopes=false />
                    {(!r.scopes.is_empty()).then(|| view! {
                        <h3>"record_function scopes"</h3>
                        <PhaseTable id="scopes-table" rows=r.scopes.clone() scopes=true />
                    })}
                }
                .into_any(),
            }}
            <div class="chart-grid">
                <ChartCard id="chart-phases" title="Peak within each phase" dark=dark draw=draw wide=true>
                    <p class="hint">"Click a phase in the table to see its peak on the timeline and in the breakdown."</p>
                </ChartCard>
            </div>
        </section>
    }
}

fn phase_name(row: &PhaseRow) -> String {
    match row.iteration {
        Some(i) => format!("{} {i}", words::phase_row_label(row)),
        None => words::phase_row_label(row),
    }
}

fn colour(row: &PhaseRow) -> [u8; 3] {
    let palette = Style::light().palette;
    let k = row.phase.map_or(0, |p| p as usize);
    let [r, g, b, _] = palette[k % palette.len()];
    [r, g, b]
}

#[component]
fn PhaseTable(
    id: &'static str,
    rows: Vec<PhaseRow>,
    scopes: bool,
) -> impl IntoView {
    let cx = use_file();

    let total = rows.len();
    let all = RwSignal::new(false);
    let rows = StoredValue::new(rows);
    let lines = move || {
        let shown = if all.get() {
            total
        } else {
            total.min(ROWS_SHOWN)
        };
        rows.with_value(|rows| rows[..shown].to_vec())
            .into_iter()
            .map(|row| {
            let name = if scopes {
                row.label.clone()
            } else {
                words::phase_row_label(&row)
            };
            let peak_state = State::after(row.peak_event);
            let indent = format!("{}px", 6 + 14 * row.depth);
            view! {
                <tr class="phase-row clickable"
                    data-phase=row.phase.map_or("", |p| p.key())
                    data-label=row.label.clone()
                    data-iteration=row.iteration.map_or(String::new(), |i| i.to_string())
                    data-first=row.first_event.to_string()
                    data-last=row.last_event.to_string()
                    data-before=row.before_bytes.to_string()
                    data-after=row.after_bytes.to_string()
                    data-delta=row.delta_bytes.to_string()
                    data-allocated=row.allocated_bytes.to_string()
                    data-freed=row.freed_bytes.to_string()
                    data-peak=row.peak_bytes.to_string()
                    data-peak-event=row.peak_event.to_string()
                    data-top-role=row.top_role.map_or("", |r| r.key())
                    title="Show this phase's peak on the timeline"
                    on:click=move |_| cx.picked.set(Some(peak_state))
                >
                    <td style:padding-left=indent><code>{name}</code></td>
                    <td class="num">{row.iteration.map_or("—".to_string(), |i| i.to_string())}</td>
                    <td class="num">{words::events(&row)}</td>
                    <td class="num">{format::bytes(row.before_bytes)}</td>
                    <td class="num">{format::bytes(row.after_bytes)}</td>
                    <td class="num">{format::bytes_delta(row.delta_bytes)}</td>
                    <td class="num">{format::bytes(row.allocated_bytes)}</td>
                    <td class="num">{format::bytes(row.freed_bytes)}</td>
                    <td class="num">{format::bytes(row.peak_bytes)}</td>
                    <td>{words::top_role(&row)}</td>
                </tr>
            }
        })
        .collect_view()
    };
    let noun = if scopes { "scopes" } else { "phases" };
    view! {
        <table class="top-table phases-table" id=id data-total=total.to_string()>
            <thead><tr>
                <th scope="col">{if scopes { "Scope" } else { "Phase" }}</th>
                <th scope="col" class="num">"Iteration"</th>
                <th scope="col" class="num">"Events"</th>
                <th scope="col" class="num">"Allocated before"</th>
                <th scope="col" class="num">"After"</th>
                <th scope="col" class="num">"Delta"</th>
                <th scope="col" class="num">"Allocated in it"</th>
                <th scope="col" class="num">"Freed in it"</th>
                <th scope="col" class="num">"Peak within"</th>
                <th scope="col">"Top role at that peak"</th>
            </tr></thead>
            <tbody>{lines}</tbody>
        </table>
        {(total > ROWS_SHOWN).then(|| view! {
            <p class="hint">
                {move || if all.get() {
                    format!("All {} {noun}.", format::count(total as u64))
                } else {
                    format!("The first {ROWS_SHOWN} of {} {noun}.", format::count(total as u64))
                }}
                " "
                <button type="button" class="button quiet" id=format!("{id}-all")
                    on:click=move |_| all.update(|a| *a = !*a)>
                    {move || if all.get() { "Show the first ones" } else { "Show all" }}
                </button>
            </p>
        })}
    }
}
