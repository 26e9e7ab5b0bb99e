//! What several views share: pieces of the page that two or more views show or use, kept here
//! so that no view reaches into another for them. A widget never imports a view (nor the shell
//! that composes the views: `app`, `file_view`, `snapshot_view`, `embed`); it may use the
//! page's shared modules (`actions`, `state`, `categories`, `charts`, …) and the core.
//! `tests/page_layers.rs` keeps it so
//! ([0031](../../../docs/decisions/0031-the-pages-views-are-leaves-and-ask-typed-requests.md)).
//!
//! Not the place for a piece only one view uses (it stays in that view's folder), nor for
//! words (the core's `format`, so the command line says the same).
//!
//! Pure, compiled everywhere and unit-tested natively:
//! - [`folding`]: which frames of a stack are shown.
//!
//! For the browser only:
//! - `chart`: one chart on a card (`ChartCard`), with its sizes and the drawing's callbacks;
//! - `download`: a URL or a text saved as a named file;
//! - `stack`: an allocation's stack, role, recorded facts and forward stack (the timeline's
//!   pinned element, the table's row detail);
//! - `source_button`: the "code" button that opens a place in the source view;
//! - `source_folder`: the folder of the user's code opened in the page;
//! - `listing`: a file of code listed with the bytes of each line (the source view, a
//!   comparison's listing);
//! - `digests`: digests asked of many files' workers (the files table, a comparison).

// Pure: compiled everywhere, unit-tested natively.
pub mod folding;

// The browser's.
browser_modules!(
    pub chart,
    digests,
    download,
    listing,
    source_button,
    source_folder,
    stack,
);
