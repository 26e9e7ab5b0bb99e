//! The findings of a device: each says what was found, why it matters and what to try, with
//! the allocations behind it (pinned on the timeline when clicked). Nothing found: a line
//! saying so, because a healthy run is an answer too.

use leptos::prelude::*;

use crate::breakdown::findings::Finding;
use crate::format;

#[component]
pub fn Findings(findings: Vec<Finding>) -> impl IntoView {
    let count = findings.len();
    view! {
        <section class="findings" id="findings" data-count=count.to_string()>
            <h3>"Findings"</h3>
            {(count == 0).then(|| view! {
                <p class="hint" id="no-findings">"Nothing stands out: no cache overhead, fragmentation, leak, spike or long wait worth a look."</p>
            })}
            <ul class="finding-list">
                {findings.into_iter().map(|f| {
                    let behind = f.allocations.len();
                    view! {
                        <li class="finding" data-finding=f.key() data-allocations=behind.to_string()>
                            <p class="finding-title">{format::findings::title(&f)}</p>
                            <p class="finding-why">{format::findings::why(&f)}</p>
                            <p class="finding-try"><strong>"Try: "</strong>{format::findings::what_to_try(&f)}</p>
                            {(behind > 0).then(|| view! {
                                <p class="hint">{format!("{} allocation{} behind it.", format::count(behind as u64), if behind == 1 { "" } else { "s" })}</p>
                            })}
                        </li>
                    }
                }).collect_view()}
            </ul>
        </section>
    }
}
