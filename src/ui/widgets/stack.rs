//! What the timeline's pinned element and the table's row detail both show of an allocation:
//! its stack (the user's code first: framework runs folded, interpreter noise hidden, unless
//! "show all frames"; Python frames open their file in the source view), its role and why,
//! what newer files record of it, and the forward code of a backward allocation. Not the place
//! for which frames are folded (`folding`, pure) or for either view's own layout.

use std::collections::BTreeSet;

use leptos::prelude::*;

use super::folding::{rows, StackLine, Shown};
use super::source_button::SourceButton;
use crate::analysis::categories::RoleReason;
use crate::analysis::lines::SourcePlace;
use crate::analysis::stacks::{FrameClass, FrameText};
use crate::format;
use crate::format::breakdown::{role_label, role_reason};
use crate::timeline::inspect::ElementDetail;

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
                    let at = format!(" · event {}{}", format::count(u64::from(a.event.get())),
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
                StackLine::Frame {
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
                StackLine::Fold { group, count } => view! {
                    <li class="fold" class:hidden=move || show_all.get() data-group=group.to_string()>
                        <button type="button" class="fold-button" aria-expanded=move || is_open(group).to_string()
                            on:click=move |_| opened.update(|o| { if !o.remove(&group) { o.insert(group); } })>
                            {move || format!("{} {count} framework frame{}", if is_open(group) { "▾" } else { "▸" }, if count == 1 { "" } else { "s" })}
                        </button>
                    </li>
                }.into_any(),
                StackLine::Frame { index, shown } => {
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
