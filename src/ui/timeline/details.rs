//! The pinned element: what made it, its role and why, its facts, its stack (the user's code
//! first: framework runs folded, interpreter noise hidden, unless "show all frames"), compile
//! context and user metadata, what newer files record (its tensor, annotations, and the forward
//! code of a backward allocation, with its stack). Esc or "Unpin" clears it. Python frames
//! open their file in the source view.
//!
//! The stack, the role line and the recorded facts are the widgets' (`widgets::stack`): the
//! table's row detail shows them too. Not the place for the hover tooltip (`tooltip`).

use leptos::prelude::*;

use super::tooltip::{lifetime, made_by, title};
use super::Timeline;
use crate::format;
use crate::format::when;
use crate::timeline::inspect::OomDetail;
use crate::ui::widgets::stack::{anchor, folded, ForwardStack, RecordedFacts, RoleLine, Stack};

#[component]
pub fn PinnedDetails(tl: Timeline) -> impl IntoView {
    let origin = move || {
        tl.info
            .with(|i| i.as_ref().and_then(|i| i.time_range.map(|r| r.0)))
    };
    let states = move || tl.info.with(|i| i.as_ref().map_or(0, |i| i.states));
    move || {
        if let Some(oom) = tl.pinned_oom.get() {
            return view! { <PinnedOom tl=tl oom=oom /> }.into_any();
        }
        let Some(e) = tl.pinned.get() else {
            let noun = match tl.kind.get() {
                crate::timeline::TimelineKind::Allocations => "an allocation",
                crate::timeline::TimelineKind::Segments => "a segment",
                crate::timeline::TimelineKind::Pool(_) => "a block of the pool",
            };
            return view! {
                <p class="pinned-hint hint" id="pinned-hint">
                    {format!("Hover the timeline for details; click {noun} to pin it and see its stack, or an OOM mark to see what was alive. ? lists every key.")}
                </p>
            }
            .into_any();
        };
        let hidden = folded(&e.frames, anchor(&e.top_frame_index));
        let show_all = tl.show_all_frames;
        let made = made_by(&e);
        view! {
            <section class="pinned" id="pinned" data-index=e.index.to_string() data-addr=e.addr.to_string() data-size=e.size.to_string()>
                <header class="pinned-header">
                    <h3>{title(&e)} " · " {format::bytes(e.size)}</h3>
                    <button type="button" class="button quiet" id="pinned-close" on:click=move |_| tl.unpin()>"Unpin (Esc)"</button>
                </header>
                {made.map(|(label, name)| view! {
                    <p class="made-by" id="pinned-made-by" data-user=e.top_frame_is_user.to_string()>{label} " " <code>{name}</code></p>
                })}
                {e.role.clone().map(|reason| view! { <RoleLine reason=reason id="pinned-role" /> })}
                <div class="stack-header">
                    <h4>{match e.origin.as_str() {
                        "trace" => "Allocated from",
                        "live-block" => "Stack recorded with its block (made before the trace)",
                        _ => "Stack of its free (the alloc was not recorded)",
                    }}</h4>
                    <label class="check">
                        <input type="checkbox" id="show-all-frames" prop:checked=move || show_all.get() on:change=move |ev| show_all.set(event_target_checked(&ev)) />
                        {format!("Show all frames ({hidden} folded or hidden)")}
                    </label>
                </div>
                {if e.frames.is_empty() {
                    view! { <p class="hint" id="no-stack">"No stack was recorded for this allocation."</p> }.into_any()
                } else {
                    view! { <Stack frames=e.frames.clone() anchor=anchor(&e.top_frame_index) show_all=show_all /> }.into_any()
                }}
                <dl class="pinned-facts">
                    <dt>"Size"</dt><dd>{format!("{} bytes", format::count(e.size))}</dd>
                    {e.block_size.filter(|&b| b != e.size).map(|b| view! { <dt>"Block"</dt><dd>{format!("{} (rounded up by the allocator)", format::bytes(b))}</dd> })}
                    <dt>"Address"</dt><dd><code>{format!("{:#x}", e.addr)}</code></dd>
                    <dt>"Stream"</dt><dd><code>{format!("{:#x}", e.stream)}</code></dd>
                    <dt>"Allocated"</dt><dd>{if e.origin == "trace" { when(Some(e.start_state), e.alloc_time_us, origin()) } else { "before the trace window".to_string() }}</dd>
                    <dt>"Freed"</dt><dd>{match e.end_state { Some(s) => when(Some(s), e.free_time_us, origin()), None => "not freed by the end of the trace".to_string() }}</dd>
                    <dt>"Lifetime"</dt><dd>{lifetime(&e, states())}</dd>
                    {e.compile_context.clone().map(|c| view! { <dt>"Compile context"</dt><dd><code>{c}</code></dd> })}
                    {e.user_metadata.clone().map(|m| view! { <dt>"User metadata"</dt><dd><code>{m}</code></dd> })}
                    <RecordedFacts detail=e.clone() id="pinned" />
                </dl>
                <ForwardStack detail=e.clone() show_all=show_all id="pinned-forward-stack" />
            </section>
        }
        .into_any()
    }
}

/// A pinned out-of-memory: the request that failed and the free memory, how much of the
/// reserved memory was cached free but could not hold it, what was alive then (the largest
/// allocations, which can be pinned, and the call sites holding the most), and its stack.
#[component]
fn PinnedOom(tl: Timeline, oom: OomDetail) -> impl IntoView {
    let origin = move || {
        tl.info
            .with(|i| i.as_ref().and_then(|i| i.time_range.map(|r| r.0)))
    };
    let show_all = tl.show_all_frames;
    let cached_free = oom.reserved.saturating_sub(oom.allocated);
    let share = |part: u64, whole: u64| {
        if whole == 0 {
            "–".to_string()
        } else {
            format::percent_ppm((part as u128 * 1_000_000 / whole as u128) as u64)
        }
    };
    let hidden = folded(&oom.frames, anchor(&oom.top_frame_index));
    let live = oom.live.clone();
    let summary = format!(
        "The request of {} failed with {} free on the device. Of the {} reserved, {} ({}) was cached free but could not hold it.",
        format::bytes(oom.requested),
        format::bytes(oom.device_free),
        format::bytes(oom.reserved),
        format::bytes(cached_free),
        share(cached_free, oom.reserved),
    );
    view! {
        <section class="pinned pinned-oom" id="pinned-oom"
            data-nth=oom.nth.to_string() data-event=oom.event.to_string()
            data-requested=oom.requested.to_string() data-free=oom.device_free.to_string()
            data-allocated=oom.allocated.to_string() data-reserved=oom.reserved.to_string()
            data-live-count=live.count.to_string() data-live-bytes=live.bytes.to_string()>
            <header class="pinned-header">
                <h3>"Out of memory · " {format::bytes(oom.requested)} " requested"</h3>
                <button type="button" class="button quiet" id="pinned-close" on:click=move |_| tl.unpin()>"Unpin (Esc)"</button>
            </header>
            <p class="oom-summary">{summary}</p>
            {made_by_oom(&oom).map(|(label, name)| view! {
                <p class="made-by" id="pinned-made-by" data-user=oom.top_frame_is_user.to_string()>{label} " " <code>{name}</code></p>
            })}
            <dl class="pinned-facts">
                <dt>"At"</dt><dd>{when(Some(oom.state), oom.time_us, origin())}</dd>
                <dt>"Allocated"</dt><dd>{format::bytes(oom.allocated)}</dd>
                <dt>"Reserved"</dt><dd>{format::bytes(oom.reserved)}</dd>
                <dt>"Stream"</dt><dd><code>{format!("{:#x}", oom.stream)}</code></dd>
            </dl>
            <h4>{format!("What was alive: {} allocations, {}", format::count(live.count as u64), format::bytes(live.bytes))}</h4>
            <table class="live-table" id="oom-largest">
                <caption>"The largest (click one to pin it)"</caption>
                <tbody>
                    {live.largest.iter().map(|a| {
                        let index = a.index;
                        view! {
                            <tr data-index=index.to_string() data-size=a.size.to_string()>
                                <td class="num">{format::bytes(a.size)}</td>
                                <td><button type="button" class="link-button" on:click=move |_| tl.pin_allocation(index)>
                                    {a.name.clone().unwrap_or_else(|| "no stack recorded".into())}
                                </button>
                                {format::table::tensor(a.shape.as_deref(), a.dtype.as_deref()).map(|t| view! { <span class="tensor">{format!(" · {t}")}</span> })}
                                </td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
            <table class="live-table" id="oom-call-sites">
                <caption>"By call site"</caption>
                <tbody>
                    {live.call_sites.iter().map(|c| view! {
                        <tr data-bytes=c.bytes.to_string() data-count=c.count.to_string()>
                            <td class="num">{format::bytes(c.bytes)}</td>
                            <td class="num">{share(c.bytes, live.bytes)}</td>
                            <td class="num">{format!("×{}", format::count(c.count as u64))}</td>
                            <td><code>{c.name.clone().unwrap_or_else(|| "no stack recorded".into())}</code></td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
            <div class="stack-header">
                <h4>"The request that failed"</h4>
                <label class="check">
                    <input type="checkbox" id="show-all-frames" prop:checked=move || show_all.get() on:change=move |ev| show_all.set(event_target_checked(&ev)) />
                    {format!("Show all frames ({hidden} folded or hidden)")}
                </label>
            </div>
            {if oom.frames.is_empty() {
                view! { <p class="hint" id="no-stack">"No stack was recorded for this request."</p> }.into_any()
            } else {
                view! { <Stack frames=oom.frames.clone() anchor=anchor(&oom.top_frame_index) show_all=show_all /> }.into_any()
            }}
        </section>
    }
}

/// What asked for the memory that could not be had.
fn made_by_oom(oom: &OomDetail) -> Option<(&'static str, String)> {
    let name = oom.top_frame.clone()?;
    Some(if oom.top_frame_is_user {
        ("Asked for by", name)
    } else {
        ("Asked for by PyTorch, in", name)
    })
}
