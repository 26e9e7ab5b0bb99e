//! Digests asked of many files' workers and kept by file and device, for the views that set
//! files side by side (the files table, a comparison). Before a file's first digest its
//! worker gets the user's stored rules, so roles are the ones its own views show.
//!
//! Transport and bookkeeping only: what a digest holds is the core's.

use std::collections::{BTreeMap, HashSet};

use leptos::prelude::*;

use crate::analysis::categories::signals::Phase;
use crate::compare::service::DigestRequest;
use crate::compare::Digest;
use crate::format;
use crate::protocol::Request;
use crate::ui::actions::{Actions, FilesAsker};
use crate::ui::file_context::stored_rules;
use crate::ui::state::{AppState, FileId};

type Key = (FileId, u32);

#[derive(Clone, Copy)]
pub struct Digests {
    answers: RwSignal<BTreeMap<Key, Result<Digest, String>>>,
    asked: StoredValue<HashSet<Key>, LocalStorage>,
    /// Files whose worker was sent the stored rules.
    ruled: StoredValue<HashSet<FileId>, LocalStorage>,
    asker: FilesAsker,
    detail: bool,
    /// The phase of training each digest is taken at (its peak within it), else each run's
    /// own peak.
    at_phase: RwSignal<Option<Phase>>,
}

impl Digests {
    /// Digests with call sites and modules when `detail` is set; each is asked for with
    /// [`Self::want`].
    pub fn new(state: RwSignal<AppState>, actions: Actions, detail: bool) -> Self {
        let digests = Digests {
            answers: RwSignal::new(BTreeMap::new()),
            asked: StoredValue::new_local(HashSet::new()),
            ruled: StoredValue::new_local(HashSet::new()),
            asker: FilesAsker::new(actions),
            detail,
            at_phase: RwSignal::new(None),
        };
        // A file closed and its answers go with it.
        Effect::new(move |_| {
            let open: HashSet<FileId> = state.with(|s| s.files().iter().map(|f| f.id).collect());
            if digests
                .answers
                .with_untracked(|a| a.keys().any(|(f, _)| !open.contains(f)))
            {
                digests
                    .answers
                    .update(|a| a.retain(|(f, _), _| open.contains(f)));
                digests
                    .asked
                    .update_value(|a| a.retain(|(f, _)| open.contains(f)));
            }
        });
        digests
    }

    /// The phase of training digests are taken at (`None`: each run's peak); read in an
    /// effect, it re-runs the effect when it changes.
    pub fn at_phase(self) -> Option<Phase> {
        self.at_phase.get()
    }

    /// Takes the digests from now on at `phase`'s peak (or each run's peak): those answered
    /// are dropped and asked again as views want them.
    pub fn set_at_phase(self, phase: Option<Phase>) {
        if self.at_phase.get_untracked() == phase {
            return;
        }
        self.asked.update_value(HashSet::clear);
        self.answers.update(BTreeMap::clear);
        self.at_phase.set(phase);
    }

    /// Asks for the digest of `device` of `file` unless it was asked already.
    pub fn want(self, file: FileId, device: u32) {
        let fresh = self
            .asked
            .try_update_value(|asked| asked.insert((file, device)))
            .unwrap_or(false);
        if !fresh {
            return;
        }
        let first = self
            .ruled
            .try_update_value(|r| r.insert(file))
            .unwrap_or(false);
        if first {
            let rules = stored_rules();
            if !rules.rules.is_empty() {
                self.asker.tell(file, Request::SetRules(rules));
            }
        }
        let request = DigestRequest {
            device,
            detail: self.detail,
            at_phase: self.at_phase.get_untracked(),
        };
        let answers = self.answers;
        // An answer for digests at another phase than the one now asked for is dropped.
        let (asked_at, at_phase) = (self.at_phase.get_untracked(), self.at_phase);
        self.asker.ask(file, request, move |answered| {
            if at_phase.try_get_untracked() != Some(asked_at) {
                return;
            }
            let result = answered
                .result
                .map_err(|e| format::problems::view_error(&e));
            answers.update(|a| {
                a.insert((file, device), result);
            });
        });
    }

    /// The digest of `device` of `file`, once answered.
    pub fn get(self, file: FileId, device: u32) -> Option<Result<Digest, String>> {
        self.answers.with(|a| a.get(&(file, device)).cloned())
    }

    /// `f` of the digest of `device` of `file`, once answered (read in place, not copied).
    pub fn with_digest<R>(
        self,
        file: FileId,
        device: u32,
        f: impl FnOnce(&Digest) -> R,
    ) -> Option<R> {
        self.answers
            .with(|a| a.get(&(file, device)).and_then(|r| r.as_ref().ok()).map(f))
    }

    /// The digests of `file` answered so far, by device.
    pub fn of_file(self, file: FileId) -> Vec<Digest> {
        self.answers.with(|a| {
            a.range((file, 0)..=(file, u32::MAX))
                .filter_map(|(_, r)| r.as_ref().ok().cloned())
                .collect()
        })
    }

    /// Digests asked for and not answered yet.
    pub fn pending(self) -> usize {
        let answered = self.answers.with(|a| a.len());
        self.asked
            .try_with_value(|a| a.len())
            .unwrap_or(0)
            .saturating_sub(answered)
    }

    /// Why digests could not be made.
    pub fn errors(self) -> Vec<String> {
        self.answers.with(|a| {
            a.values()
                .filter_map(|r| r.as_ref().err().cloned())
                .collect()
        })
    }
}
