//! A file of which only the digest is open (`memsight digest`): its header (the snapshot's
//! name and size, who wrote the digest), the device picker, and the device's report from the
//! digest — roles, components, call sites and modules at the peak — with the report to
//! download as `memsight report` writes it. The views of the trace need the snapshot, and
//! the page says so; the files table and comparisons use the digest's numbers.
//!
//! Asks nothing of a worker: the digest is held on the page (`workers.rs`). Not the place for
//! words or numbers (`format::report::DigestReport`).

mod document;

use leptos::prelude::*;

use super::actions::use_actions;
use super::device_picker::{DevicePicker, FileDevices};
use super::redact_paths::RedactPaths;
use super::state::{AppState, FileId, Showing};
use super::widgets::download::download_text;
use crate::compare::digest_file::redact_digest;
use crate::format;
use crate::format::report::DigestReport;
use document::DocumentView;

#[component]
pub fn DigestView(id: FileId, state: RwSignal<AppState>) -> impl IntoView {
    let actions = use_actions();

    let Some(digested) = actions.digest(id) else {
        return view! { <p class="hint">"This digest is no longer open."</p> }.into_any();
    };
    let redact = RedactPaths::in_context();
    let file = digested.file();
    let file_devices = FileDevices::of(state, id);
    let device = file_devices.device;
    let several_files = Memo::new(move |_| state.with(|s| s.files().len() > 1));

    let meta = format!(
        "Digest of a {} snapshot · written by {}{}",
        format::bytes(file.snapshot_bytes),
        file.writer,
        if file.redacted {
            " · paths redacted"
        } else {
            ""
        }
    );
    let name = file.name.clone();
    // Held for the view's closures (a digest is the page's, not shared across threads).
    let held = StoredValue::new_local(digested.clone());
    let report = move || {
        let device = device.get()?;
        held.try_with_value(|digested| {
            let digest = digested.file().device(device)?;
            Some(
                DigestReport {
                    file_name: &digested.file().name,
                    digest,
                }
                .document(),
            )
        })
        .flatten()
    };
    let download = {
        move |_| {
            let Some(device) = device.get_untracked() else {
                return;
            };
            let Some(file) = held.try_with_value(|d| d.file().clone()) else {
                return;
            };
            let file = if RedactPaths::on(redact) {
                redact_digest(file)
            } else {
                file
            };
            let Some(digest) = file.device(device) else {
                return;
            };
            let markdown = DigestReport {
                file_name: &file.name,
                digest,
            }
            .document()
            .markdown();
            // Named as the snapshot's own report is: its last part without the extension.
            let last = file.name.rsplit(['/', '\\']).next().unwrap_or("digest");
            let stem = last.rsplit_once('.').map_or(last, |(s, _)| s);
            download_text(
                &format!(
                    "{stem}-{}-report.md",
                    format::device_in_file_name(digest.device_kind, device)
                ),
                &markdown,
                "text/markdown",
            );
        }
    };
    view! {
        <section class="panel snapshot digest-file" id="digest-file" data-file-id=id.to_string()>
            <header class="snapshot-header">
                <div>
                    <h1 class="panel-title file-title">{name}</h1>
                    <p class="snapshot-meta">{meta}</p>
                </div>
                <DevicePicker of=file_devices on_pick=move |d| actions.select_device(id, d) />
            </header>
            <p class="hint digest-note" id="digest-note">
                "Only this snapshot's digest is open: the files side by side and comparisons use its numbers. "
                "The timeline, the table of allocations and the breakdown need the snapshot itself."
            </p>
            <div class="digest-actions">
                <button type="button" id="digest-download-report" on:click=download>
                    "Download report"
                </button>
                <Show when=move || several_files.get()>
                    <button type="button" id="digest-files" on:click=move |_| actions.show(Showing::Files)>
                        "Files side by side"
                    </button>
                </Show>
            </div>
            {move || report().map(|document| view! { <DocumentView document=document /> })}
        </section>
    }
    .into_any()
}
