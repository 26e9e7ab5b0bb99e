//! What a user takes away from a loaded snapshot: the allocations table as CSV (every row, or
//! every group when grouped) and a device's Markdown report (summary, categories and the
//! largest allocations at the peak, the estimate, fragmentation, findings).
//!
//! The one place where a feature's numbers become a document: the table's and the
//! breakdown's services compute, [`crate::format`] words, and this module puts them together
//! for the page's downloads and the command line alike. Not the place for computing any of
//! the numbers, nor for the words themselves.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::breakdown::service::{AtRequest, BreakdownService};
use crate::format::report::markdown;
use crate::format::table::{groups_csv, rows_csv};
use crate::model::redact::Redaction;
use crate::service::{Context, Reply, ViewError};
use crate::table::service::TableService;
use crate::table::TableQuery;

/// Allocations the report lists.
pub const REPORT_TOP: u32 = 50;

/// What can be exported, one request type per answer, each its own
/// [`Ask`](crate::protocol::Ask). With `redact`, the snapshot's paths are rewritten in it as
/// `memsight --redact` rewrites them ([`crate::model::redact`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExportRequest {
    TableCsv(CsvRequest),
    Report(ReportRequest),
}

/// The whole table `query` chooses as CSV, sent beside the answer as UTF-8 bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CsvRequest {
    pub device: u32,
    pub query: TableQuery,
    #[serde(default)]
    pub redact: bool,
}

/// The Markdown report of the device, titled with `file_name`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportRequest {
    pub device: u32,
    pub file_name: String,
    #[serde(default)]
    pub redact: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExportAnswer {
    Csv(CsvExport),
    Report(String),
}

impl ExportAnswer {
    pub fn name(&self) -> &'static str {
        match self {
            ExportAnswer::Csv(_) => "table CSV",
            ExportAnswer::Report(_) => "Markdown report",
        }
    }
}

/// A table written as CSV: its lines under the header, and its size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CsvExport {
    pub rows: u64,
    pub bytes: u64,
}

/// Answers an export with the services that compute what it holds.
pub fn answer(
    cx: &Context<'_>,
    table: &mut TableService,
    breakdown: &mut BreakdownService,
    request: ExportRequest,
) -> Result<Reply<ExportAnswer>, ViewError> {
    let redacted = |redact: bool, text: String| -> String {
        if !redact {
            return text;
        }
        match Redaction::of_snapshot(&cx.analysed.snapshot).apply_in_text(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(changed) => changed,
        }
    };
    match request {
        ExportRequest::TableCsv(CsvRequest {
            device,
            query,
            redact,
        }) => {
            let (text, rows) = table_csv(table, cx, device, &query)?;
            let bytes = redacted(redact, text).into_bytes();
            Ok(Reply::with_attachment(
                ExportAnswer::Csv(CsvExport {
                    rows,
                    bytes: bytes.len() as u64,
                }),
                bytes,
            ))
        }
        ExportRequest::Report(ReportRequest {
            device,
            file_name,
            redact,
        }) => {
            let text = report(cx, breakdown, device, &file_name)?;
            Ok(ExportAnswer::Report(redacted(redact, text)).into())
        }
    }
}

/// The CSV of the table `query` chooses: every row, or every group when grouped; with the
/// number of lines under the header.
pub fn table_csv(
    table: &mut TableService,
    cx: &Context<'_>,
    device: u32,
    query: &TableQuery,
) -> Result<(String, u64), ViewError> {
    let table = table.table(cx, device, query)?;
    Ok(match table.tree {
        None => (
            rows_csv(&table.rows, table.sorted),
            table.sorted.len() as u64,
        ),
        Some(tree) => groups_csv(tree, table.totals.scope_bytes),
    })
}

/// Device `device`'s Markdown report, titled with `file_name`.
pub fn report(
    cx: &Context<'_>,
    breakdown: &mut BreakdownService,
    device: u32,
    file_name: &str,
) -> Result<String, ViewError> {
    let summary = breakdown.summary(cx, device)?;
    let peak = breakdown.at(cx, AtRequest::at_peak(device, REPORT_TOP))?;
    Ok(markdown(
        file_name,
        &summary,
        &peak,
        cx.analysed,
        cx.categorised.rules().rules.len(),
    ))
}
