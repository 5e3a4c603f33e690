//! What this workspace's admins must act on, at the top of the inventory:
//! a connector whose key was refused, or whose errors keep it suspended,
//! each with what happened, since when, and what to do. Read with the
//! inventory, so it follows every live change of a connector.

use leptos::prelude::*;
use model::Attention;

use crate::clock::ago;

/// The list, when there is anything on it.
pub fn attention_list(list: Vec<Attention>) -> impl IntoView {
    (!list.is_empty()).then(|| {
        view! {
            <section class="attention" role="alert" aria-labelledby="attention-title">
                <h2 id="attention-title">"Needs an admin"</h2>
                <ul>
                    {list.into_iter().map(|a| view! {
                        <li data-connector=a.connector_id.clone() data-kind=a.kind.name()>
                            <strong>{a.what}</strong>
                            " · "<span class="when" title=a.since.to_string()>{ago(a.since)}</span>
                            <div>{a.to_do}</div>
                        </li>
                    }).collect_view()}
                </ul>
            </section>
        }
    })
}
