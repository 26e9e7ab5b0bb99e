//! The JSON importer: the snapshot tree written as JSON (tuples become lists).
//!
//! Parsed with `serde_json` into its value tree, then converted to [`Node`]s for the shared
//! [`Builder`]. JSON snapshots are rare and small next to pickles, so this importer favours
//! simplicity over streaming.

use std::io::Read;

use super::build::{At, Builder, Node, MAX_DEPTH};
use super::DecodeError;
use crate::model::Snapshot;

pub fn decode<R: Read>(reader: R) -> Result<Snapshot, DecodeError> {
    let value: serde_json::Value =
        serde_json::from_reader(std::io::BufReader::with_capacity(1 << 20, reader)).map_err(
            |e| {
                DecodeError::new(
                    None,
                    format!(
                        "invalid JSON at line {}, column {}: {e}",
                        e.line(),
                        e.column()
                    ),
                )
                .with_hint("the file starts like JSON but is not valid JSON")
            },
        )?;
    if let serde_json::Value::Array(rows) = &value {
        if rows.first().is_some_and(|r| r.is_array()) {
            return Err(DecodeError::new(None, "this is a list of lists, not a memory snapshot")
                .with_hint("it looks like torch.profiler's export_memory_timeline output, which is not supported yet"));
        }
    }
    let mut builder = Builder::new();
    let root = node(&mut builder, &value, 0)?;
    builder.finish(root, At(None))
}

fn node(
    builder: &mut Builder,
    value: &serde_json::Value,
    depth: usize,
) -> Result<Node, DecodeError> {
    use serde_json::Value as J;
    if depth > MAX_DEPTH {
        return Err(DecodeError::new(
            None,
            format!("values nest deeper than {MAX_DEPTH} levels"),
        ));
    }
    Ok(match value {
        J::Null => Node::None,
        J::Bool(b) => Node::Bool(*b),
        J::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Node::Int(i),
            (None, Some(u), _) => Node::BigInt(u.to_string()),
            (_, _, Some(f)) => Node::Float(f),
            _ => Node::BigInt(n.to_string()),
        },
        J::String(s) => Node::Str(builder.strings.intern(s)),
        J::Array(items) => Node::List(
            items
                .iter()
                .map(|v| node(builder, v, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        J::Object(map) => {
            let mut pairs = Vec::with_capacity(map.len());
            for (k, v) in map {
                let key = Node::Str(builder.strings.intern(k));
                pairs.push((key, node(builder, v, depth + 1)?));
            }
            Node::Dict(pairs)
        }
    })
}
