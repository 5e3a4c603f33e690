//! A chip: one pack on one record. Click fires the next connector (click
//! again while firing cancels, except once the chip already says "nothing
//! found yet": then the fire goes on and the chip says it is still
//! looking); right-click, the caret or a long press opens the menu. A
//! rate-limited chip counts down and comes back by itself.

use std::time::Duration;

use leptos::prelude::*;
use leptos::task::spawn_local;
use model::{ChipState, PackConfig};

use super::api::{cancel_fire, fire_chip};
use super::board::{Board, ChipSlot};
use crate::clock::now_ms;

/// Words for a state, for the aria-label and the activity line.
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

/// How long until `until` (Unix ms) from `now`, as the chip shows it:
/// "12 s", "3 min", "2 h" (rounded up, never "0 s").
pub fn time_left(until: i64, now: i64) -> String {
    let ms = u64::try_from(until.saturating_sub(now)).unwrap_or(0);
    match ms.div_ceil(1000).max(1) {
        s @ 1..=99 => format!("{s} s"),
        s @ 100..=5_999 => format!("{} min", s.div_ceil(60)),
        s => format!("{} h", s.div_ceil(3600)),
    }
}

/// How long the chip waits for an answer before it looks not-found while
/// the fire goes on (the source document's optimistic not-found).
const OPTIMISTIC_AFTER: Duration = Duration::from_secs(5);

/// How long a touch must last to open the menu instead of firing.
const LONG_PRESS: Duration = Duration::from_millis(500);

#[component]
pub fn ChipButton(record_id: i64, pack: PackConfig, live: ChipSlot, board: Board) -> impl IntoView {
    let ChipSlot {
        state,
        fire,
        next,
        held,
    } = live;
    let name = pack.display_name.clone();
    let pack_id = pack.pack_id.clone();
    let label = pack.short_label.clone();
    let error = RwSignal::new(None::<String>);
    // After 5 s without an answer the chip looks not-found while the fire goes
    // on; the answer corrects it. A click then says "still looking".
    let slow = RwSignal::new(false);
    let nudged = RwSignal::new(false);
    Effect::new(move |_| {
        if state.get() != ChipState::Firing {
            slow.set(false);
            nudged.set(false);
        }
    });
    // A rate-limited chip counts the wait down and is clickable again when
    // it ends, as the server's chip would be on a reload.
    let now = RwSignal::new(now_ms());
    Effect::new(move |_| {
        if let ChipState::RateLimited { until } = state.get() {
            count_down(state, now, until);
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
    let waiting = move || match state.get() {
        ChipState::RateLimited { until } => Some(time_left(until, now.get())),
        _ => None,
    };

    let tooltip = {
        let name = name.clone();
        move || {
            let s = state.get();
            let what = match (&s, next.get()) {
                (ChipState::Firing, _) if slow.get() => {
                    "Nothing found yet; still looking (right-click to cancel)".to_owned()
                }
                (ChipState::Firing, _) => "Click to cancel".to_owned(),
                (ChipState::NeedsEnv { vars }, _) => {
                    format!("Needs {} to activate", vars.join(", "))
                }
                (ChipState::RateLimited { .. }, _) => format!(
                    "Rate-limited: {name} can fire again in {}",
                    waiting().unwrap_or_default()
                ),
                (_, Some(connector)) => match held.get() {
                    Some(why) => format!("Fire {name} through {connector} ({why})"),
                    None => format!("Fire {name} through {connector}"),
                },
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
    // A long press opens the menu; the click that ends it does not fire.
    let pressed = StoredValue::new(0u32);
    let long_pressed = StoredValue::new(false);
    let on_click = {
        let pack_id = pack_id.clone();
        move |_| {
            if long_pressed.get_value() {
                long_pressed.set_value(false);
                return;
            }
            match state.get_untracked() {
                ChipState::NeedsEnv { .. } | ChipState::RateLimited { .. } => return,
                ChipState::Firing if slow.get_untracked() => {
                    nudged.set(true);
                    return;
                }
                ChipState::Firing => {
                    match fire.get_untracked() {
                        Some(id) => spawn_local(async move {
                            let _ = cancel_fire(id).await;
                        }),
                        None => cancel_wanted.set(true),
                    }
                    return;
                }
                _ => {}
            }
            error.set(None);
            state.set(ChipState::Firing);
            slow.set(false);
            set_timeout(
                move || {
                    // The card may be gone (another page) by now.
                    if state.try_get_untracked() == Some(ChipState::Firing) {
                        slow.try_set(true);
                    }
                },
                OPTIMISTIC_AFTER,
            );
            let pack_id = pack_id.clone();
            spawn_local(async move {
                match fire_chip(record_id, pack_id, None).await {
                    Ok(fired) => {
                        fire.set(None);
                        state.set(fired.chip);
                        for item in fired.items {
                            board.put_item(item);
                        }
                        if fired.not_fired.is_some() {
                            error.try_set(fired.not_fired);
                        }
                    }
                    Err(e) => {
                        error.try_set(Some(e.to_string()));
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
        move || board.menu.set(Some((record_id, pack_id.clone())))
    };
    let on_contextmenu = {
        let open_menu = open_menu.clone();
        move |ev: leptos::ev::MouseEvent| {
            ev.prevent_default();
            open_menu();
        }
    };
    let on_pointerdown = {
        let open_menu = open_menu.clone();
        move |ev: leptos::ev::PointerEvent| {
            if ev.pointer_type() != "touch" {
                return;
            }
            let press = pressed.get_value().wrapping_add(1);
            pressed.set_value(press);
            let open_menu = open_menu.clone();
            set_timeout(
                move || {
                    if pressed.try_get_value() == Some(press) {
                        long_pressed.try_set_value(true);
                        open_menu();
                    }
                },
                LONG_PRESS,
            );
        }
    };
    let press_ends = move |_: leptos::ev::PointerEvent| {
        pressed.update_value(|p| *p = p.wrapping_add(1));
    };
    let aria = {
        let name = name.clone();
        move || match (state.get(), slow.get()) {
            (ChipState::Firing, true) => format!("{name}: nothing found yet, still looking"),
            (ChipState::RateLimited { .. }, _) => format!(
                "{name}: rate-limited, can fire again in {}",
                waiting().unwrap_or_default()
            ),
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
                disabled=move || {
                    matches!(state.get(), ChipState::NeedsEnv { .. } | ChipState::RateLimited { .. })
                }
                on:click=on_click
                on:contextmenu=on_contextmenu
                on:pointerdown=on_pointerdown
                on:pointerup=press_ends
                on:pointercancel=press_ends
                on:pointerleave=press_ends
            >
                {move || match shown() {
                    ChipState::Firing => view! { <span class="spinner" aria-hidden="true"></span> }.into_any(),
                    ChipState::Found { count } => {
                        view! { <span>{label.clone()}</span><span class="count">{count}</span> }.into_any()
                    }
                    ChipState::RateLimited { .. } => {
                        view! { <span>{label.clone()}</span><span class="wait">{waiting}</span> }.into_any()
                    }
                    _ => view! { <span>{label.clone()}</span> }.into_any(),
                }}
            </button>
            <button
                class="caret"
                aria-label=format!("Connectors for {name}")
                aria-haspopup="menu"
                on:click=move |_| open_menu()
            >
                "▾"
            </button>
            <Show when=move || nudged.get() && slow.get()>
                <span class="chip-note" role="status">"still looking…"</span>
            </Show>
        </span>
    }
}

/// Moves `now` on every second while the chip waits out `until`, and puts
/// the chip back to idle (clickable) when the wait is over. Stops as soon as
/// the chip's state is anything else or its card is gone. (The chip's
/// state lives as long as the board; its own signals only as long as the
/// card, so timers use the `try_` forms.)
fn count_down(state: RwSignal<ChipState>, now: RwSignal<i64>, until: i64) {
    if state.try_get_untracked() != Some(ChipState::RateLimited { until }) {
        return;
    }
    let at = now_ms();
    // The card may be gone (another page): its clock stops with it.
    if now.try_set(at).is_some() {
        return;
    }
    let left = until - at;
    if left <= 0 {
        state.set(ChipState::Idle);
        return;
    }
    // Wake when the shown second changes (or the wait ends).
    let step = (left - 1) % 1000 + 1;
    set_timeout(
        move || count_down(state, now, until),
        Duration::from_millis(u64::try_from(step).unwrap_or(1000)),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_is_rounded_up_in_the_unit_a_person_reads() {
        assert_eq!(time_left(10_000, 0), "10 s");
        assert_eq!(time_left(9_001, 0), "10 s");
        assert_eq!(time_left(1, 0), "1 s");
        // Past its end it still says a second until the chip comes back.
        assert_eq!(time_left(0, 5_000), "1 s");
        assert_eq!(time_left(99_000, 0), "99 s");
        assert_eq!(time_left(100_000, 0), "2 min");
        assert_eq!(time_left(3_600_000, 0), "60 min");
        assert_eq!(time_left(6_000_000, 0), "2 h");
    }
}
