//! The page for an address the router does not know.

use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn NotFoundPage() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(http::StatusCode::NOT_FOUND);
    }
    view! {
        <Title text="Not found"/>
        <h1>"Not found"</h1>
        <p>"There is no page at this address."</p>
    }
}
