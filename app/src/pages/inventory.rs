//! The connector inventory: every registered connector, what it serves, what
//! it costs, where it comes from, whether it can fire now (and if not, why),
//! today's use against its cap and its last day in this workspace.

use leptos::prelude::*;
use leptos_meta::Title;
use model::InventoryRow;

use crate::error_view::error_list;

#[server]
pub async fn list_connectors() -> Result<Vec<InventoryRow>, ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::caller()?);
    engine.inventory(who.workspace_id).await.map_err(ssr::fail)
}

/// Today's use and the last day's figures in a line.
fn usage(row: &InventoryRow) -> String {
    let cap = row
        .info
        .rate_hints
        .daily_cap
        .map_or_else(String::new, |c| format!(" of {c}"));
    let today = format!("{}{cap} today", row.fires_today);
    match &row.stats {
        None => format!("{today} · no attempts in the last day"),
        Some(s) => format!(
            "{today} · last day: {} attempts, {:.0} % found, {:.0} % errors, p50 {} ms, p95 {} ms",
            s.attempts,
            s.hit_rate() * 100.0,
            s.error_rate() * 100.0,
            s.p50_ms.unwrap_or(0),
            s.p95_ms.unwrap_or(0)
        ),
    }
}

/// Every manifest file in the drop folder: its connector, or why it is not
/// serving (the folder's path, then one line per file).
#[server]
pub async fn list_manifest_files() -> Result<(String, Vec<ManifestFile>), ServerFnError> {
    let (engine, _) = (crate::access::ssr::engine()?, crate::access::ssr::caller()?);
    let Some(folder) = engine.drop_folder.get() else {
        return Ok((String::new(), Vec::new()));
    };
    let files = folder
        .files()
        .into_iter()
        .map(|(path, state)| ManifestFile {
            file: std::path::Path::new(&path)
                .file_name()
                .map_or(path.clone(), |n| n.to_string_lossy().into_owned()),
            connector_id: state.connector_id,
            error: state.error,
        })
        .collect();
    Ok((folder.dir().display().to_string(), files))
}

/// One file of the drop folder as the inventory shows it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ManifestFile {
    pub file: String,
    pub connector_id: Option<String>,
    pub error: Option<String>,
}

#[component]
fn ManifestFiles() -> impl IntoView {
    let files = Resource::new(|| (), |_| list_manifest_files());
    view! {
        <Transition fallback=|| ()>
            <ErrorBoundary fallback=error_list>
                {move || Suspend::new(async move {
                    files.await.map(|(dir, files)| {
                        if dir.is_empty() {
                            return ().into_any();
                        }
                        view! {
                            <h2>"Manifest files"</h2>
                            <p class="muted">"Drop a manifest in "<code>{dir}</code>" and it registers within a second; see its README for the format."</p>
                            <ul class="manifest-files">
                                {files.into_iter().map(|f| {
                                    let state = if f.error.is_some() { "error" } else { "serving" };
                                    view! {
                                        <li data-file=f.file.clone() data-state=state>
                                            <code>{f.file.clone()}</code>" · "
                                            {f.connector_id.clone().map(|id| format!("serves {id}")).unwrap_or_else(|| "not registered".to_owned())}
                                            {f.error.clone().map(|e| view! { <div class="error">{e}{f.connector_id.is_some().then_some(" (the previous version keeps serving)")}</div> })}
                                        </li>
                                    }
                                }).collect_view()}
                            </ul>
                        }.into_any()
                    })
                })}
            </ErrorBoundary>
        </Transition>
    }
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
                                <thead><tr><th>"Connector"</th><th>"Serves"</th><th>"Cost"</th><th>"Source"</th><th>"Status"</th><th>"Use"</th></tr></thead>
                                <tbody>
                                    {list.into_iter().map(|row| { let use_line = usage(&row); let c = row.info; view! {
                                        <tr data-connector=c.id.clone() data-status=c.status.kind()>
                                            <td><strong>{c.display_name.clone()}</strong><div class="muted">{c.id.clone()}" · "{c.short_label.clone()}</div></td>
                                            <td class="caps">{c.capabilities.iter().map(|cap| cap.name().to_owned()).collect::<Vec<_>>().join(", ")}</td>
                                            <td><span class=format!("tier tier-{}", c.cost_tier.name())>{c.cost_tier.name()}</span></td>
                                            <td class="source">{match &c.source {
                                                model::ConnectorSource::Builtin => "built-in".to_owned(),
                                                model::ConnectorSource::File { path } => format!("manifest {}", std::path::Path::new(path).file_name().map_or(path.clone(), |n| n.to_string_lossy().into_owned())),
                                            }}</td>
                                            <td class=format!("status status-{}", c.status.kind())>{c.status_reason.clone().unwrap_or_else(|| "available".to_owned())}</td>
                                            <td class="use">{use_line}</td>
                                        </tr>
                                    }}).collect_view()}
                                </tbody>
                            </table>
                        }.into_any()
                    })
                })}
            </ErrorBoundary>
        </Transition>
        <ManifestFiles/>
    }
}
