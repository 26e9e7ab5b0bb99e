//! A global allocator for the memory profiles (`load_profile` here, and the root package's
//! `wasm_load`): the system allocator, counting the bytes in use and the most in use since
//! the last [`take_peak`]. A block `realloc` moves counts both copies for that moment, as
//! both are held.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

pub struct Counting;

static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// Bytes in use now.
pub fn in_use() -> usize {
    IN_USE.load(Relaxed)
}

/// The most bytes in use since the last call, and starts counting again from now.
pub fn take_peak() -> usize {
    PEAK.swap(in_use(), Relaxed)
}

fn grew(bytes: usize) {
    let now = IN_USE.fetch_add(bytes, Relaxed) + bytes;
    PEAK.fetch_max(now, Relaxed);
}

// SAFETY: every call is forwarded to `System` unchanged; only sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            grew(layout.size());
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        unsafe { System.dealloc(pointer, layout) };
        IN_USE.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if moved.is_null() {
            return moved;
        }
        if moved != pointer {
            grew(new_size);
            IN_USE.fetch_sub(layout.size(), Relaxed);
        } else if new_size > layout.size() {
            grew(new_size - layout.size());
        } else {
            IN_USE.fetch_sub(layout.size() - new_size, Relaxed);
        }
        moved
    }
}
