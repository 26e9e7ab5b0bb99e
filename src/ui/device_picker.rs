//! Picks which device of a snapshot is shown, when the snapshot has several; names them as
//! PyTorch does (`cuda:0`, `npu:1`).
//!
//! Shows nothing for a single-device snapshot; the choice is reported through `on_pick`.
//! Devices that used no memory are listed last and say so.

use leptos::prelude::*;

use crate::format;
use crate::model::DeviceKind;

#[component]
pub fn DevicePicker(
    devices: Memo<Vec<u32>>,
    /// Those of `devices` that used no memory: said so.
    unused: Memo<Vec<u32>>,
    kind: Memo<DeviceKind>,
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
                        <option value=d.to_string() selected=move || device.get() == Some(d)
                            data-unused=move || unused.with(|u| u.contains(&d)).to_string()>
                            {move || {
                                let name = format::device(kind.get(), d);
                                if unused.with(|u| u.contains(&d)) {
                                    format!("{name} (no memory used)")
                                } else {
                                    name
                                }
                            }}
                        </option>
                    </For>
                </select>
            </label>
        </Show>
        <Show when=move || devices.with(|d| d.len() == 1)>
            <span class="device-single" id="device-single">
                {move || devices.with(|d| d.first().map(|&d| format::device(kind.get(), d)).unwrap_or_default())}
            </span>
        </Show>
    }
}
