//! "Where did the memory go": one device's memory by role and by component at the peak, the
//! end or the moment picked on the timeline, as pies, bars, a stacked area over the run, the
//! largest allocations, size histograms and an efficiency gauge; the peak estimate; the
//! findings; the user's category rules; and the Markdown report.
//!
//! Asks the worker under its own scope and asks again when the moment or the categories
//! change (the latest answer of each kind wins). Every number it shows is the core's, exact
//! in `data-value`. Components: `chart` (a chart on a card), `rules` (the rule editor),
//! `findings`.

mod findings;
mod rules;

use std::rc::Rc;

use leptos::prelude::*;

use super::actions::{use_actions, ViewAsker};
use super::categories::{categories_of, css, highlighted_colours};
use super::file_context::{use_file, FileContext};
use super::charts::{self, Slice};
use super::moment_notice::MomentNotice;
use super::redact_paths::RedactPaths;
use super::requests::Latest;
use super::segmented::segmented_button;
use super::state::FileId;
use super::widgets::download::download_text;
use crate::model::State;
use crate::analysis::axis::AxisMode;
use crate::analysis::categories::{Category, Dimension};
use crate::analysis::moment::Moment;
use crate::breakdown::service::{
    AtRequest, DeviceSummary, MomentBreakdown, Series, SeriesRequest, SummaryRequest,
};
use crate::export::ReportRequest;
use crate::format;
use crate::protocol::ViewError;
use super::widgets::chart::{ChartCard, Click, Draw, Hover, CHART_SIZE, WIDE_CHART_SIZE};

/// Allocations the "largest" chart shows.
const TOP: u32 = 30;
/// Call sites the moment lists.
const CALL_SITES: usize = 10;
/// Columns of the stacked area.
const SERIES_COLUMNS: u32 = 400;

/// What the panel shows at which moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pick {
    Peak,
    End,
    Picked,
}

#[component]
pub fn BreakdownPanel(
    file: FileId,
    device: u32,
    file_name: String,
    dark: Signal<bool>,
) -> impl IntoView {
    let actions = use_actions();
    let cx = use_file();

    let asker = ViewAsker::new(actions, file);
    // A device shown again opens at the moment picked on it.
    let pick = RwSignal::new(match cx.picked.get_untracked() {
        Some(_) => Pick::Picked,
        None => Pick::Peak,
    });
    let summary = RwSignal::new(None::<Result<DeviceSummary, String>>);
    let moment = RwSignal::new(None::<Result<MomentBreakdown, String>>);
    let series = RwSignal::new(None::<Series>);
    let report_error = RwSignal::new(None::<String>);
    let latest = [(); 3].map(|_| StoredValue::new(Latest::default()));

    Effect::new(move |_| {
        cx.generation.track();
        asker.ask_latest(latest[0], SummaryRequest { device }, move |answer| {
            summary.set(Some(answer.map(|s| *s)));
        });
        let request = SeriesRequest {
            device,
            dimension: Dimension::Role,
            mode: AxisMode::Events,
            x0: 0.0,
            x1: 0.0,
            width: SERIES_COLUMNS,
        };
        asker.ask_latest(latest[2], request, move |answer| {
            if let Ok(s) = answer {
                series.set(Some(s));
            }
        });
    });
    Effect::new(move |_| {
        cx.generation.track();
        let only = cx.highlight.get();
        let at = match pick.get() {
            Pick::Peak => Moment::Peak,
            Pick::End => Moment::End,
            Pick::Picked => match cx.picked.get() {
                Some(state) => Moment::State(state),
                None => Moment::Peak,
            },
        };
        let request = AtRequest {
            device,
            moment: at,
            top: TOP,
            only,
        };
        asker.ask_latest(latest[1], request, move |answer| {
            moment.set(Some(answer.map(|m| *m)));
        });
    });
    // A moment picked on the timeline is what the user wants to see.
    Effect::new(move |previous: Option<Option<State>>| {
        let picked = cx.picked.get();
        if previous.is_some() && picked.is_some() {
            pick.set(Pick::Picked);
        }
        picked
    });

    let redact = RedactPaths::in_context();
    let kind = cx.device_kind;
    let report = move |_| {
        let name = file_name.clone();
        report_error.set(None);
        let request = ReportRequest {
            device,
            file_name: name.clone(),
            redact: RedactPaths::on(redact),
        };
        let id = asker.ask(request, move |answer| match answer.result {
            Ok(text) => {
                let stem = name.rsplit_once('.').map_or(name.as_str(), |(s, _)| s);
                download_text(
                    &format!(
                        "{stem}-{}-report.md",
                        format::device_in_file_name(kind, device)
                    ),
                    &text,
                    "text/markdown",
                );
            }
            Err(error) => report_error.set(Some(format::problems::view_error(&error))),
        });
        if id.is_none() {
            report_error.set(Some(format::problems::view_error(&ViewError::NotLoaded)));
        }
    };

    let nothing_picked = move || {
        cx
            .picked
            .get()
            .is_none()
            .then_some("Click the timeline to pick a moment")
    };
    let always = || None;
    view! {
        <section class="panel breakdown" id="breakdown" data-device=device.to_string()
            data-generation=move || cx.generation.get().to_string()
        >
            <header class="breakdown-header">
                <h2 class="panel-title">"Where the memory went"</h2>
                <div class="segmented-group" role="group" aria-label="Moment">
                    {segmented_button(pick, Pick::Peak, "At the peak", "breakdown-at-peak", always)}
                    {segmented_button(pick, Pick::End, "At the end", "breakdown-at-end", always)}
                    {segmented_button(pick, Pick::Picked, "At the picked moment", "breakdown-at-picked", nothing_picked)}
                </div>
                {move || {
                    // A moment other than the peak is said, with the way back.
                    let away = match pick.get() {
                        Pick::Peak => return None,
                        Pick::End => "the end".to_string(),
                        Pick::Picked => match cx.picked.get() {
                            Some(state) => format!("the moment picked on the timeline ({})", format::after_state(state)),
                            None => return None,
                        },
                    };
                    Some(view! {
                        <MomentNotice id="breakdown-moment-notice" back_id="breakdown-back-to-peak"
                            words=format!("showing {away}") back=move |()| pick.set(Pick::Peak) />
                    })
                }}
                <button type="button" class="button" id="breakdown-report" on:click=report>
                    "Download report (Markdown)"
                </button>
            </header>
            {move || report_error.get().map(|e| view! { <p class="view-error" role="alert">{e}</p> })}
            {move || match moment.get() {
                None => view! { <p class="pending" aria-busy="true">"Counting bytes by category…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="view-error" role="alert" id="breakdown-error">{e}</p> }.into_any(),
                Some(Ok(m)) => view! { <MomentCharts m=m dark=dark /> }.into_any(),
            }}
            <div class="chart-grid">
                <SeriesChart series=series dark=dark />
            </div>
            {move || match summary.get() {
                None => ().into_any(),
                Some(Err(e)) => view! { <p class="view-error" role="alert">{e}</p> }.into_any(),
                Some(Ok(s)) => view! { <SummaryView s=s dark=dark /> }.into_any(),
            }}
            <rules::RuleEditor />
        </section>
    }
}

/// The slices of `bytes` (indexed like the dimension's categories), all but the highlighted
/// one faded when it is of this dimension.
/// A chart's slices: each category's bytes, a role's label marked when some or all of its
/// bytes' role was deduced (`inferred`, indexed like the bytes; empty for components).
fn slices(
    dimension: Dimension,
    bytes: &[u64],
    inferred: &[u64],
    dark: bool,
    highlight: Option<Category>,
) -> Vec<Slice> {
    categories_of(dimension, dark)
        .into_iter()
        .zip(highlighted_colours(dimension, dark, highlight))
        .zip(bytes)
        .enumerate()
        .map(|(k, (((key, label, _), colour), &value))| Slice {
            key: key.to_string(),
            label: format::report::inferred_label(
                label,
                value,
                inferred.get(k).copied().unwrap_or(0),
            ),
            value,
            colour,
        })
        .collect()
}

fn fmt_bytes(n: u64) -> String {
    format::bytes(n)
}

/// A pie and a bar chart's hover: the slice's label, bytes and share.
fn slice_hover(slices: Rc<dyn Fn() -> Vec<Slice>>, pie: bool, (w, h): (f64, f64)) -> Hover {
    Rc::new(move |x, y| {
        let s = slices();
        let hit = if pie {
            charts::hit_pie(w, h, &s, x, y)
        } else {
            charts::hit_bars(w, h, &s, x, y)
        }?;
        let total: u64 = s.iter().map(|s| s.value).sum();
        let slice = s.get(hit)?;
        Some(format!(
            "{}: {} ({}%)",
            slice.label,
            format::bytes(slice.value),
            format::percent_of(slice.value, total)
        ))
    })
}

/// A pie or bar chart's click: highlights the category under the pointer (or stops
/// highlighting it), which narrows the lists and shows it on the timeline.
fn slice_click(
    dimension: Dimension,
    pie: bool,
    slices: Rc<dyn Fn() -> Vec<Slice>>,
    cx: FileContext,
) -> Click {
    Rc::new(move |x, y| {
        let s = slices();
        let (w, h) = CHART_SIZE;
        let hit = if pie {
            charts::hit_pie(w, h, &s, x, y)
        } else {
            charts::hit_bars(w, h, &s, x, y)
        };
        if let Some(k) = hit {
            cx.toggle_highlight(Category {
                dimension,
                index: k as u32,
            });
        }
    })
}

/// A histogram's hover: the bin's size range, count and bytes.
fn histogram_hover(bins: Vec<(u64, u64, u64)>) -> Hover {
    Rc::new(move |x, y| {
        let counts: Vec<u64> = bins.iter().map(|b| b.1).collect();
        let bin = charts::hit_histogram(CHART_SIZE.0, CHART_SIZE.1, &counts, x, y)?;
        let (lower, count, bytes) = *bins.get(bin)?;
        Some(format!(
            "{} to {}: {} blocks, {}",
            format::bytes(lower),
            format::bytes(lower.saturating_mul(2)),
            format::count(count),
            format::bytes(bytes)
        ))
    })
}

/// A legend of exact values; with a `dimension`, each entry is a button that highlights its
/// category (as a click on the chart does). `inferred` holds, for roles, the bytes of each
/// whose role was deduced (empty otherwise).
fn legend(
    id: &'static str,
    slices: Vec<Slice>,
    inferred: &[u64],
    dimension: Option<Dimension>,
    cx: FileContext,
) -> impl IntoView {
    let inferred = inferred.to_vec();
    let total: u64 = slices.iter().map(|s| s.value).sum();
    view! {
        <ul class="chart-legend" id=id data-total=total.to_string()>
            {slices.into_iter().enumerate().map(|(k, s)| {
                let category = dimension.map(|dimension| Category { dimension, index: k as u32 });
                let pressed = move || category.is_some() && cx.highlight.get() == category;
                let content = view! {
                    <span class="swatch" style:background=css(s.colour)></span>
                    <span class="legend-label">{s.label.clone()}</span>
                    <span class="legend-bytes">{format::bytes(s.value)}</span>
                };
                view! {
                    <li data-category=s.key.clone() data-value=s.value.to_string()
                        data-inferred=inferred.get(k).copied().unwrap_or(0).to_string() class:empty=s.value == 0>
                        {match category {
                            Some(category) => view! {
                                <button type="button" class="legend-button" aria-pressed=move || pressed().to_string()
                                    title="Show only this category in the lists and on the timeline"
                                    on:click=move |_| cx.toggle_highlight(category)
                                >{content}</button>
                            }.into_any(),
                            None => content.into_any(),
                        }}
                    </li>
                }
            }).collect_view()}
        </ul>
    }
}

#[component]
fn MomentCharts(m: MomentBreakdown, dark: Signal<bool>) -> impl IntoView {
    let cx = use_file();

    let device = m.device;
    let highlight = cx.highlight;
    let m = Rc::new(m);
    let at = match (m.moment, m.event) {
        (Moment::Peak, _) => "at the peak".to_string(),
        (Moment::End, _) => "at the end".to_string(),
        (_, Some(e)) => format!("after event {}", format::count(u64::from(e.get()))),
        (_, None) => "before the first event".to_string(),
    };
    let role_slices = {
        let m = m.clone();
        Rc::new(move || {
            slices(
                Dimension::Role,
                &m.roles,
                &m.inferred_roles,
                dark.get_untracked(),
                highlight.get_untracked(),
            )
        }) as Rc<dyn Fn() -> Vec<Slice>>
    };
    let component_slices = {
        let m = m.clone();
        Rc::new(move || {
            slices(
                Dimension::Component,
                &m.components,
                &[],
                dark.get_untracked(),
                highlight.get_untracked(),
            )
        }) as Rc<dyn Fn() -> Vec<Slice>>
    };
    let cached = m.reserved.saturating_sub(m.live_bytes);
    let live_bytes = m.live_bytes;
    let reserved_slices = move |dark: bool| {
        let grey = if dark { [90, 96, 108] } else { [170, 176, 186] };
        vec![
            Slice {
                key: "allocated".into(),
                label: "Allocated".into(),
                value: live_bytes,
                colour: [0x4e, 0x79, 0xa7],
            },
            Slice {
                key: "cached_free".into(),
                label: "Cached free (reserved − allocated)".into(),
                value: cached,
                colour: grey,
            },
        ]
    };
    let reserved_slices = Rc::new(reserved_slices);
    let draw_roles: Draw = {
        let s = role_slices.clone();
        Rc::new(move |canvas, theme| {
            dark.track();
            highlight.track();
            charts::pie(canvas, theme, &s(), "Bytes by role", &fmt_bytes)
        })
    };
    let draw_role_bars: Draw = {
        let s = role_slices.clone();
        Rc::new(move |canvas, theme| {
            dark.track();
            highlight.track();
            charts::bars(canvas, theme, &s(), "Bytes by role", &fmt_bytes)
        })
    };
    let draw_components: Draw = {
        let s = component_slices.clone();
        Rc::new(move |canvas, theme| {
            dark.track();
            highlight.track();
            charts::pie(canvas, theme, &s(), "Bytes by component", &fmt_bytes)
        })
    };
    let draw_component_bars: Draw = {
        let s = component_slices.clone();
        Rc::new(move |canvas, theme| {
            dark.track();
            highlight.track();
            charts::bars(canvas, theme, &s(), "Bytes by component", &fmt_bytes)
        })
    };
    let draw_reserved: Draw = {
        let s = reserved_slices.clone();
        Rc::new(move |canvas, theme| {
            charts::pie(
                canvas,
                theme,
                &s(dark.get()),
                "Allocated vs cached free",
                &fmt_bytes,
            )
        })
    };
    let top_slices = {
        let m = m.clone();
        Rc::new(move || {
            let colours = categories_of(Dimension::Role, dark.get_untracked());
            m.largest
                .iter()
                .map(|a| Slice {
                    key: a.index.to_string(),
                    label: format::shorten_middle(a.name.as_deref().unwrap_or("(no stack)"), 48),
                    value: a.size,
                    colour: colours[a.role as usize].2,
                })
                .collect::<Vec<_>>()
        }) as Rc<dyn Fn() -> Vec<Slice>>
    };
    // Narrowed to one category, the lists say which.
    let only_label = m.only.map(|c| {
        categories_of(c.dimension, false)
            .get(c.index as usize)
            .map_or("?", |c| c.1)
    });
    let top_title = match only_label {
        Some(label) => format!("Largest allocations: {label} only (colour: role)"),
        None => "Largest allocations (colour: role)".to_string(),
    };
    let draw_top: Draw = {
        let s = top_slices.clone();
        let title = top_title.clone();
        Rc::new(move |canvas, theme| {
            dark.track();
            charts::bars(canvas, theme, &s(), &title, &fmt_bytes)
        })
    };
    let top_click: Click = {
        let s = top_slices.clone();
        Rc::new(move |x, y| {
            let slices = s();
            let (w, h) = WIDE_CHART_SIZE;
            if let Some(bar) = charts::hit_bars(w, h, &slices, x, y) {
                if let Ok(element) = slices[bar].key.parse() {
                    cx.show_on_timeline(device, element);
                }
            }
        })
    };
    let bins: Vec<(u64, u64, u64)> = m
        .live_sizes
        .iter()
        .map(|b| (b.lower, b.count, b.bytes))
        .collect();
    let sizes_hover = histogram_hover(bins.clone());
    let sizes_title = match only_label {
        Some(label) => format!("Live {label} allocations by size (count)"),
        None => "Live allocations by size (count)".to_string(),
    };
    let draw_sizes: Draw = Rc::new(move |canvas, theme| {
        dark.track();
        charts::histogram(canvas, theme, &bins, &sizes_title, &fmt_bytes)
    });
    let top_rows = m.largest.clone();
    let site_rows: Vec<_> = m.call_sites.iter().take(CALL_SITES).cloned().collect();
    let sites_total: u64 = match m.only {
        Some(c) => match c.dimension {
            Dimension::Role => m.roles.get(c.index as usize).copied().unwrap_or(0),
            Dimension::Component => m.components.get(c.index as usize).copied().unwrap_or(0),
        },
        None => m.live_bytes,
    };
    let sites_title = match only_label {
        Some(label) => format!("Call sites holding the most {label}"),
        None => "Call sites holding the most".to_string(),
    };
    // Children must be sendable: hand them plain values.
    let (roles_legend, components_legend, reserved_legend) = (
        role_slices(),
        component_slices(),
        reserved_slices(dark.get_untracked()),
    );
    let only_note = only_label.map(|label| {
        view! {
            <p class="hint narrowed" id="breakdown-only" data-category=m.only.map(|c| c.dimension.key(c.index as usize)).unwrap_or_default()>
                {format!("The lists below show {label} only. ")}
                <button type="button" class="link-button" on:click=move |_| cx.highlight.set(None)>"Show every category"</button>
            </p>
        }
    });
    let reserved_hover: Rc<dyn Fn() -> Vec<Slice>> = {
        let s = reserved_slices.clone();
        Rc::new(move || s(dark.get_untracked()))
    };
    let role_labels = categories_of(Dimension::Role, false);
    let component_labels = categories_of(Dimension::Component, false);
    let inferred_roles = m.inferred_roles.clone();
    view! {
        <div class="moment" id="breakdown-moment"
            data-state=m.state.to_string()
            data-live-bytes=m.live_bytes.to_string()
            data-reserved=m.reserved.to_string()
            data-compute-ms=m.compute_ms.to_string()
            data-generation=m.generation.to_string()
            data-only=m.only.map(|c| c.dimension.key(c.index as usize)).unwrap_or_default()
        >
            <p class="moment-summary">
                {format!("{} in {} live allocations {at}; {} reserved.",
                    format::bytes(m.live_bytes), format::count(m.live_count as u64), format::bytes(m.reserved))}
            </p>
            {only_note}
            <div class="chart-grid">
                <ChartCard id="chart-roles" title="By role" dark=dark draw=draw_roles hover=slice_hover(role_slices.clone(), true, CHART_SIZE)
                    click=slice_click(Dimension::Role, true, role_slices.clone(), cx)>
                    {legend("legend-roles", roles_legend, &inferred_roles, Some(Dimension::Role), cx)}
                </ChartCard>
                <ChartCard id="chart-components" title="By component" dark=dark draw=draw_components hover=slice_hover(component_slices.clone(), true, CHART_SIZE)
                    click=slice_click(Dimension::Component, true, component_slices.clone(), cx)>
                    {legend("legend-components", components_legend, &[], Some(Dimension::Component), cx)}
                </ChartCard>
                <ChartCard id="chart-role-bars" title="By role (bars)" dark=dark draw=draw_role_bars hover=slice_hover(role_slices.clone(), false, CHART_SIZE)
                    click=slice_click(Dimension::Role, false, role_slices.clone(), cx)>
                    <span></span>
                </ChartCard>
                <ChartCard id="chart-component-bars" title="By component (bars)" dark=dark draw=draw_component_bars hover=slice_hover(component_slices.clone(), false, CHART_SIZE)
                    click=slice_click(Dimension::Component, false, component_slices.clone(), cx)>
                    <span></span>
                </ChartCard>
                <ChartCard id="chart-reserved" title="Allocated vs cached free" dark=dark draw=draw_reserved hover=slice_hover(reserved_hover, true, CHART_SIZE)>
                    {legend("legend-reserved", reserved_legend, &[], None, cx)}
                </ChartCard>
                <ChartCard id="chart-sizes" title="Sizes of live allocations" dark=dark draw=draw_sizes hover=sizes_hover>
                    <span></span>
                </ChartCard>
                <ChartCard id="chart-top" title="Largest allocations" dark=dark draw=draw_top hover=slice_hover(top_slices.clone(), false, WIDE_CHART_SIZE) click=top_click wide=true>
                    <table class="top-table" id="top-allocations">
                        <thead><tr><th>"Size"</th><th>"Role"</th><th>"Component"</th><th>"Made by"</th></tr></thead>
                        <tbody>
                            {top_rows.into_iter().map(|a| view! {
                                <tr data-index=a.index.to_string() data-size=a.size.to_string() data-role=a.role.key() data-component=a.component.key()>
                                    <td class="num" title=format!("{} bytes", format::count(a.size))>{format::bytes(a.size)}</td>
                                    <td>{role_labels[a.role as usize].1}</td>
                                    <td>{component_labels[a.component as usize].1}</td>
                                    <td class="frame" class:user=a.user>
                                        <button type="button" class="link-button" title="Pin it on the timeline"
                                            on:click=move |_| cx.show_on_timeline(device, a.index)
                                        >{a.name.clone().unwrap_or_else(|| "(no stack)".into())}</button>
                                        {format::table::tensor(a.shape.as_deref(), a.dtype.as_deref()).map(|t| view! { <span class="tensor">{format!(" · {t}")}</span> })}
                                    </td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                </ChartCard>
                <section class="chart-card wide call-sites" id="call-sites">
                    <header class="chart-header"><h3>{sites_title}</h3></header>
                    <table class="top-table" id="moment-call-sites" data-total=sites_total.to_string()>
                        <thead><tr><th>"Bytes"</th><th>"Share"</th><th>"Allocations"</th><th>"Call site"</th></tr></thead>
                        <tbody>
                            {site_rows.into_iter().map(|c| view! {
                                <tr data-bytes=c.bytes.to_string() data-count=c.count.to_string()>
                                    <td class="num" title=format!("{} bytes", format::count(c.bytes))>{format::bytes(c.bytes)}</td>
                                    <td class="num">{format!("{}%", format::percent_of(c.bytes, sites_total))}</td>
                                    <td class="num">{format::count(c.count as u64)}</td>
                                    <td class="frame" class:user=c.user>{c.name.unwrap_or_else(|| "(no stack)".into())}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                </section>
            </div>
        </div>
    }
}

#[component]
fn SeriesChart(
    series: RwSignal<Option<Series>>,
    dark: Signal<bool>,
) -> impl IntoView {
    let cx = use_file();

    let data = move || {
        series.with(|s| {
            let Some(s) = s else {
                return (Vec::new(), Vec::new());
            };
            let columns: Vec<usize> = (0..s.states.len())
                .filter(|&c| s.states[c].is_some())
                .collect();
            let xs: Vec<f64> = columns
                .iter()
                .map(|&c| s.states[c].unwrap_or(0) as f64)
                .collect();
            let series: Vec<(Slice, Vec<u64>)> = slices(
                Dimension::Role,
                &vec![0; s.values.len()],
                &[],
                dark.get(),
                cx.highlight.get(),
            )
            .into_iter()
            .zip(&s.values)
            .map(|(slice, values)| (slice, columns.iter().map(|&c| values[c]).collect()))
            .collect();
            (xs, series)
        })
    };
    let draw: Draw = Rc::new(move |canvas, theme| {
        let (xs, series) = data();
        charts::stacked_area(
            canvas,
            theme,
            &xs,
            &series,
            "event",
            "Bytes by role over the run",
            &fmt_bytes,
        )
    });
    let hover: Hover = Rc::new(move |x, y| {
        let (xs, series) = data();
        let (w, h) = WIDE_CHART_SIZE;
        let (column, k) = charts::hit_stacked_area(w, h, &xs, &series, x, y)?;
        let column = column?;
        let at = format!(
            "event {}",
            format::count(xs.get(column).copied().unwrap_or(0.0) as u64)
        );
        Some(match k {
            Some(k) => format!(
                "{}: {} ({at})",
                series[k].0.label,
                format::bytes(series[k].1[column])
            ),
            None => at,
        })
    });
    // A click picks the moment under the pointer, as a click on the timeline does.
    let click: Click = Rc::new(move |x, y| {
        let (xs, series) = data();
        let (w, h) = WIDE_CHART_SIZE;
        if let Some((Some(column), _)) = charts::hit_stacked_area(w, h, &xs, &series, x, y) {
            if let Some(&state) = xs.get(column) {
                cx.picked.set(Some(State::new(state as u32)));
            }
        }
    });
    view! {
        <ChartCard id="chart-series" title="Over the run" dark=dark draw=draw hover=hover click=click wide=true>
            <p class="hint">"Each column shows the moment where allocated memory peaks within it; click to see that moment."</p>
        </ChartCard>
    }
}

#[component]
fn SummaryView(s: DeviceSummary, dark: Signal<bool>) -> impl IntoView {
    let efficiency = s.efficiency_at_peak();
    let draw_gauge: Draw = Rc::new(move |canvas, theme| {
        dark.track();
        charts::gauge(canvas, theme, efficiency, "of reserved in use at the peak")
    });
    let bins: Vec<(u64, u64, u64)> = s
        .cached_free
        .iter()
        .map(|b| (b.lower, b.count, b.bytes))
        .collect();
    let free_hover = histogram_hover(bins.clone());
    let draw_free: Draw = Rc::new(move |canvas, theme| {
        dark.track();
        charts::histogram(
            canvas,
            theme,
            &bins,
            "Cached free blocks at the end (count)",
            &fmt_bytes,
        )
    });
    let e = s.estimate.clone();
    let side = match e.side {
        crate::breakdown::estimate::PeakSide::GradientsAndStep => {
            "gradients + optimizer temporaries"
        }
        crate::breakdown::estimate::PeakSide::Activations => "activations",
    };
    let term = |key: &'static str, label: &'static str, value: u64| {
        view! {
            <tr data-term=key data-value=value.to_string()>
                <td>{label}</td>
                <td class="num" title=format!("{} bytes", format::count(value))>{format::bytes(value)}</td>
            </tr>
        }
    };
    let serving = e.kind == crate::breakdown::estimate::EstimateKind::Serving;
    let difference = e.difference();
    let workload = crate::format::workload::workload_title(&s.workload).map(|title| {
        let evidence = crate::format::workload::workload_evidence(&s.workload);
        let kind = serde_json::to_value(s.workload.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let frameworks: Vec<&str> = s.workload.named().iter().map(|f| f.name()).collect();
        let frameworks = frameworks.join(",");
        view! {
            <p class="workload" id="workload" data-kind=kind data-frameworks=frameworks>
                <strong>"The run: "</strong>{title}
                {(!evidence.is_empty()).then(|| view! {
                    <span class="hint">{format!(" — {}", evidence.join("; "))}</span>
                })}
            </p>
        }
    });
    let state_only = s.state_only.then(|| view! {
        <p class="note" id="state-only">{crate::format::report::STATE_ONLY.replace('`', "")}</p>
    });
    view! {
        {workload}
        {state_only}
        <div class="chart-grid">
            <ChartCard id="chart-efficiency" title="Efficiency at the peak" dark=dark draw=draw_gauge>
                <p class="hint" id="efficiency" data-value=efficiency.to_string()
                    data-ppm=s.efficiency_at_peak_ppm.map(|p| p.to_string())>
                    {format!("{} allocated of {} reserved at the allocated peak. Reserved memory peaks at {}, with {} allocated then.",
                        format::bytes(s.peak_allocated), format::bytes(s.reserved_at_peak),
                        format::bytes(s.peak_reserved), format::bytes(s.allocated_at_reserved_peak))}
                </p>
            </ChartCard>
            <ChartCard id="chart-cached-free" title="Cached free blocks" dark=dark draw=draw_free hover=free_hover>
                <span></span>
            </ChartCard>
            <section class="chart-card estimate" id="estimate"
                data-estimate=e.estimate.to_string()
                data-observed=e.observed.to_string()
                data-side=match e.side { crate::breakdown::estimate::PeakSide::GradientsAndStep => "gradients_and_step", crate::breakdown::estimate::PeakSide::Activations => "activations" }
                data-kind=if serving { "serving" } else { "training" }
            >
                <header class="chart-header"><h3>"Peak estimate"</h3></header>
                <p class="hint">{if serving {
                    "a serving engine's: parameters + KV cache + CUDA graphs + the largest step's temporaries, each term the most its role held in this run."
                } else if e.weight_copies > 0 {
                    "parameters + optimizer state + max(gradients + optimizer temporaries, activations + autocast's weight copies), each term the most its role held in this run."
                } else {
                    "parameters + optimizer state + max(gradients + optimizer temporaries, activations), each term the most its role held in this run."
                }}</p>
                <table class="estimate-table">
                    <tbody>
                        {term("parameters", "Parameters", e.parameters)}
                        {serving.then(|| view! {
                            {term("kv_cache", "KV cache", e.kv_cache)}
                            {term("cuda_graphs", "CUDA graphs", e.cuda_graphs)}
                            {term("step_temporaries", "Step temporaries", e.step_temporaries)}
                        })}
                        {(!serving).then(|| view! {
                            {term("optimizer_state", "Optimizer state", e.optimizer_state)}
                            {term("gradients", "Gradients", e.gradients)}
                            {term("optimizer_temporaries", "Optimizer temporaries", e.optimizer_temporaries)}
                            {term("activations", "Activations", e.activations)}
                        })}
                        {(!serving && e.weight_copies > 0).then(|| term("weight_copies", "Autocast's weight copies", e.weight_copies))}
                        {term("estimate", "Estimate", e.estimate)}
                        {term("observed", "Observed peak", e.observed)}
                    </tbody>
                </table>
                <p id="estimate-sentence">{if e.estimate == 0 {
                    crate::format::report::NO_ESTIMATE.to_string()
                } else if serving {
                    format!("The estimate is {} ({:+.1}%) from the observed peak.",
                        format::bytes_delta(difference), e.relative_difference() * 100.0)
                } else {
                    format!("The max is set by {side}; the estimate is {} ({:+.1}%) from the observed peak.",
                        format::bytes_delta(difference), e.relative_difference() * 100.0)
                }}</p>
                {s.training.as_ref().and_then(|t| format::breakdown::training_line(t).map(|line| view! {
                    <p class="hint" id="training-checks" data-passes=t.passes().to_string()>
                        {format!("Training's arithmetic: {line}.")}
                    </p>
                }))}
            </section>
        </div>
        <findings::Findings findings=s.findings.clone() allocations=s.finding_allocations.clone() device=s.device oom=s.oom.clone() />
    }
}
