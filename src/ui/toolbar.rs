//! The "Open snapshot…" button (backed by a hidden multi-file `<input type=file>`), "Open
//! folder…" (a folder input: every file in it, e.g. a job's `iteration_N/rankR_…` snapshots)
//! and the "Open example" button.
//!
//! Only starts loads; progress and results are shown elsewhere.

use leptos::html::Input;
use leptos::prelude::*;

use super::actions::Actions;

#[component]
pub fn Toolbar(actions: Actions) -> impl IntoView {
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
        </div>
    }
}
