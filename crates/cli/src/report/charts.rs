//! The report pages' charts: each chart of a report document drawn as inline SVG by
//! memsight-charts, the page's own chart code, in its light theme and at the page's chart
//! sizes, so a report shows the pictures the page shows. Not the place for choosing what a
//! chart holds (the core's report does).

use memsight_charts::{bars, pie, runs, svg::svg, Slice, Theme};
use memsight_core::format::{self, document};

/// A pie: the page's chart height, wider so the legend has room for whole labels (CSS
/// pixels).
const SIZE: (u32, u32) = (560, 260);
/// A bar chart of files: twice as wide, and tall enough for a readable row per file.
const WIDE: u32 = 880;
const ROW: u32 = 22;
const MAX_HEIGHT: u32 = 1600;
/// Runs on one axis: the page's wide chart, a little taller.
const RUNS_HEIGHT: u32 = 320;

/// `chart` as an `<svg>` element (or, should plotters refuse it, a sentence saying why).
pub fn chart_markup(chart: &document::DocChart) -> String {
    let slices: Vec<Slice> = chart
        .slices
        .iter()
        .map(|s| Slice {
            key: s.key.clone(),
            label: s.label.clone(),
            value: s.bytes,
            colour: s.colour,
        })
        .collect();
    let fmt = |n: u64| format::bytes(n);
    let drawn = match chart.kind {
        document::ChartKind::Pie => svg(SIZE.0, SIZE.1, &Theme::light(), |c| {
            pie(c, &slices, &chart.title, &fmt)
        }),
        document::ChartKind::Bars => {
            let rows = u32::try_from(slices.len()).unwrap_or(u32::MAX);
            let height = rows
                .saturating_mul(ROW)
                .saturating_add(80)
                .clamp(SIZE.1, MAX_HEIGHT);
            svg(WIDE, height, &Theme::light(), |c| {
                bars(c, &slices, &chart.title, &fmt)
            })
        }
        document::ChartKind::Runs => {
            let series: Vec<(Slice, Vec<i64>)> = slices
                .into_iter()
                .zip(chart.curves.iter().cloned())
                .collect();
            svg(WIDE, RUNS_HEIGHT, &Theme::light(), |c| {
                runs(
                    c,
                    &series,
                    "share of each run's events",
                    &chart.title,
                    &format::bytes_signed,
                )
            })
        }
    };
    drawn.unwrap_or_else(|why| {
        format!(
            "<p>The chart could not be drawn: {}</p>\n",
            document::html_escape(&why)
        )
    })
}
