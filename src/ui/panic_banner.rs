//! Shows a Rust panic in the page instead of leaving a dead page: a panic hook writes the
//! message into the static `#panic-banner` element of `index.html` (outside the Leptos tree,
//! which may be unusable after a panic) and logs it with `console_error_panic_hook`.
//!
//! Panics inside a worker are reported by the worker itself as a failed file (see `worker`).

use wasm_bindgen::JsCast;

/// Installs the page's panic hook.
pub fn install_hook() {
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        show(&format!(
            "memsight crashed: {info}. Reload the page to continue; your files were not sent anywhere."
        ));
        // An embedding page waits for an answer about the file it handed over.
        crate::ui::embed::tell_crashed();
    }));
}

/// Writes `message` (as text) into the banner and shows it.
fn show(message: &str) {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let banner = match document.get_element_by_id("panic-banner") {
        Some(banner) => banner,
        None => {
            let Ok(banner) = document.create_element("div") else {
                return;
            };
            banner.set_id("panic-banner");
            let _ = banner.set_attribute("role", "alert");
            if let Some(body) = document.body() {
                let _ = body.prepend_with_node_1(&banner);
            }
            banner
        }
    };
    banner.set_text_content(Some(message));
    if let Some(banner) = banner.dyn_ref::<web_sys::HtmlElement>() {
        banner.set_hidden(false);
    }
}
