//! The connector menu of a chip: every connector serving the intent, with
//! cost tier, status and this record's last attempt; fire through one, or
//! make it where this record always starts. An accessible menu: arrow keys
//! move, Enter fires, Escape closes.

use leptos::prelude::*;
use leptos::task::spawn_local;
use model::{ConnectorMenu, MenuEntry};

use super::api::{fire_chip, load_menu, set_start_with};
use super::board::Board;
use crate::clock::ago;

fn last_fire(entry: &MenuEntry) -> String {
    match &entry.last_attempt {
        None => "not fired for this record".to_owned(),
        Some(a) => {
            let outcome = match (a.outcome, a.result_count) {
                (Some(model::FireOutcome::Found), Some(n)) => format!("found {n}"),
                (Some(o), _) => o.name().replace('_', " "),
                (None, _) => "in flight".to_owned(),
            };
            format!("fired {} — {outcome}", ago(a.fired_at))
        }
    }
}

#[component]
pub fn ConnectorMenuView(board: Board) -> impl IntoView {
    // Read again when a connector changes, so an open menu shows one just
    // added (or removed) without a reload.
    let menu = Resource::new(
        move || (board.menu.get(), board.connectors.get()),
        |(open, _)| async move {
            match open {
                Some((record, pack)) => load_menu(record, pack).await.map(Some),
                None => Ok(None),
            }
        },
    );
    let close = move || board.menu.set(None);
    let on_keydown = move |ev: leptos::ev::KeyboardEvent| match ev.key().as_str() {
        "Escape" => {
            ev.prevent_default();
            close();
        }
        "ArrowDown" | "ArrowUp" => {
            ev.prevent_default();
            move_focus(ev.key() == "ArrowDown");
        }
        _ => {}
    };
    view! {
        <Show when=move || board.menu.get().is_some()>
            <div class="menu-backdrop" on:click=move |_| close()></div>
            <div class="connector-menu" role="menu" aria-label="Connectors" on:keydown=on_keydown>
                <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                    {move || Suspend::new(async move {
                        match menu.await {
                            Ok(Some(m)) => view! { <MenuItems menu=m board/> }.into_any(),
                            Ok(None) => ().into_any(),
                            Err(e) => view! { <p class="error">{e.to_string()}</p> }.into_any(),
                        }
                    })}
                </Transition>
                <button class="menu-close" on:click=move |_| close()>"Close"</button>
            </div>
        </Show>
    }
}

#[component]
fn MenuItems(menu: ConnectorMenu, board: Board) -> impl IntoView {
    let record_id = menu.record_id;
    let pack_id = menu.pack_id.clone();
    // After the entries are in the document.
    Effect::new(move |_| request_animation_frame(focus_first));
    menu.entries
        .into_iter()
        .map(|entry| {
            let id = entry.connector.id.clone();
            let available = entry.connector.status.is_available();
            let status = entry.connector.status_reason.clone().unwrap_or_else(|| "available".to_owned());
            let fire = {
                let (id, pack_id) = (id.clone(), pack_id.clone());
                move |_| {
                    let (id, pack_id) = (id.clone(), pack_id.clone());
                    board.menu.set(None);
                    spawn_local(async move {
                        if let Ok(report) = fire_chip(record_id, pack_id, Some(id)).await {
                            for item in report.items {
                                board.put_item(item);
                            }
                        }
                    });
                }
            };
            let start_with = {
                let (id, pack_id) = (id.clone(), pack_id.clone());
                let already = entry.record_override;
                move |_| {
                    let (id, pack_id) = (id.clone(), pack_id.clone());
                    board.menu.set(None);
                    spawn_local(async move {
                        let _ = set_start_with(record_id, pack_id, if already { None } else { Some(id) }).await;
                    });
                }
            };
            view! {
                <div class="menu-entry" data-connector=id.clone()>
                    <div class="menu-head">
                        <strong>{entry.connector.short_label.clone()}</strong>
                        <span class=format!("tier tier-{}", entry.connector.cost_tier.name())>{entry.connector.cost_tier.name()}</span>
                        {entry.next.then(|| view! { <span class="badge">"next"</span> })}
                    </div>
                    <div class="muted">{entry.connector.display_name.clone()}" · "{status}</div>
                    <div class="muted">{last_fire(&entry)}</div>
                    <button role="menuitem" disabled=!available on:click=fire>
                        "Fire through this connector"
                    </button>
                    <button role="menuitem" class="secondary" on:click=start_with>
                        {if entry.record_override { "Stop starting with it for this record" } else { "Always start with it for this record" }}
                    </button>
                </div>
            }
        })
        .collect_view()
}

#[cfg(feature = "hydrate")]
fn menu_items() -> Vec<web_sys::HtmlElement> {
    use wasm_bindgen::JsCast;
    let Ok(list) = document().query_selector_all(".connector-menu [role=menuitem]:not([disabled])")
    else {
        return Vec::new();
    };
    (0..list.length())
        .filter_map(|i| list.item(i))
        .filter_map(|n| n.dyn_into::<web_sys::HtmlElement>().ok())
        .collect()
}

#[cfg(feature = "hydrate")]
fn focus_first() {
    if let Some(first) = menu_items().first() {
        let _ = first.focus();
    }
}

#[cfg(not(feature = "hydrate"))]
fn focus_first() {}

#[cfg(feature = "hydrate")]
fn move_focus(down: bool) {
    let items = menu_items();
    if items.is_empty() {
        return;
    }
    let active = document().active_element();
    let at = items.iter().position(|i| {
        active
            .as_ref()
            .is_some_and(|a| a == i.as_ref() as &web_sys::Element)
    });
    let next = match (at, down) {
        (Some(i), true) => (i + 1) % items.len(),
        (Some(i), false) => (i + items.len() - 1) % items.len(),
        (None, _) => 0,
    };
    let _ = items[next].focus();
}

#[cfg(not(feature = "hydrate"))]
fn move_focus(_down: bool) {}
