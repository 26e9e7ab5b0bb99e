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
use crate::analysis::{DeviceFacts, Origin};
use crate::model::{Action, Device, Snapshot};

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
/// counts as an annotation at its row.
pub fn annotated_roles(
    snapshot: &Snapshot,
    device: &Device,
    facts: &DeviceFacts,
) -> Vec<(u32, u32, Role)> {
    let trace = &device.trace;
    if !trace.has_user_metadata() {
        return Vec::new();
    }
    let role_at = |row: usize| {
        trace
            .user_metadata(row)
            .and_then(|text| metadata_role(snapshot.str(text)))
    };
    let mut found: FxHashMap<u32, (u32, Role)> = FxHashMap::default();
    let first_traced = facts.allocations.first_traced();
    // The allocation each address holds, row by row: those from before the trace hold
    // theirs from the start (a freed one until its free).
    let mut open: FxHashMap<u64, u32> = FxHashMap::default();
    for i in 0..first_traced {
        let a = facts.allocations.at(i);
        if a.origin() != Origin::Trace {
            open.insert(a.addr, i as u32);
        }
    }
    let mut next_traced = first_traced;
    for row in 0..trace.len() {
        match trace.action[row] {
            Action::Alloc => {
                // Allocations made in the trace are listed in the order of their rows.
                while next_traced < facts.allocations.len() {
                    let a = facts.allocations.at(next_traced);
                    if a.alloc_row as usize > row {
                        break;
                    }
                    if a.alloc_row as usize == row {
                        open.insert(a.addr, next_traced as u32);
                        if let Some(role) = role_at(row) {
                            found.insert(next_traced as u32, (row as u32, role));
                        }
                    }
                    next_traced += 1;
                }
            }
            Action::Annotate => {
                let (Some(&i), Some(role)) = (open.get(&trace.addr[row]), role_at(row)) else {
                    continue;
                };
                found.insert(i, (row as u32, role));
            }
            Action::FreeCompleted => {
                if let Some(&i) = open.get(&trace.addr[row]) {
                    if facts.allocations.at(i as usize).free_row == row as u32 {
                        open.remove(&trace.addr[row]);
                    }
                }
            }
            _ => {}
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
