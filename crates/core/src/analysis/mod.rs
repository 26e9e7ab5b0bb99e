//! Facts derived from the model that many views share: the replay of each device's trace
//! (computed once at load, [`Analysed::new`]), stack analysis, and typed warnings. Nothing
//! here decodes, draws or chooses words; each view's own computation lives with its feature
//! (`overview`, `timeline`).

mod allocations;
pub mod allocator;
pub mod axis;
pub mod categories;
pub mod curve;
pub mod elements;
pub mod keywords;
pub mod lines;
pub mod listing;
pub mod live;
pub mod moment;
pub mod oom;
pub mod palette;
pub mod pools;
pub mod query;
pub mod replay;
pub mod scopes;
pub mod stacks;
#[cfg(test)]
pub(crate) mod test_traces;
pub mod warning;

use serde::{Deserialize, Serialize};

use crate::model::{Action, Snapshot};
pub use allocations::{Allocation, Allocations, Origin, NO_ROW};
pub use replay::{DeviceFacts, Peak};
pub use warning::Warning;

/// Why a device is the one shown first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceChoice {
    /// The snapshot has one device.
    Only,
    /// An allocation failed on it (trace row `event`).
    Oom { event: u32 },
    /// Its allocated memory peaked highest (`bytes`) of the devices.
    HighestPeak { bytes: u64 },
}

/// A snapshot with the facts every view needs, one [`DeviceFacts`] per device (same order as
/// [`Snapshot::devices`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Analysed {
    pub snapshot: Snapshot,
    pub facts: Vec<DeviceFacts>,
    /// Each device's private pools and the allocations in them, like `facts`.
    pub pools: Vec<pools::DevicePools>,
}

impl Analysed {
    pub fn new(snapshot: Snapshot) -> Self {
        let facts: Vec<DeviceFacts> = snapshot.devices.iter().map(replay::replay).collect();
        let pools = snapshot
            .devices
            .iter()
            .zip(&facts)
            .map(|(device, facts)| pools::locate(&snapshot, device, facts))
            .collect();
        Analysed {
            snapshot,
            facts,
            pools,
        }
    }

    /// Where device `id` is in [`Snapshot::devices`] (and in `facts`).
    pub fn device_position(&self, id: u32) -> Option<usize> {
        // A snapshot's devices are sorted by id (`decode::build`): a search keeps a file of a
        // hundred thousand devices from costing time quadratic in their number. A hit is
        // right whatever the order; the walk is for a model built in another order.
        let devices = &self.snapshot.devices;
        match devices.binary_search_by_key(&id, |d| d.id) {
            Ok(i) => Some(i),
            Err(_) => devices.iter().position(|d| d.id == id),
        }
    }

    /// The facts of device `id`.
    pub fn device_facts(&self, id: u32) -> Option<(&crate::model::Device, &DeviceFacts)> {
        let i = self.device_position(id)?;
        Some((&self.snapshot.devices[i], &self.facts[i]))
    }

    /// The device to show first, and why: the first device where an allocation failed, else
    /// the one whose allocated memory peaked highest (then the one with the most trace
    /// entries). `None` for a snapshot without devices.
    pub fn default_device(&self) -> Option<(u32, DeviceChoice)> {
        let devices = &self.snapshot.devices;
        let oom = devices.iter().find_map(|d| {
            let trace = &d.trace;
            (0..trace.len())
                .find(|&r| trace.action[r] == Action::Oom)
                .map(|r| (d.id, r as u32))
        });
        if let Some((id, event)) = oom {
            return Some((id, DeviceChoice::Oom { event }));
        }
        // Pinned host memory is shown first only when the snapshot holds nothing else: the
        // accelerators are what ran out.
        let accelerators = devices
            .iter()
            .filter(|d| d.id != crate::model::PINNED_HOST_DEVICE)
            .count();
        let candidates: Vec<_> = devices
            .iter()
            .zip(&self.facts)
            .filter(|(d, _)| accelerators == 0 || d.id != crate::model::PINNED_HOST_DEVICE)
            .collect();
        if let [(only, _)] = candidates[..] {
            return Some((only.id, DeviceChoice::Only));
        }
        candidates
            .into_iter()
            .max_by_key(|(d, f)| {
                (
                    f.peak_allocated.bytes,
                    d.trace.len(),
                    std::cmp::Reverse(d.id),
                )
            })
            .map(|(d, f)| {
                let bytes = f.peak_allocated.bytes;
                (d.id, DeviceChoice::HighestPeak { bytes })
            })
    }

    /// Heap bytes of the derived facts, for benchmarks.
    pub fn facts_heap_bytes(&self) -> usize {
        self.facts
            .iter()
            .map(|f| {
                f.allocations.heap_bytes()
                    + f.allocated.capacity() * 8
                    + f.reserved_changes.capacity() * 16
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Device;

    fn device(id: u32, rows: &[(Action, u64, u64)]) -> Device {
        Device {
            id,
            ..test_traces::device(rows)
        }
    }

    fn analysed(devices: Vec<Device>) -> Analysed {
        Analysed::new(Snapshot {
            devices,
            ..Snapshot::default()
        })
    }

    #[test]
    fn the_first_device_shown_is_where_memory_ran_out_else_where_it_peaked() {
        let busy = device(0, &[(Action::Alloc, 1, 10), (Action::Alloc, 2, 10)]);
        let big = device(1, &[(Action::Alloc, 1, 500)]);
        let oom = device(2, &[(Action::Alloc, 1, 5), (Action::Oom, 0, 1 << 40)]);
        assert_eq!(
            analysed(vec![busy.clone(), big.clone()]).default_device(),
            Some((1, DeviceChoice::HighestPeak { bytes: 500 }))
        );
        assert_eq!(
            analysed(vec![busy.clone(), big, oom]).default_device(),
            Some((2, DeviceChoice::Oom { event: 1 }))
        );
        assert_eq!(
            analysed(vec![busy]).default_device(),
            Some((0, DeviceChoice::Only))
        );
        assert_eq!(analysed(vec![]).default_device(), None);
    }

    #[test]
    fn pinned_host_memory_is_shown_first_only_when_there_is_nothing_else() {
        use crate::model::PINNED_HOST_DEVICE;
        let cuda = device(0, &[(Action::Alloc, 1, 10)]);
        let gpu1 = device(1, &[(Action::Alloc, 1, 20)]);
        let host = device(PINNED_HOST_DEVICE, &[(Action::Alloc, 1, 1 << 30)]);
        assert_eq!(
            analysed(vec![cuda.clone(), host.clone()]).default_device(),
            Some((0, DeviceChoice::Only))
        );
        assert_eq!(
            analysed(vec![cuda, gpu1, host.clone()]).default_device(),
            Some((1, DeviceChoice::HighestPeak { bytes: 20 }))
        );
        assert_eq!(
            analysed(vec![host]).default_device(),
            Some((PINNED_HOST_DEVICE, DeviceChoice::Only))
        );
    }
}
