//! The compact layout for `<iframe>`s (`?embed=1`): one view of the file shown — the one the
//! frame's address names (`view=table`, or the link fragment's `view=`), the timeline
//! otherwise — under a slim header, with no file list and no toolbar. A snapshot comes from the
//! frame's `?url=`, from the host page by `postMessage` ([`host`]), or from a drop or the file
//! button of the empty frame.
//!
//! Not the place for the messages' rules (`host.rs`) or for any view's logic.

mod host;

use leptos::html::Input;
use leptos::prelude::*;

use super::actions::Actions;
use super::deep_link::DeepLink;
use super::drop_overlay::DropOverlay;
use super::file_view::FileView;
use super::link::Section;
use super::page_query::PageQuery;
use super::state::AppState;

#[component]
pub fn EmbedApp(
    state: RwSignal<AppState>,
    actions: Actions,
    link: DeepLink,
    query: PageQuery,
) -> impl IntoView {
    host::Host::start(state, actions, link, query.hosts.clone());
    let section = query
        .view
        .or_else(|| link.live().view)
        .unwrap_or(Section::Timeline);
    let has_files = Memo::new(move |_| state.with(|s| !s.files().is_empty()));
    view! {
        <div class="app embed" data-view=section.key()>
            {move || if has_files.get() {
                view! { <FileView state=state actions=actions link=link only=section /> }.into_any()
            } else {
                view! { <EmbedWelcome actions=actions /> }.into_any()
            }}
            <p class="embed-note">
                "memsight · the file is read in this browser: nothing is uploaded"
            </p>
            <DropOverlay actions=actions />
        </div>
    }
}

/// What an empty frame shows: where a snapshot can come from.
#[component]
fn EmbedWelcome(actions: Actions) -> impl IntoView {
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
