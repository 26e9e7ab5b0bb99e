#!/usr/bin/env python3
"""The fixtures of what PyTorch's snapshots carry since 2026, written as PyTorch writes them.

    python3 tests/python/make_edge_fixtures.py     # writes these too (with manifest and README)
    python3 tests/python/expect_real.py --fixtures tests/fixtures

No public snapshot carries these fields yet, so these small pickles are made by hand, each
field the way PyTorch's own writer code makes it. What was read, and where:

* pytorch/pytorch `torch/cuda/memory.py` at 00b65a04a2d30e498eedcb1e3476abd547f428f1:
  - `_record_memory_history(..., record_pinned_host_memory=True)`: "Host allocator traces
    will appear in the ``host_segments`` and ``host_traces`` keys of the snapshot returned by
    :func:`_snapshot`". PR #182407 ("Support memory snapshot for CPU pinned memory") gives the
    pinned host allocator (`CachingHostAllocatorImpl`) "the same profiling infrastructure as
    the CUDA DeviceCachingAllocator": one `RingBuffer` of trace entries (`getTraces()`) and
    segments (`getSegments()`) of the same shapes. One host allocator, one ring buffer: the
    fixture writes `host_traces` as one list of entries (a reader also takes a list of such
    lists). The C++ dict builder of the host keys was not in the stored code that was read;
    the host segments' `device` is written as -1 (the host has no device index) so that a
    reader that took it for a CUDA index would show it.
  - `_annotate_memory(data_ptr, metadata: str)` / `_annotate_tensor(tensor, metadata)`:
    "records a dedicated ``annotate`` trace event for an allocation that already exists ...
    annotations accumulate as separate trace entries keyed to the allocation's address, each
    carrying the annotation string as its ``user_metadata`` and a stack trace of the
    annotation site". The `_snapshot` docstring's TraceEntry: "'addr' is the allocation's
    base address and 'user_metadata' holds the annotation".
  - `_snapshot(device=None, augment_with_fx_traces=False)` calls
    `_augment_memory_snapshot_stack_traces(s)` and `_dump_snapshot` pickles the result with
    `pickle.dump(s, f)` (protocol 4 on the Pythons in use).
* pytorch/pytorch `torch/_utils.py` at 000d210ca786d2a89488933b510f72799aacc486,
  `_augment_frames` / `_augment_memory_snapshot_stack_traces`: only frames of block `frames`
  and of `device_traces` entries are augmented (not host traces); a frame whose file's base
  name matches `fx_generated_.*\\.py$` (`FX_GRAPH_MODULE_FILE_PREFIX`) and whose line maps to
  a graph node gets `fx_node_op` (the node's op), `fx_node_name`, `fx_node_target`
  (`str(node target)`) and, when the node has one, `fx_original_trace` (the node's
  `stack_trace`: traceback text, `  File "…", line N, in name\\n    code\\n` per frame, outermost
  first). The docstrings also name `fx_node_info`, which that code does not write.
* pytorch/pytorch `torch/utils/viz/process_alloc_data.js` at
  135deb676d1ff32eaa12d21c99a28022bfb1dbb5: `format_forward_frames(forward_frames)` takes
  a trace entry's `forward_frames` as `string[]` and joins them with '' — the forward pass's
  stack as the autograd node recorded it (`node.metadata["traceback_"]`, the strings of
  `traceback.format_stack()`, outermost first); `format_user_metadata` takes a string or a
  dict. `process_alloc_data` pairs only `alloc` / `free_completed` (segment events when
  plotting segments); any other action, `annotate` among them, is skipped by its `default:`
  branch, while the allocator state history lists every trace entry.
* torch_npu (Ascend/pytorch) writes the same snapshot format from its NPUCachingAllocator,
  its frames naming `torch_npu` and `c10_npu`; its `workspace_snapshot` action is written
  here as a trace entry of the usual keys (its writer was not in the stored code).
* `source_code` ({path: text of the user's .py files}) and `shape_data` ({device:
  {address: [[op, shape, dtype], ...]}}) come from community capture helpers that add them to
  the snapshot dict before pickling; there is no PyTorch writer to follow.

Besides the pickles, `FORMAT_FACTS` (what each fixture holds, in numbers) goes to
`tests/expectations/format.json`, which `crates/core/tests/format_fields.rs` and the
command line's tests read.
"""

import json
import os

import make_edge_fixtures as edge
from make_edge_fixtures import MIB, T0, Frames, block, dump, entry, fixture, segment, small_snapshot

A = edge.A
B = edge.B
# Pinned host memory: a cudaHostAlloc'd region in the process's address space.
H = 0x7F3B20000000

FORMAT_FACTS = {}


def frame_line(filename, line, name, code):
    """One frame as `traceback.format_stack()` writes it."""
    return '  File "%s", line %d, in %s\n    %s\n' % (filename, line, name, code)


# --------------------------------------------------------------------------
# Pinned host memory
# --------------------------------------------------------------------------


@fixture("pinned_host.pickle", "ok",
         "Pinned host memory recorded beside CUDA device 0 (`record_pinned_host_memory=True`): the "
         "small snapshot plus `host_segments` (one 2 MiB segment, device -1: a 1 MiB block alive, the "
         "rest cached free) and `host_traces` (one list: segment_alloc, two allocs, the second's "
         "free_requested and free_completed).")
def _pinned_host():
    fr = Frames()
    snap = small_snapshot(fr)
    s_pin = [fr.f("CachingHostAllocator.h", 0, "at::CachingHostAllocatorImpl::allocate(unsigned long)"),
             fr.f("/home/user/proj/data.py", 17, "pin_batch"),
             fr.f("/home/user/proj/train.py", 40, "main")]
    s_pin2 = [s_pin[0], fr.f("/home/user/proj/data.py", 18, "pin_batch"), s_pin[2]]
    blocks = [block(H, MIB, MIB, "active_allocated", s_pin),
              block(H + MIB, MIB, 0, "inactive")]
    snap["host_segments"] = [segment(-1, H, blocks, frames=s_pin)]
    t = T0 + 1000
    snap["host_traces"] = [
        entry("segment_alloc", H, 2 * MIB, t, s_pin),
        entry("alloc", H, MIB, t, s_pin),
        entry("alloc", H + MIB, 524288, t + 5, s_pin2),
        entry("free_requested", H + MIB, 524288, t + 9, s_pin2),
        entry("free_completed", H + MIB, 524288, t + 9, s_pin2),
    ]
    FORMAT_FACTS["pinned_host.pickle"] = {
        "host": {"segments": 1, "blocks": 2, "reserved_bytes": 2 * MIB, "allocated_bytes": MIB,
                 "trace_entries": 5, "allocations": 2, "peak_allocated_bytes": MIB + 524288,
                 "peak_allocated_index": 2, "segment_address": H},
        "cuda_devices": [0],
    }
    return dump(snap)


# --------------------------------------------------------------------------
# Annotations
# --------------------------------------------------------------------------


@fixture("annotate.pickle", "ok",
         "`annotate` trace entries (`torch.cuda.memory._annotate_tensor`): two on the 4000000 B "
         "allocation at the large segment's base, one on the 1500000 B one before its free (in the "
         "middle of the trace), one on the small segment's 1000 B allocation; each with its "
         "`user_metadata` string, time and the annotation site's frames.")
def _annotate():
    fr = Frames()
    snap = small_snapshot(fr)
    trace = snap["device_traces"][0]
    site = lambda line: fr.stack((line, "pack_hook"))  # noqa: E731

    def ann(addr, size, t, text, line):
        e = entry("annotate", addr, size, t, site(line))
        e["user_metadata"] = text
        return e

    # Rows of the small snapshot: 1 alloc A, 3 alloc A+6097408, 4/5 its free, 9 alloc B+1536.
    trace.insert(4, ann(A + 6097408, 1500000, T0 + 20, "saved for backward: mul", 61))
    trace.append(ann(A, 4000000, T0 + 100, "saved for backward: linear.weight", 62))
    trace.append(ann(A, 4000000, T0 + 101, "offload candidate", 63))
    trace.append(ann(B + 1536, 1000, T0 + 102, "kv cache page 3", 64))
    FORMAT_FACTS["annotate.pickle"] = {
        "annotate_rows": [4, 13, 14, 15],
        "trace_entries": len(trace),
        # (alloc row of the allocation, [(annotate row, text, time_us, top frame)])
        "allocations": [
            {"alloc_row": 1, "address": A, "annotations": [
                [13, "saved for backward: linear.weight", T0 + 100, "/home/user/proj/model.py:62:pack_hook"],
                [14, "offload candidate", T0 + 101, "/home/user/proj/model.py:63:pack_hook"]]},
            {"alloc_row": 3, "address": A + 6097408, "annotations": [
                [4, "saved for backward: mul", T0 + 20, "/home/user/proj/model.py:61:pack_hook"]]},
            {"alloc_row": 10, "address": B + 1536, "annotations": [
                [15, "kv cache page 3", T0 + 102, "/home/user/proj/model.py:64:pack_hook"]]},
        ],
    }
    return dump(snap)


# --------------------------------------------------------------------------
# FX-augmented frames
# --------------------------------------------------------------------------

FX_FILE = "/tmp/torchinductor_user/fx_generated_3f2a9c41.py"
MODEL = "/home/user/proj/model.py"
TRAIN = "/home/user/proj/train.py"


@fixture("fx_augmented.pickle", "ok",
         "A snapshot of a compiled model taken with `augment_with_fx_traces=True`: allocations made "
         "in `fx_generated_3f2a9c41.py` whose frames carry `fx_node_op`, `fx_node_name`, "
         "`fx_node_target` and `fx_original_trace` (nodes addmm, relu, addmm_1 from model.py lines "
         "42, 43, 44; two allocations of addmm), one allocation of plain eager code, and blocks with "
         "the same augmented frames.")
def _fx():
    fr = Frames()
    alloc_frames = [
        fr.f("??", 0, "torch::unwind::unwind()"),
        fr.f("CUDACachingAllocator.cpp", 0, "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)"),
    ]
    outer = [
        fr.f("/usr/lib/python3.12/site-packages/torch/_dynamo/eval_frame.py", 655, "_fn"),
        fr.f("/usr/lib/python3.12/site-packages/torch/nn/modules/module.py", 1750, "_call_impl"),
        fr.f(TRAIN, 40, "main"),
        fr.f(TRAIN, 55, "<module>"),
    ]
    nodes = {}

    def fx_frame(gen_line, node, op, target, model_line, code):
        key = (gen_line, node)
        if key not in nodes:
            trace = (frame_line(TRAIN, 40, "main", "loss = model(x).sum()")
                     + frame_line("/usr/lib/python3.12/site-packages/torch/nn/modules/module.py", 1750,
                                  "_call_impl", "return forward_call(*args, **kwargs)")
                     + frame_line(MODEL, model_line, "forward", code))
            nodes[key] = {"name": "forward", "filename": FX_FILE, "line": gen_line,
                          "fx_node_op": op, "fx_node_name": node, "fx_node_target": target,
                          "fx_original_trace": trace}
        return nodes[key]

    def fx_stack(gen_line, node, op, target, model_line, code):
        return alloc_frames + [fx_frame(gen_line, node, op, target, model_line, code)] + outer

    s_addmm = fx_stack(12, "addmm", "call_function", "aten.addmm.default", 42, "a = self.net1(x)")
    s_addmm_b = fx_stack(12, "addmm", "call_function", "aten.addmm.default", 42, "a = self.net1(x)")
    s_relu = fx_stack(13, "relu", "call_function", "aten.relu.default", 43, "b = self.relu(a)")
    s_addmm1 = fx_stack(14, "addmm_1", "call_function", "aten.addmm.default", 44, "c = self.net2(b)")
    s_eager = alloc_frames + [fr.f(TRAIN, 38, "main"), fr.f(TRAIN, 55, "<module>")]
    t = [T0 + i * 10 for i in range(10)]
    sizes = [4 * MIB, 4 * MIB, 2 * MIB, MIB, 512 * 1024]
    addrs = [A, A + 4 * MIB, A + 8 * MIB, A + 10 * MIB, A + 11 * MIB]
    trace = [
        entry("segment_alloc", A, 20 * MIB, t[0], s_addmm),
        entry("alloc", addrs[0], sizes[0], t[0], s_addmm),
        entry("alloc", addrs[1], sizes[1], t[1], s_addmm_b),
        entry("alloc", addrs[2], sizes[2], t[2], s_relu),
        entry("alloc", addrs[3], sizes[3], t[3], s_addmm1),
        entry("alloc", addrs[4], sizes[4], t[4], s_eager),
        entry("free_requested", addrs[2], sizes[2], t[5], s_relu),
        entry("free_completed", addrs[2], sizes[2], t[5], s_relu),
    ]
    blocks = [
        block(addrs[0], sizes[0], sizes[0], "active_allocated", s_addmm),
        block(addrs[1], sizes[1], sizes[1], "active_allocated", s_addmm_b),
        block(addrs[2], sizes[2], 0, "inactive"),
        block(addrs[3], sizes[3], sizes[3], "active_allocated", s_addmm1),
        block(addrs[4], sizes[4], sizes[4], "active_allocated", s_eager),
        block(addrs[4] + sizes[4], 20 * MIB - (addrs[4] + sizes[4] - A), 0, "inactive"),
    ]
    snap = {"segments": [segment(0, A, blocks, frames=s_addmm)], "device_traces": [trace],
            "allocator_settings": edge.allocator_settings()}
    FORMAT_FACTS["fx_augmented.pickle"] = {
        "fx_nodes": [
            {"line": 12, "node": "addmm", "op": "call_function", "target": "aten.addmm.default",
             "original": ["%s:42:forward" % MODEL, "/usr/lib/python3.12/site-packages/torch/nn/modules/module.py:1750:_call_impl",
                          "%s:40:main" % TRAIN]},
            {"line": 13, "node": "relu", "op": "call_function", "target": "aten.relu.default",
             "original": ["%s:43:forward" % MODEL, "/usr/lib/python3.12/site-packages/torch/nn/modules/module.py:1750:_call_impl",
                          "%s:40:main" % TRAIN]},
            {"line": 14, "node": "addmm_1", "op": "call_function", "target": "aten.addmm.default",
             "original": ["%s:44:forward" % MODEL, "/usr/lib/python3.12/site-packages/torch/nn/modules/module.py:1750:_call_impl",
                          "%s:40:main" % TRAIN]},
        ],
        # call site -> (allocations, requested bytes) over all allocations
        "callsites": {
            "%s:42:forward" % MODEL: [2, 8 * MIB],
            "%s:43:forward" % MODEL: [1, 2 * MIB],
            "%s:44:forward" % MODEL: [1, MIB],
            "%s:38:main" % TRAIN: [1, 512 * 1024],
        },
        # model module (the `forward` it was made under) -> (allocations, requested bytes)
        "modules": {
            "model.py:42 forward": [2, 8 * MIB],
            "model.py:43 forward": [1, 2 * MIB],
            "model.py:44 forward": [1, MIB],
            "(outside any forward)": [1, 512 * 1024],
        },
    }
    return dump(snap)


# --------------------------------------------------------------------------
# forward_frames on backward allocations
# --------------------------------------------------------------------------


@fixture("forward_frames.pickle", "ok",
         "Backward allocations whose frames are the autograd engine's only (MmBackward0, "
         "ReluBackward0) and whose trace entries carry `forward_frames`: the forward stack as "
         "`traceback.format_stack()` strings, outermost first (model.py lines 42 and 43); one "
         "forward allocation without them.")
def _forward():
    fr = Frames()
    engine = [
        fr.f("??", 0, "torch::unwind::unwind()"),
        fr.f("CUDACachingAllocator.cpp", 0, "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)"),
    ]
    tail = [fr.f("engine.cpp", 0, "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)"),
            fr.f("??", 0, "start_thread")]

    def bw(node):
        return engine + [fr.f("Functions.cpp", 0, "torch::autograd::generated::%s::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)" % node)] + tail

    def fwd(line, code):
        return [frame_line(TRAIN, 55, "<module>", "main()"),
                frame_line(TRAIN, 40, "main", "loss = model(x).sum()"),
                frame_line("/usr/lib/python3.12/site-packages/torch/nn/modules/module.py", 1750, "_call_impl",
                           "return forward_call(*args, **kwargs)"),
                frame_line(MODEL, line, "forward", code)]

    s_fw = engine + [fr.f(MODEL, 42, "forward"), fr.f(TRAIN, 40, "main"), fr.f(TRAIN, 55, "<module>")]
    s_mm = bw("MmBackward0")
    s_relu = bw("ReluBackward0")
    t = [T0 + i * 10 for i in range(10)]
    trace = [
        entry("segment_alloc", A, 20 * MIB, t[0], s_fw),
        entry("alloc", A, 4 * MIB, t[0], s_fw),
        entry("alloc", A + 4 * MIB, 4 * MIB, t[1], s_mm),
        entry("alloc", A + 8 * MIB, 2 * MIB, t[2], s_relu),
        entry("alloc", A + 10 * MIB, 4 * MIB, t[3], s_mm),
    ]
    trace[2]["forward_frames"] = fwd(42, "a = self.net1(x)")
    trace[3]["forward_frames"] = fwd(43, "b = self.relu(a)")
    trace[4]["forward_frames"] = fwd(42, "a = self.net1(x)")
    blocks = [
        block(A, 4 * MIB, 4 * MIB, "active_allocated", s_fw),
        block(A + 4 * MIB, 4 * MIB, 4 * MIB, "active_allocated", s_mm),
        block(A + 8 * MIB, 2 * MIB, 2 * MIB, "active_allocated", s_relu),
        block(A + 10 * MIB, 4 * MIB, 4 * MIB, "active_allocated", s_mm),
        block(A + 14 * MIB, 6 * MIB, 0, "inactive"),
    ]
    snap = {"segments": [segment(0, A, blocks, frames=s_fw)], "device_traces": [trace],
            "allocator_settings": edge.allocator_settings()}
    FORMAT_FACTS["forward_frames.pickle"] = {
        "forward_rows": {"2": ["%s:42:forward" % MODEL, "/usr/lib/python3.12/site-packages/torch/nn/modules/module.py:1750:_call_impl",
                               "%s:40:main" % TRAIN, "%s:55:<module>" % TRAIN],
                         "3": ["%s:43:forward" % MODEL, "/usr/lib/python3.12/site-packages/torch/nn/modules/module.py:1750:_call_impl",
                               "%s:40:main" % TRAIN, "%s:55:<module>" % TRAIN],
                         "4": ["%s:42:forward" % MODEL, "/usr/lib/python3.12/site-packages/torch/nn/modules/module.py:1750:_call_impl",
                               "%s:40:main" % TRAIN, "%s:55:<module>" % TRAIN]},
        "callsites": {"%s:42:forward" % MODEL: [3, 12 * MIB], "%s:43:forward" % MODEL: [1, 2 * MIB]},
        "modules": {"model.py:42 forward": [3, 12 * MIB], "model.py:43 forward": [1, 2 * MIB]},
    }
    return dump(snap)


# --------------------------------------------------------------------------
# source_code and shape_data
# --------------------------------------------------------------------------

# The text of the two files as a capture helper reads it, each line a frame of the fixture
# names a line of code inside the function the frame names (checked by `_check_frames`).
MODEL_SOURCE = '''"""A small transformer, as train.py trains it."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, dim=1024, hidden=1000, vocab=1000):
        super().__init__()
        self.embed = nn.Embedding(vocab, 64)
        self.net1 = nn.Linear(64, dim)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(dim, hidden)
        self.layers = nn.ModuleList([Block(hidden)])
        self.dropout = nn.Dropout(0.1)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x):
        """The tokens through the layers, and the loss's workspace.

        The workspace is a buffer of the batch's scores, noise for the
        logits' dropout, and the logits in bfloat16, made each step.
        """
        a = self.net1(self.embed(x))
        x = self.net2(self.relu(a))
        for layer in self.layers:
            x = layer(x)
        with torch.no_grad():
            buffer = torch.empty(1000, 1000, device=x.device)
            noise = torch.randn(512, 1024, device=x.device)
            logits = torch.mm(buffer[:750].bfloat16(), noise[:, :1000].bfloat16())
            del logits
        return x, buffer, noise


class Attention(nn.Module):
    def forward(self, x):
        scale = x.shape[-1] ** -0.5
        # The 25 positions a head may attend to.
        mask = torch.ones(25, dtype=torch.int32, device=x.device)
        scores = (x @ x.transpose(-2, -1)) * scale
        return scores.masked_fill(mask == 0, 0).softmax(-1) @ x


class MLP(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x):
        codes = torch.zeros(1000, dtype=torch.uint8, device=x.device)
        return self.down(F.gelu(self.up(x))) + codes[: x.shape[-1]]


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.attn = Attention()
        self.mlp = MLP(dim)

    def forward(self, x):
        return x + self.mlp(x + self.attn(x))
'''
TRAIN_SOURCE = '''"""Trains Net on random tokens and writes a memory snapshot of the run."""

import argparse
import pickle

import torch

from model import Net


def parse_args():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=1)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--out", default="snapshot.pickle")
    return p.parse_args()


def dump_snapshot(path):
    snapshot = torch.cuda.memory._snapshot()
    # The text of the code, for a viewer to show beside its memory.
    snapshot["source_code"] = {
        name: open(name).read() for name in ("model.py", "train.py")
    }
    with open(path, "wb") as f:
        pickle.dump(snapshot, f)


def main():
    args = parse_args()
    model = Net().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    torch.cuda.memory._record_memory_history(max_entries=100000)
    for step in range(args.steps):
        x = torch.randint(0, 1000, (args.batch, 16), device="cuda")
        optimizer.zero_grad(set_to_none=True)
        # The loss sums every output, so that backward starts from
        # one number.
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = sum(t.float().sum() for t in model(x))
        loss.backward()
        optimizer.step()
    dump_snapshot(args.out)
    torch.cuda.memory._record_memory_history(enabled=None)


def summarise(path):
    """Prints the bytes a snapshot written by main() had reserved."""
    with open(path, "rb") as f:
        snapshot = pickle.load(f)
    print(sum(s["total_size"] for s in snapshot["segments"]))


if __name__ == "__main__":
    main()
'''


class SourceFrames(Frames):
    """The small snapshot's frames with model.py's MLP where MODEL_SOURCE has it. The other
    fixtures' frames put the MLP's lines (43, 44) right after the attention's (41, 42), where
    no line of another class's method can be."""

    MOVED = {(MODEL, 43): 53, (MODEL, 44): 54}

    def f(self, filename, line, name):
        return super().f(filename, self.MOVED.get((filename, line), line), name)


def _check_frames(frames, sources):
    """Fails unless each frame of a file in `sources` names a line of code (not blank, not a
    comment) inside the function its name ends with (`layers.0.attn.forward`: a `forward`),
    or outside every function for `<module>`."""
    import ast

    for path, text in sources.items():
        lines = text.splitlines()
        functions = [n for n in ast.walk(ast.parse(text))
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for fr in frames:
            if fr["filename"] != path:
                continue
            line, name = fr["line"], fr["name"]
            assert 1 <= line <= len(lines), (path, line, "beyond the text")
            code = lines[line - 1].strip()
            assert code and not code.startswith("#"), (path, line, "not code")
            around = [f for f in functions if f.lineno < line <= f.end_lineno]
            innermost = max(around, key=lambda f: f.lineno, default=None)
            want = None if name == "<module>" else name.rsplit(".", 1)[-1]
            assert (innermost.name if innermost else None) == want, (path, line, name)


# A small segment cudaMalloc'd before `_record_memory_history` was called (the model moved to
# the GPU first): in the snapshot's segments, with no `segment_alloc` or `alloc` in the trace.
C = B + 2 * MIB
# What lives there: an embedding's weight, [1000, 64] float32. The caching allocator gives a
# request of at most 1 MiB a block rounded up to 512 B in a 2 MiB small segment
# (`c10/cuda/CUDACachingAllocator.cpp`: kMinBlockSize, kSmallSize, kSmallBuffer).
EMBEDDING_BYTES = 1000 * 64 * 4


@fixture("source_and_shapes.pickle", "ok",
         "The small snapshot with what community capture helpers add: `source_code` (the text of "
         "model.py and train.py by path, every frame's line a line of code in the function it names; "
         "the MLP's frames at lines 53 and 54, where that text has it) and `shape_data` (device 0: per allocation address, "
         "[[op, shape, dtype]]), for every allocation of the trace but one and for a block alive "
         "before the trace (a small segment allocated before recording started).")
def _source_shapes():
    fr = SourceFrames()
    snap = small_snapshot(fr)
    _check_frames(fr.table.values(), {MODEL: MODEL_SOURCE, TRAIN: TRAIN_SOURCE})
    # Recording was off when it was allocated: `_snapshot` writes a block's and a segment's
    # `frames` from the context recorded at allocation, so both are empty.
    before = [
        block(C, EMBEDDING_BYTES, EMBEDDING_BYTES, "active_allocated"),
        block(C + EMBEDDING_BYTES, 2 * MIB - EMBEDDING_BYTES, 0, "inactive"),
    ]
    snap["segments"].append(segment(0, C, before, seg_type="small"))
    snap["source_code"] = {MODEL: MODEL_SOURCE, TRAIN: TRAIN_SOURCE}
    shapes = {
        A: [["aten::empty", [1000, 1000], "torch.float32"]],
        A + 4000256: [["aten::randn", [512, 1024], "torch.float32"]],
        A + 6097408: [["aten::mm", [750, 1000], "torch.bfloat16"]],
        B: [["aten::ones", [25], "torch.int32"]],
        B + 1536: [["aten::zeros", [1000], "torch.uint8"]],
        C: [["aten::_to_copy", [1000, 64], "torch.float32"]],
    }
    snap["shape_data"] = {0: shapes}
    FORMAT_FACTS["source_and_shapes.pickle"] = {
        "source_paths": sorted([MODEL, TRAIN]),
        "source_bytes": {MODEL: len(MODEL_SOURCE), TRAIN: len(TRAIN_SOURCE)},
        # alloc row -> (shape, dtype); row 8 (B + 512) has none
        "shapes": {"1": ["[1000, 1000]", "torch.float32"], "2": ["[512, 1024]", "torch.float32"],
                   "3": ["[750, 1000]", "torch.bfloat16"], "7": ["[25]", "torch.int32"],
                   "9": ["[1000]", "torch.uint8"]},
        # address -> (shape, dtype) of the allocations from before the trace, which no row carries
        "shapes_before": {str(C): ["[1000, 64]", "torch.float32"]},
    }
    return dump(snap)


# --------------------------------------------------------------------------
# An NPU-like producer with actions nobody knows
# --------------------------------------------------------------------------


@fixture("npu_workspace.pickle", "ok",
         "A snapshot written by torch_npu: frames of `torch_npu` and `c10_npu`'s NPUCachingAllocator, "
         "two `workspace_snapshot` entries and one `future_action` entry among the usual actions.")
def _npu():
    fr = Frames()
    npu = [fr.f("??", 0, "c10_npu::NPUCachingAllocator::NpuCachingAllocator::malloc(void**, int, unsigned long, aclrtStream)"),
           fr.f("/usr/lib/python3.10/site-packages/torch_npu/utils/_module.py", 12, "cast_weight"),
           fr.f(MODEL, 42, "forward"), fr.f(TRAIN, 40, "main")]
    t = [T0 + i * 10 for i in range(10)]
    trace = [
        entry("segment_alloc", A, 20 * MIB, t[0], npu),
        entry("alloc", A, 4 * MIB, t[0], npu),
        entry("workspace_snapshot", A + 4 * MIB, 2 * MIB, t[1], npu),
        entry("alloc", A + 4 * MIB, 2 * MIB, t[2], npu),
        entry("future_action", 0, 0, t[3]),
        entry("free_requested", A + 4 * MIB, 2 * MIB, t[4], npu),
        entry("free_completed", A + 4 * MIB, 2 * MIB, t[4], npu),
        entry("workspace_snapshot", A + 4 * MIB, 2 * MIB, t[5], npu),
    ]
    blocks = [block(A, 4 * MIB, 4 * MIB, "active_allocated", npu), block(A + 4 * MIB, 16 * MIB, 0, "inactive")]
    snap = {"segments": [segment(0, A, blocks, frames=npu)], "device_traces": [trace],
            "allocator_settings": edge.allocator_settings()}
    FORMAT_FACTS["npu_workspace.pickle"] = {
        "device_kind": "npu",
        "unknown_actions": {"future_action": 1, "workspace_snapshot": 2},
        "trace_entries": len(trace),
        "allocations": 2,
        "peak_allocated_bytes": 6 * MIB,
    }
    return dump(snap)


def write_facts(root):
    path = os.path.join(root, "tests", "expectations", "format.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(FORMAT_FACTS, f, indent=1, sort_keys=True)
        f.write("\n")
