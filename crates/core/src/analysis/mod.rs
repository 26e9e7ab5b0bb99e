//! Facts derived from the model that many views share: the replay of each device's trace
//! (computed once at load, [`Analysed::new`]), stack analysis, and typed warnings. Nothing
//! here decodes, draws or chooses words; each view's own computation lives with its feature
//! (`overview`, `timeline`).

pub mod replay;
pub mod stacks;
pub mod warning;

use crate::model::Snapshot;
pub use replay::{Allocation, DeviceFacts, Origin, Peak, NO_ROW};
pub use warning::Warning;

/// A snapshot with the facts every view needs, one [`DeviceFacts`] per device (same order as
/// [`Snapshot::devices`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Analysed {
    pub snapshot: Snapshot,
    pub facts: Vec<DeviceFacts>,
}

impl Analysed {
    pub fn new(snapshot: Snapshot) -> Self {
        let facts = snapshot.devices.iter().map(replay::replay).collect();
        Analysed { snapshot, facts }
    }

    /// The facts of device `id`.
    pub fn device_facts(&self, id: u32) -> Option<(&crate::model::Device, &DeviceFacts)> {
        let i = self.snapshot.devices.iter().position(|d| d.id == id)?;
        Some((&self.snapshot.devices[i], &self.facts[i]))
    }

    /// Heap bytes of the derived facts, for benchmarks.
    pub fn facts_heap_bytes(&self) -> usize {
        self.facts
            .iter()
            .map(|f| {
                f.allocations.capacity() * std::mem::size_of::<Allocation>()
                    + f.allocated.capacity() * 8
                    + f.reserved_changes.capacity() * 16
            })
            .sum()
    }
}
