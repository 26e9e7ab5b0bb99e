//! What the page's own address asks for, before any file is open: snapshots hosted beside the
//! page to open (`?url=runs/rank0.pickle&url=runs/rank1.pickle`), the compact embedded layout
//! (`?embed=1`, with `view=` naming the one view it shows), and the origins of host pages that
//! may hand the embedded viewer snapshots (`host=https://docs.example.com`). Also whether the
//! page's Content-Security-Policy lets it fetch from an origin, so a snapshot on another origin
//! gets a clear message instead of a blocked request.
//!
//! Pure, natively tested. Not the place for fetching (`remote.rs`) or for the view state in the
//! fragment (`link.rs`).

use super::link::Section;
use crate::protocol::ErrorReport;

/// The page's query, read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageQuery {
    /// Snapshot URLs to open, as written (relative to the page, or absolute).
    pub urls: Vec<String>,
    /// The compact layout for `<iframe>`s.
    pub embed: bool,
    /// The view an embedded viewer shows alone.
    pub view: Option<Section>,
    /// Origins (`scheme://host[:port]`) of pages that may embed the viewer and hand it files.
    pub hosts: Vec<String>,
    /// `startup=plain`: every startup trick off (no rehearsal, no worker started ahead or warmed
    /// up, no first view made before it is asked for), to compare with and to test the views
    /// without them.
    pub plain_startup: bool,
}

impl PageQuery {
    /// Reads `location.search` (with or without its `?`). Unknown keys are ignored; a host that
    /// is not an origin is left out.
    pub fn parse(search: &str) -> PageQuery {
        let search = search.strip_prefix('?').unwrap_or(search);
        let mut query = PageQuery::default();
        for (key, value) in form_urlencoded::parse(search.as_bytes()) {
            match key.as_ref() {
                "url" if !value.trim().is_empty() => query.urls.push(value.trim().to_string()),
                "embed" => query.embed = matches!(value.as_ref(), "" | "1" | "true" | "yes"),
                "view" => query.view = Section::ALL.into_iter().find(|s| s.key() == value.as_ref()),
                "startup" => query.plain_startup = value == "plain",
                "host" => {
                    if let Some(origin) = origin_of(&value) {
                        query.hosts.push(origin);
                    }
                }
                _ => {}
            }
        }
        query
    }
}

/// What an embedded viewer says when a page of `origin` that its address does not name sent
/// it a message: which origin, and how to allow it.
pub fn refused_host(origin: &str) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    query.append_pair("host", origin);
    format!(
        "A page at {origin} sent this viewer a message, which it ignored: it takes messages only from its own origin and from origins its address names. To allow this one, add &{} to the frame's src.",
        query.finish()
    )
}

/// The origin of an absolute http(s) URL, lower-cased, with a default port left out:
/// `https://Docs.Example.com:443/a` → `https://docs.example.com`.
pub fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?;
    // Credentials are not part of an origin.
    let host_port = authority.rsplit('@').next()?.to_ascii_lowercase();
    if host_port.is_empty() {
        return None;
    }
    let default_port = if scheme == "https" { ":443" } else { ":80" };
    let host_port = host_port.strip_suffix(default_port).unwrap_or(&host_port);
    Some(format!("{scheme}://{host_port}"))
}

/// Whether a Content-Security-Policy's `connect-src` (or, without one, `default-src`) lets a
/// page of `page_origin` fetch from `origin`. Sources are read as origins: a path in a source
/// is not checked here (the browser still checks it; a fetch it blocks gets the same message
/// as one the server refuses).
pub fn csp_allows_fetch(csp: &str, page_origin: &str, origin: &str) -> bool {
    let directives: Vec<(&str, Vec<&str>)> = csp
        .split(';')
        .filter_map(|d| {
            let mut words = d.split_whitespace();
            let name = words.next()?;
            Some((name, words.collect()))
        })
        .collect();
    let sources = directives
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("connect-src"))
        .or_else(|| {
            directives
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case("default-src"))
        });
    let Some((_, sources)) = sources else {
        // No directive: nothing is restricted.
        return true;
    };
    let Some((scheme, host_port)) = origin.split_once("://") else {
        return false;
    };
    sources.iter().any(|source| {
        let source = source.to_ascii_lowercase();
        match source.as_str() {
            "'self'" => origin == page_origin,
            "'none'" => false,
            "*" => true,
            s if s.ends_with(':') && !s.contains('/') => s.trim_end_matches(':') == scheme,
            s => source_matches(s, scheme, host_port),
        }
    })
}

/// A host source (`https://data.example.com`, `*.example.com`, `example.com:8443`) against an
/// origin's scheme and `host[:port]`.
fn source_matches(source: &str, scheme: &str, host_port: &str) -> bool {
    let (source_scheme, rest) = match source.split_once("://") {
        Some((s, rest)) => (Some(s), rest),
        None => (None, source),
    };
    if let Some(s) = source_scheme {
        // A source for http also allows https (CSP's upgrade rule).
        if s != scheme && !(s == "http" && scheme == "https") {
            return false;
        }
    }
    let authority = rest.split('/').next().unwrap_or("");
    let default_port = if scheme == "https" { "443" } else { "80" };
    let (host, port) = split_port(host_port, default_port);
    let (source_host, source_port) = split_port(authority, default_port);
    let host_ok = match source_host.strip_prefix("*.") {
        Some(suffix) => host.ends_with(&format!(".{suffix}")),
        None => host == source_host,
    };
    host_ok && (source_port == "*" || source_port == port)
}

fn split_port<'a>(authority: &'a str, default: &'a str) -> (&'a str, &'a str) {
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => (host, port),
        _ => (authority, default),
    }
}

/// What the file list calls a snapshot fetched from `url` (absolute): its path relative to the
/// page's folder when it sits under it (`runs/iteration_3/rank5.pickle`, so ranks and
/// iterations read from it), else its host and path. Percent-escapes are decoded.
pub fn name_of_url(url: &str, page_url: &str) -> String {
    let strip = |u: &str| u.split(['?', '#']).next().unwrap_or("").to_string();
    let url = strip(url);
    let page = strip(page_url);
    let folder = &page[..page.rfind('/').map_or(0, |i| i + 1)];
    let path = match url.strip_prefix(folder).filter(|_| !folder.is_empty()) {
        Some(relative) if !relative.is_empty() => relative.to_string(),
        _ => url
            .split_once("://")
            .map_or(url.as_str(), |(_, rest)| rest)
            .to_string(),
    };
    let decoded = percent_encoding::percent_decode_str(&path).decode_utf8_lossy();
    if decoded.is_empty() {
        "snapshot".to_string()
    } else {
        decoded.into_owned()
    }
}

/// Why a snapshot named by `?url=` could not be fetched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchProblem {
    /// Not an http(s) URL once resolved against the page.
    NotHttp { url: String },
    /// On another origin than the page's, which the page's policy does not let it fetch from.
    OtherOrigin { origin: String, page_origin: String },
    /// The request failed before any answer: the server is unreachable, or (on another origin)
    /// refused the page's cross-origin request.
    Unreachable {
        origin: String,
        page_origin: String,
        detail: String,
    },
    /// The server answered with an HTTP error.
    Status {
        code: u16,
        text: String,
        url: String,
    },
    /// The answer broke off.
    Interrupted { received: u64, detail: String },
}

impl FetchProblem {
    /// The problem as the file list and the error panel show it: what went wrong, and what to
    /// do about it.
    pub fn report(&self) -> ErrorReport {
        let (message, hint) = match self {
            FetchProblem::NotHttp { url } => (
                format!("“{url}” is not a web address this page can open."),
                "Name a snapshot hosted beside the page, e.g. ?url=runs/rank0.pickle.".to_string(),
            ),
            FetchProblem::OtherOrigin {
                origin,
                page_origin,
            } => (
                format!(
                    "This page only fetches files from its own site ({page_origin}), and the \
                     snapshot is on {origin}."
                ),
                format!(
                    "Put the snapshot beside the page, or have the page's author add {origin} to \
                     connect-src in the Content-Security-Policy of index.html; the server at \
                     {origin} must also allow {page_origin} (CORS)."
                ),
            ),
            FetchProblem::Unreachable {
                origin,
                page_origin,
                detail,
            } if origin != page_origin => (
                format!(
                    "The snapshot could not be fetched from {origin}: the server refused this \
                     page's cross-origin request, or could not be reached ({detail})."
                ),
                format!(
                    "The server at {origin} must answer with Access-Control-Allow-Origin: {page_origin} (CORS)."
                ),
            ),
            FetchProblem::Unreachable { detail, .. } => (
                format!("The snapshot could not be fetched: the site could not be reached ({detail})."),
                "Check the network connection and open the link again.".to_string(),
            ),
            FetchProblem::Status { code, text, url } => (
                format!("The server answered {code} {text} for {url}."),
                "Check the address: a relative ?url= is read from the page's folder.".to_string(),
            ),
            FetchProblem::Interrupted { received, detail } => (
                format!(
                    "The download broke off after {} ({detail}).",
                    crate::format::bytes(*received)
                ),
                "Open the link again.".to_string(),
            ),
        };
        ErrorReport {
            message,
            offset: None,
            hint: Some(hint),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The policy index.html ships with.
    const PAGE_CSP: &str = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; \
        style-src 'self'; img-src 'self'; connect-src 'self'; worker-src 'self'; \
        manifest-src 'self'; base-uri 'none'; form-action 'none'";
    const PAGE: &str = "https://team.github.io";

    #[test]
    fn the_query_names_files_embedding_and_hosts() {
        let query = PageQuery::parse(
            "?url=runs%2Frank0.pickle&url=runs/rank1.pickle&url=&embed=1&view=table\
             &host=https://Docs.Example.com:443/page&host=javascript:alert(1)&other=x",
        );
        assert_eq!(
            query,
            PageQuery {
                urls: vec!["runs/rank0.pickle".into(), "runs/rank1.pickle".into()],
                embed: true,
                view: Some(Section::Table),
                hosts: vec!["https://docs.example.com".into()],
                plain_startup: false,
            }
        );
        assert!(PageQuery::parse("embed").embed);
        assert!(PageQuery::parse("?startup=plain").plain_startup);
        assert!(!PageQuery::parse("?startup=quick").plain_startup);
        assert!(!PageQuery::parse("embed=0").embed);
        assert_eq!(PageQuery::parse(""), PageQuery::default());
    }

    #[test]
    fn origins_are_scheme_host_and_port() {
        assert_eq!(
            origin_of("http://127.0.0.1:8080/memsight/x.pickle").as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(
            origin_of("https://user:pw@Example.com/a").as_deref(),
            Some("https://example.com")
        );
        assert_eq!(
            origin_of("http://example.com:80").as_deref(),
            Some("http://example.com")
        );
        assert_eq!(origin_of("file:///tmp/x"), None);
        assert_eq!(origin_of("runs/rank0.pickle"), None);
        assert_eq!(origin_of("https://"), None);
    }

    #[test]
    fn the_shipped_policy_allows_only_the_page_origin() {
        assert!(csp_allows_fetch(PAGE_CSP, PAGE, PAGE));
        assert!(!csp_allows_fetch(
            PAGE_CSP,
            PAGE,
            "https://data.example.com"
        ));
        assert!(!csp_allows_fetch(PAGE_CSP, PAGE, "http://team.github.io"));
    }

    #[test]
    fn a_widened_policy_allows_what_it_names() {
        let widened = PAGE_CSP.replace(
            "connect-src 'self'",
            "connect-src 'self' https://data.example.com *.storage.example.org:8443 http://legacy.example.net",
        );
        assert!(csp_allows_fetch(&widened, PAGE, "https://data.example.com"));
        assert!(!csp_allows_fetch(
            &widened,
            PAGE,
            "https://evil.example.com"
        ));
        assert!(csp_allows_fetch(
            &widened,
            PAGE,
            "https://eu.storage.example.org:8443"
        ));
        assert!(!csp_allows_fetch(
            &widened,
            PAGE,
            "https://storage.example.org:8443"
        ));
        assert!(!csp_allows_fetch(
            &widened,
            PAGE,
            "https://eu.storage.example.org"
        ));
        // http sources allow https too; not the other way round.
        assert!(csp_allows_fetch(
            &widened,
            PAGE,
            "https://legacy.example.net"
        ));
        assert!(!csp_allows_fetch(&widened, PAGE, "http://data.example.com"));
        assert!(csp_allows_fetch(
            "connect-src https:",
            PAGE,
            "https://x.org"
        ));
        assert!(!csp_allows_fetch(
            "connect-src https:",
            PAGE,
            "http://x.org"
        ));
        assert!(csp_allows_fetch("connect-src *", PAGE, "http://x.org"));
        // default-src stands in for a missing connect-src; no policy restricts nothing.
        assert!(!csp_allows_fetch(
            "default-src 'self'",
            PAGE,
            "https://x.org"
        ));
        assert!(csp_allows_fetch("img-src 'self'", PAGE, "https://x.org"));
        assert!(csp_allows_fetch("", PAGE, "https://x.org"));
    }

    #[test]
    fn names_keep_the_folders_under_the_page() {
        let page = "https://team.github.io/memsight/index.html?url=x#device=0";
        assert_eq!(
            name_of_url(
                "https://team.github.io/memsight/runs/iteration_3/rank5.pickle",
                page
            ),
            "runs/iteration_3/rank5.pickle"
        );
        assert_eq!(
            name_of_url(
                "https://team.github.io/memsight/my%20run+1.pickle?x=1",
                page
            ),
            "my run+1.pickle"
        );
        assert_eq!(
            name_of_url("https://data.example.com/a/rank0.pickle", page),
            "data.example.com/a/rank0.pickle"
        );
        assert_eq!(
            name_of_url(
                "https://team.github.io/other/rank0.pickle",
                "https://team.github.io/memsight/"
            ),
            "team.github.io/other/rank0.pickle"
        );
    }

    #[test]
    fn fetch_problems_say_what_to_do() {
        let other = FetchProblem::OtherOrigin {
            origin: "https://data.example.com".into(),
            page_origin: PAGE.into(),
        }
        .report();
        assert!(other
            .message
            .contains("only fetches files from its own site (https://team.github.io)"));
        assert!(other
            .hint
            .as_deref()
            .unwrap()
            .contains("add https://data.example.com to connect-src"));
        let cors = FetchProblem::Unreachable {
            origin: "https://data.example.com".into(),
            page_origin: PAGE.into(),
            detail: "TypeError: Failed to fetch".into(),
        }
        .report();
        assert!(cors
            .message
            .contains("refused this page's cross-origin request"));
        assert!(cors
            .hint
            .unwrap()
            .contains("Access-Control-Allow-Origin: https://team.github.io"));
        let own = FetchProblem::Unreachable {
            origin: PAGE.into(),
            page_origin: PAGE.into(),
            detail: "offline".into(),
        }
        .report();
        assert!(own.message.contains("could not be reached (offline)"));
        let status = FetchProblem::Status {
            code: 404,
            text: "Not Found".into(),
            url: "https://team.github.io/runs/x.pickle".into(),
        }
        .report();
        assert_eq!(
            status.message,
            "The server answered 404 Not Found for https://team.github.io/runs/x.pickle."
        );
        let cut = FetchProblem::Interrupted {
            received: 3 << 20,
            detail: "network error".into(),
        };
        assert!(cut.report().message.contains("after 3.00 MiB"));
    }

    #[test]
    fn a_refused_host_is_told_how_to_be_allowed() {
        let words = refused_host("https://docs.example.com:8443");
        assert!(
            words.contains("A page at https://docs.example.com:8443 "),
            "{words}"
        );
        assert!(
            words.contains("&host=https%3A%2F%2Fdocs.example.com%3A8443 "),
            "{words}"
        );
        // What the words tell the host to add is read back as that origin.
        let allowed = PageQuery::parse("?embed=1&host=https%3A%2F%2Fdocs.example.com%3A8443");
        assert_eq!(
            allowed.hosts,
            vec!["https://docs.example.com:8443".to_string()]
        );
    }
}
