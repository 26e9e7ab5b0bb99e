//! The tables feature: every allocation of a device as a row — its block and requested sizes,
//! address, stream, role, component and phase, the events and times it was allocated and
//! freed at, its lifetime and the frame that made it — chosen by a scope and filters, sorted
//! by any column, and grouped into a tree (by call site, full stack, file, role, component,
//! phase, or model module with repeated layers folded into one group).
//!
//! Pure computation over [`crate::analysis`] and the categories, tested natively. The service
//! keeps the last query's rows so that scrolling a million rows only slices them. Words and
//! the CSV layout are [`crate::format::table`]'s. Not the place for drawing, virtualising or
//! units.

pub mod columns;
pub mod filter;
pub mod groups;
pub mod modules;
pub mod service;
pub mod source;

use serde::{Deserialize, Serialize};

use crate::analysis::axis::AxisMode;
use crate::analysis::categories::signals::Phase;
use crate::analysis::categories::{Component, Role};
use crate::model::State;

/// Which allocations a table starts from, before its filters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Alive where allocated memory peaks (first reached).
    #[default]
    Peak,
    /// Alive after the last event.
    End,
    /// Alive in a state (`r + 1` is after event `r`), e.g. a moment picked on the timeline.
    State(State),
    /// Allocated inside `[x0, x1)` of the timeline's axis (in `mode`'s units): what the
    /// timeline shows. Allocations from before the trace were not allocated in any window.
    Window { mode: AxisMode, x0: f64, x1: f64 },
    /// Every allocation of the trace, alive or not.
    All,
}

/// What narrows a scope's allocations. Every condition set must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Filter {
    /// Frame text: a file or function name containing it (any case), or, when it reads as
    /// an address (`0x7f…`), the allocations containing that address. Empty: no condition.
    #[serde(default)]
    pub text: String,
    /// `text` is a regular expression matched against each frame's `file:line:name`.
    #[serde(default)]
    pub regex: bool,
    /// Requested bytes at least / at most.
    #[serde(default)]
    pub min_bytes: Option<u64>,
    #[serde(default)]
    pub max_bytes: Option<u64>,
    #[serde(default)]
    pub role: Option<Role>,
    #[serde(default)]
    pub component: Option<Component>,
    /// The raw `cudaStream_t` value.
    #[serde(default)]
    pub stream: Option<u64>,
}

/// A column of the allocations table (also what it sorts by).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Column {
    /// The allocator's block size.
    #[default]
    Size,
    /// The size the program asked for (what the allocated curve counts).
    Requested,
    Address,
    Stream,
    Role,
    Component,
    Phase,
    /// When it was allocated (allocations from before the trace first).
    Allocated,
    /// When it was freed (those alive at the end last).
    Freed,
    /// Events from its allocation to its free (or to the end of the trace).
    Lifetime,
    /// The frame that made it.
    TopFrame,
    /// The tensor's shape, for files that record tensors (sorted by its number of elements).
    Shape,
    /// The pool its memory is in.
    Pool,
}

impl Column {
    pub const ALL: [Column; 13] = [
        Column::Size,
        Column::Requested,
        Column::Address,
        Column::Stream,
        Column::Role,
        Column::Component,
        Column::Phase,
        Column::Allocated,
        Column::Freed,
        Column::Lifetime,
        Column::TopFrame,
        Column::Shape,
        Column::Pool,
    ];

    /// The key in JSON, `data-column` attributes and on the command line.
    pub fn key(self) -> &'static str {
        match self {
            Column::Size => "size",
            Column::Requested => "requested",
            Column::Address => "address",
            Column::Stream => "stream",
            Column::Role => "role",
            Column::Component => "component",
            Column::Phase => "phase",
            Column::Allocated => "allocated",
            Column::Freed => "freed",
            Column::Lifetime => "lifetime",
            Column::TopFrame => "top_frame",
            Column::Shape => "shape",
            Column::Pool => "pool",
        }
    }
}

/// A sort order: one column, ties in allocation order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Sort {
    pub column: Column,
    pub descending: bool,
}

impl Default for Sort {
    /// Largest first: what holds the memory comes to the top.
    fn default() -> Self {
        Sort {
            column: Column::Size,
            descending: true,
        }
    }
}

/// How rows are grouped into a tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    /// The frame that made it (the user's, else the most telling framework frame).
    CallSite,
    /// The whole stack.
    Stack,
    /// The file of the frame that made it.
    File,
    Role,
    Component,
    Phase,
    /// The chain of `forward` frames of its stack, outermost first, with repeated calls of
    /// one module (a model's layers) folded into one group that opens to each occurrence.
    Module,
    /// The pool its memory is in (the default pool, a CUDA graph's, a memory pool).
    Pool,
}

impl GroupBy {
    pub const ALL: [GroupBy; 8] = [
        GroupBy::CallSite,
        GroupBy::Stack,
        GroupBy::File,
        GroupBy::Role,
        GroupBy::Component,
        GroupBy::Phase,
        GroupBy::Module,
        GroupBy::Pool,
    ];

    /// The key in JSON and on the command line (`--group-by callsite`).
    pub fn key(self) -> &'static str {
        match self {
            GroupBy::CallSite => "callsite",
            GroupBy::Stack => "stack",
            GroupBy::File => "file",
            GroupBy::Role => "role",
            GroupBy::Component => "component",
            GroupBy::Phase => "phase",
            GroupBy::Module => "module",
            GroupBy::Pool => "pool",
        }
    }
}

impl std::str::FromStr for GroupBy {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        GroupBy::ALL
            .into_iter()
            .find(|g| g.key() == text)
            .ok_or_else(|| {
                let keys: Vec<&str> = GroupBy::ALL.iter().map(|g| g.key()).collect();
                format!("'{text}' is not a grouping: say one of {}", keys.join(", "))
            })
    }
}

/// Everything that chooses a table's rows and their order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TableQuery {
    pub scope: Scope,
    #[serde(default)]
    pub filter: Filter,
    #[serde(default)]
    pub sort: Sort,
    /// `None`: a flat list of allocations.
    #[serde(default)]
    pub group_by: Option<GroupBy>,
}

/// The phase an allocation was made in, `None` before the trace.
pub type RowPhase = Option<Phase>;
