//! Framework call sites: the places in PyTorch's distributed and mixed-precision code,
//! Megatron-Core, DeepSpeed, the Hugging Face libraries, vLLM, SGLang and RL stacks where
//! memory is made, each with what that memory is for (or the phase of the run it marks), read
//! from the framework's released source and recorded with file, function and versions.
//!
//! Data, one file per family; this module finds the site a frame names, once per distinct
//! frame. Weighing a site against the rest of a stack (the optimizer's frames, the user's
//! rules) is the categories' business ([`super`]); the words are `format`'s. The table is
//! docs/roles.md's too: a test keeps the two alike. Why data, and how a site is weighed:
//! `docs/decisions/0030-framework-call-sites-are-data-read-from-the-frameworks-releases.md`.

mod deepspeed;
mod hf;
mod megatron;
mod rl;
mod sglang;
pub mod site;
mod torch;
mod vllm;

use std::sync::OnceLock;

use rustc_hash::FxHashMap;

pub use site::{Framework, Says, Site};

/// A site's position in [`sites`].
pub type SiteId = u16;

/// Every known site, in a fixed order: PyTorch's, then each framework family's.
pub fn sites() -> &'static [Site] {
    &index().sites
}

/// Site `id`.
pub fn site(id: SiteId) -> &'static Site {
    &index().sites[id as usize]
}

struct Index {
    sites: Vec<Site>,
    /// Python sites by function name.
    python: FxHashMap<&'static str, Vec<SiteId>>,
    /// C++ sites, matched by a part of the symbol.
    native: Vec<SiteId>,
}

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| {
        let sites: Vec<Site> = [
            torch::SITES,
            megatron::SITES,
            deepspeed::SITES,
            hf::SITES,
            vllm::SITES,
            sglang::SITES,
            rl::SITES,
        ]
        .concat();
        let mut python: FxHashMap<&'static str, Vec<SiteId>> = FxHashMap::default();
        let mut native = Vec::new();
        for (id, site) in sites.iter().enumerate() {
            if site.file.is_empty() {
                native.push(id as SiteId);
            } else {
                python.entry(site.function).or_default().push(id as SiteId);
            }
        }
        // The longest file suffix first, and of one file the sites of given lines before
        // the site of the rest of the function: the most specific wins.
        for ids in python.values_mut() {
            ids.sort_by_key(|&id| {
                let site = &sites[id as usize];
                (std::cmp::Reverse(site.file.len()), site.lines.is_empty())
            });
        }
        Index {
            sites,
            python,
            native,
        }
    })
}

/// The site a frame (`filename`, function `name`, at `line`) is at, if any.
pub fn site_of(filename: &str, name: &str, line: i64) -> Option<SiteId> {
    let index = index();
    if filename.ends_with(".py") {
        let candidates = index.python.get(name)?;
        let path = filename.replace('\\', "/");
        return candidates.iter().copied().find(|&id| {
            let site = &index.sites[id as usize];
            ends_with_path(&path, site.file)
                && (site.lines.is_empty() || site.lines.contains(&line))
        });
    }
    if !name.contains("::") {
        return None;
    }
    index
        .native
        .iter()
        .copied()
        .find(|&id| name.contains(index.sites[id as usize].function))
}

/// Whether `path` ends with the path `suffix`, starting at a folder boundary.
fn ends_with_path(path: &str, suffix: &str) -> bool {
    path.strip_suffix(suffix)
        .is_some_and(|rest| rest.is_empty() || rest.ends_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_site_is_well_formed() {
        let mut seen = std::collections::HashSet::new();
        assert!(sites().len() < SiteId::MAX as usize);
        for site in sites() {
            let at = format!("{} {}", site.file, site.function);
            assert!(!site.function.is_empty(), "{at}: no function");
            assert!(
                site.file.is_empty() || site.file.ends_with(".py"),
                "{at}: a Python site's file ends in .py"
            );
            assert!(
                !site.file.starts_with('/') && !site.file.contains('\\'),
                "{at}: a file suffix is relative and /-separated"
            );
            assert!(
                site.file.is_empty() || !site.function.contains(['(', ':', ' ', '.']),
                "{at}: a Python site names a bare function"
            );
            assert!(
                !site.why.is_empty() && !site.source.is_empty(),
                "{at}: why and source"
            );
            assert!(!site.versions.is_empty(), "{at}: versions");
            assert!(
                seen.insert((site.file, site.function, site.lines)),
                "{at}: listed twice"
            );
        }
    }

    #[test]
    fn a_frame_is_matched_by_its_path_end_and_bare_function() {
        let kv = site_of(
            "/opt/conda/lib/python3.10/site-packages/vllm/worker/cache_engine.py",
            "_allocate_kv_cache",
            70,
        )
        .map(site);
        assert!(matches!(
            kv.map(|s| s.says),
            Some(Says::Role(crate::analysis::categories::Role::KvCache))
        ));
        // Another package's file of the same name is not the site.
        assert_eq!(
            site_of("/x/myvllm/worker/cache_engine.py", "_allocate_kv_cache", 70),
            None
        );
        assert_eq!(
            site_of("/x/vllm/worker/cache_engine.py", "allocate", 70),
            None
        );
        assert_eq!(site_of("??", "_allocate_kv_cache", 0), None);
    }
}
