//! The connector inventory: every registered connector and its status.

use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn InventoryPage() -> impl IntoView {
    view! {
        <Title text="Inventory"/>
        <h1>"Inventory"</h1>
        <p class="empty">"No connectors are registered yet."</p>
    }
}
