#!/usr/bin/env python3
"""Write what the memory-timeline view must show for a few snapshots, computed with CPython.

    python3 tests/python/expect_timeline.py [FOLDER] [-o OUT]

Writes ``tests/expectations/timeline.json`` for the end-to-end test
``tests/e2e/timeline.test.mjs``. The files are the bundled example
(``static/example.pickle``), one edge fixture without times or stacks
(``tests/fixtures/no_time_no_frames.pickle``) and the real snapshots named in
``REAL`` below, read from ``../shared/fixtures/real`` (override with FOLDER or
``MEMSIGHT_REAL_FIXTURES``; a missing real file keeps its facts from the
existing output, or is left out, with a note). Files are loaded with an unpickler whose ``find_class`` raises.

Semantics (those of PyTorch's memory_viz, which the viewer follows), per device:

* The x axis is a *state*: state 0 is memory before the first trace row, state
  ``r + 1`` is memory after row ``r``; ``states`` = rows + 1.
* Allocations: each ``alloc`` paired with the next ``free_completed`` of the
  same address (addresses are reused); the allocation lives in states
  ``alloc_row + 1 .. free_row`` (to the end when never freed) with the
  ``size`` of its ``alloc`` entry (the requested size). Allocations from
  before the trace window live from state 0: each unpaired ``free_completed``
  (its ``size``, the stack of that entry) and each non-inactive block of the
  final segments whose address no open trace allocation accounts for (its
  ``requested_size``, the block's ``frames``).
* Stack order (the element index the page reports as ``data-index`` /
  ``data-pinned``): those live blocks in segment and block order, then the
  unpaired frees in *reverse* trace order, then the trace allocations in
  ``alloc`` order.
* ``allocated``: the bytes of the allocations alive in a state;
  ``peak_allocated_bytes`` its maximum and ``peak_allocated_state`` the first
  state reaching it. ``allocated_mib_steps`` is that curve rounded down to MiB,
  as ``[state, MiB]`` wherever the rounded value changes (enough to predict a
  column's height within a pixel).
* ``reserved``: the final segments' ``total_size`` minus what the trace's
  ``segment_alloc``/``segment_map`` added and plus what ``segment_free``/
  ``segment_unmap`` removed gives the bytes before the first row; then each
  segment event moves it. ``peak_reserved_bytes``/``_state`` as above (this is
  the peak of the segments timeline).
* ``time_range``: ``[first time_us, last time_us + 1]`` when every row has a
  ``time_us`` and times never go backwards, else null (no time axis).
* Search: a query ``0x...`` is an address and matches allocations with
  ``addr <= a < addr + max(size, 1)``; other text matches allocations whose
  stack has a frame whose filename or function name contains it, ignoring case.
  Matches are walked largest first, equal sizes in stack order (``first``/``last``:
  a few at each end of that order); ``bytes_at_peak`` sums those alive at the
  allocated peak's first state, ``largest`` is the first one's size;
  ``tall_after_first`` counts the matches after the first that are as tall and
  long-lived as ``chosen`` must be (so they show in the search colour at the
  whole-trace view).
* Frames: innermost first, each ``[name, "filename:line"]``; ``hidden_frames``
  are the indices of frames memory_viz's ``frameFilter`` (torch/utils/viz/
  MemoryViz.js) omits: function names containing one of ``NOISE_FUNCTIONS`` or
  filenames containing one of ``NOISE_FILES``.

``chosen`` is one allocation the test searches for, hovers and pins: the first
trace allocation, in stack order, that is tall on the plot (at least 1/90 of
the allocated peak), lives at least 1 % of the trace (or to its end), has a
stack with both hidden and shown frames (when the file has any stack), and is
the first match of a search for its middle address (null when none is). Its
``address_query`` is that middle address in hex. ``address_search`` is the
start address of an allocation that most allocations contain (the most reused
address), with its matches.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from expect_real import read_tree  # noqa: E402

# memory_viz's frameFilter (torch/utils/viz/MemoryViz.js).
NOISE_FUNCTIONS = (
    "unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp", "_start",
    "__libc_start_main", "PyEval_", "PyObject_", "PyFunction_",
)
NOISE_FILES = (
    "core/boxing", "/Register", "/Redispatch", "pythonrun.c", "Modules/main.c",
    "Objects/call.c", "Objects/methodobject.c", "pycore_ceval.h", "ceval.c",
    "cpython/abstract.h",
)

# Files in the repository: (key in the output, path from the root, frame-text query).
LOCAL = [
    ("example.pickle", "static/example.pickle", "mlp.Forward"),
    ("no_time_no_frames.pickle", "tests/fixtures/no_time_no_frames.pickle", None),
]
# Real snapshots (never copied here): name -> frame-text query (mixed case on purpose) or None.
REAL = {
    "bcrafton__assignment2-systems__memory_snapshot.pickle": "Fake_Train",
    "kkaitlyn111__cs336-a2-systems__memory_2.7b_forward.pickle": None,
}
# How many match positions to keep at each end of a match list.
KEEP = 3


def hidden(frame):
    return any(f in frame["name"] for f in NOISE_FUNCTIONS) or any(f in frame["filename"] for f in NOISE_FILES)


class Alloc:
    __slots__ = ("addr", "size", "frames", "origin", "alloc_row", "free_row")

    def __init__(self, addr, size, frames, origin, alloc_row=None, free_row=None):
        self.addr, self.size, self.frames, self.origin = addr, size, frames or [], origin
        self.alloc_row, self.free_row = alloc_row, free_row

    def start(self):
        return 0 if self.alloc_row is None else self.alloc_row + 1

    def end(self, states):
        """First state it is no longer alive in (``states`` when alive at the end)."""
        return states if self.free_row is None else self.free_row + 1


def block_frames(b):
    if b.get("frames"):
        return b["frames"]
    history = b.get("history") or []
    return history[-1].get("frames") if history else []


def device_of(segments, traces):
    """The device the page opens: most trace rows, then most segments, then lowest id."""
    ids = sorted({s.get("device", 0) for s in segments} | set(range(len(traces))))
    def key(d):
        rows = len(traces[d]) if d < len(traces) else 0
        return (rows, sum(1 for s in segments if s.get("device", 0) == d), -d)
    return max(ids, key=key)


def elements(segments, trace):
    """The allocations in stack order."""
    trace_allocs, freed_before, open_ = [], [], {}
    for row, e in enumerate(trace):
        act, addr = e["action"], e.get("addr")
        if act == "alloc":
            if addr in open_:
                raise SystemExit("row %d: alloc of a live address %#x: pick another fixture" % (row, addr))
            open_[addr] = len(trace_allocs)
            trace_allocs.append(Alloc(addr, e["size"], e.get("frames"), "trace", alloc_row=row))
        elif act == "free_completed":
            if addr in open_:
                trace_allocs[open_.pop(addr)].free_row = row
            else:
                freed_before.append(Alloc(addr, e["size"], e.get("frames"), "freed-before-alloc", free_row=row))
    live = []
    for s in segments:
        cur = s["address"]
        for b in s.get("blocks", ()):
            addr = b.get("address", cur)
            cur += b["size"]
            state = b.get("state") or ("active_allocated" if b.get("history") else "inactive")
            if state != "inactive" and addr not in open_:
                live.append(Alloc(addr, b.get("requested_size", b["size"]), block_frames(b), "live-block"))
    return live + freed_before[::-1] + trace_allocs


def curve_peak(baseline, deltas):
    """Values per state (state 0 = baseline) and the first state of the maximum."""
    values = [baseline]
    for d in deltas:
        values.append(values[-1] + d)
    peak = max(values)
    return values, peak, values.index(peak)


def allocated_curve(elems, states):
    deltas = [0] * (states - 1)
    baseline = 0
    for a in elems:
        if a.alloc_row is None:
            baseline += a.size
        else:
            deltas[a.alloc_row] += a.size
        if a.free_row is not None:
            deltas[a.free_row] -= a.size
    values, peak, state = curve_peak(baseline, deltas)
    if min(values) < 0:
        raise SystemExit("the allocated curve goes below zero: pick another fixture")
    return values, peak, state


def reserved_curve(segments, trace):
    deltas = []
    for e in trace:
        act = e["action"]
        if act in ("segment_alloc", "segment_map"):
            deltas.append(e["size"])
        elif act in ("segment_free", "segment_unmap"):
            deltas.append(-e["size"])
        else:
            deltas.append(0)
    baseline = sum(s["total_size"] for s in segments) - sum(deltas)
    values, peak, state = curve_peak(baseline, deltas)
    if min(values) < 0:
        raise SystemExit("the reserved curve goes below zero: pick another fixture")
    return peak, state


def time_range(trace):
    times = [e.get("time_us") for e in trace]
    if not times or any(t is None for t in times) or any(a > b for a, b in zip(times, times[1:])):
        return None
    return [times[0], times[-1] + 1]


def frame_rows(frames):
    return [[f["name"], "%s:%s" % (f["filename"], f["line"])] for f in frames]


def largest_first(elems, matches):
    return sorted(matches, key=lambda i: (-elems[i].size, i))


def address_matches(elems, a):
    return largest_first(elems, [i for i, e in enumerate(elems) if e.addr <= a < e.addr + max(e.size, 1)])


def text_matches(elems, query):
    needle = query.lower()
    cache = {}

    def frame_hit(f):
        key = (f["filename"], f["name"])
        if key not in cache:
            cache[key] = needle in f["filename"].lower() or needle in f["name"].lower()
        return cache[key]

    return largest_first(elems, [i for i, e in enumerate(elems) if any(frame_hit(f) for f in e.frames)])


def ends(elems, matches, peak_state):
    alive = [i for i in matches if elems[i].start() <= peak_state < elems[i].end(1 << 62)]
    return {
        "count": len(matches),
        "first": matches[:KEEP],
        "last": matches[-KEEP:],
        "bytes_at_peak": sum(elems[i].size for i in alive),
        "largest": elems[matches[0]].size if matches else 0,
    }


def tall_and_long(e, states, tall_bytes):
    """At least `tall_bytes` and alive at least 1 % of the trace (or to its end)."""
    return e.size >= tall_bytes and (e.free_row is None or e.end(states) - e.start() >= states / 100)


def busiest_address(elems, peak_state):
    """The allocation start address with the most matches (addresses are reused), as a query."""
    best = None
    for addr in sorted({e.addr for e in elems}):
        n = len(address_matches(elems, addr))
        if best is None or n > best[0]:
            best = (n, addr)
    if best is None:
        return None
    query = hex(best[1])
    return dict(ends(elems, address_matches(elems, best[1]), peak_state), query=query)


def mib_steps(values):
    steps, last = [], None
    for s, v in enumerate(values):
        m = v >> 20
        if m != last:
            steps.append([s, m])
            last = m
    return steps


def choose(elems, states, tall_bytes, peak_state):
    any_stack = any(e.frames for e in elems)
    for i, e in enumerate(elems):
        if e.origin != "trace" or not tall_and_long(e, states, tall_bytes):
            continue
        if any_stack:
            flags = [hidden(f) for f in e.frames]
            if not (any(flags) and not all(flags)):
                continue
        query = e.addr + e.size // 2
        matches = address_matches(elems, query)
        if matches[0] != i:
            continue
        return {
            "index": i,
            "addr": e.addr,
            "size": e.size,
            "origin": e.origin,
            "start_state": e.start(),
            "end_state": None if e.free_row is None else e.free_row + 1,
            "frames": frame_rows(e.frames),
            "hidden_frames": [k for k, f in enumerate(e.frames) if hidden(f)],
            "address_query": hex(query),
            "address_matches": ends(elems, matches, peak_state),
        }
    return None


def file_facts(path, text_query):
    tree, _info = read_tree(path)
    segments_all = tree.get("segments") or []
    traces = tree.get("device_traces") or []
    device = device_of(segments_all, traces)
    segments = [s for s in segments_all if s.get("device", 0) == device]
    trace = traces[device] if device < len(traces) else []
    states = len(trace) + 1
    elems = elements(segments, trace)
    values, peak, peak_state = allocated_curve(elems, states)
    reserved_peak, reserved_state = reserved_curve(segments, trace)
    out = {
        "device": device,
        "states": states,
        "elements": len(elems),
        "time_range": time_range(trace),
        "peak_allocated_bytes": peak,
        "peak_allocated_state": peak_state,
        "peak_reserved_bytes": reserved_peak,
        "peak_reserved_state": reserved_state,
        "chosen": choose(elems, states, peak / 90, peak_state),
    }
    out["address_search"] = busiest_address(elems, peak_state)
    if text_query:
        matches = text_matches(elems, text_query)
        out["text_query"] = text_query
        out["text_matches"] = dict(ends(elems, matches, peak_state), tall_after_first=sum(
            1 for i in matches[1:] if tall_and_long(elems[i], states, peak / 90)))
    out["allocated_mib_steps"] = mib_steps(values)
    return out


def dump(result, out):
    """Indented JSON, with each (long) step list on one line."""
    placeholders = {}
    shallow = {}
    for key, facts in result.items():
        mark = "@@steps %d@@" % len(placeholders)
        placeholders[json.dumps(mark)] = json.dumps(facts["allocated_mib_steps"], separators=(",", ":"))
        shallow[key] = dict(facts, allocated_mib_steps=mark)
    text = json.dumps(shallow, indent=1, sort_keys=True)
    for mark, steps in placeholders.items():
        text = text.replace(mark, steps)
    with open(out, "w", encoding="utf-8") as f:
        f.write(text + "\n")


def main(argv=None):
    p = argparse.ArgumentParser(description="write what the timeline view must show")
    p.add_argument("folder", nargs="?", help="real snapshot folder (default ../shared/fixtures/real)")
    p.add_argument("-o", "--output", default=os.path.join(ROOT, "tests", "expectations", "timeline.json"))
    args = p.parse_args(argv)
    folder = args.folder or os.environ.get("MEMSIGHT_REAL_FIXTURES") or os.path.join(ROOT, "..", "shared", "fixtures", "real")
    previous = {}
    if os.path.exists(args.output):
        with open(args.output, encoding="utf-8") as f:
            previous = json.load(f)
    result = {}
    for key, rel, query in LOCAL:
        result[key] = dict(file_facts(os.path.join(ROOT, rel), query), source=rel)
    for name, query in REAL.items():
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            if name in previous:
                print("missing %s: kept its previous facts" % path, file=sys.stderr)
                result[name] = previous[name]
            else:
                print("missing %s: left out" % path, file=sys.stderr)
            continue
        result[name] = dict(file_facts(path, query), source="real")
    for key, facts in result.items():
        c = facts["chosen"]
        print("%-60s states %6d peak %d @%d, chosen %s, text %s" % (
            key[:60], facts["states"], facts["peak_allocated_bytes"], facts["peak_allocated_state"],
            c and "#%d (%d B, %d frames, %d matches)" % (c["index"], c["size"], len(c["frames"]), c["address_matches"]["count"]),
            facts.get("text_matches", {}).get("count")), file=sys.stderr)
    dump(result, args.output)
    print("wrote %s (%d files)" % (args.output, len(result)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
