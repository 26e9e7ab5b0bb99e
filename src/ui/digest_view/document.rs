//! A report built by the core as a [`Document`] (headings, paragraphs, lists, tables), shown
//! as the page's own elements: every text a text node, exact values in `data-*` attributes,
//! as the HTML report carries them. What the command line prints as Markdown, the page shows
//! with the same words and numbers.
//!
//! Charts are left out (each sits beside a table of the same numbers). Not the place for
//! choosing words or numbers (`format::report`).

use leptos::attr::custom::custom_attribute;
use leptos::prelude::*;
use leptos::tachys::html::attribute::any_attribute::{AnyAttribute, IntoAnyAttribute};
use leptos::tachys::view::add_attr::AddAnyAttr;

use crate::format::document::{Align, Cell, Data, DocBlock, DocTable, Document, Inline};

/// `data-NAME="value"` for each exact value.
fn data_attributes(data: &Data) -> Vec<AnyAttribute> {
    data.iter()
        .map(|(name, value)| {
            custom_attribute(format!("data-{name}"), value.clone()).into_any_attr()
        })
        .collect()
}

fn inline(span: &Inline) -> AnyView {
    match span {
        Inline::Text(text) => text.clone().into_any(),
        Inline::Literal(text) => (*text).into_any(),
        Inline::Strong(content) => view! { <strong>{inlines(content)}</strong> }.into_any(),
        Inline::Emphasis(content) => view! { <em>{inlines(content)}</em> }.into_any(),
        Inline::Code(text) => view! { <code>{text.clone()}</code> }.into_any(),
        Inline::Value { text, data } => view! { <span>{text.clone()}</span> }
            .add_any_attr(data_attributes(data))
            .into_any(),
        // Links point at files written beside a report: on the page there are none, so the
        // words stay.
        Inline::Link { content, .. } => inlines(content).into_any(),
    }
}

fn inlines(content: &[Inline]) -> Vec<AnyView> {
    content.iter().map(inline).collect()
}

fn cell(cell: &Cell, align: Align, header: bool) -> AnyView {
    let class = match align {
        Align::Left => "",
        Align::Right => "num",
    };
    let content = inlines(&cell.content);
    if header {
        view! { <th class=class>{content}</th> }.into_any()
    } else {
        view! { <td class=class>{content}</td> }
            .add_any_attr(data_attributes(&cell.data))
            .into_any()
    }
}

fn table(table: &DocTable) -> AnyView {
    let head: Vec<AnyView> = table
        .columns
        .iter()
        .map(|c| {
            cell(
                &Cell {
                    content: c.title.clone(),
                    data: Vec::new(),
                },
                c.align,
                true,
            )
        })
        .collect();
    let rows: Vec<AnyView> = table
        .rows
        .iter()
        .map(|row| {
            let cells: Vec<AnyView> = row
                .cells
                .iter()
                .zip(&table.columns)
                .map(|(c, column)| cell(c, column.align, false))
                .collect();
            view! { <tr>{cells}</tr> }
                .add_any_attr(data_attributes(&row.data))
                .into_any()
        })
        .collect();
    view! {
        <table class="doc-table">
            <thead><tr>{head}</tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
    .into_any()
}

fn block(block: &DocBlock) -> AnyView {
    match block {
        DocBlock::Heading(level, content) => {
            let content = inlines(content);
            match level {
                1 => view! { <h2>{content}</h2> }.into_any(),
                2 => view! { <h3>{content}</h3> }.into_any(),
                _ => view! { <h4>{content}</h4> }.into_any(),
            }
        }
        DocBlock::Paragraph(content) => view! { <p>{inlines(content)}</p> }.into_any(),
        DocBlock::List(items) => {
            let items: Vec<AnyView> = items
                .iter()
                .map(|item| view! { <li>{inlines(item)}</li> }.into_any())
                .collect();
            view! { <ul>{items}</ul> }.into_any()
        }
        DocBlock::Table(t) => table(t),
        DocBlock::Chart(_) => ().into_any(),
        DocBlock::Rule => view! { <hr /> }.into_any(),
        DocBlock::Section { data, blocks } => view! { <section>{blocks_of(blocks)}</section> }
            .add_any_attr(data_attributes(data))
            .into_any(),
    }
}

fn blocks_of(blocks: &[DocBlock]) -> Vec<AnyView> {
    blocks.iter().map(block).collect()
}

/// The document's blocks, in order (a report's level-1 heading becomes the page's `h2`: the
/// page's title is its own).
#[component]
pub fn DocumentView(document: Document) -> impl IntoView {
    view! { <div class="document">{blocks_of(&document.blocks)}</div> }
}
