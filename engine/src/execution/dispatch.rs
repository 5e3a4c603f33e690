//! The dispatcher: fires one pack for one record. A fire is work the engine
//! owns: it runs on its own task to an outcome whatever happens to the
//! request that asked for it. It resolves the chain and walks it (flow
//! window -> daily cap -> throttle -> timeout -> call, in that order, one
//! retry budget for the whole chain), writes every attempt to
//! `connector_history` before the next one starts, merges results into the
//! curated layer in the same write, and publishes each change on the event
//! bus. A database that fails midway is retried, then the fire is closed as
//! an error; a process that dies midway leaves a lease that expires (see
//! `lease`).
//!
//! Here: the fire's request, its run and its end. Its parts, in the order
//! a fire meets them: `scope` (the workspace's view and the chain),
//! `prepare` (pack, chain, query), `walk` (the chain, connector by
//! connector), `verdict` (how a call ended and whose problem it is),
//! `ledger` (what each attempt writes), `chips` (what viewers see) and
//! `in_flight` (the fires this process runs, to cancel or renew).

use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use model::{
    Capability, ChipState, FireOutcome, FireReport, HistoryEntry, Receipt, RecordSetSummary,
    TriggeredBy,
};
use tokio_util::sync::CancellationToken;

use crate::connectors::registry::{ConnectorHandle, Registry};
use crate::connectors::seam::{FireError, FireOpts, Secrets};
use crate::execution::flow::{Flow, Permit, Priority};
use crate::execution::lease::{LeaseConfig, Owner};
use crate::live::events::EventBus;
use crate::packs::chain::Chain;
use crate::packs::{Catalog, PackConfig};
use crate::store::{
    retrying, Backend, FireContext, FireEnd, FireStatus, Store, StoreError, StoredRecord,
};
use crate::tenancy::secrets::Sealer;
use crate::time::now_ms;

mod chips;
mod in_flight;
mod ledger;
mod prepare;
mod scope;
mod verdict;
pub(crate) mod walk;

use in_flight::{InFlight, InFlightTable};
use ledger::FireLedger;
pub use prepare::Prepared;
use scope::{pack_in, skip};
pub use scope::{RecordChainInputs, Scope};
use verdict::Called;

/// Policy of every fire, with its defaults.
#[derive(Clone, Copy, Debug)]
pub struct DispatchConfig {
    /// How long one connector attempt may take.
    pub attempt_timeout: Duration,
    /// How many times a whole chain may retry a transient failure (timeout,
    /// provider error) on the same connector before walking on.
    pub retry_budget: u32,
    /// Pause before such a retry.
    pub retry_pause: Duration,
    /// Results asked of a connector.
    pub max_results: usize,
    /// Wait assumed when a 429 carries no Retry-After.
    pub default_retry_after: Duration,
    /// How long a streak of suspensions may keep a connector out before
    /// its workspaces' admins are told (see [`crate::tenancy::attention`]).
    pub attention_after: Duration,
    /// The most of a connector's daily cap on the server's key one
    /// workspace may take, as a share (above 0, at most 1): the operator's
    /// way to keep one workspace from spending everyone's day.
    pub workspace_daily_share: f64,
}

impl DispatchConfig {
    /// The fires of a daily `cap` one workspace may take with the server's
    /// key: its share, at least one.
    pub fn share_of(&self, cap: u32) -> u32 {
        let share = (f64::from(cap) * self.workspace_daily_share.clamp(0.0, 1.0)).floor();
        // In range: 0 <= share <= cap.
        (share as u32).clamp(1, cap.max(1))
    }
}

impl Default for DispatchConfig {
    fn default() -> Self {
        Self {
            attempt_timeout: Duration::from_secs(20),
            retry_budget: 1,
            retry_pause: Duration::from_millis(250),
            max_results: 10,
            default_retry_after: Duration::from_secs(60),
            attention_after: Duration::from_secs(15 * 60),
            workspace_daily_share: 1.0,
        }
    }
}

/// One fire asked for.
#[derive(Clone, Debug)]
pub struct FireRequest {
    pub record_id: i64,
    pub pack_id: String,
    /// Fire exactly this connector (the chip menu).
    pub connector: Option<String>,
    pub triggered_by: TriggeredBy,
    pub actor: String,
    /// The job this fire is a step of: it waits its turn in the connectors'
    /// windows. A fire without a job is a person's and never waits there.
    pub job_id: Option<i64>,
    /// The job task this fire carries out: it is marked done with the
    /// fire's outcome in the fire's last write.
    pub task_id: Option<i64>,
    /// Cancelling this cancels the fire too (a job's token).
    pub parent: Option<CancellationToken>,
    /// A job's limit of paid fires per record (counted per job).
    pub paid_per_record: Option<u32>,
}

impl FireRequest {
    /// A person's fire of a chip (or, with `connector`, of its menu).
    pub fn by_person(
        record_id: i64,
        pack_id: impl Into<String>,
        connector: Option<String>,
        actor: impl Into<String>,
    ) -> Self {
        Self {
            record_id,
            pack_id: pack_id.into(),
            connector,
            triggered_by: TriggeredBy::HumanRefire,
            actor: actor.into(),
            job_id: None,
            task_id: None,
            parent: None,
            paid_per_record: None,
        }
    }

    fn priority(&self) -> Priority {
        if self.job_id.is_some() {
            Priority::Background
        } else {
            Priority::Person
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[error("no pack {0:?}")]
    UnknownPack(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The fire's task ended without a report (a bug; the log has it). The
    /// fire's lease expires and it is closed as interrupted.
    #[error("the fire stopped unexpectedly; see the server log")]
    Stopped,
}

/// Fires packs. Cheap to clone.
#[derive(Clone)]
pub struct Dispatcher {
    store: Store,
    registry: Registry,
    catalog: Arc<RwLock<Catalog>>,
    events: EventBus,
    config: DispatchConfig,
    /// Opens the workspace secrets a fire needs; `None`: secrets are off.
    sealer: Option<Sealer>,
    flow: Flow,
    owner: Owner,
    leases: LeaseConfig,
    in_flight: InFlightTable,
    /// Asks pages a full answer left out for themselves; `None`: nobody
    /// asks.
    rechecker: Option<crate::execution::recheck::Rechecker>,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("config", &self.config)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fire under way: what it has done so far.
struct Walk {
    report: FireReport,
    ctx: FireContext,
    task_id: Option<i64>,
    fire_id: Option<i64>,
    /// The attempt written but not yet closed, if any.
    open: Option<HistoryEntry>,
    cancel: CancellationToken,
    cancelled: bool,
    /// Set once the fire's end (with its task's, if any) is written.
    closed: bool,
    /// The chip as read with the end's write.
    chip: Option<ChipState>,
    in_flight: InFlight,
}

impl Walk {
    /// The fire's end: cancelled or done, with its job task's outcome.
    /// `pending` is the outcome of the attempt that closes with it, if one
    /// does.
    fn end(&self, fire_id: i64, cancelled: bool, pending: Option<FireOutcome>) -> FireEnd {
        FireEnd {
            fire_id,
            status: if cancelled {
                FireStatus::Cancelled
            } else {
                FireStatus::Done
            },
            open_attempt_error: None,
            task: self
                .task_id
                .map(|t| (t, task_outcome(&self.report.attempts, pending, None))),
        }
    }
}

/// What a walk fires at.
#[derive(Clone, Copy)]
struct Target<'a> {
    record: &'a StoredRecord,
    set: &'a RecordSetSummary,
    scope: &'a Scope,
    pack: &'a PackConfig,
    query: &'a str,
    priority: Priority,
    /// A job's limit of paid fires per record: the job, and the limit.
    paid_cap: Option<(i64, u32)>,
}

impl Dispatcher {
    pub fn new(
        store: Store,
        registry: Registry,
        catalog: Arc<RwLock<Catalog>>,
        events: EventBus,
        config: DispatchConfig,
    ) -> Self {
        Self {
            store,
            registry,
            catalog,
            events,
            config,
            sealer: None,
            flow: Flow::new(crate::execution::flow::FlowConfig::default()),
            owner: Owner::new(),
            leases: LeaseConfig::default(),
            in_flight: Arc::default(),
            rechecker: None,
        }
    }

    /// Re-checks, after each full answer, the pages it left out (and those
    /// gone that it returned) with `rechecker`.
    pub fn with_rechecker(mut self, rechecker: crate::execution::recheck::Rechecker) -> Self {
        self.rechecker = Some(rechecker);
        self
    }

    /// Fires with the workspace secrets `sealer` opens.
    pub fn with_sealer(mut self, sealer: Option<Sealer>) -> Self {
        self.sealer = sealer;
        self
    }

    /// Fires under this flow control, owned by `owner` under `leases`.
    pub fn with_work(mut self, flow: Flow, owner: Owner, leases: LeaseConfig) -> Self {
        self.flow = flow;
        self.owner = owner;
        self.leases = leases;
        self
    }

    /// How long suspensions may last before admins are told.
    pub fn attention_after(&self) -> Duration {
        self.config.attention_after
    }

    /// What seals workspace secrets; `None` when no key is configured.
    pub fn sealer(&self) -> Option<&Sealer> {
        self.sealer.as_ref()
    }

    pub fn flow(&self) -> &Flow {
        &self.flow
    }

    /// Fires one pack for one record and reports what happened. The fire
    /// runs on a task of its own: a caller that stops waiting (a closed
    /// browser tab, a dropped request) changes nothing about it.
    pub async fn fire(&self, req: FireRequest) -> Result<FireReport, DispatchError> {
        let this = self.clone();
        tokio::spawn(async move { this.fire_owned(req).await })
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "A fire's task stopped unexpectedly.");
                DispatchError::Stopped
            })?
    }

    async fn fire_owned(&self, req: FireRequest) -> Result<FireReport, DispatchError> {
        // Two reads that need only the record id, side by side.
        let ((record, set), facts) = tokio::try_join!(
            self.store.record_and_set(req.record_id),
            self.store.record_facts(req.record_id)
        )?;
        let scope = self.scope(set.workspace_id).await?;
        let (pack, member) = pack_in(&scope.catalog, &set.bundle_id, &req.pack_id)
            .ok_or_else(|| DispatchError::UnknownPack(req.pack_id.clone()))?;
        let inputs = RecordChainInputs::of(&facts, &pack);
        let prepared = self.prepare_with(
            Arc::new(scope),
            Arc::new(set),
            record,
            req,
            (pack, member),
            &inputs,
        );
        Ok(self.run(prepared, None).await)
    }

    /// Runs a prepared fire to its end and reports it. `first` is a place
    /// already taken in the window of the chain's first connector (a job
    /// waits for it before it starts the fire). Never fails: whatever goes
    /// wrong ends the fire with an outcome that says so.
    pub async fn run(&self, p: Prepared, mut first: Option<Permit>) -> FireReport {
        let Prepared {
            req,
            record,
            set,
            scope,
            pack,
            chain,
            query,
        } = p;
        let cancel = req
            .parent
            .as_ref()
            .map_or_else(CancellationToken::new, CancellationToken::child_token);
        let mut walk = Walk {
            report: FireReport {
                fire_id: None,
                record_id: record.id,
                pack_id: pack.pack_id.clone(),
                intent: pack.intent.clone(),
                chip: ChipState::Idle,
                attempts: Vec::new(),
                skipped: chain.skipped.clone(),
                items: Vec::new(),
                notes: chain.notes.clone(),
            },
            ctx: FireContext {
                record_id: record.id,
                pack_id: pack.pack_id.clone(),
                intent: pack.intent.clone(),
                triggered_by: req.triggered_by,
                actor: req.actor.clone(),
                job_id: req.job_id,
            },
            task_id: req.task_id,
            fire_id: None,
            open: None,
            cancel,
            cancelled: false,
            closed: false,
            chip: None,
            in_flight: InFlight::default(),
        };
        let mut chip = None;
        if chain.to_try.is_empty() {
            walk.report.notes.push(if walk.report.skipped.iter().any(|s| s.reason.starts_with("already found")) {
                "every connector that can fire has already found results for this record; pick one in the menu to fire it again".to_owned()
            } else {
                "no connector of this pack can fire now".to_owned()
            });
        } else if query.trim().is_empty() {
            walk.report.notes.push(format!(
                "the query {:?} is empty for this record (it lacks the fields it names)",
                pack.query_template
            ));
        } else {
            let target = Target {
                record: &record,
                set: &set,
                scope: &scope,
                pack: &pack,
                query: &query,
                priority: req.priority(),
                paid_cap: req.job_id.zip(req.paid_per_record),
            };
            if let Err(e) = self.walk(&mut walk, &chain, target, &mut first).await {
                chip = Some(self.broken(&mut walk, set.id, &e).await);
            }
        }
        drop(first);
        let read = match (chip, walk.chip.take()) {
            (Some(chip), _) | (None, Some(chip)) => Ok(chip),
            (None, None) => self.chip_of(&scope, record.id, &pack).await,
        };
        walk.report.chip = read.unwrap_or_else(|e| {
            tracing::error!(record = record.id, error = %e, "Reading a chip after a fire failed.");
            ChipState::Error {
                reason: "the chip could not be read; reload the page".to_owned(),
            }
        });
        self.end_task(&mut walk).await;
        if let Some(fire_id) = walk.fire_id {
            self.publish_chip(
                set.id,
                &record,
                &pack.pack_id,
                walk.report.chip.clone(),
                &walk.ctx.actor,
            );
            tracing::info!(
                fire = fire_id,
                pack = %pack.pack_id,
                attempts = walk.report.attempts.len(),
                chip = walk.report.chip.name(),
                "Fire finished."
            );
        }
        walk.report
    }

    /// Walks a fire's chain ([`Dispatcher::walk_chain`]), writing its
    /// attempts to the fire, then closes the fire if its last attempt did
    /// not. A database failure that outlasts its retries stops the walk
    /// with the error.
    async fn walk(
        &self,
        walk: &mut Walk,
        chain: &Chain,
        target: Target<'_>,
        first: &mut Option<Permit>,
    ) -> Result<(), StoreError> {
        let Target {
            record,
            set,
            scope,
            pack,
            query,
            priority,
            paid_cap,
        } = target;
        let subject = walk::Subject {
            workspace_id: set.workspace_id,
            lens: &scope.lens,
            intent: &pack.intent,
            query,
            opts: FireOpts {
                record_name: record.name.clone(),
                record_fields: record.field_map(),
                max_results: self.config.max_results,
                secrets: Secrets::default(),
            },
            priority,
            paid_cap: paid_cap.map(|(job_id, most)| walk::PaidCap {
                job_id,
                record_id: record.id,
                most,
            }),
        };
        let cancel = walk.cancel.clone();
        let cancelled = {
            let mut ledger = FireLedger {
                dispatcher: self,
                walk: &mut *walk,
                record,
                set,
                scope,
                pack,
            };
            self.walk_chain(&mut ledger, &chain.to_try, subject, &cancel, first)
                .await?
        };
        walk.cancelled |= cancelled;
        if let (Some(fire_id), false) = (walk.fire_id, walk.closed) {
            let end = walk.end(fire_id, walk.cancelled, None);
            retrying(|| self.store.close_fire(&end)).await?;
            walk.closed = true;
        }
        Ok(())
    }

    /// Ends a fire the database failed under: what is still open is closed
    /// as an error if the database allows it now; if not, its lease expires
    /// and whichever process notices closes it as interrupted.
    async fn broken(&self, walk: &mut Walk, set_id: i64, error: &StoreError) -> ChipState {
        tracing::error!(fire = walk.fire_id, record = walk.ctx.record_id, error = %error, "The database failed during a fire; closing it as an error.");
        let reason = "stopped: the database failed while this fire was being stored".to_owned();
        walk.report.notes.push(reason.clone());
        if let (Some(fire_id), false) = (walk.fire_id, walk.closed) {
            let end = FireEnd {
                fire_id,
                status: FireStatus::Error,
                open_attempt_error: Some(reason.clone()),
                task: walk
                    .task_id
                    .map(|t| (t, FireOutcome::Error.name().to_owned())),
            };
            match retrying(|| self.store.close_fire(&end)).await {
                Ok(()) => walk.closed = true,
                Err(e) => {
                    tracing::error!(fire = fire_id, error = %e, "Closing a fire after a database failure failed too; its lease will expire.");
                }
            }
        }
        if let Some(mut open) = walk.open.take() {
            open.outcome = Some(FireOutcome::Error);
            open.error = Some(reason.clone());
            open.finished_at = Some(now_ms());
            self.publish_attempt(set_id, &open);
            walk.report.attempts.push(open);
        }
        ChipState::Error { reason }
    }

    /// Ends a job's task the fire did not end in its own last write: one
    /// that fired nothing is done with what its chip shows; one cancelled
    /// before it fired goes back to its job's queue.
    async fn end_task(&self, walk: &mut Walk) {
        let Some(task_id) = walk.task_id else {
            return;
        };
        if walk.closed {
            return;
        }
        let written = if walk.fire_id.is_none() && walk.cancelled {
            retrying(|| {
                self.store
                    .release_tasks(self.owner.as_str(), std::slice::from_ref(&task_id))
            })
            .await
        } else {
            let outcome = task_outcome(&walk.report.attempts, None, Some(&walk.report.chip));
            retrying(|| self.store.finish_task(task_id, &outcome, walk.fire_id)).await
        };
        if let Err(e) = written {
            tracing::error!(task = task_id, error = %e, "Ending a job task failed; its lease will expire and it will run again.");
        }
    }

    /// Waits until the connector's rate hint allows one more call: this
    /// process's throttle (a person's call ahead of background ones), then,
    /// on PostgreSQL, a slot of the whole deployment's rate for the key the
    /// call uses (see [`crate::store::Store::reserve_call`]). People's
    /// calls of `workspace_id` take turns with other workspaces'.
    async fn pace(
        &self,
        handle: &ConnectorHandle,
        permit: &mut Permit,
        workspace_id: Option<i64>,
        keyed_by: Option<i64>,
    ) {
        permit.throttle(handle, workspace_id).await;
        let Some(rate) = handle
            .registration
            .profile
            .rate_hints
            .per_second
            .filter(|r| r.is_finite() && *r > 0.0 && self.store.backend() == Backend::Postgres)
        else {
            return;
        };
        let bucket = crate::connectors::lens::usage_key(&handle.registration.profile.id, keyed_by);
        match retrying(|| self.store.reserve_call(&bucket, rate)).await {
            Ok(wait) => permit.hold(tokio::time::sleep(wait)).await,
            Err(e) => {
                tracing::warn!(connector = %handle.registration.profile.id, error = %e, "Cannot take a slot of the deployment's rate; this process's throttle alone paces the call.");
            }
        }
    }

    /// Calls a connector under the attempt timeout, giving up at once when
    /// the fire is cancelled; returns how it ended and its receipt.
    async fn call(
        &self,
        handle: &ConnectorHandle,
        intent: &Capability,
        query: &str,
        opts: &FireOpts,
        cancel: &CancellationToken,
    ) -> (Called, Receipt) {
        let timeout = self.config.attempt_timeout;
        let work = crate::connectors::receipts::recording(async {
            match tokio::time::timeout(timeout, handle.connector.fire(intent, query, opts)).await {
                Ok(Ok(results)) => Called::Results(results),
                Ok(Err(e)) => Called::Failed(e),
                Err(_) => Called::Failed(FireError::Timeout { after: timeout }),
            }
        });
        let (called, requests) = tokio::select! {
            called = work => called,
            () = cancel.cancelled() => (Called::Cancelled, Vec::new()),
        };
        let receipt = Receipt {
            version: handle.connector.version(),
            requests,
        };
        (called, receipt)
    }
}

/// The outcome a job task records for its fire: `found` when any attempt
/// found results, else how the last attempt ended (`pending` is the one
/// being written now). A fire that tried nothing (every connector already
/// found results, say, after a crash between an attempt and the end of its
/// fire) stands for what its chip shows.
fn task_outcome(
    attempts: &[HistoryEntry],
    pending: Option<FireOutcome>,
    chip: Option<&ChipState>,
) -> String {
    let outcomes = attempts.iter().filter_map(|a| a.outcome).chain(pending);
    let mut last = None;
    for outcome in outcomes {
        if outcome == FireOutcome::Found {
            return outcome.name().to_owned();
        }
        last = Some(outcome);
    }
    match (last, chip) {
        (Some(outcome), _) => outcome.name(),
        (None, Some(ChipState::Found { .. })) => FireOutcome::Found.name(),
        (None, Some(ChipState::NotFound)) => FireOutcome::NotFound.name(),
        (None, _) => "skipped",
    }
    .to_owned()
}
