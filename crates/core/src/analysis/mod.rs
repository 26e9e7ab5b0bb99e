//! Facts derived from the model: computed once at load ([`Analysed::new`]) or on request by a
//! view. Nothing here decodes or draws.

pub mod overview;
pub mod replay;

use crate::model::Snapshot;
pub use replay::{Allocation, DeviceFacts, Finding, Origin, Peak, NO_ROW};

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

    /// The overview of device `id` (an empty overview for an unknown device).
    pub fn overview(&self, id: u32) -> overview::Overview {
        overview::build(self, id)
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
