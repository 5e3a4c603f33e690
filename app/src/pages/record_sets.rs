//! The record sets page: every imported list with its bundle, size and
//! scheduled refresh, and the CSV import (paste or pick a file) with its
//! per-line rejection report.

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_meta::Title;
use model::{BundleConfig, ImportReport, RecordSetSummary};

#[cfg(feature = "ssr")]
use crate::access::ssr;
use crate::error_view::error_list;
use crate::pages::ViewerResource;

/// Every record set, newest first.
#[server]
pub async fn list_record_sets() -> Result<Vec<RecordSetSummary>, ServerFnError> {
    let (engine, who) = ssr::door()?;
    engine.record_sets(&who).await.map_err(ssr::fail)
}

/// The bundles a set can be triaged under.
#[server]
pub async fn list_bundles() -> Result<Vec<BundleConfig>, ServerFnError> {
    let (engine, who) = (ssr::engine()?, ssr::caller()?);
    let catalog = engine.catalog_of(&who).await.map_err(ssr::fail)?;
    Ok(catalog.bundles().to_vec())
}

/// Imports pasted CSV text as a new record set.
#[server]
pub async fn import_csv(
    name: String,
    bundle: String,
    csv: String,
) -> Result<ImportReport, ServerFnError> {
    let (engine, who) = ssr::door()?;
    let limits = engine::import::ImportLimits::default();
    engine
        .import_record_set(&who, &name, &bundle, csv.into_bytes(), limits)
        .await
        .map_err(ssr::fail)
}

#[server]
pub async fn delete_record_set(id: i64) -> Result<(), ServerFnError> {
    let (engine, who) = ssr::door()?;
    engine.delete_record_set(&who, id).await.map_err(ssr::fail)
}

#[component]
pub fn RecordSetsPage() -> impl IntoView {
    let ViewerResource(viewer) = expect_context::<ViewerResource>();
    let version = RwSignal::new(0u32);
    let sets = crate::wire::resource(move || version.get(), |_| list_record_sets());
    view! {
        <Title text="Record sets"/>
        <h1>"Record sets"</h1>
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            <ErrorBoundary fallback=error_list>
                {move || Suspend::new(async move {
                    let is_admin = matches!(viewer.await, Ok(Some(v)) if v.is_admin());
                    sets.await.map(|sets| view! { <RecordSetList sets is_admin version/> })
                })}
            </ErrorBoundary>
        </Transition>
        <ImportForm version/>
    }
}

#[component]
fn RecordSetList(
    sets: Vec<RecordSetSummary>,
    is_admin: bool,
    version: RwSignal<u32>,
) -> impl IntoView {
    if sets.is_empty() {
        return view! { <p class="empty">"No record sets yet. Import a CSV below."</p> }.into_any();
    }
    view! {
        <table class="record-sets">
            <thead>
                <tr><th>"Name"</th><th>"Bundle"</th><th>"Records"</th><th>"Refresh"</th><th></th></tr>
            </thead>
            <tbody>
                {sets
                    .into_iter()
                    .map(|set| {
                        let id = set.id;
                        let name = set.name.clone();
                        let remove = move |_| {
                            #[cfg(feature = "hydrate")]
                            if !window().confirm_with_message(&format!("Delete {name} with its results?")).unwrap_or(false) {
                                return;
                            }
                            #[cfg(not(feature = "hydrate"))]
                            let _ = &name;
                            spawn_local(async move {
                                if delete_record_set(id).await.is_ok() {
                                    version.update(|v| *v += 1);
                                }
                            });
                        };
                        view! {
                            <tr data-record-set=set.id>
                                <td>
                                    <a href=format!("/record-sets/{}", set.id)>{set.name.clone()}</a>
                                    {set.is_demo.then(|| view! { <span class="badge demo">"demo data"</span> })}
                                </td>
                                <td>{set.bundle_id.clone()}</td>
                                <td>{set.records}</td>
                                <td><super::refresh::RefreshPanel set_id=set.id is_admin/></td>
                                <td><button class="secondary" on:click=remove>"Delete"</button></td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

#[component]
fn ImportForm(version: RwSignal<u32>) -> impl IntoView {
    let bundles = crate::wire::resource(|| (), |_| list_bundles());
    let name = RwSignal::new(String::new());
    let bundle = RwSignal::new("social-profiles".to_owned());
    let csv = RwSignal::new(String::new());
    let report = RwSignal::new(None::<Result<ImportReport, String>>);
    let busy = RwSignal::new(false);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        busy.set(true);
        let (n, b, c) = (
            name.get_untracked(),
            bundle.get_untracked(),
            csv.get_untracked(),
        );
        spawn_local(async move {
            let result = import_csv(n, b, c).await.map_err(|e| e.to_string());
            if result.is_ok() {
                version.update(|v| *v += 1);
            }
            report.set(Some(result));
            busy.set(false);
        });
    };
    let preview = move || {
        csv.with(|text| {
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            (lines.len() > 1).then(|| {
                format!(
                    "{} lines after the header; columns: {}",
                    lines.len() - 1,
                    lines[0]
                )
            })
        })
    };
    view! {
        <section class="import">
            <h2>"Import a CSV"</h2>
            <p class="muted">"A header row with a "<code>"name"</code>" column; every other column is kept. Bad lines are reported and the good ones imported."</p>
            <form on:submit=submit>
                <label>"Name "<input required prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev))/></label>
                <label>
                    "Bundle "
                    <select on:change=move |ev| bundle.set(event_target_value(&ev))>
                        <Suspense>
                            {move || Suspend::new(async move {
                                bundles.await.unwrap_or_default().into_iter().map(|b| {
                                    let selected = b.bundle_id == bundle.get_untracked();
                                    view! { <option value=b.bundle_id.clone() selected=selected>{b.display_name.clone()}</option> }
                                }).collect_view()
                            })}
                        </Suspense>
                    </select>
                </label>
                <CsvFile csv/>
                <textarea
                    rows="8"
                    placeholder="name,website,city\nAcme,https://acme.example,Lyon"
                    aria-label="CSV"
                    prop:value=move || csv.get()
                    on:input=move |ev| csv.set(event_target_value(&ev))
                ></textarea>
                {move || preview().map(|p| view! { <p class="muted preview">{p}</p> })}
                <button class="primary" type="submit" disabled=move || busy.get()>"Import"</button>
            </form>
            {move || report.get().map(|r| match r {
                Ok(report) => view! {
                    <div class="report" role="status">
                        <p>
                            {format!("Imported {} records. ", report.imported)}
                            <a href=format!("/record-sets/{}", report.id)>"Open the set →"</a>
                        </p>
                        {(!report.rejected.is_empty()).then(|| view! {
                            <p>{rejected_summary(&report)}</p>
                            <ul class="rejected">
                                {report.rejected.iter().map(|r| view! { <li>{format!("line {}: {}", r.line, r.reason)}</li> }).collect_view()}
                            </ul>
                        })}
                    </div>
                }.into_any(),
                Err(e) => view! { <p class="error" role="alert">{e}</p> }.into_any(),
            })}
        </section>
    }
}

/// A file picker that reads the chosen CSV into the text area.
#[component]
fn CsvFile(csv: RwSignal<String>) -> impl IntoView {
    let on_change = move |ev: leptos::ev::Event| {
        #[cfg(feature = "hydrate")]
        {
            use wasm_bindgen::JsCast;
            let Some(input) = ev
                .target()
                .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
            else {
                return;
            };
            let Some(file) = input.files().and_then(|f| f.get(0)) else {
                return;
            };
            let promise = file.text();
            spawn_local(async move {
                if let Ok(text) = wasm_bindgen_futures::JsFuture::from(promise).await {
                    csv.set(text.as_string().unwrap_or_default());
                }
            });
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (ev, csv);
    };
    view! { <label>"File "<input type="file" accept=".csv,text/csv" on:change=on_change/></label> }
}

/// "N lines were not imported", saying when only the first are listed.
fn rejected_summary(report: &ImportReport) -> String {
    let listed = report.rejected.len() as u64;
    if report.rejected_count > listed {
        format!(
            "{} lines were not imported; the first {listed} are:",
            report.rejected_count
        )
    } else {
        format!("{} lines were not imported:", report.rejected_count)
    }
}
