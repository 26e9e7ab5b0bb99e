//! Why a file could not be opened: the message, the byte offset where the problem was found,
//! and a hint about what the file is or what to do.
//!
//! Everything shown comes from the file or the decoder and is rendered as text only.

use leptos::prelude::*;

use crate::format;
use crate::protocol::ErrorReport;

#[component]
pub fn ErrorReportView(name: String, report: ErrorReport) -> impl IntoView {
    let ErrorReport {
        message,
        offset,
        hint,
    } = report;
    view! {
        <section class="panel error-report" id="error-report" role="alert">
            <h1 class="panel-title">"Could not open " <span class="file-title">{name}</span></h1>
            <p class="error-message">{message}</p>
            {offset.map(|offset| view! {
                <p class="error-offset" data-offset=offset.to_string()>
                    {format::problems::error_offset(offset)}
                </p>
            })}
            {hint.map(|hint| view! { <p class="error-hint">{hint}</p> })}
            <p class="hint">"Other open files are not affected. Close this one from the list."</p>
        </section>
    }
}
