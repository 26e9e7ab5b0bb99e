//! The "Open snapshot…" button (backed by a hidden multi-file `<input type=file>`), "Open
//! folder…" (a folder input: every file in it, e.g. a job's `iteration_N/rankR_…` snapshots),
//! the "Open example" button, "Copy link" (the address of the view shown, which restores
//! it when the same file is opened with it), and "Redact paths" for downloads.
//!
//! Only starts loads; progress and results are shown elsewhere.

use leptos::html::Input;
use leptos::prelude::*;

use super::actions::use_actions;
use super::deep_link::DeepLink;
use super::redact_paths::RedactToggle;
use super::state::AppState;

#[component]
pub fn Toolbar( state: RwSignal<AppState>, link: DeepLink) -> impl IntoView {
    let actions = use_actions();

    let input: NodeRef<Input> = NodeRef::new();
    let folder: NodeRef<Input> = NodeRef::new();

    let open_from = move |input: NodeRef<Input>| {
        if let Some(input) = input.get() {
            if let Some(files) = input.files() {
                actions.open_files(&files);
            }
            // Let the same file be chosen again later.
            input.set_value("");
        }
    };

    view! {
        <div class="toolbar">
            <input
                node_ref=input
                id="file-input"
                class="visually-hidden"
                type="file"
                multiple
                accept=".pickle,.pkl,.gz,.json,application/octet-stream"
                tabindex="-1"
                aria-hidden="true"
                on:change=move |_| open_from(input)
            />
            <input
                node_ref=folder
                id="folder-input"
                class="visually-hidden"
                type="file"
                multiple
                prop:webkitdirectory=true
                tabindex="-1"
                aria-hidden="true"
                on:change=move |_| open_from(folder)
            />
            <button
                id="open-file"
                class="button primary"
                type="button"
                on:click=move |_| {
                    if let Some(input) = input.get() {
                        input.click();
                    }
                }
            >
                "Open snapshot…"
            </button>
            <button
                id="open-folder"
                class="button"
                type="button"
                title="Every snapshot in a folder, e.g. one per rank and iteration"
                on:click=move |_| {
                    if let Some(input) = folder.get() {
                        input.click();
                    }
                }
            >
                "Open folder…"
            </button>
            <button
                id="open-example"
                class="button"
                type="button"
                on:click=move |_| actions.open_example()
            >
                "Open example"
            </button>
            <CopyLink state=state link=link />
            <RedactToggle />
        </div>
    }
}

/// "Copy link": the page's address with the view shown in its fragment, to the clipboard. The
/// link holds no data from the file: whoever opens the same file with it sees the same view.
#[component]
fn CopyLink(state: RwSignal<AppState>, link: DeepLink) -> impl IntoView {
    let has_view = Memo::new(move |_| state.with(|s| s.selected().is_some_and(|f| f.is_ready())));
    // What the last click did: copied, or the link to copy by hand when the clipboard refused.
    let outcome = RwSignal::new(None::<Result<(), String>>);
    let copy = move |_| {
        let Some(href) = link.href_now() else { return };
        let Some(clipboard) = web_sys::window().map(|w| w.navigator().clipboard()) else {
            outcome.set(Some(Err(href)));
            return;
        };
        let written = clipboard.write_text(&href);
        leptos::task::spawn_local(async move {
            let copied = wasm_bindgen_futures::JsFuture::from(written).await;
            outcome.set(Some(copied.map(|_| ()).map_err(|_| href)));
            let clear = move || outcome.set(None);
            set_timeout(clear, std::time::Duration::from_secs(4));
        });
    };
    // What the click did shows under the button, over the page: the top bar does not move.
    view! {
        <span class="copy-link">
        <button
            id="copy-link"
            class="button"
            type="button"
            title="Copy the address of this view: opening the same file with it shows the same view. It holds no data from the file."
            disabled=move || !has_view.get()
            data-fragment=move || link.fragment.get()
            on:click=copy
        >
            "Copy link"
        </button>
        {move || outcome.get().map(|o| match o {
            Ok(()) => view! { <span class="copy-status hint" id="copy-link-status" role="status">"Link copied"</span> }.into_any(),
            Err(href) => view! {
                <input class="copy-by-hand" id="copy-link-text" type="text" readonly value=href
                    aria-label="The link to this view: copy it by hand"
                    on:focus=move |e| {
                        if let Some(input) = e.target().and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlInputElement>(t).ok()) {
                            input.select();
                        }
                    } />
            }.into_any(),
        })}
        </span>
    }
}
