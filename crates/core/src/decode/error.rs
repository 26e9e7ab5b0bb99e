//! Decoding errors: what is wrong, where (byte offset), and a hint about what the file is.
//!
//! The details are boxed so that `Result<T, DecodeError>` stays one word wide: the decoder's
//! hot loop returns results for every opcode.

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Serialize};

/// What went wrong, where, and what the file probably is: what the page and the command line
/// show for a file that could not be opened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorReport {
    /// What is wrong, in one sentence.
    pub message: String,
    /// Offset in the decoded byte stream (after gzip) where the problem was found, when known.
    pub offset: Option<u64>,
    /// What the file probably is, or what to do about it.
    pub hint: Option<String>,
}

impl ErrorReport {
    /// A report with a message only.
    pub fn message(message: impl Into<String>) -> Self {
        ErrorReport {
            message: message.into(),
            offset: None,
            hint: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError(Box<ErrorReport>);

impl Deref for DecodeError {
    type Target = ErrorReport;
    fn deref(&self) -> &ErrorReport {
        &self.0
    }
}

impl DecodeError {
    pub fn new(offset: Option<u64>, message: impl Into<String>) -> Self {
        DecodeError(Box::new(ErrorReport {
            offset,
            message: message.into(),
            hint: None,
        }))
    }

    pub fn at(offset: u64, message: impl Into<String>) -> Self {
        DecodeError::new(Some(offset), message)
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.0.hint = Some(hint.into());
        self
    }

    /// Sets the offset when the error did not know it.
    pub fn or_at(mut self, offset: u64) -> Self {
        self.0.offset = self.0.offset.or(Some(offset));
        self
    }

    /// The report shown to the user.
    pub fn into_report(self) -> ErrorReport {
        *self.0
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(offset) => write!(f, "at byte {offset}: {}", self.message)?,
            None => write!(f, "{}", self.message)?,
        }
        if let Some(hint) = &self.hint {
            write!(f, " ({hint})")?;
        }
        Ok(())
    }
}

impl std::error::Error for DecodeError {}
