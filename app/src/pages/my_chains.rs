//! Settings: a person's own order of each pack's connectors. Their clicks
//! try that order (after a fire's pick and a record's "always start
//! with"); everyone else keeps the workspace's.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use leptos::task::spawn_local;
use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use crate::access::ssr;
use crate::error_view::error_list;
use crate::pages::ordered_list::{ordered_list, ListChange};

/// One pack as the order editor shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PackOrder {
    pub pack_id: String,
    pub display_name: String,
    pub short_label: String,
    /// The pack's own chain, as the workspace has it.
    pub workspace: Vec<String>,
    /// The person's own order; empty when they have none.
    pub mine: Vec<String>,
    /// The connectors serving the pack's intent: (id, display name).
    pub serving: Vec<(String, String)>,
}

/// Every pack of the caller's workspace that some connector serves, with
/// the caller's own order.
#[server]
pub async fn load_my_chains() -> Result<Vec<PackOrder>, ServerFnError> {
    let (engine, who) = (ssr::engine()?, ssr::caller()?);
    let catalog = engine.catalog_of(&who).await.map_err(ssr::fail)?;
    let connectors = engine.connectors(&who).await.map_err(ssr::fail)?;
    let mut mine = engine.my_chains(&who).await.map_err(ssr::fail)?;
    let mut packs = catalog.packs().to_vec();
    engine.relabel(&who, &mut packs).await.map_err(ssr::fail)?;
    Ok(packs
        .into_iter()
        .filter_map(|pack| {
            let serving: Vec<(String, String)> = connectors
                .iter()
                .filter(|c| c.profile.capabilities.contains(&pack.intent))
                .map(|c| (c.profile.id.clone(), c.profile.display_name.clone()))
                .collect();
            let own = mine
                .iter()
                .position(|c| c.pack_id == pack.pack_id)
                .map(|i| mine.swap_remove(i).connectors)
                .unwrap_or_default();
            (!serving.is_empty()).then_some(PackOrder {
                workspace: pack.preferred_connectors,
                pack_id: pack.pack_id,
                display_name: pack.display_name,
                short_label: pack.short_label,
                mine: own,
                serving,
            })
        })
        .collect())
}

/// Saves the caller's own order for a pack (empty: the workspace's again).
#[server(input = Json)]
pub async fn save_my_chain(
    pack_id: String,
    connectors: Vec<String>,
) -> Result<Vec<String>, ServerFnError> {
    let (engine, who) = (ssr::engine()?, ssr::caller()?);
    engine
        .set_my_chain(&who, &pack_id, &connectors)
        .await
        .map(|chain| chain.connectors)
        .map_err(ssr::fail)
}

#[component]
pub fn MyChains() -> impl IntoView {
    let packs = crate::wire::resource(|| (), |_| load_my_chains());
    view! {
        <h1>"Your connector order"</h1>
        <p class="muted">
            "Which connectors your clicks try for a pack, in order. A pick in the menu and a record's "
            "“always start with” still come first; everyone else, fan-outs and refreshes keep the workspace's order."
        </p>
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            <ErrorBoundary fallback=error_list>
                {move || Suspend::new(async move {
                    packs.await.map(|list| {
                        list.into_iter()
                            .map(|pack| view! { <PackOrderRow pack/> })
                            .collect_view()
                    })
                })}
            </ErrorBoundary>
        </Transition>
    }
}

/// One pack: the workspace's order, or the person's being edited.
#[component]
fn PackOrderRow(pack: PackOrder) -> impl IntoView {
    let PackOrder {
        pack_id,
        display_name,
        short_label,
        workspace,
        mine,
        serving,
    } = pack;
    let label = format!("{display_name} ({short_label})");
    let names: std::collections::HashMap<String, String> = serving.iter().cloned().collect();
    let name_of = move |id: &str| names.get(id).cloned().unwrap_or_else(|| id.to_owned());
    let workspace_words = if workspace.is_empty() {
        "every connector serving it, cheapest first".to_owned()
    } else {
        workspace
            .iter()
            .map(|id| name_of(id))
            .collect::<Vec<_>>()
            .join(" → ")
    };
    let saved = RwSignal::new(mine.clone());
    let draft = RwSignal::new(mine);
    let editing = RwSignal::new(!saved.get_untracked().is_empty());
    let message = RwSignal::new(None::<Result<String, String>>);
    let save = {
        let pack_id = pack_id.clone();
        move |chain: Vec<String>| {
            let pack_id = pack_id.clone();
            spawn_local(async move {
                match save_my_chain(pack_id, chain).await {
                    Ok(chain) => {
                        let words = if chain.is_empty() {
                            "Back to the workspace's order.".to_owned()
                        } else {
                            "Saved: your clicks try this order.".to_owned()
                        };
                        editing.set(!chain.is_empty());
                        saved.set(chain.clone());
                        draft.set(chain);
                        message.set(Some(Ok(words)));
                    }
                    Err(e) => message.set(Some(Err(e.to_string()))),
                }
            });
        }
    };
    let start = {
        // Started from the workspace's, less what does not serve the pack
        // (a chain may name a connector since removed).
        let from: Vec<String> = workspace
            .iter()
            .filter(|id| serving.iter().any(|(s, _)| s == *id))
            .cloned()
            .collect();
        move |_| {
            draft.set(from.clone());
            editing.set(true);
        }
    };
    let edit = move |change: ListChange| draft.update(|d| change(d));
    let list_name = format!("order of {label}");
    let choices = Signal::derive(move || serving.clone());
    let (save_draft, clear) = (save.clone(), save);
    view! {
        <div class="my-chain" data-pack=pack_id.clone() data-yours=move || (!saved.get().is_empty()).to_string()>
            <strong>{label.clone()}</strong>
            {move || if editing.get() {
                let save_draft = save_draft.clone();
                let clear = clear.clone();
                view! {
                    {ordered_list(list_name.clone(), draft.into(), name_of.clone(), choices, edit)}
                    <button type="button" on:click=move |_| save_draft(draft.get_untracked())>{format!("Save your order for {label}")}</button>
                    <button type="button" on:click=move |_| clear(Vec::new())>{format!("Use the workspace's order for {label}")}</button>
                }
                .into_any()
            } else {
                view! {
                    <span class="muted">{format!("the workspace's: {workspace_words}")}</span>
                    <button type="button" on:click=start.clone()>{format!("Set your own order for {label}")}</button>
                }
                .into_any()
            }}
            {move || message.get().map(|m| match m {
                Ok(text) => view! { <p class="notice" role="status">{text}</p> }.into_any(),
                Err(text) => view! { <p class="error" role="alert">{text}</p> }.into_any(),
            })}
        </div>
    }
}
