//! Interned strings, frames and stacks: each unique one is stored once and named by a `u32`.
//!
//! Real snapshots repeat the same few thousand frames millions of times; interning is what
//! keeps the model small. These tables only grow while a snapshot is decoded.

use std::hash::{Hash, Hasher};

use hashbrown::HashTable;
use rustc_hash::FxHashMap;

use super::Value;

pub type StrId = u32;
pub type FrameId = u32;
pub type StackId = u32;

/// The stack id of "no stack recorded".
pub const NO_STACK: StackId = u32::MAX;

/// Interned UTF-8 strings.
#[derive(Clone, Debug, Default)]
pub struct Strings {
    texts: Vec<Box<str>>,
    index: FxHashMap<Box<str>, StrId>,
    /// The text interned last: the one a file repeats unmemoized in every row (`"N/A"`) is
    /// then found without validating or hashing it again.
    last: Option<StrId>,
}

impl PartialEq for Strings {
    fn eq(&self, other: &Self) -> bool {
        self.texts == other.texts
    }
}

impl Strings {
    pub fn intern(&mut self, text: &str) -> StrId {
        if let Some(&id) = self.index.get(text) {
            return id;
        }
        let id = self.texts.len() as StrId;
        self.texts.push(text.into());
        self.index.insert(text.into(), id);
        id
    }

    /// Interns the UTF-8 text `bytes`; refuses bytes that are not UTF-8.
    #[inline]
    pub fn intern_utf8(&mut self, bytes: &[u8]) -> Result<StrId, std::str::Utf8Error> {
        if let Some(last) = self.last {
            if self.texts[last as usize].as_bytes() == bytes {
                return Ok(last);
            }
        }
        let id = self.intern(std::str::from_utf8(bytes)?);
        self.last = Some(id);
        Ok(id)
    }

    /// The id of `text` if it was interned.
    pub fn lookup(&self, text: &str) -> Option<StrId> {
        self.index.get(text).copied()
    }

    pub fn get(&self, id: StrId) -> &str {
        &self.texts[id as usize]
    }

    pub fn len(&self) -> usize {
        self.texts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// Replaces each text for which `rewrite` gives a new one, keeping every id. Two texts
    /// may then read the same; lookups find the first.
    pub fn rewrite(&mut self, mut rewrite: impl FnMut(StrId, &str) -> Option<String>) {
        let mut changed = false;
        for (id, text) in self.texts.iter_mut().enumerate() {
            if let Some(new) = rewrite(id as StrId, text) {
                *text = new.into();
                changed = true;
            }
        }
        if changed {
            self.index.clear();
            for (id, text) in self.texts.iter().enumerate().rev() {
                self.index.insert(text.clone(), id as StrId);
            }
            self.last = None;
        }
    }

    pub fn heap_bytes(&self) -> usize {
        let text: usize = self.texts.iter().map(|t| t.len()).sum();
        // Each text is held twice (list and index) plus the table slots.
        2 * text + self.texts.capacity() * 16 + self.index.capacity() * 24
    }
}

/// One Python or C++ frame of a captured stack.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    pub filename: StrId,
    /// Line number; -1 when PyTorch recorded it as unknown (2**64 - 1).
    pub line: i64,
    pub name: StrId,
    /// Other keys (`fx_node_op`, `fx_original_trace`, …), as written.
    pub extra: Vec<(StrId, Value)>,
}

/// Interned stacks: each unique sequence of frames (innermost first) stored once.
#[derive(Clone, Debug)]
pub struct Stacks {
    frames: Vec<FrameId>,
    /// `offsets[s]..offsets[s + 1]` are the frames of stack `s`.
    offsets: Vec<u32>,
    /// Stacks by the hash of their frames; a stack's frames are only kept in `frames`.
    index: HashTable<StackId>,
}

impl Default for Stacks {
    fn default() -> Self {
        Stacks {
            frames: Vec::new(),
            offsets: vec![0],
            index: HashTable::new(),
        }
    }
}

impl PartialEq for Stacks {
    fn eq(&self, other: &Self) -> bool {
        self.frames == other.frames && self.offsets == other.offsets
    }
}

/// The frames of stack `s` in `frames` laid out by `offsets`.
fn frames_of<'a>(frames: &'a [FrameId], offsets: &[u32], s: StackId) -> &'a [FrameId] {
    let s = s as usize;
    &frames[offsets[s] as usize..offsets[s + 1] as usize]
}

fn hash_frames(frames: &[FrameId]) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    frames.hash(&mut hasher);
    hasher.finish()
}

/// Whether two lists of frames are the same. A new stack of a deep traceback is compared with
/// its twin for every trace row; in WebAssembly a slice's own comparison is a byte-by-byte
/// `memcmp` (natively a vectorised one), so there two frames are compared at a time.
fn same_frames(a: &[FrameId], b: &[FrameId]) -> bool {
    if cfg!(target_arch = "wasm32") {
        same_frames_by_pairs(a, b)
    } else {
        a == b
    }
}

fn same_frames_by_pairs(a: &[FrameId], b: &[FrameId]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let pair = |c: &[FrameId]| u64::from(c[0]) | u64::from(c[1]) << 32;
    let (a2, b2) = (a.chunks_exact(2), b.chunks_exact(2));
    let (ra, rb) = (a2.remainder(), b2.remainder());
    a2.zip(b2).all(|(x, y)| pair(x) == pair(y)) && ra == rb
}

impl Stacks {
    /// Interns a stack. The empty stack is [`NO_STACK`]: "no frames recorded".
    pub fn intern(&mut self, frames: &[FrameId]) -> StackId {
        if frames.is_empty() {
            return NO_STACK;
        }
        let hash = hash_frames(frames);
        let Stacks {
            frames: stored,
            offsets,
            index,
        } = self;
        if let Some(&id) = index.find(hash, |&s| {
            same_frames(frames_of(stored, offsets, s), frames)
        }) {
            return id;
        }
        let id = (offsets.len() - 1) as StackId;
        stored.extend_from_slice(frames);
        offsets.push(stored.len() as u32);
        index.insert_unique(hash, id, |&s| hash_frames(frames_of(stored, offsets, s)));
        id
    }

    /// The frames of `stack`, innermost first.
    pub fn frames(&self, stack: StackId) -> &[FrameId] {
        if stack == NO_STACK {
            return &[];
        }
        frames_of(&self.frames, &self.offsets, stack)
    }

    /// Number of unique non-empty stacks.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn heap_bytes(&self) -> usize {
        self.frames.capacity() * 4 + self.offsets.capacity() * 4 + self.index.capacity() * 5
    }
}

/// Interns frames by content.
#[derive(Clone, Debug, Default)]
pub struct FrameInterner {
    index: FxHashMap<(StrId, i64, StrId), FrameId>,
    /// Frames with extra keys (fx traces), keyed by their full content.
    with_extra: FxHashMap<(StrId, i64, StrId, String), FrameId>,
}

impl FrameInterner {
    /// The id of `frame` in `frames`, adding it when new. Frames with extra keys are merged
    /// only with identical ones, so nothing written is lost.
    pub fn intern(&mut self, frames: &mut Vec<Frame>, frame: Frame) -> FrameId {
        if !frame.extra.is_empty() {
            let key = (
                frame.filename,
                frame.line,
                frame.name,
                format!("{:?}", frame.extra),
            );
            return *self.with_extra.entry(key).or_insert_with(|| {
                frames.push(frame);
                (frames.len() - 1) as FrameId
            });
        }
        let key = (frame.filename, frame.line, frame.name);
        *self.index.entry(key).or_insert_with(|| {
            frames.push(frame);
            (frames.len() - 1) as FrameId
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stack_is_stored_once_whatever_its_length() {
        let mut stacks = Stacks::default();
        let lists: [&[FrameId]; 5] = [&[1, 2, 3], &[1, 2], &[1, 2, 3, 4], &[7], &[2, 1]];
        let ids: Vec<StackId> = lists.iter().map(|f| stacks.intern(f)).collect();
        assert_eq!(ids, [0, 1, 2, 3, 4]);
        for (list, id) in lists.iter().zip(&ids) {
            assert_eq!(stacks.intern(list), *id);
            assert_eq!(stacks.frames(*id), *list);
        }
        assert_eq!(stacks.intern(&[]), NO_STACK);
        assert_eq!(stacks.len(), 5);
        // Many more, so the table grows and finds every one again.
        let many: Vec<Vec<FrameId>> = (0..5000).map(|i| vec![i, i * 7, 3]).collect();
        let ids: Vec<StackId> = many.iter().map(|f| stacks.intern(f)).collect();
        for (list, id) in many.iter().zip(&ids) {
            assert_eq!(stacks.intern(list), *id);
        }
        assert_eq!(stacks.len(), 5005);
    }

    #[test]
    fn frames_compare_pair_by_pair_and_by_their_odd_last_as_slices_do() {
        let lists: [&[FrameId]; 8] = [
            &[],
            &[9],
            &[9, 8],
            &[8, 9],
            &[1, 2, 3],
            &[1, 2, 4],
            &[2, 1, 3],
            &[1, 2],
        ];
        for a in lists {
            for b in lists {
                assert_eq!(same_frames_by_pairs(a, b), a == b, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn text_interned_from_bytes_is_the_same_text_however_often_it_repeats() {
        let mut strings = Strings::default();
        let na = strings.intern_utf8(b"N/A").unwrap();
        assert_eq!(strings.intern_utf8(b"N/A").unwrap(), na);
        let alloc = strings.intern_utf8(b"alloc").unwrap();
        assert_ne!(alloc, na);
        assert_eq!(strings.intern_utf8(b"N/A").unwrap(), na);
        assert_eq!(strings.intern("alloc"), alloc);
        assert_eq!(strings.get(na), "N/A");
        assert_eq!(strings.len(), 2);
    }

    #[test]
    fn bytes_that_are_not_utf8_are_refused_even_after_text_like_them() {
        let mut strings = Strings::default();
        strings.intern_utf8(b"ab").unwrap();
        let error = strings.intern_utf8(b"a\xff").unwrap_err();
        assert_eq!(error.valid_up_to(), 1);
        assert_eq!(strings.len(), 1);
    }
}
