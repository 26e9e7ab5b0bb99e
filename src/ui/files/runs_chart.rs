//! Every run of the files table on one axis: each row's allocated curve (x as the share of its
//! events or of its time, y as its bytes or their change from its start), its peak marked,
//! the colour its bar has, and a click on a curve (or its legend row) opening that file. The
//! first `MOST_RUNS` rows in the table's order are drawn, so a sorted table chooses them.
//!
//! The curves are the digests' (`compare::overlay`), drawn by `memsight-charts`' `runs`, as
//! the command line's report folder draws its summary. Exact values ride in the legend's
//! `data-*`.

use leptos::prelude::*;

use crate::ui::widgets::digests::Digests;
use super::FileLine;
use crate::compare::overlay::{all_timed, run_curve, OverlayX, OverlayY, RunCurve, MOST_RUNS};
use crate::format;
use crate::ui::actions::use_actions;
use crate::ui::widgets::chart::{ChartCard, Click, Draw, Hover, WIDE_CHART_SIZE};
use crate::ui::charts::{self, Slice};
use crate::ui::segmented::segmented_button;
use crate::ui::state::FileId;

/// One run as drawn.
#[derive(Clone, Debug, PartialEq)]
struct Run {
    file: FileId,
    device: u32,
    label: String,
    colour: [u8; 3],
    curve: RunCurve,
}

#[component]
pub fn RunsChart(
    lines: Memo<Vec<FileLine>>,
    colours: Memo<Vec<[u8; 3]>>,
    digests: Digests,
    dark: Signal<bool>,
) -> impl IntoView {
    let actions = use_actions();

    let x = RwSignal::new(OverlayX::Events);
    let y = RwSignal::new(OverlayY::Absolute);
    let timed = Memo::new(move |_| {
        lines.with(|lines| {
            lines.iter().take(MOST_RUNS).all(|l| {
                digests
                    .with_digest(l.file, l.row.device, |d| all_timed([d]))
                    .unwrap_or(false)
            })
        })
    });
    let runs = Memo::new(move |_| {
        let (x, y) = (x.get(), y.get());
        let colours = colours.get();
        lines.with(|lines| {
            let labels =
                format::compare::short_labels(&lines.iter().map(|l| &l.row).collect::<Vec<_>>());
            lines
                .iter()
                .zip(colours)
                .zip(labels)
                .take(MOST_RUNS)
                .filter_map(|((l, colour), label)| {
                    let curve = digests
                        .with_digest(l.file, l.row.device, |d| run_curve(d, x, y))
                        .flatten()?;
                    Some(Run {
                        file: l.file,
                        device: l.row.device,
                        label,
                        colour,
                        curve,
                    })
                })
                .collect::<Vec<_>>()
        })
    });
    let total = Memo::new(move |_| lines.with(Vec::len));
    let draw: Draw = std::rc::Rc::new(move |canvas, theme| {
        let series: Vec<(Slice, Vec<i64>)> = runs.with(|runs| {
            runs.iter()
                .map(|r| {
                    let slice = Slice {
                        key: format!("{}:{}", r.file, r.device),
                        label: r.label.clone(),
                        value: 0,
                        colour: r.colour,
                    };
                    (slice, r.curve.values.clone())
                })
                .collect()
        });
        let x_label = match x.get() {
            OverlayX::Events => "share of each run's events",
            OverlayX::Time => "share of each run's time",
        };
        let title = match y.get() {
            OverlayY::Absolute => "Allocated memory of each run",
            OverlayY::FromStart => "Allocated memory of each run, from its start",
        };
        charts::runs(
            canvas,
            theme,
            &series,
            x_label,
            title,
            &format::bytes_signed,
        )
    });
    let run_at = move |px: f64, py: f64| {
        runs.with_untracked(|runs| {
            let values: Vec<&[i64]> = runs.iter().map(|r| r.curve.values.as_slice()).collect();
            let (w, h) = WIDE_CHART_SIZE;
            charts::hit_runs(w, h, &values, px, py).map(|i| (runs[i].file, runs[i].label.clone()))
        })
    };
    let hover: Hover = std::rc::Rc::new(move |px, py| {
        run_at(px, py).map(|(_, label)| format!("{label}: click to open"))
    });
    let click: Click = std::rc::Rc::new(move |px, py| {
        if let Some((file, _)) = run_at(px, py) {
            actions.select(file);
        }
    });
    let time_why_not = move || (!timed.get()).then_some("A run has no times: overlay over events");
    view! {
        <ChartCard id="files-runs" title="Every run on one axis" dark=dark draw=draw hover=hover click=click wide=true>
            <div class="segmented-group" role="group" aria-label="Across">
                {segmented_button(x, OverlayX::Events, "Events", "files-runs-events", || None)}
                {segmented_button(x, OverlayX::Time, "Time", "files-runs-time", time_why_not)}
            </div>
            <div class="segmented-group" role="group" aria-label="Bytes">
                {segmented_button(y, OverlayY::Absolute, "Allocated", "files-runs-absolute", || None)}
                {segmented_button(y, OverlayY::FromStart, "From its start", "files-runs-from-start", || None)}
            </div>
            {move || (total.get() > MOST_RUNS).then(|| view! {
                <p class="hint" id="files-runs-cut">
                    {format!("The first {MOST_RUNS} of {} rows in the table's order: sort the table to choose them.", format::count(total.get() as u64))}
                </p>
            })}
            <ul class="runs-legend" id="files-runs-legend" data-runs=move || runs.with(Vec::len).to_string()>
                {move || runs.get().into_iter().map(|r| {
                    let file = r.file;
                    view! {
                        <li data-file-id=r.file.to_string() data-device=r.device.to_string()
                            data-peak=r.curve.peak.to_string()
                            data-peak-share-ppm=r.curve.peak_share_ppm.to_string()>
                            <button type="button" class="link-button" on:click=move |_| actions.select(file)>
                                {r.label.clone()}
                            </button>
                            {format!(" peak {} at {}", format::bytes_signed(r.curve.peak), format::percent_ppm(r.curve.peak_share_ppm))}
                        </li>
                    }
                }).collect_view()}
            </ul>
        </ChartCard>
    }
}
