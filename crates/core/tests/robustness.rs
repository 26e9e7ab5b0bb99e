//! Bad input is normal input: truncated and corrupted snapshots must give an error with an
//! offset, never a panic, whatever the chunk boundaries.

mod common;

use std::io::Read;
use std::panic::{catch_unwind, AssertUnwindSafe};

use common::pickle::{self, Pickle};
use common::*;
use memsight_core::decode::{decode_bytes, decode_reader};

fn samples() -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = [
        "small_p4.pickle",
        "small_p5.pickle",
        "small.pickle.gz",
        "small.json",
        "legacy_2_0.pickle",
        "all_plain_opcodes.pickle",
        "big_ints.pickle",
    ]
    .iter()
    .map(|n| (n.to_string(), std::fs::read(edge(n)).unwrap()))
    .collect();
    out.push((
        "example.pickle".into(),
        std::fs::read(repo().join("static/example.pickle")).unwrap(),
    ));
    let real = real_fixture_files();
    for path in real
        .iter()
        .filter(|p| std::fs::metadata(p).unwrap().len() < 300_000)
        .take(4)
    {
        out.push((file_name(path), std::fs::read(path).unwrap()));
    }
    out
}

fn decode_no_panic(name: &str, what: &str, bytes: &[u8]) -> bool {
    match catch_unwind(AssertUnwindSafe(|| decode_bytes(bytes))) {
        Ok(result) => result.is_err(),
        Err(_) => panic!("{name}: decoder panicked on {what}"),
    }
}

#[test]
fn truncation_anywhere_is_an_error() {
    let mut rng = Rng(0x5eed);
    for (name, bytes) in samples() {
        let mut cuts: Vec<usize> = (0..bytes.len().min(64)).collect();
        cuts.extend((0..150).map(|_| rng.below(bytes.len())));
        cuts.extend(bytes.len().saturating_sub(64)..bytes.len());
        for cut in cuts {
            let what = format!("truncation at {cut} of {}", bytes.len());
            assert!(
                decode_no_panic(&name, &what, &bytes[..cut]),
                "{name}: {what} decoded without error"
            );
        }
    }
}

#[test]
fn truncation_errors_say_where() {
    let bytes = std::fs::read(edge("small_p4.pickle")).unwrap();
    let err = decode_bytes(&bytes[..bytes.len() / 2]).unwrap_err();
    assert!(err.offset.is_some());
    assert!(err.to_string().contains("ends in the middle"), "{err}");
}

#[test]
fn flipped_bytes_never_panic() {
    let mut rng = Rng(0xf11b);
    let mut errors = 0;
    let mut total = 0;
    for (name, bytes) in samples() {
        for _ in 0..300 {
            let mut corrupt = bytes.clone();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(corrupt.len());
                corrupt[i] ^= 1 << rng.below(8);
            }
            total += 1;
            if decode_no_panic(&name, "flipped bytes", &corrupt) {
                errors += 1;
            }
        }
    }
    // Flipping a digit of a number still gives a valid pickle; most flips must be caught.
    assert!(
        errors * 2 > total,
        "only {errors} of {total} corruptions were detected"
    );
}

/// A reader that hands out data in tiny, irregular pieces, to exercise chunk boundaries.
struct Dribble<'a> {
    data: &'a [u8],
    rng: Rng,
}

impl Read for Dribble<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = (1 + self.rng.below(7)).min(out.len()).min(self.data.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

#[test]
fn chunk_boundaries_do_not_matter() {
    for (name, bytes) in samples() {
        let whole = decode_bytes(&bytes).unwrap();
        let mut reported = 0;
        let dribbled = decode_reader(
            Dribble {
                data: &bytes,
                rng: Rng(9),
            },
            &mut |n| reported = n,
        )
        .unwrap();
        assert_eq!(whole, dribbled, "{name}");
        assert_eq!(
            reported,
            bytes.len() as u64,
            "{name}: progress reaches the file size"
        );
    }
}

#[test]
fn hostile_input_is_refused_before_anything_runs() {
    // pickle.dumps of os.system bound to an argument, as an attacker would write it.
    let bytes = b"\x80\x04\x95\x1f\x00\x00\x00\x00\x00\x00\x00\x8c\x05posix\x94\x8c\x06system\x94\x93\x94\x8c\x08touch /x\x94\x85\x94R\x94.";
    let err = decode_bytes(bytes).unwrap_err();
    let stack_global = bytes.iter().position(|&b| b == 0x93).unwrap() as u64;
    assert_eq!(err.offset, Some(stack_global));
    assert!(err.message.contains("STACK_GLOBAL"), "{err}");
    for op in [
        b'c', b'R', b'b', b'i', b'o', 0x81, 0x92, 0x82, 0x83, 0x84, b'P', b'Q',
    ] {
        let bytes = [0x80, 4, b'N', op, b'.'];
        let err = decode_bytes(&bytes).unwrap_err();
        assert_eq!(err.offset, Some(3), "opcode {op:#x}: {err}");
        assert!(err.message.contains("refused"), "{err}");
    }
}

#[test]
fn absurd_lengths_allocate_nothing_up_front() {
    // BINUNICODE8 claiming 2**60 bytes, then nothing.
    let mut bytes = vec![0x80, 4, 0x8d];
    bytes.extend_from_slice(&(1u64 << 60).to_le_bytes());
    let err = decode_bytes(&bytes).unwrap_err();
    assert!(err.message.contains("limit"), "{err}");
    // LONG4 with a 2 GiB length.
    let bytes = [0x80, 4, 0x8b, 0xff, 0xff, 0xff, 0x7f, 0];
    let err = decode_bytes(&bytes).unwrap_err();
    assert!(
        err.to_string().contains("limit") || err.to_string().contains("ends"),
        "{err}"
    );
    // BINPUT far past the memo.
    let bytes = [0x80, 4, b'N', b'r', 0xff, 0xff, 0xff, 0x7f, b'.'];
    assert!(decode_bytes(&bytes)
        .unwrap_err()
        .message
        .contains("memo index"));
}

/// Memo references that expand exponentially are refused where the budget runs out, with
/// its offset, wherever the value would be kept (a key memsight does not know, the allocator's
/// settings, annotations), in bytes and as a stream: a 30-level chain is 2^30 values from
/// under 500 bytes.
#[test]
fn memo_bombs_are_refused_with_their_offset() {
    let bombs = [
        Pickle::snapshot_with("extra_key", |p| {
            p.bomb(0, 30);
        }),
        Pickle::snapshot_with("allocator_settings", |p| {
            p.op(b'}').text("a");
            p.bomb(0, 30);
            p.op(b's');
        }),
        Pickle::snapshot_with("external_annotations", |p| {
            p.bomb(0, 30);
        }),
    ];
    for bytes in bombs {
        assert!(bytes.len() < 500, "{} bytes", bytes.len());
        let Err(err) = decode_bytes(&bytes) else {
            panic!("a bomb was read");
        };
        assert!(
            err.message.contains("memo references expand to more than"),
            "{err}"
        );
        let at = err.offset.expect("an offset");
        assert!(at <= bytes.len() as u64, "{at}");
        let Err(streamed) = decode_reader(&bytes[..], &mut |_| {}) else {
            panic!("a bomb was read as a stream");
        };
        assert_eq!(streamed.message, err.message);
    }
    // A short chain is a value like any other.
    let small = Pickle::snapshot_with("extra_key", |p| {
        p.bomb(0, 4);
    });
    decode_bytes(&small).unwrap();
}

/// The benign form of the same thing, as Python's pickler writes `device_traces=[T] * n` of
/// one memoized trace: each device would copy its rows, so they count against the budget.
#[test]
fn one_trace_named_for_many_devices_is_refused() {
    let bytes = pickle::one_trace_for_many_devices(1000, 1000);
    let Err(err) = decode_bytes(&bytes) else {
        panic!("a million trace rows from {} bytes were read", bytes.len());
    };
    assert!(
        err.message.contains("memo references expand to more than"),
        "{err}"
    );
}

/// An integer wider than any snapshot value is refused at its byte, before its decimal text
/// (whose cost grows with the square of its width) is made.
#[test]
fn wide_integers_are_refused_at_their_byte() {
    let bytes = pickle::wide_integer(200_000);
    let Err(err) = decode_bytes(&bytes) else {
        panic!("a 200,000-byte integer was read");
    };
    assert!(err.message.contains("200000 bytes wide"), "{err}");
    let at = err.offset.unwrap() as usize;
    assert_eq!(bytes[at], 0x8b);
    // 2**200, as the big_ints fixture has it, is read.
    let ok = Pickle::snapshot_with("extra", |p| {
        p.op(0x8a).op(26).0.extend([0; 25].iter().chain(&[1]));
    });
    decode_bytes(&ok).unwrap();
}

/// A file naming more devices than any process sees is refused rather than given a view of
/// each: a hundred thousand empty trace lists are 200 KB.
#[test]
fn a_hundred_thousand_devices_are_refused() {
    let bytes = pickle::empty_devices(100_000);
    let Err(err) = decode_bytes(&bytes) else {
        panic!("a hundred thousand devices were read");
    };
    assert!(err.message.contains("00 devices"), "{err}");
}

/// Sizes no device could hold are refused, not summed into a saturated peak; a failed request
/// may ask for anything.
#[test]
fn sizes_beyond_any_device_are_refused() {
    let snapshot = |size: &str, action: &str| {
        format!(
            r#"{{"segments": [], "device_traces": [[{{"action": "{action}", "addr": 4096, "size": {size}, "stream": 0, "frames": []}}]]}}"#
        )
    };
    for size in ["18446744073709551615", "1125899906842625"] {
        let err = decode_bytes(snapshot(size, "alloc").as_bytes()).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains(&format!("device 0's trace entry 0 (alloc) is {size} bytes"))
                && message.contains("no device holds more than"),
            "{message}"
        );
    }
    decode_bytes(snapshot("1125899906842624", "alloc").as_bytes()).unwrap();
    decode_bytes(snapshot("18446744073709551615", "oom").as_bytes()).unwrap();
    let segment = r#"{"segments": [{"device": 0, "address": 4096, "total_size": 18446744073709551615, "stream": 0, "segment_type": "large", "blocks": []}], "device_traces": [[]]}"#;
    let message = decode_bytes(segment.as_bytes()).unwrap_err().to_string();
    assert!(
        message.contains("device 0's segment at 0x1000 is 18446744073709551615 bytes"),
        "{message}"
    );
}

/// A trace entry without its `action` is named as such, with the keys it has.
#[test]
fn an_entry_without_an_action_says_so() {
    let file = r#"{"segments": [], "device_traces": [[{"addr": 4096, "size": 512, "stream": 0}]]}"#;
    let message = decode_bytes(file.as_bytes()).unwrap_err().to_string();
    assert!(
        message.contains("device_traces[0][0] has no 'action', so it is not a trace entry (its keys: 'addr', 'size', 'stream')"),
        "{message}"
    );
}

/// One memoized stack of 100,000 frames shared by 2,000 allocations (a 4 MB pickle): the
/// lines holding memory walk the stack once, not once per allocation (minutes before).
#[test]
fn a_deep_stack_shared_by_many_allocations_is_walked_once() {
    const FRAMES: u32 = 100_000;
    const ALLOCATIONS: u32 = 2_000;
    let bytes = pickle::shared_deep_stack(FRAMES, ALLOCATIONS);
    assert!(bytes.len() < 10 << 20, "{} bytes", bytes.len());
    let analysed = memsight_core::analysis::Analysed::new(decode_bytes(&bytes).unwrap());
    let facts = &analysed.facts[0];
    let chosen: Vec<u32> = (0..facts.allocations.len() as u32).collect();
    let start = std::time::Instant::now();
    let files = memsight_core::analysis::lines::lines_of(
        &analysed.snapshot,
        &analysed.snapshot.devices[0],
        facts,
        &chosen,
    );
    let took = start.elapsed();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].through.count, ALLOCATIONS);
    assert_eq!(files[0].lines.len(), FRAMES as usize);
    assert!(files[0]
        .lines
        .iter()
        .all(|l| l.through.count == ALLOCATIONS));
    // Linear work takes a fraction of a second; once per allocation it took minutes.
    assert!(took.as_secs() < 20, "{took:?}");
}
