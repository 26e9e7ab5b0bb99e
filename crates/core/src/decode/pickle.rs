//! A streaming reader for the plain-data subset of Python's pickle format (protocols 2–5).
//!
//! It interprets opcodes one by one over a chunked [`Input`], so a file never has to be in
//! memory at once, and it refuses every opcode that would import, call or build a Python
//! object: nothing is ever resolved or executed. Completed trace entries and frames are handed
//! to the [`Builder`] the moment their parent consumes them, so millions of them never exist as
//! generic values; the memo then refers to the converted value, which is how a frame dict shared
//! by a million stacks is decoded once.
//!
//! Not here: what the keys mean (see `build`), gzip and format detection (see `decode`).

use std::io::Read;

use super::build::{At, Builder, Decoded, ScalarRow, MAX_DEPTH};
use super::input::{truncated, Input, Part, Queue};
use super::opcodes::*;
use super::DecodeError;
use crate::model::{FrameId, StackId, StrId};

/// Limit on values waiting on the stack at once (a valid snapshot needs a few thousand).
const MAX_STACK: usize = 1 << 22;
/// Limit on open MARKs at once.
const MAX_MARKS: usize = 4096;
/// How far past the current end a `BINPUT` index may jump.
const MAX_MEMO_GAP: usize = 1 << 16;

/// A value on the pickle stack. Containers live in the parser's arena and are named by index.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Val {
    None,
    Bool(bool),
    Int(i64),
    /// Index into `Parser::bigs`.
    Big(u32),
    Float(f64),
    Str(StrId),
    /// Index into `Parser::blobs`.
    Bytes(u32),
    Obj(u32),
    Frame(FrameId),
    Stack(StackId),
    /// Trace rows `start..start + len` (only inside lists).
    Rows(u32, u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Container {
    List,
    Dict,
    Tuple,
    Set,
}

const NO_MEMO: u32 = u32::MAX;

struct Obj {
    kind: Container,
    /// Items; for dicts, keys and values alternate.
    items: Vec<Val>,
    /// The memo slot holding this container, if any.
    memo: u32,
    /// Nesting height below this container (0 for a container of scalars).
    height: u16,
    /// The handle was copied (memo get, DUP): never recycle the slot.
    aliased: bool,
    /// What this container was converted to, for handles that outlive the conversion.
    converted: Option<Val>,
}

/// Compact memo slot: 3-bit tag and 29-bit payload; anything else goes to `memo_boxed`.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Slot(u32);

impl Slot {
    const HOLE: Slot = Slot(u32::MAX);
    const PAYLOAD: u32 = (1 << 29) - 1;
    const T_BOXED: u32 = 0;
    const T_STR: u32 = 1;
    const T_OBJ: u32 = 2;
    const T_FRAME: u32 = 3;
    const T_STACK: u32 = 4;
    const T_NODE: u32 = 5;
    const T_ROW: u32 = 6;

    fn tagged(tag: u32, payload: u32) -> Option<Slot> {
        (payload <= Self::PAYLOAD).then_some(Slot(tag << 29 | payload))
    }
}

/// Decodes one pickle from `input` into a snapshot.
pub fn decode<R: Read>(input: Input<R>) -> Result<crate::model::Snapshot, DecodeError> {
    let mut parser = Parser::new(input);
    let root = parser.run()?;
    let end = At(Some(parser.input.offset()));
    let node = parser.to_node(root, 0)?;
    parser.into_builder().finish(node, end)
}

/// A pickle decoded as its bytes are pushed, chunk by chunk: the same parser as [`decode`]
/// (so the same model), run as far as the bytes pushed so far allow.
pub struct Resumable {
    parser: Parser<Queue>,
    root: Option<Val>,
}

impl Resumable {
    pub fn new() -> Self {
        Resumable {
            parser: Parser::new(Input::new(Queue::default())),
            root: None,
        }
    }

    /// The stream will be `bytes` long: room is made for its trace rows once a few are read.
    pub fn expect_bytes(&mut self, bytes: u64) {
        self.parser.size_hint = Some(bytes);
    }

    /// Decodes as far as `part` (the next bytes of the stream) allows.
    pub fn push(&mut self, part: impl Part + 'static) -> Result<(), DecodeError> {
        self.parser.input.reader_mut().push(Box::new(part));
        self.resume()
    }

    /// The stream has ended: decodes what is left and builds the snapshot.
    pub fn finish(mut self) -> Result<crate::model::Snapshot, DecodeError> {
        self.parser.input.reader_mut().end();
        self.resume()?;
        let root = self
            .root
            .expect("a parser whose input has ended stops or fails, it never starves");
        let end = At(Some(self.parser.input.offset()));
        let node = self.parser.to_node(root, 0)?;
        self.parser.into_builder().finish(node, end)
    }

    fn resume(&mut self) -> Result<(), DecodeError> {
        if self.root.is_none() {
            self.root = self.parser.run_until_starved()?;
        }
        Ok(())
    }
}

impl Default for Resumable {
    fn default() -> Self {
        Self::new()
    }
}

struct Parser<R> {
    input: Input<R>,
    builder: Builder,
    stack: Vec<Val>,
    marks: Vec<usize>,
    memo: Vec<Slot>,
    memo_boxed: Vec<Val>,
    memo_nodes: Vec<Decoded>,
    release_stack: Vec<(u32, bool)>,
    objs: Vec<Obj>,
    free_objs: Vec<u32>,
    bigs: Vec<String>,
    blobs: Vec<Vec<u8>>,
    scratch: Vec<Val>,
    pairs: Vec<(Decoded, Decoded)>,
    frame_ids: Vec<FrameId>,
    /// The stream's length when known, to make room for all its trace rows at once.
    size_hint: Option<u64>,
    /// Where the stream and the memo were when the first trace row was read.
    first_row_at: u64,
    first_row_memo: usize,
}

/// Trace rows read before the rows still to come are estimated from the bytes they took.
const ROWS_SAMPLED: u32 = 1 << 14;
/// No trace row takes fewer bytes than this in a pickle (an estimate from rows that did is a
/// sign of something odd: nothing is reserved then).
const MIN_ROW_BYTES: u64 = 16;

fn op_name(op: u8) -> &'static str {
    match op {
        GLOBAL => "GLOBAL",
        STACK_GLOBAL => "STACK_GLOBAL",
        REDUCE => "REDUCE",
        BUILD => "BUILD",
        INST => "INST",
        OBJ => "OBJ",
        NEWOBJ => "NEWOBJ",
        NEWOBJ_EX => "NEWOBJ_EX",
        EXT1 => "EXT1",
        EXT2 => "EXT2",
        EXT4 => "EXT4",
        PERSID => "PERSID",
        BINPERSID => "BINPERSID",
        NEXT_BUFFER => "NEXT_BUFFER",
        READONLY_BUFFER => "READONLY_BUFFER",
        INT => "INT",
        LONG => "LONG",
        FLOAT => "FLOAT",
        STRING => "STRING",
        UNICODE => "UNICODE",
        PUT => "PUT",
        GET => "GET",
        BINSTRING => "BINSTRING",
        SHORT_BINSTRING => "SHORT_BINSTRING",
        _ => "unknown",
    }
}

/// Whether a dict's items (keys and values, in turn) are a trace entry's: it has an `action`.
fn is_trace_entry(items: &[Val]) -> bool {
    items
        .iter()
        .step_by(2)
        .any(|k| *k == Val::Str(super::build::key::ACTION))
}

impl<R: Read> Parser<R> {
    /// The builder, the parser's tables dropped: the memo alone takes about 12 bytes per
    /// trace entry, which the snapshot is then built in instead of beyond.
    fn into_builder(self) -> Builder {
        self.builder
    }

    fn new(input: Input<R>) -> Self {
        Parser {
            input,
            builder: Builder::new(),
            stack: Vec::with_capacity(1024),
            marks: Vec::with_capacity(64),
            memo: Vec::new(),
            memo_boxed: Vec::new(),
            memo_nodes: Vec::new(),
            release_stack: Vec::new(),
            objs: Vec::new(),
            free_objs: Vec::new(),
            bigs: Vec::new(),
            blobs: Vec::new(),
            scratch: Vec::new(),
            pairs: Vec::new(),
            frame_ids: Vec::new(),
            size_hint: None,
            first_row_at: 0,
            first_row_memo: 0,
        }
    }

    /// A trace row `row` was just read: once a few thousand have been, makes room for the
    /// rows the rest of the stream holds at their size so far (with a sixteenth more), and
    /// for the memo entries they take, so neither the trace's columns nor the memo are copied
    /// each time they outgrow their memory.
    #[inline]
    fn row_read(&mut self, row: u32) {
        if row == 0 {
            self.first_row_at = self.input.offset();
            self.first_row_memo = self.memo.len();
        } else if row == ROWS_SAMPLED {
            let Some(total) = self.size_hint else { return };
            let here = self.input.offset();
            let per_row = here.saturating_sub(self.first_row_at) / u64::from(ROWS_SAMPLED);
            if per_row < MIN_ROW_BYTES {
                return;
            }
            let rest = total.saturating_sub(here) / per_row;
            let rest = (rest + rest / 16) as usize;
            self.builder.reserve_rows(rest);
            let memo_per_row =
                self.memo.len().saturating_sub(self.first_row_memo) / ROWS_SAMPLED as usize;
            self.memo
                .reserve_exact(rest.saturating_mul(memo_per_row + 1));
        }
    }

    /// Runs opcodes up to `STOP` and returns the root value.
    fn run(&mut self) -> Result<Val, DecodeError> {
        loop {
            if let Some(root) = self.run_steps(1 << 16)? {
                return Ok(root);
            }
        }
    }

    /// Runs opcodes until `STOP` (`Some(root)`) or until the input starves (`None`): then the
    /// opcode that starved is stepped back over, to run again once more bytes are pushed.
    /// Every opcode reads all its bytes before it changes anything, so running it again is
    /// running it once.
    fn run_until_starved(&mut self) -> Result<Option<Val>, DecodeError> {
        loop {
            match self.run_steps(1 << 16) {
                Ok(Some(root)) => return Ok(Some(root)),
                Ok(None) => {}
                Err(_) if self.input.starved => {
                    self.input.rewind_to_mark();
                    return Ok(None);
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Runs at most `budget` opcodes; `Some(root)` once `STOP` is reached. Returning every so
    /// often matters under WebAssembly: engines without on-stack replacement only switch a
    /// function to optimised code when it is entered again.
    #[inline(never)]
    fn run_steps(&mut self, budget: u32) -> Result<Option<Val>, DecodeError> {
        for _ in 0..budget {
            // Where to step back to if the input starves in this opcode.
            self.input.mark = self.input.pos;
            if self.input.available() < 16 && self.input.fill(16)? == 0 {
                return Err(truncated(
                    self.input.offset(),
                    "the pickle (no STOP opcode)",
                ));
            }
            if let Some(chunk) = self.input.peek16() {
                if self.fast_op(chunk)? {
                    continue;
                }
            }
            let at = self.input.offset();
            let op = self.input.take(1, "an opcode")?[0];
            match op {
                // --- framing and protocol -------------------------------------------------
                PROTO => {
                    let proto = self.input.take(1, "PROTO")?[0];
                    if proto > 5 {
                        return Err(DecodeError::at(at, format!("pickle protocol {proto} is newer than 5, the newest this reader knows")));
                    }
                }
                FRAME => {
                    self.input.take(8, "FRAME")?;
                }
                STOP => {
                    // Read ahead before popping: the input may starve here, and the opcode
                    // then runs again.
                    let at_end = self.input.at_end()?;
                    let root = self.pop(at)?;
                    if !self.stack.is_empty() || !self.marks.is_empty() {
                        return Err(DecodeError::at(at, format!("STOP leaves {} values and {} marks unconsumed", self.stack.len(), self.marks.len())));
                    }
                    if !at_end {
                        return Err(DecodeError::at(self.input.offset(), "data continues after the pickle's STOP opcode")
                            .with_hint("trailing garbage: the file may be two files joined, or damaged"));
                    }
                    return Ok(Some(root));
                }
                // --- scalars --------------------------------------------------------------
                NONE => self.push(Val::None, at)?,
                NEWTRUE => self.push(Val::Bool(true), at)?,
                NEWFALSE => self.push(Val::Bool(false), at)?,
                BININT => {
                    let b = self.input.take(4, "BININT")?;
                    let v = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    self.push(Val::Int(v as i64), at)?;
                }
                BININT1 => {
                    let v = self.input.take(1, "BININT1")?[0];
                    self.push(Val::Int(v as i64), at)?;
                }
                BININT2 => {
                    let b = self.input.take(2, "BININT2")?;
                    let v = u16::from_le_bytes([b[0], b[1]]);
                    self.push(Val::Int(v as i64), at)?;
                }
                LONG1 => {
                    let n = self.input.take(1, "LONG1")?[0] as usize;
                    self.long(n, at)?;
                }
                LONG4 => {
                    let b = self.input.take(4, "LONG4")?;
                    let n = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    if n < 0 {
                        return Err(DecodeError::at(at, format!("LONG4 has a negative length ({n})")));
                    }
                    self.long(n as usize, at)?;
                }
                BINFLOAT => {
                    let b = self.input.take(8, "BINFLOAT")?;
                    let v = f64::from_be_bytes(b.try_into().unwrap());
                    self.push(Val::Float(v), at)?;
                }
                SHORT_BINUNICODE => {
                    let n = self.input.take(1, "SHORT_BINUNICODE")?[0] as usize;
                    self.string(n, at)?;
                }
                BINUNICODE => {
                    let b = self.input.take(4, "BINUNICODE")?;
                    let n = u32::from_le_bytes(b.try_into().unwrap()) as usize;
                    self.string(n, at)?;
                }
                BINUNICODE8 => {
                    let n = self.length8("BINUNICODE8", at)?;
                    self.string(n, at)?;
                }
                SHORT_BINBYTES => {
                    let n = self.input.take(1, "SHORT_BINBYTES")?[0] as usize;
                    self.bytes(n, at)?;
                }
                BINBYTES => {
                    let b = self.input.take(4, "BINBYTES")?;
                    let n = u32::from_le_bytes(b.try_into().unwrap()) as usize;
                    self.bytes(n, at)?;
                }
                BINBYTES8 => {
                    let n = self.length8("BINBYTES8", at)?;
                    self.bytes(n, at)?;
                }
                BYTEARRAY8 => {
                    let n = self.length8("BYTEARRAY8", at)?;
                    self.bytes(n, at)?;
                }
                // --- containers -----------------------------------------------------------
                EMPTY_DICT => {
                    let o = self.new_obj(Container::Dict);
                    self.push(Val::Obj(o), at)?;
                }
                EMPTY_LIST => {
                    let o = self.new_obj(Container::List);
                    self.push(Val::Obj(o), at)?;
                }
                EMPTY_TUPLE => {
                    let o = self.new_obj(Container::Tuple);
                    self.push(Val::Obj(o), at)?;
                }
                EMPTY_SET => {
                    let o = self.new_obj(Container::Set);
                    self.push(Val::Obj(o), at)?;
                }
                MARK => self.op_mark(at)?,
                TUPLE | LIST | DICT | FROZENSET => {
                    let mark = self.pop_mark(at)?;
                    let kind = match op {
                        TUPLE => Container::Tuple,
                        LIST => Container::List,
                        DICT => Container::Dict,
                        _ => Container::Set,
                    };
                    if kind == Container::Dict && !(self.stack.len() - mark).is_multiple_of(2) {
                        return Err(DecodeError::at(at, "DICT with an odd number of items"));
                    }
                    let o = self.new_obj(kind);
                    self.scratch.clear();
                    self.scratch.extend(self.stack.drain(mark..));
                    self.fill_obj(o, kind, at)?;
                    self.stack.push(Val::Obj(o));
                }
                TUPLE1..=TUPLE3 => self.op_tuple_n((op - TUPLE1 + 1) as usize, at)?,
                APPEND => self.op_append(at)?,
                APPENDS => self.op_appends(at)?,
                SETITEM => self.op_setitem(at)?,
                SETITEMS => self.op_setitems(at)?,
                ADDITEMS => {
                    let mark = self.pop_mark(at)?;
                    let target = self.obj_below(mark, Container::Set, "ADDITEMS", at)?;
                    self.scratch.clear();
                    self.scratch.extend(self.stack.drain(mark..));
                    self.fill_obj(target, Container::Set, at)?;
                }
                // --- stack manipulation ---------------------------------------------------
                POP => {
                    let floor = self.marks.last().copied();
                    match floor {
                        Some(m) if m == self.stack.len() => {
                            self.marks.pop();
                        }
                        _ => {
                            self.pop(at)?;
                        }
                    }
                }
                POP_MARK => {
                    let mark = self.pop_mark(at)?;
                    self.stack.truncate(mark);
                }
                DUP => {
                    let v = *self.stack.last().ok_or_else(|| DecodeError::at(at, "DUP on an empty stack"))?;
                    self.alias(v);
                    self.push(v, at)?;
                }
                // --- memo -----------------------------------------------------------------
                MEMOIZE => {
                    let idx = self.memo.len();
                    self.memo_put(idx, at)?;
                }
                BINPUT => {
                    let idx = self.input.take(1, "BINPUT")?[0] as usize;
                    self.memo_put(idx, at)?;
                }
                LONG_BINPUT => {
                    let b = self.input.take(4, "LONG_BINPUT")?;
                    let idx = u32::from_le_bytes(b.try_into().unwrap()) as usize;
                    self.memo_put(idx, at)?;
                }
                BINGET => {
                    let idx = self.input.take(1, "BINGET")?[0] as usize;
                    self.memo_get(idx, at)?;
                }
                LONG_BINGET => {
                    let b = self.input.take(4, "LONG_BINGET")?;
                    let idx = u32::from_le_bytes(b.try_into().unwrap()) as usize;
                    self.memo_get(idx, at)?;
                }
                // --- refused --------------------------------------------------------------
                GLOBAL | STACK_GLOBAL | REDUCE | BUILD | INST | OBJ | NEWOBJ | NEWOBJ_EX | EXT1 | EXT2 | EXT4
                | PERSID | BINPERSID => return Err(self.code_opcode(op, at)),
                NEXT_BUFFER | READONLY_BUFFER => {
                    return Err(DecodeError::at(at, format!("opcode {} (0x{op:02x}) refers to an out-of-band buffer, which a snapshot never has", op_name(op))))
                }
                INT | LONG | FLOAT | STRING | UNICODE | PUT | GET | BINSTRING | SHORT_BINSTRING => {
                    return Err(DecodeError::at(at, format!("opcode {} (0x{op:02x}) belongs to pickle protocols 0–1, which this reader does not support", op_name(op)))
                        .with_hint("re-save the snapshot with pickle protocol 2 or later (torch's default is 4)"))
                }
                _ => {
                    let mut e = DecodeError::at(at, format!("byte 0x{op:02x} is not a pickle opcode"));
                    if at == 0 {
                        e = e.with_hint("this file is not a pickle");
                    } else {
                        e = e.with_hint("the file is corrupt");
                    }
                    return Err(e);
                }
            }
        }
        Ok(None)
    }

    /// The opcodes that make up nearly all of a snapshot, decoded from a 16-byte window
    /// without per-byte bounds checks. Returns false for anything else (the general path
    /// handles it, and everything within 16 bytes of the end).
    #[inline(always)]
    fn fast_op(&mut self, c: [u8; 16]) -> Result<bool, DecodeError> {
        let at = self.input.offset();
        match c[0] {
            BINGET => {
                self.input.pos += 2;
                self.memo_get(c[1] as usize, at)?;
            }
            LONG_BINGET => {
                self.input.pos += 5;
                self.memo_get(u32::from_le_bytes([c[1], c[2], c[3], c[4]]) as usize, at)?;
            }
            MEMOIZE => {
                self.input.pos += 1;
                let idx = self.memo.len();
                self.memo_put(idx, at)?;
            }
            MARK => {
                self.input.pos += 1;
                self.op_mark(at)?;
            }
            EMPTY_LIST if c[1] == MEMOIZE && c[2] == MARK => {
                if !self.frame_list(at)? {
                    return Ok(false);
                }
            }
            EMPTY_DICT if c[1] == MEMOIZE && c[2] == MARK => {
                if !self.trace_dict(at)? {
                    return Ok(false);
                }
            }
            EMPTY_DICT | EMPTY_LIST => {
                self.input.pos += 1;
                let o = self.new_obj(if c[0] == EMPTY_DICT {
                    Container::Dict
                } else {
                    Container::List
                });
                self.push(Val::Obj(o), at)?;
            }
            BININT1 => {
                self.input.pos += 2;
                self.push(Val::Int(c[1] as i64), at)?;
            }
            BININT2 => {
                self.input.pos += 3;
                self.push(Val::Int(u16::from_le_bytes([c[1], c[2]]) as i64), at)?;
            }
            BININT => {
                self.input.pos += 5;
                self.push(
                    Val::Int(i32::from_le_bytes([c[1], c[2], c[3], c[4]]) as i64),
                    at,
                )?;
            }
            LONG1 if c[1] <= 8 => {
                self.input.pos += 2;
                self.long(c[1] as usize, at)?;
            }
            SHORT_BINUNICODE if c[1] <= 14 => {
                self.input.pos += 2;
                self.string(c[1] as usize, at)?;
            }
            NONE => {
                self.input.pos += 1;
                self.push(Val::None, at)?;
            }
            NEWTRUE | NEWFALSE => {
                self.input.pos += 1;
                self.push(Val::Bool(c[0] == NEWTRUE), at)?;
            }
            BINFLOAT => {
                self.input.pos += 9;
                let v = f64::from_be_bytes(c[1..9].try_into().unwrap());
                self.push(Val::Float(v), at)?;
            }
            FRAME => self.input.pos += 9,
            SETITEMS => {
                self.input.pos += 1;
                self.op_setitems(at)?;
            }
            APPENDS => {
                self.input.pos += 1;
                self.op_appends(at)?;
            }
            APPEND => {
                self.input.pos += 1;
                self.op_append(at)?;
            }
            SETITEM => {
                self.input.pos += 1;
                self.op_setitem(at)?;
            }
            TUPLE1..=TUPLE3 => {
                self.input.pos += 1;
                self.op_tuple_n((c[0] - TUPLE1 + 1) as usize, at)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// `EMPTY_LIST MEMOIZE MARK (BINGET | LONG_BINGET)* APPENDS` where every get yields an
    /// interned frame: a captured traceback, the bulk of every snapshot. Interns it as a stack
    /// straight from the buffered bytes. Returns false (consuming nothing) for anything else,
    /// including a list that is not entirely buffered yet.
    #[inline(always)]
    fn frame_list(&mut self, at: u64) -> Result<bool, DecodeError> {
        let start = self.input.pos + 3;
        let buf = &self.input.bytes()[start..];
        let Some(len) = scan_frame_gets(buf, &self.memo, &mut self.frame_ids) else {
            return Ok(false);
        };
        let stack = self.builder.stack_of_ids(&self.frame_ids);
        self.input.pos = start + len;
        let slot = Slot::tagged(Slot::T_STACK, stack).unwrap_or(Slot::HOLE);
        self.memo.push(slot);
        self.push(Val::Stack(stack), at)?;
        Ok(true)
    }

    /// `EMPTY_DICT MEMOIZE MARK (key value)* SETITEMS` holding a trace entry whose keys are
    /// memoized or short strings and whose values are integers, strings or tracebacks:
    /// stored as a trace row straight from the buffered bytes, with the memo kept exactly as
    /// the general path would leave it. Returns false (undoing its memo entries) otherwise.
    fn trace_dict(&mut self, at: u64) -> Result<bool, DecodeError> {
        let start = self.input.pos + 3;
        let memo_len = self.memo.len();
        self.memo.push(Slot::HOLE);
        let mut fields = ScalarRow::default();
        let mut i = 0;
        let ok = 'scan: {
            let buf = &self.input.bytes()[start..];
            loop {
                // Key: a memoized string, or a short string (memoized right after).
                let key = match buf.get(i).copied() {
                    Some(SETITEMS) => break 'scan true,
                    Some(BINGET | LONG_BINGET) => {
                        let Some((idx, len)) = get_index(buf, i) else {
                            break 'scan false;
                        };
                        i += len;
                        match self.memo.get(idx) {
                            Some(slot) if slot.0 >> 29 == Slot::T_STR => slot.0 & Slot::PAYLOAD,
                            _ => break 'scan false,
                        }
                    }
                    Some(SHORT_BINUNICODE) => {
                        let Some(id) = short_string(buf, &mut i, &mut self.builder, &mut self.memo)
                        else {
                            break 'scan false;
                        };
                        id
                    }
                    _ => break 'scan false,
                };
                let set = match buf.get(i).copied() {
                    Some(BININT1) if i + 1 < buf.len() => {
                        i += 2;
                        fields.set_int(key, buf[i - 1] as i64)
                    }
                    Some(BININT2) if i + 2 < buf.len() => {
                        i += 3;
                        fields.set_int(key, u16::from_le_bytes([buf[i - 2], buf[i - 1]]) as i64)
                    }
                    Some(BININT) if i + 4 < buf.len() => {
                        i += 5;
                        fields.set_int(
                            key,
                            i32::from_le_bytes([buf[i - 4], buf[i - 3], buf[i - 2], buf[i - 1]])
                                as i64,
                        )
                    }
                    Some(LONG1)
                        if i + 1 < buf.len()
                            && (1..=8).contains(&buf[i + 1])
                            && i + 2 + (buf[i + 1] as usize) <= buf.len() =>
                    {
                        let len = buf[i + 1] as usize;
                        let bytes = &buf[i + 2..i + 2 + len];
                        let mut le = if bytes[len - 1] & 0x80 != 0 {
                            [0xff; 8]
                        } else {
                            [0; 8]
                        };
                        le[..len].copy_from_slice(bytes);
                        i += 2 + len;
                        fields.set_int(key, i64::from_le_bytes(le))
                    }
                    Some(BINGET | LONG_BINGET) => {
                        let Some((idx, len)) = get_index(buf, i) else {
                            break 'scan false;
                        };
                        i += len;
                        match self.memo.get(idx) {
                            Some(slot) if slot.0 >> 29 == Slot::T_STR => {
                                fields.set_str(key, slot.0 & Slot::PAYLOAD)
                            }
                            Some(slot) if slot.0 >> 29 == Slot::T_STACK => {
                                fields.set_stack(key, slot.0 & Slot::PAYLOAD)
                            }
                            _ => break 'scan false,
                        }
                    }
                    Some(SHORT_BINUNICODE) => {
                        let Some(id) = short_string(buf, &mut i, &mut self.builder, &mut self.memo)
                        else {
                            break 'scan false;
                        };
                        fields.set_str(key, id)
                    }
                    Some(EMPTY_LIST)
                        if buf.get(i + 1) == Some(&MEMOIZE) && buf.get(i + 2) == Some(&MARK) =>
                    {
                        let Some(len) =
                            scan_frame_gets(&buf[i + 3..], &self.memo, &mut self.frame_ids)
                        else {
                            break 'scan false;
                        };
                        i += 3 + len;
                        let stack = self.builder.stack_of_ids(&self.frame_ids);
                        let Some(slot) = Slot::tagged(Slot::T_STACK, stack) else {
                            break 'scan false;
                        };
                        self.memo.push(slot);
                        fields.set_stack(key, stack)
                    }
                    _ => break 'scan false,
                };
                if !set {
                    break 'scan false;
                }
            }
        };
        let row = if ok {
            self.builder.push_scalar_row(&fields)
        } else {
            None
        };
        match row.and_then(|r| Slot::tagged(Slot::T_ROW, r).map(|slot| (r, slot))) {
            Some((row, slot)) => {
                self.row_read(row);
                self.memo[memo_len] = slot;
                self.input.pos = start + i + 1;
                self.push(Val::Rows(row, 1), at)?;
                Ok(true)
            }
            None => {
                self.memo.truncate(memo_len);
                Ok(false)
            }
        }
    }

    fn op_mark(&mut self, at: u64) -> Result<(), DecodeError> {
        if self.marks.len() >= MAX_MARKS {
            return Err(DecodeError::at(
                at,
                format!("more than {MAX_MARKS} nested MARKs"),
            ));
        }
        self.marks.push(self.stack.len());
        Ok(())
    }

    fn op_tuple_n(&mut self, n: usize, at: u64) -> Result<(), DecodeError> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() < floor + n {
            return Err(DecodeError::at(
                at,
                format!("TUPLE{n} needs {n} values on the stack"),
            ));
        }
        let o = self.new_obj(Container::Tuple);
        self.scratch.clear();
        let start = self.stack.len() - n;
        self.scratch.extend(self.stack.drain(start..));
        self.fill_obj(o, Container::Tuple, at)?;
        self.stack.push(Val::Obj(o));
        Ok(())
    }

    fn op_append(&mut self, at: u64) -> Result<(), DecodeError> {
        let v = self.pop(at)?;
        let target = self.top_obj(Container::List, "APPEND", at)?;
        self.scratch.clear();
        self.scratch.push(v);
        self.fill_obj(target, Container::List, at)
    }

    fn op_appends(&mut self, at: u64) -> Result<(), DecodeError> {
        let mark = self.pop_mark(at)?;
        let target = self.obj_below(mark, Container::List, "APPENDS", at)?;
        // Nearly every APPENDS of a snapshot adds a batch of trace rows, each already stored:
        // they join the list's runs of rows straight from the stack.
        if self.stack[mark..]
            .iter()
            .all(|v| matches!(v, Val::Rows(..)))
        {
            let items = &mut self.objs[target as usize].items;
            for &item in &self.stack[mark..] {
                push_rows(items, item);
            }
            self.stack.truncate(mark);
            return Ok(());
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(&self.stack[mark..]);
        self.stack.truncate(mark);
        self.fill_obj(target, Container::List, at)
    }

    fn op_setitem(&mut self, at: u64) -> Result<(), DecodeError> {
        let v = self.pop(at)?;
        let k = self.pop(at)?;
        let target = self.top_obj(Container::Dict, "SETITEM", at)?;
        self.scratch.clear();
        self.scratch.push(k);
        self.scratch.push(v);
        self.fill_obj(target, Container::Dict, at)
    }

    fn op_setitems(&mut self, at: u64) -> Result<(), DecodeError> {
        let mark = self.pop_mark(at)?;
        if !(self.stack.len() - mark).is_multiple_of(2) {
            return Err(DecodeError::at(at, "SETITEMS with an odd number of items"));
        }
        let target = self.obj_below(mark, Container::Dict, "SETITEMS", at)?;
        self.scratch.clear();
        self.scratch.extend_from_slice(&self.stack[mark..]);
        self.stack.truncate(mark);
        self.fill_obj(target, Container::Dict, at)?;
        self.trace_entry_done(target, at)
    }

    /// A trace entry the fast path could not read becomes its row as soon as its items are
    /// set, as the fast path's do, rather than when its list's `APPENDS` comes: the rows are
    /// then staged in their list's order, and a device's trace takes the staged columns as
    /// they are instead of copying each into that order (`Trace::split`).
    fn trace_entry_done(&mut self, dict: u32, at: u64) -> Result<(), DecodeError> {
        if self.stack.last() != Some(&Val::Obj(dict)) {
            return Ok(());
        }
        if is_trace_entry(&self.objs[dict as usize].items) {
            let row = self.converted(dict, true, None, at)?;
            *self.stack.last_mut().expect("the dict just checked") = row;
        }
        Ok(())
    }

    fn code_opcode(&mut self, op: u8, at: u64) -> DecodeError {
        let mut message = format!(
            "opcode {} (0x{op:02x}) would load or call Python code; refused, nothing was executed",
            op_name(op)
        );
        if op == GLOBAL {
            // Name the global for the user, without resolving it.
            let mut name = Vec::new();
            for _ in 0..2 {
                for _ in 0..128 {
                    match self.input.take(1, "GLOBAL") {
                        Ok(&[b'\n']) | Err(_) => break,
                        Ok(b) => name.push(b[0]),
                    }
                }
                name.push(STOP);
            }
            name.pop();
            let name = String::from_utf8_lossy(&name);
            message =
                format!("opcode GLOBAL (0x63) would load {name:?}; refused, nothing was executed");
        }
        DecodeError::at(at, message).with_hint(
            "this pickle contains code, not a snapshot: memory snapshots hold only plain data (torch.save checkpoints and other Python objects cannot be viewed)",
        )
    }

    #[inline]
    fn push(&mut self, v: Val, at: u64) -> Result<(), DecodeError> {
        if self.stack.len() >= MAX_STACK {
            return Err(DecodeError::at(
                at,
                format!("more than {MAX_STACK} values pending on the pickle stack"),
            ));
        }
        self.stack.push(v);
        Ok(())
    }

    #[inline]
    fn pop(&mut self, at: u64) -> Result<Val, DecodeError> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(DecodeError::at(
                at,
                "an opcode needs a value but the stack is empty",
            ));
        }
        Ok(self.stack.pop().unwrap())
    }

    fn pop_mark(&mut self, at: u64) -> Result<usize, DecodeError> {
        self.marks
            .pop()
            .ok_or_else(|| DecodeError::at(at, "an opcode needs a MARK but none is open"))
    }

    fn length8(&mut self, what: &str, _at: u64) -> Result<usize, DecodeError> {
        let b = self.input.take(8, what)?;
        let n = u64::from_le_bytes(b.try_into().unwrap());
        // Lengths beyond the address space cannot be honest; `take` bounds the rest.
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn long(&mut self, n: usize, at: u64) -> Result<(), DecodeError> {
        let bytes = self.input.take(n, "a LONG integer")?;
        let v = if n == 0 {
            Val::Int(0)
        } else if n <= 8 {
            let negative = bytes[n - 1] & 0x80 != 0;
            let mut buf = if negative { [0xff; 8] } else { [0; 8] };
            buf[..n].copy_from_slice(bytes);
            Val::Int(i64::from_le_bytes(buf))
        } else {
            let text = long_to_decimal(bytes);
            match text.parse::<i64>() {
                Ok(i) => Val::Int(i),
                Err(_) => {
                    self.bigs.push(text);
                    Val::Big((self.bigs.len() - 1) as u32)
                }
            }
        };
        self.push(v, at)
    }

    fn string(&mut self, n: usize, at: u64) -> Result<(), DecodeError> {
        let bytes = self.input.take(n, "a string")?;
        let id = self.builder.strings.intern_utf8(bytes).map_err(|e| {
            DecodeError::at(
                at,
                format!(
                    "a string is not valid UTF-8 (at its byte {})",
                    e.valid_up_to()
                ),
            )
            .with_hint("the file is corrupt")
        })?;
        self.push(Val::Str(id), at)
    }

    fn bytes(&mut self, n: usize, at: u64) -> Result<(), DecodeError> {
        let bytes = self.input.take(n, "a bytes value")?.to_vec();
        self.blobs.push(bytes);
        self.push(Val::Bytes((self.blobs.len() - 1) as u32), at)
    }

    fn new_obj(&mut self, kind: Container) -> u32 {
        if let Some(o) = self.free_objs.pop() {
            let obj = &mut self.objs[o as usize];
            obj.kind = kind;
            obj.items.clear();
            obj.memo = NO_MEMO;
            obj.height = 0;
            obj.aliased = false;
            obj.converted = None;
            return o;
        }
        self.objs.push(Obj {
            kind,
            items: Vec::new(),
            memo: NO_MEMO,
            height: 0,
            aliased: false,
            converted: None,
        });
        (self.objs.len() - 1) as u32
    }

    fn alias(&mut self, v: Val) {
        if let Val::Obj(o) = v {
            self.objs[o as usize].aliased = true;
        }
    }

    fn top_obj(&self, kind: Container, op: &str, at: u64) -> Result<u32, DecodeError> {
        let floor = self.marks.last().copied().unwrap_or(0);
        match self.stack.last() {
            Some(Val::Obj(o))
                if self.stack.len() > floor && self.objs[*o as usize].kind == kind =>
            {
                Ok(*o)
            }
            _ => Err(DecodeError::at(
                at,
                format!("{op} needs a {} below its values", kind_name(kind)),
            )),
        }
    }

    fn obj_below(
        &self,
        mark: usize,
        kind: Container,
        op: &str,
        at: u64,
    ) -> Result<u32, DecodeError> {
        match mark.checked_sub(1).and_then(|i| self.stack.get(i)) {
            Some(Val::Obj(o)) if self.objs[*o as usize].kind == kind => Ok(*o),
            _ => Err(DecodeError::at(
                at,
                format!("{op} needs a {} below its MARK", kind_name(kind)),
            )),
        }
    }

    /// Moves `self.scratch` into container `target`, converting completed children.
    fn fill_obj(&mut self, target: u32, kind: Container, at: u64) -> Result<(), DecodeError> {
        let mut items = std::mem::take(&mut self.scratch);
        let mut height = self.objs[target as usize].height;
        if items.iter().any(|v| matches!(v, Val::Obj(_))) {
            for i in 0..items.len() {
                let dict_key = (kind == Container::Dict && i % 2 == 1).then(|| items[i - 1]);
                if let Val::Obj(o) = items[i] {
                    if o == target {
                        self.scratch = items;
                        return Err(DecodeError::at(at, "a container contains itself"));
                    }
                    match self.converted(o, kind == Container::List, dict_key, at) {
                        Ok(v) => items[i] = v,
                        Err(e) => {
                            self.scratch = items;
                            return Err(e);
                        }
                    }
                }
                if let Val::Obj(o) = items[i] {
                    height = height.max(self.objs[o as usize].height.saturating_add(1));
                }
            }
            if height as usize > MAX_DEPTH {
                self.scratch = items;
                return Err(DecodeError::at(
                    at,
                    format!("containers nest deeper than {MAX_DEPTH} levels"),
                ));
            }
        }
        let obj = &mut self.objs[target as usize];
        obj.height = height;
        if kind == Container::List && items.iter().any(|v| matches!(v, Val::Rows(..))) {
            for item in items.drain(..) {
                push_rows(&mut obj.items, item);
            }
        } else {
            obj.items.extend_from_slice(&items);
            items.clear();
        }
        self.scratch = items;
        Ok(())
    }

    /// The value container `o` stands for once consumed: a trace row or an interned frame
    /// when it is a trace entry or frame dict entering a list, an interned stack when it is a
    /// list of frames entering a dict; otherwise the container itself.
    fn converted(
        &mut self,
        o: u32,
        into_list: bool,
        dict_key: Option<Val>,
        at: u64,
    ) -> Result<Val, DecodeError> {
        let obj = &self.objs[o as usize];
        if let Some(v) = obj.converted {
            return Ok(v);
        }
        let new = match obj.kind {
            Container::Dict if into_list => {
                let keys = obj.items.iter().step_by(2);
                let is_trace = is_trace_entry(&obj.items);
                let is_frame = !is_trace && {
                    let mut seen = 0u8;
                    for k in keys {
                        match *k {
                            Val::Str(super::build::key::FILENAME) => seen |= 1,
                            Val::Str(super::build::key::LINE) => seen |= 2,
                            Val::Str(super::build::key::NAME) => seen |= 4,
                            _ => {}
                        }
                    }
                    seen == 7
                };
                if !is_trace && !is_frame {
                    return Ok(Val::Obj(o));
                }
                if is_trace {
                    if let Some(row) = self.trace_row_fast(o) {
                        self.row_read(row);
                        self.retire(o, Val::Rows(row, 1));
                        return Ok(Val::Rows(row, 1));
                    }
                }
                self.dict_pairs(o, at)?;
                let pairs = std::mem::take(&mut self.pairs);
                let result = if is_trace {
                    self.builder
                        .trace_row(&pairs, At(Some(at)))
                        .map(|r| Val::Rows(r, 1))
                } else {
                    self.builder.frame(&pairs, At(Some(at))).map(Val::Frame)
                };
                self.pairs = pairs;
                result?
            }
            Container::List
                if dict_key.is_some()
                    && obj.items.iter().all(|v| matches!(v, Val::Frame(_)))
                    && (!obj.items.is_empty()
                        || matches!(
                            dict_key,
                            Some(Val::Str(
                                super::build::key::FRAMES | super::build::key::FORWARD_FRAMES
                            ))
                        )) =>
            {
                self.frame_ids.clear();
                self.frame_ids.extend(obj.items.iter().map(|v| match v {
                    Val::Frame(f) => *f,
                    _ => unreachable!(),
                }));
                Val::Stack(self.builder.stack_of_ids(&self.frame_ids))
            }
            _ => return Ok(Val::Obj(o)),
        };
        self.retire(o, new);
        Ok(new)
    }

    /// A trace entry dict of plain keys and scalar values, converted without building nodes.
    fn trace_row_fast(&mut self, o: u32) -> Option<u32> {
        let items = &self.objs[o as usize].items;
        let mut fields = ScalarRow::default();
        for kv in items.chunks_exact(2) {
            let Val::Str(k) = kv[0] else { return None };
            let set = match kv[1] {
                Val::Int(i) => fields.set_int(k, i),
                Val::Str(s) => fields.set_str(k, s),
                Val::Stack(s) => fields.set_stack(k, s),
                _ => false,
            };
            if !set {
                return None;
            }
        }
        self.builder.push_scalar_row(&fields)
    }

    /// Records that container `o` became `new`: the memo now yields `new`, and the slot is
    /// recycled unless another handle to it may exist.
    fn retire(&mut self, o: u32, new: Val) {
        let obj = &mut self.objs[o as usize];
        if obj.memo != NO_MEMO {
            let slot = obj.memo as usize;
            let encoded = match new {
                Val::Frame(f) => Slot::tagged(Slot::T_FRAME, f),
                Val::Stack(s) => Slot::tagged(Slot::T_STACK, s),
                Val::Rows(r, 1) => Slot::tagged(Slot::T_ROW, r),
                _ => None,
            };
            self.memo[slot] = match encoded {
                Some(s) => s,
                None => {
                    self.memo_boxed.push(new);
                    Slot((self.memo_boxed.len() - 1) as u32 | Slot::T_BOXED << 29)
                }
            };
        }
        let obj = &mut self.objs[o as usize];
        if obj.aliased {
            obj.converted = Some(new);
        } else if obj.items.iter().any(|v| matches!(v, Val::Obj(_))) {
            self.release(o);
        } else {
            obj.items.clear();
            self.free_objs.push(o);
        }
    }

    /// Recycles container `root` and the containers only it holds; their content now lives
    /// in the model. A memo slot naming a released child keeps a copy of its value.
    fn release(&mut self, root: u32) {
        let mut pending = std::mem::take(&mut self.release_stack);
        pending.clear();
        pending.push((root, true));
        while let Some((o, is_root)) = pending.pop() {
            let memo = self.objs[o as usize].memo;
            if !is_root && memo != NO_MEMO {
                if let Ok(node) = self.to_node(Val::Obj(o), 0) {
                    self.memo_nodes.push(node);
                    let index = (self.memo_nodes.len() - 1) as u32;
                    self.memo[memo as usize] =
                        Slot::tagged(Slot::T_NODE, index).unwrap_or(Slot::HOLE);
                }
            }
            for i in 0..self.objs[o as usize].items.len() {
                if let Val::Obj(child) = self.objs[o as usize].items[i] {
                    if !self.objs[child as usize].aliased && child != o {
                        pending.push((child, false));
                    }
                }
            }
            self.objs[o as usize].items.clear();
            self.free_objs.push(o);
        }
        self.release_stack = pending;
    }

    /// A fresh container (or scalar) holding `node`, for a memo reference to released data.
    fn materialize(&mut self, node: &Decoded) -> Val {
        match node {
            Decoded::None => Val::None,
            Decoded::Bool(b) => Val::Bool(*b),
            Decoded::Int(i) => Val::Int(*i),
            Decoded::BigInt(s) => {
                self.bigs.push(s.clone());
                Val::Big((self.bigs.len() - 1) as u32)
            }
            Decoded::Float(f) => Val::Float(*f),
            Decoded::Str(s) => Val::Str(*s),
            Decoded::Bytes(b) => {
                self.blobs.push(b.clone());
                Val::Bytes((self.blobs.len() - 1) as u32)
            }
            Decoded::Frame(f) => Val::Frame(*f),
            Decoded::Stack(s) => Val::Stack(*s),
            Decoded::Rows(s, n) => Val::Rows(*s, *n),
            Decoded::List(items) | Decoded::Tuple(items) | Decoded::Set(items) => {
                let kind = match node {
                    Decoded::List(_) => Container::List,
                    Decoded::Tuple(_) => Container::Tuple,
                    _ => Container::Set,
                };
                let vals: Vec<Val> = items.iter().map(|n| self.materialize(n)).collect();
                let o = self.new_obj(kind);
                self.objs[o as usize].items = vals;
                self.objs[o as usize].aliased = true;
                Val::Obj(o)
            }
            Decoded::Dict(pairs) => {
                let mut vals = Vec::with_capacity(pairs.len() * 2);
                for (k, v) in pairs {
                    vals.push(self.materialize(k));
                    vals.push(self.materialize(v));
                }
                let o = self.new_obj(Container::Dict);
                self.objs[o as usize].items = vals;
                self.objs[o as usize].aliased = true;
                Val::Obj(o)
            }
        }
    }

    /// Fills `self.pairs` with the key/value nodes of dict `o` (shallow for scalars).
    fn dict_pairs(&mut self, o: u32, at: u64) -> Result<(), DecodeError> {
        let mut pairs = std::mem::take(&mut self.pairs);
        pairs.clear();
        let n = self.objs[o as usize].items.len();
        let mut i = 0;
        while i + 1 < n {
            let k = self.objs[o as usize].items[i];
            let v = self.objs[o as usize].items[i + 1];
            let k = self.to_node(k, 1);
            let v = self.to_node(v, 1);
            match (k, v) {
                (Ok(k), Ok(v)) => pairs.push((k, v)),
                (Err(e), _) | (_, Err(e)) => {
                    self.pairs = pairs;
                    return Err(e.or_at(at));
                }
            }
            i += 2;
        }
        self.pairs = pairs;
        Ok(())
    }

    fn memo_put(&mut self, idx: usize, at: u64) -> Result<(), DecodeError> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(DecodeError::at(at, "memoize with an empty stack"));
        }
        let v = *self.stack.last().unwrap();
        let slot = match v {
            Val::Str(s) => Slot::tagged(Slot::T_STR, s),
            Val::Obj(o) => {
                let obj = &mut self.objs[o as usize];
                if obj.memo == NO_MEMO {
                    obj.memo = idx as u32;
                } else {
                    // Memoized twice: the other slot keeps a handle.
                    obj.aliased = true;
                }
                Slot::tagged(Slot::T_OBJ, o)
            }
            Val::Frame(f) => Slot::tagged(Slot::T_FRAME, f),
            Val::Stack(s) => Slot::tagged(Slot::T_STACK, s),
            _ => None,
        };
        let slot = match slot {
            Some(s) => s,
            None => {
                self.memo_boxed.push(v);
                Slot((self.memo_boxed.len() - 1) as u32 | Slot::T_BOXED << 29)
            }
        };
        if idx < self.memo.len() {
            self.memo[idx] = slot;
        } else if idx == self.memo.len() {
            self.memo.push(slot);
        } else if idx - self.memo.len() <= MAX_MEMO_GAP {
            self.memo.resize(idx, Slot::HOLE);
            self.memo.push(slot);
        } else {
            return Err(DecodeError::at(
                at,
                format!(
                    "memo index {idx} jumps far past the {} entries stored so far",
                    self.memo.len()
                ),
            ));
        }
        if self.memo.len() > (Slot::PAYLOAD as usize) << 2 {
            return Err(DecodeError::at(
                at,
                "the pickle memo grew beyond two billion entries",
            ));
        }
        Ok(())
    }

    #[inline(always)]
    fn memo_get(&mut self, idx: usize, at: u64) -> Result<(), DecodeError> {
        let slot = match self.memo.get(idx) {
            Some(&s) if s != Slot::HOLE => s,
            _ => return Err(self.memo_miss(idx, at)),
        };
        if self.stack.len() >= MAX_STACK {
            return Err(DecodeError::at(
                at,
                format!("more than {MAX_STACK} values pending on the pickle stack"),
            ));
        }
        let payload = slot.0 & Slot::PAYLOAD;
        // Push from each branch: building the value first and pushing it after costs a
        // store-forwarding stall on every get.
        match slot.0 >> 29 {
            Slot::T_STR => self.stack.push(Val::Str(payload)),
            Slot::T_FRAME => self.stack.push(Val::Frame(payload)),
            Slot::T_STACK => self.stack.push(Val::Stack(payload)),
            _ => {
                let v = self.memo_value(slot);
                self.stack.push(v);
            }
        }
        Ok(())
    }

    #[cold]
    fn memo_miss(&self, idx: usize, at: u64) -> DecodeError {
        DecodeError::at(
            at,
            format!(
                "memo index {idx} was never stored ({} entries so far)",
                self.memo.len()
            ),
        )
        .with_hint("the file is corrupt")
    }

    /// The value of a memo slot that is not a string, frame or stack.
    fn memo_value(&mut self, slot: Slot) -> Val {
        let payload = slot.0 & Slot::PAYLOAD;
        match slot.0 >> 29 {
            Slot::T_STR => Val::Str(payload),
            Slot::T_OBJ => {
                let obj = &mut self.objs[payload as usize];
                match obj.converted {
                    Some(v) => v,
                    None => {
                        obj.aliased = true;
                        Val::Obj(payload)
                    }
                }
            }
            Slot::T_FRAME => Val::Frame(payload),
            Slot::T_STACK => Val::Stack(payload),
            Slot::T_ROW => Val::Rows(payload, 1),
            Slot::T_NODE => {
                let node = self.memo_nodes[payload as usize].clone();
                self.materialize(&node)
            }
            _ => self.memo_boxed[payload as usize],
        }
    }

    /// Converts a value (and everything below it) into a [`Decoded`] for the builder.
    fn to_node(&self, v: Val, depth: usize) -> Result<Decoded, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::new(
                None,
                format!("containers nest deeper than {MAX_DEPTH} levels"),
            ));
        }
        Ok(match v {
            Val::None => Decoded::None,
            Val::Bool(b) => Decoded::Bool(b),
            Val::Int(i) => Decoded::Int(i),
            Val::Big(i) => Decoded::BigInt(self.bigs[i as usize].clone()),
            Val::Float(f) => Decoded::Float(f),
            Val::Str(s) => Decoded::Str(s),
            Val::Bytes(i) => Decoded::Bytes(self.blobs[i as usize].clone()),
            Val::Frame(f) => Decoded::Frame(f),
            Val::Stack(s) => Decoded::Stack(s),
            Val::Rows(s, n) => Decoded::Rows(s, n),
            Val::Obj(o) => {
                let obj = &self.objs[o as usize];
                if let Some(c) = obj.converted {
                    return self.to_node(c, depth);
                }
                // Collected into vectors made their final size at once: collecting `Result`s
                // cannot know the length and grows them by doubling.
                let items = || -> Result<Vec<Decoded>, DecodeError> {
                    let mut nodes = Vec::with_capacity(obj.items.len());
                    for &item in &obj.items {
                        nodes.push(self.to_node(item, depth + 1)?);
                    }
                    Ok(nodes)
                };
                match obj.kind {
                    Container::List => Decoded::List(items()?),
                    Container::Tuple => Decoded::Tuple(items()?),
                    Container::Set => Decoded::Set(items()?),
                    Container::Dict => {
                        let mut pairs = Vec::with_capacity(obj.items.len() / 2);
                        for kv in obj.items.chunks_exact(2) {
                            pairs.push((
                                self.to_node(kv[0], depth + 1)?,
                                self.to_node(kv[1], depth + 1)?,
                            ));
                        }
                        Decoded::Dict(pairs)
                    }
                }
            }
        })
    }
}

/// Appends `item` to a list's items, extending the last run of trace rows when `item` is the
/// run of rows that follows it.
#[inline(always)]
fn push_rows(items: &mut Vec<Val>, item: Val) {
    match (item, items.last_mut()) {
        (Val::Rows(s, n), Some(Val::Rows(ls, ln))) if *ls + *ln == s => *ln += n,
        (item, _) => items.push(item),
    }
}

/// The memo index and opcode length of a `BINGET`/`LONG_BINGET` at `buf[i]`.
#[inline(always)]
fn get_index(buf: &[u8], i: usize) -> Option<(usize, usize)> {
    match *buf.get(i)? {
        BINGET => Some((*buf.get(i + 1)? as usize, 2)),
        LONG_BINGET => {
            let b = buf.get(i + 1..i + 5)?;
            Some((u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize, 5))
        }
        _ => None,
    }
}

/// Scans `(BINGET | LONG_BINGET)+ APPENDS` of memoized frames into `out`; returns the length
/// in bytes including the APPENDS, or `None` if the bytes are anything else (or cut short).
#[inline(always)]
fn scan_frame_gets(buf: &[u8], memo: &[Slot], out: &mut Vec<FrameId>) -> Option<usize> {
    out.clear();
    let mut i = 0;
    loop {
        if buf.get(i) == Some(&APPENDS) && !out.is_empty() {
            return Some(i + 1);
        }
        let (idx, len) = get_index(buf, i)?;
        let slot = memo.get(idx)?;
        if slot.0 >> 29 != Slot::T_FRAME {
            return None;
        }
        out.push(slot.0 & Slot::PAYLOAD);
        i += len;
    }
}

/// A `SHORT_BINUNICODE` at `buf[*i]`, interned, with the `MEMOIZE` that may follow it.
#[inline(always)]
fn short_string(
    buf: &[u8],
    i: &mut usize,
    builder: &mut Builder,
    memo: &mut Vec<Slot>,
) -> Option<StrId> {
    let len = *buf.get(*i + 1)? as usize;
    let bytes = buf.get(*i + 2..*i + 2 + len)?;
    let id = builder.strings.intern_utf8(bytes).ok()?;
    *i += 2 + len;
    if buf.get(*i) == Some(&MEMOIZE) {
        memo.push(Slot::tagged(Slot::T_STR, id)?);
        *i += 1;
    }
    Some(id)
}

fn kind_name(kind: Container) -> &'static str {
    match kind {
        Container::List => "list",
        Container::Dict => "dict",
        Container::Tuple => "tuple",
        Container::Set => "set",
    }
}

/// Decimal text of a little-endian two's-complement integer of any width.
fn long_to_decimal(bytes: &[u8]) -> String {
    let negative = bytes.last().is_some_and(|b| b & 0x80 != 0);
    // Magnitude as little-endian u32 limbs.
    let mut mag: Vec<u8> = bytes.to_vec();
    if negative {
        // Two's complement negate: invert and add one.
        let mut carry = 1u16;
        for b in mag.iter_mut() {
            let v = (!*b) as u16 + carry;
            *b = v as u8;
            carry = v >> 8;
        }
    }
    let mut limbs: Vec<u32> = mag
        .chunks(4)
        .map(|c| {
            let mut buf = [0u8; 4];
            buf[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(buf)
        })
        .collect();
    let mut digits = Vec::new();
    while limbs.iter().any(|&l| l != 0) {
        let mut rem = 0u64;
        for limb in limbs.iter_mut().rev() {
            let cur = (rem << 32) | *limb as u64;
            *limb = (cur / 1_000_000_000) as u32;
            rem = cur % 1_000_000_000;
        }
        digits.push(rem as u32);
    }
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    match digits.split_last() {
        None => out.push('0'),
        Some((last, rest)) => {
            out.push_str(&last.to_string());
            for d in rest.iter().rev() {
                out.push_str(&format!("{d:09}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{long_to_decimal, Resumable, ROWS_SAMPLED};

    /// A protocol-4 pickle of a snapshot with one device whose trace has `rows` allocations,
    /// every dict and list memoized as pickle writes them.
    fn snapshot_pickle(rows: u32) -> Vec<u8> {
        snapshot_pickle_with(rows, |_| false)
    }

    /// [`snapshot_pickle`] where the rows `noted` picks carry one more key, `"note"`, whose
    /// value (an empty list) the fast path does not read.
    fn snapshot_pickle_with(rows: u32, noted: impl Fn(u32) -> bool) -> Vec<u8> {
        fn text(out: &mut Vec<u8>, s: &str) {
            out.push(0x8c);
            out.push(s.len() as u8);
            out.extend_from_slice(s.as_bytes());
            out.push(0x94);
        }
        let mut out = b"\x80\x04}\x94(".to_vec();
        text(&mut out, "segments");
        out.extend_from_slice(b"]\x94");
        text(&mut out, "device_traces");
        out.extend_from_slice(b"]\x94]\x94(");
        for row in 0..rows {
            out.extend_from_slice(b"}\x94(");
            text(&mut out, "action");
            text(&mut out, "alloc");
            text(&mut out, "addr");
            out.push(b'J');
            out.extend_from_slice(&(row * 512).to_le_bytes());
            text(&mut out, "size");
            out.extend_from_slice(b"M\x00\x02");
            text(&mut out, "stream");
            out.extend_from_slice(b"K\x00");
            if noted(row) {
                text(&mut out, "note");
                out.extend_from_slice(b"]\x94");
            }
            out.push(b'u');
        }
        out.extend_from_slice(b"eau.");
        out
    }

    #[test]
    fn a_stream_of_known_length_makes_room_for_its_rows_once_a_few_are_read() {
        let rows = 3 * ROWS_SAMPLED;
        let bytes = snapshot_pickle(rows);
        let first_part = bytes.len() * 2 / 5;
        let mut feed = Resumable::new();
        feed.expect_bytes(bytes.len() as u64);
        feed.push(bytes[..first_part].to_vec()).unwrap();
        let (row_room, memo_room) = (
            feed.parser.builder.row_capacity(),
            feed.parser.memo.capacity(),
        );
        feed.push(bytes[first_part..].to_vec()).unwrap();
        let memo_used = feed.parser.memo.len();
        assert!(
            row_room >= rows as usize,
            "room for {row_room} rows of {rows}"
        );
        assert!(
            row_room <= rows as usize * 9 / 8,
            "room for {row_room} rows of {rows}"
        );
        assert!(
            memo_room >= memo_used,
            "{memo_room} memo entries of {memo_used}"
        );
        let snapshot = feed.finish().unwrap();
        assert_eq!(snapshot.devices[0].trace.len(), rows as usize);

        // Without the length, nothing is made room for ahead.
        let mut unknown = Resumable::new();
        unknown.push(bytes[..first_part].to_vec()).unwrap();
        assert!(unknown.parser.builder.row_capacity() < rows as usize);
    }

    #[test]
    fn rows_the_fast_path_cannot_read_are_staged_in_their_lists_order() {
        let rows = 40;
        let bytes = snapshot_pickle_with(rows, |row| row % 3 == 1);
        let mut feed = Resumable::new();
        feed.push(bytes).unwrap();
        let in_order: Vec<u64> = (0..u64::from(rows)).map(|row| row * 512).collect();
        assert_eq!(feed.parser.builder.staged_addresses(), &in_order[..]);
        let snapshot = feed.finish().unwrap();
        assert_eq!(*snapshot.devices[0].trace.addr, in_order);
    }

    #[test]
    fn long_decimal_matches_python() {
        // int.to_bytes(..., 'little', signed=True) of known values.
        assert_eq!(
            long_to_decimal(&[0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01]),
            "18446744073709551616"
        );
        assert_eq!(long_to_decimal(&[0xff; 9]), "-1");
        assert_eq!(
            long_to_decimal(&[0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0xff]),
            "-9223372036854775808"
        );
        assert_eq!(
            long_to_decimal(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00]),
            "18446744073709551615"
        );
    }
}
