//! The memory timeline of one device: tabs for allocations and segments, a toolbar (axis,
//! detail, search, jump to peak), the plot with its overlay and tooltip, the minimap and the
//! pinned allocation's details.
//!
//! The worker lays the timeline out and paints it; the page keeps the view state in signals
//! ([`Timeline`]), asks for frames when it changes and shows what comes back. What is asked
//! and when, and which answers count (one frame in flight, the latest view wins, a hover
//! waits behind the hit test in flight, an answer superseded by a newer request is dropped),
//! is the timeline's client's to decide: a state machine with no browser in it, fed events
//! and returning commands.
//!
//! Pure, compiled everywhere and unit-tested natively:
//! - [`client`]: the timeline's conversation with its worker (events in, commands out);
//! - [`gestures`]: what a drag, a wheel turn, a key or a press on the minimap asks of the
//!   view, and what the pointer is over;
//! - [`range`]: the visible ranges and how navigation moves them;
//! - [`labels`]: where the overlay's labels go, none overlapping;
//! - [`detail`]: the detail slider's scale;
//!
//! The plot's size and share of the window (`ui::plot_size`, `ui::plot_share`) are the
//! page's, not the timeline's: the page's actions size a file's first frame with them too.
//!
//! For the browser only:
//! - `view`: the view state in signals, the client's events fed in and its commands carried
//!   out, and navigation;
//! - `panel`: the component ([`TimelinePanel`]) and the effects that tie it to the page;
//! - `plot`: the canvas and its input (`canvas`: drawing on it; `overlay`: axes, peak, OOM and
//!   scope marks over the pixels);
//! - `minimap`, `toolbar`, `details`, `tooltip`, `help`, `legend` (the categories' colours
//!   and bytes at the hovered moment): one component each.

// Pure: compiled everywhere, unit-tested natively.
pub mod client;
pub mod detail;
pub mod gestures;
pub mod labels;
pub mod range;

// The browser's: the components, and the view state they share.
#[cfg(target_arch = "wasm32")]
mod canvas;
#[cfg(target_arch = "wasm32")]
mod details;
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
mod tooltip;
#[cfg(target_arch = "wasm32")]
mod view;

#[cfg(target_arch = "wasm32")]
pub use panel::TimelinePanel;
#[cfg(target_arch = "wasm32")]
pub use view::Timeline;
