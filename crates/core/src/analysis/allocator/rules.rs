//! PyTorch's CUDACachingAllocator rules that decide a block's size: how a request is rounded
//! (`round_size`) and whether a free block is split or handed out whole (`should_split`), read
//! from the snapshot's `allocator_settings` when present (`max_split_size`,
//! `expandable_segments`, `roundup_power2_divisions`).
//!
//! These rules only estimate the size of blocks the trace does not describe (the trace records
//! requested sizes; the final segments give the block sizes of what is alive at the end). This
//! is not a simulation of the allocator's choice of block: trace addresses say where each
//! block went.

use crate::model::Value;

/// Every block is a multiple of this many bytes (`kMinBlockSize`).
pub const MIN_BLOCK_SIZE: u64 = 512;
/// The largest request served from the small pool (`kSmallSize`, 1 MiB).
pub const SMALL_REQUEST: u64 = 1 << 20;
/// The size of every small-pool segment (`kSmallBuffer`, 2 MiB).
pub const SMALL_SEGMENT: u64 = 2 << 20;
/// `roundup_power2_divisions` has one setting per power of two from 1 MiB to 32 GiB.
const ROUNDUP_INTERVALS: usize = 16;

/// The settings that shape block sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeRules {
    /// Blocks requested at or above this size are never split (`max_split_size`; `u64::MAX`
    /// when unset).
    pub max_split_size: u64,
    /// With expandable segments on, any block splits when at least 512 bytes remain, in both
    /// pools.
    pub expandable_segments: bool,
    /// Divisions of each power-of-two interval from 1 MiB up (`0` or `1`: no power-of-two
    /// rounding).
    pub roundup_divisions: [u64; ROUNDUP_INTERVALS],
}

impl Default for SizeRules {
    fn default() -> Self {
        SizeRules {
            max_split_size: u64::MAX,
            expandable_segments: false,
            roundup_divisions: [0; ROUNDUP_INTERVALS],
        }
    }
}

impl SizeRules {
    /// The rules `allocator_settings` describes; PyTorch's defaults for what it does not say.
    /// `expandable_default` stands for `expandable_segments` when the settings are absent
    /// (older files: true when the device has expandable segments).
    pub fn from_settings(settings: Option<&Value>, expandable_default: bool) -> Self {
        let mut rules = SizeRules {
            expandable_segments: expandable_default,
            ..SizeRules::default()
        };
        let Some(Value::Dict(items)) = settings else {
            return rules;
        };
        for (key, value) in items {
            let Value::Str(key) = key else { continue };
            match (key.as_str(), value) {
                ("max_split_size", Value::Int(n)) if *n > 0 => rules.max_split_size = *n as u64,
                ("expandable_segments", Value::Bool(on)) => rules.expandable_segments = *on,
                ("roundup_power2_divisions", Value::Dict(divisions)) => {
                    for (interval, count) in divisions {
                        // Keys are the interval's start in MiB as text: "1", "2", … "32768".
                        let start = match interval {
                            Value::Str(s) => s.parse::<u64>().ok(),
                            Value::Int(n) => u64::try_from(*n).ok(),
                            _ => None,
                        };
                        let (Some(start), Value::Int(count)) = (start, count) else {
                            continue;
                        };
                        if start.is_power_of_two() {
                            let index = start.trailing_zeros() as usize;
                            if index < ROUNDUP_INTERVALS {
                                rules.roundup_divisions[index] = (*count).max(0) as u64;
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        rules
    }

    /// The block size a request of `requested` bytes asks for (`round_size`).
    pub fn round(&self, requested: u64) -> u64 {
        if requested < MIN_BLOCK_SIZE {
            return MIN_BLOCK_SIZE;
        }
        let divisions = self.divisions(requested);
        if divisions > 1 && requested > MIN_BLOCK_SIZE * divisions {
            return next_power2_division(requested, divisions);
        }
        requested.div_ceil(MIN_BLOCK_SIZE) * MIN_BLOCK_SIZE
    }

    fn divisions(&self, size: u64) -> u64 {
        let log_size = 63 - size.leading_zeros() as usize;
        let index = log_size.saturating_sub(20).min(ROUNDUP_INTERVALS - 1);
        self.roundup_divisions[index]
    }

    /// Whether a free block of `block` bytes is split to serve a block of `size` bytes
    /// (`should_split`); when not, the request gets the whole block.
    pub fn should_split(&self, small_pool: bool, block: u64, size: u64) -> bool {
        let remaining = block.saturating_sub(size);
        if small_pool || self.expandable_segments {
            remaining >= MIN_BLOCK_SIZE
        } else {
            size < self.max_split_size && remaining > SMALL_REQUEST
        }
    }

    /// The size of a block for `requested` bytes carved at the start of `free` bytes of free
    /// memory: rounded, or all of it when the remainder would not be split off; never more
    /// than the free memory.
    pub fn block_size(&self, small_pool: bool, requested: u64, free: u64) -> u64 {
        let size = self.round(requested).min(free);
        if self.should_split(small_pool, free, size) {
            size
        } else {
            free
        }
    }
}

/// `roundup_power2_next_division`: the next of `divisions` equal steps between the powers of
/// two around `size`.
fn next_power2_division(size: u64, divisions: u64) -> u64 {
    if size.is_power_of_two() {
        return size;
    }
    let floor = 1u64 << (63 - size.leading_zeros());
    let step = floor >> (63 - divisions.leading_zeros());
    if step == 0 {
        return floor << 1;
    }
    let rounded_down = size & !(step - 1);
    if rounded_down == size {
        size
    } else {
        rounded_down + step
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_up_to_512_bytes() {
        let rules = SizeRules::default();
        assert_eq!(rules.round(0), 512);
        assert_eq!(rules.round(1), 512);
        assert_eq!(rules.round(512), 512);
        assert_eq!(rules.round(513), 1024);
        assert_eq!(rules.round(3 << 20), 3 << 20);
    }

    #[test]
    fn power2_divisions_round_to_the_next_division() {
        let settings = Value::Dict(vec![(
            Value::Str("roundup_power2_divisions".into()),
            Value::Dict(vec![
                (Value::Str("1".into()), Value::Int(4)),
                (Value::Str("2".into()), Value::Int(0)),
            ]),
        )]);
        let rules = SizeRules::from_settings(Some(&settings), false);
        // 1.2 MiB lies between 1 and 2 MiB: steps of 256 KiB give 1.25 MiB.
        assert_eq!(rules.round(1_200 * 1024), 1_280 * 1024);
        // 2–4 MiB has no divisions: plain 512-byte rounding.
        assert_eq!(rules.round((2 << 20) + 1), (2 << 20) + 512);
        // Below 1 MiB the first interval applies too (PyTorch clamps the index at 0), to
        // requests above 512 bytes times the divisions.
        assert_eq!(rules.round(9000), 10240);
        assert_eq!(rules.round(1200), 1536);
    }

    #[test]
    fn large_blocks_split_only_when_more_than_a_mebibyte_remains() {
        let rules = SizeRules::default();
        let mib = 1u64 << 20;
        assert!(rules.should_split(true, 2 * mib, 2 * mib - 512));
        assert!(!rules.should_split(true, 2 * mib, 2 * mib - 511));
        assert!(!rules.should_split(false, 20 * mib, 19 * mib));
        assert!(rules.should_split(false, 20 * mib, 19 * mib - 512));
        assert_eq!(rules.block_size(false, 19 * mib, 20 * mib), 20 * mib);
        assert_eq!(rules.block_size(false, 3 * mib, 20 * mib), 3 * mib);
        let capped = SizeRules {
            max_split_size: 8 * mib,
            ..SizeRules::default()
        };
        assert_eq!(capped.block_size(false, 9 * mib, 40 * mib), 40 * mib);
        let expandable = SizeRules {
            expandable_segments: true,
            ..SizeRules::default()
        };
        assert_eq!(expandable.block_size(false, 19 * mib, 20 * mib), 19 * mib);
    }
}
