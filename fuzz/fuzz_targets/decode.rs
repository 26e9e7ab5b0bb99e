//! Fuzz target: arbitrary bytes must never make the decoder panic.
//!
//! Every input is decoded twice: whole, through `decode_bytes`, and through a reader that hands
//! the data over in tiny chunks of pseudo-random sizes (seeded from the input, so every run of
//! one input is reproducible), which exercises every chunk-boundary path of the streaming
//! decoder. Both must return without panicking, and they must agree: the result of decoding may
//! not depend on how the stream was cut (for damaged gzip input only success/failure must agree,
//! see below).

#![no_main]

use std::io::{self, Read};

use libfuzzer_sys::fuzz_target;
use memsight_core::decode::{decode_bytes, decode_reader};

/// Serves `data` in chunks of 1–16 bytes, with an occasional 0–4 KiB chunk (and, once in a
/// while, an `Interrupted` error, which readers must retry).
struct Chunked<'a> {
    data: &'a [u8],
    state: u64,
}

impl Chunked<'_> {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

impl Read for Chunked<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.data.is_empty() || out.is_empty() {
            return Ok(0);
        }
        let r = self.next();
        if r % 97 == 0 {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted"));
        }
        let want = if r % 13 == 0 {
            (r >> 8) as usize % 4097
        } else {
            1 + (r >> 8) as usize % 16
        };
        let n = want.max(1).min(out.len()).min(self.data.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn seed(data: &[u8]) -> u64 {
    // FNV-1a; never 0 (xorshift's fixed point).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h | 1
}

fuzz_target!(|data: &[u8]| {
    let whole = decode_bytes(data);

    let mut last = 0u64;
    let chunked = decode_reader(
        Chunked {
            data,
            state: seed(data),
        },
        &mut |read| {
            assert!(read >= last, "progress went backwards: {read} after {last}");
            assert!(
                read <= data.len() as u64,
                "progress {read} beyond the input's {} bytes",
                data.len()
            );
            last = read;
        },
    );

    match (&whole, &chunked) {
        (Ok(a), Ok(b)) => {
            // Debug as a fallback for NaN floats, which are never `==`.
            assert!(
                a == b || format!("{a:?}") == format!("{b:?}"),
                "whole and chunked decoding give different snapshots"
            );
        }
        // A damaged gzip stream may yield some garbage output before inflate notices the damage,
        // and how much depends on how much compressed input it was given at once: the error
        // may then come from the pickle reader instead of inflate. Elsewhere, errors must match.
        (Err(_), Err(_)) if data.starts_with(&[0x1f, 0x8b]) => {}
        (Err(a), Err(b)) => assert_eq!(a, b, "whole and chunked decoding give different errors"),
        (Ok(_), Err(e)) => panic!("whole decoding succeeded, chunked failed: {e}"),
        (Err(e), Ok(_)) => panic!("chunked decoding succeeded, whole failed: {e}"),
    }
});
