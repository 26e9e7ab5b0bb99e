//! The allocator settings recorded in the snapshot (`PYTORCH_CUDA_ALLOC_CONF` and friends), as
//! a two-column table in file order.
//!
//! Values are shown exactly as the analysis gives them, as text.

use leptos::prelude::*;

#[component]
pub fn AllocatorSettings(
    settings: Vec<(String, String)>,
    /// Why there are none.
    missing: &'static str,
) -> impl IntoView {
    let empty = settings.is_empty();
    view! {
        <section class="fact-card settings">
            <h2>"Allocator settings"</h2>
            {if empty {
                view! { <p class="hint">{missing}</p> }.into_any()
            } else {
                view! {
                    <table class="settings-table" id="allocator-settings">
                        <tbody>
                            {settings
                                .into_iter()
                                .map(|(name, value)| {
                                    let key = name.clone();
                                    view! {
                                    <tr data-setting=key>
                                        <th scope="row">{name}</th>
                                        <td>{value}</td>
                                    </tr>
                                    }
                                })
                                .collect_view()}
                        </tbody>
                    </table>
                }
                .into_any()
            }}
        </section>
    }
}
