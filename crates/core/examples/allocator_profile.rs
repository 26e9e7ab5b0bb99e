//! Times the allocator's state natively on one snapshot file: `cargo run --release -p
//! memsight-core --example allocator_profile -- FILE [STATES]` prints the build time, the
//! memory the history holds, and `state_at` at `STATES` (default 21) states spread over the
//! trace plus the allocated peak: time, segments, blocks and the answer's JSON size.
//! `-- --synthetic EVENTS LIVE` times a generated trace instead: 512-byte blocks in 2 MiB
//! segments, about `LIVE` of them alive at once (the worst case for an answer's size).

use std::time::Instant;

use memsight_core::analysis::allocator::AllocatorHistory;
use memsight_core::analysis::Analysed;
use memsight_core::model::{Action, Block, BlockState, Device, Segment, Snapshot, Trace, TraceRow};

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let number =
        |i: usize, default: u64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let (analysed, spread) = if args.get(1).map(String::as_str) == Some("--synthetic") {
        let snapshot = synthetic(number(2, 1_000_000), number(3, 100_000));
        let start = Instant::now();
        let analysed = Analysed::new(snapshot);
        println!("analyse        {:>9.1} ms", ms(start));
        (analysed, 21)
    } else {
        let path = args
            .get(1)
            .expect("usage: allocator_profile FILE [STATES] | --synthetic EVENTS LIVE");
        let bytes = std::fs::read(path).expect("readable file");
        let start = Instant::now();
        let analysed =
            Analysed::new(memsight_core::decode::decode_bytes(&bytes).expect("a snapshot"));
        println!("decode+analyse {:>9.1} ms", ms(start));
        (analysed, number(2, 21))
    };
    let id = analysed.snapshot.default_device().unwrap_or(0);
    let position = analysed.device_position(id).expect("a device");
    let (device, facts) = (
        &analysed.snapshot.devices[position],
        &analysed.facts[position],
    );
    let start = Instant::now();
    let history = AllocatorHistory::new(&analysed.snapshot, device, facts);
    println!(
        "build          {:>9.1} ms  ({} events, {} allocations, history {:.1} MiB, model {:.1} MiB, facts {:.1} MiB, unreconciled {}, final sizes predicted {}/{})",
        ms(start),
        history.last_state(),
        facts.allocations.len(),
        history.heap_bytes() as f64 / (1 << 20) as f64,
        analysed.snapshot.heap_bytes() as f64 / (1 << 20) as f64,
        analysed.facts_heap_bytes() as f64 / (1 << 20) as f64,
        history.unreconciled().total(),
        history.size_check().predicted,
        history.size_check().alive_at_end,
    );
    let last = history.last_state() as u64;
    let mut states: Vec<u32> = (0..spread)
        .map(|i| (last * i / (spread - 1).max(1)) as u32)
        .collect();
    states.extend(facts.peak_allocated.row.map(|r| r + 1));
    println!(
        "{:>10} {:>9} {:>9} {:>9} {:>11}",
        "state", "ms", "segments", "blocks", "json bytes"
    );
    let mut times = Vec::new();
    for state in states {
        let start = Instant::now();
        let answer = history.state_at(facts, state);
        let took = ms(start);
        times.push(took);
        let json = serde_json::to_vec(&answer).expect("serialisable").len();
        let start = Instant::now();
        let summary = history.summary_at(facts, state);
        let summary_took = ms(start);
        let summary_json = serde_json::to_vec(&summary).expect("serialisable").len();
        println!(
            "{state:>10} {took:>9.2} {:>9} {:>9} {json:>11} {summary_took:>11.2} {summary_json:>13}",
            answer.segments.len(),
            answer.totals.blocks
        );
    }
    times.sort_by(f64::total_cmp);
    println!(
        "state_at: median {:.2} ms, max {:.2} ms",
        times[times.len() / 2],
        times[times.len() - 1]
    );
}

/// A trace of about `events` rows keeping about `live` 512-byte blocks alive in 2 MiB
/// segments, with the final segments it leaves.
fn synthetic(events: u64, live: u64) -> Snapshot {
    const SEGMENT: u64 = 2 << 20;
    const SLOT: u64 = 512;
    const BASE: u64 = 0x7f00_0000_0000;
    let slots_per_segment = SEGMENT / SLOT;
    // Half full at the most, so that free memory is scattered.
    let segments = (2 * live).div_ceil(slots_per_segment).max(1);
    let slots = segments * slots_per_segment;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rand = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let mut trace = Trace::default();
    let push = |trace: &mut Trace, action, addr, size| {
        let mut row = TraceRow::new(action);
        row.addr = addr;
        row.size = size;
        trace.push(row);
    };
    for s in 0..segments {
        push(
            &mut trace,
            Action::SegmentAlloc,
            BASE + s * SEGMENT,
            SEGMENT,
        );
    }
    let mut used = vec![false; slots as usize];
    let mut alive: Vec<u64> = Vec::new();
    while (trace.len() as u64) < events {
        if (alive.len() as u64) < live && rand(3) != 0 || alive.is_empty() {
            let slot = rand(slots);
            if !used[slot as usize] {
                used[slot as usize] = true;
                alive.push(slot);
                push(
                    &mut trace,
                    Action::Alloc,
                    BASE + slot * SLOT,
                    1 + rand(SLOT),
                );
            }
        } else {
            let slot = alive.swap_remove(rand(alive.len() as u64) as usize);
            used[slot as usize] = false;
            push(&mut trace, Action::FreeRequested, BASE + slot * SLOT, 1);
            push(&mut trace, Action::FreeCompleted, BASE + slot * SLOT, 1);
        }
    }
    trace.finish();
    let mut device = Device {
        id: 0,
        has_trace_list: true,
        trace,
        ..Device::default()
    };
    for s in 0..segments {
        let first = device.blocks.len() as u32;
        let mut free_from: Option<u64> = None;
        for i in 0..slots_per_segment {
            let slot = s * slots_per_segment + i;
            let address = BASE + slot * SLOT;
            if used[slot as usize] {
                if let Some(from) = free_from.take() {
                    device.blocks.push(free_block(from, address));
                }
                device.blocks.push(Block {
                    address,
                    size: SLOT,
                    state: BlockState::ActiveAllocated,
                    ..Block::default()
                });
            } else {
                free_from.get_or_insert(address);
            }
        }
        if let Some(from) = free_from {
            device
                .blocks
                .push(free_block(from, BASE + (s + 1) * SEGMENT));
        }
        device.segments.push(Segment {
            address: BASE + s * SEGMENT,
            total_size: SEGMENT,
            segment_type: memsight_core::model::SegmentType::Small,
            blocks: first..device.blocks.len() as u32,
            ..Segment::default()
        });
    }
    Snapshot {
        devices: vec![device],
        streams: vec![0],
        ..Snapshot::default()
    }
}

fn free_block(from: u64, to: u64) -> Block {
    Block {
        address: from,
        size: to - from,
        state: BlockState::Inactive,
        ..Block::default()
    }
}
