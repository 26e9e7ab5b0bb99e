//! The timeline of one device as a Leptos component ([`TimelinePanel`]): its section, with
//! the toolbar, the legend, the plot, the minimap and the pinned element's details, and the
//! effects that tie it to the page: the layout follows the kind shown, frames follow every
//! change of the view, the address follows the view, and the allocation selected, the moment
//! picked and the category highlighted are shared with the file's other views. Also the plot's
//! share of the window's height, remembered.
//!
//! Not the place for the view state or for what is asked of the worker (`view.rs`,
//! `client.rs`).

use leptos::prelude::*;

use super::view::Timeline;
use super::{details, help, legend, minimap, plot, toolbar};
use crate::analysis::axis::AxisMode;
use crate::analysis::categories::Dimension;
use crate::timeline::colouring::ColourBy;
use crate::timeline::service::{FrameInfo, TimelineInfo};
use crate::timeline::TimelineKind;
use crate::ui::actions::use_actions;
use crate::ui::file_context::use_file;
use crate::ui::state::FileId;

/// The timeline section of a device.
#[component]
pub fn TimelinePanel(
    file: FileId,
    device: u32,
    /// Follows the system's theme.
    dark: RwSignal<bool>,
    /// Set once the first frame (or why there is none) is on screen.
    painted: RwSignal<bool>,
) -> impl IntoView {
    let actions = use_actions();
    let cx = use_file();

    let tl = Timeline::new(file, device, actions, cx, dark, painted);
    tl.expect_size();
    if let Some(link) = cx.link.restoring(file, Some(device)) {
        tl.restore_from(link);
    }
    tl.adopt_first_view();

    // Lay out again when the kind changes (at the detail a link asks for, the first time);
    // frames follow every change of the view.
    Effect::new(move |_| {
        let kind = tl.kind.get();
        tl.show_kind(kind);
    });
    // The timeline's part of the page's address.
    Effect::new(move |_| {
        if let Some((part, pin)) = tl.link_part() {
            cx.link.set(|l| {
                l.timeline = part;
                l.pin = pin;
            });
        }
    });
    // Another view asked to see an allocation: pin it on the allocations timeline, centred,
    // and bring the timeline into view (not on mounting: the request was for an earlier view).
    Effect::new(move |mounted: Option<()>| {
        let shown = cx.shown.get();
        let Some((for_device, element)) = shown.filter(|_| mounted.is_some()) else {
            return;
        };
        if for_device != device {
            return;
        }
        tl.pin_on_allocations(element);
        if let Some(root) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id("timeline"))
        {
            root.scroll_into_view();
        }
    });
    // The pinned allocation is the one selected in every view; an allocation selected in
    // another view (a table row) is pinned here, without moving the page.
    Effect::new(move |_| {
        let pinned = tl.pinned.with(|p| {
            p.as_ref()
                .map(|d| (d.kind == TimelineKind::Allocations).then_some(d.index))
        });
        match pinned {
            Some(Some(element)) => cx.select(Some((device, element))),
            Some(None) => {}
            None => {
                if cx
                    .selected
                    .get_untracked()
                    .is_some_and(|(d, _)| d == device)
                {
                    cx.select(None);
                }
            }
        }
    });
    Effect::new(move |mounted: Option<()>| {
        let selected = cx.selected.get();
        if mounted.is_none() {
            return;
        }
        let pinned = tl.pinned.with_untracked(|p| {
            p.as_ref()
                .filter(|d| d.kind == TimelineKind::Allocations)
                .map(|d| d.index)
        });
        match selected {
            Some((for_device, element)) if for_device == device && pinned != Some(element) => {
                tl.pin_on_allocations(element);
            }
            None if pinned.is_some() => tl.unpin(),
            _ => {}
        }
    });
    // What the timeline shows is the table's "window" scope.
    Effect::new(move |_| {
        let range = tl.range.get();
        let mode = tl.mode.get();
        if tl.info.with(Option::is_some) {
            cx.window.set(Some((device, mode, range.x0, range.x1)));
        }
    });
    // A category picked in another view (a chart, a legend) shows on the timeline: colour by
    // its dimension.
    Effect::new(move |mounted: Option<()>| {
        let Some(category) = cx.highlight.get().filter(|_| mounted.is_some()) else {
            return;
        };
        if tl.colour_by.get_untracked().dimension() != Some(category.dimension) {
            tl.colour_by.set(match category.dimension {
                Dimension::Role => ColourBy::Role,
                Dimension::Component => ColourBy::Component,
            });
        }
    });
    Effect::new(move |previous: Option<AxisMode>| {
        let mode = tl.mode.get();
        if previous.is_some_and(|p| p != mode) {
            tl.reset();
            tl.request_minimap();
        }
        mode
    });
    Effect::new(move |_| {
        tl.range.track();
        tl.y_range.track();
        tl.size.track();
        tl.dark.track();
        tl.show_line.track();
        tl.pinned.with(|p| p.as_ref().map(|d| d.index));
        tl.search.track();
        tl.colour_by.track();
        cx.generation.track();
        cx.highlight.track();
        tl.request_frame();
    });
    Effect::new(move |previous: Option<f64>| {
        let width = tl.size.get().0;
        if previous.is_some_and(|p| (p - width).abs() > 0.5) {
            tl.request_minimap();
        }
        width
    });

    let info = tl.info;
    let frame = tl.frame;
    let range = tl.range;
    let attr = move |f: fn(&TimelineInfo) -> String| {
        move || info.with(|i| i.as_ref().map(f).unwrap_or_default())
    };
    let frame_attr = move |f: fn(&FrameInfo) -> String| {
        move || frame.with(|i| i.as_ref().map(f).unwrap_or_default())
    };

    view! {
        <section
            class="panel timeline"
            id="timeline"
            data-device=device.to_string()
            data-kind=move || match tl.kind.get() { TimelineKind::Allocations => "allocations", TimelineKind::Segments => "segments", TimelineKind::Pool(_) => "pool" }
            data-pool=move || match tl.kind.get() {
                TimelineKind::Pool(k) => info.with(|i| {
                    i.as_ref()
                        .and_then(|i| i.pools.iter().find(|p| p.pool == k))
                        .map(|p| format!("{},{}", p.id.0, p.id.1))
                        .unwrap_or_default()
                }),
                _ => String::new(),
            }
            data-mode=move || match tl.mode.get() { AxisMode::Events => "events", AxisMode::Time => "time" }
            data-ready=move || info.with(|i| i.is_some()).to_string()
            data-view-start=move || range.get().x0.to_string()
            data-view-end=move || range.get().x1.to_string()
            data-states=attr(|i| i.states.to_string())
            data-elements=attr(|i| i.elements.to_string())
            data-detail=attr(|i| i.detail.to_string())
            data-default-detail=attr(|i| i.default_detail.to_string())
            data-peak-state=attr(|i| i.peak_state.to_string())
            data-peak-bytes=attr(|i| i.peak_bytes.to_string())
            data-layout-ms=attr(|i| i.layout_ms.to_string())
            data-full-start=move || tl.full().map(|w| w.x0.to_string()).unwrap_or_default()
            data-full-end=move || tl.full().map(|w| w.x1.to_string()).unwrap_or_default()
            data-frames-painted=move || tl.frames_painted.get().to_string()
            data-first-frame=move || if tl.first_with_file.get() { "with-file" } else { "asked" }
            data-pinned=move || tl.pinned.with(|p| p.as_ref().map(|d| d.index.to_string()).unwrap_or_default())
            data-pinned-oom=move || tl.pinned_oom.with(|p| p.as_ref().map(|o| o.nth.to_string()).unwrap_or_default())
            data-search-count=move || tl.search.with(|s| s.as_ref().map(|s| s.count.to_string()).unwrap_or_default())
            data-y-zoomed=move || tl.y_range.with(Option::is_some).to_string()
            data-colour-by=move || match tl.colour_by.get() { ColourBy::Allocation => "allocation", ColourBy::Role => "role", ColourBy::Component => "component" }
        >
            <toolbar::TimelineToolbar tl=tl />
            <legend::Legend tl=tl />
            {move || tl.error.get().map(|message| view! { <p class="timeline-error" role="alert">{message}</p> })}
            <div class="timeline-body">
            <div class="timeline-main">
            // The frame on screen (exact values for tests and benchmarks).
            <div
                class="timeline-frame"
                id="timeline-frame"
                data-y-min=frame_attr(|f| f.y_min.to_string())
                data-y-max=frame_attr(|f| f.y_max.to_string())
                data-width=frame_attr(|f| f.view.width.to_string())
                data-height=frame_attr(|f| f.view.height.to_string())
                data-first-state=frame_attr(|f| f.first_state.map(|s| s.to_string()).unwrap_or_default())
                data-last-state=frame_attr(|f| f.last_state.map(|s| s.to_string()).unwrap_or_default())
                data-peak-bytes=frame_attr(|f| f.peak_bytes.to_string())
                data-drawn=frame_attr(|f| f.drawn_individually.to_string())
                data-paint-ms=frame_attr(|f| f.paint_ms.to_string())
            >
                <plot::Plot tl=tl />
            </div>
            <minimap::Minimap tl=tl />
            </div>
            // Beside the plot on wide screens, below it on narrow ones.
            <aside class="timeline-pane" id="timeline-pane" aria-label="Pinned" style:--plot-height=move || format!("{}px", tl.size.get().1)>
                <details::PinnedDetails tl=tl />
            </aside>
            </div>
            <help::Help tl=tl />
        </section>
    }
}
