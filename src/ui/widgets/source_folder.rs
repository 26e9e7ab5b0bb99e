//! A folder of the user's code opened in the page, so the source view can show files a
//! snapshot does not carry: its Python files are kept as the browser's `File`s (nothing is
//! read until a file is shown, nothing leaves the machine) and found for a snapshot's path by
//! the longest shared end (`analysis::lines::match_by_suffix`), since the run's paths are
//! another machine's. One folder for the page, in context, so every file and the comparison
//! use it.
//!
//! Not the place for what a source view shows.

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use crate::analysis::lines::{is_checkout_source, match_by_suffix};

/// The folder opened: its Python files by their path inside it.
#[derive(Clone, Copy)]
pub struct SourceFolder {
    files: StoredValue<Vec<(String, web_sys::File)>, LocalStorage>,
    /// Its paths, matched against the snapshots'.
    paths: StoredValue<Vec<String>>,
    /// Its name and how many Python files it holds; `None` until one is opened.
    pub opened: RwSignal<Option<(String, usize)>>,
}

impl SourceFolder {
    /// No folder yet, provided to every view.
    pub fn provide() {
        provide_context(SourceFolder {
            files: StoredValue::new_local(Vec::new()),
            paths: StoredValue::new(Vec::new()),
            opened: RwSignal::new(None),
        });
    }

    /// The page's folder; `None` outside the app.
    pub fn in_context() -> Option<SourceFolder> {
        use_context::<SourceFolder>()
    }

    /// Keeps the Python files of `list` (a folder input's, each named by its path inside the
    /// folder), in place of any folder opened before. Virtual environments and caches are
    /// left out: the user's code is what is looked for.
    pub fn open(&self, list: &web_sys::FileList) {
        let mut files = Vec::new();
        for i in 0..list.length() {
            let Some(file) = list.item(i) else { continue };
            let path = relative_path(&file);
            if is_checkout_source(&path) {
                files.push((path, file));
            }
        }
        files.sort_by(|a, b| a.0.cmp(&b.0));
        let folder = files
            .first()
            .and_then(|(p, _)| p.split('/').next())
            .filter(|_| files.iter().all(|(p, _)| p.contains('/')))
            .unwrap_or("")
            .to_string();
        let count = files.len();
        self.paths
            .set_value(files.iter().map(|(p, _)| p.clone()).collect());
        self.files.set_value(files);
        self.opened.set(Some((folder, count)));
    }

    /// The file of the folder that `path` (a snapshot's) names: its path in the folder.
    pub fn find(&self, path: &str) -> Option<String> {
        self.paths.with_value(|paths| {
            let i = match_by_suffix(path, paths)?;
            Some(paths[i].clone())
        })
    }

    /// The text of the folder's file at `path` (as [`SourceFolder::find`] gives it).
    pub async fn text(&self, path: &str) -> Result<String, String> {
        let file = self
            .files
            .with_value(|files| {
                files
                    .iter()
                    .find(|(p, _)| p == path)
                    .map(|(_, f)| f.clone())
            })
            .ok_or_else(|| format!("{path} is no longer in the folder opened"))?;
        let text = JsFuture::from(file.text())
            .await
            .map_err(|_| format!("{path} could not be read"))?;
        text.as_string()
            .ok_or_else(|| format!("{path} is not text"))
    }
}

/// A folder input's file's path inside the folder (`webkitRelativePath`), else its name.
fn relative_path(file: &web_sys::File) -> String {
    js_sys::Reflect::get(file.unchecked_ref(), &"webkitRelativePath".into())
        .ok()
        .and_then(|v| v.as_string())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| file.name())
}
