#!/usr/bin/env python3
"""Writes small seeds of the hostile shapes the decoder refuses or must stay fast on, opcode by
opcode (protocol 2), into the folder given: a memo bomb, one memoized trace named for many
devices, an integer wider than any value, many empty device traces, a size no device holds, a
deep stack shared by many allocations, and names holding terminal control sequences. Each is a
few kilobytes at most, so the fuzzer's input length stays near the other seeds'; the full-size
forms are in crates/cli/tests/hostile.rs."""

import struct
import sys
from pathlib import Path


class Pickle:
    def __init__(self):
        self.b = bytearray(b"\x80\x02")

    def op(self, *ops):
        self.b += bytes(ops)
        return self

    def text(self, s):
        data = s.encode("utf-8")
        self.b += b"X" + struct.pack("<I", len(data)) + data
        return self

    def put(self, i):
        self.b += b"q" + bytes([i]) if i < 256 else b"r" + struct.pack("<I", i)
        return self

    def get(self, i):
        self.b += b"h" + bytes([i]) if i < 256 else b"j" + struct.pack("<I", i)
        return self

    def int(self, i):
        self.b += b"J" + struct.pack("<i", i)
        return self

    def long1(self, data):
        self.b += b"\x8a" + bytes([len(data)]) + data
        return self

    def entry(self, addr, size_write, frames_write=None):
        self.op(ord("}"), ord("("))
        self.text("action").text("alloc")
        self.text("addr").int(addr)
        self.text("size")
        size_write(self)
        self.text("stream").int(0)
        if frames_write:
            self.text("frames")
            frames_write(self)
        return self.op(ord("u"))

    def frame(self, filename, line, name):
        self.op(ord("}"), ord("("))
        self.text("filename").text(filename).text("line").int(line).text("name").text(name)
        return self.op(ord("u"))

    def snapshot(self, key, write):
        """`{segments: [], device_traces: [[]], key: <write>}`."""
        self.op(ord("}"), ord("("))
        self.text("segments").op(ord("]"))
        self.text("device_traces").op(ord("]"), ord("]"), ord("a"))
        self.text(key)
        write(self)
        return bytes(self.op(ord("u"), ord(".")).b)

    def traces(self, write):
        """`{segments: [], device_traces: <write>}`."""
        self.op(ord("}"), ord("("))
        self.text("segments").op(ord("]"))
        self.text("device_traces")
        write(self)
        return bytes(self.op(ord("u"), ord(".")).b)


def bomb(p, levels):
    """Lists each holding two memo references to the one before: 2**levels once expanded."""
    p.op(ord("]")).put(0)
    for k in range(levels):
        p.op(ord("0"), ord("]"), ord("(")).get(k).get(k).op(ord("e")).put(k + 1)


def one_trace_for_many(p, entries, devices):
    p.op(ord("]"), ord("("))
    p.op(ord("]")).put(0).op(ord("("))
    for i in range(entries):
        p.entry(4096 * (i + 1), lambda q: q.int(512))
    p.op(ord("e"))
    for _ in range(devices - 1):
        p.get(0)
    p.op(ord("e"))


def many_devices(p, n):
    p.op(ord("]"), ord("("))
    for _ in range(n):
        p.op(ord("]"))
    p.op(ord("e"))


def one_entry(size_write, frames_write=None):
    def write(p):
        p.op(ord("]"), ord("]")).entry(4096, size_write, frames_write).op(ord("a"), ord("a"))

    return write


def shared_stack(p, frames, allocations):
    p.op(ord("]"), ord("]"), ord("("))
    for i in range(allocations):
        def stack(q, first=(i == 0)):
            if first:
                q.op(ord("]")).put(1).op(ord("("))
                for line in range(frames):
                    q.frame("/home/u/train.py", line + 1, "step")
                q.op(ord("e"))
            else:
                q.get(1)

        p.entry(4096 * (i + 1), lambda q: q.int(512), stack)
    p.op(ord("e"), ord("a"))


def control_frames(q):
    q.op(ord("]"), ord("("))
    q.frame("/home/u/\x1b[31mred\x07.py", 3, "step\x1b]0;title\x07")
    q.frame("/home/u/\u009b2Jclear.py", 4, "fwd\x1b[2J\x00\x7f")
    q.op(ord("e"))


SEEDS = {
    "hostile_memo_bomb.pickle": lambda: Pickle().snapshot("extra_key", lambda p: bomb(p, 30)),
    "hostile_one_trace_many_devices.pickle": lambda: Pickle().traces(
        lambda p: one_trace_for_many(p, 8, 300)
    ),
    "hostile_wide_integer.pickle": lambda: Pickle().snapshot(
        "extra", lambda p: p.op(0x8B).b.extend(struct.pack("<I", 2000) + b"\x55" * 2000)
    ),
    "hostile_many_devices.pickle": lambda: Pickle().traces(lambda p: many_devices(p, 3000)),
    "hostile_size_2_64.pickle": lambda: Pickle().traces(
        one_entry(lambda q: q.long1(b"\xff" * 8 + b"\x00"))
    ),
    "hostile_shared_stack.pickle": lambda: Pickle().traces(lambda p: shared_stack(p, 150, 40)),
    "hostile_control_names.pickle": lambda: Pickle().traces(
        one_entry(lambda q: q.int(512), control_frames)
    ),
}


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, make in SEEDS.items():
        data = make()
        assert len(data) <= 20000, (name, len(data))
        (out / name).write_bytes(data)


if __name__ == "__main__":
    main()
