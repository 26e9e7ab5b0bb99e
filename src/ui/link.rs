//! A view as a link: which file, device and view are open, what the timeline shows (tab, axis,
//! x and byte ranges, detail, colouring, search), the allocation pinned, the moment picked, the
//! highlighted category, the table's scope, filters, sort and grouping, the allocator's moment,
//! two files compared, and the user's category rules — written as a URL fragment
//! (`#device=0&view=allocations-table&x=1200~3400&group=module`) and read back from one.
//!
//! Pure, natively tested. A link holds numbers (indices, events, bytes) and what the user typed,
//! never data read from a file: opening the same file with the link restores the same view.
//! Reading is forgiving: an unknown key or a value that does not parse is left out, so an old
//! or hand-edited link still opens what it can. Not the place for applying a link to the views
//! (`deep_link.rs` and the views do) or for the page's query (`?url=`, `?embed=`: `page_query`).

use super::state::Showing;
use crate::analysis::axis::AxisMode;
use crate::analysis::categories::rules::Rules;
use crate::analysis::categories::Category;
use crate::model::State;
use crate::table::{Column, GroupBy, Sort};
use crate::timeline::colouring::ColourBy;
use crate::timeline::TimelineKind;

/// A view of a file: a section of the page, the one an embedded viewer shows alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    Overview,
    Timeline,
    Breakdown,
    Phases,
    Table,
    Allocator,
}

impl Section {
    pub const ALL: [Section; 6] = [
        Section::Overview,
        Section::Timeline,
        Section::Breakdown,
        Section::Phases,
        Section::Table,
        Section::Allocator,
    ];

    /// The key in links and `data-view` attributes.
    pub fn key(self) -> &'static str {
        match self {
            Section::Overview => "overview",
            Section::Timeline => "timeline",
            Section::Breakdown => "breakdown",
            Section::Phases => "phases",
            Section::Table => "table",
            Section::Allocator => "allocator",
        }
    }

    /// The id of the section's element in the page.
    pub fn element_id(self) -> &'static str {
        match self {
            Section::Overview => "overview",
            Section::Timeline => "timeline",
            Section::Breakdown => "breakdown",
            Section::Phases => "phases",
            Section::Table => "allocations-table",
            Section::Allocator => "allocator-state",
        }
    }

    /// The section whose element has this id.
    pub fn of_element_id(id: &str) -> Option<Section> {
        Section::ALL.into_iter().find(|s| s.element_id() == id)
    }

    fn parse(key: &str) -> Option<Section> {
        Section::ALL.into_iter().find(|s| s.key() == key)
    }

    /// Its name in a sentence.
    pub fn words(self) -> &'static str {
        match self {
            Section::Overview => "the overview",
            Section::Timeline => "the timeline",
            Section::Breakdown => "the breakdown",
            Section::Phases => "the phases",
            Section::Table => "the allocations table",
            Section::Allocator => "the allocator state",
        }
    }
}

/// Which allocations the table starts from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TablePick {
    /// Alive at the peak.
    #[default]
    Peak,
    /// Alive at the moment picked on the timeline.
    Picked,
    /// Alive at the end.
    End,
    /// Allocated in what the timeline shows.
    Window,
    /// Every allocation.
    All,
}

impl TablePick {
    const ALL: [TablePick; 5] = [
        TablePick::Peak,
        TablePick::Picked,
        TablePick::End,
        TablePick::Window,
        TablePick::All,
    ];

    fn key(self) -> &'static str {
        match self {
            TablePick::Peak => "peak",
            TablePick::Picked => "picked",
            TablePick::End => "end",
            TablePick::Window => "window",
            TablePick::All => "all",
        }
    }
}

/// The timeline's part of a view.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineLink {
    pub kind: TimelineKind,
    pub axis: AxisMode,
    /// The visible range, in the axis' units; `None`: the whole trace.
    pub x: Option<(f64, f64)>,
    /// The visible bytes; `None`: fitted to what is in view.
    pub y: Option<(f64, f64)>,
    /// How many of the largest allocations are drawn one by one; `None`: the default.
    pub detail: Option<u32>,
    pub colour: ColourBy,
    /// The search box's text (empty: no search).
    pub search: String,
}

impl Default for TimelineLink {
    fn default() -> Self {
        TimelineLink {
            kind: TimelineKind::default(),
            axis: AxisMode::default(),
            x: None,
            y: None,
            detail: None,
            colour: DEFAULT_COLOUR,
            search: String::new(),
        }
    }
}

/// The page colours the timeline by role unless told otherwise (not the core's default).
pub const DEFAULT_COLOUR: ColourBy = ColourBy::Role;

/// The table's part of a view.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableLink {
    pub pick: TablePick,
    pub text: String,
    pub regex: bool,
    pub min_bytes: Option<u64>,
    pub max_bytes: Option<u64>,
    pub stream: Option<u64>,
    pub sort: Sort,
    pub group_by: Option<GroupBy>,
}

/// Two sides compared: each a file (its position in the list of open files) and a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompareLink {
    pub a: (usize, u32),
    pub b: (usize, u32),
}

/// Everything a link restores.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ViewLink {
    pub show: Showing,
    /// The file shown: its position among the open files (in the order they are listed).
    pub file: usize,
    /// The device shown; `None`: the one the page picks.
    pub device: Option<u32>,
    /// The view the link points at (scrolled to; the only one an embedded viewer shows).
    pub view: Option<Section>,
    pub timeline: TimelineLink,
    /// The allocation pinned: its element on the device's allocations timeline.
    pub pin: Option<u32>,
    /// The moment picked on the timeline.
    pub moment: Option<State>,
    pub highlight: Option<Category>,
    pub table: TableLink,
    /// The allocator's state shown; `None`: the peak.
    pub allocator: Option<State>,
    pub compare: Option<CompareLink>,
    /// The user's category rules; `None`: whatever this browser has.
    pub rules: Option<Rules>,
}

/// The version written first in every link, so a later change of meaning can be told apart.
const VERSION: &str = "1";

impl ViewLink {
    /// Whether the link says nothing beyond the defaults.
    pub fn is_default(&self) -> bool {
        *self == ViewLink::default()
    }

    /// What the link shows, in words, for a page that has no file open to show it on:
    /// "the allocations table of file 2, device 1, allocation 12 pinned, grouped by module".
    pub fn words(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut what = match self.show {
            Showing::Files => "the files side by side".to_string(),
            Showing::Compare => "a comparison of two files".to_string(),
            Showing::File => self.view.unwrap_or(Section::Timeline).words().to_string(),
        };
        if self.show == Showing::File {
            if self.file > 0 {
                what.push_str(&format!(" of file {}", self.file + 1));
            }
            if let Some(device) = self.device {
                what.push_str(&format!(
                    "{} device {device}",
                    if self.file > 0 { "," } else { " of" }
                ));
            }
        }
        parts.push(what);
        if self.timeline.x.is_some() {
            parts.push("zoomed in".into());
        }
        if let Some(pin) = self.pin {
            parts.push(format!("allocation {pin} pinned"));
        }
        if let Some(moment) = self.moment {
            parts.push(format!("the moment {}", crate::format::after_state(moment)));
        }
        if !self.timeline.search.is_empty() {
            parts.push(format!("searching “{}”", self.timeline.search));
        }
        if let Some(group) = self.table.group_by {
            parts.push(format!("grouped by {}", group.key()));
        }
        if self.compare.is_some() && self.show != Showing::Compare {
            parts.push("two files compared".into());
        }
        parts.join(", ")
    }

    /// The link as a fragment, without the `#`: only what differs from the defaults, in a fixed
    /// order, values percent-encoded. Empty for the default view.
    pub fn to_fragment(&self) -> String {
        if self.is_default() {
            return String::new();
        }
        let mut out = form_urlencoded::Serializer::new(String::new());
        let mut put = |key: &str, value: String| {
            out.append_pair(key, &value);
        };
        put("v", VERSION.to_string());
        match self.show {
            Showing::File => {}
            Showing::Files => put("show", "files".into()),
            Showing::Compare => put("show", "compare".into()),
        }
        if self.file != 0 {
            put("file", self.file.to_string());
        }
        if let Some(device) = self.device {
            put("device", device.to_string());
        }
        if let Some(view) = self.view {
            put("view", view.key().into());
        }
        let t = &self.timeline;
        match t.kind {
            TimelineKind::Segments => put("tab", "segments".into()),
            TimelineKind::Pool(k) => put("tab", format!("pool-{k}")),
            TimelineKind::Allocations => {}
        }
        if t.axis == AxisMode::Time {
            put("axis", "time".into());
        }
        if let Some(x) = t.x {
            put("x", range_text(x));
        }
        if let Some(y) = t.y {
            put("y", range_text(y));
        }
        if let Some(detail) = t.detail {
            put("detail", detail.to_string());
        }
        if t.colour != DEFAULT_COLOUR {
            put("colour", colour_key(t.colour).into());
        }
        if !t.search.is_empty() {
            put("search", t.search.clone());
        }
        if let Some(pin) = self.pin {
            put("pin", pin.to_string());
        }
        if let Some(moment) = self.moment {
            put("moment", moment.to_string());
        }
        if let Some(highlight) = self.highlight {
            put("highlight", highlight.name());
        }
        let table = &self.table;
        if table.pick != TablePick::Peak {
            put("scope", table.pick.key().into());
        }
        if !table.text.is_empty() {
            put("filter", table.text.clone());
        }
        if table.regex {
            put("regex", "1".into());
        }
        if let Some(min) = table.min_bytes {
            put("min", min.to_string());
        }
        if let Some(max) = table.max_bytes {
            put("max", max.to_string());
        }
        if let Some(stream) = table.stream {
            put("stream", stream.to_string());
        }
        if table.sort != Sort::default() {
            let order = if table.sort.descending { "desc" } else { "asc" };
            put("sort", format!("{}:{order}", table.sort.column.key()));
        }
        if let Some(group) = table.group_by {
            put("group", group.key().into());
        }
        if let Some(state) = self.allocator {
            put("allocator", state.to_string());
        }
        if let Some(c) = self.compare {
            put("a", format!("{}:{}", c.a.0, c.a.1));
            put("b", format!("{}:{}", c.b.0, c.b.1));
        }
        if let Some(rules) = &self.rules {
            if let Ok(json) = serde_json::to_string(rules) {
                put("rules", json);
            }
        }
        out.finish()
    }

    /// `base` (a fragment) with every key `changes` names set as `changes` says and every other
    /// key kept: how a host changes part of an embedded viewer's view (`view=table` shows
    /// the table and keeps the colouring, the pin and the ranges).
    pub fn merge_fragments(base: &str, changes: &str) -> String {
        let pairs = |f: &str| -> Vec<(String, String)> {
            let f = f.strip_prefix('#').unwrap_or(f);
            form_urlencoded::parse(f.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        };
        let changes = pairs(changes);
        let mut merged: Vec<(String, String)> = pairs(base)
            .into_iter()
            .filter(|(k, _)| !changes.iter().any(|(c, _)| c == k))
            .collect();
        merged.extend(changes);
        let mut out = form_urlencoded::Serializer::new(String::new());
        for (k, v) in &merged {
            out.append_pair(k, v);
        }
        out.finish()
    }

    /// Reads a fragment (with or without its `#`). What cannot be read is left at its default.
    pub fn from_fragment(fragment: &str) -> ViewLink {
        let fragment = fragment.strip_prefix('#').unwrap_or(fragment);
        let mut link = ViewLink::default();
        for (key, value) in form_urlencoded::parse(fragment.as_bytes()) {
            let value = value.as_ref();
            match key.as_ref() {
                "show" => {
                    link.show = match value {
                        "files" => Showing::Files,
                        "compare" => Showing::Compare,
                        _ => Showing::File,
                    }
                }
                "file" => link.file = value.parse().unwrap_or(0),
                "device" => link.device = value.parse().ok(),
                "view" => link.view = Section::parse(value),
                "tab" if value == "segments" => link.timeline.kind = TimelineKind::Segments,
                "tab" if value.starts_with("pool-") => {
                    if let Ok(k) = value["pool-".len()..].parse() {
                        link.timeline.kind = TimelineKind::Pool(k);
                    }
                }
                "axis" if value == "time" => link.timeline.axis = AxisMode::Time,
                "x" => link.timeline.x = parse_range(value),
                "y" => link.timeline.y = parse_range(value).filter(|&(a, _)| a >= 0.0),
                "detail" => link.timeline.detail = value.parse().ok(),
                "colour" => {
                    if let Some(colour) = parse_colour(value) {
                        link.timeline.colour = colour;
                    }
                }
                "search" => link.timeline.search = value.to_string(),
                "pin" => link.pin = value.parse().ok(),
                "moment" => link.moment = value.parse().ok().map(State::new),
                "highlight" => link.highlight = value.parse().ok(),
                "scope" => {
                    if let Some(pick) = TablePick::ALL.into_iter().find(|p| p.key() == value) {
                        link.table.pick = pick;
                    }
                }
                "filter" => link.table.text = value.to_string(),
                "regex" => link.table.regex = value == "1",
                "min" => link.table.min_bytes = value.parse().ok(),
                "max" => link.table.max_bytes = value.parse().ok(),
                "stream" => link.table.stream = value.parse().ok(),
                "sort" => {
                    if let Some(sort) = parse_sort(value) {
                        link.table.sort = sort;
                    }
                }
                "group" => link.table.group_by = value.parse().ok(),
                "allocator" => link.allocator = value.parse().ok().map(State::new),
                "a" | "b" => {
                    let Some(side) = parse_side(value) else {
                        continue;
                    };
                    let compare = link.compare.get_or_insert(CompareLink { a: side, b: side });
                    if key == "a" {
                        compare.a = side;
                    } else {
                        compare.b = side;
                    }
                }
                "rules" => link.rules = serde_json::from_str(value).ok(),
                _ => {}
            }
        }
        link
    }
}

/// `a~b` with each number as short as it reads back exactly.
/// `a~b`, each rounded to a ten-thousandth of the range (a pixel of the widest plot is
/// coarser), so a link reads `1200.4~3400.6`, not seventeen digits of a float.
fn range_text((a, b): (f64, f64)) -> String {
    let step = (b - a).abs() * 1e-4;
    let decimals = if step >= 1.0 || step <= 0.0 || !step.is_finite() {
        0
    } else {
        ((-step.log10()).ceil() as usize).min(9)
    };
    let round = |v: f64| {
        let text = format!("{v:.decimals$}");
        let text = if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            text
        };
        if text == "-0" {
            "0".to_string()
        } else {
            text
        }
    };
    let (ra, rb) = (round(a), round(b));
    // A range too narrow for its rounding keeps every digit rather than collapse.
    if ra == rb {
        format!("{a}~{b}")
    } else {
        format!("{ra}~{rb}")
    }
}

/// `a~b` with `a < b`, both finite.
fn parse_range(text: &str) -> Option<(f64, f64)> {
    let (a, b) = text.split_once('~')?;
    let (a, b): (f64, f64) = (a.parse().ok()?, b.parse().ok()?);
    (a.is_finite() && b.is_finite() && a < b).then_some((a, b))
}

fn colour_key(colour: ColourBy) -> &'static str {
    match colour {
        ColourBy::Allocation => "allocation",
        ColourBy::Role => "role",
        ColourBy::Component => "component",
    }
}

fn parse_colour(text: &str) -> Option<ColourBy> {
    [ColourBy::Allocation, ColourBy::Role, ColourBy::Component]
        .into_iter()
        .find(|&c| colour_key(c) == text)
}

/// `column:asc` or `column:desc` (a column alone sorts descending).
fn parse_sort(text: &str) -> Option<Sort> {
    let (column, order) = text.split_once(':').unwrap_or((text, "desc"));
    let column = Column::ALL.into_iter().find(|c| c.key() == column)?;
    let descending = match order {
        "asc" => false,
        "desc" => true,
        _ => return None,
    };
    Some(Sort { column, descending })
}

/// `file:device`.
fn parse_side(text: &str) -> Option<(usize, u32)> {
    let (file, device) = text.split_once(':')?;
    Some((file.parse().ok()?, device.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::categories::rules::Rule;
    use crate::analysis::categories::{Component, Dimension, Role};

    fn everything() -> ViewLink {
        ViewLink {
            show: Showing::Compare,
            file: 2,
            device: Some(1),
            view: Some(Section::Table),
            timeline: TimelineLink {
                kind: TimelineKind::Segments,
                axis: AxisMode::Time,
                x: Some((1_234.5, 1_240.25)),
                y: Some((0.0, 1_073_741_824.0)),
                detail: Some(5_000),
                colour: ColourBy::Component,
                search: "attn & softmax=1 #2".to_string(),
            },
            pin: Some(42),
            moment: Some(State::new(77)),
            highlight: Some(Category {
                dimension: Dimension::Role,
                index: 3,
            }),
            table: TableLink {
                pick: TablePick::Window,
                text: "model.py:1[0-9]".to_string(),
                regex: true,
                min_bytes: Some(1 << 20),
                max_bytes: Some(1 << 30),
                stream: Some(7),
                sort: Sort {
                    column: Column::Lifetime,
                    descending: false,
                },
                group_by: Some(GroupBy::Module),
            },
            allocator: Some(State::new(12)),
            compare: Some(CompareLink {
                a: (0, 0),
                b: (3, 1),
            }),
            rules: Some(Rules {
                rules: vec![Rule {
                    name: Some("experts".into()),
                    pattern: "moe|expert".into(),
                    regex: true,
                    role: Some(Role::Activations),
                    component: Some(Component::Expert),
                }],
            }),
        }
    }

    #[test]
    fn every_part_reads_back_as_written() {
        let link = everything();
        let fragment = link.to_fragment();
        assert_eq!(ViewLink::from_fragment(&fragment), link, "{fragment}");
        assert_eq!(ViewLink::from_fragment(&format!("#{fragment}")), link);
    }

    #[test]
    fn the_default_view_is_an_empty_fragment() {
        assert_eq!(ViewLink::default().to_fragment(), "");
        assert_eq!(ViewLink::from_fragment(""), ViewLink::default());
        assert_eq!(ViewLink::from_fragment("#"), ViewLink::default());
        // The page colours by role unless told otherwise.
        assert_eq!(ViewLink::default().timeline.colour, ColourBy::Role);
    }

    #[test]
    fn only_what_differs_is_written_in_a_fixed_order() {
        let link = ViewLink {
            device: Some(0),
            view: Some(Section::Timeline),
            timeline: TimelineLink {
                x: Some((100.0, 2_500.0)),
                ..TimelineLink::default()
            },
            pin: Some(9),
            table: TableLink {
                group_by: Some(GroupBy::CallSite),
                ..TableLink::default()
            },
            ..ViewLink::default()
        };
        assert_eq!(
            link.to_fragment(),
            "v=1&device=0&view=timeline&x=100%7E2500&pin=9&group=callsite"
        );
    }

    #[test]
    fn text_is_percent_encoded_and_never_splits_the_fragment() {
        let mut link = ViewLink::default();
        link.table.text = "a&b=c#d e+f%".to_string();
        let fragment = link.to_fragment();
        assert!(!fragment.contains('#'), "{fragment}");
        assert!(!fragment.contains(' '), "{fragment}");
        assert_eq!(
            ViewLink::from_fragment(&fragment).table.text,
            "a&b=c#d e+f%"
        );
    }

    #[test]
    fn what_cannot_be_read_is_left_at_its_default() {
        let link = ViewLink::from_fragment(
            "v=9&show=sideways&device=-1&view=nowhere&x=5~2&y=-3~4&detail=many&colour=plaid\
             &pin=&moment=x&highlight=role:nothing&scope=later&min=1.5MiB&sort=weight:asc\
             &group=colour&a=1&b=x:y&rules=%7Bbroken&unknown=1&device=3",
        );
        assert_eq!(
            link,
            ViewLink {
                device: Some(3),
                ..ViewLink::default()
            }
        );
        // A range must go forwards and be finite.
        assert_eq!(parse_range("inf~1"), None);
        assert_eq!(parse_range("1~NaN"), None);
        assert_eq!(parse_range("1~1"), None);
        assert_eq!(parse_range("-2.5~1e3"), Some((-2.5, 1000.0)));
    }

    #[test]
    fn a_sort_without_order_is_descending() {
        assert_eq!(
            parse_sort("requested"),
            Some(Sort {
                column: Column::Requested,
                descending: true
            })
        );
        assert_eq!(parse_sort("requested:sideways"), None);
    }

    #[test]
    fn one_compared_side_alone_stands_for_both() {
        let link = ViewLink::from_fragment("show=compare&a=1:0");
        assert_eq!(
            link.compare,
            Some(CompareLink {
                a: (1, 0),
                b: (1, 0)
            })
        );
    }

    #[test]
    fn sections_are_found_by_their_elements() {
        for section in Section::ALL {
            assert_eq!(Section::of_element_id(section.element_id()), Some(section));
            assert_eq!(Section::parse(section.key()), Some(section));
        }
        assert_eq!(Section::of_element_id("welcome"), None);
    }

    #[test]
    fn a_hosts_change_keeps_what_it_does_not_name() {
        let merged =
            ViewLink::merge_fragments("#colour=component&pin=3&view=timeline", "view=table");
        let link = ViewLink::from_fragment(&merged);
        assert_eq!(link.view, Some(Section::Table));
        assert_eq!(link.timeline.colour, ColourBy::Component);
        assert_eq!(link.pin, Some(3));
        let again =
            ViewLink::from_fragment(&ViewLink::merge_fragments(&merged, "pin=5&colour=role"));
        assert_eq!(
            (again.pin, again.timeline.colour, again.view),
            (Some(5), ColourBy::Role, Some(Section::Table))
        );
        assert_eq!(ViewLink::merge_fragments("", "view=table"), "view=table");
        assert_eq!(ViewLink::merge_fragments("view=table", ""), "view=table");
    }

    #[test]
    fn ranges_are_written_rounded_to_what_a_pixel_can_show() {
        assert_eq!(
            range_text((1200.123456789012, 3400.987654321098)),
            "1200.1~3401"
        );
        assert_eq!(range_text((0.0, 1_234_567.891)), "0~1234568");
        assert_eq!(range_text((1.5e9, 2.25e10)), "1500000000~22500000000");
        assert_eq!(
            range_text((0.001234567, 0.002345678)),
            "0.0012346~0.0023457"
        );
        // Read back, the rounded range is the same view to within a ten-thousandth.
        let link = ViewLink::from_fragment("x=1200.123456789012~3400.987654321098");
        let (a, b) = ViewLink::from_fragment(&link.to_fragment())
            .timeline
            .x
            .unwrap();
        assert!((a - 1200.123456789012).abs() < 0.22 && (b - 3400.987654321098).abs() < 0.22);
    }

    #[test]
    fn a_link_says_what_it_shows() {
        let link = ViewLink::from_fragment("file=1&device=0&view=table&pin=12&group=module");
        assert_eq!(
            link.words(),
            "the allocations table of file 2, device 0, allocation 12 pinned, grouped by module"
        );
        assert_eq!(
            ViewLink::from_fragment("x=10~20").words(),
            "the timeline, zoomed in"
        );
        assert_eq!(
            ViewLink::from_fragment("show=compare&a=0:0&b=1:0").words(),
            "a comparison of two files"
        );
        // A moment is a state: state 78 is the memory after event 77, as the legend says.
        assert_eq!(
            ViewLink::from_fragment("moment=78").words(),
            "the timeline, the moment after event 77"
        );
        assert_eq!(
            ViewLink::from_fragment("moment=0").words(),
            "the timeline, the moment before the first event"
        );
    }
}
