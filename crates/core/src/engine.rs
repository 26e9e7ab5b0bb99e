//! What one worker does with its one snapshot: decode it from a reader while reporting
//! progress, keep the model, and answer view requests with [`Response`]s.
//!
//! Pure logic with no browser dependency, unit-tested natively; `worker/mod.rs` feeds it
//! messages and posts its answers. Not the place for the transport or for reading files.

use std::cell::Cell;
use std::io::Read;

use crate::timeline::service::{Reply, Timelines};
use crate::analysis::Analysed;
use crate::decode::{decode_reader, DecodeError};
use crate::protocol::{ErrorReport, LoadedSummary, Request, Response};

/// Progress is reported at most once per this many bytes read (plus once at the end), so the
/// page gets a smooth bar without a flood of messages.
pub const PROGRESS_STEP_BYTES: u64 = 1024 * 1024;

/// The decoded snapshot of one worker, with the facts derived once at load, if any.
#[derive(Default)]
pub struct Session {
    analysed: Option<Analysed>,
    timelines: Timelines,
}

impl Session {
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes a snapshot of `total` bytes from `reader`. `post` receives progress messages;
    /// `now` is a clock in milliseconds. Returns `Loaded` or `Failed`.
    pub fn load<R: Read>(
        &mut self,
        reader: R,
        total: u64,
        now: &dyn Fn() -> f64,
        post: &mut dyn FnMut(Response),
    ) -> Response {
        self.analysed = None;
        self.timelines = Timelines::default();
        let start = now();
        let mut reported = 0u64;
        post(Response::Progress {
            bytes_read: 0,
            total,
        });
        let read_ms = Cell::new(0.0);
        let reader = TimedReader {
            inner: reader,
            now,
            spent: &read_ms,
        };
        let result = decode_reader(reader, &mut |bytes_read| {
            let due =
                bytes_read >= reported.saturating_add(PROGRESS_STEP_BYTES) || bytes_read >= total;
            if due && bytes_read > reported {
                reported = bytes_read;
                post(Response::Progress {
                    bytes_read: bytes_read.min(total),
                    total,
                });
            }
        });
        match result {
            Ok(snapshot) => {
                if reported < total {
                    post(Response::Progress {
                        bytes_read: total,
                        total,
                    });
                }
                let devices = snapshot.device_ids();
                let default_device = snapshot.default_device().unwrap_or(0);
                let analyse_start = now();
                self.analysed = Some(Analysed::new(snapshot));
                let end = now();
                Response::Loaded(LoadedSummary {
                    devices,
                    default_device,
                    file_bytes: total,
                    decode_ms: end - start,
                    read_ms: read_ms.get(),
                    analyse_ms: end - analyse_start,
                })
            }
            Err(error) => Response::Failed(report(error)),
        }
    }

    /// Answers a view request; `now` is a clock in milliseconds. `Load` is not a view: the
    /// worker handles it with [`Self::load`].
    pub fn handle(&mut self, request: &Request, now: &dyn Fn() -> f64) -> Reply {
        let refuse = |message: &str| {
            Reply::from(Response::Failed(ErrorReport {
                message: message.into(),
                offset: None,
                hint: None,
            }))
        };
        if let Request::Load { .. } = request {
            return refuse("This worker already has a file: open each file in its own worker.");
        }
        let Some(analysed) = &self.analysed else {
            return refuse("No snapshot is loaded.");
        };
        match request {
            Request::Overview { device } => Response::Overview(analysed.overview(*device)).into(),
            other => self
                .timelines
                .handle(analysed, other, now)
                .unwrap_or_else(|| refuse("The worker cannot answer this request.")),
        }
    }
}

/// Adds the time spent in `read` to `spent`: how long the decoder waited for the file.
struct TimedReader<'a, R> {
    inner: R,
    now: &'a dyn Fn() -> f64,
    spent: &'a Cell<f64>,
}

impl<R: Read> Read for TimedReader<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let start = (self.now)();
        let result = self.inner.read(out);
        self.spent.set(self.spent.get() + (self.now)() - start);
        result
    }
}

/// A decoding error as shown to the user.
pub fn report(error: DecodeError) -> ErrorReport {
    let detail = error.into_detail();
    ErrorReport {
        message: detail.message,
        offset: detail.offset,
        hint: detail.hint,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock() -> impl Fn() -> f64 {
        let t = std::cell::Cell::new(0.0);
        move || {
            t.set(t.get() + 5.0);
            t.get()
        }
    }

    #[test]
    fn garbage_fails_with_a_report_and_keeps_nothing() {
        let mut session = Session::new();
        let mut posted = Vec::new();
        let bytes = b"this is not a pickle".to_vec();
        let response = session.load(&bytes[..], bytes.len() as u64, &clock(), &mut |r| {
            posted.push(r)
        });
        let Response::Failed(report) = response else {
            panic!("expected a failure, got {response:?}")
        };
        assert!(!report.message.is_empty());
        assert_eq!(
            posted.first(),
            Some(&Response::Progress {
                bytes_read: 0,
                total: bytes.len() as u64
            })
        );
        // Nothing was kept: views are refused.
        assert!(matches!(
            session
                .handle(&Request::Overview { device: 0 }, &clock())
                .response,
            Response::Failed(_)
        ));
    }

    #[test]
    fn a_second_load_request_is_refused() {
        let mut session = Session::new();
        let reply = session.handle(
            &Request::Load {
                name: "x".into(),
                size: 1,
            },
            &clock(),
        );
        assert!(matches!(reply.response, Response::Failed(_)));
    }

    #[test]
    fn decode_errors_keep_offset_and_hint() {
        let error = DecodeError::at(12, "unknown opcode 0x63 (GLOBAL)")
            .with_hint("this pickle contains code");
        assert_eq!(
            report(error),
            ErrorReport {
                message: "unknown opcode 0x63 (GLOBAL)".into(),
                offset: Some(12),
                hint: Some("this pickle contains code".into()),
            }
        );
    }

    /// The smallest real snapshot shape: `{"segments": [], "device_traces": [[]]}` pickled with
    /// protocol 4 (fails until the real decoder lands).
    #[test]
    fn a_minimal_snapshot_loads_and_reports_progress_to_the_end() {
        let bytes: &[u8] = b"\x80\x04\x95\x27\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x08segments\x94]\x94\x8c\rdevice_traces\x94]\x94]\x94au.";
        let mut session = Session::new();
        let mut posted = Vec::new();
        let response = session.load(bytes, bytes.len() as u64, &clock(), &mut |r| posted.push(r));
        match response {
            Response::Loaded(summary) => {
                assert_eq!(summary.file_bytes, bytes.len() as u64);
                assert!(summary.decode_ms > 0.0);
                assert_eq!(
                    posted.last(),
                    Some(&Response::Progress {
                        bytes_read: bytes.len() as u64,
                        total: bytes.len() as u64
                    })
                );
                for device in &summary.devices {
                    assert!(matches!(
                        session
                            .handle(&Request::Overview { device: *device }, &clock())
                            .response,
                        Response::Overview(_)
                    ));
                }
            }
            Response::Failed(report) => panic!("a valid snapshot failed: {report:?}"),
            other => panic!("unexpected {other:?}"),
        }
    }
}
