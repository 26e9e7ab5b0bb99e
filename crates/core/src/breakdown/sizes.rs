//! Sizes as histograms with log2 bins: of the allocations live at a moment, and of the final
//! segments' cached free blocks. A bin holds sizes from its `lower` bound (a power of two) to
//! twice that, excluded; zero-byte sizes go to the bin of 1.

use serde::{Deserialize, Serialize};

use crate::analysis::DeviceFacts;
use crate::model::{BlockState, Device};

/// One log2 bin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeBin {
    /// The smallest size in the bin: a power of two.
    pub lower: u64,
    pub count: u64,
    pub bytes: u64,
}

/// Bins of `sizes`, from the smallest non-empty bin to the largest, empty bins between kept
/// (so bars line up with a log axis).
pub fn histogram(sizes: impl Iterator<Item = u64>) -> Vec<SizeBin> {
    let mut bins = [(0u64, 0u64); 64];
    for size in sizes {
        let bin = 63 - size.max(1).leading_zeros() as usize;
        bins[bin].0 += 1;
        bins[bin].1 += size;
    }
    let Some(first) = bins.iter().position(|b| b.0 > 0) else {
        return Vec::new();
    };
    let last = bins.iter().rposition(|b| b.0 > 0).unwrap_or(first);
    (first..=last)
        .map(|bin| SizeBin {
            lower: 1u64 << bin,
            count: bins[bin].0,
            bytes: bins[bin].1,
        })
        .collect()
}

/// The sizes of the allocations alive at `state` that `keep` accepts (told their index into
/// [`DeviceFacts::allocations`]).
pub fn live_sizes(facts: &DeviceFacts, state: u32, keep: impl Fn(usize) -> bool) -> Vec<SizeBin> {
    histogram(
        facts
            .allocations
            .iter()
            .enumerate()
            .filter(|&(i, a)| a.is_alive_at(state) && keep(i))
            .map(|(_, a)| a)
            .map(|a| a.size),
    )
}

/// The sizes of the final segments' cached free blocks.
pub fn cached_free_sizes(device: &Device) -> Vec<SizeBin> {
    histogram(
        device
            .blocks
            .iter()
            .filter(|b| b.state == BlockState::Inactive)
            .map(|b| b.size),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_powers_of_two_and_keep_empty_bins_between() {
        let bins = histogram([0, 1, 3, 2, 16, 31].into_iter());
        let got: Vec<(u64, u64, u64)> = bins.iter().map(|b| (b.lower, b.count, b.bytes)).collect();
        assert_eq!(
            got,
            [(1, 2, 1), (2, 2, 5), (4, 0, 0), (8, 0, 0), (16, 2, 47)]
        );
        assert!(histogram(std::iter::empty()).is_empty());
        assert_eq!(histogram([u64::MAX].into_iter())[0].lower, 1 << 63);
    }
}
