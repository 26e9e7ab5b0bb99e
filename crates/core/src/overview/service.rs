//! The overview's request: one device's [`Overview`], computed on demand (it is cheap: the
//! replay at load did the work).

use serde::{Deserialize, Serialize};

use super::{build, Overview};
use crate::service::{Context, Reply, Service, ViewError};

/// The overview of one device of the loaded snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverviewRequest {
    pub device: u32,
}

#[derive(Default)]
pub struct OverviewService;

impl Service for OverviewService {
    type Request = OverviewRequest;
    type Answer = Overview;

    fn answer(
        &mut self,
        cx: &Context<'_>,
        request: OverviewRequest,
    ) -> Result<Reply<Overview>, ViewError> {
        build(cx.analysed, request.device)
            .map(Reply::from)
            .ok_or(ViewError::NoSuchDevice {
                device: request.device,
            })
    }
}
