//! The allocations table: every allocation of a scope (alive at the peak, at the moment picked
//! on the timeline, at the end, allocated in the window the timeline shows, or all), filtered,
//! sorted by any column and grouped into a tree, with its totals, a detail panel for the
//! selected row and a CSV download.
//!
//! The worker keeps the table; the page asks only for the lines in view (`grid`, virtualised)
//! and asks again when the query, the opened groups or the scroll position change (the latest
//! answer wins). Selection is shared with the timeline through [`FileContext::selected`], a
//! highlighted category filters the table, and the timeline's search is its text filter.
//! Components: `toolbar` (scope, grouping, filters, CSV), `grid` (header and lines), `detail`.

mod detail;
mod grid;
mod toolbar;

use leptos::html::Div;
use leptos::prelude::*;

use super::actions::{use_actions, Actions, ViewAsker};
use super::file_context::{use_file, FileContext};
use super::link::TableLink;
use super::widgets::download::download;
pub use super::link::TablePick;
use super::requests::Latest;
use super::state::FileId;
use crate::model::{Row, State};
use crate::format::when;
use crate::analysis::axis::AxisMode;
use crate::analysis::categories::{Component, Dimension, Role};
use crate::export::CsvRequest;
use crate::format;
use crate::table::columns::TableRow;
use crate::table::groups::Line;
use crate::table::service::{TableView, ViewRequest};
use crate::table::{Filter, GroupBy, Scope, Sort, TableQuery};

/// Height of one line, in CSS pixels (the grid's CSS says the same).
pub const LINE_HEIGHT: f64 = 26.0;
/// Lines asked for beyond those in view, above and below, so a short scroll needs no answer.
const OVERSCAN: u64 = 30;
/// Lines the scroll box shows.
const LINES_SHOWN: u64 = 16;
/// How long the timeline's view must stay still before the "made in the timeline's view"
/// table follows it: a pan or zoom is many small moves, and the table need not redo each.
const WINDOW_SETTLE: std::time::Duration = std::time::Duration::from_millis(200);

/// An allocation's event as the table says it ("event 1,234 (+1.2 s)"), or `none` without one;
/// `origin` is the trace's first time.
pub fn event_text(
    event: Option<Row>,
    time: Option<i64>,
    origin: Option<f64>,
    none: &str,
) -> String {
    match event {
        Some(e) => when(Some(State::after(e)), time, origin),
        None => none.to_string(),
    }
}

/// A row's lifetime in events and, when both ends have times, in time.
pub fn lifetime_text(row: &TableRow) -> String {
    let events = format::count(row.lifetime_events as u64);
    match row.lifetime_us {
        Some(us) => format!("{events} events, {}", format::duration_us(us.max(0) as u64)),
        None => format!("{events} events"),
    }
}

/// The table's state, shared by its components.
#[derive(Clone, Copy)]
pub struct TableState {
    pub file: FileId,
    pub device: u32,
    pub actions: Actions,
    pub cx: FileContext,
    asker: ViewAsker,
    pub pick: RwSignal<TablePick>,
    /// The timeline's view once it has stayed still for a moment.
    window: RwSignal<Option<(AxisMode, f64, f64)>>,
    pub text: RwSignal<String>,
    pub regex: RwSignal<bool>,
    pub min_bytes: RwSignal<Option<u64>>,
    pub max_bytes: RwSignal<Option<u64>>,
    pub stream: RwSignal<Option<u64>>,
    pub sort: RwSignal<Sort>,
    pub group_by: RwSignal<Option<GroupBy>>,
    /// Opened groups, by their paths of keys.
    pub open: RwSignal<Vec<Vec<String>>>,
    pub view: RwSignal<Option<Result<TableView, String>>>,
    /// The selected row.
    pub selected: RwSignal<Option<TableRow>>,
    /// The group the keyboard is on (Enter opens or closes it).
    pub focused_group: RwSignal<Option<Vec<String>>>,
    pub scroller: NodeRef<Div>,
    latest: StoredValue<Latest>,
    /// Views answered so far (tests wait for the next one).
    pub answers: RwSignal<u32>,
    /// How the last CSV download went.
    pub csv_status: RwSignal<Option<String>>,
}

impl TableState {
    fn new(file: FileId, device: u32, actions: Actions, cx: FileContext) -> Self {
        let asker = ViewAsker::new(actions, file);
        TableState {
            file,
            device,
            actions,
            cx,
            asker,
            pick: RwSignal::new(TablePick::Peak),
            window: RwSignal::new(None),
            text: RwSignal::new(String::new()),
            regex: RwSignal::new(false),
            min_bytes: RwSignal::new(None),
            max_bytes: RwSignal::new(None),
            stream: RwSignal::new(None),
            sort: RwSignal::new(Sort::default()),
            group_by: RwSignal::new(None),
            open: RwSignal::new(Vec::new()),
            view: RwSignal::new(None),
            selected: RwSignal::new(None),
            focused_group: RwSignal::new(None),
            scroller: NodeRef::new(),
            latest: StoredValue::new(Latest::default()),
            csv_status: RwSignal::new(None),
            answers: RwSignal::new(0),
        }
    }

    /// Takes the table's part of a link being restored.
    fn restore_from(&self, link: &TableLink) {
        self.pick.set(link.pick);
        self.text.set(link.text.clone());
        self.regex.set(link.regex);
        self.min_bytes.set(link.min_bytes);
        self.max_bytes.set(link.max_bytes);
        self.stream.set(link.stream);
        self.sort.set(link.sort);
        self.group_by.set(link.group_by);
    }

    /// The table's part of the view's link (tracked).
    fn link_part(&self) -> TableLink {
        TableLink {
            pick: self.pick.get(),
            text: self.text.get(),
            regex: self.regex.get(),
            min_bytes: self.min_bytes.get(),
            max_bytes: self.max_bytes.get(),
            stream: self.stream.get(),
            sort: self.sort.get(),
            group_by: self.group_by.get(),
        }
    }

    /// The scope the pick stands for (tracked).
    fn scope_of(&self) -> Scope {
        match self.pick.get() {
            TablePick::Peak => Scope::Peak,
            TablePick::End => Scope::End,
            TablePick::All => Scope::All,
            TablePick::Picked => self
                .cx
                .picked
                .get()
                .map_or(Scope::Peak, Scope::State),
            TablePick::Window => match self.window.get() {
                Some((mode, x0, x1)) => Scope::Window { mode, x0, x1 },
                None => Scope::All,
            },
        }
    }

    /// The query the controls describe (tracked); the highlighted category is its role or
    /// component filter.
    pub fn query(&self) -> TableQuery {
        let highlight = self.cx.highlight.get();
        let role = highlight
            .filter(|c| c.dimension == Dimension::Role)
            .and_then(|c| Role::ALL.get(c.index as usize).copied());
        let component = highlight
            .filter(|c| c.dimension == Dimension::Component)
            .and_then(|c| Component::ALL.get(c.index as usize).copied());
        TableQuery {
            scope: self.scope_of(),
            filter: Filter {
                text: self.text.get(),
                regex: self.regex.get(),
                min_bytes: self.min_bytes.get(),
                max_bytes: self.max_bytes.get(),
                role,
                component,
                stream: self.stream.get(),
            },
            sort: self.sort.get(),
            group_by: self.group_by.get(),
        }
    }

    /// The first line the scroll box shows.
    fn first_in_view(&self) -> u64 {
        self.scroller.get_untracked().map_or(0, |el| {
            (el.scroll_top() as f64 / LINE_HEIGHT).floor().max(0.0) as u64
        })
    }

    /// Asks for the lines around the scroll position (or around the allocation `reveal`).
    fn ask(&self, query: TableQuery, reveal: Option<u32>) {
        let first = self.first_in_view().saturating_sub(OVERSCAN);
        let request = ViewRequest {
            device: self.device,
            query,
            open: self.open.get_untracked(),
            first,
            count: (LINES_SHOWN + 2 * OVERSCAN) as u32,
            reveal,
        };
        let this = *self;
        self.asker.ask_latest(self.latest, request, move |view| {
            this.on_view(view.map(|v| *v))
        });
    }

    fn on_view(&self, view: Result<TableView, String>) {
        if let Ok(view) = &view {
            if view.open != self.open.get_untracked() {
                self.open.set(view.open.clone());
            }
            if let Some(line) = view.revealed {
                let at = line
                    .checked_sub(view.first)
                    .map(|k| &view.lines[k as usize]);
                if let Some(Line::Row { row, .. }) = at {
                    self.selected.set(Some(row.clone()));
                }
                if let Some(el) = self.scroller.get_untracked() {
                    let top = el.scroll_top() as f64;
                    let y = line as f64 * LINE_HEIGHT;
                    let height = LINES_SHOWN as f64 * LINE_HEIGHT;
                    if y < top || y + LINE_HEIGHT > top + height {
                        el.set_scroll_top((y - height / 2.0).max(0.0) as i32);
                    }
                }
            }
        }
        self.view.set(Some(view));
        self.answers.update(|n| *n += 1);
    }

    /// The scroll box moved: asks for the lines around it once those in view come within
    /// half the overscan of the edge of what is here, so the next lines arrive before they
    /// are needed.
    pub fn scrolled(&self) {
        let first = self.first_in_view();
        let margin = OVERSCAN / 2;
        let (covered, comfortable) = self.view.with_untracked(|v| match v {
            Some(Ok(v)) => {
                let end = v.first + v.lines.len() as u64;
                let last = (first + LINES_SHOWN).min(v.line_count);
                let covered = v.first <= first && last <= end;
                let above = v.first == 0 || first >= v.first + margin;
                let below = end >= v.line_count || first + LINES_SHOWN + margin <= end;
                (covered, above && below)
            }
            _ => (false, false),
        });
        // Near the edge, one request in flight is enough; past it, the newest position wins.
        let asked = self.latest.with_value(|l| l.awaited());
        if !covered || (!comfortable && !asked) {
            self.ask(self.query_untracked(), None);
        }
    }

    fn query_untracked(&self) -> TableQuery {
        untrack(|| self.query())
    }

    /// Opens a closed group, or closes an open one.
    pub fn toggle(&self, path: Vec<String>) {
        self.open
            .update(|open| match open.iter().position(|p| *p == path) {
                Some(i) => {
                    open.remove(i);
                }
                None => open.push(path),
            });
        self.ask(self.query_untracked(), None);
    }

    /// Selects `row` here and on the timeline.
    pub fn select(&self, row: TableRow) {
        self.cx.select(Some((self.device, row.index)));
        self.selected.set(Some(row));
    }

    /// Moves the keyboard's line by `step` among the lines here: a row is selected, a group
    /// focused; the scroll box follows.
    pub fn move_selection(&self, step: i64) {
        let target = self.view.with_untracked(|v| {
            let Some(Ok(v)) = v else {
                return None;
            };
            let current = v.lines.iter().position(|line| match line {
                Line::Row { row, .. } => self
                    .selected
                    .with_untracked(|s| s.as_ref().is_some_and(|r| r.index == row.index)),
                Line::Group(g) => self
                    .focused_group
                    .with_untracked(|f| f.as_ref() == Some(&g.path)),
            });
            let next = match current {
                Some(k) => (k as i64 + step).clamp(0, v.lines.len() as i64 - 1) as usize,
                None => 0,
            };
            v.lines
                .get(next)
                .map(|line| (v.first + next as u64, line.clone()))
        });
        let Some((at, line)) = target else {
            return;
        };
        match line {
            Line::Row { row, .. } => {
                self.focused_group.set(None);
                self.select(row);
            }
            Line::Group(g) => self.focused_group.set(Some(g.path)),
        }
        if let Some(el) = self.scroller.get_untracked() {
            let top = el.scroll_top() as f64;
            let y = at as f64 * LINE_HEIGHT;
            let height = LINES_SHOWN as f64 * LINE_HEIGHT;
            if y < top {
                el.set_scroll_top(y as i32);
            } else if y + LINE_HEIGHT > top + height {
                el.set_scroll_top((y + LINE_HEIGHT - height) as i32);
            }
        }
    }

    /// Opens or closes the group the keyboard is on.
    pub fn toggle_selected_group(&self) {
        if let Some(path) = self.focused_group.get_untracked() {
            self.toggle(path);
        }
    }

    /// Downloads the table as it is filtered, sorted and grouped, its paths redacted when
    /// `redact` is set.
    pub fn download_csv(&self, file_name: String, redact: bool) {
        let query = self.query_untracked();
        let device = self.device;
        let kind = self.cx.device_kind;
        let status = self.csv_status;
        status.set(Some("Writing the CSV…".into()));
        self.asker.ask(
            CsvRequest {
                device,
                query,
                redact,
            },
            move |answer| match (answer.result, answer.attachment) {
                (Ok(export), Some(bytes)) => {
                    let parts = js_sys::Array::of1(&bytes);
                    let options = web_sys::BlobPropertyBag::new();
                    options.set_type("text/csv");
                    let Ok(blob) =
                        web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &options)
                    else {
                        status.set(Some("The CSV could not be made.".into()));
                        return;
                    };
                    if let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) {
                        let stem = file_name
                            .rsplit_once('.')
                            .map_or(file_name.as_str(), |(s, _)| s);
                        download(
                            &format!(
                                "{stem}-{}-table.csv",
                                format::device_in_file_name(kind, device)
                            ),
                            &url,
                        );
                        let _ = web_sys::Url::revoke_object_url(&url);
                    }
                    status.set(Some(format!(
                        "{} lines, {}",
                        format::count(export.rows),
                        format::bytes(export.bytes)
                    )));
                }
                (Ok(_), _) => status.set(Some("The worker sent no CSV.".into())),
                (Err(error), _) => status.set(Some(format::problems::view_error(&error))),
            },
        );
    }
}

#[component]
pub fn TablePanel(
    file: FileId,
    device: u32,
    file_name: String,
) -> impl IntoView {
    let actions = use_actions();
    let cx = use_file();

    let table = TableState::new(file, device, actions, cx);
    if let Some(link) = cx.link.restoring(file, Some(device)) {
        table.restore_from(&link.table);
    }
    // The table's part of the page's address.
    Effect::new(move |_| {
        let part = table.link_part();
        cx.link.set(|l| l.table = part);
    });
    // The query changed: back to the top, and ask.
    Effect::new(move |previous: Option<TableQuery>| {
        cx.generation.track();
        let query = table.query();
        let choice = Some((query.scope, query.filter.clone()));
        if cx.table_choice.get_untracked() != choice {
            cx.table_choice.set(choice);
        }
        if previous.as_ref().is_some_and(|p| *p != query) {
            if let Some(el) = table.scroller.get_untracked() {
                el.set_scroll_top(0);
            }
        }
        table.ask(query.clone(), None);
        query
    });
    // The timeline's view, once still, is the window scope's.
    let pending = StoredValue::new(None::<TimeoutHandle>);
    Effect::new(move |_| {
        let window = cx.window_of(device);
        if let Some(handle) = pending.try_update_value(Option::take).flatten() {
            handle.clear();
        }
        // The panel may be gone when the time comes (another file shown).
        let settle = move || {
            let _ = table.window.try_set(window);
        };
        let handle = set_timeout_with_handle(settle, WINDOW_SETTLE).ok();
        pending.set_value(handle);
    });
    on_cleanup(move || {
        if let Some(handle) = pending.try_update_value(Option::take).flatten() {
            handle.clear();
        }
    });
    // The timeline's search is the table's text filter, over every allocation: the table then
    // lists all its matches, largest first, with their totals.
    Effect::new(move |mounted: Option<()>| {
        let search = cx.search.get();
        if mounted.is_some() && table.text.get_untracked() != search {
            table.regex.set(false);
            if !search.is_empty() && table.pick.get_untracked() != TablePick::All {
                table.pick.set(TablePick::All);
            }
            table.text.set(search);
        }
    });
    // An allocation selected elsewhere (pinned on the timeline) is selected here, its groups
    // opened and its line brought into view.
    Effect::new(move |_| {
        let Some((for_device, element)) = cx.selected.get() else {
            table.selected.set(None);
            return;
        };
        let here = table
            .selected
            .with_untracked(|s| s.as_ref().map(|r| r.index));
        if for_device == device && here != Some(element) {
            table.ask(table.query_untracked(), Some(element));
        }
    });
    // A moment picked on the timeline is what the user wants to see.
    Effect::new(move |previous: Option<Option<State>>| {
        let picked = cx.picked.get();
        if previous.is_some() && picked.is_some() && table.pick.get_untracked() != TablePick::Picked
        {
            table.pick.set(TablePick::Picked);
        }
        picked
    });

    let attr = move |f: fn(&TableView) -> String| {
        move || {
            table.view.with(|v| {
                v.as_ref()
                    .and_then(|v| v.as_ref().ok())
                    .map(f)
                    .unwrap_or_default()
            })
        }
    };
    view! {
        <section
            class="panel table-panel"
            id="allocations-table"
            data-device=device.to_string()
            data-ready=move || table.view.with(|v| matches!(v, Some(Ok(_)))).to_string()
            data-count=attr(|v| v.totals.count.to_string())
            data-requested-bytes=attr(|v| v.totals.requested_bytes.to_string())
            data-size-bytes=attr(|v| v.totals.size_bytes.to_string())
            data-scope-bytes=attr(|v| v.totals.scope_bytes.to_string())
            data-scope-count=attr(|v| v.totals.scope_count.to_string())
            data-largest=attr(|v| v.totals.largest.to_string())
            data-share=attr(|v| v.totals.share.to_string())
            data-line-count=attr(|v| v.line_count.to_string())
            data-state=attr(|v| v.state.map(|s| s.to_string()).unwrap_or_default())
            data-compute-ms=attr(|v| v.compute_ms.to_string())
            data-answers=move || table.answers.get().to_string()
        >
            <header class="panel-header">
                <h2 class="panel-title">"Allocations"</h2>
                <p class="hint">"Every allocation, sorted, filtered and grouped. Click a row to select it here and on the timeline."</p>
            </header>
            <toolbar::TableToolbar table=table file_name=file_name />
            <toolbar::Totals table=table />
            <div class="table-body">
                <grid::Grid table=table />
                <detail::RowDetail table=table />
            </div>
        </section>
    }
}
