//! What a run is, in words: "FSDP2 training, AdamW, autocast", "vLLM v1 serving", with the
//! evidence each framework's bytes and frame give. The facts are the categories'
//! ([`crate::analysis::categories::workload`]).

use super::bytes;
use crate::analysis::categories::workload::{Workload, WorkloadKind};

/// The run in a few words: its frameworks, what it does, its optimizer and autocast;
/// `None` when nothing is known of it.
pub fn workload_title(workload: &Workload) -> Option<String> {
    let named: Vec<&str> = workload.named().iter().map(|f| f.name()).collect();
    let kind = match workload.kind {
        WorkloadKind::Training => "training",
        WorkloadKind::Serving => "serving",
        WorkloadKind::ServingAndTraining => "rollout and training",
        WorkloadKind::Inference => "inference",
        WorkloadKind::Unknown if named.is_empty() => return None,
        WorkloadKind::Unknown => "",
    };
    let mut text = named.join(" + ");
    if !kind.is_empty() {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(kind);
    }
    let serving_only = workload.kind == WorkloadKind::Serving;
    if let Some(optimizer) = workload.optimizer.as_ref().filter(|_| !serving_only) {
        text.push_str(", ");
        text.push_str(optimizer);
    }
    if workload.autocast {
        text.push_str(", autocast");
    }
    if !named.is_empty() {
        // Names keep their own case ("vLLM").
        return Some(text);
    }
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
}

/// Each framework named, with its evidence: "vLLM v1: 20.3 GiB in 36 allocations made under
/// its code, the largest by gpu_model_runner.py:3772 _allocate_kv_cache_tensors".
pub fn workload_evidence(workload: &Workload) -> Vec<String> {
    let named = workload.named();
    workload
        .frameworks
        .iter()
        .filter(|f| named.contains(&f.framework))
        .map(|f| {
            let allocations = super::counted(f.allocations as u64, "allocation", "allocations");
            format!(
                "{}: {} in {allocations} made under its code, the largest by {}",
                f.framework.name(),
                bytes(f.bytes),
                f.frame,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::categories::frameworks::Framework;
    use crate::analysis::categories::workload::FrameworkEvidence;

    #[test]
    fn a_workload_reads_as_its_frameworks_kind_optimizer_and_precision() {
        let fsdp = Workload {
            kind: WorkloadKind::Training,
            frameworks: vec![FrameworkEvidence {
                framework: Framework::TorchFsdp2,
                bytes: 3 << 30,
                allocations: 12,
                frame: "_fsdp_param.py:412 _init_sharded_param".into(),
            }],
            optimizer: Some("AdamW".into()),
            autocast: true,
        };
        assert_eq!(
            workload_title(&fsdp).as_deref(),
            Some("FSDP2 training, AdamW, autocast")
        );
        assert_eq!(
            workload_evidence(&fsdp),
            vec!["FSDP2: 3.00 GiB in 12 allocations made under its code, the largest by _fsdp_param.py:412 _init_sharded_param"]
        );
        let serving = Workload {
            kind: WorkloadKind::Serving,
            frameworks: vec![FrameworkEvidence {
                framework: Framework::VllmV1,
                bytes: 1,
                allocations: 1,
                frame: String::new(),
            }],
            optimizer: Some("AdamW".into()),
            autocast: false,
        };
        assert_eq!(workload_title(&serving).as_deref(), Some("vLLM v1 serving"));
        assert_eq!(workload_title(&Workload::default()), None);
    }
}
