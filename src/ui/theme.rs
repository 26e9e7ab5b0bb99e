//! The page's light or dark theme, as the system sets it: one signal that follows the
//! system's setting while a file is open, which every canvas (timeline, charts) redraws on.
//! Styles themselves live in CSS (`static/`), which follows the system on its own.

use leptos::prelude::*;
use wasm_bindgen::JsCast;

const DARK_QUERY: &str = "(prefers-color-scheme: dark)";

/// Whether the system asks for a dark theme now.
pub fn prefers_dark() -> bool {
    web_sys::window()
        .and_then(|w| w.match_media(DARK_QUERY).ok().flatten())
        .is_some_and(|m| m.matches())
}

/// A signal that is true while the system asks for a dark theme; it stops listening when the
/// owner that made it is cleaned up.
pub fn follow_system() -> RwSignal<bool> {
    let dark = RwSignal::new(prefers_dark());
    let Some(query) = web_sys::window().and_then(|w| w.match_media(DARK_QUERY).ok().flatten())
    else {
        return dark;
    };
    let on_change = wasm_bindgen::closure::Closure::<dyn FnMut()>::new(move || {
        dark.try_set(prefers_dark());
    });
    let _ = query.add_event_listener_with_callback("change", on_change.as_ref().unchecked_ref());
    let handler = StoredValue::new_local(Some(on_change));
    on_cleanup(move || {
        if let Some(on_change) = handler.try_update_value(Option::take).flatten() {
            let _ = query
                .remove_event_listener_with_callback("change", on_change.as_ref().unchecked_ref());
        }
    });
    dark
}
