//! The embedded viewer's conversation with the page that embeds it, by `postMessage`:
//!
//! - the host hands over a snapshot (`{type: "memsight:open", name, bytes, view}`, `bytes` an
//!   `ArrayBuffer`, a typed array or a `Blob`/`File`; `view` an optional link fragment) or a
//!   change to the view of the file shown (`{type: "memsight:view", view, replace}`: the keys
//!   the fragment names, the frame switching to the view it names);
//! - the viewer says it is ready (`memsight:ready`), that a file loaded (`memsight:loaded`,
//!   with its devices and the shown device's overview numbers) or failed (`memsight:failed`,
//!   with the page's message), which allocation is selected (`memsight:selection`) and what
//!   the view is (`memsight:view`, a link fragment the host can keep and hand back), why a
//!   message was refused (`memsight:error`), and that it crashed (`memsight:error` with
//!   `reason: "crashed"`).
//!
//! Origins are checked both ways: a message is taken only from the parent window and from
//! the viewer's own origin or an origin the embedding named (`?host=`) — a parent of another
//! origin is told, in the frame and by a `memsight:error`, which origin was refused and how
//! to allow it; every message goes to one named origin, never `*`. What the viewer says about
//! a file goes only to the origin that handed it over — a file the user opened in the frame
//! themselves, or one fetched with `?url=`, is only spoken of to a parent of the viewer's own
//! origin, which could read the frame anyway. Not the place for the layout (`mod.rs`) or for
//! opening files (`actions.rs`).

use std::collections::HashMap;

use js_sys::{Array, ArrayBuffer, Object, Reflect, Uint8Array};
use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Blob, MessageEvent};

use crate::ui::actions::Actions;
use crate::ui::deep_link::DeepLink;
use crate::ui::link::ViewLink;
use crate::ui::state::{AppState, FileId, Status};

use super::EmbedShown;

/// The version of the messages' shapes, told in `memsight:ready`.
const PROTOCOL_VERSION: u32 = 1;

thread_local! {
    /// The origins a crash is told to (the viewer's own and those the embedding named): the
    /// panic hook has no [`Host`] to ask.
    static CRASH_ORIGINS: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Tells the host the viewer crashed (`memsight:error`, `reason: "crashed"`), so it does not
/// wait on a frame that will say nothing more. No file data: only that it crashed.
pub fn tell_crashed() {
    let origins = CRASH_ORIGINS.with(|o| o.try_borrow().map(|o| o.clone()).unwrap_or_default());
    let Some(parent) = web_sys::window().and_then(|w| w.parent().ok().flatten()) else {
        return;
    };
    let message = object(&[
        ("type", "memsight:error".into()),
        ("reason", "crashed".into()),
        (
            "message",
            "memsight crashed: reload the frame to continue".into(),
        ),
    ]);
    for origin in origins {
        let _ = parent.post_message(&message, &origin);
    }
}

/// What the host was last told about a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Told {
    Loaded(Option<u32>),
    Failed,
}

#[derive(Clone, Copy)]
pub struct Host {
    state: RwSignal<AppState>,
    actions: Actions,
    link: DeepLink,
    own_origin: StoredValue<String>,
    /// Origins that may hand the viewer files (besides its own).
    hosts: StoredValue<Vec<String>>,
    /// The origin that handed over each file it opened.
    opened_by: StoredValue<HashMap<FileId, String>, LocalStorage>,
    told: StoredValue<HashMap<FileId, Told>, LocalStorage>,
    shown: EmbedShown,
}

impl Host {
    /// Starts listening to the parent window, tells it the viewer is ready, and tells it about
    /// files and selections from then on.
    pub fn start(
        state: RwSignal<AppState>,
        actions: Actions,
        link: DeepLink,
        hosts: Vec<String>,
        shown: EmbedShown,
    ) -> Option<Self> {
        let window = web_sys::window()?;
        let parent = window.parent().ok().flatten()?;
        // Not in a frame: nobody to talk to.
        if Object::is(&parent, &window) {
            return None;
        }
        let own_origin = window.location().origin().ok()?;
        let host = Host {
            state,
            actions,
            link,
            own_origin: StoredValue::new(own_origin.clone()),
            hosts: StoredValue::new(hosts.clone()),
            opened_by: StoredValue::new_local(HashMap::new()),
            told: StoredValue::new_local(HashMap::new()),
            shown,
        };
        let listener = gloo_events::EventListener::new(&window, "message", move |event| {
            if let Some(event) = event.dyn_ref::<MessageEvent>() {
                host.receive(event);
            }
        });
        listener.forget();
        CRASH_ORIGINS.with(|o| {
            if let Ok(mut o) = o.try_borrow_mut() {
                *o = std::iter::once(own_origin.clone()).chain(hosts.clone()).collect();
            }
        });
        host.follow_files();
        host.follow_view();
        let ready = object(&[
            ("type", "memsight:ready".into()),
            ("version", PROTOCOL_VERSION.into()),
        ]);
        for origin in std::iter::once(own_origin).chain(hosts) {
            host.post(&origin, &ready);
        }
        Some(host)
    }

    fn allowed(&self, origin: &str) -> bool {
        origin == self.own_origin.get_value()
            || self.hosts.with_value(|h| h.iter().any(|o| o == origin))
    }

    fn post(&self, origin: &str, message: &JsValue) {
        let parent = web_sys::window().and_then(|w| w.parent().ok().flatten());
        if let Some(parent) = parent {
            // A parent of another origin than `origin` never receives it.
            let _ = parent.post_message(message, origin);
        }
    }

    /// Where what is said about `file` may go.
    fn origin_of(&self, file: FileId) -> String {
        self.opened_by
            .with_value(|o| o.get(&file).cloned())
            .unwrap_or_else(|| self.own_origin.get_value())
    }

    fn receive(&self, event: &MessageEvent) {
        let from_parent = match (
            event.source(),
            web_sys::window().and_then(|w| w.parent().ok().flatten()),
        ) {
            (Some(source), Some(parent)) => Object::is(&source, &parent),
            _ => false,
        };
        let origin = event.origin();
        if !from_parent {
            return;
        }
        let data = event.data();
        let kind = Reflect::get(&data, &"type".into())
            .ok()
            .and_then(|t| t.as_string())
            .unwrap_or_default();
        if !self.allowed(&origin) {
            // Silence would leave whoever embeds the viewer guessing: the frame says which
            // origin it ignored and how to allow it, and tells that origin, which learns
            // nothing but that (the message is refused before it is read).
            if kind.starts_with("memsight:") {
                let words = crate::ui::page_query::refused_host(&origin);
                self.shown.refused.set(Some(origin.clone()));
                let error = object(&[("type", "memsight:error".into()), ("message", words.into())]);
                self.post(&origin, &error);
            }
            return;
        }
        let result = match kind.as_str() {
            "memsight:open" => self.open(&origin, &data),
            "memsight:view" => self.view(&data),
            // Not ours (another script of the host talking to its own frames).
            k if !k.starts_with("memsight:") => Ok(()),
            k => Err(format!(
                "“{k}” is not a message memsight understands: send memsight:open or memsight:view."
            )),
        };
        if let Err(message) = result {
            let error = object(&[
                ("type", "memsight:error".into()),
                ("message", message.into()),
            ]);
            self.post(&origin, &error);
        }
    }

    /// Opens the snapshot the host handed over, in place of the file shown.
    fn open(&self, origin: &str, data: &JsValue) -> Result<(), String> {
        let name = Reflect::get(data, &"name".into())
            .ok()
            .and_then(|n| n.as_string())
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| "snapshot".to_string());
        let bytes = Reflect::get(data, &"bytes".into()).unwrap_or(JsValue::UNDEFINED);
        let blob = blob_of(&bytes).ok_or(
            "memsight:open needs `bytes`: an ArrayBuffer, a typed array or a Blob of the snapshot.",
        )?;
        let view = view_of(data)?;
        // One file at a time in a frame: the new one takes the place of what was shown.
        let open: Vec<FileId> = self
            .state
            .with_untracked(|s| s.files().iter().map(|f| f.id).collect());
        for id in open {
            self.actions.close(id);
        }
        if let Some(link) = view {
            self.show(link);
        }
        if let Some(id) = self.actions.open_blob(name, blob) {
            self.opened_by.update_value(|o| {
                o.insert(id, origin.to_string());
            });
        }
        Ok(())
    }

    /// Shows the view the host asks for: the keys its fragment names change, the others stay
    /// (`replace: true` starts from the default view instead).
    fn view(&self, data: &JsValue) -> Result<(), String> {
        let changes = view_fragment(data)?.ok_or(
            "memsight:view needs `view`: a link fragment such as \"device=0&view=table\".",
        )?;
        let replace = Reflect::get(data, &"replace".into())
            .ok()
            .and_then(|r| r.as_bool())
            .unwrap_or(false);
        let fragment = if replace {
            changes
        } else {
            ViewLink::merge_fragments(&self.link.live_untracked().to_fragment(), &changes)
        };
        self.show(ViewLink::from_fragment(&fragment));
        Ok(())
    }

    /// Restores `link`, switching the frame to the view it names.
    fn show(&self, link: ViewLink) {
        if let Some(section) = link.view {
            self.shown.section.set(section);
        }
        self.link.restore(link);
    }

    /// Tells each file's origin when it has loaded (with the shown device's overview) or failed.
    fn follow_files(self) {
        Effect::new(move |_| {
            let news: Vec<(FileId, Told, JsValue)> = self.state.with(|s| {
                s.files()
                    .iter()
                    .filter_map(|f| {
                        let (told, message) = match &f.status {
                            Status::Ready(summary) => {
                                let overview = f.overview()?.as_ref().ok()?;
                                let metrics = Object::new();
                                for m in &overview.metrics {
                                    let _ = Reflect::set(
                                        &metrics,
                                        &m.key.as_str().into(),
                                        &(m.value as f64).into(),
                                    );
                                }
                                let devices: Array =
                                    summary.devices.iter().map(|&d| JsValue::from(d)).collect();
                                (
                                    Told::Loaded(f.device),
                                    object(&[
                                        ("type", "memsight:loaded".into()),
                                        ("name", f.name.clone().into()),
                                        ("devices", devices.into()),
                                        ("device", f.device.map_or(JsValue::NULL, JsValue::from)),
                                        ("metrics", metrics.into()),
                                    ]),
                                )
                            }
                            Status::Failed(report) => (
                                Told::Failed,
                                object(&[
                                    ("type", "memsight:failed".into()),
                                    ("name", f.name.clone().into()),
                                    ("message", report.message.clone().into()),
                                    (
                                        "offset",
                                        report.offset.map_or(JsValue::NULL, |o| (o as f64).into()),
                                    ),
                                    (
                                        "hint",
                                        report.hint.clone().map_or(JsValue::NULL, JsValue::from),
                                    ),
                                ]),
                            ),
                            _ => return None,
                        };
                        let new = self.told.with_value(|t| t.get(&f.id) != Some(&told));
                        new.then_some((f.id, told, message))
                    })
                    .collect()
            });
            for (file, told, message) in news {
                self.told.update_value(|t| {
                    t.insert(file, told);
                });
                self.post(&self.origin_of(file), &message);
            }
        });
    }

    /// Tells the shown file's origin which allocation is selected and what the view is, as
    /// they change.
    fn follow_view(self) {
        Effect::new(move |previous: Option<(Option<FileId>, Option<u32>)>| {
            let pin = self.link.live().pin;
            let shown = self.state.with(|s| {
                s.selected()
                    .filter(|f| f.is_ready())
                    .map(|f| (f.id, f.name.clone(), f.device))
            });
            let Some((file, name, device)) = shown else {
                return (None, pin);
            };
            if previous != Some((Some(file), pin)) {
                let selection = object(&[
                    ("type", "memsight:selection".into()),
                    ("name", name.into()),
                    ("device", device.map_or(JsValue::NULL, JsValue::from)),
                    ("allocation", pin.map_or(JsValue::NULL, JsValue::from)),
                ]);
                self.post(&self.origin_of(file), &selection);
            }
            (Some(file), pin)
        });
        Effect::new(move |_| {
            let fragment = self.link.fragment.get();
            let Some(file) = self.state.with_untracked(|s| s.selected_id()) else {
                return;
            };
            let view = object(&[("type", "memsight:view".into()), ("view", fragment.into())]);
            self.post(&self.origin_of(file), &view);
        });
    }
}

/// The view a message names (`view`: a link fragment), if any.
fn view_of(data: &JsValue) -> Result<Option<ViewLink>, String> {
    Ok(view_fragment(data)?.map(|f| ViewLink::from_fragment(&f)))
}

/// The link fragment a message's `view` holds, if any.
fn view_fragment(data: &JsValue) -> Result<Option<String>, String> {
    match Reflect::get(data, &"view".into()) {
        Ok(v) if v.is_undefined() || v.is_null() => Ok(None),
        Ok(v) => v.as_string().map(Some).ok_or_else(|| {
            "`view` must be a link fragment (a string such as \"device=0&view=table\").".to_string()
        }),
        Err(_) => Ok(None),
    }
}

/// The bytes of a snapshot as a blob: a `Blob` (or `File`) as it is, an `ArrayBuffer` or a
/// typed array copied.
fn blob_of(bytes: &JsValue) -> Option<Blob> {
    if let Some(blob) = bytes.dyn_ref::<Blob>() {
        return Some(blob.clone());
    }
    let array = if let Some(buffer) = bytes.dyn_ref::<ArrayBuffer>() {
        Uint8Array::new(buffer)
    } else if ArrayBuffer::is_view(bytes) {
        // Any typed array or DataView: the part of its buffer it covers.
        let field = |name: &str| Reflect::get(bytes, &name.into()).ok();
        let buffer = field("buffer")?.dyn_into::<ArrayBuffer>().ok()?;
        let offset = field("byteOffset")?.as_f64()? as u32;
        let length = field("byteLength")?.as_f64()? as u32;
        Uint8Array::new_with_byte_offset_and_length(&buffer, offset, length)
    } else {
        return None;
    };
    let parts = Array::of1(&array);
    Blob::new_with_u8_array_sequence(&parts).ok()
}

/// A plain object of `fields`.
fn object(fields: &[(&str, JsValue)]) -> JsValue {
    let object = Object::new();
    for (key, value) in fields {
        let _ = Reflect::set(&object, &(*key).into(), value);
    }
    object.into()
}
