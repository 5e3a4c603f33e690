//! The browser entry point: hydrates the page the server rendered. Lazily,
//! because some pages' views are chunks of their own (`app::pages::lazy`)
//! that must be fetched before their part of the page can hydrate. When all
//! of it has, `<body data-hydrated="true">` says so (people's tools and the
//! browser tests read it): before that, a lazy page's buttons do nothing.

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    use leptos::prelude::document;

    console_error_panic_hook::set_once();
    // What leptos::mount::hydrate_lazy does (its hydrate_from_async starts
    // Leptos's executor), and then the mark.
    wasm_bindgen_futures::spawn_local(async {
        let Some(body) = document().body() else {
            return;
        };
        let owner = leptos::mount::hydrate_from_async(body.clone(), app::App).await;
        owner.forget();
        let _ = body.set_attribute("data-hydrated", "true");
    });
}
