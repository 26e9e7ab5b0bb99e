//! The list of open files: name, size and status of each, which one is shown, and a close
//! button (which also cancels a load in progress).
//!
//! Reads the state; selecting and closing go through `Actions`.

use leptos::prelude::*;

use super::actions::use_actions;
use super::state::{AppState, FileId, Showing};
use crate::format;

#[component]
pub fn FileList(state: RwSignal<AppState>) -> impl IntoView {
    let actions = use_actions();

    let ids =
        Memo::new(move |_| state.with(|s| s.files().iter().map(|f| f.id).collect::<Vec<_>>()));
    // Every title at once, and each fitted to the list: each depends on every other file's
    // name.
    let titles = Memo::new(move |_| {
        state.with(|s| {
            let short = s.short_titles();
            let fitted = format::names::fit_all(&short, &|_| FILE_NAME_CHARS);
            s.files()
                .iter()
                .map(|f| f.id)
                .zip(short.into_iter().zip(fitted))
                .collect::<std::collections::HashMap<FileId, (String, String)>>()
        })
    });

    let ready =
        Memo::new(move |_| state.with(|s| s.files().iter().filter(|f| f.is_ready()).count()));
    let showing = Memo::new(move |_| state.with(|s| s.showing()));
    let devices = Memo::new(move |_| {
        state.with(|s| {
            s.files()
                .iter()
                .filter(|f| f.is_ready())
                .map(|f| f.devices().len())
                .sum::<usize>()
        })
    });

    view! {
        <h2 class="sidebar-title">"Open files"</h2>
        <Show when=move || { ready.get() >= 2 || devices.get() >= 2 }>
            <nav class="side-by-side" aria-label="Files side by side">
                <button type="button" class="button side-button" id="show-files"
                    aria-pressed=move || (showing.get() == Showing::Files).to_string()
                    on:click=move |_| actions.show(Showing::Files)
                >"Files side by side"</button>
                <button type="button" class="button side-button" id="show-compare"
                    aria-pressed=move || (showing.get() == Showing::Compare).to_string()
                    on:click=move |_| actions.show(Showing::Compare)
                >"Compare two"</button>
            </nav>
        </Show>
        <Show
            when=move || !ids.with(Vec::is_empty)
            fallback=|| view! { <p class="empty-list">"No file open yet."</p> }
        >
            <ul class="file-list" id="file-list">
                <For each=move || ids.get() key=|id| *id let:id>
                    <FileItem id=id state=state titles=titles />
                </For>
            </ul>
        </Show>
    }
}

/// Characters of a file's short title the sidebar shows (it wraps rather than being cut again).
const FILE_NAME_CHARS: usize = 34;

#[component]
fn FileItem(
    id: FileId,
    state: RwSignal<AppState>,
    /// Each file's title beside the others, whole and fitted to the list.
    titles: Memo<std::collections::HashMap<FileId, (String, String)>>,
) -> impl IntoView {
    let actions = use_actions();

    let file = move |f: fn(&super::state::OpenFile) -> String| {
        state.with(|s| s.file(id).map(f).unwrap_or_default())
    };
    let name = Memo::new(move |_| file(|f| f.name.clone()));
    let size = Memo::new(move |_| file(|f| format::bytes(f.size)));
    let status = Memo::new(move |_| file(|f| f.status_text()));
    let kind = Memo::new(move |_| file(|f| f.status_kind().to_string()));
    let selected = Memo::new(move |_| {
        state.with(|s| s.selected_id() == Some(id) && s.showing() == Showing::File)
    });
    // Beside other files, what tells this one apart (or the user's label); whole on hover.
    let title = Memo::new(move |_| titles.with(|t| t.get(&id).cloned().unwrap_or_default()));
    let short = move || title.with(|(short, _)| short.clone());
    let renaming = RwSignal::new(false);
    let item = NodeRef::<leptos::html::Li>::new();
    // In the strip of a narrow screen, the file shown is scrolled into the strip's view.
    Effect::new(move |_| {
        if selected.get() {
            if let Some(item) = item.get() {
                reveal_in_strip(&item);
            }
        }
    });
    let rename = move |text: String| {
        renaming.set(false);
        actions.set_label(id, text.trim());
    };

    view! {
        <li
            node_ref=item
            class="file-item"
            class:selected=selected
            data-file-id=id.to_string()
            data-status=kind
        >
            <button
                class="file-select"
                type="button"
                aria-current=move || if selected.get() { "true" } else { "false" }
                title=name
                on:click=move |_| actions.select(id)
            >
                <span class="file-name" data-name=name data-short=short>{move || title.with(|(_, fitted)| fitted.clone())}</span>
                <span class="file-meta">
                    <span class="file-size">{size}</span>
                    <span class="file-status">{status}</span>
                </span>
            </button>
            <Show when=move || renaming.get()>
                <input type="text" class="file-rename-input" aria-label=move || format!("Name for {}", name.get())
                    prop:value=move || state.with_untracked(|s| s.file(id).and_then(|f| f.label.clone())).unwrap_or_default()
                    placeholder=short
                    on:change=move |event| rename(event_target_value(&event))
                    on:keydown=move |event: web_sys::KeyboardEvent| {
                        if event.key() == "Escape" {
                            renaming.set(false);
                        }
                    }
                    on:blur=move |_| renaming.set(false)
                    node_ref={
                        // Focused as it appears, so the user types at once.
                        let input = NodeRef::<leptos::html::Input>::new();
                        input.on_load(|i| { let _ = i.focus(); i.select(); });
                        input
                    } />
            </Show>
            <button
                class="file-rename"
                type="button"
                title="Rename (the name shown beside the other files)"
                aria-label=move || format!("Rename {}", name.get())
                on:click=move |_| renaming.update(|r| *r = !*r)
            >
                "✎"
            </button>
            <button
                class="file-close"
                type="button"
                title="Close"
                aria-label=move || format!("Close {}", name.get())
                on:click=move |_| actions.close(id)
            >
                "×"
            </button>
        </li>
    }
}

/// Scrolls the strip the file list becomes on a narrow screen (the sidebar scrolling sideways)
/// so `item` shows whole in it; nothing else moves (unlike `scrollIntoView`, which would also
/// scroll the page back up to the strip).
fn reveal_in_strip(item: &web_sys::HtmlElement) {
    let Some(strip) = item.closest(".sidebar").ok().flatten() else {
        return;
    };
    if strip.scroll_width() <= strip.client_width() {
        return;
    }
    let (item, seen) = (
        item.get_bounding_client_rect(),
        strip.get_bounding_client_rect(),
    );
    const MARGIN: f64 = 12.0;
    let by = if item.left() < seen.left() {
        item.left() - seen.left() - MARGIN
    } else if item.right() > seen.right() {
        (item.right() - seen.right() + MARGIN).min(item.left() - seen.left())
    } else {
        return;
    };
    strip.set_scroll_left(strip.scroll_left() + by.round() as i32);
}
