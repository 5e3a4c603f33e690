//! The record sets page: every imported list, with its bundle and size.

use leptos::prelude::*;
use leptos_meta::Title;
use model::RecordSetSummary;

use crate::error_view::error_list;

/// Every record set, newest first.
#[server]
pub async fn list_record_sets() -> Result<Vec<RecordSetSummary>, ServerFnError> {
    let engine = expect_context::<engine::Engine>();
    engine.store.list_record_sets().await.map_err(|e| {
        tracing::error!(error = %e, "Listing record sets failed.");
        ServerFnError::new("the record sets could not be read")
    })
}

#[component]
pub fn RecordSetsPage() -> impl IntoView {
    let sets = Resource::new(|| (), |_| list_record_sets());
    view! {
        <Title text="Record sets"/>
        <h1>"Record sets"</h1>
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            <ErrorBoundary fallback=error_list>
                {move || Suspend::new(async move {
                    sets.await.map(|sets| view! { <RecordSetList sets/> })
                })}
            </ErrorBoundary>
        </Transition>
    }
}

#[component]
fn RecordSetList(sets: Vec<RecordSetSummary>) -> impl IntoView {
    if sets.is_empty() {
        return view! { <p class="empty">"No record sets yet."</p> }.into_any();
    }
    view! {
        <table class="record-sets">
            <thead>
                <tr><th>"Name"</th><th>"Bundle"</th><th>"Records"</th></tr>
            </thead>
            <tbody>
                {sets
                    .into_iter()
                    .map(|set| {
                        view! {
                            <tr data-record-set=set.id>
                                <td>
                                    {set.name}
                                    {set.is_demo.then(|| view! { <span class="badge demo">"demo data"</span> })}
                                </td>
                                <td>{set.bundle_id}</td>
                                <td>{set.records}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}
