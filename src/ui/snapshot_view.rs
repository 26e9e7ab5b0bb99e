//! A decoded snapshot: the file's header (name, size, decode time), the device picker, and
//! the views of the selected device: the answer first (the overview strip), its warnings, its
//! timeline, the views under it and the overview's every number — or, embedded in another
//! page, only the view the embedding asks for.
//!
//! Asks for nothing itself: overviews are requested by the state machine and arrive through
//! the state; each view asks for its own data. Once its views have mounted (and taken their
//! part of a link being restored), tells the link so; the view last worked in (clicked or
//! focused) is the section the page's address points at.

use leptos::prelude::*;

use super::actions::use_actions;
use super::allocator::AllocatorPanel;
use super::breakdown::BreakdownPanel;
use super::file_context::FileContext;
use super::deep_link::DeepLink;
use super::device_picker::{DevicePicker, FileDevices};
use super::link::Section;
use super::overview::{OverviewPanel, OverviewStrip, Warnings};
use super::phases::PhasesPanel;
use super::source::SourcePanel;
use super::startup::stages::Stage;
use super::state::{AppState, FileId, Status};
use super::table::TablePanel;
use super::timeline::TimelinePanel;
use crate::format;

/// The views under the overview, mounted in their stages' order (`startup::stages`).
const VIEW_STAGES: usize = Stage::ALL.len();

/// Mounts the next view, and the one after it a frame later.
fn mount_next(mounted: RwSignal<usize>) {
    // The view may be gone (another file shown) before the frame comes.
    let Some(next) = mounted.try_get_untracked().map(|m| m + 1) else {
        return;
    };
    if next <= VIEW_STAGES {
        mounted.set(next);
        request_animation_frame(move || mount_next(mounted));
    }
}

#[component]
pub fn SnapshotView(
    id: FileId,
    state: RwSignal<AppState>,
    link: DeepLink,
    /// Show this view alone (an embedded viewer); `None`: every view.
    only: Option<Section>,
) -> impl IntoView {
    let actions = use_actions();

    let (name, size, (decode_ms, read_ms, analyse_ms, categorise_ms), choice) = state
        .with_untracked(|s| match s.file(id) {
            Some(f) => {
                let (times, choice) = match &f.status {
                    Status::Ready(summary) => (
                        (
                            summary.decode_ms,
                            summary.read_ms,
                            summary.analyse_ms,
                            summary.categorise_ms,
                        ),
                        format::overview::device_choice(
                            summary.device_kind,
                            summary.default_device,
                            summary.default_reason,
                        ),
                    ),
                    _ => ((0.0, 0.0, 0.0, 0.0), None),
                };
                (f.name.clone(), f.size, times, choice)
            }
            None => (String::new(), 0, (0.0, 0.0, 0.0, 0.0), None),
        });
    let ms = |t: f64| format::duration_us((t * 1000.0).max(0.0) as u64);
    let kind = state.with_untracked(|s| s.file(id).map(|f| f.device_kind()));
    let file_devices = FileDevices::of(state, id);
    let cx = FileContext::new(
        id,
        actions,
        link,
        kind.unwrap_or_default(),
        file_devices.device.into(),
    );
    // What links the file's views, for those deep inside another (a stack's frames open the
    // source view).
    provide_context(cx);
    let dark = super::theme::follow_system();
    let file_name = name.clone();
    let FileDevices {
        devices, device, ..
    } = file_devices;
    let overview =
        Memo::new(move |_| state.with(|s| s.file(id).and_then(|f| f.overview().cloned())));
    // The timeline mounts as the overview arrives and the views below it wait for its first frame
    // (or its error), so nothing competes with what a user looks at first; they then follow
    // one per frame, so no single task builds them all and the page keeps answering meanwhile.
    let shows = move |section: Section| only.is_none_or(|o| o == section);
    let mounted = RwSignal::new(0usize);
    let timeline_painted = RwSignal::new(false);
    // The overview's panel mounts a frame after the timeline (in that frame, before it is laid
    // out and painted, so both appear together): the timeline measures its plot and asks for
    // its first frame while the page is still small to lay out, and the worker paints it
    // while the page lays the overview out. A timeline whose first frame came with the file
    // shows it in that first frame: the overview then waits for the next one, so the frame
    // with the timeline's pixels has less to lay out and paint.
    let overview_mounted = RwSignal::new(false);
    Effect::new(move |_| {
        if overview.with(Option::is_some) && mounted.get_untracked() == 0 {
            mounted.set(1);
            // The view may be gone (the page's rehearsal ended, another file shown) before
            // the frame comes.
            request_animation_frame(move || match timeline_painted.try_get_untracked() {
                Some(true) => request_animation_frame(move || {
                    let _ = overview_mounted.try_set(true);
                }),
                Some(false) => {
                    let _ = overview_mounted.try_set(true);
                }
                None => {}
            });
            if !shows(Section::Timeline) {
                request_animation_frame(move || mount_next(mounted));
            }
        }
    });
    // The views below start in the frame after the one that shows the timeline's first
    // pixels.
    Effect::new(move |_| {
        if timeline_painted.get() && mounted.get_untracked() == 1 {
            request_animation_frame(move || request_animation_frame(move || mount_next(mounted)));
        }
    });
    let reached: [Memo<bool>; VIEW_STAGES] =
        std::array::from_fn(|stage| Memo::new(move |_| mounted.get() > stage));
    // Once the views have mounted (again, for a link restored over them), they have taken
    // their part of the link.
    Effect::new(move |_| {
        link.epoch.track();
        if mounted.get() == VIEW_STAGES {
            request_animation_frame(move || request_animation_frame(move || link.restored()));
        }
    });
    // The section last clicked or focused is the one the address points at.
    let note_section = move |event: web_sys::Event| {
        let section = event
            .target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(t).ok())
            .and_then(|e| e.closest("section.panel, div.overview").ok().flatten())
            .and_then(|e| Section::of_element_id(&e.id()));
        if let Some(section) = section {
            link.set(|l| l.view = Some(section));
        }
    };
    view! {
        <section
            class="panel snapshot"
            class:embedded=only.is_some()
            id="snapshot"
            on:pointerdown=move |e: web_sys::PointerEvent| note_section(e.into())
            on:focusin=move |e: web_sys::FocusEvent| note_section(e.into())
            data-file-id=id.to_string()
            data-decode-ms=decode_ms.to_string()
            data-read-ms=read_ms.to_string()
            data-analyse-ms=analyse_ms.to_string()
            data-categorise-ms=categorise_ms.to_string()
        >
            <header class="snapshot-header">
                <div>
                    <h1 class="panel-title file-title">{name}</h1>
                    <p class="snapshot-meta">
                        {format::bytes(size)} " · decoded in " {ms(decode_ms)}
                        " (reading the file " {ms(read_ms)} ", analysis " {ms(analyse_ms)}
                        ", categories " {ms(categorise_ms)} ")"
                    </p>
                </div>
                <DevicePicker of=file_devices on_pick=move |d| actions.select_device(id, d) />
            </header>
            {choice.map(|text| view! { <p class="device-choice hint" id="device-choice">{text}</p> })}
            {move || {
                if devices.with(Vec::is_empty) {
                    return view! {
                        <p class="empty-snapshot" id="empty-snapshot">
                            "This snapshot holds no device: no segments and no trace entries were recorded."
                        </p>
                    }
                    .into_any();
                }
                let Some(device) = device.get() else {
                    return ().into_any();
                };
                let file_name = file_name.clone();
                // Only an allocator snapshot records the allocator's segments.
                let has_segments = overview.with(|o| match o {
                    Some(Ok(o)) => o.format.source.has_segments(),
                    _ => true,
                });
                let timeline = move || {
                    // A link restored over the views shown mounts them again.
                    link.epoch.track();
                    let (breakdown_name, phases_name, table_name) =
                        (file_name.clone(), file_name.clone(), file_name.clone());
                    let at = move |stage: Stage| {
                        reached[stage.mounted_with() - 1].get() && stage.shown(only, has_segments)
                    };
                    view! {
                        {move || at(Stage::Timeline).then(|| view! {
                            <TimelinePanel file=id device=device dark=dark painted=timeline_painted />
                        })}
                        {move || at(Stage::Breakdown).then(|| view! {
                            <BreakdownPanel file=id device=device file_name=breakdown_name.clone() dark=dark.into() />
                        })}
                        {move || at(Stage::Phases).then(|| view! {
                            <PhasesPanel file=id device=device file_name=phases_name.clone() dark=dark.into() />
                        })}
                        {move || at(Stage::Table).then(|| view! {
                            <TablePanel file=id device=device file_name=table_name.clone() />
                        })}
                        {move || at(Stage::Source).then(|| view! {
                            <SourcePanel file=id device=device />
                        })}
                        {move || at(Stage::Allocator).then(|| view! {
                            <AllocatorPanel file=id device=device dark=dark.into() />
                        })}
                    }
                };
                let overview_shown = shows(Section::Overview);
                match overview.get() {
                    None => view! { <p class="pending" aria-busy="true">"Preparing the overview…"</p> }.into_any(),
                    Some(Err(error)) => view! {
                        {timeline}
                        <p class="view-error" id="overview-error" role="alert">{format::problems::view_error(&error)}</p>
                    }
                    .into_any(),
                    Some(Ok(overview)) if overview.unused => view! {
                        <p class="unused-device" id="unused-device">{format::overview::unused_device(overview.device_kind, device)}</p>
                        <OverviewPanel overview=overview />
                    }
                    .into_any(),
                    Some(Ok(overview)) => view! {
                        {overview_shown.then(|| view! {
                            <OverviewStrip overview=overview.clone() file=id device=device
                                after=Signal::derive(move || timeline_painted.get() || !shows(Section::Timeline)) />
                        })}
                        <Warnings warnings=overview.warnings.clone() />
                        {timeline}
                        {move || (overview_shown && overview_mounted.get()).then(|| view! { <OverviewPanel overview=overview.clone() /> })}
                    }
                    .into_any(),
                }
            }}
        </section>
    }
}
