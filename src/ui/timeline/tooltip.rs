//! The hover tooltip: what is under the pointer (size, requested size, address, stream,
//! allocated and freed at, lifetime, top user frame), the small-allocations band, or a scope
//! of the lanes along the top (its whole name, however narrow its band).

use leptos::prelude::*;

use super::Timeline;
use crate::format;
use crate::format::when;
use crate::model::State;
use crate::timeline::inspect::ElementDetail;
use crate::timeline::TimelineKind;

/// Lifetime in events and, when known, in time.
pub fn lifetime(detail: &ElementDetail, states: u32) -> String {
    let end = detail.end_state.unwrap_or(State::new(states));
    let events = format::count(u64::from(
        end.get().saturating_sub(detail.start_state.get()),
    ));
    let alive = if detail.end_state.is_none() {
        " (alive at the end)"
    } else {
        ""
    };
    match (detail.alloc_time_us, detail.free_time_us) {
        (Some(a), Some(f)) => format!(
            "{events} events, {}{alive}",
            format::duration_us((f - a).max(0) as u64)
        ),
        _ => format!("{events} events{alive}"),
    }
}

/// What made an element, as a label and a name: "Made by" and the user's frame, or "Made
/// by PyTorch" and its most telling frame when the stack holds none of the user's code.
pub fn made_by(detail: &ElementDetail) -> Option<(&'static str, String)> {
    let name = detail.top_frame.clone()?;
    let label = format::made_by_label(
        detail.origin == "trace",
        detail.end_state.is_some(),
        detail.top_frame_is_user,
    );
    Some((label, name))
}

pub fn title(detail: &ElementDetail) -> String {
    let noun = match detail.kind {
        TimelineKind::Allocations => "Allocation",
        TimelineKind::Segments => "Segment",
        TimelineKind::Pool(_) => "Block",
    };
    format!("{noun} {:#x}", detail.addr)
}

#[component]
pub fn Tooltip(tl: Timeline) -> impl IntoView {
    let origin = move || {
        tl.info
            .with(|i| i.as_ref().and_then(|i| i.time_range.map(|r| r.0)))
    };
    let states = move || tl.info.with(|i| i.as_ref().map_or(0, |i| i.states));
    // Beside the pointer, away from the plot's edges: below it in the upper half, above it in
    // the lower half.
    let place = move |x: f64, y: f64| {
        let (w, h, _) = tl.size.get_untracked();
        let left = if x > w - 320.0 { x - 300.0 } else { x + 14.0 };
        let (top, lift) = if y > h / 2.0 {
            (y - 14.0, "translateY(-100%)")
        } else {
            (y + 14.0, "none")
        };
        (format!("{}px", left.max(0.0)), format!("{top}px"), lift)
    };
    move || {
        if let Some((nth, x, y)) = tl.oom_hover.get() {
            let oom = tl
                .info
                .with(|i| i.as_ref().and_then(|i| i.ooms.get(nth).cloned()))?;
            let (left, top, lift) = place(x, y);
            return Some(
                view! {
                    <div class="timeline-tooltip oom" id="timeline-tooltip" style:left=left style:top=top style:transform=lift data-oom=nth.to_string()>
                        <p class="tooltip-title">"Out of memory · " <strong>{format::bytes(oom.requested)}</strong> " requested"</p>
                        <dl>
                            <dt>"Free on the device"</dt><dd>{format::bytes(oom.device_free)}</dd>
                            <dt>"At"</dt><dd>{when(Some(oom.state), oom.time_us, origin())}</dd>
                        </dl>
                        <p class="tooltip-totals">"Click to see its stack and what was alive."</p>
                    </div>
                }
                .into_any(),
            );
        }
        if let Some((index, x, y)) = tl.scope_hover.get() {
            let scope = tl
                .info
                .with(|i| i.as_ref().and_then(|i| i.scopes.get(index).cloned()))?;
            let (left, top, lift) = place(x, y);
            let from = when(Some(scope.start_state), Some(scope.start_time_us), origin());
            let to = match scope.end_state {
                Some(end) => when(Some(end), scope.end_time_us, origin()),
                None => "not ended in the trace".into(),
            };
            let duration = scope
                .end_time_us
                .map(|end| format::duration_us((end - scope.start_time_us).max(0) as u64));
            return Some(
                view! {
                    <div class="timeline-tooltip" id="timeline-tooltip" style:left=left style:top=top style:transform=lift data-scope=index.to_string()>
                        <p class="tooltip-title">{scope.name}</p>
                        <dl>
                            <dt>"From"</dt><dd>{from}</dd>
                            <dt>"To"</dt><dd>{to}</dd>
                            {duration.map(|d| view! { <dt>"Lasted"</dt><dd>{d}</dd> })}
                        </dl>
                    </div>
                }
                .into_any(),
            );
        }
        let (hit, x, y) = tl.hover.get()?;
        let (left, top, lift) = place(x, y);
        let at = match hit.state {
            Some(s) if s > State::BEFORE_TRACE => {
                format!("after {}", when(Some(s), hit.time_us, origin()))
            }
            other => when(other, hit.time_us, origin()),
        };
        let totals = match hit.line {
            Some(line) => format!(
                "{} allocated · {} reserved",
                format::bytes(hit.total),
                format::bytes(line)
            ),
            None => format!("{} reserved", format::bytes(hit.total)),
        };
        Some(match hit.element {
            Some(e) => {
                let size = e.size;
                view! {
                    <div
                        class="timeline-tooltip"
                        id="timeline-tooltip"
                        style:left=left.clone() style:top=top.clone() style:transform=lift
                        data-index=e.index.to_string()
                        data-size=size.to_string()
                        data-addr=e.addr.to_string()
                        data-total=hit.total.to_string()
                        data-line=hit.line.map(|l| l.to_string()).unwrap_or_default()
                        data-hit-ms=hit.hit_ms.to_string()
                    >
                        <p class="tooltip-title">{title(&e)} " · " <strong>{format::bytes(size)}</strong></p>
                        <dl>
                            {e.block_size.filter(|&b| b != size).map(|b| view! {
                                <dt>"Requested"</dt><dd>{format!("{} bytes", format::count(size))}</dd>
                                <dt>"Block"</dt><dd>{format!("{} (rounded up by the allocator)", format::bytes(b))}</dd>
                            })}
                            <dt>"Stream"</dt><dd>{format!("{:#x}", e.stream)}</dd>
                            <dt>"Allocated"</dt><dd>{if e.origin == "trace" { when(Some(e.start_state), e.alloc_time_us, origin()) } else { "before the trace".to_string() }}</dd>
                            <dt>"Freed"</dt><dd>{match e.end_state { Some(s) => when(Some(s), e.free_time_us, origin()), None => "not freed".to_string() }}</dd>
                            <dt>"Lifetime"</dt><dd>{lifetime(&e, states())}</dd>
                            <dt>"At"</dt><dd>{at}</dd>
                            {format::table::tensor(e.shape.as_deref(), e.dtype.as_deref()).map(|t| view! { <dt>"Tensor"</dt><dd class="tooltip-tensor">{t}</dd> })}
                            {(!e.annotations.is_empty()).then(|| view! {
                                <dt>"Annotated"</dt><dd class="tooltip-annotations">{format::table::annotations(&e.annotations)}</dd>
                            })}
                        </dl>
                        {e.forward_top_frame.clone().map(|f| view! {
                            <p class="tooltip-forward">"Forward code: " {f}</p>
                        })}
                        <p class="tooltip-frame" data-user=e.top_frame_is_user.to_string()>{match made_by(&e) {
                            Some((_, name)) if e.top_frame_is_user && e.origin == "trace" => name,
                            Some((label, name)) => format!("{label} {name}"),
                            None => "no stack recorded".into(),
                        }}</p>
                        <p class="tooltip-totals">{totals}</p>
                    </div>
                }
                .into_any()
            }
            None => match hit.small_bytes {
                Some(bytes) => view! {
                    <div class="timeline-tooltip" id="timeline-tooltip" style:left=left.clone() style:top=top.clone() style:transform=lift data-small=bytes.to_string()>
                        <p class="tooltip-title">"Small allocations · " <strong>{format::bytes(bytes)}</strong></p>
                        <p>"Allocations too small to draw one by one at this detail. Raise the detail to draw more."</p>
                        <p class="tooltip-totals">{at} " · " {totals}</p>
                    </div>
                }
                .into_any(),
                None => view! {
                    <div class="timeline-tooltip faint" id="timeline-tooltip" style:left=left.clone() style:top=top.clone() style:transform=lift>
                        <p class="tooltip-totals">{at} " · " {totals}</p>
                    </div>
                }
                .into_any(),
            },
        })
    }
}
