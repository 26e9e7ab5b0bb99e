//! Runs of torch_amp.

#[allow(unused_imports)]
use crate::run::*;
