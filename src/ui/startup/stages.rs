//! The order a file's views mount in once its overview arrives: the timeline first, alone, so
//! nothing competes with what a user looks at first; then, once its first frame is on screen,
//! the views below it one per frame, so no single task builds them all and the page keeps
//! answering meanwhile. Pure and natively tested; `snapshot_view` schedules the frames. Not the
//! place for what is started ahead of a file (`startup::plan`).

use crate::ui::link::Section;

/// One step of the mounting, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Timeline,
    Breakdown,
    Phases,
    Table,
    /// The code behind the table's rows: shown with the table.
    Source,
    /// Only for a file that records the allocator's segments.
    Allocator,
}

impl Stage {
    /// Every stage, in the order they mount.
    pub const ALL: [Stage; 6] = [
        Stage::Timeline,
        Stage::Breakdown,
        Stage::Phases,
        Stage::Table,
        Stage::Source,
        Stage::Allocator,
    ];

    /// How many stages have mounted once this one has.
    pub fn mounted_with(self) -> usize {
        Stage::ALL
            .iter()
            .position(|&s| s == self)
            .expect("every stage is in ALL")
            + 1
    }

    /// The section of the page (and of its address) this stage's view is part of: an
    /// embedded viewer showing `Section::Table` shows the source view too.
    pub fn section(self) -> Section {
        match self {
            Stage::Timeline => Section::Timeline,
            Stage::Breakdown => Section::Breakdown,
            Stage::Phases => Section::Phases,
            Stage::Table | Stage::Source => Section::Table,
            Stage::Allocator => Section::Allocator,
        }
    }

    /// Whether this stage's view is shown by a page showing `only` (`None`: every view) of a
    /// file that does or does not record the allocator's segments.
    pub fn shown(self, only: Option<Section>, has_segments: bool) -> bool {
        only.is_none_or(|o| o == self.section()) && (self != Stage::Allocator || has_segments)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeline_mounts_first_and_each_view_once() {
        assert_eq!(Stage::ALL[0], Stage::Timeline);
        for (k, stage) in Stage::ALL.iter().enumerate() {
            assert_eq!(stage.mounted_with(), k + 1);
        }
        assert_eq!(Stage::Allocator.mounted_with(), Stage::ALL.len());
    }

    #[test]
    fn an_embedded_table_brings_its_source_view_and_nothing_else() {
        let shown: Vec<Stage> = Stage::ALL
            .into_iter()
            .filter(|s| s.shown(Some(Section::Table), true))
            .collect();
        assert_eq!(shown, vec![Stage::Table, Stage::Source]);
    }

    #[test]
    fn the_allocator_shows_only_for_a_file_with_segments() {
        assert!(Stage::Allocator.shown(None, true));
        assert!(!Stage::Allocator.shown(None, false));
        assert!(!Stage::Allocator.shown(Some(Section::Allocator), false));
        assert!(Stage::Timeline.shown(None, false));
    }
}
