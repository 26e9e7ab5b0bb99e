//! Runs of rl.

#[allow(unused_imports)]
use crate::run::*;
