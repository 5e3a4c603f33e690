//! A chip: one pack on one record. Click fires the next connector (click
//! again while firing cancels); right-click or the caret opens the menu.

use leptos::prelude::*;
use leptos::task::spawn_local;
use model::{ChipState, PackConfig};

use super::api::{cancel_fire, fire_chip};
use super::board::{Board, ChipSlot};

/// Words for a state, for the aria-label and the tooltip.
pub fn describe(state: &ChipState) -> String {
    match state {
        ChipState::Idle => "not fired yet".to_owned(),
        ChipState::Firing => "firing".to_owned(),
        ChipState::Found { count } => format!("found {count}"),
        ChipState::NotFound => "nothing found".to_owned(),
        ChipState::Error { reason } => format!("error: {reason}"),
        ChipState::RateLimited { .. } => "rate-limited".to_owned(),
        ChipState::NeedsEnv { vars } => format!("needs {}", vars.join(", ")),
    }
}

#[component]
pub fn ChipButton(record_id: i64, pack: PackConfig, live: ChipSlot, board: Board) -> impl IntoView {
    let ChipSlot { state, fire, next } = live;
    let name = pack.display_name.clone();
    let pack_id = pack.pack_id.clone();
    let label = pack.short_label.clone();
    let error = RwSignal::new(None::<String>);
    // After 5 s without an answer the chip looks not-found while the fire goes
    // on; the answer corrects it.
    let slow = RwSignal::new(false);
    Effect::new(move |_| {
        if state.get() != ChipState::Firing {
            slow.set(false);
        }
    });
    // A cancel clicked before the server has said which fire is in flight
    // waits for the fire's id, then cancels it.
    let cancel_wanted = RwSignal::new(false);
    Effect::new(move |_| {
        let in_flight = fire.get();
        if state.get() != ChipState::Firing {
            cancel_wanted.set(false);
        } else if let (Some(id), true) = (in_flight, cancel_wanted.get()) {
            cancel_wanted.set(false);
            spawn_local(async move {
                let _ = cancel_fire(id).await;
            });
        }
    });
    let shown = move || match state.get() {
        ChipState::Firing if slow.get() => ChipState::NotFound,
        s => s,
    };

    let tooltip = {
        let name = name.clone();
        move || {
            let s = state.get();
            let what = match (&s, next.get()) {
                (ChipState::Firing, _) => "Click to cancel".to_owned(),
                (ChipState::NeedsEnv { vars }, _) => {
                    format!("Needs {} to activate", vars.join(", "))
                }
                (_, Some(connector)) => format!("Fire {name} through {connector}"),
                (_, None) => {
                    "No connector fires on a click now; right-click to see each one".to_owned()
                }
            };
            match error.get() {
                Some(e) => format!("{what}. {e}"),
                None => format!("{what}. Now: {}.", describe(&s)),
            }
        }
    };
    let on_click = {
        let pack_id = pack_id.clone();
        move |_| {
            if matches!(state.get_untracked(), ChipState::NeedsEnv { .. }) {
                return;
            }
            if state.get_untracked() == ChipState::Firing {
                match fire.get_untracked() {
                    Some(id) => spawn_local(async move {
                        let _ = cancel_fire(id).await;
                    }),
                    None => cancel_wanted.set(true),
                }
                return;
            }
            error.set(None);
            state.set(ChipState::Firing);
            slow.set(false);
            set_timeout(
                move || {
                    if state.get_untracked() == ChipState::Firing {
                        slow.set(true);
                    }
                },
                std::time::Duration::from_secs(5),
            );
            let pack_id = pack_id.clone();
            spawn_local(async move {
                match fire_chip(record_id, pack_id, None).await {
                    Ok(report) => {
                        fire.set(None);
                        state.set(report.chip);
                        for item in report.items {
                            board.put_item(item);
                        }
                        if report.attempts.is_empty() {
                            error.set(report.notes.last().cloned());
                        }
                    }
                    Err(e) => {
                        error.set(Some(e.to_string()));
                        state.set(ChipState::Error {
                            reason: e.to_string(),
                        });
                    }
                }
            });
        }
    };
    let open_menu = {
        let pack_id = pack_id.clone();
        move |ev: leptos::ev::MouseEvent| {
            ev.prevent_default();
            board.menu.set(Some((record_id, pack_id.clone())));
        }
    };
    let open_menu_caret = {
        let pack_id = pack_id.clone();
        move |_| board.menu.set(Some((record_id, pack_id.clone())))
    };
    let aria = {
        let name = name.clone();
        move || match (state.get(), slow.get()) {
            (ChipState::Firing, true) => format!("{name}: nothing found yet, still trying"),
            (s, _) => format!("{name}: {}", describe(&s)),
        }
    };
    view! {
        <span class="chip-wrap">
            <button
                class="chip"
                data-pack=pack_id.clone()
                data-state=move || shown().name()
                data-optimistic=move || slow.get().then_some("true")
                data-count=move || match state.get() {
                    ChipState::Found { count } => Some(count.to_string()),
                    _ => None,
                }
                aria-label=aria
                title=tooltip
                disabled=move || matches!(state.get(), ChipState::NeedsEnv { .. })
                on:click=on_click
                on:contextmenu=open_menu
            >
                {move || match shown() {
                    ChipState::Firing => view! { <span class="spinner" aria-hidden="true"></span> }.into_any(),
                    ChipState::Found { count } => {
                        view! { <span>{label.clone()}</span><span class="count">{count}</span> }.into_any()
                    }
                    ChipState::RateLimited { .. } => view! { <span>{label.clone()}" ⏱"</span> }.into_any(),
                    _ => view! { <span>{label.clone()}</span> }.into_any(),
                }}
            </button>
            <button
                class="caret"
                aria-label=format!("Connectors for {name}")
                aria-haspopup="menu"
                on:click=open_menu_caret
            >
                "▾"
            </button>
        </span>
    }
}
