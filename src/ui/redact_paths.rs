//! "Redact paths": whether the page's downloads (a device's report, the table's CSV) rewrite
//! the snapshot's paths as `memsight --redact` does, so a report can be posted without the
//! user's home, name or environment. One setting for the page, remembered (`kept`)
//! and handed to the views through context.
//!
//! Only the setting and its toggle: the rewrite is the core's (`model::redact`), done by the
//! worker that holds the file.

use leptos::prelude::*;

/// Where the setting is remembered.
const KEY: &str = "memsight-redact-paths";

/// The page's setting: downloads redact paths when set.
#[derive(Clone, Copy)]
pub struct RedactPaths(RwSignal<bool>);

impl RedactPaths {
    /// The remembered setting (off when never set), provided to every view.
    pub fn provide() -> Self {
        let on = super::kept::get::<bool>(KEY).unwrap_or(false);
        let setting = RedactPaths(RwSignal::new(on));
        provide_context(setting);
        setting
    }

    /// The page's setting, taken where a view is made (an event handler runs outside it);
    /// `None` outside the app.
    pub fn in_context() -> Option<RedactPaths> {
        use_context::<RedactPaths>()
    }

    /// Whether downloads redact paths now.
    pub fn on(setting: Option<RedactPaths>) -> bool {
        setting.is_some_and(|s| s.0.get_untracked())
    }

    fn set(self, on: bool) {
        self.0.set(on);
        super::kept::set(KEY, &on);
    }
}

/// The toggle, in the toolbar.
#[component]
pub fn RedactToggle() -> impl IntoView {
    let setting = use_context::<RedactPaths>().expect("the app provides RedactPaths");
    view! {
        <label
            class="redact-toggle"
            title="Downloaded reports and tables show paths as site-packages/…, <home>/…, <root>/…: no home folder, user name or environment (as memsight --redact)"
        >
            <input
                id="redact-paths"
                type="checkbox"
                prop:checked=move || setting.0.get()
                on:change=move |ev| setting.set(event_target_checked(&ev))
            />
            "Redact paths"
        </label>
    }
}
