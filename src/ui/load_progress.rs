//! Progress of a load in progress: a progress bar, bytes read of the total and the percentage,
//! and a Cancel button that ends the file's worker at once.
//!
//! Shows only the load; the result replaces it when the worker answers.

use leptos::prelude::*;

use super::actions::Actions;
use super::state::{AppState, FileId, Status};
use crate::format;

#[component]
pub fn LoadProgress(id: FileId, state: RwSignal<AppState>, actions: Actions) -> impl IntoView {
    let name = state.with_untracked(|s| s.file(id).map(|f| f.name.clone()).unwrap_or_default());
    let progress = Memo::new(move |_| {
        state.with(|s| match s.file(id).map(|f| &f.status) {
            Some(Status::Loading { bytes_read, total }) => (*bytes_read, *total),
            Some(Status::Queued) => (0, s.file(id).map_or(0, |f| f.size)),
            _ => (0, 0),
        })
    });
    let queued = Memo::new(move |_| {
        state.with(|s| matches!(s.file(id).map(|f| &f.status), Some(Status::Queued)))
    });
    let parallel = state.with_untracked(|s| s.parallel_loads());
    let percent = move || progress.with(|(read, total)| format::percent_of(*read, *total));

    view! {
        <section class="panel load-panel" id="load-progress"
            data-bytes-read=move || progress.get().0.to_string()
            data-total=move || progress.get().1.to_string()
        >
            <h1 class="panel-title">"Opening " <span class="file-title">{name}</span></h1>
            <progress
                class="load-bar"
                max=move || progress.get().1.max(1).to_string()
                value=move || progress.get().0.to_string()
                aria-label="Bytes read"
            ></progress>
            <div class="load-line">
                <span class="load-bytes">
                    {move || {
                        let (read, total) = progress.get();
                        format!("{} of {}", format::bytes(read), format::bytes(total))
                    }}
                </span>
                <span class="load-percent">{move || format!("{}%", percent())}</span>
                <button
                    id="cancel-load"
                    class="button"
                    type="button"
                    on:click=move |_| actions.close(id)
                >
                    "Cancel"
                </button>
            </div>
            {move || queued.get().then(|| view! {
                <p class="hint" id="load-queued">{format!(
                    "Waiting for its turn: {parallel} files load at once (this machine's cores), within {} of files at a time.",
                    format::bytes(super::state::LOAD_BUDGET_BYTES)
                )}</p>
            })}
            <p class="hint">"Decoding runs in a background worker: the page stays usable, and other files can be opened meanwhile."</p>
        </section>
    }
}
