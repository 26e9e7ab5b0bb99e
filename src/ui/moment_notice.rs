//! "Not the peak: … Back to the peak": what every view that can show a moment other than the
//! peak says while it does, so a number copied from it is never taken for the peak's.
//!
//! Words and a button only; which moment is shown is the view's.

use leptos::prelude::*;

/// `words` says what is shown instead of the peak ("showing the end"); `back` returns to the
/// peak. `id` names the notice, `back_id` its button.
#[component]
pub fn MomentNotice(
    id: &'static str,
    back_id: &'static str,
    words: String,
    #[prop(into)] back: Callback<()>,
) -> impl IntoView {
    view! {
        <p class="moment-notice" id=id role="status">
            {format!("Not the peak: {words}. ")}
            <button type="button" class="link-button" id=back_id on:click=move |_| back.run(())>"Back to the peak"</button>
        </p>
    }
}
