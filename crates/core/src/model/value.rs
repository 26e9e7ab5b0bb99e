//! Values the model keeps as written: allocator settings, unknown keys.

use serde::Serialize;

/// A plain Python value (the subset snapshots use), owned and independent of any decoder.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    /// An integer outside `i64`, as decimal text (kept exact).
    BigInt(String),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<Value>),
    Tuple(Vec<Value>),
    Set(Vec<Value>),
    Dict(Vec<(Value, Value)>),
}

impl Value {
    /// A short, single-line rendering for tables (Python-like, never HTML).
    pub fn display(&self) -> String {
        let mut out = String::new();
        self.write_display(&mut out, 0);
        out
    }

    fn write_display(&self, out: &mut String, depth: usize) {
        use std::fmt::Write;
        if depth > 16 {
            out.push('…');
            return;
        }
        let seq = |out: &mut String, items: &[Value], open: &str, close: &str| {
            out.push_str(open);
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                v.write_display(out, depth + 1);
            }
            out.push_str(close);
        };
        match self {
            Value::None => out.push_str("None"),
            Value::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
            Value::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Value::BigInt(s) => out.push_str(s),
            Value::Float(f) => {
                let _ = write!(out, "{f:?}");
            }
            Value::Str(s) => out.push_str(s),
            Value::Bytes(b) => {
                let _ = write!(out, "<{} bytes>", b.len());
            }
            Value::List(items) => seq(out, items, "[", "]"),
            Value::Tuple(items) => seq(out, items, "(", ")"),
            Value::Set(items) => seq(out, items, "{", "}"),
            Value::Dict(items) => {
                out.push('{');
                for (i, (k, v)) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    k.write_display(out, depth + 1);
                    out.push_str(": ");
                    v.write_display(out, depth + 1);
                }
                out.push('}');
            }
        }
    }
}
