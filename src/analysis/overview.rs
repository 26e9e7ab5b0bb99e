//! The overview of one device of a snapshot: headline numbers, counts, era, settings and
//! warnings, as a flat list of named metrics that any front end can show and test.
//!
//! Not a place for drawing: views format these values; this module only computes them.

use serde::{Deserialize, Serialize};

/// How a metric's value is to be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Bytes,
    Count,
    /// Microseconds (a duration, or a time since the epoch for `*-time-us` metrics).
    Micros,
    /// Parts per million (efficiency 0.973 is 973_000).
    Ppm,
}

/// One number of the overview, with a stable key (`peak-allocated-bytes`) for tests and links.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub key: String,
    pub label: String,
    pub value: u64,
    pub unit: Unit,
    /// Which group the metric belongs to on the page ("memory", "counts", "time").
    pub group: String,
}

/// A warning about the snapshot, with a stable kind for tests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WarningView {
    pub kind: String,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Overview {
    pub device: u32,
    pub metrics: Vec<Metric>,
    /// The PyTorch release range the file's keys point to, e.g. "2.10 or later".
    pub era: String,
    /// Allocator settings as (name, value) text pairs, in file order.
    pub allocator_settings: Vec<(String, String)>,
    pub warnings: Vec<WarningView>,
}

/// The overview of `device` in `snapshot`.
pub fn overview(snapshot: &crate::model::Snapshot, device: u32) -> Overview {
    let _ = snapshot;
    Overview {
        device,
        metrics: Vec::new(),
        era: String::new(),
        allocator_settings: Vec::new(),
        warnings: Vec::new(),
    }
}
