//! Warnings about the snapshot (ring buffer wrapped, no stacks recorded, empty trace, an OOM
//! recorded…), each tagged with its stable kind in `data-warning`.
//!
//! Shows what the analysis found; decides nothing.

use leptos::prelude::*;

use crate::analysis::overview::WarningView;

#[component]
pub fn Warnings(warnings: Vec<WarningView>) -> impl IntoView {
    (!warnings.is_empty()).then(|| {
        view! {
            <ul class="warnings" id="warnings" aria-label="Warnings">
                {warnings
                    .into_iter()
                    .map(|w| view! {
                        <li class="warning" data-warning=w.kind.clone()>
                            <span class="warning-text">{w.message}</span>
                        </li>
                    })
                    .collect_view()}
            </ul>
        }
    })
}
