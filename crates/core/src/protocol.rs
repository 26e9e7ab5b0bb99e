//! The messages between the page and the worker that owns one snapshot.
//!
//! The page sends [`ToWorker`]: one `Load` with the file, then view [`Request`]s, each with an
//! id. The worker sends [`FromWorker`]: the file's lifecycle [`FileEvent`]s (progress,
//! loaded, failed) and, for each request, an answer carrying the request's id — the feature's
//! [`Answer`] or a [`ViewError`] that only the asking view shows. Only a file that cannot be
//! decoded (or a crashed worker) ends a worker.
//!
//! Each feature owns its request and answer types next to its code ([`OverviewRequest`],
//! [`TimelineRequest`]…); [`Request`] and [`Answer`] list the features, and the
//! [`Session`](crate::session::Session) routes them. Messages are plain serde types, sent as
//! JSON text, so the protocol is tested natively; the transport (posting messages, transferring
//! a frame's pixels beside its JSON) is the web app's. Enums are externally tagged
//! (`{"event": {"failed": {…}}}`): serde's tagged-by-field enums would cost the wasm binaries
//! several times more code to read.

use serde::{Deserialize, Serialize};

pub use crate::analysis::categories::rules::{RuleError, Rules};
pub use crate::analysis::DeviceChoice;
use crate::breakdown::service::{
    AtRequest, BreakdownAnswer, BreakdownRequest, DeviceSummary, MomentBreakdown, MomentTotals,
    Series, SeriesRequest, SummaryRequest, TotalsRequest,
};
use crate::compare::service::DigestRequest;
use crate::compare::Digest;
pub use crate::decode::ErrorReport;
use crate::export::{CsvExport, CsvRequest, ExportAnswer, ExportRequest, ReportRequest};
use crate::overview::service::OverviewRequest;
use crate::overview::Overview;
use crate::phases::service::PhasesRequest;
use crate::phases::PhaseReport;
pub use crate::service::ViewError;
use crate::table::service::{
    AllocatorRequest, AllocatorView, TableAnswer, TableRequest, TableView, ViewRequest,
};
use crate::table::source::{SourceRequest, SourceView};
use crate::timeline::service::{FirstFrame, FirstView, TimelineAnswer, TimelineRequest};

/// Identifies a request to one worker; its answer carries the same id.
pub type RequestId = u32;

/// What the page sends a worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToWorker {
    /// Decode the `File` sent alongside this message (as the second element of the message);
    /// paint `first_frame` before reporting it loaded ([`LoadedSummary::first_view`]).
    Load {
        name: String,
        size: u64,
        #[serde(default)]
        first_frame: Option<FirstFrame>,
    },
    /// Answer `request` about the loaded snapshot.
    Ask { id: RequestId, request: Request },
}

/// A view request, by feature.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    Overview(OverviewRequest),
    Timeline(TimelineRequest),
    Breakdown(BreakdownRequest),
    Table(TableRequest),
    /// One device at its peak, to set beside other files (the files table, a comparison).
    Digest(DigestRequest),
    /// One device's phases (or `record_function` scopes) with the memory in each.
    Phases(PhasesRequest),
    /// A file to download: the table as CSV, the Markdown report.
    Export(ExportRequest),
    /// Categorise every allocation again under the user's rules (every view's categories
    /// change with them).
    SetRules(Rules),
}

/// A view answer, by feature.
// Built once and serialized at once: boxing the larger answers would only add allocations.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Overview(Overview),
    Timeline(TimelineAnswer),
    Breakdown(BreakdownAnswer),
    Table(TableAnswer),
    Digest(Digest),
    Phases(PhaseReport),
    Export(ExportAnswer),
    Rules(RulesApplied),
}

/// A request with one kind of answer. Whoever asks gets that answer typed ([`typed`]), so
/// the compiler checks what a view reads; an answer of another kind (a worker that does not
/// match the page) is a [`ViewError::Malformed`].
pub trait Ask: Into<Request> {
    type Answer;
    /// The answer this request gets, out of the protocol's, or `None` for another kind.
    fn take(answer: Answer) -> Option<Self::Answer>;
}

/// `result` as the answer request `R` gets.
pub fn typed<R: Ask>(result: Result<Answer, ViewError>) -> Result<R::Answer, ViewError> {
    let answer = result?;
    let feature = answer.feature();
    R::take(answer).ok_or_else(|| ViewError::Malformed {
        detail: format!("the worker answered with a {feature}"),
    })
}

/// `Ask` for a request: the variant of [`Request`] it goes in, and the [`Answer`] pattern
/// that holds its answer.
macro_rules! ask {
    ($request:ty => $answer:ty, $wrap:expr, $pattern:pat => $value:expr) => {
        impl From<$request> for Request {
            fn from(request: $request) -> Request {
                $wrap(request)
            }
        }
        impl Ask for $request {
            type Answer = $answer;
            fn take(answer: Answer) -> Option<$answer> {
                match answer {
                    $pattern => Some($value),
                    #[allow(unreachable_patterns)]
                    _ => None,
                }
            }
        }
    };
}

ask!(OverviewRequest => Overview, Request::Overview, Answer::Overview(a) => a);
ask!(TimelineRequest => TimelineAnswer, Request::Timeline, Answer::Timeline(a) => a);
ask!(
    SummaryRequest => Box<DeviceSummary>,
    |r| Request::Breakdown(BreakdownRequest::Summary(r)),
    Answer::Breakdown(BreakdownAnswer::Summary(a)) => a
);
ask!(
    AtRequest => Box<MomentBreakdown>,
    |r| Request::Breakdown(BreakdownRequest::At(r)),
    Answer::Breakdown(BreakdownAnswer::At(a)) => a
);
ask!(
    TotalsRequest => MomentTotals,
    |r| Request::Breakdown(BreakdownRequest::Totals(r)),
    Answer::Breakdown(BreakdownAnswer::Totals(a)) => a
);
ask!(
    SeriesRequest => Series,
    |r| Request::Breakdown(BreakdownRequest::Series(r)),
    Answer::Breakdown(BreakdownAnswer::Series(a)) => a
);
ask!(
    ViewRequest => Box<TableView>,
    |r| Request::Table(TableRequest::View(r)),
    Answer::Table(TableAnswer::View(a)) => a
);
ask!(
    AllocatorRequest => Box<AllocatorView>,
    |r| Request::Table(TableRequest::Allocator(r)),
    Answer::Table(TableAnswer::Allocator(a)) => a
);
ask!(
    SourceRequest => Box<SourceView>,
    |r| Request::Table(TableRequest::Source(r)),
    Answer::Table(TableAnswer::Source(a)) => a
);
ask!(DigestRequest => Digest, Request::Digest, Answer::Digest(a) => a);
ask!(PhasesRequest => PhaseReport, Request::Phases, Answer::Phases(a) => a);
ask!(
    CsvRequest => CsvExport,
    |r| Request::Export(ExportRequest::TableCsv(r)),
    Answer::Export(ExportAnswer::Csv(a)) => a
);
ask!(
    ReportRequest => String,
    |r| Request::Export(ExportRequest::Report(r)),
    Answer::Export(ExportAnswer::Report(a)) => a
);
ask!(Rules => RulesApplied, Request::SetRules, Answer::Rules(a) => a);

/// The outcome of new rules.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RulesApplied {
    /// The categories' generation now in use (unchanged when the rules were refused).
    pub generation: u32,
    /// Why the rules were refused, naming the rule; the previous rules stay in use.
    pub error: Option<RuleError>,
    pub categorise_ms: f64,
}

impl Answer {
    /// The feature that answered, for messages about an answer that was not the one expected
    /// (without printing the whole answer).
    pub fn feature(&self) -> &'static str {
        match self {
            Answer::Overview(_) => "overview",
            Answer::Timeline(answer) => answer.name(),
            Answer::Breakdown(answer) => answer.name(),
            Answer::Table(answer) => answer.name(),
            Answer::Digest(_) => "digest",
            Answer::Phases(_) => "phases",
            Answer::Export(answer) => answer.name(),
            Answer::Rules(_) => "rules applied",
        }
    }
}

/// What a worker sends the page.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FromWorker {
    /// Where the file is in its life.
    Event(FileEvent),
    /// The answer to request `id`.
    Answer {
        id: RequestId,
        result: Result<Answer, ViewError>,
    },
}

/// A file's lifecycle, as its worker reports it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileEvent {
    /// Bytes of the file read so far.
    Progress { bytes_read: u64, total: u64 },
    /// The file decoded; views may now be requested.
    Loaded(LoadedSummary),
    /// The file could not be decoded, or the worker crashed; nothing was kept.
    Failed(ErrorReport),
}

/// Facts about a freshly decoded snapshot that the page needs before asking for any view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadedSummary {
    /// Device indices present in the snapshot, ascending.
    pub devices: Vec<u32>,
    /// Of `devices`, those that used no memory (no segment, no trace entry): listed last and
    /// said to be empty where a device is picked.
    #[serde(default)]
    pub unused_devices: Vec<u32>,
    /// The kind of device they are (`cuda`, `npu`…).
    #[serde(default)]
    pub device_kind: crate::model::DeviceKind,
    /// The device to show first: where an allocation failed, else where memory peaked highest.
    pub default_device: u32,
    /// Why that device.
    #[serde(default = "only")]
    pub default_reason: DeviceChoice,
    /// Bytes of the input file (compressed size for gzip input).
    pub file_bytes: u64,
    /// Milliseconds from the start of reading to the analysed model, measured in the worker.
    pub decode_ms: f64,
    /// Of `decode_ms`, milliseconds spent waiting for the file's bytes.
    #[serde(default)]
    pub read_ms: f64,
    /// Of `decode_ms`, milliseconds spent deriving facts (pairing, curves, peaks).
    #[serde(default)]
    pub analyse_ms: f64,
    /// Of `decode_ms`, milliseconds spent categorising every allocation.
    #[serde(default)]
    pub categorise_ms: f64,
    /// The overview of `default_device` (`None` for a file with no device), sent with the
    /// news of the decoded file so the page shows its numbers without asking first.
    #[serde(default)]
    pub overview: Option<Overview>,
    /// The first frame the page sent with the file, painted for `default_device` (its pixels
    /// beside this message); `None` when none was asked for or there is no device.
    #[serde(default)]
    pub first_view: Option<Box<FirstView>>,
    /// Only the snapshot's digest is loaded (`session::digested`): the files table and
    /// comparisons have its numbers, the views of the trace need the snapshot.
    #[serde(default)]
    pub digest: bool,
}

fn only() -> DeviceChoice {
    DeviceChoice::Only
}

impl ToWorker {
    /// Reads a message from the page. A message that is not understood is answered, when its
    /// id can be read, with a [`ViewError::Malformed`] for that id.
    pub fn parse(json: &str) -> Result<ToWorker, (Option<RequestId>, ViewError)> {
        serde_json::from_str(json).map_err(|error| {
            let id = serde_json::from_str::<serde_json::Value>(json)
                .ok()
                .and_then(|v| v.get("ask")?.get("id")?.as_u64())
                .and_then(|id| RequestId::try_from(id).ok());
            (
                id,
                ViewError::Malformed {
                    detail: error.to_string(),
                },
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::moment::Moment;
    use crate::timeline::TimelineKind;

    /// A request type per answer changes no message: each goes in its feature's enum as
    /// itself, so its JSON is its fields under the request's name, as before.
    #[test]
    fn typed_requests_keep_their_messages() {
        let json = |r: Request| serde_json::to_string(&r).unwrap();
        assert_eq!(
            json(SummaryRequest { device: 3 }.into()),
            r#"{"breakdown":{"summary":{"device":3}}}"#
        );
        let totals = TotalsRequest {
            device: 0,
            moment: Moment::Peak,
        };
        assert_eq!(
            json(totals.into()),
            r#"{"breakdown":{"totals":{"device":0,"moment":"peak"}}}"#
        );
        let report = ReportRequest {
            device: 1,
            file_name: "a.pickle".into(),
            redact: true,
        };
        assert_eq!(
            json(report.into()),
            r#"{"export":{"report":{"device":1,"file_name":"a.pickle","redact":true}}}"#
        );
    }

    #[test]
    fn a_typed_request_gets_its_own_answer_and_refuses_another_kind() {
        let request = PhasesRequest { device: 0 };
        assert_eq!(Request::from(request), Request::Phases(request));
        let applied = RulesApplied {
            generation: 1,
            error: None,
            categorise_ms: 0.0,
        };
        assert_eq!(
            typed::<Rules>(Ok(Answer::Rules(applied.clone()))),
            Ok(applied)
        );
        assert_eq!(
            typed::<PhasesRequest>(Err(ViewError::NotLoaded)),
            Err(ViewError::NotLoaded)
        );
        let other = typed::<PhasesRequest>(Ok(Answer::Rules(RulesApplied {
            generation: 1,
            error: None,
            categorise_ms: 0.0,
        })));
        assert_eq!(
            other,
            Err(ViewError::Malformed {
                detail: "the worker answered with a rules applied".into()
            })
        );
    }

    #[test]
    fn messages_round_trip_as_json() {
        let messages = [
            ToWorker::Load {
                name: "rank0.pickle".into(),
                size: 42,
                first_frame: None,
            },
            ToWorker::Load {
                name: "rank1.pickle".into(),
                size: 43,
                first_frame: Some(FirstFrame {
                    width: 559,
                    height: 331,
                    dark: true,
                    line_width: 4,
                }),
            },
            ToWorker::Ask {
                id: 7,
                request: Request::Overview(OverviewRequest { device: 1 }),
            },
            ToWorker::Ask {
                id: 8,
                request: Request::Timeline(TimelineRequest::Layout {
                    device: 0,
                    kind: TimelineKind::Segments,
                    detail: Some(3),
                }),
            },
        ];
        for message in messages {
            let json = serde_json::to_string(&message).unwrap();
            assert_eq!(ToWorker::parse(&json).unwrap(), message, "{json}");
        }
        let answers = [
            FromWorker::Event(FileEvent::Progress {
                bytes_read: 1,
                total: 2,
            }),
            FromWorker::Event(FileEvent::Failed(ErrorReport {
                message: "truncated".into(),
                offset: Some(9),
                hint: None,
            })),
            FromWorker::Answer {
                id: 3,
                result: Err(ViewError::NoSuchDevice { device: 5 }),
            },
        ];
        for message in answers {
            let json = serde_json::to_string(&message).unwrap();
            assert_eq!(
                serde_json::from_str::<FromWorker>(&json).unwrap(),
                message,
                "{json}"
            );
        }
    }

    #[test]
    fn a_request_that_cannot_be_read_is_refused_for_its_id() {
        let (id, error) =
            ToWorker::parse(r#"{"ask":{"id":12,"request":{"overview":{"dev":1}}}}"#).unwrap_err();
        assert_eq!(id, Some(12));
        assert!(matches!(error, ViewError::Malformed { .. }));
        let (id, _) = ToWorker::parse("not json").unwrap_err();
        assert_eq!(id, None);
    }

    /// `static/worker_loader.js` writes this message by hand when the worker cannot start.
    #[test]
    fn the_loaders_failure_message_is_a_failed_event() {
        let json = r#"{"event":{"failed":{"message":"The decoding worker could not start: x","offset":null,"hint":"h"}}}"#;
        assert_eq!(
            serde_json::from_str::<FromWorker>(json).unwrap(),
            FromWorker::Event(FileEvent::Failed(ErrorReport {
                message: "The decoding worker could not start: x".into(),
                offset: None,
                hint: Some("h".into()),
            }))
        );
    }
}
