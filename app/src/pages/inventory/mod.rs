//! The connector inventory: every connector the workspace sees, what it
//! serves, what it costs (and the workspace's budgets), where it comes from, whether it can fire now (and
//! if not, why), today's use against its cap, its last day here (charts of
//! outcomes and latency, read again every 15 s) and its audit trail. Admins see first what needs them (a refused key, a long
//! suspension), switch connectors off and on, re-check them, set the
//! workspace's secrets and add manifest connectors. The page follows the
//! live stream: a change anyone makes shows without a reload.

mod attention;
mod budgets;
mod charts;
mod editor;
mod record_caps;
mod secrets;

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_meta::Title;
use model::{ConnectorInfo, ConnectorSource, EventKind, InventoryRow, StatusChange, TestReport};

use crate::clock::ago;
use crate::error_view::{error_list, notice_line, Notice};
use crate::pages::ViewerResource;

/// Every connector as the workspace sees it, and (for admins) what needs
/// them.
#[server]
pub async fn list_connectors() -> Result<(Vec<InventoryRow>, Vec<model::Attention>), ServerFnError>
{
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::caller()?);
    let rows = engine.inventory(&who).await.map_err(ssr::fail)?;
    let attention = if who.is_admin() {
        engine.attention(&who).await.map_err(ssr::fail)?
    } else {
        Vec::new()
    };
    Ok((rows, attention))
}

/// Switches a connector on or off for the workspace (admins).
#[server]
pub async fn switch_connector(id: String, on: bool) -> Result<ConnectorInfo, ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    let done = if on {
        engine.enable_connector(&who, &id).await
    } else {
        engine.disable_connector(&who, &id, "").await
    };
    done.map_err(ssr::fail)
}

/// Fires a connector once with a probe query (admins).
#[server]
pub async fn recheck_connector(id: String) -> Result<TestReport, ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    let (_, report) = engine.recheck(&who, &id).await.map_err(ssr::fail)?;
    Ok(report)
}

/// The status changes of a connector the workspace may see, newest first.
#[server]
pub async fn connector_history(id: String) -> Result<Vec<StatusChange>, ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::caller()?);
    engine.connector_audit(&who, &id).await.map_err(ssr::fail)
}

/// How each connector did here over the last day (the charts read it
/// again every little while).
#[server]
pub async fn load_connector_stats() -> Result<Vec<model::ConnectorStats>, ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::caller()?);
    engine.connector_stats(&who).await.map_err(ssr::fail)
}

/// Today's use and the last day's figures in a line.
fn usage(info: &ConnectorInfo, fires_today: i64, stats: Option<&model::ConnectorStats>) -> String {
    let cap = info
        .profile
        .rate_hints
        .daily_cap
        .map_or_else(String::new, |c| format!(" of {c}"));
    let today = format!("{fires_today}{cap} today");
    match stats {
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

/// Where a connector comes from, in a few words.
fn source_label(source: &ConnectorSource) -> String {
    match source {
        ConnectorSource::Builtin => "built-in".to_owned(),
        ConnectorSource::File { path } => format!(
            "manifest {}",
            std::path::Path::new(path)
                .file_name()
                .map_or(path.clone(), |n| n.to_string_lossy().into_owned())
        ),
        ConnectorSource::Workspace { .. } => "added in the browser".to_owned(),
    }
}

/// Every manifest file in the drop folder: its connector, or why it is not
/// serving (the folder's path, then one line per file).
#[server]
pub async fn list_manifest_files() -> Result<(String, Vec<ManifestFile>), ServerFnError> {
    let (engine, _) = (crate::access::ssr::engine()?, crate::access::ssr::caller()?);
    let Some(folder) = engine.drop_folder() else {
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
fn ManifestFiles(version: RwSignal<u32>) -> impl IntoView {
    let files = crate::wire::resource(move || version.get(), |_| list_manifest_files());
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

/// A connector's audit trail, read when first opened.
#[component]
fn History(id: String) -> impl IntoView {
    let open = RwSignal::new(false);
    // Read once it is first opened; it stays while the row lives.
    let on_toggle = move |_| open.set(true);
    view! {
        <details class="audit" on:toggle=on_toggle>
            <summary>"History"</summary>
            <Show when=move || open.get()>
                <HistoryList id=id.clone()/>
            </Show>
        </details>
    }
}

#[component]
fn HistoryList(id: String) -> impl IntoView {
    let changes = crate::wire::resource(move || id.clone(), connector_history);
    view! {
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
            <ErrorBoundary fallback=error_list>
                {move || Suspend::new(async move {
                    changes.await.map(|list| {
                        if list.is_empty() {
                            return view! { <p class="muted">"No status changes yet."</p> }.into_any();
                        }
                        view! {
                            <ol class="audit-trail">
                                {list.into_iter().map(|c| view! {
                                    <li>
                                        <span class="when" title=c.at.to_string()>{ago(c.at)}</span>" · "
                                        <strong>{c.status.replace('_', " ")}</strong>
                                        {c.reason.map(|r| format!(": {r}"))}
                                        " · by "{c.actor}
                                    </li>
                                }).collect_view()}
                            </ol>
                        }.into_any()
                    })
                })}
            </ErrorBoundary>
        </Transition>
    }
}

fn report_line(name: &str, report: &TestReport) -> Result<String, String> {
    let took = format!("{} ms", report.elapsed_ms);
    match (&report.error, report.results.len()) {
        (Some(e), n) if report.answered() => Ok(format!(
            "Re-checked {name}: it answered and found {n}, but {e} ({took})."
        )),
        (Some(e), _) => Err(format!("Re-checked {name}: {e} ({took})")),
        (None, 0) => Ok(format!(
            "Re-checked {name}: it answered and found nothing ({took})."
        )),
        (None, n) => Ok(format!(
            "Re-checked {name}: it answered and found {n} ({took})."
        )),
    }
}

/// The admin's buttons on one connector's row.
#[component]
fn RowActions(info: ConnectorInfo, notice: Notice, version: RwSignal<u32>) -> impl IntoView {
    let off = matches!(info.status, model::ConnectorStatus::Disabled { .. });
    let (id, name) = (info.profile.id.clone(), info.profile.display_name.clone());
    let busy = RwSignal::new(false);
    let switch = {
        let (id, name) = (id.clone(), name.clone());
        move |_| {
            let (id, name) = (id.clone(), name.clone());
            spawn_local(async move {
                notice.set(Some(match switch_connector(id, off).await {
                    Ok(_) if off => Ok(format!("{name} is on again for this workspace.")),
                    Ok(_) => Ok(format!("{name} is off for this workspace.")),
                    Err(e) => Err(e.to_string()),
                }));
                version.update(|v| *v += 1);
            });
        }
    };
    let recheck = {
        let (id, name) = (id.clone(), name.clone());
        let tier = info.profile.cost_tier;
        move |_| {
            if tier == model::CostTier::Paid
                && !window()
                    .confirm_with_message(&format!(
                        "Re-check {name}? It sends one real (paid) request."
                    ))
                    .unwrap_or(false)
            {
                return;
            }
            let (id, name) = (id.clone(), name.clone());
            busy.set(true);
            spawn_local(async move {
                notice.set(Some(match recheck_connector(id).await {
                    Ok(report) => report_line(&name, &report),
                    Err(e) => Err(e.to_string()),
                }));
                busy.set(false);
                version.update(|v| *v += 1);
            });
        }
    };
    view! {
        <button class="switch" on:click=switch>{if off { "Enable" } else { "Disable" }}</button>
        <button class="recheck" on:click=recheck disabled=move || busy.get()>
            {move || if busy.get() { "Checking…" } else { "Re-check" }}
        </button>
    }
}

#[component]
fn ConnectorTable(
    list: Vec<InventoryRow>,
    is_admin: bool,
    notice: Notice,
    version: RwSignal<u32>,
) -> impl IntoView {
    if list.is_empty() {
        return view! { <p class="empty">"No connectors are registered."</p> }.into_any();
    }
    // The last day's figures, read again every few seconds while the page
    // is open (hundreds of fires a second would be too many events).
    let stats = RwSignal::new(
        list.iter()
            .filter_map(|row| Some((row.info.profile.id.clone(), row.stats.clone()?)))
            .collect::<std::collections::HashMap<_, _>>(),
    );
    #[cfg(feature = "hydrate")]
    {
        /// How often the charts read the figures again.
        const STATS_EVERY: std::time::Duration = std::time::Duration::from_secs(15);
        if let Ok(every) = set_interval_with_handle(
            move || {
                spawn_local(async move {
                    if let Ok(list) = load_connector_stats().await {
                        stats.try_set(
                            list.into_iter()
                                .map(|s| (s.connector_id.clone(), s))
                                .collect(),
                        );
                    }
                });
            },
            STATS_EVERY,
        ) {
            on_cleanup(move || every.clear());
        }
    }

    view! {
        <table class="inventory">
            <thead><tr>
                <th>"Connector"</th><th>"Serves"</th><th>"Cost"</th><th>"Source"</th>
                <th>"Status"</th><th>"Use"</th><th></th>
            </tr></thead>
            <tbody>
                {list.into_iter().map(|row| {
                    let c = row.info.clone();
                    let use_cell = {
                        let (info, fires_today) = (c.clone(), row.fires_today);
                        move || stats.with(|all| {
                            let mine = all.get(&info.profile.id);
                            view! {
                                {usage(&info, fires_today, mine)}
                                {mine.map(|s| view! {
                                    <div class="charts">
                                        {charts::outcome_chart(&s.hours)}
                                        {charts::latency_chart(&s.hours)}
                                    </div>
                                })}
                            }
                            .into_any()
                        })
                    };
                    let hints = match (c.profile.rate_hints.per_second, c.profile.rate_hints.daily_cap) {
                        (None, None) => String::new(),
                        (ps, cap) => format!(
                            "{}{}",
                            ps.map(|p| format!("≤ {p}/s ")).unwrap_or_default(),
                            cap.map(|c| format!("≤ {c}/day")).unwrap_or_default()
                        ),
                    };
                    let actions = is_admin
                        .then(|| view! { <RowActions info=c.clone() notice version/> }.into_any());
                    view! {
                        <tr data-connector=c.profile.id.clone() data-status=c.status.kind()>
                            <td><strong>{c.profile.display_name.clone()}</strong><div class="muted">{c.profile.id.clone()}" · "{c.profile.short_label.clone()}</div></td>
                            <td class="caps">{c.profile.capabilities.iter().map(|cap| cap.name().to_owned()).collect::<Vec<_>>().join(", ")}</td>
                            <td><span class=format!("tier tier-{}", c.profile.cost_tier.name())>{c.profile.cost_tier.name()}</span><div class="muted price">{c.profile.cost.as_ref().map(model::Cost::describe)}</div><div class="muted">{hints}</div></td>
                            <td class="source">{source_label(&c.source)}</td>
                            <td class=format!("status status-{}", c.status.kind())>{c.status_reason.clone().unwrap_or_else(|| "available".to_owned())}</td>
                            <td class="use">{use_cell}</td>
                            <td class="actions">{actions}<History id=c.profile.id.clone()/></td>
                        </tr>
                    }
                    .into_any()
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

#[component]
pub fn InventoryPage() -> impl IntoView {
    let ViewerResource(viewer) = expect_context::<ViewerResource>();
    // Bumped by the live stream and after every action: everything below
    // reads again.
    let version = RwSignal::new(0u32);
    let notice: Notice = RwSignal::new(None);
    crate::live::subscribe("/api/events", move |event| {
        if matches!(
            event.kind,
            EventKind::ConnectorChanged { .. }
                | EventKind::ConnectorRemoved { .. }
                | EventKind::AttentionRaised { .. }
                | EventKind::BudgetChanged { .. }
        ) {
            version.update(|v| *v += 1);
        }
    });
    let connectors = crate::wire::resource(move || version.get(), |_| list_connectors());
    view! {
        <Title text="Inventory"/>
        <h1>"Inventory"</h1>
        {notice_line(notice)}
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            <ErrorBoundary fallback=error_list>
                {move || Suspend::new(async move {
                    let is_admin = matches!(viewer.await, Ok(Some(v)) if v.is_admin());
                    connectors.await.map(|(list, attention)| view! {
                        {attention::attention_list(attention)}
                        <ConnectorTable list is_admin notice version/>
                    })
                })}
            </ErrorBoundary>
        </Transition>
        // Apart from the table, so a live change does not rebuild the
        // editor (and lose a draft) or the secrets form.
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                let is_admin = matches!(viewer.await, Ok(Some(v)) if v.is_admin());
                view! {
                    <budgets::Budgets is_admin notice version/>
                    <record_caps::RecordCaps is_admin notice version/>
                    <secrets::Secrets is_admin notice version/>
                    <editor::Manifests is_admin notice version/>
                }
            })}
        </Transition>
        <ManifestFiles version/>
    }
}
