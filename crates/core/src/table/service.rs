//! The tables' requests and answers, and the service that answers them: a window of a table's
//! lines (rows, or groups with the opened ones' contents), its totals, and the table as CSV.
//!
//! The service keeps the last table it computed (its scope, filter, sort and grouping), so
//! scrolling or opening a group only walks what it keeps, and a new sort keeps the selection.
//! What is worked out once per device (the frame naming each stack) is kept per device.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::columns::{DeviceColumns, Rows};
use super::filter::{scope_states, select, ScopeStates, Selection};
use super::groups::{group, line_of, path_to, share, window, Line, OpenGroups, Tree};
use super::source::{listed, SourceRequest, SourceView};
use super::{Filter, GroupBy, Scope, Sort, TableQuery};
use crate::analysis::allocator::{AllocatorHistory, AllocatorTotals, SegmentOrder, SegmentState};
use crate::analysis::axis::Axis;
use crate::analysis::elements::AllocationElements;
use crate::analysis::lines::{lines_of, FileBytes, Tally};
use crate::model::{Row, State};
use crate::service::{Context, Reply, Service, ViewError};

/// Most lines one answer lists.
pub const MAX_LINES: u32 = 2000;
/// Most segments (with their blocks) one allocator answer lists.
pub const MAX_SEGMENTS: u32 = 500;

/// What the tables ask for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TableRequest {
    /// A window of a table.
    View(ViewRequest),
    /// The allocator's segments and blocks at a state.
    Allocator(AllocatorRequest),
    /// The chosen allocations by line of code.
    Source(SourceRequest),
}

/// The allocator's memory at `state` (the peak when `None`): totals over every segment, and
/// the segments `first_segment..first_segment + segment_count` (in `order`) with their blocks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AllocatorRequest {
    pub device: u32,
    #[serde(default)]
    pub state: Option<State>,
    #[serde(default)]
    pub first_segment: u32,
    pub segment_count: u32,
    #[serde(default)]
    pub order: SegmentOrder,
}

/// The allocator's memory at one state, with a window of its segments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AllocatorView {
    pub device: u32,
    pub state: State,
    /// States of the run: `0..=states - 1`.
    pub states: u32,
    pub peak_state: State,
    /// The event the state follows (`None` for state 0) and its time.
    pub event: Option<Row>,
    pub time_us: Option<i64>,
    pub time_origin_us: Option<i64>,
    /// Over every segment.
    pub totals: AllocatorTotals,
    /// Events of the trace that could not be reconciled with the final segments.
    pub unreconciled: u32,
    pub segment_count: u32,
    pub first_segment: u32,
    /// The order of `segments`.
    #[serde(default)]
    pub order: SegmentOrder,
    /// The largest segment of the state (what the drawing scales to).
    pub largest_segment: u64,
    /// The window's segments in the order asked, each block's `allocation` given as the element
    /// index on the allocations timeline (what the page selects and pins).
    pub segments: Vec<SegmentState>,
    /// Milliseconds spent reconstructing the allocator's history (the first time only).
    pub build_ms: f64,
    pub compute_ms: f64,
}

/// Lines `first..first + count` of the table `query` chooses, with the groups of `open` (paths
/// of keys) opened. With `reveal` (an allocation, by its element index on the allocations
/// timeline, as a pin names it), the groups holding it are opened too and the window moves to
/// show its row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewRequest {
    pub device: u32,
    pub query: TableQuery,
    #[serde(default)]
    pub open: Vec<Vec<String>>,
    pub first: u64,
    pub count: u32,
    #[serde(default)]
    pub reveal: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TableAnswer {
    View(Box<TableView>),
    Allocator(Box<AllocatorView>),
    Source(Box<SourceView>),
}

impl TableAnswer {
    pub fn name(&self) -> &'static str {
        match self {
            TableAnswer::View(_) => "table view",
            TableAnswer::Allocator(_) => "allocator state",
            TableAnswer::Source(_) => "lines of code",
        }
    }
}

/// What the chosen allocations add up to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TableTotals {
    pub count: u32,
    pub requested_bytes: u64,
    pub size_bytes: u64,
    /// The largest request among them.
    pub largest: u64,
    /// Allocations and requested bytes of the whole scope, before the filter (for a moment,
    /// the live bytes: the allocated curve there).
    pub scope_count: u32,
    pub scope_bytes: u64,
    /// `requested_bytes` of `scope_bytes`.
    pub share: f64,
}

/// A window of a table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableView {
    pub device: u32,
    pub generation: u32,
    pub query: TableQuery,
    pub totals: TableTotals,
    /// Lines of the whole table as opened (rows, or groups and what the open ones hold).
    pub line_count: u64,
    /// Where `lines` start.
    pub first: u64,
    pub lines: Vec<Line>,
    /// The groups open, with those a reveal opened.
    pub open: Vec<Vec<String>>,
    /// The line of the revealed allocation; `None` when it is not in the table.
    pub revealed: Option<u64>,
    /// Why nothing matched the filter (a regular expression that does not compile).
    pub problem: Option<String>,
    /// The state a moment's scope stands for.
    pub state: Option<State>,
    /// The time of the trace's first event, which times are shown from.
    pub time_origin_us: Option<i64>,
    /// The file records tensors' shapes (a shape column is worth showing).
    #[serde(default)]
    pub has_shapes: bool,
    /// The device has private pools (a pool column is worth showing).
    #[serde(default)]
    pub has_pools: bool,
    pub compute_ms: f64,
}

/// A table as computed.
pub struct Table<'a> {
    pub rows: Rows<'a>,
    /// The chosen allocations in the table's order.
    pub sorted: &'a [u32],
    pub tree: Option<&'a Tree>,
    pub totals: &'a TableTotals,
    /// Why nothing was chosen (a regular expression that does not compile).
    pub problem: Option<&'a str>,
}

/// The last table computed.
struct Computed {
    device: u32,
    generation: u32,
    scope: Scope,
    filter: super::Filter,
    sort: Sort,
    group_by: Option<GroupBy>,
    /// The chosen allocations in sort order.
    sorted: Vec<u32>,
    tree: Option<Tree>,
    totals: TableTotals,
    problem: Option<String>,
}

#[derive(Default)]
pub struct TableService {
    columns: FxHashMap<u32, DeviceColumns>,
    /// The allocator's reconstructed history per device: block sizes for the rows, and the
    /// state at any moment.
    histories: FxHashMap<u32, AllocatorHistory>,
    last: Option<Computed>,
    /// The last scope's lines of code, for moving between its files.
    last_lines: Option<ComputedLines>,
}

/// Lines of code of the allocations a scope and filter chose.
struct ComputedLines {
    device: u32,
    generation: u32,
    scope: Scope,
    filter: Filter,
    chosen: Tally,
    files: Vec<FileBytes>,
    problem: Option<String>,
}

impl TableService {
    /// Works out what is kept per device, once: the frame naming each stack and, with
    /// `history`, the allocator's history. Returns the device's position.
    fn prepare(
        &mut self,
        cx: &Context<'_>,
        device: u32,
        history: bool,
    ) -> Result<usize, ViewError> {
        let position = cx
            .analysed
            .device_position(device)
            .ok_or(ViewError::NoSuchDevice { device })?;
        let dev = &cx.analysed.snapshot.devices[position];
        let facts = &cx.analysed.facts[position];
        self.columns
            .entry(device)
            .or_insert_with(|| DeviceColumns::new(&cx.analysed.snapshot, dev, facts));
        if history {
            self.histories
                .entry(device)
                .or_insert_with(|| AllocatorHistory::new(&cx.analysed.snapshot, dev, facts));
        }
        Ok(position)
    }

    /// The table `query` chooses on `device`, computing only what changed since the last.
    fn compute(
        &mut self,
        cx: &Context<'_>,
        device: u32,
        query: &TableQuery,
    ) -> Result<(), ViewError> {
        let position = self.prepare(cx, device, true)?;
        let dev = &cx.analysed.snapshot.devices[position];
        let facts = &cx.analysed.facts[position];
        let rows = Rows {
            snapshot: &cx.analysed.snapshot,
            device: dev,
            facts,
            categories: cx.categorised.device(position),
            columns: &self.columns[&device],
            block_sizes: Some(self.histories[&device].block_sizes()),
        };
        let generation = cx.categorised.generation();
        let same_rows = self.last.as_ref().is_some_and(|c| {
            c.device == device
                && c.generation == generation
                && c.scope == query.scope
                && c.filter == query.filter
        });
        if !same_rows {
            let (selection, problem) = match select(&rows, query.scope, &query.filter) {
                Ok(selection) => (selection, None),
                Err(problem) => (Selection::default(), Some(problem)),
            };
            let mut totals = TableTotals {
                scope_count: selection.scope_count,
                scope_bytes: selection.scope_bytes,
                ..TableTotals::default()
            };
            for &i in &selection.chosen {
                let size = rows.allocation(i).size;
                totals.count += 1;
                totals.requested_bytes += size;
                totals.size_bytes += rows.block_size(i);
                totals.largest = totals.largest.max(size);
            }
            totals.share = share(totals.requested_bytes, selection.scope_bytes);
            let mut sorted = selection.chosen;
            rows.sort(&mut sorted, query.sort);
            let tree = query.group_by.map(|by| group(&rows, &sorted, by));
            self.last = Some(Computed {
                device,
                generation,
                scope: query.scope,
                filter: query.filter.clone(),
                sort: query.sort,
                group_by: query.group_by,
                sorted,
                tree,
                totals,
                problem,
            });
            return Ok(());
        }
        let last = self.last.as_mut().expect("checked above");
        if last.sort != query.sort {
            rows.sort(&mut last.sorted, query.sort);
            last.sort = query.sort;
            last.tree = None;
            last.group_by = None;
        }
        if last.group_by != query.group_by || (query.group_by.is_some() && last.tree.is_none()) {
            last.tree = query.group_by.map(|by| group(&rows, &last.sorted, by));
            last.group_by = query.group_by;
        }
        Ok(())
    }

    /// The table `query` chooses on `device`, as computed: what the command line prints.
    pub fn table<'a>(
        &'a mut self,
        cx: &'a Context<'_>,
        device: u32,
        query: &TableQuery,
    ) -> Result<Table<'a>, ViewError> {
        self.compute(cx, device, query)?;
        let rows = self.rows(cx, device);
        let last = self.last.as_ref().expect("computed");
        Ok(Table {
            rows,
            sorted: &last.sorted,
            tree: last.tree.as_ref(),
            totals: &last.totals,
            problem: last.problem.as_deref(),
        })
    }

    fn rows<'a>(&'a self, cx: &'a Context<'_>, device: u32) -> Rows<'a> {
        let position = cx.analysed.device_position(device).expect("computed");
        Rows {
            snapshot: &cx.analysed.snapshot,
            device: &cx.analysed.snapshot.devices[position],
            facts: &cx.analysed.facts[position],
            categories: cx.categorised.device(position),
            columns: &self.columns[&device],
            block_sizes: self.histories.get(&device).map(|h| h.block_sizes()),
        }
    }

    /// The allocator's memory at a state, with a window of its segments.
    fn allocator(
        &mut self,
        cx: &Context<'_>,
        request: AllocatorRequest,
    ) -> Result<AllocatorView, ViewError> {
        let AllocatorRequest {
            device,
            state,
            first_segment,
            segment_count,
            order,
        } = request;
        let (dev, facts) = cx
            .analysed
            .device_facts(device)
            .ok_or(ViewError::NoSuchDevice { device })?;
        let start = (cx.now)();
        let history = self
            .histories
            .entry(device)
            .or_insert_with(|| AllocatorHistory::new(&cx.analysed.snapshot, dev, facts));
        let build_ms = (cx.now)() - start;
        let peak_state = State::new(facts.peak_allocated.state());
        let state = state
            .unwrap_or(peak_state)
            .min(State::new(history.last_state()));
        let mut whole = history.state_at(facts, state.get());
        order.sort(&mut whole.segments);
        let largest_segment = whole.segments.iter().map(|s| s.size).max().unwrap_or(0);
        let segment_count_all = whole.segments.len() as u32;
        let first = first_segment.min(segment_count_all);
        let end = first
            .saturating_add(segment_count.min(MAX_SEGMENTS))
            .min(segment_count_all);
        let elements = AllocationElements::new(facts);
        let mut segments = whole.segments[first as usize..end as usize].to_vec();
        for block in segments.iter_mut().flat_map(|s| s.blocks.iter_mut()) {
            block.allocation = block.allocation.map(|a| elements.position(a as usize));
        }
        let axis = Axis::new(&dev.trace);
        Ok(AllocatorView {
            device,
            state,
            states: dev.trace.len() as u32 + 1,
            peak_state,
            event: state.row_before(),
            time_us: state.row_before().and_then(|_| axis.time_of_state(state)),
            time_origin_us: axis.time_of_state(State::BEFORE_TRACE),
            totals: whole.totals,
            unreconciled: whole.unreconciled.total(),
            segment_count: segment_count_all,
            first_segment: first,
            order,
            largest_segment,
            segments,
            build_ms,
            compute_ms: (cx.now)() - start,
        })
    }

    /// The chosen allocations by line of code, reusing the table's choice when it is the same
    /// and the last scope's lines when only the file changes.
    fn source(
        &mut self,
        cx: &Context<'_>,
        request: SourceRequest,
    ) -> Result<SourceView, ViewError> {
        let SourceRequest {
            device,
            scope,
            filter,
            path,
            text_held,
        } = request;
        let start = (cx.now)();
        self.prepare(cx, device, false)?;
        let generation = cx.categorised.generation();
        let same = |d: u32, g: u32, s: &Scope, f: &Filter| {
            d == device && g == generation && *s == scope && *f == filter
        };
        let known = self
            .last_lines
            .as_ref()
            .is_some_and(|l| same(l.device, l.generation, &l.scope, &l.filter));
        if !known {
            let rows = self.rows(cx, device);
            let table = self
                .last
                .as_ref()
                .filter(|c| same(c.device, c.generation, &c.scope, &c.filter));
            // The table's own choice when it is the same, borrowed (a million rows at "All").
            let selected;
            let (chosen, problem): (&[u32], Option<String>) = match table {
                Some(c) => (&c.sorted, c.problem.clone()),
                None => match select(&rows, scope, &filter) {
                    Ok(selection) => {
                        selected = selection.chosen;
                        (&selected, None)
                    }
                    Err(problem) => (&[], Some(problem)),
                },
            };
            let mut tally = Tally::default();
            for &i in chosen {
                tally.add(rows.allocation(i).size);
            }
            let computed = ComputedLines {
                device,
                generation,
                scope,
                filter,
                chosen: tally,
                files: lines_of(rows.snapshot, rows.device, rows.facts, chosen),
                problem,
            };
            self.last_lines = Some(computed);
        }
        let lines = self.last_lines.as_ref().expect("computed above");
        let rows = self.rows(cx, device);
        let (files, file, text) = listed(&cx.analysed.snapshot, &lines.files, path.as_deref());
        let text = text.filter(|_| !text_held);
        let state = match scope_states(&rows, scope) {
            ScopeStates::At(s) => Some(State::new(s)),
            _ => None,
        };
        Ok(SourceView {
            device,
            generation,
            scope,
            state,
            chosen: lines.chosen,
            files,
            file,
            text,
            problem: lines.problem.clone(),
            compute_ms: (cx.now)() - start,
        })
    }

    fn view(&mut self, cx: &Context<'_>, request: ViewRequest) -> Result<TableView, ViewError> {
        let ViewRequest {
            device,
            query,
            open,
            first,
            count,
            reveal,
        } = request;
        let start = (cx.now)();
        self.compute(cx, device, &query)?;
        let rows = self.rows(cx, device);
        let last = self.last.as_ref().expect("computed");
        let count = count.min(MAX_LINES) as u64;
        let mut open: OpenGroups = open.into_iter().collect();
        let mut first = first;
        let mut revealed = None;
        if let Some(element) = reveal {
            let allocation = AllocationElements::new(rows.facts).allocation_index(element) as u32;
            revealed = match &last.tree {
                None => last
                    .sorted
                    .iter()
                    .position(|&i| i == allocation)
                    .map(|p| p as u64),
                Some(tree) => path_to(tree, allocation).map(|(path, at)| {
                    for depth in 1..=path.len() {
                        open.insert(path[..depth].to_vec());
                    }
                    line_of(tree, &open, &path) + 1 + at as u64
                }),
            };
            if let Some(line) = revealed {
                if line < first || line >= first + count {
                    first = line.saturating_sub(count / 2);
                }
            }
        }
        let (line_count, lines) = match &last.tree {
            None => {
                let total = last.sorted.len() as u64;
                let a = first.min(total) as usize;
                let b = first.saturating_add(count).min(total) as usize;
                let lines = last.sorted[a..b]
                    .iter()
                    .map(|&i| Line::Row {
                        depth: 0,
                        row: rows.row(i),
                    })
                    .collect();
                (total, lines)
            }
            Some(tree) => window(&rows, tree, &open, last.totals.scope_bytes, first, count),
        };
        let mut open: Vec<Vec<String>> = open.into_iter().collect();
        open.sort();
        let state = match scope_states(&rows, query.scope) {
            ScopeStates::At(s) => Some(State::new(s)),
            _ => None,
        };
        Ok(TableView {
            device,
            generation: last.generation,
            query,
            totals: last.totals.clone(),
            line_count,
            first,
            lines,
            open,
            revealed,
            problem: last.problem.clone(),
            state,
            time_origin_us: Axis::known(&rows.device.trace, rows.columns.has_time)
                .time_of_state(State::BEFORE_TRACE),
            has_shapes: rows.device.trace.has_shapes(),
            has_pools: !rows.categories.pooled.pools.is_empty(),
            compute_ms: (cx.now)() - start,
        })
    }
}

impl Service for TableService {
    type Request = TableRequest;
    type Answer = TableAnswer;

    fn answer(
        &mut self,
        cx: &Context<'_>,
        request: TableRequest,
    ) -> Result<Reply<TableAnswer>, ViewError> {
        match request {
            TableRequest::View(request) => self
                .view(cx, request)
                .map(|v| TableAnswer::View(Box::new(v)).into()),
            TableRequest::Allocator(request) => self
                .allocator(cx, request)
                .map(|v| TableAnswer::Allocator(Box::new(v)).into()),
            TableRequest::Source(request) => self
                .source(cx, request)
                .map(|v| TableAnswer::Source(Box::new(v)).into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::axis::AxisMode;
    use crate::analysis::categories::categorised::Categorised;
    use crate::analysis::categories::Role;
    use crate::analysis::Analysed;
    use crate::decode::decode_bytes;
    use crate::table::{Column, Filter};

    fn frame(file: &str, line: u32, name: &str) -> String {
        format!(r#"{{"filename":"{file}","line":{line},"name":"{name}"}}"#)
    }

    /// Two calls of a block (attention then MLP, each once), a head, an optimizer step; the
    /// peak is after the step's allocation, the end after the head's free.
    fn analysed() -> Analysed {
        let train = frame("/x/train.py", 3, "<module>");
        let layers = frame("/x/model.py", 50, "forward");
        let attn = format!(
            "[{},{},{layers},{train}]",
            frame("/x/layers.py", 5, "attention"),
            frame("/x/model.py", 20, "forward")
        );
        let mlp = format!(
            "[{},{},{layers},{train}]",
            frame("/x/layers.py", 9, "mlp"),
            frame("/x/model.py", 21, "forward")
        );
        let head = format!("[{},{train}]", frame("/x/model.py", 52, "forward"));
        let opt = format!("[{},{train}]", frame("/torch/optim/adam.py", 100, "step"));
        let rows = [
            ("alloc", 0x1000, 100, &attn),
            ("alloc", 0x2000, 200, &mlp),
            ("free_completed", 0x1000, 100, &attn),
            ("alloc", 0x3000, 100, &attn),
            ("alloc", 0x4000, 200, &mlp),
            ("alloc", 0x5000, 5000, &head),
            ("free_completed", 0x3000, 100, &attn),
            ("alloc", 0x6000, 700, &opt),
            ("free_completed", 0x5000, 5000, &head),
        ];
        let trace: Vec<String> = rows
            .iter()
            .enumerate()
            .map(|(r, (action, addr, size, frames))| {
                format!(
                    r#"{{"action":"{action}","addr":{addr},"size":{size},"stream":0,"time_us":{},"frames":{frames}}}"#,
                    10 * (r + 1)
                )
            })
            .collect();
        let json = format!(
            r#"{{"segments":[],"device_traces":[[{}]]}}"#,
            trace.join(",")
        );
        Analysed::new(decode_bytes(json.as_bytes()).unwrap())
    }

    struct Fixture {
        analysed: Analysed,
        categorised: Categorised,
    }

    impl Fixture {
        fn new() -> Self {
            let analysed = analysed();
            let categorised = Categorised::new(&analysed, Default::default(), &|| 0.0).unwrap();
            Fixture {
                analysed,
                categorised,
            }
        }

        fn view(
            &self,
            service: &mut TableService,
            query: TableQuery,
            open: Vec<Vec<String>>,
            reveal: Option<u32>,
        ) -> TableView {
            let cx = Context {
                analysed: &self.analysed,
                categorised: &self.categorised,
                now: &|| 0.0,
            };
            let request = TableRequest::View(ViewRequest {
                device: 0,
                query,
                open,
                first: 0,
                count: 100,
                reveal,
            });
            match service.answer(&cx, request).unwrap().answer {
                TableAnswer::View(view) => *view,
                other => panic!("{other:?}"),
            }
        }
    }

    fn query(scope: Scope) -> TableQuery {
        TableQuery {
            scope,
            ..TableQuery::default()
        }
    }

    fn rows(view: &TableView) -> Vec<(u64, u64)> {
        view.lines
            .iter()
            .map(|l| match l {
                Line::Row { row, .. } => (row.address, row.requested_bytes),
                Line::Group(g) => panic!("a group in a flat table: {g:?}"),
            })
            .collect()
    }

    #[test]
    fn scopes_choose_what_was_alive_or_allocated_and_totals_add_up() {
        let f = Fixture::new();
        let mut service = TableService::default();
        let peak = f.view(&mut service, query(Scope::Peak), vec![], None);
        assert_eq!(peak.state, Some(State::new(8)));
        assert_eq!(
            rows(&peak),
            vec![(0x5000, 5000), (0x6000, 700), (0x2000, 200), (0x4000, 200)]
        );
        assert_eq!(peak.totals.requested_bytes, 6100);
        assert_eq!(peak.totals.scope_bytes, f.analysed.facts[0].allocated_at(8));
        assert_eq!(peak.totals.share, 1.0);
        assert_eq!(peak.totals.largest, 5000);
        assert_eq!(peak.totals.size_bytes, 5120 + 1024 + 512 + 512);
        let end = f.view(&mut service, query(Scope::End), vec![], None);
        assert_eq!(end.totals.requested_bytes, 1100);
        let at = f.view(
            &mut service,
            query(Scope::State(State::new(3))),
            vec![],
            None,
        );
        assert_eq!(rows(&at), vec![(0x2000, 200)]);
        let all = f.view(&mut service, query(Scope::All), vec![], None);
        assert_eq!(all.totals.count, 6);
        // The timeline shows events 3..=5 (states 4..6): what was allocated there.
        let window = Scope::Window {
            mode: AxisMode::Events,
            x0: 4.0,
            x1: 7.0,
        };
        let window = f.view(&mut service, query(window), vec![], None);
        // Equal block sizes keep allocation order.
        assert_eq!(
            rows(&window),
            vec![(0x5000, 5000), (0x3000, 100), (0x4000, 200)]
        );
        // In time units: rows at 40..=60 µs.
        let timed = Scope::Window {
            mode: AxisMode::Time,
            x0: 40.0,
            x1: 61.0,
        };
        assert_eq!(
            f.view(&mut service, query(timed), vec![], None)
                .totals
                .count,
            3
        );
    }

    #[test]
    fn filters_narrow_by_text_regex_address_size_role_and_stream() {
        let f = Fixture::new();
        let mut service = TableService::default();
        let with = |filter: Filter| TableQuery {
            scope: Scope::All,
            filter,
            ..TableQuery::default()
        };
        let text = |t: &str, regex: bool| Filter {
            text: t.into(),
            regex,
            ..Filter::default()
        };
        let count = |s: &mut TableService, filter: Filter| {
            f.view(s, with(filter), vec![], None).totals.count
        };
        assert_eq!(count(&mut service, text("ATTENTION", false)), 2);
        assert_eq!(count(&mut service, text("layers.py", false)), 4);
        assert_eq!(
            count(&mut service, text(r"model\.py:2[01]:forward", true)),
            4
        );
        assert_eq!(count(&mut service, text("0x5010", false)), 1);
        let bad = f.view(&mut service, with(text("(", true)), vec![], None);
        assert_eq!(bad.totals.count, 0);
        assert!(
            bad.problem.unwrap().contains("regular expression"),
            "says why"
        );
        let sizes = Filter {
            min_bytes: Some(150),
            max_bytes: Some(700),
            ..Filter::default()
        };
        assert_eq!(count(&mut service, sizes), 3);
        let stream = Filter {
            stream: Some(7),
            ..Filter::default()
        };
        assert_eq!(count(&mut service, stream), 0);
        let role = f.categorised.device(0).roles[5];
        let by_role = Filter {
            role: Some(role),
            ..Filter::default()
        };
        let expected = f
            .categorised
            .device(0)
            .roles
            .iter()
            .filter(|&&r| r == role)
            .count() as u32;
        assert_eq!(count(&mut service, by_role), expected);
        assert_ne!(role, Role::Parameters);
    }

    #[test]
    fn every_column_sorts_both_ways_and_ties_keep_allocation_order() {
        let f = Fixture::new();
        let mut service = TableService::default();
        for column in Column::ALL {
            for descending in [false, true] {
                let q = TableQuery {
                    scope: Scope::All,
                    sort: Sort { column, descending },
                    ..TableQuery::default()
                };
                let view = f.view(&mut service, q, vec![], None);
                assert_eq!(view.lines.len(), 6, "{column:?}");
            }
        }
        let by = |column, descending| {
            let q = TableQuery {
                scope: Scope::All,
                sort: Sort { column, descending },
                ..TableQuery::default()
            };
            rows(&f.view(&mut TableService::default(), q, vec![], None))
                .into_iter()
                .map(|(a, _)| a)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            by(Column::Address, false),
            vec![0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000]
        );
        assert_eq!(
            by(Column::Requested, false),
            vec![0x1000, 0x3000, 0x2000, 0x4000, 0x6000, 0x5000]
        );
        // Freed: 0x1000 at 3, 0x3000 at 7, 0x5000 at 9, then alive at the end in order.
        assert_eq!(
            by(Column::Freed, false),
            vec![0x1000, 0x3000, 0x5000, 0x2000, 0x4000, 0x6000]
        );
        assert_eq!(by(Column::Lifetime, true)[0], 0x2000);
    }

    #[test]
    fn groups_add_up_and_repeated_calls_fold_into_one_module() {
        let f = Fixture::new();
        let mut service = TableService::default();
        let grouped = |by| TableQuery {
            scope: Scope::All,
            group_by: Some(by),
            ..TableQuery::default()
        };
        for by in GroupBy::ALL {
            let view = f.view(&mut service, grouped(by), vec![], None);
            let sum: u64 = view
                .lines
                .iter()
                .map(|l| match l {
                    Line::Group(g) => g.requested_bytes,
                    Line::Row { .. } => 0,
                })
                .sum();
            assert_eq!(sum, view.totals.requested_bytes, "{by:?}");
        }
        let view = f.view(&mut service, grouped(GroupBy::Module), vec![], None);
        let groups: Vec<(String, u32, u32)> = view
            .lines
            .iter()
            .map(|l| match l {
                Line::Group(g) => (g.label.clone(), g.count, g.occurrences),
                Line::Row { .. } => panic!("closed groups list no rows"),
            })
            .collect();
        assert_eq!(
            groups,
            vec![
                ("model.py:52 forward".to_string(), 1, 0),
                ("(outside any forward)".to_string(), 1, 0),
                ("model.py:50 forward ×2".to_string(), 4, 2),
            ]
        );
        // Open the layers, then the second call: its attention and MLP.
        let frame_of = |label: &str| {
            f.analysed
                .snapshot
                .frames
                .iter()
                .position(|fr| {
                    f.analysed.snapshot.str(fr.name) == "forward" && fr.line.to_string() == label
                })
                .unwrap()
                .to_string()
        };
        let layers = vec![frame_of("50")];
        let second = vec![frame_of("50"), "#2".to_string()];
        let view = f.view(
            &mut service,
            grouped(GroupBy::Module),
            vec![layers.clone(), second.clone()],
            None,
        );
        let labels: Vec<String> = view
            .lines
            .iter()
            .map(|l| match l {
                Line::Group(g) => {
                    format!("{}{} {}", "  ".repeat(g.depth as usize), g.label, g.count)
                }
                Line::Row { depth, row } => {
                    format!("{}0x{:x}", "  ".repeat(*depth as usize), row.address)
                }
            })
            .collect();
        assert_eq!(
            labels,
            vec![
                "model.py:52 forward 1",
                "(outside any forward) 1",
                "model.py:50 forward ×2 4",
                "  call 1 of 2 2",
                "  call 2 of 2 2",
                "    model.py:21 forward 1",
                "    model.py:20 forward 1",
            ]
        );
        assert_eq!(view.line_count, 7);
    }

    #[test]
    fn revealing_an_allocation_opens_its_groups_and_moves_to_its_line() {
        let f = Fixture::new();
        let mut service = TableService::default();
        let q = TableQuery {
            scope: Scope::All,
            group_by: Some(GroupBy::Module),
            ..TableQuery::default()
        };
        // Allocation 2 is the second call's attention (0x3000); with nothing from before the
        // trace, its element index is the same.
        let view = f.view(&mut service, q.clone(), vec![], Some(2));
        let line = view.revealed.unwrap();
        match &view.lines[line as usize] {
            Line::Row { row, .. } => assert_eq!(row.address, 0x3000),
            other => panic!("{other:?}"),
        }
        assert_eq!(view.open.len(), 3, "the layers, the call and the attention");
        let flat = f.view(&mut service, query(Scope::All), vec![], Some(2));
        assert_eq!(
            flat.revealed,
            Some(4),
            "after the two larger blocks and two earlier equal ones"
        );
        assert_eq!(
            f.view(&mut service, query(Scope::End), vec![], Some(2))
                .revealed,
            None
        );
    }

    #[test]
    fn csv_lists_every_row_or_every_group() {
        let f = Fixture::new();
        let mut service = TableService::default();
        let cx = Context {
            analysed: &f.analysed,
            categorised: &f.categorised,
            now: &|| 0.0,
        };
        let (text, rows) =
            crate::export::table_csv(&mut service, &cx, 0, &query(Scope::Peak)).unwrap();
        assert_eq!(rows, 4);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], crate::format::table::ROWS_HEADER);
        assert!(
            lines[1].starts_with("4,4,0x5000,5120,5000,0,"),
            "{}",
            lines[1]
        );
        assert!(
            lines[1].ends_with("/x/model.py:52:forward,,,"),
            "{}",
            lines[1]
        );
        let grouped = TableQuery {
            group_by: Some(GroupBy::Module),
            ..query(Scope::All)
        };
        let (text, groups) = crate::export::table_csv(&mut service, &cx, 0, &grouped).unwrap();
        assert_eq!(text.lines().count() as u64, groups + 1);
        assert!(
            text.contains("1,model.py:50 forward ×2,model.py:50 forward ×2,4,600,"),
            "{text}"
        );
    }
}
