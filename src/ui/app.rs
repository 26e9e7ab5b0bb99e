//! The root component: creates the page state, the actions handle and the page's address (the
//! link of the view shown), opens the snapshots the address names (`?url=`), and lays out the
//! toolbar, the list of open files, the selected file's view and the drop overlay — or, in a
//! frame (`?embed=1`), the compact embedded layout.
//!
//! Owns no logic of its own beyond wiring; each area is its own component.

use leptos::prelude::*;

use super::actions::Actions;
use super::deep_link::DeepLink;
use super::drop_overlay::DropOverlay;
use super::embed::EmbedApp;
use super::file_list::FileList;
use super::file_view::FileView;
use super::page_query::PageQuery;
use super::startup::plan::{Opening, StartupPlan};
use super::state::AppState;
use super::toolbar::Toolbar;

#[component]
pub fn App() -> impl IntoView {
    // As many loads at once as the machine has cores (workers decode in parallel).
    let cores = web_sys::window()
        .map(|w| w.navigator().hardware_concurrency() as usize)
        .unwrap_or(2);
    let state = RwSignal::new(AppState::with_parallel_loads(cores.clamp(2, 8)));
    let search = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
    let query = PageQuery::parse(&search);
    let plan = StartupPlan::of(Opening::of(&query));
    let actions = Actions::new(state, plan);
    // Every component of the page reads them with `use_actions()`.
    provide_context(actions);
    let link = DeepLink::new(state, actions);
    if !query.urls.is_empty() {
        actions.open_urls(&query.urls);
    }
    // The first file opened should not pay for compiling the views.
    if plan.rehearse_first_load {
        super::startup::rehearsal::rehearse(state, actions);
    }
    if query.embed {
        return view! { <EmbedApp state=state link=link query=query /> }.into_any();
    }
    let storage_refused = super::kept::refused();
    super::redact_paths::RedactPaths::provide();
    super::widgets::source_folder::SourceFolder::provide();
    let has_files = Memo::new(move |_| state.with(|s| !s.files().is_empty()));

    view! {
        <div class="app" class:has-files=has_files>
            <header class="topbar">
                <div class="brand">
                    <span class="brand-mark" aria-hidden="true"></span>
                    <span class="brand-name">"memsight"</span>
                    <span class="brand-tagline">"PyTorch CUDA memory snapshots, in your browser"</span>
                </div>
                <Toolbar state=state link=link />
            </header>
            <div class="workspace">
                <aside class="sidebar" aria-label="Open files">
                    <FileList state=state />
                    <p class="privacy-note">
                        "Files are read on this device only: nothing is uploaded."
                    </p>
                    {storage_refused.then(|| view! {
                        <p class="privacy-note" id="storage-note">
                            "This browser keeps no settings for this page: rules and choices last until it is closed."
                        </p>
                    })}
                </aside>
                <main class="main" id="main">
                    <FileView state=state link=link />
                </main>
            </div>
            <DropOverlay />
        </div>
    }
    .into_any()
}
