//! A digest opened where a snapshot is (the page, a folder of a job's digests): the requests a
//! digest answers — each device's digest, for the files table and comparisons — and, for every
//! other view, a refusal saying that it needs the snapshot. A digest is kilobytes held on the
//! page, so it needs no worker: a job's thousand digests open as a thousand rows at once.
//!
//! Not the place for reading digest files (`compare::digest_file`) or for a snapshot's
//! requests ([`super::Session`]).

use crate::analysis::DeviceChoice;
use crate::compare::digest_file::{read_digests, DigestFile, MAX_DIGESTS_BYTES};
use crate::compare::Digest;
use crate::decode::ErrorReport;
use crate::export::ExportRequest;
use crate::format;
use crate::protocol::{Answer, LoadedSummary, Request};
use crate::service::ViewError;

/// Why a digest taken at a phase of training cannot come from a digest: the words the page
/// and `memsight compare --at-phase` say.
pub const NO_PHASES_IN_DIGESTS: &str =
    "a digest holds each device at its run's peak only; taking it at a phase needs the snapshot";

/// The digests of a file the user opened (one, or several written one after another), each
/// to be opened as a file of its own under its snapshot's name (`file_name` for a digest
/// that names none); or why they cannot be read.
pub fn read_opened(
    file_name: &str,
    bytes: &[u8],
) -> Result<Vec<(String, DigestedFile)>, ErrorReport> {
    if bytes.len() as u64 > MAX_DIGESTS_BYTES {
        return Err(format::problems::digests_too_large(MAX_DIGESTS_BYTES));
    }
    let files = read_digests(bytes)
        .map_err(|(at, error)| format::problems::unreadable_digest(at, &error))?;
    // Each digest's share of the file's bytes.
    let share = bytes.len() as u64 / files.len() as u64;
    Ok(files
        .into_iter()
        .map(|file| {
            let name = if file.name.is_empty() {
                file_name.to_string()
            } else {
                file.name.clone()
            };
            (name, DigestedFile::new(file, share))
        })
        .collect())
}

/// One snapshot's digest, opened as a file.
#[derive(Clone, Debug, PartialEq)]
pub struct DigestedFile {
    file: DigestFile,
    /// Bytes of the digest as read (the snapshot's own size is in the digest).
    digest_bytes: u64,
}

impl DigestedFile {
    pub fn new(file: DigestFile, digest_bytes: u64) -> Self {
        DigestedFile { file, digest_bytes }
    }

    /// The digest as read.
    pub fn file(&self) -> &DigestFile {
        &self.file
    }

    /// Its share of the bytes of the file it was read from.
    pub fn digest_bytes(&self) -> u64 {
        self.digest_bytes
    }

    /// What the page knows of a loaded file, from the digest: its devices (those that used
    /// no memory last), the device shown first, and that only a digest is loaded.
    pub fn summary(&self) -> LoadedSummary {
        let devices = &self.file.devices;
        let mut ids: Vec<u32> = devices.iter().map(|d| d.device).collect();
        ids.sort_unstable();
        let unused_devices = devices
            .iter()
            .filter(|d| d.unused)
            .map(|d| d.device)
            .collect();
        let default_device = self.file.shown_device().unwrap_or(0);
        let default_reason = match devices.iter().filter(|d| !d.unused).count() {
            0 | 1 => DeviceChoice::Only,
            _ => DeviceChoice::HighestPeak {
                bytes: self.file.device(default_device).map_or(0, |d| d.peak_bytes),
            },
        };
        LoadedSummary {
            devices: ids,
            unused_devices,
            device_kind: devices.first().map(|d| d.device_kind).unwrap_or_default(),
            default_device,
            default_reason,
            file_bytes: self.digest_bytes,
            decode_ms: 0.0,
            read_ms: 0.0,
            analyse_ms: 0.0,
            categorise_ms: 0.0,
            overview: None,
            first_view: None,
            digest: true,
        }
    }

    /// Answers a view's request: a device's digest (without its call sites and modules unless
    /// `detail` asks for them), or why the view needs the snapshot.
    pub fn answer(&self, request: &Request) -> Result<Answer, ViewError> {
        match request {
            Request::Digest(asked) => {
                if asked.at_phase.is_some() {
                    return Err(ViewError::NeedsSnapshot {
                        detail: NO_PHASES_IN_DIGESTS.to_string(),
                    });
                }
                let digest = self
                    .file
                    .device(asked.device)
                    .ok_or(ViewError::NoSuchDevice {
                        device: asked.device,
                    })?;
                Ok(Answer::Digest(if asked.detail {
                    digest.clone()
                } else {
                    without_detail(digest)
                }))
            }
            other => Err(ViewError::NeedsSnapshot {
                detail: format!(
                    "{} needs the snapshot: a digest holds each device's numbers at its peak",
                    what_needs_the_snapshot(other)
                ),
            }),
        }
    }
}

/// A digest for the files table: the numbers, not the call sites and modules.
fn without_detail(digest: &Digest) -> Digest {
    Digest {
        call_sites: Vec::new(),
        modules: Vec::new(),
        ..digest.clone()
    }
}

/// What a request is for, in the words of a sentence's subject.
fn what_needs_the_snapshot(request: &Request) -> &'static str {
    match request {
        Request::Overview(_) => "the overview",
        Request::Timeline(_) => "the timeline",
        Request::Breakdown(_) => "the breakdown",
        Request::Table(_) => "the table of allocations",
        Request::Phases(_) => "the phases",
        Request::Export(ExportRequest::TableCsv(_)) => "the table's CSV",
        Request::Export(_) => "this download",
        Request::SetRules(_) => "categorising again under new rules",
        Request::Digest(_) => "a digest",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::service::DigestRequest;
    use crate::overview::service::OverviewRequest;

    /// The digest file of the small reference snapshot, from its session's own digests.
    fn digested() -> DigestedFile {
        let bytes = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/small_p4.pickle"
        ))
        .expect("the small fixture");
        let mut session = super::super::Session::new();
        let summary = session
            .load(&bytes[..], bytes.len() as u64, &|| 0.0, &mut |_| {})
            .expect("the small fixture loads");
        let devices = summary
            .devices
            .iter()
            .map(|&device| {
                let asked = Request::Digest(DigestRequest {
                    device,
                    detail: true,
                    at_phase: None,
                });
                match session.answer(asked, &|| 0.0).map(|r| r.answer) {
                    Ok(Answer::Digest(digest)) => digest,
                    other => panic!("a digest, not {other:?}"),
                }
            })
            .collect();
        let file = DigestFile::new("small.pickle", "memsight test", 1234, Some(0), devices);
        DigestedFile::new(file, 99)
    }

    #[test]
    fn a_digest_answers_the_files_table_and_a_comparison() {
        let d = digested();
        let full = d.file().devices[0].clone();
        assert!(!full.call_sites.is_empty(), "the fixture has call sites");
        let ask = |detail| {
            d.answer(&Request::Digest(DigestRequest {
                device: 0,
                detail,
                at_phase: None,
            }))
        };
        assert_eq!(ask(true), Ok(Answer::Digest(full.clone())));
        let Ok(Answer::Digest(numbers)) = ask(false) else {
            panic!("a digest")
        };
        assert!(numbers.call_sites.is_empty() && numbers.modules.is_empty());
        assert_eq!(numbers.peak_bytes, full.peak_bytes);
        assert_eq!(numbers.roles, full.roles);
        assert_eq!(
            d.answer(&Request::Digest(DigestRequest {
                device: 7,
                detail: false,
                at_phase: None,
            })),
            Err(ViewError::NoSuchDevice { device: 7 })
        );
    }

    #[test]
    fn a_digest_says_what_needs_the_snapshot() {
        let d = digested();
        let at_phase = d.answer(&Request::Digest(DigestRequest {
            device: 0,
            detail: true,
            at_phase: Some(crate::analysis::categories::signals::Phase::Forward),
        }));
        assert_eq!(
            at_phase,
            Err(ViewError::NeedsSnapshot {
                detail: NO_PHASES_IN_DIGESTS.to_string()
            })
        );
        let Err(ViewError::NeedsSnapshot { detail }) =
            d.answer(&Request::Overview(OverviewRequest { device: 0 }))
        else {
            panic!("the overview needs the snapshot")
        };
        assert!(
            detail.starts_with("the overview needs the snapshot"),
            "{detail}"
        );
    }

    #[test]
    fn a_file_of_digests_opens_as_one_file_per_snapshot() {
        let d = digested();
        let mut second = d.file().clone();
        second.name = "job/rank1.pickle".into();
        let mut unnamed = d.file().clone();
        unnamed.name = String::new();
        let bytes = [d.file().to_json(), second.to_json(), unnamed.to_json()].concat();
        let opened = read_opened("all.jsonl", bytes.as_bytes()).expect("three digests");
        let names: Vec<&str> = opened.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["small.pickle", "job/rank1.pickle", "all.jsonl"]);
        assert_eq!(opened[1].1.file(), &second);
        assert_eq!(opened[0].1.summary().file_bytes, bytes.len() as u64 / 3);

        // A digest of another version, second in the file: said, with which.
        let newer = d
            .file()
            .to_json()
            .replacen("\"version\":1", "\"version\":9", 1);
        let error = read_opened("x.json", [d.file().to_json(), newer].concat().as_bytes())
            .expect_err("a newer digest is refused");
        assert!(
            error
                .message
                .starts_with("A memsight digest of version 9, newer than")
                && error.message.ends_with("(the file's digest 2)."),
            "{}",
            error.message
        );
        let error = read_opened("x.json", b"{\"format\":\"memsight-digest\"").unwrap_err();
        assert!(
            error.message.starts_with("Not a memsight digest"),
            "{}",
            error.message
        );
    }

    #[test]
    fn the_summary_lists_the_digest_devices_and_says_it_is_a_digest() {
        let d = digested();
        let summary = d.summary();
        assert_eq!(summary.devices, vec![0]);
        assert_eq!(summary.default_device, 0);
        assert_eq!(summary.default_reason, DeviceChoice::Only);
        assert_eq!(summary.file_bytes, 99);
        assert!(summary.digest);
        assert!(summary.overview.is_none());
    }
}
