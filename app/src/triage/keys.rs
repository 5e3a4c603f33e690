//! Keyboard triage: `j` / `k` move between cards, a pack's short label fires
//! it on the focused card, the arrows move among a card's found items and
//! Enter, Shift+Enter, Delete and Ctrl+Z decide on the focused one, `?`
//! shows the keys. Pack labels are letters and digits; the item keys are
//! none, so the two never collide. Keys typed into a field are left alone.

use leptos::prelude::*;

/// The keys, as the help lists them.
#[component]
pub fn KeyHelp(open: RwSignal<bool>, labels: Vec<(String, String)>) -> impl IntoView {
    view! {
        <Show when=move || open.get()>
            <div class="menu-backdrop" on:click=move |_| open.set(false)></div>
            <div class="key-help" role="dialog" aria-label="Keyboard shortcuts">
                <h2>"Keys"</h2>
                <dl>
                    <dt>"j / k"</dt><dd>"next / previous record"</dd>
                    <dt>"↓ / ↑"</dt><dd>"next / previous found item of the record"</dd>
                    <dt>"Enter"</dt><dd>"accept the item"</dd>
                    <dt>"Shift+Enter"</dt><dd>"accept the item as context"</dd>
                    <dt>"Delete"</dt><dd>"discard the item"</dd>
                    <dt>"Ctrl+Z"</dt><dd>"undo the item's decision"</dd>
                    <dt>"Ctrl+Enter"</dt><dd>"open the item's page"</dd>
                    {labels.iter().map(|(label, name)| view! { <dt>{label.clone()}</dt><dd>{format!("fire {name} on the focused record")}</dd> }).collect_view()}
                    <dt>"?"</dt><dd>"show or hide these keys"</dd>
                    <dt>"Esc"</dt><dd>"close, or back from an item to its record"</dd>
                </dl>
                <p class="muted">"Pack labels are letters and digits; the item keys are not, so they never collide."</p>
            </div>
        </Show>
    }
}

/// Listens for the keys while the view lives.
#[cfg(feature = "hydrate")]
pub fn listen(labels: Vec<(String, String)>, packs: Vec<String>, help: RwSignal<bool>) {
    use std::time::Duration;
    use wasm_bindgen::JsCast;

    // Labels match in any case. The browser folds case and tells letters
    // and digits (its Unicode tables), so the module carries none of its own.
    let folded: Vec<String> = labels.iter().map(|(l, _)| fold_case(l)).collect();
    let letter_or_digit = js_sys::RegExp::new(r"^[\p{L}\p{N}]$", "u");
    let typed = StoredValue::new((String::new(), 0.0f64));
    let handle = window_event_listener(leptos::ev::keydown, move |ev| {
        if item_key(&ev) {
            ev.prevent_default();
            return;
        }
        if ev.ctrl_key() || ev.meta_key() || ev.alt_key() {
            return;
        }
        let in_field = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .is_some_and(|el| matches!(el.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"));
        if in_field {
            return;
        }
        let key = ev.key();
        match key.as_str() {
            "?" => help.update(|h| *h = !*h),
            "Escape" => help.set(false),
            "j" | "k" if typed.with_value(|(t, _)| t.is_empty()) => {
                ev.prevent_default();
                move_card(key == "j");
            }
            k if k.chars().count() == 1 && letter_or_digit.test(k) => {
                let now = js_sys::Date::now();
                let buffer = typed.with_value(|(t, at)| {
                    if now - at > 800.0 {
                        k.to_owned()
                    } else {
                        format!("{t}{k}")
                    }
                });
                typed.set_value((buffer.clone(), now));
                let buffer = fold_case(&buffer);
                let exact = folded.iter().position(|l| *l == buffer);
                let longer = folded
                    .iter()
                    .any(|l| l.len() > buffer.len() && l.starts_with(&buffer));
                match (exact, longer) {
                    (Some(i), false) => {
                        typed.set_value((String::new(), 0.0));
                        fire_on_focused(&packs[i]);
                    }
                    (Some(i), true) => {
                        // "t" could still become "tt": wait a moment for the next key.
                        let pack = packs[i].clone();
                        let expected = buffer.clone();
                        set_timeout(
                            move || {
                                if typed.with_value(|(t, _)| *t == expected) {
                                    typed.set_value((String::new(), 0.0));
                                    fire_on_focused(&pack);
                                }
                            },
                            Duration::from_millis(600),
                        );
                    }
                    (None, true) => {}
                    (None, false) => typed.set_value((String::new(), 0.0)),
                }
            }
            _ => {}
        }
    });
    on_cleanup(move || handle.remove());
}

/// `text` in lower case, as the browser folds it.
#[cfg(feature = "hydrate")]
fn fold_case(text: &str) -> String {
    js_sys::JsString::from(text).to_lower_case().into()
}

#[cfg(feature = "hydrate")]
fn cards() -> Vec<web_sys::HtmlElement> {
    use wasm_bindgen::JsCast;
    let Ok(list) = document().query_selector_all("article.card") else {
        return Vec::new();
    };
    (0..list.length())
        .filter_map(|i| list.item(i))
        .filter_map(|n| n.dyn_into::<web_sys::HtmlElement>().ok())
        .collect()
}

#[cfg(feature = "hydrate")]
fn focused_card() -> Option<web_sys::Element> {
    document().active_element()?.closest("article.card").ok()?
}

#[cfg(feature = "hydrate")]
fn move_card(down: bool) {
    let cards = cards();
    if cards.is_empty() {
        return;
    }
    let current = focused_card();
    let at = cards.iter().position(|c| {
        current
            .as_ref()
            .is_some_and(|f| f == c.as_ref() as &web_sys::Element)
    });
    let next = match (at, down) {
        (None, _) => 0,
        (Some(i), true) => (i + 1).min(cards.len() - 1),
        (Some(i), false) => i.saturating_sub(1),
    };
    let _ = cards[next].focus();
}

#[cfg(feature = "hydrate")]
fn fire_on_focused(pack: &str) {
    use wasm_bindgen::JsCast;
    let Some(card) = focused_card() else { return };
    if let Ok(Some(chip)) = card.query_selector(&format!("button.chip[data-pack=\"{pack}\"]")) {
        if let Ok(chip) = chip.dyn_into::<web_sys::HtmlElement>() {
            chip.click();
        }
    }
}

/// A key on a card's found items: the arrows move among them (from the
/// card or an item), and on a focused item Enter accepts, Shift+Enter
/// accepts as context, Delete (or Backspace) discards, Ctrl+Z undoes,
/// Ctrl+Enter opens its page and Esc goes back to the card. Says whether
/// the key was one of these.
#[cfg(feature = "hydrate")]
fn item_key(ev: &web_sys::KeyboardEvent) -> bool {
    use wasm_bindgen::JsCast;
    let Some(active) = document().active_element() else {
        return false;
    };
    let on_item = active.tag_name() == "LI" && active.class_list().contains("item");
    let on_card = active.tag_name() == "ARTICLE" && active.class_list().contains("card");
    let ctrl = ev.ctrl_key() || ev.meta_key();
    let click = |selector: &str| {
        if let Ok(Some(el)) = active.query_selector(selector) {
            if let Ok(el) = el.dyn_into::<web_sys::HtmlElement>() {
                el.click();
            }
        }
        true
    };
    match ev.key().as_str() {
        "ArrowDown" | "ArrowUp" if on_item || on_card => {
            move_item(&active, on_card, ev.key() == "ArrowDown")
        }
        "Enter" if on_item && ctrl => click("a[href]"),
        "Enter" if on_item && ev.shift_key() => click("button[data-verb=context]"),
        "Enter" if on_item => click("button[data-verb=accept]"),
        "Delete" | "Backspace" if on_item => click("button[data-verb=discard]"),
        "z" | "Z" if on_item && ctrl => click("button[data-verb=undo]"),
        "Escape" if on_item => {
            if let Ok(Some(card)) = active.closest("article.card") {
                if let Ok(card) = card.dyn_into::<web_sys::HtmlElement>() {
                    let _ = card.focus();
                }
            }
            true
        }
        _ => false,
    }
}

/// Moves the focus to the next (or previous) found item of the card
/// `from` is (or is in); from the card itself, to its first item. Says
/// whether there was an item to move to.
#[cfg(feature = "hydrate")]
fn move_item(from: &web_sys::Element, on_card: bool, down: bool) -> bool {
    use wasm_bindgen::JsCast;
    let card = if on_card {
        Some(from.clone())
    } else {
        from.closest("article.card").ok().flatten()
    };
    let Some(Ok(list)) = card.map(|c| c.query_selector_all("li.item")) else {
        return false;
    };
    let items: Vec<web_sys::HtmlElement> = (0..list.length())
        .filter_map(|i| list.item(i))
        .filter_map(|n| n.dyn_into::<web_sys::HtmlElement>().ok())
        .collect();
    if items.is_empty() {
        return false;
    }
    let at = items
        .iter()
        .position(|i| !on_card && (i.as_ref() as &web_sys::Element) == from);
    let next = match (at, down) {
        (None, _) => 0,
        (Some(i), true) => (i + 1).min(items.len() - 1),
        (Some(i), false) => i.saturating_sub(1),
    };
    let _ = items[next].focus();
    true
}
