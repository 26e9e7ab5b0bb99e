//! The keyboard and mouse reference of the timeline, opened with `?` or its button and closed
//! with `?`, Escape or its close button.

use leptos::prelude::*;

use super::Timeline;

/// Keys and gestures, as (what to press, what it does).
const ENTRIES: [(&str, &str); 18] = [
    ("Wheel, pinch", "zoom the time axis around the pointer"),
    ("W / S, + / −", "zoom the time axis in / out"),
    ("A / D, ← / →", "move along the time axis"),
    (
        "Drag",
        "move along the time axis (and the bytes, when zoomed)",
    ),
    ("Shift + wheel", "zoom the bytes around the pointer"),
    (
        "Drag along the byte axis",
        "zoom the bytes (up: in, down: out)",
    ),
    ("Shift + W / S", "zoom the bytes in / out"),
    ("↑ / ↓", "move along zoomed bytes"),
    ("Shift + drag", "zoom into a box"),
    ("F", "fit the bytes to the view"),
    ("0", "show the whole run"),
    (
        "Minimap",
        "click to move there, drag the window or its edges",
    ),
    (
        "Hover",
        "what is under the pointer; an annotation scope's whole name along the top",
    ),
    ("Click", "pin an allocation and show its stack (the other views stay at their moment)"),
    (
        "Shift + click",
        "show this moment in the charts, the table and the allocator state (so does a click where there is no allocation)",
    ),
    ("Esc", "unpin"),
    (
        "Ctrl / ⌘ + F",
        "search an address (0x…) or frame text; Enter, Shift+Enter to walk the matches",
    ),
    ("?", "open or close this reference"),
];

#[component]
pub fn Help(tl: Timeline) -> impl IntoView {
    let close = window_event_listener(leptos::ev::keydown, move |event| {
        if event.key() == "Escape" && tl.show_help.get_untracked() {
            tl.show_help.set(false);
        }
    });
    on_cleanup(move || close.remove());
    move || {
        tl.show_help.get().then(|| {
            view! {
                <div class="timeline-help" id="timeline-help" role="dialog" aria-label="Keyboard and mouse">
                    <header>
                        <h3>"Keyboard and mouse"</h3>
                        <button type="button" class="button quiet" id="timeline-help-close" on:click=move |_| tl.show_help.set(false)>"Close"</button>
                    </header>
                    <dl>
                        {ENTRIES.iter().map(|&(keys, what)| view! { <dt><kbd>{keys}</kbd></dt><dd>{what}</dd> }).collect_view()}
                    </dl>
                </div>
            }
        })
    }
}
