//! The "Open snapshot…" button (backed by a hidden multi-file `<input type=file>`) and the
//! "Open example" button.
//!
//! Only starts loads; progress and results are shown elsewhere.

use leptos::html::Input;
use leptos::prelude::*;

use super::actions::Actions;

#[component]
pub fn Toolbar(actions: Actions) -> impl IntoView {
    let input: NodeRef<Input> = NodeRef::new();

    let on_change = move |_| {
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
                on:change=on_change
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
