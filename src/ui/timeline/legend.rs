//! The legend of a timeline coloured by category: each category's colour, name and bytes at
//! the hovered moment (else the picked one, else the peak), exact values in `data-value`.
//! Clicking a category highlights it on the timeline and dims the rest; clicking it again
//! shows all.

use leptos::prelude::*;

use super::Timeline;
use crate::analysis::categories::{Category, Dimension};
use crate::analysis::moment::Moment;
use crate::breakdown::service::{MomentTotals, TotalsRequest};
use crate::format;
use crate::timeline::TimelineKind;
use crate::ui::categories::{categories_of, css};
use crate::ui::requests::Latest;

#[component]
pub fn Legend(tl: Timeline) -> impl IntoView {
    let dimension = move || {
        (tl.kind.get() != TimelineKind::Segments)
            .then(|| tl.colour_by.get().dimension())
            .flatten()
    };
    // The moment the legend counts at: hovered, else picked, else the peak.
    let moment = Memo::new(move |_| {
        let hovered = tl
            .hover
            .with(|h| h.as_ref().and_then(|(hit, _, _)| hit.state));
        match hovered.or(tl.cx.picked.get()) {
            Some(state) => Moment::State(state),
            None => Moment::Peak,
        }
    });
    let totals = RwSignal::new(None::<MomentTotals>);
    let latest = StoredValue::new(Latest::default());
    Effect::new(move |_| {
        let moment = moment.get();
        tl.cx.generation.track();
        // Asked once the first frame is on screen: counting bytes by category at any moment
        // needs an index whose first build must not keep that frame waiting.
        if dimension().is_none() || !tl.painted.get() {
            return;
        }
        // Under the timeline's own scope, forgotten with it.
        let asker = tl.asker;
        let request = TotalsRequest {
            device: tl.device,
            moment,
        };
        asker.ask_latest(latest, request, move |answer| {
            if let Ok(t) = answer {
                totals.set(Some(t));
            }
        });
    });

    move || {
        let dimension = dimension()?;
        let dark = tl.dark.get();
        let (state, live, bytes, inferred) = totals.with(|t| match t {
            Some(t) => (
                Some(t.state),
                t.live_bytes,
                match dimension {
                    Dimension::Role => t.roles.clone(),
                    Dimension::Component => t.components.clone(),
                },
                match dimension {
                    Dimension::Role => t.inferred_roles.clone(),
                    Dimension::Component => Vec::new(),
                },
            ),
            None => (None, 0, Vec::new(), Vec::new()),
        });
        let at = match moment.get() {
            Moment::Peak => "at the peak".to_string(),
            Moment::End => "at the end".to_string(),
            Moment::State(s) => format::after_state(s),
        };
        let all = categories_of(dimension, dark);
        // A compact screen leaves out the categories with nothing live (CSS), so the legend
        // keeps to a row: this says how many and which.
        let empty: Vec<&str> = all
            .iter()
            .enumerate()
            .filter(|(k, _)| bytes.get(*k).copied().unwrap_or(0) == 0)
            .map(|(_, (_, label, _))| *label)
            .collect();
        let empty_note = (!empty.is_empty()).then(|| {
            view! {
                <li class="legend-empty" title=format!("Nothing live: {}", empty.join(", "))>
                    {format!("{} empty", empty.len())}
                </li>
            }
        });
        let items = all
            .into_iter()
            .enumerate()
            .map(|(k, (key, label, colour))| {
                let value = bytes.get(k).copied().unwrap_or(0);
                let deduced = inferred.get(k).copied().unwrap_or(0);
                let category = Category {
                    dimension,
                    index: k as u32,
                };
                let highlighted = move || tl.cx.highlight.get() == Some(category);
                let dimmed = move || {
                    tl.cx
                        .highlight
                        .get()
                        .is_some_and(|h| h.dimension == dimension && h != category)
                };
                view! {
                    <li class="legend-item" class:dimmed=dimmed class:empty=value == 0>
                        <button
                            type="button"
                            class="legend-button"
                            data-category=key
                            data-value=value.to_string()
                            data-inferred=deduced.to_string()
                            aria-pressed=move || highlighted().to_string()
                            title=if deduced == 0 {
                                format!("{label}: {} bytes", format::count(value))
                            } else {
                                format!(
                                    "{label}: {} bytes, of which {} deduced (made before recording; pin one to see why)",
                                    format::count(value),
                                    format::count(deduced)
                                )
                            }
                            on:click=move |_| tl.cx.toggle_highlight(category)
                        >
                            <span class="swatch" style:background=css(colour)></span>
                            <span class="legend-label">{label}</span>
                            <span class="legend-bytes">{format::bytes(value)}</span>
                            {(deduced > 0).then(|| view! { <span class="inferred-tag">{if deduced >= value { "inferred" } else { "partly inferred" }}</span> })}
                        </button>
                    </li>
                }
            })
            .collect_view();
        Some(view! {
            <div
                class="timeline-legend"
                id="timeline-legend"
                data-dimension=match dimension { Dimension::Role => "role", Dimension::Component => "component" }
                data-state=state.map(|s| s.to_string()).unwrap_or_default()
                data-live-bytes=live.to_string()
            >
                <span class="legend-at">{format!("{} live {at}", format::bytes(live))}</span>
                <ul class="legend-list">{items}{empty_note}</ul>
            </div>
        })
    }
}
