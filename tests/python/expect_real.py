#!/usr/bin/env python3
"""Write the expected facts of snapshot files, computed with CPython's pickle.

    python3 tests/python/expect_real.py                      # real corpus -> tests/expectations/real.json
    python3 tests/python/expect_real.py --fixtures tests/fixtures   # -> tests/expectations/edge.json

The real corpus defaults to ``../shared/fixtures/real`` relative to the
repository root (override with a positional folder or ``MEMSIGHT_REAL_FIXTURES``).
Files are loaded with an unpickler whose ``find_class`` raises, so nothing but
plain data can come out of them.

Per file::

    layout          "dict" or "segment_list" (a bare list of segment dicts)
    keys            sorted top-level keys ([] for a segment list)
    devices         {device: {...}} where device = segment["device"] for segments
                    and the list index for device_traces, and "host" for pinned
                    host memory (host_segments, host_traces) when it recorded
                    anything; per device:
      reserved_bytes    sum of segment total_size
      allocated_bytes   sum of block size over blocks whose state != "inactive"
                        (a block without "state" counts as allocated when it has
                        a non-empty legacy "history", else as inactive)
      segments, blocks, trace_entries, actions {action: count}, block_states
      peak_allocated_bytes / peak_allocated_index
                        max over the trace of the bytes held by allocations,
                        an allocation counting from its alloc to its
                        free_completed with the entry's "size" (torch records the
                        requested size); allocations alive before the trace window
                        are a baseline: free_completed entries with no alloc before
                        them, and non-inactive blocks whose address has no
                        unmatched alloc (sized by requested_size). The index is the
                        trace entry after which the peak first holds (-1: the
                        baseline itself)
      peak_reserved_bytes      max over the trace of the reserved bytes: the segments
                        alive before the window (freed without an alloc, or final
                        segments the window never allocated) plus segment_alloc /
                        segment_map minus segment_free / segment_unmap
      reserved_at_peak_bytes   reserved bytes after the peak_allocated_index entry
      oom_index, allocated_at_oom_bytes, reserved_at_oom_bytes
                        the first `oom` entry, and the allocated and reserved bytes
                        after it (only for devices with an OOM)
      pre_window_allocations   number of such baseline allocations
    unique_frames   distinct (filename, line, name) over trace entries, blocks,
                    segments and legacy block history
    unique_stacks   distinct non-empty frame lists (as tuples of those triples),
                    including trace entries' forward_frames (traceback strings,
                    outermost first, are read as the frames they name), the frame
                    lists of host_traces and host_segments, and each distinct
                    fx_original_trace of a frame read as traceback text
    frame_references total frames in all those lists (shared lists counted each time)
    annotations     len(external_annotations) (0 when absent)
    file_bytes, gzip, format ("pickle"/"json"), protocol (pickle protocol byte)
"""

import argparse
import gzip
import io
import json
import os
import pickle
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from check_snapshot import Checker  # noqa: E402


class NoClasses(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("refusing class %s.%s" % (module, name))


class NotASnapshot(Exception):
    pass


def read_tree(path):
    with open(path, "rb") as f:
        raw = f.read()
    info = {"file_bytes": len(raw), "gzip": raw[:2] == b"\x1f\x8b"}
    data = gzip.decompress(raw) if info["gzip"] else raw
    if data[:1] == b"\x80":
        info["format"] = "pickle"
        info["protocol"] = data[1]
        bio = io.BytesIO(data)
        tree = NoClasses(bio).load()
        info["trailing_bytes"] = len(data) - bio.tell()
    elif data.lstrip()[:1] in (b"{", b"["):
        info["format"] = "json"
        tree = json.loads(data.decode("utf-8"))
    else:
        raise NotASnapshot("neither a pickle nor JSON")
    return tree, info


def block_state(b):
    st = b.get("state")
    if st is None:
        st = "active_allocated" if b.get("history") else "inactive"
    return st


TRACEBACK_LINE = re.compile(r'^\s*File "([^"]*)", line (\d+), in (.+)$')


def traceback_frames(text):
    """The frames of traceback text (`  File "x.py", line 3, in f` lines), innermost first."""
    found = []
    for line in text.splitlines():
        m = TRACEBACK_LINE.match(line)
        if m:
            found.append({"filename": m.group(1), "line": int(m.group(2)), "name": m.group(3)})
    return found[::-1]


def as_frames(fl):
    """A frame list as dicts: `forward_frames` may be traceback strings, outermost first."""
    if fl and all(isinstance(f, str) for f in fl):
        return traceback_frames("".join(fl))
    return fl


def frame_lists(segments, traces):
    for tr in traces:
        for e in tr:
            yield e.get("frames")
            yield as_frames(e.get("forward_frames"))
    for s in segments:
        yield s.get("frames")
        for b in s.get("blocks", ()):
            yield b.get("frames")
            for h in b.get("history", ()) or ():
                yield h.get("frames")


def facts(tree):
    if isinstance(tree, list):
        if not all(isinstance(s, dict) and "blocks" in s for s in tree):
            raise NotASnapshot("a list that is not a list of segment dicts")
        layout, segments, traces, keys, anns = "segment_list", tree, [], [], 0
    elif isinstance(tree, dict) and ("segments" in tree or "device_traces" in tree):
        layout = "dict"
        segments = tree.get("segments") or []
        traces = tree.get("device_traces") or []
        keys = sorted(tree)
        anns = len(tree.get("external_annotations") or [])
    else:
        raise NotASnapshot("no segments / device_traces")
    def normalise(segments):
        """Legacy blocks (no address / state) as the replay checker takes them."""
        out = []
        for s in segments:
            cur = s["address"]
            blocks = []
            for b in s.get("blocks", ()):
                nb = dict(b)
                nb.setdefault("address", cur)
                nb["state"] = block_state(b)
                nb.setdefault("requested_size", b["size"])
                blocks.append(nb)
                cur += b["size"]
            ns = dict(s)
            ns["blocks"] = blocks
            out.append(ns)
        return out

    checker = Checker(strict=False)

    def device_facts(d, segs, trace):
        states = {}
        allocated = 0
        nblocks = 0
        for s in segs:
            for b in s["blocks"]:
                nblocks += 1
                states[b["state"]] = states.get(b["state"], 0) + 1
                if b["state"] != "inactive":
                    allocated += b["size"]
        actions = {}
        for e in trace:
            actions[e["action"]] = actions.get(e["action"], 0) + 1
        before = len(checker.errors)
        cf = checker.check_device(d, segs, trace)
        dev = {
            "reserved_bytes": sum(s["total_size"] for s in segs),
            "allocated_bytes": allocated,
            "segments": len(segs),
            "blocks": nblocks,
            "block_states": dict(sorted(states.items())),
            "trace_entries": len(trace),
            "actions": dict(sorted(actions.items())),
            "peak_allocated_bytes": cf["peak_allocated_bytes"],
            "peak_allocated_index": cf["peak_allocated_index"],
            "peak_reserved_bytes": cf["peak_reserved_bytes"],
            "reserved_at_peak_bytes": cf["reserved_at_peak_bytes"],
            "pre_window_allocations": cf["pre_window_allocations"],
        }
        if cf["oom_index"] is not None:
            dev["oom_index"] = cf["oom_index"]
            dev["allocated_at_oom_bytes"] = cf["allocated_at_oom_bytes"]
            dev["reserved_at_oom_bytes"] = cf["reserved_at_oom_bytes"]
        notes = checker.errors[before:]
        if notes:
            dev["replay_notes"] = notes
        return dev

    norm_segments = normalise(segments)
    devs = sorted({s.get("device", 0) for s in segments} | set(range(len(traces))))
    out_devs = {}
    for d in devs:
        segs = [s for s in norm_segments if s.get("device", 0) == d]
        trace = traces[d] if d < len(traces) else []
        out_devs[str(d)] = device_facts(d, segs, trace)
    # Pinned host memory: one more device, "host", when its allocator recorded anything
    # (`host_traces` one list of entries, or a list of such lists).
    host_traces = []
    host_segments = []
    if layout == "dict":
        host_traces = tree.get("host_traces") or []
        if host_traces and all(isinstance(t, list) for t in host_traces):
            host_traces = [e for t in host_traces for e in t]
        host_segments = tree.get("host_segments") or []
        if host_traces or host_segments:
            out_devs["host"] = device_facts("host", normalise(host_segments), host_traces)
    frames = set()
    stacks = set()
    refs = 0
    host = list(frame_lists(host_segments, [host_traces]))
    originals = set()
    for fl in list(frame_lists(segments, traces)) + host:
        if fl:
            st = tuple((f["filename"], f["line"], f["name"]) for f in fl)
            refs += len(st)
            stacks.add(st)
            frames.update(st)
            originals.update(f["fx_original_trace"] for f in fl if isinstance(f.get("fx_original_trace"), str))
    # An FX frame's original model code is a stack of its own.
    for text in originals:
        st = tuple((f["filename"], f["line"], f["name"]) for f in traceback_frames(text))
        if st:
            stacks.add(st)
            frames.update(st)
    return {
        "layout": layout,
        "keys": keys,
        "devices": out_devs,
        "unique_frames": len(frames),
        "unique_stacks": len(stacks),
        "frame_references": refs,
        "annotations": anns,
    }


def file_facts(path):
    tree, info = read_tree(path)
    f = facts(tree)
    f.update(info)
    return f


def main(argv=None):
    p = argparse.ArgumentParser(description="write expected facts of snapshot files")
    p.add_argument("folder", nargs="?", help="real snapshot folder (default ../shared/fixtures/real)")
    p.add_argument("--fixtures", help="edge-case fixture folder: write edge.json for its good fixtures")
    p.add_argument("-o", "--output", help="output JSON (default tests/expectations/real.json or edge.json)")
    args = p.parse_args(argv)
    result = {}
    if args.fixtures:
        folder = args.fixtures
        with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
        names = sorted(n for n, m in manifest.items() if m["expect"] == "ok")
        out = args.output or os.path.join(ROOT, "tests", "expectations", "edge.json")
    else:
        folder = args.folder or os.environ.get("MEMSIGHT_REAL_FIXTURES") or os.path.join(ROOT, "..", "shared", "fixtures", "real")
        if not os.path.isdir(folder):
            print("no real fixtures at %s: nothing to do" % folder, file=sys.stderr)
            return 0
        names = sorted(n for n in os.listdir(folder) if n.endswith((".pickle", ".pkl")))
        out = args.output or os.path.join(ROOT, "tests", "expectations", "real.json")
    for n in names:
        result[n] = file_facts(os.path.join(folder, n))
        d = result[n]["devices"]
        print("%-100s %s" % (n[:100], " ".join("dev%s:%d/%d/%d" % (k, v["segments"], v["blocks"], v["trace_entries"]) for k, v in d.items())), file=sys.stderr)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote %s (%d files)" % (out, len(result)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
