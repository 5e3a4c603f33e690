//! Operations for decisions in bulk: preview what a selection takes, decide
//! on all of it (each item as one decision would, skipping those someone
//! else decided on meanwhile), and undo it as one step.

use model::{
    BulkExpect, BulkOutcome, BulkPreview, BulkSelection, BulkSkip, Item, TriageVerb, MAX_BULK,
};

use crate::store::{Owned, TriageError};
use crate::tenancy::Principal;
use crate::Engine;

use super::OpError;

impl Engine {
    /// What deciding `verb` on `selection` in set `set_id` would change:
    /// every item it takes, with the version the decision will expect.
    pub async fn bulk_preview(
        &self,
        who: &Principal,
        set_id: i64,
        selection: BulkSelection,
        verb: TriageVerb,
    ) -> Result<BulkPreview, OpError> {
        self.authorize(who, Owned::RecordSet(set_id)).await?;
        check_verb(verb)?;
        let items = self.store.bulk_candidates(set_id, &selection).await?;
        Ok(BulkPreview {
            selection,
            verb,
            items,
        })
    }

    /// Decides `verb` on each of `expect` (items of set `set_id`, as a
    /// preview listed them), recorded as one batch. An item someone else
    /// decided on since the preview is left as it is and named.
    pub async fn bulk_triage(
        &self,
        who: &Principal,
        set_id: i64,
        (selection, verb): (BulkSelection, TriageVerb),
        expect: &[BulkExpect],
    ) -> Result<BulkOutcome, OpError> {
        self.authorize(who, Owned::RecordSet(set_id)).await?;
        check_verb(verb)?;
        if expect.len() > MAX_BULK {
            return Err(OpError::TooLarge(format!(
                "expect: {} items; one bulk decision takes at most {MAX_BULK}",
                expect.len()
            )));
        }
        let ids: Vec<i64> = expect.iter().map(|e| e.item_id).collect();
        let here = self.store.items_in_set(set_id, &ids).await?;
        if let Some(id) = ids.iter().find(|id| !here.contains(id)) {
            return Err(OpError::NotFound(format!(
                "expect: item {id} is not in record set {set_id}"
            )));
        }
        let selection =
            serde_json::to_string(&selection).map_err(|e| OpError::Internal(anyhow::anyhow!(e)))?;
        let batch = self
            .store
            .open_batch(set_id, verb.name(), &selection, &who.email)
            .await?;
        let mut outcome = BulkOutcome {
            batch_id: batch,
            changed: 0,
            skipped: Vec::new(),
        };
        for &expected in expect {
            self.decide_in_batch(who, set_id, expected, verb, batch, &mut outcome)
                .await?;
        }
        Ok(outcome)
    }

    /// Takes back what bulk decision `batch_id` did, as one step: each item
    /// whose last decision is still the batch's goes back to where it was;
    /// one someone decided on since is left as it is and named.
    pub async fn undo_bulk(&self, who: &Principal, batch_id: i64) -> Result<BulkOutcome, OpError> {
        let not_found = || OpError::NotFound(format!("bulk decision {batch_id}"));
        let set_id = self
            .store
            .batch_set(batch_id)
            .await?
            .ok_or_else(not_found)?;
        // Another workspace's batch is not found either.
        self.authorize(who, Owned::RecordSet(set_id))
            .await
            .map_err(|_| not_found())?;
        if !self.store.claim_batch_undo(batch_id, &who.email).await? {
            return Err(OpError::Conflict {
                detail: format!("bulk decision {batch_id} is already undone"),
                current: None,
            });
        }
        let mut outcome = BulkOutcome {
            batch_id,
            changed: 0,
            skipped: Vec::new(),
        };
        for (item_id, last) in self.store.batch_items(batch_id).await? {
            let item = self.store.item(item_id).await?;
            if !last {
                outcome.skipped.push(skip_of(&item));
                continue;
            }
            let expected = BulkExpect {
                item_id,
                version: item.version,
            };
            self.decide_in_batch(
                who,
                set_id,
                expected,
                TriageVerb::Undo,
                batch_id,
                &mut outcome,
            )
            .await?;
        }
        Ok(outcome)
    }

    /// One item's decision within a batch: made and told to the set's
    /// viewers, or, when someone decided first, named in the skips.
    async fn decide_in_batch(
        &self,
        who: &Principal,
        set_id: i64,
        BulkExpect { item_id, version }: BulkExpect,
        verb: TriageVerb,
        batch: i64,
        outcome: &mut BulkOutcome,
    ) -> Result<(), OpError> {
        match self
            .store
            .triage_in_batch(item_id, verb, version, &who.email, Some(batch))
            .await
        {
            Ok(item) => {
                outcome.changed += 1;
                self.events.publish(
                    Some(set_id),
                    model::EventKind::ItemChanged {
                        item,
                        actor: who.email.clone(),
                    },
                );
            }
            Err(TriageError::Conflict { current, .. }) => outcome.skipped.push(skip_of(&current)),
            Err(TriageError::NothingToUndo(_)) => {
                let item = self.store.item(item_id).await?;
                outcome.skipped.push(skip_of(&item));
            }
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }
}

/// Undo is a batch's own step, not a verb to decide in bulk.
fn check_verb(verb: TriageVerb) -> Result<(), OpError> {
    if verb == TriageVerb::Undo {
        return Err(OpError::Invalid(
            "verb: undo a bulk decision with its batch (POST /api/bulk-triage/{batch}/undo)"
                .to_owned(),
        ));
    }
    Ok(())
}

fn skip_of(item: &Item) -> BulkSkip {
    BulkSkip {
        item_id: item.id,
        title: item.title.clone(),
        state: item.state,
        by: item.triaged_by.clone(),
    }
}
