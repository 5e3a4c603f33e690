//! A fire's ledger: what its walk writes as it goes (the fire's row, each
//! attempt, its items, its chip, its job task) and the news each write
//! makes for every viewer of the set.

use model::{ChipState, FireOutcome, RecordSetSummary, Skipped};

use super::{walk, Dispatcher, Scope, Walk};
use crate::connectors::seam::ConnectorResult;
use crate::packs::PackConfig;
use crate::store::{retrying, Lease, StoreError, StoredRecord};
use model::AttemptEnd;

/// A fire's attempts: its row (opened with the first attempt), its chip,
/// its items, its job task, and the events every viewer of the set gets.
pub(super) struct FireLedger<'a, 'w> {
    pub(super) dispatcher: &'a Dispatcher,
    pub(super) walk: &'w mut Walk,
    pub(super) record: &'a StoredRecord,
    pub(super) set: &'a RecordSetSummary,
    pub(super) scope: &'a Scope,
    pub(super) pack: &'a PackConfig,
}

#[async_trait::async_trait]
impl walk::Ledger for FireLedger<'_, '_> {
    fn skipped(&mut self, skipped: Skipped) {
        self.walk.report.skipped.push(skipped);
    }

    async fn open(&mut self, connector_id: &str) -> Result<(), StoreError> {
        let d = self.dispatcher;
        let walk = &mut *self.walk;
        let attempt = match walk.fire_id {
            Some(fire_id) => {
                retrying(|| d.store.open_attempt(&walk.ctx, fire_id, connector_id)).await?
            }
            None => {
                let lease = Lease {
                    owner: d.owner.as_str(),
                    until: d.leases.expiry(d.store.now_ms()),
                };
                let attempt = retrying(|| {
                    d.store
                        .open_fire_with_attempt(&walk.ctx, lease, connector_id)
                })
                .await?;
                walk.fire_id = Some(attempt.fire_id);
                walk.report.fire_id = Some(attempt.fire_id);
                walk.in_flight
                    .enter(&d.in_flight, attempt.fire_id, walk.cancel.clone());
                attempt
            }
        };
        if walk.report.attempts.is_empty() {
            walk.news.chip = Some(ChipState::Firing);
        }
        walk.news.attempts.push(attempt.clone());
        d.tell(self.set.id, walk);
        walk.open = Some(attempt);
        Ok(())
    }

    async fn close(
        &mut self,
        end: &AttemptEnd,
        results: Vec<ConnectorResult>,
        last: bool,
    ) -> Result<(), StoreError> {
        let d = self.dispatcher;
        let walk = &mut *self.walk;
        let Some(attempt) = walk.open.clone() else {
            return Ok(());
        };
        let fire_end = last.then(|| {
            let cancelled = end.outcome == Some(FireOutcome::Cancelled);
            walk.end(attempt.fire_id, cancelled, end.outcome)
        });
        let closed = retrying(|| {
            d.store
                .close_attempt(&attempt, end, &results, fire_end.as_ref())
        })
        .await?;
        walk.open = None;
        walk.closed = fire_end.is_some();
        walk.news.attempts.push(closed.attempt.clone());
        walk.report.attempts.push(closed.attempt);
        if let Some((attempts, item_count)) = closed.chip {
            walk.chip = Some(d.chip_from(self.scope, self.pack, &attempts, item_count));
        }
        walk.news.items.extend(closed.items.iter().cloned());
        walk.report.items.extend(closed.items);
        // The last attempt's news goes with the fire's chip, told as the
        // fire ends (`Dispatcher::run`).
        if !last {
            d.tell(self.set.id, walk);
        }
        // A full answer (nothing dropped, no page missing) may have left
        // out pages it found before: they are asked for themselves.
        if let (Some(page_checker), None, Some(FireOutcome::Found | FireOutcome::NotFound)) =
            (&d.page_checker, &end.error, end.outcome)
        {
            page_checker.after(crate::execution::gone_pages::Answered {
                set_id: self.set.id,
                record_id: self.record.id,
                intent: self.pack.intent.clone(),
                connector_id: attempt.connector_id.clone(),
                fire_id: attempt.fire_id,
            });
        }
        Ok(())
    }
}
