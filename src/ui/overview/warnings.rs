//! Warnings about the snapshot (ring buffer wrapped, no stacks recorded, empty trace, an OOM
//! recorded…), each tagged with its stable kind in `data-warning`.
//!
//! Shows what the core found, in the core's words; decides nothing.

use leptos::prelude::*;

use crate::analysis::Warning;
use crate::format;

#[component]
pub fn Warnings(warnings: Vec<Warning>) -> impl IntoView {
    (!warnings.is_empty()).then(|| {
        view! {
            <ul class="warnings" id="warnings" aria-label="Warnings">
                {warnings
                    .into_iter()
                    .map(|w| view! {
                        <li class="warning" data-warning=w.kind()>
                            <span class="warning-text">{format::overview::warning(&w)}</span>
                        </li>
                    })
                    .collect_view()}
            </ul>
        }
    })
}
