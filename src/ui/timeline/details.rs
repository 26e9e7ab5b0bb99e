//! The pinned element: what made it, its role and why, its facts, its stack (the user's code
//! first: framework runs folded, interpreter noise hidden, unless "show all frames"), compile
//! context and user metadata, what newer files record (its tensor, annotations, and the forward
//! code of a backward allocation, with its stack). Esc or "Unpin" clears it. Python frames
//! open their file in the source view.

use std::collections::BTreeSet;

use leptos::prelude::*;

use super::folding::{rows, Row, Shown};
use super::tooltip::{lifetime, made_by, title, when};
use super::Timeline;
use crate::analysis::categories::RoleReason;
use crate::analysis::lines::SourcePlace;
use crate::analysis::stacks::{FrameClass, FrameText};
use crate::format;
use crate::format::breakdown::{role_label, role_reason};
use crate::timeline::inspect::{ElementDetail, OomDetail};
use crate::ui::source::SourceButton;

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

/// What newer files record of an allocation, as facts of a `<dl>`: its tensor (`shape_data`),
/// its annotations (`annotate` rows, oldest first, each with its event and site) and, for a
/// backward allocation, the forward code that created its autograd node (`forward_frames`).
#[component]
pub fn RecordedFacts(detail: ElementDetail, id: &'static str) -> impl IntoView {
    let tensor = format::table::tensor(detail.shape.as_deref(), detail.dtype.as_deref());
    let annotations = detail.annotations.clone();
    view! {
        {tensor.map(|t| view! { <dt>"Tensor"</dt><dd><code id=format!("{id}-tensor")>{t}</code></dd> })}
        {(!annotations.is_empty()).then(|| view! {
            <dt>"Annotations"</dt>
            <dd><ol class="annotations" id=format!("{id}-annotations")>
                {annotations.into_iter().map(|a| {
                    let at = format!(" · event {}{}", format::count(u64::from(a.event)),
                        a.site.as_deref().map(|s| format!(", at {s}")).unwrap_or_default());
                    view! { <li data-event=a.event.to_string()><code>{a.metadata.unwrap_or_default()}</code>{at}</li> }
                }).collect_view()}
            </ol></dd>
        })}
        {detail.forward_top_frame.clone().map(|f| view! {
            <dt>"Forward code"</dt><dd><code id=format!("{id}-forward")>{f}</code></dd>
        })}
    }
}

/// The forward code that created a backward allocation's autograd node, as a stack.
#[component]
pub fn ForwardStack(
    detail: ElementDetail,
    show_all: RwSignal<bool>,
    id: &'static str,
) -> impl IntoView {
    (!detail.forward_frames.is_empty()).then(|| {
        let anchor = detail
            .forward_frames
            .iter()
            .position(|f| f.class == FrameClass::UserPython);
        view! {
            <h4 class="forward-stack-title">"Created in the forward by"</h4>
            <Stack frames=detail.forward_frames.clone() anchor=anchor show_all=show_all list_id=id />
        }
    })
}

/// An allocation's role, whether it was deduced rather than observed, and why, in words a user
/// can check against the trace.
#[component]
pub fn RoleLine(reason: RoleReason, id: &'static str) -> impl IntoView {
    let why = role_reason(&reason);
    view! {
        <p class="role-reason" id=id data-role=reason.role.key() data-inferred=reason.inferred.to_string()>
            <strong>{role_label(reason.role)}</strong>
            {reason.inferred.then(|| view! { " " <span class="inferred-tag" title="Made before recording: deduced from what the trace shows, not observed">"inferred"</span> })}
            ": " {why}
        </p>
    }
}

/// Frames not shown by default: folded or hidden.
pub fn folded(frames: &[FrameText], anchor: Option<usize>) -> usize {
    let classes: Vec<FrameClass> = frames.iter().map(|f| f.class).collect();
    let shown = rows(&classes, anchor)
        .iter()
        .filter(|r| {
            matches!(
                r,
                Row::Frame {
                    shown: Shown::Always,
                    ..
                }
            )
        })
        .count();
    frames.len() - shown
}

/// The frame the stack is shown around: the one naming the allocation.
pub fn anchor(top_frame_index: &Option<u32>) -> Option<usize> {
    top_frame_index.map(|i| i as usize)
}

/// A stack, innermost first: the user's code shown, framework runs folded behind a line each,
/// noise hidden; everything shown with `show_all`.
#[component]
pub fn Stack(
    frames: Vec<FrameText>,
    anchor: Option<usize>,
    show_all: RwSignal<bool>,
    /// The list's id: one per view showing a stack.
    #[prop(default = "stack")]
    list_id: &'static str,
) -> impl IntoView {
    let opened = RwSignal::new(BTreeSet::<usize>::new());
    let classes: Vec<FrameClass> = frames.iter().map(|f| f.class).collect();
    let is_open = move |group: usize| opened.with(|o| o.contains(&group));
    view! {
        <ol class="stack" id=list_id>
            {rows(&classes, anchor).into_iter().map(|row| match row {
                Row::Fold { group, count } => view! {
                    <li class="fold" class:hidden=move || show_all.get() data-group=group.to_string()>
                        <button type="button" class="fold-button" aria-expanded=move || is_open(group).to_string()
                            on:click=move |_| opened.update(|o| { if !o.remove(&group) { o.insert(group); } })>
                            {move || format!("{} {count} framework frame{}", if is_open(group) { "▾" } else { "▸" }, if count == 1 { "" } else { "s" })}
                        </button>
                    </li>
                }.into_any(),
                Row::Frame { index, shown } => {
                    let f = frames[index].clone();
                    let noisy = f.noise;
                    let class = format!("{:?}", f.class).to_lowercase();
                    let visible = move || match shown {
                        Shown::Always => true,
                        Shown::Noise => show_all.get(),
                        Shown::Folded(group) => show_all.get() || is_open(group),
                    };
                    view! {
                        // Numbered by their place in the whole stack, folded frames included.
                        <li class="frame" value=(index + 1).to_string() class:noise=noisy class:user=f.class == FrameClass::UserPython
                            data-noise=noisy.to_string() data-class=class data-index=index.to_string()
                            class:hidden=move || !visible()>
                            <span class="frame-name">{f.name}</span>
                            <span class="frame-file">{format!("{}:{}", f.filename, f.line)}</span>
                            {matches!(f.class, FrameClass::UserPython | FrameClass::LibraryPython)
                                .then(|| SourcePlace::of_file(&f.filename))
                                .flatten()
                                .map(|p| view! { <SourceButton place=SourcePlace { line: Some(f.line), ..p } /> })}
                        </li>
                    }.into_any()
                }
            }).collect_view()}
        </ol>
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
