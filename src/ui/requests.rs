//! The page's bookkeeping of requests in flight: one [`Pending`] table per worker that hands
//! each answer to whoever asked, and [`Latest`], which a view keeps per kind of request so an
//! answer superseded by a newer request is dropped by its id.
//!
//! Pure logic with no browser dependency, unit-tested natively. Not the transport (`workers`) and not what views do with answers.

use std::collections::HashMap;

use crate::protocol::RequestId;

/// Who asked: a view for the life of its component (so its requests can be forgotten when it
/// goes away), or the page state.
pub type ScopeId = u32;

/// Requests sent to one worker and not yet answered, each with whoever waits for its answer.
#[derive(Debug)]
pub struct Pending<T> {
    next_id: RequestId,
    waiting: HashMap<RequestId, (ScopeId, T)>,
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Pending {
            next_id: 1,
            waiting: HashMap::new(),
        }
    }
}

impl<T> Pending<T> {
    /// A fresh id for a request whose answer `asker` (in `scope`) waits for.
    pub fn register(&mut self, scope: ScopeId, asker: T) -> RequestId {
        let id = self.fresh_id();
        self.waiting.insert(id, (scope, asker));
        id
    }

    /// A fresh id for a request nobody waits for: its answer will be dropped.
    pub fn fresh_id(&mut self) -> RequestId {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        id
    }

    /// Whoever waits for the answer to `id`, now that it has arrived. `None` for a request
    /// nobody waits for (any more).
    pub fn take(&mut self, id: RequestId) -> Option<T> {
        self.waiting.remove(&id).map(|(_, asker)| asker)
    }

    /// Forgets every request of `scope`: their answers will be dropped.
    pub fn forget_scope(&mut self, scope: ScopeId) {
        self.waiting.retain(|_, (s, _)| *s != scope);
    }

    /// Requests still waiting for an answer.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.waiting.len()
    }
}

/// The newest request of one kind a view made (its frame, its hover, its search): answers to
/// older ones are stale.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Latest(Option<RequestId>);

impl Latest {
    /// `id` is now the request whose answer counts.
    pub fn sent(&mut self, id: RequestId) {
        self.0 = Some(id);
    }

    /// Whether the answer to `id` is the one awaited; if so, nothing is awaited any more.
    pub fn answered(&mut self, id: RequestId) -> bool {
        let current = self.0 == Some(id);
        if current {
            self.0 = None;
        }
        current
    }

    /// Whether an answer is awaited.
    pub fn awaited(&self) -> bool {
        self.0.is_some()
    }

    /// No answer counts any more (the user cleared what it was for).
    pub fn cancel(&mut self) {
        self.0 = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_answer_reaches_whoever_asked_once() {
        let mut pending = Pending::default();
        let a = pending.register(1, "timeline frame");
        let b = pending.register(2, "overview");
        assert_ne!(a, b);
        assert_eq!(pending.len(), 2);
        // Answers may come in any order.
        assert_eq!(pending.take(b), Some("overview"));
        assert_eq!(pending.take(a), Some("timeline frame"));
        // A second answer for the same id, or an id nobody asked with, reaches nobody.
        assert_eq!(pending.take(a), None);
        assert_eq!(pending.take(9999), None);
        assert_eq!(pending.len(), 0);
    }

    #[test]
    fn answers_nobody_waits_for_are_dropped() {
        let mut pending: Pending<&str> = Pending::default();
        let told = pending.fresh_id();
        let asked = pending.register(1, "search");
        assert_ne!(told, asked);
        assert_eq!(pending.take(told), None);
        assert_eq!(pending.take(asked), Some("search"));
    }

    #[test]
    fn a_view_that_goes_away_forgets_its_requests() {
        let mut pending = Pending::default();
        let timeline = pending.register(5, "frame");
        let state = pending.register(0, "overview");
        pending.forget_scope(5);
        assert_eq!(pending.take(timeline), None);
        assert_eq!(pending.take(state), Some("overview"));
    }

    #[test]
    fn ids_never_repeat_or_become_zero_when_they_wrap() {
        let mut pending: Pending<()> = Pending {
            next_id: RequestId::MAX,
            waiting: HashMap::new(),
        };
        assert_eq!(pending.fresh_id(), RequestId::MAX);
        assert_eq!(pending.fresh_id(), 1);
    }

    #[test]
    fn only_the_latest_request_is_answered() {
        let mut frame = Latest::default();
        assert!(!frame.awaited());
        frame.sent(3);
        frame.sent(4);
        assert!(frame.awaited());
        assert!(!frame.answered(3), "superseded by 4");
        assert!(frame.answered(4));
        assert!(!frame.awaited());
        assert!(!frame.answered(4), "answered once");
        frame.sent(5);
        frame.cancel();
        assert!(!frame.answered(5), "cancelled");
    }
}
