//! Model modules from stacks: the chain of `forward` frames an allocation was made under,
//! outermost first, and the occurrences of one repeated call (a model's 24 layers called
//! from one loop line).
//!
//! Snapshot frames carry a file, a line and a function name, no class, so a module is known
//! by the line of the `forward` that called into it: `model.py:253 forward` is where
//! `TransformerLM.forward` runs its layers. Every layer shares that chain; telling the
//! occurrences apart needs their order in the trace ([`occurrences`]). Files that name the
//! modules themselves (a memory profiler's peak tensors) give each module a frame of
//! [`crate::model::MODULE_FILE`], which counts as one of the chain, shown by its name. Not the
//! place for grouping or totals.

use rustc_hash::FxHashMap;

use crate::model::{FrameId, Snapshot, StackId};

/// Per distinct stack, its chain of `forward` frames, outermost first.
#[derive(Default)]
pub struct Chains {
    chains: FxHashMap<StackId, Vec<FrameId>>,
}

impl Chains {
    /// The chain of `stack` (empty when no `forward` frame is on it).
    pub fn of(&mut self, snapshot: &Snapshot, stack: StackId) -> &[FrameId] {
        self.chains.entry(stack).or_insert_with(|| {
            let mut chain: Vec<FrameId> = crate::analysis::stacks::reading_frames(snapshot, stack)
                .into_iter()
                .map(|(f, _)| f)
                .filter(|&f| {
                    // A compiled graph's `forward` stands for the model code it was traced
                    // from, which the chain already holds.
                    if snapshot
                        .fx_node(f)
                        .is_some_and(|n| n.original != crate::model::NO_STACK)
                    {
                        return false;
                    }
                    let frame = &snapshot.frames[f as usize];
                    snapshot.str(frame.name) == "forward"
                        || snapshot.str(frame.filename) == crate::model::MODULE_FILE
                })
                .collect();
            // Stacks list the innermost frame first.
            chain.reverse();
            chain
        })
    }
}

/// How a module's frame is shown: `model.py:253 forward`.
pub fn frame_label(snapshot: &Snapshot, frame: FrameId) -> String {
    let f = &snapshot.frames[frame as usize];
    let file = snapshot.str(f.filename);
    if file == crate::model::MODULE_FILE {
        // A module a profiler named: its part of the path (`layers.*`, `mlp`).
        return snapshot.str(f.name).to_string();
    }
    let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
    format!("{base}:{} {}", f.line, snapshot.str(f.name))
}

/// Splits `members` (in allocation order, all made under one repeated call) into the
/// occurrences of that call, given what each was made under inside it (`inner`, the rest of
/// its chain). An occurrence ends where one starts again: when a member's inner chain is the
/// one the current occurrence began with after some other chain came between (the second
/// layer's first allocation repeats the first layer's). Returns the start of each occurrence
/// in `members`.
pub fn occurrences<K: PartialEq>(inner: &[K]) -> Vec<usize> {
    let mut starts = Vec::new();
    if inner.is_empty() {
        return starts;
    }
    starts.push(0);
    let mut first = 0usize;
    for i in 1..inner.len() {
        if inner[i] == inner[first] && inner[i - 1] != inner[first] {
            starts.push(i);
            first = i;
        }
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer_starts_again_where_its_first_chain_comes_back() {
        // Two layers of attention (a) then MLP (m), each allocating twice in attention.
        let inner = ["a", "a", "m", "a", "a", "m"];
        assert_eq!(occurrences(&inner), vec![0, 3]);
        // One call only.
        assert_eq!(occurrences(&["a", "m", "n"]), vec![0]);
        // A call that allocates at one place only cannot be told apart: one occurrence.
        assert_eq!(occurrences(&["a", "a", "a"]), vec![0]);
        assert_eq!(occurrences::<&str>(&[]), Vec::<usize>::new());
    }
}
