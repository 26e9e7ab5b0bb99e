//! What a page does ahead of need as it starts, decided once from how it was opened: whether a
//! worker is started (and warms its decoder) before any file is picked, whether the next
//! file's worker is started once a load ends, whether a file's worker paints the timeline's
//! first frame with the news of its load, whether a first load is rehearsed off screen, and
//! whether performance marks time what users wait for. Pure and natively tested; the actions
//! (`actions`) and the app follow the plan, the rehearsal (`startup::rehearsal`) carries out
//! its part. Not the place for the order views mount in under a file (`startup::stages`).

use crate::ui::page_query::PageQuery;

/// How a page was opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opening {
    /// A page opened in a browser's tab: everything that makes a first file fast.
    Page,
    /// `?startup=plain`: nothing started or painted ahead of need, the baseline the rest is
    /// measured against (`benches/browser.mjs`).
    Plain,
    /// `?embed=1`: a viewer in another page, which seldom opens a second file.
    Embedded,
    /// The inert copy of the file views a page rehearses a first load in.
    Rehearsal,
}

impl Opening {
    /// How the page with `query` was opened (a rehearsal is never opened by an address).
    pub fn of(query: &PageQuery) -> Opening {
        if query.plain_startup {
            Opening::Plain
        } else if query.embed {
            Opening::Embedded
        } else {
            Opening::Page
        }
    }
}

/// What is done ahead of need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StartupPlan {
    /// A worker is started before any file is picked, and warms its decoder (starting one
    /// takes a noticeable part of a small file's load).
    pub worker_ahead: bool,
    /// Workers skip their warm-up (`startup=plain` on their address).
    pub plain_workers: bool,
    /// Once a load ends, a worker is started for the next file. Not in an embedded viewer: a
    /// docs page with several would hold an idle worker per frame, each with the memory it
    /// touched ahead (docs/decisions/0008-an-embedded-viewer-starts-no-spare-worker.md).
    pub spare_worker_after_load: bool,
    /// A file's worker is sent the size of the timeline's first frame with the file, and
    /// paints it with the news that the file is loaded.
    pub first_frame_with_file: bool,
    /// Once started, and while no file is open, the page rehearses a first load off screen so
    /// the user's first file does not pay for compiling the views.
    pub rehearse_first_load: bool,
    /// Performance marks time what users wait for (a rehearsal's would time nothing a user
    /// waits for).
    pub performance_marks: bool,
}

impl StartupPlan {
    /// The plan of a page opened as `opening`.
    pub fn of(opening: Opening) -> StartupPlan {
        match opening {
            Opening::Page => StartupPlan {
                worker_ahead: true,
                plain_workers: false,
                spare_worker_after_load: true,
                first_frame_with_file: true,
                rehearse_first_load: true,
                performance_marks: true,
            },
            Opening::Plain => StartupPlan {
                worker_ahead: false,
                plain_workers: true,
                spare_worker_after_load: false,
                first_frame_with_file: false,
                rehearse_first_load: false,
                performance_marks: true,
            },
            Opening::Embedded => StartupPlan {
                spare_worker_after_load: false,
                ..StartupPlan::of(Opening::Page)
            },
            // Its own workers, started as its file is opened: nothing ahead of need, and no
            // rehearsal of a rehearsal.
            Opening::Rehearsal => StartupPlan {
                worker_ahead: false,
                plain_workers: false,
                spare_worker_after_load: false,
                first_frame_with_file: true,
                rehearse_first_load: false,
                performance_marks: false,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_opened_as_its_address_says() {
        assert_eq!(Opening::of(&PageQuery::parse("")), Opening::Page);
        assert_eq!(
            Opening::of(&PageQuery::parse("?embed=1")),
            Opening::Embedded
        );
        assert_eq!(
            Opening::of(&PageQuery::parse("?startup=plain")),
            Opening::Plain
        );
        // Plain wins: it is the baseline, embedded or not.
        assert_eq!(
            Opening::of(&PageQuery::parse("?embed=1&startup=plain")),
            Opening::Plain
        );
    }

    #[test]
    fn a_plain_page_does_nothing_ahead_of_need_and_still_times_it() {
        let plain = StartupPlan::of(Opening::Plain);
        assert!(!plain.worker_ahead && !plain.spare_worker_after_load);
        assert!(!plain.first_frame_with_file && !plain.rehearse_first_load);
        assert!(plain.plain_workers && plain.performance_marks);
    }

    #[test]
    fn an_embedded_viewer_starts_no_spare_worker_and_does_the_rest() {
        let page = StartupPlan::of(Opening::Page);
        let embedded = StartupPlan::of(Opening::Embedded);
        assert!(page.spare_worker_after_load && !embedded.spare_worker_after_load);
        assert_eq!(
            StartupPlan {
                spare_worker_after_load: true,
                ..embedded
            },
            page
        );
    }

    #[test]
    fn a_rehearsal_starts_nothing_ahead_marks_nothing_and_rehearses_nothing() {
        let rehearsal = StartupPlan::of(Opening::Rehearsal);
        assert!(!rehearsal.worker_ahead && !rehearsal.spare_worker_after_load);
        assert!(!rehearsal.rehearse_first_load && !rehearsal.performance_marks);
        // Its first frame comes with its file, as a user's would: that is what it rehearses.
        assert!(rehearsal.first_frame_with_file);
    }
}
