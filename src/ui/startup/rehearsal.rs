//! A rehearsal of the first load. A browser compiles each WebAssembly function the first time
//! it runs, and runs it from quickly compiled, slower code until it has run a while: the first
//! file a page opened paid for compiling and first running every view it showed, about twice
//! what a second file of the same size took. So once the page has started, and while nobody has
//! opened a file yet, it opens a small snapshot built into the app in an inert copy of the file
//! views, off screen and out of the document's reach (in a closed shadow root): its own page
//! state, worker and requests, no performance marks, no address written. Its timeline paints
//! a frame and the views under it draw theirs; then it is taken down and its worker ended. A
//! file opened meanwhile ends it at once. Its views are laid out where the page's would be
//! (over the page's `#main`, with its padding), so the plot's width it measures is the one a
//! file's timeline expects before the page has laid that out (`plot_size.rs`). Not
//! the place for warming the worker's decoder (the worker does that itself) or for anything a
//! user sees.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Blob, HtmlElement, ShadowRootInit, ShadowRootMode};

use crate::ui::actions::Actions;
use crate::ui::deep_link::DeepLink;
use crate::ui::file_view::FileView;
use crate::ui::state::{AppState, FileId};

/// The worker's own warm-up snapshot: 1,000 trace entries of a generated training run.
const SNAPSHOT: &[u8] = include_bytes!("../../worker/warmup.pickle");
const NAME: &str = "rehearsal.pickle";

/// How long after start-up the rehearsal begins: the page's own first render comes first.
const START_AFTER: Duration = Duration::ZERO;
/// How long the views get, once the rehearsal's file is decoded, to mount and draw.
const VIEWS_DRAW_FOR: Duration = Duration::from_millis(800);
/// A rehearsal that has not ended by then (a worker that never answers) ends anyway.
const GIVE_UP_AFTER: Duration = Duration::from_secs(15);

/// What a running rehearsal holds until it ends.
struct Running {
    host: web_sys::Element,
    /// Dropping it unmounts the views and disposes their reactive state.
    mounted: Box<dyn std::any::Any>,
    actions: Actions,
    file: Option<FileId>,
}

type Slot = Rc<RefCell<Option<Running>>>;

/// The rehearsal's actions and the file it opened with them.
struct Opened {
    actions: Actions,
    file: Option<FileId>,
}

/// Rehearses a first load shortly after start-up unless `app` has a file by then; ends it as
/// soon as `app` gets one. `page` is the app's actions (the rehearsal's share what the page
/// learns of its layout).
pub fn rehearse(app: RwSignal<AppState>, page: Actions) {
    let slot: Slot = Rc::default();
    let has_files = move || app.try_with_untracked(|s| !s.files().is_empty()) != Some(false);
    {
        let slot = slot.clone();
        Effect::new(move |_| {
            if app.with(|s| !s.files().is_empty()) {
                end(&slot);
            }
        });
    }
    set_timeout(
        move || {
            if has_files() {
                return;
            }
            start(&slot, page);
            let later = slot.clone();
            set_timeout(move || end(&later), GIVE_UP_AFTER);
        },
        START_AFTER,
    );
}

/// Mounts the inert views in a hidden host and opens the snapshot in them.
fn start(slot: &Slot, page: Actions) {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let (Some(body), Ok(host), Ok(container)) = (
        document.body(),
        document.create_element("div"),
        document.create_element("div"),
    ) else {
        return;
    };
    host.set_class_name("rehearsal");
    let _ = host.set_attribute("aria-hidden", "true");
    let _ = host.set_attribute("inert", "");
    let Ok(shadow) = host.attach_shadow(&ShadowRootInit::new(ShadowRootMode::Closed)) else {
        return;
    };
    adopt_stylesheets(&document, &shadow);
    let laid_out_as_page = place_over_main(&document, &host, &container);
    if shadow.append_child(&container).is_err() || body.append_child(&host).is_err() {
        return;
    }
    let Ok(container) = container.dyn_into::<HtmlElement>() else {
        return;
    };
    let Ok(blob) = snapshot_blob() else {
        host.remove();
        return;
    };

    // What the mounted views opened, handed out of their closure.
    let opened: Rc<RefCell<Option<Opened>>> = Rc::default();
    let mounted = {
        let opened = opened.clone();
        let slot = slot.clone();
        leptos::mount::mount_to(container, move || {
            let state = RwSignal::new(AppState::with_parallel_loads(1));
            let actions = Actions::rehearsing(state, laid_out_as_page.then_some(page));
            // The inert views act with the rehearsal's actions, never the page's.
            provide_context(actions);
            let link = DeepLink::inert(state, actions);
            let file = actions.open_blob(NAME.to_string(), blob);
            *opened.borrow_mut() = Some(Opened { actions, file });
            // Once decoded (or refused), the views get a moment to mount and draw.
            Effect::new(move |done: Option<bool>| {
                if done == Some(true) {
                    return true;
                }
                let settled = state.with(|s| s.files().iter().any(|f| !f.is_pending()));
                if settled {
                    let slot = slot.clone();
                    set_timeout(move || end(&slot), VIEWS_DRAW_FOR);
                }
                settled
            });
            view! { <FileView state=state link=link /> }
        })
    };
    let Some(Opened { actions, file }) = opened.borrow_mut().take() else {
        host.remove();
        return;
    };
    *slot.borrow_mut() = Some(Running {
        host,
        mounted: Box::new(mounted),
        actions,
        file,
    });
}

/// Ends the rehearsal, if it runs: its worker, its views, its host.
fn end(slot: &Slot) {
    // Taken out first: ending runs cleanups that must not find it again.
    let Some(running) = slot.borrow_mut().take() else {
        return;
    };
    if let Some(file) = running.file {
        running.actions.close(file);
    }
    drop(running.mounted);
    running.host.remove();
}

/// Puts the views' `container` where the page's `#main` is, as wide and with its padding, so
/// they lay out as a file's views will. False when the page has no `#main` (an embedded
/// viewer's own layout): the views then take the window's width.
fn place_over_main(
    document: &web_sys::Document,
    host: &web_sys::Element,
    container: &web_sys::Element,
) -> bool {
    let Some(main) = document.get_element_by_id("main") else {
        return false;
    };
    let rect = main.get_bounding_client_rect();
    if rect.width() <= 0.0 {
        return false;
    }
    // Through the style object: the page's content security policy refuses style attributes.
    let Some(style) = host.dyn_ref::<HtmlElement>().map(HtmlElement::style) else {
        return false;
    };
    let placed = style
        .set_property("left", &format!("{}px", rect.left()))
        .and_then(|()| style.set_property("width", &format!("{}px", rect.width())));
    container.set_class_name("main");
    placed.is_ok()
}

/// Links the page's stylesheets into the shadow root, which the document's styles do not
/// reach: unstyled, the views would lay out other boxes in other fonts than a real load does.
fn adopt_stylesheets(document: &web_sys::Document, shadow: &web_sys::ShadowRoot) {
    let Ok(links) = document.query_selector_all("link[rel~='stylesheet']") else {
        return;
    };
    for index in 0..links.length() {
        if let Some(Ok(copy)) = links.item(index).map(|link| link.clone_node()) {
            let _ = shadow.append_child(&copy);
        }
    }
}

fn snapshot_blob() -> Result<Blob, wasm_bindgen::JsValue> {
    let bytes = js_sys::Uint8Array::from(SNAPSHOT);
    Blob::new_with_u8_array_sequence(&js_sys::Array::of1(&bytes))
}
