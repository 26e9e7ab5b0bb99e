//! Stack analysis: what each frame of a recorded stack is (the user's code, framework Python,
//! framework C++, or interpreter machinery), the frame that best names who made an
//! allocation (the innermost frame of the user's code; without one, the most telling
//! framework frame: the autograd node of a backward, the optimizer's step, the ATen op),
//! stacks as text, and finding stacks by frame text.
//!
//! Every view that shows or groups stacks asks here, so they agree on what "the user's code"
//! is; module paths and categories inferred from frames belong here too. Reads the model's
//! interned frames and stacks; computes no layout and chooses no words.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::keywords::KeywordSets;
use crate::model::Row;
use crate::model::{Frame, FrameId, Snapshot, StackId};

/// One frame of a stack, as text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrameText {
    pub filename: String,
    pub line: i64,
    pub name: String,
    /// Interpreter or dispatcher machinery that memory_viz hides ([`FrameClass::Noise`]).
    pub noise: bool,
    pub class: FrameClass,
    /// The graph node a frame of compiled code runs (`augment_with_fx_traces`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiled: Option<CompiledNode>,
    /// A frame of the model code a compiled node was traced from (its `fx_original_trace`),
    /// listed before the compiled frame.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub original: bool,
}

/// The FX graph node a frame of generated code runs, as text ([`crate::model::FxNode`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompiledNode {
    /// `addmm_1`.
    pub name: Option<String>,
    /// `call_function`.
    pub op: Option<String>,
    /// `aten.addmm.default`.
    pub target: Option<String>,
    /// The innermost frame of the original model code that is the user's (else its
    /// innermost), as `file:line:name`.
    pub from: Option<String>,
}

/// What a frame is, from the code least to most likely to be the user's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameClass {
    /// Interpreter, unwinder or dispatcher machinery that PyTorch's memory_viz hides.
    Noise,
    /// The rest of the interpreter, the C library and threads: `method_vectorcall`,
    /// `slot_tp_call`, `pymain_main`, `start_thread`…
    Interpreter,
    /// Framework C++: the allocator, ATen, the dispatcher, the autograd engine…
    Native,
    /// Python of an installed library (`torch/`, `site-packages/`, the standard library).
    LibraryPython,
    /// Python outside any installed library: the user's own code.
    UserPython,
}

impl FrameClass {
    /// Whether a frame of this class can name the code that made an allocation.
    pub fn is_code(self) -> bool {
        !matches!(self, FrameClass::Noise | FrameClass::Interpreter)
    }
}

/// Function-name and file-name fragments of frames that are machinery, not user code (the
/// same lists PyTorch's memory_viz hides).
const NOISE_FUNCTIONS: &[&str] = &[
    "unwind::unwind",
    "CapturedTraceback::gather",
    "gather_with_cpp",
    "_start",
    "__libc_start_main",
    "PyEval_",
    "PyObject_",
    "PyFunction_",
];
const NOISE_FILES: &[&str] = &[
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
const LIBRARY_PATHS: &[&str] = &["/torch/", "site-packages/", "dist-packages/", "/lib/python"];
/// Name prefixes of native frames of the interpreter, the C library and threads.
const INTERPRETER_PREFIXES: [&str; 9] = [
    "_Py",
    "Py",
    "py",
    "__libc",
    "pthread_",
    "__clone",
    "start_thread",
    "execute_native_thread_routine",
    "__xmknodat",
];
/// Name fragments of the interpreter's own native frames.
const INTERPRETER_FRAGMENTS: &[&str] = &[
    "vectorcall",
    "cfunction_call",
    "slot_tp_call",
    "run_eval_code_obj",
    "run_mod",
    "builtin_exec",
    "_dealloc",
];
/// Whole names of native entry points.
const INTERPRETER_NAMES: [&str; 3] = ["main", "clone", "_start"];

/// The keyword sets looked for in a frame's function name and in its file name.
static IN_NAME: KeywordSets = KeywordSets::new(&[NOISE_FUNCTIONS, INTERPRETER_FRAGMENTS]);
static IN_FILE: KeywordSets = KeywordSets::new(&[NOISE_FILES, LIBRARY_PATHS]);
const NOISE_FUNCTION: usize = 0;
const INTERPRETER_FRAGMENT: usize = 1;
const NOISE_FILE: usize = 0;
const LIBRARY_PATH: usize = 1;

/// Whether a frame is interpreter or dispatcher machinery.
pub fn is_noise(filename: &str, name: &str) -> bool {
    IN_NAME.find(name).has(NOISE_FUNCTION) || IN_FILE.find(filename).has(NOISE_FILE)
}

/// What the frame `filename:name` is.
pub fn classify(filename: &str, name: &str) -> FrameClass {
    let in_name = IN_NAME.find(name);
    let in_file = IN_FILE.find(filename);
    if in_name.has(NOISE_FUNCTION) || in_file.has(NOISE_FILE) {
        return FrameClass::Noise;
    }
    let python = filename.ends_with(".py");
    let library = in_file.has(LIBRARY_PATH);
    let interpreter = || {
        INTERPRETER_PREFIXES.iter().any(|p| name.starts_with(p))
            || in_name.has(INTERPRETER_FRAGMENT)
            || INTERPRETER_NAMES.contains(&name)
    };
    match (python, library) {
        (true, false) => FrameClass::UserPython,
        (true, true) => FrameClass::LibraryPython,
        _ if interpreter() => FrameClass::Interpreter,
        _ => FrameClass::Native,
    }
}

/// A frame as text, with its class.
pub fn frame_text(snapshot: &Snapshot, frame: &Frame) -> FrameText {
    let filename = snapshot.str(frame.filename).to_string();
    let name = snapshot.str(frame.name).to_string();
    let class = classify(&filename, &name);
    FrameText {
        noise: class == FrameClass::Noise,
        class,
        filename,
        line: frame.line,
        name,
        compiled: None,
        original: false,
    }
}

/// The frames of `stack` as the user reads them, innermost first, each with whether it is of
/// original model code: a frame of compiled code whose node was traced from the user's model
/// (`fx_original_trace`) has that code's frames listed just before it, so the model's line
/// names the allocation and groups it, not the generated file. Most snapshots have no
/// compiled frames, and their stacks read as recorded.
pub fn reading_frames(snapshot: &Snapshot, stack: StackId) -> Vec<(FrameId, bool)> {
    let recorded = snapshot.stacks.frames(stack);
    let mut out = Vec::with_capacity(recorded.len());
    for &f in recorded {
        if let Some(node) = snapshot.fx_node(f) {
            out.extend(
                snapshot
                    .stacks
                    .frames(node.original)
                    .iter()
                    .map(|&o| (o, true)),
            );
        }
        out.push((f, false));
    }
    out
}

/// The stack that tells who made an allocation: the forward code that created the autograd
/// node of a backward allocation (`forward_frames` of its `alloc`), else its own.
pub fn allocation_stack(trace: &crate::model::Trace, a: &super::Allocation) -> StackId {
    if a.alloc_row != super::NO_ROW {
        let forward = trace.forward_stack(a.alloc_row as usize);
        if forward != crate::model::NO_STACK {
            return forward;
        }
    }
    a.stack
}

/// The node of the innermost frame of compiled code of `stack`, as text, when it has one.
pub fn innermost_compiled_node(snapshot: &Snapshot, stack: StackId) -> Option<CompiledNode> {
    if snapshot.fx_nodes.is_empty() {
        return None;
    }
    snapshot
        .stacks
        .frames(stack)
        .iter()
        .find_map(|&f| compiled_node(snapshot, f))
}

/// One `annotate` row of an allocation, as views show it (decision 0028).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnnotationText {
    /// The `annotate` event.
    pub event: Row,
    /// Its `user_metadata`.
    pub metadata: Option<String>,
    pub time_us: Option<i64>,
    /// Where it was annotated: the frame that best names the annotation site.
    pub site: Option<String>,
}

/// The annotations of allocation `i` of `facts` (rows of `trace`), oldest first.
pub fn annotations_text(
    snapshot: &Snapshot,
    trace: &crate::model::Trace,
    facts: &super::DeviceFacts,
    i: u32,
) -> Vec<AnnotationText> {
    facts
        .annotations_of(i)
        .map(|row| {
            let r = row as usize;
            AnnotationText {
                event: Row::new(row),
                metadata: trace.user_metadata(r).map(|m| snapshot.str(m).to_string()),
                time_us: Some(trace.time_us[r]).filter(|&t| t != crate::model::NO_TIME),
                site: stack_text(snapshot, trace.stack[r], false).top_frame,
            }
        })
        .collect()
}

/// A frame of compiled code's node as text, with where in the original code it came from.
fn compiled_node(snapshot: &Snapshot, frame: FrameId) -> Option<CompiledNode> {
    let node = snapshot.fx_node(frame)?;
    let text = |id: Option<crate::model::StrId>| id.map(|id| snapshot.str(id).to_string());
    let originals: Vec<FrameText> = snapshot
        .stack_frames(node.original)
        .map(|f| frame_text(snapshot, f))
        .collect();
    let from = originals
        .iter()
        .find(|f| f.class == FrameClass::UserPython)
        .or(originals.first())
        .map(|f| format!("{}:{}:{}", f.filename, f.line, f.name));
    Some(CompiledNode {
        name: text(node.name),
        op: text(node.op),
        target: text(node.target),
        from,
    })
}

/// The framework frame that best says what made an allocation whose stack has no frame of
/// the user's code, as a short name: the autograd node running a backward (`BmmBackward0`,
/// `AccumulateGrad`), the optimizer step (`Adam.step`), framework Python (`file:line:name`),
/// or the outermost ATen op (`aten::einsum`). `None` when the stack holds only allocator and
/// interpreter frames.
pub fn telling_frame(frames: &[FrameText]) -> Option<String> {
    telling_frame_at(frames).map(|(_, name)| name)
}

/// [`telling_frame`], with the index of the frame it names.
pub fn telling_frame_at(frames: &[FrameText]) -> Option<(usize, String)> {
    let innermost = |name: &dyn Fn(&FrameText) -> Option<String>| {
        frames
            .iter()
            .enumerate()
            .find_map(|(i, f)| name(f).map(|n| (i, n)))
    };
    // Innermost first: the autograd node that ran the op, else the engine's own step
    // (reducing or accumulating a gradient).
    innermost(&|f| autograd_node(&f.name))
        .or_else(|| innermost(&|f| autograd_step(&f.name)))
        .or_else(|| optimizer_step(frames))
        .or_else(|| {
            innermost(&|f| {
                (f.class == FrameClass::LibraryPython)
                    .then(|| format!("{}:{}:{}", f.filename, f.line, f.name))
            })
        })
        .or_else(|| {
            frames
                .iter()
                .enumerate()
                .rev()
                .find_map(|(i, f)| aten_op(&f.name).map(|op| (i, format!("aten::{op}"))))
        })
}

/// `BmmBackward0` of `torch::autograd::generated::BmmBackward0::apply(…)`; `AccumulateGrad`
/// and the like of `torch::autograd::AccumulateGrad::apply(…)`.
fn autograd_node(name: &str) -> Option<String> {
    let rest = name.strip_prefix("torch::autograd::")?;
    let rest = rest.strip_prefix("generated::").unwrap_or(rest);
    let node = rest
        .split("::apply")
        .next()
        .filter(|_| rest.contains("::apply"))?;
    let generic = ["Node", "Engine", "GraphTask", "PyNode", "CppNode"];
    let plain = !node.is_empty()
        && node.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !generic.contains(&node);
    plain.then(|| node.to_string())
}

/// `autograd InputMetadata::reduce_grad` of the autograd engine's own work on gradients
/// (not its dispatch wrappers or its thread machinery).
fn autograd_step(name: &str) -> Option<String> {
    let rest = name.strip_prefix("torch::autograd::")?;
    let path = rest.split('(').next()?;
    let machinery = [
        "VariableType::",
        "Engine::",
        "python::",
        "generated::",
        "Node::",
    ];
    let plain = path.contains("::")
        && !machinery.iter().any(|m| path.starts_with(m))
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
    plain.then(|| format!("autograd {path}"))
}

/// `Adam.step` when the stack runs a `torch.optim` optimizer's step: the optimizer's class from
/// its file, the outermost of its functions.
fn optimizer_step(frames: &[FrameText]) -> Option<(usize, String)> {
    const OPTIMIZERS: [(&str, &str); 13] = [
        ("adam.py", "Adam"),
        ("adamw.py", "AdamW"),
        ("sgd.py", "SGD"),
        ("adagrad.py", "Adagrad"),
        ("adadelta.py", "Adadelta"),
        ("adamax.py", "Adamax"),
        ("asgd.py", "ASGD"),
        ("lbfgs.py", "LBFGS"),
        ("nadam.py", "NAdam"),
        ("radam.py", "RAdam"),
        ("rmsprop.py", "RMSprop"),
        ("rprop.py", "Rprop"),
        ("sparse_adam.py", "SparseAdam"),
    ];
    frames.iter().enumerate().rev().find_map(|(i, f)| {
        let file = f.filename.split("/torch/optim/").nth(1)?;
        let (_, class) = OPTIMIZERS.iter().find(|(name, _)| *name == file)?;
        Some((i, format!("{class}.{}", f.name)))
    })
}

/// `einsum` of `at::_ops::einsum::call(…)`.
fn aten_op(name: &str) -> Option<&str> {
    let op = name.strip_prefix("at::_ops::")?.split("::").next()?;
    (name.contains("::call(") && !op.is_empty()).then_some(op)
}

/// A stack as text: the frame that best names who made it, and (when asked for) every frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StackText {
    /// The innermost frame of the user's code as `file:line:name`, else the most telling
    /// framework frame ([`telling_frame`]).
    pub top_frame: Option<String>,
    /// Whether `top_frame` is the user's code.
    pub top_frame_is_user: bool,
    /// Index in `frames` of the frame `top_frame` names (when the frames were asked for).
    pub top_frame_index: Option<u32>,
    /// Innermost first; empty unless asked for.
    pub frames: Vec<FrameText>,
    /// Frames in the stack, whether listed or not.
    pub frame_count: u32,
}

/// `stack` as text; `with_frames` lists every frame, otherwise only the top frame is found
/// (stopping at the first frame of the user's code).
pub fn stack_text(snapshot: &Snapshot, stack: StackId, with_frames: bool) -> StackText {
    let mut frames = Vec::new();
    let mut user: Option<(usize, String)> = None;
    for (id, original) in reading_frames(snapshot, stack) {
        let mut text = frame_text(snapshot, &snapshot.frames[id as usize]);
        text.original = original;
        text.compiled = compiled_node(snapshot, id);
        if user.is_none() && text.class == FrameClass::UserPython {
            let name = format!("{}:{}:{}", text.filename, text.line, text.name);
            user = Some((frames.len(), name));
            if !with_frames {
                break;
            }
        }
        frames.push(text);
    }
    let top_frame_is_user = user.is_some();
    let top = user.or_else(|| telling_frame_at(&frames));
    if !with_frames {
        frames.clear();
    }
    StackText {
        top_frame_index: top.as_ref().filter(|_| with_frames).map(|(i, _)| *i as u32),
        top_frame: top.map(|(_, name)| name),
        top_frame_is_user,
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
        // The original model code of compiled frames, and their nodes, are searched too.
        let found = reading_frames(snapshot, stack).iter().any(|&(f, _)| {
            *frames.entry(f).or_insert_with(|| {
                let frame = &snapshot.frames[f as usize];
                let node = snapshot
                    .fx_node(f)
                    .into_iter()
                    .flat_map(|n| [n.name, n.target]);
                [frame.filename, frame.name]
                    .into_iter()
                    .chain(node.flatten())
                    .any(|s| snapshot.str(s).to_lowercase().contains(needle))
            })
        });
        self.stacks.insert(stack, found);
        found
    }

    /// Whether `text` (an annotation, a dtype) contains what is searched for.
    pub fn matches_text(&self, text: &str) -> bool {
        text.to_lowercase().contains(&self.needle)
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
        assert_eq!(classify("??", "slot_tp_call"), FrameClass::Interpreter);
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
        assert!(FrameClass::Native > FrameClass::Interpreter);
        assert!(!FrameClass::Noise.is_code());
        assert!(!FrameClass::Interpreter.is_code());
    }

    fn frame(filename: &str, name: &str) -> FrameText {
        let class = classify(filename, name);
        FrameText {
            filename: filename.into(),
            line: 1,
            name: name.into(),
            noise: class == FrameClass::Noise,
            class,
            compiled: None,
            original: false,
        }
    }

    #[test]
    fn interpreter_internals_are_not_framework_code() {
        for name in [
            "method_vectorcall.llvm.12275804309777372242",
            "slot_tp_call",
            "cfunction_call",
            "pymain_run_file",
            "Py_BytesMain",
            "_PyObject_Call_Prepend",
            "start_thread",
            "__libc_start_main",
            "main",
            "run_mod.llvm.9196888086361497952",
        ] {
            assert!(!classify("??", name).is_code(), "{name}");
        }
        for name in [
            "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)",
            "at::_ops::bmm::call(at::Tensor const&, at::Tensor const&)",
            "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
        ] {
            assert_eq!(classify("??", name), FrameClass::Native, "{name}");
        }
    }

    #[test]
    fn a_stack_without_user_code_is_named_by_its_most_telling_framework_frame() {
        // The autograd engine running a backward (from a real CS336 full step).
        let backward = [
            frame("CUDACachingAllocator.cpp", "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)"),
            frame("??", "at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)"),
            frame("??", "at::_ops::div_Scalar::call(at::Tensor const&, c10::Scalar const&)"),
            frame("??", "torch::autograd::generated::MeanBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)"),
            frame("", "torch::autograd::Node::operator()(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)"),
            frame("??", "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)"),
            frame("??", "start_thread"),
        ];
        assert_eq!(telling_frame(&backward).as_deref(), Some("MeanBackward0"));
        let accumulate = [frame(
            "??",
            "torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)",
        )];
        assert_eq!(
            telling_frame(&accumulate).as_deref(),
            Some("AccumulateGrad")
        );
        let generic = [frame("??", "torch::autograd::Node::apply(x)")];
        assert_eq!(telling_frame(&generic), None);
        // The engine reducing a broadcast gradient: no node, its own step.
        let reduce = [
            frame("??", "at::_ops::sum_dim_IntList::call(at::Tensor const&, c10::OptionalArrayRef<long>, bool, std::optional<c10::ScalarType>)"),
            frame("??", "torch::autograd::InputMetadata::reduce_grad(at::Tensor&) const"),
            frame("??", "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&)"),
        ];
        assert_eq!(
            telling_frame(&reduce).as_deref(),
            Some("autograd InputMetadata::reduce_grad")
        );
        // An optimizer step of torch.optim.
        let step = [
            frame("/x/site-packages/torch/optim/adam.py", "_multi_tensor_adam"),
            frame("/x/site-packages/torch/optim/adam.py", "adam"),
            frame("/x/site-packages/torch/optim/adam.py", "step"),
            frame("/x/site-packages/torch/optim/optimizer.py", "wrapper"),
        ];
        assert_eq!(telling_frame(&step).as_deref(), Some("Adam.step"));
        // Framework Python, else the outermost ATen op.
        let python = [frame("/x/site-packages/torch/functional.py", "einsum")];
        assert_eq!(
            telling_frame(&python).as_deref(),
            Some("/x/site-packages/torch/functional.py:1:einsum")
        );
        let aten = [
            frame(
                "??",
                "at::_ops::bmm::call(at::Tensor const&, at::Tensor const&)",
            ),
            frame(
                "??",
                "at::_ops::einsum::call(std::basic_string_view<char>, c10::ArrayRef<at::Tensor>)",
            ),
        ];
        assert_eq!(telling_frame(&aten).as_deref(), Some("aten::einsum"));
        let allocator = [frame(
            "CUDACachingAllocator.cpp",
            "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(x)",
        )];
        assert_eq!(telling_frame(&allocator), None);
    }

    #[test]
    fn the_top_frame_is_the_innermost_frame_of_the_users_code_or_the_telling_one() {
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
            assert_eq!(quick.top_frame_is_user, full.top_frame_is_user);
            assert!(quick.frames.is_empty());
            assert_eq!(full.frames.len() as u32, full.frame_count);
            // Brute force: the innermost frame of the user's code, else the telling one.
            let expected = full
                .frames
                .iter()
                .find(|f| f.class == FrameClass::UserPython)
                .map(|f| format!("{}:{}:{}", f.filename, f.line, f.name));
            assert_eq!(full.top_frame_is_user, expected.is_some());
            let expected = expected.or_else(|| telling_frame(&full.frames));
            assert_eq!(full.top_frame, expected, "stack {stack}");
            assert_eq!(quick.top_frame_index, None);
            if let Some(i) = full.top_frame_index {
                let named = &full.frames[i as usize];
                if full.top_frame_is_user {
                    assert_eq!(named.class, FrameClass::UserPython);
                }
            }
            assert_eq!(full.top_frame.is_some(), full.top_frame_index.is_some());
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
