//! Whether this worker starts plain: the page asked for a plain startup (`?startup=plain`)
//! and told the worker so on its address (`worker_loader.js?startup=plain`). A plain worker
//! does not warm up (`warmup`, and with it the readers readied and the memory touched ahead)
//! and does not lay a file's first view out before it is asked for (`first_view`). Not the
//! place for what those tricks do.

use wasm_bindgen::JsValue;

/// Read from the worker's own address, once per call (a load asks it twice).
pub(super) fn plain() -> bool {
    let location = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("location"));
    let search = location
        .and_then(|l| js_sys::Reflect::get(&l, &JsValue::from_str("search")))
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_default();
    search
        .trim_start_matches('?')
        .split('&')
        .any(|pair| pair == "startup=plain")
}
