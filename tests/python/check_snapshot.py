#!/usr/bin/env python3
"""Check a snapshot's invariants and recompute its facts the way a reader would.

    python3 tests/python/check_snapshot.py FILE [--expect EXPECT.json] [--strict]

Loads FILE (pickle, gzipped pickle or JSON) with a restricted unpickler that
refuses every class, then checks:

* blocks are contiguous inside their segment and add up to ``total_size``;
* ``allocated_size`` / ``active_size`` / ``requested_size`` agree with the blocks
  (``--strict``: exactly as the generator writes them);
* the trace replays: frees match live allocations (or are pre-window), the live
  set at the end equals the non-inactive blocks that were allocated in the
  window, segments alloc'd in the window still exist unless freed, times do
  not go backwards;
* frame dicts are shared (one object per unique frame).

Then it recomputes per device, from the file alone: reserved/allocated bytes,
segment/block counts, actions, the peak of allocated bytes over the trace
(counting allocations that were alive before the window as a baseline, sized by
the trace entry / ``requested_size``), the peak of reserved bytes, unique frames
and stacks, and compares them with ``--expect`` (as written by
``gen_snapshot.py --expect``). Exit status 1 on any failure.
"""

import argparse
import gzip
import io
import json
import pickle
import sys


class NoClasses(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("refusing class %s.%s" % (module, name))


def load(path):
    with open(path, "rb") as f:
        head = f.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        data = f.read()
    if data[:1] in (b"{", b"["):
        return json.loads(data.decode("utf-8")), "json"
    return NoClasses(io.BytesIO(data)).load(), "pickle"


class Checker:
    def __init__(self, strict):
        self.strict = strict
        self.errors = []

    def fail(self, msg):
        if len(self.errors) < 50:
            self.errors.append(msg)

    def check(self, snap):
        if isinstance(snap, list):
            segments, traces = snap, []
        else:
            segments = snap.get("segments", [])
            traces = snap.get("device_traces", [])
        facts = {}
        ndev = max([len(traces) - 1] + [s.get("device", 0) for s in segments]) + 1 if (segments or traces) else 0
        for dev in range(ndev):
            segs = [s for s in segments if s.get("device", 0) == dev]
            trace = traces[dev] if dev < len(traces) else []
            facts[str(dev)] = self.check_device(dev, segs, trace)
        self.check_frames_shared(snap)
        return facts

    def check_device(self, dev, segs, trace):
        reserved = allocated = nblocks = 0
        live_blocks = {}  # addr -> (requested_size, size, state)
        seg_addrs = set()
        for s in segs:
            a = s["address"]
            seg_addrs.add(a)
            reserved += s["total_size"]
            cur = a
            alloc_sz = active_sz = req_sz = 0
            for b in s["blocks"]:
                nblocks += 1
                baddr = b.get("address", cur)
                if baddr != cur:
                    self.fail("dev %d seg %#x: block at %#x, expected %#x" % (dev, a, baddr, cur))
                if b["size"] % 512:
                    self.fail("dev %d block %#x: size %d not a multiple of 512" % (dev, baddr, b["size"]))
                st = b.get("state", "active_allocated")
                if st not in ("active_allocated", "active_pending_free", "inactive"):
                    self.fail("dev %d block %#x: unknown state %r" % (dev, baddr, st))
                if st != "inactive":
                    allocated += b["size"]
                    active_sz += b["size"]
                    req_sz += b["requested_size"]
                    live_blocks[baddr] = (b["requested_size"], b["size"], st)
                    if b["requested_size"] > b["size"]:
                        self.fail("dev %d block %#x: requested_size > size" % (dev, baddr))
                if st == "active_allocated":
                    alloc_sz += b["size"]
                cur += b["size"]
            if cur != a + s["total_size"]:
                self.fail("dev %d seg %#x: blocks cover %d of %d bytes" % (dev, a, cur - a, s["total_size"]))
            if self.strict:
                for key, val in (("allocated_size", alloc_sz), ("active_size", active_sz), ("requested_size", req_sz)):
                    if s[key] != val:
                        self.fail("dev %d seg %#x: %s %d, blocks say %d" % (dev, a, key, s[key], val))
        # replay the trace
        live = {}      # addr -> [size, free_requested seen]
        pre = []       # sizes of allocations alive before the window
        seg_live = {}  # segments alloc'd in the window
        pre_seg = []
        actions = {}
        last_t = None
        events = []  # (delta_alloc, delta_reserved) per entry
        for i, e in enumerate(trace):
            act = e["action"]
            actions[act] = actions.get(act, 0) + 1
            t = e.get("time_us")
            if t is not None:
                if last_t is not None and t < last_t:
                    self.fail("dev %d entry %d: time_us goes backwards" % (dev, i))
                last_t = t
            addr = e.get("addr")
            da = dr = 0
            if act == "alloc":
                if addr in live:
                    self.fail("dev %d entry %d: alloc of live address %#x" % (dev, i, addr))
                live[addr] = [e["size"], False]
                da = e["size"]
            elif act == "free_requested":
                if addr in live:
                    if live[addr][1]:
                        self.fail("dev %d entry %d: double free_requested %#x" % (dev, i, addr))
                    live[addr][1] = True
                    if live[addr][0] != e["size"]:
                        self.fail("dev %d entry %d: free size %d != alloc size %d" % (dev, i, e["size"], live[addr][0]))
            elif act == "free_completed":
                if addr in live:
                    if self.strict and not live[addr][1]:
                        self.fail("dev %d entry %d: free_completed without free_requested" % (dev, i))
                    da = -live.pop(addr)[0]
                else:
                    pre.append(e["size"])
                    da = -e["size"]
            elif act in ("segment_alloc", "segment_map"):
                if act == "segment_alloc":
                    seg_live[addr] = e["size"]
                dr = e["size"]
            elif act in ("segment_free", "segment_unmap"):
                if act == "segment_free":
                    if addr in seg_live:
                        del seg_live[addr]
                    else:
                        pre_seg.append(e["size"])
                dr = -e["size"]
            events.append((da, dr))
        # allocations alive at the end that the window never saw allocated
        for addr, (req, size, st) in live_blocks.items():
            if addr not in live:
                pre.append(req)
        for addr, v in live.items():
            b = live_blocks.get(addr)
            if b is None:
                self.fail("dev %d: %#x allocated in the trace, not freed, but no live block" % (dev, addr))
                continue
            if b[0] != v[0]:
                self.fail("dev %d: %#x trace size %d != block requested_size %d" % (dev, addr, v[0], b[0]))
            want = "active_pending_free" if v[1] else "active_allocated"
            if self.strict and b[2] != want:
                self.fail("dev %d: %#x state %s, trace says %s" % (dev, addr, b[2], want))
        for addr in seg_live:
            if addr not in seg_addrs:
                self.fail("dev %d: segment %#x alloc'd in the trace, never freed, missing" % (dev, addr))
        seg_in_window = set(seg_live)
        for s in segs:
            if s["address"] not in seg_in_window:
                pre_seg.append(s["total_size"])
        # peaks, and what the allocator held at the allocated peak and at the first OOM
        cur = base = sum(pre)
        peak, peak_i = cur, -1
        # Expandable segments grow and shrink with segment_map / segment_unmap: their final
        # size already holds what the window mapped, so the window's net mapping is not
        # reserved before it.
        mapped_in_window = sum(e["size"] if e["action"] == "segment_map" else -e["size"]
                               for e in trace if e["action"] in ("segment_map", "segment_unmap"))
        cur_res = sum(pre_seg) - mapped_in_window
        peak_res, peak_res_i = cur_res, -1
        res_at_peak = cur_res
        oom_i = oom_alloc = oom_res = None
        for i, (da, dr) in enumerate(events):
            if da:
                cur += da
                if cur > peak:
                    peak, peak_i = cur, i
            if dr:
                cur_res += dr
                if cur_res > peak_res:
                    peak_res, peak_res_i = cur_res, i
            if peak_i == i:
                res_at_peak = cur_res
            if oom_i is None and trace[i]["action"] == "oom":
                oom_i, oom_alloc, oom_res = i, cur, cur_res
        if cur != sum(v[0] for v in live_blocks.values()):
            self.fail("dev %d: replayed allocated %d != live blocks' requested %d" % (dev, cur, sum(v[0] for v in live_blocks.values())))
        stacks = set()
        frames = set()

        def add(fl):
            if fl:
                st = tuple((f["filename"], f["line"], f["name"]) for f in fl)
                stacks.add(st)
                frames.update(st)

        for e in trace:
            add(e.get("frames"))
        for s in segs:
            add(s.get("frames"))
            for b in s["blocks"]:
                add(b.get("frames"))
                for h in b.get("history", ()):
                    add(h.get("frames"))
        return {
            "reserved_bytes": reserved,
            "allocated_bytes": allocated,
            "segments": len(segs),
            "blocks": nblocks,
            "trace_entries": len(trace),
            "actions": actions,
            "allocations": actions.get("alloc", 0),
            "peak_allocated_bytes": peak,
            "peak_allocated_index": peak_i,
            "peak_reserved_bytes": peak_res,
            "peak_reserved_index": peak_res_i,
            "reserved_at_peak_bytes": res_at_peak,
            "oom_index": oom_i,
            "allocated_at_oom_bytes": oom_alloc,
            "reserved_at_oom_bytes": oom_res,
            "pre_window_allocations": len(pre),
            "pre_window_bytes": base,
            "unique_frames": len(frames),
            "unique_stacks": len(stacks),
        }

    def check_frames_shared(self, snap):
        if not isinstance(snap, dict):
            return
        by_key = {}
        objs = set()
        for tr in snap.get("device_traces", []):
            for e in tr:
                for f in e.get("frames", ()):
                    if id(f) in objs:
                        continue
                    objs.add(id(f))
                    by_key.setdefault((f["filename"], f["line"], f["name"]), []).append(id(f))
        dup = sum(1 for v in by_key.values() if len(v) > 1)
        if dup:
            # allowed in JSON (no sharing possible), an error for pickles
            self.shared_dups = dup


def main(argv=None):
    p = argparse.ArgumentParser(description="check a memory snapshot's invariants")
    p.add_argument("path")
    p.add_argument("--expect", help="expectations JSON from gen_snapshot.py --expect")
    p.add_argument("--strict", action="store_true", help="also check the exact generator conventions")
    args = p.parse_args(argv)
    snap, fmt = load(args.path)
    c = Checker(args.strict)
    facts = c.check(snap)
    if getattr(c, "shared_dups", 0) and fmt != "json":
        c.fail("%d frames appear as more than one dict object (not shared through the memo)" % c.shared_dups)
    if args.expect:
        with open(args.expect, encoding="utf-8") as f:
            exp = json.load(f)
        for dev, want in exp["devices"].items():
            got = facts.get(dev)
            if got is None:
                c.fail("device %s missing" % dev)
                continue
            for k, v in got.items():
                if k in want and want[k] != v:
                    c.fail("device %s %s: file says %r, expectation %r" % (dev, k, v, want[k]))
        if "trace_entries" in exp:
            n = sum(f["trace_entries"] for f in facts.values())
            if n != exp["trace_entries"]:
                c.fail("trace_entries %d != %d" % (n, exp["trace_entries"]))
    for e in c.errors:
        print("FAIL", e)
    if not c.errors:
        print("ok %s: %s" % (args.path, json.dumps({d: {k: f[k] for k in ("segments", "blocks", "trace_entries", "peak_allocated_bytes", "unique_stacks")} for d, f in facts.items()})))
    return 1 if c.errors else 0


if __name__ == "__main__":
    sys.exit(main())
