//! The pinned element: what made it, its facts, its stack (the user's code first: framework
//! runs folded, interpreter noise hidden, unless "show all frames"), compile context and user
//! metadata. Esc or "Unpin" clears it.

use std::collections::BTreeSet;

use leptos::prelude::*;

use super::folding::{rows, Row, Shown};
use super::tooltip::{lifetime, made_by, title, when};
use super::Timeline;
use crate::format;

#[component]
pub fn PinnedDetails(tl: Timeline) -> impl IntoView {
    let origin = move || {
        tl.info
            .with(|i| i.as_ref().and_then(|i| i.time_range.map(|r| r.0)))
    };
    let states = move || tl.info.with(|i| i.as_ref().map_or(0, |i| i.states));
    move || {
        let Some(e) = tl.pinned.get() else {
            return view! {
                <p class="pinned-hint hint" id="pinned-hint">
                    "Hover the timeline for details; click an allocation to pin it and see its stack."
                </p>
            }
            .into_any();
        };
        let hidden = e.frames.len()
            - rows(&classes(&e), anchor(&e))
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
        let show_all = tl.show_all_frames;
        let opened = RwSignal::new(BTreeSet::<usize>::new());
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
                </dl>
                <div class="stack-header">
                    <h4>{if e.origin == "trace" { "Allocated from" } else { "Stack of its free (the alloc was not recorded)" }}</h4>
                    <label class="check">
                        <input type="checkbox" id="show-all-frames" prop:checked=move || show_all.get() on:change=move |ev| show_all.set(event_target_checked(&ev)) />
                        {format!("Show all frames ({hidden} folded or hidden)")}
                    </label>
                </div>
                {if e.frames.is_empty() {
                    view! { <p class="hint" id="no-stack">"No stack was recorded for this allocation."</p> }.into_any()
                } else {
                    let frames = e.frames.clone();
                    let rows = rows(&classes(&e), anchor(&e));
                    view! {
                        <ol class="stack" id="stack">
                            {rows.into_iter().map(|row| match row {
                                Row::Fold { group, count } => view! {
                                    <li class="fold" class:hidden=move || show_all.get() data-group=group.to_string()>
                                        <button type="button" class="fold-button" aria-expanded=move || opened.with(|o| o.contains(&group)).to_string()
                                            on:click=move |_| opened.update(|o| { if !o.remove(&group) { o.insert(group); } })>
                                            {move || format!("{} {count} framework frame{}", if opened.with(|o| o.contains(&group)) { "▾" } else { "▸" }, if count == 1 { "" } else { "s" })}
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
                                        Shown::Folded(group) => show_all.get() || opened.with(|o| o.contains(&group)),
                                    };
                                    view! {
                                        <li class="frame" class:noise=noisy class:user=f.class == crate::analysis::stacks::FrameClass::UserPython
                                            data-noise=noisy.to_string() data-class=class data-index=index.to_string()
                                            class:hidden=move || !visible()>
                                            <span class="frame-name">{f.name}</span>
                                            <span class="frame-file">{format!("{}:{}", f.filename, f.line)}</span>
                                        </li>
                                    }.into_any()
                                }
                            }).collect_view()}
                        </ol>
                    }.into_any()
                }}
            </section>
        }
        .into_any()
    }
}

fn classes(
    e: &crate::timeline::inspect::ElementDetail,
) -> Vec<crate::analysis::stacks::FrameClass> {
    e.frames.iter().map(|f| f.class).collect()
}

fn anchor(e: &crate::timeline::inspect::ElementDetail) -> Option<usize> {
    e.top_frame_index.map(|i| i as usize)
}
