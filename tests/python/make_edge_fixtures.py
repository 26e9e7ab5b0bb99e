#!/usr/bin/env python3
"""Write the small hand-made edge-case snapshots into tests/fixtures/.

    python3 tests/python/make_edge_fixtures.py [--out tests/fixtures]

Deterministic: running it twice gives identical bytes. Besides the fixtures it
writes ``manifest.json`` (name -> expect "ok" | "reject", what it tests) and
``README.md`` (the same, with the expected facts of every good fixture).
Pickles are written by CPython's pickle where it can produce the bytes, and
assembled opcode by opcode where it cannot (hostile and malformed files, rare
opcodes). Hostile files are only ever written and disassembled, never loaded.
"""

import argparse
import gzip
import io
import json
import os
import pickle
import pickletools
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from expect_real import facts  # noqa: E402

MIB = 1024 * 1024
T0 = 1_750_000_000_000_000
SIDE = 94_283_713_496_448

# --------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------


class Frames:
    """One shared dict per unique frame; a fresh list per captured traceback."""

    def __init__(self):
        self.table = {}

    def f(self, filename, line, name):
        key = (filename, line, name)
        if key not in self.table:
            self.table[key] = {"name": name, "filename": filename, "line": line}
        return self.table[key]

    def stack(self, *site):
        inner = [
            self.f("??", 0, "torch::unwind::unwind()"),
            self.f("??", 0, "torch::CapturedTraceback::gather(bool, bool, bool)"),
            self.f("memory_snapshot.cpp", 0, "torch::cuda::(anonymous namespace)::gather_with_cpp()"),
            self.f("CUDACachingAllocator.cpp", 0, "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)"),
        ]
        outer = [
            self.f("/home/user/proj/train.py", 40, "main"),
            self.f("/home/user/proj/train.py", 55, "<module>"),
            self.f("??", 0, "_PyEval_EvalFrameDefault"),
            self.f("??", 0, "Py_RunMain"),
        ]
        mid = [self.f("/home/user/proj/model.py", line, name) for line, name in site]
        return inner + mid + outer


def allocator_settings(**over):
    st = {
        "PYTORCH_CUDA_ALLOC_CONF": "",
        "max_split_size": -1,
        "garbage_collection_threshold": 0.0,
        "expandable_segments": False,
        "pinned_num_register_threads": 1,
        "release_lock_on_cudamalloc": False,
        "pinned_use_cuda_host_register": False,
        "graph_capture_record_stream_reuse": False,
        "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)},
    }
    st.update(over)
    return st


def entry(action, addr, size, t, frames=None, stream=0, era=(2, 10)):
    e = {"action": action, "addr": addr, "size": size, "stream": stream}
    if t is not None:
        e["time_us"] = t
    if era >= (2, 7):
        e["compile_context"] = "N/A"
    if era >= (2, 10):
        e["user_metadata"] = ""
    if frames is not None:
        e["frames"] = frames
    return e


def block(addr, size, req, state, frames=None):
    return {"address": addr, "size": size, "requested_size": req, "state": state,
            "frames": frames if frames is not None else []}


def segment(device, addr, blocks, stream=0, seg_type="large", pool=(0, 0), expandable=False, frames=None):
    total = sum(b["size"] for b in blocks)
    alloc = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
    active = sum(b["size"] for b in blocks if b["state"] != "inactive")
    req = sum(b["requested_size"] for b in blocks if b["state"] != "inactive")
    return {
        "device": device, "address": addr, "total_size": total, "allocated_size": alloc,
        "active_size": active, "requested_size": req, "stream": stream, "segment_type": seg_type,
        "segment_pool_id": tuple(pool), "is_expandable": expandable,
        "frames": frames if frames is not None else [], "blocks": blocks,
    }


A = 0x7F3A00000000  # a large segment
B = 0x7F3A01400000  # a small segment


def small_snapshot(fr=None, wrap=False, era=(2, 10), with_time=True, with_frames=True):
    """Two segments, ten trace entries; see README for the numbers."""
    fr = fr or Frames()
    t = [T0 + i * 7 for i in range(20)] if with_time else [None] * 20

    def st(*site):
        return fr.stack(*site) if with_frames else None

    s_seg_a = st((30, "forward"))
    s_a0 = s_seg_a
    s_a1 = st((31, "forward"))
    s_a2 = st((32, "forward"))
    s_free_a2 = st((33, "forward"))
    s_seg_b = st((41, "layers.0.attn.forward"))
    s_b0 = s_seg_b
    s_b1 = st((42, "layers.0.attn.forward"))
    s_b2 = st((43, "layers.0.mlp.forward"))
    s_free_b1 = st((44, "layers.0.mlp.forward"))
    blocks_a = [
        block(A, 4000256, 4000000, "active_allocated", s_a0),
        block(A + 4000256, 2097152, 2097152, "active_allocated", s_a1),
        block(A + 6097408, 20 * MIB - 6097408, 1500000, "inactive"),
    ]
    blocks_b = [
        block(B, 512, 100, "active_allocated", s_b0),
        block(B + 512, 1024, 700, "inactive"),
        block(B + 1536, 1024, 1000, "active_allocated", s_b2),
        block(B + 2560, 2 * MIB - 2560, 0, "inactive"),
    ]
    if not with_frames:
        for b in blocks_a + blocks_b:
            b["frames"] = []
    segs = [
        segment(0, A, blocks_a, frames=s_seg_a if with_frames else []),
        segment(0, B, blocks_b, seg_type="small", frames=s_seg_b if with_frames else []),
    ]
    E = lambda *a, **k: entry(*a, era=era, **k)  # noqa: E731
    if not wrap:
        trace = [
            E("segment_alloc", A, 20 * MIB, t[0], s_seg_a),
            E("alloc", A, 4000000, t[0], s_a0),
            E("alloc", A + 4000256, 2097152, t[1], s_a1),
            E("alloc", A + 6097408, 1500000, t[2], s_a2),
            E("free_requested", A + 6097408, 1500000, t[3], s_free_a2),
            E("free_completed", A + 6097408, 1500000, t[3], s_free_a2),
            E("segment_alloc", B, 2 * MIB, t[4], s_seg_b),
            E("alloc", B, 100, t[4], s_b0),
            E("alloc", B + 512, 700, t[5], s_b1),
            E("alloc", B + 1536, 1000, t[6], s_b2),
            E("free_requested", B + 512, 700, t[7], s_free_b1),
            E("free_completed", B + 512, 700, t[7], s_free_b1),
        ]
    else:
        # the ring buffer lost everything before the first free: three live blocks and
        # two freed allocations were allocated before the window
        trace = [
            E("free_requested", A + 6097408, 1500000, t[3], s_free_a2),
            E("free_completed", A + 6097408, 1500000, t[3], s_free_a2),
            E("free_requested", B + 512, 700, t[7], s_free_b1),
            E("free_completed", B + 512, 700, t[7], s_free_b1),
            E("alloc", B + 1536, 1000, t[8], s_b2),  # the only live block allocated in the window
        ]
    if not with_frames:
        for e in trace:
            e.pop("frames", None)
    snap = {"segments": segs, "device_traces": [trace]}
    if era >= (2, 3):
        snap["allocator_settings"] = allocator_settings()
    if era >= (2, 5) and with_time:
        snap["external_annotations"] = [
            {"stage": "START", "name": "## forward ##", "device": 0, "time_us": t[0]},
            {"stage": "END", "name": "## forward ##", "device": 0, "time_us": t[8]},
        ]
    elif era >= (2, 5):
        snap["external_annotations"] = []
    return snap


# --------------------------------------------------------------------------
# A tiny pickle assembler for bytes the pickler never writes
# --------------------------------------------------------------------------


class Asm:
    def __init__(self, proto):
        self.b = bytearray(b"\x80" + bytes([proto]))

    def op(self, code, payload=b""):
        self.b += code + payload
        return self

    def su(self, s):  # SHORT_BINUNICODE
        d = s.encode("utf-8") if isinstance(s, str) else s
        return self.op(b"\x8c", bytes([len(d)]) + d)

    def bu(self, s):  # BINUNICODE
        d = s.encode("utf-8")
        return self.op(b"X", struct.pack("<I", len(d)) + d)

    def bu8(self, s):  # BINUNICODE8
        d = s.encode("utf-8")
        return self.op(b"\x8d", struct.pack("<Q", len(d)) + d)

    def int_(self, n):
        if 0 <= n < 256:
            return self.op(b"K", bytes([n]))
        if 0 <= n < 65536:
            return self.op(b"M", struct.pack("<H", n))
        if -(2 ** 31) <= n < 2 ** 31:
            return self.op(b"J", struct.pack("<i", n))
        d = pickle.encode_long(n)
        return self.op(b"\x8a", bytes([len(d)]) + d)

    def long4(self, n):
        d = pickle.encode_long(n)
        return self.op(b"\x8b", struct.pack("<I", len(d)) + d)

    def float_(self, x):
        return self.op(b"G", struct.pack(">d", x))

    def memo(self):
        return self.op(b"\x94")

    def stop(self):
        return self.op(b".")

    def bytes(self):
        return bytes(self.b)


# --------------------------------------------------------------------------
# The fixtures
# --------------------------------------------------------------------------

FIXTURES = {}


def fixture(name, expect, what):
    def deco(fn):
        FIXTURES[name] = (expect, what, fn)
        return fn
    return deco


def dump(obj, proto=4):
    return pickle.dumps(obj, protocol=proto)


for _p in (2, 3, 4, 5):
    def _mk(p=_p):
        return dump(small_snapshot(), p)
    fixture("small_p%d.pickle" % _p, "ok",
            "The small reference snapshot (2 segments, 7 blocks, 12 trace entries, 2.10-era keys) "
            "pickled with protocol %d%s." % (_p, {2: " (BINPUT/LONG_BINPUT memo, no FRAME)", 3: " (same opcodes as 2)",
                                                  4: ", the torch default (FRAME, MEMOIZE)",
                                                  5: " (what Python 3.14 writes by default)"}[_p]))(_mk)


@fixture("small.json", "ok", "The small reference snapshot as JSON (tuples become lists, frames are copies).")
def _json():
    return json.dumps(small_snapshot(), indent=None, separators=(",", ":")).encode()


@fixture("small.pickle.gz", "ok", "The small reference snapshot, protocol 4, gzipped (mtime 0).")
def _gz():
    bio = io.BytesIO()
    with gzip.GzipFile(fileobj=bio, mode="wb", mtime=0, filename="") as g:
        g.write(dump(small_snapshot(), 4))
    return bio.getvalue()


@fixture("big_ints.pickle", "ok",
         "LONG1 integers: a third segment and its trace entries on stream 2**63 + 12345 "
         "(9223372036854788153, needs u64), and an unknown key `extra_ints` with integers "
         "wider than 64 bits and large negatives (2**64, 2**127 - 1, -(2**63) - 1, -(2**70), 2**200).")
def _big_ints():
    fr = Frames()
    snap = small_snapshot(fr)
    s = fr.stack((77, "prefetch"))
    C = 0x7F3A01600000
    stream = 2 ** 63 + 12345
    bl = [block(C, 4096, 4000, "active_allocated", s), block(C + 4096, 2 * MIB - 4096, 0, "inactive")]
    snap["segments"].append(segment(0, C, bl, stream=stream, seg_type="small", frames=s))
    t = T0 + 1000
    snap["device_traces"][0] += [entry("segment_alloc", C, 2 * MIB, t, s, stream=stream),
                                 entry("alloc", C, 4000, t, s, stream=stream)]
    snap["extra_ints"] = [2 ** 64, 2 ** 64 + 1, 2 ** 127 - 1, -(2 ** 63), -(2 ** 63) - 1, -(2 ** 70), 2 ** 200, -1]
    snap["big_negative"] = -9_000_000_000_000_000_000
    return dump(snap)


@fixture("floats.pickle", "ok",
         "BINFLOAT values (always big-endian in a pickle): garbage_collection_threshold 0.8 and an unknown key "
         "`extra_floats` = [0.8, -0.0, 5e-324, 1.7976931348623157e308, inf, -inf, nan, 1.5].")
def _floats():
    snap = small_snapshot()
    snap["allocator_settings"]["garbage_collection_threshold"] = 0.8
    snap["extra_floats"] = [0.8, -0.0, 5e-324, 1.7976931348623157e308, float("inf"), float("-inf"), float("nan"), 1.5]
    return dump(snap)


@fixture("extra_types_p5.pickle", "ok",
         "Protocol 5 with an unknown key `extra` holding bytes (SHORT_BINBYTES, BINBYTES), a bytearray "
         "(BYTEARRAY8), tuples of 0/1/3/5 items (EMPTY_TUPLE, TUPLE1, TUPLE3, MARK+TUPLE), a set (EMPTY_SET "
         "+ ADDITEMS), a frozenset (FROZENSET), None, True/False.")
def _extra_types():
    snap = small_snapshot()
    snap["extra"] = {
        "bytes": b"\x00\x01raw",
        "long_bytes": bytes(range(256)) + bytes(44),
        "bytearray": bytearray(b"abc\x00"),
        "empty_tuple": (),
        "tuple1": (1,),
        "tuple3": (1, "two", 3.0),
        "tuple5": (1, 2, 3, 4, 5),
        "set": {3, 1, 2},
        "frozenset": frozenset({"a"}),
        "none": None,
        "bools": [True, False],
    }
    return dump(snap, 5)


@fixture("legacy_2_0.pickle", "ok",
         "2.0-era layout: blocks have no `address` and no `frames` but `history: [{addr, real_size, frames}]` "
         "(inactive blocks have no history); segments lack is_expandable / segment_pool_id / frames; the trace "
         "is one `snapshot` entry without time_us or frames; no allocator_settings. Block addresses are the "
         "segment address plus the running sum of sizes.")
def _legacy():
    fr = Frames()
    base = 0x7F5E00000000
    s1 = fr.stack((12, "load_weights"))
    s2 = fr.stack((19, "generate"))
    blocks = [
        {"size": 2 * MIB, "requested_size": 2 * MIB, "state": "active_allocated",
         "history": [{"addr": base, "real_size": 2 * MIB, "frames": s1}]},
        {"size": 6 * MIB, "requested_size": 6 * MIB - 100, "state": "active_allocated",
         "history": [{"addr": base + 2 * MIB, "real_size": 6 * MIB - 100, "frames": s2}]},
        {"size": 12 * MIB, "requested_size": 0, "state": "inactive"},
    ]
    seg = {"device": 0, "address": base, "total_size": 20 * MIB, "allocated_size": 8 * MIB,
           "active_size": 8 * MIB, "requested_size": 8 * MIB - 100, "stream": 0, "segment_type": "large",
           "blocks": blocks}
    small = {"device": 0, "address": base + 20 * MIB, "total_size": 2 * MIB, "allocated_size": 512,
             "active_size": 512, "requested_size": 8, "stream": 0, "segment_type": "small",
             "blocks": [{"size": 512, "requested_size": 8, "state": "active_allocated",
                         "history": [{"addr": base + 20 * MIB, "real_size": 8, "frames": s1}]},
                        {"size": 2 * MIB - 512, "requested_size": 0, "state": "inactive"}]}
    snap = {"segments": [seg, small],
            "device_traces": [[{"action": "snapshot", "addr": 0, "size": 8 * MIB + 512, "stream": 0}]]}
    return dump(snap)


@fixture("segment_list.pickle", "ok",
         "A bare list of segment dicts (what pickling torch.cuda.memory_snapshot() gives): no device_traces, "
         "no top-level dict.")
def _seglist():
    return dump(small_snapshot()["segments"])


@fixture("no_time_no_frames.pickle", "ok",
         "2.1-era trace without tracebacks: entries have only action/addr/size/stream (no time_us, no frames); "
         "segments and blocks have empty frame lists; top level is just segments + device_traces.")
def _notime():
    return dump(small_snapshot(era=(2, 1), with_time=False, with_frames=False))


@fixture("expandable.pickle", "ok",
         "Expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True): `is_expandable: True`, the "
         "trace grows the segment with `segment_map` and shrinks it with `segment_unmap` (no segment_alloc). "
         "Large segment: mapped 20+20 MiB, 8 MiB unmapped at the tail, 32 MiB left, two live blocks. Small "
         "segment: 2 MiB mapped, one 1 KiB block live.")
def _expandable():
    fr = Frames()
    E_ = 0x7F6000000000
    S_ = 0x7F7000000000
    s1, s2, s3, s4, s5 = (fr.stack((60 + i, "forward")) for i in range(5))
    t = [T0 + 10 * i for i in range(12)]
    trace = [
        entry("segment_map", E_, 20 * MIB, t[0], s1, era=(2, 7)),
        entry("alloc", E_, 8 * MIB, t[0], s1, era=(2, 7)),
        entry("segment_map", E_ + 20 * MIB, 20 * MIB, t[1], s2, era=(2, 7)),
        entry("alloc", E_ + 8 * MIB, 24 * MIB, t[1], s2, era=(2, 7)),
        entry("alloc", E_ + 32 * MIB, 2 * MIB, t[2], s3, era=(2, 7)),
        entry("free_requested", E_ + 32 * MIB, 2 * MIB, t[3], s4, era=(2, 7)),
        entry("free_completed", E_ + 32 * MIB, 2 * MIB, t[3], s4, era=(2, 7)),
        entry("segment_unmap", E_ + 32 * MIB, 8 * MIB, t[4], s5, era=(2, 7)),
        entry("segment_map", S_, 2 * MIB, t[5], s3, era=(2, 7)),
        entry("alloc", S_, 1000, t[5], s3, era=(2, 7)),
    ]
    segs = [
        segment(0, E_, [block(E_, 8 * MIB, 8 * MIB, "active_allocated", s1),
                        block(E_ + 8 * MIB, 24 * MIB, 24 * MIB, "active_allocated", s2)], expandable=True, frames=s1),
        segment(0, S_, [block(S_, 1024, 1000, "active_allocated", s3), block(S_ + 1024, 2 * MIB - 1024, 0, "inactive")],
                seg_type="small", expandable=True, frames=s3),
    ]
    st = allocator_settings(PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True", expandable_segments=True)
    del st["graph_capture_record_stream_reuse"]
    return dump({"segments": segs, "device_traces": [trace], "allocator_settings": st, "external_annotations": []})


@fixture("private_pool.pickle", "ok",
         "A CUDA-graph private pool: one segment with `segment_pool_id` (1, 3) next to the default pool's (0, 0) "
         "segments.")
def _pool():
    fr = Frames()
    snap = small_snapshot(fr)
    s = fr.stack((90, "graph_capture"))
    P = 0x7F3B00000000
    bl = [block(P, 10 * MIB, 10 * MIB, "active_allocated", s), block(P + 10 * MIB, 10 * MIB, 0, "inactive")]
    snap["segments"].append(segment(0, P, bl, pool=(1, 3), frames=s))
    return dump(snap)


@fixture("vllm_sleep_mode.pickle", "ok",
         "A vLLM v1 worker (0.11.0, the classic model runner) serving with sleep mode on: its step buffers "
         "and block table made first, the weights in the cuMem memory pool (0, 1) tagged \"weights\", a profile "
         "run's forward freed, the KV cache (two layers) in the \"kv_cache\" pool (0, 2), CUDA graphs captured "
         "on a side stream into the global graph pool (0, 3) (warm-ups in the default pool), then two decode "
         "steps. Stacks from vLLM 0.11.0's released sources.")
def _vllm_sleep():
    fr = Frames()
    site = "/usr/local/lib/python3.12/site-packages/"

    def py(path, line, name):
        return fr.f(site + path, line, name)

    cpp = [
        fr.f("??", 0, "torch::unwind::unwind()"),
        fr.f("??", 0, "torch::CapturedTraceback::gather(bool, bool, bool)"),
        fr.f("CUDACachingAllocator.cpp", 0, "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)"),
    ]
    worker = [py("vllm/v1/executor/multiproc_executor.py", 571, "worker_main"),
              py("multiprocessing/process.py", 108, "run"),
              py("multiprocessing/process.py", 314, "_bootstrap")]
    busy = [py("vllm/v1/executor/multiproc_executor.py", 666, "worker_busy_loop"),
            py("vllm/v1/executor/multiproc_executor.py", 588, "worker_main"),
            py("multiprocessing/process.py", 108, "run")]

    def stack(*frames):
        return cpp + list(frames)

    init_device = [py("vllm/v1/worker/gpu_worker.py", 201, "init_device"),
                   py("vllm/worker/worker_base.py", 259, "init_device"),
                   py("vllm/v1/executor/multiproc_executor.py", 430, "__init__")] + worker
    step_buffer = stack(py("vllm/v1/utils.py", 120, "__init__"),
                        py("vllm/v1/worker/gpu_model_runner.py", 448, "_make_buffer"),
                        py("vllm/v1/worker/gpu_model_runner.py", 345, "__init__"), *init_device)
    block_table = stack(py("vllm/v1/utils.py", 120, "__init__"),
                        py("vllm/v1/worker/block_table.py", 139, "_make_buffer"),
                        py("vllm/v1/worker/block_table.py", 34, "__init__"),
                        py("vllm/v1/worker/block_table.py", 166, "__init__"),
                        py("vllm/v1/worker/gpu_input_batch.py", 139, "__init__"),
                        py("vllm/v1/worker/gpu_model_runner.py", 310, "__init__"), *init_device)
    load = [py("vllm/model_executor/models/llama.py", 583, "_init_model"),
            py("vllm/model_executor/models/llama.py", 537, "__init__"),
            py("vllm/model_executor/model_loader/utils.py", 63, "initialize_model"),
            py("vllm/model_executor/model_loader/base_loader.py", 45, "load_model"),
            py("vllm/v1/worker/gpu_model_runner.py", 2635, "load_model"),
            py("vllm/v1/worker/gpu_worker.py", 213, "load_model"),
            py("vllm/v1/executor/multiproc_executor.py", 437, "__init__")] + worker

    def weight(module_line, layer_line):
        return stack(py("torch/utils/_device.py", 104, "__torch_function__"),
                     py("vllm/model_executor/layers/linear.py", 202, "create_weights"),
                     py("vllm/model_executor/layers/linear.py", 476, "__init__"),
                     py("vllm/model_executor/layers/linear.py", module_line, "__init__"),
                     py("vllm/model_executor/models/llama.py", layer_line, "__init__"),
                     py("vllm/model_executor/models/llama.py", 280, "__init__"),
                     py("vllm/model_executor/models/llama.py", 364, "<lambda>"),
                     py("vllm/model_executor/models/utils.py", 630, "make_layers"),
                     py("vllm/model_executor/models/llama.py", 362, "__init__"),
                     py("vllm/compilation/decorators.py", 201, "__init__"), *load)
    embedding = stack(py("torch/utils/_device.py", 104, "__torch_function__"),
                      py("vllm/model_executor/layers/vocab_parallel_embedding.py", 46, "create_weights"),
                      py("vllm/model_executor/layers/vocab_parallel_embedding.py", 266, "__init__"),
                      py("vllm/model_executor/models/llama.py", 350, "__init__"),
                      py("vllm/compilation/decorators.py", 201, "__init__"), *load)
    model = [py("vllm/model_executor/layers/linear.py", 233, "apply"),
             py("vllm/model_executor/layers/linear.py", 565, "forward"),
             py("torch/nn/modules/module.py", 1784, "_call_impl"),
             py("torch/nn/modules/module.py", 1773, "_wrapped_call_impl"),
             py("vllm/model_executor/models/llama.py", 597, "forward"),
             py("torch/nn/modules/module.py", 1784, "_call_impl"),
             py("torch/nn/modules/module.py", 1773, "_wrapped_call_impl")]
    profile = stack(*model, py("vllm/v1/worker/gpu_model_runner.py", 3152, "_dummy_run"),
                    py("vllm/v1/worker/gpu_model_runner.py", 3392, "profile_run"),
                    py("vllm/v1/worker/gpu_worker.py", 263, "determine_available_memory"), *busy)
    kv = stack(py("vllm/v1/worker/gpu_model_runner.py", 3772, "_allocate_kv_cache_tensors"),
               py("vllm/v1/worker/gpu_model_runner.py", 3926, "initialize_kv_cache_tensors"),
               py("vllm/v1/worker/gpu_model_runner.py", 3987, "initialize_kv_cache"),
               py("vllm/v1/worker/gpu_worker.py", 318, "initialize_from_config"),
               py("vllm/worker/worker_base.py", 254, "initialize_from_config"), *busy)

    def capture(line):
        return stack(*model, py("vllm/v1/worker/gpu_model_runner.py", 3152, "_dummy_run"),
                     py("vllm/v1/worker/gpu_model_runner.py", line, "_capture_cudagraphs"),
                     py("vllm/v1/worker/gpu_model_runner.py", 3446, "capture_model"),
                     py("vllm/v1/worker/gpu_worker.py", 344, "compile_or_warm_up_model"), *busy)
    step = stack(*model, py("vllm/v1/worker/gpu_model_runner.py", 2370, "execute_model"),
                 py("vllm/v1/worker/gpu_worker.py", 447, "execute_model"), *busy)

    t = T0
    trace, segs = [], []
    addr = [0x7F0000000000]

    def new_addr(size):
        a = addr[0]
        addr[0] += (size + 2 * MIB - 1) // (2 * MIB) * (2 * MIB)
        return a

    kept = []  # (addr, size, frames, pool, stream)

    def alloc(size, frames, pool=(0, 0), stream=0, keep=True):
        nonlocal t
        a = new_addr(size)
        t += 10
        trace.append(entry("segment_alloc", a, (size + 2 * MIB - 1) // (2 * MIB) * (2 * MIB), t, frames, stream=stream))
        trace.append(entry("alloc", a, size, t, frames, stream=stream))
        if keep:
            kept.append((a, size, frames, pool, stream))
        return a

    def free(a, size, frames, stream=0):
        nonlocal t
        t += 10
        trace.append(entry("free_requested", a, size, t, frames, stream=stream))
        trace.append(entry("free_completed", a, size, t, frames, stream=stream))

    # init_device: persistent step buffers and the block table.
    alloc(8192 * 4, step_buffer)
    alloc(8192 * 8, step_buffer)
    alloc(256 * 2048 * 4, block_table)
    # load_weights: the embedding and two layers, in the "weights" pool.
    W = (0, 1)
    alloc(128256 * 4096 * 2, embedding, W)
    for _ in range(2):
        alloc(6144 * 4096 * 2, weight(918, 152), W)
        alloc(4096 * 4096 * 2, weight(1348, 162), W)
        alloc(2 * 14336 * 4096 * 2, weight(640, 84), W)
        alloc(14336 * 4096 * 2, weight(1348, 94), W)
    # profile_run: a forward of max_num_batched_tokens, freed.
    for _ in range(2):
        a = alloc(8192 * 14336 * 2, profile, keep=False)
        free(a, 8192 * 14336 * 2, profile)
    # kv_cache_allocation: one tensor per layer, in the "kv_cache" pool.
    K = (0, 2)
    for _ in range(2):
        alloc(2 * 3000 * 16 * 8 * 128 * 2, kv, K)
    # graph_capture: a warm-up in the default pool on the capture's stream, then the
    # captured run into the global graph pool (0, 3) on torch's capture stream.
    G = (0, 3)
    for _ in range(2):
        a = alloc(64 * 14336 * 2, capture(3523), stream=SIDE, keep=False)
        free(a, 64 * 14336 * 2, capture(3523), stream=SIDE)
        alloc(64 * 14336 * 2, capture(3530), G, stream=SIDE + 16)
    # Two decode steps.
    for _ in range(2):
        a = alloc(32 * 14336 * 2, step, keep=False)
        free(a, 32 * 14336 * 2, step)
    for a, size, frames, pool, stream in kept:
        seg = (size + 2 * MIB - 1) // (2 * MIB) * (2 * MIB)
        blocks = [block(a, size, size, "active_allocated", frames)]
        if seg > size:
            blocks.append(block(a + size, seg - size, 0, "inactive"))
        segs.append(segment(0, a, blocks, stream=stream, pool=pool, frames=frames))
    return dump({"segments": segs, "device_traces": [trace], "allocator_settings": allocator_settings(),
                 "external_annotations": []})



@fixture("pending_free.pickle", "ok",
         "A stream-ordered free still waiting: a side-stream (stream 94283713496448) block whose "
         "`free_requested` is in the trace but not its `free_completed`; its state is `active_pending_free` "
         "(counted in active_size, not allocated_size). A second side-stream free completed after other events.")
def _pending():
    fr = Frames()
    snap = small_snapshot(fr)
    s = fr.stack((70, "get_batch"))
    sf = fr.stack((75, "train_step"))
    C = 0x7F3A01800000
    t = T0 + 500
    bl = [block(C, 32768, 32768, "active_pending_free", s), block(C + 32768, 2 * MIB - 32768, 0, "inactive")]
    snap["segments"].append(segment(0, C, bl, stream=SIDE, seg_type="small", frames=s))
    tr = snap["device_traces"][0]
    s2 = fr.stack((71, "get_batch"))
    tr += [
        entry("segment_alloc", C, 2 * MIB, t, s, stream=SIDE),
        entry("alloc", C, 32768, t, s, stream=SIDE),
        entry("alloc", C + 32768, 32768, t + 1, s2, stream=SIDE),
        entry("free_requested", C + 32768, 32768, t + 2, sf, stream=SIDE),
        entry("alloc", B + 512, 512, t + 3, s2),
        entry("free_requested", B + 512, 512, t + 4, sf),
        entry("free_completed", B + 512, 512, t + 4, sf),
        entry("free_completed", C + 32768, 32768, t + 5, sf, stream=SIDE),
        entry("free_requested", C, 32768, t + 6, sf, stream=SIDE),
    ]
    return dump(snap)


@fixture("two_devices.pickle", "ok",
         "Two devices: device_traces holds two lists, segments on device 0 (the small snapshot) and device 1 "
         "(one 20 MiB segment, one 1 MiB+ block).")
def _two():
    fr = Frames()
    snap = small_snapshot(fr)
    s = fr.stack((50, "forward"))
    D1 = 0x7E0000000000
    t = T0 + 100
    snap["segments"].append(segment(1, D1, [block(D1, 1049088, 1048577, "active_allocated", s),
                                            block(D1 + 1049088, 20 * MIB - 1049088, 0, "inactive")], frames=s))
    snap["device_traces"].append([entry("segment_alloc", D1, 20 * MIB, t, s), entry("alloc", D1, 1048577, t, s)])
    snap["external_annotations"].append({"stage": "START", "name": "## forward ##", "device": 1, "time_us": t})
    return dump(snap)


@fixture("empty.pickle", "ok", "An empty snapshot: {'segments': [], 'device_traces': [[]]}.")
def _empty():
    return dump({"segments": [], "device_traces": [[]]})


@fixture("oom.pickle", "ok",
         "An `oom` trace entry (keys action, device_free, size, stream, time_us, compile_context, frames; no addr) "
         "after a few allocations: size 5308694528 is the failed request, device_free 95682560.")
def _oom():
    fr = Frames()
    snap = small_snapshot(fr, era=(2, 7))
    s = fr.stack((99, "forward"))
    e = {"action": "oom", "device_free": 95682560, "size": 5308694528, "stream": 0, "time_us": T0 + 200,
         "compile_context": "N/A", "frames": s}
    snap["device_traces"][0].append(e)
    del snap["allocator_settings"]["graph_capture_record_stream_reuse"]
    return dump(snap)


@fixture("unknown_keys.pickle", "ok",
         "Unknown keys everywhere: top level (`host_segments`, `host_traces`, `future_top`), a segment "
         "(`future_seg_key`), a block (`future_block_key`), trace entries (`pool_id` tuple, `forward_frames`), "
         "frames with the fx keys (`fx_node_op`, `fx_node_name`, `fx_node_target`, `fx_original_trace`).")
def _unknown():
    fr = Frames()
    snap = small_snapshot(fr)
    snap["host_segments"] = []
    snap["host_traces"] = [[]]
    snap["future_top"] = {"version": 3, "nested": [1, {"a": None}]}
    snap["segments"][0]["future_seg_key"] = "x"
    snap["segments"][1]["blocks"][0]["future_block_key"] = [1, 2]
    fx = {"name": "forward", "filename": "/home/user/proj/model.py", "line": 88, "fx_node_op": "call_function",
          "fx_node_name": "mm_1", "fx_node_target": "aten.mm.default", "fx_original_trace": "x = a @ b"}
    for i, e in enumerate(snap["device_traces"][0]):
        e["pool_id"] = (0, 0)
        if i == 1:
            e["forward_frames"] = [fx, fr.f("/home/user/proj/train.py", 40, "main")]
    snap["device_traces"][0][2]["frames"] = [fx] + snap["device_traces"][0][2]["frames"]
    return dump(snap)


@fixture("wrapped.pickle", "ok",
         "A ring-buffer-wrapped trace: it starts with two frees whose allocs were lost, then one alloc; three "
         "live blocks have no alloc in the window. The allocated-bytes peak is the pre-window baseline "
         "(peak index -1).")
def _wrapped():
    return dump(small_snapshot(wrap=True))


@fixture("all_plain_opcodes.pickle", "ok",
         "Hand-assembled protocol-5 snapshot using the plain opcodes torch never writes but a reader must take: "
         "NONE SETITEM DICT LIST TUPLE EMPTY_TUPLE TUPLE1 TUPLE3 LONG4 BINUNICODE8 SHORT_BINBYTES BINBYTES "
         "BINBYTES8 BINPUT LONG_BINPUT POP POP_MARK DUP EMPTY_SET ADDITEMS FROZENSET BYTEARRAY8, plus the usual "
         "ones (no FRAME). The shared frame list sits at the sparse memo index 300 (LONG_BINPUT / LONG_BINGET).")
def _all_ops():
    a = Asm(5)
    # top dict via MARK ... DICT
    a.op(b"(")
    a.su("segments")
    # segments list via MARK ... LIST
    a.op(b"(")
    # one segment via EMPTY_DICT + SETITEM per key
    a.op(b"}")
    a.op(b"q", b"\x00")  # BINPUT 0 (segment dict)

    def kv(key, emit):
        a.su(key)
        emit()
        a.op(b"s")  # SETITEM

    base = 0x7F4000000000
    kv("device", lambda: a.int_(0))
    kv("address", lambda: a.long4(base))
    kv("total_size", lambda: a.int_(2 * MIB))
    kv("allocated_size", lambda: a.int_(1024))
    kv("active_size", lambda: a.int_(1024))
    kv("requested_size", lambda: a.int_(1000))
    kv("stream", lambda: a.int_(0))
    kv("segment_type", lambda: a.bu8("small"))
    kv("segment_pool_id", lambda: (a.int_(0), a.int_(0), a.op(b"\x86")))  # TUPLE2
    kv("is_expandable", lambda: a.op(b"\x89"))  # NEWFALSE

    def frames_list():
        a.op(b"]")  # EMPTY_LIST
        a.op(b"r", struct.pack("<I", 300))  # LONG_BINPUT 300
        a.op(b"(")
        a.op(b"}").op(b"(")
        a.su("name").su("forward").su("filename").bu("/home/user/proj/model.py").su("line").int_(12)
        a.op(b"u")  # SETITEMS
        a.op(b"q", b"\x01")  # BINPUT 1 (the frame dict)
        a.op(b"e")  # APPENDS

    kv("frames", frames_list)

    def blocks_ok():
        a.op(b"]")
        a.op(b"(")
        a.su("address").long4(base)
        a.su("size").int_(1024)
        a.su("requested_size").int_(1000)
        a.su("state").su("active_allocated")
        a.su("frames").op(b"j", struct.pack("<I", 300))  # LONG_BINGET 300: the segment's frame list
        a.op(b"d").op(b"a")  # DICT, APPEND
        a.op(b"(")
        a.su("address").int_(base + 1024)
        a.su("size").int_(2 * MIB - 1024)
        a.su("requested_size").int_(0)
        a.su("state").bu("inactive")
        a.su("frames").op(b"]")
        a.op(b"d").op(b"a")

    kv("blocks", blocks_ok)
    a.op(b"l")  # LIST (closes the segments MARK)
    a.su("device_traces")
    a.op(b"]")
    a.op(b"]")  # device 0's trace
    a.op(b"(")
    for action, addr, size in (("segment_alloc", base, 2 * MIB), ("alloc", base, 1000)):
        a.op(b"}").op(b"(")
        a.su("action").su(action)
        a.su("addr").long4(addr)
        a.su("size").int_(size)
        a.su("stream").op(b"K\x00")
        a.su("time_us").int_(T0)
        a.su("frames").op(b"j", struct.pack("<I", 300))
        a.op(b"u")
    # a throw-away value removed again with POP, and a MARK removed with POP_MARK
    a.su("junk").op(b"0")
    a.op(b"(").int_(1).int_(2).op(b"1")
    a.op(b"e")  # APPENDS into device 0's trace
    a.op(b"a")  # APPEND device 0's trace into device_traces
    a.su("extra")
    a.op(b"(")
    a.su("none").op(b"N")
    a.su("empty_tuple").op(b")")
    a.su("tuple1").int_(7).op(b"\x85")
    a.su("tuple3").int_(1).int_(2).int_(3).op(b"\x87")
    a.su("tuple_mark").op(b"(").int_(1).int_(2).int_(3).int_(4).op(b"t")
    a.su("long4").long4(-(2 ** 80))
    a.su("short_binbytes").op(b"C", b"\x03abc")
    a.su("binbytes").op(b"B", struct.pack("<I", 4) + b"\x00\x01\x02\x03")
    a.su("binbytes8").op(b"\x8e", struct.pack("<Q", 2) + b"hi")
    a.su("bytearray8").op(b"\x96", struct.pack("<Q", 3) + b"xyz")
    a.su("set").op(b"\x8f").op(b"(").int_(1).int_(2).op(b"\x90")  # EMPTY_SET MARK ... ADDITEMS
    a.su("frozenset").op(b"(").su("a").su("b").op(b"\x91")  # MARK ... FROZENSET
    a.su("dup").op(b"]").op(b"2").op(b"\x86")  # EMPTY_LIST DUP TUPLE2: a pair of the same list
    a.su("float").float_(0.25)
    a.su("true").op(b"\x88")
    a.su("unicode8").bu8("long string via BINUNICODE8 \u00e9\u4e2d")
    a.op(b"d")  # DICT closes extra
    a.op(b"d")  # DICT closes the top level
    a.stop()
    data = a.bytes()
    return data


# ---- hostile and malformed files (never loaded here) ----------------------


@fixture("hostile_os_system.pickle", "reject",
         "Protocol 2 snapshot-looking dict whose `segments` value is GLOBAL 'os system' + REDUCE('echo pwned'): "
         "a reader must refuse the GLOBAL, never call anything.")
def _hostile_global():
    a = Asm(2)
    a.op(b"}").op(b"q\x00")
    a.op(b"X", struct.pack("<I", 8) + b"segments")
    a.op(b"c", b"os\nsystem\n")
    a.op(b"X", struct.pack("<I", 10) + b"echo pwned")
    a.op(b"\x85").op(b"R")  # TUPLE1 REDUCE
    a.op(b"s")
    a.stop()
    return a.bytes()


@fixture("hostile_stack_global.pickle", "reject",
         "Protocol 4: SHORT_BINUNICODE 'os', 'system', STACK_GLOBAL, then REDUCE('echo pwned'), as pickling "
         "os.system would; must be refused at STACK_GLOBAL.")
def _hostile_stack():
    a = Asm(4)
    a.op(b"}").memo()
    a.su("segments").memo()
    a.su("os").memo().su("system").memo()
    a.op(b"\x93").memo()  # STACK_GLOBAL
    a.su("echo pwned").memo().op(b"\x85").memo()
    a.op(b"R").memo()
    a.op(b"s")
    a.stop()
    return a.bytes()


@fixture("truncated.pickle", "reject", "The first 60% of small_p4.pickle: ends in the middle of the data, no STOP.")
def _truncated():
    d = dump(small_snapshot(), 4)
    return d[: len(d) * 6 // 10]


@fixture("memo_out_of_range.pickle", "reject", "BINGET 7 when only memo slots 0 and 1 were stored.")
def _memo():
    a = Asm(4)
    a.op(b"}").memo()
    a.su("segments").memo()
    a.op(b"h", b"\x07")
    a.op(b"s")
    a.stop()
    return a.bytes()


@fixture("huge_length.pickle", "reject",
         "BINUNICODE8 declaring 2**60 bytes followed by a few: a reader must not try to allocate it.")
def _huge():
    a = Asm(4)
    a.op(b"}").memo()
    a.op(b"\x8d", struct.pack("<Q", 2 ** 60) + b"segments")
    a.stop()
    return a.bytes()


@fixture("deep_nesting.pickle", "reject",
         "100,000 nested lists (EMPTY_LIST x 100000, APPEND x 99999, STOP; protocol 2): valid pickle, not a "
         "snapshot, and deadly for a recursive builder. About 200 KB, the only fixture over 50 KB.")
def _deep():
    n = 100_000
    return b"\x80\x02" + b"]" * n + b"a" * (n - 1) + b"."


@fixture("bad_utf8.pickle", "reject", "A SHORT_BINUNICODE key with invalid UTF-8 (b'\\xff\\xfe' + b'segments').")
def _bad_utf8():
    a = Asm(4)
    a.op(b"}").memo()
    a.su(b"\xff\xfesegments").memo()
    a.op(b"]").memo()
    a.op(b"s")
    a.stop()
    return a.bytes()


@fixture("trailing_garbage.pickle", "reject",
         "empty.pickle followed by 16 bytes after STOP. Python's pickle.load stops at STOP and ignores them; a "
         "strict reader reports them.")
def _trailing():
    return dump({"segments": [], "device_traces": [[]]}) + b"GARBAGE\x00\x01\x02\xff\xfe\x80\x04\x95."


@fixture("kineto_trace.json", "profiler",
         "A tiny Kineto chrome trace ({\"traceEvents\": [...]} with `[memory]` instant events, new argument set): "
         "one 4 KiB allocation under aten::empty, its free, and an 80 GiB `[OutOfMemory]`.")
def _kineto():
    ev = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 1000, "dur": 5, "args": {}},
        {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1002,
         "args": {"Device Type": 1, "Device Id": 0, "Addr": 139637976170496, "Bytes": 4096,
                  "Total Allocated": 4096, "Total Reserved": 2097152}},
        {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1010,
         "args": {"Device Type": 1, "Device Id": 0, "Addr": 139637976170496, "Bytes": -4096,
                  "Total Allocated": 0, "Total Reserved": 2097152}},
        {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[OutOfMemory]", "pid": 1, "tid": 1, "ts": 1020,
         "args": {"Device Type": 1, "Device Id": 0, "Bytes": 85899345920, "Total Allocated": 0,
                  "Total Reserved": 2097152}},
    ]
    return json.dumps({"schemaVersion": 1, "deviceProperties": [], "traceEvents": ev}, indent=1).encode()


def _mem(ts, dev, addr, size, alloc, reserved, tid=1, kind=1, name="[memory]"):
    args = {"Device Type": kind, "Device Id": dev, "Bytes": size, "Total Allocated": alloc, "Total Reserved": reserved}
    if addr is not None:
        args["Addr"] = addr
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": name, "pid": 7, "tid": tid, "ts": ts, "args": args}


@fixture("kineto_memory.json", "profiler",
         "Kineto trace, new argument set, two CUDA devices and the CPU: on cuda:0, 1 MiB held from before the trace "
         "(256 KiB of it freed during it), allocations under nested operators (a record_function scope, aten::linear "
         "with a Python call stack, aten::empty) on two threads, Total Reserved growing 2 → 6 MiB and released to "
         "4 MiB, an `[OutOfMemory]`; on cuda:1 one allocation; two CPU events.")
def _kineto_memory():
    MiB = 1 << 20
    a = 0x7f0000000000
    ops = [
        {"ph": "X", "cat": "user_annotation", "name": "## forward ##", "pid": 7, "tid": 1, "ts": 1000, "dur": 200, "args": {}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 7, "tid": 1, "ts": 1010, "dur": 40,
         "args": {"Call stack": "model.py(10): forward;torch/nn/modules/module.py(1501): _call_impl;train.py(5): <module>"}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 7, "tid": 1, "ts": 1015, "dur": 10, "args": {}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 7, "tid": 1, "ts": 1100, "dur": 5, "args": {}},
        {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: AddmmBackward0", "pid": 7, "tid": "2",
         "ts": 1300, "dur": 50, "args": {}},
    ]
    held = 1 * MiB
    mem = [
        _mem(1012, 0, a + 0x100000, 512 * 1024, held + 512 * 1024, 2 * MiB),        # under aten::linear
        _mem(1018, 0, a + 0x200000, 1 * MiB, held + 1536 * 1024, 4 * MiB),           # under aten::addmm, reserves
        _mem(1102, 0, a + 0x300000, 2 * MiB, held + 3584 * 1024, 6 * MiB),           # under aten::empty, reserves
        _mem(1150, 0, a + 0x900000, -256 * 1024, held + 3328 * 1024, 6 * MiB),       # frees memory from before
        _mem(1160, 0, a + 0x100000, -512 * 1024, held + 2816 * 1024, 6 * MiB),       # in the scope only
        _mem(1310, 0, a + 0x400000, 3 * MiB, held + 5888 * 1024, 6 * MiB, tid="2"),  # backward thread
        _mem(1320, 0, a + 0x300000, -2 * MiB, held + 3840 * 1024, 6 * MiB, tid="2"),
        _mem(1330, 0, None, 64 * MiB, held + 3840 * 1024, 6 * MiB, tid="2", name="[OutOfMemory]"),
        _mem(1400, 0, a + 0x400000, -3 * MiB, held + 768 * 1024, 4 * MiB),           # empty_cache releases 2 MiB
        _mem(1050, 1, a + 0x100000, 4096, 4096, 2 * MiB),
        _mem(1005, -1, 0x55550000, 64, 64, 0, kind=0),
        _mem(1006, -1, 0x55550000, -64, 0, 0, kind=0),
    ]
    return json.dumps({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU"}],
                       "traceEvents": ops + mem, "displayTimeUnit": "ms"}, indent=1).encode()


@fixture("kineto_odd_values.json", "profiler",
         "Kineto trace whose memory events carry odd values a reader must survive: Bytes as text, a float, 1e30, "
         "null, a missing Device Id, an event with no args, a string thread id; two good events (1 KiB allocated "
         "and freed).")
def _kineto_odd():
    ev = [
        _mem(10, 0, 0x1000, 1024, 1024, 2 << 20),
        {"ph": "i", "name": "[memory]", "pid": 7, "tid": "main", "ts": 11, "args": {"Device Type": 1, "Device Id": 0, "Bytes": "abc"}},
        {"ph": "i", "name": "[memory]", "pid": 7, "tid": 1, "ts": 12, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 1e30}},
        {"ph": "i", "name": "[memory]", "pid": 7, "tid": 1, "ts": 13, "args": {"Device Type": 1, "Device Id": 0, "Bytes": None}},
        {"ph": "i", "name": "[memory]", "pid": 7, "tid": 1, "ts": 14, "args": {"Device Type": 1, "Bytes": 5}},
        {"ph": "i", "name": "[memory]", "pid": 7, "tid": 1, "ts": 15},
        {"ph": "X", "name": "aten::weird", "pid": 7, "tid": 1, "ts": "x", "dur": [1]},
        _mem(16.5, 0, 0x1000, -1024.0, 0, 2 << 20),
    ]
    return json.dumps({"traceEvents": ev}).encode()


@fixture("kineto_no_memory.json", "reject",
         "A Kineto trace recorded without profile_memory=True: operators only, no `[memory]` events.")
def _kineto_none():
    ev = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {}}]
    return json.dumps({"traceEvents": ev}).encode()


@fixture("memory_timeline.json", "profiler",
         "torch.profiler export_memory_timeline(...json) output: [times_us, sizes], each sizes[i] = [0, PARAMETER, "
         "OPTIMIZER_STATE, INPUT, TEMPORARY, ACTIVATION, GRADIENT, AUTOGRAD_DETAIL, Unknown] bytes: parameters "
         "loaded, a forward's activations grow and a temporary comes and goes, a backward turns activations into "
         "gradients, the optimizer step adds its state.")
def _memory_timeline():
    MiB = 1 << 20
    rows = [
        (0,   [0, 40 * MiB, 0, 2 * MiB, 0, 0, 0, 0, 0]),
        (100, [0, 40 * MiB, 0, 2 * MiB, 3 * MiB, 10 * MiB, 0, 0, 0]),
        (200, [0, 40 * MiB, 0, 2 * MiB, 0, 25 * MiB, 0, 0, 1 * MiB]),
        (300, [0, 40 * MiB, 0, 2 * MiB, 0, 12 * MiB, 20 * MiB, 4 * MiB, 1 * MiB]),
        (400, [0, 40 * MiB, 0, 2 * MiB, 0, 0, 40 * MiB, 0, 0]),
        (500, [0, 40 * MiB, 80 * MiB, 0, 512 * 1024, 0, 40 * MiB, 0, 0]),
        (600, [0, 40 * MiB, 80 * MiB, 0, 0, 0, 0, 0, 0]),
    ]
    return json.dumps([[t for t, _ in rows], [s for _, s in rows]]).encode()


@fixture("peak_tensors.json", "profiler",
         "The peak-memory JSON of a single-GPU memory profiler: the tensors alive at the peak of cuda:0, listed "
         "largest first, with shape, module path, phase and creation stack: an embedding made in setup, two layers' "
         "attention and MLP activations, one layer's optimizer state, and a tensor with no size (skipped).")
def _peak_tensors():
    MiB = 1 << 20
    stack = ["File \"/x/train.py\", line 90, in <module>", "File \"/x/train.py\", line 40, in step",
             "File \"/x/model.py\", line %d, in forward"]
    def tensor(size, shape, module, phase, line):
        return {"size_bytes": size, "size_mb": size / MiB, "shape": shape, "module": module, "phase": phase,
                "create_stack_trace": stack[:2] + [stack[2] % line], "release_stack_trace": []}
    tensors = [
        tensor(4 * MiB, [1000, 1024], "model.embed", "setup_model_and_optimizer", 12),
        tensor(2 * MiB, [8, 128, 512], "model.layers.1.attn", "forward_backward_iter_1", 30),
        tensor(2 * MiB, [8, 128, 512], "model.layers.0.attn", "forward_backward_iter_1", 30),
        tensor(1 * MiB, [8, 128, 256], "model.layers.0.mlp", "forward_backward_iter_1", 44),
        tensor(1 * MiB, [8, 128, 256], "model.layers.1.mlp", "forward_backward_iter_1", 44),
        tensor(512 * 1024, [256, 512], "model.layers.0.mlp", "optimizer_step_iter_1", 44),
        {"shape": [3], "module": "model.head", "phase": "forward_backward_iter_1"},
    ]
    return json.dumps({"cuda:0": {"peak_memory_mb": 10.5, "tensors": tensors}}, indent=1).encode()


@fixture("not_a_snapshot.txt", "reject", "Plain text.")
def _txt():
    return b"This is not a memory snapshot.\nIt is a text file.\n"


# --------------------------------------------------------------------------


def describe(name, f):
    parts = ["layout %s" % f["layout"]]
    if f["keys"]:
        parts.append("keys %s" % ", ".join(f["keys"]))
    for d, v in f["devices"].items():
        acts = ", ".join("%s %d" % kv for kv in v["actions"].items()) or "no actions"
        parts.append(
            "device %s: %d segments, %d blocks, reserved %d, allocated %d, %d trace entries (%s), peak allocated %d "
            "at index %d, %d pre-window allocations"
            % (d, v["segments"], v["blocks"], v["reserved_bytes"], v["allocated_bytes"], v["trace_entries"], acts,
               v["peak_allocated_bytes"], v["peak_allocated_index"], v["pre_window_allocations"]))
    parts.append("%d unique frames, %d unique stacks, %d annotations" % (f["unique_frames"], f["unique_stacks"], f["annotations"]))
    return "; ".join(parts)


def main(argv=None):
    p = argparse.ArgumentParser(description="write the edge-case fixtures")
    p.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures"))
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    # The fixtures of the 2026 fields live in their own script and register here; run as a
    # script, this module is `__main__`, so name it for their import of it.
    sys.modules.setdefault("make_edge_fixtures", sys.modules[__name__])
    import make_format_fixtures
    manifest = {}
    for name in sorted(FIXTURES):
        expect, what, fn = FIXTURES[name]
        data = fn()
        path = os.path.join(args.out, name)
        with open(path, "wb") as f:
            f.write(data)
        manifest[name] = {"expect": expect, "bytes": len(data), "what": what}
        if expect == "ok":
            # good fixtures must load with CPython's pickle / json and look like snapshots
            from expect_real import read_tree
            tree, _info = read_tree(path)
            manifest[name]["facts"] = describe(name, facts(tree))
        elif name.endswith(".pickle"):
            # disassemble (never load) the bad ones to make sure the bytes are what we meant
            out = io.StringIO()
            try:
                pickletools.dis(data, out=out)
                manifest[name]["dis"] = "disassembles"
            except Exception as e:  # truncated / malformed on purpose
                manifest[name]["dis"] = "%s: %s" % (type(e).__name__, str(e)[:80])
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump({k: {kk: vv for kk, vv in v.items() if kk in ("expect", "bytes", "what")} for k, v in manifest.items()},
                  f, indent=1, sort_keys=True)
        f.write("\n")
    write_readme(args.out, manifest)
    make_format_fixtures.write_facts(ROOT)
    for n, m in sorted(manifest.items()):
        print("%-28s %-6s %7d  %s" % (n, m["expect"], m["bytes"], m.get("dis", "")), file=sys.stderr)
    return 0


README_HEAD = """# Edge-case fixtures

Small hand-made snapshots, written by `tests/python/make_edge_fixtures.py`
(deterministic; rerun it rather than editing these files). `manifest.json`
lists every file with `expect`: `ok` (a reader must load it), `profiler` (a
reader must load it as another profiler output than a snapshot; its numbers are
computed from its JSON by `crates/core/tests/importers.rs`) or `reject` (a
reader must refuse it with an error, never crash, hang, allocate without bound
or execute anything). The facts of the good ones are in
`tests/expectations/edge.json` (written by `tests/python/expect_real.py
--fixtures tests/fixtures`); the definitions are in that script's docstring.
Byte counts: "reserved" is the sum of segment `total_size`, "allocated" the sum of
non-inactive block sizes; the peak counts trace `size` (torch records the
requested size) from `alloc` to `free_completed`, with allocations alive before
the window as a baseline (index -1 = the baseline itself is the peak).

## The small reference snapshot

Device 0, two segments, stream 0:

* large segment `0x7f3a00000000`, 20 MiB: blocks 4000256 B (requested 4000000,
  active), 2097152 B (active), 14874112 B (inactive; a 1500000 B allocation was
  freed there and merged back);
* small segment `0x7f3a01400000`, 2 MiB: 512 B (requested 100, active), 1024 B
  (inactive, requested 700 freed), 1024 B (requested 1000, active), 2094592 B
  inactive.

Trace (12 entries): segment_alloc, alloc, alloc, alloc, free_requested,
free_completed, segment_alloc, alloc, alloc, alloc, free_requested,
free_completed. A `free_requested` and its `free_completed` share one frame list,
as do a `segment_alloc` and the `alloc` that caused it (and the segment's and
block's `frames`), like torch's captures. Reserved 23068672, allocated 6098944.

## The fields PyTorch writes since 2026

`annotate.pickle`, `forward_frames.pickle`, `fx_augmented.pickle`,
`npu_workspace.pickle`, `pinned_host.pickle` and `source_and_shapes.pickle` carry what
no public snapshot carries yet: pinned host memory (`host_segments`, `host_traces`),
`annotate` entries, FX-augmented frames, `forward_frames`, a torch_npu producer's
`workspace_snapshot` action, and the `source_code` and `shape_data` of capture helpers.
They are written by `tests/python/make_format_fixtures.py` (run through this
generator), which follows PyTorch's writer code and cites, per field, the function,
file and commit it follows; where no writer code was at hand it says so. What each holds
in numbers is in `tests/expectations/format.json`, written by the same script.

## Files

| file | expect | bytes | what |
|---|---|---|---|
"""


def write_readme(out, manifest):
    rows = []
    for name in sorted(manifest):
        m = manifest[name]
        rows.append("| `%s` | %s | %d | %s |" % (name, m["expect"], m["bytes"], m["what"].replace("|", "\\|")))
    facts_lines = ["", "## Expected facts of the good fixtures", ""]
    for name in sorted(manifest):
        m = manifest[name]
        if "facts" in m:
            facts_lines.append("* `%s`: %s." % (name, m["facts"]))
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8") as f:
        f.write(README_HEAD + "\n".join(rows) + "\n" + "\n".join(facts_lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
