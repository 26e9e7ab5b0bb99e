//! Roles users wrote on allocations: PyTorch 2.14's `annotate` trace entries
//! (`torch.cuda.memory._annotate_tensor(t, metadata)`, keyed to the allocation's base
//! address, several accumulating on one allocation) and the metadata stamped on an
//! allocation when it was made (`torch.cuda.memory._set_memory_metadata`, the `alloc` entry's
//! `user_metadata`). A text names a role only when it is one, whole: a role's key or label
//! (`optimizer_state`, `Optimizer state`), `role:<key>` as the command line says it, a JSON
//! object with a `role`, or a phrase a role goes by (`saved for backward`, `exp_avg`) —
//! never a word inside other text (a module path `input_layernorm` is not an input).
//!
//! Not the place for showing annotations or for roles the trace implies ([`super::before`]).

use rustc_hash::FxHashMap;

use super::Role;
use crate::analysis::DeviceFacts;
use crate::model::{Device, Snapshot};

/// The role a metadata text names, if it names one.
pub fn metadata_role(text: &str) -> Option<Role> {
    let text = text.trim();
    if text.starts_with('{') {
        let value: serde_json::Value = serde_json::from_str(text).ok()?;
        return ["role", "memsight_role"]
            .iter()
            .find_map(|key| value.get(key)?.as_str())
            .and_then(named_role);
    }
    named_role(text)
}

fn named_role(text: &str) -> Option<Role> {
    let lowered = text.trim().to_ascii_lowercase();
    let name = lowered
        .strip_prefix("role:")
        .or_else(|| lowered.strip_prefix("role="))
        .unwrap_or(&lowered)
        .trim()
        .replace(['-', ' '], "_");
    if let Some(role) = Role::ALL.into_iter().find(|r| r.key() == name) {
        return Some(role);
    }
    let role = match name.as_str() {
        "parameter" | "param" | "params" | "weight" | "weights" | "model_weights" => {
            Role::Parameters
        }
        "gradient" | "grad" | "grads" => Role::Gradients,
        "optimizer" | "optim_state" | "exp_avg" | "exp_avg_sq" | "momentum_buffer" => {
            Role::OptimizerState
        }
        "activation" | "saved_for_backward" | "saved_tensor" | "saved_tensors" => Role::Activations,
        "input" | "batch" => Role::Inputs,
        _ => return None,
    };
    Some(role)
}

/// The roles annotations give `device`'s allocations, `(allocation, trace row, role)` sorted
/// by allocation: the latest annotation naming a role wins; an `alloc` entry's own metadata
/// counts as an annotation at its row. Which allocation an `annotate` row belongs to is the
/// replay's pairing ([`DeviceFacts::annotations`], decision 0028).
pub fn annotated_roles(
    snapshot: &Snapshot,
    device: &Device,
    facts: &DeviceFacts,
) -> Vec<(u32, u32, Role)> {
    let trace = &device.trace;
    if !trace.has_user_metadata() {
        return Vec::new();
    }
    let role_at = |row: u32| {
        trace
            .user_metadata(row as usize)
            .and_then(|text| metadata_role(snapshot.str(text)))
    };
    let mut found: FxHashMap<u32, (u32, Role)> = FxHashMap::default();
    for i in facts.allocations.first_traced()..facts.allocations.len() {
        let row = facts.allocations.at(i).alloc_row;
        if let Some(role) = role_at(row) {
            found.insert(i as u32, (row, role));
        }
    }
    // By allocation, then row: a later annotation replaces an earlier one (and the
    // allocation's own metadata, at its earlier `alloc` row).
    for &(i, row) in &facts.annotations {
        if let Some(role) = role_at(row) {
            found.insert(i, (row, role));
        }
    }
    let mut roles: Vec<(u32, u32, Role)> = found
        .into_iter()
        .map(|(i, (row, role))| (i, row, role))
        .collect();
    roles.sort_unstable_by_key(|&(i, _, _)| i);
    roles
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_names_a_role_only_when_it_is_one() {
        assert_eq!(metadata_role("saved for backward"), Some(Role::Activations));
        assert_eq!(metadata_role("Optimizer state"), Some(Role::OptimizerState));
        assert_eq!(metadata_role("role:gradients"), Some(Role::Gradients));
        assert_eq!(metadata_role("exp_avg_sq"), Some(Role::OptimizerState));
        assert_eq!(
            metadata_role(r#"{"role": "parameters", "module": "layers.3"}"#),
            Some(Role::Parameters)
        );
        assert_eq!(metadata_role("input_layernorm"), None);
        assert_eq!(metadata_role("layers.3.attn.weight"), None);
        assert_eq!(metadata_role(r#"{"module": "layers.3"}"#), None);
        assert_eq!(metadata_role("{not json"), None);
        assert_eq!(metadata_role(""), None);
    }
}
