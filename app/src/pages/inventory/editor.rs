//! Manifest connectors added in the browser: the workspace's saved
//! manifests (edit, remove), and the editor: a form for the common shape
//! that writes the manifest out, the raw editor for everything else, a test
//! fire that shows the parsed results and the classified outcome, and save,
//! which registers the connector at once for everyone in the workspace.

use leptos::prelude::*;
use leptos::task::spawn_local;
use model::{ConnectorInfo, ManifestForm, ManifestFormat, Problem, SavedManifest, TestReport};

use crate::clock::ago;
use crate::error_view::{error_list, Notice};

#[server]
pub async fn list_manifests() -> Result<Vec<SavedManifest>, ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::caller()?);
    engine.manifests(&who).await.map_err(ssr::fail)
}

/// Fires a draft once without saving it (admins).
#[server]
pub async fn test_manifest(
    text: String,
    format: ManifestFormat,
    query: String,
) -> Result<TestReport, ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    let test = model::ManifestTest {
        text,
        format,
        query,
        record_id: None,
    };
    engine.test_manifest(&who, &test).await.map_err(ssr::fail)
}

/// Saves a manifest for the workspace and registers it (admins): the
/// connector, or every mistake in the manifest.
#[server]
pub async fn save_manifest(
    text: String,
    format: ManifestFormat,
) -> Result<Result<ConnectorInfo, Vec<Problem>>, ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    match engine.save_manifest(&who, &text, format).await {
        Ok(info) => Ok(Ok(info)),
        Err(engine::ops::OpError::Unchecked { problems, .. }) => Ok(Err(problems)),
        Err(e) => Err(ssr::fail(e)),
    }
}

/// Removes a manifest connector of the workspace (admins).
#[server]
pub async fn remove_manifest(id: String) -> Result<(), ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    engine.remove_manifest(&who, &id).await.map_err(ssr::fail)
}

/// What a test fire found, or what is wrong with the draft.
#[component]
pub fn ReportView(report: TestReport) -> impl IntoView {
    if !report.problems.is_empty() {
        return view! { <ProblemList problems=report.problems/> }.into_any();
    }
    let outcome = report.outcome.map_or("none", |o| o.name());
    let count = report.results.len();
    let line = match (&report.error, count) {
        (Some(e), n) if report.answered() => format!(
            "Outcome: {} · {n} result{} · {e}",
            outcome.replace('_', " "),
            if n == 1 { "" } else { "s" }
        ),
        (Some(e), _) => format!("Outcome: {} · {e}", outcome.replace('_', " ")),
        (None, 0) => "Outcome: not found · the answer held no results".to_owned(),
        (None, n) => format!(
            "Outcome: found · {n} result{}",
            if n == 1 { "" } else { "s" }
        ),
    };
    view! {
        <div class="test-report" data-outcome=outcome>
            <p class="outcome">{line}" · "{report.elapsed_ms}" ms"</p>
            <ol class="test-results">
                {report.results.into_iter().map(|r| view! {
                    <li>
                        <a href=r.url.clone() target="_blank" rel="noopener noreferrer nofollow">{r.title}</a>
                        <div class="muted">{r.url}</div>
                        {(!r.snippet.is_empty()).then(|| view! { <p>{r.snippet}</p> })}
                    </li>
                }).collect_view()}
            </ol>
        </div>
    }
    .into_any()
}

#[component]
fn ProblemList(problems: Vec<Problem>) -> impl IntoView {
    view! {
        <div class="problems" role="alert">
            <p>{format!("The manifest does not check ({} mistake{}):", problems.len(), if problems.len() == 1 { "" } else { "s" })}</p>
            <ul>
                {problems.into_iter().map(|p| view! { <li><code>{p.field}</code>": "{p.message}</li> }).collect_view()}
            </ul>
        </div>
    }
}

/// One input of the form, writing one field.
fn form_field(
    form: RwSignal<ManifestForm>,
    label: &'static str,
    name: &'static str,
    placeholder: &'static str,
    at: fn(&mut ManifestForm) -> &mut String,
) -> impl IntoView {
    view! {
        <label>
            <span>{label}</span>
            <input name=name placeholder=placeholder on:input=move |ev| {
                let value = event_target_value(&ev);
                form.update(|f| *at(f) = value);
            }/>
        </label>
    }
}

/// The form for the common shape: one GET, the query in one parameter,
/// maybe one header with a key. It writes the manifest into the editor.
#[component]
fn ManifestFormView(text: RwSignal<String>, format: RwSignal<ManifestFormat>) -> impl IntoView {
    let form = RwSignal::new(ManifestForm {
        cost_tier: "free".to_owned(),
        ..ManifestForm::default()
    });
    let write = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        text.set(form.with(ManifestForm::to_toml));
        format.set(ManifestFormat::Toml);
    };
    view! {
        <details class="manifest-form">
            <summary>"Start from a form"</summary>
            <form on:submit=write>
                {form_field(form, "Id", "id", "exa-search", |f| &mut f.id)}
                {form_field(form, "Name", "display_name", "Exa search", |f| &mut f.display_name)}
                {form_field(form, "Short label", "short_label", "Exa", |f| &mut f.short_label)}
                {form_field(form, "Capability", "capability", "search.web", |f| &mut f.capability)}
                <label>
                    <span>"Cost"</span>
                    <select name="cost_tier" on:change=move |ev| {
                        let value = event_target_value(&ev);
                        form.update(|f| f.cost_tier = value);
                    }>
                        <option value="free" selected>"free"</option>
                        <option value="free-tier">"free tier"</option>
                        <option value="paid">"paid"</option>
                    </select>
                </label>
                {form_field(form, "Address", "url", "https://api.example.com/search", |f| &mut f.url)}
                {form_field(form, "Query parameter", "query_param", "q", |f| &mut f.query_param)}
                {form_field(form, "Header (optional)", "header_name", "Authorization", |f| &mut f.header_name)}
                {form_field(form, "Header value", "header_value", "Bearer {{secret.EXA_API_KEY}}", |f| &mut f.header_value)}
                {form_field(form, "Results (JSONPath)", "items", "$.results[*]", |f| &mut f.items)}
                {form_field(form, "Result address", "item_url", "$.url", |f| &mut f.item_url)}
                {form_field(form, "Result title", "item_title", "$.title", |f| &mut f.item_title)}
                {form_field(form, "Result snippet (optional)", "item_snippet", "$.text", |f| &mut f.item_snippet)}
                <button type="submit">"Write the manifest"</button>
            </form>
        </details>
    }
}

/// The editor: raw manifest, test fire, save.
#[component]
fn Editor(
    text: RwSignal<String>,
    format: RwSignal<ManifestFormat>,
    notice: Notice,
    version: RwSignal<u32>,
) -> impl IntoView {
    let query = RwSignal::new(String::new());
    let report = RwSignal::new(None::<TestReport>);
    let problems = RwSignal::new(Vec::<Problem>::new());
    let busy = RwSignal::new(false);
    let test = move |_| {
        busy.set(true);
        problems.set(Vec::new());
        spawn_local(async move {
            let result = test_manifest(
                text.get_untracked(),
                format.get_untracked(),
                query.get_untracked(),
            )
            .await;
            match result {
                Ok(r) => report.set(Some(r)),
                Err(e) => notice.set(Some(Err(e.to_string()))),
            }
            busy.set(false);
        });
    };
    let save = move |_| {
        busy.set(true);
        spawn_local(async move {
            match save_manifest(text.get_untracked(), format.get_untracked()).await {
                Ok(Ok(info)) => {
                    problems.set(Vec::new());
                    report.set(None);
                    notice.set(Some(Ok(format!(
                        "Saved {} ({}); it serves this workspace now.",
                        info.profile.display_name, info.profile.id
                    ))));
                    version.update(|v| *v += 1);
                }
                Ok(Err(list)) => {
                    report.set(None);
                    problems.set(list);
                }
                Err(e) => notice.set(Some(Err(e.to_string()))),
            }
            busy.set(false);
        });
    };
    view! {
        <div class="manifest-editor">
            <label class="format">
                "Written in "
                <select name="format" on:change=move |ev| {
                    format.set(ManifestFormat::from_name(&event_target_value(&ev)).unwrap_or_default());
                } prop:value=move || format.get().name().to_owned()>
                    <option value="toml">"TOML"</option>
                    <option value="json">"JSON"</option>
                </select>
            </label>
            <textarea name="manifest" class="manifest-text" rows="18" spellcheck="false"
                aria-label="Manifest"
                placeholder="id = \"my-connector\"\ndisplay_name = \"…\"\n… (see connectors/README.md)"
                prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev))></textarea>
            <div class="editor-actions">
                <label>"Sample query " <input name="test-query" placeholder="Ada Lovelace"
                    on:input=move |ev| query.set(event_target_value(&ev))/></label>
                <button type="button" class="test-fire" on:click=test disabled=move || busy.get()>"Test fire"</button>
                <button type="button" class="save-manifest" on:click=save disabled=move || busy.get()>"Save"</button>
                <span class="muted">{move || busy.get().then_some("Working…")}</span>
            </div>
            {move || (!problems.get().is_empty()).then(|| view! { <ProblemList problems=problems.get()/> })}
            {move || report.get().map(|r| view! { <ReportView report=r/> })}
        </div>
    }
}

/// The saved manifests of the workspace, and the editor for admins.
#[component]
pub fn Manifests(is_admin: bool, notice: Notice, version: RwSignal<u32>) -> impl IntoView {
    let saved = crate::wire::resource(move || version.get(), |_| list_manifests());
    let text = RwSignal::new(String::new());
    let format = RwSignal::new(ManifestFormat::Toml);
    view! {
        <section class="manifests" aria-labelledby="manifests-title">
            <h2 id="manifests-title">"Added in the browser"</h2>
            <Transition fallback=|| ()>
                <ErrorBoundary fallback=error_list>
                    {move || Suspend::new(async move {
                        saved.await.map(|list| {
                            if list.is_empty() {
                                return view! { <p class="muted">"No manifest connectors were added here yet."</p> }.into_any();
                            }
                            view! {
                                <ul class="saved-manifests">
                                    {list.into_iter().map(|m| {
                                        let id = m.connector_id.clone();
                                        let state = if m.error.is_some() { "error" } else { "serving" };
                                        let actions = is_admin.then(|| {
                                            let (edit_text, edit_format) = (m.text.clone(), m.format);
                                            let remove_id = id.clone();
                                            view! {
                                                <button on:click=move |_| {
                                                    text.set(edit_text.clone());
                                                    format.set(edit_format);
                                                }>"Edit"</button>
                                                <button class="remove" on:click=move |_| {
                                                    let id = remove_id.clone();
                                                    if !window().confirm_with_message(&format!("Remove the connector {id}? Fires running through it finish; its history stays.")).unwrap_or(false) {
                                                        return;
                                                    }
                                                    spawn_local(async move {
                                                        notice.set(Some(match remove_manifest(id.clone()).await {
                                                            Ok(()) => Ok(format!("Removed {id}.")),
                                                            Err(e) => Err(e.to_string()),
                                                        }));
                                                        version.update(|v| *v += 1);
                                                    });
                                                }>"Remove"</button>
                                            }
                                        });
                                        view! {
                                            <li data-manifest=id.clone() data-state=state>
                                                <code>{id.clone()}</code>" · saved by "{m.updated_by}" "{ago(m.updated_at)}" "
                                                {actions}
                                                {m.error.map(|e| view! { <div class="error">{e}</div> })}
                                            </li>
                                        }
                                    }).collect_view()}
                                </ul>
                            }.into_any()
                        })
                    })}
                </ErrorBoundary>
            </Transition>
            {is_admin.then(|| view! {
                <h3>"Add or edit a manifest connector"</h3>
                <p class="muted">"A manifest describes an HTTP connector: who it is, the request, where the results are. Test fire sends one real request and saves nothing; save registers it at once for everyone in this workspace. The format is in connectors/README.md."</p>
                <ManifestFormView text format/>
                <Editor text format notice version/>
            })}
        </section>
    }
}
