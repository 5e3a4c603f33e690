//! The live state of a triage view: one signal per chip and one per record's
//! items, so an event re-renders only what it changes; and the subscription
//! to `/api/events` that feeds them (in the browser only).

use std::collections::HashMap;

use leptos::prelude::*;
use model::{ChipState, EventKind, Item, Job};

/// One chip's live state.
#[derive(Clone, Copy)]
pub struct ChipSlot {
    pub state: RwSignal<ChipState>,
    /// The fire in flight, when one is (for cancel).
    pub fire: RwSignal<Option<i64>>,
    /// The connector a plain click fires first.
    pub next: RwSignal<Option<String>>,
}

/// Every signal of the view, by record (and pack).
#[derive(Clone, Copy)]
pub struct Board {
    set_id: i64,
    /// A chip refresh is scheduled (they come at most once a half second).
    refresh_pending: StoredValue<bool>,
    chips: StoredValue<HashMap<(i64, String), ChipSlot>>,
    items: StoredValue<HashMap<i64, RwSignal<Vec<Item>>>>,
    pub job: RwSignal<Option<Job>>,
    /// Bumped when the stream asks for a reload (events were missed).
    pub reload: RwSignal<u32>,
    /// The chip whose connector menu is open.
    pub menu: RwSignal<Option<(i64, String)>>,
    /// Bumped when a connector this workspace sees changed.
    pub connectors: RwSignal<u32>,
    /// Who else has this record set open now.
    pub viewers: RwSignal<Vec<String>>,
    /// What people did here lately, newest first: "who: what".
    pub activity: RwSignal<Vec<(String, String)>>,
    /// Record names and pack labels, to say what an event was about.
    names: StoredValue<HashMap<i64, String>>,
    labels: StoredValue<HashMap<String, String>>,
}

/// How many recent actions the activity line keeps.
const ACTIVITY_KEPT: usize = 5;

impl Board {
    pub fn new(set_id: i64, job: Option<Job>) -> Self {
        Self {
            set_id,
            refresh_pending: StoredValue::new(false),
            chips: StoredValue::new(HashMap::new()),
            items: StoredValue::new(HashMap::new()),
            job: RwSignal::new(job),
            reload: RwSignal::new(0),
            menu: RwSignal::new(None),
            connectors: RwSignal::new(0),
            viewers: RwSignal::new(Vec::new()),
            activity: RwSignal::new(Vec::new()),
            names: StoredValue::new(HashMap::new()),
            labels: StoredValue::new(HashMap::new()),
        }
    }

    /// Remembers what to call a record and a pack in the activity line.
    pub fn name(&self, record: i64, name: &str) {
        self.names.update_value(|m| {
            m.insert(record, name.to_owned());
        });
    }

    pub fn label(&self, pack: &str, label: &str) {
        self.labels.update_value(|m| {
            m.insert(pack.to_owned(), label.to_owned());
        });
    }

    fn note(&self, actor: String, what: String) {
        self.activity.update(|list| {
            list.insert(0, (actor, what));
            list.truncate(ACTIVITY_KEPT);
        });
    }

    fn record_name(&self, record: i64) -> String {
        self.names
            .with_value(|m| m.get(&record).cloned())
            .unwrap_or_else(|| format!("record {record}"))
    }

    /// The slot of a chip, made on first use.
    pub fn chip(
        &self,
        record: i64,
        pack: &str,
        initial: ChipState,
        next: Option<String>,
    ) -> ChipSlot {
        let key = (record, pack.to_owned());
        if let Some(slot) = self.chips.with_value(|m| m.get(&key).copied()) {
            slot.state.set(initial);
            slot.next.set(next);
            return slot;
        }
        let slot = ChipSlot {
            state: RwSignal::new(initial),
            fire: RwSignal::new(None),
            next: RwSignal::new(next),
        };
        self.chips.update_value(|m| {
            m.insert(key, slot);
        });
        slot
    }

    /// The items signal of a record, made on first use.
    pub fn items(&self, record: i64, initial: Vec<Item>) -> RwSignal<Vec<Item>> {
        if let Some(items) = self.items.with_value(|m| m.get(&record).copied()) {
            items.set(initial);
            return items;
        }
        let items = RwSignal::new(initial);
        self.items.update_value(|m| {
            m.insert(record, items);
        });
        items
    }

    fn slot(&self, record: i64, pack: &str) -> Option<ChipSlot> {
        self.chips
            .with_value(|m| m.get(&(record, pack.to_owned())).copied())
    }

    /// Replaces or adds one item in its record's list.
    pub fn put_item(&self, item: Item) {
        if let Some(items) = self.items.with_value(|m| m.get(&item.record_id).copied()) {
            items.update(|list| match list.iter_mut().find(|i| i.id == item.id) {
                Some(old) => *old = item,
                None => list.push(item),
            });
        }
    }

    /// Applies one live event.
    pub fn apply(&self, kind: EventKind) {
        match kind {
            EventKind::ChipChanged {
                record_id,
                pack_id,
                chip,
                actor,
            } => {
                if let Some(slot) = self.slot(record_id, &pack_id) {
                    let label = self
                        .labels
                        .with_value(|m| m.get(&pack_id).cloned())
                        .unwrap_or_else(|| pack_id.clone());
                    self.note(
                        actor,
                        format!(
                            "{label} on {}: {}",
                            self.record_name(record_id),
                            super::chip::describe(&chip)
                        ),
                    );
                    if chip != ChipState::Firing {
                        slot.fire.set(None);
                    }
                    slot.state.set(chip);
                }
            }
            EventKind::Attempt { entry } => {
                if entry.outcome.is_none() {
                    if let Some(slot) = self.slot(entry.record_id, &entry.pack_id) {
                        slot.fire.set(Some(entry.fire_id));
                        slot.state.set(ChipState::Firing);
                    }
                }
            }
            EventKind::ItemChanged { item, actor } => {
                if item.triaged_by.as_deref() == Some(actor.as_str()) {
                    self.note(
                        actor,
                        format!(
                            "marked “{}” on {} {}",
                            item.title,
                            self.record_name(item.record_id),
                            item.state.name()
                        ),
                    );
                }
                self.put_item(item);
            }
            EventKind::Presence { viewers } => self.viewers.set(viewers),
            EventKind::JobChanged { job } => {
                let newer = self
                    .job
                    .with_untracked(|j| j.as_ref().is_none_or(|j| j.id <= job.id));
                if newer {
                    self.job.set(Some(job));
                }
            }
            // Chips may have come, gone or changed: read the page again.
            EventKind::Resync | EventKind::CatalogChanged => self.reload.update(|n| *n += 1),
            // A connector came, went or changed: open menus read it again,
            // and the chips (which connector a click fires, whether any can).
            EventKind::ConnectorChanged { .. } | EventKind::ConnectorRemoved { .. } => {
                self.connectors.update(|n| *n += 1);
                self.refresh_chips_soon();
            }
        }
    }

    /// Reads the chips of the cards on the page again, once for a burst of
    /// connector changes (a fan-out meeting rate limits sends many). A chip
    /// with a fire in flight here keeps its state.
    fn refresh_chips_soon(self) {
        if self.refresh_pending.get_value() {
            return;
        }
        self.refresh_pending.set_value(true);
        #[cfg(feature = "hydrate")]
        set_timeout(
            move || {
                self.refresh_pending.set_value(false);
                let mut ids: Vec<i64> = self
                    .chips
                    .with_value(|m| m.keys().map(|(record, _)| *record).collect());
                ids.sort_unstable();
                ids.dedup();
                leptos::task::spawn_local(async move {
                    let Ok(list) = super::api::refresh_chips(self.set_id, ids).await else {
                        return;
                    };
                    for (record, chips) in list {
                        for chip in chips {
                            if let Some(slot) = self.slot(record, &chip.pack_id) {
                                if slot.fire.get_untracked().is_none() {
                                    slot.state.set(chip.state);
                                }
                                slot.next.set(chip.next);
                            }
                        }
                    }
                });
            },
            std::time::Duration::from_millis(500),
        );
    }

    /// Subscribes to the record set's events for as long as the view lives.
    pub fn subscribe(self) {
        let url = format!("/api/events?record_set={}", self.set_id);
        crate::live::subscribe(&url, move |event| self.apply(event.kind));
    }
}
