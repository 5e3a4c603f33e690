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
                secrets: secrets.only(&handle.registration.requires_env),
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
                    () = self.pace(&handle, &mut permit, keyed_by) => true,
                    () = cancel.cancelled() => false,
                };
                if !paced {
                    return Ok(true);
                }
                let price = handle.registration.cost.as_ref().map(|cost| Charge {
                    amount: cost.of_call(intent.name()),
                    unit: cost.unit.clone(),
                    paid_by: if keyed_by.is_some() {
                        PaidBy::Workspace
                    } else {
                        PaidBy::Server
                    },
                });
                let reserved = match (&price, workspace_id) {
                    (Some(price), Some(ws)) => match self.take_spend(ws, &handle, price).await? {
                        Ok(reserved) => Some(reserved),
                        Err(refused) => {
                            ledger.skipped(refused);
                            continue 'chain;
                        }
                    },
                    _ => None,
                };
                let paid = handle.registration.cost_tier == CostTier::Paid
                    || price.as_ref().is_some_and(|p| p.amount > Amount::ZERO);
                let paid_counted = match paid_cap.filter(|_| paid) {
                    Some(cap) => {
                        if !retrying(|| {
                            self.store
                                .take_paid_fire(cap.job_id, cap.record_id, cap.most)
                        })
                        .await?
                        {
                            self.give_back(reserved.as_ref()).await;
                            ledger.skipped(Skipped {
                                capped: true,
                                ..skip(
                                    connector_id,
                                    &format!(
                                        "this fan-out allows {} paid fires per record",
                                        cap.most
                                    ),
                                )
                            });
                            continue 'chain;
                        }
                        Some(cap)
                    }
                    None => None,
                };
                if let Some(cap) = handle.registration.rate_hints.daily_cap {
                    let counted = crate::lens::usage_key(connector_id, keyed_by);
                    if !retrying(|| self.store.take_daily_fire(&counted, cap)).await? {
                        self.give_back(reserved.as_ref()).await;
                        self.give_back_paid(paid_counted).await;
                        ledger.skipped(Skipped {
                            capped: true,
                            ..skip(connector_id, &format!("daily cap of {cap} fires reached"))
                        });
                        continue 'chain;
                    }
                }
                ledger.open(connector_id).await?;
                let called = self.call(&handle, intent, query, &opts, cancel).await;
                permit.finish(called.signal());
                let cost = handle.registration.cost.as_ref();
                let billed = called.billed(cost.is_none_or(|c| c.bills_empty));
                let (mut end, results, retry) = self
                    .classify(&handle, keyed_by, called, &mut budget)
                    .await?;
                if billed && cost.is_some() {
                    end.charge = price;
                } else {
                    self.give_back(reserved.as_ref()).await;
                }
                if !billed {
                    self.give_back_paid(paid_counted).await;
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

    /// Takes a call's price from the workspace's spend, or says which
    /// budget has too little left, as the walk's skip; the budgets it
    /// took past their warning line are told to the workspace.
    async fn take_spend(
        &self,
        workspace_id: i64,
        handle: &ConnectorHandle,
        price: &Charge,
    ) -> Result<Result<Reservation, Skipped>, StoreError> {
        let id = &handle.registration.id;
        let taken = retrying(|| {
            self.store
                .take_spend(workspace_id, id, &price.unit, price.amount)
        })
        .await?;
        Ok(match taken {
            Taken::Taken {
                reservation,
                warnings,
            } => {
                for budget in warnings {
                    self.events
                        .publish_in(Some(workspace_id), EventKind::BudgetChanged { budget });
                }
                Ok(reservation)
            }
            Taken::Refused(status) => {
                let whose = match &status.budget.connector_id {
                    Some(_) => handle.registration.display_name.clone(),
                    None => format!("every connector in {}", status.budget.unit),
                };
                Err(Skipped {
                    capped: true,
                    ..skip(
                        id,
                        &format!("budget for {whose} spent: {}", status.describe()),
                    )
                })
            }
        })
    }

    /// Takes back a paid fire a job counted for a record, when the call was
    /// not billed (or not made).
    async fn give_back_paid(&self, counted: Option<PaidCap>) {
        let Some(cap) = counted else { return };
        if let Err(e) = retrying(|| self.store.give_back_paid_fire(cap.job_id, cap.record_id)).await
        {
            tracing::warn!(error = %e, job = cap.job_id, "Taking back an unbilled paid fire failed; it stays counted.");
        }
    }

    /// Gives back what a call that was not billed (or not made) took. A
    /// give-back that fails leaves the call counted: a budget may then
    /// stop early, never late.
    async fn give_back(&self, reserved: Option<&Reservation>) {
        let Some(reserved) = reserved else { return };
        if let Err(e) = retrying(|| self.store.give_back(reserved)).await {
            tracing::warn!(error = %e, connector = %reserved.connector_id, "Giving back an unbilled call's cost failed; it stays counted.");
        }
    }
}
