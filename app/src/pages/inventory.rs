//! The connector inventory: every registered connector, what it serves, what
//! it costs, and whether it can fire now (and if not, why).

use leptos::prelude::*;
use leptos_meta::Title;
use model::ConnectorInfo;

use crate::error_view::error_list;

#[server]
pub async fn list_connectors() -> Result<Vec<ConnectorInfo>, ServerFnError> {
    let (engine, who) = (crate::access::ssr::engine()?, crate::access::ssr::caller()?);
    engine
        .connectors_in(who.workspace_id)
        .await
        .map_err(crate::access::ssr::fail)
}

#[component]
pub fn InventoryPage() -> impl IntoView {
    let connectors = Resource::new(|| (), |_| list_connectors());
    view! {
        <Title text="Inventory"/>
        <h1>"Inventory"</h1>
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            <ErrorBoundary fallback=error_list>
                {move || Suspend::new(async move {
                    connectors.await.map(|list| {
                        if list.is_empty() {
                            return view! { <p class="empty">"No connectors are registered."</p> }.into_any();
                        }
                        view! {
                            <table class="inventory">
                                <thead><tr><th>"Connector"</th><th>"Serves"</th><th>"Cost"</th><th>"Status"</th></tr></thead>
                                <tbody>
                                    {list.into_iter().map(|c| view! {
                                        <tr data-connector=c.id.clone() data-status=c.status.kind()>
                                            <td><strong>{c.display_name.clone()}</strong><div class="muted">{c.id.clone()}" · "{c.short_label.clone()}</div></td>
                                            <td class="caps">{c.capabilities.iter().map(|cap| cap.name().to_owned()).collect::<Vec<_>>().join(", ")}</td>
                                            <td><span class=format!("tier tier-{}", c.cost_tier.name())>{c.cost_tier.name()}</span></td>
                                            <td class=format!("status status-{}", c.status.kind())>{c.status_reason.clone().unwrap_or_else(|| "available".to_owned())}</td>
                                        </tr>
                                    }).collect_view()}
                                </tbody>
                            </table>
                        }.into_any()
                    })
                })}
            </ErrorBoundary>
        </Transition>
    }
}
