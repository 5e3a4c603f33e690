//! The triage view of one record set: a card per record with its palette of
//! chips and the items found, live over server-sent events.

pub mod api;
mod board;
mod bulk;
mod chip;
mod compact;
mod fanout;
mod items;
mod keys;
mod menu;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};
use model::{PackConfig, Record, RecordFilter};

use crate::error_view::error_list;
use api::{load_triage, PAGE_SIZE};
use board::Board;
use bulk::BulkBar;
use chip::ChipButton;
use fanout::FanoutBar;
use items::ItemList;
use menu::ConnectorMenuView;
use model::TriagePage;

#[component]
pub fn TriageView() -> impl IntoView {
    let params = use_params_map();
    let set_id = Memo::new(move |_| {
        params
            .read()
            .get("id")
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(0)
    });
    // Another set is another view, with its own board and stream.
    move || {
        let set_id = set_id.get();
        view! { <SetView set_id/> }
    }
}

/// One record set's view: its board and stream live as long as it does,
/// across pages, filters, searches and reloads.
#[component]
fn SetView(set_id: i64) -> impl IntoView {
    let filter = RwSignal::new(RecordFilter::All);
    let query = use_query_map();
    // `?q=name`: the set searched for a name (a compact line's link).
    let asked_name = Memo::new(move |_| query.read().get("q").unwrap_or_default());
    let search = RwSignal::new(asked_name.get_untracked());
    // What is in the search box, searched for or not: a page that arrives
    // while a person types renders the box again and must keep it.
    let typed = RwSignal::new(asked_name.get_untracked());
    let offset = RwSignal::new(0i64);
    let reload = RwSignal::new(0u32);
    let facets = RwSignal::new(None::<model::SetFacets>);
    let board = Board::new(set_id);
    // `?view=compact`: one line per record instead of cards.
    let compact = Memo::new(move |_| query.read().get("view").as_deref() == Some("compact"));
    let page = crate::wire::resource(
        move || {
            (
                filter.get(),
                search.get(),
                offset.get(),
                reload.get(),
                compact.get(),
            )
        },
        move |(filter, search, offset, _, _)| load_triage(set_id, filter, search, offset),
    );
    // A link to another name searches for it.
    Effect::new(move |first: Option<()>| {
        let name = asked_name.get();
        if first.is_some() {
            offset.set(0);
            typed.set(name.clone());
            search.set(name);
        }
    });
    // A resync from the stream reads the page's data again.
    Effect::new(move |first: Option<()>| {
        let n = board.reload.get();
        if first.is_some() && n > 0 {
            reload.update(|r| *r += 1);
        }
    });
    view! {
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            <ErrorBoundary fallback=error_list>
                {move || Suspend::new(async move {
                    page.await.map(|data| {
                        let compact = compact.get_untracked();
                        let compact = compact.then_some(facets);
                        view! { <Cards data board filter search typed offset compact/> }
                    })
                })}
            </ErrorBoundary>
        </Transition>
    }
}

#[component]
fn Cards(
    data: TriagePage,
    board: Board,
    filter: RwSignal<RecordFilter>,
    search: RwSignal<String>,
    typed: RwSignal<String>,
    offset: RwSignal<i64>,
    /// One line per record instead of cards, with the set's facets.
    compact: Option<RwSignal<Option<model::SetFacets>>>,
) -> impl IntoView {
    let TriagePage {
        page,
        items,
        job,
        event_id,
        since,
    } = data;
    let set_id = page.record_set.id;
    board.visited_since(since);
    board.turn_page();
    board.see_job(job);
    for pack in &page.packs {
        board.label(&pack.pack_id, &pack.short_label);
    }
    let help = RwSignal::new(false);
    let labels: Vec<(String, String)> = page
        .packs
        .iter()
        .map(|p| (p.short_label.clone(), p.display_name.clone()))
        .collect();
    #[cfg(feature = "hydrate")]
    keys::listen(
        labels.clone(),
        page.packs.iter().map(|p| p.pack_id.clone()).collect(),
        help,
    );
    let total = page.total;
    let shown_from = page.offset;
    let shown_to = page.offset + page.records.len() as i64;
    let packs = page.packs.clone();
    let bulk = RwSignal::new(None::<model::BulkSelection>);
    let body = if let Some(facets) = compact {
        let asked = compact::Asked {
            set_id,
            filter,
            search,
            offset,
            facets,
        };
        let labels = packs.iter().map(|p| p.short_label.clone()).collect();
        view! { <CompactBody asked labels board bulk/> }.into_any()
    } else {
        let cards = page
            .records
            .into_iter()
            .map(|record| {
                let mine: Vec<model::Item> = items
                    .iter()
                    .filter(|i| i.record_id == record.id)
                    .cloned()
                    .collect();
                view! { <Card record packs=packs.clone() items=mine board/> }
            })
            .collect_view();
        view! { <div class="cards">{cards}</div> }.into_any()
    };
    // The cards' slots exist now: what happened since this page's read
    // reaches them, and the stream (opened once) goes on from the first.
    board.catch_up(event_id);
    board.follow(event_id);
    view! {
        <Title text=page.record_set.name.clone()/>
        <div class="triage-head">
            <h1>
                {page.record_set.name.clone()}
                {page.record_set.is_demo.then(|| view! { <span class="badge demo">"demo data"</span> })}
            </h1>
            <p class="muted">
                {format!("{} records · bundle {} · ", page.record_set.records, page.record_set.bundle_id)}
                "export the accepted items as "
                <a href=format!("/api/record-sets/{set_id}/export?format=csv") download>"CSV"</a>
                " or "
                <a href=format!("/api/record-sets/{set_id}/export?format=json") download>"JSON"</a>
                " · press ? for keys"
            </p>
            <Together board/>
            <div class="set-actions">
                <FanoutBar set_id board/>
                <BulkBar set_id board open=bulk/>
                <ViewSwitch set_id compact=compact.is_some()/>
            </div>
            <Toolbar filter search typed offset shown_from shown_to total paged=compact.is_none()/>
        </div>
        {body}
        <ConnectorMenuView board/>
        <keys::KeyHelp open=help labels/>
        <p class="sr" role="status" aria-live="polite">{move || board.said.get()}</p>
    }
}

/// The set's filter, name search and paging: any change starts again at
/// the first page.
#[component]
fn Toolbar(
    filter: RwSignal<RecordFilter>,
    search: RwSignal<String>,
    typed: RwSignal<String>,
    offset: RwSignal<i64>,
    shown_from: i64,
    shown_to: i64,
    total: i64,
    /// Cards come in pages; the compact view scrolls through every line.
    paged: bool,
) -> impl IntoView {
    view! {
        <div class="toolbar">
            <label>
                "Show "
                <select
                    aria-label="Filter"
                    on:change=move |ev| {
                        let f = match event_target_value(&ev).as_str() {
                            "unreviewed" => RecordFilter::Unreviewed,
                            "nothing_found" => RecordFilter::NothingFound,
                            "errors" => RecordFilter::Errors,
                            "changed" => RecordFilter::Changed,
                            _ => RecordFilter::All,
                        };
                        offset.set(0);
                        filter.set(f);
                    }
                >
                    <option value="all" selected=move || filter.get() == RecordFilter::All>"all"</option>
                    <option value="unreviewed" selected=move || filter.get() == RecordFilter::Unreviewed>"has unreviewed"</option>
                    <option value="nothing_found" selected=move || filter.get() == RecordFilter::NothingFound>"nothing found"</option>
                    <option value="errors" selected=move || filter.get() == RecordFilter::Errors>"errors"</option>
                    <option value="changed" selected=move || filter.get() == RecordFilter::Changed>"new since my last visit"</option>
                </select>
            </label>
            <input
                type="search"
                placeholder="Search by name"
                aria-label="Search by name"
                prop:value=move || typed.get()
                on:input=move |ev| typed.set(event_target_value(&ev))
                on:change=move |_| {
                    offset.set(0);
                    search.set(typed.get_untracked());
                }
                on:keydown=move |ev| {
                    // Enter searches at once (change waits for the field to lose focus).
                    if ev.key() == "Enter" {
                        offset.set(0);
                        search.set(typed.get_untracked());
                    }
                }
            />
            {paged.then(|| view! {
                <span class="muted">{format!("{}–{} of {total}", (shown_from + 1).min(total), shown_to)}</span>
                <button disabled={shown_from == 0} on:click=move |_| offset.update(|o| *o = (*o - PAGE_SIZE).max(0))>"← Previous"</button>
                <button disabled={shown_to >= total} on:click=move |_| offset.update(|o| *o += PAGE_SIZE)>"Next →"</button>
            })}
        </div>
    }
}

/// Cards or one line per record.
#[component]
fn ViewSwitch(set_id: i64, compact: bool) -> impl IntoView {
    let here = |on: bool| if on { Some("page") } else { None };
    view! {
        <nav class="view-switch" aria-label="View">
            <a href=format!("/record-sets/{set_id}") aria-current=here(!compact)>"Cards"</a>
            " · "
            <a href=format!("/record-sets/{set_id}?view=compact") aria-current=here(compact)>"Compact"</a>
        </nav>
    }
}

/// The compact view, drawn once the page runs in the browser (it measures
/// what is in view) and fetched as a chunk of its own.
#[component]
fn CompactBody(
    asked: compact::Asked,
    labels: Vec<String>,
    board: Board,
    bulk: RwSignal<Option<model::BulkSelection>>,
) -> impl IntoView {
    let mounted = RwSignal::new(false);
    Effect::new(move |_| mounted.set(true));
    let failed = RwSignal::new(false);
    view! {
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || mounted.get().then(|| {
                let labels = labels.clone();
                Suspend::new(async move {
                    compact::compact(asked, labels, board, bulk).await.unwrap_or_else(|_| {
                        failed.set(true);
                        ().into_any()
                    })
                })
            })}
        </Suspense>
        {move || failed.get().then(|| view! { <p class="error" role="alert">{crate::chunk::NOT_LOADED}</p> })}
    }
}

/// Who else is here, what people did lately, whether the server's database
/// answers, and (to admins) a connector that came to need them (live).
#[component]
fn Together(board: Board) -> impl IntoView {
    let crate::pages::ViewerResource(viewer) = expect_context();
    let is_admin = move || matches!(viewer.get(), Some(Ok(Some(v))) if v.is_admin());
    let attention = move || {
        let list = board.attention.get();
        (is_admin() && !list.is_empty()).then(|| {
            view! {
                <ul class="attention" aria-label="Connectors that need an admin">
                    {list.into_iter().map(|a| view! {
                        <li data-connector=a.connector_id.clone()>
                            <strong>{a.what}</strong>" · "
                            <a href="/inventory">"what to do"</a>
                        </li>
                    }).collect_view()}
                </ul>
            }
        })
    };
    let away = move || {
        board.database_away.get().then(|| {
            view! {
                <p class="database-away" role="status">
                    "The server's database does not answer: nothing can change until it is back. This page catches up by itself."
                </p>
            }
        })
    };
    view! {
        <div class="together" aria-live="polite">
            {away}
            {attention}
            <p class="viewers" data-viewers=move || board.viewers.get().join(" ")>
                {move || {
                    let viewers = board.viewers.get();
                    let others = board.viewers_count.get().saturating_sub(viewers.len());
                    if viewers.is_empty() {
                        String::new()
                    } else if others == 0 {
                        format!("Viewing now: {}", viewers.join(", "))
                    } else {
                        format!("Viewing now: {} and {others} more", viewers.join(", "))
                    }
                }}
            </p>
            <ul class="activity">
                {move || {
                    board
                        .activity
                        .get()
                        .into_iter()
                        .map(|(who, what)| view! { <li><strong>{who}</strong>" · "{what}</li> })
                        .collect_view()
                }}
            </ul>
        </div>
    }
}

#[component]
fn Card(
    record: Record,
    packs: Vec<PackConfig>,
    items: Vec<model::Item>,
    board: Board,
) -> impl IntoView {
    let items = board.items(record.id, items);
    board.spent(record.id, record.spent_today.clone());
    board.name(record.id, &record.name);
    let chips = packs
        .into_iter()
        .map(|pack| {
            let chip = record.chips.iter().find(|c| c.pack_id == pack.pack_id);
            let live = board.chip(record.id, &pack.pack_id, chip);
            view! { <ChipButton record_id=record.id pack live board/> }
        })
        .collect_view();
    let fields = record
        .fields
        .iter()
        .filter(|f| !f.value.is_empty())
        .take(4)
        .map(|f| view! { <span class="field"><span class="muted">{f.name.clone()}": "</span>{f.value.clone()}</span> })
        .collect_view();
    view! {
        <article class="card" data-record=record.id tabindex="0">
            <header>
                <h2>{record.name.clone()}</h2>
                <div class="fields">{fields}</div>
            </header>
            <div class="palette" role="group" aria-label=format!("Chips for {}", record.name)>{chips}</div>
            <ItemList items board/>
        </article>
    }
}
