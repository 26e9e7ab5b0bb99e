//! Runs of hf.

#[allow(unused_imports)]
use crate::run::*;
