//! The memory timeline of one device: tabs for allocations and segments, a toolbar (axis,
//! detail, search, jump to peak), the plot with its overlay and tooltip, the minimap and the
//! pinned allocation's details.
//!
//! The worker lays the timeline out and paints it; this module only keeps the view state in
//! signals ([`Timeline`]), asks for frames when it changes (one in flight at a time, the
//! latest view wins) and shows what comes back. Every request is asked with
//! [`Timeline::ask`], whose answer comes back to the handler given with it; each kind of
//! request remembers its latest id ([`Latest`]), so an answer superseded by a newer request
//! is dropped.
//! - [`range`]: navigation arithmetic (pure, natively tested);
//! - `plot`: the canvas, its pointer, wheel and keyboard handling (`canvas`: drawing on it);
//! - `overlay`: axes, peak, OOM and phase marks drawn over the pixels;
//! - [`labels`]: where the overlay's labels go, none overlapping (pure, natively tested);
//! - [`detail`]: the detail slider's scale (pure, natively tested);
//! - [`plot_size`]: the plot's size, and the width expected before the page lays it out
//!   (pure, natively tested);
//! - `minimap`, `toolbar`, `details`, `tooltip`, `help`, `legend` (the categories' colours
//!   and bytes at the hovered moment): one component each.

// Pure: compiled everywhere, unit-tested natively.
pub mod detail;
pub mod folding;
pub mod labels;
pub mod plot_size;
pub mod range;

// The browser's: the components, and the view state they share.
#[cfg(target_arch = "wasm32")]
mod canvas;
#[cfg(target_arch = "wasm32")]
pub mod details;
#[cfg(target_arch = "wasm32")]
mod help;
#[cfg(target_arch = "wasm32")]
mod legend;
#[cfg(target_arch = "wasm32")]
mod minimap;
#[cfg(target_arch = "wasm32")]
mod overlay;
#[cfg(target_arch = "wasm32")]
mod panel;
#[cfg(target_arch = "wasm32")]
mod plot;
#[cfg(target_arch = "wasm32")]
mod toolbar;
#[cfg(target_arch = "wasm32")]
pub mod tooltip;

#[cfg(target_arch = "wasm32")]
pub use panel::{store_plot_share, stored_plot_share, Timeline, TimelinePanel, DEFAULT_PLOT_SHARE};
