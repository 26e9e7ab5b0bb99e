#!/usr/bin/env python3
"""Generate a synthetic torch.profiler (Kineto) Chrome trace with memory events, of any size.

Shaped like a real `profile_memory=True, with_stack=True` trace: per training step, operators
(`ph: "X"`, `cat: "cpu_op"`) nested under a `## forward ##` / `## backward ##` scope, each with
a Python `Call stack`, allocating and freeing CUDA memory (`[memory]` instant events with the
new argument set: Addr, Bytes, Total Allocated, Total Reserved), kernel events on a GPU stream
that no importer step reads (as in real traces, they are most of the bytes), and some CPU
memory events. Deterministic for a seed.

    python3 tests/python/gen_kineto.py --megabytes 100 -o target/bench-data/kineto-100MB.json
"""

import argparse
import json
import random


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--megabytes", type=float, default=100, help="approximate output size")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("-o", "--output", required=True)
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    target = int(args.megabytes * 1e6)
    stacks = [
        "model.py(%d): forward;torch/nn/modules/module.py(1501): _call_impl;train.py(40): step;train.py(90): <module>" % (10 + k)
        for k in range(40)
    ]
    ops = ["aten::linear", "aten::addmm", "aten::empty", "aten::mul", "aten::softmax", "aten::layer_norm"]
    out = open(args.output, "w")
    out.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU", "totalGlobalMem": 85899345920}], "traceEvents": [\n')
    written = 0
    first = True
    ts = 1_700_000_000_000_000
    live = []
    allocated = 0
    reserved = 2 << 30
    next_addr = 0x7F0000000000
    step = 0

    def emit(event):
        nonlocal written, first
        text = ("" if first else ",\n") + json.dumps(event, separators=(",", ":"))
        first = False
        out.write(text)
        written += len(text)

    while written < target:
        step += 1
        for scope in ("## forward ##", "## backward ##"):
            start = ts
            for _ in range(200):
                name = rng.choice(ops)
                dur = rng.randint(5, 50)
                emit({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
                      "args": {"External id": step, "Input Dims": [[8, 1024], [1024, 1024]], "Input type": ["float", "float"],
                               "Call stack": rng.choice(stacks)}})
                for _ in range(rng.randint(1, 3)):
                    if live and (rng.random() < 0.45 or allocated > (40 << 30)):
                        addr, size = live.pop(rng.randrange(len(live)))
                        allocated -= size
                        emit({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1,
                              "ts": ts + 1, "args": {"Device Type": 1, "Device Id": 0, "Addr": addr, "Bytes": -size,
                                                     "Total Allocated": allocated, "Total Reserved": reserved}})
                    else:
                        size = rng.choice([512, 4096, 1 << 20, 4 << 20, 16 << 20])
                        next_addr += size + 512
                        live.append((next_addr, size))
                        allocated += size
                        if allocated > reserved:
                            reserved += 2 << 30
                        emit({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1,
                              "ts": ts + 1, "args": {"Device Type": 1, "Device Id": 0, "Addr": next_addr, "Bytes": size,
                                                     "Total Allocated": allocated, "Total Reserved": reserved}})
                # The kernels it launched, on the GPU's stream.
                for _ in range(3):
                    emit({"ph": "X", "cat": "kernel", "name": "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)",
                          "pid": 0, "tid": 7, "ts": ts + 2, "dur": rng.randint(3, 30),
                          "args": {"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": step,
                                   "registers per thread": 232, "shared memory": 73728, "blocks per SM": 1.2,
                                   "warps per SM": 4.8, "grid": [8, 8, 1], "block": [128, 1, 1]}})
                if rng.random() < 0.05:
                    emit({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts + 3,
                          "args": {"Device Type": 0, "Device Id": -1, "Addr": 0x5555, "Bytes": 64, "Total Allocated": 64, "Total Reserved": 0}})
                ts += dur + 2
            emit({"ph": "X", "cat": "user_annotation", "name": scope, "pid": 1, "tid": 1, "ts": start, "dur": ts - start, "args": {}})
    out.write('\n], "displayTimeUnit": "ms"}\n')
    out.close()


if __name__ == "__main__":
    main()
