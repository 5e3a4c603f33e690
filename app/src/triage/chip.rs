//! A chip: one pack on one record. Click fires the next connector (click
//! again while firing cancels, also once the chip looks not-found after
//! 5 s); right-click, the caret or a long press opens the menu. A
//! rate-limited chip counts down and comes back by itself. When the
//! record's daily cap stopped a fire, the chip asks "spend more?" and a
//! yes fires the connector past the cap.

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

/// A chip's own signals, beside its live state on the board: they last as
/// long as its card.
#[derive(Clone, Copy)]
struct ChipLocal {
    /// Why the last click did not fire, or failed.
    error: RwSignal<Option<String>>,
    /// No answer after [`OPTIMISTIC_AFTER`]: the chip looks not-found.
    slow: RwSignal<bool>,
    /// The clock a rate-limited chip counts down with.
    now: RwSignal<i64>,
    /// A cancel clicked before the server said which fire is in flight.
    cancel_wanted: RwSignal<bool>,
}

impl ChipLocal {
    fn new() -> Self {
        Self {
            error: RwSignal::new(None),
            slow: RwSignal::new(false),
            now: RwSignal::new(now_ms()),
            cancel_wanted: RwSignal::new(false),
        }
    }

    /// Keeps the chip's own signals in step with its live state: slow ends
    /// with the fire, a rate limit counts down, and a cancel
    /// clicked early goes out once the fire's id is known.
    fn follow(self, live: ChipSlot) {
        let ChipSlot { state, fire, .. } = live;
        Effect::new(move |_| {
            if state.get() != ChipState::Firing {
                self.slow.set(false);
            }
        });
        Effect::new(move |_| {
            if let ChipState::RateLimited { until } = state.get() {
                count_down(state, self.now, until);
            }
        });
        Effect::new(move |_| {
            let in_flight = fire.get();
            if state.get() != ChipState::Firing {
                self.cancel_wanted.set(false);
            } else if let (Some(id), true) = (in_flight, self.cancel_wanted.get()) {
                self.cancel_wanted.set(false);
                spawn_local(async move {
                    let _ = cancel_fire(id).await;
                });
            }
        });
    }

    /// How long a rate-limited chip still waits.
    fn waiting(self, state: RwSignal<ChipState>) -> Option<String> {
        match state.get() {
            ChipState::RateLimited { until } => Some(time_left(until, self.now.get())),
            _ => None,
        }
    }
}

#[component]
pub fn ChipButton(record_id: i64, pack: PackConfig, live: ChipSlot, board: Board) -> impl IntoView {
    let state = live.state;
    let name = pack.display_name.clone();
    let pack_id = pack.pack_id.clone();
    let label = pack.short_label.clone();
    let local = ChipLocal::new();
    local.follow(live);
    let slow = local.slow;
    // After 5 s without an answer the chip looks not-found while the fire
    // goes on; the answer corrects it.
    let shown = move || match state.get() {
        ChipState::Firing if slow.get() => ChipState::NotFound,
        s => s,
    };
    let waiting = move || local.waiting(state);
    let long_press = LongPress::new();
    let open_menu = {
        let pack_id = pack_id.clone();
        move || board.menu.set(Some((record_id, pack_id.clone())))
    };
    let on_click = {
        let pack_id = pack_id.clone();
        move |_| {
            if !long_press.ended_one() {
                click(record_id, &pack_id, live, local, board);
            }
        }
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
        move |ev: leptos::ev::PointerEvent| long_press.start(&ev, open_menu.clone())
    };
    let press_ends = move |_: leptos::ev::PointerEvent| long_press.cancel();
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
                aria-label=aria(name.clone(), state, local)
                title=tooltip(name.clone(), live, local, board.spent_of(record_id))
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
            {move || live.note.get().map(|note| view! { <span class="chip-note" role="status">{note}</span> })}
            {move || live.ask.get().map(|question| {
                let pack_id = pack_id.clone();
                view! { <SpendMore question record_id pack_id live local board/> }
            })}
        </span>
    }
}

/// The question a fire stopped by the record's daily cap asks beside the
/// chip: yes fires that connector past the cap, no puts it away.
#[component]
fn SpendMore(
    question: model::SpendQuestion,
    record_id: i64,
    pack_id: String,
    live: ChipSlot,
    local: ChipLocal,
    board: Board,
) -> impl IntoView {
    let yes_label = format!("Spend {}", question.price.in_unit(&question.unit));
    let connector = question.connector_id.clone();
    let yes = move |_| {
        let through = Fire {
            connector: Some(connector.clone()),
            spend_more: true,
        };
        fire_now(record_id, &pack_id, through, (live, local), board);
    };
    view! {
        <span class="spend-more" role="group" aria-label="Spend more on this record?">
            <span role="status">{question.ask()}</span>
            " "
            <button type="button" class="spend-yes" on:click=yes>{yes_label}</button>
            " "
            <button type="button" class="spend-no" on:click=move |_| live.ask.set(None)>"Not now"</button>
        </span>
    }
}

/// What to fire: the chain or exactly one connector, and whether past
/// the record's daily cap.
struct Fire {
    connector: Option<String>,
    spend_more: bool,
}

/// What a click on the chip does: nothing while it cannot fire; while it
/// fires (looking not-found after 5 s or not), cancel; otherwise fire the
/// next connector.
fn click(record_id: i64, pack_id: &str, live: ChipSlot, local: ChipLocal, board: Board) {
    let ChipSlot { state, fire, .. } = live;
    match state.get_untracked() {
        ChipState::NeedsEnv { .. } | ChipState::RateLimited { .. } => return,
        ChipState::Firing => {
            match fire.get_untracked() {
                Some(id) => spawn_local(async move {
                    let _ = cancel_fire(id).await;
                }),
                None => local.cancel_wanted.set(true),
            }
            return;
        }
        _ => {}
    }
    let chain = Fire {
        connector: None,
        spend_more: false,
    };
    fire_now(record_id, pack_id, chain, (live, local), board);
}

/// Fires the chip now: it shows firing (not-found after 5 s while the
/// fire goes on) until the answer comes.
fn fire_now(
    record_id: i64,
    pack_id: &str,
    what: Fire,
    (live, local): (ChipSlot, ChipLocal),
    board: Board,
) {
    let state = live.state;
    local.error.set(None);
    live.note.set(None);
    live.ask.set(None);
    state.set(ChipState::Firing);
    local.slow.set(false);
    set_timeout(
        move || {
            // The card may be gone (another page) by now.
            if state.try_get_untracked() == Some(ChipState::Firing) {
                local.slow.try_set(true);
            }
        },
        OPTIMISTIC_AFTER,
    );
    let pack_id = pack_id.to_owned();
    spawn_local(async move {
        match fire_chip(
            record_id,
            pack_id.clone(),
            what.connector,
            Some(what.spend_more),
        )
        .await
        {
            Ok(fired) => {
                if let Some(why) = fired.not_fired() {
                    local.error.try_set(Some(why));
                }
                board.fired(record_id, &pack_id, fired);
            }
            Err(e) => {
                local.error.try_set(Some(e.to_string()));
                state.set(ChipState::Error {
                    reason: e.to_string(),
                });
            }
        }
    });
}

/// The chip's tooltip: what a click would do now, and the state or the
/// last error.
fn tooltip(
    name: String,
    live: ChipSlot,
    local: ChipLocal,
    spent: Option<RwSignal<Vec<model::SpentToday>>>,
) -> impl Fn() -> String {
    let ChipSlot {
        state,
        next,
        held,
        chosen_by,
        next_cost,
        ..
    } = live;
    move || {
        let s = state.get();
        let what = match (&s, next.get()) {
            (ChipState::Firing, _) if local.slow.get() => {
                "Nothing found yet; still looking (click to cancel)".to_owned()
            }
            (ChipState::Firing, _) => "Click to cancel".to_owned(),
            (ChipState::NeedsEnv { vars }, _) => {
                format!("Needs {} to activate", vars.join(", "))
            }
            (ChipState::RateLimited { .. }, _) => format!(
                "Rate-limited: {name} can fire again in {}",
                local.waiting(state).unwrap_or_default()
            ),
            (_, Some(connector)) => {
                let why: Vec<String> = chosen_by
                    .get()
                    .map(|rule| rule.describe().to_owned())
                    .into_iter()
                    .chain(held.get())
                    .chain(next_cost.get().map(|c| c.describe()))
                    .collect();
                if why.is_empty() {
                    format!("Fire {name} through {connector}")
                } else {
                    format!("Fire {name} through {connector} ({})", why.join("; "))
                }
            }
            (_, None) => {
                "No connector fires on a click now; right-click to see each one".to_owned()
            }
        };
        let line = match local.error.get() {
            Some(e) => format!("{what}. {e}"),
            None => format!("{what}. Now: {}.", describe(&s)),
        };
        match spent.map(|s| s.get()).filter(|s| !s.is_empty()) {
            Some(spent) => format!(
                "{line} This record has cost {} today.",
                model::describe_spent(&spent)
            ),
            None => line,
        }
    }
}

/// What a screen reader hears for the chip.
fn aria(name: String, state: RwSignal<ChipState>, local: ChipLocal) -> impl Fn() -> String {
    move || match (state.get(), local.slow.get()) {
        (ChipState::Firing, true) => format!("{name}: nothing found yet, still looking"),
        (ChipState::RateLimited { .. }, _) => format!(
            "{name}: rate-limited, can fire again in {}",
            local.waiting(state).unwrap_or_default()
        ),
        (s, _) => format!("{name}: {}", describe(&s)),
    }
}

/// A touch held for [`LONG_PRESS`] opens the menu; the click that ends it
/// does not fire.
#[derive(Clone, Copy)]
struct LongPress {
    /// Counts presses, so a timer knows whether its press still lasts.
    pressed: StoredValue<u32>,
    /// A long press opened the menu; the click that ends it is not a click.
    opened: StoredValue<bool>,
}

impl LongPress {
    fn new() -> Self {
        Self {
            pressed: StoredValue::new(0),
            opened: StoredValue::new(false),
        }
    }

    fn start(self, ev: &leptos::ev::PointerEvent, open_menu: impl Fn() + 'static) {
        if ev.pointer_type() != "touch" {
            return;
        }
        let press = self.pressed.get_value().wrapping_add(1);
        self.pressed.set_value(press);
        set_timeout(
            move || {
                if self.pressed.try_get_value() == Some(press) {
                    self.opened.try_set_value(true);
                    open_menu();
                }
            },
            LONG_PRESS,
        );
    }

    fn cancel(self) {
        self.pressed.update_value(|p| *p = p.wrapping_add(1));
    }

    /// Whether this click ends a long press (and so does not fire).
    fn ended_one(self) -> bool {
        let opened = self.opened.get_value();
        if opened {
            self.opened.set_value(false);
        }
        opened
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
