//! What every view does to ask its file's worker, in one place: its requests go under a request
//! scope of its own, forgotten when the view goes away (so no answer reaches a disposed
//! component); each answer comes typed as its request's ([`Ask`]), so the compiler checks what
//! a view reads; and an answer a newer request of the same kind superseded is dropped
//! ([`Latest`]). The only way a view reaches a worker: the actions' own `ask` and `tell` are
//! private to the actions and this module, so a bypass does not compile. Not the place for
//! what a view asks or shows.

use std::collections::HashSet;

use leptos::prelude::*;
use wasm_bindgen::JsValue;

use super::Actions;
use crate::format;
use crate::protocol::{typed, Ask, Request, RequestId, ViewError};
use crate::ui::requests::{Latest, ScopeId};
use crate::ui::state::FileId;

/// An answer as the view that asked reads it.
pub struct Typed<A> {
    pub id: RequestId,
    pub result: Result<A, ViewError>,
    /// Bytes sent beside the answer (a frame's pixels, a CSV).
    pub attachment: Option<JsValue>,
}

/// One view's requests to one file.
#[derive(Clone, Copy)]
pub struct ViewAsker {
    actions: Actions,
    file: FileId,
    scope: ScopeId,
}

impl ViewAsker {
    /// The requests of the view being built, forgotten on its cleanup.
    pub fn new(actions: Actions, file: FileId) -> Self {
        let scope = actions.new_scope();
        on_cleanup(move || actions.forget_scope(file, scope));
        ViewAsker {
            actions,
            file,
            scope,
        }
    }

    /// Asks `request`; `on_answer` gets its answer typed. `None` when the file has no worker
    /// any more.
    pub fn ask<R: Ask + 'static>(
        self,
        request: R,
        on_answer: impl FnOnce(Typed<R::Answer>) + 'static,
    ) -> Option<RequestId> {
        ask_typed(self.actions, self.file, self.scope, request, on_answer)
    }

    /// Asks `request` as the latest of its kind: `on_answer` gets its answer, or why there is
    /// none in words, unless a newer request asked with the same `latest` superseded it.
    pub fn ask_latest<R: Ask + 'static>(
        self,
        latest: StoredValue<Latest>,
        request: R,
        on_answer: impl FnOnce(Result<R::Answer, String>) + 'static,
    ) {
        let id = self.ask(request, move |answer| {
            if latest.try_update_value(|l| l.answered(answer.id)) != Some(true) {
                return;
            }
            on_answer(answer.result.map_err(|e| format::problems::view_error(&e)));
        });
        if let Some(id) = id {
            latest.update_value(|l| l.sent(id));
        }
    }

    /// Sends `request`, whose answer nobody waits for.
    pub fn tell(self, request: impl Into<Request>) {
        self.actions.tell(self.file, request.into());
    }
}

/// One view's requests to any open file (a view of many files: the files side by side),
/// forgotten for every file asked when the view goes away.
#[derive(Clone, Copy)]
pub struct FilesAsker {
    actions: Actions,
    scope: ScopeId,
    asked: StoredValue<HashSet<FileId>, LocalStorage>,
}

impl FilesAsker {
    /// The requests of the view being built, forgotten on its cleanup.
    pub fn new(actions: Actions) -> Self {
        let asker = FilesAsker {
            actions,
            scope: actions.new_scope(),
            asked: StoredValue::new_local(HashSet::new()),
        };
        on_cleanup(move || {
            let files = asker.asked.try_with_value(|a| a.clone()).unwrap_or_default();
            for file in files {
                actions.forget_scope(file, asker.scope);
            }
        });
        asker
    }

    /// Asks `file`'s worker `request`; `on_answer` gets its answer typed.
    pub fn ask<R: Ask + 'static>(
        self,
        file: FileId,
        request: R,
        on_answer: impl FnOnce(Typed<R::Answer>) + 'static,
    ) -> Option<RequestId> {
        self.asked.update_value(|a| {
            a.insert(file);
        });
        ask_typed(self.actions, file, self.scope, request, on_answer)
    }

    /// Sends `file`'s worker `request`, whose answer nobody waits for.
    pub fn tell(self, file: FileId, request: impl Into<Request>) {
        self.actions.tell(file, request.into());
    }
}

fn ask_typed<R: Ask + 'static>(
    actions: Actions,
    file: FileId,
    scope: ScopeId,
    request: R,
    on_answer: impl FnOnce(Typed<R::Answer>) + 'static,
) -> Option<RequestId> {
    actions.ask(file, scope, request.into(), move |answered| {
        on_answer(Typed {
            id: answered.id,
            result: typed::<R>(answered.result),
            attachment: answered.attachment,
        })
    })
}
