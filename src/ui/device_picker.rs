//! Picks which CUDA device of a snapshot is shown, when the snapshot has several.
//!
//! Shows nothing for a single-device snapshot; the choice is reported through `on_pick`.

use leptos::prelude::*;

#[component]
pub fn DevicePicker(
    devices: Memo<Vec<u32>>,
    device: Memo<Option<u32>>,
    on_pick: impl Fn(u32) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    view! {
        <Show when=move || devices.with(|d| d.len() > 1)>
            <label class="device-picker">
                <span>"Device"</span>
                <select
                    id="device-picker"
                    on:change=move |event| {
                        if let Ok(d) = event_target_value(&event).parse::<u32>() {
                            on_pick(d);
                        }
                    }
                >
                    <For each=move || devices.get() key=|d| *d let:d>
                        <option value=d.to_string() selected=move || device.get() == Some(d)>
                            {format!("cuda:{d}")}
                        </option>
                    </For>
                </select>
            </label>
        </Show>
        <Show when=move || devices.with(|d| d.len() == 1)>
            <span class="device-single" id="device-single">
                {move || devices.with(|d| d.first().map(|d| format!("cuda:{d}")).unwrap_or_default())}
            </span>
        </Show>
    }
}
