//! The page's start-up, in one place: what is done ahead of need as a page starts (`plan`,
//! decided once from how the page was opened), the order a file's views mount in (`stages`),
//! both pure and natively tested, and the rehearsal of a first load off screen (`rehearsal`,
//! the browser's part). Part of the shell: the rehearsal composes the file views.
//!
//! Not here: the plot's size a first frame is painted at (`plot_size`, `plot_share`), which the
//! timeline view reads too and a view never imports the shell; the worker's warm-up of its
//! decoder (the worker does that itself).

pub mod plan;
#[cfg(target_arch = "wasm32")]
pub mod rehearsal;
pub mod stages;
