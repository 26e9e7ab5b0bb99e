//! The files the user opens, sorted out before any worker starts: a digest (`memsight
//! digest`: a job's ranks, kilobytes each) is read here, on the page, and needs no worker, so
//! a folder of a thousand digests opens as a thousand rows at once; everything else is a
//! snapshot for a worker to decode. Only files whose name a snapshot's extension does not
//! claim are looked at, and only their first bytes unless they are digests.
//!
//! Not the place for what a digest answers (`session::digested`) or for starting workers
//! (`actions`).

use js_sys::{Array, Promise, Uint8Array};
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;
use web_sys::Blob;

use crate::decode::{is_digest, ErrorReport};
use crate::session::digested::{read_opened, DigestedFile};

/// Bytes read from the start of a file to tell a digest (its marker is in its first key).
const HEAD_BYTES: f64 = 64.0 * 1024.0;

/// Files up to this size are read whole to be looked at: a digest is kilobytes to a few
/// hundred.
const WHOLE_BYTES: f64 = 4.0 * 1024.0 * 1024.0;

/// Milliseconds of reading digests before the page gets a turn to paint and answer.
const SLICE_MS: f64 = 30.0;

/// What the opened files are.
#[derive(Default)]
pub struct Sorted {
    /// For workers to decode, in the order given.
    pub snapshots: Vec<(String, Blob)>,
    /// Digests read, each under its snapshot's name, with its share of its file's bytes.
    pub digests: Vec<(String, u64, DigestedFile)>,
    /// Files that begin as digests and cannot be read: name, bytes, why.
    pub unreadable: Vec<(String, u64, ErrorReport)>,
}

/// Whether a file named so may be a digest: a snapshot's extension (`.pickle`, `.pkl`,
/// `.gz`) says it is not, and such files go to a worker without a look.
pub fn may_be_digest(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    ![".pickle", ".pkl", ".gz"]
        .iter()
        .any(|extension| lower.ends_with(extension))
}

/// Sorts `named` into snapshots and digests, reading digests whole.
pub async fn sort_out(named: Vec<(String, Blob)>) -> Sorted {
    let mut sorted = Sorted::default();
    // A small file is read whole at once (slicing a file costs the browser as much as
    // reading a small one); a larger one's first bytes first.
    let candidates: Vec<usize> = (0..named.len())
        .filter(|&i| may_be_digest(&named[i].0))
        .collect();
    // A file's size is asked of the browser once: each ask looks at the file on disk.
    let sizes: Vec<f64> = named.iter().map(|(_, blob)| blob.size()).collect();
    let looked_at = read_all(candidates.iter().map(|&i| {
        let blob = &named[i].1;
        if sizes[i] <= WHOLE_BYTES {
            blob.clone()
        } else {
            blob.slice_with_f64_and_f64(0.0, HEAD_BYTES)
                .unwrap_or_else(|_| blob.clone())
        }
    }))
    .await;
    let mut digest_files = Vec::new();
    let mut looked_at = candidates.into_iter().zip(looked_at).peekable();
    for (i, (name, blob)) in named.into_iter().enumerate() {
        match looked_at.next_if(|(at, _)| *at == i) {
            Some((_, Ok(bytes))) if is_digest(&bytes[..bytes.len().min(HEAD_BYTES as usize)]) => {
                let whole = (bytes.len() as f64 == sizes[i]).then_some(bytes);
                digest_files.push((name, blob, sizes[i] as u64, whole));
            }
            Some((_, Err(error))) => {
                let size = sizes[i] as u64;
                sorted.unreadable.push((name, size, cannot_read(&error)));
            }
            _ => sorted.snapshots.push((name, blob)),
        }
    }
    // The digests whose first bytes only were read, read whole.
    let rest = read_all(
        digest_files
            .iter()
            .filter(|(_, _, _, whole)| whole.is_none())
            .map(|(_, blob, _, _)| blob.clone()),
    )
    .await;
    let mut rest = rest.into_iter();
    let mut slice_start = now();
    for (name, _, size, whole) in digest_files {
        let content = match whole {
            Some(bytes) => Ok(bytes),
            None => rest
                .next()
                .unwrap_or_else(|| Err(JsValue::from_str("the file was not read"))),
        };
        match content
            .map_err(|e| cannot_read(&e))
            .and_then(|bytes| read_opened(&name, &bytes))
        {
            Ok(digests) => sorted.digests.extend(
                digests
                    .into_iter()
                    .map(|(name, digest)| (name, digest.digest_bytes(), digest)),
            ),
            Err(report) => sorted.unreadable.push((name, size, report)),
        }
        if now() - slice_start > SLICE_MS {
            next_task().await;
            slice_start = now();
        }
    }
    sorted
}

/// Each blob's bytes, read side by side.
async fn read_all(blobs: impl Iterator<Item = Blob>) -> Vec<Result<Vec<u8>, JsValue>> {
    let reads: Array = blobs
        .map(|blob| JsValue::from(blob.array_buffer()))
        .collect();
    let count = reads.length();
    // Each read settles on its own: one unreadable file does not hide the others.
    let settled = JsFuture::from(Promise::all_settled(&reads)).await;
    let Ok(settled) = settled.map(|s| Array::from(&s)) else {
        return (0..count)
            .map(|_| Err(JsValue::from_str("the files could not be read")))
            .collect();
    };
    settled
        .iter()
        .map(|outcome| {
            let status = js_sys::Reflect::get(&outcome, &"status".into()).ok();
            if status.and_then(|s| s.as_string()).as_deref() == Some("fulfilled") {
                let value = js_sys::Reflect::get(&outcome, &"value".into())?;
                Ok(Uint8Array::new(&value).to_vec())
            } else {
                Err(js_sys::Reflect::get(&outcome, &"reason".into())?)
            }
        })
        .collect()
}

fn cannot_read(error: &JsValue) -> ErrorReport {
    ErrorReport::message(format!(
        "The file cannot be read: {}.",
        super::workers::js_text(error)
    ))
}

/// `performance.now()`.
fn now() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

/// Resolves in a task of its own (`setTimeout(0)`), so the page paints and answers between.
async fn next_task() {
    let promise = Promise::new(&mut |resolve, _| {
        if let Some(window) = web_sys::window() {
            let _ = window.set_timeout_with_callback(&resolve);
        }
    });
    let _ = JsFuture::from(promise).await;
}
