//! The findings of a device: each says what was found, why it matters and what to try, with
//! the allocations behind it (each pinned on the timeline when clicked). Nothing found: a line
//! saying so, because a healthy run is an answer too.

use leptos::prelude::*;

use crate::analysis::categories::Dimension;
use crate::breakdown::findings::Finding;
use crate::breakdown::service::TopAllocation;
use crate::format;
use crate::ui::categories::categories_of;
use crate::ui::file_context::use_file;

/// Allocations listed under a finding before "show all".
const LISTED: usize = 5;

#[component]
pub fn Findings(
    findings: Vec<Finding>,
    /// The allocations behind each finding, indexed like `findings`.
    allocations: Vec<Vec<TopAllocation>>,
    device: u32,
    /// What the trace says about running out of memory, for the line said when nothing is
    /// found.
    oom: Option<crate::analysis::oom::OomRecord>,
) -> impl IntoView {
    let count = findings.len();
    view! {
        <section class="findings" id="findings" data-count=count.to_string()>
            <h3>"Findings"</h3>
            {(count == 0).then(|| view! {
                <p class="hint" id="no-findings">{format::findings::nothing_found(oom.as_ref())}</p>
            })}
            <ul class="finding-list">
                {findings.into_iter().zip(allocations.into_iter().chain(std::iter::repeat(Vec::new()))).map(|(f, behind)| {
                    let listed = behind.len();
                    view! {
                        <li class="finding" data-finding=f.key() data-allocations=listed.to_string()>
                            <p class="finding-title">{format::findings::title(&f)}</p>
                            <p class="finding-why">{format::findings::why(&f)}</p>
                            <p class="finding-try"><strong>"Try: "</strong>{format::findings::what_to_try(&f)}</p>
                            <Behind behind=behind device=device />
                        </li>
                    }
                }).collect_view()}
            </ul>
        </section>
    }
}

/// The allocations behind a finding: size, role and what made it; a click pins one on the
/// timeline. The first few show; the rest open on request.
#[component]
fn Behind(behind: Vec<TopAllocation>, device: u32) -> impl IntoView {
    let cx = use_file();

    if behind.is_empty() {
        return ().into_any();
    }
    let total = behind.len();
    let all = RwSignal::new(false);
    let roles = categories_of(Dimension::Role, false);
    let row = move |a: &TopAllocation| {
        let index = a.index;
        let name = a.name.clone().unwrap_or_else(|| "(no stack)".into());
        view! {
            <li data-index=index.to_string() data-size=a.size.to_string()>
                <button type="button" class="link-button finding-allocation" title="Pin it on the timeline"
                    on:click=move |_| cx.show_on_timeline(device, index)
                >
                    <span class="num">{format::bytes(a.size)}</span>
                    " · " {roles[a.role as usize].1} " · "
                    <code class:user=a.user>{name}</code>
                </button>
            </li>
        }
    };
    let first: Vec<_> = behind.iter().take(LISTED).map(&row).collect();
    let rest: Vec<TopAllocation> = behind.iter().skip(LISTED).cloned().collect();
    view! {
        <details class="finding-behind">
            <summary>{format!("{} allocation{} behind it", format::count(total as u64), if total == 1 { "" } else { "s" })}</summary>
            <ul class="finding-allocations">
                {first}
                {move || all.get().then(|| rest.iter().map(&row).collect_view())}
            </ul>
            {(total > LISTED).then(|| view! {
                <button type="button" class="button quiet" on:click=move |_| all.set(true) hidden=move || all.get()>
                    {format!("Show all {}", format::count(total as u64))}
                </button>
            })}
        </details>
    }
    .into_any()
}
