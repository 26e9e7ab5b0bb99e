//! What the importers of profiler outputs other than snapshots share: building a
//! [`Snapshot`] from trace rows they make up per device (frames and stacks interned, rows
//! appended in order), with the file's [`Source`] and the importer's notes.
//!
//! Not the place for reading any format.

use std::collections::BTreeMap;

use crate::model::{
    Device, Frame, FrameId, FrameInterner, ImportNote, Snapshot, Source, StackId, TraceRow, NO_TIME,
};

pub struct Profiled {
    snapshot: Snapshot,
    frames: FrameInterner,
    devices: BTreeMap<u32, Device>,
}

impl Profiled {
    pub fn new(source: Source) -> Self {
        Profiled {
            snapshot: Snapshot {
                source,
                ..Snapshot::default()
            },
            frames: FrameInterner::default(),
            devices: BTreeMap::new(),
        }
    }

    /// A frame of `file`, `line` (-1 when unknown) and function `name`.
    pub fn frame(&mut self, file: &str, line: i64, name: &str) -> FrameId {
        let frame = Frame {
            filename: self.snapshot.strings.intern(file),
            line,
            name: self.snapshot.strings.intern(name),
            extra: Vec::new(),
        };
        self.frames.intern(&mut self.snapshot.frames, frame)
    }

    /// A stack of `frames`, innermost first.
    pub fn stack(&mut self, frames: &[FrameId]) -> StackId {
        self.snapshot.stacks.intern(frames)
    }

    /// Device `id`, created with an empty trace when first named.
    pub fn device(&mut self, id: u32) -> &mut Device {
        self.devices.entry(id).or_insert_with(|| Device {
            id,
            has_trace_list: true,
            ..Device::default()
        })
    }

    pub fn push(&mut self, device: u32, row: TraceRow) {
        let features = &mut self.snapshot.features;
        features.time_us |= row.time_us != NO_TIME;
        features.trace_frames |= row.stack != crate::model::NO_STACK;
        self.device(device).trace.push(row);
    }

    /// Sets the shape of the tensor the last row pushed on `device` was made for.
    pub fn set_last_shape(&mut self, device: u32, shape: &str) {
        let shape = self.snapshot.strings.intern(shape);
        self.device(device).trace.set_last_shape(shape);
    }

    pub fn note(&mut self, note: ImportNote) {
        self.snapshot.notes.push(note);
    }

    pub fn finish(mut self) -> Snapshot {
        let mut devices: Vec<Device> = self.devices.into_values().collect();
        for d in &mut devices {
            d.trace.finish();
        }
        self.snapshot.devices = devices;
        self.snapshot
    }
}

/// Reads one frame of a Python stack as profilers write it: `file.py(12): name` (Kineto's
/// `Call stack`), `File "file.py", line 12, in name` (tracebacks) or `file.py:12:name`. Text
/// in none of these forms is a frame named by the text.
pub fn parse_frame(text: &str) -> (String, i64, String) {
    let text = text.trim();
    if let Some(rest) = text.strip_prefix("File \"") {
        if let Some((file, rest)) = rest.split_once("\", line ") {
            let (line, name) = rest.split_once(", in ").unwrap_or((rest, ""));
            if let Ok(line) = line.trim().parse() {
                return (file.to_string(), line, name.trim().to_string());
            }
        }
    }
    if let Some(open) = text.find("): ") {
        if let Some(paren) = text[..open].rfind('(') {
            if let Ok(line) = text[paren + 1..open].parse() {
                return (
                    text[..paren].to_string(),
                    line,
                    text[open + 3..].to_string(),
                );
            }
        }
    }
    let mut parts = text.rsplitn(3, ':');
    if let (Some(name), Some(line), Some(file)) = (parts.next(), parts.next(), parts.next()) {
        if let Ok(line) = line.parse() {
            return (file.to_string(), line, name.to_string());
        }
    }
    (String::new(), -1, text.to_string())
}

#[cfg(test)]
mod tests {
    use super::parse_frame;

    #[test]
    fn frames_in_every_form_profilers_write() {
        let f = |t| parse_frame(t);
        assert_eq!(
            f("resnet50.py(54): <module>"),
            ("resnet50.py".into(), 54, "<module>".into())
        );
        assert_eq!(
            f("/a/b (c).py(7): f"),
            ("/a/b (c).py".into(), 7, "f".into())
        );
        assert_eq!(
            f("  File \"/x/m.py\", line 12, in forward"),
            ("/x/m.py".into(), 12, "forward".into())
        );
        assert_eq!(
            f("/x/m.py:12:forward"),
            ("/x/m.py".into(), 12, "forward".into())
        );
        assert_eq!(f("aten::empty"), ("".into(), -1, "aten::empty".into()));
    }
}
