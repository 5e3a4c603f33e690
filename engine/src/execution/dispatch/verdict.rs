//! How a call ended, in the engine's words: a history row, the results
//! to store, the connector's status and whose problem a failure is.

use model::{ConnectorStatus, Cost, EventKind, FireOutcome, Receipt};

use super::Dispatcher;
use crate::connectors::registry::ConnectorHandle;
use crate::connectors::seam::{ConnectorResult, FireError, Found};
use crate::execution::flow::Signal;
use crate::store::{retrying, StoreError};
use model::AttemptEnd;

/// How one call of one connector ended.
pub(super) enum Called {
    Results(Found),
    Failed(FireError),
    Cancelled,
}

impl Called {
    /// Whether the provider bills this call, by what its declared pricing
    /// says of empty answers and of errors (see [`model::Cost`]). A call
    /// whose answer never came (timed out, cancelled) may have been billed,
    /// and counts, so a budget is never passed. A failed call counts when
    /// the provider answered any of its requests with success (it billed
    /// what it served, whatever we made of it: too large, unreadable), or
    /// with an error status it bills; a call none of whose requests got an
    /// answer is not billed.
    pub(super) fn billed(&self, cost: Option<&Cost>, receipt: &Receipt) -> bool {
        let (bills_empty, bills_errors) =
            cost.map_or((true, true), |c| (c.bills_empty, c.bills_errors));
        match self {
            Called::Results(found) => {
                bills_empty || crate::store::usable_results(&found.results) > 0
            }
            Called::Failed(FireError::Timeout { .. }) | Called::Cancelled => true,
            Called::Failed(_) => receipt.requests.iter().any(|r| match r.status {
                Some(s) => (200..300).contains(&s) || bills_errors,
                None => false,
            }),
        }
    }

    pub(super) fn signal(&self) -> Signal {
        match self {
            Called::Results(_) => Signal::Answered,
            Called::Failed(FireError::RateLimited { .. }) => Signal::RateLimited,
            Called::Failed(_) | Called::Cancelled => Signal::Other,
        }
    }
}

impl Dispatcher {
    /// Turns a call's end into a history row and the results to store,
    /// updates the connector's status, and says whether to retry the same
    /// connector.
    pub(super) async fn classify(
        &self,
        handle: &ConnectorHandle,
        keyed_by: Option<i64>,
        called: Called,
        receipt: &Receipt,
        budget: &mut u32,
    ) -> Result<(AttemptEnd, Vec<ConnectorResult>, bool), StoreError> {
        Ok(match called {
            Called::Cancelled => (
                attempt_failed(FireOutcome::Cancelled, "cancelled by a person".to_owned()),
                Vec::new(),
                false,
            ),
            Called::Results(found) => {
                let (end, results) = self.answered(handle, keyed_by, found).await;
                (end, results, false)
            }
            Called::Failed(e) => {
                let (end, retry) = self.refused(handle, keyed_by, e, receipt, budget).await?;
                (end, Vec::new(), retry)
            }
        })
    }

    /// A call that answered: the key it used is healthy again, and the
    /// attempt found what has a web address among the results.
    async fn answered(
        &self,
        handle: &ConnectorHandle,
        keyed_by: Option<i64>,
        Found { results, partial }: Found,
    ) -> (AttemptEnd, Vec<ConnectorResult>) {
        let id = &handle.registration.profile.id;
        match keyed_by {
            Some(ws) => self.registry.record_workspace_answer(id, ws),
            None => self.registry.record_answer(id).await,
        }
        let usable = crate::store::usable_results(&results);
        let end = AttemptEnd {
            outcome: Some(if usable == 0 {
                FireOutcome::NotFound
            } else {
                FireOutcome::Found
            }),
            result_count: Some(u32::try_from(usable).unwrap_or(u32::MAX)),
            error: partial.or_else(|| {
                (usable == 0 && !results.is_empty()).then(|| {
                    format!(
                        "{} results without a web address were dropped",
                        results.len()
                    )
                })
            }),
            retry_after: None,
            charge: None,
            receipt: None,
        };
        (end, results)
    }

    /// A call that failed: whose problem it is (the key's owner, the
    /// provider, or the request's own), what that changes, and whether to
    /// retry the same connector (an error the retry budget still covers).
    async fn refused(
        &self,
        handle: &ConnectorHandle,
        keyed_by: Option<i64>,
        e: FireError,
        receipt: &Receipt,
        budget: &mut u32,
    ) -> Result<(AttemptEnd, bool), StoreError> {
        let id = &handle.registration.profile.id;
        let reason = e.to_string();
        // What every workspace on the server's key may be shown.
        let ours = e.in_our_words(receipt.requests.last().and_then(|r| r.status));
        Ok(match e {
            FireError::RateLimited { retry_after, .. } => {
                let wait = retry_after
                    .unwrap_or(self.config.default_retry_after)
                    .min(crate::connectors::seam::MAX_RETRY_AFTER);
                let until =
                    self.store.now_ms() + i64::try_from(wait.as_millis()).unwrap_or(i64::MAX / 2);
                match keyed_by {
                    // The workspace's own key is limited: only it waits.
                    Some(ws) => {
                        let status = ConnectorStatus::RateLimited {
                            until,
                            reason: format!("{reason} (this workspace's key)"),
                        };
                        retrying(|| self.set_for_workspace(handle, ws, &status)).await?;
                    }
                    None => self.registry.mark_rate_limited(id, wait, &ours).await,
                }
                let mut end = attempt_failed(FireOutcome::RateLimited, reason);
                end.retry_after = Some(until);
                (end, false)
            }
            FireError::AuthFailed { .. } => {
                match keyed_by {
                    // A key the workspace set was refused: that workspace's
                    // problem, not everyone's, so only it loses the
                    // connector until the key is set again.
                    Some(ws) => {
                        let status = ConnectorStatus::AuthFailed {
                            at: self.store.now_ms(),
                            reason: format!(
                                "{reason} (with this workspace's key; set it again to retry)"
                            ),
                        };
                        retrying(|| self.set_for_workspace(handle, ws, &status)).await?;
                    }
                    None => self.registry.mark_auth_failed(id, &ours).await,
                }
                self.raise_attention(id, keyed_by).await;
                (attempt_failed(FireOutcome::Error, reason), false)
            }
            // The call went out and no answer came: the provider may have
            // done it (and billed it), so it is not made again by itself.
            FireError::Timeout { .. } => {
                let streak = if keyed_by.is_some() { &reason } else { &ours };
                self.failed(handle, keyed_by, streak).await?;
                let said = format!("{reason}; {UNANSWERED}");
                (attempt_failed(FireOutcome::Unknown, said), false)
            }
            FireError::Upstream { .. } => {
                let streak = if keyed_by.is_some() { &reason } else { &ours };
                self.failed(handle, keyed_by, streak).await?;
                let retry = *budget > 0;
                if retry {
                    *budget -= 1;
                }
                (attempt_failed(FireOutcome::Error, reason), retry)
            }
            // The request's own: its attempt says why, and no status,
            // streak or suspension changes for anyone.
            FireError::Malformed { .. } | FireError::Request { .. } => {
                (attempt_failed(FireOutcome::Error, reason), false)
            }
        })
    }

    /// Counts an error of the connector against the key it was made with:
    /// a streak with the server's key suspends it for everyone, one with a
    /// workspace's own key in that workspace only.
    pub(super) async fn failed(
        &self,
        handle: &ConnectorHandle,
        keyed_by: Option<i64>,
        reason: &str,
    ) -> Result<(), StoreError> {
        let id = &handle.registration.profile.id;
        let suspended = match keyed_by {
            None => self.registry.record_failure(id, reason).await.is_some(),
            Some(ws) => match self.registry.record_workspace_failure(id, ws, reason) {
                Some(mut suspended) => {
                    if let ConnectorStatus::Suspended { reason, .. } = &mut suspended {
                        reason.push_str(" (this workspace's key)");
                    }
                    retrying(|| self.set_for_workspace(handle, ws, &suspended)).await?;
                    true
                }
                None => false,
            },
        };
        if suspended {
            self.raise_attention(id, keyed_by).await;
        }
        Ok(())
    }

    /// Tells the admins of the workspaces concerned when connector `id`
    /// now needs them; a failure to tell is logged, never the fire's.
    pub(super) async fn raise_attention(&self, id: &str, keyed_by: Option<i64>) {
        let bus = (&self.store, &self.registry, &self.events);
        if let Err(e) =
            crate::tenancy::attention::raise(bus, self.config.attention_after, id, keyed_by).await
        {
            tracing::warn!(connector = %id, error = %e, "Cannot tell the admins a connector needs them.");
        }
    }

    /// Gives a connector a status in the one workspace whose own key met
    /// it (a refusal, a rate limit, a suspension), records it in that
    /// workspace's audit trail and tells its viewers.
    pub(super) async fn set_for_workspace(
        &self,
        handle: &ConnectorHandle,
        workspace_id: i64,
        status: &ConnectorStatus,
    ) -> Result<(), StoreError> {
        let id = &handle.registration.profile.id;
        let actor = crate::connectors::registry::SYSTEM_ACTOR;
        if self
            .store
            .set_workspace_connector(workspace_id, id, Some(status), actor)
            .await?
        {
            self.store
                .record_connector_status(
                    Some(workspace_id),
                    id,
                    status.kind(),
                    status.reason().as_deref(),
                    actor,
                )
                .await?;
        }
        let mut connector = handle.info();
        connector.status = status.clone();
        connector.status_reason = status.reason();
        self.events.publish_in(
            Some(workspace_id),
            EventKind::ConnectorChanged { connector },
        );
        Ok(())
    }
}

/// The end of an attempt that found nothing, and why.
/// What an attempt without an answer adds to its error.
pub const UNANSWERED: &str =
    "the provider may have answered and billed it: not asked again (listed for review on the Spend page)";

fn attempt_failed(outcome: FireOutcome, error: String) -> AttemptEnd {
    AttemptEnd {
        outcome: Some(outcome),
        result_count: None,
        error: Some(error),
        retry_after: None,
        charge: None,
        receipt: None,
    }
}
