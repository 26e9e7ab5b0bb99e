//! Decoding errors: what is wrong, where (byte offset), and a hint about what the file is.
//!
//! The details are boxed so that `Result<T, DecodeError>` stays one word wide: the decoder's
//! hot loop returns results for every opcode.

use std::fmt;
use std::ops::Deref;

/// What went wrong, where, and what the file probably is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorDetail {
    /// Offset in the decoded byte stream (after gzip) where the problem was found.
    pub offset: Option<u64>,
    pub message: String,
    pub hint: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError(Box<ErrorDetail>);

impl Deref for DecodeError {
    type Target = ErrorDetail;
    fn deref(&self) -> &ErrorDetail {
        &self.0
    }
}

impl DecodeError {
    pub fn new(offset: Option<u64>, message: impl Into<String>) -> Self {
        DecodeError(Box::new(ErrorDetail {
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

    pub fn into_detail(self) -> ErrorDetail {
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
