//! The breakdown feature: where a device's memory went, by category (role and component), at
//! any moment and over time; the peak estimate from its terms; the largest allocations; the
//! sizes of live allocations and of cached free blocks; and findings, each with the
//! allocations behind it.
//!
//! Built on [`crate::analysis::categories`] (which allocation is what); the words are
//! [`crate::format`]'s. Not the place for colours, drawing or text.

pub mod estimate;
pub mod findings;
pub mod physics;
pub mod service;
pub mod sizes;
