//! Warnings about the snapshot (ring buffer wrapped, no stacks recorded, empty trace, an OOM
//! recorded…), each tagged with its stable kind in `data-warning`. On a compact screen they
//! fold to the first one on one line (the whole text on hover) with a button for the rest, so
//! they do not push the timeline below the fold.
//!
//! Shows what the core found, in the core's words; decides nothing.

use leptos::prelude::*;

use crate::analysis::Warning;
use crate::format;

#[component]
pub fn Warnings(warnings: Vec<Warning>) -> impl IntoView {
    let folded = RwSignal::new(true);
    let count = warnings.len();
    (count > 0).then(|| {
        view! {
            <div class="warnings-block" data-folded=move || folded.get().to_string()>
                <ul class="warnings" id="warnings" aria-label="Warnings">
                    {warnings
                        .into_iter()
                        .map(|w| {
                            let text = format::overview::warning(&w);
                            let whole = text.clone();
                            view! {
                                <li class="warning" data-warning=w.kind()>
                                    <span class="warning-text" title=whole>{text}</span>
                                </li>
                            }
                        })
                        .collect_view()}
                </ul>
                <button type="button" class="link-button warnings-toggle" id="warnings-toggle"
                    aria-controls="warnings" aria-expanded=move || (!folded.get()).to_string()
                    on:click=move |_| folded.update(|f| *f = !*f)>
                    {move || match (folded.get(), count) {
                        (false, _) => "Fold".to_string(),
                        (true, 1) => "More".to_string(),
                        (true, n) => format!("All {n} warnings"),
                    }}
                </button>
            </div>
        }
    })
}
