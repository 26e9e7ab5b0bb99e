//! The end of a load: the first view prepared and, when the page sent the size of its plot,
//! its first frame painted and posted with the news that the file is loaded, so the page
//! shows the timeline at once. Not the place for reading or decoding (`feed`).

use std::cell::RefCell;

use memsight_core::protocol::FileEvent;
use memsight_core::session::Session;
use memsight_core::timeline::service::FirstFrame;

use super::outbox::{mark, measure_since, Outbox};
use super::startup;

/// Posts the end of a load. With a `first_frame` to paint, prepares the first view and paints
/// that frame first, so the page gets it with the news and shows the timeline at once;
/// without one, posts first and then prepares what the page asks for next (while the page
/// renders the file's overview), so its first timeline frame is only painted.
pub(super) fn loaded(
    session: &RefCell<Session>,
    event: FileEvent,
    first_frame: Option<FirstFrame>,
    now: &dyn Fn() -> f64,
    outbox: Outbox,
) {
    let FileEvent::Loaded(mut summary) = event else {
        return outbox.end(event, None);
    };
    let Some(first_frame) = first_frame else {
        outbox.end(FileEvent::Loaded(summary), None);
        if startup::plain() {
            return;
        }
        return prepare(session, now);
    };
    prepare(session, now);
    mark(FIRST_FRAME_START);
    let painted = session
        .borrow_mut()
        .first_view(&first_frame, summary.default_device, now);
    measure_since(FIRST_FRAME_START, "first frame painted");
    let pixels = painted.map(|(view, pixels)| {
        summary.first_view = Some(Box::new(view));
        pixels
    });
    outbox.end(FileEvent::Loaded(summary), pixels);
}

fn prepare(session: &RefCell<Session>, now: &dyn Fn() -> f64) {
    mark(PREPARE_START);
    session.borrow_mut().prepare_first_view(now);
    measure_since(PREPARE_START, "first view prepared");
}

const FIRST_FRAME_START: &str = "memsight:worker-first-frame";
const PREPARE_START: &str = "memsight:worker-prepare";
