//! Keyboard triage: `j` / `k` move between cards, a pack's short label fires
//! it on the focused card, `?` shows the keys. Keys typed into a field are
//! left alone.

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
                    {labels.iter().map(|(label, name)| view! { <dt>{label.clone()}</dt><dd>{format!("fire {name} on the focused record")}</dd> }).collect_view()}
                    <dt>"?"</dt><dd>"show or hide these keys"</dd>
                    <dt>"Esc"</dt><dd>"close"</dd>
                </dl>
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
