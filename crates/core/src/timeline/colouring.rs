//! What colour each element of a timeline is painted in: its own (by allocation), or its
//! category's (by role or by component), with the small-allocations band split into its
//! categories so a zoomed-out run shows how much of each column every category holds.
//!
//! The painter ([`super::raster`]) only asks a [`Colouring`]; this module answers it from the
//! categories ([`crate::analysis::categories::categorised`]). Not the place for choosing categories.

use serde::{Deserialize, Serialize};

use super::raster::Colouring;
use crate::analysis::categories::index::Lookup;
use crate::analysis::categories::{DeviceCategories, Dimension};
use crate::analysis::elements::AllocationElements;

/// How a timeline's elements are coloured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ColourBy {
    /// Each allocation its own colour.
    #[default]
    Allocation,
    Role,
    Component,
}

impl ColourBy {
    /// How a timeline is coloured when a file opens (what its worker prepares to paint).
    pub const FIRST_SHOWN: ColourBy = ColourBy::Role;

    pub fn dimension(self) -> Option<Dimension> {
        match self {
            ColourBy::Allocation => None,
            ColourBy::Role => Some(Dimension::Role),
            ColourBy::Component => Some(Dimension::Component),
        }
    }
}

/// Allocations in their category's colour; the band split by the categories of the
/// allocations it holds (`band` covers exactly the allocations not drawn one by one).
pub struct ByCategory<'a> {
    pub elements: &'a AllocationElements<'a>,
    pub categories: &'a DeviceCategories,
    pub dimension: Dimension,
    pub colours: &'a [[u8; 4]],
    pub band: Lookup<'a>,
}

impl Colouring for ByCategory<'_> {
    fn colour(&self, element: u32) -> [u8; 4] {
        let allocation = self.elements.allocation_index(element);
        self.colours[self.categories.category(self.dimension, allocation)]
    }

    fn band(&self, state: u32, parts: &mut Vec<([u8; 4], u64)>) {
        let mut push = |bytes: &[u64]| {
            parts.extend(
                bytes
                    .iter()
                    .zip(self.colours)
                    .filter(|(&b, _)| b > 0)
                    .map(|(&b, &c)| (c, b)),
            )
        };
        match self.dimension {
            Dimension::Role => push(&self.band.roles_at(state)),
            Dimension::Component => push(&self.band.components_at(state)),
        }
    }

    fn blends(&self) -> bool {
        false
    }
}

/// A private pool's allocations in their category's colour (a pool's timeline draws every
/// one of its few blocks, so there is no band to split).
pub struct PoolByCategory<'a> {
    /// The allocation of each element.
    pub members: &'a [u32],
    pub categories: &'a DeviceCategories,
    pub dimension: Dimension,
    pub colours: &'a [[u8; 4]],
}

impl Colouring for PoolByCategory<'_> {
    fn colour(&self, element: u32) -> [u8; 4] {
        let allocation = self.members[element as usize] as usize;
        self.colours[self.categories.category(self.dimension, allocation)]
    }

    fn blends(&self) -> bool {
        false
    }
}
