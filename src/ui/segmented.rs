//! One button of a segmented group (`.segmented-group`): pressed while a signal holds its
//! value, setting it when clicked. Every group of the page (timeline kind, axis, colouring,
//! the breakdown's moment) is made of these.

use leptos::prelude::*;

/// A button pressed while `signal` holds `value`; a click sets it (only when it changes, so
/// nothing depending on it runs again for nothing). `why_not` says why the button is disabled
/// (shown as its tooltip), or `None` while it is enabled.
pub fn segmented_button<T>(
    signal: RwSignal<T>,
    value: T,
    label: &'static str,
    id: &'static str,
    why_not: impl Fn() -> Option<&'static str> + Copy + Send + Sync + 'static,
) -> impl IntoView
where
    T: Copy + PartialEq + Send + Sync + 'static,
{
    view! {
        <button
            type="button"
            id=id
            class="segmented"
            aria-pressed=move || (signal.get() == value).to_string()
            disabled=move || why_not().is_some()
            title=move || why_not().unwrap_or_default()
            on:click=move |_| {
                if signal.get_untracked() != value {
                    signal.set(value);
                }
            }
        >
            {label}
        </button>
    }
}
