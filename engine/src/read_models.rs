//! Read models the operations answer with, unchecked (the operations in
//! `ops` check the caller first): a page of records with their chips, the
//! chips of some records, a fan-out's estimate, and a chip's connector menu.
//! Chips and menus are as the viewer (`viewer`, a user id) sees them: with
//! their own orders of the packs' connectors.

use std::collections::HashMap;

use model::{
    Amount, ConnectorMenu, EstimateLine, EstimatedSpend, FanoutEstimate, MenuEntry, Record,
    RecordFilter, RecordsPage,
};

use crate::execution::dispatch::DispatchError;
use crate::Engine;

/// How many records one page may hold.
pub const MAX_PAGE: i64 = 500;

/// A page of a record set, as asked.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PageAsked<'a> {
    pub set_id: i64,
    pub filter: RecordFilter,
    pub search: &'a str,
    pub offset: i64,
    pub limit: i64,
}

impl Engine {
    /// A page of a record set's records with their chips; `changed_since`
    /// is when the viewer's previous visit ended, for the changed filter.
    pub(crate) async fn records_page(
        &self,
        viewer: i64,
        page: &PageAsked<'_>,
        changed_since: Option<i64>,
    ) -> Result<RecordsPage, DispatchError> {
        let PageAsked {
            set_id,
            filter,
            search,
            offset,
            limit,
        } = *page;
        let set = self.store.record_set(set_id).await?;
        let scope = self
            .dispatcher
            .scope_for(set.workspace_id, Some(viewer))
            .await?;
        let packs = scope.packs_of(&set.bundle_id);
        let (stored, total) = self
            .store
            .records_matching(
                set_id,
                filter,
                changed_since,
                search,
                offset.max(0),
                limit.clamp(1, MAX_PAGE),
            )
            .await?;
        let ids: Vec<i64> = stored.iter().map(|r| r.id).collect();
        let spent = async {
            match set.workspace_id {
                Some(ws) => {
                    let today = crate::time::utc_day_start(self.store.now_ms());
                    Ok(self.store.spent_since(ws, &ids, today).await?)
                }
                None => Ok(HashMap::new()),
            }
        };
        let (mut chips, mut spent) =
            tokio::try_join!(self.dispatcher.chips(&scope, &ids, &set, &packs), spent)?;
        let records = stored
            .into_iter()
            .map(|r| Record {
                chips: chips.remove(&r.id).unwrap_or_default(),
                spent_today: spent.remove(&r.id).unwrap_or_default(),
                id: r.id,
                record_set_id: r.record_set_id,
                name: r.name,
                fields: r.fields,
            })
            .collect();
        Ok(RecordsPage {
            record_set: set,
            packs,
            offset: offset.max(0),
            limit: limit.clamp(1, MAX_PAGE),
            total,
            records,
        })
    }

    /// The chips now of some records of a set, for a live view to refresh
    /// them when connectors change. Ids that are not the set's are left out.
    pub(crate) async fn chips_of(
        &self,
        viewer: i64,
        set_id: i64,
        record_ids: &[i64],
    ) -> Result<Vec<(i64, Vec<model::Chip>)>, DispatchError> {
        let set = self.store.record_set(set_id).await?;
        let ids = self.store.records_of_set(set_id, record_ids).await?;
        let scope = self
            .dispatcher
            .scope_for(set.workspace_id, Some(viewer))
            .await?;
        let packs = scope.packs_of(&set.bundle_id);
        let mut chips = self.dispatcher.chips(&scope, &ids, &set, &packs).await?;
        Ok(ids
            .into_iter()
            .map(|id| (id, chips.remove(&id).unwrap_or_default()))
            .collect())
    }

    /// What a fan-out of the set's bundle may fire and spend: per connector
    /// its chains reach, the fires in the worst case (everything before it
    /// finds nothing) and as expected from the last day's hit rates, what
    /// they cost when it is priced, and the budgets they count against.
    pub(crate) async fn fanout_estimate(
        &self,
        set_id: i64,
    ) -> Result<FanoutEstimate, DispatchError> {
        let set = self.store.record_set(set_id).await?;
        let scope = self.dispatcher.scope(set.workspace_id).await?;
        let candidates = scope.candidates(&self.registry);
        let (hit_rates, budgets) = match set.workspace_id {
            Some(ws) => (
                self.connector_stats_in(ws)
                    .await?
                    .into_iter()
                    .map(|s| (s.connector_id.clone(), s.hit_rate()))
                    .collect(),
                self.store.budgets(ws).await?,
            ),
            None => (HashMap::new(), Vec::new()),
        };
        let records = u64::try_from(set.records).unwrap_or(0);
        let mut lines: Vec<EstimateLine> = Vec::new();
        for (pack, member) in scope.catalog.bundle_packs(&set.bundle_id) {
            let chain = crate::packs::chain::resolve(
                &crate::packs::chain::ChainRequest {
                    intent: Some(&pack.intent),
                    bundle_override: member.connector_chain_override.as_deref(),
                    pack_preferred: &pack.preferred_connectors,
                    ..Default::default()
                },
                &candidates,
            );
            // The share of records a connector is reached by.
            let mut reached = 1.0_f64;
            for id in &chain.to_try {
                let (Some(c), Some(handle)) = (
                    candidates.iter().find(|c| &c.id == id),
                    self.registry.by_id_in(id, set.workspace_id),
                ) else {
                    continue;
                };
                // Rounded up: a fire is a whole fire.
                #[allow(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    clippy::cast_precision_loss
                )]
                let expected = (records as f64 * reached).ceil() as u64;
                reached *= 1.0 - hit_rates.get(id).copied().unwrap_or(0.0);
                let price = handle
                    .registration
                    .profile
                    .cost
                    .as_ref()
                    .map(|cost| (cost.unit.clone(), cost.of_call(pack.intent.name())));
                let line = match lines.iter_mut().find(|l| &l.connector_id == id) {
                    Some(line) => line,
                    None => {
                        lines.push(EstimateLine {
                            connector_id: id.clone(),
                            display_name: handle.registration.profile.display_name.clone(),
                            cost_tier: c.cost_tier,
                            fires: 0,
                            expected_fires: 0,
                            spend: None,
                        });
                        lines.last_mut().expect("just pushed")
                    }
                };
                line.fires += records;
                line.expected_fires += expected;
                if let Some((unit, per_call)) = price {
                    let spend = line.spend.get_or_insert(EstimatedSpend {
                        unit,
                        worst: Amount::ZERO,
                        expected: Amount::ZERO,
                    });
                    spend.worst = spend.worst.saturating_add(per_call.times(records));
                    spend.expected = spend.expected.saturating_add(per_call.times(expected));
                }
            }
        }
        let budgets = budgets
            .into_iter()
            .filter(|b| {
                lines.iter().any(|l| {
                    l.spend.as_ref().is_some_and(|s| s.unit == b.budget.unit)
                        && b.budget
                            .connector_id
                            .as_ref()
                            .is_none_or(|id| id == &l.connector_id)
                })
            })
            .collect();
        Ok(FanoutEstimate {
            records,
            lines,
            budgets,
        })
    }

    /// Every connector serving a pack's intent, with its last attempt for the
    /// record and which one a plain click starts with.
    pub(crate) async fn connector_menu(
        &self,
        viewer: i64,
        record_id: i64,
        pack_id: &str,
    ) -> Result<ConnectorMenu, DispatchError> {
        let record = self.store.record(record_id).await?;
        let set = self.store.record_set(record.record_set_id).await?;
        let scope = self
            .dispatcher
            .scope_for(set.workspace_id, Some(viewer))
            .await?;
        let yours = scope.personal_chain(pack_id).unwrap_or_default().to_vec();
        let (pack, chain) = self
            .dispatcher
            .chain_for(&scope, &record, &set, pack_id, None)
            .await?;
        let override_id = self.store.record_override(record_id, pack_id).await?;
        let history = self.store.history(record_id).await?;
        let lens = &scope.lens;
        let entries = self
            .registry
            .serving(&pack.intent, set.workspace_id)
            .into_iter()
            .map(|handle| {
                let id = handle.registration.profile.id.clone();
                let connector = lens.info(&handle);
                MenuEntry {
                    last_attempt: history
                        .iter()
                        .find(|h| h.connector_id == id && h.intent == pack.intent)
                        .cloned(),
                    next: chain.to_try.first() == Some(&id),
                    record_override: override_id.as_deref() == Some(id.as_str()),
                    your_order: yours
                        .iter()
                        .position(|c| *c == id)
                        .and_then(|i| u32::try_from(i + 1).ok()),
                    price: lens.next_cost(&handle, &pack.intent),
                    connector,
                }
            })
            .collect();
        Ok(ConnectorMenu {
            record_id,
            pack_id: pack.pack_id,
            entries,
        })
    }
}
