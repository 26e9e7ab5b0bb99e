//! The overview's numbers, grouped as the analysis groups them ("memory", "counts", "time"),
//! each human-formatted, with its exact integer in `data-value`, its stable key in
//! `data-metric`, and the exact value with its unit as a tooltip.
//!
//! Only formats; which metrics exist and their values come from `analysis::overview`.

use leptos::prelude::*;

use super::format;
use crate::analysis::overview::Metric;

/// Metrics grouped by `group`, groups in order of first appearance.
fn grouped(metrics: Vec<Metric>) -> Vec<(String, Vec<Metric>)> {
    let mut groups: Vec<(String, Vec<Metric>)> = Vec::new();
    for metric in metrics {
        match groups.iter_mut().find(|(g, _)| *g == metric.group) {
            Some((_, list)) => list.push(metric),
            None => groups.push((metric.group.clone(), vec![metric])),
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
                <section class="metric-group" data-group=group.clone()>
                    <h2>{format::group_title(&group)}</h2>
                    <dl class="metrics">
                        {metrics
                            .into_iter()
                            .map(|metric| {
                                view! {
                                    <div
                                        class="metric"
                                        data-metric=metric.key.clone()
                                        data-value=metric.value.to_string()
                                        title=format::metric_exact(&metric)
                                    >
                                        <dt>{metric.label.clone()}</dt>
                                        <dd>{format::metric_value(&metric)}</dd>
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
