//! The connector menu of a chip, anchored under it: one line per connector
//! serving the intent (cost glyph, name and short label, its place in the
//! person's own order, status, its price and budget left, this record's
//! last attempt) that
//! fires through it, and a star that makes it where this record always
//! starts; a fire in flight can be cancelled here. An accessible menu:
//! arrow keys move, Enter fires, Escape closes and gives the chip its
//! focus back.

use leptos::prelude::*;
use leptos::task::spawn_local;
use model::{ConnectorMenu, MenuEntry};

use super::api::{cancel_fire, fire_chip, load_menu, set_start_with};
use super::board::Board;
use crate::clock::ago;

fn last_fire(entry: &MenuEntry) -> String {
    match &entry.last_attempt {
        None => "not fired for this record".to_owned(),
        Some(a) => {
            let outcome = match (a.end.outcome, a.end.result_count) {
                (Some(model::FireOutcome::Found), Some(n)) => format!("found {n}"),
                (Some(o), _) => o.name().replace('_', " "),
                (None, _) => "in flight".to_owned(),
            };
            format!("fired {} — {outcome}", ago(a.fired_at))
        }
    }
}

/// The last attempt in full, on hover: why it ended as it did and its
/// receipt (the connector's version and each request it sent, without
/// secrets or values).
fn last_fire_detail(entry: &MenuEntry) -> Option<String> {
    let a = entry.last_attempt.as_ref()?;
    let mut lines: Vec<String> = a.end.error.iter().cloned().collect();
    if let Some(receipt) = &a.end.receipt {
        lines.push(receipt.version.clone());
        lines.extend(receipt.requests.iter().map(model::RequestReceipt::describe));
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// The glyph for a cost tier (its name is read out and shown on hover).
fn cost_icon(tier: model::CostTier) -> &'static str {
    match tier {
        model::CostTier::Free => "○",
        model::CostTier::FreeTier => "◐",
        model::CostTier::Paid => "$",
    }
}

#[component]
pub fn ConnectorMenuView(board: Board) -> impl IntoView {
    // Anchored under its chip (page coordinates), kept inside the window.
    // Whole pixels.
    let at = RwSignal::new(None::<(i32, i32)>);
    Effect::new(move |_| at.set(board.menu.get().and_then(|(r, p)| chip_corner(r, &p))));
    let close = move || {
        // Focus goes back to the chip the menu belongs to.
        if let Some((record, pack)) = board.menu.get_untracked() {
            focus_chip(record, &pack);
        }
        board.menu.set(None);
    };
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
    let style = move || match at.get() {
        Some((left, top)) => format!("left: {left}px; top: {top}px"),
        None => String::new(),
    };
    view! {
        <Show when=move || board.menu.get().is_some()>
            <div class="menu-backdrop" on:click=move |_| close()></div>
            <div
                class="connector-menu"
                class:anchored=move || at.get().is_some()
                style=style
                role="menu"
                aria-label="Connectors"
                tabindex="-1"
                on:keydown=on_keydown
            >
                <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                    {move || {
                        let open = board.menu.get();
                        // Read again when a connector changes, so an open
                        // menu shows one just added (or removed) at once.
                        board.connectors.track();
                        Suspend::new(async move {
                            let Some((record, pack)) = open else {
                                return ().into_any();
                            };
                            menu_lines(record, pack, board).await.unwrap_or_else(|_| {
                                view! { <MenuMessage text=crate::chunk::NOT_LOADED.to_owned()/> }.into_any()
                            })
                        })
                    }}
                </Transition>
            </div>
        </Show>
    }
}

crate::chunk::lazy_view! {
    /// The menu's lines for one chip, read from the server and drawn: a
    /// chunk of its own, which the browser fetches when a person first
    /// opens a menu.
    menu_lines: async fn menu_lines(record_id: i64, pack_id: String, board: Board) {
        match load_menu(record_id, pack_id).await {
            Ok(menu) => view! { <MenuItems menu board/> }.into_any(),
            Err(e) => view! { <MenuMessage text=e.to_string()/> }.into_any(),
        }
    }
}

/// Why the menu has no entries, in their place; the menu takes the focus.
#[component]
fn MenuMessage(text: String) -> impl IntoView {
    Effect::new(move |_| request_animation_frame(focus_first));
    view! { <p class="error" role="alert">{text}</p> }
}

#[component]
fn MenuItems(menu: ConnectorMenu, board: Board) -> impl IntoView {
    let record_id = menu.record_id;
    let pack_id = menu.pack_id.clone();
    // After the entries are in the document.
    Effect::new(move |_| request_animation_frame(focus_first));
    let cancel = {
        let pack_id = pack_id.clone();
        move || {
            board.fire_in_flight(record_id, &pack_id).map(|fire_id| {
                view! {
                    <button
                        role="menuitem"
                        class="menu-cancel"
                        on:click=move |_| {
                            board.menu.set(None);
                            spawn_local(async move {
                                let _ = cancel_fire(fire_id).await;
                            });
                        }
                    >
                        "Cancel the fire in flight"
                    </button>
                }
            })
        }
    };
    let entries = menu
        .entries
        .into_iter()
        .map(|entry| view! { <MenuEntryView entry record_id pack_id=pack_id.clone() board/> })
        .collect_view();
    // What this record has cost today, live.
    let spent = board.spent_of(record_id).map(|spent| {
        move || {
            let spent = spent.get();
            (!spent.is_empty()).then(|| {
                view! {
                    <p class="menu-spent muted">{format!("This record has cost {} today.", model::describe_spent(&spent))}</p>
                }
            })
        }
    });
    view! { {cancel} {entries} {spent} }
}

/// One connector of the menu: fire through it, with its cost tier, status
/// and last fire for this record; and whether this record always starts
/// with it.
#[component]
fn MenuEntryView(entry: MenuEntry, record_id: i64, pack_id: String, board: Board) -> impl IntoView {
    let id = entry.connector.profile.id.clone();
    let name = entry.connector.profile.display_name.clone();
    let short = entry.connector.profile.short_label.clone();
    let available = entry.connector.status.is_available();
    let status = entry
        .connector
        .status_reason
        .clone()
        .unwrap_or_else(|| "available".to_owned());
    let tier = entry.connector.profile.cost_tier;
    let fire = {
        let (id, pack_id) = (id.clone(), pack_id.clone());
        move |_| {
            let (id, pack_id) = (id.clone(), pack_id.clone());
            board.menu.set(None);
            spawn_local(async move {
                if let Ok(fired) = fire_chip(record_id, pack_id.clone(), Some(id), None).await {
                    board.fired(record_id, &pack_id, fired);
                }
            });
        }
    };
    let already = entry.record_override;
    let start_with = {
        let (id, pack_id) = (id.clone(), pack_id.clone());
        move |_| {
            let (id, pack_id) = (id.clone(), pack_id.clone());
            board.menu.set(None);
            spawn_local(async move {
                let _ =
                    set_start_with(record_id, pack_id, if already { None } else { Some(id) }).await;
            });
        }
    };
    let start_label = if already {
        format!("Stop always starting with {name} for this record")
    } else {
        format!("Always start with {name} for this record")
    };
    view! {
        <div class="menu-entry" data-connector=id.clone() data-next=entry.next.then_some("true")>
            <button
                role="menuitem"
                class="menu-fire"
                disabled=!available
                aria-label=format!("Fire through {name}")
                title=format!("Fire through {name} ({})", tier.name())
                on:click=fire
            >
                <span class=format!("cost cost-{}", tier.name()) title=tier.name()>
                    <span aria-hidden="true">{cost_icon(tier)}</span>
                    <span class="sr">{tier.name()}</span>
                </span>
                <span class="menu-name">{name.clone()}</span>
                <span class="menu-short" title="Short label">{short}</span>
                {entry.next.then(|| view! { <span class="badge">"next"</span> })}
                {entry.your_order.map(|n| view! {
                    <span class="badge yours" title=format!("Place {n} in your order for this pack (Settings)")>{format!("your #{n}")}</span>
                })}
                <span class=format!("menu-status status-{}", entry.connector.status.kind())>{status}</span>
                {entry.price.as_ref().map(|p| view! { <span class="menu-price">{p.describe()}</span> })}
                <span class="menu-last" title=last_fire_detail(&entry)>{last_fire(&entry)}</span>
            </button>
            <button
                role="menuitemcheckbox"
                aria-checked=if already { "true" } else { "false" }
                class="menu-pin"
                aria-label=start_label.clone()
                title=start_label
                on:click=start_with
            >
                {if already { "★" } else { "☆" }}
            </button>
        </div>
    }
}

/// The CSS selector of a record's chip for a pack.
#[cfg(feature = "hydrate")]
fn chip_selector(record: i64, pack: &str) -> String {
    format!("article.card[data-record=\"{record}\"] button.chip[data-pack=\"{pack}\"]")
}

/// The bottom-left corner of a chip in page coordinates, moved left as far
/// as needed for a menu of the usual width to fit the window.
#[cfg(feature = "hydrate")]
#[allow(clippy::cast_possible_truncation)]
fn chip_corner(record: i64, pack: &str) -> Option<(i32, i32)> {
    let chip = document()
        .query_selector(&chip_selector(record, pack))
        .ok()??;
    let rect = chip.get_bounding_client_rect();
    let win = window();
    let width = win.inner_width().ok()?.as_f64()?;
    let (sx, sy) = (win.scroll_x().ok()?, win.scroll_y().ok()?);
    // The menu is at most 30rem (480 px) wide; keep 8 px from the edge.
    let left = rect.left().min(width - 488.0).max(8.0);
    Some((
        (left + sx).round() as i32,
        (rect.bottom() + sy + 4.0).round() as i32,
    ))
}

#[cfg(not(feature = "hydrate"))]
fn chip_corner(_record: i64, _pack: &str) -> Option<(i32, i32)> {
    None
}

#[cfg(feature = "hydrate")]
fn focus_chip(record: i64, pack: &str) {
    use wasm_bindgen::JsCast;
    if let Ok(Some(chip)) = document().query_selector(&chip_selector(record, pack)) {
        if let Ok(chip) = chip.dyn_into::<web_sys::HtmlElement>() {
            let _ = chip.focus();
        }
    }
}

#[cfg(not(feature = "hydrate"))]
fn focus_chip(_record: i64, _pack: &str) {}

#[cfg(feature = "hydrate")]
fn menu_items() -> Vec<web_sys::HtmlElement> {
    use wasm_bindgen::JsCast;
    let Ok(list) =
        document().query_selector_all(".connector-menu [role^=menuitem]:not([disabled])")
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
    use wasm_bindgen::JsCast;
    // With no entry (the menu says why), the menu itself takes the focus,
    // so Escape still closes it.
    let target = menu_items().into_iter().next().or_else(|| {
        document()
            .query_selector(".connector-menu")
            .ok()
            .flatten()
            .and_then(|m| m.dyn_into::<web_sys::HtmlElement>().ok())
    });
    if let Some(target) = target {
        let _ = target.focus();
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
