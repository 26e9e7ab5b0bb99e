//! Drawing on the timeline's canvases: their 2D context, and putting a frame's pixels (painted
//! by the worker) on the plot.

use wasm_bindgen::{JsCast, JsValue};
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, ImageData};

use crate::timeline::service::FrameInfo;

/// Puts a frame's RGBA pixels on the plot canvas.
pub fn put_pixels(canvas: &HtmlCanvasElement, frame: &FrameInfo, pixels: &JsValue) {
    let (width, height) = (frame.view.width, frame.view.height);
    if canvas.width() != width {
        canvas.set_width(width);
    }
    if canvas.height() != height {
        canvas.set_height(height);
    }
    let Some(ctx) = context(canvas) else { return };
    let Ok(data) =
        ImageData::new_with_js_u8_clamped_array_and_sh(pixels.unchecked_ref(), width, height)
    else {
        return;
    };
    let _ = ctx.put_image_data(&data, 0.0, 0.0);
}

/// The canvas' 2D context.
pub fn context(canvas: &HtmlCanvasElement) -> Option<CanvasRenderingContext2d> {
    canvas
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into().ok())
}
