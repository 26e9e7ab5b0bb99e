//! What every view does to ask its file's worker, in one place: its requests go under a request
//! scope of its own, forgotten when the view goes away (so no answer reaches a disposed
//! component); each answer comes typed as its request's ([`Ask`]), so the compiler checks what
//! a view reads; and an answer a newer request of the same kind superseded is dropped
//! ([`Latest`]). Not the place for what a view asks or shows.

use leptos::prelude::*;
use wasm_bindgen::JsValue;

use super::actions::Actions;
use super::requests::{Latest, ScopeId};
use super::state::FileId;
use crate::format;
use crate::protocol::{typed, Ask, RequestId, ViewError};

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
    pub actions: Actions,
    pub file: FileId,
    pub scope: ScopeId,
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

    /// Asks `request`; `on_answer` gets its answer typed.
    pub fn ask<R: Ask + 'static>(
        self,
        request: R,
        on_answer: impl FnOnce(Typed<R::Answer>) + 'static,
    ) -> Option<RequestId> {
        self.actions
            .ask(self.file, self.scope, request.into(), move |answered| {
                on_answer(Typed {
                    id: answered.id,
                    result: typed::<R>(answered.result),
                    attachment: answered.attachment,
                })
            })
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
}
