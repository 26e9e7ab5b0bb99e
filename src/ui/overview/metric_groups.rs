//! The overview's numbers, grouped as the core groups them (memory, counts, time), each
//! human-formatted, with its exact integer in `data-value`, its stable key in `data-metric`,
//! and the exact value with its unit as a tooltip.
//!
//! Only shows; which metrics exist and their values come from `memsight_core::overview`, their
//! words from `memsight_core::format::overview`.

use leptos::prelude::*;

use crate::format::overview::{group_title, metric_exact, metric_label, metric_value};
use crate::overview::{Group, Metric};

/// Metrics grouped by their group, groups in order of first appearance.
fn grouped(metrics: Vec<Metric>) -> Vec<(Group, Vec<Metric>)> {
    let mut groups: Vec<(Group, Vec<Metric>)> = Vec::new();
    for metric in metrics {
        let group = metric.key.group();
        match groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, list)) => list.push(metric),
            None => groups.push((group, vec![metric])),
        }
    }
    groups
}

#[component]
pub fn MetricGroups(metrics: Vec<Metric>) -> impl IntoView {
    grouped(metrics)
        .into_iter()
        .map(|(group, metrics)| {
            view! {
                <section class="metric-group" data-group=group.as_str()>
                    <h2>{group_title(group)}</h2>
                    <dl class="metrics">
                        {metrics
                            .into_iter()
                            .map(|metric| {
                                view! {
                                    <div
                                        class="metric"
                                        data-metric=metric.key.as_str()
                                        data-value=metric.value.to_string()
                                        title=metric_exact(&metric)
                                    >
                                        <dt>{metric_label(metric.key)}</dt>
                                        <dd>{metric_value(&metric)}</dd>
                                    </div>
                                }
                            })
                            .collect_view()}
                    </dl>
                </section>
            }
        })
        .collect_view()
}
