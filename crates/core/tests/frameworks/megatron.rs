//! Runs of megatron.

#[allow(unused_imports)]
use crate::run::*;
