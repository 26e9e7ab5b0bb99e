//! Which frames of a pinned stack are shown: the user's code first. Frames of the user's code
//! and the frame that names the allocation are always shown; the runs of framework and
//! interpreter frames around them are folded behind one line each ("29 framework frames"),
//! and memory_viz's noise frames are hidden; "show all frames" shows everything.
//!
//! Pure, unit-tested natively; `stack` renders the rows.

use crate::analysis::stacks::FrameClass;

/// How a frame is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// Always: the user's code, or the frame naming the allocation.
    Always,
    /// Hidden unless all frames are shown (memory_viz's noise).
    Noise,
    /// Folded into group `n`, shown when the group is opened.
    Folded(usize),
}

/// A line of the pinned stack: a frame, or the fold of a group of frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackLine {
    /// Frame `index` of the stack.
    Frame { index: usize, shown: Shown },
    /// The line that opens group `group` of `count` frames (it comes before them).
    Fold { group: usize, count: usize },
}

/// The rows of a stack whose frames have `classes` (innermost first), `anchor` being the
/// frame that names the allocation.
pub fn rows(classes: &[FrameClass], anchor: Option<usize>) -> Vec<StackLine> {
    let always = |i: usize| classes[i] == FrameClass::UserPython || anchor == Some(i);
    let has_anchor = (0..classes.len()).any(always);
    let mut rows = Vec::with_capacity(classes.len() + 4);
    let mut group = 0;
    let mut i = 0;
    while i < classes.len() {
        if classes[i] == FrameClass::Noise {
            rows.push(StackLine::Frame {
                index: i,
                shown: Shown::Noise,
            });
            i += 1;
            continue;
        }
        if always(i) || !has_anchor {
            rows.push(StackLine::Frame {
                index: i,
                shown: Shown::Always,
            });
            i += 1;
            continue;
        }
        // A run of framework and interpreter frames (noise frames inside it stay hidden).
        let end = (i..classes.len())
            .find(|&j| always(j))
            .unwrap_or(classes.len());
        let count = (i..end)
            .filter(|&j| classes[j] != FrameClass::Noise)
            .count();
        rows.push(StackLine::Fold { group, count });
        for (j, class) in classes.iter().enumerate().take(end).skip(i) {
            rows.push(StackLine::Frame {
                index: j,
                shown: if *class == FrameClass::Noise {
                    Shown::Noise
                } else {
                    Shown::Folded(group)
                },
            });
        }
        group += 1;
        i = end;
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use FrameClass::*;

    #[test]
    fn the_users_code_comes_first_and_framework_runs_fold() {
        // allocator ×2, noise, einsum (torch), user, _call_impl (torch), user, interpreter.
        let classes = [
            Native,
            Native,
            Noise,
            LibraryPython,
            UserPython,
            LibraryPython,
            UserPython,
            Interpreter,
        ];
        let rows = rows(&classes, Some(4));
        let frame = |index, shown| StackLine::Frame { index, shown };
        let fold = |group, count| StackLine::Fold { group, count };
        assert_eq!(
            rows,
            vec![
                fold(0, 3),
                frame(0, Shown::Folded(0)),
                frame(1, Shown::Folded(0)),
                frame(2, Shown::Noise),
                frame(3, Shown::Folded(0)),
                frame(4, Shown::Always),
                fold(1, 1),
                frame(5, Shown::Folded(1)),
                frame(6, Shown::Always),
                fold(2, 1),
                frame(7, Shown::Folded(2)),
            ]
        );
        // The first frame shown by default is the user's.
        let first = rows.iter().find_map(|r| match r {
            StackLine::Frame {
                index,
                shown: Shown::Always,
            } => Some(*index),
            _ => None,
        });
        assert_eq!(first, Some(4));
    }

    #[test]
    fn without_user_code_the_naming_frame_is_shown_and_the_rest_folds() {
        // allocator, aten op, BmmBackward0 (the anchor), engine.
        let rows = rows(&[Native, Native, Native, Native], Some(2));
        assert_eq!(
            rows,
            vec![
                StackLine::Fold { group: 0, count: 2 },
                StackLine::Frame {
                    index: 0,
                    shown: Shown::Folded(0)
                },
                StackLine::Frame {
                    index: 1,
                    shown: Shown::Folded(0)
                },
                StackLine::Frame {
                    index: 2,
                    shown: Shown::Always
                },
                StackLine::Fold { group: 1, count: 1 },
                StackLine::Frame {
                    index: 3,
                    shown: Shown::Folded(1)
                },
            ]
        );
    }

    #[test]
    fn nothing_folds_without_a_frame_to_anchor_on() {
        let rows = rows(&[Native, Noise, Native], None);
        assert_eq!(
            rows,
            vec![
                StackLine::Frame {
                    index: 0,
                    shown: Shown::Always
                },
                StackLine::Frame {
                    index: 1,
                    shown: Shown::Noise
                },
                StackLine::Frame {
                    index: 2,
                    shown: Shown::Always
                },
            ]
        );
    }
}
