//! The packs page's editors: a pack's fields and connector chain, a
//! bundle's roster with each member's chain (ordered lists, see
//! `pages::ordered_list`), as drafts that stay text until they are saved.

use leptos::prelude::*;
use leptos::task::spawn_local;
use model::{BundleConfig, BundleMember, PackConfig};

use super::{save_bundle, save_pack, ConnectorChoice};
use crate::error_view::Notice;
use crate::pages::ordered_list::{ordered_list, ListChange};

/// A server call removing a pack or bundle by id.
pub(super) type RemoveCall =
    fn(String) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), ServerFnError>>>>;

/// A pack being written: the intent stays text until it is saved.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct PackDraft {
    pack_id: String,
    display_name: String,
    short_label: String,
    intent: String,
    query_template: String,
    chain: Vec<String>,
}

impl PackDraft {
    pub(super) fn of(pack: &PackConfig) -> Self {
        Self {
            pack_id: pack.pack_id.clone(),
            display_name: pack.display_name.clone(),
            short_label: pack.short_label.clone(),
            intent: pack.intent.name().to_owned(),
            query_template: pack.query_template.clone(),
            chain: pack.preferred_connectors.clone(),
        }
    }

    fn pack(&self) -> Result<PackConfig, String> {
        let intent = self
            .intent
            .trim()
            .parse()
            .map_err(|e: model::InvalidCapability| format!("intent: {e}"))?;
        Ok(PackConfig {
            pack_id: self.pack_id.trim().to_owned(),
            display_name: self.display_name.trim().to_owned(),
            short_label: self.short_label.trim().to_owned(),
            description: String::new(),
            intent,
            query_template: match self.query_template.trim() {
                "" => "{name}".to_owned(),
                t => t.to_owned(),
            },
            preferred_connectors: self.chain.clone(),
        })
    }
}

/// A bundle being written: its chips in order, and the chains it sets for
/// some of them instead of their packs' own.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct BundleDraft {
    bundle_id: String,
    display_name: String,
    description: String,
    members: Vec<String>,
    overrides: std::collections::BTreeMap<String, Vec<String>>,
}

impl BundleDraft {
    pub(super) fn of(bundle: &BundleConfig) -> Self {
        Self {
            bundle_id: bundle.bundle_id.clone(),
            display_name: bundle.display_name.clone(),
            description: bundle.description.clone(),
            members: bundle.members.iter().map(|m| m.pack.clone()).collect(),
            overrides: bundle
                .members
                .iter()
                .filter_map(|m| Some((m.pack.clone(), m.connector_chain_override.clone()?)))
                .collect(),
        }
    }

    /// The bundle to save: every member keeps the chain set for it here
    /// (one taken out and put back keeps it too, until the page reloads);
    /// an emptied one gives the member its pack's chain back.
    fn bundle(&self) -> BundleConfig {
        BundleConfig {
            bundle_id: self.bundle_id.trim().to_owned(),
            display_name: self.display_name.trim().to_owned(),
            description: self.description.clone(),
            members: self
                .members
                .iter()
                .map(|p| BundleMember {
                    pack: p.clone(),
                    connector_chain_override: self
                        .overrides
                        .get(p)
                        .filter(|chain| !chain.is_empty())
                        .cloned(),
                })
                .collect(),
        }
    }
}

pub(super) fn text_input(
    label: &'static str,
    name: &'static str,
    value: impl Fn() -> String + Send + Sync + 'static,
    set: impl Fn(String) + 'static,
) -> impl IntoView {
    view! {
        <label>
            <span>{label}</span>
            <input name=name prop:value=value on:input=move |ev| set(event_target_value(&ev))/>
        </label>
    }
}

#[component]
pub(super) fn PackEditor(
    draft: RwSignal<PackDraft>,
    connectors: Vec<ConnectorChoice>,
    notice: Notice,
    version: RwSignal<u32>,
) -> impl IntoView {
    let names: std::collections::HashMap<String, String> = connectors
        .iter()
        .map(|c| (c.id.clone(), c.display_name.clone()))
        .collect();
    let label_of = move |id: &str| names.get(id).cloned().unwrap_or_else(|| id.to_owned());
    // Connectors serving the intent being written (all of them until it names one).
    let choices = Signal::derive(move || {
        let intent = draft.with(|d| d.intent.trim().to_owned());
        connectors
            .iter()
            .filter(|c| intent.is_empty() || c.capabilities.contains(&intent))
            .map(|c| (c.id.clone(), c.display_name.clone()))
            .collect()
    });
    let chain = Signal::derive(move || draft.with(|d| d.chain.clone()));
    let edit = move |change: ListChange| draft.update(|d| change(&mut d.chain));
    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let pack = match draft.with(PackDraft::pack) {
            Ok(p) => p,
            Err(e) => {
                notice.set(Some(Err(e)));
                return;
            }
        };
        spawn_local(async move {
            notice.set(Some(match save_pack(pack).await {
                Ok(p) => Ok(format!(
                    "Saved the pack {} ({}).",
                    p.display_name, p.short_label
                )),
                Err(e) => Err(e.to_string()),
            }));
            version.update(|v| *v += 1);
        });
    };
    view! {
        <form class="pack-editor" on:submit=save>
            <h3>"Pack"</h3>
            {text_input("Id", "pack_id", move || draft.with(|d| d.pack_id.clone()), move |v| draft.update(|d| d.pack_id = v))}
            {text_input("Name", "display_name", move || draft.with(|d| d.display_name.clone()), move |v| draft.update(|d| d.display_name = v))}
            {text_input("Short label (1 to 3 characters)", "short_label", move || draft.with(|d| d.short_label.clone()), move |v| draft.update(|d| d.short_label = v))}
            {text_input("Intent (a capability)", "intent", move || draft.with(|d| d.intent.clone()), move |v| draft.update(|d| d.intent = v))}
            {text_input("Query ({name}, {<field>})", "query_template", move || draft.with(|d| d.query_template.clone()), move |v| draft.update(|d| d.query_template = v))}
            <div class="chain-editor">
                <span>"Connector chain (empty: every connector serving the intent, cheapest first)"</span>
                {ordered_list("chain".to_owned(), chain, label_of, choices, edit)}
            </div>
            <div class="editor-actions">
                <button type="submit">"Save pack"</button>
                <button type="button" on:click=move |_| draft.set(PackDraft::default())>"New pack"</button>
            </div>
        </form>
    }
}

#[component]
pub(super) fn BundleEditor(
    draft: RwSignal<BundleDraft>,
    packs: Vec<PackConfig>,
    connectors: Vec<ConnectorChoice>,
    notice: Notice,
    version: RwSignal<u32>,
) -> impl IntoView {
    let choices: Vec<(String, String)> = packs
        .iter()
        .map(|p| {
            (
                p.pack_id.clone(),
                format!("{} ({})", p.display_name, p.short_label),
            )
        })
        .collect();
    let names: std::collections::HashMap<String, String> = choices.iter().cloned().collect();
    let label_of = {
        let names = names.clone();
        move |id: &str| names.get(id).cloned().unwrap_or_else(|| id.to_owned())
    };
    let members = Signal::derive(move || draft.with(|d| d.members.clone()));
    let edit = move |change: ListChange| draft.update(|d| change(&mut d.members));
    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let bundle = draft.with_untracked(BundleDraft::bundle);
        spawn_local(async move {
            notice.set(Some(match save_bundle(bundle).await {
                Ok(b) => Ok(format!("Saved the bundle {}.", b.display_name)),
                Err(e) => Err(e.to_string()),
            }));
            version.update(|v| *v += 1);
        });
    };
    let packs = StoredValue::new(packs);
    let connectors = StoredValue::new(connectors);
    let chains = move || {
        members
            .get()
            .into_iter()
            .map(|id| {
                let pack = packs.with_value(|ps| ps.iter().find(|p| p.pack_id == id).cloned());
                view! { <MemberChain pack_id=id pack draft connectors=connectors.get_value()/> }
            })
            .collect_view()
    };
    view! {
        <form class="bundle-editor" on:submit=save>
            <h3>"Bundle"</h3>
            {text_input("Id", "bundle_id", move || draft.with(|d| d.bundle_id.clone()), move |v| draft.update(|d| d.bundle_id = v))}
            {text_input("Name", "bundle_name", move || draft.with(|d| d.display_name.clone()), move |v| draft.update(|d| d.display_name = v))}
            <div class="chain-editor">
                <span>"Chips, in order"</span>
                {ordered_list("bundle".to_owned(), members, label_of, Signal::derive(move || choices.clone()), edit)}
            </div>
            <div class="member-chains">
                <span>"Chains in this bundle (a chip uses its pack's chain unless the bundle sets one)"</span>
                {chains}
            </div>
            <div class="editor-actions">
                <button type="submit">"Save bundle"</button>
                <button type="button" on:click=move |_| draft.set(BundleDraft::default())>"New bundle"</button>
            </div>
        </form>
    }
}

/// One member's chain in the bundle editor: its pack's own, or one the
/// bundle sets (started from the pack's and edited like it).
#[component]
pub(super) fn MemberChain(
    pack_id: String,
    pack: Option<PackConfig>,
    draft: RwSignal<BundleDraft>,
    connectors: Vec<ConnectorChoice>,
) -> impl IntoView {
    let label = pack.as_ref().map_or_else(
        || pack_id.clone(),
        |p| format!("{} ({})", p.display_name, p.short_label),
    );
    let own_chain = pack
        .as_ref()
        .map(|p| p.preferred_connectors.clone())
        .unwrap_or_default();
    let intent = pack
        .as_ref()
        .map(|p| p.intent.name().to_owned())
        .unwrap_or_default();
    let names: std::collections::HashMap<String, String> = connectors
        .iter()
        .map(|c| (c.id.clone(), c.display_name.clone()))
        .collect();
    let choices: Vec<(String, String)> = connectors
        .iter()
        .filter(|c| c.capabilities.contains(&intent))
        .map(|c| (c.id.clone(), c.display_name.clone()))
        .collect();
    let overridden = {
        let id = pack_id.clone();
        Memo::new(move |_| draft.with(|d| d.overrides.contains_key(&id)))
    };
    let chain = {
        let id = pack_id.clone();
        Signal::derive(move || draft.with(|d| d.overrides.get(&id).cloned().unwrap_or_default()))
    };
    let edit = {
        let id = pack_id.clone();
        move |change: ListChange| {
            draft.update(|d| {
                if let Some(chain) = d.overrides.get_mut(&id) {
                    change(chain);
                }
            })
        }
    };
    let own_words = if own_chain.is_empty() {
        "every connector serving it, cheapest first".to_owned()
    } else {
        own_chain
            .iter()
            .map(|c| names.get(c).cloned().unwrap_or_else(|| c.clone()))
            .collect::<Vec<_>>()
            .join(" → ")
    };
    let set_own = {
        let id = pack_id.clone();
        move |_| {
            let chain = own_chain.clone();
            draft.update(|d| {
                d.overrides.insert(id.clone(), chain);
            });
        }
    };
    let drop_own = {
        let id = pack_id.clone();
        move |_| {
            draft.update(|d| {
                d.overrides.remove(&id);
            })
        }
    };
    let label_of = move |id: &str| names.get(id).cloned().unwrap_or_else(|| id.to_owned());
    let list_name = format!("chain of {label}");
    view! {
        <div class="member-chain" data-pack=pack_id.clone() data-overridden=move || overridden.get().to_string()>
            <strong>{label.clone()}</strong>
            {move || if overridden.get() {
                view! {
                    {ordered_list(list_name.clone(), chain, label_of.clone(), Signal::derive({
                        let choices = choices.clone();
                        move || choices.clone()
                    }), edit.clone())}
                    <button type="button" on:click=drop_own.clone()>{format!("Use the pack's own chain for {label}")}</button>
                }
                .into_any()
            } else {
                view! {
                    <span class="muted">{format!("the pack's: {own_words}")}</span>
                    <button type="button" on:click=set_own.clone()>{format!("Set a chain for {label} in this bundle")}</button>
                }
                .into_any()
            }}
        </div>
    }
}

/// "shipped", "this workspace" or "changed here".
pub(super) fn origin(id: &str, own: &[String], shipped: &[String]) -> &'static str {
    match (own.iter().any(|o| o == id), shipped.iter().any(|s| s == id)) {
        (true, true) => "changed here",
        (true, false) => "this workspace",
        _ => "shipped",
    }
}

pub(super) fn remove_button(
    label: &'static str,
    id: String,
    remove: RemoveCall,
    notice: Notice,
    version: RwSignal<u32>,
) -> impl IntoView {
    view! {
        <button type="button" class="remove" on:click=move |_| {
            let id = id.clone();
            spawn_local(async move {
                notice.set(Some(match remove(id.clone()).await {
                    Ok(()) => Ok(format!("{label}: {id} done.")),
                    Err(e) => Err(e.to_string()),
                }));
                version.update(|v| *v += 1);
            });
        }>{label}</button>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editing_a_bundle_keeps_the_chains_it_sets() {
        let bundle = BundleConfig {
            bundle_id: "people".to_owned(),
            display_name: "People".to_owned(),
            description: "who they are".to_owned(),
            members: vec![
                BundleMember {
                    pack: "wp".to_owned(),
                    connector_chain_override: Some(vec!["wikipedia".to_owned()]),
                },
                BundleMember {
                    pack: "news".to_owned(),
                    connector_chain_override: None,
                },
            ],
        };
        let mut draft = BundleDraft::of(&bundle);
        assert_eq!(draft.bundle(), bundle);
        // Moving the chips keeps each one's chain with it.
        draft.members.reverse();
        let moved = draft.bundle();
        assert_eq!(moved.members[1], bundle.members[0]);
        assert_eq!(moved.members[0], bundle.members[1]);
        // A chain set and one dropped.
        draft
            .overrides
            .insert("news".to_owned(), vec!["gdelt".to_owned()]);
        draft.overrides.remove("wp");
        let changed = draft.bundle();
        assert_eq!(
            changed.members[0].connector_chain_override,
            Some(vec!["gdelt".to_owned()])
        );
        assert_eq!(changed.members[1].connector_chain_override, None);
        // An emptied chain is no chain: the pack's own is used.
        draft.overrides.insert("wp".to_owned(), Vec::new());
        assert_eq!(draft.bundle().members[1].connector_chain_override, None);
    }
}
