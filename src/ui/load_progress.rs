//! Progress of a load in progress: a progress bar, bytes read of the total and the percentage,
//! and a Cancel button that ends the file's worker at once. A file fetched from the page's site
//! (`?url=`) shows its download the same way first (bytes received, of the total when the
//! server says it), and Cancel stops the download.
//!
//! Shows only the load; the result replaces it when the worker answers.

use leptos::prelude::*;

use super::actions::use_actions;
use super::state::{AppState, FileId, Status};
use crate::format;

#[component]
pub fn LoadProgress(id: FileId, state: RwSignal<AppState>) -> impl IntoView {
    let actions = use_actions();

    let name = state.with_untracked(|s| s.file(id).map(|f| f.name.clone()).unwrap_or_default());
    // Bytes so far, the total (0: not known yet), and whether they are being downloaded.
    let progress = Memo::new(move |_| {
        state.with(|s| match s.file(id).map(|f| &f.status) {
            Some(Status::Downloading { received, total }) => (*received, total.unwrap_or(0), true),
            Some(Status::Loading { bytes_read, total }) => (*bytes_read, *total, false),
            Some(Status::Queued) => (0, s.file(id).map_or(0, |f| f.size), false),
            _ => (0, 0, false),
        })
    });
    let downloading = move || progress.get().2;
    let queued = Memo::new(move |_| {
        state.with(|s| matches!(s.file(id).map(|f| &f.status), Some(Status::Queued)))
    });
    let parallel = state.with_untracked(|s| s.parallel_loads());
    let percent = move || progress.with(|(read, total, _)| format::percent_of(*read, *total));

    view! {
        <section class="panel load-panel" id="load-progress"
            data-bytes-read=move || progress.get().0.to_string()
            data-total=move || progress.get().1.to_string()
            data-downloading=move || downloading().to_string()
        >
            <h1 class="panel-title">
                {move || if downloading() { "Downloading " } else { "Opening " }}
                <span class="file-title">{name}</span>
            </h1>
            // Without a total the bar has no value: the browser shows it as indeterminate.
            {move || {
                let (read, total, _) = progress.get();
                let value = (total > 0).then(|| read.to_string());
                view! {
                    <progress
                        class="load-bar"
                        max=total.max(1).to_string()
                        value=value
                        aria-label=if downloading() { "Bytes received" } else { "Bytes read" }
                    ></progress>
                }
            }}
            <div class="load-line">
                <span class="load-bytes">
                    {move || {
                        let (read, total, _) = progress.get();
                        if total > 0 {
                            format!("{} of {}", format::bytes(read), format::bytes(total))
                        } else {
                            format!("{} received", format::bytes(read))
                        }
                    }}
                </span>
                <span class="load-percent">
                    {move || (progress.get().1 > 0).then(|| format!("{}%", percent()))}
                </span>
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
