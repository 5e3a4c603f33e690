//! The packs page: the workspace's chips (packs) and their rosters
//! (bundles), shipped or its own. Admins create a pack for any capability
//! (a new dotted one included), give it a short label no other pack has,
//! order its connector chain, and put it in a bundle (which may set its own
//! chain for a chip): every open view of a record set under that bundle
//! gets the chip at once.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use leptos_meta::Title;
use model::{BundleConfig, EventKind, PackConfig, WorkspaceCatalog};
use serde::{Deserialize, Serialize};

use crate::error_view::{error_list, notice_line, Notice};
use crate::pages::ViewerResource;

mod editors;
use editors::{
    origin, remove_button, BundleDraft, BundleEditor, PackDraft, PackEditor, RemoveCall,
};

/// A connector as the chain editor offers it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConnectorChoice {
    pub id: String,
    pub display_name: String,
    pub capabilities: Vec<String>,
}

/// The workspace's catalogue and the connectors a chain may name.
#[server]
pub async fn load_catalog() -> Result<(WorkspaceCatalog, Vec<ConnectorChoice>), ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::caller()?);
    let catalog = engine.workspace_catalog(&who).await.map_err(ssr::fail)?;
    let connectors = engine
        .connectors(&who)
        .await
        .map_err(ssr::fail)?
        .into_iter()
        .map(|c| ConnectorChoice {
            capabilities: c
                .profile
                .capabilities
                .iter()
                .map(|c| c.name().to_owned())
                .collect(),
            id: c.profile.id,
            display_name: c.profile.display_name,
        })
        .collect();
    Ok((catalog, connectors))
}

/// Saves a pack for the workspace (admins).
#[server(input = Json)]
pub async fn save_pack(pack: PackConfig) -> Result<PackConfig, ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    engine.save_pack(&who, pack).await.map_err(ssr::fail)
}

/// Removes the workspace's own pack or its version of a shipped one (admins).
#[server]
pub async fn remove_pack(id: String) -> Result<(), ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    engine.remove_pack(&who, &id).await.map_err(ssr::fail)
}

/// Saves a bundle for the workspace (admins).
#[server(input = Json)]
pub async fn save_bundle(bundle: BundleConfig) -> Result<BundleConfig, ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    engine.save_bundle(&who, bundle).await.map_err(ssr::fail)
}

/// Removes the workspace's own bundle or its version of a shipped one (admins).
#[server]
pub async fn remove_bundle(id: String) -> Result<(), ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    engine.remove_bundle(&who, &id).await.map_err(ssr::fail)
}

#[component]
pub fn PacksPage() -> impl IntoView {
    let ViewerResource(viewer) = expect_context::<ViewerResource>();
    let version = RwSignal::new(0u32);
    let notice: Notice = RwSignal::new(None);
    let pack_draft = RwSignal::new(PackDraft::default());
    let bundle_draft = RwSignal::new(BundleDraft::default());
    let editing = Editing {
        pack_draft,
        bundle_draft,
        notice,
        version,
    };
    crate::live::subscribe("/api/events", move |event| {
        if matches!(
            event.kind,
            EventKind::CatalogChanged
                | EventKind::ConnectorChanged { .. }
                | EventKind::ConnectorRemoved { .. }
        ) {
            version.update(|v| *v += 1);
        }
    });
    let catalog = crate::wire::resource(move || version.get(), |_| load_catalog());
    view! {
        <Title text="Packs"/>
        <h1>"Packs and bundles"</h1>
        <p class="muted">"A pack is one chip: what to find (its intent), the query, and which connectors to try in which order. A bundle is the row of chips a record set shows."</p>
        {notice_line(notice)}
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            <ErrorBoundary fallback=error_list>
                {move || Suspend::new(async move {
                    let is_admin = matches!(viewer.await, Ok(Some(v)) if v.is_admin());
                    catalog.await.map(|(cat, connectors)| {
                        let WorkspaceCatalog { packs, bundles, own_packs, own_bundles, shipped_packs, shipped_bundles } = cat;
                        let pack_rows = packs.iter().map(|p| {
                            pack_row(p, origin(&p.pack_id, &own_packs, &shipped_packs), is_admin.then_some(editing))
                        }).collect_view();
                        let labels: std::collections::HashMap<String, String> = packs.iter().map(|p| (p.pack_id.clone(), p.short_label.clone())).collect();
                        let bundle_rows = bundles.iter().map(|b| {
                            bundle_row(b, origin(&b.bundle_id, &own_bundles, &shipped_bundles), &labels, is_admin.then_some(editing))
                        }).collect_view();
                        let editors = is_admin.then(|| view! {
                            <div class="catalog-editors">
                                <PackEditor draft=pack_draft connectors=connectors.clone() notice version/>
                                <BundleEditor draft=bundle_draft packs=packs.clone() connectors=connectors.clone() notice version/>
                            </div>
                        });
                        view! {
                            <h2>"Packs"</h2>
                            <table class="packs">
                                <thead><tr><th>"Chip"</th><th>"Pack"</th><th>"Intent"</th><th>"Query"</th><th>"Chain"</th><th>"From"</th><th></th></tr></thead>
                                <tbody>{pack_rows}</tbody>
                            </table>
                            <h2>"Bundles"</h2>
                            <table class="bundles">
                                <thead><tr><th>"Bundle"</th><th>"Chips"</th><th>"From"</th><th></th></tr></thead>
                                <tbody>{bundle_rows}</tbody>
                            </table>
                            {editors}
                        }
                    })
                })}
            </ErrorBoundary>
        </Transition>
    }
}

/// What an admin's buttons on the tables change: the drafts the editors
/// show, the notice line, and the catalogue's version (to read it again).
#[derive(Clone, Copy)]
struct Editing {
    pack_draft: RwSignal<PackDraft>,
    bundle_draft: RwSignal<BundleDraft>,
    notice: Notice,
    version: RwSignal<u32>,
}

/// "Edit", and "Revert" or "Remove" for what is not as shipped.
fn row_actions(
    from: &'static str,
    id: String,
    remove: RemoveCall,
    edit: impl Fn() + 'static,
    editing: Editing,
) -> impl IntoView {
    let undo = (from != "shipped").then(|| {
        remove_button(
            if from == "changed here" {
                "Revert"
            } else {
                "Remove"
            },
            id,
            remove,
            editing.notice,
            editing.version,
        )
    });
    view! {
        <button type="button" on:click=move |_| edit()>"Edit"</button>
        {undo}
    }
}

/// One pack in the packs table; `editing` for admins.
fn pack_row(p: &PackConfig, from: &'static str, editing: Option<Editing>) -> AnyView {
    let actions = editing.map(|editing| {
        let draft = PackDraft::of(p);
        let edit = move || editing.pack_draft.set(draft.clone());
        row_actions(
            from,
            p.pack_id.clone(),
            |id| Box::pin(remove_pack(id)),
            edit,
            editing,
        )
    });
    let chain = if p.preferred_connectors.is_empty() {
        "every connector serving it".to_owned()
    } else {
        p.preferred_connectors.join(" → ")
    };
    view! {
        <tr data-pack=p.pack_id.clone() data-origin=from>
            <td><span class="chip-label">{p.short_label.clone()}</span></td>
            <td><strong>{p.display_name.clone()}</strong><div class="muted">{p.pack_id.clone()}</div></td>
            <td class="caps">{p.intent.name().to_owned()}</td>
            <td><code>{p.query_template.clone()}</code></td>
            <td class="chain">{chain}</td>
            <td class="origin">{from}</td>
            <td>{actions}</td>
        </tr>
    }
    .into_any()
}

/// One bundle in the bundles table, its chips by label with the chains it
/// sets; `editing` for admins.
fn bundle_row(
    b: &BundleConfig,
    from: &'static str,
    labels: &std::collections::HashMap<String, String>,
    editing: Option<Editing>,
) -> AnyView {
    let actions = editing.map(|editing| {
        let draft = BundleDraft::of(b);
        let edit = move || editing.bundle_draft.set(draft.clone());
        row_actions(
            from,
            b.bundle_id.clone(),
            |id| Box::pin(remove_bundle(id)),
            edit,
            editing,
        )
    });
    let chips = b
        .members
        .iter()
        .map(|m| {
            let label = labels
                .get(&m.pack)
                .cloned()
                .unwrap_or_else(|| m.pack.clone());
            match &m.connector_chain_override {
                Some(chain) => format!("{label} ({})", chain.join(" → ")),
                None => label,
            }
        })
        .collect::<Vec<_>>()
        .join(" · ");
    view! {
        <tr data-bundle=b.bundle_id.clone() data-origin=from>
            <td><strong>{b.display_name.clone()}</strong><div class="muted">{b.bundle_id.clone()}</div></td>
            <td class="members">{chips}</td>
            <td class="origin">{from}</td>
            <td>{actions}</td>
        </tr>
    }
    .into_any()
}
