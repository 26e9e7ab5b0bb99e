//! Picks which device of a snapshot is shown, when the snapshot has several; names them as
//! PyTorch does (`cuda:0`, `npu:1`).
//!
//! Shows nothing for a single-device snapshot; the choice is reported through `on_pick`.
//! Devices that used no memory are listed last and say so.

use leptos::prelude::*;

use super::state::{AppState, FileId};
use crate::format;
use crate::model::DeviceKind;

/// A file's devices as a picker shows them, read from the page state.
#[derive(Clone, Copy)]
pub struct FileDevices {
    /// Those that used memory first, then the empty ones.
    pub devices: Memo<Vec<u32>>,
    /// Those of `devices` that used no memory: said so.
    pub unused: Memo<Vec<u32>>,
    pub kind: Memo<DeviceKind>,
    /// The device shown.
    pub device: Memo<Option<u32>>,
}

impl FileDevices {
    pub fn of(state: RwSignal<AppState>, id: FileId) -> Self {
        let devices = Memo::new(move |_| {
            state.with(|s| {
                s.file(id).map_or_else(Vec::new, |f| {
                    let unused = f.unused_devices();
                    let (mut used, empty): (Vec<u32>, Vec<u32>) =
                        f.devices().iter().partition(|d| !unused.contains(d));
                    used.extend(empty);
                    used
                })
            })
        });
        let unused = Memo::new(move |_| {
            state.with(|s| {
                s.file(id)
                    .map(|f| f.unused_devices().to_vec())
                    .unwrap_or_default()
            })
        });
        let kind = Memo::new(move |_| {
            state.with(|s| s.file(id).map(|f| f.device_kind()).unwrap_or_default())
        });
        let device = Memo::new(move |_| state.with(|s| s.file(id).and_then(|f| f.device)));
        FileDevices {
            devices,
            unused,
            kind,
            device,
        }
    }
}

#[component]
pub fn DevicePicker(
    of: FileDevices,
    on_pick: impl Fn(u32) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let FileDevices {
        devices,
        unused,
        kind,
        device,
    } = of;
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
