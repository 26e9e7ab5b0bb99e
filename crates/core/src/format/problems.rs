//! Why something could not be shown, in words: a view's error, and where in a file the
//! decoder found a problem. The decoder's own messages and hints come with its errors
//! ([`crate::decode::ErrorReport`]); the page and the command line add only these.

use super::count;
use crate::compare::digest_file::DigestError;
use crate::decode::ErrorReport;
use crate::service::{Prerequisite, ViewError};

/// A view's error as one sentence.
pub fn view_error(error: &ViewError) -> String {
    match error {
        ViewError::NotLoaded => "No snapshot is loaded.".into(),
        ViewError::NoSuchDevice { device } => {
            format!("This snapshot has no device {device}.")
        }
        ViewError::NoSuchPool { device, pool } => {
            format!("Device {device} has no private pool number {pool}.")
        }
        ViewError::NotPrepared {
            needs: Prerequisite::TimelineLayout,
        } => "The timeline was not laid out before this view of it was asked for.".into(),
        ViewError::Malformed { detail } => {
            format!("The worker could not understand this request: {detail}")
        }
        ViewError::NeedsSnapshot { detail } => as_sentence(detail),
    }
}

/// `clause` as a sentence: its first letter in capitals, with a full stop.
pub fn as_sentence(clause: &str) -> String {
    let mut chars = clause.chars();
    let first: String = chars
        .next()
        .map(|c| c.to_uppercase().collect())
        .unwrap_or_default();
    format!("{first}{}.", chars.as_str())
}

/// Why a file of digests cannot be read: `at` is the digest that cannot (from 1; said when
/// the file holds several).
pub fn unreadable_digest(at: usize, error: &DigestError) -> ErrorReport {
    let which = if at > 1 {
        format!(" (the file's digest {at})")
    } else {
        String::new()
    };
    ErrorReport::message(as_sentence(&format!("{error}{which}")))
}

/// Why a file that begins as a digest is refused: larger than `limit`, which no file of
/// digests memsight writes is.
pub fn digests_too_large(limit: u64) -> ErrorReport {
    ErrorReport::message(format!(
        "This file begins as a memsight digest but is larger than {}, which no file of \
         digests memsight writes is.",
        super::bytes(limit)
    ))
}

/// Why a file read whole is refused (a clause, after its path): larger than `limit`, which
/// `none_is` says no file of its kind is (`no rules file needs to be`).
pub fn file_too_large(limit: u64, none_is: &str) -> String {
    format!("it is larger than {}, which {none_is}", super::bytes(limit))
}

/// Where the decoder found a problem: `At byte 1,234 of the (decompressed) file.`
pub fn error_offset(offset: u64) -> String {
    format!("At byte {} of the (decompressed) file.", count(offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_errors_and_offsets_read_as_sentences() {
        assert_eq!(
            view_error(&ViewError::NoSuchDevice { device: 3 }),
            "This snapshot has no device 3."
        );
        for error in [
            ViewError::NotLoaded,
            ViewError::NotPrepared {
                needs: Prerequisite::TimelineLayout,
            },
            ViewError::Malformed {
                detail: "missing field `device`".into(),
            },
        ] {
            let text = view_error(&error);
            assert!(text.ends_with('.') || text.ends_with('`'), "{text}");
        }
        assert_eq!(
            error_offset(1_234_567),
            "At byte 1,234,567 of the (decompressed) file."
        );
    }
}
