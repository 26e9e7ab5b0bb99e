//! The source view of two runs: one file with, in the margin of each line, the bytes made
//! there in A and in B (each at the moment its digest is taken) and the change, lines
//! highlighted by the size of the change. Each side's worker counts its own lines
//! (`TableRequest::Source`, the path matched by its longest shared end, so two checkouts
//! compare); the core sets them side by side (`analysis::lines::side_by_side`).
//!
//! Not the place for choosing A and B (the comparison's pickers), nor for what it shares with
//! the source view of one file (`widgets::listing`).

use leptos::html::Div;
use leptos::prelude::*;

use crate::model::State;
use crate::analysis::listing::{lay_out, ListedRow};
use crate::analysis::lines::{heat, side_by_side, FunctionPair, LinePair, SourcePlace, Tally};
use crate::format;
use crate::format::source::{change, margin};
use crate::table::source::{SourceRequest, SourceView};
use crate::table::Scope;
use crate::ui::actions::{use_actions, Actions, ViewAsker};
use crate::ui::requests::Latest;
use crate::ui::state::FileId;
use crate::ui::widgets::listing::{
    fetch_text, listing_table, scroll_when_listed, FileText, FolderInput,
};
use crate::ui::widgets::source_folder::SourceFolder;

/// One side: a file, its device and the state its lines are counted at.
pub type SourceSide = (FileId, u32, State);

/// Asks `side`'s worker for the lines of `path`.
fn ask_side(
    actions: Actions,
    (file, device, state): SourceSide,
    path: String,
    into: RwSignal<Option<Result<SourceView, String>>>,
) {
    let asker = ViewAsker::new(actions, file);
    let latest = StoredValue::new(Latest::default());
    let request = SourceRequest {
        device,
        scope: Scope::State(state),
        filter: Default::default(),
        path: Some(path),
        text_held: false,
    };
    asker.ask_latest(latest, request, move |view| {
        let _ = into.try_set(Some(view.map(|v| *v)));
    });
}

#[component]
pub fn CompareSource(
    a: SourceSide,
    b: SourceSide,
    place: SourcePlace,
    /// Closes the view.
    on_close: Callback<()>,
) -> impl IntoView {
    let actions = use_actions();

    let side_a = RwSignal::new(None::<Result<SourceView, String>>);
    let side_b = RwSignal::new(None::<Result<SourceView, String>>);
    ask_side(actions, a, place.path.clone(), side_a);
    ask_side(actions, b, place.path.clone(), side_b);
    let text = RwSignal::new(FileText::Unknown);
    let scroller = NodeRef::<Div>::new();
    let both = Memo::new(move |_| match (side_a.get(), side_b.get()) {
        (Some(Ok(x)), Some(Ok(y))) => Some(Ok((x, y))),
        (Some(Err(e)), _) | (_, Some(Err(e))) => Some(Err(e)),
        _ => None,
    });
    let wanted = place.path.clone();
    let folder = SourceFolder::in_context();
    Effect::new(move |_| {
        let _ = folder.map(|f| f.opened.get());
        let Some(Ok((x, y))) = both.get() else {
            return;
        };
        // A's copy of the text, else B's, else the folder's.
        let carried = x.text.as_ref().or(y.text.as_ref());
        let carried = carried.map(|t| (t.path.clone(), t.text.clone()));
        if !text.with_untracked(|t| t.has_or_reads(&wanted)) {
            fetch_text(wanted.clone(), carried, text);
        }
    });
    let pairs = Memo::new(move |_| {
        both.with(|b| match b {
            Some(Ok((x, y))) => Some(side_by_side(x.file.as_ref(), y.file.as_ref())),
            _ => None,
        })
    });
    let listed_path = place.path.clone();
    let rows = Memo::new(move |_| {
        pairs.with(|p| {
            let Some((lines, functions)) = p else {
                return Vec::new();
            };
            text.with(|t| {
                let text = t.text_of(&listed_path).map(|t| t.text.as_str());
                let lines: Vec<(i64, LinePair)> =
                    lines.iter().map(|l| (l.line, l.clone())).collect();
                let functions: Vec<(String, i64, FunctionPair)> = functions
                    .iter()
                    .map(|f| (f.name.clone(), f.first_line, f.clone()))
                    .collect();
                lay_out(text, &lines, &functions)
            })
        })
    });
    let line = place.line;
    let pending_line = RwSignal::new(line);
    let path = place.path.clone();
    scroll_when_listed(
        pending_line,
        move || Some(path.clone()),
        text,
        rows,
        scroller,
    );
    let most_change = Memo::new(move |_| {
        pairs.with(|p| {
            p.as_ref().map_or(0, |(lines, _)| {
                lines
                    .iter()
                    .map(|l| (l.b.made.bytes as i64 - l.a.made.bytes as i64).unsigned_abs())
                    .max()
                    .unwrap_or(0)
            })
        })
    });
    let title = place.path.clone();
    let text_path = place.path.clone();
    let words_path = place.path.clone();
    view! {
        <section class="compare-source" id="compare-source" data-path=place.path.clone()
            data-ready=move || both.with(|b| matches!(b, Some(Ok(_)))).to_string()
            data-text=move || text.with(|t| t.text_of(&text_path).is_some()).to_string()>
            <header class="chart-header">
                <h3>{format!("Source: {title}")}</h3>
                <FolderInput id="compare-source-folder-input" />
                <button type="button" class="button quiet" id="compare-source-close" on:click=move |_| on_close.run(())>"Close"</button>
            </header>
            <p class="hint" id="compare-source-text-from">{move || match both.get() {
                None => "Counting both runs' lines…".to_string(),
                Some(Err(e)) => e,
                Some(Ok(_)) => format!("Bytes made at each line, each run at its own moment. {}", text.with(|t| t.words(&words_path))),
            }}</p>
            {listing_table("compare-source-listing", &["A", "B", "B − A"], scroller, view! {
                        {move || {
                            let most = most_change.get();
                            rows.get().into_iter().map(|row| match row {
                                ListedRow::Function { name, total } => view! {
                                    <tr class="source-function" data-function=name.clone()
                                        data-a-bytes=total.a.bytes.to_string() data-b-bytes=total.b.bytes.to_string()>
                                        <td colspan="5">{format!("{name}: {} in A, {} in B pass through it ({})",
                                            format::bytes(total.a.bytes), format::bytes(total.b.bytes), change(&total.a, &total.b))}</td>
                                    </tr>
                                }.into_any(),
                                ListedRow::Code { number, code, margin: m } => {
                                    let (x, y) = m.as_ref().map_or((Tally::default(), Tally::default()), |l| (l.a.made, l.b.made));
                                    let delta = y.bytes as i64 - x.bytes as i64;
                                    let level = heat(delta.unsigned_abs(), most);
                                    view! {
                                        <tr class=format!("source-line heat-{level}") class:up={delta > 0} class:down={delta < 0}
                                            class:target=line == Some(number)
                                            data-line=number.to_string()
                                            data-a-bytes=x.bytes.to_string() data-a-count=x.count.to_string()
                                            data-b-bytes=y.bytes.to_string() data-b-count=y.count.to_string()
                                            data-delta-bytes=delta.to_string()>
                                            <td class="num margin">{margin(&x)}</td>
                                            <td class="num margin">{margin(&y)}</td>
                                            <td class="num margin">{change(&x, &y)}</td>
                                            <td class="num line-number">{number.to_string()}</td>
                                            <td class="source-code">{code}</td>
                                        </tr>
                                    }.into_any()
                                }
                            }).collect_view()
                        }}
            })}
        </section>
    }
}
