//! The importer of single-GPU memory profilers' peak-memory JSON
//! (`{"<device>": {"peak_memory_mb": …, "tensors": [{"size_bytes", "shape", "module",
//! "phase", "create_stack_trace": […], …}]}}`), brought into the snapshot model: per device,
//! each tensor alive at the peak an allocation never freed, in the order training made them
//! (by iteration and phase, then along the module paths, so a model's layers come one after
//! another), with its shape, a stack of its creation
//! frames (innermost first), the modules of its path (numbered siblings folded: `layers.*`)
//! and its phase as frames the tables and the categories read.
//!
//! There is no time and no order of events: the file is one moment. Not the place for the
//! modules' grouping ([`crate::table::modules`]).

use serde_json::Value;

use super::profiled::{parse_frame, Profiled};
use super::DecodeError;
use crate::model::text::natural_cmp;
use crate::model::{
    Action, ImportNote, Snapshot, Source, TraceRow, MODULE_FILE, PROFILER_PHASE_FILE,
};

/// Whether `map` looks like the peak-memory JSON: device keys whose values hold `tensors`.
pub fn is_peak_tensors(map: &serde_json::Map<String, Value>) -> bool {
    !map.is_empty()
        && map
            .values()
            .all(|v| v.get("tensors").is_some_and(Value::is_array))
}

/// The device a key names: the number in it (`cuda:1` → 1), else 0.
fn device_of(key: &str) -> u32 {
    let digits: String = key.chars().filter(|c| c.is_ascii_digit()).collect();
    digits.parse().unwrap_or(0)
}

/// A module path's parts, with a numbered part folded into the one before it
/// (`model.layers.3.mlp` → `model`, `layers.*`, `mlp`).
pub fn module_parts(path: &str) -> Vec<String> {
    let mut parts: Vec<String> = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        if part.chars().all(|c| c.is_ascii_digit()) {
            match parts.last_mut() {
                Some(last) if !last.ends_with(".*") => last.push_str(".*"),
                Some(_) => {}
                None => parts.push("*".into()),
            }
        } else {
            parts.push(part.to_string());
        }
    }
    parts
}

pub fn import(map: &serde_json::Map<String, Value>) -> Result<Snapshot, DecodeError> {
    let mut profiled = Profiled::new(Source::PeakTensors);
    let mut skipped = (0u64, 0u64);
    let mut next_addr = 0x1000u64;
    for (key, value) in map {
        let device = device_of(key);
        profiled.device(device);
        let tensors = value["tensors"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        // In the order training makes them — setup, then each iteration's forward and backward,
        // then its optimizer step — and within a phase along the module paths, so a model's
        // layers come one after another.
        let mut order: Vec<usize> = (0..tensors.len()).collect();
        let module = |i: usize| tensors[i]["module"].as_str().unwrap_or("");
        let phase = |i: usize| tensors[i]["phase"].as_str().unwrap_or("");
        let rank = |p: &str| match p {
            p if p.starts_with("setup") => 0,
            p if p.starts_with("optimizer") => 2,
            "" => 3,
            _ => 1,
        };
        order.sort_by(|&a, &b| {
            let iteration = |i: usize| {
                phase(i)
                    .rsplit('_')
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
            };
            iteration(a)
                .cmp(&iteration(b))
                .then(rank(phase(a)).cmp(&rank(phase(b))))
                .then_with(|| natural_cmp(phase(a), phase(b)))
                .then_with(|| natural_cmp(module(a), module(b)))
                .then(a.cmp(&b))
        });
        for i in order {
            let t = &tensors[i];
            let size = t["size_bytes"].as_u64().or_else(|| {
                t["size_mb"]
                    .as_f64()
                    .filter(|m| m.is_finite() && *m >= 0.0)
                    .map(|m| (m * 1048576.0).round() as u64)
            });
            let Some(size) = size else {
                if skipped.0 == 0 {
                    // Its place in the file's list.
                    skipped.1 = i as u64;
                }
                skipped.0 += 1;
                continue;
            };
            // Tracebacks list the outermost call first; stacks, the innermost.
            let mut frames = Vec::new();
            if let Some(lines) = t["create_stack_trace"].as_array() {
                for line in lines.iter().rev().filter_map(Value::as_str) {
                    let (file, line, name) = parse_frame(line);
                    frames.push(profiled.frame(&file, line, &name));
                }
            }
            let parts = module_parts(t["module"].as_str().unwrap_or(""));
            for part in parts.iter().rev() {
                frames.push(profiled.frame(MODULE_FILE, -1, part));
            }
            if let Some(phase) = t["phase"].as_str().filter(|p| !p.is_empty()) {
                frames.push(profiled.frame(PROFILER_PHASE_FILE, -1, phase));
            }
            let stack = profiled.stack(&frames);
            next_addr += size.div_ceil(512).max(1) * 512;
            profiled.push(
                device,
                TraceRow {
                    addr: next_addr,
                    size,
                    stack,
                    ..TraceRow::new(Action::Alloc)
                },
            );
            let shape = match &t["shape"] {
                Value::Null => None,
                Value::String(s) => Some(s.clone()),
                // As PyTorch prints a size: `[8, 1024]`.
                Value::Array(dims) => Some(format!(
                    "[{}]",
                    dims.iter()
                        .map(Value::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                other => Some(other.to_string()),
            };
            if let Some(shape) = shape {
                profiled.set_last_shape(device, &shape);
            }
        }
    }
    if skipped.0 > 0 {
        profiled.note(ImportNote::Skipped {
            rows: skipped.0,
            first: skipped.1,
        });
    }
    Ok(profiled.finish())
}

#[cfg(test)]
mod tests {
    use super::module_parts;

    #[test]
    fn numbered_modules_fold_into_the_part_before_them() {
        assert_eq!(
            module_parts("model.layers.3.mlp.fc1"),
            ["model", "layers.*", "mlp", "fc1"]
        );
        assert_eq!(module_parts("blocks.0.1.attn"), ["blocks.*", "attn"]);
        assert_eq!(module_parts("0.weight"), ["*", "weight"]);
        assert!(module_parts("").is_empty());
    }
}
