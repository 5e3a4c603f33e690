//! The items under a card: what each intent found, who found it, what its
//! words were before they changed, whether its page went away, and the
//! triage verbs (also from the keyboard: see `keys`). Provider text is
//! rendered as text, links open in a new tab without giving the page a
//! handle on Switchyard. An item the person is on keeps the focus when a
//! decision or someone else's change draws it again.

use leptos::prelude::*;
use leptos::task::spawn_local;
use model::{Item, TriageState, TriageVerb};

use super::api::triage_item;
use super::board::Board;
use crate::clock::ago;

pub(super) fn state_label(state: TriageState) -> &'static str {
    match state {
        TriageState::New => "new",
        TriageState::AcceptedCanonical => "accepted (canonical)",
        TriageState::AcceptedContext => "accepted (context)",
        TriageState::Discarded => "discarded",
    }
}

#[component]
pub fn ItemList(items: RwSignal<Vec<Item>>, board: Board) -> impl IntoView {
    view! {
        <Show when=move || items.with(|i| !i.is_empty())>
            <ul class="items">
                <For each=move || items.get() key=|item| (item.id, item.version, item.evidence.len(), item.gone.is_some()) let:item>
                    <ItemRow item board/>
                </For>
            </ul>
        </Show>
    }
}

#[component]
fn ItemRow(item: Item, board: Board) -> impl IntoView {
    let message = RwSignal::new(None::<String>);
    let mut finders: Vec<String> = item
        .evidence
        .iter()
        .map(|e| e.connector_id.clone())
        .collect();
    finders.dedup();
    let demo = finders.iter().any(|f| f == "demo");
    let title = item.title.clone();
    let act = move |verb: TriageVerb| {
        let (id, version, title) = (item.id, item.version, title.clone());
        move |_| {
            let title = title.clone();
            spawn_local(async move {
                match triage_item(id, verb, version).await {
                    Ok(outcome) => {
                        board.said.set(match &outcome.conflict {
                            Some(conflict) => conflict.clone(),
                            None => format!("{}: {title}", state_label(outcome.item.state)),
                        });
                        message.set(outcome.conflict);
                        board.put_item(outcome.item);
                    }
                    Err(e) => message.set(Some(e.to_string())),
                }
            });
        }
    };
    let id = item.id;
    let row = keeps_focus(board, id);
    let state = item.state;
    let fresh = board.is_fresh(&item);
    let changed_badge = item.revision.as_ref().map(|_| {
        if item.changed_since_accepted() {
            "changed since you accepted it"
        } else {
            "changed"
        }
    });
    let revision = item.revision.as_ref().map(revision_note);
    let gone = item.gone.as_ref().map(|g| {
        view! {
            <p class="gone-note muted">{format!("Gone {}: {}.", ago(g.at), g.reason)}</p>
        }
    });
    view! {
        <li class=format!("item state-{}", state.name()) data-item=item.id data-triage=state.name()
            data-fresh=fresh.then_some("true") data-gone=item.gone.is_some().then_some("true")
            node_ref=row tabindex="-1" aria-label=format!("{}: {}", item.title, state_label(state))
            on:focusin=move |_| board.focused_item.set_value(Some(id))>
            <div class="item-head">
                <span class="intent">{item.intent.label().to_owned()}</span>
                <a href=item.url.clone() target="_blank" rel="noopener noreferrer">{item.title.clone()}</a>
                {(state == TriageState::New).then(|| view! { <span class="badge new">"new"</span> })}
                {demo.then(|| view! { <span class="badge demo">"demo data"</span> })}
                {fresh.then(|| view! { <span class="badge fresh">"since your last visit"</span> })}
                {changed_badge.map(|label| view! { <span class="badge changed">{label}</span> })}
                {item.gone.is_some().then(|| view! { <span class="badge gone">"gone"</span> })}
            </div>
            <div class="url muted">{item.url.clone()}</div>
            {(!item.snippet.is_empty()).then(|| view! { <p class="snippet">{item.snippet.clone()}</p> })}
            {revision}
            {gone}
            <div class="item-foot">
                <span class="muted">
                    "found by "{finders.join(", ")}" · first "{ago(item.first_seen_at)}
                    {(item.evidence.len() > 1).then(|| format!(" · seen {} times", item.evidence.len()))}
                </span>
                <span class="triage-state">
                    {state_label(state)}
                    {item.triaged_by.clone().map(|who| format!(" by {who}"))}
                </span>
                <span class="verbs">
                    <button data-verb="accept" on:click=act(TriageVerb::AcceptCanonical) disabled=state == TriageState::AcceptedCanonical>"Accept"</button>
                    <button data-verb="context" on:click=act(TriageVerb::AcceptContext) disabled=state == TriageState::AcceptedContext>"Context"</button>
                    <button data-verb="discard" on:click=act(TriageVerb::Discard) disabled=state == TriageState::Discarded>"Discard"</button>
                    <button data-verb="undo" on:click=act(TriageVerb::Undo) disabled=state == TriageState::New>"Undo"</button>
                </span>
            </div>
            {move || message.get().map(|m| view! { <p class="conflict" role="alert">{m}</p> })}
        </li>
    }
}

/// The row's node: drawn again (a decision, someone else's change) while
/// the person was on it, it gets the focus back.
fn keeps_focus(board: Board, id: i64) -> NodeRef<leptos::html::Li> {
    let row = NodeRef::<leptos::html::Li>::new();
    Effect::new(move |_| {
        if let Some(li) = row.get() {
            if board.focused_item.get_value() == Some(id) && focus_is_lost() {
                let _ = li.focus();
            }
        }
    });
    row
}

/// What an item's words were before they changed, and who saw the change.
fn revision_note(r: &model::Revision) -> impl IntoView {
    let before = if r.snippet_before.is_empty() {
        format!("«{}»", r.title_before)
    } else {
        format!("«{}» — {}", r.title_before, r.snippet_before)
    };
    view! {
        <p class="revision muted">
            {format!("{} changed {} per {}; it was: ", r.what(), ago(r.changed_at), r.connector_id)}
            <span class="before">{before}</span>
        </p>
    }
}

/// Nothing has the focus (the element that had it was drawn again).
fn focus_is_lost() -> bool {
    #[cfg(feature = "hydrate")]
    {
        match document().active_element() {
            None => true,
            Some(el) => el.tag_name() == "BODY",
        }
    }
    #[cfg(not(feature = "hydrate"))]
    false
}
