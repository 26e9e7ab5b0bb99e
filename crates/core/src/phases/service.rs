//! The phase report's request: one device's [`PhaseReport`] under the session's current
//! categories (so its top roles follow the user's rules). Computed on demand from the replay
//! and the categories' index; nothing is kept.

use serde::{Deserialize, Serialize};

use super::{report, PhaseReport};
use crate::service::{Context, Reply, Service, ViewError};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhasesRequest {
    pub device: u32,
}

#[derive(Default)]
pub struct PhasesService;

impl Service for PhasesService {
    type Request = PhasesRequest;
    type Answer = PhaseReport;

    fn answer(
        &mut self,
        cx: &Context<'_>,
        request: PhasesRequest,
    ) -> Result<Reply<PhaseReport>, ViewError> {
        let device = request.device;
        let position = cx
            .analysed
            .device_position(device)
            .ok_or(ViewError::NoSuchDevice { device })?;
        let dev = &cx.analysed.snapshot.devices[position];
        let facts = &cx.analysed.facts[position];
        let index = cx.categorised.index(position, facts);
        let phases = &cx.categorised.device(position).phases;
        Ok(report(
            &cx.analysed.snapshot,
            dev,
            facts,
            phases,
            index,
            cx.categorised.generation(),
        )
        .into())
    }
}
