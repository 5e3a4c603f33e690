//! The workspace's secrets on the inventory page: every key a connector here
//! needs and every key set, with who set it and when. Admins set and clear
//! them; a value goes to the server once and is never shown again.

use leptos::prelude::*;
use leptos::task::spawn_local;
use model::SecretInfo;
use serde::{Deserialize, Serialize};

use crate::clock::ago;
use crate::error_view::{error_list, Notice};

/// One secret name as the page lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SecretRow {
    pub name: String,
    /// Who set it and when; `None` when not set.
    pub set: Option<SecretInfo>,
    /// The connectors here that read it.
    pub needed_by: Vec<String>,
}

/// Every name a connector here needs or the workspace set, and whether the
/// server can store secrets at all.
#[server]
pub async fn list_secrets() -> Result<(bool, Vec<SecretRow>), ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::caller()?);
    let set = engine.secrets(&who).await.map_err(ssr::fail)?;
    let connectors = engine.connectors(&who).await.map_err(ssr::fail)?;
    let mut rows: Vec<SecretRow> = Vec::new();
    for c in &connectors {
        for name in &c.profile.requires_env {
            match rows.iter_mut().find(|r| &r.name == name) {
                Some(row) => row.needed_by.push(c.profile.display_name.clone()),
                None => rows.push(SecretRow {
                    name: name.clone(),
                    set: None,
                    needed_by: vec![c.profile.display_name.clone()],
                }),
            }
        }
    }
    for info in set {
        match rows.iter_mut().find(|r| r.name == info.name) {
            Some(row) => row.set = Some(info),
            None => rows.push(SecretRow {
                name: info.name.clone(),
                set: Some(info),
                needed_by: Vec::new(),
            }),
        }
    }
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((engine.keeps_secrets(), rows))
}

/// Sets a secret of the workspace (admins).
#[server]
pub async fn set_secret(name: String, value: String) -> Result<SecretInfo, ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    model::check_secret_name(&name).map_err(ServerFnError::new)?;
    engine
        .set_secret(&who, &name, &value)
        .await
        .map_err(ssr::fail)
}

/// Clears a secret of the workspace (admins).
#[server]
pub async fn clear_secret(name: String) -> Result<(), ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    engine.clear_secret(&who, &name).await.map_err(ssr::fail)
}

fn save(name: String, value: String, notice: Notice, version: RwSignal<u32>) {
    spawn_local(async move {
        notice.set(Some(match set_secret(name.clone(), value).await {
            Ok(_) => Ok(format!("{name} is set for this workspace.")),
            Err(e) => Err(e.to_string()),
        }));
        version.update(|v| *v += 1);
    });
}

#[component]
fn SecretLine(
    row: SecretRow,
    is_admin: bool,
    notice: Notice,
    version: RwSignal<u32>,
) -> impl IntoView {
    let name = row.name.clone();
    let value = NodeRef::<leptos::html::Input>::new();
    let state = if row.set.is_some() { "set" } else { "unset" };
    let status = match &row.set {
        Some(s) => format!("set by {} {}", s.set_by, ago(s.set_at)),
        None => "not set".to_owned(),
    };
    let needed = if row.needed_by.is_empty() {
        "no connector here reads it".to_owned()
    } else {
        format!("read by {}", row.needed_by.join(", "))
    };
    let controls = is_admin.then(|| {
        let (set_name, clear_name) = (name.clone(), name.clone());
        let on_set = move |ev: leptos::ev::SubmitEvent| {
            ev.prevent_default();
            let Some(input) = value.get() else { return };
            let v = input.value();
            input.set_value("");
            save(set_name.clone(), v, notice, version);
        };
        let clear = row.set.is_some().then(|| {
            view! {
                <button type="button" class="clear" on:click=move |_| {
                    let name = clear_name.clone();
                    spawn_local(async move {
                        notice.set(Some(match clear_secret(name.clone()).await {
                            Ok(()) => Ok(format!("{name} is cleared for this workspace.")),
                            Err(e) => Err(e.to_string()),
                        }));
                        version.update(|v| *v += 1);
                    });
                }>"Clear"</button>
            }
        });
        view! {
            <form class="set-secret" on:submit=on_set>
                <input node_ref=value type="password" autocomplete="off" required
                    aria-label=format!("New value of {name}") placeholder="new value"/>
                <button type="submit">{if row.set.is_some() { "Replace" } else { "Set" }}</button>
                {clear}
            </form>
        }
    });
    view! {
        <tr data-secret=row.name.clone() data-state=state>
            <td><code>{row.name.clone()}</code></td>
            <td class="secret-status">{status}<div class="muted">{needed}</div></td>
            <td>{controls}</td>
        </tr>
    }
}

#[component]
pub fn Secrets(is_admin: bool, notice: Notice, version: RwSignal<u32>) -> impl IntoView {
    let rows = crate::wire::resource(move || version.get(), |_| list_secrets());
    let new_name = NodeRef::<leptos::html::Input>::new();
    let new_value = NodeRef::<leptos::html::Input>::new();
    let on_add = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let (Some(name), Some(value)) = (new_name.get(), new_value.get()) else {
            return;
        };
        let (n, v) = (name.value().trim().to_owned(), value.value());
        value.set_value("");
        save(n, v, notice, version);
    };
    view! {
        <section class="secrets" aria-labelledby="secrets-title">
            <h2 id="secrets-title">"Secrets"</h2>
            <p class="muted">"API keys this workspace's connectors read. A key set here wins over the server's environment, is sealed on the server and is never shown again."</p>
            <Transition fallback=|| ()>
                <ErrorBoundary fallback=error_list>
                    {move || Suspend::new(async move {
                        rows.await.map(|(enabled, list)| view! {
                            {(!enabled).then(|| view! {
                                <p class="notice">"Secrets are off on this server: it needs SWITCHYARD_SECRETS_KEY in its environment (see the README)."</p>
                            })}
                            <table class="secrets-table">
                                <tbody>
                                    {list.into_iter().map(|row| view! { <SecretLine row is_admin notice version/> }).collect_view()}
                                </tbody>
                            </table>
                        })
                    })}
                </ErrorBoundary>
            </Transition>
            // Outside the list, so a live change does not wipe what is typed.
            {is_admin.then(|| view! {
                <form class="add-secret" on:submit=on_add>
                    <label>"Name " <input node_ref=new_name required pattern="[A-Z][A-Z0-9_]*" placeholder="EXA_API_KEY"/></label>
                    <label>"Value " <input node_ref=new_value type="password" autocomplete="off" required/></label>
                    <button type="submit">"Set secret"</button>
                </form>
            })}
        </section>
    }
}
