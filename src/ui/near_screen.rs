//! Tells when an element first comes near the screen, so that what sits below the fold (a
//! large file's breakdown holds a dozen charts) is drawn once somebody may look at it rather
//! than all at once while the views appear. Not the place for what to draw.

use leptos::html::ElementType;
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use web_sys::{IntersectionObserver, IntersectionObserverEntry, IntersectionObserverInit};

/// How far outside the screen an element already counts as near: it is drawn before it is
/// scrolled into view.
const MARGIN: &str = "400px 0px";

type Watch = (IntersectionObserver, Closure<dyn FnMut(js_sys::Array)>);

/// A signal that turns true, for good, once `target` is within [`MARGIN`] of the screen
/// (at once where the browser cannot tell).
pub fn near_screen<E>(target: NodeRef<E>) -> Signal<bool>
where
    E: ElementType,
    E::Output: JsCast + Clone + 'static,
{
    let near = RwSignal::new(false);
    let watch = StoredValue::new_local(None::<Watch>);
    Effect::new(move |_| {
        let Some(element) = target.get() else { return };
        if near.get_untracked() || watch.with_value(Option::is_some) {
            return;
        }
        let callback = Closure::<dyn FnMut(js_sys::Array)>::new(move |entries: js_sys::Array| {
            let seen = entries.iter().any(|e| {
                e.unchecked_into::<IntersectionObserverEntry>()
                    .is_intersecting()
            });
            if seen {
                near.try_set(true);
                // Disconnected only: the callback running now is dropped on cleanup.
                watch.try_with_value(|w| w.as_ref().map(|(o, _)| o.disconnect()));
            }
        });
        let options = IntersectionObserverInit::new();
        options.set_root_margin(MARGIN);
        match IntersectionObserver::new_with_options(callback.as_ref().unchecked_ref(), &options) {
            Ok(observer) => {
                observer.observe(element.unchecked_ref());
                watch.set_value(Some((observer, callback)));
            }
            Err(_) => near.set(true),
        }
    });
    on_cleanup(move || {
        if let Some((observer, _)) = watch.try_update_value(Option::take).flatten() {
            observer.disconnect();
        }
    });
    near.into()
}
