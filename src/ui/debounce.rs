//! A call put off until input has been still for a moment: the latest call wins and the ones
//! before it are dropped, so a filter or a search applies as the user types without asking the
//! worker at every key. Not the place for pacing answers (the timeline's client does that).

use std::time::Duration;

use leptos::prelude::*;

/// How long typing must pause before what was typed applies: short enough to feel immediate,
/// long enough that a word typed at speed asks once.
pub const TYPING_SETTLE: Duration = Duration::from_millis(250);

/// One pending call at a time; dropped with the component that made it.
#[derive(Clone, Copy)]
pub struct Debounce {
    pending: StoredValue<Option<TimeoutHandle>>,
    delay: Duration,
}

impl Debounce {
    pub fn new(delay: Duration) -> Self {
        let pending = StoredValue::new(None::<TimeoutHandle>);
        on_cleanup(move || {
            if let Some(handle) = pending.try_update_value(Option::take).flatten() {
                handle.clear();
            }
        });
        Debounce { pending, delay }
    }

    /// Runs `f` once input has been still for the delay, instead of any call still waiting.
    pub fn call(&self, f: impl FnOnce() + 'static) {
        self.cancel();
        let handle = set_timeout_with_handle(f, self.delay).ok();
        self.pending.try_set_value(handle);
    }

    /// Drops the call still waiting, if any (what it would do was done at once).
    pub fn cancel(&self) {
        if let Some(handle) = self.pending.try_update_value(Option::take).flatten() {
            handle.clear();
        }
    }
}
