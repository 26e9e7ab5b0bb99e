//! The table's controls — scope, grouping, filters (frame text or a regular expression, sizes,
//! role, component, stream), the CSV download — and its totals.

use leptos::prelude::*;

use super::{TablePick, TableState};
use crate::analysis::categories::{Category, Component, Dimension, Role};
use crate::format;
use crate::format::breakdown::{component_label, role_label};
use crate::table::filter::{parse_bytes, parse_stream};
use crate::table::GroupBy;
use crate::ui::debounce::{Debounce, TYPING_SETTLE};
use crate::ui::moment_notice::MomentNotice;
use crate::ui::redact_paths::RedactPaths;
use crate::ui::segmented::segmented_button;

/// What each grouping is called.
pub fn group_label(by: GroupBy) -> &'static str {
    match by {
        GroupBy::CallSite => "call site",
        GroupBy::Stack => "full stack",
        GroupBy::File => "file",
        GroupBy::Role => "role",
        GroupBy::Component => "component",
        GroupBy::Phase => "phase",
        GroupBy::Module => "model module",
        GroupBy::Pool => "pool",
    }
}

#[component]
pub fn TableToolbar(table: TableState, file_name: String) -> impl IntoView {
    let redact = RedactPaths::in_context();
    let cx = table.cx;
    let no_pick = move || {
        cx
            .picked
            .with(Option::is_none)
            .then_some("Click the timeline to pick a moment first.")
    };
    let size_error = RwSignal::new(None::<String>);
    // The frame filter applies as the user types, once typing pauses; Enter applies at once.
    let typing = Debounce::new(TYPING_SETTLE);
    // What a field holds when the toolbar appears (a link may have set it), exact.
    let initial = |signal: RwSignal<Option<u64>>| signal.get_untracked().map(|n| n.to_string());
    let bytes_input = move |signal: RwSignal<Option<u64>>| {
        move |ev| match parse_bytes(&event_target_value(&ev)) {
            Ok(value) => {
                size_error.set(None);
                if signal.get_untracked() != value {
                    signal.set(value);
                }
            }
            Err(why) => size_error.set(Some(why)),
        }
    };
    let highlight_select = move |dimension: Dimension| {
        move |ev| {
            let key = event_target_value(&ev);
            let index = (0..dimension.categories()).find(|&k| dimension.key(k) == key);
            let picked = index.map(|index| Category {
                dimension,
                index: index as u32,
            });
            let current = cx.highlight.get_untracked();
            match picked {
                Some(c) if current != Some(c) => cx.highlight.set(Some(c)),
                None if current.is_some_and(|c| c.dimension == dimension) => {
                    cx.highlight.set(None)
                }
                _ => {}
            }
        }
    };
    let selected_key = move |dimension: Dimension| {
        move || {
            cx
                .highlight
                .get()
                .filter(|c| c.dimension == dimension)
                .map(|c| dimension.key(c.index as usize).to_string())
                .unwrap_or_default()
        }
    };
    let file_name = StoredValue::new(file_name);
    view! {
        <div class="table-toolbar" role="toolbar" aria-label="Allocations table">
            <div class="segmented-group" role="group" aria-label="Which allocations">
                {segmented_button(table.pick, TablePick::Peak, "At the peak", "table-scope-peak", || None)}
                {segmented_button(table.pick, TablePick::Picked, "At the picked moment", "table-scope-picked", no_pick)}
                {segmented_button(table.pick, TablePick::End, "At the end", "table-scope-end", || None)}
                {segmented_button(table.pick, TablePick::Window, "Made in the timeline's view", "table-scope-window", || None)}
                {segmented_button(table.pick, TablePick::All, "All", "table-scope-all", || None)}
            </div>
            {move || {
                // A moment other than the peak is said, with the way back.
                let away = match table.pick.get() {
                    TablePick::Peak | TablePick::All => return None,
                    TablePick::End => "alive at the end".to_string(),
                    TablePick::Window => "made in the timeline's view".to_string(),
                    TablePick::Picked => match cx.picked.get() {
                        Some(state) => format!("alive {}", format::after_state(state)),
                        None => return None,
                    },
                };
                Some(view! {
                    <MomentNotice id="table-moment-notice" back_id="table-back-to-peak"
                        words=away back=move |()| table.pick.set(TablePick::Peak) />
                })
            }}
            <label class="field">
                "Group by "
                <select id="table-group-by" on:change=move |ev| {
                    let key = event_target_value(&ev);
                    let by = GroupBy::ALL.into_iter().find(|g| g.key() == key);
                    if table.group_by.get_untracked() != by {
                        table.open.set(Vec::new());
                        table.group_by.set(by);
                    }
                }>
                    <option value="" selected=move || table.group_by.get().is_none()>"nothing (every row)"</option>
                    {GroupBy::ALL.into_iter().map(|by| view! {
                        <option value=by.key() selected=move || table.group_by.get() == Some(by)>{group_label(by)}</option>
                    }).collect_view()}
                </select>
            </label>
            <label class="field grow">
                "Frame "
                <input type="search" id="table-filter" placeholder="file, function or 0x address"
                    prop:value=move || table.text.get()
                    on:input=move |ev| {
                        let text = event_target_value(&ev);
                        typing.call(move || { let _ = table.text.try_set(text); });
                    }
                    on:change=move |ev| {
                        typing.cancel();
                        table.text.set(event_target_value(&ev));
                    } />
            </label>
            <label class="check">
                <input type="checkbox" id="table-regex" prop:checked=move || table.regex.get()
                    on:change=move |ev| table.regex.set(event_target_checked(&ev)) />
                "regex"
            </label>
            <label class="field">
                "Size from "
                <input type="text" id="table-min-size" size="8" placeholder="0" value=initial(table.min_bytes) on:change=bytes_input(table.min_bytes) />
            </label>
            <label class="field">
                "to "
                <input type="text" id="table-max-size" size="8" placeholder="any" value=initial(table.max_bytes) on:change=bytes_input(table.max_bytes) />
            </label>
            <label class="field">
                "Role "
                <select id="table-role" prop:value=selected_key(Dimension::Role) on:change=highlight_select(Dimension::Role)>
                    <option value="">"any"</option>
                    {Role::ALL.into_iter().map(|r| view! { <option value=r.key()>{role_label(r)}</option> }).collect_view()}
                </select>
            </label>
            <label class="field">
                "Component "
                <select id="table-component" prop:value=selected_key(Dimension::Component) on:change=highlight_select(Dimension::Component)>
                    <option value="">"any"</option>
                    {Component::ALL.into_iter().map(|c| view! { <option value=c.key()>{component_label(c)}</option> }).collect_view()}
                </select>
            </label>
            <label class="field">
                "Stream "
                <input type="text" id="table-stream" size="10" placeholder="any" value=initial(table.stream) on:change=move |ev| {
                    match parse_stream(&event_target_value(&ev)) {
                        Ok(stream) => { size_error.set(None); table.stream.set(stream) }
                        Err(why) => size_error.set(Some(why)),
                    }
                } />
            </label>
            <button type="button" class="button" id="table-csv"
                title="Download the table as it is filtered, sorted and grouped"
                on:click=move |_| table.download_csv(file_name.get_value(), RedactPaths::on(redact))>
                "CSV"
            </button>
            {move || table.csv_status.get().map(|s| view! { <span class="hint" id="table-csv-status">{s}</span> })}
            {move || size_error.get().map(|why| view! { <p class="view-error" id="table-input-error" role="alert">{why}</p> })}
        </div>
    }
}

/// What the chosen allocations add up to.
#[component]
pub fn Totals(table: TableState) -> impl IntoView {
    move || {
        table.view.with(|v| match v {
            None => view! { <p class="pending" aria-busy="true">"Listing the allocations…"</p> }.into_any(),
            Some(Err(why)) => view! { <p class="view-error" id="table-error" role="alert">{why.clone()}</p> }.into_any(),
            Some(Ok(v)) => {
                let t = &v.totals;
                let of = match v.query.scope {
                    crate::table::Scope::Peak => "live at the peak",
                    crate::table::Scope::End => "live at the end",
                    crate::table::Scope::State(_) => "live at the picked moment",
                    crate::table::Scope::Window { .. } => "made in the timeline's view",
                    crate::table::Scope::All => "ever allocated",
                };
                view! {
                    <p class="table-totals" id="table-totals">
                        <strong>{format!("{} allocations", format::count(t.count as u64))}</strong>
                        {format!(
                            " · {} requested ({} in blocks) · {} of the {} {of} · largest {}",
                            format::bytes(t.requested_bytes),
                            format::bytes(t.size_bytes),
                            format::percent_ppm((t.share * 1e6).round() as u64),
                            format::bytes(t.scope_bytes),
                            format::bytes(t.largest),
                        )}
                    </p>
                    {v.problem.clone().map(|p| view! { <p class="view-error" id="table-problem" role="alert">{p}</p> })}
                }
                .into_any()
            }
        })
    }
}
