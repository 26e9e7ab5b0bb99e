//! One chart on a card: its title, a canvas sized to the card (backing store × the device
//! pixel ratio), drawn once it comes near the screen and then whenever what its drawing reads
//! changes, a legend of exact values
//! (`data-category` + `data-value`) with hover tooltips from the chart's own geometry, and a
//! button that downloads it as PNG.

use leptos::html::Canvas;
use leptos::prelude::*;
use web_sys::HtmlCanvasElement;

use crate::ui::charts::{self, Theme};
use crate::ui::near_screen::near_screen;

/// CSS size of a chart.
pub const CHART_SIZE: (f64, f64) = (440.0, 260.0);
/// CSS size of a wide chart (two columns of the grid).
pub const WIDE_CHART_SIZE: (f64, f64) = (CHART_SIZE.0 * 2.0, CHART_SIZE.1);

/// Draws a chart: told the canvas and the theme, reads whatever signals it needs.
pub type Draw = std::rc::Rc<dyn Fn(&HtmlCanvasElement, &Theme) -> Result<(), String>>;

/// Names a part of the chart under a CSS pixel, for the tooltip.
pub type Hover = std::rc::Rc<dyn Fn(f64, f64) -> Option<String>>;

/// Acts on a click at a CSS pixel of the chart.
pub type Click = std::rc::Rc<dyn Fn(f64, f64)>;

/// `performance.now()`, for the time a drawing takes.
fn now() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

#[component]
pub fn ChartCard(
    id: &'static str,
    title: &'static str,
    dark: Signal<bool>,
    draw: Draw,
    #[prop(optional)] hover: Option<Hover>,
    #[prop(optional)] click: Option<Click>,
    #[prop(optional)] wide: bool,
    children: Children,
) -> impl IntoView {
    let canvas = NodeRef::<Canvas>::new();
    let error = RwSignal::new(None::<String>);
    let tooltip = RwSignal::new(None::<(String, f64, f64)>);
    let draws = RwSignal::new(0u32);
    let draw_ms = RwSignal::new(0.0f64);
    let (w, h) = if wide { WIDE_CHART_SIZE } else { CHART_SIZE };
    let near = near_screen(canvas);
    let paint = std::rc::Rc::new(move |canvas: &HtmlCanvasElement, dark: bool| {
        let dpr = web_sys::window().map_or(1.0, |w| w.device_pixel_ratio());
        // Resizing clears the canvas and invalidates the page's layout: only when it changes.
        let (width, height) = ((w * dpr).round() as u32, (h * dpr).round() as u32);
        if canvas.width() != width {
            canvas.set_width(width);
        }
        if canvas.height() != height {
            canvas.set_height(height);
        }
        let theme = if dark { Theme::dark() } else { Theme::light() };
        let start = now();
        error.set(draw(canvas, &theme).err());
        draw_ms.set(now() - start);
        draws.update(|n| *n += 1);
    });
    let paint_now = paint.clone();
    Effect::new(move |_| {
        let Some(canvas) = canvas.get() else { return };
        // Drawn once it comes near the screen, then whenever what it reads changes.
        if near.get() {
            paint_now(&canvas, dark.get());
        }
    });
    let download = move |_| {
        let Some(canvas) = canvas.get_untracked() else {
            return;
        };
        if draws.get_untracked() == 0 {
            paint(&canvas, dark.get_untracked());
        }
        match charts::png_data_url(&canvas) {
            Ok(url) => super::download::download(&format!("memsight-{id}.png"), &url),
            Err(e) => error.set(Some(e)),
        }
    };
    let on_move = move |event: web_sys::MouseEvent| {
        let Some(hover) = &hover else { return };
        let (x, y) = (event.offset_x() as f64, event.offset_y() as f64);
        tooltip.set(hover(x, y).map(|text| (text, x, y)));
    };
    let clickable = click.is_some();
    let on_click = move |event: web_sys::MouseEvent| {
        if let Some(click) = &click {
            click(event.offset_x() as f64, event.offset_y() as f64);
        }
    };
    view! {
        <section class="chart-card" class:wide=wide id=id data-draws=move || draws.get().to_string()
            data-draw-ms=move || draw_ms.get().to_string() data-near=move || near.get().to_string()>
            <header class="chart-header">
                <h3>{title}</h3>
                <button type="button" class="button quiet chart-png" title="Download this chart as PNG" on:click=download>
                    "PNG"
                </button>
            </header>
            <div class="chart-canvas">
                <canvas
                    node_ref=canvas
                    style:width=format!("{w}px")
                    style:height=format!("{h}px")
                    class:clickable=clickable
                    on:mousemove=on_move
                    on:click=on_click
                    on:mouseleave=move |_| tooltip.set(None)
                ></canvas>
                {move || tooltip.get().map(|(text, x, y)| view! {
                    <div class="chart-tooltip" role="tooltip" style:left=format!("{}px", x + 12.0) style:top=format!("{}px", y + 12.0)>{text}</div>
                })}
            </div>
            {move || error.get().map(|e| view! { <p class="view-error" role="alert">{e}</p> })}
            {children()}
        </section>
    }
}
