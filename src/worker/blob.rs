//! A [`ChunkSource`] over a browser `Blob` (or `File`), read synchronously with
//! `FileReaderSync`, which only exists in workers. Each call reads one slice of the blob, so
//! only one chunk of the file is ever held in memory.
//!
//! Not for the page's main thread (`FileReaderSync` would block it, and is not available there).

use wasm_bindgen::JsCast;
use web_sys::{Blob, FileReaderSync};

use super::reader::ChunkSource;
use super::{js_error_text, take_bytes};

pub struct BlobSource {
    blob: Blob,
    reader: FileReaderSync,
    len: u64,
}

impl BlobSource {
    pub fn new(blob: Blob) -> Result<Self, String> {
        let reader = FileReaderSync::new().map_err(|e| js_error_text(&e))?;
        let len = blob.size() as u64;
        Ok(BlobSource { blob, reader, len })
    }
}

impl ChunkSource for BlobSource {
    fn size(&self) -> u64 {
        self.len
    }

    fn read_range(&mut self, start: u64, end: u64) -> Result<Vec<u8>, String> {
        let slice = self
            .blob
            .slice_with_f64_and_f64(start as f64, end as f64)
            .map_err(|e| js_error_text(&e))?;
        let buffer = self
            .reader
            .read_as_array_buffer(&slice)
            .map_err(|e| js_error_text(&e))?;
        Ok(take_bytes(buffer.unchecked_ref()))
    }
}
