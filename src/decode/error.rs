//! Decoding errors: what is wrong, where (byte offset), and a hint about what the file is.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Offset in the decoded byte stream (after gzip) where the problem was found.
    pub offset: Option<u64>,
    pub message: String,
    pub hint: Option<String>,
}

impl DecodeError {
    pub fn new(offset: Option<u64>, message: impl Into<String>) -> Self {
        DecodeError { offset, message: message.into(), hint: None }
    }

    pub fn at(offset: u64, message: impl Into<String>) -> Self {
        DecodeError::new(Some(offset), message)
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
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
