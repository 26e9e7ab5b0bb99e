//! The view in the page's address: every view writes its part of the [`ViewLink`] as it changes,
//! and the fragment follows a moment later (`history.replaceState`, so no history entry per
//! pan); a link the page was opened with (or a fragment pasted into an open tab, or a view a
//! host page hands an embedded viewer) is restored on the file it names as that file's views
//! mount, each view taking its own part. "Copy link" copies the address as it is.
//!
//! A `Copy` handle created by `App` and passed down. The link's format is `link.rs`'s; the
//! views decide what their part is. Not the place for the page's query (`page_query.rs`).

use std::time::Duration;

use leptos::prelude::*;
use wasm_bindgen::JsValue;

use super::actions::Actions;
use super::link::{Section, ViewLink};
use super::state::{AppState, FileId, Showing};

/// How long the view must stay still before the address follows it.
const SETTLE: Duration = Duration::from_millis(250);

/// A link being restored.
#[derive(Clone, Debug)]
struct Restore {
    link: ViewLink,
    /// The open file it applies to, once there is one at the link's position.
    file: Option<FileId>,
}

#[derive(Clone, Copy)]
pub struct DeepLink {
    state: RwSignal<AppState>,
    actions: Actions,
    /// The view shown, as the views describe it.
    live: RwSignal<ViewLink>,
    /// A link waiting for its file's views.
    pending: StoredValue<Option<Restore>, LocalStorage>,
    /// Changes when a link is to be restored over views already shown: they mount again.
    pub epoch: RwSignal<u32>,
    /// The fragment last written into the address.
    pub fragment: RwSignal<String>,
    timer: StoredValue<Option<gloo_timers::callback::Timeout>, LocalStorage>,
    /// Reads and writes no address (a rehearsal's views, `startup::rehearsal`).
    inert: bool,
}

impl DeepLink {
    /// Reads the address's fragment (a link to restore when it names anything) and starts
    /// following the page's state.
    pub fn new(state: RwSignal<AppState>, actions: Actions) -> Self {
        let hash = location().and_then(|l| l.hash().ok()).unwrap_or_default();
        let link = ViewLink::from_fragment(&hash);
        let restoring = !link.is_default();
        let deep = DeepLink {
            state,
            actions,
            live: RwSignal::new(link.clone()),
            pending: StoredValue::new_local(restoring.then_some(Restore { link, file: None })),
            epoch: RwSignal::new(0),
            fragment: RwSignal::new(hash.trim_start_matches('#').to_string()),
            timer: StoredValue::new_local(None),
            inert: false,
        };
        deep.follow_state();
        deep.follow_address();
        deep
    }

    /// A link for views that are not the page's (a rehearsal): it restores nothing and never
    /// touches the address.
    pub fn inert(state: RwSignal<AppState>, actions: Actions) -> Self {
        DeepLink {
            state,
            actions,
            live: RwSignal::new(ViewLink::default()),
            pending: StoredValue::new_local(None),
            epoch: RwSignal::new(0),
            fragment: RwSignal::new(String::new()),
            timer: StoredValue::new_local(None),
            inert: true,
        }
    }

    /// Restores `link` now: on the file at its position if one is open (its views mount again),
    /// else on the next file opened there.
    pub fn restore(self, link: ViewLink) {
        self.live.set(link.clone());
        self.pending.set_value(Some(Restore { link, file: None }));
        self.resolve();
        self.epoch.update(|e| *e += 1);
    }

    /// The link being restored on `file` (on its `device`, when given), for a view to take
    /// its part from.
    pub fn restoring(self, file: FileId, device: Option<u32>) -> Option<ViewLink> {
        self.pending.with_value(|p| {
            p.as_ref()
                .filter(|r| r.file == Some(file))
                .filter(|r| match (r.link.device, device) {
                    (Some(wanted), Some(shown)) => wanted == shown,
                    _ => true,
                })
                .map(|r| r.link.clone())
        })
    }

    /// The link being restored, whatever its file (for views over several files).
    pub fn restoring_any(self) -> Option<ViewLink> {
        self.pending.with_value(|p| {
            p.as_ref()
                .filter(|r| r.file.is_some())
                .map(|r| r.link.clone())
        })
    }

    /// The views of the link's file have taken their parts: the address follows the page
    /// again. Scrolls to the section the link points at.
    pub fn restored(self) {
        let Some(restore) = self.pending.try_update_value(Option::take).flatten() else {
            return;
        };
        if let Some(section) = restore.link.view {
            scroll_to(section);
        }
        self.write_soon();
    }

    /// Changes the view's description (a view's part of it); the address follows.
    pub fn set(self, change: impl FnOnce(&mut ViewLink)) {
        let mut link = self.live.get_untracked();
        change(&mut link);
        if link != self.live.get_untracked() {
            self.live.set(link);
        }
    }

    /// The view's description (tracked).
    pub fn live(self) -> ViewLink {
        self.live.get()
    }

    /// The link that waits for a file because none is open (a link to a file opened from disk,
    /// followed where that file is not open); tracked, so it follows a fragment pasted in.
    pub fn waiting(self) -> Option<ViewLink> {
        self.live.track();
        self.pending.with_value(|p| {
            p.as_ref()
                .filter(|r| r.file.is_none())
                .map(|r| r.link.clone())
        })
    }

    /// The view's description, untracked.
    pub fn live_untracked(self) -> ViewLink {
        self.live.get_untracked()
    }

    /// The address of this view, written into the address bar now.
    pub fn href_now(self) -> Option<String> {
        self.write();
        location().and_then(|l| l.href().ok())
    }

    /// When the page state changes (files opened, selected, shown): resolve the file a link
    /// waits for, and let the address follow.
    fn follow_state(self) {
        Effect::new(move |_| {
            self.state.track();
            self.resolve();
            self.write_soon();
        });
        Effect::new(move |_| {
            self.live.track();
            self.write_soon();
        });
    }

    /// A fragment pasted into the address bar of an open page is a link to restore.
    fn follow_address(self) {
        let Some(window) = web_sys::window() else {
            return;
        };
        let listener = gloo_events::EventListener::new(&window, "hashchange", move |_| {
            let hash = location().and_then(|l| l.hash().ok()).unwrap_or_default();
            let fragment = hash.trim_start_matches('#');
            if fragment != self.fragment.get_untracked() {
                self.fragment.set(fragment.to_string());
                self.restore(ViewLink::from_fragment(fragment));
            }
        });
        // The listener lives as long as the page.
        listener.forget();
    }

    /// Finds the file a pending link applies to (the one at its position, else — once every
    /// file has loaded — the one shown), asks for its device, and once it is decoded shows what
    /// the link shows. A link whose file could not be read is dropped.
    fn resolve(self) {
        let Some(restore) = self.pending.with_value(Clone::clone) else {
            return;
        };
        let found = self.state.with_untracked(|s| {
            let settled = s.files().iter().all(|f| !f.is_pending());
            let file = s
                .files()
                .get(restore.link.file)
                .or_else(|| settled.then(|| s.selected()).flatten())?;
            Some((
                file.id,
                file.is_ready(),
                file.status_kind() == "failed",
                settled,
            ))
        });
        let Some((target, ready, failed, settled)) = found else {
            return;
        };
        if failed {
            self.pending.set_value(None);
            return;
        }
        if restore.file != Some(target) {
            self.pending.update_value(|p| {
                if let Some(p) = p {
                    p.file = Some(target);
                }
            });
            if let Some(device) = restore.link.device {
                self.actions.want_device(target, device);
            }
        }
        if !ready || !settled {
            return;
        }
        let (selected, showing) = self
            .state
            .with_untracked(|s| (s.selected_id(), s.showing()));
        match restore.link.show {
            Showing::File if selected != Some(target) || showing != Showing::File => {
                self.actions.select(target)
            }
            Showing::Files | Showing::Compare if showing != restore.link.show => {
                self.actions.show(restore.link.show)
            }
            _ => {}
        }
    }

    /// Writes the address once the view has stayed still for a moment.
    fn write_soon(self) {
        if self.inert {
            return;
        }
        let timer = gloo_timers::callback::Timeout::new(SETTLE.as_millis() as u32, move || {
            self.write();
        });
        // Replacing the timer cancels the one before.
        self.timer.set_value(Some(timer));
    }

    /// The fragment of the view shown: the views' parts, with the file, device and what the
    /// main area shows from the page state. Nothing while a link waits to be restored (the
    /// address keeps it) or while no file is shown.
    fn write(self) {
        if self.inert || self.pending.with_value(Option::is_some) {
            return;
        }
        let Some(mut link) = self.live.try_get_untracked() else {
            return;
        };
        let shown = self.state.with_untracked(|s| {
            let selected = s.selected()?;
            let index = s.files().iter().position(|f| f.id == selected.id)?;
            Some((index, selected.device, s.showing()))
        });
        let Some((index, device, showing)) = shown else {
            return;
        };
        link.file = index;
        link.device = device;
        link.show = showing;
        let fragment = link.to_fragment();
        if fragment == self.fragment.get_untracked() {
            return;
        }
        let Some(location) = location() else { return };
        let href = location.href().unwrap_or_default();
        let base = href.split('#').next().unwrap_or_default();
        let url = if fragment.is_empty() {
            base.to_string()
        } else {
            format!("{base}#{fragment}")
        };
        let replaced = web_sys::window()
            .and_then(|w| w.history().ok())
            .map(|h| h.replace_state_with_url(&JsValue::NULL, "", Some(&url)));
        if let Some(Ok(())) = replaced {
            self.fragment.set(fragment);
        }
    }
}

fn location() -> Option<web_sys::Location> {
    web_sys::window().map(|w| w.location())
}

/// Scrolls `section` into view; the timeline, the first view under the file's title, keeps
/// the title in view (which file a link opened is the first thing to read).
fn scroll_to(section: Section) {
    let id = match section {
        Section::Timeline => "snapshot",
        other => other.element_id(),
    };
    let element = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(id));
    if let Some(element) = element {
        element.scroll_into_view();
    }
}
