//! Decoder throughput under WebAssembly, outside the browser: built for wasm32 and run by
//! `benches/wasm_decode.mjs` in Node.js (V8, the engine Chromium uses). Natively a stub.

#[cfg(target_arch = "wasm32")]
mod wasm {
    use wasm_bindgen::prelude::*;

    /// Decodes `bytes` and returns the number of trace rows (to keep the work observable).
    #[wasm_bindgen]
    pub fn decode_rows(bytes: &[u8]) -> f64 {
        match memsight_core::decode::decode_bytes(bytes) {
            Ok(s) => s.devices.iter().map(|d| d.trace.len()).sum::<usize>() as f64,
            Err(_) => -1.0,
        }
    }

    /// Decodes and analyses `bytes`, as the worker does on load.
    #[wasm_bindgen]
    pub fn decode_and_analyse(bytes: &[u8]) -> f64 {
        match memsight_core::decode::decode_bytes(bytes) {
            Ok(s) => memsight_core::analysis::Analysed::new(s).facts.len() as f64,
            Err(_) => -1.0,
        }
    }
}

fn main() {}
