//! The decoder against real PyTorch snapshots and hand-made edge cases, checked against
//! values CPython computed independently (`tests/expectations/*.json`).

mod common;

use common::*;
use memsight_core::analysis::Analysed;
use memsight_core::decode::decode_bytes;
use memsight_core::overview;

#[test]
fn every_real_snapshot_matches_cpython() {
    let files = real_fixture_files();
    if files.is_empty() {
        return;
    }
    let expectations = read_json(&repo().join("tests/expectations/real.json"));
    for path in &files {
        let name = file_name(path);
        let snapshot = decode_file(path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let expected = expectations
            .get(&name)
            .unwrap_or_else(|| panic!("{name}: no expectation recorded"));
        check_expectations(&name, &Analysed::new(snapshot), expected);
    }
    assert!(
        files.len() >= 30,
        "expected the whole corpus, found {}",
        files.len()
    );
}

#[test]
fn every_good_edge_fixture_matches_cpython() {
    let expectations = read_json(&repo().join("tests/expectations/edge.json"));
    let expectations = expectations.as_object().unwrap();
    assert!(expectations.len() >= 20);
    for (name, expected) in expectations {
        let snapshot = decode_file(&edge(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        check_expectations(name, &Analysed::new(snapshot), expected);
    }
}

#[test]
fn the_bundled_example_matches_the_generator() {
    let snapshot = decode_file(&repo().join("static/example.pickle")).unwrap();
    let expected = read_json(&repo().join("tests/expectations/example.json"));
    check_expectations("example", &Analysed::new(snapshot), &expected);
}

#[test]
fn bad_fixtures_are_rejected_with_an_offset_and_reason() {
    let manifest = read_json(&edge("manifest.json"));
    let mut rejected = 0;
    for (name, entry) in manifest.as_object().unwrap() {
        if entry["expect"] != "reject" {
            continue;
        }
        rejected += 1;
        let bytes = std::fs::read(edge(name)).unwrap();
        let err = decode_bytes(&bytes).expect_err(name);
        assert!(!err.message.is_empty(), "{name}");
        let text = err.to_string();
        match name.as_str() {
            "hostile_os_system.pickle" => {
                assert!(
                    text.contains("GLOBAL") && text.contains("os") && text.contains("refused"),
                    "{text}"
                );
                assert!(err
                    .hint
                    .as_deref()
                    .unwrap()
                    .contains("code, not a snapshot"));
            }
            "hostile_stack_global.pickle" => assert!(text.contains("STACK_GLOBAL"), "{text}"),
            "truncated.pickle" => assert!(text.contains("ends in the middle"), "{text}"),
            "memo_out_of_range.pickle" => assert!(text.contains("memo index"), "{text}"),
            "huge_length.pickle" => assert!(
                text.contains("limit") || text.contains("ends in the middle"),
                "{text}"
            ),
            "deep_nesting.pickle" => assert!(text.contains("deeper than"), "{text}"),
            "bad_utf8.pickle" => assert!(text.contains("UTF-8"), "{text}"),
            "trailing_garbage.pickle" => {
                assert!(text.contains("after the pickle's STOP"), "{text}")
            }
            "kineto_no_memory.json" => {
                assert!(text.contains("no memory events"), "{text}");
                assert!(err.hint.as_deref().unwrap().contains("profile_memory=True"));
            }
            "not_a_snapshot.txt" => assert!(text.contains("unrecognised"), "{text}"),
            other => panic!("add a check for {other}: {text}"),
        }
        if name.ends_with(".pickle") {
            assert!(err.offset.is_some(), "{name}: {text}");
        }
    }
    assert!(rejected >= 10);
}

#[test]
fn hostile_pickle_names_the_opcode_and_offset() {
    let bytes = std::fs::read(edge("hostile_os_system.pickle")).unwrap();
    let at = bytes.iter().position(|&b| b == b'c').unwrap() as u64;
    let err = decode_bytes(&bytes).unwrap_err();
    assert_eq!(err.offset, Some(at));
}

#[test]
fn gzip_json_and_every_protocol_give_the_same_model() {
    let reference = decode_file(&edge("small_p4.pickle")).unwrap();
    for name in [
        "small_p2.pickle",
        "small_p3.pickle",
        "small_p5.pickle",
        "small.pickle.gz",
        "small.json",
    ] {
        let other = decode_file(&edge(name)).unwrap();
        assert_eq!(other.devices.len(), reference.devices.len(), "{name}");
        for (a, b) in reference.devices.iter().zip(&other.devices) {
            assert_eq!(a.trace.addr, b.trace.addr, "{name}");
            assert_eq!(a.trace.size, b.trace.size, "{name}");
            assert_eq!(a.trace.action, b.trace.action, "{name}");
            assert_eq!(a.trace.time_us, b.trace.time_us, "{name}");
            assert_eq!(a.blocks.len(), b.blocks.len(), "{name}");
        }
    }
}

#[test]
fn edge_case_details_are_kept() {
    use memsight_core::model::{BlockState, Value};
    let s = decode_file(&edge("big_ints.pickle")).unwrap();
    assert!(s.streams.contains(&((1u64 << 63) + 12345)));
    let extra = &s.extra.iter().find(|(k, _)| k == "extra_ints").unwrap().1;
    let text = extra.display();
    assert!(text.contains("18446744073709551616"), "{text}");
    assert!(
        text.contains("1606938044258990275541962092341162602522202993782792835301376"),
        "{text}"
    );

    let s = decode_file(&edge("floats.pickle")).unwrap();
    let floats = &s.extra.iter().find(|(k, _)| k == "extra_floats").unwrap().1;
    let Value::List(items) = floats else { panic!() };
    assert_eq!(items[0], Value::Float(0.8));
    assert_eq!(items[3], Value::Float(f64::MAX));

    let s = decode_file(&edge("legacy_2_0.pickle")).unwrap();
    let d = &s.devices[0];
    assert!(d.blocks.iter().any(|b| !b.history.is_empty()));
    for seg in &d.segments {
        let blocks = &d.blocks[seg.blocks.start as usize..seg.blocks.end as usize];
        assert_eq!(blocks[0].address, seg.address);
        for pair in blocks.windows(2) {
            assert_eq!(pair[1].address, pair[0].address + pair[0].size);
        }
    }

    let s = decode_file(&edge("pending_free.pickle")).unwrap();
    assert!(s
        .devices
        .iter()
        .flat_map(|d| &d.blocks)
        .any(|b| b.state == BlockState::ActivePendingFree));

    let s = decode_file(&edge("private_pool.pickle")).unwrap();
    assert!(s
        .devices
        .iter()
        .flat_map(|d| &d.segments)
        .any(|seg| seg.pool_id == Some((1, 3))));

    let s = decode_file(&edge("oom.pickle")).unwrap();
    let a = Analysed::new(s);
    let warnings = overview::build(&a, a.snapshot.default_device().unwrap())
        .unwrap()
        .warnings;
    assert!(warnings.iter().any(|w| w.kind() == "oom"), "{warnings:?}");

    let s = decode_file(&edge("unknown_keys.pickle")).unwrap();
    assert!(!s.extra.is_empty());
    let d = &s.devices[0];
    assert!(d.segments.iter().any(|x| !x.extra.is_empty()));
    assert!(d.blocks.iter().any(|x| !x.extra.is_empty()));
    assert!(
        (0..d.trace.len()).all(|r| d.trace.pool(r).is_some()),
        "pool_id kept per row"
    );
    assert!((0..d.trace.len()).any(|r| d.trace.forward_stack(r) != memsight_core::model::NO_STACK));
    let fx = s
        .frames
        .iter()
        .find(|f| !f.extra.is_empty())
        .expect("fx frame keys kept");
    assert!(fx.extra.iter().any(|(k, _)| s.str(*k) == "fx_node_op"));
    // Read, not kept as unknown: pinned host memory that recorded nothing is no device.
    assert!(!s.extra.iter().any(|(k, _)| k.starts_with("host_")));
    assert!(s.device(memsight_core::model::PINNED_HOST_DEVICE).is_none());
    assert!(s.extra.iter().any(|(k, _)| k == "future_top"));
    // Its fx_original_trace ("x = a @ b") is no traceback text: the node has no original.
    assert!(s
        .fx_nodes
        .iter()
        .all(|n| n.original == memsight_core::model::NO_STACK));

    let s = decode_file(&edge("segment_list.pickle")).unwrap();
    assert_eq!(s.top_level, memsight_core::model::TopLevel::SegmentList);

    let s = decode_file(&edge("wrapped.pickle")).unwrap();
    let a = Analysed::new(s);
    let warnings = overview::build(&a, 0).unwrap().warnings;
    assert!(
        warnings.iter().any(|w| w.kind() == "ring-buffer-wrapped"),
        "{warnings:?}"
    );
}
