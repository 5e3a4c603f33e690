//! The browser entry point: hydrates the page the server rendered. Lazily,
//! because some pages' views are chunks of their own (`app::pages::lazy`)
//! that must be fetched before their part of the page can hydrate.

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_lazy(app::App);
}
