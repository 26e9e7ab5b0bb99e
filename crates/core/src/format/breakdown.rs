//! The breakdown in words: what each role and component is called, and which side of the peak
//! estimate's max sets it, so the page, the command line and the report name them alike.
//!
//! Labels only: the bytes by category, the estimate and its side come from
//! [`crate::breakdown`].

use crate::analysis::categories::signals::Phase;
use crate::analysis::categories::{Component, Role};
use crate::breakdown::estimate::PeakSide;

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

/// What a phase of training is called.
pub fn phase_label(phase: Phase) -> &'static str {
    match phase {
        Phase::Other => "Other",
        Phase::Setup => "Setup",
        Phase::Forward => "Forward",
        Phase::Backward => "Backward",
        Phase::OptimizerStep => "Optimizer step",
        Phase::ZeroGrad => "Zero grad",
    }
}

/// The side of `max(gradients + optimizer temporaries, activations)` that sets the estimate.
pub fn side_label(side: PeakSide) -> &'static str {
    match side {
        PeakSide::GradientsAndStep => "gradients + optimizer temporaries (the optimizer step)",
        PeakSide::Activations => "activations (the end of the forward)",
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
