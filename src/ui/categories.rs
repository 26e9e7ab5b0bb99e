//! How the page shows categories: each one's key, label and colour in the page's theme, and
//! the colours with all but the highlighted one faded, as the timeline paints them. Names and
//! colours come from the core (`format::breakdown`, the painter's `Style`), so the legend, the
//! charts and the timeline agree. Not the place for what a file's views share (that is
//! `file_context`) or for drawing.

use crate::analysis::categories::{Category, Component, Dimension, Role};
use crate::analysis::palette::Style;
use crate::format;

/// The categories of `dimension`: key, label and colour (as RGB) in the page's theme.
pub fn categories_of(
    dimension: Dimension,
    dark: bool,
) -> Vec<(&'static str, &'static str, [u8; 3])> {
    let style = if dark { Style::dark() } else { Style::light() };
    let rgb = |c: [u8; 4]| [c[0], c[1], c[2]];
    match dimension {
        Dimension::Role => Role::ALL
            .iter()
            .map(|&r| {
                (
                    r.key(),
                    format::breakdown::role_label(r),
                    rgb(style.roles[r as usize]),
                )
            })
            .collect(),
        Dimension::Component => Component::ALL
            .iter()
            .map(|&c| {
                (
                    c.key(),
                    format::breakdown::component_label(c),
                    rgb(style.components[c as usize]),
                )
            })
            .collect(),
    }
}

/// The colours of `dimension`'s categories with all but the highlighted one (when it is of
/// this dimension) faded towards the background, as the timeline paints them.
pub fn highlighted_colours(
    dimension: Dimension,
    dark: bool,
    highlight: Option<Category>,
) -> Vec<[u8; 3]> {
    let style = if dark { Style::dark() } else { Style::light() };
    let colours = crate::analysis::palette::category_colours(&style, dimension);
    let highlight = highlight
        .filter(|c| c.dimension == dimension)
        .map(|c| c.index);
    crate::analysis::palette::highlighted(colours, highlight, style.background)
        .into_iter()
        .map(|c| [c[0], c[1], c[2]])
        .collect()
}

/// A colour as CSS.
pub fn css(colour: [u8; 3]) -> String {
    format!("rgb({}, {}, {})", colour[0], colour[1], colour[2])
}
