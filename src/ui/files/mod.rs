//! The files side by side: one row per open file and device — its peaks, its end,
//! efficiency, trace entries, time span and the bytes of each role at its peak — sortable by
//! any column, with labels the user edits (`ctx 512 / bf16`), ranks and iterations read from
//! the names with outlier ranks flagged, a bar chart of the sorted column, and the table as
//! Markdown or CSV (copied or downloaded). A job's thousand ranks lay out only the rows in
//! view (`row_window`); the downloads and the chart have them all.
//!
//! Each file's worker is asked for its devices' digests (`Request::Digest`, numbers only);
//! rows come from the core (`compare::files`), words from `format::compare`, so the table is
//! `memsight files`'. A file still loading joins the table when it is ready. Not the place
//! for computing numbers.

mod runs_chart;

use leptos::prelude::*;

use super::actions::{use_actions, Actions};
use super::charts::{self, Slice};
use super::deep_link::DeepLink;
use super::row_window::{row_window, FIRST_VIEW_HEIGHT, WINDOWED_FROM};
use super::state::{AppState, FileId, Showing};
use super::widgets::chart::{ChartCard, Draw};
use super::widgets::digests::Digests;
use super::widgets::download::download_text;
use crate::analysis::palette::Style;
use crate::compare::files::{
    flag_outliers, iteration_summaries, read_settings, rows_of, sort_rows, FileRow, FilesColumn,
};
use crate::format::{self, compare as words};
use runs_chart::RunsChart;

/// A file's row as the page keeps it: the core's row and the file it belongs to.
#[derive(Clone, Debug, PartialEq)]
pub struct FileLine {
    file: FileId,
    row: FileRow,
}

#[component]
pub fn FilesView(
    state: RwSignal<AppState>,
    link: DeepLink,
    dark: Signal<bool>,
) -> impl IntoView {
    let actions = use_actions();

    let digests = Digests::new(state, actions, false);
    // A link to the files side by side has nothing more to restore.
    if link
        .restoring_any()
        .is_some_and(|l| l.show == Showing::Files)
    {
        request_animation_frame(move || link.restored());
    }
    Effect::new(move |_| {
        let ready: Vec<(FileId, Vec<u32>)> = state.with(|s| {
            s.files()
                .iter()
                .filter(|f| f.is_ready())
                .map(|f| (f.id, f.devices().to_vec()))
                .collect()
        });
        for (file, devices) in ready {
            for device in devices {
                digests.want(file, device);
            }
        }
    });
    let sort = RwSignal::new(None::<(FilesColumn, bool)>);
    let copied = RwSignal::new(None::<String>);
    let lines = Memo::new(move |_| {
        let mut lines: Vec<FileLine> = state.with(|s| {
            s.files()
                .iter()
                .zip(s.short_titles())
                .filter(|(f, _)| f.is_ready())
                .flat_map(|(f, title)| {
                    let found = digests.of_file(f.id);
                    rows_of(&f.name, Some(&title), &found)
                        .into_iter()
                        .map(move |row| FileLine { file: f.id, row })
                })
                .collect()
        });
        let mut rows: Vec<FileRow> = lines.iter().map(|l| l.row.clone()).collect();
        flag_outliers(&mut rows);
        read_settings(&mut rows);
        for (line, row) in lines.iter_mut().zip(rows) {
            line.row = row;
        }
        if let Some((column, descending)) = sort.get() {
            let mut only: Vec<FileRow> = lines.iter().map(|l| l.row.clone()).collect();
            sort_rows(&mut only, column, descending);
            // Map the sorted rows back to their files by name and device, in one pass (a job's
            // thousand ranks); a file opened twice gives its rows back in turn.
            let mut at: std::collections::HashMap<(&str, u32), std::collections::VecDeque<usize>> =
                std::collections::HashMap::new();
            for (i, line) in lines.iter().enumerate() {
                at.entry((line.row.name.as_str(), line.row.device))
                    .or_default()
                    .push_back(i);
            }
            let order: Vec<usize> = only
                .iter()
                .filter_map(|row| at.get_mut(&(row.name.as_str(), row.device))?.pop_front())
                .collect();
            lines = order.into_iter().map(|i| lines[i].clone()).collect();
        }
        lines
    });
    let rows =
        Memo::new(move |_| lines.with(|l| l.iter().map(|l| l.row.clone()).collect::<Vec<_>>()));
    let columns = Memo::new(move |_| rows.with(|r| words::shown_columns(r)));
    let summaries = Memo::new(move |_| rows.with(|r| iteration_summaries(r)));
    let waiting = Memo::new(move |_| {
        state.with(|s| s.files().iter().filter(|f| f.is_pending()).count()) + digests.pending()
    });
    let failed = Memo::new(move |_| digests.errors());
    // The chart shows the sorted column when it holds bytes, else the peak.
    let charted = Memo::new(move |_| match sort.get() {
        Some((column, _)) if bytes_column(column) => column,
        _ => FilesColumn::PeakAllocated,
    });

    let header = move |column: FilesColumn| {
        let (title, key) =
            rows.with_untracked(|r| (words::column_title_in(r, column), column.key_in(r)));
        let order = move || match sort.get() {
            Some((c, true)) if c == column => "descending",
            Some((c, false)) if c == column => "ascending",
            _ => "none",
        };
        view! {
            <th scope="col" aria-sort=order data-column=key.clone()>
                <button type="button" class="sort-button" on:click=move |_| {
                    sort.update(|s| {
                        *s = match *s {
                            // Text sorts A→Z first, numbers largest first.
                            Some((c, d)) if c == column => Some((column, !d)),
                            _ => Some((column, column != FilesColumn::Label)),
                        }
                    })
                }>{title}</button>
            </th>
        }
    };
    let copy = move |text: String, what: &'static str| {
        let done = copied;
        let Some(window) = web_sys::window() else {
            return;
        };
        let promise = window.navigator().clipboard().write_text(&text);
        wasm_bindgen_futures::spawn_local(async move {
            let result = wasm_bindgen_futures::JsFuture::from(promise).await;
            done.set(Some(match result {
                Ok(_) => format!("Copied the table as {what}."),
                Err(_) => {
                    format!("The browser refused the clipboard: use Download {what} instead.")
                }
            }));
        });
    };
    // Each bar keeps its colour whatever the order: colours follow the files' order in the
    // list (then the device), not the sorted rows. One per line, in the lines' order.
    let colours = Memo::new(move |_| {
        let opened: Vec<FileId> = state.with(|s| s.files().iter().map(|f| f.id).collect());
        lines.with(|lines| {
            let keys: Vec<(usize, u32)> = lines
                .iter()
                .map(|l| {
                    let position = opened.iter().position(|&f| f == l.file);
                    (position.unwrap_or(usize::MAX), l.row.device)
                })
                .collect();
            let mut in_list_order = keys.clone();
            in_list_order.sort_unstable();
            keys.iter()
                .map(|key| palette(in_list_order.binary_search(key).unwrap_or(0)))
                .collect::<Vec<[u8; 3]>>()
        })
    });
    // A long table lays out the rows in its scroll box's view (`row_window`).
    let windowed = Memo::new(move |_| lines.with(|l| l.len() >= WINDOWED_FROM));
    let scroller = NodeRef::<leptos::html::Div>::new();
    let scroll = RwSignal::new((0.0, FIRST_VIEW_HEIGHT));
    let measure_scroll = move || {
        if let Some(el) = scroller.get_untracked() {
            let height = match el.client_height() {
                0 => FIRST_VIEW_HEIGHT,
                h => f64::from(h),
            };
            scroll.set((f64::from(el.scroll_top()), height));
        }
    };
    let draw: Draw = std::rc::Rc::new(move |canvas, theme| {
        let column = charted.get();
        let colours = colours.get();
        let slices: Vec<Slice> = lines.with(|lines| {
            let labels = words::short_labels(&lines.iter().map(|l| &l.row).collect::<Vec<_>>());
            lines
                .iter()
                .zip(colours)
                .zip(labels)
                .map(|((l, colour), label)| Slice {
                    key: format!("{}:{}", l.file, l.row.device),
                    label,
                    value: words::cell_exact(&l.row, column).parse().unwrap_or(0),
                    colour,
                })
                .collect()
        });
        let title = format!("{} by file", words::column_title(column));
        charts::bars(canvas, theme, &slices, &title, &format::bytes)
    });

    view! {
        <section class="panel files-view" id="files-view"
            data-rows=move || rows.with(Vec::len).to_string()
            data-bar-colours=move || lines.with(|lines| colours.with(|c| lines.iter().zip(c).map(|(l, [r, g, b])| format!("{}={r},{g},{b}", l.row.name)).collect::<Vec<_>>().join(";")))
            data-waiting=move || waiting.get().to_string()
        >
            <header class="snapshot-header">
                <div>
                    <h1 class="panel-title">"Files side by side"</h1>
                    <p class="hint">
                        "One row per file and device, every number at that file's own peak or end. Click a column to sort, a name to rename it, "
                        <q>"Open"</q> " to see its views."
                    </p>
                </div>
                <div class="files-actions">
                    <button type="button" class="button" id="files-copy-markdown"
                        on:click=move |_| copy(words::files_markdown(&rows.get_untracked()), "Markdown")>"Copy Markdown"</button>
                    <button type="button" class="button" id="files-copy-csv"
                        on:click=move |_| copy(words::files_csv(&rows.get_untracked()), "CSV")>"Copy CSV"</button>
                    <button type="button" class="button quiet" id="files-markdown"
                        on:click=move |_| download_text("memsight-files.md", &words::files_markdown(&rows.get_untracked()), "text/markdown")>"Download Markdown"</button>
                    <button type="button" class="button quiet" id="files-csv"
                        on:click=move |_| download_text("memsight-files.csv", &words::files_csv(&rows.get_untracked()), "text/csv")>"Download CSV"</button>
                </div>
            </header>
            {move || copied.get().map(|text| view! { <p class="hint" id="files-copied" role="status">{text}</p> })}
            {move || (waiting.get() > 0).then(|| view! {
                <p class="pending" id="files-waiting" aria-busy="true">
                    {format!("{} still loading: their rows come when they are ready.", format::count(waiting.get() as u64))}
                </p>
            })}
            {move || failed.get().into_iter().map(|text| view! { <p class="view-error" role="alert">{text}</p> }).collect_view()}
            <ul class="iteration-summaries" id="iteration-summaries">
                {move || summaries.get().into_iter().map(|s| {
                    let outliers = s.outlier_ranks.len();
                    view! {
                        <li data-iteration=s.iteration.map_or(String::new(), |i| i.to_string())
                            data-outliers=outliers.to_string()
                            class:has-outliers={outliers > 0}
                        >{words::iteration_sentence(&s)}</li>
                    }
                }).collect_view()}
            </ul>
            <div class="files-table-wrap" class:windowed=windowed node_ref=scroller
                on:scroll=move |_| measure_scroll()>
                <table class="files-table" id="files-table">
                    <thead>
                        <tr>
                            {move || columns.get().into_iter().map(header).collect_view()}
                            <th scope="col"><span class="visually-hidden">"Open"</span></th>
                        </tr>
                    </thead>
                    <tbody>
                        {move || {
                            let shown = columns.get();
                            let (scroll_top, view_height) = scroll.get();
                            let (window, laid_out) = lines.with(|lines| {
                                let window = row_window(lines.len(), scroll_top, view_height);
                                (window.clone(), lines[window.rows].to_vec())
                            });
                            let spacer = |height: f64| (height > 0.0).then(|| view! {
                                <tr class="files-spacer" aria-hidden="true" style:height=format!("{height}px")></tr>
                            });
                            let rows = laid_out.into_iter().map(|line| {
                                let shown = shown.clone();
                                let file = line.file;
                                let row = line.row;
                                view! {
                                    <tr class="files-row" class:outlier=row.outlier
                                        data-file-id=file.to_string()
                                        data-device=row.device.to_string()
                                        data-name=row.name.clone()
                                        data-outlier=row.outlier.to_string()
                                    >
                                        {shown.into_iter().map(|column| cell(state, actions, file, &row, column)).collect_view()}
                                        <td>
                                            <button type="button" class="button quiet open-file"
                                                on:click=move |_| actions.select(file)>"Open"</button>
                                        </td>
                                    </tr>
                                }
                            }).collect_view();
                            (spacer(window.above), rows, spacer(window.below))
                        }}
                    </tbody>
                </table>
            </div>
            <div class="chart-grid">
                <ChartCard id="files-chart" title="By file" dark=dark draw=draw wide=true>
                    <p class="hint">"The column the table is sorted by (bytes), or the peak allocated."</p>
                </ChartCard>
                <RunsChart lines=lines colours=colours digests=digests dark=dark />
            </div>
        </section>
    }
}

/// Characters of a file's name its label field shows.
const NAME_CHARS: usize = 44;

/// One cell: exact value in `data-value`, the label an editable field.
fn cell(
    state: RwSignal<AppState>,
    actions: Actions,
    file: FileId,
    row: &FileRow,
    column: FilesColumn,
) -> impl IntoView {
    let exact = words::cell_exact(row, column);
    let key = column.key_in(std::slice::from_ref(row));
    if column == FilesColumn::Label {
        let name = row.name.clone();
        let shown = state.with_untracked(|s| s.file(file).and_then(|f| f.label.clone()));
        // The field is as wide as the name (up to NAME_CHARS), which is cut in its middle,
        // where names of one run differ least, never at its end.
        let placeholder = format::shorten_middle(&name, NAME_CHARS);
        let size = placeholder.chars().count().clamp(12, NAME_CHARS);
        return view! {
            <td class="files-label" data-column=key data-value=exact>
                <input type="text" class="label-input" aria-label=format!("Label of {name}")
                    placeholder=placeholder title=name size=size.to_string()
                    prop:value=shown.unwrap_or_default()
                    on:change=move |event| actions.set_label(file, &event_target_value(&event))
                />
                {row.outlier.then(|| view! { <span class="badge outlier-badge" title="Its peak is far from the other ranks' of its iteration">"outlier"</span> })}
            </td>
        }
        .into_any();
    }
    let text = words::cell_text(row, column);
    view! { <td class="num" data-column=key data-value=exact>{text}</td> }.into_any()
}

fn bytes_column(column: FilesColumn) -> bool {
    !matches!(
        column,
        FilesColumn::Label
            | FilesColumn::Device
            | FilesColumn::Rank
            | FilesColumn::Iteration
            | FilesColumn::EfficiencyAtPeak
            | FilesColumn::TraceEntries
            | FilesColumn::TimeSpan
            | FilesColumn::Oom
            | FilesColumn::Setting(_)
    )
}

/// A stable colour per row: the timeline's palette, so the page's colours stay few.
fn palette(i: usize) -> [u8; 3] {
    let palette = Style::light().palette;
    let [r, g, b, _] = palette[i % palette.len()];
    [r, g, b]
}
