//! Walking a chain, the one way: for each connector in turn, the flow's
//! permit, the rate, the workspace's budgets, the daily cap, the call under
//! its timeout, and what the answer means for the connector (and whether
//! the provider billed it), until one finds results, the walk is
//! cancelled or the chain ends. Where each attempt is written is the
//! [`Ledger`]'s: a record's fire, or a capability call.

use std::time::Duration;

use model::{Capability, Charge, ConnectorStatus, FireOutcome, Skipped};
use tokio_util::sync::CancellationToken;

use super::hold::DayCap;
pub(crate) use super::hold::PaidCap;
use super::{skip, Called, Dispatcher};
use crate::connectors::lens::Lens;
use crate::connectors::registry::ConnectorHandle;
use crate::connectors::seam::{ConnectorResult, FireError, FireOpts, Found, Secrets};
use crate::execution::flow::{Permit, Priority};
use crate::store::{retrying, StoreError};
use model::AttemptEnd;

/// How far ahead background work (a job's fire) waits for the rate limit
/// of the last connector its chain can try instead of ending unfired: a
/// fan-out slows down for a provider's 429 rather than skipping the records
/// behind it. Earlier connectors are walked past, as by a person's click.
pub(crate) const WAIT_OUT_AT_MOST: Duration = Duration::from_secs(60);

/// How many times one fire waits out a 429 of the same connector before it
/// takes the refusal as its outcome.
const WAITS_OUT_PER_CONNECTOR: u32 = 3;

/// The latest rate limit `priority`'s work waits out rather than skips, as
/// chain resolution takes it (ms since the epoch), `now`.
pub(crate) fn waits_out_until(priority: Priority, now: i64) -> Option<i64> {
    (priority == Priority::Background).then(|| now + millis(WAIT_OUT_AT_MOST))
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 2)
}

/// How long to wait for a rate limit lifting at `until` (ms since the
/// epoch), if the walk `waits` and it lifts within [`WAIT_OUT_AT_MOST`]
/// of `now`.
fn wait_for(until: Option<i64>, waits: bool, now: i64) -> Option<Duration> {
    let left = until? - now;
    (waits && left <= millis(WAIT_OUT_AT_MOST))
        .then(|| Duration::from_millis(u64::try_from(left.max(1)).unwrap_or(1)))
}

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
    /// The record whose daily caps count the calls, and whether the
    /// person said to spend past them this time.
    pub record_day: Option<RecordDay>,
}

/// A record's fire: its calls count against the record's daily caps.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecordDay {
    pub record_id: i64,
    pub spend_more: bool,
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
        let (fresh, secrets) = self
            .walk_context(subject.workspace_id, subject.lens)
            .await?;
        let lens = fresh.as_ref().unwrap_or(subject.lens);
        let mut budget = self.config.retry_budget;
        let last = to_try.len().saturating_sub(1);
        for (position, connector_id) in to_try.iter().enumerate() {
            // Only background work with nothing after this waits.
            let waits = subject.priority == Priority::Background && position == last;
            let handle = match self
                .once_lifted(connector_id, subject.workspace_id, lens, waits, cancel)
                .await
            {
                Lifted::Here(handle, status) if status.is_available() => *handle,
                Lifted::Here(_, status) => {
                    let reason = status.reason().unwrap_or_default();
                    ledger.skipped(Skipped {
                        capped: matches!(status, ConnectorStatus::OverBudget { .. }),
                        ..skip(connector_id, &reason)
                    });
                    continue;
                }
                Lifted::Gone => {
                    ledger.skipped(skip(connector_id, "unregistered while the fire ran"));
                    continue;
                }
                Lifted::Cancelled => return Ok(true),
            };
            let turn = Turn {
                connector_id,
                opts: FireOpts {
                    secrets: secrets.only(&handle.registration.profile.requires_env),
                    ..subject.opts.clone()
                },
                keyed_by: lens.key_owner(&handle),
                day_cap: day_cap(subject.record_day, &handle, lens),
                handle: &handle,
                last: position == last,
                waits,
            };
            match self
                .take_turn(ledger, &subject, &turn, cancel, first, &mut budget)
                .await?
            {
                Then::Found => break,
                Then::Cancelled => return Ok(true),
                Then::NextConnector => {}
            }
        }
        Ok(false)
    }

    /// What a walk reads once, before its first connector: the workspace's
    /// settings as they are now (a job reads its scope once per batch;
    /// they come from memory when fresh), what other processes learned
    /// about the connectors, and the workspace's secrets if it has any.
    async fn walk_context(
        &self,
        workspace_id: Option<i64>,
        scope_lens: &Lens,
    ) -> Result<(Option<Lens>, Secrets), StoreError> {
        let fresh = match workspace_id {
            Some(ws) => Some(Lens::from_settings(
                ws,
                &*self.store.workspace_settings(ws).await?,
                self.store.clock(),
            )),
            None => None,
        };
        self.registry.adopt_shared_health().await;
        let secrets = match workspace_id {
            Some(ws) if fresh.as_ref().unwrap_or(scope_lens).has_secrets() => {
                retrying(|| self.workspace_secrets(ws)).await?
            }
            _ => Secrets::default(),
        };
        Ok((fresh, secrets))
    }

    /// A place in the connector's flow window (the one the walk was handed,
    /// if it is this connector's), once the connector's rate allows the
    /// call; `None` when the walk is cancelled meanwhile. The wait for the
    /// rate comes before the attempt opens, so an open attempt is a call on
    /// its way: a process killed while this waits leaves nothing that looks
    /// fired.
    async fn paced_permit(
        &self,
        turn: &Turn<'_>,
        subject: &Subject<'_>,
        cancel: &CancellationToken,
        first: &mut Option<Permit>,
    ) -> Option<Permit> {
        let permit = match first.take() {
            Some(p) if p.connector() == turn.connector_id => Some(p),
            _ => {
                self.flow
                    .acquire(turn.handle, subject.priority, cancel)
                    .await
            }
        };
        let mut permit = permit.filter(|_| !cancel.is_cancelled())?;
        tokio::select! {
            () = self.pace(turn.handle, &mut permit, subject.workspace_id, turn.keyed_by) => Some(permit),
            () = cancel.cancelled() => None,
        }
    }

    /// One connector's turn in the walk: attempts until it finds results,
    /// fails for good, is refused or the walk is cancelled. A retryable
    /// error is tried again after a pause (while the retry budget lasts);
    /// background work waits out a rate limit of its last connector.
    async fn take_turn(
        &self,
        ledger: &mut dyn Ledger,
        subject: &Subject<'_>,
        turn: &Turn<'_>,
        cancel: &CancellationToken,
        first: &mut Option<Permit>,
        budget: &mut u32,
    ) -> Result<Then, StoreError> {
        let Turn {
            connector_id,
            handle,
            keyed_by,
            ..
        } = *turn;
        let mut waited = 0;
        loop {
            let Some(permit) = self.paced_permit(turn, subject, cancel, first).await else {
                return Ok(Then::Cancelled);
            };
            let held = match self
                .hold(
                    subject.workspace_id,
                    handle,
                    subject.intent,
                    keyed_by,
                    (subject.paid_cap, turn.day_cap),
                )
                .await?
            {
                Ok(held) => held,
                Err(refused) => {
                    ledger.skipped(refused);
                    return Ok(Then::NextConnector);
                }
            };
            ledger.open(connector_id).await?;
            let (called, receipt) = self
                .call(handle, subject.intent, subject.query, &turn.opts, cancel)
                .await;
            permit.finish(called.signal());
            let billed = called.billed(handle.registration.profile.cost.as_ref(), &receipt);
            let (mut end, results, retry) = self
                .classify(handle, keyed_by, called, &receipt, budget)
                .await?;
            end.receipt = Some(receipt);
            if billed {
                end.charge = held.charge;
            } else {
                self.release(&held).await;
            }
            let wait_out = match end.outcome {
                Some(FireOutcome::RateLimited) if waited < WAITS_OUT_PER_CONNECTOR => {
                    wait_for(end.retry_after, turn.waits, self.store.now_ms())
                }
                _ => None,
            };
            let ends_walk = match end.outcome {
                Some(FireOutcome::Found | FireOutcome::Cancelled) => true,
                _ => !retry && wait_out.is_none() && turn.last,
            };
            ledger.close(&end, results, ends_walk).await?;
            // Background work asks the same connector again once the
            // limit lifts.
            if let Some(wait) = wait_out {
                waited += 1;
                tokio::select! {
                    () = tokio::time::sleep(wait) => continue,
                    () = cancel.cancelled() => return Ok(Then::Cancelled),
                }
            }
            match end.outcome {
                Some(FireOutcome::Found) => return Ok(Then::Found),
                Some(FireOutcome::Cancelled) => return Ok(Then::Cancelled),
                // A connector the errors just suspended is not tried again.
                _ if retry
                    && self
                        .registry
                        .by_id(connector_id)
                        .is_some_and(|h| h.status.is_available()) =>
                {
                    tokio::select! {
                        () = tokio::time::sleep(self.config.retry_pause) => {}
                        () = cancel.cancelled() => return Ok(Then::Cancelled),
                    }
                }
                _ => return Ok(Then::NextConnector),
            }
        }
    }

    /// The connector as the walk finds it now; when the walk `waits`, once
    /// a rate limit lifting within [`WAIT_OUT_AT_MOST`] has lifted.
    async fn once_lifted(
        &self,
        connector_id: &str,
        workspace_id: Option<i64>,
        lens: &Lens,
        waits: bool,
        cancel: &CancellationToken,
    ) -> Lifted {
        loop {
            let Some(handle) = self.registry.by_id_in(connector_id, workspace_id) else {
                return Lifted::Gone;
            };
            let status = lens.status(&handle);
            let until = match status {
                ConnectorStatus::RateLimited { until, .. } => Some(until),
                _ => None,
            };
            let Some(wait) = wait_for(until, waits, self.store.now_ms()) else {
                return Lifted::Here(Box::new(handle), status);
            };
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = cancel.cancelled() => return Lifted::Cancelled,
            }
        }
    }

    /// One call outside any chain (an admin's re-check of a connector),
    /// under a walk's rules: the workspace's budgets and the daily cap
    /// with its share are taken first, and given back when the provider
    /// does not bill the answer. `Err` says which limit refused the call
    /// (nothing went out); otherwise how the call ended and what it cost.
    pub(crate) async fn call_once(
        &self,
        handle: &ConnectorHandle,
        workspace_id: i64,
        keyed_by: Option<i64>,
        (intent, query, opts): (&Capability, &str, &FireOpts),
    ) -> Result<Result<(Result<Found, FireError>, Option<Charge>), String>, StoreError> {
        let held = match self
            .hold(Some(workspace_id), handle, intent, keyed_by, (None, None))
            .await?
        {
            Ok(held) => held,
            Err(refused) => return Ok(Err(refused.reason)),
        };
        // Paced as a walk paces a person's call: this process's throttle,
        // then the deployment's rate slot on PostgreSQL.
        let never = CancellationToken::new();
        let mut permit = self.flow.acquire(handle, Priority::Person, &never).await;
        if let Some(permit) = permit.as_mut() {
            self.pace(handle, permit, Some(workspace_id), keyed_by)
                .await;
        }
        let (called, receipt) = self.call(handle, intent, query, opts, &never).await;
        if let Some(permit) = permit {
            permit.finish(called.signal());
        }
        let charge = if called.billed(handle.registration.profile.cost.as_ref(), &receipt) {
            held.charge.clone()
        } else {
            self.release(&held).await;
            None
        };
        let ended = match called {
            Called::Results(found) => Ok(found),
            Called::Failed(e) => Err(e),
            Called::Cancelled => Err(FireError::Timeout {
                after: self.config.attempt_timeout,
            }),
        };
        Ok(Ok((ended, charge)))
    }
}

/// One connector's turn in a walk: the connector as the walk found it,
/// the options its calls get (with its secrets), whose key it uses, and
/// where it stands in the chain.
struct Turn<'a> {
    connector_id: &'a str,
    handle: &'a ConnectorHandle,
    opts: FireOpts,
    keyed_by: Option<i64>,
    /// What the record may cost a day in the connector's unit.
    day_cap: Option<DayCap>,
    /// Nothing follows it in the chain.
    last: bool,
    /// Background work that waits out this connector's rate limits.
    waits: bool,
}

/// How a connector's turn ended, for the walk.
enum Then {
    Found,
    Cancelled,
    /// Refused, failed for good or out of retries: the next connector.
    NextConnector,
}

/// A connector of the chain, as the walk comes to it.
enum Lifted {
    Here(Box<ConnectorHandle>, ConnectorStatus),
    /// Unregistered while the fire ran.
    Gone,
    Cancelled,
}

/// The daily cap of a record's fire for a call of `handle`: the
/// workspace's cap in the unit the connector is priced in, if it has one.
fn day_cap(record: Option<RecordDay>, handle: &ConnectorHandle, lens: &Lens) -> Option<DayCap> {
    let record = record?;
    let unit = &handle.registration.profile.cost.as_ref()?.unit;
    Some(DayCap {
        record_id: record.record_id,
        limit: lens.record_cap(unit)?,
        spend_more: record.spend_more,
    })
}
