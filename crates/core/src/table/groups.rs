//! The grouping tree: a table's allocations grouped by call site, stack, file, role,
//! component, phase or model module, with each group's count, bytes and share; and the lines
//! a window of the tree shows once some groups are opened.
//!
//! Groups hold their allocations in the table's sort order, so opening one lists them as the
//! flat table would. Module groups nest along the chain of `forward` frames, and a repeated
//! call (a model's layers) is one group that opens to each of its occurrences
//! ([`super::modules`]). Not the place for choosing rows or for words.

use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

/// The group of allocations recorded without a stack.
pub const NO_FRAME: &str = "(no frame)";

use super::columns::{Rows, TableRow};
use super::modules::{frame_label, occurrences, Chains};
use super::GroupBy;
use crate::analysis::categories::labels::{component_label, phase_label, pool_label, role_label};
use crate::analysis::categories::signals::Phase;
use crate::analysis::categories::Role;
use crate::analysis::lines::SourcePlace;
use crate::analysis::stacks::allocation_stack;
use crate::model::FrameId;

/// One group and what is under it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Node {
    /// Tells it from its siblings; a path of keys names it in the tree.
    pub key: String,
    pub label: String,
    /// The label is a frame of the user's code.
    pub user: bool,
    pub count: u32,
    pub requested_bytes: u64,
    pub size_bytes: u64,
    /// How many times a module's call repeated (its layers), 0 when not folded.
    pub occurrences: u32,
    /// The Python code it names (a call site's line, a module's call, a file), for a source
    /// view.
    pub place: Option<SourcePlace>,
    /// Subgroups; empty for a group that opens to its allocations.
    pub children: Vec<Node>,
    /// The allocations of a group without subgroups, in the table's sort order.
    pub members: Vec<u32>,
}

impl Node {
    fn leaf(key: String, label: String, user: bool, members: Vec<u32>, rows: &Rows<'_>) -> Node {
        let mut node = Node {
            key,
            label,
            user,
            members,
            ..Node::default()
        };
        for &i in &node.members {
            node.count += 1;
            node.requested_bytes += rows.allocation(i).size;
            node.size_bytes += rows.block_size(i);
        }
        node
    }

    fn parent(key: String, label: String, children: Vec<Node>) -> Node {
        let mut node = Node {
            key,
            label,
            children,
            ..Node::default()
        };
        for c in &node.children {
            node.count += c.count;
            node.requested_bytes += c.requested_bytes;
            node.size_bytes += c.size_bytes;
        }
        node
    }

    /// Lines it takes when shown: itself, and what is under it when open.
    /// `path` leads to its parent.
    pub fn lines(&self, path: &mut Vec<String>, open: &OpenGroups) -> u64 {
        path.push(self.key.clone());
        let mut n = 1;
        if open.contains(path) {
            n += if self.children.is_empty() {
                self.members.len() as u64
            } else {
                self.children.iter().map(|c| c.lines(path, open)).sum()
            };
        }
        path.pop();
        n
    }
}

/// The groups a tree's reader has opened, each by its path of keys.
pub type OpenGroups = FxHashSet<Vec<String>>;

/// Groups of a table's allocations.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tree {
    pub roots: Vec<Node>,
}

/// Groups `sorted` (allocation indices in the table's sort order) by `by`; groups come
/// largest first (a module's occurrences in the order they ran).
pub fn group(rows: &Rows<'_>, sorted: &[u32], by: GroupBy) -> Tree {
    let mut roots = match by {
        GroupBy::Module => modules(rows, sorted),
        _ => flat(rows, sorted, by),
    };
    sort_groups(&mut roots);
    Tree { roots }
}

fn sort_groups(nodes: &mut [Node]) {
    let occurrences = nodes.iter().all(|n| n.key.starts_with('#'));
    if !occurrences {
        nodes.sort_by(|a, b| {
            b.requested_bytes
                .cmp(&a.requested_bytes)
                .then_with(|| a.label.cmp(&b.label))
        });
    }
    for n in nodes {
        sort_groups(&mut n.children);
    }
}

/// One level of groups, by a key of each allocation.
fn flat(rows: &Rows<'_>, sorted: &[u32], by: GroupBy) -> Vec<Node> {
    // Call sites of one file come together.
    let mut file_ids: FxHashMap<String, u64> = FxHashMap::default();
    let mut files: Vec<String> = Vec::new();
    let file_of_name: Vec<u64> = if by == GroupBy::File {
        rows.columns
            .names
            .iter()
            .map(|(name, _)| {
                let file = name.as_deref().map_or(String::new(), file_of);
                *file_ids.entry(file.clone()).or_insert_with(|| {
                    files.push(file);
                    files.len() as u64 - 1
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    let key_of = |i: u32| -> u64 {
        match by {
            GroupBy::CallSite => rows.columns.name[i as usize] as u64,
            GroupBy::Stack => rows.allocation(i).stack as u64,
            GroupBy::File => file_of_name[rows.columns.name[i as usize] as usize],
            GroupBy::Role => rows.role(i) as u64,
            GroupBy::Component => rows.component(i) as u64,
            GroupBy::Phase => rows.phase(i).map_or(0, |p| p as u64 + 1),
            GroupBy::Pool => rows
                .categories
                .pooled
                .members
                .binary_search_by_key(&i, |&(a, _)| a)
                .map_or(0, |k| rows.categories.pooled.members[k].1 as u64 + 1),
            GroupBy::Module => unreachable!("modules nest"),
        }
    };
    let mut members: FxHashMap<u64, Vec<u32>> = FxHashMap::default();
    for &i in sorted {
        members.entry(key_of(i)).or_default().push(i);
    }
    members
        .into_iter()
        .map(|(key, list)| {
            let (label, user) = match by {
                GroupBy::CallSite => {
                    let (name, user) = &rows.columns.names[key as usize];
                    (name.clone().unwrap_or_else(|| NO_FRAME.into()), *user)
                }
                GroupBy::Stack => {
                    let first = list[0];
                    let (name, user) =
                        &rows.columns.names[rows.columns.name[first as usize] as usize];
                    let frames = rows
                        .snapshot
                        .stacks
                        .frames(rows.allocation(first).stack)
                        .len();
                    let name = name.clone().unwrap_or_else(|| NO_FRAME.into());
                    (format!("{name} ({frames} frames)"), *user)
                }
                GroupBy::Role => (role_label(Role::ALL[key as usize]).to_string(), false),
                GroupBy::Component => (
                    component_label(crate::analysis::categories::Component::ALL[key as usize])
                        .to_string(),
                    false,
                ),
                GroupBy::Phase => (
                    match key {
                        0 => "Before the trace".to_string(),
                        k => phase_label(Phase::ALL[k as usize - 1]).to_string(),
                    },
                    false,
                ),
                GroupBy::Pool => (
                    match key {
                        0 => "Default pool".to_string(),
                        k => pool_label(&rows.categories.pooled.pools[k as usize - 1]),
                    },
                    false,
                ),
                GroupBy::File => match files[key as usize].as_str() {
                    "" => (NO_FRAME.to_string(), false),
                    file => (file.to_string(), false),
                },
                GroupBy::Module => unreachable!("modules nest"),
            };
            let place = match by {
                GroupBy::CallSite | GroupBy::Stack => {
                    let name = &rows.columns.names[rows.columns.name[list[0] as usize] as usize];
                    name.0.as_deref().and_then(SourcePlace::of_frame_text)
                }
                GroupBy::File => SourcePlace::of_file(&label),
                _ => None,
            };
            let mut node = Node::leaf(key.to_string(), label, user, list, rows);
            node.place = place;
            node
        })
        .collect()
}

/// The file of a `file:line:name` frame.
fn file_of(frame: &str) -> String {
    let mut parts = frame.rsplitn(3, ':');
    let _name = parts.next();
    let _line = parts.next();
    parts.next().unwrap_or(frame).to_string()
}

/// Groups along the chains of `forward` frames.
fn modules(rows: &Rows<'_>, sorted: &[u32]) -> Vec<Node> {
    let mut chains = Chains::default();
    let mut chain_ids: FxHashMap<Vec<FrameId>, u32> = FxHashMap::default();
    let mut chain_of_stack: FxHashMap<crate::model::StackId, u32> = FxHashMap::default();
    let mut distinct: Vec<Vec<FrameId>> = Vec::new();
    let mut in_order: Vec<u32> = sorted.to_vec();
    in_order.sort_unstable();
    // Indexed like the replay's allocations; only the chosen ones are set.
    let mut chain_of = vec![0u32; rows.facts.allocations.len()];
    for &i in &in_order {
        let stack = allocation_stack(&rows.device.trace, &rows.allocation(i));
        chain_of[i as usize] = *chain_of_stack.entry(stack).or_insert_with(|| {
            let chain = chains.of(rows.snapshot, stack);
            *chain_ids.entry(chain.to_vec()).or_insert_with(|| {
                distinct.push(chain.to_vec());
                distinct.len() as u32 - 1
            })
        });
    }
    // Where each allocation sits in the table's order, to list a group's members in it.
    let mut rank = vec![0u32; rows.facts.allocations.len()];
    for (r, &i) in sorted.iter().enumerate() {
        rank[i as usize] = r as u32;
    }
    let chain = |i: u32| -> &[FrameId] { &distinct[chain_of[i as usize] as usize] };
    let builder = ModuleBuilder {
        rows,
        chain: &chain,
        rank: &rank,
    };
    builder.level(&in_order, 0)
}

struct ModuleBuilder<'r, 'a> {
    rows: &'r Rows<'a>,
    chain: &'r dyn Fn(u32) -> &'r [FrameId],
    rank: &'r [u32],
}

impl ModuleBuilder<'_, '_> {
    fn leaf(&self, key: String, label: String, mut members: Vec<u32>) -> Node {
        members.sort_unstable_by_key(|&i| self.rank[i as usize]);
        Node::leaf(key, label, false, members, self.rows)
    }

    /// The groups of `members` (in allocation order) at `depth` of their chains.
    fn level(&self, members: &[u32], depth: usize) -> Vec<Node> {
        let mut here: Vec<u32> = Vec::new();
        let mut by_frame: Vec<(FrameId, Vec<u32>)> = Vec::new();
        let mut slot: FxHashMap<FrameId, usize> = FxHashMap::default();
        for &i in members {
            match (self.chain)(i).get(depth) {
                None => here.push(i),
                Some(&frame) => {
                    let s = *slot.entry(frame).or_insert_with(|| {
                        by_frame.push((frame, Vec::new()));
                        by_frame.len() - 1
                    });
                    by_frame[s].1.push(i);
                }
            }
        }
        let mut nodes = Vec::new();
        if !here.is_empty() {
            let label = if depth == 0 {
                "(outside any forward)"
            } else {
                "(in this forward itself)"
            };
            nodes.push(self.leaf("here".into(), label.into(), here));
        }
        for (frame, list) in by_frame {
            nodes.push(self.module(frame, &list, depth));
        }
        nodes
    }

    /// The group of the calls at `frame` (at `depth` of their chains).
    fn module(&self, frame: FrameId, list: &[u32], depth: usize) -> Node {
        let mut node = self.module_groups(frame, list, depth);
        let snapshot = self.rows.snapshot;
        let f = &snapshot.frames[frame as usize];
        node.place = SourcePlace::of_file(snapshot.str(f.filename)).map(|p| SourcePlace {
            line: Some(f.line),
            ..p
        });
        node
    }

    /// The group of the calls at `frame`, without its place.
    fn module_groups(&self, frame: FrameId, list: &[u32], depth: usize) -> Node {
        let key = frame.to_string();
        let label = frame_label(self.rows.snapshot, frame);
        let inner: Vec<&[FrameId]> = list
            .iter()
            .map(|&i| &(self.chain)(i)[depth + 1..])
            .collect();
        let deeper = inner.iter().any(|c| !c.is_empty());
        let starts = occurrences(&inner);
        if starts.len() >= 2 {
            let ends = starts.iter().skip(1).copied().chain([list.len()]);
            let children = starts
                .iter()
                .zip(ends)
                .enumerate()
                .map(|(k, (&a, b))| {
                    let part = &list[a..b];
                    let key = format!("#{}", k + 1);
                    let label = format!("call {} of {}", k + 1, starts.len());
                    if deeper {
                        Node::parent(key, label, self.level(part, depth + 1))
                    } else {
                        self.leaf(key, label, part.to_vec())
                    }
                })
                .collect();
            let mut node = Node::parent(key, format!("{label} ×{}", starts.len()), children);
            node.occurrences = starts.len() as u32;
            return node;
        }
        if deeper {
            Node::parent(key, label, self.level(list, depth + 1))
        } else {
            self.leaf(key, label, list.to_vec())
        }
    }
}

/// One line of a table window: a group, or an allocation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Line {
    Group(GroupLine),
    Row { depth: u32, row: TableRow },
}

/// A group as a line of the table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupLine {
    /// Keys from the root: what opening or closing it sends back.
    pub path: Vec<String>,
    pub depth: u32,
    pub label: String,
    pub user: bool,
    pub count: u32,
    pub requested_bytes: u64,
    pub size_bytes: u64,
    /// Of the scope's requested bytes.
    pub share: f64,
    pub occurrences: u32,
    pub open: bool,
    /// The Python code it names, when it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<SourcePlace>,
}

/// Lines of `tree` with `open` groups opened: how many there are, and those of
/// `first..first + count`.
pub fn window(
    rows: &Rows<'_>,
    tree: &Tree,
    open: &OpenGroups,
    scope_bytes: u64,
    first: u64,
    count: u64,
) -> (u64, Vec<Line>) {
    let mut walk = Walk {
        rows,
        open,
        scope_bytes,
        from: first,
        to: first.saturating_add(count),
        at: 0,
        out: Vec::new(),
        path: Vec::new(),
    };
    walk.nodes(&tree.roots);
    (walk.at, walk.out)
}

struct Walk<'w, 'a> {
    rows: &'w Rows<'a>,
    open: &'w OpenGroups,
    scope_bytes: u64,
    from: u64,
    to: u64,
    /// Lines walked so far.
    at: u64,
    out: Vec<Line>,
    path: Vec<String>,
}

impl Walk<'_, '_> {
    fn nodes(&mut self, nodes: &[Node]) {
        for node in nodes {
            let depth = self.path.len() as u32;
            let lines = node.lines(&mut self.path, self.open);
            // Outside the window: count its lines without listing them.
            if self.at >= self.to || self.at + lines <= self.from {
                self.at += lines;
                continue;
            }
            self.path.push(node.key.clone());
            let is_open = self.open.contains(&self.path);
            if self.at >= self.from {
                self.out.push(Line::Group(GroupLine {
                    path: self.path.clone(),
                    depth,
                    label: node.label.clone(),
                    user: node.user,
                    count: node.count,
                    requested_bytes: node.requested_bytes,
                    size_bytes: node.size_bytes,
                    share: share(node.requested_bytes, self.scope_bytes),
                    occurrences: node.occurrences,
                    open: is_open,
                    place: node.place.clone(),
                }));
            }
            self.at += 1;
            if is_open {
                if node.children.is_empty() {
                    let len = node.members.len() as u64;
                    let a = self.from.saturating_sub(self.at).min(len);
                    let b = self.to.saturating_sub(self.at).min(len);
                    for &i in &node.members[a as usize..b as usize] {
                        self.out.push(Line::Row {
                            depth: depth + 1,
                            row: self.rows.row(i),
                        });
                    }
                    self.at += len;
                } else {
                    self.nodes(&node.children);
                }
            }
            self.path.pop();
        }
    }
}

/// `part` of `whole`, 0 when the whole is empty.
pub fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The path to the group holding allocation `allocation`, and its place among that group's
/// allocations.
pub fn path_to(tree: &Tree, allocation: u32) -> Option<(Vec<String>, usize)> {
    fn find(nodes: &[Node], allocation: u32, path: &mut Vec<String>) -> Option<usize> {
        for node in nodes {
            path.push(node.key.clone());
            let found = if node.children.is_empty() {
                node.members.iter().position(|&i| i == allocation)
            } else {
                find(&node.children, allocation, path)
            };
            if found.is_some() {
                return found;
            }
            path.pop();
        }
        None
    }
    let mut path = Vec::new();
    find(&tree.roots, allocation, &mut path).map(|at| (path, at))
}

/// The line of the group at `path` (which must be in the tree), with `open` groups opened.
pub fn line_of(tree: &Tree, open: &OpenGroups, path: &[String]) -> u64 {
    let mut at = 0;
    let mut nodes = &tree.roots[..];
    let mut prefix: Vec<String> = Vec::new();
    for key in path {
        for node in nodes {
            if &node.key == key {
                break;
            }
            at += node.lines(&mut prefix, open);
        }
        let Some(node) = nodes.iter().find(|n| &n.key == key) else {
            break;
        };
        prefix.push(node.key.clone());
        nodes = &node.children;
        at += 1;
    }
    // The walk counted the group's own line.
    at.saturating_sub(1)
}

/// Every group, depth first, with its depth: what a grouped table exports.
pub fn every_group(tree: &Tree) -> Vec<(Vec<&str>, &Node)> {
    fn walk<'t>(
        nodes: &'t [Node],
        path: &mut Vec<&'t str>,
        out: &mut Vec<(Vec<&'t str>, &'t Node)>,
    ) {
        for node in nodes {
            path.push(&node.label);
            out.push((path.clone(), node));
            walk(&node.children, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(&tree.roots, &mut Vec::new(), &mut out);
    out
}
