//! "Decide in bulk…": a selection people know from reconciliation (the one
//! item a connector found in a record, items found by two or more
//! connectors), a preview of every item it takes, one decision on all of
//! them (items someone else decided on meanwhile are skipped and named) and
//! one undo. The dialog is a chunk of its own, fetched when first opened.

use leptos::prelude::*;
use leptos::task::spawn_local;
use model::{BulkOutcome, BulkPreview, BulkSelection, TriageVerb};

use super::api::{decide_bulk, load_facets, preview_bulk, undo_bulk};
use super::board::Board;

/// How many of a preview's items the dialog lists (the count is of all).
const LISTED: usize = 100;

/// The button that opens the dialog, and the dialog while it is open.
/// `open` holds the selection it opens with (a facet may open it too).
#[component]
pub fn BulkBar(set_id: i64, board: Board, open: RwSignal<Option<BulkSelection>>) -> impl IntoView {
    let error = RwSignal::new(None::<String>);
    let show = move |_| {
        error.set(None);
        open.set(Some(BulkSelection::FoundByTwoOrMore));
    };
    view! {
        <button on:click=show disabled=move || open.with(Option::is_some)>"Decide in bulk…"</button>
        <Suspense>
            {move || open.get().map(|selection| Suspend::new(async move {
                dialog(set_id, board, open, selection).await.unwrap_or_else(|_| {
                    open.set(None);
                    error.set(Some(crate::chunk::NOT_LOADED.to_owned()));
                    ().into_any()
                })
            }))}
        </Suspense>
        {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
    }
}

crate::chunk::lazy_view! {
    /// The bulk dialog, a chunk of its own.
    bulk_dialog: async fn dialog(
        set_id: i64,
        board: Board,
        open: RwSignal<Option<BulkSelection>>,
        selection: BulkSelection,
    ) {
        view! { <BulkDialog set_id board open selection/> }.into_any()
    }
}

/// What a verb did, in the past tense.
fn done_word(verb: TriageVerb) -> &'static str {
    match verb {
        TriageVerb::AcceptCanonical => "Accepted",
        TriageVerb::AcceptContext => "Accepted as context",
        TriageVerb::Discard => "Discarded",
        TriageVerb::Undo => "Took back",
    }
}

/// The verb as a button says it.
fn do_word(verb: TriageVerb) -> &'static str {
    match verb {
        TriageVerb::AcceptCanonical => "Accept",
        TriageVerb::AcceptContext => "Accept as context",
        TriageVerb::Discard => "Discard",
        TriageVerb::Undo => "Undo",
    }
}

/// The `<select>` value of a selection.
fn selection_value(selection: &BulkSelection) -> String {
    match selection {
        BulkSelection::SingleFrom { connector_id } => format!("single:{connector_id}"),
        BulkSelection::FoundByTwoOrMore => "two".to_owned(),
    }
}

fn selection_of(value: &str) -> BulkSelection {
    match value.strip_prefix("single:") {
        Some(id) => BulkSelection::SingleFrom {
            connector_id: id.to_owned(),
        },
        None => BulkSelection::FoundByTwoOrMore,
    }
}

fn verb_of(value: &str) -> TriageVerb {
    match value {
        "accept-context" => TriageVerb::AcceptContext,
        "discard" => TriageVerb::Discard,
        _ => TriageVerb::AcceptCanonical,
    }
}

#[component]
fn BulkDialog(
    set_id: i64,
    board: Board,
    open: RwSignal<Option<BulkSelection>>,
    selection: BulkSelection,
) -> impl IntoView {
    let selection = RwSignal::new(selection);
    let verb = RwSignal::new(TriageVerb::AcceptCanonical);
    let preview = RwSignal::new(None::<BulkPreview>);
    let outcome = RwSignal::new(None::<Said>);
    let busy = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let facets = LocalResource::new(move || load_facets(set_id));
    let ask = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let (asked, verb) = (selection.get_untracked(), verb.get_untracked());
        busy.set(true);
        error.set(None);
        outcome.set(None);
        spawn_local(async move {
            match preview_bulk(set_id, asked, verb).await {
                Ok(p) => preview.set(Some(p)),
                Err(e) => error.set(Some(e.to_string())),
            }
            busy.set(false);
        });
    };
    let decide = move |_| {
        let Some(p) = preview.get_untracked() else {
            return;
        };
        busy.set(true);
        let expect = p
            .items
            .iter()
            .map(|i| model::BulkExpect {
                item_id: i.item_id,
                version: i.version,
            })
            .collect();
        spawn_local(async move {
            match decide_bulk(set_id, p.selection.clone(), p.verb, expect).await {
                Ok(done) => {
                    let words = done.describe(done_word(p.verb));
                    board.said.set(words.clone());
                    preview.set(None);
                    outcome.set(Some(Said {
                        done,
                        words,
                        undoable: true,
                    }));
                }
                Err(e) => error.set(Some(e.to_string())),
            }
            busy.set(false);
        });
    };
    let undo = move |batch: i64| {
        busy.set(true);
        spawn_local(async move {
            match undo_bulk(batch).await {
                Ok(done) => {
                    let words = format!("Undone. {}", done.describe(done_word(TriageVerb::Undo)));
                    board.said.set(words.clone());
                    outcome.set(Some(Said {
                        done,
                        words,
                        undoable: false,
                    }));
                }
                Err(e) => error.set(Some(e.to_string())),
            }
            busy.set(false);
        });
    };
    let choices = move || {
        let singles = facets
            .get()
            .and_then(Result::ok)
            .map(|f| f.connectors)
            .unwrap_or_default();
        let chosen = selection_value(&selection.get_untracked());
        let two = view! { <option value="two" selected=chosen == "two">"items found by two or more connectors"</option> };
        let singles = singles
            .into_iter()
            .filter(|c| c.single > 0)
            .map(|c| {
                let value = format!("single:{}", c.connector_id);
                let selected = value == chosen;
                view! {
                    <option value=value selected=selected>
                        {format!("the one item {} found in a record ({} records)", c.connector_id, c.single)}
                    </option>
                }
            })
            .collect_view();
        view! { {two}{singles} }
    };
    view! {
        <form class="bulk" role="dialog" aria-label="Decide in bulk" on:submit=ask>
            <label>"Which items "
                <select aria-label="Which items" on:change=move |ev| {
                    preview.set(None);
                    selection.set(selection_of(&event_target_value(&ev)));
                }>
                    <Suspense fallback=|| view! { <option>"…"</option> }>{choices}</Suspense>
                </select>
            </label>
            <label>" Decision "
                <select aria-label="Decision" on:change=move |ev| {
                    preview.set(None);
                    verb.set(verb_of(&event_target_value(&ev)));
                }>
                    <option value="accept-canonical">"accept"</option>
                    <option value="accept-context">"accept as context"</option>
                    <option value="discard">"discard"</option>
                </select>
            </label>
            " "
            <button type="submit" disabled=move || busy.get()>"Preview"</button>
            <button type="button" on:click=move |_| open.set(None)>"Close"</button>
            {move || preview.get().map(|p| view! { <PreviewList preview=p busy decide/> })}
            {move || outcome.get().map(|said| view! { <Outcome said busy undo/> })}
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        </form>
    }
}

/// What a bulk decision (or its undo) did, as the dialog says it.
#[derive(Clone)]
struct Said {
    done: BulkOutcome,
    words: String,
    /// A decision, not its undo: it can be taken back.
    undoable: bool,
}

/// What a bulk decision did, each item it skipped and who decided on it,
/// and (for a decision) its undo.
#[component]
fn Outcome(said: Said, busy: RwSignal<bool>, undo: impl Fn(i64) + Copy + 'static) -> impl IntoView {
    let batch = said.done.batch_id;
    view! {
        <div class="bulk-outcome" data-batch=batch>
            <p role="status">{said.words}</p>
            <ul class="skipped">
                {said.done.skipped.into_iter().map(|s| view! {
                    <li data-item=s.item_id>
                        {format!("{}: {} by {}", s.title, super::items::state_label(s.state), s.by.unwrap_or_else(|| "someone".to_owned()))}
                    </li>
                }).collect_view()}
            </ul>
            {said.undoable.then(|| view! {
                <button type="button" on:click=move |_| undo(batch) disabled=move || busy.get()>"Undo this bulk decision"</button>
            })}
        </div>
    }
}

/// What a bulk decision would change, and the button that makes it.
#[component]
fn PreviewList(
    preview: BulkPreview,
    busy: RwSignal<bool>,
    decide: impl Fn(leptos::ev::MouseEvent) + 'static,
) -> impl IntoView {
    let n = preview.items.len();
    let more = n.saturating_sub(LISTED);
    let action = format!("{} all {n}", do_word(preview.verb));
    view! {
        <div class="bulk-preview" data-count=n>
            <p>{format!("{n} item{} would change:", if n == 1 { "" } else { "s" })}</p>
            <ul>
                {preview.items.iter().take(LISTED).map(|line| view! {
                    <li data-item=line.item_id>
                        <strong>{line.record_name.clone()}</strong>" · "{line.title.clone()}
                        <span class="muted">{format!(" · {}", line.url)}</span>
                    </li>
                }).collect_view()}
            </ul>
            {(more > 0).then(|| view! { <p class="muted">{format!("and {more} more")}</p> })}
            {(n > 0).then(|| view! {
                <button type="button" class="primary" on:click=decide disabled=move || busy.get()>{action}</button>
            })}
        </div>
    }
}
