//! Differential tests: the streaming decoder must build exactly the model that `serde-pickle`'s
//! generic decoding of the same bytes yields when fed through the same schema builder.
//! Interning order differs between the two paths, so models are compared by content.

mod common;

use common::*;
use memsight_core::decode::build::{At, Builder, Decoded};
use memsight_core::decode::decode_bytes;
use memsight_core::model::{Snapshot, StackId, Value};
use serde_pickle::Value as P;

fn reference(bytes: &[u8]) -> Snapshot {
    let value = serde_pickle::value_from_slice(bytes, serde_pickle::DeOptions::new())
        .expect("serde-pickle decodes");
    let mut builder = Builder::new();
    let root = node(&mut builder, value);
    builder.finish(root, At(None)).expect("reference builds")
}

fn node(b: &mut Builder, v: P) -> Decoded {
    match v {
        P::None => Decoded::None,
        P::Bool(x) => Decoded::Bool(x),
        P::I64(i) => Decoded::Int(i),
        P::Int(big) => match i64::try_from(&big) {
            Ok(i) => Decoded::Int(i),
            Err(_) => Decoded::BigInt(big.to_string()),
        },
        P::F64(f) => Decoded::Float(f),
        P::Bytes(bytes) => Decoded::Bytes(bytes),
        P::String(s) => Decoded::Str(b.strings.intern(&s)),
        P::List(items) => Decoded::List(items.into_iter().map(|x| node(b, x)).collect()),
        P::Tuple(items) => Decoded::Tuple(items.into_iter().map(|x| node(b, x)).collect()),
        P::Set(items) | P::FrozenSet(items) => {
            Decoded::Set(items.into_iter().map(|x| node(b, x.into_value())).collect())
        }
        P::Dict(map) => Decoded::Dict(
            map.into_iter()
                .map(|(k, v)| (node(b, k.into_value()), node(b, v)))
                .collect(),
        ),
    }
}

fn stack_text(s: &Snapshot, id: StackId) -> Vec<String> {
    s.stack_frames(id)
        .map(|f| {
            let mut extra: Vec<String> = f
                .extra
                .iter()
                .map(|(k, v)| format!("{}={}", s.str(*k), canonical(v)))
                .collect();
            extra.sort();
            format!(
                "{}:{}:{} {:?}",
                s.str(f.filename),
                f.line,
                s.str(f.name),
                extra
            )
        })
        .collect()
}

fn sorted_extra(s: &Snapshot, extra: &[(u32, Value)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = extra
        .iter()
        .map(|(k, v)| (s.str(*k).to_string(), canonical(v)))
        .collect();
    out.sort();
    out
}

/// Dict order is file order on one side and sorted on the other: compare sorted text.
fn canonical(v: &Value) -> String {
    match v {
        Value::Dict(pairs) => {
            let mut items: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{}: {}", canonical(k), canonical(v)))
                .collect();
            items.sort();
            format!("{{{}}}", items.join(", "))
        }
        Value::Set(items) => {
            let mut items: Vec<String> = items.iter().map(canonical).collect();
            items.sort();
            format!("{{{}}}", items.join(", "))
        }
        Value::List(items) | Value::Tuple(items) => {
            format!(
                "[{}]",
                items.iter().map(canonical).collect::<Vec<_>>().join(", ")
            )
        }
        Value::Float(f) if f.is_nan() => "nan".into(),
        other => format!("{other:?}"),
    }
}

/// A block state by name (unknown states carry an interned id, which differs between models).
fn state_name(s: &Snapshot, state: memsight_core::model::BlockState) -> String {
    match state {
        memsight_core::model::BlockState::Other(id) => s.str(id).to_string(),
        known => format!("{known:?}"),
    }
}

fn assert_same(name: &str, fast: &Snapshot, slow: &Snapshot) {
    assert_eq!(fast.top_level, slow.top_level, "{name}: top level");
    assert_eq!(fast.features, slow.features, "{name}: features");
    assert_eq!(fast.device_ids(), slow.device_ids(), "{name}: devices");
    assert_eq!(
        fast.frames.len(),
        slow.frames.len(),
        "{name}: unique frames"
    );
    assert_eq!(
        fast.stacks.len(),
        slow.stacks.len(),
        "{name}: unique stacks"
    );
    assert_eq!(
        fast.annotations.len(),
        slow.annotations.len(),
        "{name}: annotations"
    );
    for (a, b) in fast.annotations.iter().zip(&slow.annotations) {
        assert_eq!(
            (fast.str(a.name), a.time_us, a.device),
            (slow.str(b.name), b.time_us, b.device),
            "{name}"
        );
    }
    assert_eq!(
        fast.allocator_settings.as_ref().map(canonical),
        slow.allocator_settings.as_ref().map(canonical),
        "{name}: settings"
    );
    let extras = |s: &Snapshot| {
        let mut e: Vec<(String, String)> = s
            .extra
            .iter()
            .map(|(k, v)| (k.clone(), canonical(v)))
            .collect();
        e.sort();
        e
    };
    assert_eq!(extras(fast), extras(slow), "{name}: extra keys");
    for (d, e) in fast.devices.iter().zip(&slow.devices) {
        let ctx = format!("{name} device {}", d.id);
        assert_eq!(d.trace.len(), e.trace.len(), "{ctx}: rows");
        assert_eq!(d.trace.action, e.trace.action, "{ctx}: action");
        assert_eq!(d.trace.addr, e.trace.addr, "{ctx}: addr");
        assert_eq!(d.trace.size, e.trace.size, "{ctx}: size");
        assert_eq!(d.trace.time_us, e.trace.time_us, "{ctx}: time");
        for row in 0..d.trace.len() {
            let (x, y) = (d.trace.row(row), e.trace.row(row));
            assert_eq!(
                fast.streams[x.stream as usize], slow.streams[y.stream as usize],
                "{ctx} row {row}: stream"
            );
            assert_eq!(
                stack_text(fast, x.stack),
                stack_text(slow, y.stack),
                "{ctx} row {row}: frames"
            );
            assert_eq!(
                stack_text(fast, x.forward_stack),
                stack_text(slow, y.forward_stack),
                "{ctx} row {row}: forward frames"
            );
            assert_eq!(
                x.compile_context.map(|s| fast.str(s)),
                y.compile_context.map(|s| slow.str(s)),
                "{ctx} row {row}"
            );
            assert_eq!(
                x.user_metadata.map(|s| fast.str(s)),
                y.user_metadata.map(|s| slow.str(s)),
                "{ctx} row {row}"
            );
            assert_eq!(
                x.pool.map(|p| fast.pools[p as usize]),
                y.pool.map(|p| slow.pools[p as usize]),
                "{ctx} row {row}"
            );
        }
        let row_extra = |s: &Snapshot, t: &memsight_core::model::Trace| {
            let mut v: Vec<(u32, String, String)> = t
                .extra
                .iter()
                .map(|(r, k, v)| (*r, s.str(*k).to_string(), canonical(v)))
                .collect();
            v.sort();
            v
        };
        assert_eq!(
            row_extra(fast, &d.trace),
            row_extra(slow, &e.trace),
            "{ctx}: row extras"
        );
        assert_eq!(d.segments.len(), e.segments.len(), "{ctx}: segments");
        for (x, y) in d.segments.iter().zip(&e.segments) {
            assert_eq!(
                (
                    x.address,
                    x.total_size,
                    x.allocated_size,
                    x.active_size,
                    x.requested_size,
                    x.stream,
                    x.segment_type,
                    x.pool_id,
                    x.is_expandable,
                    x.blocks.clone()
                ),
                (
                    y.address,
                    y.total_size,
                    y.allocated_size,
                    y.active_size,
                    y.requested_size,
                    y.stream,
                    y.segment_type,
                    y.pool_id,
                    y.is_expandable,
                    y.blocks.clone()
                ),
                "{ctx}: segment"
            );
            assert_eq!(
                stack_text(fast, x.stack),
                stack_text(slow, y.stack),
                "{ctx}: segment frames"
            );
            assert_eq!(
                sorted_extra(fast, &x.extra),
                sorted_extra(slow, &y.extra),
                "{ctx}: segment extras"
            );
        }
        assert_eq!(d.blocks.len(), e.blocks.len(), "{ctx}: blocks");
        for (x, y) in d.blocks.iter().zip(&e.blocks) {
            assert_eq!(
                (x.address, x.size, x.requested_size),
                (y.address, y.size, y.requested_size),
                "{ctx}: block"
            );
            assert_eq!(
                state_name(fast, x.state),
                state_name(slow, y.state),
                "{ctx}: block state"
            );
            assert_eq!(
                stack_text(fast, x.stack),
                stack_text(slow, y.stack),
                "{ctx}: block frames"
            );
            assert_eq!(x.history.len(), y.history.len(), "{ctx}: history");
            for (h, i) in x.history.iter().zip(&y.history) {
                assert_eq!((h.addr, h.real_size), (i.addr, i.real_size), "{ctx}");
                assert_eq!(
                    stack_text(fast, h.stack),
                    stack_text(slow, i.stack),
                    "{ctx}"
                );
            }
            assert_eq!(
                sorted_extra(fast, &x.extra),
                sorted_extra(slow, &y.extra),
                "{ctx}: block extras"
            );
        }
    }
}

/// Decodes `bytes` with memsight and compares with serde-pickle's reading of the same tree.
///
/// serde-pickle cannot resolve a shared container that itself holds shared references (torch
/// shares each traceback list between the events of one capture, and every frame dict between
/// tracebacks): it stops with "recursive structure found". Its input is therefore the same
/// tree re-pickled by CPython without a memo, while memsight reads the original, memo-heavy
/// bytes, so the comparison also checks memsight's memo handling.
fn check(name: &str, bytes: &[u8]) {
    let fast = decode_bytes(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    let slow = match serde_pickle::value_from_slice(bytes, serde_pickle::DeOptions::new()) {
        Ok(_) => reference(bytes),
        Err(_) => reference(&unshared(bytes)),
    };
    assert_same(name, &fast, &slow);
}

/// The same pickle re-written by CPython with the memo disabled (no shared references).
fn unshared(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let script = r#"
import io, pickle, sys
class Plain(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("class opcode")
data = sys.stdin.buffer.read()
tree = Plain(io.BytesIO(data)).load()
out = io.BytesIO()
p = pickle.Pickler(out, protocol=4)
p.fast = True
p.dump(tree)
sys.stdout.buffer.write(out.getvalue())
"#;
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut stdin = child.stdin.take().unwrap();
    let input = bytes.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(output.status.success(), "re-pickling failed");
    output.stdout
}

#[test]
fn real_snapshots_match_serde_pickle() {
    for path in real_fixture_files() {
        check(&file_name(&path), &std::fs::read(&path).unwrap());
    }
}

#[test]
fn edge_fixtures_match_serde_pickle() {
    let manifest = read_json(&edge("manifest.json"));
    let mut compared = 0;
    for (name, entry) in manifest.as_object().unwrap() {
        if entry["expect"] != "ok" || !name.contains(".pickle") || name.ends_with(".gz") {
            continue;
        }
        let bytes = std::fs::read(edge(name)).unwrap();
        check(name, &bytes);
        compared += 1;
    }
    assert!(compared >= 18, "compared {compared}");
}

#[test]
fn generated_snapshots_match_serde_pickle() {
    let Some(dir) = generated_dir() else { return };
    for (entries, protocol, extra) in [
        (20_000, 4, ""),
        (5_000, 5, "--wrap 300"),
        (3_000, 2, "--devices 2"),
    ] {
        let path = dir.join(format!("diff-{entries}-p{protocol}.pickle"));
        let mut cmd = std::process::Command::new("python3");
        cmd.arg(repo().join("tests/python/gen_snapshot.py"))
            .args([
                "--entries",
                &entries.to_string(),
                "--protocol",
                &protocol.to_string(),
                "--seed",
                "7",
                "-o",
            ])
            .arg(&path)
            .args(extra.split_whitespace());
        let status = cmd.status().expect("python3 runs");
        assert!(status.success(), "generator failed");
        check(&file_name(&path), &std::fs::read(&path).unwrap());
    }
}

fn generated_dir() -> Option<std::path::PathBuf> {
    let dir = repo().join("target/test-data");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}
