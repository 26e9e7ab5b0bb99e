//! Two files (or two devices) compared: pick A and B, and see the overview's numbers side by
//! side with their deltas, the bytes of each role and component at both peaks, the two
//! allocated curves over one normalised axis (events or time), and the call sites and model
//! modules whose bytes at the peak changed, new or vanished; a call site's **code** shows its
//! file with both runs' bytes at each line (`source`).
//!
//! Each side's worker is asked for its digest with details (`Request::Digest`); the
//! comparison itself is the core's (`compare::compare`), run here on the two answers, so it
//! is `memsight compare`'s. Exact values in `data-a`, `data-b` and `data-delta`. Not the
//! place for computing numbers.

mod source;
mod tables;

use leptos::prelude::*;

use super::actions::use_actions;
use super::charts::{self, Slice};
use super::deep_link::DeepLink;
use super::link::CompareLink;
use super::segmented::segmented_button;
use super::state::{AppState, FileId, Showing};
use super::widgets::chart::{ChartCard, Draw};
use super::widgets::digests::Digests;
use crate::analysis::categories::signals::Phase;
use crate::analysis::lines::SourcePlace;
use crate::compare::{compare, Comparison, Digest};
use crate::format;
use crate::format::breakdown::phase_label;
use crate::format::compare as words;
use source::CompareSource;
use tables::{CategoryTable, KeyedTable, MetricTable};

/// One side: a file and one of its devices.
type Side = (FileId, u32);

/// Colours of A and B in the chart and the tables' headers.
const COLOUR_A: [u8; 3] = [59, 130, 246];
const COLOUR_B: [u8; 3] = [234, 88, 12];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Axis {
    Events,
    Time,
}

#[component]
pub fn CompareView(
    state: RwSignal<AppState>,
    link: DeepLink,
    dark: Signal<bool>,
) -> impl IntoView {
    let actions = use_actions();

    let digests = Digests::new(state, actions, true);
    // Every file's devices, with what the pickers call them.
    let choices = Memo::new(move |_| {
        state.with(|s| {
            s.files()
                .iter()
                .zip(s.short_titles())
                .filter(|(f, _)| f.is_ready())
                .flat_map(|(f, title)| {
                    let several = f.devices().len() > 1;
                    let kind = f.device_kind();
                    f.devices().iter().map(move |&d| {
                        let title = title.clone();
                        let name = if several {
                            format!("{title} · {}", format::device(kind, d))
                        } else {
                            title
                        };
                        ((f.id, d), name)
                    })
                })
                .collect::<Vec<(Side, String)>>()
        })
    });
    // The sides a link restores (files by their position in the list), else none yet.
    let file_at = move |i: usize| state.with_untracked(|s| s.files().get(i).map(|f| f.id));
    let restored = link
        .restoring_any()
        .filter(|l| l.show == Showing::Compare)
        .and_then(|l| l.compare);
    let side_at = move |(file, device): (usize, u32)| file_at(file).map(|f| (f, device));
    let a = RwSignal::new(restored.and_then(|c| side_at(c.a)));
    let b = RwSignal::new(restored.and_then(|c| side_at(c.b)));
    if restored.is_some() {
        request_animation_frame(move || link.restored());
    }
    // The sides, by the files' positions, are the page address's.
    Effect::new(move |_| {
        let position = |side: Option<Side>| {
            let (file, device) = side?;
            state.with(|s| {
                s.files()
                    .iter()
                    .position(|f| f.id == file)
                    .map(|i| (i, device))
            })
        };
        let compare = position(a.get())
            .zip(position(b.get()))
            .map(|(a, b)| CompareLink { a, b });
        link.set(|l| l.compare = compare);
    });
    // Defaults: the selected file against the one opened before it (or its next device).
    Effect::new(move |_| {
        let choices = choices.get();
        let valid = |side: Option<Side>| side.filter(|s| choices.iter().any(|(c, _)| c == s));
        let selected = state.with_untracked(|s| s.selected_id());
        if valid(a.get_untracked()).is_none() {
            let pick = choices
                .iter()
                .position(|((f, _), _)| Some(*f) == selected)
                .and_then(|i| i.checked_sub(1))
                .or((!choices.is_empty()).then_some(0));
            a.set(pick.map(|i| choices[i].0));
        }
        if valid(b.get_untracked()).is_none() {
            let other = choices
                .iter()
                .map(|(c, _)| *c)
                .filter(|c| Some(*c) != a.get_untracked())
                .find(|(f, _)| Some(*f) == selected)
                .or_else(|| {
                    choices
                        .iter()
                        .map(|(c, _)| *c)
                        .find(|c| Some(*c) != a.get_untracked())
                });
            b.set(other);
        }
    });
    Effect::new(move |_| {
        for side in [a.get(), b.get()].into_iter().flatten() {
            // Asked again when the phase they are taken at changes.
            let _ = digests.at_phase();
            digests.want(side.0, side.1);
        }
    });
    let side = move |s: RwSignal<Option<Side>>| -> Option<Result<Digest, String>> {
        let (file, device) = s.get()?;
        digests.get(file, device)
    };
    let comparison = Memo::new(
        move |_| -> Option<Result<(Comparison, Digest, Digest), String>> {
            match (side(a), side(b)) {
                (Some(Ok(x)), Some(Ok(y))) => Some(Ok((compare(&x, &y), x, y))),
                (Some(Err(e)), _) | (_, Some(Err(e))) => Some(Err(e)),
                _ => None,
            }
        },
    );
    let timed = Memo::new(move |_| {
        comparison.with(|c| match c {
            Some(Ok((_, x, y))) => !x.curve.by_time.is_empty() && !y.curve.by_time.is_empty(),
            _ => false,
        })
    });
    let axis = RwSignal::new(Axis::Events);
    // The call site whose code is shown for both runs.
    let source = RwSignal::new(None::<SourcePlace>);
    let name_of = move |s: Option<Side>| {
        choices.with(|c| {
            c.iter()
                .find(|(k, _)| Some(*k) == s)
                .map_or(String::new(), |(_, n)| n.clone())
        })
    };
    let draw: Draw = std::rc::Rc::new(move |canvas, theme| {
        let by_time = axis.get() == Axis::Time && timed.get();
        // The two names told apart and fitted to the legend: the settings that differ stay.
        let names = [name_of(a.get()), name_of(b.get())];
        let names = format::names::fit_all(&names, &|_| 28);
        let series: Vec<(Slice, Vec<u64>)> = comparison.with(|c| match c {
            Some(Ok((_, x, y))) => [(x, "A", COLOUR_A, &names[0]), (y, "B", COLOUR_B, &names[1])]
                .into_iter()
                .map(|(d, letter, colour, name)| {
                    let curve = if by_time {
                        &d.curve.by_time
                    } else {
                        &d.curve.by_event
                    };
                    let label = format!("{letter}: {name}");
                    (
                        Slice {
                            key: letter.into(),
                            label,
                            value: 0,
                            colour,
                        },
                        curve.clone(),
                    )
                })
                .collect(),
            _ => Vec::new(),
        });
        let x_label = if by_time {
            "share of the run's time"
        } else {
            "share of the run's events"
        };
        charts::overlaid_lines(
            canvas,
            theme,
            &series,
            x_label,
            "Allocated memory over the run",
            &format::bytes,
        )
    });
    let picker = move |id: &'static str, letter: &'static str, s: RwSignal<Option<Side>>| {
        view! {
            <label class="compare-picker">
                <span class="compare-letter">{letter}</span>
                <select id=id on:change=move |event| {
                    let i: usize = event_target_value(&event).parse().unwrap_or(0);
                    if let Some((side, _)) = choices.with_untracked(|c| c.get(i).cloned()) {
                        s.set(Some(side));
                    }
                }>
                    {move || choices.get().into_iter().enumerate().map(|(i, (c, name))| {
                        view! { <option value=i.to_string() selected=Some(c) == s.get()>{name}</option> }
                    }).collect_view()}
                </select>
            </label>
        }
    };

    view! {
        <section class="panel compare-view" id="compare-view"
            data-a=move || a.get().map_or(String::new(), |(f, d)| format!("{f}:{d}"))
            data-b=move || b.get().map_or(String::new(), |(f, d)| format!("{f}:{d}"))
            data-ready=move || comparison.with(|c| matches!(c, Some(Ok(_)))).to_string()
        >
            <header class="snapshot-header">
                <div>
                    <h1 class="panel-title">"Compare two"</h1>
                    <p class="hint">"Each number at its own file's peak; deltas are B − A. Parts of the model match by their code (file, line and function), so two runs of one program compare even from different checkouts."</p>
                </div>
                <div class="compare-pickers">
                    {picker("compare-a", "A", a)}
                    <button type="button" class="button quiet" id="compare-swap" title="Swap A and B"
                        on:click=move |_| {
                            let (x, y) = (a.get_untracked(), b.get_untracked());
                            a.set(y);
                            b.set(x);
                        }>"⇄"</button>
                    {picker("compare-b", "B", b)}
                    <label class="compare-picker">
                        <span>"at"</span>
                        <select id="compare-at" on:change=move |event| {
                            digests.set_at_phase(Phase::from_key(&event_target_value(&event)));
                        }>
                            <option value="" selected=move || digests.at_phase().is_none()>"each run's peak"</option>
                            {[Phase::Forward, Phase::Backward, Phase::OptimizerStep].into_iter().map(|p| view! {
                                <option value=p.key() selected=move || digests.at_phase() == Some(p)>
                                    {format!("the peak of each run's {}", phase_label(p).to_lowercase())}
                                </option>
                            }).collect_view()}
                        </select>
                    </label>
                </div>
            </header>
            {move || match comparison.get() {
                None if choices.with(Vec::len) < 2 => view! {
                    <p class="hint" id="compare-nothing">"Open a second file, or a file with two devices, to compare."</p>
                }
                .into_any(),
                None => view! { <p class="pending" aria-busy="true" id="compare-pending">"Preparing both peaks…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="view-error" role="alert" id="compare-error">{e}</p> }.into_any(),
                Some(Ok((c, x, y))) => {
                    let same = a.get() == b.get();
                    let at = format!("At {}", match digests.at_phase() {
                        Some(p) => format!("the peak of each run's {}", phase_label(p).to_lowercase()),
                        None => "each run's peak".to_string(),
                    });
                    let missing: Vec<&str> = [("A", &x), ("B", &y)]
                        .into_iter()
                        .filter(|(_, d)| digests.at_phase().is_some() && d.at_phase.is_none())
                        .map(|(side, _)| side)
                        .collect();
                    view! {
                        {same.then(|| view! { <p class="hint" id="compare-same">"A and B are the same file and device: every delta is zero."</p> })}
                        <p class="compare-moments" id="compare-moments"
                            data-a-phase=x.peak_phase.map(|p| p.key()).unwrap_or_default()
                            data-a-iteration=x.peak_iteration.map(|i| i.to_string()).unwrap_or_default()
                            data-b-phase=y.peak_phase.map(|p| p.key()).unwrap_or_default()
                            data-b-iteration=y.peak_iteration.map(|i| i.to_string()).unwrap_or_default()>
                            {format!("{at}: A at {} ({}), B at {} ({}).",
                                words::moment_words(&x), format::bytes(x.peak_bytes),
                                words::moment_words(&y), format::bytes(y.peak_bytes))}
                            {(!missing.is_empty()).then(|| format!(" {} has no such phase: its own peak is shown.", missing.join(" and ")))}
                        </p>
                        {words::moments_differ(&x, &y).map(|note| view! {
                            <p class="moment-notice" id="compare-moments-differ" role="status">{note}</p>
                        })}
                        <MetricTable metrics=c.metrics.clone() beside_a_phase=digests.at_phase().is_some() />
                        <div class="compare-categories">
                            <CategoryTable id="compare-roles" title="Roles" rows=c.roles.clone() />
                            <CategoryTable id="compare-components" title="Components" rows=c.components.clone() />
                        </div>
                        <KeyedTable id="compare-call-sites" title="Call sites" rows=c.call_sites.clone() tree=false
                            on_source=Callback::new(move |place| source.set(Some(place))) />
                        {move || {
                            let (Some((fa, da)), Some((fb, db))) = (a.get(), b.get()) else {
                                return None;
                            };
                            source.get().map(|place| view! {
                                <CompareSource a=(fa, da, x.peak_state) b=(fb, db, y.peak_state)
                                    place=place on_close=Callback::new(move |()| source.set(None)) />
                            })
                        }}
                        <KeyedTable id="compare-modules" title="Model modules" rows=c.modules.clone() tree=true />
                    }
                    .into_any()
                }
            }}
            <div class="chart-grid">
                <ChartCard id="compare-curves" title="Allocated memory, A and B" dark=dark draw=draw wide=true>
                    <div class="segmented-group" role="group" aria-label="Axis">
                        {segmented_button(axis, Axis::Events, "Events", "compare-axis-events", || None)}
                        {segmented_button(axis, Axis::Time, "Time", "compare-axis-time", move || {
                            (!timed.get()).then_some("A file has no times: compare over events")
                        })}
                    </div>
                </ChartCard>
            </div>
        </section>
    }
}
