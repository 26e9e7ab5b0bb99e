//! The answer first: one strip under the file's name with the device's peak, what was
//! reserved there, the efficiency, an out-of-memory if the trace recorded one, and the top
//! findings, each a click away from its whole text in the breakdown. The strip keeps to a line
//! or two so the timeline's plot stays in the first screen (a laptop at 1024×700 included).
//!
//! Shows the overview it is given and asks the worker for the device's summary (its
//! findings), which the worker keeps for the breakdown's own request. Not the place for the
//! overview's every number (the panel under the views) nor for a finding's reasons and advice
//! (the breakdown's findings).

use leptos::prelude::*;

use super::super::actions::{use_actions, ViewAsker};
use super::super::file_context::use_file;
use super::super::requests::Latest;
use super::super::state::FileId;
use crate::breakdown::findings::Finding;
use crate::breakdown::service::SummaryRequest;
use crate::format;
use crate::format::overview::{glance_label, GLANCE};
use crate::overview::{MetricKey, Overview};

/// Findings the strip names; the rest are counted.
const NAMED: usize = 3;

/// What the device's summary said, as the strip shows it.
#[derive(Clone, Debug, PartialEq)]
enum Found {
    Asking,
    /// The top findings, how many there are, and the line said when there is none.
    Findings {
        top: Vec<Finding>,
        count: usize,
        none: String,
    },
    Failed(String),
}

#[component]
pub fn OverviewStrip(
    overview: Overview,
    file: FileId,
    device: u32,
    /// The findings are asked for once this is true: after the timeline's first frame, so
    /// their search never delays the plot.
    after: Signal<bool>,
) -> impl IntoView {
    let actions = use_actions();
    let cx = use_file();

    let asker = ViewAsker::new(actions, file);
    let latest = StoredValue::new(Latest::default());
    let found = RwSignal::new(Found::Asking);
    Effect::new(move |_| {
        cx.generation.track();
        if !after.get() {
            return;
        }
        asker.ask_latest(latest, SummaryRequest { device }, move |answer| {
            found.set(match answer {
                Ok(s) => Found::Findings {
                    top: s.findings.iter().take(NAMED).cloned().collect(),
                    count: s.findings.len(),
                    none: format::findings::nothing_found(s.oom.as_ref()),
                },
                Err(e) => Found::Failed(e),
            });
        });
    });
    let figures = GLANCE
        .iter()
        .filter_map(|&key| overview.metrics.iter().find(|m| m.key == key))
        .map(|metric| {
            view! {
                <div class="glance-figure" data-glance=metric.key.as_str() data-value=metric.value.to_string()
                    title=format::overview::metric_exact(metric)
                >
                    <dt>{glance_label(metric.key)}</dt>
                    <dd>{format::overview::metric_value(metric)}</dd>
                </div>
            }
        })
        .collect_view();
    // Until the findings arrive, an out-of-memory the overview counted is said at once.
    let oom_event = overview
        .metrics
        .iter()
        .find(|m| m.key == MetricKey::OomEvent)
        .map(|m| {
            format!(
                "{} {}",
                format::overview::metric_label(m.key),
                format::overview::metric_value(m)
            )
        });
    let to_findings = |_| {
        let Some(findings) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id("findings"))
        else {
            return;
        };
        findings.scroll_into_view();
    };
    view! {
        <div class="overview-strip" id="overview-strip" data-device=device.to_string()>
            <dl class="glance-figures">{figures}</dl>
            {move || match found.get() {
                Found::Asking => view! {
                    <p class="glance-findings pending" aria-busy="true" data-count="">
                        {oom_event.clone().map(|words| view! {
                            <span class="glance-oom">{words}</span>
                        })}
                        " Looking for findings…"
                    </p>
                }
                .into_any(),
                Found::Failed(error) => view! {
                    <p class="glance-findings view-error" role="alert">{error}</p>
                }
                .into_any(),
                Found::Findings { count: 0, none, .. } => view! {
                    <p class="glance-findings hint" data-count="0">{none}</p>
                }
                .into_any(),
                Found::Findings { top, count, .. } => {
                    let more = count.saturating_sub(top.len());
                    view! {
                        <ul class="glance-findings" data-count=count.to_string()>
                            {top.into_iter().map(|f| view! {
                                <li class="glance-finding" class:oom=f.key() == "out-of-memory" data-finding=f.key()>
                                    <button type="button" class="link-button" title="Read it in the breakdown's findings" on:click=to_findings>
                                        {format::findings::title(&f)}
                                    </button>
                                </li>
                            }).collect_view()}
                            {(more > 0).then(|| view! {
                                <li class="glance-more">
                                    <button type="button" class="link-button" on:click=to_findings>
                                        {format::findings::more_findings(more)}
                                    </button>
                                </li>
                            })}
                        </ul>
                    }
                    .into_any()
                }
            }}
        </div>
    }
}
