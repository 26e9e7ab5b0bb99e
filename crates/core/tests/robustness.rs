//! Bad input is normal input: truncated and corrupted snapshots must give an error with an
//! offset, never a panic, whatever the chunk boundaries.

mod common;

use std::io::Read;
use std::panic::{catch_unwind, AssertUnwindSafe};

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
