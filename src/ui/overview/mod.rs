//! The overview of the device shown: the answer first, in a strip under the file's name
//! (`OverviewStrip`: the peak, the reserve, the efficiency, an out-of-memory, the top
//! findings); the warnings above the timeline (`Warnings`); and under the views, its every
//! number grouped as the core groups them, the PyTorch release range of the file and the
//! allocator settings (`OverviewPanel`).
//!
//! The page state asks for the overview as soon as a file is decoded (it is what the user
//! sees first) and keeps one per device; these components show it (the strip also asks for
//! the device's findings).

mod allocator_settings;
mod metric_groups;
mod strip;
mod warnings;

use leptos::prelude::*;

pub use strip::OverviewStrip;
pub use warnings::Warnings;

use allocator_settings::AllocatorSettings;
use metric_groups::MetricGroups;

use crate::format;
use crate::overview::Overview;

#[component]
pub fn OverviewPanel(overview: Overview) -> impl IntoView {
    let era = format::overview::era(&overview.format);
    view! {
        <div class="overview" id="overview" data-device=overview.device.to_string()>
            <MetricGroups metrics=overview.metrics.clone() />
            <div class="overview-facts">
                <section class="fact-card">
                    <h2>"Format"</h2>
                    <p class="era" id="era">{era}</p>
                    <p class="hint">"PyTorch release range inferred from the keys present in the file."</p>
                </section>
                <AllocatorSettings settings=overview.allocator_settings.clone() missing=format::overview::no_allocator_settings(&overview.format) />
            </div>
        </div>
    }
}
