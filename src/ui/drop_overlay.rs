//! Drag-and-drop anywhere on the page: listens on the window, shows an overlay while files are
//! dragged over the page, and opens every dropped file.
//!
//! Ignores drags that carry no files (text, links).

use leptos::ev;
use leptos::prelude::*;
use web_sys::DragEvent;

use super::actions::Actions;

fn carries_files(event: &DragEvent) -> bool {
    event
        .data_transfer()
        .map(|dt| {
            dt.types()
                .iter()
                .any(|t| t.as_string().as_deref() == Some("Files"))
        })
        .unwrap_or(false)
}

#[component]
pub fn DropOverlay(actions: Actions) -> impl IntoView {
    let dragging = RwSignal::new(false);

    let over = window_event_listener(ev::dragover, move |event: DragEvent| {
        if carries_files(&event) {
            event.prevent_default();
            if let Some(dt) = event.data_transfer() {
                dt.set_drop_effect("copy");
            }
            if !dragging.get_untracked() {
                dragging.set(true);
            }
        }
    });
    let leave = window_event_listener(ev::dragleave, move |event: DragEvent| {
        // Leaving the window, not just moving between elements.
        if event.related_target().is_none() {
            dragging.set(false);
        }
    });
    let drop = window_event_listener(ev::drop, move |event: DragEvent| {
        dragging.set(false);
        if let Some(files) = event.data_transfer().and_then(|dt| dt.files()) {
            if files.length() > 0 {
                event.prevent_default();
                actions.open_files(&files);
            }
        }
    });
    on_cleanup(move || {
        over.remove();
        leave.remove();
        drop.remove();
    });

    view! {
        <div class="drop-overlay" class:visible=dragging aria-hidden="true">
            <div class="drop-target">"Drop snapshot files to open them"</div>
        </div>
    }
}
