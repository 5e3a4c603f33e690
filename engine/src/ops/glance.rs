//! Operations for big sets at a glance: the compact view's lines (one per
//! record: its chips and its best candidate) and the set's facets.

use model::glance::{best_candidate, candidate};
use model::{CompactLine, CompactPage, FilterCount, PackFacet, RecordFilter, SetFacets};

use crate::read_models::PageAsked;
use crate::store::Owned;
use crate::tenancy::Principal;
use crate::Engine;

use super::OpError;

/// The filters a set's facets count the same for everyone (each person's
/// "new since my last visit" is counted for them).
const FOR_ALL: [RecordFilter; 4] = [
    RecordFilter::All,
    RecordFilter::Unreviewed,
    RecordFilter::NothingFound,
    RecordFilter::Errors,
];

impl Engine {
    /// Lines `offset..offset + limit` of the compact view of set `set_id`
    /// with a filter and a name search (as the cards' pages read them).
    /// Reading it is not a visit: the cards' view notes those.
    pub async fn compact_page(
        &self,
        who: &Principal,
        set_id: i64,
        (filter, search): (RecordFilter, &str),
        offset: i64,
        limit: i64,
    ) -> Result<CompactPage, OpError> {
        let asked = PageAsked {
            set_id,
            filter,
            search,
            offset,
            limit,
        };
        // The same checks as the cards' pages.
        self.check_page(who, &asked).await?;
        let since = self.store.last_visit(who.user_id, set_id).await?;
        let page = self.records_page(who.user_id, &asked, since).await?;
        let ids: Vec<i64> = page.records.iter().map(|r| r.id).collect();
        let items = self.store.items_of(&ids).await?;
        let lines = page
            .records
            .into_iter()
            .map(|record| {
                let mine: Vec<model::Item> = items
                    .iter()
                    .filter(|i| i.record_id == record.id)
                    .cloned()
                    .collect();
                let untriaged = mine
                    .iter()
                    .filter(|i| i.state == model::TriageState::New)
                    .count();
                CompactLine {
                    best: best_candidate(&record.name, &mine).map(candidate),
                    untriaged: u32::try_from(untriaged).unwrap_or(u32::MAX),
                    chips: page
                        .packs
                        .iter()
                        .map(|p| {
                            record
                                .chips
                                .iter()
                                .find(|c| c.pack_id == p.pack_id)
                                .map_or(model::ChipState::Idle, |c| c.state.clone())
                        })
                        .collect(),
                    record_id: record.id,
                    name: record.name,
                }
            })
            .collect();
        Ok(CompactPage {
            offset,
            total: page.total,
            lines,
        })
    }

    /// Set `set_id`'s facets as `who` sees them: how many records each
    /// filter shows, each pack's chips per state, what each connector
    /// found, and how many items are triaged. What is the same for everyone
    /// is read once for all who ask at the same time ([`super::Coalesced`]); the
    /// person's own "new since my last visit" and labels are added.
    pub async fn set_facets(&self, who: &Principal, set_id: i64) -> Result<SetFacets, OpError> {
        self.authorize(who, Owned::RecordSet(set_id)).await?;
        let shared = self
            .facets
            .get(set_id, || async {
                self.facets_for_all(set_id).await.map(std::sync::Arc::new)
            })
            .await?;
        let mut facets = SetFacets::clone(&shared);
        let since = self.store.last_visit(who.user_id, set_id).await?;
        let (_, changed) = self
            .store
            .records_matching(set_id, RecordFilter::Changed, since, "", 0, 1)
            .await?;
        facets.filters.push(FilterCount {
            filter: RecordFilter::Changed,
            records: changed,
        });
        let labels = self.store.pack_labels(who.user_id).await?;
        for pack in &mut facets.packs {
            if let Some(label) = labels.get(&pack.pack_id) {
                pack.short_label.clone_from(label);
            }
        }
        Ok(facets)
    }

    /// A set's facets as everyone in its workspace sees them (the
    /// workspace's labels, no "new since my last visit").
    async fn facets_for_all(&self, set_id: i64) -> Result<SetFacets, OpError> {
        let set = self.store.record_set(set_id).await?;
        let tallies = self.store.set_tallies(set_id).await?;
        let filters = FOR_ALL
            .into_iter()
            .map(|filter| FilterCount {
                filter,
                records: tallies.records_in(filter).unwrap_or(set.records),
            })
            .collect();
        let scope = self.dispatcher.scope(set.workspace_id).await?;
        let packs = scope.packs_of(&set.bundle_id);
        let counted = self
            .dispatcher
            .chip_counts(&scope, &set, &packs, &tallies)
            .await?;
        let packs = packs
            .iter()
            .zip(counted)
            .map(|(pack, states)| PackFacet {
                pack_id: pack.pack_id.clone(),
                short_label: pack.short_label.clone(),
                states,
            })
            .collect();
        let (items_untriaged, items_triaged) = tallies.triage_counts();
        Ok(SetFacets {
            records: set.records,
            filters,
            packs,
            connectors: tallies.connector_facets(),
            items_untriaged,
            items_triaged,
        })
    }
}
