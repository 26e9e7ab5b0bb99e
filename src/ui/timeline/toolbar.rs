//! The timeline's controls: allocations/segments tabs, event/time axis, the reserved line,
//! jump to peak and reset, the detail control with its honest count, and search.

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{HtmlInputElement, KeyboardEvent};

use super::Timeline;
use crate::format;
use crate::timeline::{AxisMode, TimelineKind};

/// Positions of the detail slider; detail grows exponentially along it.
const DETAIL_STEPS: f64 = 1000.0;

/// Detail at slider position `v` for `elements` elements (0 at the left, all at the right).
pub fn detail_at(v: f64, elements: u32) -> u32 {
    let top = (elements as f64 + 1.0).ln();
    ((v / DETAIL_STEPS * top).exp() - 1.0)
        .round()
        .clamp(0.0, elements as f64) as u32
}

/// Slider position of `detail`.
pub fn position_of(detail: u32, elements: u32) -> f64 {
    let top = (elements as f64 + 1.0).ln();
    if top <= 0.0 {
        return DETAIL_STEPS;
    }
    ((detail as f64 + 1.0).ln() / top * DETAIL_STEPS).round()
}

fn input_value(event: &leptos::ev::Event) -> String {
    event
        .target()
        .and_then(|t| t.dyn_into::<HtmlInputElement>().ok())
        .map(|i| i.value())
        .unwrap_or_default()
}

#[component]
pub fn TimelineToolbar(tl: Timeline) -> impl IntoView {
    let has_time = move || tl.info.with(|i| i.as_ref().is_some_and(|i| i.has_time));
    let kind_button = move |kind: TimelineKind, label: &'static str, id: &'static str| {
        view! {
            <button
                type="button"
                id=id
                class="segmented"
                aria-pressed=move || (tl.kind.get() == kind).to_string()
                on:click=move |_| {
                    if tl.kind.get_untracked() != kind {
                        tl.kind.set(kind);
                    }
                }
            >
                {label}
            </button>
        }
    };
    let mode_button = move |mode: AxisMode, label: &'static str, id: &'static str| {
        view! {
            <button
                type="button"
                id=id
                class="segmented"
                aria-pressed=move || (tl.mode.get() == mode).to_string()
                disabled=move || mode == AxisMode::Time && !has_time()
                title=move || if mode == AxisMode::Time && !has_time() { "This trace has no timestamps" } else { "" }
                on:click=move |_| tl.mode.set(mode)
            >
                {label}
            </button>
        }
    };
    let elements = move || tl.info.with(|i| i.as_ref().map_or(0, |i| i.elements));
    let noun = move || match tl.kind.get() {
        TimelineKind::Allocations => "allocations",
        TimelineKind::Segments => "segments",
    };
    let search_input = NodeRef::<leptos::html::Input>::new();
    let on_search_key = move |event: KeyboardEvent| match event.key().as_str() {
        "Enter" => {
            event.prevent_default();
            let query = search_input
                .get_untracked()
                .map(|i| i.value())
                .unwrap_or_default();
            let searching = tl
                .search
                .with_untracked(|s| s.as_ref().map(|s| s.query.clone()));
            if query.trim().is_empty() {
                tl.clear_search();
            } else if searching.as_deref() == Some(query.as_str()) {
                let step = if event.shift_key() { -1 } else { 1 };
                tl.go_to_match(tl.match_nth.get_untracked() as i64 + step);
            } else {
                tl.run_search(query);
            }
        }
        "Escape" => {
            if let Some(input) = search_input.get_untracked() {
                input.set_value("");
                let _ = input.blur();
            }
            tl.clear_search();
        }
        _ => {}
    };

    view! {
        <div class="timeline-toolbar">
            <div class="segmented-group" role="group" aria-label="Timeline">
                {kind_button(TimelineKind::Allocations, "Allocations", "timeline-tab-allocations")}
                {kind_button(TimelineKind::Segments, "Segments", "timeline-tab-segments")}
            </div>
            <div class="segmented-group" role="group" aria-label="X axis">
                {mode_button(AxisMode::Events, "Events", "timeline-axis-events")}
                {mode_button(AxisMode::Time, "Time", "timeline-axis-time")}
            </div>
            <label class="check" class:hidden=move || tl.kind.get() != TimelineKind::Allocations>
                <input
                    type="checkbox"
                    id="timeline-reserved-line"
                    prop:checked=move || tl.show_line.get()
                    on:change=move |e| tl.show_line.set(event_target_checked(&e))
                />
                "Reserved line"
            </label>
            <button type="button" id="timeline-peak" class="button" on:click=move |_| tl.jump_to_peak()>
                "Jump to peak"
            </button>
            <button type="button" id="timeline-reset" class="button quiet" title="Show the whole run (0)" on:click=move |_| tl.reset()>
                "Reset"
            </button>
            <div class="detail-control">
                <input
                    type="range"
                    id="timeline-detail"
                    min="0"
                    max=DETAIL_STEPS.to_string()
                    step="1"
                    aria-label="Detail: how many of the largest elements to draw individually"
                    prop:value=move || tl.info.with(|i| i.as_ref().map_or(0.0, |i| position_of(i.detail, i.elements))).to_string()
                    on:change=move |e| {
                        let v: f64 = input_value(&e).parse().unwrap_or(0.0);
                        tl.lay_out(Some(detail_at(v, elements())));
                    }
                />
                <span class="detail-count" id="timeline-drawn">
                    {move || {
                        let drawn = tl.frame.with(|f| f.as_ref().map_or(0, |f| f.drawn_individually));
                        format!("{} of {} {} drawn", format::count(drawn as u64), format::count(elements() as u64), noun())
                    }}
                </span>
            </div>
            <div class="search" role="search">
                <input
                    type="search"
                    id="timeline-search"
                    node_ref=search_input
                    placeholder="Search address or frame (Ctrl+F)"
                    aria-label="Search by address (0x…) or frame text; Enter for next match"
                    on:keydown=on_search_key
                />
                <span class="search-count" id="timeline-search-count" aria-live="polite">
                    {move || tl.search.with(|s| s.as_ref().map(|s| {
                        if !s.valid {
                            String::new()
                        } else if s.count == 0 {
                            "no match".to_string()
                        } else {
                            format!("{} of {} ({} drawn)", format::count(tl.match_nth.get() as u64 + 1), format::count(s.count as u64), format::count(s.drawn as u64))
                        }
                    }).unwrap_or_default())}
                </span>
                <button type="button" id="timeline-search-prev" class="button quiet" aria-label="Previous match"
                    disabled=move || tl.search.with(|s| s.as_ref().is_none_or(|s| s.count == 0))
                    on:click=move |_| tl.go_to_match(tl.match_nth.get_untracked() as i64 - 1)>"↑"</button>
                <button type="button" id="timeline-search-next" class="button quiet" aria-label="Next match"
                    disabled=move || tl.search.with(|s| s.as_ref().is_none_or(|s| s.count == 0))
                    on:click=move |_| tl.go_to_match(tl.match_nth.get_untracked() as i64 + 1)>"↓"</button>
            </div>
        </div>
    }
}
