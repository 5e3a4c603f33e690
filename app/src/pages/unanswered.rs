//! Calls that went out and got no answer, on the spend page: each timed
//! out or was cut off when the process making it stopped, so the provider
//! may have done it and billed it. None is fired again by itself; this
//! list is where a person sees them and decides.

use leptos::prelude::*;
use leptos_router::components::A;
use model::Unanswered;

use crate::clock::ago;
use crate::error_view::error_list;

#[server]
pub async fn load_unanswered() -> Result<Vec<Unanswered>, ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::caller()?);
    engine.unanswered_calls(&who).await.map_err(ssr::fail)
}

fn row(call: Unanswered) -> impl IntoView {
    let a = call.attempt;
    let cost = a
        .end
        .charge
        .as_ref()
        .map(|c| c.amount.in_unit(&c.unit))
        .unwrap_or_else(|| "nothing (not priced)".to_owned());
    view! {
        <tr data-attempt=a.id>
            <td>{ago(a.fired_at)}</td>
            <td><A href=format!("/record-sets/{}", call.record_set_id)>{call.record_set_name}</A>" › "{call.record_name}</td>
            <td>{a.pack_id}</td>
            <td>{a.connector_id}</td>
            <td>{a.actor}</td>
            <td>{cost}</td>
            <td class="muted">{a.end.error.unwrap_or_default()}</td>
        </tr>
    }
}

/// The list, read again when `version` moves.
#[component]
pub fn UnansweredCalls(version: RwSignal<u32>) -> impl IntoView {
    let calls = crate::wire::resource(move || version.get(), |_| load_unanswered());
    view! {
        <section class="unanswered" aria-labelledby="unanswered-title">
            <h2 id="unanswered-title">"Calls without an answer"</h2>
            <Transition fallback=|| ()>
                <ErrorBoundary fallback=error_list>
                    {move || Suspend::new(async move {
                        calls.await.map(|calls| if calls.is_empty() {
                            view! { <p class="empty">"None: every call got an answer."</p> }.into_any()
                        } else {
                            view! {
                                <p class="muted">"These calls went out and no answer came: the provider may have done them, and billed them. None is made again by itself; fire the chip again if you want it."</p>
                                <table class="unanswered-table">
                                    <thead><tr><th>"When"</th><th>"Record"</th><th>"Pack"</th><th>"Connector"</th><th>"Who"</th><th>"May have cost"</th><th>"What happened"</th></tr></thead>
                                    <tbody>{calls.into_iter().map(row).collect_view()}</tbody>
                                </table>
                            }.into_any()
                        })
                    })}
                </ErrorBoundary>
            </Transition>
        </section>
    }
}
