//! A report as a small document — headings, paragraphs of inline spans, lists, tables with
//! aligned columns, charts as plain data, sections — built once and rendered twice: as
//! Markdown (to paste into an issue, a pull request or a CI summary) and as HTML (a page that
//! carries everything it shows: its style inline, its charts as markup a caller draws, no
//! script).
//!
//! The renderers own the escaping: every text is escaped for the format it is written in, so
//! a name or a call site from a file is always read as text — in Markdown it never opens a
//! link, emphasis or raw HTML and never breaks a table ([`escape`], [`code`]); in HTML every
//! `<`, `&` and quote is an entity. Exact values ride along as `data-*` attributes in HTML
//! (Markdown shows the words only). Not the place for choosing words or numbers (the report,
//! the files table) or for drawing a chart: the HTML renderer asks its caller for each
//! chart's markup, so the core needs no drawing library.

use std::fmt::Write;

/// Exact values an element carries in HTML, as `data-NAME="value"` attributes. Names are the
/// project's own (`bytes`, `metric`, `value`); values are escaped.
pub type Data = Vec<(&'static str, String)>;

/// A run of text inside a block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Inline {
    /// Text, escaped by each renderer: the project's words or a file's.
    Text(String),
    /// The project's own words that Markdown should see as they are (a table's `#` header):
    /// only literals of the code, never text from a file.
    Literal(&'static str),
    Strong(Vec<Inline>),
    Emphasis(Vec<Inline>),
    /// Code (a call site, an allocator setting): a code span in Markdown, `<code>` in HTML.
    Code(String),
    /// A number in words with its exact value in `data` (HTML: a `<span data-…>`).
    Value {
        text: String,
        data: Data,
    },
    /// A link to another file written beside this one: `markdown` is where the Markdown
    /// rendering links to, `html` where the HTML rendering does (relative paths).
    Link {
        content: Vec<Inline>,
        markdown: String,
        html: String,
    },
}

impl Inline {
    /// Text (escaped by each renderer).
    pub fn text(text: impl Into<String>) -> Self {
        Inline::Text(text.into())
    }

    /// Strong text.
    pub fn strong(text: impl Into<String>) -> Self {
        Inline::Strong(vec![Inline::text(text)])
    }

    /// A number in words with one exact value: `data-NAME="value"`.
    pub fn value(text: impl Into<String>, name: &'static str, value: impl ToString) -> Self {
        Inline::Value {
            text: text.into(),
            data: vec![(name, value.to_string())],
        }
    }
}

/// How a column's cells line up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    /// Numbers: right-aligned, so digits line up.
    Right,
}

/// A table's column: its header and alignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocColumn {
    pub title: Vec<Inline>,
    pub align: Align,
}

impl DocColumn {
    pub fn new(title: &str, align: Align) -> Self {
        DocColumn {
            title: vec![Inline::text(title)],
            align,
        }
    }
}

/// One cell: what it shows and the exact values it carries in HTML.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cell {
    pub content: Vec<Inline>,
    pub data: Data,
}

impl Cell {
    /// A cell of text.
    pub fn text(text: impl Into<String>) -> Self {
        Cell {
            content: vec![Inline::text(text)],
            data: Vec::new(),
        }
    }

    /// A cell of inline spans.
    pub fn of(content: Vec<Inline>) -> Self {
        Cell {
            content,
            data: Vec::new(),
        }
    }

    /// The cell with `data-NAME="value"` too.
    pub fn with(mut self, name: &'static str, value: impl ToString) -> Self {
        self.data.push((name, value.to_string()));
        self
    }

    /// The cell's content in strong text (a table's total row).
    pub fn strong(mut self) -> Self {
        self.content = vec![Inline::Strong(std::mem::take(&mut self.content))];
        self
    }
}

/// A table: header, alignment and rows (each row as many cells as columns).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DocTable {
    pub columns: Vec<DocColumn>,
    pub rows: Vec<DocRow>,
}

/// A table's row and the exact values it carries in HTML.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DocRow {
    pub cells: Vec<Cell>,
    pub data: Data,
}

impl From<Vec<Cell>> for DocRow {
    fn from(cells: Vec<Cell>) -> Self {
        DocRow {
            cells,
            data: Vec::new(),
        }
    }
}

/// How a chart shows its slices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChartKind {
    Pie,
    Bars,
    /// Each slice a run's curve over its share of the run ([`DocChart::curves`]), its peak
    /// marked; the slices' bytes are the peaks.
    Runs,
}

/// One slice of a chart: what it is called, its key, its bytes and its colour.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChartSlice {
    pub key: String,
    pub label: String,
    pub bytes: u64,
    pub colour: [u8; 3],
}

/// A chart as data: the HTML renderer asks its caller to draw it; Markdown leaves it out (the
/// table beside it holds the same numbers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocChart {
    /// What it shows, for `data-chart` (`roles`, `components`, `peaks`).
    pub key: &'static str,
    pub title: String,
    pub kind: ChartKind,
    pub slices: Vec<ChartSlice>,
    /// Of a [`ChartKind::Runs`] chart, each slice's values over its run; empty otherwise.
    pub curves: Vec<Vec<i64>>,
}

/// A block of the document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DocBlock {
    /// A heading of level 1 to 6.
    Heading(u8, Vec<Inline>),
    Paragraph(Vec<Inline>),
    /// A bulleted list, one item of inline spans per entry.
    List(Vec<Vec<Inline>>),
    Table(DocTable),
    Chart(DocChart),
    /// A thematic break between two reports.
    Rule,
    /// Blocks that belong together (one device's report), with the exact values that tell
    /// them apart in HTML (`data-device`). Markdown writes its blocks as they are.
    Section {
        data: Data,
        blocks: Vec<DocBlock>,
    },
}

/// A document: blocks in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Document {
    pub blocks: Vec<DocBlock>,
}

impl Document {
    pub fn push(&mut self, block: DocBlock) {
        self.blocks.push(block);
    }

    /// A heading of `level` made of text.
    pub fn heading(&mut self, level: u8, text: impl Into<String>) {
        self.push(DocBlock::Heading(level, vec![Inline::text(text)]));
    }

    /// A paragraph of text.
    pub fn paragraph(&mut self, text: impl Into<String>) {
        self.push(DocBlock::Paragraph(vec![Inline::text(text)]));
    }

    /// The document as Markdown: each block ends with a line break and is separated from the
    /// next by a blank line; charts are left out.
    pub fn markdown(&self) -> String {
        let mut blocks = Vec::new();
        leaves(&self.blocks, &mut blocks);
        let rendered: Vec<String> = blocks.into_iter().filter_map(markdown_block).collect();
        rendered.join("\n")
    }

    /// The document as an HTML fragment (for [`html_page`]'s body); `chart` draws each chart
    /// as markup the renderer trusts (an inline `<svg>`).
    pub fn html(&self, chart: &dyn Fn(&DocChart) -> String) -> String {
        let mut out = String::new();
        for block in &self.blocks {
            html_block(&mut out, block, chart);
        }
        out
    }
}

/// The blocks Markdown writes, sections opened.
fn leaves<'a>(blocks: &'a [DocBlock], out: &mut Vec<&'a DocBlock>) {
    for block in blocks {
        match block {
            DocBlock::Section { blocks, .. } => leaves(blocks, out),
            other => out.push(other),
        }
    }
}

fn markdown_block(block: &DocBlock) -> Option<String> {
    let line = markdown_inlines;
    Some(match block {
        DocBlock::Heading(level, content) => {
            let level = (*level).clamp(1, 6) as usize;
            format!("{} {}\n", "#".repeat(level), line(content))
        }
        DocBlock::Paragraph(content) => format!("{}\n", line(content)),
        DocBlock::List(items) => items.iter().map(|i| format!("- {}\n", line(i))).collect(),
        DocBlock::Table(table) => {
            let mut out = String::new();
            let titles: Vec<String> = table.columns.iter().map(|c| line(&c.title)).collect();
            let _ = writeln!(out, "| {} |", titles.join(" | "));
            let rule: Vec<&str> = table
                .columns
                .iter()
                .map(|c| match c.align {
                    Align::Left => "---",
                    Align::Right => "---:",
                })
                .collect();
            let _ = writeln!(out, "|{}|", rule.join("|"));
            for row in &table.rows {
                let cells: Vec<String> = row.cells.iter().map(|c| line(&c.content)).collect();
                let _ = writeln!(out, "| {} |", cells.join(" | "));
            }
            out
        }
        DocBlock::Rule => "---\n".to_string(),
        DocBlock::Chart(_) | DocBlock::Section { .. } => return None,
    })
}

fn markdown_inlines(inlines: &[Inline]) -> String {
    let mut out = String::new();
    for inline in inlines {
        match inline {
            Inline::Text(text) => out.push_str(&escape(text)),
            Inline::Literal(text) => out.push_str(text),
            Inline::Strong(inner) => {
                let _ = write!(out, "**{}**", markdown_inlines(inner));
            }
            Inline::Emphasis(inner) => {
                let _ = write!(out, "*{}*", markdown_inlines(inner));
            }
            Inline::Code(text) => out.push_str(&code(text)),
            Inline::Value { text, .. } => out.push_str(&escape(text)),
            Inline::Link {
                content, markdown, ..
            } => {
                let _ = write!(
                    out,
                    "[{}]({})",
                    markdown_inlines(content),
                    url_path(markdown)
                );
            }
        }
    }
    out
}

fn html_block(out: &mut String, block: &DocBlock, chart: &dyn Fn(&DocChart) -> String) {
    match block {
        DocBlock::Heading(level, content) => {
            let level = (*level).clamp(1, 6);
            let _ = writeln!(out, "<h{level}>{}</h{level}>", html_inlines(content));
        }
        DocBlock::Paragraph(content) => {
            let _ = writeln!(out, "<p>{}</p>", html_inlines(content));
        }
        DocBlock::List(items) => {
            out.push_str("<ul>\n");
            for item in items {
                let _ = writeln!(out, "<li>{}</li>", html_inlines(item));
            }
            out.push_str("</ul>\n");
        }
        DocBlock::Table(table) => html_table(out, table),
        DocBlock::Chart(c) => {
            let described: Vec<String> = c
                .slices
                .iter()
                .filter(|s| s.bytes > 0)
                .map(|s| format!("{} {}", s.label, super::bytes(s.bytes)))
                .collect();
            let label = format!("{}: {}", c.title, described.join(", "));
            let kind = match c.kind {
                ChartKind::Pie => "pie",
                ChartKind::Bars => "bars",
                ChartKind::Runs => "runs",
            };
            let _ = writeln!(
                out,
                "<figure class=\"chart {kind}\" data-chart=\"{}\" role=\"img\" aria-label=\"{}\">\n{}</figure>",
                html_escape(c.key),
                html_escape(&label),
                chart(c)
            );
        }
        DocBlock::Rule => out.push_str("<hr>\n"),
        DocBlock::Section { data, blocks } => {
            let _ = writeln!(out, "<section{}>", attributes(data));
            for block in blocks {
                html_block(out, block, chart);
            }
            out.push_str("</section>\n");
        }
    }
}

fn html_table(out: &mut String, table: &DocTable) {
    let class = |align: Align| match align {
        Align::Left => "",
        Align::Right => " class=\"num\"",
    };
    out.push_str("<div class=\"table\"><table>\n<thead><tr>");
    for column in &table.columns {
        let _ = write!(
            out,
            "<th{}>{}</th>",
            class(column.align),
            html_inlines(&column.title)
        );
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &table.rows {
        let _ = write!(out, "<tr{}>", attributes(&row.data));
        for (cell, column) in row.cells.iter().zip(&table.columns) {
            let _ = write!(
                out,
                "<td{}{}>{}</td>",
                class(column.align),
                attributes(&cell.data),
                html_inlines(&cell.content)
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n");
}

fn html_inlines(inlines: &[Inline]) -> String {
    let mut out = String::new();
    for inline in inlines {
        match inline {
            Inline::Text(text) => out.push_str(&html_escape(text)),
            Inline::Literal(text) => out.push_str(&html_escape(text)),
            Inline::Strong(inner) => {
                let _ = write!(out, "<strong>{}</strong>", html_inlines(inner));
            }
            Inline::Emphasis(inner) => {
                let _ = write!(out, "<em>{}</em>", html_inlines(inner));
            }
            Inline::Code(text) => {
                let _ = write!(out, "<code>{}</code>", html_escape(text));
            }
            Inline::Value { text, data } => {
                let _ = write!(
                    out,
                    "<span{}>{}</span>",
                    attributes(data),
                    html_escape(text)
                );
            }
            Inline::Link { content, html, .. } => {
                let _ = write!(
                    out,
                    "<a href=\"{}\">{}</a>",
                    html_escape(&url_path(html)),
                    html_inlines(content)
                );
            }
        }
    }
    out
}

/// ` data-NAME="value"` for each exact value.
fn attributes(data: &Data) -> String {
    data.iter()
        .map(|(name, value)| format!(" data-{name}=\"{}\"", html_escape(value)))
        .collect()
}

/// `text` with every character HTML could read as markup as an entity, in text and in
/// quoted attributes alike.
pub fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A relative path as a URL path: every byte but unreserved characters and `/`
/// percent-encoded, so a name never ends a Markdown link or an attribute, or reads as a
/// scheme (`javascript:`).
fn url_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for &b in path.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The style of a report page: light, dark when the system is, light again on paper. Its
/// SHA-256 is in [`STYLE_HASH`], which the page's Content-Security-Policy allows.
pub const STYLE: &str = "\
:root{color-scheme:light dark;--bg:#fff;--text:#1b1f27;--muted:#5b6270;--border:#dfe3ea;--code:#f1f3f7;--link:#4338ca}
@media (prefers-color-scheme:dark){:root{--bg:#171a21;--text:#e6e8ee;--muted:#a0a8b8;--border:#2b303b;--code:#232733;--link:#a5b4fc}}
@media print{:root{--bg:#fff;--text:#000;--muted:#333;--border:#bbb;--code:#f1f3f7;--link:#000}figure,tr,li{break-inside:avoid}h1,h2,h3{break-after:avoid}}
body{margin:0;background:var(--bg);color:var(--text);font:14px/1.5 system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif}
main{max-width:72rem;margin:0 auto;padding:1.5rem}
h1{font-size:1.5rem;margin:1.5rem 0 1rem;overflow-wrap:anywhere}
h2{font-size:1.2rem;margin:1.75rem 0 .5rem;border-bottom:1px solid var(--border);padding-bottom:.25rem}
h3{font-size:1rem;margin:1.25rem 0 .5rem}
a{color:var(--link)}
hr{border:0;border-top:2px solid var(--border);margin:2.5rem 0}
.table{overflow-x:auto}
table{border-collapse:collapse;margin:.5rem 0 1rem}
th,td{padding:.2rem .6rem;border-bottom:1px solid var(--border);text-align:left;vertical-align:top}
th{font-weight:600}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--code);border-radius:3px;padding:0 .2em;overflow-wrap:anywhere}
h1,h2,h3,hr,section,footer{clear:both}
figure.chart{max-width:100%;margin:.5rem 1.5rem 1rem 0;border:1px solid #dfe3ea;border-radius:6px;overflow:hidden;line-height:0;background:#fff;width:max-content}
figure.pie{float:left}
figure.chart svg{display:block;max-width:100%;height:auto}
footer{margin-top:3rem;color:var(--muted);font-size:.85rem}
";

/// `'sha256-…'` of [`STYLE`], as the Content-Security-Policy names it (checked by a test).
pub const STYLE_HASH: &str = "'sha256-lSalaKvV2lGHl++NL94BOE5ROxNIT/60KyG/MkYLGSU='";

/// A page that shows `body` (an HTML fragment) on its own: opened from disk or served, with
/// its style inline and a Content-Security-Policy that runs no script and loads nothing (only
/// the style above and `data:` images).
pub fn html_page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src {STYLE_HASH}; img-src data:; base-uri 'none'; form-action 'none'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n{body}</main>\n</body>\n</html>\n",
        html_escape(title)
    )
}

/// Line breaks and other control characters as spaces: a table row or a list item stays on
/// one line.
fn one_line(text: &str) -> impl Iterator<Item = char> + '_ {
    text.chars().map(|c| if c.is_control() { ' ' } else { c })
}

/// `text` as Markdown that reads as the same text, on one line: every character Markdown (or
/// GitHub's flavour: tables, strikethrough, math) could read as syntax is escaped with a
/// backslash, `&` and `<` included, so no entity, autolink or HTML comes from it. An
/// underscore between two letters or digits is left alone (it cannot start emphasis there),
/// so `expandable_segments` stays readable.
pub fn escape(text: &str) -> String {
    let chars: Vec<char> = one_line(text).collect();
    let mut out = String::with_capacity(text.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let special = match c {
            '_' => {
                let word = |c: Option<&char>| c.is_some_and(|c| c.is_alphanumeric());
                !(i > 0 && word(chars.get(i - 1)) && word(chars.get(i + 1)))
            }
            '\\' | '`' | '*' | '[' | ']' | '<' | '>' | '&' | '|' | '~' | '$' | '#' | '!' => true,
            _ => false,
        };
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The length of the longest run of backticks in `text`: a code span or block fenced with more
/// holds it whole.
pub fn longest_backtick_run(text: &str) -> usize {
    let (mut longest, mut run) = (0, 0);
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

/// `text` as a code span that may sit in a table cell: fenced with one backtick more than its
/// longest run of backticks (padded with a space when it starts or ends with a backtick or a
/// space, so the content stays exact), its pipes escaped (`\|`, which GitHub's tables read as
/// a pipe of the cell, even in code), on one line. Code spans show HTML as text.
pub fn code(text: &str) -> String {
    let text: String = one_line(text).collect();
    if text.is_empty() {
        return "*empty*".to_string();
    }
    let fence = "`".repeat(longest_backtick_run(&text) + 1);
    let pad = if text.starts_with(['`', ' ']) || text.ends_with(['`', ' ']) {
        " "
    } else {
        ""
    };
    let body = text.replace('|', "\\|");
    format!("{fence}{pad}{body}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> DocTable {
        DocTable {
            columns: vec![
                DocColumn::new("Name", Align::Left),
                DocColumn::new("Bytes", Align::Right),
            ],
            rows: vec![
                vec![
                    Cell::of(vec![Inline::Code("a|b`<c>".into())]),
                    Cell::text("1.50 KiB").with("bytes", 1536),
                ]
                .into(),
                DocRow {
                    cells: vec![
                        Cell::text("Total").strong(),
                        Cell::text("1.50 KiB").strong(),
                    ],
                    data: vec![("total", "1536".into())],
                },
            ],
        }
    }

    #[test]
    fn markdown_tables_align_and_keep_names_in_their_cells() {
        let mut doc = Document::default();
        doc.heading(2, "By <role>");
        doc.push(DocBlock::Chart(DocChart {
            key: "roles",
            title: "Bytes".into(),
            kind: ChartKind::Pie,
            slices: vec![],
            curves: Vec::new(),
        }));
        doc.push(DocBlock::Table(table()));
        doc.paragraph("The end.");
        assert_eq!(
            doc.markdown(),
            "## By \\<role\\>\n\n| Name | Bytes |\n|---|---:|\n| ``a\\|b`<c>`` | 1.50 KiB |\n\
             | **Total** | **1.50 KiB** |\n\nThe end.\n"
        );
    }

    #[test]
    fn html_escapes_every_text_and_carries_exact_values() {
        let mut doc = Document::default();
        doc.push(DocBlock::Section {
            data: vec![("device", "0".into())],
            blocks: vec![
                DocBlock::Heading(1, vec![Inline::text("<script>alert(1)</script> & \"x\"")]),
                DocBlock::Table(table()),
                DocBlock::List(vec![vec![
                    Inline::strong("Peak:"),
                    Inline::text(" "),
                    Inline::value("1.50 KiB", "bytes", 1536),
                ]]),
                DocBlock::Paragraph(vec![Inline::Link {
                    content: vec![Inline::text("rank <0>")],
                    markdown: "it's \"odd\".md".into(),
                    html: "javascript:alert(1)".into(),
                }]),
            ],
        });
        let html = doc.html(&|_| unreachable!("no chart"));
        assert!(!html.contains("<script"), "{html}");
        assert!(html.starts_with("<section data-device=\"0\">\n<h1>&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;x&quot;</h1>\n"), "{html}");
        assert!(
            html.contains("<th>Name</th><th class=\"num\">Bytes</th>"),
            "{html}"
        );
        assert!(html.contains("<td><code>a|b`&lt;c&gt;</code></td><td class=\"num\" data-bytes=\"1536\">1.50 KiB</td>"), "{html}");
        assert!(
            html.contains("<tr data-total=\"1536\"><td><strong>Total</strong></td>"),
            "{html}"
        );
        assert!(
            html.contains(
                "<li><strong>Peak:</strong> <span data-bytes=\"1536\">1.50 KiB</span></li>"
            ),
            "{html}"
        );
        assert!(
            html.contains("<a href=\"javascript%3Aalert%281%29\">rank &lt;0&gt;</a>"),
            "{html}"
        );
        assert!(html.ends_with("</section>\n"), "{html}");
        let md = doc.markdown();
        assert!(md.contains("[rank \\<0\\>](it%27s%20%22odd%22.md)"), "{md}");
    }

    #[test]
    fn charts_are_drawn_by_the_caller_and_described_in_words() {
        let mut doc = Document::default();
        doc.push(DocBlock::Chart(DocChart {
            key: "roles",
            title: "Bytes by role".into(),
            kind: ChartKind::Pie,
            slices: vec![
                ChartSlice {
                    key: "activations".into(),
                    label: "Activations <b>".into(),
                    bytes: 3 << 20,
                    colour: [1, 2, 3],
                },
                ChartSlice {
                    key: "unknown".into(),
                    label: "Unknown".into(),
                    bytes: 0,
                    colour: [4, 5, 6],
                },
            ],
            curves: Vec::new(),
        }));
        let html = doc.html(&|c| format!("<svg>{}</svg>\n", c.slices.len()));
        assert_eq!(
            html,
            "<figure class=\"chart pie\" data-chart=\"roles\" role=\"img\" \
             aria-label=\"Bytes by role: Activations &lt;b&gt; 3.00 MiB\">\n<svg>2</svg>\n</figure>\n"
        );
        assert_eq!(doc.markdown(), "");
    }

    #[test]
    fn the_policy_allows_exactly_the_style() {
        use base64::Engine;
        use sha2::Digest;
        let hash = sha2::Sha256::digest(STYLE.as_bytes());
        let hash = base64::engine::general_purpose::STANDARD.encode(hash);
        assert_eq!(
            STYLE_HASH,
            format!("'sha256-{hash}'"),
            "STYLE changed: update STYLE_HASH"
        );
    }

    #[test]
    fn a_page_stands_alone_and_runs_no_script() {
        let page = html_page("Memory report: <x>", "<p>hi</p>\n");
        assert!(page.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
        assert!(page.contains("<title>Memory report: &lt;x&gt;</title>"));
        assert!(page.contains("default-src 'none'; style-src 'sha256-"));
        assert!(!page.contains("<script"));
        assert!(!page.contains("http://") && !page.contains("https://"));
        assert!(page.contains("<main>\n<p>hi</p>\n</main>"));
    }

    #[test]
    fn escaped_text_is_never_markdown_syntax() {
        assert_eq!(escape("plain text 1.5"), "plain text 1.5");
        assert_eq!(
            escape("<img src=x onerror=alert(1)>"),
            "\\<img src=x onerror=alert(1)\\>"
        );
        assert_eq!(
            escape("[a](javascript:x) *b* `c`"),
            "\\[a\\](javascript:x) \\*b\\* \\`c\\`"
        );
        assert_eq!(
            escape("a|b\\c &amp; ~~d~~"),
            "a\\|b\\\\c \\&amp; \\~\\~d\\~\\~"
        );
        assert_eq!(escape("line\nbreak\r\tend"), "line break  end");
        // Underscores inside words stay; those that could open or close emphasis do not.
        assert_eq!(
            escape("expandable_segments:True"),
            "expandable_segments:True"
        );
        assert_eq!(
            escape("_private __dunder__"),
            "\\_private \\_\\_dunder\\_\\_"
        );
    }

    #[test]
    fn code_spans_hold_any_name_in_one_cell() {
        assert_eq!(code("model.py:3:forward"), "`model.py:3:forward`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("``x``"), "``` ``x`` ```");
        assert_eq!(code("a|b"), "`a\\|b`");
        assert_eq!(code("<b>\nx</b>"), "`<b> x</b>`");
        assert_eq!(code(""), "*empty*");
        let row = format!("| 1 | {} | end |", code("f|`g`|h\\|i"));
        // GitHub splits a row at pipes not escaped by a backslash.
        let mut cells = 0;
        let mut escaped = false;
        for c in row.chars() {
            cells += usize::from(c == '|' && !escaped);
            escaped = c == '\\';
        }
        assert_eq!(cells, 4, "{row}");
        assert!(row.ends_with("| end |"), "{row}");
    }
}
