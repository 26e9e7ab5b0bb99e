//! The JSON importers' front door: reads the document once and hands it to the importer its
//! shape names — a Kineto trace (`{"traceEvents": …}`, [`super::kineto`]), a memory timeline
//! (`[times, sizes]` or raw rows, [`super::memory_timeline`]), a memory profiler's peak tensors
//! (`{"cuda:0": {"tensors": …}}`, [`super::peak_tensors`]), or the snapshot tree written as
//! JSON (tuples become lists), converted to [`Decoded`]s for the shared [`Builder`].
//!
//! The top level is read by one visitor that deserializes `traceEvents` straight into the
//! Kineto importer's typed events (borrowing their strings from the input) and every other
//! key into a value tree, so a large trace is never held as values. The input is read whole
//! first: JSON files are parsed faster from memory, and a trace's strings borrow from it.

use std::borrow::Cow;
use std::fmt;
use std::io::Read;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::build::{At, Builder, Decoded, MAX_DEPTH};
use super::{kineto, memory_timeline, peak_tensors, DecodeError};
use crate::model::Snapshot;

/// A JSON document's top level, as far as choosing its importer needs.
enum Top<'a> {
    /// An object: its Kineto events when it has `traceEvents`, and its other keys.
    Object {
        events: Option<Vec<kineto::Event<'a>>>,
        others: serde_json::Map<String, serde_json::Value>,
    },
    Other(serde_json::Value),
}

impl<'de> Deserialize<'de> for Top<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Top<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object or list")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top<'de>, A::Error> {
                let mut events = None;
                let mut others = serde_json::Map::new();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    if key == "traceEvents" {
                        events = Some(map.next_value()?);
                    } else {
                        others.insert(key.into_owned(), map.next_value()?);
                    }
                }
                Ok(Top::Object { events, others })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Top<'de>, A::Error> {
                let value =
                    serde_json::Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(Top::Other(value))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Top<'de>, E> {
                Ok(Top::Other(serde_json::Value::String(v.to_string())))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Top<'de>, E> {
                Ok(Top::Other(v.into()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Top<'de>, E> {
                Ok(Top::Other(v.into()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Top<'de>, E> {
                Ok(Top::Other(serde_json::Value::from(v)))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Top<'de>, E> {
                Ok(Top::Other(v.into()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Top<'de>, E> {
                Ok(Top::Other(serde_json::Value::Null))
            }
        }
        d.deserialize_any(V)
    }
}

pub fn decode<R: Read>(mut reader: R) -> Result<Snapshot, DecodeError> {
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes).map_err(|e| {
        DecodeError::new(
            Some(bytes.len() as u64),
            format!("reading the file failed: {e}"),
        )
        .with_hint("for a .gz file, the compressed data may be damaged")
    })?;
    if super::is_digest(&bytes[..bytes.len().min(64 << 10)]) {
        return Err(super::digest_is_not_a_snapshot());
    }
    let top: Top = serde_json::from_slice(&bytes).map_err(|e| {
        DecodeError::new(
            None,
            format!(
                "invalid JSON at line {}, column {}: {e}",
                e.line(),
                e.column()
            ),
        )
        .with_hint("the file starts like JSON but is not valid JSON")
    })?;
    match top {
        Top::Object {
            events: Some(events),
            ..
        } => kineto::import(events),
        Top::Object { others, .. } if peak_tensors::is_peak_tensors(&others) => {
            peak_tensors::import(&others)
        }
        Top::Object { others, .. } => snapshot(serde_json::Value::Object(others)),
        Top::Other(value) if memory_timeline::is_timeline(&value) => {
            memory_timeline::import_timeline(&value)
        }
        Top::Other(value) if memory_timeline::is_raw(&value) => memory_timeline::import_raw(&value),
        Top::Other(value @ serde_json::Value::Array(_)) => {
            if value
                .as_array()
                .is_some_and(|rows| rows.first().is_some_and(|r| r.is_array()))
            {
                return Err(DecodeError::new(None, "this is a list of lists, but not a memory timeline")
                    .with_hint("expected torch.profiler's export_memory_timeline output ([times, sizes], or rows of [time, action, bytes, category])"));
            }
            snapshot(value)
        }
        Top::Other(value) => snapshot(value),
    }
}

/// The snapshot tree written as JSON.
fn snapshot(value: serde_json::Value) -> Result<Snapshot, DecodeError> {
    let mut builder = Builder::new();
    let root = node(&mut builder, &value, 0)?;
    builder.finish(root, At(None))
}

fn node(
    builder: &mut Builder,
    value: &serde_json::Value,
    depth: usize,
) -> Result<Decoded, DecodeError> {
    use serde_json::Value as J;
    if depth > MAX_DEPTH {
        return Err(DecodeError::new(
            None,
            format!("values nest deeper than {MAX_DEPTH} levels"),
        ));
    }
    Ok(match value {
        J::Null => Decoded::None,
        J::Bool(b) => Decoded::Bool(*b),
        J::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Decoded::Int(i),
            (None, Some(u), _) => Decoded::BigInt(u.to_string()),
            (_, _, Some(f)) => Decoded::Float(f),
            _ => Decoded::BigInt(n.to_string()),
        },
        J::String(s) => Decoded::Str(builder.strings.intern(s)),
        J::Array(items) => Decoded::List(
            items
                .iter()
                .map(|v| node(builder, v, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        J::Object(map) => {
            let mut pairs = Vec::with_capacity(map.len());
            for (k, v) in map {
                let key = Decoded::Str(builder.strings.intern(k));
                pairs.push((key, node(builder, v, depth + 1)?));
            }
            Decoded::Dict(pairs)
        }
    })
}
