//! A loaded snapshot's categories under the user's current rules: computed at load, again at
//! every rule edit, and lent to every service that colours or counts by category.
//!
//! A [`generation`](Categorised::generation) number changes with every re-categorisation, so
//! what a service derived from older categories (the timeline's band split) is rebuilt. The
//! per-device [`CategoryIndex`] is built on first use. Not the place for the inference
//! ([`crate::analysis::categories`]) nor for storing rules (the page keeps them).

use std::cell::OnceCell;

use super::index::{CategoryIndex, Lookup};
use crate::analysis::categories::rules::{RuleError, Rules};
use crate::analysis::categories::{categorise, Categories, DeviceCategories};
use crate::analysis::{Analysed, DeviceFacts};

/// Categories of every device under `rules`, with their indexes.
#[derive(Default)]
pub struct Categorised {
    rules: Rules,
    categories: Categories,
    generation: u32,
    indexes: Vec<OnceCell<CategoryIndex>>,
    /// Milliseconds the last categorisation took.
    pub categorise_ms: f64,
}

impl Categorised {
    /// Categorises `analysed` under `rules`.
    pub fn new(
        analysed: &Analysed,
        rules: Rules,
        now: &dyn Fn() -> f64,
    ) -> Result<Self, RuleError> {
        let mut categorised = Categorised::default();
        categorised.set_rules(analysed, rules, now)?;
        Ok(categorised)
    }

    /// Categorises again under new rules. Rules that cannot be compiled change nothing.
    pub fn set_rules(
        &mut self,
        analysed: &Analysed,
        rules: Rules,
        now: &dyn Fn() -> f64,
    ) -> Result<(), RuleError> {
        let start = now();
        let compiled = rules.compile()?;
        self.categories = categorise(analysed, &compiled);
        self.indexes = (0..self.categories.devices.len())
            .map(|_| OnceCell::new())
            .collect();
        self.rules = rules;
        self.generation = self.generation.wrapping_add(1);
        self.categorise_ms = now() - start;
        Ok(())
    }

    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// Changes with every categorisation.
    pub fn generation(&self) -> u32 {
        self.generation
    }

    pub fn categories(&self) -> &Categories {
        &self.categories
    }

    /// The categories of the device at `position` in [`crate::model::Snapshot::devices`].
    pub fn device(&self, position: usize) -> &DeviceCategories {
        &self.categories.devices[position]
    }

    /// The index of the device at `position` (built on first use), with its facts and
    /// categories to answer from.
    pub fn index<'a>(&'a self, position: usize, facts: &'a DeviceFacts) -> Lookup<'a> {
        let categories = self.device(position);
        self.indexes[position]
            .get_or_init(|| CategoryIndex::new(facts, categories))
            .lookup(facts, categories)
    }
}
