//! Stack analysis: what each frame of a recorded stack is (the user's code, a library, native
//! code, or interpreter machinery), the frame that best names who made an allocation, stacks
//! as text, and finding stacks by frame text.
//!
//! Every view that shows or groups stacks asks here, so they agree on what "the user's code"
//! is; module paths and categories inferred from frames belong here too. Reads the model's
//! interned frames and stacks; computes no layout and chooses no words.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::model::{Frame, FrameId, Snapshot, StackId};

/// One frame of a stack, as text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrameText {
    pub filename: String,
    pub line: i64,
    pub name: String,
    /// Interpreter or dispatcher machinery rather than code someone wrote.
    pub noise: bool,
}

/// What a frame is, from the code least to most likely to be the user's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FrameClass {
    /// Interpreter, unwinder or dispatcher machinery (PyTorch's memory_viz hides these).
    Noise,
    /// Native code that is not noise: allocator, ATen, autograd engine…
    Native,
    /// Python of an installed library (`torch/`, `site-packages/`, the standard library).
    LibraryPython,
    /// Python outside any installed library: the user's own code.
    UserPython,
}

impl FrameClass {
    /// Whether a frame of this class can name the code that made an allocation.
    pub fn is_code(self) -> bool {
        self != FrameClass::Noise
    }
}

/// Function-name and file-name fragments of frames that are machinery, not user code (the
/// same lists PyTorch's memory_viz hides).
const NOISE_FUNCTIONS: [&str; 8] = [
    "unwind::unwind",
    "CapturedTraceback::gather",
    "gather_with_cpp",
    "_start",
    "__libc_start_main",
    "PyEval_",
    "PyObject_",
    "PyFunction_",
];
const NOISE_FILES: [&str; 10] = [
    "core/boxing",
    "/Register",
    "/Redispatch",
    "pythonrun.c",
    "Modules/main.c",
    "Objects/call.c",
    "Objects/methodobject.c",
    "pycore_ceval.h",
    "ceval.c",
    "cpython/abstract.h",
];
/// Path fragments of installed Python code.
const LIBRARY_PATHS: [&str; 4] = ["/torch/", "site-packages/", "dist-packages/", "/lib/python"];

/// Whether a frame is interpreter or dispatcher machinery.
pub fn is_noise(filename: &str, name: &str) -> bool {
    NOISE_FUNCTIONS.iter().any(|f| name.contains(f))
        || NOISE_FILES.iter().any(|f| filename.contains(f))
}

/// What the frame `filename:name` is.
pub fn classify(filename: &str, name: &str) -> FrameClass {
    if is_noise(filename, name) {
        return FrameClass::Noise;
    }
    let python = filename.ends_with(".py");
    let library = LIBRARY_PATHS.iter().any(|p| filename.contains(p));
    match (python, library) {
        (true, false) => FrameClass::UserPython,
        (true, true) => FrameClass::LibraryPython,
        _ => FrameClass::Native,
    }
}

/// A frame as text, with its noise flag.
pub fn frame_text(snapshot: &Snapshot, frame: &Frame) -> FrameText {
    let filename = snapshot.str(frame.filename).to_string();
    let name = snapshot.str(frame.name).to_string();
    FrameText {
        noise: is_noise(&filename, &name),
        filename,
        line: frame.line,
        name,
    }
}

/// A stack as text: the frame that best names who made it, and (when asked for) every frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StackText {
    /// The innermost frame of the most user-like class, as `file:line:name`.
    pub top_frame: Option<String>,
    /// Innermost first; empty unless asked for.
    pub frames: Vec<FrameText>,
    /// Frames in the stack, whether listed or not.
    pub frame_count: u32,
}

/// `stack` as text; `with_frames` lists every frame, otherwise only the top frame is found
/// (stopping at the first frame of the user's own Python).
pub fn stack_text(snapshot: &Snapshot, stack: StackId, with_frames: bool) -> StackText {
    let mut top: Option<(FrameClass, String)> = None;
    let mut frames = Vec::new();
    for frame in snapshot.stack_frames(stack) {
        let text = frame_text(snapshot, frame);
        let class = classify(&text.filename, &text.name);
        if class.is_code() && top.as_ref().is_none_or(|(best, _)| class > *best) {
            top = Some((
                class,
                format!("{}:{}:{}", text.filename, text.line, text.name),
            ));
        }
        if with_frames {
            frames.push(text);
        } else if top
            .as_ref()
            .is_some_and(|(class, _)| *class == FrameClass::UserPython)
        {
            break;
        }
    }
    StackText {
        top_frame: top.map(|(_, text)| text),
        frames,
        frame_count: snapshot.stacks.frames(stack).len() as u32,
    }
}

/// Finds stacks with a frame whose file or function name contains a text, case-insensitively.
/// Remembers the answer for every frame and stack it has looked at, so testing a million
/// allocations that share a few thousand stacks reads each frame once.
pub struct FrameSearch<'a> {
    snapshot: &'a Snapshot,
    /// Lower case.
    needle: String,
    stacks: FxHashMap<StackId, bool>,
    frames: FxHashMap<FrameId, bool>,
}

impl<'a> FrameSearch<'a> {
    /// A search for `needle` (compared in lower case).
    pub fn new(snapshot: &'a Snapshot, needle: &str) -> Self {
        FrameSearch {
            snapshot,
            needle: needle.to_lowercase(),
            stacks: FxHashMap::default(),
            frames: FxHashMap::default(),
        }
    }

    /// Whether a frame of `stack` matches.
    pub fn matches(&mut self, stack: StackId) -> bool {
        if let Some(&known) = self.stacks.get(&stack) {
            return known;
        }
        let snapshot = self.snapshot;
        let needle = &self.needle;
        let frames = &mut self.frames;
        let found = snapshot.stacks.frames(stack).iter().any(|&f| {
            *frames.entry(f).or_insert_with(|| {
                let frame = &snapshot.frames[f as usize];
                snapshot.str(frame.filename).to_lowercase().contains(needle)
                    || snapshot.str(frame.name).to_lowercase().contains(needle)
            })
        });
        self.stacks.insert(stack, found);
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpreter_frames_are_noise() {
        assert!(is_noise("Python/ceval.c", "_PyEval_EvalFrameDefault"));
        assert!(is_noise("??", "PyObject_Call"));
        assert!(!is_noise("/home/me/train.py", "forward"));
    }

    #[test]
    fn frames_are_classified_from_the_users_python_down_to_noise() {
        assert_eq!(
            classify("Python/ceval.c", "_PyEval_EvalFrameDefault"),
            FrameClass::Noise
        );
        assert_eq!(
            classify("CUDACachingAllocator.cpp", "malloc"),
            FrameClass::Native
        );
        assert_eq!(
            classify(
                "/usr/lib/python3/site-packages/torch/nn/modules/linear.py",
                "forward"
            ),
            FrameClass::LibraryPython
        );
        assert_eq!(
            classify("/home/me/train.py", "step"),
            FrameClass::UserPython
        );
        // The order the top frame is chosen by.
        assert!(FrameClass::UserPython > FrameClass::LibraryPython);
        assert!(FrameClass::LibraryPython > FrameClass::Native);
        assert!(!FrameClass::Noise.is_code());
    }

    #[test]
    fn the_top_frame_is_the_innermost_frame_of_the_most_user_like_class() {
        let bytes = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../static/example.pickle"
        ))
        .expect("the bundled example");
        let snapshot = crate::decode::decode_bytes(&bytes).expect("the example decodes");
        let mut checked = 0;
        for stack in 0..snapshot.stacks.len() as StackId {
            let full = stack_text(&snapshot, stack, true);
            let quick = stack_text(&snapshot, stack, false);
            assert_eq!(quick.top_frame, full.top_frame, "stack {stack}");
            assert!(quick.frames.is_empty());
            assert_eq!(full.frames.len() as u32, full.frame_count);
            // Brute force: the best class present, its innermost frame.
            let best = full
                .frames
                .iter()
                .map(|f| classify(&f.filename, &f.name))
                .filter(|c| c.is_code())
                .max();
            let expected = best.and_then(|best| {
                full.frames
                    .iter()
                    .find(|f| classify(&f.filename, &f.name) == best)
                    .map(|f| format!("{}:{}:{}", f.filename, f.line, f.name))
            });
            assert_eq!(full.top_frame, expected, "stack {stack}");
            checked += 1;
        }
        assert!(checked > 0, "the example has stacks");
    }

    #[test]
    fn frame_search_is_case_insensitive_over_files_and_functions() {
        let bytes = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../static/example.pickle"
        ))
        .expect("the bundled example");
        let snapshot = crate::decode::decode_bytes(&bytes).expect("the example decodes");
        let some_stack = (0..snapshot.stacks.len() as StackId)
            .find(|&s| !snapshot.stacks.frames(s).is_empty())
            .expect("a stack with frames");
        let frame = &snapshot.frames[snapshot.stacks.frames(some_stack)[0] as usize];
        let name = snapshot.str(frame.name).to_uppercase();
        let mut search = FrameSearch::new(&snapshot, &name);
        assert!(search.matches(some_stack));
        // Asked again, from the cache.
        assert!(search.matches(some_stack));
        let mut none = FrameSearch::new(&snapshot, "no frame is called this \u{1F600}");
        assert!(!none.matches(some_stack));
    }
}
