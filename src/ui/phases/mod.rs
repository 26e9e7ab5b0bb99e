//! The phase report of one device: the trace in its phases of training by iteration (and the
//! `record_function` scopes, when the file has any), each with the allocated bytes before
//! and after it, its delta, what it allocated and freed, its peak and the role holding most
//! there; a bar chart of each phase's peak; a click on a phase picks its peak on the timeline
//! (so the breakdown shows it); the report downloads as Markdown.
//!
//! Asks the worker (`Request::Phases`) again when the categories' generation changes; words
//! are `format::phases`', the same as `memsight phases`. Exact values in `data-*`.

use leptos::prelude::*;

use super::actions::Actions;
use super::breakdown::chart::{ChartCard, Draw};
use super::breakdown::download_text;
use super::categories::CategoryView;
use super::charts::{self, Slice};
use super::requests::Latest;
use super::state::FileId;
use crate::format::{self, phases as words};
use crate::phases::service::PhasesRequest;
use crate::phases::{PhaseReport, PhaseRow};
use crate::protocol::{Answer, Request};
use crate::timeline::raster::Style;

#[component]
pub fn PhasesPanel(
    file: FileId,
    device: u32,
    file_name: String,
    actions: Actions,
    categories: CategoryView,
    dark: Signal<bool>,
) -> impl IntoView {
    let scope = actions.new_scope();
    on_cleanup(move || actions.forget_scope(file, scope));
    let report = RwSignal::new(None::<Result<PhaseReport, String>>);
    let latest = StoredValue::new(Latest::default());
    Effect::new(move |_| {
        categories.generation.track();
        let id = actions.ask(
            file,
            scope,
            Request::Phases(PhasesRequest { device }),
            move |answered| {
                if latest.try_update_value(|l| l.answered(answered.id)) != Some(true) {
                    return;
                }
                report.set(Some(match answered.result {
                    Ok(Answer::Phases(r)) => Ok(r),
                    Ok(other) => Err(format!("The worker answered with a {}.", other.feature())),
                    Err(e) => Err(format::problems::view_error(&e)),
                }));
            },
        );
        if let Some(id) = id {
            latest.update_value(|l| l.sent(id));
        }
    });
    let draw: Draw = std::rc::Rc::new(move |canvas, theme| {
        let slices: Vec<Slice> = report.with(|r| match r {
            Some(Ok(r)) => r
                .rows
                .iter()
                .enumerate()
                .map(|(i, row)| Slice {
                    key: i.to_string(),
                    label: phase_name(row),
                    value: row.peak_bytes,
                    colour: colour(row),
                })
                .collect(),
            _ => Vec::new(),
        });
        charts::bars(
            canvas,
            theme,
            &slices,
            "Peak within each phase",
            &format::bytes,
        )
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
                    <PhaseTable id="phases-table" rows=r.rows.clone() scopes=false categories=categories />
                    {(!r.scopes.is_empty()).then(|| view! {
                        <h3>"record_function scopes"</h3>
                        <PhaseTable id="scopes-table" rows=r.scopes.clone() scopes=true categories=categories />
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
    categories: CategoryView,
) -> impl IntoView {
    let lines = rows
        .into_iter()
        .map(|row| {
            let name = if scopes {
                row.label.clone()
            } else {
                words::phase_row_label(&row)
            };
            let peak_state = row.peak_event + 1;
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
                    on:click=move |_| categories.picked.set(Some(peak_state))
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
        .collect_view();
    view! {
        <table class="top-table phases-table" id=id>
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
    }
}
