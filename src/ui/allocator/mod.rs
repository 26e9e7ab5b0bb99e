//! The allocator's state at any moment: the segments it held, drawn to scale with their blocks
//! coloured by what they hold (allocated, rounding waste, waiting to be freed, cached free),
//! its totals and fragmentation, and a table of the segments.
//!
//! The moment is the peak until one is picked: a click on the timeline, the slider, or the
//! arrow keys (Shift: 100 events; Home, End). Each answer costs the worker a lookup in the
//! history it reconstructed once, never a replay. Segments come a page at a time (Page Up and
//! Page Down), by address or with those holding the most unused memory first (by cached free
//! bytes or the largest free block). A click on an allocated block selects its allocation in
//! every view.

use std::rc::Rc;

use leptos::prelude::*;
use web_sys::KeyboardEvent;

use super::actions::{use_actions, ViewAsker};
use super::file_context::use_file;
use super::charts::{self, geometry::Piece, geometry::PieceKind};
use super::requests::Latest;
use super::state::FileId;
use super::widgets::chart::{ChartCard, Click, Draw, Hover, WIDE_CHART_SIZE};
use crate::model::State;
use crate::format::when;
use crate::analysis::allocator::{BlockKind, SegmentOrder, SegmentPool, SegmentState};
use crate::format;
use crate::table::service::{AllocatorRequest, AllocatorView};

/// Segments a page shows.
const PAGE: u32 = 12;

fn pieces(segment: &SegmentState) -> Vec<Piece> {
    segment
        .blocks
        .iter()
        .map(|b| Piece {
            offset: b.address.saturating_sub(segment.address),
            size: b.size,
            requested: b.requested,
            kind: match b.kind {
                BlockKind::Allocated => PieceKind::Allocated,
                BlockKind::PendingFree => PieceKind::PendingFree,
                BlockKind::CachedFree => PieceKind::CachedFree,
            },
        })
        .collect()
}

fn pool_name(segment: &SegmentState) -> String {
    let pool = match segment.pool {
        Some(SegmentPool::Small) => "small",
        Some(SegmentPool::Large) => "large",
        None => "–",
    };
    match segment.pool_id {
        Some((0, 0)) | None => pool.to_string(),
        Some((owner, id)) => format!("{pool}, private ({owner}, {id})"),
    }
}

fn percent(part: f64) -> String {
    format::percent_ppm((part * 1e6).round().max(0.0) as u64)
}

#[component]
pub fn AllocatorPanel(
    file: FileId,
    device: u32,
    dark: Signal<bool>,
) -> impl IntoView {
    let actions = use_actions();
    let cx = use_file();

    let asker = ViewAsker::new(actions, file);
    // `None`: the peak (or the moment a link restores).
    let restored = cx
        .link
        .restoring(file, Some(device))
        .and_then(|l| l.allocator);
    let state = RwSignal::new(restored);
    Effect::new(move |_| {
        let shown = state.get();
        cx.link.set(|l| l.allocator = shown);
    });
    let first = RwSignal::new(0u32);
    let order = RwSignal::new(SegmentOrder::Address);
    let view = RwSignal::new(None::<Result<AllocatorView, String>>);
    let answers = RwSignal::new(0u32);
    let latest = StoredValue::new(Latest::default());
    Effect::new(move |_| {
        let request = AllocatorRequest {
            device,
            state: state.get(),
            first_segment: first.get(),
            segment_count: PAGE,
            order: order.get(),
        };
        asker.ask_latest(latest, request, move |answer| {
            view.set(Some(answer.map(|v| *v)));
            answers.update(|n| *n += 1);
        });
    });
    // A moment picked on the timeline is the one to show.
    Effect::new(move |mounted: Option<()>| {
        let picked = cx.picked.get();
        if mounted.is_some() && picked.is_some() && state.get_untracked() != picked {
            state.set(picked);
        }
    });
    let known = move |f: fn(&AllocatorView) -> u32| {
        view.with_untracked(|v| v.as_ref().and_then(|v| v.as_ref().ok()).map(f))
    };
    let go = move |to: i64| {
        let Some(states) = known(|v| v.states) else {
            return;
        };
        let to = State::new(to.clamp(0, states as i64 - 1) as u32);
        if state.get_untracked() != Some(to) {
            state.set(Some(to));
        }
    };
    let page = move |step: i64| {
        let Some(count) = known(|v| v.segment_count) else {
            return;
        };
        let last_page = count.saturating_sub(1) / PAGE * PAGE;
        let to =
            (first.get_untracked() as i64 + step * PAGE as i64).clamp(0, last_page as i64) as u32;
        if first.get_untracked() != to {
            first.set(to);
        }
    };
    let on_key = move |event: KeyboardEvent| {
        let Some(at) = known(|v| v.state.get()) else {
            return;
        };
        let at = at as i64;
        let step = if event.shift_key() { 100 } else { 1 };
        match event.key().as_str() {
            "ArrowLeft" => go(at - step),
            "ArrowRight" => go(at + step),
            "Home" => go(0),
            "End" => go(i64::MAX),
            "PageUp" => page(-1),
            "PageDown" => page(1),
            _ => return,
        }
        event.prevent_default();
    };

    let segment_data = move || {
        view.with(|v| match v {
            Some(Ok(v)) => (
                v.segments.iter().map(|s| s.size).collect::<Vec<u64>>(),
                v.largest_segment,
                v.segments.iter().map(pieces).collect::<Vec<_>>(),
            ),
            _ => (Vec::new(), 0, Vec::new()),
        })
    };
    let draw: Draw = Rc::new(move |canvas, theme| {
        let (sizes, largest, pieces) = segment_data();
        let (title, labels) = view.with(|v| match v {
            Some(Ok(v)) => (
                format!(
                    "Segments {}–{} of {} at {}",
                    v.first_segment + 1,
                    v.first_segment + v.segments.len() as u32,
                    v.segment_count,
                    when(Some(v.state), v.time_us, v.time_origin_us.map(|t| t as f64))
                ),
                v.segments
                    .iter()
                    .map(|s| format!("{:#x} · {}", s.address, format::bytes(s.size)))
                    .collect::<Vec<String>>(),
            ),
            _ => (String::new(), Vec::new()),
        });
        charts::segments(canvas, theme, &title, &sizes, largest, &pieces, &labels)
    });
    let under = move |x: f64, y: f64| {
        let (sizes, largest, pieces) = segment_data();
        let (w, h) = WIDE_CHART_SIZE;
        let (row, piece) = charts::hit_segments(w, h, &sizes, largest, &pieces, x, y)?;
        view.with_untracked(|v| {
            let v = v.as_ref()?.as_ref().ok()?;
            Some(v.segments.get(row)?.blocks.get(piece)?.clone())
        })
    };
    let hover: Hover = Rc::new(move |x, y| {
        let block = under(x, y)?;
        Some(match block.kind {
            BlockKind::CachedFree => format!(
                "Cached free · {} at {:#x}",
                format::bytes(block.size),
                block.address
            ),
            kind => format!(
                "{} · {} block at {:#x}, {} requested ({} rounding){}",
                if kind == BlockKind::PendingFree {
                    "Waiting to be freed"
                } else {
                    "Allocated"
                },
                format::bytes(block.size),
                block.address,
                format::bytes(block.requested),
                format::bytes(block.size.saturating_sub(block.requested)),
                if block.allocation.is_some() {
                    " · click to select it"
                } else {
                    ""
                },
            ),
        })
    });
    let click: Click = Rc::new(move |x, y| {
        if let Some(element) = under(x, y).and_then(|b| b.allocation) {
            cx.select(Some((device, element)));
        }
    });

    let attr = move |f: fn(&AllocatorView) -> String| {
        move || {
            view.with(|v| {
                v.as_ref()
                    .and_then(|v| v.as_ref().ok())
                    .map(f)
                    .unwrap_or_default()
            })
        }
    };
    view! {
        <section class="panel allocator-panel" id="allocator-state" tabindex="0" on:keydown=on_key
            aria-label="The allocator's state: arrow keys move by one event, Shift by 100, Page Up and Down go through the segments"
            data-ready=move || view.with(|v| matches!(v, Some(Ok(_)))).to_string()
            data-answers=move || answers.get().to_string()
            data-state=attr(|v| v.state.to_string())
            data-states=attr(|v| v.states.to_string())
            data-reserved=attr(|v| v.totals.reserved.to_string())
            data-allocated=attr(|v| v.totals.allocated.to_string())
            data-requested=attr(|v| v.totals.requested.to_string())
            data-rounding-waste=attr(|v| v.totals.rounding_waste.to_string())
            data-pending-free=attr(|v| v.totals.pending_free.to_string())
            data-cached-free=attr(|v| v.totals.cached_free.to_string())
            data-largest-free=attr(|v| v.totals.largest_free_block.to_string())
            data-fragmentation=attr(|v| v.totals.fragmentation.to_string())
            data-segments=attr(|v| v.segment_count.to_string())
            data-blocks=attr(|v| v.totals.blocks.to_string())
            data-first-segment=attr(|v| v.first_segment.to_string())
            data-order=attr(|v| v.order.key().to_string())
            data-unreconciled=attr(|v| v.unreconciled.to_string())
            data-compute-ms=attr(|v| v.compute_ms.to_string())
        >
            <header class="panel-header">
                <h2 class="panel-title">"Allocator state"</h2>
                <p class="hint">"What the caching allocator held at one moment: click the timeline, drag the slider, or use the arrow keys here."</p>
            </header>
            {move || view.with(|v| match v {
                None => view! { <p class="pending" aria-busy="true">"Reconstructing the allocator's segments…"</p> }.into_any(),
                Some(Err(why)) => view! { <p class="view-error" id="allocator-error" role="alert">{why.clone()}</p> }.into_any(),
                Some(Ok(v)) => {
                    let t = &v.totals;
                    let origin = v.time_origin_us.map(|o| o as f64);
                    let states = v.states;
                    let at = v.state;
                    view! {
                        <div class="allocator-moment">
                            <input type="range" id="allocator-slider" min="0" max=(states.saturating_sub(1)).to_string()
                                prop:value=at.to_string() aria-label="Moment (state)"
                                on:change=move |ev| {
                                    if let Ok(s) = event_target_value(&ev).parse::<i64>() { go(s) }
                                } />
                            <span class="allocator-when" id="allocator-when">{when(Some(at), v.time_us, origin)}</span>
                            <button type="button" class="button quiet" id="allocator-peak" on:click=move |_| state.set(None)>"Peak"</button>
                            <button type="button" class="button quiet" id="allocator-end" on:click=move |_| go(i64::MAX)>"End"</button>
                        </div>
                        <p class="allocator-totals" id="allocator-totals">
                            {format::table::allocator_totals(v.segment_count, t)}
                        </p>
                        {(v.unreconciled > 0).then(|| view! {
                            <p class="hint" id="allocator-unreconciled">{format!(
                                "{} events of the trace could not be matched with the final segments (events lost from the allocator's ring buffer): memory before them is shown as best it can be.",
                                format::count(v.unreconciled as u64)
                            )}</p>
                        })}
                    }.into_any()
                }
            })}
            <ChartCard id="allocator-segments" title="Segments" dark=dark draw=draw hover=hover click=click wide=true>
                <p class="legend-inline hint">
                    <span class="swatch allocated"></span>" allocated "
                    <span class="swatch waste"></span>" rounding waste "
                    <span class="swatch pending"></span>" waiting to be freed "
                    <span class="swatch free"></span>" cached free"
                </p>
            </ChartCard>
            <div class="allocator-pages">
                <label class="field">"Order "
                    <select id="allocator-order" on:change=move |ev| {
                        if let Ok(picked) = event_target_value(&ev).parse::<SegmentOrder>() {
                            // A new order starts at its first page: the segments it puts first.
                            first.set(0);
                            order.set(picked);
                        }
                    }>
                        {SegmentOrder::ALL.into_iter().map(|o| view! {
                            <option value=o.key() selected=move || order.get() == o>{o.label()}</option>
                        }).collect_view()}
                    </select>
                </label>
                <button type="button" class="button quiet" id="allocator-previous" on:click=move |_| page(-1)>"Previous segments"</button>
                <button type="button" class="button quiet" id="allocator-next" on:click=move |_| page(1)>"Next segments"</button>
            </div>
            <table class="segments-table" id="allocator-segments-table">
                <thead>
                    <tr>
                        <th>"Address"</th><th class="num">"Size"</th><th>"Stream"</th><th>"Pool"</th>
                        <th class="num">"Allocated"</th><th class="num">"Requested"</th><th class="num">"Waste"</th>
                        <th class="num">"Waiting"</th><th class="num">"Cached free"</th><th class="num">"Largest free"</th>
                        <th class="num" title=format::table::FRAGMENTATION_MEANS>"Fragmentation"</th><th class="num">"Blocks"</th>
                    </tr>
                </thead>
                <tbody>
                    {move || view.with(|v| match v {
                        Some(Ok(v)) => v.segments.iter().map(|s| {
                            let t = &s.totals;
                            view! {
                                <tr data-address=s.address.to_string() data-size=s.size.to_string()
                                    data-allocated=t.allocated.to_string() data-cached-free=t.cached_free.to_string()
                                    data-blocks=s.blocks.len().to_string()>
                                    <td><code>{format!("{:#x}", s.address)}</code></td>
                                    <td class="num">{format::bytes(s.size)}</td>
                                    <td><code>{format!("{:#x}", s.stream)}</code></td>
                                    <td>{pool_name(s)}{s.expandable.then_some(", expandable")}</td>
                                    <td class="num">{format::bytes(t.allocated)}</td>
                                    <td class="num">{format::bytes(t.requested)}</td>
                                    <td class="num">{format::bytes(t.rounding_waste)}</td>
                                    <td class="num">{format::bytes(t.pending_free)}</td>
                                    <td class="num">{format::bytes(t.cached_free)}</td>
                                    <td class="num">{format::bytes(t.largest_free_block)}</td>
                                    <td class="num">{percent(t.fragmentation)}</td>
                                    <td class="num">{format::count(s.blocks.len() as u64)}</td>
                                </tr>
                            }
                        }).collect_view().into_any(),
                        _ => ().into_any(),
                    })}
                </tbody>
            </table>
            <p class="hint" id="allocator-definitions">
                "Waste: the bytes of allocated blocks beyond what was requested (the allocator rounds requests up). Waiting: blocks freed but still used by another stream. Fragmentation: "
                {format::table::FRAGMENTATION_MEANS}
                "; a block serves only requests of its own stream and pool."
            </p>
        </section>
    }
}
