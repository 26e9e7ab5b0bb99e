//! The compact layout for `<iframe>`s (`?embed=1`): one view of the file shown — the one the
//! frame's address names (`view=table`, or the link fragment's `view=`), the timeline
//! otherwise, or the one the host last asked for — under a slim header, with no file list and
//! no toolbar. A snapshot comes from the frame's `?url=`, from the host page by `postMessage`
//! ([`host`]), or from a drop or the file button of the empty frame.
//!
//! Not the place for the messages' rules (`host.rs`) or for any view's logic.

mod host;

pub use host::tell_crashed;

use leptos::html::Input;
use leptos::prelude::*;

use super::actions::use_actions;
use super::deep_link::DeepLink;
use super::drop_overlay::DropOverlay;
use super::file_view::FileView;
use super::link::Section;
use super::page_query::{refused_host, PageQuery};
use super::state::AppState;

/// What the frame shows that its host may change: the one view, and the origin of a page
/// whose messages were refused (said in the frame, so whoever embeds it sees why).
#[derive(Clone, Copy)]
pub struct EmbedShown {
    pub section: RwSignal<Section>,
    pub refused: RwSignal<Option<String>>,
}

#[component]
pub fn EmbedApp(
    state: RwSignal<AppState>,
    link: DeepLink,
    query: PageQuery,
) -> impl IntoView {
    let actions = use_actions();

    let shown = EmbedShown {
        section: RwSignal::new(
            query
                .view
                .or_else(|| link.live().view)
                .unwrap_or(Section::Timeline),
        ),
        refused: RwSignal::new(None),
    };
    host::Host::start(state, actions, link, query.hosts.clone(), shown);
    let section = shown.section;
    let has_files = Memo::new(move |_| state.with(|s| !s.files().is_empty()));
    view! {
        <div class="app embed" data-view=move || section.get().key()>
            {move || shown.refused.get().map(|origin| view! {
                <p class="embed-refused" id="embed-refused" role="alert" data-origin=origin.clone()>
                    {refused_host(&origin)}
                </p>
            })}
            {move || if has_files.get() {
                let only = section.get();
                view! { <FileView state=state link=link only=only /> }.into_any()
            } else {
                view! { <EmbedWelcome /> }.into_any()
            }}
            <p class="embed-note">
                "memsight · the file is read in this browser: nothing is uploaded"
            </p>
            <DropOverlay />
        </div>
    }
}

/// What an empty frame shows: where a snapshot can come from.
#[component]
fn EmbedWelcome() -> impl IntoView {
    let actions = use_actions();

    let input: NodeRef<Input> = NodeRef::new();
    view! {
        <section class="panel embed-welcome" id="welcome">
            <p>"Drop a PyTorch CUDA memory snapshot here, or "
                <button class="button primary" id="open-file-button" type="button" on:click=move |_| {
                    if let Some(input) = input.get() {
                        input.click();
                    }
                }>"open one…"</button>
            </p>
            <input
                node_ref=input
                id="file-input"
                class="visually-hidden"
                type="file"
                accept=".pickle,.pkl,.gz,.json,application/octet-stream"
                tabindex="-1"
                aria-hidden="true"
                on:change=move |_| {
                    if let Some(files) = input.get().and_then(|i| i.files()) {
                        actions.open_files(&files);
                    }
                }
            />
        </section>
    }
}
