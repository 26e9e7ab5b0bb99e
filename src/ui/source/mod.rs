//! The source view: a Python file of the code holding memory, each line with the bytes made
//! there (its call-site group in the table) and passing through it, each function's total
//! above its `def`, lines with memory highlighted by size. It counts the allocations the table
//! shows (its scope and filter), so it follows the peak, the picked moment, the end or the
//! timeline's window as the table does. A call site, module or file group in the table, or a
//! frame of a stack, opens its file at its line (`widgets::source_button`).
//!
//! The worker counts (`TableRequest::Source`); the text is the snapshot's own
//! (`source_code`) or the user's, from a folder opened in the page (`widgets::source_folder`),
//! read locally; the listing's text, folder input and table are shared with the comparison's
//! listing (`widgets::listing`). The layout is the core's (`analysis::listing`). File text is
//! only ever text nodes. Not the place for a comparison's listing, with A's and B's margins
//! (the comparison's own, `compare::source`).

use leptos::html::Div;
use leptos::prelude::*;

use crate::analysis::listing::{lay_out, ListedRow};
use crate::analysis::lines::{heat, LineBytes, SourcePlace, Tally};
use crate::format;
use crate::format::source::{function_total, margin, scope_words};
use crate::table::source::{SourceRequest, SourceView};
use crate::table::{Filter, Scope};
use crate::ui::actions::{use_actions, ViewAsker};
use crate::ui::file_context::use_file;
use crate::ui::near_screen::near_screen;
use crate::ui::requests::Latest;
use crate::ui::state::FileId;
use crate::ui::widgets::listing::{
    fetch_text, listing_table, scroll_when_listed, FileText, FolderInput,
};
use crate::ui::widgets::source_folder::SourceFolder;

#[component]
pub fn SourcePanel(
    file: FileId,
    device: u32,
) -> impl IntoView {
    let actions = use_actions();
    let cx = use_file();

    let asker = ViewAsker::new(actions, file);
    let latest = StoredValue::new(Latest::default());
    let answer = RwSignal::new(None::<Result<SourceView, String>>);
    let answers = RwSignal::new(0u32);
    let text = RwSignal::new(FileText::Unknown);
    let folder = SourceFolder::in_context();
    let scroller = NodeRef::<Div>::new();
    let asked_path = move || {
        cx
            .source
            .with(|p| p.as_ref().map(|p| p.path.clone()))
    };
    // Counted once the panel comes near the screen or a place is opened: a user who never
    // looks costs the worker nothing.
    let panel = NodeRef::<leptos::html::Section>::new();
    let near = near_screen(panel);
    Effect::new(move |_| {
        if !near.get() && cx.source.with(Option::is_none) {
            return;
        }
        cx.generation.track();
        let (scope, filter) = cx
            .table_choice
            .get()
            .unwrap_or((Scope::Peak, Filter::default()));
        let path = asked_path();
        // The text of the file shown stays; only its margins change with the scope.
        let text_held = path
            .as_deref()
            .is_some_and(|p| text.with_untracked(|t| t.text_of(p).is_some()));
        let request = SourceRequest {
            device,
            scope,
            filter,
            path,
            text_held,
        };
        asker.ask_latest(latest, request, move |view| {
            answer.set(Some(view.map(|v| *v)));
            answers.update(|n| *n += 1);
        });
    });
    // The file shown: the one asked, else the one the worker chose.
    let shown = Memo::new(move |_| {
        answer.with(|a| match a {
            Some(Ok(v)) => v.file.as_ref().map(|f| f.path.clone()).or_else(asked_path),
            _ => None,
        })
    });
    // Its text, the snapshot's or the folder's (looked for again when a folder is opened).
    Effect::new(move |_| {
        let _ = folder.map(|f| f.opened.get());
        let Some(path) = shown.get() else {
            return;
        };
        if text.with_untracked(|t| t.has_or_reads(&path)) {
            return;
        }
        let carried = answer.with_untracked(|a| match a {
            Some(Ok(v)) => v.text.as_ref().map(|t| (t.path.clone(), t.text.clone())),
            _ => None,
        });
        fetch_text(path, carried, text);
    });
    let rows = Memo::new(move |_| {
        answer.with(|a| {
            let Some(Ok(v)) = a else {
                return Vec::new();
            };
            let Some(file) = &v.file else {
                return Vec::new();
            };
            text.with(|t| {
                let text = t.text_of(&file.path).map(|t| t.text.as_str());
                let lines: Vec<(i64, LineBytes)> =
                    file.lines.iter().map(|l| (l.line, l.clone())).collect();
                let functions: Vec<(String, i64, Tally)> = file
                    .functions
                    .iter()
                    .map(|f| (f.name.clone(), f.first_line, f.through))
                    .collect();
                lay_out(text, &lines, &functions)
            })
        })
    });
    // A place opened (again, too): its line brought into view once it is listed.
    let pending_line = RwSignal::new(None::<i64>);
    Effect::new(move |_| {
        pending_line.set(cx.source.with(|p| p.as_ref().and_then(|p| p.line)));
    });
    scroll_when_listed(pending_line, move || shown.get(), text, rows, scroller);
    let most_made = Memo::new(move |_| {
        answer.with(|a| match a {
            Some(Ok(v)) => v
                .file
                .as_ref()
                .and_then(|f| f.lines.iter().map(|l| l.made.bytes).max())
                .unwrap_or(0),
            _ => 0,
        })
    });
    let attr = move |f: fn(&SourceView) -> String| {
        move || {
            answer.with(|a| match a {
                Some(Ok(v)) => f(v),
                _ => String::new(),
            })
        }
    };
    let target = move || cx.source.with(|p| p.as_ref().and_then(|p| p.line));
    view! {
        <section class="panel source-panel" id="source-view" node_ref=panel
            data-device=device.to_string()
            data-ready=move || answer.with(|a| matches!(a, Some(Ok(_)))).to_string()
            data-answers=move || answers.get().to_string()
            data-path=move || shown.get().unwrap_or_default()
            data-state=attr(|v| v.state.map(|s| s.to_string()).unwrap_or_default())
            data-chosen-bytes=attr(|v| v.chosen.bytes.to_string())
            data-chosen-count=attr(|v| v.chosen.count.to_string())
            data-compute-ms=attr(|v| v.compute_ms.to_string())
            data-text=move || shown.with(|p| p.as_deref().map_or("no", |p| text.with(|t| t.key(p))))
        >
            <header class="panel-header">
                <h2 class="panel-title">"Source"</h2>
                <p class="hint">"Each line of your code with the memory made there (its call site in the table) and passing through it. Click “code” beside a call site, a module or a frame to open its file."</p>
            </header>
            <div class="source-toolbar">
                <label class="field">
                    "File "
                    <select id="source-file" on:change=move |event| {
                        let path = event_target_value(&event);
                        cx.source.set(Some(SourcePlace { path, line: None }));
                    }>
                        {move || answer.with(|a| match a {
                            Some(Ok(v)) => v.files.iter().map(|f| {
                                let path = f.path.clone();
                                let selected = shown.get().as_deref() == Some(f.path.as_str());
                                let label = format!("{} · {} made, {} through{}",
                                    format::shorten_middle(&f.path, 60), format::bytes(f.made.bytes), format::bytes(f.through.bytes),
                                    if f.user { "" } else { " (library)" });
                                view! { <option value=path selected=selected>{label}</option> }
                            }).collect_view().into_any(),
                            _ => ().into_any(),
                        })}
                    </select>
                </label>
                <FolderInput id="source-folder-input" />
            </div>
            {move || answer.with(|a| match a {
                None => view! { <p class="pending" aria-busy="true">"Counting bytes by line…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="view-error" role="alert" id="source-error">{e.clone()}</p> }.into_any(),
                Some(Ok(v)) => {
                    let words = format!("Lines of the {} allocations {} ({}), as the table chooses them{}.",
                        format::count(u64::from(v.chosen.count)), scope_words(&v.scope), format::bytes(v.chosen.bytes),
                        if v.problem.is_some() { "; the table's filter is refused" } else { "" });
                    view! { <p class="hint" id="source-scope">{words}</p> }.into_any()
                }
            })}
            <MissingText answer=answer />
            <p class="hint" id="source-text-from">{move || match shown.get() {
                None => "No Python code holds memory here.".to_string(),
                Some(path) => text.with(|t| t.words(&path)),
            }}</p>
            {listing_table("source-listing", &["Made here", "Passing through"], scroller, view! {
                        {move || {
                            let most = most_made.get();
                            let target = target();
                            rows.get().into_iter().map(|row| match row {
                                ListedRow::Function { name, total } => view! {
                                    <tr class="source-function" data-function=name.clone()
                                        data-through-bytes=total.bytes.to_string() data-through-count=total.count.to_string()>
                                        <td colspan="4">{function_total(&name, &total)}</td>
                                    </tr>
                                }.into_any(),
                                ListedRow::Code { number, code, margin: m } => {
                                    let (made, through) = m.as_ref().map_or((Tally::default(), Tally::default()), |l| (l.made, l.through));
                                    let level = heat(made.bytes, most);
                                    view! {
                                        <tr class=format!("source-line heat-{level}") class:passes={through.count > 0 && made.count == 0}
                                            class:target=target == Some(number)
                                            data-line=number.to_string()
                                            data-made-bytes=made.bytes.to_string() data-made-count=made.count.to_string()
                                            data-through-bytes=through.bytes.to_string() data-through-count=through.count.to_string()>
                                            <td class="num margin">{margin(&made)}</td>
                                            <td class="num margin">{margin(&through)}</td>
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

/// The user's files with memory whose text neither the snapshot nor the folder has.
#[component]
fn MissingText(answer: RwSignal<Option<Result<SourceView, String>>>) -> impl IntoView {
    let folder = SourceFolder::in_context();
    let missing = Memo::new(move |_| {
        let _ = folder.map(|f| f.opened.get());
        answer.with(|a| match a {
            Some(Ok(v)) => v
                .files
                .iter()
                .filter(|f| f.user && !f.carried)
                .filter(|f| folder.is_none_or(|folder| folder.find(&f.path).is_none()))
                .map(|f| f.path.clone())
                .collect::<Vec<_>>(),
            _ => Vec::new(),
        })
    });
    move || {
        let list = missing.get();
        (!list.is_empty()).then(|| {
            let shown: Vec<String> = list.iter().take(8).cloned().collect();
            let more = list.len().saturating_sub(shown.len());
            let words = format!(
                "Not found, neither in the snapshot nor in a folder opened: {}{}.",
                shown.join(", "),
                if more > 0 { format!(" and {more} more") } else { String::new() }
            );
            view! { <p class="hint source-missing" id="source-missing" data-count=list.len().to_string()>{words}</p> }
        })
    }
}
