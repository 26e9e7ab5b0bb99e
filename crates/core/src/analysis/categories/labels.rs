//! What each role, component and phase of training is called (`Optimizer state`, `MLP /
//! Linear`, `Zero grad`): the categories' names, which the table's groups, the rules and every
//! view share. Not the place for sentences about them ([`crate::format::breakdown`]).

use super::pooled::{PoolFacts, PoolKind};
use super::signals::Phase;
use super::{Component, Role};

/// What a role is called: `Optimizer state`, `Forward temporaries`.
pub fn role_label(role: Role) -> &'static str {
    match role {
        Role::Parameters => "Parameters",
        Role::Gradients => "Gradients",
        Role::OptimizerState => "Optimizer state",
        Role::Activations => "Activations",
        Role::ForwardTemporaries => "Forward temporaries",
        Role::BackwardTemporaries => "Backward temporaries",
        Role::OptimizerTemporaries => "Optimizer temporaries",
        Role::Inputs => "Inputs",
        Role::Communication => "Communication",
        Role::Workspace => "Workspace",
        Role::KvCache => "KV cache",
        Role::CudaGraph => "CUDA graphs",
        Role::Unknown => "Unknown",
    }
}

/// What a component is called: `MLP / Linear`, `Experts / MoE`.
pub fn component_label(component: Component) -> &'static str {
    match component {
        Component::Attention => "Attention",
        Component::Mlp => "MLP / Linear",
        Component::Expert => "Experts / MoE",
        Component::Embedding => "Embedding",
        Component::Norm => "Norm",
        Component::Loss => "Loss / logits",
        Component::Communication => "Communication / FSDP",
        Component::Other => "Other",
    }
}

/// What a private pool is called: `Pool (0, 2), CUDA graph`.
pub fn pool_label(pool: &PoolFacts) -> String {
    let (owner, id) = pool.id;
    match pool.kind {
        PoolKind::Graph => format!("Pool ({owner}, {id}), CUDA graph"),
        PoolKind::Memory => format!("Pool ({owner}, {id}), memory pool"),
        PoolKind::Unknown => format!("Pool ({owner}, {id})"),
    }
}

/// What a phase of training is called.
pub fn phase_label(phase: Phase) -> &'static str {
    match phase {
        Phase::Other => "Other",
        Phase::Setup => "Setup",
        Phase::Forward => "Forward",
        Phase::Backward => "Backward",
        Phase::OptimizerStep => "Optimizer step",
        Phase::ZeroGrad => "Zero grad",
        Phase::LoadWeights => "Load weights",
        Phase::ProfileRun => "Profile run",
        Phase::KvCacheAllocation => "KV cache allocation",
        Phase::GraphCapture => "CUDA graph capture",
        Phase::Prefill => "Prefill",
        Phase::Decode => "Decode",
        Phase::Unwinding => "Unwinding after the out-of-memory",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_category_has_its_own_label() {
        let roles: std::collections::HashSet<_> =
            Role::ALL.iter().map(|&r| role_label(r)).collect();
        assert_eq!(roles.len(), Role::ALL.len());
        let components: std::collections::HashSet<_> =
            Component::ALL.iter().map(|&c| component_label(c)).collect();
        assert_eq!(components.len(), Component::ALL.len());
        assert_eq!(role_label(Role::OptimizerState), "Optimizer state");
        assert_eq!(component_label(Component::Mlp), "MLP / Linear");
    }
}
