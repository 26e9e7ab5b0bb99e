//! Facts derived from the model, computed once at load or on request by a view.

pub mod overview;
