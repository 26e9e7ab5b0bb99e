//! A file's first view, made before the page asks: the session's side of the startup path.
//! Right after a load the default device's allocations timeline is laid out
//! ([`Session::prepare_first_view`]) and, when the page sent the size of its plot with the
//! file, its first frame painted ([`Session::first_view`]) and sent with the news that the
//! file is loaded (docs/decisions/0016-the-first-timeline-frame-comes-with-the-file.md). A page
//! that sends no size asks for both as usual: nothing here is needed for a correct view. Not
//! the place for loading or for answering requests.

use super::Session;
use crate::protocol::Ask;
use crate::service::Context;
use crate::timeline::service::{FirstFrame, FirstView, TimelineAnswer, TimelineRequest};
use crate::timeline::TimelineKind;

impl Session {
    /// Prepares what the page shows first of a file just loaded, before it asks: the default
    /// device's allocations timeline, laid out and ready to paint as it is first coloured.
    /// The page's first frame then waits for no layout. Nothing happens without a file.
    pub fn prepare_first_view(&mut self, now: &dyn Fn() -> f64) {
        let Some(analysed) = self.analysed.as_ref() else {
            return;
        };
        let Some((device, _)) = analysed.default_device() else {
            return;
        };
        let cx = Context {
            analysed,
            categorised: &self.categorised,
            now,
        };
        self.services.timeline.prepare(&cx, device);
    }

    /// Paints the `first` frame a page sent with its file, for `device`: the allocations
    /// timeline's layout and its whole-run frame, with the frame's pixels. `None` without a
    /// file, or when that device has no timeline to paint (the page then asks as usual).
    pub fn first_view(
        &mut self,
        first: &FirstFrame,
        device: u32,
        now: &dyn Fn() -> f64,
    ) -> Option<(FirstView, Vec<u8>)> {
        let mut timeline = |request: TimelineRequest| {
            let reply = self.answer(request.into(), now).ok()?;
            Some((TimelineRequest::take(reply.answer)?, reply.attachment))
        };
        let (TimelineAnswer::Layout(layout), _) = timeline(TimelineRequest::Layout {
            device,
            kind: TimelineKind::Allocations,
            detail: None,
        })?
        else {
            return None;
        };
        let request = first.request(device);
        let (TimelineAnswer::Frame(frame), Some(pixels)) =
            timeline(TimelineRequest::Frame(request.clone()))?
        else {
            return None;
        };
        Some((
            FirstView {
                request,
                layout,
                frame,
            },
            pixels,
        ))
    }
}
