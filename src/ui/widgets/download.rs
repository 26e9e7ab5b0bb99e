//! Downloads started by the page: a data or object URL, or a text, saved as a named file
//! through a link clicked off screen. Not the place for what is downloaded (each view makes
//! its own document or picture).

use wasm_bindgen::JsCast;

/// Downloads `href` (a data or object URL) as `name`.
pub fn download(name: &str, href: &str) {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let Ok(anchor) = document.create_element("a") else {
        return;
    };
    let Ok(anchor) = anchor.dyn_into::<web_sys::HtmlAnchorElement>() else {
        return;
    };
    anchor.set_href(href);
    anchor.set_download(name);
    anchor.click();
}

/// Downloads `text` as a file of `mime` type.
pub fn download_text(name: &str, text: &str, mime: &str) {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else {
        return;
    };
    if let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) {
        download(name, &url);
        let _ = web_sys::Url::revoke_object_url(&url);
    }
}
