//! The Kineto importer: a `torch.profiler` Chrome trace (`{"traceEvents": […]}`, plain or
//! gzipped, TensorBoard's `*.pt.trace.json.gz`) recorded with `profile_memory=True`, brought
//! into the snapshot model: per CUDA device, each `[memory]` event an `alloc` (bytes > 0) or
//! a `free_completed` (bytes < 0) at its time, with the operators that enclosed it as its
//! stack (innermost first, then the innermost operator's Python `Call stack` when recorded),
//! `Total Reserved` changes as segment events, and `[OutOfMemory]` events as OOMs.
//!
//! Only the fields used are read, into typed structs (serde skips the rest; strings are
//! borrowed from the input), so a 100 MB trace never becomes a value tree. Traces from older
//! profilers carry no `Addr`: a free is then matched to the latest earlier allocation of the
//! same size, and the overview says so. Not the place for the snapshot's own keys
//! ([`super::build`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use super::profiled::{parse_frame, Profiled};
use super::DecodeError;
use crate::model::{Action, ImportNote, Reported, Snapshot, Source, StackId, TraceRow, NO_STACK};

/// One event of `traceEvents`, with only the fields any importer step reads.
#[derive(Deserialize)]
pub struct Event<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    ph: Option<Cow<'a, str>>,
    #[serde(default)]
    ts: Option<Lenient>,
    #[serde(default)]
    dur: Option<Lenient>,
    #[serde(default)]
    pid: Option<Id>,
    #[serde(default)]
    tid: Option<Id>,
    #[serde(borrow, default)]
    args: Option<Args<'a>>,
}

#[derive(Deserialize)]
struct Args<'a> {
    #[serde(rename = "Device Type", default)]
    device_type: Option<Lenient>,
    #[serde(rename = "Device Id", default)]
    device_id: Option<Lenient>,
    #[serde(rename = "Addr", default)]
    addr: Option<Lenient>,
    #[serde(rename = "Bytes", default)]
    bytes: Option<Lenient>,
    #[serde(rename = "Total Allocated", default)]
    total_allocated: Option<Lenient>,
    #[serde(rename = "Total Reserved", default)]
    total_reserved: Option<Lenient>,
    #[serde(rename = "Call stack", borrow, default)]
    call_stack: Option<Cow<'a, str>>,
}

/// A number as traces write them: an integer, a float, or a string of either; anything else
/// reads as no number.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Lenient(Option<f64>);

impl<'de> Deserialize<'de> for Lenient {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Lenient;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_i64<E>(self, v: i64) -> Result<Lenient, E> {
                Ok(Lenient(Some(v as f64)))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Lenient, E> {
                Ok(Lenient(Some(v as f64)))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Lenient, E> {
                Ok(Lenient(Some(v).filter(|v| v.is_finite())))
            }
            fn visit_str<E>(self, v: &str) -> Result<Lenient, E> {
                Ok(Lenient(
                    v.trim().parse::<f64>().ok().filter(|v| v.is_finite()),
                ))
            }
            fn visit_unit<E>(self) -> Result<Lenient, E> {
                Ok(Lenient(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Lenient, E> {
                Ok(Lenient(None))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Lenient, A::Error> {
                while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(Lenient(None))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Lenient, A::Error> {
                while map
                    .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Lenient(None))
            }
        }
        d.deserialize_any(V)
    }
}

impl Lenient {
    /// As an integer, when it is one that fits.
    fn int(self) -> Option<i64> {
        self.0
            .filter(|v| v.fract() == 0.0 && v.abs() < 9.0e18)
            .map(|v| v as i64)
    }
}

/// A process or thread id: a number or a string (kept as text's hash).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Id(u64);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an id")
            }
            fn visit_i64<E>(self, v: i64) -> Result<Id, E> {
                Ok(Id(v as u64))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Id, E> {
                Ok(Id(v))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Id, E> {
                Ok(Id(v as i64 as u64))
            }
            fn visit_str<E>(self, v: &str) -> Result<Id, E> {
                // "25738" and 25738 are one thread (traces write both).
                Ok(Id(v
                    .trim()
                    .parse::<i64>()
                    .map(|n| n as u64)
                    .unwrap_or_else(|_| {
                        use std::hash::{Hash, Hasher};
                        let mut h = rustc_hash::FxHasher::default();
                        v.hash(&mut h);
                        h.finish() | (1 << 63)
                    })))
            }
        }
        d.deserialize_any(V)
    }
}

/// An operator's span on one thread.
struct Op<'a> {
    start: f64,
    end: f64,
    name: &'a str,
    call_stack: Option<&'a str>,
}

/// A memory event, as read.
struct Memory {
    /// Index into the events, to keep the trace's order for equal times.
    index: usize,
    ts: f64,
    thread: (Id, Id),
    device: u32,
    oom: bool,
    addr: Option<u64>,
    bytes: i64,
    total_allocated: Option<i64>,
    total_reserved: Option<i64>,
}

/// Builds the model from a trace's events.
pub fn import(events: Vec<Event<'_>>) -> Result<Snapshot, DecodeError> {
    let mut memory: Vec<Memory> = Vec::new();
    let mut ops: HashMap<(Id, Id), Vec<Op<'_>>> = HashMap::new();
    let mut cpu_events = 0u64;
    let mut unreadable = (0u64, 0u64);
    for (index, event) in events.iter().enumerate() {
        let name = event.name.as_deref().unwrap_or("");
        let thread = (event.pid.unwrap_or(Id(0)), event.tid.unwrap_or(Id(0)));
        let oom = name == "[OutOfMemory]";
        if name == "[memory]" || oom {
            let Some(args) = &event.args else { continue };
            let device_type = args.device_type.and_then(Lenient::int);
            if device_type != Some(1) {
                cpu_events += 1;
                continue;
            }
            let (Some(ts), Some(bytes), Some(device)) = (
                event.ts.and_then(|t| t.0),
                args.bytes.and_then(Lenient::int),
                args.device_id
                    .and_then(Lenient::int)
                    .and_then(|d| u32::try_from(d).ok()),
            ) else {
                if unreadable.0 == 0 {
                    unreadable.1 = index as u64;
                }
                unreadable.0 += 1;
                continue;
            };
            memory.push(Memory {
                index,
                ts,
                thread,
                device,
                oom,
                addr: args.addr.and_then(Lenient::int).map(|a| a as u64),
                bytes,
                total_allocated: args.total_allocated.and_then(Lenient::int),
                total_reserved: args.total_reserved.and_then(Lenient::int),
            });
        } else if event.ph.as_deref() == Some("X") {
            let (Some(start), Some(dur)) =
                (event.ts.and_then(|t| t.0), event.dur.and_then(|d| d.0))
            else {
                continue;
            };
            ops.entry(thread).or_default().push(Op {
                start,
                end: start + dur.max(0.0),
                name,
                call_stack: event.args.as_ref().and_then(|a| a.call_stack.as_deref()),
            });
        }
    }
    if memory.is_empty() {
        let what = if cpu_events > 0 {
            format!("this profiler trace has {cpu_events} memory events, none of a CUDA device")
        } else {
            "this profiler trace has no memory events".to_string()
        };
        return Err(DecodeError::new(None, what).with_hint(
            "record with torch.profiler.profile(activities=[ProfilerActivity.CUDA], profile_memory=True, with_stack=True), or record a snapshot with torch.cuda.memory._record_memory_history() and _dump_snapshot()",
        ));
    }
    let mut profiled = Profiled::new(Source::KinetoTrace);
    let stacks = enclosing_stacks(&mut profiled, &memory, ops);
    memory_rows(&mut profiled, &memory, &stacks);
    if cpu_events > 0 {
        profiled.note(ImportNote::CpuMemoryNotShown { events: cpu_events });
    }
    if unreadable.0 > 0 {
        profiled.note(ImportNote::Skipped {
            rows: unreadable.0,
            first: unreadable.1,
        });
    }
    Ok(profiled.finish())
}

/// Each memory event's stack: the operators open on its thread at its time, innermost first,
/// then the innermost operator's Python stack. One sweep per thread over its operators sorted
/// by start (longest first), keeping the open ones.
fn enclosing_stacks(
    profiled: &mut Profiled,
    memory: &[Memory],
    mut ops: HashMap<(Id, Id), Vec<Op<'_>>>,
) -> Vec<StackId> {
    let mut stacks = vec![NO_STACK; memory.len()];
    let mut by_thread: HashMap<(Id, Id), Vec<usize>> = HashMap::new();
    for (i, m) in memory.iter().enumerate() {
        by_thread.entry(m.thread).or_default().push(i);
    }
    // Threads in the order of their first memory event in the file, not the map's: frames
    // and stacks are numbered as they are first met, and the same file must give the same
    // model every time it is read.
    let mut by_thread: Vec<((Id, Id), Vec<usize>)> = by_thread.into_iter().collect();
    by_thread.sort_unstable_by_key(|(_, events)| events[0]);
    // One stack per innermost operator: events under one operator share it.
    let mut stack_of_op: HashMap<((Id, Id), usize), StackId> = HashMap::new();
    for (thread, mut events) in by_thread {
        let Some(list) = ops.get_mut(&thread) else {
            continue;
        };
        list.sort_by(|a, b| a.start.total_cmp(&b.start).then(b.end.total_cmp(&a.end)));
        events.sort_by(|&a, &b| {
            memory[a]
                .ts
                .total_cmp(&memory[b].ts)
                .then(memory[a].index.cmp(&memory[b].index))
        });
        let mut open: Vec<usize> = Vec::new();
        let mut next = 0;
        for i in events {
            let t = memory[i].ts;
            while next < list.len() && list[next].start <= t {
                while open.last().is_some_and(|&o| list[o].end < list[next].start) {
                    open.pop();
                }
                open.push(next);
                next += 1;
            }
            while open.last().is_some_and(|&o| list[o].end < t) {
                open.pop();
            }
            let Some(&innermost) = open.last() else {
                continue;
            };
            stacks[i] = *stack_of_op.entry((thread, innermost)).or_insert_with(|| {
                let mut frames = Vec::new();
                for &o in open.iter().rev() {
                    frames.push(profiled.frame("", -1, list[o].name));
                }
                if let Some(python) = open.iter().rev().find_map(|&o| list[o].call_stack) {
                    for part in python.split(';').filter(|p| !p.trim().is_empty()) {
                        let (file, line, name) = parse_frame(part);
                        frames.push(profiled.frame(&file, line, &name));
                    }
                }
                profiled.stack(&frames)
            });
        }
    }
    stacks
}

/// The memory events as trace rows, per device in time order.
fn memory_rows(profiled: &mut Profiled, memory: &[Memory], stacks: &[StackId]) {
    let mut order: Vec<usize> = (0..memory.len()).collect();
    order.sort_by(|&a, &b| {
        memory[a]
            .ts
            .total_cmp(&memory[b].ts)
            .then(memory[a].index.cmp(&memory[b].index))
    });
    let addressed = memory.iter().any(|m| m.addr.is_some());
    #[derive(Default)]
    struct State {
        /// Live allocations: address → size.
        open: HashMap<u64, u64>,
        /// Without addresses: the synthetic addresses of live allocations by size, latest last.
        by_size: HashMap<u64, Vec<u64>>,
        reserved: Option<i64>,
        /// The importer's segments still reserved, latest last.
        segments: Vec<(u64, u64)>,
        allocated_before: Option<i64>,
        freed_from_before: u64,
        paired: u64,
        unmatched: u64,
        any_total: bool,
    }
    let mut states: HashMap<u32, State> = HashMap::new();
    // Synthetic addresses: above any real one, unique across devices.
    let mut synthetic = 1u64 << 62;
    let mut fresh = || {
        synthetic += 512;
        synthetic
    };
    // Synthetic segments: a range of their own each, so a release can name what it ends.
    let mut next_segment = 1u64 << 61;
    for i in order {
        let m = &memory[i];
        let state = states.entry(m.device).or_default();
        let time_us = m.ts.round() as i64;
        let row = |action, addr, size| TraceRow {
            addr,
            size,
            time_us,
            stack: stacks[i],
            ..TraceRow::new(action)
        };
        if m.oom {
            profiled.push(m.device, row(Action::Oom, 0, m.bytes.unsigned_abs()));
            continue;
        }
        if state.allocated_before.is_none() {
            state.allocated_before = m.total_allocated.map(|t| t - m.bytes);
        }
        let reserve_change = match (state.reserved, m.total_reserved) {
            (Some(before), Some(now)) => now - before,
            _ => 0,
        };
        if let Some(now) = m.total_reserved {
            state.reserved = Some(now);
            state.any_total = true;
        }
        // Memory is reserved before it is handed out, and released after it is freed.
        if reserve_change > 0 {
            let size = reserve_change as u64;
            let seg = next_segment;
            next_segment += size.div_ceil(1 << 21).max(1) << 21;
            state.segments.push((seg, size));
            profiled.push(m.device, row(Action::SegmentAlloc, seg, size));
        }
        let size = m.bytes.unsigned_abs();
        if m.bytes > 0 {
            let addr = match m.addr {
                Some(a) if addressed => a,
                _ => {
                    let a = fresh();
                    state.by_size.entry(size).or_default().push(a);
                    a
                }
            };
            state.open.insert(addr, size);
            profiled.push(m.device, row(Action::Alloc, addr, size));
        } else if m.bytes < 0 {
            let addr = match m.addr {
                Some(a) if addressed => Some(a),
                _ => {
                    let found = state.by_size.get_mut(&size).and_then(Vec::pop);
                    match found {
                        Some(_) => state.paired += 1,
                        None => state.unmatched += 1,
                    }
                    found
                }
            };
            let addr = match addr.filter(|a| state.open.remove(a).is_some()) {
                Some(a) => a,
                None => {
                    state.freed_from_before += size;
                    m.addr.filter(|_| addressed).unwrap_or_else(&mut fresh)
                }
            };
            profiled.push(m.device, row(Action::FreeCompleted, addr, size));
        }
        if reserve_change < 0 {
            let seg = fresh();
            profiled.push(
                m.device,
                row(Action::SegmentFree, seg, reserve_change.unsigned_abs()),
            );
        }
    }
    let mut paired = (0, 0);
    let mut no_reserved = false;
    for (id, state) in states {
        paired.0 += state.paired;
        paired.1 += state.unmatched;
        no_reserved |= !state.any_total;
        if state.any_total {
            let held = (state.allocated_before.unwrap_or(0).max(0) as u64)
                .saturating_sub(state.freed_from_before);
            profiled.device(id).reported = Some(Reported {
                reserved_end: state.reserved.unwrap_or(0).max(0) as u64,
                held_from_before: held,
            });
        }
    }
    if !addressed {
        profiled.note(ImportNote::FreesPairedBySize {
            frees: paired.0,
            unmatched: paired.1,
        });
    }
    if no_reserved {
        profiled.note(ImportNote::NoReservedRecorded);
    }
}
