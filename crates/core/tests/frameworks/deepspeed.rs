//! Runs of deepspeed.

#[allow(unused_imports)]
use crate::run::*;
