//! Fetching a snapshot hosted beside the page (`?url=`): the address resolved against the
//! page, refused at once when the page's Content-Security-Policy does not let it fetch from
//! that origin (so the user reads why, not a blocked request), then read chunk by chunk with
//! its progress, into a `Blob` the file's worker loads like a dropped file. An `AbortSignal`
//! stops it (Cancel, or closing the file).
//!
//! The only place the page fetches anything but its own assets, and only when its address asks
//! for it. Not the place for deciding what to open (`actions.rs`) or for the words of a problem
//! (`page_query::FetchProblem`).

use js_sys::{Array, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortSignal, Blob, ReadableStreamDefaultReader};

use super::page_query::{csp_allows_fetch, name_of_url, origin_of, FetchProblem};
use super::workers::js_text;

/// A snapshot address, resolved against the page and checked against its policy.
pub struct Resolved {
    /// The absolute URL.
    pub url: String,
    /// What the file list calls it.
    pub name: String,
    origin: String,
    page_origin: String,
}

/// Resolves `url` against the page; refuses what is not http(s) or what the page's policy
/// forbids fetching, with what to do about it.
pub fn resolve(url: &str) -> Result<Resolved, (String, FetchProblem)> {
    let document = web_sys::window()
        .and_then(|w| w.document())
        .expect("the page has a document");
    let base = document.base_uri().ok().flatten().unwrap_or_default();
    let page_url = document.url().unwrap_or_default();
    let page_origin = origin_of(&page_url).unwrap_or_default();
    let not_http = || {
        let name = url.rsplit('/').next().unwrap_or(url).to_string();
        (
            name,
            FetchProblem::NotHttp {
                url: url.to_string(),
            },
        )
    };
    let absolute = web_sys::Url::new_with_base(url, &base)
        .map(|u| u.href())
        .map_err(|_| not_http())?;
    let origin = origin_of(&absolute).ok_or_else(not_http)?;
    let name = name_of_url(&absolute, &page_url);
    let csp = document
        .query_selector("meta[http-equiv='Content-Security-Policy']")
        .ok()
        .flatten()
        .and_then(|meta| meta.get_attribute("content"))
        .unwrap_or_default();
    if !csp_allows_fetch(&csp, &page_origin, &origin) {
        return Err((
            name,
            FetchProblem::OtherOrigin {
                origin,
                page_origin,
            },
        ));
    }
    Ok(Resolved {
        url: absolute,
        name,
        origin,
        page_origin,
    })
}

/// Fetches `resolved` into a blob, telling `progress` the bytes received (and the total when
/// the server says it) after each chunk. `Err(None)` when `signal` aborted it.
pub async fn fetch(
    resolved: &Resolved,
    signal: &AbortSignal,
    mut progress: impl FnMut(u64, Option<u64>),
) -> Result<Blob, Option<FetchProblem>> {
    let aborted = || signal.aborted();
    let response = gloo_net::http::Request::get(&resolved.url)
        .abort_signal(Some(signal))
        .send()
        .await
        .map_err(|error| {
            (!aborted()).then(|| FetchProblem::Unreachable {
                origin: resolved.origin.clone(),
                page_origin: resolved.page_origin.clone(),
                detail: error.to_string(),
            })
        })?;
    if !response.ok() {
        return Err(Some(FetchProblem::Status {
            code: response.status(),
            text: response.status_text(),
            url: resolved.url.clone(),
        }));
    }
    // A compressed answer's length counts compressed bytes: only a plain one is a total.
    let headers = response.headers();
    let total = headers
        .get("content-length")
        .and_then(|n| n.trim().parse::<u64>().ok())
        .filter(|_| headers.get("content-encoding").is_none());
    let chunks = Array::new();
    let mut received = 0u64;
    progress(received, total);
    if let Some(body) = response.body() {
        let reader: ReadableStreamDefaultReader = body.get_reader().unchecked_into();
        let interrupted = |received: u64, error: JsValue| {
            (!aborted()).then(|| FetchProblem::Interrupted {
                received,
                detail: js_text(&error),
            })
        };
        loop {
            let step = JsFuture::from(reader.read())
                .await
                .map_err(|e| interrupted(received, e))?;
            let done = Reflect::get(&step, &"done".into())
                .ok()
                .and_then(|d| d.as_bool())
                .unwrap_or(true);
            if done {
                break;
            }
            let value = Reflect::get(&step, &"value".into()).unwrap_or(JsValue::UNDEFINED);
            let chunk: Uint8Array = value.unchecked_into();
            received += u64::from(chunk.length());
            chunks.push(&chunk);
            progress(received, total);
        }
    }
    if aborted() {
        return Err(None);
    }
    Blob::new_with_u8_array_sequence(&chunks).map_err(|e| {
        Some(FetchProblem::Interrupted {
            received,
            detail: js_text(&e),
        })
    })
}
