//! The pinned element: its facts, its stack (interpreter noise hidden unless "show all
//! frames"), compile context and user metadata. Esc or "Unpin" clears it.

use leptos::prelude::*;

use super::tooltip::{lifetime, title, when};
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
        let noise = e.frames.iter().filter(|f| f.noise).count();
        let frames = e.frames.clone();
        let show_all = tl.show_all_frames;
        view! {
            <section class="pinned" id="pinned" data-index=e.index.to_string() data-addr=e.addr.to_string() data-size=e.size.to_string()>
                <header class="pinned-header">
                    <h3>{title(&e)} " · " {format::bytes(e.size)}</h3>
                    <button type="button" class="button quiet" id="pinned-close" on:click=move |_| tl.unpin()>"Unpin (Esc)"</button>
                </header>
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
                        {format!("Show all frames ({noise} hidden)")}
                    </label>
                </div>
                {if frames.is_empty() {
                    view! { <p class="hint" id="no-stack">"No stack was recorded for this allocation."</p> }.into_any()
                } else {
                    view! {
                        <ol class="stack" id="stack">
                            {frames.into_iter().map(|f| {
                                let noisy = f.noise;
                                view! {
                                    <li class="frame" class:noise=noisy data-noise=noisy.to_string() class:hidden=move || noisy && !show_all.get()>
                                        <span class="frame-name">{f.name}</span>
                                        <span class="frame-file">{format!("{}:{}", f.filename, f.line)}</span>
                                    </li>
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
