//! Containers on their way into the model: lists, dicts and tuples opened, filled by
//! APPEND(S)/SETITEM(S), converted into trace rows, frames and stacks the moment their parent
//! consumes them, and released. Not the place for what the keys mean (`build`).

use std::io::Read;

use super::*;

impl<R: Read> Parser<R> {
    pub(super) fn op_mark(&mut self, at: u64) -> Result<(), DecodeError> {
        if self.marks.len() >= MAX_MARKS {
            return Err(DecodeError::at(
                at,
                format!("more than {MAX_MARKS} nested MARKs"),
            ));
        }
        self.marks.push(self.stack.len());
        Ok(())
    }

    pub(super) fn op_tuple_n(&mut self, n: usize, at: u64) -> Result<(), DecodeError> {
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

    pub(super) fn op_append(&mut self, at: u64) -> Result<(), DecodeError> {
        let v = self.pop(at)?;
        let target = self.top_obj(Container::List, "APPEND", at)?;
        self.scratch.clear();
        self.scratch.push(v);
        self.fill_obj(target, Container::List, at)
    }

    pub(super) fn op_appends(&mut self, at: u64) -> Result<(), DecodeError> {
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

    pub(super) fn op_setitem(&mut self, at: u64) -> Result<(), DecodeError> {
        let v = self.pop(at)?;
        let k = self.pop(at)?;
        let target = self.top_obj(Container::Dict, "SETITEM", at)?;
        self.scratch.clear();
        self.scratch.push(k);
        self.scratch.push(v);
        self.fill_obj(target, Container::Dict, at)
    }

    pub(super) fn op_setitems(&mut self, at: u64) -> Result<(), DecodeError> {
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
    pub(super) fn trace_entry_done(&mut self, dict: u32, at: u64) -> Result<(), DecodeError> {
        if self.stack.last() != Some(&Val::Obj(dict)) {
            return Ok(());
        }
        if is_trace_entry(&self.objs[dict as usize].items) {
            let row = self.converted(dict, true, None, at)?;
            *self.stack.last_mut().expect("the dict just checked") = row;
        }
        Ok(())
    }

    pub(super) fn new_obj(&mut self, kind: Container) -> u32 {
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

    pub(super) fn alias(&mut self, v: Val) {
        if let Val::Obj(o) = v {
            self.objs[o as usize].aliased = true;
        }
    }

    pub(super) fn top_obj(&self, kind: Container, op: &str, at: u64) -> Result<u32, DecodeError> {
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

    pub(super) fn obj_below(
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
    pub(super) fn fill_obj(
        &mut self,
        target: u32,
        kind: Container,
        at: u64,
    ) -> Result<(), DecodeError> {
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
    pub(super) fn converted(
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
                            Val::Str(crate::decode::build::key::FILENAME) => seen |= 1,
                            Val::Str(crate::decode::build::key::LINE) => seen |= 2,
                            Val::Str(crate::decode::build::key::NAME) => seen |= 4,
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
                                crate::decode::build::key::FRAMES
                                    | crate::decode::build::key::FORWARD_FRAMES
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

    /// Records that container `o` became `new`: the memo now yields `new`, and the slot is
    /// recycled unless another handle to it may exist.
    pub(super) fn retire(&mut self, o: u32, new: Val) {
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
    pub(super) fn release(&mut self, root: u32) {
        let mut pending = std::mem::take(&mut self.release_stack);
        pending.clear();
        pending.push((root, true));
        while let Some((o, is_root)) = pending.pop() {
            let memo = self.objs[o as usize].memo;
            if !is_root && memo != NO_MEMO {
                let before = self.expanded.get();
                match self.to_node(Val::Obj(o), 0) {
                    Ok(node) => {
                        self.memo_nodes.push(node);
                        self.memo_node_values
                            .push(self.expanded.get().saturating_sub(before));
                        let index = (self.memo_nodes.len() - 1) as u32;
                        self.memo[memo as usize] =
                            Slot::tagged(Slot::T_NODE, index).unwrap_or(Slot::HOLE);
                    }
                    // The slot's container is recycled: a later reference to it fails with
                    // why it could not be kept.
                    Err(e) => {
                        self.memo[memo as usize] = Slot::HOLE;
                        self.expansion_failed.get_or_insert(e);
                    }
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
    pub(super) fn materialize(&mut self, node: &Decoded) -> Val {
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
    pub(super) fn dict_pairs(&mut self, o: u32, at: u64) -> Result<(), DecodeError> {
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

    /// Converts a value (and everything below it) into a [`Decoded`] for the builder.
    pub(super) fn to_node(&self, v: Val, depth: usize) -> Result<Decoded, DecodeError> {
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
                self.charge(obj.items.len() as u64 + 1)?;
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
