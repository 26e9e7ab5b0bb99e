//! The main area: the selected file's load progress, its error, its snapshot view or its
//! digest's; the files side by side or two of them compared; the welcome screen when nothing
//! is open.
//!
//! Only chooses which view to show; re-renders when the selection or the file's stage changes,
//! not on every progress message.

use leptos::prelude::*;

use super::compare::CompareView;
use super::deep_link::DeepLink;
use super::digest_view::DigestView;
use super::error_report::ErrorReportView;
use super::files::FilesView;
use super::link::Section;
use super::load_progress::LoadProgress;
use super::snapshot_view::SnapshotView;
use super::state::{AppState, FileId, Showing, Status};
use super::welcome::Welcome;

#[derive(Clone, Copy, PartialEq)]
enum Stage {
    Loading,
    Ready,
    /// Only the snapshot's digest is open.
    Digest,
    Failed,
}

#[component]
pub fn FileView(
    state: RwSignal<AppState>,
    link: DeepLink,
    /// Show this view of a file alone (an embedded viewer); `None`: every view.
    #[prop(optional)]
    only: Option<Section>,
) -> impl IntoView {
    let shown: Memo<Option<(FileId, Stage)>> = Memo::new(move |_| {
        state.with(|s| {
            s.selected().map(|f| {
                let stage = match f.status {
                    Status::Downloading { .. } | Status::Queued | Status::Loading { .. } => {
                        Stage::Loading
                    }
                    Status::Ready(ref summary) if summary.digest => Stage::Digest,
                    Status::Ready(_) => Stage::Ready,
                    Status::Failed(_) => Stage::Failed,
                };
                (f.id, stage)
            })
        })
    });

    let showing = Memo::new(move |_| state.with(|s| s.showing()));
    let dark = super::theme::follow_system();

    move || match (showing.get(), shown.get()) {
        (Showing::Files, Some(_)) => {
            view! { <FilesView state=state link=link dark=dark.into() /> }
                .into_any()
        }
        (Showing::Compare, Some(_)) => {
            view! { <CompareView state=state link=link dark=dark.into() /> }
                .into_any()
        }
        (_, shown) => file_view(state, link, only, shown),
    }
}

/// The selected file's stage.
fn file_view(
    state: RwSignal<AppState>,
    link: DeepLink,
    only: Option<Section>,
    shown: Option<(FileId, Stage)>,
) -> AnyView {
    match shown {
        None => view! { <Welcome link=link /> }.into_any(),
        Some((id, Stage::Loading)) => {
            view! { <LoadProgress id=id state=state /> }.into_any()
        }
        Some((id, Stage::Failed)) => {
            let file = state.with_untracked(|s| s.file(id).cloned());
            let (name, report) = match file {
                Some(f) => match f.status {
                    Status::Failed(report) => (f.name, report),
                    _ => return ().into_any(),
                },
                None => return ().into_any(),
            };
            view! { <ErrorReportView name=name report=report /> }.into_any()
        }
        Some((id, Stage::Digest)) => {
            view! { <DigestView id=id state=state /> }.into_any()
        }
        Some((id, Stage::Ready)) => {
            view! { <SnapshotView id=id state=state link=link only=only /> }
                .into_any()
        }
    }
}
