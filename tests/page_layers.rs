//! The page's layers, read from its `use` lines and paths (`src/ui`): the shell composes the
//! views, a view never names another view, and the widgets (what several views share) name no
//! view. So a view can be read, changed or removed alone, and a piece two views need has one
//! home (`src/ui/widgets/`, or the core's `format` when it is words).
//!
//! The layers, highest first (ARCHITECTURE.md draws them): the shell → the views → the widgets
//! → the page's other modules and the core. Unit tests inside a module are exempt, as in the
//! core's `layers.rs`, whose reader this shares.

#[path = "../crates/core/tests/sources/mod.rs"]
mod sources;

use std::path::Path;

use sources::{read_package, SourceFile};

/// The views: each folder or file under `src/ui` that shows one view of a file or of several.
/// A new view goes here, and in `snapshot_view.rs` or `file_view.rs`, which show it.
const VIEWS: &[&str] = &[
    "allocator",
    "breakdown",
    "compare",
    "digest_view",
    "files",
    "overview",
    "phases",
    "source",
    "table",
    "timeline",
];

/// The shell: the modules that build the page out of the views. Only these name a view.
const SHELL: &[&str] = &["app", "embed", "file_view", "snapshot_view", "startup"];

/// What several views share. Names no view and no part of the shell.
const WIDGETS: &str = "widgets";

/// The page's other modules: its state, actions and transport, the frame's own components
/// (toolbar, file list, welcome…) and what the views use that is not shown (categories,
/// charts, links). Like the widgets, they name no view.
const OTHERS: &[&str] = &[
    "actions",
    "categories",
    "charts",
    "debounce",
    "deep_link",
    "device_picker",
    "drop_overlay",
    "error_report",
    "file_context",
    "file_list",
    "kept",
    "link",
    "load_progress",
    "moment_notice",
    "near_screen",
    "opening",
    "page_query",
    "panic_banner",
    "perf",
    "plot_share",
    "plot_size",
    "redact_paths",
    "remote",
    "requests",
    "row_window",
    "segmented",
    "state",
    "theme",
    "toolbar",
    "welcome",
    "workers",
];

/// The top-level module of the page `module` is in (`["ui", "table", "grid"]` → `table`).
fn page_module(module: &[String]) -> Option<&str> {
    match module {
        [ui, top, ..] if ui == "ui" => Some(top.as_str()),
        _ => None,
    }
}

fn page() -> Vec<SourceFile> {
    let files = read_package(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let page: Vec<SourceFile> = files
        .into_iter()
        .filter(|f| f.module.first().is_some_and(|m| m == "ui"))
        .collect();
    assert!(page.len() > 50, "the page's sources were not found");
    page
}

/// What names `named` in `file` breaks, if anything.
fn breach(file: &SourceFile, named: &[String]) -> Option<String> {
    let own = page_module(&file.module)?;
    let other = page_module(named)?;
    if other == own || SHELL.contains(&own) {
        return None;
    }
    let place = format!("src/{}", file.path.display());
    let import = named.join("::");
    if VIEWS.contains(&other) {
        let what = if own == WIDGETS {
            "a widget imports a view".to_string()
        } else if VIEWS.contains(&own) {
            format!("the view `{own}` imports the view `{other}`")
        } else {
            format!("`{own}`, which views use, imports the view `{other}`")
        };
        return Some(format!(
            "{place}: {what} (`{import}`): move what both use to src/ui/widgets/ (or to the \
             core's `format` if it is words)"
        ));
    }
    if SHELL.contains(&other) && (VIEWS.contains(&own) || own == WIDGETS) {
        return Some(format!(
            "{place}: `{own}` imports the shell (`{import}`): the shell composes the views, not \
             the other way round"
        ));
    }
    None
}

#[test]
fn every_module_of_the_page_has_a_layer() {
    let mut unknown: Vec<String> = page()
        .iter()
        .filter_map(|f| page_module(&f.module))
        .filter(|top| {
            !(VIEWS.contains(top) || SHELL.contains(top) || OTHERS.contains(top) || *top == WIDGETS)
        })
        .map(|top| {
            format!(
                "src/ui/{top}: in no layer: add it to VIEWS, SHELL or OTHERS in tests/page_layers.rs"
            )
        })
        .collect();
    unknown.dedup();
    assert!(unknown.is_empty(), "\n{}", unknown.join("\n"));
}

#[test]
fn only_the_shell_imports_a_view_and_no_view_or_widget_imports_the_shell() {
    let breaches: Vec<String> = page()
        .iter()
        .flat_map(|file| file.names.iter().filter_map(move |n| breach(file, n)))
        .collect();
    assert!(breaches.is_empty(), "\n{}", breaches.join("\n"));
}

#[test]
fn a_view_importing_another_is_caught() {
    let table = SourceFile {
        path: "ui/table/detail.rs".into(),
        module: vec!["ui".into(), "table".into(), "detail".into()],
        names: Default::default(),
        reexports: Default::default(),
    };
    let stack = ["ui", "timeline", "details", "Stack"].map(String::from);
    let found = breach(&table, &stack).expect("a view naming another is a breach");
    assert!(
        found.starts_with("src/ui/table/detail.rs: the view `table` imports the view `timeline`"),
        "{found}"
    );
    assert!(found.contains("ui::timeline::details::Stack"), "{found}");
    let chart = ["ui", "widgets", "chart", "ChartCard"].map(String::from);
    assert_eq!(breach(&table, &chart), None);
}

/// What a component reads from context, never takes as a prop: the page's actions
/// (`use_actions()`) and the context of the file it shows (`use_file()`). Passed down, they
/// made every component between the page and the one using them carry them.
const FROM_CONTEXT: &[&str] = &["Actions", "FileContext"];

/// The props of each `#[component]` in `text` that are of a type read from context, as
/// `"Component: prop"`.
fn props_from_context(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("#[component]") {
        let rest = &text[at..];
        let Some(fn_at) = rest.find("fn ") else {
            continue;
        };
        let signature = &rest[fn_at + 3..];
        let name: String = signature
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let Some(open) = signature.find('(') else {
            continue;
        };
        // The parameters, split at the commas outside brackets, up to the parenthesis that
        // closes the first one (an arrow's `>` closes nothing).
        let mut depth = 0usize;
        let mut params = vec![String::new()];
        let mut previous = ' ';
        for c in signature[open + 1..].chars() {
            match c {
                '(' | '<' | '[' => depth += 1,
                '>' if previous == '-' => {}
                ')' | '>' | ']' if depth == 0 => break,
                ')' | '>' | ']' => depth -= 1,
                ',' if depth == 0 => {
                    params.push(String::new());
                    previous = c;
                    continue;
                }
                _ => {}
            }
            params.last_mut().expect("one parameter at least").push(c);
            previous = c;
        }
        for param in &params {
            let param: String = param
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            let Some((prop, ty)) = param.split_once(':') else {
                continue;
            };
            let names_a_handle = ty
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|word| FROM_CONTEXT.contains(&word));
            if names_a_handle {
                found.push(format!("{name}: {}", prop.trim()));
            }
        }
    }
    found
}

#[test]
fn no_component_takes_the_actions_or_the_file_context_as_a_prop() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for file in page() {
        let text = std::fs::read_to_string(root.join(&file.path)).expect("a page source reads");
        for prop in props_from_context(&text) {
            found.push(format!(
                "src/{}: {prop}: read it with use_actions() or use_file() instead",
                file.path.display()
            ));
        }
    }
    assert!(found.is_empty(), "\n{}", found.join("\n"));
}

#[test]
fn a_component_taking_the_actions_as_a_prop_is_caught() {
    let text = "#[component]\npub fn Panel(\n    file: FileId,\n    /// Why.\n    actions: Actions,\n    \
                rows: Vec<(u32, Option<FileContext>)>,\n    on_pick: impl Fn(u32) -> bool + \'static,\n) -> impl IntoView {}\n\
                #[component]\nfn Quiet(dark: Signal<bool>) -> impl IntoView {}";
    assert_eq!(
        props_from_context(text),
        vec!["Panel: actions".to_string(), "Panel: rows".to_string()]
    );
}

/// Where the protocol's `Answer` is unwrapped: the asker alone (`src/ui/actions/asker.rs`),
/// which hands every view its answer typed as its request's. A view matching `Answer::` by
/// hand would need a wording of its own for an answer of another kind.
const ANSWERS_UNWRAPPED_IN: &str = "ui/actions/asker.rs";

/// The lines of `text` outside its unit tests that name one of `Answer`'s variants.
fn answers_unwrapped(text: &str) -> Vec<usize> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    code.lines()
        .enumerate()
        .filter(|(_, line)| {
            let line = line.split("//").next().unwrap_or("");
            line.match_indices("Answer::").any(|(at, _)| {
                !line[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
        })
        .map(|(n, _)| n + 1)
        .collect()
}

#[test]
fn only_the_asker_unwraps_an_answer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for file in page() {
        if file.path == Path::new(ANSWERS_UNWRAPPED_IN) {
            continue;
        }
        let text = std::fs::read_to_string(root.join(&file.path)).expect("a page source reads");
        for line in answers_unwrapped(&text) {
            found.push(format!(
                "src/{}:{line}: an answer unwrapped by hand: ask through the file's ViewAsker, \
                 which types it",
                file.path.display()
            ));
        }
    }
    assert!(found.is_empty(), "\n{}", found.join("\n"));
}

#[test]
fn an_answer_unwrapped_by_hand_is_caught() {
    let text = "match a {\n    Answer::Timeline(t) => t,\n    // Answer::Phases in words\n    \
                TimelineAnswer::Frame(f) => f,\n}\n#[cfg(test)]\nmod tests {\n    Answer::Rules\n}";
    assert_eq!(answers_unwrapped(text), vec![2]);
}
