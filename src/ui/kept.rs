//! Small settings the page remembers across visits (category rules, "Redact paths", the
//! plot's height), in `localStorage` when the browser allows it.
//!
//! A browser may refuse storage: to a frame embedded by a page of another site (Safari,
//! Firefox's strict mode, Chrome without third-party cookies), in private windows, or by a
//! user's setting; the refusal can come as an exception on reading `localStorage` itself or on
//! each use. Then settings last as long as the page, kept in memory here, and the page says so
//! once, quietly. Nothing here panics. Not the place for what a setting means.

use std::cell::RefCell;
use std::collections::HashMap;

use serde::de::DeserializeOwned;
use serde::Serialize;

thread_local! {
    /// Settings kept while the browser refuses storage, as the JSON `localStorage` would hold.
    static MEMORY: RefCell<HashMap<String, String>> = RefCell::new(HashMap::new());
}

/// The browser's `localStorage`, when it lets the page have it.
fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// Whether settings last only as long as the page: the browser refuses storage.
pub fn refused() -> bool {
    let Some(storage) = storage() else {
        return true;
    };
    // Some browsers hand out the object and refuse each write.
    const PROBE: &str = "memsight:storage-probe";
    let writable = storage.set_item(PROBE, "1").is_ok();
    let _ = storage.remove_item(PROBE);
    !writable
}

/// The setting kept under `key`, if any and readable.
pub fn get<T: DeserializeOwned>(key: &str) -> Option<T> {
    // A value the browser refused to keep (its quota full) is in memory.
    let text = match storage().map(|s| s.get_item(key)) {
        Some(Ok(Some(text))) => Some(text),
        _ => MEMORY.with(|m| m.borrow().get(key).cloned()),
    }?;
    serde_json::from_str(&text).ok()
}

/// Keeps `value` under `key`: in the browser, or in memory for this page when it refuses.
pub fn set<T: Serialize>(key: &str, value: &T) {
    let Ok(text) = serde_json::to_string(value) else {
        return;
    };
    let stored = storage().is_some_and(|s| s.set_item(key, &text).is_ok());
    if !stored {
        MEMORY.with(|m| m.borrow_mut().insert(key.to_string(), text));
    }
}
