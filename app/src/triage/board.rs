//! The live state of a triage view: one signal per chip and one per record's
//! items, so an event re-renders only what it changes; and the one
//! subscription to `/api/events` that feeds them for as long as the view of
//! the set is open, across pages, filters and reloads (in the browser only).
//!
//! Nothing is lost between a read and the stream: every page of data says
//! which event it is as new as, the stream starts after the first page's,
//! and the events a later page's read may have missed are applied again to
//! its cards from the ones the board keeps.

use std::collections::{HashMap, VecDeque};

use leptos::prelude::*;
use model::{ChipState, Event, EventKind, Item, Job};

/// One chip's live state.
#[derive(Clone, Copy)]
pub struct ChipSlot {
    pub state: RwSignal<ChipState>,
    /// The fire in flight, when one is (for cancel).
    pub fire: RwSignal<Option<i64>>,
    /// The connector a plain click fires first.
    pub next: RwSignal<Option<String>>,
    /// Why a connector before it is passed over (a spent budget), if one is.
    pub held: RwSignal<Option<String>>,
    /// Which rule put `next` first (the person's order, the pack's...).
    pub chosen_by: RwSignal<Option<model::ChainRule>>,
    /// What a click costs now, when `next` is priced.
    pub next_cost: RwSignal<Option<model::NextCost>>,
    /// What this page's last fire of the chip told the person (a pick that
    /// could not fire, and the fallback taken), until the next fire.
    pub note: RwSignal<Option<String>>,
    /// The record's daily cap stopped this page's last fire of the chip:
    /// the question ("spend more?") until it is answered or another fire.
    pub ask: RwSignal<Option<model::SpendQuestion>>,
}

/// Every signal of the view, by record (and pack).
#[derive(Clone, Copy)]
pub struct Board {
    set_id: i64,
    /// A chip refresh is scheduled (they come at most once a half second).
    refresh_pending: StoredValue<bool>,
    chips: StoredValue<HashMap<(i64, String), ChipSlot>>,
    items: StoredValue<HashMap<i64, RwSignal<Vec<Item>>>>,
    /// What each record's fires were billed today, per unit (the page's
    /// figure, with every billed attempt heard since added).
    spent: StoredValue<HashMap<i64, RwSignal<Vec<model::SpentToday>>>>,
    pub job: RwSignal<Option<Job>>,
    /// Bumped when the stream asks for a reload (events were missed).
    pub reload: RwSignal<u32>,
    /// The chip whose connector menu is open.
    pub menu: RwSignal<Option<(i64, String)>>,
    /// Bumped when a connector this workspace sees changed.
    pub connectors: RwSignal<u32>,
    /// Who else has this record set open now.
    pub viewers: RwSignal<Vec<String>>,
    /// How many are viewing (`viewers` names the first few).
    pub viewers_count: RwSignal<usize>,
    /// What people did here lately, newest first: "who: what".
    pub activity: RwSignal<Vec<(String, String)>>,
    /// Connectors that came to need an admin while the view was open
    /// (one per connector, the latest).
    pub attention: RwSignal<Vec<model::Attention>>,
    /// The server said its database does not answer (until it says it
    /// does again).
    pub database_away: RwSignal<bool>,
    /// Record names and pack labels, to say what an event was about.
    names: StoredValue<HashMap<i64, String>>,
    labels: StoredValue<HashMap<String, String>>,
    /// The chip and item events heard lately, for a page read before them.
    heard: StoredValue<VecDeque<Event>>,
    /// The fires in flight on the last page's chips, by chip.
    carried_fires: StoredValue<HashMap<(i64, String), i64>>,
    /// The stream is open (it opens once, with the first page).
    following: StoredValue<bool>,
    /// The view that owns the board: the stream closes when it goes.
    owner: StoredValue<Option<Owner>>,
    /// When this person's previous visit of the set ended: items first
    /// seen after it are new to them.
    since: StoredValue<Option<i64>>,
    /// The found item the person is on: a decision or a live update that
    /// draws it again keeps them there.
    pub focused_item: StoredValue<Option<i64>>,
    /// What screen readers are told of the person's last decision.
    pub said: RwSignal<String>,
    /// Bumped by every chip and item event heard: views that read the set
    /// in their own shape (the compact lines, the facets) read it again.
    pub touched: RwSignal<u32>,
}

/// How many recent actions the activity line keeps.
const ACTIVITY_KEPT: usize = 5;

/// How many chip and item events the board keeps for pages read before
/// them (a page read takes well under a second; a fan-out sends a few
/// hundred events a second at most).
const HEARD_KEPT: usize = 2048;

impl Board {
    /// The board of one record set's view; call it in that view.
    pub fn new(set_id: i64) -> Self {
        Self {
            set_id,
            refresh_pending: StoredValue::new(false),
            chips: StoredValue::new(HashMap::new()),
            items: StoredValue::new(HashMap::new()),
            spent: StoredValue::new(HashMap::new()),
            job: RwSignal::new(None),
            reload: RwSignal::new(0),
            menu: RwSignal::new(None),
            connectors: RwSignal::new(0),
            viewers: RwSignal::new(Vec::new()),
            viewers_count: RwSignal::new(0),
            activity: RwSignal::new(Vec::new()),
            attention: RwSignal::new(Vec::new()),
            database_away: RwSignal::new(false),
            names: StoredValue::new(HashMap::new()),
            labels: StoredValue::new(HashMap::new()),
            heard: StoredValue::new(VecDeque::new()),
            carried_fires: StoredValue::new(HashMap::new()),
            following: StoredValue::new(false),
            owner: StoredValue::new(Owner::current()),
            since: StoredValue::new(None),
            focused_item: StoredValue::new(None),
            said: RwSignal::new(String::new()),
            touched: RwSignal::new(0),
        }
    }

    /// Shows the set's newest job unless a newer one is already shown.
    pub fn see_job(&self, job: Option<Job>) {
        if let Some(job) = job {
            // A later job, or a later state of the same one: the answer that
            // started a job can arrive after the events of its end.
            let newer = self.job.with_untracked(|j| {
                j.as_ref().is_none_or(|seen| {
                    seen.id < job.id
                        || (seen.id == job.id
                            && seen.status == model::JobStatus::Running
                            && (job.status != model::JobStatus::Running
                                || job.progress.done >= seen.progress.done))
                })
            });
            if newer {
                self.job.set(Some(job));
            }
        }
    }

    /// The fire in flight on a chip, when the board knows its id (tracked:
    /// a view reading it follows the stream).
    pub fn fire_in_flight(&self, record: i64, pack: &str) -> Option<i64> {
        self.slot(record, pack).and_then(|slot| slot.fire.get())
    }

    /// A fire from this page answered: its items join their record's list,
    /// and what it told the person shows beside the chip.
    pub fn fired(&self, record: i64, pack: &str, fired: super::api::ChipFired) {
        if let Some(slot) = self.slot(record, pack) {
            slot.fire.set(None);
            slot.state.set(fired.chip.clone());
            let note = (!fired.notes.is_empty()).then(|| fired.notes.join("; "));
            slot.note.try_set(note);
            slot.ask.try_set(fired.spend_more.clone());
        }
        for item in fired.items {
            self.put_item(item);
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

    /// Forgets the last page's cards: their signals go with them, and the
    /// next page's are made by [`Board::chip`] and [`Board::items`].
    pub fn turn_page(&self) {
        let in_flight: HashMap<(i64, String), i64> = self.chips.with_value(|m| {
            m.iter()
                .filter_map(|(key, slot)| Some((key.clone(), slot.fire.try_get_untracked()??)))
                .collect()
        });
        self.carried_fires.set_value(in_flight);
        self.chips.update_value(HashMap::clear);
        self.items.update_value(HashMap::clear);
    }

    /// Remembers when this person's previous visit ended (the first page
    /// read of the view says; later reads are the same visit).
    pub fn visited_since(&self, since: Option<i64>) {
        if self.since.get_value().is_none() {
            self.since.set_value(since);
        }
    }

    /// An item first seen after this person's previous visit.
    pub fn is_fresh(&self, item: &Item) -> bool {
        self.since
            .get_value()
            .is_some_and(|since| item.first_seen_at > since)
    }

    /// A chip's slot on the page being made, as the page's data has it
    /// (`None`: the page has no chip for the pack, which shows idle).
    pub fn chip(&self, record: i64, pack: &str, chip: Option<&model::Chip>) -> ChipSlot {
        let initial = chip.map_or(ChipState::Idle, |c| c.state.clone());
        let key = (record, pack.to_owned());
        // A fire still in flight on the last page keeps its id (for cancel).
        let fire = match initial {
            ChipState::Firing => self.carried_fires.with_value(|m| m.get(&key).copied()),
            _ => None,
        };
        let slot = ChipSlot {
            state: RwSignal::new(initial),
            fire: RwSignal::new(fire),
            next: RwSignal::new(chip.and_then(|c| c.next.clone())),
            held: RwSignal::new(chip.and_then(|c| c.held.clone())),
            chosen_by: RwSignal::new(chip.and_then(|c| c.chosen_by)),
            next_cost: RwSignal::new(chip.and_then(|c| c.next_cost.clone())),
            note: RwSignal::new(None),
            ask: RwSignal::new(None),
        };
        self.chips.update_value(|m| {
            m.insert(key, slot);
        });
        slot
    }

    /// A record's items on the page being made, as the page's data has them.
    pub fn items(&self, record: i64, initial: Vec<Item>) -> RwSignal<Vec<Item>> {
        let items = RwSignal::new(initial);
        self.items.update_value(|m| {
            m.insert(record, items);
        });
        items
    }

    /// What a record on the page being made was billed today, as the
    /// page's data has it.
    pub fn spent(
        &self,
        record: i64,
        initial: Vec<model::SpentToday>,
    ) -> RwSignal<Vec<model::SpentToday>> {
        let spent = RwSignal::new(initial);
        self.spent.update_value(|m| {
            m.insert(record, spent);
        });
        spent
    }

    /// What a record on the page was billed today, if it is on the page.
    pub fn spent_of(&self, record: i64) -> Option<RwSignal<Vec<model::SpentToday>>> {
        self.spent.with_value(|m| m.get(&record).copied())
    }

    /// A billed attempt was heard: its record cost that much more today.
    fn add_spent(&self, record: i64, charge: &model::Charge) {
        if let Some(spent) = self.spent_of(record) {
            spent.update(
                |list| match list.iter_mut().find(|s| s.unit == charge.unit) {
                    Some(s) => s.amount = s.amount.saturating_add(charge.amount),
                    None => list.push(model::SpentToday {
                        unit: charge.unit.clone(),
                        amount: charge.amount,
                    }),
                },
            );
        }
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

    /// Applies one event from the stream: to the cards, to the activity
    /// line, and to what the board keeps for pages still being read.
    fn hear(&self, event: Event) {
        // An event may still arrive while the view goes (a link followed
        // with the stream open): the board's values are gone with it.
        if self.chips.is_disposed() {
            return;
        }
        if matches!(
            event.kind,
            EventKind::FireNews { .. } | EventKind::ItemChanged { .. }
        ) {
            self.heard.update_value(|heard| {
                if heard.len() == HEARD_KEPT {
                    heard.pop_front();
                }
                heard.push_back(event.clone());
            });
            self.touched.update(|n| *n = n.wrapping_add(1));
        }
        self.note_event(&event.kind);
        self.apply(event.kind);
    }

    /// Applies again, to the cards a page just made, the chip and item
    /// events heard after the page's read (`as_of`).
    pub fn catch_up(&self, as_of: u64) {
        let missed: Vec<EventKind> = self.heard.with_value(|heard| {
            heard
                .iter()
                .filter(|e| e.id > as_of)
                .map(|e| e.kind.clone())
                .collect()
        });
        for kind in missed {
            self.apply(kind);
        }
    }

    /// Says in the activity line what people did.
    fn note_event(&self, kind: &EventKind) {
        match kind {
            EventKind::FireNews {
                record_id,
                pack_id,
                chip: Some(chip),
                actor,
                ..
            } if self.slot(*record_id, pack_id).is_some() => {
                let label = self
                    .labels
                    .with_value(|m| m.get(pack_id).cloned())
                    .unwrap_or_else(|| pack_id.clone());
                self.note(
                    actor.clone(),
                    format!(
                        "{label} on {}: {}",
                        self.record_name(*record_id),
                        super::chip::describe(chip)
                    ),
                );
            }
            EventKind::ItemChanged { item, actor }
                if item.triaged_by.as_deref() == Some(actor.as_str()) =>
            {
                self.note(
                    actor.clone(),
                    format!(
                        "marked “{}” on {} {}",
                        item.title,
                        self.record_name(item.record_id),
                        item.state.name()
                    ),
                );
            }
            _ => {}
        }
    }

    /// Applies one event's change to the board's signals (again is harmless).
    fn apply(&self, kind: EventKind) {
        match kind {
            EventKind::FireNews {
                record_id,
                pack_id,
                attempts,
                items,
                chip,
                ..
            } => {
                let slot = self.slot(record_id, &pack_id);
                for entry in attempts {
                    if let (Some(_), Some(charge)) = (entry.end.outcome, &entry.end.charge) {
                        self.add_spent(entry.record_id, charge);
                    }
                    if let (None, Some(slot)) = (entry.end.outcome, slot) {
                        slot.fire.set(Some(entry.fire_id));
                        slot.state.set(ChipState::Firing);
                    }
                }
                for item in items {
                    self.put_item(item);
                }
                if let (Some(chip), Some(slot)) = (chip, slot) {
                    if chip != ChipState::Firing {
                        slot.fire.set(None);
                    }
                    slot.state.set(chip);
                }
            }
            EventKind::ItemChanged { item, .. } => self.put_item(item),
            EventKind::Presence { viewers, count } => {
                self.viewers_count.set(count.max(viewers.len()));
                self.viewers.set(viewers);
            }
            EventKind::JobChanged { job } => self.see_job(Some(job)),
            // Chips may have come, gone or changed: read the page again.
            EventKind::Resync | EventKind::CatalogChanged => self.reload.update(|n| *n += 1),
            // A connector came, went or changed, or a budget did: open menus
            // read it again, and the chips (which connector a click fires,
            // whether any can).
            EventKind::ConnectorChanged { .. }
            | EventKind::ConnectorRemoved { .. }
            | EventKind::BudgetChanged { .. } => {
                self.connectors.update(|n| *n += 1);
                self.reload_chips_soon();
            }
            EventKind::Database { answering } => {
                self.database_away.set(!answering);
                if answering {
                    self.reload.update(|n| *n += 1);
                }
            }
            EventKind::AttentionRaised { attention } => self.attention.update(|list| {
                list.retain(|a| a.connector_id != attention.connector_id);
                list.push(attention);
            }),
        }
    }

    /// Reads the chips of the cards on the page again, once for a burst of
    /// connector changes (a fan-out meeting rate limits sends many). A chip
    /// with a fire in flight here keeps its state.
    fn reload_chips_soon(self) {
        if self.refresh_pending.get_value() {
            return;
        }
        self.refresh_pending.set_value(true);
        #[cfg(feature = "hydrate")]
        set_timeout(
            move || {
                // The view may have gone in the meantime, its board with it.
                let Some(mut ids) = self
                    .chips
                    .try_with_value(|m| m.keys().map(|(record, _)| *record).collect::<Vec<i64>>())
                else {
                    return;
                };
                self.refresh_pending.set_value(false);
                ids.sort_unstable();
                ids.dedup();
                leptos::task::spawn_local(async move {
                    let Ok(list) = super::api::reload_chips(self.set_id, ids).await else {
                        return;
                    };
                    if self.chips.is_disposed() {
                        return;
                    }
                    for (record, chips) in list {
                        for chip in chips {
                            if let Some(slot) = self.slot(record, &chip.pack_id) {
                                if slot.fire.get_untracked().is_none() {
                                    slot.state.set(chip.state);
                                }
                                slot.next.set(chip.next);
                                slot.held.set(chip.held);
                                slot.chosen_by.set(chip.chosen_by);
                                slot.next_cost.set(chip.next_cost);
                            }
                        }
                    }
                });
            },
            std::time::Duration::from_millis(500),
        );
    }

    /// Opens the set's stream once, from the first page's event id
    /// (`as_of`), so what happened after that read reaches the view; later
    /// pages keep the same stream. It closes when the view goes.
    pub fn follow(self, as_of: u64) {
        if self.following.get_value() {
            return;
        }
        self.following.set_value(true);
        let url = format!("/api/events?record_set={}&after={as_of}", self.set_id);
        let open = move || crate::live::subscribe(&url, move |event| self.hear(event));
        match self.owner.get_value() {
            Some(owner) => owner.with(open),
            None => open(),
        }
    }
}
