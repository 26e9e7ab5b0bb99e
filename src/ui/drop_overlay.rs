//! Drag-and-drop anywhere on the page: listens on the window, shows an overlay while files are
//! dragged over the page, and opens every dropped file — and every file inside a dropped
//! folder, named by its path in it (`run/iteration_3/rank5_…`), so ranks and iterations read
//! from it.
//!
//! Ignores drags that carry no files (text, links).

use js_sys::{Array, Function, Promise, Reflect};
use leptos::ev;
use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, DragEvent};

use super::actions::use_actions;

/// Files taken from one dropped folder at most (a folder of a whole job's outputs may hold
/// far more than snapshots).
const MAX_FOLDER_FILES: usize = 4096;

/// The file-system entries of a drop (`webkitGetAsEntry`), read while the event lasts: a
/// drop's items are unreadable once its handler returns.
fn dropped_entries(event: &DragEvent) -> Vec<JsValue> {
    let Some(items) = event.data_transfer().map(|dt| dt.items()) else {
        return Vec::new();
    };
    (0..items.length())
        .filter_map(|i| items.get(i))
        .filter_map(|item| {
            let get = Reflect::get(&item, &"webkitGetAsEntry".into()).ok()?;
            let entry = get.dyn_into::<Function>().ok()?.call0(&item).ok()?;
            (!entry.is_null() && !entry.is_undefined()).then_some(entry)
        })
        .collect()
}

fn flag(entry: &JsValue, name: &str) -> bool {
    Reflect::get(entry, &name.into()).is_ok_and(|v| v.is_truthy())
}

/// Calls `target.method(…args, resolve, reject)` of a callback-style API as a promise.
async fn callback(target: &JsValue, method: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
    let function: Function = Reflect::get(target, &method.into())?.dyn_into()?;
    let promise = Promise::new(&mut |resolve, reject| {
        let all = Array::new();
        for a in args {
            all.push(a);
        }
        all.push(&resolve);
        all.push(&reject);
        let _ = function.apply(target, &all);
    });
    JsFuture::from(promise).await
}

/// Every file under `entries`, with its path (folders walked breadth first, at most
/// [`MAX_FOLDER_FILES`]).
async fn walk(entries: Vec<JsValue>) -> Vec<(String, Blob)> {
    let mut files = Vec::new();
    let mut queue: std::collections::VecDeque<JsValue> = entries.into();
    while let Some(entry) = queue.pop_front() {
        if files.len() >= MAX_FOLDER_FILES {
            break;
        }
        if flag(&entry, "isFile") {
            let path = Reflect::get(&entry, &"fullPath".into())
                .ok()
                .and_then(|p| p.as_string())
                .unwrap_or_default();
            if let Ok(file) = callback(&entry, "file", &[]).await {
                let name = path.trim_start_matches('/').to_string();
                files.push((name, file.unchecked_into()));
            }
        } else if flag(&entry, "isDirectory") {
            let Ok(reader) = Reflect::get(&entry, &"createReader".into())
                .and_then(|f| f.dyn_into::<Function>())
                .and_then(|f| f.call0(&entry))
            else {
                continue;
            };
            // A reader hands out a folder's entries in batches until an empty one.
            while let Ok(batch) = callback(&reader, "readEntries", &[]).await {
                let batch: Array = batch.unchecked_into();
                if batch.length() == 0 {
                    break;
                }
                queue.extend(batch.iter());
            }
        }
    }
    files
}

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
pub fn DropOverlay() -> impl IntoView {
    let actions = use_actions();

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
        let entries = dropped_entries(&event);
        if entries.iter().any(|e| flag(e, "isDirectory")) {
            event.prevent_default();
            wasm_bindgen_futures::spawn_local(async move {
                actions.open_named(walk(entries).await);
            });
            return;
        }
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
