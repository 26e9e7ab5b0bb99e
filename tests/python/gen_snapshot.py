#!/usr/bin/env python3
"""Generate synthetic, torch-shaped CUDA memory snapshots of any size.

The output has exactly the shape of ``torch.cuda.memory._snapshot()`` as written
by ``torch.cuda.memory._dump_snapshot()`` (a plain ``pickle.dump`` of a tree of
dict / list / tuple / str / int / float / bool), so it exercises a decoder the
way real files do:

* one dict per unique frame, shared by every traceback that contains it, and a
  fresh list per captured traceback (an ``alloc`` and its ``segment_alloc``, or a
  ``free_requested`` and its ``free_completed``, share the capture like in
  torch), so the pickle memo carries the structure (``MEMOIZE`` + ``BINGET``);
* a simulated caching allocator (small pool <= 1 MiB in 2 MiB segments, large
  pool in 20 MiB or 2 MiB-rounded segments, 512-byte block rounding, best-fit
  with splitting, coalescing of free neighbours, address reuse, ``empty_cache``);
* a training loop: parameters -> forward (activations grow layer by layer) ->
  backward (gradients appear, activations are released) -> optimizer step
  (AdamW state on the first step, temporaries every step) -> zero_grad, with the
  input batch living on a side stream and freed stream-ordered (a
  ``free_requested`` followed later by its ``free_completed``).

Like torch, a trace entry's ``size`` is the requested size of the allocation
(``block.requested_size``), while block ``size`` is the rounded size.

Only the standard library is used. Example::

    python3 tests/python/gen_snapshot.py --entries 1000000 --seed 1 -o /tmp/big.pickle

``--expect out.json`` writes the generator's ground truth (see ``expectations``).
"""

import argparse
import bisect
import gzip
import json
import os
import pickle
import random
import sys
import time
import zlib

KIB = 1024
MIB = 1024 * 1024

# CUDACachingAllocator constants.
MIN_BLOCK = 512            # kMinBlockSize: every block is a multiple of this
SMALL_SIZE = 1 * MIB       # kSmallSize: requests up to this go to the small pool
SMALL_BUFFER = 2 * MIB     # kSmallBuffer: size of a small-pool segment
MIN_LARGE_ALLOC = 10 * MIB  # kMinLargeAlloc: below this a large segment is 20 MiB
LARGE_BUFFER = 20 * MIB    # kLargeBuffer
ROUND_LARGE = 2 * MIB      # kRoundLarge

ALLOC, FREE_REQ, FREE_DONE, SEG_ALLOC, SEG_FREE = range(5)
ACTIONS = ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free")
STATE_NAMES = ("inactive", "active_allocated", "active_pending_free")

MAIN_STREAM = 0
SIDE_STREAM = 94_283_713_496_448  # a raw cudaStream_t, as torch records it

ERAS = ("2.1", "2.2", "2.3", "2.5", "2.7", "2.10")

T0_US = 1_760_000_000_000_000

# --------------------------------------------------------------------------
# Frames and stacks
# --------------------------------------------------------------------------

PROJ = "/home/user/work/gpt-train"
MODEL_PY = PROJ + "/model.py"
TRAIN_PY = PROJ + "/train.py"
TORCH = "/opt/conda/lib/python3.11/site-packages/torch"
MODULE_PY = TORCH + "/nn/modules/module.py"
CPY = "/usr/local/src/conda/python-3.11.9"

UNKNOWN = "??"


def _interp_noise():
    return [
        (UNKNOWN, 0, "_PyEval_EvalFrameDefault"),
        (CPY + "/Python/ceval.c", 5208, "_PyEval_EvalFrameDefault"),
        (UNKNOWN, 0, "_PyFunction_Vectorcall"),
        (CPY + "/Objects/call.c", 393, "_PyFunction_Vectorcall"),
        (UNKNOWN, 0, "_PyObject_FastCallDictTstate"),
        (UNKNOWN, 0, "_PyObject_Call_Prepend"),
        (UNKNOWN, 0, "slot_tp_call"),
        (UNKNOWN, 0, "_PyObject_MakeTpCall"),
        (UNKNOWN, 0, "PyObject_Call"),
        (UNKNOWN, 0, "method_vectorcall"),
        (CPY + "/Include/internal/pycore_call.h", 92, "_PyObject_VectorcallTstate"),
        (UNKNOWN, 0, "PyMethod_New"),
    ]


INTERP_NOISE = _interp_noise()

MAIN_OUTER = [
    # (filename, line, name, removable)
    (UNKNOWN, 0, "_PyEval_EvalFrameDefault", True),
    (UNKNOWN, 0, "PyEval_EvalCode", False),
    (UNKNOWN, 0, "run_eval_code_obj", True),
    (UNKNOWN, 0, "run_mod", True),
    (UNKNOWN, 0, "pyrun_file", True),
    (UNKNOWN, 0, "_PyRun_SimpleFileObject", True),
    (UNKNOWN, 0, "_PyRun_AnyFileObject", True),
    (UNKNOWN, 0, "pymain_run_file_obj", True),
    (UNKNOWN, 0, "pymain_run_file", True),
    (UNKNOWN, 0, "Py_RunMain", False),
    (UNKNOWN, 0, "pymain_main", True),
    (UNKNOWN, 0, "Py_BytesMain", True),
    ("./csu/../sysdeps/nptl/libc_start_call_main.h", 58, "__libc_start_call_main", True),
    ("./csu/../csu/libc-start.c", 392, "__libc_start_main_impl", False),
    (UNKNOWN, 0, "_start", False),
]

THREAD_OUTER = [
    (UNKNOWN, 0, "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)", False),
    (UNKNOWN, 0, "torch::autograd::Engine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)", False),
    ("python_engine.cpp", 0, "torch::autograd::python::PythonEngine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)", True),
    (UNKNOWN, 0, "execute_native_thread_routine", False),
    ("./nptl/pthread_create.c", 442, "start_thread", False),
    ("../sysdeps/unix/sysv/linux/x86_64/clone3.S", 81, "__clone3", False),
]

ALLOC_INNER = [
    (UNKNOWN, 0, "torch::unwind::unwind()", False),
    (UNKNOWN, 0, "torch::CapturedTraceback::gather(bool, bool, bool)", False),
    ("memory_snapshot.cpp", 0, "torch::cuda::(anonymous namespace)::gather_with_cpp()", False),
    ("CUDACachingAllocator.cpp", 0, "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)", False),
    ("", 0, "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed char, unsigned long, CUstream_st*)", False),
    ("", 0, "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)", False),
    (UNKNOWN, 0, "at::TensorBase at::detail::_empty_strided_generic<c10::ArrayRef<long> >(c10::ArrayRef<long>, c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, c10::ScalarType)", True),
    (UNKNOWN, 0, "at::detail::empty_strided_cuda(c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ScalarType, std::optional<c10::Device>)", False),
]

FREE_INNER = [
    (UNKNOWN, 0, "torch::unwind::unwind()", False),
    (UNKNOWN, 0, "torch::CapturedTraceback::gather(bool, bool, bool)", False),
    ("memory_snapshot.cpp", 0, "torch::cuda::(anonymous namespace)::gather_with_cpp()", False),
    ("CUDACachingAllocator.cpp", 0, "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::free(c10::cuda::CUDACachingAllocator::Block*)", False),
    ("", 0, "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::free(void*)", False),
    (UNKNOWN, 0, "c10::StorageImpl::~StorageImpl()", True),
    (UNKNOWN, 0, "c10::TensorImpl::~TensorImpl()", False),
]

PY_DEALLOC = [
    (UNKNOWN, 0, "c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::reset_()", True),
    ("python_variable.cpp", 0, "THPVariable_clear(THPVariable*)", False),
    ("python_variable.cpp", 0, "THPVariable_subclass_dealloc(_object*)", False),
]

EMPTY_CACHE_INNER = [
    (UNKNOWN, 0, "torch::unwind::unwind()", False),
    (UNKNOWN, 0, "torch::CapturedTraceback::gather(bool, bool, bool)", False),
    ("memory_snapshot.cpp", 0, "torch::cuda::(anonymous namespace)::gather_with_cpp()", False),
    ("", 0, "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::emptyCache()", False),
    (UNKNOWN, 0, "THCPModule_emptyCache(_object*, _object*)", False),
    (UNKNOWN, 0, "cfunction_vectorcall_NOARGS", True),
]


def dispatch_noise(op):
    return [
        (UNKNOWN, 0, "c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<c10::CompileTimeFunctionPointer<at::Tensor (at::Tensor const&), &at::(anonymous namespace)::wrapper_CUDA_%s>, at::Tensor, c10::guts::typelist::typelist<at::Tensor const&> >, at::Tensor (at::Tensor const&)>::call(c10::OperatorKernel*, c10::DispatchKeySet, at::Tensor const&)" % op),
        (UNKNOWN, 0, "at::_ops::%s::redispatch(c10::DispatchKeySet, at::Tensor const&)" % op),
        ("VariableType_2.cpp", 0, "torch::autograd::VariableType::(anonymous namespace)::%s(c10::DispatchKeySet, at::Tensor const&)" % op),
        (UNKNOWN, 0, "c10::Dispatcher::callBoxed(c10::OperatorHandle const&, std::vector<c10::IValue, std::allocator<c10::IValue> >*) const"),
        ("ADInplaceOrView_0.cpp", 0, "torch::ADInplaceOrView::(anonymous namespace)::%s(c10::DispatchKeySet, at::Tensor const&)" % op),
        (UNKNOWN, 0, "at::functionalization::%s(c10::DispatchKeySet, at::Tensor const&)" % op),
    ]


def op_frames(op, binding):
    """C++ frames between the allocator and the Python binding of one ATen op."""
    out = [
        ("RegisterCUDA.cpp", 0, "at::(anonymous namespace)::wrapper_CUDA_%s(at::Tensor const&)" % op, False),
        (UNKNOWN, 0, "c10::impl::wrap_kernel_functor_unboxed_<...wrapper_CUDA_%s...>::call(c10::OperatorKernel*, c10::DispatchKeySet, at::Tensor const&)" % op, True),
        (UNKNOWN, 0, "at::_ops::%s::redispatch(c10::DispatchKeySet, at::Tensor const&)" % op, True),
        ("VariableType_0.cpp", 0, "torch::autograd::VariableType::(anonymous namespace)::%s(c10::DispatchKeySet, at::Tensor const&)" % op, False),
        (UNKNOWN, 0, "at::_ops::%s::call(at::Tensor const&)" % op, False),
    ]
    if binding:
        out.append((binding[0], 0, binding[1], False))
        out.append((CPY + "/Objects/methodobject.c", 542, "cfunction_call", True))
        out.append((UNKNOWN, 0, "_PyObject_MakeTpCall", True))
    return out


class FrameTable:
    """One dict per unique (filename, line, name); fresh str objects per frame like torch."""

    def __init__(self):
        self.frames = {}

    def get(self, filename, line, name):
        key = (filename, line, name)
        fr = self.frames.get(key)
        if fr is None:
            # torch's symbolizer builds each frame's strings separately: copy them so
            # the pickle memoizes the same text several times, as in real files.
            fr = {"name": _fresh(name), "filename": _fresh(filename), "line": line}
            self.frames[key] = fr
        return fr


def _fresh(s):
    if len(s) < 2:
        return s
    return s[:1] + s[1:]


class Stacks:
    """Builds and caches one tuple of shared frame dicts per allocation/free site."""

    def __init__(self, seed, dmin, dmax, enabled=True):
        self.seed = seed
        self.dmin = dmin
        self.dmax = dmax
        self.enabled = enabled
        self.ft = FrameTable()
        self.cache = {}

    def _finish(self, key, parts, insert_lo, pool):
        rng = random.Random(zlib.crc32(repr(key).encode()) ^ (self.seed * 2654435761 & 0xFFFFFFFF))
        target = rng.randint(self.dmin, self.dmax)
        parts = list(parts)
        # Too deep: drop removable frames (interpreter glue, dispatcher frames) at random.
        while len(parts) > target:
            rem = [i for i, p in enumerate(parts) if p[3]]
            if not rem:
                break
            del parts[rng.choice(rem)]
        if len(parts) > target:
            parts = parts[:target]  # keep the innermost frames
        # Too shallow: add more glue frames inside the stack.
        while len(parts) < target:
            lo = min(insert_lo, len(parts))
            idx = rng.randint(lo, max(lo, len(parts) - 1))
            f = rng.choice(pool)
            parts.insert(idx, (f[0], f[1], f[2], True))
        get = self.ft.get
        return tuple(get(p[0], p[1], p[2]) for p in parts)

    def site(self, key, build):
        """Return the stack tuple for `key`; `build()` -> (parts, insert_lo, pool)."""
        if not self.enabled:
            return None
        st = self.cache.get(key)
        if st is None:
            parts, insert_lo, pool = build()
            st = self._finish(key, parts, insert_lo, pool)
            self.cache[key] = st
        return st


def py_chain(rng, pyframes, outer):
    """Python frames (innermost first) with interpreter glue after each one."""
    out = []
    for fr in pyframes:
        out.append((fr[0], fr[1], fr[2], False))
        out.append((UNKNOWN, 0, "_PyEval_EvalFrameDefault", True))
        for _ in range(rng.randint(0, 2)):
            g = rng.choice(INTERP_NOISE)
            out.append((g[0], g[1], g[2], True))
    out.extend(outer)
    return out


def module_call(frames, fn_frame):
    """fn_frame called through nn.Module.__call__."""
    frames.append(fn_frame)
    frames.append((MODULE_PY, 1750, "_call_impl"))
    frames.append((MODULE_PY, 1739, "_wrapped_call_impl"))


# --------------------------------------------------------------------------
# The workload's call sites
# --------------------------------------------------------------------------

FWD_OPS = {
    # op key: (aten op, python binding, innermost python frames builder)
    "ln": ("native_layer_norm", ("python_torch_functions_1.cpp", "torch::autograd::THPVariable_layer_norm(_object*, _object*, _object*)")),
    "linear": ("addmm", ("python_nn_functions.cpp", "torch::autograd::THPVariable_linear(_object*, _object*, _object*)")),
    "sdpa": ("_scaled_dot_product_efficient_attention", ("python_nn_functions.cpp", "torch::autograd::THPVariable_scaled_dot_product_attention(_object*, _object*, _object*)")),
    "gelu": ("gelu", ("python_nn_functions.cpp", "torch::autograd::THPVariable_gelu(_object*, _object*, _object*)")),
    "add": ("add", ("python_variable_methods.cpp", "torch::autograd::TypeError_to_add(_object*, _object*, _object*)")),
    "embedding": ("embedding", ("python_torch_functions_0.cpp", "torch::autograd::THPVariable_embedding(_object*, _object*, _object*)")),
    "log_softmax": ("_log_softmax", ("python_torch_functions_2.cpp", "torch::autograd::THPVariable_log_softmax(_object*, _object*, _object*)")),
    "nll_loss": ("nll_loss_forward", ("python_nn_functions.cpp", "torch::autograd::THPVariable_nll_loss_nd(_object*, _object*, _object*)")),
    "mm": ("mm", ("python_nn_functions.cpp", "torch::autograd::THPVariable_linear(_object*, _object*, _object*)")),
    "to": ("_to_copy", ("python_variable_methods.cpp", "torch::autograd::THPVariable_to(_object*, _object*, _object*)")),
    "zeros_like": ("zeros_like", ("python_torch_functions_2.cpp", "torch::autograd::THPVariable_zeros_like(_object*, _object*, _object*)")),
    "foreach_sqrt": ("_foreach_sqrt", ("python_torch_functions_0.cpp", "torch::autograd::THPVariable__foreach_sqrt(_object*, _object*, _object*)")),
    "foreach_div": ("_foreach_div", ("python_torch_functions_0.cpp", "torch::autograd::THPVariable__foreach_div(_object*, _object*, _object*)")),
    "vector_norm": ("linalg_vector_norm", ("python_linalg_functions.cpp", "torch::autograd::THPVariable_linalg_vector_norm(_object*, _object*, _object*)")),
    "stack": ("stack", ("python_torch_functions_2.cpp", "torch::autograd::THPVariable_stack(_object*, _object*, _object*)")),
}

BWD_NODES = {
    "ln": ("NativeLayerNormBackward0", "native_layer_norm_backward"),
    "linear": ("AddmmBackward0", "mm"),
    "sdpa": ("ScaledDotProductEfficientAttentionBackward0", "_efficient_attention_backward"),
    "gelu": ("GeluBackward0", "gelu_backward"),
    "add": ("AddBackward0", "add"),
    "embedding": ("EmbeddingBackward0", "embedding_dense_backward"),
    "log_softmax": ("LogSoftmaxBackward0", "_log_softmax_backward_data"),
    "nll_loss": ("NllLossBackward0", "nll_loss_backward"),
    "mm": ("MmBackward0", "mm"),
    "accumulate": ("AccumulateGrad", "clone"),
}

# Innermost Python frames of a forward op inside a module.
PY_OP = {
    "ln": [(TORCH + "/nn/functional.py", 2910, "layer_norm"), (TORCH + "/nn/modules/normalization.py", 217, "forward")],
    "linear": [(TORCH + "/nn/modules/linear.py", 125, "forward")],
    "embedding": [(TORCH + "/nn/functional.py", 2551, "embedding"), (TORCH + "/nn/modules/sparse.py", 190, "forward")],
}


def cached_site(fn):
    """Memoize a Sites method on its (positional) arguments: sites are hit millions of times."""
    name = fn.__name__

    def wrapper(self, *args):
        k = (name,) + args
        st = self.memo.get(k, _MISSING)
        if st is _MISSING:
            st = self.memo[k] = fn(self, *args)
        return st

    wrapper.__name__ = name
    wrapper.__doc__ = fn.__doc__
    return wrapper


_MISSING = object()


class Sites:
    def __init__(self, stacks, seed):
        self.st = stacks
        self.seed = seed
        self.memo = {}

    def _rng(self, key):
        return random.Random(zlib.crc32(("py" + repr(key)).encode()) ^ self.seed)

    # -- forward / eval ----------------------------------------------------
    def _fwd_python(self, layer, part, op, line, train):
        """Python frames (innermost first) of an op in layer `layer`'s `part`."""
        fr = []
        leaf_module = op in PY_OP
        if leaf_module:
            # the op runs inside a leaf module (Linear, LayerNorm): its frames + __call__
            inner = PY_OP[op]
            fr.extend(inner[:-1])
            module_call(fr, inner[-1])
        if layer is None:
            # head / embedding code in Transformer.forward
            fr.append((MODEL_PY, line, "forward"))
        else:
            # CausalSelfAttention / MLP / Block code, frames named by module path
            if part in ("attn", "mlp"):
                module_call(fr, (MODEL_PY, line, "layers.%d.%s.forward" % (layer, part)))
                block_line = 150 if part == "attn" else 151
            else:
                block_line = line
            module_call(fr, (MODEL_PY, block_line, "layers.%d.forward" % layer))
            fr.append((MODEL_PY, 201, "forward"))
        fr.append((MODULE_PY, 1750, "_call_impl"))
        fr.append((MODULE_PY, 1739, "_wrapped_call_impl"))
        if train:
            fr.append((TRAIN_PY, 88, "train_step"))
        else:
            fr.append((TRAIN_PY, 121, "evaluate"))
            fr.append((TORCH + "/utils/_contextlib.py", 116, "decorate_context"))
        fr.append((TRAIN_PY, 163, "main"))
        fr.append((TRAIN_PY, 190, "<module>"))
        return fr

    @cached_site
    def fwd_alloc(self, layer, part, op, line, train=True):
        key = ("fa", layer, part, op, line, train)

        def build():
            rng = self._rng(key)
            aten, binding = FWD_OPS[op]
            parts = list(ALLOC_INNER) + op_frames(aten, binding)
            lo = len(parts)
            parts += py_chain(rng, self._fwd_python(layer, part, op, line, train), MAIN_OUTER)
            return parts, lo, INTERP_NOISE

        return self.st.site(key, build)

    @cached_site
    def fwd_free(self, layer, part, line, train=True):
        key = ("ff", layer, part, line, train)

        def build():
            rng = self._rng(key)
            parts = list(FREE_INNER) + list(PY_DEALLOC)
            lo = len(parts)
            parts += py_chain(rng, self._fwd_python(layer, part, "free", line, train), MAIN_OUTER)
            return parts, lo, INTERP_NOISE

        return self.st.site(key, build)

    # -- backward (autograd device thread: C++ only) ------------------------
    @cached_site
    def bwd_alloc(self, layer, part, op, what):
        key = ("ba", layer, part, op, what)

        def build():
            node, aten = BWD_NODES[op]
            parts = list(ALLOC_INNER) + op_frames(aten, None)
            lo = len(parts)
            parts += [
                (UNKNOWN, 0, "torch::autograd::generated::details::%s_%s(at::Tensor const&, at::Tensor const&)" % (aten, what), True),
                ("Functions.cpp", 0, "torch::autograd::generated::%s::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)" % node, False),
                (UNKNOWN, 0, "torch::autograd::Node::operator()(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", False),
                (UNKNOWN, 0, "torch::autograd::call_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&)", True),
                (UNKNOWN, 0, "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)", False),
            ]
            parts += THREAD_OUTER
            if layer is not None:
                # which module the node belongs to (as a viewer with forward_frames would show)
                parts.insert(lo, (MODEL_PY, 0, "layers.%d.%s (backward)" % (layer, part), False))
            return parts, lo, dispatch_noise(aten)

        return self.st.site(key, build)

    @cached_site
    def bwd_free(self, layer, part, op, what):
        key = ("bf", layer, part, op, what)

        def build():
            node, aten = BWD_NODES[op]
            parts = list(FREE_INNER)
            lo = len(parts)
            if what == "saved":
                parts += [
                    (UNKNOWN, 0, "torch::autograd::SavedVariable::reset_data()", False),
                    (UNKNOWN, 0, "torch::autograd::generated::%s::release_variables()" % node, False),
                ]
            else:
                parts += [
                    (UNKNOWN, 0, "std::vector<at::Tensor, std::allocator<at::Tensor> >::~vector()", True),
                    (UNKNOWN, 0, "torch::autograd::InputBuffer::~InputBuffer()", False),
                ]
            parts += [
                (UNKNOWN, 0, "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)", False),
            ]
            parts += THREAD_OUTER
            if layer is not None:
                parts.insert(lo, (MODEL_PY, 0, "layers.%d.%s (backward)" % (layer, part), False))
            return parts, lo, dispatch_noise(aten)

        return self.st.site(key, build)

    # -- main-thread Python sites (setup, data, optimizer, zero_grad, loss) --
    def py_site(self, kind, op, pyframes, free=False):
        key = ("py", kind, op, free)

        def build():
            rng = self._rng(key)
            if free:
                parts = list(FREE_INNER) + list(PY_DEALLOC)
            else:
                aten, binding = FWD_OPS[op]
                parts = list(ALLOC_INNER) + op_frames(aten, binding)
            lo = len(parts)
            parts += py_chain(rng, pyframes, MAIN_OUTER)
            return parts, lo, INTERP_NOISE

        return self.st.site(key, build)

    @cached_site
    def setup_param(self, depth):
        fr = [(MODULE_PY, 1341, "convert")]
        for _ in range(depth):
            fr.append((MODULE_PY, 942, "_apply"))
        fr += [(MODULE_PY, 1355, "to"), (TRAIN_PY, 52, "build_model"), (TRAIN_PY, 140, "main"), (TRAIN_PY, 190, "<module>")]
        return self.py_site("setup%d" % depth, "to", fr)

    @cached_site
    def data(self, name):
        fr = [(TRAIN_PY, 71 if name == "input_ids" else 72, "get_batch"), (TRAIN_PY, 150, "main"), (TRAIN_PY, 190, "<module>")]
        return self.py_site("data_" + name, "to", fr)

    @cached_site
    def data_free(self):
        fr = [(TRAIN_PY, 171, "main"), (TRAIN_PY, 190, "<module>")]
        return self.py_site("data_free", None, fr, free=True)

    @cached_site
    def backward_call_free(self):
        fr = [(TORCH + "/autograd/graph.py", 823, "_engine_run_backward"), (TORCH + "/autograd/__init__.py", 347, "backward"),
              (TORCH + "/_tensor.py", 626, "backward"), (TRAIN_PY, 93, "train_step"), (TRAIN_PY, 163, "main"), (TRAIN_PY, 190, "<module>")]
        return self.py_site("loss_free", None, fr, free=True)

    def _opt_frames(self, fn, line):
        return [(TORCH + "/optim/adamw.py", line, fn), (TORCH + "/optim/adamw.py", 767, "adamw"),
                (TORCH + "/optim/adamw.py", 227, "step"), (TORCH + "/optim/optimizer.py", 79, "_use_grad"),
                (TORCH + "/optim/optimizer.py", 487, "wrapper"), (TRAIN_PY, 97, "train_step"),
                (TRAIN_PY, 163, "main"), (TRAIN_PY, 190, "<module>")]

    @cached_site
    def opt_state(self, which):
        fr = [(TORCH + "/optim/adamw.py", 170 if which == "exp_avg" else 173, "_init_group")] + self._opt_frames("step", 210)[2:]
        return self.py_site("opt_" + which, "zeros_like", fr)

    @cached_site
    def opt_tmp(self, op, line):
        return self.py_site("opt_tmp_%s_%d" % (op, line), op, self._opt_frames("_multi_tensor_adamw", line))

    @cached_site
    def opt_tmp_free(self, line):
        return self.py_site("opt_tmp_free_%d" % line, None, self._opt_frames("_multi_tensor_adamw", line), free=True)

    @cached_site
    def clip(self, op, line, free=False):
        fr = [(TORCH + "/nn/utils/clip_grad.py", line, "clip_grad_norm_"), (TORCH + "/nn/utils/clip_grad.py", 38, "_no_grad_wrapper"),
              (TRAIN_PY, 95, "train_step"), (TRAIN_PY, 163, "main"), (TRAIN_PY, 190, "<module>")]
        return self.py_site("clip_%s_%d" % (op, line), op, fr, free=free)

    @cached_site
    def zero_grad(self):
        fr = [(TORCH + "/optim/optimizer.py", 981, "zero_grad"), (TORCH + "/_compile.py", 32, "inner"),
              (TRAIN_PY, 99, "train_step"), (TRAIN_PY, 163, "main"), (TRAIN_PY, 190, "<module>")]
        return self.py_site("zero_grad", None, fr, free=True)

    @cached_site
    def empty_cache(self):
        key = ("empty_cache",)

        def build():
            rng = self._rng(key)
            parts = list(EMPTY_CACHE_INNER)
            lo = len(parts)
            parts += py_chain(rng, [(TORCH + "/cuda/memory.py", 222, "empty_cache"), (TRAIN_PY, 178, "main"), (TRAIN_PY, 190, "<module>")], MAIN_OUTER)
            return parts, lo, INTERP_NOISE

        return self.st.site(key, build)


# --------------------------------------------------------------------------
# The caching allocator
# --------------------------------------------------------------------------


class Done(Exception):
    pass


def segment_size(size):
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return (size + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE


# block = [addr, size, requested_size, state(0/1/2), seg, frames, site]
# seg   = [addr, total_size, stream, is_small, frames, site]
# trace entry tuple = (action, addr, size, stream, time_us, frames, block_size, site)
# `frames` is the capture (a fresh list of the site's shared frame dicts) and
# `site` the stack tuple it was made from (used for the expectations).


class Device:
    def __init__(self, dev, seed, target, sites, frames_on):
        self.dev = dev
        self.rng = random.Random(seed * 7919 + dev)
        self.target = target
        self.sites = sites
        self.frames_on = frames_on
        self.trace = []
        self.blocks = {}
        self.free_start = {}
        self.free_end = {}
        self.free_idx = {}
        self.segs = {}
        self.next_va = 0x7F2A00000000 - dev * 0x0400_0000_0000
        self.free_va = []
        self.pending = []
        self.annotations = []
        r = self.rng
        self.t = T0_US + seed * 1_000_003 + dev * 17
        self._dt = [r.choice((0, 0, 0, 1, 1, 2, 3, 4, 5, 7, 9, 12, 20, 35, 60)) for _ in range(4096)]
        self._k = 0

    # -- time ------------------------------------------------------------
    def tick(self):
        self._k = k = (self._k + 1) & 4095
        self.t += self._dt[k]

    def gap(self, lo, hi):
        self.t += self.rng.randint(lo, hi)

    def annotate(self, name, stage):
        self.tick()
        self.annotations.append((self.t, name, stage))

    # -- helpers ---------------------------------------------------------
    def _poll(self):
        pend = self.pending
        if pend:
            n = len(self.trace)
            keep = []
            for item in pend:
                if item[0] <= n:
                    self.tick()
                    self._complete(item[1], item[2], item[3])
                else:
                    keep.append(item)
            self.pending = keep
        if len(self.trace) >= self.target:
            raise Done

    def _va_alloc(self, size):
        fv = self.free_va
        for i, (a, s) in enumerate(fv):
            if s >= size:
                if s == size:
                    del fv[i]
                else:
                    fv[i] = (a + size, s - size)
                return a
        a = self.next_va
        self.next_va += size
        return a

    def _va_free(self, addr, size):
        fv = self.free_va
        i = bisect.bisect_left(fv, (addr, 0))
        fv.insert(i, (addr, size))
        # coalesce with neighbours
        if i + 1 < len(fv) and fv[i][0] + fv[i][1] == fv[i + 1][0]:
            fv[i] = (fv[i][0], fv[i][1] + fv[i + 1][1])
            del fv[i + 1]
        if i > 0 and fv[i - 1][0] + fv[i - 1][1] == fv[i][0]:
            fv[i - 1] = (fv[i - 1][0], fv[i - 1][1] + fv[i][1])
            del fv[i]

    def _free_insert(self, b):
        seg = b[4]
        key = (seg[2], seg[3])
        lst = self.free_idx.get(key)
        if lst is None:
            lst = self.free_idx[key] = []
        bisect.insort(lst, (b[1], b[0]))
        self.free_start[b[0]] = b
        self.free_end[b[0] + b[1]] = b

    def _free_remove(self, b):
        seg = b[4]
        lst = self.free_idx[(seg[2], seg[3])]
        i = bisect.bisect_left(lst, (b[1], b[0]))
        del lst[i]
        del self.free_start[b[0]]
        del self.free_end[b[0] + b[1]]

    # -- allocator operations -----------------------------------------------
    def alloc(self, req, site, stream=MAIN_STREAM):
        self._poll()
        self.tick()
        size = MIN_BLOCK if req < MIN_BLOCK else (req + MIN_BLOCK - 1) & ~(MIN_BLOCK - 1)
        small = size <= SMALL_SIZE
        key = (stream, small)
        lst = self.free_idx.get(key)
        if lst is None:
            lst = self.free_idx[key] = []
        fl = list(site) if site is not None else None
        i = bisect.bisect_left(lst, (size, 0))
        if i < len(lst):
            bsize, baddr = lst.pop(i)
            blk = self.blocks[baddr]
            del self.free_start[baddr]
            del self.free_end[baddr + bsize]
        else:
            ssize = segment_size(size)
            addr = self._va_alloc(ssize)
            seg = [addr, ssize, stream, small, fl, site]
            self.segs[addr] = seg
            self.trace.append((SEG_ALLOC, addr, ssize, stream, self.t, fl, ssize, site))
            blk = [addr, ssize, 0, 0, seg, None, None]
            self.blocks[addr] = blk
        rem = blk[1] - size
        if (rem >= MIN_BLOCK) if small else (rem > SMALL_SIZE):
            raddr = blk[0] + size
            rest = [raddr, rem, 0, 0, blk[4], None, None]
            self.blocks[raddr] = rest
            self._free_insert(rest)
            blk[1] = size
        blk[2] = req
        blk[3] = 1
        blk[5] = fl
        blk[6] = site
        self.trace.append((ALLOC, blk[0], req, stream, self.t, fl, blk[1], site))
        return blk

    def free(self, blk, site, defer=0):
        self._poll()
        self.tick()
        fl = list(site) if site is not None else None
        self.trace.append((FREE_REQ, blk[0], blk[2], blk[4][2], self.t, fl, blk[1], site))
        if defer:
            blk[3] = 2
            self.pending.append((len(self.trace) + defer, blk, fl, site))
        else:
            self._complete(blk, fl, site)

    def _complete(self, blk, fl, site):
        seg = blk[4]
        self.trace.append((FREE_DONE, blk[0], blk[2], seg[2], self.t, fl, blk[1], site))
        blk[3] = 0
        blk[5] = blk[6] = None
        blocks = self.blocks
        end = blk[0] + blk[1]
        nxt = self.free_start.get(end)
        if nxt is not None and nxt[4] is seg:
            self._free_remove(nxt)
            del blocks[end]
            blk[1] += nxt[1]
        prv = self.free_end.get(blk[0])
        if prv is not None and prv[4] is seg:
            # like torch's try_merge_blocks: the freed block absorbs its neighbour
            self._free_remove(prv)
            del blocks[blk[0]]
            blk[0] = prv[0]
            blk[1] += prv[1]
            blocks[blk[0]] = blk
        self._free_insert(blk)

    def empty_cache(self, site):
        self._poll()
        fl = None
        for seg in sorted(self.segs.values(), key=lambda s: (s[2], s[1], s[0])):
            b = self.blocks.get(seg[0])
            if b is not None and b[3] == 0 and b[1] == seg[1]:
                if fl is None:
                    fl = list(site) if site is not None else None
                self._free_remove(b)
                del self.blocks[seg[0]]
                del self.segs[seg[0]]
                self._va_free(seg[0], seg[1])
                self.tick()
                self.trace.append((SEG_FREE, seg[0], seg[1], seg[2], self.t, fl, seg[1], site))


# --------------------------------------------------------------------------
# The training-loop workload
# --------------------------------------------------------------------------


class Model:
    def __init__(self, seed):
        r = random.Random(seed * 31 + 5)
        self.layers = r.choice((6, 8, 12))
        self.d = r.choice((512, 768, 1024))
        self.heads = self.d // 64
        self.batch = r.choice((4, 8))
        smax = r.choice((256, 512))
        self.seqs = (smax, smax, smax, smax, smax // 2, smax - 64 * r.randint(1, 3))
        self.vocab = 50304
        self.ctx = 1024
        self.empty_cache_every = r.randint(25, 60)
        self.eval_every = r.randint(15, 40)
        d = self.d
        f = 4  # fp32
        # (name, bytes, layer, part)
        ps = [("wte", self.vocab * d * f, None, "wte"), ("wpe", self.ctx * d * f, None, "wpe")]
        for i in range(self.layers):
            ps += [
                ("ln_1.weight", d * f, i, "ln_1"), ("ln_1.bias", d * f, i, "ln_1"),
                ("attn.c_attn.weight", 3 * d * d * f, i, "attn"), ("attn.c_attn.bias", 3 * d * f, i, "attn"),
                ("attn.c_proj.weight", d * d * f, i, "attn"), ("attn.c_proj.bias", d * f, i, "attn"),
                ("ln_2.weight", d * f, i, "ln_2"), ("ln_2.bias", d * f, i, "ln_2"),
                ("mlp.c_fc.weight", 4 * d * d * f, i, "mlp"), ("mlp.c_fc.bias", 4 * d * f, i, "mlp"),
                ("mlp.c_proj.weight", 4 * d * d * f, i, "mlp"), ("mlp.c_proj.bias", d * f, i, "mlp"),
            ]
        ps += [("ln_f.weight", d * f, None, "ln_f"), ("ln_f.bias", d * f, None, "ln_f")]
        self.params = ps


class Workload:
    def __init__(self, dev, model, sites):
        self.D = dev
        self.m = model
        self.s = sites

    def run(self):
        try:
            self._program()
        except Done:
            pass

    def _program(self):
        D, m, s = self.D, self.m, self.s
        r = D.rng
        # model.to("cuda")
        params = []
        for name, nbytes, layer, part in m.params:
            depth = 1 if layer is None else 3
            params.append(D.alloc(nbytes, s.setup_param(depth)))
        self.params = params
        # parameter index ranges per (layer, part) to attach gradients in backward
        self.pidx = {}
        for i, (name, nbytes, layer, part) in enumerate(m.params):
            self.pidx.setdefault((layer, part), []).append(i)
        grads = [None] * len(params)
        opt_state = None
        step = 0
        while True:
            step += 1
            D.gap(200, 3000)
            seq = r.choice(m.seqs)
            T = m.batch * seq
            inp = D.alloc(T * 8, s.data("input_ids"), stream=SIDE_STREAM)
            lab = D.alloc(T * 8, s.data("labels"), stream=SIDE_STREAM)
            D.annotate("## forward ##", "START")
            saved, loss = self._forward(T, seq, True)
            D.annotate("## forward ##", "END")
            D.annotate("## backward ##", "START")
            self._backward(saved, loss, grads, T, seq)
            D.annotate("## backward ##", "END")
            # the batch was used on the compute stream: its free waits for that stream
            D.free(inp, s.data_free(), defer=r.randint(2, 40))
            D.free(lab, s.data_free(), defer=r.randint(2, 40))
            D.annotate("## optimizer ##", "START")
            # clip_grad_norm_: per-parameter norms, stacked, total norm
            norms = [D.alloc(4, s.clip("vector_norm", 90)) for _ in range(min(len(params), 8))]
            total = D.alloc(4 * len(norms), s.clip("stack", 92))
            for n in norms:
                D.free(n, s.clip(None, 92, True))
            coef = D.alloc(4, s.clip("foreach_div", 94))
            D.free(total, s.clip(None, 96, True))
            D.free(coef, s.clip(None, 96, True))
            D.annotate("Optimizer.step#AdamW.step", "START")
            if opt_state is None:
                opt_state = []
                for p in params:
                    opt_state.append((D.alloc(p[2], s.opt_state("exp_avg")), D.alloc(p[2], s.opt_state("exp_avg_sq"))))
            # _multi_tensor_adamw: foreach temporaries, one per parameter
            tmp = [D.alloc(p[2], s.opt_tmp("foreach_sqrt", 612)) for p in params]
            tmp2 = [D.alloc(p[2], s.opt_tmp("foreach_div", 615)) for p in params]
            for t in tmp:
                D.free(t, s.opt_tmp_free(615))
            for t in tmp2:
                D.free(t, s.opt_tmp_free(620))
            D.annotate("Optimizer.step#AdamW.step", "END")
            D.annotate("## optimizer ##", "END")
            D.annotate("Optimizer.zero_grad#AdamW.zero_grad", "START")
            for i, g in enumerate(grads):
                if g is not None:
                    D.free(g, s.zero_grad())
                    grads[i] = None
            D.annotate("Optimizer.zero_grad#AdamW.zero_grad", "END")
            if step % m.eval_every == 0:
                self._evaluate(r.choice(m.seqs))
            if step % m.empty_cache_every == 0:
                D.empty_cache(s.empty_cache())

    # forward of one transformer layer; returns the output and the tensors saved for backward
    def _layer(self, i, x, T, seq, train):
        D, s, m = self.D, self.s, self.m
        d = m.d
        f = 4
        A = D.alloc
        fa = s.fwd_alloc
        sv = []

        def tmpfree(b, part, line):
            D.free(b, s.fwd_free(i, part, line, train))

        ln1 = A(T * d * f, fa(i, "ln_1", "ln", 150, train))
        mean1 = A(T * f, fa(i, "ln_1", "ln", 150, train))
        rstd1 = A(T * f, fa(i, "ln_1", "ln", 150, train))
        qkv = A(T * 3 * d * f, fa(i, "attn", "linear", 92, train))
        att = A(T * d * f, fa(i, "attn", "sdpa", 101, train))
        lse = A(m.batch * m.heads * ((seq + 31) // 32 * 32) * f, fa(i, "attn", "sdpa", 101, train))
        proj = A(T * d * f, fa(i, "attn", "linear", 104, train))
        x2 = A(T * d * f, fa(i, "block", "add", 150, train))
        tmpfree(proj, "block", 150)
        ln2 = A(T * d * f, fa(i, "ln_2", "ln", 151, train))
        mean2 = A(T * f, fa(i, "ln_2", "ln", 151, train))
        rstd2 = A(T * f, fa(i, "ln_2", "ln", 151, train))
        fc = A(T * 4 * d * f, fa(i, "mlp", "linear", 118, train))
        act = A(T * 4 * d * f, fa(i, "mlp", "gelu", 119, train))
        out = A(T * d * f, fa(i, "mlp", "linear", 120, train))
        x3 = A(T * d * f, fa(i, "block", "add", 151, train))
        tmpfree(out, "block", 151)
        if train:
            # saved for backward, in the order autograd releases them
            sv = [("mlp", "gelu", act), ("mlp", "linear", fc), ("ln_2", "ln", ln2), ("ln_2", "ln", rstd2),
                  ("ln_2", "ln", mean2), ("ln_2", "add", x2), ("attn", "linear", att), ("attn", "sdpa", lse),
                  ("attn", "sdpa", qkv), ("ln_1", "ln", ln1), ("ln_1", "ln", rstd1), ("ln_1", "ln", mean1)]
        else:
            for b, part, line in ((act, "mlp", 120), (fc, "mlp", 120), (ln2, "block", 151), (rstd2, "block", 151),
                                  (mean2, "block", 151), (x2, "block", 151), (att, "attn", 104), (lse, "attn", 104),
                                  (qkv, "attn", 104), (ln1, "block", 150), (rstd1, "block", 150), (mean1, "block", 150)):
                tmpfree(b, part, line)
        return x3, sv

    def _forward(self, T, seq, train):
        D, s, m = self.D, self.s, self.m
        d, f = m.d, 4
        tok = D.alloc(T * d * f, s.fwd_alloc(None, "wte", "embedding", 196, train))
        pos = D.alloc(seq * d * f, s.fwd_alloc(None, "wpe", "embedding", 197, train))
        x = D.alloc(T * d * f, s.fwd_alloc(None, "drop", "add", 198, train))
        D.free(tok, s.fwd_free(None, "drop", 198, train))
        D.free(pos, s.fwd_free(None, "drop", 198, train))
        saved = []
        for i in range(m.layers):
            y, sv = self._layer(i, x, T, seq, train)
            if train:
                sv.append(("ln_1", "add", x))  # the layer input is saved by ln_1
                saved.append(sv)
            else:
                D.free(x, s.fwd_free(i, "block", 151, train))
            x = y
        lnf = D.alloc(T * d * f, s.fwd_alloc(None, "ln_f", "ln", 203, train))
        mf = D.alloc(T * f, s.fwd_alloc(None, "ln_f", "ln", 203, train))
        rf = D.alloc(T * f, s.fwd_alloc(None, "ln_f", "ln", 203, train))
        logits = D.alloc(T * m.vocab * f, s.fwd_alloc(None, "lm_head", "mm", 204, train))
        if not train:
            for b in (x, lnf, mf, rf):
                D.free(b, s.fwd_free(None, "lm_head", 205, train))
            ls = D.alloc(T * m.vocab * f, s.fwd_alloc(None, "loss", "log_softmax", 206, train))
            D.free(logits, s.fwd_free(None, "loss", 206, train))
            loss = D.alloc(4, s.fwd_alloc(None, "loss", "nll_loss", 206, train))
            D.free(ls, s.fwd_free(None, "loss", 207, train))
            D.free(loss, s.fwd_free(None, "loss", 207, train))
            return None, None
        ls = D.alloc(T * m.vocab * f, s.fwd_alloc(None, "loss", "log_softmax", 206, train))
        D.free(logits, s.fwd_free(None, "loss", 206, train))
        loss = D.alloc(4, s.fwd_alloc(None, "loss", "nll_loss", 206, train))
        tw = D.alloc(4, s.fwd_alloc(None, "loss", "nll_loss", 206, train))
        saved.append([("loss", "nll_loss", tw), ("loss", "log_softmax", ls), ("ln_f", "ln", lnf),
                      ("ln_f", "ln", mf), ("ln_f", "ln", rf), ("ln_f", "add", x)])
        return saved, loss

    def _grad_for(self, grads, layer, part):
        D, s = self.D, self.s
        for pi in self.pidx.get((layer, part), ()):
            if grads[pi] is None:
                grads[pi] = D.alloc(self.params[pi][2], s.bwd_alloc(layer, part, "accumulate", "grad"))

    def _backward(self, saved, loss, grads, T, seq):
        D, s, m = self.D, self.s, self.m
        d, f = m.d, 4
        A = D.alloc
        ba = s.bwd_alloc
        bf = s.bwd_free
        ones = A(4, s.py_site("loss_backward", "zeros_like", [(TORCH + "/autograd/__init__.py", 220, "_make_grads"), (TORCH + "/autograd/__init__.py", 340, "backward"), (TORCH + "/_tensor.py", 626, "backward"), (TRAIN_PY, 93, "train_step"), (TRAIN_PY, 163, "main"), (TRAIN_PY, 190, "<module>")]))
        head = saved.pop()
        # loss -> logits grad
        g = A(T * m.vocab * f, ba(None, "loss", "nll_loss", "self"))
        D.free(ones, bf(None, "loss", "nll_loss", "grad"))
        for part, op, b in head[:2]:
            D.free(b, bf(None, part, op, "saved"))
        g2 = A(T * m.vocab * f, ba(None, "loss", "log_softmax", "self"))
        D.free(g, bf(None, "loss", "log_softmax", "grad"))
        # lm_head (tied with wte): grad of ln_f output and of the embedding matrix
        gx = A(T * d * f, ba(None, "lm_head", "mm", "mat1"))
        self._grad_for(grads, None, "wte")
        D.free(g2, bf(None, "lm_head", "mm", "grad"))
        gx2 = A(T * d * f, ba(None, "ln_f", "ln", "input"))
        self._grad_for(grads, None, "ln_f")
        for part, op, b in head[2:]:
            D.free(b, bf(None, part, op, "saved"))
        D.free(gx, bf(None, "ln_f", "ln", "grad"))
        g = gx2
        for i in range(m.layers - 1, -1, -1):
            sv = saved[i]
            k = 0
            for part, op, what, nbytes, nsaved in (
                ("mlp", "gelu", "self", T * 4 * d * f, 1),
                ("mlp", "linear", "mat1", T * 4 * d * f, 1),
                ("ln_2", "ln", "input", T * d * f, 4),
                ("attn", "linear", "mat1", T * d * f, 1),
                ("attn", "sdpa", "query", T * 3 * d * f, 2),
                ("ln_1", "ln", "input", T * d * f, 4),
            ):
                gn = A(nbytes, ba(i, part, op, what))
                if op in ("linear", "ln"):
                    self._grad_for(grads, i, part)
                for part2, op2, b in sv[k:k + nsaved]:
                    D.free(b, bf(i, part2, op2, "saved"))
                k += nsaved
                D.free(g, bf(i, part, op, "grad"))
                g = gn
        # embedding backward
        self._grad_for(grads, None, "wpe")
        D.free(g, bf(None, "wte", "embedding", "grad"))
        D.free(loss, s.backward_call_free())

    def _evaluate(self, seq):
        T = self.m.batch * seq
        self.D.annotate("## eval ##", "START")
        self._forward(T, seq, False)
        self.D.annotate("## eval ##", "END")


# --------------------------------------------------------------------------
# Assembling the snapshot
# --------------------------------------------------------------------------


def allocator_settings(era):
    st = {
        "PYTORCH_CUDA_ALLOC_CONF": "",
        "max_split_size": -1,
        "garbage_collection_threshold": 0.0,
        "expandable_segments": False,
        "pinned_num_register_threads": 1,
        "release_lock_on_cudamalloc": False,
        "pinned_use_cuda_host_register": False,
    }
    if era == "2.10":
        st["graph_capture_record_stream_reuse"] = False
    st["roundup_power2_divisions"] = {str(1 << i): 0 for i in range(16)}
    return st


def era_key(era):
    return tuple(int(x) for x in era.split("."))


def build_segments(dev, frames_on, sites_out):
    by_seg = {}
    for b in dev.blocks.values():
        by_seg.setdefault(b[4][0], []).append(b)
    out = []
    zero = 0
    for saddr in sorted(dev.segs):
        seg = dev.segs[saddr]
        blks = sorted(by_seg.get(saddr, ()), key=lambda b: b[0])
        bl = []
        alloc_sz = active_sz = req_sz = 0
        for b in blks:
            st = b[3]
            if st == 1:
                alloc_sz += b[1]
            if st:
                active_sz += b[1]
                req_sz += b[2]
            fr = b[5] if (st and frames_on and b[5] is not None) else []
            if fr:
                sites_out.add(id(b[6]))
            bl.append({"address": b[0], "size": b[1], "requested_size": b[2], "state": STATE_NAMES[st], "frames": fr})
        if frames_on and seg[4]:
            sites_out.add(id(seg[5]))
        out.append({
            "device": dev.dev,
            "address": saddr,
            "total_size": seg[1],
            "allocated_size": alloc_sz,
            "active_size": active_sz,
            "requested_size": req_sz,
            "stream": seg[2],
            "segment_type": "small" if seg[3] else "large",
            "segment_pool_id": (zero, zero),
            "is_expandable": False,
            "frames": seg[4] if (frames_on and seg[4] is not None) else [],
            "blocks": bl,
        })
    return out


def window_expectations(dev, wrap, segments, seg_sites):
    """Ground truth for one device; drops the oldest `wrap` entries from dev.trace."""
    trace = dev.trace
    wrap = min(wrap, len(trace))
    # replay the part that falls out of the ring buffer
    live = {}
    seg_live = {}
    for e in trace[:wrap]:
        a = e[0]
        if a == ALLOC:
            live[e[1]] = (e[2], e[6])
        elif a == FREE_DONE:
            live.pop(e[1], None)
        elif a == SEG_ALLOC:
            seg_live[e[1]] = e[2]
        elif a == SEG_FREE:
            seg_live.pop(e[1], None)
    if wrap:
        del trace[:wrap]
    base_req = sum(v[0] for v in live.values())
    base_blk = sum(v[1] for v in live.values())
    base_res = sum(seg_live.values())
    cur_r, cur_b, cur_s = base_req, base_blk, base_res
    pk_r, pk_b, pk_s = cur_r, cur_b, cur_s
    ix_r = ix_b = ix_s = -1
    counts = [0] * 5
    for i, e in enumerate(trace):
        a = e[0]
        counts[a] += 1
        if a == ALLOC:
            cur_r += e[2]
            cur_b += e[6]
            if cur_r > pk_r:
                pk_r, ix_r = cur_r, i
            if cur_b > pk_b:
                pk_b, ix_b = cur_b, i
        elif a == FREE_DONE:
            cur_r -= e[2]
            cur_b -= e[6]
        elif a == SEG_ALLOC:
            cur_s += e[2]
            if cur_s > pk_s:
                pk_s, ix_s = cur_s, i
        elif a == SEG_FREE:
            cur_s -= e[2]
    # stacks: trace entries, blocks, segments (non-empty frame lists only); a
    # capture's site tuple identifies its stack (one tuple per distinct stack)
    site_ids = set(seg_sites)
    for e in trace:
        st = e[7]
        if st is not None and e[5] is not None:
            site_ids.add(id(st))
    nblocks = 0
    states = {}
    reserved = allocated = requested = 0
    for sg in segments:
        reserved += sg["total_size"]
        for b in sg["blocks"]:
            nblocks += 1
            states[b["state"]] = states.get(b["state"], 0) + 1
            if b["state"] != "inactive":
                allocated += b["size"]
                requested += b["requested_size"]
    frame_ids, stack_keys = frames_and_stacks(dev.sites.st, site_ids)
    exp = {
        "reserved_bytes": reserved,
        "allocated_bytes": allocated,
        "requested_bytes": requested,
        "segments": len(segments),
        "blocks": nblocks,
        "block_states": dict(sorted(states.items())),
        "trace_entries": len(trace),
        "actions": {ACTIONS[k]: counts[k] for k in range(5) if counts[k]},
        "allocations": counts[ALLOC],
        "peak_allocated_bytes": pk_r,
        "peak_allocated_index": ix_r,
        "peak_allocated_block_bytes": pk_b,
        "peak_allocated_block_index": ix_b,
        "peak_reserved_bytes": pk_s,
        "peak_reserved_index": ix_s,
        "pre_window_allocations": len(live),
        "pre_window_bytes": base_req,
        "pre_window_segments": len(seg_live),
        "unique_frames": len(frame_ids),
        "unique_stacks": len(stack_keys),
        "first_time_us": trace[0][4] if trace else None,
        "last_time_us": trace[-1][4] if trace else None,
    }
    return exp, site_ids


def frames_and_stacks(stacks, site_ids):
    """Distinct frame dicts and distinct stacks (by content) among the used sites."""
    frame_ids = set()
    stack_keys = set()
    for st in stacks.cache.values():
        if id(st) in site_ids:
            k = tuple(map(id, st))
            stack_keys.add(k)
            frame_ids.update(k)
    return frame_ids, stack_keys


def to_entry_dicts(trace, era, has_time, frames_on):
    """Replace the tuples of `trace` by torch-shaped dicts, in place."""
    ek = era_key(era)
    cc = ek >= (2, 7)
    um = ek >= (2, 10)
    tm = has_time and ek >= (2, 2)
    names = ACTIONS
    a_ = "A"
    for i, (a, addr, size, stream, t, fl, _bs, _site) in enumerate(trace):
        d = {"action": names[a], "addr": addr, "size": size, "stream": stream}
        if tm:
            d["time_us"] = t
        if cc:
            d["compile_context"] = "N/" + a_  # a fresh string per entry, like torch
        if um:
            d["user_metadata"] = ""
        if fl is not None and frames_on:
            d["frames"] = fl
        trace[i] = d


def jsonable(o):
    if isinstance(o, dict):
        return {k: jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [jsonable(v) for v in o]
    return o


def generate(args):
    t_start = time.perf_counter()
    ndev = max(1, args.devices)
    per_dev = -(-args.entries // ndev)
    stacks = Stacks(args.seed, args.depth_min, args.depth_max, enabled=not args.no_frames)
    sites = Sites(stacks, args.seed)
    model = Model(args.seed)
    if args.empty_cache_every is not None:
        model.empty_cache_every = args.empty_cache_every
    if args.eval_every is not None:
        model.eval_every = args.eval_every
    if args.layers is not None:
        model.layers = args.layers
        model.params = [p for p in model.params if p[2] is None or p[2] < args.layers]
    devices = []
    for k in range(ndev):
        dev = Device(k, args.seed, per_dev + args.wrap, sites, not args.no_frames)
        Workload(dev, model, sites).run()
        devices.append(dev)
    t_sim = time.perf_counter()

    ek = era_key(args.era)
    has_time = not args.no_time and ek >= (2, 2)
    segments = []
    expect_devs = {}
    all_stacks = set()
    annotations = []
    for dev in devices:
        seg_sites = set()
        segs = build_segments(dev, not args.no_frames, seg_sites)
        exp, st = window_expectations(dev, args.wrap, segs, seg_sites)
        all_stacks |= st
        first_t = exp["first_time_us"]
        anns = [a for a in dev.annotations if first_t is None or a[0] >= first_t]
        if not (ek >= (2, 5) and has_time):
            anns = []
        exp["annotations"] = len(anns)
        for t, name, stage in anns:
            annotations.append((t, dev.dev, name, stage))
        if not has_time:
            exp["first_time_us"] = exp["last_time_us"] = None
        expect_devs[str(dev.dev)] = exp
        segments.extend(segs)
    annotations.sort(key=lambda a: (a[0], a[1]))
    for dev in devices:
        to_entry_dicts(dev.trace, args.era, has_time, not args.no_frames)
    tree = {"segments": segments, "device_traces": [dev.trace for dev in devices]}
    if ek >= (2, 3):
        tree["allocator_settings"] = allocator_settings(args.era)
    if ek >= (2, 5):
        tree["external_annotations"] = [
            {"stage": stage, "name": name, "device": d, "time_us": t} for t, d, name, stage in annotations
        ]
    t_build = time.perf_counter()

    out = args.output
    opener = gzip.open if args.gzip else open
    kw = {"compresslevel": 6} if args.gzip else {}
    if args.json:
        with opener(out, "wt", encoding="utf-8", **kw) as f:
            json.dump(jsonable(tree), f, separators=(",", ":"))
    else:
        with opener(out, "wb", **kw) as f:
            pickle.dump(tree, f, protocol=args.protocol)
    t_dump = time.perf_counter()
    file_bytes = os.path.getsize(out)
    frame_ids, stack_keys = frames_and_stacks(stacks, all_stacks)
    total_entries = sum(len(dev.trace) for dev in devices)
    expect = {
        "generator": {
            "seed": args.seed,
            "entries": args.entries,
            "era": args.era,
            "protocol": None if args.json else args.protocol,
            "format": "json" if args.json else "pickle",
            "gzip": bool(args.gzip),
            "wrap": args.wrap,
            "depth": [args.depth_min, args.depth_max],
            "frames": not args.no_frames,
            "time_us": has_time,
        },
        "layout": "dict",
        "keys": sorted(tree),
        "devices": expect_devs,
        "device_trace_lists": len(devices),
        "trace_entries": total_entries,
        "annotations": len(tree.get("external_annotations", ())),
        "unique_frames": len(frame_ids),
        "unique_stacks": len(stack_keys),
        "file_bytes": file_bytes,
    }
    timing = {
        "simulate_s": round(t_sim - t_start, 2),
        "build_s": round(t_build - t_sim, 2),
        "write_s": round(t_dump - t_build, 2),
        "total_s": round(t_dump - t_start, 2),
        "bytes_per_entry": round(file_bytes / total_entries, 1) if total_entries else None,
    }
    return tree, expect, timing


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--entries", type=int, required=True, help="approximate total number of trace entries")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--protocol", type=int, default=4, choices=(2, 3, 4, 5))
    p.add_argument("--depth-min", type=int, default=30)
    p.add_argument("--depth-max", type=int, default=40)
    p.add_argument("--devices", type=int, default=1)
    p.add_argument("--era", default="2.10", choices=ERAS, help="which torch release's key set to write (default 2.10)")
    p.add_argument("--wrap", type=int, default=0, help="drop the oldest K entries of each device's trace (ring-buffer wrap)")
    p.add_argument("--gzip", action="store_true", help="gzip the output")
    p.add_argument("--json", action="store_true", help="write JSON instead of a pickle (tuples become lists)")
    p.add_argument("--no-time", action="store_true", help="omit time_us (and annotations)")
    p.add_argument("--no-frames", action="store_true", help="record no tracebacks (frames absent / empty)")
    p.add_argument("--layers", type=int, help="transformer layers (default: chosen by the seed, 6-12)")
    p.add_argument("--empty-cache-every", type=int, help="call empty_cache every N steps (default: 25-60 by seed)")
    p.add_argument("--eval-every", type=int, help="run an eval forward every N steps (default: 15-40 by seed)")
    p.add_argument("--expect", help="write the ground truth as JSON to this path")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("-o", "--output", required=True)
    args = p.parse_args(argv)
    if args.depth_min < 1 or args.depth_max < args.depth_min:
        p.error("need 1 <= --depth-min <= --depth-max")
    _tree, expect, timing = generate(args)
    if args.expect:
        with open(args.expect, "w", encoding="utf-8") as f:
            json.dump(expect, f, indent=1, sort_keys=True)
            f.write("\n")
    if not args.quiet:
        print(
            "wrote %s: %d entries, %d bytes (%s B/entry), %d unique stacks, %d unique frames; "
            "simulate %.2fs, build %.2fs, write %.2fs"
            % (args.output, expect["trace_entries"], expect["file_bytes"], timing["bytes_per_entry"],
               expect["unique_stacks"], expect["unique_frames"], timing["simulate_s"], timing["build_s"],
               timing["write_s"]),
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
