//! The seam every feature plugs into: a [`Service`] answers its feature's requests about the
//! loaded snapshot, with an answer (and maybe bytes to transfer beside it) or a [`ViewError`].
//!
//! A service owns whatever it keeps between requests (the timeline keeps its layouts); the
//! snapshot and the facts derived at load are lent to it in a [`Context`]. The
//! [`Session`](crate::session::Session) routes each request to its feature's service. Not the
//! place for any feature's logic, nor for the transport.

use serde::{Deserialize, Serialize};

use crate::analysis::categories::categorised::Categorised;
use crate::analysis::Analysed;

/// What a service is lent to answer one request.
pub struct Context<'a> {
    pub analysed: &'a Analysed,
    /// The allocations' categories under the user's current rules.
    pub categorised: &'a Categorised,
    /// A clock in milliseconds, for the timings answers report.
    pub now: &'a dyn Fn() -> f64,
}

/// An answer, with bytes that travel beside it rather than inside its JSON (a painted frame's
/// pixels), so they can be transferred without copying.
#[derive(Debug, PartialEq)]
pub struct Reply<A> {
    pub answer: A,
    pub attachment: Option<Vec<u8>>,
}

impl<A> Reply<A> {
    pub fn with_attachment(answer: A, attachment: Vec<u8>) -> Self {
        Reply {
            answer,
            attachment: Some(attachment),
        }
    }

    /// The same reply with its answer wrapped (into the protocol's answer of every feature).
    pub fn map<B>(self, wrap: impl FnOnce(A) -> B) -> Reply<B> {
        Reply {
            answer: wrap(self.answer),
            attachment: self.attachment,
        }
    }
}

impl<A> From<A> for Reply<A> {
    fn from(answer: A) -> Self {
        Reply {
            answer,
            attachment: None,
        }
    }
}

/// Why a view request could not be answered. The snapshot stays loaded: only the view that
/// asked shows the error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ViewError {
    /// No snapshot is loaded (the file is still loading, or failed).
    NotLoaded,
    /// The snapshot has no device with this index.
    NoSuchDevice { device: u32 },
    /// The device has no private pool at this position.
    NoSuchPool { device: u32, pool: u16 },
    /// The request needs another one answered first (a timeline laid out before its frames).
    NotPrepared { needs: Prerequisite },
    /// The request could not be read, or was answered with another feature's answer.
    Malformed { detail: String },
    /// Only a digest of the snapshot is loaded, and the view needs the snapshot (`detail`
    /// says which and why).
    NeedsSnapshot { detail: String },
}

/// What a request depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Prerequisite {
    /// A `Layout` request for the same device and timeline.
    TimelineLayout,
}

/// One feature's answers to its own requests.
pub trait Service {
    type Request;
    type Answer;

    fn answer(
        &mut self,
        cx: &Context<'_>,
        request: Self::Request,
    ) -> Result<Reply<Self::Answer>, ViewError>;
}
