//! The table's header (click a column to sort by it, again to reverse; grouped, the groups'
//! own header above it) and its lines,
//! virtualised: a scroll box as tall as every line would be, holding only the lines the worker
//! sent for the part in view. Arrow keys move the selection; Enter opens or closes a group.

use leptos::prelude::*;
use web_sys::KeyboardEvent;

use super::{event_text, lifetime_text, TableState, LINE_HEIGHT};
use crate::format;
use crate::format::breakdown::{component_label, phase_label, role_label};
use crate::table::columns::TableRow;
use crate::table::groups::{GroupLine, Line};
use crate::table::{Column, Sort};
use crate::analysis::lines::SourcePlace;
use crate::ui::widgets::source_button::SourceButton;

/// Columns as the header shows them.
/// Who made an allocation comes right after its size: it is what users look for first, and
/// it must be on screen at 1440 px; the address and stream come last.
const COLUMNS: [(Column, &str); 13] = [
    (Column::Size, "Size"),
    (Column::Requested, "Requested"),
    (Column::TopFrame, "Made by"),
    (Column::Role, "Role"),
    (Column::Component, "Component"),
    (Column::Phase, "Phase"),
    (Column::Allocated, "Allocated"),
    (Column::Freed, "Freed"),
    (Column::Lifetime, "Lifetime"),
    (Column::Address, "Address"),
    (Column::Stream, "Stream"),
    // Only for files that record tensors' shapes.
    (Column::Shape, "Shape"),
    // Only for devices with private pools.
    (Column::Pool, "Pool"),
];

#[component]
pub fn Grid(table: TableState) -> impl IntoView {
    let has_shapes = Memo::new(move |_| {
        table
            .view
            .with(|v| matches!(v, Some(Ok(v)) if v.has_shapes))
    });
    let has_pools = Memo::new(move |_| {
        table
            .view
            .with(|v| matches!(v, Some(Ok(v)) if v.has_pools))
    });
    let header = move || {
        COLUMNS
        .into_iter()
        .filter(|&(column, _)| match column {
            Column::Shape => has_shapes.get(),
            Column::Pool => has_pools.get(),
            _ => true,
        })
        .map(|(column, label)| {
            let sorted = move || table.sort.with(|s| (s.column == column).then_some(s.descending));
            view! {
                <div role="columnheader" class="th" data-column=column.key()
                    aria-sort=move || match sorted() { Some(true) => "descending", Some(false) => "ascending", None => "none" }>
                    <button type="button" class="sort-button" id=format!("table-sort-{}", column.key())
                        on:click=move |_| {
                            let current = table.sort.get_untracked();
                            // Sizes and times read best largest or latest first; text A to Z.
                            let descending = if current.column == column {
                                !current.descending
                            } else {
                                column != Column::TopFrame
                            };
                            table.sort.set(Sort { column, descending });
                        }>
                        {label}
                        {move || match sorted() { Some(true) => " ▾", Some(false) => " ▴", None => "" }}
                    </button>
                </div>
            }
        })
        .collect_view()
    };
    let line_count = move || {
        table.view.with(|v| {
            v.as_ref()
                .and_then(|v| v.as_ref().ok())
                .map_or(0, |v| v.line_count)
        })
    };
    let lines = move || {
        table.view.with(|v| {
            let Some(Ok(v)) = v else {
                return Vec::new();
            };
            let origin = v.time_origin_us.map(|t| t as f64);
            v.lines
                .iter()
                .enumerate()
                .map(|(k, line)| {
                    let at = v.first + k as u64;
                    match line {
                        Line::Group(group) => group_line(table, group.clone(), at).into_any(),
                        Line::Row { depth, row } => {
                            row_line(table, row.clone(), *depth, at, origin, v.has_shapes, v.has_pools)
                                .into_any()
                        }
                    }
                })
                .collect::<Vec<_>>()
        })
    };
    let on_key = move |event: KeyboardEvent| {
        let step: i64 = match event.key().as_str() {
            "ArrowDown" => 1,
            "ArrowUp" => -1,
            "Enter" => {
                table.toggle_selected_group();
                return;
            }
            _ => return,
        };
        event.prevent_default();
        table.move_selection(step);
    };
    view! {
        <div class="table-grid" class:with-shapes=has_shapes class:with-pools=has_pools role="table" aria-label="Allocations" aria-rowcount=move || line_count().to_string()>
            // Grouped, the groups' lines have their own columns (bytes, share, the group),
            // headed above the allocations' header that the rows of an open group follow.
            {move || table.group_by.get().map(|by| view! {
                <div class="tr header group-header" role="row" id="table-group-header" data-group-by=by.key()>
                    <div role="columnheader" class="th num">"Group size"</div>
                    <div role="columnheader" class="th num">"Requested"</div>
                    <div role="columnheader" class="th share-head">"Share of the requested bytes"</div>
                    <div role="columnheader" class="th group-head">
                        {let words = super::toolbar::group_label(by); format!("{}{} · allocations", words[..1].to_uppercase(), &words[1..])}
                    </div>
                </div>
            })}
            <div class="tr header" class:rows-header=move || table.group_by.with(Option::is_some) role="row">
                {move || table.group_by.with(Option::is_some).then(|| view! { <span class="visually-hidden">"Allocations in an open group: "</span> })}
                {header}
            </div>
            <div class="table-scroll" node_ref=table.scroller tabindex="0" id="table-scroll"
                style:height=format!("{}px", LINE_HEIGHT * super::LINES_SHOWN as f64)
                on:scroll=move |_| table.scrolled()
                on:keydown=on_key>
                <div class="table-space" role="rowgroup" style:height=move || format!("{}px", line_count() as f64 * LINE_HEIGHT)>
                    {lines}
                </div>
                {move || (line_count() == 0 && table.view.with(|v| matches!(v, Some(Ok(_))))).then(|| view! {
                    <p class="hint table-empty" id="table-empty">"No allocation matches."</p>
                })}
            </div>
        </div>
    }
}

fn top(at: u64) -> String {
    format!("{}px", at as f64 * LINE_HEIGHT)
}

fn group_line(table: TableState, group: GroupLine, at: u64) -> impl IntoView {
    let path = group.path.clone();
    let selected = move || table.focused_group.with(|f| f.as_ref() == Some(&path));
    let path = group.path.clone();
    let toggle_path = group.path.clone();
    let share = (group.share * 100.0).clamp(0.0, 100.0);
    view! {
        <div class="tr group" role="row" style:top=top(at)
            data-line=at.to_string()
            data-path=group.path.join("/")
            data-depth=group.depth.to_string()
            data-count=group.count.to_string()
            data-requested-bytes=group.requested_bytes.to_string()
            data-size-bytes=group.size_bytes.to_string()
            data-occurrences=group.occurrences.to_string()
            aria-expanded=group.open.to_string()
            aria-selected=move || selected().to_string()
            on:click=move |_| {
                table.focused_group.set(Some(path.clone()));
                table.toggle(toggle_path.clone());
            }>
            <div class="td num" role="cell" title=format!("{} bytes in blocks", format::count(group.size_bytes))>{format::bytes(group.size_bytes)}</div>
            <div class="td num" role="cell" title=format!("{} bytes requested", format::count(group.requested_bytes))>{format::bytes(group.requested_bytes)}</div>
            <div class="td share" role="cell" title="Share of the scope's requested bytes">
                <span class="share-bar" style:width=format!("{share:.1}%")></span>
                <span class="share-text">{format::percent_ppm((group.share * 1e6).round() as u64)}</span>
            </div>
            <div class="td group-label" role="cell" style:padding-left=format!("{}em", group.depth as f64 * 1.2)>
                <span class="disclosure" aria-hidden="true">{if group.open { "▾ " } else { "▸ " }}</span>
                // Before the label, which a long path cuts.
                {group.place.clone().map(|place| view! {
                    <SourceButton place=place />
                })}
                <span class="group-name" class:user=group.user title=group.label.clone()>{group.label.clone()}</span>
                <span class="group-count">{format!(" · {} allocation{}", format::count(group.count as u64), if group.count == 1 { "" } else { "s" })}</span>
            </div>
        </div>
    }
}

fn row_line(
    table: TableState,
    row: TableRow,
    depth: u32,
    at: u64,
    origin: Option<f64>,
    shapes: bool,
    pools: bool,
) -> impl IntoView {
    let element = row.index;
    let selected = move || {
        table
            .selected
            .with(|s| s.as_ref().is_some_and(|r| r.index == element))
    };
    let event = |e, time, none| event_text(e, time, origin, none);
    let lifetime = lifetime_text(&row);
    // Shown by its file's name, line and function, whole in the tooltip; the code that freed
    // an allocation from before the trace says so.
    let freed_by = row.alloc_event.is_none() && row.free_event.is_some();
    let (frame, frame_title) = match &row.top_frame {
        Some(f) if freed_by => (
            format!("freed by {}", format::frame_short(f)),
            format!("Made before the trace; freed by {f}"),
        ),
        Some(f) => (format::frame_short(f), f.clone()),
        None => ("(no frame)".to_string(), "No frame recorded".to_string()),
    };
    // The line of Python code that made it opens in the source view (not the code that freed
    // it: the view counts where memory was made).
    let place = (!freed_by)
        .then(|| row.top_frame.as_deref().and_then(SourcePlace::of_frame_text))
        .flatten();
    let chosen = row.clone();
    view! {
        <div class="tr row" role="row" style:top=top(at)
            data-line=at.to_string()
            data-allocation=row.allocation.to_string()
            data-element=row.index.to_string()
            data-size-bytes=row.size_bytes.to_string()
            data-requested-bytes=row.requested_bytes.to_string()
            data-address=row.address.to_string()
            data-role=row.role.key()
            data-pool=format!("{},{}", row.pool.0, row.pool.1)
            data-component=row.component.key()
            aria-selected=move || selected().to_string()
            on:click=move |_| table.select(chosen.clone())>
            <div class="td num" role="cell" title=format!("{} bytes in the block", format::count(row.size_bytes))
                style:padding-left=format!("{}em", depth as f64 * 1.2)>{format::bytes(row.size_bytes)}</div>
            <div class="td num" role="cell" title=format!("{} bytes requested", format::count(row.requested_bytes))>{format::bytes(row.requested_bytes)}</div>
            <div class="td frame-cell" role="cell" class:user=row.top_frame_is_user class:freed-by=freed_by title=frame_title>
                {place.map(|place| view! { <SourceButton place=place /> })}
                <span class="frame-label">{frame}</span>
            </div>
            <div class="td" role="cell" title=role_label(row.role)>{role_label(row.role)}</div>
            <div class="td" role="cell" title=component_label(row.component)>{component_label(row.component)}</div>
            <div class="td" role="cell">{row.phase.map_or("before the trace", phase_label)}</div>
            <div class="td" role="cell">{event(row.alloc_event, row.alloc_time_us, "before the trace")}</div>
            <div class="td" role="cell">{event(row.free_event, row.free_time_us, "alive at the end")}</div>
            <div class="td" role="cell">{lifetime}</div>
            <div class="td mono" role="cell">{format!("{:#x}", row.address)}</div>
            <div class="td mono" role="cell">{format!("{:#x}", row.stream)}</div>
            {shapes.then(|| {
                let shape = row.shape.clone().unwrap_or_default();
                let title = shape.clone();
                view! { <div class="td mono shape-cell" role="cell" title=title>{shape}</div> }
            })}
            {pools.then(|| {
                let (owner, id) = row.pool;
                view! { <div class="td mono pool-cell" role="cell" data-pool=format!("{owner},{id}")>{format!("({owner}, {id})")}</div> }
            })}
        </div>
    }
}
