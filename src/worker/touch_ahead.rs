//! Memory touched ahead of a file. The first write to each page of a WebAssembly memory costs
//! the worker a page fault (about 0.5 ms per MiB on the benchmark machine), which a load would
//! otherwise pay while someone waits: a 1M-entry file's load grows the memory by about 64 MiB.
//! The spare worker, once warmed up, allocates [`AHEAD_BYTES`] in steps, writes to every page
//! and frees it all: the allocator keeps the memory (a WebAssembly memory never shrinks), and
//! the next file's load allocates into pages already there. The price is the idle worker's
//! resident memory; a file larger than this pays for the rest as before.
//!
//! Not the place for the worker's memory limit (`memory`) or the warm-up's loads (`warmup`).

use std::cell::Cell;
use std::rc::Rc;

/// What the spare worker touches: a 1M-entry file's load (the largest the tightest target is
/// set for) fits in it.
const AHEAD_BYTES: usize = 64 << 20;

/// Touched per task, so that a file arriving meanwhile waits for one step at most (a few ms).
const STEP_BYTES: usize = 8 << 20;

/// The operating system's page: one write in each faults the whole page in.
const PAGE_BYTES: usize = 4096;

/// Touches the next step, one task at a time, until [`AHEAD_BYTES`] are touched or a file
/// arrives (`busy`); then frees the `blocks` touched so far.
pub(super) fn touch_from(mut blocks: Vec<Vec<u8>>, busy: Rc<Cell<bool>>) {
    if busy.get() || blocks.len() * STEP_BYTES >= AHEAD_BYTES {
        return drop(blocks);
    }
    blocks.push(touched(STEP_BYTES));
    gloo_timers::callback::Timeout::new(0, move || touch_from(blocks, busy)).forget();
}

/// A block of `bytes` with every page written to.
fn touched(bytes: usize) -> Vec<u8> {
    let mut block = Vec::<u8>::with_capacity(bytes);
    let start = block.as_mut_ptr();
    for offset in (0..bytes).step_by(PAGE_BYTES) {
        // SAFETY: `offset` is within the block's capacity. Volatile, as the block is freed
        // unread: a plain write there would be left out.
        unsafe { start.add(offset).write_volatile(0) };
    }
    block
}
