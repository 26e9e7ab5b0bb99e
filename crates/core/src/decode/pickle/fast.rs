//! The decoder's fast paths: the few opcode sequences that make up most of a snapshot (memo
//! gets, small ints, a frame list of memoised frames, a trace entry's dict) read straight from
//! the buffered bytes instead of one opcode at a time. Each reads only when the whole sequence
//! is in the buffer, and otherwise leaves it to the general interpreter (`mod.rs`), so both
//! decode the same bytes to the same model. Not the place for opcodes read one by one.

use std::io::Read;

use super::*;

impl<R: Read> Parser<R> {
    /// The opcodes that make up nearly all of a snapshot, decoded from a 16-byte window
    /// without per-byte bounds checks. Returns false for anything else (the general path
    /// handles it, and everything within 16 bytes of the end).
    #[inline(always)]
    pub(super) fn fast_op(&mut self, c: [u8; 16]) -> Result<bool, DecodeError> {
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
    pub(super) fn frame_list(&mut self, at: u64) -> Result<bool, DecodeError> {
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
    pub(super) fn trace_dict(&mut self, at: u64) -> Result<bool, DecodeError> {
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

    /// A trace entry dict of plain keys and scalar values, converted without building nodes.
    pub(super) fn trace_row_fast(&mut self, o: u32) -> Option<u32> {
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
}

/// The memo index and opcode length of a `BINGET`/`LONG_BINGET` at `buf[i]`.
#[inline(always)]
pub(super) fn get_index(buf: &[u8], i: usize) -> Option<(usize, usize)> {
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
pub(super) fn scan_frame_gets(buf: &[u8], memo: &[Slot], out: &mut Vec<FrameId>) -> Option<usize> {
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
pub(super) fn short_string(
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
