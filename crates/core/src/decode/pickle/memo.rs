//! The pickle's memo: values stored by PUT/MEMOIZE and read back by GET, kept as slots that
//! point at converted values (a frame dict shared by a million stacks is decoded once). Not
//! the place for building containers (`objects`).

use std::io::Read;

use super::*;

impl<R: Read> Parser<R> {
    pub(super) fn memo_put(&mut self, idx: usize, at: u64) -> Result<(), DecodeError> {
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
    pub(super) fn memo_get(&mut self, idx: usize, at: u64) -> Result<(), DecodeError> {
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
                let v = self.memo_value(slot)?;
                self.stack.push(v);
            }
        }
        Ok(())
    }

    #[cold]
    pub(super) fn memo_miss(&self, idx: usize, at: u64) -> DecodeError {
        if let Some(why) = &self.expansion_failed {
            return why.clone();
        }
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
    pub(super) fn memo_value(&mut self, slot: Slot) -> Result<Val, DecodeError> {
        let payload = slot.0 & Slot::PAYLOAD;
        Ok(match slot.0 >> 29 {
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
            // Each reference makes a copy: it counts against the file's budget.
            Slot::T_NODE => {
                self.charge(self.memo_node_values[payload as usize])?;
                let node = self.memo_nodes[payload as usize].clone();
                self.materialize(&node)
            }
            _ => self.memo_boxed[payload as usize],
        })
    }
}
