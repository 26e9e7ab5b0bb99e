//! The pickle decoder fed chunk by chunk (`PickleFeed`, what the page's worker does while it
//! reads the file) against the same decoder reading from a `Read` (`decode_bytes`, what the
//! command line does): the same model from the same bytes, whatever the chunks, and the same
//! error for a bad file.

mod common;

use common::*;
use memsight_core::decode::{decode_bytes, feeds, DecodeError, PickleFeed};
use memsight_core::model::Snapshot;
use memsight_core::protocol::FileEvent;
use memsight_core::session::Session;

/// Feeds `bytes` in chunks of 1 to `largest` bytes.
fn fed(bytes: &[u8], largest: usize, seed: u64) -> Result<Snapshot, DecodeError> {
    let mut rng = Rng(seed);
    let mut feed = PickleFeed::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let n = (1 + rng.below(largest)).min(rest.len());
        feed.push(rest[..n].to_vec())?;
        rest = &rest[n..];
    }
    feed.finish()
}

/// Every plain pickle among the edge cases, the bundled example and the real fixtures.
fn pickles() -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = [
        "small_p4.pickle",
        "small_p5.pickle",
        "legacy_2_0.pickle",
        "all_plain_opcodes.pickle",
        "big_ints.pickle",
    ]
    .iter()
    .map(|n| edge(n))
    .collect();
    files.push(repo().join("static/example.pickle"));
    files.extend(real_fixture_files());
    files
        .iter()
        .map(|p| (file_name(p), std::fs::read(p).unwrap()))
        .filter(|(_, bytes)| feeds(bytes))
        .collect()
}

#[test]
fn fed_in_any_chunks_the_model_is_the_one_read_from_the_file() {
    let files = pickles();
    assert!(files.len() >= 6, "only {} pickles", files.len());
    for (name, bytes) in files {
        let read = decode_bytes(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        // Whole, in the worker's chunks, in pieces around the parser's 16-byte window and
        // its 1 MiB reads, and byte by byte for the small files.
        let mut sizes = vec![bytes.len(), 8 << 20, 65_536, 1 << 20];
        if bytes.len() < 300_000 {
            sizes.extend([7, 40]);
        }
        for (seed, largest) in sizes.into_iter().enumerate() {
            let got = fed(&bytes, largest, seed as u64 + 1)
                .unwrap_or_else(|e| panic!("{name}, chunks up to {largest} bytes: {e}"));
            assert!(
                got == read,
                "{name}: chunks up to {largest} bytes give another model"
            );
        }
    }
}

#[test]
fn a_bad_file_fails_fed_as_it_fails_read() {
    let bytes = std::fs::read(edge("small_p4.pickle")).unwrap();
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    for cut in (0..bytes.len()).step_by(37) {
        cases.push((format!("cut at {cut}"), bytes[..cut].to_vec()));
    }
    let mut rng = Rng(5);
    for i in 0..60 {
        let mut corrupt = bytes.clone();
        let at = 2 + rng.below(corrupt.len() - 2);
        corrupt[at] = rng.next() as u8;
        cases.push((format!("flip {i} at {at}"), corrupt));
    }
    let mut trailing = bytes.clone();
    trailing.extend_from_slice(b"garbage");
    cases.push(("trailing garbage".into(), trailing));
    // pickle.dumps of os.system bound to an argument, as an attacker would write it.
    cases.push(("hostile".into(), b"\x80\x04\x95\x1f\x00\x00\x00\x00\x00\x00\x00\x8c\x05posix\x94\x8c\x06system\x94\x93\x94\x8c\x08touch /x\x94\x85\x94R\x94.".to_vec()));
    let mut failures = 0;
    for (what, case) in cases {
        let read = decode_bytes(&case);
        for largest in [3, 64, case.len().max(1)] {
            let got = fed(&case, largest, 9);
            match (&read, &got) {
                (Ok(a), Ok(b)) => assert!(a == b, "{what}: another model fed"),
                (Err(a), Err(b)) => {
                    failures += 1;
                    assert_eq!(a, b, "{what}, chunks up to {largest}: another error fed");
                }
                _ => panic!("{what}, chunks up to {largest}: read {read:?}, fed {got:?}"),
            }
        }
    }
    assert!(failures > 50, "only {failures} failures");
}

#[test]
fn an_empty_file_is_said_to_be_empty() {
    let err = PickleFeed::new().finish().unwrap_err();
    assert_eq!(err, decode_bytes(&[]).unwrap_err());
}

#[test]
fn a_fed_session_loads_what_a_read_session_loads() {
    let bytes = std::fs::read(repo().join("static/example.pickle")).unwrap();
    let clock = || 0.0;
    let mut read = Session::new();
    let FileEvent::Loaded(expected) =
        read.load_event(&bytes[..], bytes.len() as u64, &clock, &mut |_| {})
    else {
        panic!("the example loads")
    };

    let mut session = Session::new();
    let mut events = Vec::new();
    let mut feeding = session
        .start_feeding(bytes.len() as u64, &clock, &mut |e| events.push(e))
        .unwrap();
    for chunk in bytes.chunks(100_000) {
        feeding
            .push(chunk.to_vec(), &clock, &mut |e| events.push(e))
            .unwrap();
    }
    assert!(
        !session.is_loaded(),
        "nothing is loaded before the file ends"
    );
    let FileEvent::Loaded(summary) = session.finish_feeding(feeding, &clock) else {
        panic!("the example loads fed")
    };
    assert_eq!(summary, expected);
    assert!(session.analysed().unwrap().snapshot == read.analysed().unwrap().snapshot);
    let progress: Vec<u64> = events
        .iter()
        .map(|e| match e {
            FileEvent::Progress { bytes_read, .. } => *bytes_read,
            other => panic!("only progress while feeding, got {other:?}"),
        })
        .collect();
    assert_eq!(progress.first(), Some(&0));
    assert_eq!(progress.last(), Some(&(bytes.len() as u64)));
    assert!(progress.windows(2).all(|w| w[0] < w[1]));

    // One file per session, fed or read.
    assert!(session.start_feeding(1, &clock, &mut |_| {}).is_err());
    let mut other = Session::new();
    other.load_event(&bytes[..], bytes.len() as u64, &clock, &mut |_| {});
    assert!(other.start_feeding(1, &clock, &mut |_| {}).is_err());
}

#[test]
fn a_wait_for_the_first_part_before_feeding_counts_as_reading_in_the_load() {
    let bytes = std::fs::read(repo().join("static/example.pickle")).unwrap();
    // Each reading of the clock is 10 ms after the last.
    let ticks = std::cell::Cell::new(0.0);
    let clock = || {
        ticks.set(ticks.get() + 10.0);
        ticks.get()
    };
    let load = |waited_first: Option<f64>| {
        ticks.set(0.0);
        let mut session = Session::new();
        let mut feeding = session
            .start_feeding(bytes.len() as u64, &clock, &mut |_| {})
            .unwrap();
        if let Some(ms) = waited_first {
            feeding.waited_before_start(ms);
        }
        feeding.waited(3.0);
        feeding.push(bytes.clone(), &clock, &mut |_| {}).unwrap();
        let FileEvent::Loaded(summary) = session.finish_feeding(feeding, &clock) else {
            panic!("the example loads fed")
        };
        summary
    };
    let plain = load(None);
    let waited = load(Some(25.0));
    assert_eq!(plain.read_ms, 3.0);
    assert_eq!(waited.read_ms, 28.0);
    assert_eq!(waited.decode_ms, plain.decode_ms + 25.0);
    assert_eq!(waited.analyse_ms, plain.analyse_ms);
    assert_eq!(waited.overview, plain.overview);
}
