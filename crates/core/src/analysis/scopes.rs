//! A device's profiler scopes: the `record_function` ranges `external_annotations` records as
//! starts and ends (`Optimizer.step#AdamW.step`, `## forward ##`), paired. Every view that
//! reads scopes pairs them here, so they agree on which start an end closes.
//!
//! An end closes the latest open scope of its name; a start never closed is open to the end
//! of the trace; an end with no start (recording began inside its scope) is dropped. Times
//! only: which trace rows a scope holds is its reader's business.

use crate::model::{AnnotationStage, Snapshot, StrId};

/// One scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScopeRange {
    pub name: StrId,
    pub start_us: i64,
    /// `None` when it was never closed.
    pub end_us: Option<i64>,
    /// How many scopes were open when it started.
    pub depth: u32,
}

impl ScopeRange {
    /// Whether it holds time `t` (a scope never closed holds every time after its start).
    pub fn holds(&self, t: i64) -> bool {
        self.start_us <= t && self.end_us.is_none_or(|end| t <= end)
    }
}

/// The scopes of device `device`, in the order they started.
pub fn scope_ranges(snapshot: &Snapshot, device: u32) -> Vec<ScopeRange> {
    let mut ranges: Vec<ScopeRange> = Vec::new();
    // Positions in `ranges` of the scopes open now, in the order they opened.
    let mut open: Vec<usize> = Vec::new();
    for a in snapshot.annotations.iter().filter(|a| a.device == device) {
        match a.stage {
            AnnotationStage::Start => {
                open.push(ranges.len());
                ranges.push(ScopeRange {
                    name: a.name,
                    start_us: a.time_us,
                    end_us: None,
                    depth: open.len() as u32 - 1,
                });
            }
            AnnotationStage::End => {
                if let Some(at) = open.iter().rposition(|&i| ranges[i].name == a.name) {
                    let i = open.remove(at);
                    ranges[i].end_us = Some(a.time_us);
                }
            }
            AnnotationStage::Other(_) => {}
        }
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Annotation;

    #[test]
    fn ends_close_the_latest_open_scope_of_their_name() {
        let mut snapshot = Snapshot::default();
        let step = snapshot.strings.intern("step");
        let fwd = snapshot.strings.intern("forward");
        let mark = |name, stage, time_us| Annotation {
            name,
            stage,
            device: 0,
            time_us,
        };
        use AnnotationStage::{End, Start};
        snapshot.annotations = vec![
            // An end whose start came before recording: dropped.
            mark(fwd, End, 1),
            mark(step, Start, 2),
            mark(fwd, Start, 3),
            mark(fwd, Start, 4),
            mark(fwd, End, 5),
            mark(fwd, End, 6),
            mark(step, End, 7),
            mark(step, Start, 8),
        ];
        let ranges = scope_ranges(&snapshot, 0);
        let got: Vec<(StrId, i64, Option<i64>, u32)> = ranges
            .iter()
            .map(|r| (r.name, r.start_us, r.end_us, r.depth))
            .collect();
        assert_eq!(
            got,
            vec![
                (step, 2, Some(7), 0),
                (fwd, 3, Some(6), 1),
                (fwd, 4, Some(5), 2),
                (step, 8, None, 0),
            ]
        );
        assert!(ranges[3].holds(100) && !ranges[0].holds(8));
        assert!(scope_ranges(&snapshot, 1).is_empty());
    }
}
