//! Chips: what one record's pack shows now, and telling every viewer
//! what a fire changes (its news: attempts, items, chip).

use std::collections::HashMap;

use model::{Chip, ChipState, EventKind, FireOutcome, HistoryEntry, Item, RecordSetSummary};

use super::scope::{candidates_of, pack_in, pack_needs_env};
use super::{DispatchError, Dispatcher, Scope, Walk};
use crate::connectors::lens::Lens;
use crate::connectors::registry::ConnectorHandle;
use crate::packs::chain::{self, Candidate, ChainRequest};
use crate::packs::chip::{chip_state, ChipInputs};
use crate::packs::PackConfig;
use crate::store::{SetTallies, StoreError};

/// A fire's news not yet told: what its next [`EventKind::FireNews`]
/// carries.
#[derive(Debug, Default)]
pub(super) struct News {
    pub(super) attempts: Vec<HistoryEntry>,
    pub(super) items: Vec<Item>,
    pub(super) chip: Option<ChipState>,
}

/// What the chips of one read share: one registry snapshot (the
/// candidates and the names they show), the records' overrides and item
/// counts, and the bundle's chains.
struct ChipReading<'a> {
    candidates: &'a [Candidate],
    /// The connectors the candidates are, by id: their names and prices.
    by_id: &'a HashMap<&'a str, &'a ConnectorHandle>,
    lens: &'a Lens,
    overrides: &'a HashMap<(i64, String), String>,
    counts: &'a HashMap<(i64, String), u32>,
    bundle_chains: &'a HashMap<String, Option<Vec<String>>>,
    /// The viewer's own orders, by pack.
    personal: &'a HashMap<String, Vec<String>>,
    now: i64,
}

impl ChipReading<'_> {
    /// The chip of `pack` on a record with these attempts: its state, the
    /// connector a plain click fires first, and why one before it is held.
    fn chip(
        &self,
        record_id: i64,
        pack: &PackConfig,
        needs_env: Option<&[String]>,
        attempts: &[HistoryEntry],
    ) -> Chip {
        let mine: Vec<HistoryEntry> = attempts
            .iter()
            .filter(|a| a.intent == pack.intent)
            .cloned()
            .collect();
        let found: Vec<String> = mine
            .iter()
            .filter(|a| a.end.outcome == Some(FireOutcome::Found))
            .map(|a| a.connector_id.clone())
            .collect();
        let chain = chain::resolve(
            &ChainRequest {
                intent: Some(&pack.intent),
                record_override: self
                    .overrides
                    .get(&(record_id, pack.pack_id.clone()))
                    .map(String::as_str),
                person: self.personal.get(&pack.pack_id).map(Vec::as_slice),
                bundle_override: self
                    .bundle_chains
                    .get(&pack.pack_id)
                    .and_then(|c| c.as_deref()),
                pack_preferred: &pack.preferred_connectors,
                already_found: &found,
                ..Default::default()
            },
            self.candidates,
        );
        let first = chain
            .to_try
            .first()
            .map(|c| (c, self.by_id.get(c.as_str()).copied()));
        Chip {
            pack_id: pack.pack_id.clone(),
            next: first.map(|(id, handle)| {
                handle.map_or_else(
                    || id.clone(),
                    |h| h.registration.profile.display_name.clone(),
                )
            }),
            next_cost: first
                .and_then(|(_, handle)| handle)
                .and_then(|h| self.lens.next_cost(h, &pack.intent)),
            held: chain
                .skipped
                .iter()
                .find(|s| s.capped)
                .map(|s| s.reason.clone()),
            chosen_by: chain.chosen_by,
            state: chip_state(ChipInputs {
                attempts: &mine,
                item_count: self
                    .counts
                    .get(&(record_id, pack.intent.name().to_owned()))
                    .copied()
                    .unwrap_or(0),
                needs_env,
                now: self.now,
            }),
        }
    }
}

impl Dispatcher {
    /// The chip of one record and pack now.
    pub async fn chip_of(
        &self,
        scope: &Scope,
        record_id: i64,
        pack: &PackConfig,
    ) -> Result<ChipState, StoreError> {
        let (attempts, item_count) = self.store.chip_inputs(record_id, &pack.intent).await?;
        Ok(self.chip_from(scope, pack, &attempts, item_count))
    }

    /// The chip of a record and pack from its attempts for the pack's
    /// intent and its item count.
    pub(super) fn chip_from(
        &self,
        scope: &Scope,
        pack: &PackConfig,
        attempts: &[HistoryEntry],
        item_count: u32,
    ) -> ChipState {
        let needs_env = pack_needs_env(pack, &scope.candidates(&self.registry));
        chip_state(ChipInputs {
            attempts,
            item_count,
            needs_env: needs_env.as_deref(),
            now: self.store.now_ms(),
        })
    }

    /// How many of `set`'s chips for each pack are in each state, in pack
    /// order and each in [`model::glance::STATE_ORDER`]: those attempts and
    /// items made, as the set's `tallies` keep them, and
    /// the set's other records idle, or `needs_env` when nothing in the
    /// pack's chain can fire for want of variables (as
    /// [`chip_state`] says of a chip without attempts).
    pub async fn chip_counts(
        &self,
        scope: &Scope,
        set: &RecordSetSummary,
        packs: &[PackConfig],
        tallies: &SetTallies,
    ) -> Result<Vec<Vec<(String, i64)>>, StoreError> {
        let kept = self
            .store
            .chip_counts(set.id, tallies, self.store.now_ms())
            .await?;
        let candidates = scope.candidates(&self.registry);
        Ok(packs
            .iter()
            .map(|pack| {
                let intent = pack.intent.name();
                let fired: Vec<(&str, i64)> = kept
                    .iter()
                    .filter(|c| c.intent == intent)
                    .map(|c| (c.state.as_str(), c.records))
                    .collect();
                let never = set.records - fired.iter().map(|(_, n)| n).sum::<i64>();
                let waiting = match pack_needs_env(pack, &candidates) {
                    Some(vars) if !vars.is_empty() => "needs_env",
                    _ => "idle",
                };
                model::glance::tally_states(fired.into_iter().chain([(waiting, never.max(0))]))
            })
            .collect())
    }

    /// The chips of many records of `set` for the given packs, in pack order,
    /// each with the connector a plain click would fire first.
    pub async fn chips(
        &self,
        scope: &Scope,
        record_ids: &[i64],
        set: &RecordSetSummary,
        packs: &[PackConfig],
    ) -> Result<HashMap<i64, Vec<Chip>>, DispatchError> {
        let bundle_id = set.bundle_id.as_str();
        let catalog = &scope.catalog;
        let history = self.store.chip_history_of(record_ids).await?;
        let counts = self.store.item_counts(record_ids).await?;
        let overrides = self.store.record_overrides_of(record_ids).await?;
        // One registry snapshot for the chains and the names they show.
        let lens = &scope.lens;
        let handles = lens.handles(&self.registry);
        let candidates = candidates_of(&handles, lens);
        let by_id: HashMap<&str, &ConnectorHandle> = handles
            .iter()
            .map(|h| (h.registration.profile.id.as_str(), h))
            .collect();
        let needs_env: Vec<Option<Vec<String>>> = packs
            .iter()
            .map(|p| pack_needs_env(p, &candidates))
            .collect();
        let bundle_chains: HashMap<String, Option<Vec<String>>> = packs
            .iter()
            .map(|p| {
                let member = pack_in(catalog, bundle_id, &p.pack_id).and_then(|(_, m)| m);
                (
                    p.pack_id.clone(),
                    member.and_then(|m| m.connector_chain_override),
                )
            })
            .collect();
        let reading = ChipReading {
            candidates: &candidates,
            by_id: &by_id,
            lens,
            overrides: &overrides,
            counts: &counts,
            bundle_chains: &bundle_chains,
            personal: &scope.personal,
            now: self.store.now_ms(),
        };
        let empty: Vec<HistoryEntry> = Vec::new();
        let mut out = HashMap::with_capacity(record_ids.len());
        for id in record_ids {
            let attempts = history.get(id).unwrap_or(&empty);
            let chips = packs
                .iter()
                .zip(&needs_env)
                .map(|(pack, needs)| reading.chip(*id, pack, needs.as_deref(), attempts))
                .collect();
            out.insert(*id, chips);
        }
        Ok(out)
    }

    /// Tells every viewer of the set what the fire changed since it last
    /// told them, in one event (each caller has just added an attempt or
    /// the chip).
    pub(super) fn tell(&self, set_id: i64, walk: &mut Walk) {
        let News {
            attempts,
            items,
            chip,
        } = std::mem::take(&mut walk.news);
        self.events.publish(
            Some(set_id),
            EventKind::FireNews {
                record_id: walk.ctx.record_id,
                pack_id: walk.ctx.pack_id.clone(),
                actor: walk.ctx.actor.clone(),
                attempts,
                items,
                chip,
            },
        );
    }
}
