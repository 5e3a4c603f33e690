//! Walking a chain, the one way: for each connector in turn, the flow's
//! permit, the rate, the workspace's budgets, the daily cap, the call under
//! its timeout, and what the answer means for the connector (and whether
//! the provider billed it), until one finds results, the walk is
//! cancelled or the chain ends. Where each attempt is written is the
//! [`Ledger`]'s: a record's fire, or a capability call.

use model::{
    Amount, Capability, Charge, ConnectorStatus, CostTier, EventKind, FireOutcome, PaidBy, Skipped,
};
use tokio_util::sync::CancellationToken;

use super::{skip, Dispatcher};
use crate::connector::{ConnectorResult, FireOpts, Secrets};
use crate::flow::{Permit, Priority};
use crate::lens::Lens;
use crate::registry::ConnectorHandle;
use crate::store::{retrying, AttemptEnd, Reservation, StoreError, Taken};

/// Where a walk writes its attempts.
#[async_trait::async_trait]
pub(crate) trait Ledger: Send {
    /// A connector of the chain was walked past without a call.
    fn skipped(&mut self, skipped: Skipped);

    /// `connector_id` is about to be called: its attempt is written as
    /// open, so a process killed during the call leaves it for the lease
    /// sweep to close.
    async fn open(&mut self, connector_id: &str) -> Result<(), StoreError>;

    /// The open attempt ended, with the results of a call that answered.
    /// `last`: nothing follows it in this walk.
    async fn close(
        &mut self,
        end: &AttemptEnd,
        results: Vec<ConnectorResult>,
        last: bool,
    ) -> Result<(), StoreError>;
}

/// What a walk fires at.
pub(crate) struct Subject<'a> {
    pub workspace_id: Option<i64>,
    /// The workspace's lens as read with the scope (used without a workspace).
    pub lens: &'a Lens,
    pub intent: &'a Capability,
    pub query: &'a str,
    /// The options every call gets (secrets are added per connector).
    pub opts: FireOpts,
    pub priority: Priority,
    /// A job's limit of paid fires per record, if it has one.
    pub paid_cap: Option<PaidCap>,
}

/// At most `most` fires of paid connectors for `record_id` in job `job_id`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PaidCap {
    pub job_id: i64,
    pub record_id: i64,
    pub most: u32,
}

impl Dispatcher {
    /// Walks `to_try` in order and reports whether it was cancelled. A
    /// database failure that outlasts its retries stops the walk with the
    /// error.
    pub(crate) async fn walk_chain(
        &self,
        ledger: &mut dyn Ledger,
        to_try: &[String],
        subject: Subject<'_>,
        cancel: &CancellationToken,
        first: &mut Option<Permit>,
    ) -> Result<bool, StoreError> {
        let Subject {
            workspace_id,
            lens: scope_lens,
            intent,
            query,
            opts,
            priority,
            paid_cap,
        } = subject;
        // What the workspace's own keys met since the scope was read (a
        // job reads it once per batch): its settings, from memory when fresh.
        let fresh;
        let lens = match workspace_id {
            Some(ws) => {
                fresh = Lens::from_settings(ws, &*self.store.workspace_settings(ws).await?);
                &fresh
            }
            None => scope_lens,
        };
        // What other processes learned about the connectors.
        self.registry.refresh_health().await;
        let secrets = match workspace_id {
            Some(ws) if lens.has_secrets() => retrying(|| self.workspace_secrets(ws)).await?,
            _ => Secrets::default(),
        };
        let mut budget = self.config.retry_budget;
        let last = to_try.len().saturating_sub(1);
        'chain: for (position, connector_id) in to_try.iter().enumerate() {
            let Some(handle) = self.registry.by_id_in(connector_id, workspace_id) else {
                ledger.skipped(skip(connector_id, "unregistered while the fire ran"));
                continue;
            };
            let status = lens.status(&handle);
            if !status.is_available() {
                let reason = status.reason().unwrap_or_default();
                ledger.skipped(Skipped {
                    capped: matches!(status, ConnectorStatus::OverBudget { .. }),
                    ..skip(connector_id, &reason)
                });
                continue;
            }
            let opts = FireOpts {
                secrets: secrets.only(&handle.registration.profile.requires_env),
                ..opts.clone()
            };
            let keyed_by = lens.key_owner(&handle);
            loop {
                let permit = match first.take() {
                    Some(p) if p.connector() == connector_id.as_str() => Some(p),
                    _ => self.flow.acquire(&handle, priority, cancel).await,
                };
                let Some(mut permit) = permit.filter(|_| !cancel.is_cancelled()) else {
                    return Ok(true);
                };
                // The wait for the rate comes before the attempt opens, so
                // an open attempt is a call on its way: a process killed
                // while this waits leaves nothing that looks fired.
                let paced = tokio::select! {
                    () = self.pace(&handle, &mut permit, workspace_id, keyed_by) => true,
                    () = cancel.cancelled() => false,
                };
                if !paced {
                    return Ok(true);
                }
                let held = match self
                    .hold(workspace_id, &handle, intent, keyed_by, paid_cap)
                    .await?
                {
                    Ok(held) => held,
                    Err(refused) => {
                        ledger.skipped(refused);
                        continue 'chain;
                    }
                };
                ledger.open(connector_id).await?;
                let (called, receipt) = self.call(&handle, intent, query, &opts, cancel).await;
                permit.finish(called.signal());
                let billed = called.billed(
                    handle
                        .registration
                        .profile
                        .cost
                        .as_ref()
                        .is_none_or(|c| c.bills_empty),
                    &receipt,
                );
                let (mut end, results, retry) = self
                    .classify(&handle, keyed_by, called, &receipt, &mut budget)
                    .await?;
                end.receipt = Some(receipt);
                if billed {
                    end.charge = held.charge;
                } else {
                    self.release(&held).await;
                }
                let ends_walk = match end.outcome {
                    Some(FireOutcome::Found | FireOutcome::Cancelled) => true,
                    _ => !retry && position == last,
                };
                ledger.close(&end, results, ends_walk).await?;
                match end.outcome {
                    Some(FireOutcome::Found) => break 'chain,
                    Some(FireOutcome::Cancelled) => return Ok(true),
                    // A connector the errors just suspended is not tried again.
                    _ if retry
                        && self
                            .registry
                            .by_id(connector_id)
                            .is_some_and(|h| h.status.is_available()) =>
                    {
                        tokio::select! {
                            () = tokio::time::sleep(self.config.retry_pause) => {}
                            () = cancel.cancelled() => return Ok(true),
                        }
                    }
                    _ => break,
                }
            }
        }
        Ok(false)
    }

    /// Takes what a call needs before it goes out, in order: its price
    /// from the workspace's budgets, its place among a job's paid fires of
    /// the record, its place under the connector's daily cap. The first
    /// that refuses gives back what was taken and says why, as the walk's
    /// skip; the budgets a call took past their warning line are told to
    /// the workspace.
    async fn hold(
        &self,
        workspace_id: Option<i64>,
        handle: &ConnectorHandle,
        intent: &Capability,
        keyed_by: Option<i64>,
        paid_cap: Option<PaidCap>,
    ) -> Result<Result<Held, Skipped>, StoreError> {
        let registration = &handle.registration;
        let id = registration.profile.id.as_str();
        let mut held = Held {
            charge: registration.profile.cost.as_ref().map(|cost| Charge {
                amount: cost.of_call(intent.name()),
                unit: cost.unit.clone(),
                paid_by: if keyed_by.is_some() {
                    PaidBy::Workspace
                } else {
                    PaidBy::Server
                },
            }),
            reserved: None,
            paid: None,
        };
        // A call priced at nothing takes nothing from the budgets.
        let priced = held.charge.as_ref().filter(|c| c.amount > Amount::ZERO);
        if let (Some(price), Some(ws)) = (priced, workspace_id) {
            match retrying(|| self.store.take_spend(ws, id, &price.unit, price.amount)).await? {
                Taken::Taken {
                    reservation,
                    warnings,
                } => {
                    for budget in warnings {
                        self.events
                            .publish_in(Some(ws), EventKind::BudgetChanged { budget });
                    }
                    held.reserved = Some(reservation);
                }
                Taken::Refused(status) => {
                    return Ok(Err(capped(
                        id,
                        &status.spent_reason(&registration.profile.display_name),
                    )));
                }
            }
        }
        let paid = registration.profile.cost_tier == CostTier::Paid || priced.is_some();
        if let Some(cap) = paid_cap.filter(|_| paid) {
            if !retrying(|| {
                self.store
                    .take_paid_fire(cap.job_id, cap.record_id, cap.most)
            })
            .await?
            {
                self.release(&held).await;
                return Ok(Err(capped(
                    id,
                    &format!("this fan-out allows {} paid fires per record", cap.most),
                )));
            }
            held.paid = Some(cap);
        }
        if let Some(cap) = registration.profile.rate_hints.daily_cap {
            let counted = crate::lens::usage_key(id, keyed_by);
            if !retrying(|| self.store.take_daily_fire(&counted, cap)).await? {
                self.release(&held).await;
                return Ok(Err(capped(
                    id,
                    &format!("daily cap of {cap} fires reached"),
                )));
            }
        }
        Ok(Ok(held))
    }

    /// Gives back what a call that was not billed (or not made) held. A
    /// give-back that fails leaves it counted: a budget or a limit may then
    /// stop early, never late.
    async fn release(&self, held: &Held) {
        if let Some(reserved) = &held.reserved {
            if let Err(e) = retrying(|| self.store.give_back(reserved)).await {
                tracing::warn!(error = %e, connector = %reserved.connector_id, "Giving back an unbilled call's cost failed; it stays counted.");
            }
        }
        if let Some(cap) = held.paid {
            if let Err(e) =
                retrying(|| self.store.give_back_paid_fire(cap.job_id, cap.record_id)).await
            {
                tracing::warn!(error = %e, job = cap.job_id, "Taking back an unbilled paid fire failed; it stays counted.");
            }
        }
    }
}

/// What a call holds while it is made: the charge it will record if
/// billed, its cost taken from the budgets, its place among the job's paid
/// fires of the record.
struct Held {
    charge: Option<Charge>,
    reserved: Option<Reservation>,
    paid: Option<PaidCap>,
}

/// A skip because a spending limit stops the connector.
fn capped(connector_id: &str, reason: &str) -> Skipped {
    Skipped {
        capped: true,
        ..skip(connector_id, reason)
    }
}
