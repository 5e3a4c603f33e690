//! An ordered list of ids a person edits: move up, move down, take out,
//! and a select to add one of the choices left. Chains of connectors are
//! edited with it (a pack's, a bundle member's, a person's own).

use leptos::prelude::*;

/// One change to an ordered list (move, take out, add).
pub(crate) type ListChange = Box<dyn FnOnce(&mut Vec<String>)>;

/// Moves the item at `i` one place up (`-1`) or down (`1`).
pub(crate) fn shift(list: &mut [String], i: usize, up: bool) {
    let j = if up { i.checked_sub(1) } else { Some(i + 1) };
    if let Some(j) = j.filter(|j| *j < list.len()) {
        list.swap(i, j);
    }
}

/// An ordered list with up, down and remove buttons, and a select to add.
pub(crate) fn ordered_list(
    name: String,
    items: Signal<Vec<String>>,
    label_of: impl Fn(&str) -> String + Clone + Send + Sync + 'static,
    choices: Signal<Vec<(String, String)>>,
    edit: impl Fn(ListChange) + Clone + Send + Sync + 'static,
) -> impl IntoView {
    let add = {
        let edit = edit.clone();
        move |ev: leptos::ev::Event| {
            let id = event_target_value(&ev);
            if !id.is_empty() {
                edit(Box::new(move |list| {
                    if !list.contains(&id) {
                        list.push(id);
                    }
                }));
            }
        }
    };
    view! {
        <ol class=format!("ordered {name}")>
            {move || {
                let list = items.get();
                let last = list.len().saturating_sub(1);
                list.into_iter()
                    .enumerate()
                    .map(|(i, id)| {
                        let label = label_of(&id);
                        let (up, down, out) = (edit.clone(), edit.clone(), edit.clone());
                        view! {
                            <li data-id=id.clone()>
                                <span>{label.clone()}</span>
                                <button type="button" aria-label=format!("Move {label} up") disabled=i == 0
                                    on:click=move |_| up(Box::new(move |l| shift(l, i, true)))>"↑"</button>
                                <button type="button" aria-label=format!("Move {label} down") disabled=i == last
                                    on:click=move |_| down(Box::new(move |l| shift(l, i, false)))>"↓"</button>
                                <button type="button" aria-label=format!("Take {label} out")
                                    on:click=move |_| out(Box::new(move |l| { l.remove(i); }))>"✕"</button>
                            </li>
                        }
                    })
                    .collect_view()
            }}
        </ol>
        <select class=format!("add-{name}") aria-label=format!("Add to the {name}") on:change=add prop:value="">
            <option value="">{format!("Add to the {name}…")}</option>
            {move || {
                let taken = items.get();
                choices
                    .get()
                    .into_iter()
                    .filter(|(id, _)| !taken.contains(id))
                    .map(|(id, label)| view! { <option value=id>{label}</option> })
                    .collect_view()
            }}
        </select>
    }
}
