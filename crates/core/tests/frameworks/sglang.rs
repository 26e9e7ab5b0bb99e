//! Runs of sglang.

#[allow(unused_imports)]
use crate::run::*;
