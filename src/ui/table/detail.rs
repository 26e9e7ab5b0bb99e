//! The selected row in full: every field with exact values, its whole stack (the user's code
//! first, framework runs folded, noise hidden unless asked), and "Show on timeline".

use leptos::prelude::*;

use super::{event_text, lifetime_text, TableState};
use crate::format;
use crate::format::breakdown::{component_label, phase_label, role_label};
use crate::timeline::inspect::ElementDetail;
use crate::timeline::service::{TimelineAnswer, TimelineRequest};
use crate::timeline::TimelineKind;
use crate::ui::requests::Latest;
use crate::ui::widgets::stack::{anchor, folded, ForwardStack, RecordedFacts, RoleLine, Stack};
use crate::ui::actions::ViewAsker;

#[component]
pub fn RowDetail(table: TableState) -> impl IntoView {
    let asker = ViewAsker::new(table.actions, table.file);
    let stack = RwSignal::new(None::<Result<ElementDetail, String>>);
    let latest = StoredValue::new(Latest::default());
    let show_all = RwSignal::new(false);
    // The stack of the selected allocation.
    Effect::new(move |_| {
        let Some(element) = table.selected.with(|s| s.as_ref().map(|r| r.index)) else {
            stack.set(None);
            return;
        };
        // The previous row's stack and facts are not this row's.
        if stack.with_untracked(|s| matches!(s, Some(Ok(d)) if d.index != element)) {
            stack.set(None);
        }
        let request = TimelineRequest::Element {
            device: table.device,
            kind: TimelineKind::Allocations,
            index: element,
        };
        asker.ask_latest(latest, request, move |answer| {
            stack.set(Some(answer.and_then(|a| match a {
                TimelineAnswer::Element(Some(detail)) => Ok(detail),
                other => Err(format!("The worker answered with a {}.", other.name())),
            })));
        });
    });
    move || {
        let Some(row) = table.selected.get() else {
            return view! {
                <aside class="row-detail hint" id="table-detail-hint">
                    "Select a row (click it, or use the arrow keys) to see its stack."
                </aside>
            }
            .into_any();
        };
        let origin = table.view.with_untracked(|v| {
            v.as_ref()
                .and_then(|v| v.as_ref().ok())
                .and_then(|v| v.time_origin_us)
                .map(|t| t as f64)
        });
        let when = move |event, time, none| event_text(event, time, origin, none);
        let element = row.index;
        let device = table.device;
        view! {
            <aside class="row-detail" id="table-detail" data-element=row.index.to_string()
                data-stack-for=move || stack.with(|s| match s { Some(Ok(d)) => d.index.to_string(), _ => String::new() })
                data-allocation=row.allocation.to_string()
                data-size-bytes=row.size_bytes.to_string()
                data-requested-bytes=row.requested_bytes.to_string()>
                <header class="pinned-header">
                    <h3>{format!("Allocation · {}", format::bytes(row.requested_bytes))}</h3>
                    <button type="button" class="button" id="table-show-on-timeline"
                        on:click=move |_| table.cx.show_on_timeline(device, element)>
                        "Show on timeline"
                    </button>
                </header>
                <dl class="pinned-facts">
                    <dt>"Requested"</dt><dd>{format!("{} bytes", format::count(row.requested_bytes))}</dd>
                    <dt>"Block"</dt><dd>{format!("{} bytes ({} rounding)", format::count(row.size_bytes), format::bytes(row.size_bytes.saturating_sub(row.requested_bytes)))}</dd>
                    <dt>"Address"</dt><dd><code>{format!("{:#x}", row.address)}</code></dd>
                    <dt>"Stream"</dt><dd><code>{format!("{:#x}", row.stream)}</code></dd>
                    <dt>"Role"</dt><dd>{role_label(row.role)}{row.role_inferred.then_some(" (inferred)")}</dd>
                    <dt>"Component"</dt><dd>{component_label(row.component)}</dd>
                    <dt>"Phase"</dt><dd>{row.phase.map_or("before the trace", phase_label)}</dd>
                    <dt>"Allocated"</dt><dd>{when(row.alloc_event, row.alloc_time_us, "before the trace")}</dd>
                    <dt>"Freed"</dt><dd>{when(row.free_event, row.free_time_us, "not freed by the end of the trace")}</dd>
                    <dt>"Lifetime"</dt><dd>{lifetime_text(&row)}</dd>
                    <dt>"Made by"</dt><dd id="table-detail-made-by">{match &row.top_frame {
                        Some(frame) if row.alloc_event.is_none() && row.free_event.is_some() => view! { "before the trace; freed by " <code>{frame.clone()}</code> }.into_any(),
                        Some(frame) => view! { <code>{frame.clone()}</code> }.into_any(),
                        None => view! { <code>"(no frame recorded)"</code> }.into_any(),
                    }}</dd>
                    {move || stack.with(|s| match s {
                        Some(Ok(detail)) => Some(view! { <RecordedFacts detail=detail.clone() id="table-detail" /> }),
                        _ => None,
                    })}
                </dl>
                {move || stack.with(|s| match s {
                    Some(Ok(detail)) => detail.role.clone().map(|reason| view! { <RoleLine reason=reason id="table-detail-role" /> }),
                    _ => None,
                })}
                {move || match stack.get() {
                    None => view! { <p class="pending" aria-busy="true">"Reading its stack…"</p> }.into_any(),
                    Some(Err(why)) => view! { <p class="view-error" role="alert">{why}</p> }.into_any(),
                    Some(Ok(detail)) if detail.frames.is_empty() => view! {
                        <p class="hint" id="table-no-stack">"No stack was recorded for this allocation."</p>
                    }.into_any(),
                    Some(Ok(detail)) => {
                        let at = anchor(&detail.top_frame_index);
                        let hidden = folded(&detail.frames, at);
                        view! {
                            <div class="stack-header">
                                <h4>"Stack"</h4>
                                <label class="check">
                                    <input type="checkbox" id="table-show-all-frames" prop:checked=move || show_all.get()
                                        on:change=move |ev| show_all.set(event_target_checked(&ev)) />
                                    {format!("Show all frames ({hidden} folded or hidden)")}
                                </label>
                            </div>
                            <Stack frames=detail.frames.clone() anchor=at show_all=show_all list_id="table-stack" />
                            <ForwardStack detail=detail.clone() show_all=show_all id="table-forward-stack" />
                        }.into_any()
                    }
                }}
            </aside>
        }
        .into_any()
    }
}
