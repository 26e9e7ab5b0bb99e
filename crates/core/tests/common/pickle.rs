//! A pickle written opcode by opcode (protocol 2), and the hostile snapshots made with it: the
//! shapes Python's pickler writes too when asked to, which a reader must refuse or stay fast
//! on. Shared by the core's robustness tests and the command line's hostile corpus, so both
//! hold the same bytes. Not a pickler: only the opcodes these files need.
#![allow(dead_code)]

/// The bytes written so far.
#[derive(Default)]
pub struct Pickle(pub Vec<u8>);

impl Pickle {
    pub fn new() -> Self {
        Pickle(vec![0x80, 2])
    }
    pub fn op(&mut self, op: u8) -> &mut Self {
        self.0.push(op);
        self
    }
    pub fn text(&mut self, s: &str) -> &mut Self {
        self.0.push(b'X');
        self.0.extend_from_slice(&(s.len() as u32).to_le_bytes());
        self.0.extend_from_slice(s.as_bytes());
        self
    }
    /// Stores the top of the stack in memo slot `i` (BINPUT, or LONG_BINPUT past 255).
    pub fn put(&mut self, i: u32) -> &mut Self {
        self.memo(b'q', b'r', i)
    }
    /// Pushes memo slot `i` (BINGET, or LONG_BINGET past 255).
    pub fn get(&mut self, i: u32) -> &mut Self {
        self.memo(b'h', b'j', i)
    }
    fn memo(&mut self, short_op: u8, long_op: u8, i: u32) -> &mut Self {
        match u8::try_from(i) {
            Ok(short) => self.0.extend([short_op, short]),
            Err(_) => {
                self.0.push(long_op);
                self.0.extend_from_slice(&i.to_le_bytes());
            }
        }
        self
    }
    pub fn int(&mut self, i: u32) -> &mut Self {
        self.0.push(b'J');
        self.0.extend_from_slice(&i.to_le_bytes());
        self
    }
    /// `i` as LONG1: any unsigned 64-bit value, two's complement with a sign byte.
    pub fn long(&mut self, i: u64) -> &mut Self {
        self.0.extend([0x8a, 9]);
        self.0.extend_from_slice(&i.to_le_bytes());
        self.0.push(0);
        self
    }
    /// A chain of `levels` lists, each holding two memo references to the one before: two
    /// to the power `levels` empty lists once expanded; the last is memo slot `first + levels`.
    pub fn bomb(&mut self, first: u32, levels: u32) -> &mut Self {
        self.op(b']').put(first);
        for k in first..first + levels {
            // POP the list before: the memo keeps it.
            self.op(b'0')
                .op(b']')
                .op(b'(')
                .get(k)
                .get(k)
                .op(b'e')
                .put(k + 1);
        }
        self
    }
    /// A frame dictionary.
    pub fn frame(&mut self, filename: &str, line: u32, name: &str) -> &mut Self {
        self.op(b'}').op(b'(');
        self.text("filename").text(filename);
        self.text("line").int(line);
        self.text("name").text(name);
        self.op(b'u')
    }
    /// An `alloc` trace entry of `size` bytes at `addr`, its frames written by `frames` when
    /// given.
    pub fn alloc(
        &mut self,
        addr: u32,
        size: u32,
        frames: Option<&dyn Fn(&mut Pickle)>,
    ) -> &mut Self {
        self.op(b'}').op(b'(');
        self.text("action").text("alloc");
        self.text("addr").int(addr);
        self.text("size").int(size);
        self.text("stream").int(0);
        if let Some(frames) = frames {
            self.text("frames");
            frames(self);
        }
        self.op(b'u')
    }
    /// `{segments: [], device_traces: [[]], <key>: <value written by f>}`.
    pub fn snapshot_with(key: &str, f: impl FnOnce(&mut Pickle)) -> Vec<u8> {
        let mut p = Pickle::new();
        p.op(b'}').op(b'(');
        p.text("segments").op(b']');
        p.text("device_traces").op(b']').op(b']').op(b'a');
        p.text(key);
        f(&mut p);
        p.op(b'u').op(b'.');
        p.0
    }
    /// `{segments: [], device_traces: <written by f>}`.
    pub fn traces_with(f: impl FnOnce(&mut Pickle)) -> Vec<u8> {
        let mut p = Pickle::new();
        p.op(b'}').op(b'(');
        p.text("segments").op(b']');
        p.text("device_traces");
        f(&mut p);
        p.op(b'u').op(b'.');
        p.0
    }
    /// `{segments: [], device_traces: [[<entries written by f>]]}`: one device.
    pub fn one_device(f: impl FnOnce(&mut Pickle)) -> Vec<u8> {
        Pickle::traces_with(|p| {
            p.op(b']').op(b']').op(b'(');
            f(p);
            p.op(b'e').op(b'a');
        })
    }
}

/// Memo references that expand exponentially (2^`levels` values), kept under `key`.
pub fn memo_bomb(key: &str, levels: u32) -> Vec<u8> {
    Pickle::snapshot_with(key, |p| {
        p.bomb(0, levels);
    })
}

/// `device_traces=[T] * devices` of one memoized trace `T` of `entries` allocations, as
/// Python's pickler writes it: each device would copy its rows.
pub fn one_trace_for_many_devices(entries: u32, devices: u32) -> Vec<u8> {
    Pickle::traces_with(|p| {
        p.op(b']').op(b'(');
        // T, memo slot 0.
        p.op(b']').put(0).op(b'(');
        for i in 0..entries {
            p.alloc(4096 * (i + 1), 512, None);
        }
        p.op(b'e');
        for _ in 1..devices {
            p.get(0);
        }
        p.op(b'e');
    })
}

/// An integer `width` bytes wide (LONG4), kept under an unknown key; it starts at the byte
/// `snapshot_with("extra", …)` puts it.
pub fn wide_integer(width: u32) -> Vec<u8> {
    Pickle::snapshot_with("extra", |p| {
        p.op(0x8b).0.extend_from_slice(&width.to_le_bytes());
        p.0.extend(std::iter::repeat_n(0x55, width as usize));
    })
}

/// `devices` empty trace lists.
pub fn empty_devices(devices: u32) -> Vec<u8> {
    Pickle::traces_with(|p| {
        p.op(b']').op(b'(');
        for _ in 0..devices {
            p.op(b']');
        }
        p.op(b'e');
    })
}

/// One allocation of `size` bytes.
pub fn one_allocation_of(size: u64) -> Vec<u8> {
    Pickle::one_device(|p| {
        p.op(b'}').op(b'(');
        p.text("action").text("alloc");
        p.text("addr").int(4096);
        p.text("size").long(size);
        p.text("stream").int(0);
        p.op(b'u');
    })
}

/// One memoized stack of `frames` frames shared by `allocations` allocations.
pub fn shared_deep_stack(frames: u32, allocations: u32) -> Vec<u8> {
    Pickle::one_device(|p| {
        for i in 0..allocations {
            let stack = |p: &mut Pickle| {
                if i == 0 {
                    p.op(b']').put(1).op(b'(');
                    for line in 0..frames {
                        p.frame("/home/u/train.py", line + 1, "step");
                    }
                    p.op(b'e');
                } else {
                    p.get(1);
                }
            };
            p.alloc(4096 * (i + 1), 512, Some(&stack));
        }
    })
}

/// Allocations whose frames' files and functions hold what a terminal acts on: ESC with CSI
/// sequences (`ESC [2J` clears the screen), an OSC title ended by BEL, a C1 CSI (U+009B),
/// NUL and DEL.
pub fn control_names() -> Vec<u8> {
    Pickle::one_device(|p| {
        let frames = |p: &mut Pickle| {
            p.op(b']').op(b'(');
            p.frame("/home/u/\x1b[31mred\x07.py", 3, "step\x1b]0;title\x07");
            p.frame("/home/u/\u{9b}2Jclear.py", 4, "fwd\x1b[2J\x00\x7f");
            p.op(b'e');
        };
        for i in 0..3 {
            p.alloc(4096 * (i + 1), 512 << i, Some(&frames));
        }
    })
}

/// An ordinary snapshot of about `bytes` bytes: allocations, each with a small stack of its
/// own, most freed again; what hostile files of that size are measured against.
pub fn ordinary(bytes: usize) -> Vec<u8> {
    Pickle::one_device(|p| {
        let mut i = 0u32;
        while p.0.len() < bytes {
            let frames = |p: &mut Pickle| {
                p.op(b']').op(b'(');
                p.frame("/home/u/model.py", 10 + i % 50, "forward");
                p.frame("/home/u/train.py", 100 + i % 7, "step");
                p.frame("/home/u/train.py", 200, "main");
                p.op(b'e');
            };
            let addr = 4096 * (i + 1);
            p.alloc(addr, 512 * (i % 64 + 1), Some(&frames));
            if i % 4 != 3 {
                p.op(b'}').op(b'(');
                p.text("action").text("free_completed");
                p.text("addr").int(addr);
                p.text("size").int(512 * (i % 64 + 1));
                p.text("stream").int(0);
                p.op(b'u');
            }
            i += 1;
        }
    })
}
