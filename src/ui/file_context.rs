//! What the views of one file share, provided in context by the file's view and read with
//! [`use_file`]: the generation of the worker's categories (it changes when the user's rules
//! do, and views that show categories ask again), the moment picked on each device's timeline,
//! the highlighted category (lists and the table narrow to it), the allocation selected in any
//! view (pinned on the timeline, the table's selected row), the allocation a view asks the
//! timeline to show, what each device's timeline shows (the table's window scope) and searches
//! for, which allocations the table shows and which code the source view shows, the user's
//! rules (kept in the browser, `kept`, for every file, sent to each file's worker), the file's
//! asker, and the file's part of the page's address ([`DeepLink`]): a link restores the
//! highlighted category, the picked moment and the rules it carries (used for this file, not
//! stored).
//!
//! What is a device's is keyed by its device, so switching devices and back finds each view at
//! the device's own moment and range. Not the place for categories' names and colours
//! (`categories`) or for drawing.

use leptos::prelude::*;

use super::actions::{Actions, ViewAsker};
use super::deep_link::DeepLink;
use super::state::FileId;
use crate::analysis::axis::AxisMode;
use crate::analysis::categories::rules::{RuleError, Rules};
use crate::analysis::categories::Category;
use crate::analysis::lines::SourcePlace;
use crate::format;
use crate::model::{DeviceKind, State};
use crate::table::{Filter, Scope};

/// Where the user's rules are kept.
const RULES_KEY: &str = "memsight:rules";

/// What the views of one file share, provided by the file's view (`snapshot_view`) and read
/// with [`use_file`].
#[derive(Clone, Copy)]
pub struct FileContext {
    file: FileId,
    asker: ViewAsker,
    /// The worker's categories generation the views should show (0 until known).
    pub generation: RwSignal<u32>,
    /// The state picked by a click on the timeline, the shown device's: each device keeps its
    /// own, so a moment of one device is never shown on another.
    pub picked: PickedMoments,
    /// The category shown in full colour, the others dimmed, and that lists narrow to.
    pub highlight: RwSignal<Option<Category>>,
    /// The allocation another view asked the timeline to pin and show: its device and its
    /// element on that device's allocations timeline.
    pub shown: RwSignal<Option<(u32, u32)>>,
    /// The allocation selected in any view: its device and its element on that device's
    /// allocations timeline (pinned on the timeline, selected in the table).
    pub selected: RwSignal<Option<(u32, u32)>>,
    /// What the timeline shows: its device, axis and visible range (read with
    /// [`FileContext::window_of`], so one device's range never scopes another's table).
    pub window: RwSignal<Option<(u32, AxisMode, f64, f64)>>,
    /// The timeline's search (empty when none): the table filters by it too.
    pub search: RwSignal<String>,
    /// The allocations the table shows (its scope and filter): the source view counts the
    /// same ones, so a line's bytes are its call-site group's.
    pub table_choice: RwSignal<Option<(Scope, Filter)>>,
    /// The code the source view shows: asked by a click on a call site, a module or a frame.
    pub source: RwSignal<Option<SourcePlace>>,
    /// The kind of the file's accelerators (`cuda`, `npu`…), which downloads are named by.
    pub device_kind: DeviceKind,
    /// The rules in use (as stored).
    pub rules: RwSignal<Rules>,
    /// Why the last rules sent were refused.
    pub rules_error: RwSignal<Option<RuleError>>,
    /// Milliseconds the worker took to categorise under the last rules.
    pub categorise_ms: RwSignal<Option<f64>>,
    /// The page's address: every view of the file writes its part, and restores it from a link.
    pub link: DeepLink,
}

/// The moment picked on each device of a file (a state of its trace), read and written as
/// the shown device's: views of one device never see another's moment, and a device shown
/// again finds the moment it had.
#[derive(Clone, Copy)]
pub struct PickedMoments {
    /// `(device, state)` pairs, one per device that has a moment picked (a file has a few).
    by_device: RwSignal<Vec<(u32, State)>>,
    device: Signal<Option<u32>>,
}

impl PickedMoments {
    /// The shown device's moment (tracked).
    pub fn get(&self) -> Option<State> {
        let device = self.device.get()?;
        self.by_device
            .with(|m| m.iter().find(|(d, _)| *d == device).map(|&(_, s)| s))
    }

    /// The shown device's moment, untracked.
    pub fn get_untracked(&self) -> Option<State> {
        untrack(|| self.get())
    }

    /// The shown device's moment (tracked), seen through `f`.
    pub fn with<T>(&self, f: impl FnOnce(&Option<State>) -> T) -> T {
        f(&self.get())
    }

    /// Picks `state` on the shown device (`None`: its peak again).
    pub fn set(&self, state: Option<State>) {
        if let Some(device) = self.device.get_untracked() {
            self.set_on(device, state);
        }
    }

    /// Picks `state` on `device` (`None`: its peak again).
    pub fn set_on(&self, device: u32, state: Option<State>) {
        self.by_device.update(|m| {
            m.retain(|(d, _)| *d != device);
            m.extend(state.map(|s| (device, s)));
        });
    }
}

/// What the views of the file this component shows share.
pub fn use_file() -> FileContext {
    use_context::<FileContext>().expect("a file's view provides its context")
}

impl FileContext {
    /// The categories of `file`'s views; sends the rules of the link being restored, else the
    /// stored rules, to its worker when there are any. Forgets its requests when the view goes
    /// away.
    /// `device` is the device the file's views show.
    pub fn new(
        file: FileId,
        actions: Actions,
        link: DeepLink,
        device_kind: DeviceKind,
        device: Signal<Option<u32>>,
    ) -> Self {
        let asker = ViewAsker::new(actions, file);
        let view = FileContext {
            file,
            asker,
            generation: RwSignal::new(0),
            picked: PickedMoments {
                by_device: RwSignal::new(Vec::new()),
                device,
            },
            highlight: RwSignal::new(None),
            shown: RwSignal::new(None),
            selected: RwSignal::new(None),
            window: RwSignal::new(None),
            search: RwSignal::new(String::new()),
            table_choice: RwSignal::new(None),
            source: RwSignal::new(None),
            device_kind,
            rules: RwSignal::new(Rules::default()),
            rules_error: RwSignal::new(None),
            categorise_ms: RwSignal::new(None),
            link,
        };
        if !view.restore() {
            let stored = stored_rules();
            if !stored.rules.is_empty() {
                view.apply(stored);
            }
        }
        // A link restored over the views shown (a fragment pasted, a host's view).
        Effect::new(move |mounted: Option<()>| {
            link.epoch.track();
            if mounted.is_some() {
                view.restore();
            }
        });
        Effect::new(move |_| {
            let highlight = view.highlight.get();
            let moment = view.picked.get();
            let rules = view
                .rules
                .with(|r| (!r.rules.is_empty()).then(|| r.clone()));
            link.set(|l| {
                l.highlight = highlight;
                l.moment = moment;
                l.rules = rules;
            });
        });
        view
    }

    /// Takes this file's part of a link being restored: the highlighted category, the picked
    /// moment, and the rules (sent to the worker, not stored). Whether the link had rules.
    fn restore(self) -> bool {
        let Some(link) = self.link.restoring(self.file, None) else {
            return false;
        };
        self.highlight.set(link.highlight);
        // The link's moment is of its device, else of the device shown.
        if let Some(device) = link.device.or(self.picked.device.get_untracked()) {
            self.picked.set_on(device, link.moment);
        }
        match link.rules {
            Some(rules) => {
                self.send(rules, false);
                true
            }
            None => false,
        }
    }

    /// What the timeline of `device` shows (tracked): its axis and visible range; `None` until
    /// that device's timeline is laid out.
    pub fn window_of(&self, device: u32) -> Option<(AxisMode, f64, f64)> {
        self.window
            .get()
            .filter(|w| w.0 == device)
            .map(|(_, mode, x0, x1)| (mode, x0, x1))
    }

    /// Highlights `category`, or nothing when it already is (a second click undoes the first).
    pub fn toggle_highlight(self, category: Category) {
        self.highlight.update(|h| {
            *h = if *h == Some(category) {
                None
            } else {
                Some(category)
            }
        });
    }

    /// Asks `device`'s timeline to pin allocation `element` and bring it into view.
    pub fn show_on_timeline(self, device: u32, element: u32) {
        self.shown.set(Some((device, element)));
    }

    /// Selects allocation `element` of `device` in every view (nothing when already so).
    pub fn select(self, selection: Option<(u32, u32)>) {
        if self.selected.get_untracked() != selection {
            self.selected.set(selection);
        }
    }

    /// Sends `rules` to the worker; once it has categorised again, stores them and moves
    /// every view to the new generation. Refused rules change nothing but the error shown.
    pub fn apply(self, rules: Rules) {
        self.send(rules, true);
    }

    /// [`Self::apply`], storing the rules for every file only when `store` (a link's rules
    /// are for the file it opens).
    fn send(self, rules: Rules, store: bool) {
        let sent = rules.clone();
        self.asker.ask(rules, move |answer| match answer.result {
            Ok(applied) => match applied.error {
                Some(error) => self.rules_error.set(Some(error)),
                None => {
                    if store {
                        store_rules(&sent);
                    }
                    self.rules_error.set(None);
                    self.rules.set(sent);
                    self.categorise_ms.set(Some(applied.categorise_ms));
                    self.generation.set(applied.generation);
                }
            },
            Err(error) => self.rules_error.set(Some(RuleError {
                index: 0,
                message: format::problems::view_error(&error),
            })),
        });
    }
}

/// The user's rules, or none when nothing (or nothing readable) is stored.
pub fn stored_rules() -> Rules {
    super::kept::get::<Rules>(RULES_KEY).unwrap_or_default()
}

fn store_rules(rules: &Rules) {
    // A browser that refuses storage keeps the rules as long as the page.
    crate::ui::kept::set(RULES_KEY, rules);
}

