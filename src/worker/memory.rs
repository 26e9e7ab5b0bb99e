//! The worker's memory limit: a browser gives a WebAssembly worker at most 4 GiB of memory,
//! whatever the machine has. When the model of a file does not fit, the allocator's failure
//! becomes the file's error, saying so and pointing to the command line, which has no such
//! limit — instead of a crashed worker with a trap's message. Not the place for deciding what
//! to keep in memory (the core) or for estimating a file's needs before it is read.

use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// The most memory a 32-bit WebAssembly module can address, which is what browsers allow.
pub const WASM_MEMORY_LIMIT: u64 = 4 << 30;

/// The file's size and how much of it had been read, for the message (set as the load goes;
/// the allocator has no other way to know).
static FILE_BYTES: AtomicU64 = AtomicU64::new(0);
static BYTES_READ: AtomicU64 = AtomicU64::new(0);

/// Notes how far the load is, for the message an allocation failure posts.
pub fn loading(bytes_read: u64, total: u64) {
    BYTES_READ.store(bytes_read, Ordering::Relaxed);
    FILE_BYTES.store(total, Ordering::Relaxed);
}

/// The system allocator, which posts the file's error and stops the worker when memory runs
/// out (a null pointer would abort with a trap the page can only call a crash).
pub struct Limited;

// SAFETY: every call is forwarded to `System` unchanged; only a failure is acted upon, and
// that never returns.
unsafe impl GlobalAlloc for Limited {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        checked(System.alloc(layout), layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        checked(System.alloc_zeroed(layout), layout.size())
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        checked(System.realloc(ptr, layout, new_size), new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

fn checked(ptr: *mut u8, size: usize) -> *mut u8 {
    if ptr.is_null() {
        out_of_memory(size as u64);
    }
    ptr
}

/// Posts the file's `Failed` event and traps. Nothing here allocates: the message is written
/// into a buffer on the stack and handed to the page as it is.
fn out_of_memory(requested: u64) -> ! {
    let mut json = StackText::<1024>::new();
    let _ = write_failed_event(&mut json, Shortage::Memory { requested }, &progress());
    post_text(json.as_str());
    trap()
}

/// What could not be had.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shortage {
    /// The memory for an allocation of `requested` bytes.
    Memory { requested: u64 },
    /// An allocation of 2 GiB or more, which a 32-bit address space never gives one table
    /// (Rust's "capacity overflow").
    OneTable,
}

/// How far the load was when memory ran short.
pub struct Progress {
    in_use: u64,
    read: u64,
    total: u64,
}

/// The worker's memory and the load's progress now.
pub fn progress() -> Progress {
    Progress {
        in_use: memory_in_use(),
        read: BYTES_READ.load(Ordering::Relaxed),
        total: FILE_BYTES.load(Ordering::Relaxed),
    }
}

/// What the file's error says to do about it.
pub const HINT: &str = "The command line is not held to the browser's limit (only to the \
     machine's memory) and prints the same numbers: memsight overview FILE --json (./x cli \
     installs it; see the README).";

/// The file's error when memory ran short, in words (a panic's report builds it with this).
pub fn write_message(out: &mut impl Write, shortage: Shortage, at: &Progress) -> std::fmt::Result {
    write!(
        out,
        "This file needs more memory than a browser gives one tab's WebAssembly worker ({} GiB)",
        WASM_MEMORY_LIMIT >> 30
    )?;
    match shortage {
        Shortage::Memory { requested } => write!(
            out,
            ": with {} in use, {} more could not be had",
            Binary(at.in_use),
            Binary(requested)
        )?,
        Shortage::OneTable => write!(
            out,
            ": one of its tables would have grown past 2 GiB, the most one allocation can hold \
             there ({} in use)",
            Binary(at.in_use)
        )?,
    }
    if at.total > 0 && at.read > 0 {
        write!(
            out,
            ", after reading {} of the file's {}",
            Binary(at.read.min(at.total)),
            Binary(at.total)
        )?;
    }
    out.write_str(".")
}

/// The `Failed` event (`memsight_core::protocol::FromWorker`) as JSON: its words have no
/// character JSON would escape.
fn write_failed_event(out: &mut impl Write, shortage: Shortage, at: &Progress) -> std::fmt::Result {
    out.write_str("{\"event\":{\"failed\":{\"message\":\"")?;
    write_message(out, shortage, at)?;
    write!(out, "\",\"offset\":null,\"hint\":\"{HINT}\"}}}}}}")
}

/// Bytes in binary units with one decimal (`3.9 GiB`), written without allocating.
struct Binary(u64);

impl std::fmt::Display for Binary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
        if self.0 < 1024 {
            return write!(f, "{} B", self.0);
        }
        let mut value = self.0 as f64 / 1024.0;
        let mut unit = 0;
        while value >= 1024.0 && unit + 1 < UNITS.len() {
            value /= 1024.0;
            unit += 1;
        }
        write!(f, "{value:.1} {}", UNITS[unit])
    }
}

/// A fixed buffer that text is written into; what does not fit is cut off.
struct StackText<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> StackText<N> {
    fn new() -> Self {
        StackText {
            bytes: [0; N],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        // Only whole `str`s are written in.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl<const N: usize> Write for StackText<N> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > N {
            return Err(std::fmt::Error);
        }
        self.bytes[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(target_arch = "wasm32")]
fn memory_in_use() -> u64 {
    core::arch::wasm32::memory_size(0) as u64 * 65536
}

#[cfg(target_arch = "wasm32")]
fn post_text(text: &str) {
    use wasm_bindgen::{JsCast, JsValue};
    let scope: web_sys::DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let _ = scope.post_message(&JsValue::from_str(text));
}

#[cfg(target_arch = "wasm32")]
fn trap() -> ! {
    core::arch::wasm32::unreachable()
}

#[cfg(not(target_arch = "wasm32"))]
fn memory_in_use() -> u64 {
    0
}

#[cfg(not(target_arch = "wasm32"))]
fn post_text(_: &str) {}

#[cfg(not(target_arch = "wasm32"))]
fn trap() -> ! {
    std::process::abort()
}

#[cfg(test)]
mod tests {
    use super::*;
    use memsight_core::protocol::{ErrorReport, FileEvent, FromWorker};

    fn failed(shortage: Shortage, in_use: u64, read: u64, total: u64) -> ErrorReport {
        let mut json = StackText::<1024>::new();
        let at = Progress {
            in_use,
            read,
            total,
        };
        write_failed_event(&mut json, shortage, &at).expect("it fits");
        match serde_json::from_str(json.as_str()).expect("a message the page reads") {
            FromWorker::Event(FileEvent::Failed(report)) => report,
            other => panic!("not a failure: {other:?}"),
        }
    }

    #[test]
    fn running_out_names_the_limit_the_progress_and_the_command_line() {
        let report = failed(
            Shortage::Memory { requested: 1 << 31 },
            (4 << 30) - (3 << 20),
            3_500_000_000,
            3_900_000_000,
        );
        assert_eq!(
            report.message,
            "This file needs more memory than a browser gives one tab's WebAssembly worker \
             (4 GiB): with 4.0 GiB in use, 2.0 GiB more could not be had, after reading \
             3.3 GiB of the file's 3.6 GiB."
        );
        assert_eq!(report.offset, None);
        assert_eq!(report.hint.as_deref(), Some(HINT));
        assert!(HINT.contains("memsight overview FILE"));
    }

    #[test]
    fn a_table_past_2_gib_is_said_as_such() {
        let report = failed(Shortage::OneTable, 2 << 30, 0, 300_000);
        assert_eq!(
            report.message,
            "This file needs more memory than a browser gives one tab's WebAssembly worker \
             (4 GiB): one of its tables would have grown past 2 GiB, the most one allocation \
             can hold there (2.0 GiB in use)."
        );
    }

    #[test]
    fn nothing_read_yet_is_not_said() {
        let report = failed(Shortage::Memory { requested: 100 }, 2048, 0, 300_000);
        assert!(
            report
                .message
                .ends_with("with 2.0 KiB in use, 100 B more could not be had."),
            "{}",
            report.message
        );
    }

    #[test]
    fn text_that_does_not_fit_is_refused_not_overrun() {
        let mut text = StackText::<8>::new();
        assert!(write!(text, "12345").is_ok());
        assert!(write!(text, "6789").is_err());
        assert_eq!(text.as_str(), "12345");
    }
}
