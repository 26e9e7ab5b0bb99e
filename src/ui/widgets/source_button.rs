//! The "code" button beside a call site, a module, a file or a stack's frame: opens that place
//! in the source view of the file whose views are being built. Shared by the views that name
//! places in the user's code; not the place for the source view itself.

use leptos::prelude::*;

use crate::analysis::lines::SourcePlace;
use crate::ui::file_context::FileContext;

/// Opens `place` in the source view of the file whose views are being built (none outside
/// a snapshot's views).
#[component]
pub fn SourceButton(place: SourcePlace) -> impl IntoView {
    let cx = use_context::<FileContext>();
    let title = match place.line {
        Some(line) => format!(
            "Show {}, line {line}, with the bytes of each line",
            place.path
        ),
        None => format!("Show {} with the bytes of each line", place.path),
    };
    cx.map(|cx| {
        let path = place.path.clone();
        let line = place.line.map(|l| l.to_string()).unwrap_or_default();
        view! {
            <button type="button" class="source-open" title=title data-path=path data-line=line
                on:click=move |event| {
                    // Not also a click on the group or row it sits in.
                    event.stop_propagation();
                    cx.source.set(Some(place.clone()));
                }>"code"</button>
        }
    })
}
