//! A streaming reader for the plain-data subset of Python's pickle format (protocols 2–5).
//!
//! It interprets opcodes one by one over a chunked [`Input`], so a file never has to be in
//! memory at once, and it refuses every opcode that would import, call or build a Python
//! object: nothing is ever resolved or executed. Completed trace entries and frames are handed
//! to the [`Builder`] the moment their parent consumes them, so millions of them never exist as
//! generic values; the memo then refers to the converted value, which is how a frame dict shared
//! by a million stacks is decoded once.
//!
//! - this file: the interpreter, one opcode at a time, and what it refuses;
//! - `fast`: the opcode sequences most of a snapshot is made of, read straight from the bytes;
//! - `objects`: containers opened, filled, converted into the model's rows and frames;
//! - `memo`: PUT and GET.
//!
//! Not here: what the keys mean (see `build`), gzip and format detection (see `decode`).

mod fast;
mod memo;
mod objects;

use std::io::Read;

use super::build::{expansion_error, expansion_limit, At, Builder, Decoded, ScalarRow, MAX_DEPTH};
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
/// The widest integer read, in bytes (512 bits): sizes, addresses and times take 8; a wider
/// one is written out in decimal, at a cost growing with the square of its width.
const MAX_INT_BYTES: usize = 64;

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
    /// How many values each of `memo_nodes` holds: what a copy of it costs.
    memo_node_values: Vec<u64>,
    /// Values made from the file so far, against [`expansion_limit`].
    expanded: std::cell::Cell<u64>,
    /// Why a memoized value could not be kept (the file expanded past its budget): a later
    /// reference to it fails with this.
    expansion_failed: Option<DecodeError>,
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

    /// Counts `values` made from the file against its budget ([`expansion_limit`]).
    #[inline]
    fn charge(&self, values: u64) -> Result<(), DecodeError> {
        let made = self.expanded.get().saturating_add(values);
        self.expanded.set(made);
        let at = self.input.offset();
        let limit = expansion_limit(at);
        if made > limit {
            return Err(expansion_error(at, limit));
        }
        Ok(())
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
            memo_node_values: Vec::new(),
            expanded: std::cell::Cell::new(0),
            expansion_failed: None,
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
        if n > MAX_INT_BYTES {
            return Err(DecodeError::at(
                at,
                format!(
                    "an integer {n} bytes wide, past the limit of {MAX_INT_BYTES}: no value of a snapshot is that wide (its decimal text would cost time growing with the square of its width)"
                ),
            )
            .with_hint("the file is corrupt or made to exhaust the reader"));
        }
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
