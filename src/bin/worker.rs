//! memsight's Web Worker: one per open file. It reads the file in chunks, decodes it, keeps the
//! model and answers the page's view requests (see `memsight_web::worker`).
//!
//! Built by Trunk as a worker (`data-type="worker"` in `index.html`); natively (for
//! `cargo test`) `main` is an empty stub.

/// A model too large for the browser's WebAssembly memory is that file's error, not a crash.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: memsight_web::worker::memory::Limited = memsight_web::worker::memory::Limited;

#[cfg(target_arch = "wasm32")]
fn main() {
    memsight_web::worker::start();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {}
