//! A chart drawn into an SVG string (feature `svg`), so a report can carry its charts inline:
//! no image files, no scripts, text that stays text.
//!
//! plotters' SVG backend escapes every text and attribute it writes, so a label from a file
//! cannot become markup. It writes each font size as `size / 1.24`; the chart tells it 1.24 ×
//! more, so SVG text is as large as the page's canvas text. Not for choosing what to draw.

use plotters::prelude::SVGBackend;

use crate::draw::Chart;
use crate::Theme;

/// Draws with `paint` on a `width` × `height` pixel SVG (one pixel per CSS pixel) in `theme`,
/// and answers the `<svg>` element. Its `viewBox` lets a stylesheet scale it down.
pub fn svg(
    width: u32,
    height: u32,
    theme: &Theme,
    paint: impl FnOnce(&Chart<SVGBackend<'_>>) -> Result<(), String>,
) -> Result<String, String> {
    let mut out = String::new();
    {
        let backend = SVGBackend::with_string(&mut out, (width, height));
        if let Some(chart) = Chart::new(backend, 1.0, theme)? {
            let chart = chart.with_font_scale(1.24);
            paint(&chart)?;
            chart.present()?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{pie, Slice};

    fn slice(key: &str, label: &str, value: u64) -> Slice {
        Slice {
            key: key.into(),
            label: label.into(),
            value,
            colour: [0x63, 0x66, 0xf1],
        }
    }

    #[test]
    fn a_pie_is_one_svg_with_its_labels_escaped() {
        let slices = [
            slice("a", "<script>alert(1)</script>", 3 << 20),
            slice("b", "\"C\" & D", 1 << 20),
        ];
        let fmt = |n: u64| format!("{} MiB", n >> 20);
        let out = svg(440, 260, &Theme::light(), |c| {
            pie(c, &slices, "Bytes by role", &fmt)
        })
        .unwrap();
        assert!(out.starts_with("<svg width=\"440\" height=\"260\" viewBox=\"0 0 440 260\""));
        assert_eq!(out.matches("<svg").count(), 1, "{out}");
        assert!(out.trim_end().ends_with("</svg>"), "{out}");
        assert!(!out.contains("<script"), "{out}");
        // A long label is cut short to fit its legend row, and what is left is escaped.
        assert!(out.contains(">\n&lt;script&gt;al"), "{out}");
        assert!(out.contains(">\n&quot;C&quot; &amp; D\n<"), "{out}");
        assert!(out.contains(">\n3 MiB · 75%\n<"), "{out}");
        assert!(out.contains(">\nBytes by role\n</text>"), "{out}");
        // Shares inside the slices and in the legend: 75% and 25%.
        assert!(out.contains("75%"), "{out}");
        assert!(out.contains("25%"), "{out}");
        // The page's 12 px labels, told 1.24 × more so the SVG writes 12.
        assert!(out.contains("font-size=\"12\""), "{out}");
        assert!(out.contains("font-size=\"14\""), "{out}");
        // The background is painted, opaque, in the theme's colour.
        assert!(out.contains("fill=\"#FFFFFF\""), "{out}");
    }

    #[test]
    fn an_empty_chart_says_so_and_a_chart_without_pixels_is_empty() {
        let fmt = |n: u64| n.to_string();
        let out = svg(300, 200, &Theme::light(), |c| pie(c, &[], "Nothing", &fmt)).unwrap();
        assert!(out.contains("nothing to show"), "{out}");
        let none = svg(0, 200, &Theme::light(), |c| pie(c, &[], "Nothing", &fmt)).unwrap();
        assert!(!none.contains("<text"), "{none}");
    }

    /// Background-coloured rectangles of a drawing (the cleared page is one).
    fn background_rects(out: &str) -> usize {
        out.split("<rect")
            .skip(1)
            .filter(|r| r.split('>').next().unwrap_or("").contains("#FFFFFF"))
            .count()
    }

    #[test]
    fn segments_part_their_blocks_with_edges_and_thin_them_where_blocks_crowd() {
        use crate::geometry::{Piece, PieceKind};
        let block = |offset: u64, size: u64, kind| Piece {
            offset,
            size,
            requested: size,
            kind,
        };
        // Three allocated blocks side by side: two edges, at 1/4 and 1/2.
        let three = vec![
            block(0, 1 << 20, PieceKind::Allocated),
            block(1 << 20, 1 << 20, PieceKind::Allocated),
            block(2 << 20, 2 << 20, PieceKind::Allocated),
        ];
        let draw = |pieces: Vec<Piece>| {
            let size = pieces.iter().map(|p| p.size).sum::<u64>();
            svg(800, 200, &Theme::light(), |c| {
                crate::segments(c, "Segments", &[size], size, &[pieces], &["a".into()])
            })
            .unwrap()
        };
        let cleared = background_rects(&draw(vec![block(0, 4 << 20, PieceKind::Allocated)]));
        assert_eq!(background_rects(&draw(three)) - cleared, 2);
        // 4,096 blocks on a bar some 570 pixels wide: an edge every 3 pixels at most.
        let many = (0..4096)
            .map(|i| block(i << 10, 1 << 10, PieceKind::Allocated))
            .collect();
        let edges = background_rects(&draw(many)) - cleared;
        assert!((100..=200).contains(&edges), "{edges} edges");
    }
}
