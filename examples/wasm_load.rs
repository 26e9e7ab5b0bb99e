//! A worker's memory for one file under WebAssembly, outside the browser: built for wasm32 and
//! run by `benches/wasm_memory.mjs` in Node.js (V8, the engine Chromium uses). The file is
//! pushed in the worker's parts, then finished, analysed and its first view prepared and
//! asked for, as a worker does; after each step it reports the module's memory (which never
//! shrinks, so it is what the tab keeps) and the heap in use and at most in use during the
//! step. Natively a stub.

#[cfg(target_arch = "wasm32")]
#[path = "../crates/core/examples/common/counting.rs"]
mod counting;

#[cfg(target_arch = "wasm32")]
mod wasm {
    use memsight_core::protocol::{FileEvent, FromWorker, Request};
    use memsight_core::session::{Feeding, Session};
    use memsight_core::timeline::service::{FrameRequest, TimelineRequest};
    use memsight_core::timeline::TimelineKind;
    use wasm_bindgen::prelude::*;

    use crate::counting;

    #[global_allocator]
    static ALLOCATOR: counting::Counting = counting::Counting;

    #[wasm_bindgen]
    extern "C" {
        #[wasm_bindgen(js_namespace = performance, js_name = now)]
        fn now_ms() -> f64;
    }

    /// One file's load, step by step.
    #[wasm_bindgen]
    pub struct Load {
        session: Session,
        feeding: Option<Feeding>,
        lap_start: f64,
        steps: Vec<String>,
    }

    #[wasm_bindgen]
    impl Load {
        /// Starts a load of a pickle of `total` bytes.
        #[wasm_bindgen(constructor)]
        pub fn new(total: f64) -> Load {
            let mut session = Session::new();
            let feeding = session
                .start_feeding(total as u64, &now_ms, &mut |_: FileEvent| {})
                .ok();
            counting::take_peak();
            Load {
                session,
                feeding,
                lap_start: now_ms(),
                steps: Vec::new(),
            }
        }

        /// Decodes the next part of the file; false once the file is not a snapshot.
        pub fn push(&mut self, part: &[u8]) -> bool {
            let Some(feeding) = self.feeding.as_mut() else {
                return false;
            };
            feeding
                .push(part.to_vec(), &now_ms, &mut |_: FileEvent| {})
                .is_ok()
        }

        /// Finishes the load and prepares and asks for the first view, and returns one line
        /// per step: name, milliseconds, module memory, heap held and heap peak (MiB), tab
        /// separated.
        pub fn finish(&mut self) -> Result<String, String> {
            self.lap("decode (parts pushed)");
            let feeding = self.feeding.take().ok_or("not a snapshot")?;
            let event = self.session.finish_feeding(feeding, &now_ms);
            let FileEvent::Loaded(summary) = &event else {
                return Err(format!("not loaded: {event:?}"));
            };
            let device = summary.default_device;
            let _ = serde_json::to_string(&FromWorker::Event(event.clone()));
            self.lap("finish, analyse, overview");
            self.session.prepare_first_view(&now_ms);
            self.lap("first view prepared");
            let layout = TimelineRequest::Layout {
                device,
                kind: TimelineKind::Allocations,
                detail: None,
            };
            self.ask(Request::Timeline(layout))?;
            self.lap("layout (+ JSON)");
            let frame = FrameRequest::first(device, 1200, 400);
            self.ask(Request::Timeline(TimelineRequest::Frame(frame)))?;
            self.lap("first frame (+ JSON)");
            Ok(self.steps.join("\n"))
        }
    }

    impl Load {
        fn ask(&mut self, request: Request) -> Result<(), String> {
            let reply = self
                .session
                .answer(request, &now_ms)
                .map_err(|e| format!("{e:?}"))?;
            serde_json::to_string(&reply.answer).map_err(|e| e.to_string())?;
            Ok(())
        }

        fn lap(&mut self, name: &str) {
            let now = now_ms();
            let mib = |bytes: usize| bytes as f64 / f64::from(1 << 20);
            let memory = core::arch::wasm32::memory_size(0) * 65536;
            let held = counting::in_use();
            let peak = counting::take_peak();
            self.steps.push(format!(
                "{name}\t{:.1}\t{:.1}\t{:.1}\t{:.1}",
                now - self.lap_start,
                mib(memory),
                mib(held),
                mib(peak)
            ));
            self.lap_start = now_ms();
        }
    }
}

fn main() {}
