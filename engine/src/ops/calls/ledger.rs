//! What a call's walk through one chain writes: each attempt's receipt,
//! and the results it keeps in its verb's shape (each once, up to the
//! limit asked).

use model::{AttemptEnd, CallOutput, Capability, FireOutcome, Skipped};

use super::shape::Shape;
use crate::connectors::seam::ConnectorResult;
use crate::execution::dispatch::walk::Ledger;
use crate::store::{CallStatus, Store, StoreError};

/// A call's attempts as its receipts: each written open before its
/// connector is called, and closed with how it ended. Every ledger of a
/// call writes them this one way.
pub(super) struct Receipts<'a> {
    pub(super) store: &'a Store,
    pub(super) call_id: i64,
    pub(super) actor: &'a str,
    /// The attempt written but not yet closed: its id and connector.
    pub(super) open: Option<(i64, String)>,
}

impl<'a> Receipts<'a> {
    pub(super) fn new(store: &'a Store, call_id: i64, actor: &'a str) -> Self {
        Self {
            store,
            call_id,
            actor,
            open: None,
        }
    }

    pub(super) async fn open(&mut self, connector_id: &str) -> Result<(), StoreError> {
        let id = crate::store::retrying(|| {
            self.store
                .open_call_attempt(self.call_id, connector_id, self.actor)
        })
        .await?;
        self.open = Some((id, connector_id.to_owned()));
        Ok(())
    }

    /// Closes the open attempt; its connector, or `None` when none was open.
    pub(super) async fn close(&mut self, end: &AttemptEnd) -> Result<Option<String>, StoreError> {
        let Some((id, connector_id)) = self.open.take() else {
            return Ok(None);
        };
        crate::store::retrying(|| self.store.close_call_attempt(id, end)).await?;
        Ok(Some(connector_id))
    }
}

/// A call's attempts: its receipts, and the results it keeps.
pub(super) struct CallLedger<'a> {
    pub(super) receipts: Receipts<'a>,
    pub(super) max_results: usize,
    /// What it keeps of a result.
    pub(super) shape: Shape,
    /// What it asked (a review keeps the place it is of).
    pub(super) asked: &'a str,
    /// Every closed attempt: its connector and how it ended.
    pub(super) attempts: Vec<(String, AttemptEnd)>,
    pub(super) skipped: Vec<Skipped>,
    pub(super) results: Vec<CallOutput>,
    /// The keys of `results` (see [`Shape::keep`]).
    pub(super) seen: Vec<String>,
}

impl CallLedger<'_> {
    /// How the walk ended: completed when something answered (found or
    /// not), cancelled, or failed with each connector's reason.
    pub(super) fn verdict(
        &self,
        cancelled: bool,
        intent: &Capability,
    ) -> (CallStatus, Option<String>) {
        if cancelled {
            return (CallStatus::Cancelled, None);
        }
        let answered = self.attempts.iter().any(|(_, end)| {
            matches!(
                end.outcome,
                Some(FireOutcome::Found | FireOutcome::NotFound)
            )
        });
        if answered {
            return (CallStatus::Completed, None);
        }
        let reasons: Vec<String> = self
            .attempts
            .iter()
            .map(|(id, end)| format!("{id}: {}", end.error.as_deref().unwrap_or("no answer")))
            .chain(
                self.skipped
                    .iter()
                    .map(|s| format!("{} (not tried): {}", s.connector_id, s.reason)),
            )
            .collect();
        let error = if reasons.is_empty() {
            format!("no connector can answer {intent} now")
        } else {
            format!("nothing answered: {}", reasons.join("; "))
        };
        (CallStatus::Failed, Some(error))
    }
}

#[async_trait::async_trait]
impl Ledger for CallLedger<'_> {
    fn skipped(&mut self, skipped: Skipped) {
        self.skipped.push(skipped);
    }

    async fn open(&mut self, connector_id: &str) -> Result<(), StoreError> {
        self.receipts.open(connector_id).await
    }

    async fn close(
        &mut self,
        end: &AttemptEnd,
        results: Vec<ConnectorResult>,
        _last: bool,
    ) -> Result<(), StoreError> {
        let Some(connector_id) = self.receipts.close(end).await? else {
            return Ok(());
        };
        for r in results {
            if self.results.len() >= self.max_results {
                break;
            }
            let Some((key, kept)) = self.shape.keep(r, &connector_id, self.asked) else {
                continue;
            };
            if self.seen.contains(&key) {
                continue;
            }
            self.seen.push(key);
            self.results.push(kept);
        }
        self.attempts.push((connector_id, end.clone()));
        Ok(())
    }
}
