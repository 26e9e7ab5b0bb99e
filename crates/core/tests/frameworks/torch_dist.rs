//! Runs of torch_dist.

#[allow(unused_imports)]
use crate::run::*;
