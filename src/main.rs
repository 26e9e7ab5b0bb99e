//! memsight's page, built for the browser by Trunk (`index.html`) with the `page` feature:
//! starts the library's page ([`memsight_web::ui::start`]). Natively `main` is an empty stub;
//! the page's pure modules are tested in the library.

#[cfg(target_arch = "wasm32")]
fn main() {
    memsight_web::ui::start();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {}
