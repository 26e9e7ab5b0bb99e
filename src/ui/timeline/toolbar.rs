//! The timeline's controls: allocations/segments tabs, event/time axis, colouring by role,
//! component or allocation, the reserved line,
//! jump to peak, reset and fit the bytes, the detail control ("draw the N largest", with
//! labelled stops and the count of those at least a pixel tall), search, and the keyboard
//! and mouse reference.

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{HtmlInputElement, KeyboardEvent};

use super::detail::{detail_at, position_of, STEPS, STOPS};
use super::Timeline;
use crate::analysis::axis::AxisMode;
use crate::analysis::categories::labels::role_label;
use crate::analysis::categories::pooled::PoolKind;
use crate::format;
use crate::timeline::colouring::ColourBy;
use crate::timeline::TimelineKind;
use crate::ui::debounce::{Debounce, TYPING_SETTLE};
use crate::ui::segmented::segmented_button;

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
    let no_time = move || (!has_time()).then_some("This trace has no timestamps");
    let enabled = || None;
    let elements = move || tl.info.with(|i| i.as_ref().map_or(0, |i| i.elements));
    let noun = move || match tl.kind.get() {
        TimelineKind::Allocations => "allocations",
        TimelineKind::Segments => "segments",
        TimelineKind::Pool(_) => "blocks",
    };
    // A tab per private pool: its blocks inside its reserved envelope.
    let pools = move || {
        tl.info
            .with(|i| i.as_ref().map(|i| i.pools.clone()).unwrap_or_default())
    };
    let pool_tabs = move || {
        pools()
            .into_iter()
            .map(|mark| {
                let kind = TimelineKind::Pool(mark.pool);
                let (owner, id) = mark.id;
                let what = match mark.kind {
                    PoolKind::Graph => "CUDA graph".to_string(),
                    _ => mark.top_role.map_or("pool".to_string(), |r| role_label(r).to_string()),
                };
                view! {
                    <button
                        type="button"
                        class="segmented"
                        id=format!("timeline-tab-pool-{}", mark.pool)
                        data-pool=format!("{owner},{id}")
                        title=format!("Private pool ({owner}, {id}): {} reserved at the end", format::bytes(mark.reserved_at_end))
                        aria-pressed=move || (tl.kind.get() == kind).to_string()
                        on:click=move |_| {
                            if tl.kind.get_untracked() != kind {
                                tl.kind.set(kind);
                            }
                        }
                    >
                        {format!("Pool ({owner}, {id}) · {what}")}
                    </button>
                }
            })
            .collect_view()
    };
    // The detail the slider points at while it is dragged.
    let preview = RwSignal::new(None::<u32>);
    let detail_shown = move || {
        preview
            .get()
            .unwrap_or_else(|| tl.info.with(|i| i.as_ref().map_or(0, |i| i.detail)))
    };
    let search_input = NodeRef::<leptos::html::Input>::new();
    // What is typed searches once typing pauses, highlighting and counting the matches
    // without moving the view; Enter goes to the first match, then walks them (Shift+Enter
    // back).
    let typing = Debounce::new(TYPING_SETTLE);
    let walked = StoredValue::new(false);
    let on_search_input = move |event: leptos::ev::Event| {
        let query = input_value(&event);
        typing.call(move || {
            walked.set_value(false);
            if query.trim().is_empty() {
                tl.clear_search();
            } else {
                tl.type_search(query);
            }
        });
    };
    let on_search_key = move |event: KeyboardEvent| match event.key().as_str() {
        "Enter" => {
            event.prevent_default();
            typing.cancel();
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
                let nth = if walked.get_value() {
                    tl.match_nth.get_untracked() as i64 + step
                } else {
                    0
                };
                tl.go_to_match(nth);
            } else {
                tl.run_search(query);
            }
            walked.set_value(true);
        }
        "Escape" => {
            typing.cancel();
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
                {segmented_button(tl.kind, TimelineKind::Allocations, "Allocations", "timeline-tab-allocations", enabled)}
                {segmented_button(tl.kind, TimelineKind::Segments, "Segments", "timeline-tab-segments", enabled)}
                {pool_tabs}
            </div>
            <div class="segmented-group" role="group" aria-label="X axis">
                {segmented_button(tl.mode, AxisMode::Events, "Events", "timeline-axis-events", enabled)}
                {segmented_button(tl.mode, AxisMode::Time, "Time", "timeline-axis-time", no_time)}
            </div>
            <div
                class="segmented-group"
                role="group"
                aria-label="Colour by"
                class:hidden=move || tl.kind.get() == TimelineKind::Segments
            >
                {segmented_button(tl.colour_by, ColourBy::Role, "Role", "timeline-colour-role", enabled)}
                {segmented_button(tl.colour_by, ColourBy::Component, "Component", "timeline-colour-component", enabled)}
                {segmented_button(tl.colour_by, ColourBy::Allocation, "Allocation", "timeline-colour-allocation", enabled)}
            </div>
            <label class="check" class:hidden=move || tl.kind.get() == TimelineKind::Segments>
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
            <button type="button" id="timeline-fit-y" class="button quiet" title="Fit the bytes to the view (F); Shift+wheel or a drag along the byte axis zooms them"
                disabled=move || tl.y_range.with(Option::is_none)
                on:click=move |_| tl.fit_y()>
                "Fit bytes"
            </button>
            <div class="detail-control">
                <label class="detail-label" for="timeline-detail">
                    "Draw the "
                    <strong id="timeline-detail-count" data-value=move || detail_shown().to_string()>{move || format::count(detail_shown() as u64)}</strong>
                    {move || format!(" largest of {} {}", format::count(elements() as u64), noun())}
                </label>
                <div class="detail-slider">
                    <input
                        type="range"
                        id="timeline-detail"
                        min="0"
                        max=STEPS.to_string()
                        step="1"
                        aria-label="How many of the largest to draw one by one"
                        prop:value=move || tl.info.with(|i| i.as_ref().map_or(0.0, |i| position_of(i.detail, i.elements))).to_string()
                        on:input=move |e| {
                            let v: f64 = input_value(&e).parse().unwrap_or(0.0);
                            preview.set(Some(detail_at(v, elements())));
                        }
                        on:change=move |e| {
                            let v: f64 = input_value(&e).parse().unwrap_or(0.0);
                            preview.set(None);
                            tl.lay_out(Some(detail_at(v, elements())));
                        }
                    />
                    <div class="detail-stops" aria-hidden="true">
                        {STOPS.iter().map(|&(position, label, _)| view! {
                            <span class="detail-stop" style:left=format!("{}%", position / STEPS * 100.0)>{label}</span>
                        }).collect_view()}
                    </div>
                </div>
                <span class="detail-count" id="timeline-drawn" title="Drawn one by one and at least a pixel tall in this view; thinner ones blend their colours into the pixels they share">
                    {move || {
                        let drawn = tl.frame.with(|f| f.as_ref().map_or(0, |f| f.drawn_individually));
                        format!("{} of {} {} a pixel tall or more", format::count(drawn as u64), format::count(elements() as u64), noun())
                    }}
                </span>
            </div>
            <div class="search" role="search">
                <input
                    type="search"
                    id="timeline-search"
                    node_ref=search_input
                    prop:value=move || tl.cx.search.get()
                    placeholder="Search address or frame (Ctrl+F)"
                    aria-label="Search by address (0x…) or frame text; Enter for next match"
                    on:input=on_search_input
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
                {move || tl.search.with(|s| s.as_ref().filter(|s| s.count > 0).map(|s| view! {
                    <span class="search-totals hint" id="timeline-search-totals"
                        data-bytes-at-peak=s.bytes_at_peak.to_string() data-largest=s.largest.to_string()
                        title="The matches are walked largest first; the allocations table below lists them all">
                        {format!("{} live at the peak · largest {}", format::bytes(s.bytes_at_peak), format::bytes(s.largest))}
                    </span>
                }))}
                <button type="button" id="timeline-search-prev" class="button quiet" aria-label="Previous match"
                    disabled=move || tl.search.with(|s| s.as_ref().is_none_or(|s| s.count == 0))
                    on:click=move |_| tl.go_to_match(tl.match_nth.get_untracked() as i64 - 1)>"↑"</button>
                <button type="button" id="timeline-search-next" class="button quiet" aria-label="Next match"
                    disabled=move || tl.search.with(|s| s.as_ref().is_none_or(|s| s.count == 0))
                    on:click=move |_| tl.go_to_match(tl.match_nth.get_untracked() as i64 + 1)>"↓"</button>
            </div>
            <button type="button" id="timeline-help-button" class="button quiet round" title="Keyboard and mouse (?)"
                aria-expanded=move || tl.show_help.get().to_string()
                on:click=move |_| tl.show_help.update(|shown| *shown = !*shown)>"?"</button>
        </div>
    }
}
