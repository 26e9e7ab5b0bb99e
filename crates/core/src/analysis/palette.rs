//! The colours every view paints with, page and reports alike: the timeline's scheme
//! ([`Style`], light and dark), each role's and component's colour (the legends', the charts'
//! and the reports'), the palette of allocations, and a highlighted category. Not the place for
//! choosing what a colour stands for (the views) or for painting (`timeline::raster`).

use super::categories::Dimension;

/// Colours, as RGBA.
#[derive(Clone, Debug, PartialEq)]
pub struct Style {
    pub background: [u8; 4],
    /// The band of elements not drawn individually.
    pub small: [u8; 4],
    /// The line drawn over the stack (reserved bytes on the allocations timeline).
    pub line: [u8; 4],
    pub pinned: [u8; 4],
    pub matched: [u8; 4],
    pub palette: Vec<[u8; 4]>,
    /// Colours of the roles and of the components, indexed like `Role::ALL` and
    /// `Component::ALL` (the legends' colours too).
    pub roles: [[u8; 4]; 13],
    pub components: [[u8; 4]; 8],
    /// Thickness of the line, in pixels.
    pub line_width: u32,
}

impl Style {
    pub fn light() -> Self {
        Style {
            background: [255, 255, 255, 255],
            small: [170, 176, 186, 255],
            line: [30, 30, 30, 255],
            pinned: [220, 20, 60, 255],
            matched: [250, 204, 21, 255],
            palette: PALETTE.to_vec(),
            roles: ROLE_COLOURS,
            components: COMPONENT_COLOURS,
            line_width: 2,
        }
    }

    pub fn dark() -> Self {
        Style {
            background: [24, 26, 31, 255],
            small: [90, 96, 108, 255],
            line: [235, 235, 235, 255],
            ..Style::light()
        }
    }
}

/// The colours of a dimension's categories in `style`.
pub fn category_colours(style: &Style, dimension: Dimension) -> &[[u8; 4]] {
    match dimension {
        Dimension::Role => &style.roles,
        Dimension::Component => &style.components,
    }
}

/// `colours` with every category but `highlight` (when there is one) faded three quarters of
/// the way to `background`.
pub fn highlighted(
    colours: &[[u8; 4]],
    highlight: Option<u32>,
    background: [u8; 4],
) -> Vec<[u8; 4]> {
    let fade = |c: [u8; 4]| {
        let mix = |i: usize| ((c[i] as u16 + 3 * background[i] as u16) / 4) as u8;
        [mix(0), mix(1), mix(2), 255]
    };
    colours
        .iter()
        .enumerate()
        .map(|(k, &c)| match highlight {
            Some(h) if h as usize != k => fade(c),
            _ => c,
        })
        .collect()
}

/// Roles: what lives long in saturated colours (parameters blue, gradients orange, optimizer
/// state purple, activations green), each phase's temporaries in a light tint of its phase's
/// colour, unknown in a warm grey distinct from the small band's.
const ROLE_COLOURS: [[u8; 4]; 13] = [
    [0x4e, 0x79, 0xa7, 255],
    [0xf2, 0x8e, 0x2c, 255],
    [0x8e, 0x5e, 0xa2, 255],
    [0x59, 0xa1, 0x4f, 255],
    [0xa8, 0xd8, 0x9a, 255],
    [0xff, 0xc6, 0x8a, 255],
    [0xd4, 0xa6, 0xc8, 255],
    [0x76, 0xb7, 0xb2, 255],
    [0xe1, 0x57, 0x59, 255],
    [0xb6, 0x99, 0x2d, 255],
    // KV cache: a deep teal apart from the inputs' light one; CUDA graphs: slate.
    [0x1b, 0x7f, 0x8c, 255],
    [0x6b, 0x6e, 0x9e, 255],
    [0xc9, 0xb8, 0xa8, 255],
];

/// Components, from Tableau 10; "other" in a warm grey.
const COMPONENT_COLOURS: [[u8; 4]; 8] = [
    [0x4e, 0x79, 0xa7, 255],
    [0xf2, 0x8e, 0x2c, 255],
    [0xaf, 0x7a, 0xa1, 255],
    [0x59, 0xa1, 0x4f, 255],
    [0xed, 0xc9, 0x49, 255],
    [0xe1, 0x57, 0x59, 255],
    [0x76, 0xb7, 0xb2, 255],
    [0xc9, 0xb8, 0xa8, 255],
];

/// Tableau 10, the palette memory_viz uses, minus its grey (which is the small band's).
const PALETTE: [[u8; 4]; 9] = [
    [0x4e, 0x79, 0xa7, 255],
    [0xf2, 0x8e, 0x2c, 255],
    [0xe1, 0x57, 0x59, 255],
    [0x76, 0xb7, 0xb2, 255],
    [0x59, 0xa1, 0x4f, 255],
    [0xed, 0xc9, 0x49, 255],
    [0xaf, 0x7a, 0xa1, 255],
    [0xff, 0x9d, 0xa7, 255],
    [0x9c, 0x75, 0x5f, 255],
];
