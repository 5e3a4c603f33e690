//! Read models the doors share (REST and the pages' server functions): a page
//! of records with chips, and a chip's connector menu.

use model::{ConnectorMenu, MenuEntry, Record, RecordFilter, RecordsPage};

use crate::dispatch::DispatchError;
use crate::Engine;

/// How many records one page may hold.
pub const MAX_PAGE: i64 = 500;

impl Engine {
    /// A page of a record set's records with their chips.
    pub async fn records_page(
        &self,
        set_id: i64,
        filter: RecordFilter,
        search: &str,
        offset: i64,
        limit: i64,
    ) -> Result<RecordsPage, DispatchError> {
        let set = self.store.record_set(set_id).await?;
        let scope = self.dispatcher.scope(set.workspace_id).await?;
        let packs = scope.packs_of(&set.bundle_id);
        let (stored, total) = self
            .store
            .records_matching(
                set_id,
                filter,
                search,
                offset.max(0),
                limit.clamp(1, MAX_PAGE),
            )
            .await?;
        let ids: Vec<i64> = stored.iter().map(|r| r.id).collect();
        let mut chips = self.dispatcher.chips(&scope, &ids, &set, &packs).await?;
        let records = stored
            .into_iter()
            .map(|r| Record {
                chips: chips.remove(&r.id).unwrap_or_default(),
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
    pub async fn chips_of(
        &self,
        set_id: i64,
        record_ids: &[i64],
    ) -> Result<Vec<(i64, Vec<model::Chip>)>, DispatchError> {
        let set = self.store.record_set(set_id).await?;
        let ids = self.store.records_of_set(set_id, record_ids).await?;
        let scope = self.dispatcher.scope(set.workspace_id).await?;
        let packs = scope.packs_of(&set.bundle_id);
        let mut chips = self.dispatcher.chips(&scope, &ids, &set, &packs).await?;
        Ok(ids
            .into_iter()
            .map(|id| (id, chips.remove(&id).unwrap_or_default()))
            .collect())
    }

    /// What a fan-out of the set's bundle would start with: per connector, how
    /// many fires would go to it first, with its cost tier. (Walks past empty
    /// answers may add fires further down a chain.)
    pub async fn fanout_estimate(
        &self,
        set_id: i64,
    ) -> Result<Vec<model::EstimateLine>, DispatchError> {
        let set = self.store.record_set(set_id).await?;
        let scope = self.dispatcher.scope(set.workspace_id).await?;
        let candidates = scope.candidates(&self.registry);
        let mut lines: Vec<model::EstimateLine> = Vec::new();
        for (pack, member) in scope.catalog.bundle_packs(&set.bundle_id) {
            let chain = crate::chain::resolve(
                &crate::chain::ChainRequest {
                    intent: Some(&pack.intent),
                    bundle_override: member.connector_chain_override.as_deref(),
                    pack_preferred: &pack.preferred_connectors,
                    ..Default::default()
                },
                &candidates,
            );
            let Some(first) = chain.to_try.first() else {
                continue;
            };
            let Some(c) = candidates.iter().find(|c| &c.id == first) else {
                continue;
            };
            match lines.iter_mut().find(|l| &l.connector_id == first) {
                Some(line) => line.fires += set.records as u64,
                None => lines.push(model::EstimateLine {
                    connector_id: first.clone(),
                    cost_tier: c.cost_tier,
                    fires: set.records as u64,
                }),
            }
        }
        Ok(lines)
    }

    /// Every connector serving a pack's intent, with its last attempt for the
    /// record and which one a plain click starts with.
    pub async fn connector_menu(
        &self,
        record_id: i64,
        pack_id: &str,
    ) -> Result<ConnectorMenu, DispatchError> {
        let record = self.store.record(record_id).await?;
        let set = self.store.record_set(record.record_set_id).await?;
        let scope = self.dispatcher.scope(set.workspace_id).await?;
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
                let id = handle.registration.id.clone();
                let connector = lens.info(&handle);
                MenuEntry {
                    last_attempt: history
                        .iter()
                        .find(|h| h.connector_id == id && h.intent == pack.intent)
                        .cloned(),
                    next: chain.to_try.first() == Some(&id),
                    record_override: override_id.as_deref() == Some(id.as_str()),
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
