//! The digest's request: one device's [`Digest`], for the files table (numbers only) or a
//! comparison (with call sites and modules). Computed on demand; the service keeps nothing,
//! since a digest is asked for once per file and rules.

use serde::{Deserialize, Serialize};

use super::digest::{digest, Digest};
use crate::service::{Context, Reply, Service, ViewError};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DigestRequest {
    pub device: u32,
    /// With the call sites and modules at the peak (what a comparison needs).
    #[serde(default)]
    pub detail: bool,
    /// Taken at the peak within this phase of training rather than the run's peak (each run
    /// at the same phase); the run's peak when it has no such phase.
    #[serde(default)]
    pub at_phase: Option<crate::analysis::categories::signals::Phase>,
}

#[derive(Default)]
pub struct DigestService;

impl Service for DigestService {
    type Request = DigestRequest;
    type Answer = Digest;

    fn answer(
        &mut self,
        cx: &Context<'_>,
        request: DigestRequest,
    ) -> Result<Reply<Digest>, ViewError> {
        digest(cx, request.device, request.detail, request.at_phase).map(Reply::from)
    }
}
