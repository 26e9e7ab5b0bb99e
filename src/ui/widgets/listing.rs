//! A file of code listed with the bytes of each line, as the source view and the comparison's
//! source listing both show it: what is known of the file's text (`FileText`: the snapshot's
//! own, the user's folder's, read locally, or none), the folder input, reading a file's text,
//! the listing's table and scrolling it to a line. Not the place for the margins' numbers (the
//! worker's) or the rows' layout (`analysis::listing`). File text is only ever text nodes.

use leptos::html::Div;
use leptos::prelude::*;

use super::source_folder::SourceFolder;
use crate::analysis::listing::{row_of, ListedRow};
use crate::format;
use crate::format::source::no_text;

/// A file's text and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceText {
    /// Said above the listing.
    pub from: String,
    pub text: String,
}

/// What is known of the text of a file of the snapshot (`path`, as its frames name it).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum FileText {
    /// Not looked for yet.
    #[default]
    Unknown,
    /// Neither the snapshot nor the folder opened has it.
    Absent {
        path: String,
    },
    /// Being read from the folder opened.
    Reading {
        path: String,
    },
    Read {
        path: String,
        text: SourceText,
    },
    Unreadable {
        path: String,
        why: String,
    },
}

impl FileText {
    /// Its text, when it is `path`'s.
    pub fn text_of(&self, path: &str) -> Option<&SourceText> {
        match self {
            FileText::Read { path: p, text } if p == path => Some(text),
            _ => None,
        }
    }

    /// Whether what is known is `path`'s and final (read, absent or unreadable): the
    /// listing will not change under the user any more.
    pub fn settled_for(&self, path: &str) -> bool {
        match self {
            FileText::Absent { path: p }
            | FileText::Read { path: p, .. }
            | FileText::Unreadable { path: p, .. } => p == path,
            FileText::Unknown | FileText::Reading { .. } => false,
        }
    }

    /// Whether `path`'s text is here or on its way.
    pub fn has_or_reads(&self, path: &str) -> bool {
        match self {
            FileText::Read { path: p, .. } | FileText::Reading { path: p } => p == path,
            _ => false,
        }
    }

    /// Said above the listing of `path`.
    pub fn words(&self, path: &str) -> String {
        match self {
            FileText::Read { path: p, text } if p == path => format!("Text: {}", text.from),
            FileText::Reading { path: p } if p == path => format!("Reading {p}…"),
            FileText::Unreadable { path: p, why } if p == path => why.clone(),
            _ => no_text(Some(path)),
        }
    }

    /// For the `data-text` attribute: `yes`, `reading`, `unreadable` or `no`.
    pub fn key(&self, path: &str) -> &'static str {
        match self {
            FileText::Read { path: p, .. } if p == path => "yes",
            FileText::Reading { path: p } if p == path => "reading",
            FileText::Unreadable { path: p, .. } if p == path => "unreadable",
            _ => "no",
        }
    }
}

/// The page's folder input, and what it holds.
#[component]
pub fn FolderInput(id: &'static str) -> impl IntoView {
    let folder = SourceFolder::in_context();
    let input = NodeRef::<leptos::html::Input>::new();
    // A folder, not files: the attribute has no name in Leptos' view macro.
    input.on_load(|el| {
        let _ = el.set_attribute("webkitdirectory", "");
    });
    let status = move || {
        folder.and_then(|f| f.opened.get()).map(|(name, count)| {
            let name = if name.is_empty() {
                "the files opened".to_string()
            } else {
                name
            };
            let files = if count == 1 { "file" } else { "files" };
            format!("{name}: {} Python {files}", format::count(count as u64))
        })
    };
    view! {
        <span class="source-folder">
            <input type="file" class="visually-hidden" id=id node_ref=input multiple=true
                on:change=move |_| {
                    if let (Some(folder), Some(files)) = (folder, input.get_untracked().and_then(|i| i.files())) {
                        folder.open(&files);
                    }
                } />
            <button type="button" class="button quiet" on:click=move |_| {
                if let Some(el) = input.get_untracked() {
                    el.click();
                }
            } title="Your code, read here and never uploaded: each file of the run is found by the longest shared end of its path">
                "Open a folder of your code…"
            </button>
            <span class="hint source-folder-status" data-count=move || folder.and_then(|f| f.opened.get()).map(|(_, n)| n.to_string()).unwrap_or_default()>
                {status}
            </span>
        </span>
    }
}

/// The text of `path` (a snapshot's), into `into`: `carried` (its path there and text)
/// when the snapshot has it, else the folder's file, read now. A read that ends after
/// another file was asked is dropped.
pub fn fetch_text(path: String, carried: Option<(String, String)>, into: RwSignal<FileText>) {
    if let Some((from, text)) = carried {
        let from = format!("{from} (in the snapshot)");
        into.set(FileText::Read {
            path,
            text: SourceText { from, text },
        });
        return;
    }
    let folder = SourceFolder::in_context();
    let Some((folder, found)) = folder.and_then(|f| f.find(&path).map(|p| (f, p))) else {
        into.set(FileText::Absent { path });
        return;
    };
    into.set(FileText::Reading { path: path.clone() });
    leptos::task::spawn_local(async move {
        let read = folder.text(&found).await;
        let still = into
            .try_with_untracked(|t| matches!(t, FileText::Reading { path: p } if *p == path));
        if still != Some(true) {
            return;
        }
        into.set(match read {
            Ok(text) => FileText::Read {
                path,
                text: SourceText {
                    from: format!("{found} (in the folder opened)"),
                    text,
                },
            },
            Err(why) => FileText::Unreadable { path, why },
        });
    });
}

/// Scrolls `scroller` to line `line` once the listing of `path` is final (its text read
/// or known absent) and holds the line: then, and only then, so a listing laid out again
/// under the user (the table's scope changed) does not move.
pub fn scroll_when_listed<M: 'static, F: 'static>(
    pending: RwSignal<Option<i64>>,
    path: impl Fn() -> Option<String> + 'static,
    text: RwSignal<FileText>,
    rows: Memo<Vec<ListedRow<M, F>>>,
    scroller: NodeRef<Div>,
) where
    ListedRow<M, F>: Send + Sync + PartialEq,
{
    Effect::new(move |_| {
        let Some(line) = pending.get() else {
            return;
        };
        let Some(path) = path() else {
            return;
        };
        let settled = text.with(|t| t.settled_for(&path));
        if settled && rows.with(|r| row_of(r, line).is_some()) {
            pending.set(None);
            scroll_to_line(scroller, line);
        }
    });
}

/// Scrolls `scroller` so that the row of line `line` is in its middle, and the view onto
/// the page.
pub fn scroll_to_line(scroller: NodeRef<Div>, line: i64) {
    request_animation_frame(move || {
        let Some(el) = scroller.get_untracked() else {
            return;
        };
        let selector = format!("tr[data-line=\"{line}\"]");
        if let Ok(Some(row)) = el.query_selector(&selector) {
            if let Ok(row) = wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlElement>(row) {
                let top = row.offset_top() - el.client_height() / 2;
                el.set_scroll_top(top.max(0));
                el.scroll_into_view_with_bool(false);
            }
        }
    });
}

/// The source view of one device of a file.
/// A file's listing in its scroll box: the margins' headings, then the line's number and
/// its code; `body` is its rows.
pub fn listing_table(
    id: &'static str,
    margins: &'static [&'static str],
    scroller: NodeRef<Div>,
    body: impl IntoView,
) -> impl IntoView {
    view! {
        <div class="source-scroll" node_ref=scroller>
            <table class="source-listing" id=id>
                <thead><tr>
                    {margins.iter().map(|m| view! { <th scope="col" class="num">{*m}</th> }).collect_view()}
                    <th scope="col" class="num">"Line"</th>
                    <th scope="col">"Code"</th>
                </tr></thead>
                <tbody>{body}</tbody>
            </table>
        </div>
    }
}
