//! The breakdown's requests and answers, and the service that answers them: a device's run as
//! a whole (moments, the peak estimate, efficiency, cached free sizes, findings), bytes by
//! category at any moment with the largest allocations and the sizes of what is live, and
//! bytes by category over a range of the run (the stacked area).
//!
//! Pure logic over [`crate::breakdown`], tested natively; the
//! [`Session`](crate::session::Session) routes [`BreakdownRequest`]s here and lends the
//! categories in the [`Context`].

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::estimate::{estimate, Estimate};
use super::findings::{findings, Finding};
use super::sizes::{cached_free_sizes, histogram, SizeBin};
use crate::analysis::axis::Axis;
use crate::analysis::axis::AxisMode;
use crate::analysis::categories::workload::Workload;
use crate::analysis::categories::{Category, Component, DeviceCategories, Dimension, Role};
use crate::analysis::curve::{Curve, Envelope};
use crate::analysis::elements::AllocationElements;
use crate::analysis::live::{alive_at, live_set, CallSite};
use crate::analysis::moment::Moment;
use crate::analysis::stacks::{allocation_stack, stack_text};
use crate::analysis::{Analysed, DeviceFacts};
use crate::model::Device;
use crate::model::NO_STACK;
use crate::model::{Row, State};
use crate::service::{Context, Reply, Service, ViewError};

/// What the breakdown view asks for: one request type per answer, each its own [`Ask`]
/// (crate::protocol::Ask), so a view reads the answer its request gets without unwrapping.
/// Each goes in the enum as itself (the messages' JSON is that of the request's fields).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakdownRequest {
    Summary(SummaryRequest),
    At(AtRequest),
    Totals(TotalsRequest),
    Series(SeriesRequest),
}

/// The run as a whole: answered by a [`DeviceSummary`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryRequest {
    pub device: u32,
}

/// Bytes by category at a moment, with the `top` largest allocations and call sites and the
/// sizes of what is live — of `only` one category's allocations when asked (the bytes by
/// category always count everything): answered by a [`MomentBreakdown`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AtRequest {
    pub device: u32,
    pub moment: Moment,
    pub top: u32,
    #[serde(default)]
    pub only: Option<Category>,
}

impl AtRequest {
    /// The peak of `device` with its `top` largest allocations, of every category: what the
    /// reports list.
    pub fn at_peak(device: u32, top: u32) -> Self {
        AtRequest {
            device,
            moment: Moment::Peak,
            top,
            only: None,
        }
    }
}

/// Only the bytes by category at a moment (cheap: what a legend shows while hovering):
/// answered by [`MomentTotals`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TotalsRequest {
    pub device: u32,
    pub moment: Moment,
}

/// Bytes by category in `width` columns of the range `x0..x1` (in `mode`'s units), each at
/// the state where allocated memory peaks within it: answered by a [`Series`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesRequest {
    pub device: u32,
    pub dimension: Dimension,
    pub mode: AxisMode,
    pub x0: f64,
    pub x1: f64,
    pub width: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakdownAnswer {
    Summary(Box<DeviceSummary>),
    At(Box<MomentBreakdown>),
    Totals(MomentTotals),
    Series(Series),
}

/// Bytes by category at a moment, and nothing else.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MomentTotals {
    pub device: u32,
    pub state: State,
    pub live_count: u32,
    pub live_bytes: u64,
    /// Indexed like [`Role::ALL`] and [`Component::ALL`]; each sums to `live_bytes`.
    pub roles: Vec<u64>,
    pub components: Vec<u64>,
    /// Of each role's bytes, those deduced rather than observed; indexed like [`Role::ALL`].
    #[serde(default)]
    pub inferred_roles: Vec<u64>,
    pub generation: u32,
}

impl BreakdownAnswer {
    pub fn name(&self) -> &'static str {
        match self {
            BreakdownAnswer::Summary(_) => "breakdown summary",
            BreakdownAnswer::At(_) => "breakdown at a moment",
            BreakdownAnswer::Totals(_) => "breakdown totals",
            BreakdownAnswer::Series(_) => "breakdown series",
        }
    }
}

/// A device's run as a whole.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceSummary {
    pub device: u32,
    /// The categories' generation these numbers come from.
    pub generation: u32,
    /// States of the run: `0..=states - 1`.
    pub states: u32,
    pub peak_state: State,
    pub peak_allocated: u64,
    /// Reserved bytes at the allocated peak.
    pub reserved_at_peak: u64,
    /// Allocated over reserved bytes at the allocated peak, in parts per million
    /// ([`DeviceFacts::efficiency_at_peak_ppm`]): the one efficiency the page, the report and
    /// the command line show. `None` when nothing is reserved there.
    pub efficiency_at_peak_ppm: Option<u64>,
    pub peak_reserved: u64,
    /// Allocated bytes where reserved memory peaks (first reached).
    pub allocated_at_reserved_peak: u64,
    pub reserved_peak_state: State,
    /// What the run is (training, serving…), under which frameworks, with the evidence.
    #[serde(default)]
    pub workload: Workload,
    /// The trace records no event: what is shown is the snapshot's moment, read from its
    /// blocks.
    #[serde(default)]
    pub state_only: bool,
    pub estimate: Estimate,
    /// Training's arithmetic checked on the roles beside the estimate (one gradient per
    /// parameter, the optimizer's states per parameter, little unknown).
    #[serde(default)]
    pub training: Option<crate::breakdown::physics::Physics>,
    /// The final segments' cached free blocks by size (log2 bins).
    pub cached_free: Vec<SizeBin>,
    pub findings: Vec<Finding>,
    /// What the trace says about running out of memory (`None` for an unknown device): with
    /// no finding, whether "no out-of-memory" can be said at all.
    #[serde(default)]
    pub oom: Option<crate::analysis::oom::OomRecord>,
    /// The allocations behind each finding (indexed like `findings`), as the page lists them.
    pub finding_allocations: Vec<Vec<TopAllocation>>,
    pub compute_ms: f64,
}

impl DeviceSummary {
    /// Efficiency at the allocated peak as a fraction (1 when nothing is reserved there).
    pub fn efficiency_at_peak(&self) -> f64 {
        self.efficiency_at_peak_ppm
            .map_or(1.0, |ppm| ppm as f64 / 1e6)
    }
}

/// An allocation as views list it (the largest alive at a moment, those behind a finding).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TopAllocation {
    /// Element index on the allocations timeline (to pin it there).
    pub index: u32,
    /// Index into the replay's allocations (findings name allocations this way).
    pub allocation: u32,
    pub size: u64,
    pub role: Role,
    pub component: Component,
    /// What made it: the user's frame, else the most telling framework frame.
    pub name: Option<String>,
    pub user: bool,
    /// The tensor's shape and dtype, when the file records them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
}

/// Bytes by category at a moment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MomentBreakdown {
    pub device: u32,
    pub moment: Moment,
    pub state: State,
    /// The event the state follows (`None` for state 0).
    pub event: Option<Row>,
    pub time_us: Option<i64>,
    pub live_count: u32,
    pub live_bytes: u64,
    pub reserved: u64,
    /// Indexed like [`Role::ALL`] and [`Component::ALL`]; each sums to `live_bytes`.
    pub roles: Vec<u64>,
    pub components: Vec<u64>,
    /// Of each role's bytes, those deduced rather than observed; indexed like [`Role::ALL`].
    #[serde(default)]
    pub inferred_roles: Vec<u64>,
    /// The category the largest allocations, call sites and sizes are narrowed to.
    pub only: Option<Category>,
    pub largest: Vec<TopAllocation>,
    pub call_sites: Vec<CallSite>,
    /// Live allocations by size (log2 bins).
    pub live_sizes: Vec<SizeBin>,
    pub generation: u32,
    pub compute_ms: f64,
}

/// Bytes by category over a range, one column each.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub dimension: Dimension,
    pub mode: AxisMode,
    pub x0: f64,
    pub x1: f64,
    /// The state each column shows (`None` where the column shows no state).
    pub states: Vec<Option<u32>>,
    /// One row per category (indexed like the dimension's categories), one value per column.
    pub values: Vec<Vec<u64>>,
    pub generation: u32,
    pub compute_ms: f64,
}

/// Most allocations or call sites an answer lists.
const MAX_TOP: u32 = 200;
/// Most columns a series has.
const MAX_COLUMNS: u32 = 8192;

/// The breakdown feature's service: keeps each device's envelope of the allocated curve, and
/// its last summary.
#[derive(Default)]
pub struct BreakdownService {
    envelopes: FxHashMap<u32, Envelope>,
    /// Whether each device's trace has usable times (checking is O(rows)).
    timed: FxHashMap<u32, bool>,
    /// Each device's summary under the categories' generation it was made in: the page's
    /// overview strip and its breakdown both ask for it as a file opens, and its findings are
    /// the costliest part of the breakdown.
    summaries: FxHashMap<u32, DeviceSummary>,
}

type Answered = Result<Reply<BreakdownAnswer>, ViewError>;

impl BreakdownService {
    /// Device `device`'s run as a whole (what a [`SummaryRequest`] is answered), kept for
    /// the categories' generation it was made in.
    pub fn summary(&mut self, cx: &Context<'_>, device: u32) -> Result<DeviceSummary, ViewError> {
        let generation = cx.categorised.generation();
        if let Some(kept) = self
            .summaries
            .get(&device)
            .filter(|s| s.generation == generation)
        {
            return Ok(kept.clone());
        }
        let made = summary(cx, device)?;
        self.summaries.insert(device, made.clone());
        Ok(made)
    }

    /// Bytes by category at a moment with the largest allocations and call sites (what an
    /// [`AtRequest`] is answered).
    pub fn at(
        &mut self,
        cx: &Context<'_>,
        request: AtRequest,
    ) -> Result<MomentBreakdown, ViewError> {
        let AtRequest {
            device,
            moment,
            top,
            only,
        } = request;
        at(cx, &mut self.timed, device, moment, top.min(MAX_TOP), only)
    }
}

impl Service for BreakdownService {
    type Request = BreakdownRequest;
    type Answer = BreakdownAnswer;

    fn answer(&mut self, cx: &Context<'_>, request: BreakdownRequest) -> Answered {
        let start = (cx.now)();
        let answer = match request {
            BreakdownRequest::Summary(SummaryRequest { device }) => {
                BreakdownAnswer::Summary(Box::new(self.summary(cx, device)?))
            }
            BreakdownRequest::At(request) => BreakdownAnswer::At(Box::new(self.at(cx, request)?)),
            BreakdownRequest::Totals(TotalsRequest { device, moment }) => {
                let (position, dev, facts) = find(cx.analysed, device)?;
                let state = moment.state(facts, dev.trace.len());
                let totals = cx.categorised.index(position, facts).totals_at(state.get());
                BreakdownAnswer::Totals(MomentTotals {
                    device,
                    state,
                    live_count: totals.count,
                    live_bytes: totals.live_bytes,
                    roles: totals.roles,
                    components: totals.components,
                    inferred_roles: totals.inferred_roles,
                    generation: cx.categorised.generation(),
                })
            }
            BreakdownRequest::Series(SeriesRequest {
                device,
                dimension,
                mode,
                x0,
                x1,
                width,
            }) => {
                let (position, dev, facts) = find(cx.analysed, device)?;
                let envelope = self.envelopes.entry(device).or_insert_with(|| {
                    Envelope::new(
                        std::iter::once(facts.baseline_allocated)
                            .chain(facts.allocated.iter().copied()),
                    )
                });
                let total = Curve::Dense {
                    baseline: facts.baseline_allocated,
                    values: &facts.allocated,
                    envelope,
                };
                let axis = axis_of(&mut self.timed, dev);
                let mode = axis.mode(mode);
                let (x0, x1) = if x0 < x1 {
                    (x0, x1)
                } else {
                    axis.full_range(mode)
                };
                let index = cx.categorised.index(position, facts);
                let states: Vec<Option<u32>> = axis
                    .columns(mode, x0, x1, width.clamp(1, MAX_COLUMNS))
                    .into_iter()
                    .map(|span| span.map(|s| total.argmax(s.first, s.last).0))
                    .collect();
                let mut values = vec![vec![0u64; states.len()]; dimension.categories()];
                for (column, state) in states.iter().enumerate() {
                    let Some(state) = *state else { continue };
                    let bytes: Vec<u64> = match dimension {
                        Dimension::Role => index.roles_at(state).to_vec(),
                        Dimension::Component => index.components_at(state).to_vec(),
                    };
                    for (k, b) in bytes.into_iter().enumerate() {
                        values[k][column] = b;
                    }
                }
                BreakdownAnswer::Series(Series {
                    dimension,
                    mode,
                    x0,
                    x1,
                    states,
                    values,
                    generation: cx.categorised.generation(),
                    compute_ms: 0.0,
                })
            }
        };
        let ms = (cx.now)() - start;
        Ok(with_time(answer, ms).into())
    }
}

fn with_time(mut answer: BreakdownAnswer, ms: f64) -> BreakdownAnswer {
    match &mut answer {
        BreakdownAnswer::Summary(s) => s.compute_ms = ms,
        BreakdownAnswer::At(a) => a.compute_ms = ms,
        BreakdownAnswer::Series(s) => s.compute_ms = ms,
        BreakdownAnswer::Totals(_) => {}
    }
    answer
}

/// A device's position in the snapshot, the device and its facts.
fn find(analysed: &Analysed, device: u32) -> Result<(usize, &Device, &DeviceFacts), ViewError> {
    let position = analysed
        .device_position(device)
        .ok_or(ViewError::NoSuchDevice { device })?;
    Ok((
        position,
        &analysed.snapshot.devices[position],
        &analysed.facts[position],
    ))
}

fn summary(cx: &Context<'_>, device: u32) -> Result<DeviceSummary, ViewError> {
    let (position, dev, facts) = find(cx.analysed, device)?;
    let categories = cx.categorised.device(position);
    let index = cx.categorised.index(position, facts);
    let reserved_peak_state = State::new(facts.peak_reserved.state());
    let findings = findings(cx.analysed, position, categories);
    let elements = AllocationElements::new(facts);
    let finding_allocations = findings
        .iter()
        .map(|f| {
            f.allocations
                .iter()
                .map(|&a| listed(cx, &dev.trace, facts, categories, &elements, a as usize))
                .collect()
        })
        .collect();
    Ok(DeviceSummary {
        device,
        generation: cx.categorised.generation(),
        states: dev.trace.len() as u32 + 1,
        peak_state: Moment::Peak.state(facts, dev.trace.len()),
        peak_allocated: facts.peak_allocated.bytes,
        reserved_at_peak: facts.reserved_after(facts.peak_allocated.row),
        efficiency_at_peak_ppm: facts.efficiency_at_peak_ppm(),
        peak_reserved: facts.peak_reserved.bytes,
        allocated_at_reserved_peak: facts.allocated_at(reserved_peak_state.get()),
        reserved_peak_state,
        workload: categories.workload.clone(),
        state_only: dev.trace.is_empty() && !dev.segments.is_empty(),
        estimate: estimate(index, facts.peak_allocated.bytes),
        training: Some(crate::breakdown::physics::physics(
            index,
            categories,
            Moment::Peak.state(facts, dev.trace.len()).get(),
        )),
        cached_free: cached_free_sizes(dev),
        findings,
        oom: crate::analysis::oom::oom_record(cx.analysed, device),
        finding_allocations,
        compute_ms: 0.0,
    })
}

/// Allocation `allocation` (an index into [`DeviceFacts::allocations`]) as views list it.
fn listed(
    cx: &Context<'_>,
    trace: &crate::model::Trace,
    facts: &DeviceFacts,
    categories: &DeviceCategories,
    elements: &AllocationElements<'_>,
    allocation: usize,
) -> TopAllocation {
    let a = facts.allocations.at(allocation);
    let stack = allocation_stack(trace, &a);
    let (name, user) = if stack == NO_STACK {
        (None, false)
    } else {
        let text = stack_text(&cx.analysed.snapshot, stack, false);
        (text.top_frame, text.top_frame_is_user)
    };
    let text =
        |id: Option<crate::model::StrId>| id.map(|id| cx.analysed.snapshot.str(id).to_string());
    TopAllocation {
        index: elements.position(allocation),
        allocation: allocation as u32,
        size: a.size,
        role: categories.roles[allocation],
        component: categories.components[allocation],
        name,
        user,
        shape: text(a.shape(trace)),
        dtype: text(a.dtype(trace)),
    }
}

/// The axis of `dev`'s trace, whether its times are usable checked once per device.
fn axis_of<'a>(timed: &mut FxHashMap<u32, bool>, dev: &'a Device) -> Axis<'a> {
    let has_time = *timed
        .entry(dev.id)
        .or_insert_with(|| Axis::new(&dev.trace).has_time());
    Axis::known(&dev.trace, has_time)
}

fn at(
    cx: &Context<'_>,
    timed: &mut FxHashMap<u32, bool>,
    device: u32,
    moment: Moment,
    top: u32,
    only: Option<Category>,
) -> Result<MomentBreakdown, ViewError> {
    let (position, dev, facts) = find(cx.analysed, device)?;
    let categories = cx.categorised.device(position);
    let state = moment.state(facts, dev.trace.len());
    let totals = cx.categorised.index(position, facts).totals_at(state.get());
    let only = only.filter(|c| (c.index as usize) < c.dimension.categories());
    let alive = alive_at(facts, state.get(), |i| {
        only.is_none_or(|c| categories.is_in(c, i))
    });
    let live = live_set(
        &cx.analysed.snapshot,
        &dev.trace,
        facts,
        &alive,
        top as usize,
    );
    let elements = AllocationElements::new(facts);
    let largest = live
        .largest
        .into_iter()
        .map(|a| {
            let allocation = elements.allocation_index(a.index);
            TopAllocation {
                index: a.index,
                allocation: allocation as u32,
                size: a.size,
                role: categories.roles[allocation],
                component: categories.components[allocation],
                name: a.name,
                user: a.user,
                shape: a.shape,
                dtype: a.dtype,
            }
        })
        .collect();
    let event = state.row_before();
    let axis = axis_of(timed, dev);
    Ok(MomentBreakdown {
        device,
        moment,
        state,
        event,
        time_us: axis.time_of_state(state).filter(|_| axis.has_time()),
        live_count: totals.count,
        live_bytes: totals.live_bytes,
        reserved: facts.reserved_after(event.map(Row::get)),
        roles: totals.roles,
        components: totals.components,
        inferred_roles: totals.inferred_roles,
        only,
        largest,
        call_sites: live.call_sites,
        live_sizes: histogram(alive.iter().map(|&i| facts.allocations.size(i as usize))),
        generation: cx.categorised.generation(),
        compute_ms: 0.0,
    })
}
