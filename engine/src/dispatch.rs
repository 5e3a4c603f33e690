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

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use model::{
    Capability, Chip, ChipState, Cost, EventKind, FireOutcome, FireReport, HistoryEntry, Item,
    Receipt, Skipped, TriggeredBy,
};
use tokio_util::sync::CancellationToken;

use crate::chain::{self, Candidate, Chain, ChainRequest};
use crate::chip::{chip_state, ChipInputs};
use crate::connector::{ConnectorResult, FireError, FireOpts, Found, Secrets};
use crate::events::EventBus;
use crate::flow::{Flow, Permit, Priority, Signal};
use crate::lease::{LeaseConfig, Owner};
use crate::lens::Lens;
use crate::packs::{render_query, BundleMember, Catalog, PackConfig};
use crate::registry::{ConnectorHandle, Registry};
use crate::secrets::{self, Sealer};
use crate::store::{
    retrying, AttemptEnd, Backend, FireContext, FireEnd, FireStatus, Lease, Store, StoreError,
    StoredRecord, WorkspaceSettings,
};
use crate::time::now_ms;
use model::{ConnectorStatus, RecordSetSummary};

pub(crate) mod walk;

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
    /// its workspaces' admins are told (see [`crate::attention`]).
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
    rechecker: Option<crate::recheck::Rechecker>,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("config", &self.config)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

/// The fires running in this process, by id, with their cancel tokens.
type InFlightTable = Arc<Mutex<HashMap<i64, CancellationToken>>>;

/// A fire's place in the in-flight table (whose leases the heartbeat
/// renews), taken when its row is written and left however its future ends.
#[derive(Default)]
struct InFlight {
    entry: Option<(InFlightTable, i64)>,
}

impl InFlight {
    fn enter(&mut self, table: &InFlightTable, fire_id: i64, cancel: CancellationToken) {
        lock(table).insert(fire_id, cancel);
        self.entry = Some((table.clone(), fire_id));
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some((table, fire_id)) = self.entry.take() {
            lock(&table).remove(&fire_id);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// How one call of one connector ended.
enum Called {
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
    fn billed(&self, cost: Option<&Cost>, receipt: &Receipt) -> bool {
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

    fn signal(&self) -> Signal {
        match self {
            Called::Results(_) => Signal::Answered,
            Called::Failed(FireError::RateLimited { .. }) => Signal::RateLimited,
            Called::Failed(_) | Called::Cancelled => Signal::Other,
        }
    }
}

/// What a fire needs before it starts, read once: the record, its set, the
/// workspace's scope, the pack, the chain and the query.
#[derive(Debug)]
pub struct Prepared {
    req: FireRequest,
    record: StoredRecord,
    set: Arc<RecordSetSummary>,
    scope: Arc<Scope>,
    pack: PackConfig,
    chain: Chain,
    query: String,
}

impl Prepared {
    /// The connector the fire would try first, if any and if the query is
    /// not empty.
    pub fn first_connector(&self) -> Option<&str> {
        if self.query.trim().is_empty() {
            return None;
        }
        self.chain.to_try.first().map(String::as_str)
    }

    pub fn request(&self) -> &FireRequest {
        &self.req
    }
}

/// The chain inputs of one record that live in the database.
#[derive(Clone, Debug, Default)]
pub struct RecordChainInputs {
    /// "Start with this connector" a person set for the record and pack.
    pub record_override: Option<String>,
    /// Connectors that already found results for the record and intent.
    pub already_found: Vec<String>,
}

impl RecordChainInputs {
    /// A pack's inputs from what [`Store::record_facts`] read of a record.
    pub fn of(
        (overrides, found): &(HashMap<String, String>, Vec<(String, String)>),
        pack: &PackConfig,
    ) -> Self {
        Self {
            record_override: overrides.get(&pack.pack_id).cloned(),
            already_found: found
                .iter()
                .filter(|(intent, _)| intent == pack.intent.name())
                .map(|(_, connector)| connector.clone())
                .collect(),
        }
    }
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

/// A fire's attempts: its row (opened with the first attempt), its chip,
/// its items, its job task, and the events every viewer of the set gets.
struct FireLedger<'a, 'w> {
    dispatcher: &'a Dispatcher,
    walk: &'w mut Walk,
    record: &'a StoredRecord,
    set: &'a RecordSetSummary,
    scope: &'a Scope,
    pack: &'a PackConfig,
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
                    until: d.leases.expiry(),
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
            d.publish_chip(
                self.set.id,
                self.record,
                &self.pack.pack_id,
                ChipState::Firing,
                &walk.ctx.actor,
            );
        }
        d.publish_attempt(self.set.id, &attempt);
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
        d.publish_attempt(self.set.id, &closed.attempt);
        walk.report.attempts.push(closed.attempt);
        if let Some((attempts, item_count)) = closed.chip {
            walk.chip = Some(d.chip_from(self.scope, self.pack, &attempts, item_count));
        }
        d.publish_items(walk, self.set.id, closed.items);
        // A full answer (nothing dropped, no page missing) may have left
        // out pages it found before: they are asked for themselves.
        if let (Some(rechecker), None, Some(FireOutcome::Found | FireOutcome::NotFound)) =
            (&d.rechecker, &end.error, end.outcome)
        {
            rechecker.after(crate::recheck::Answered {
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
            flow: Flow::new(crate::flow::FlowConfig::default()),
            owner: Owner::new(),
            leases: LeaseConfig::default(),
            in_flight: Arc::default(),
            rechecker: None,
        }
    }

    /// Re-checks, after each full answer, the pages it left out (and those
    /// gone that it returned) with `rechecker`.
    pub fn with_rechecker(mut self, rechecker: crate::recheck::Rechecker) -> Self {
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

    /// The connector `id` as `workspace_id` may see it.
    pub fn handle(&self, id: &str, workspace_id: Option<i64>) -> Option<ConnectorHandle> {
        self.registry.by_id_in(id, workspace_id)
    }

    /// A workspace's secrets, opened (see [`secrets::open_all`]).
    pub async fn workspace_secrets(&self, workspace_id: i64) -> Result<Secrets, StoreError> {
        secrets::open_all(&self.store, self.sealer.as_ref(), workspace_id).await
    }

    /// The catalogue a workspace sees: the shipped one with the workspace's
    /// own packs and bundles laid over it (`None`: the shipped one).
    pub async fn catalog_in(&self, workspace_id: Option<i64>) -> Result<Catalog, StoreError> {
        let base = self
            .catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let Some(ws) = workspace_id else {
            return Ok(base);
        };
        let settings = self.store.workspace_settings(ws).await?;
        Ok(overlaid(base, ws, &settings))
    }

    /// What a workspace's fires, chips and menus read, once per request.
    pub async fn scope(&self, workspace_id: Option<i64>) -> Result<Scope, StoreError> {
        let base = self
            .catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let Some(ws) = workspace_id else {
            return Ok(Scope {
                lens: Lens::default(),
                catalog: base,
            });
        };
        let settings = self.store.workspace_settings(ws).await?;
        Ok(Scope {
            lens: Lens::from_settings(ws, &settings),
            catalog: overlaid(base, ws, &settings),
        })
    }

    /// Resolves the chain a fire of `pack_id` on `record` (of `set`, seen
    /// through `scope`) would walk now.
    pub async fn chain_for(
        &self,
        scope: &Scope,
        record: &StoredRecord,
        set: &RecordSetSummary,
        pack_id: &str,
        explicit: Option<&str>,
    ) -> Result<(PackConfig, Chain), DispatchError> {
        let (pack, member) = pack_in(&scope.catalog, &set.bundle_id, pack_id)
            .ok_or_else(|| DispatchError::UnknownPack(pack_id.to_owned()))?;
        let inputs = self.chain_inputs(record.id, &pack).await?;
        let chain = self.resolve(scope, &pack, member.as_ref(), explicit, &inputs, None);
        Ok((pack, chain))
    }

    async fn chain_inputs(
        &self,
        record_id: i64,
        pack: &PackConfig,
    ) -> Result<RecordChainInputs, StoreError> {
        let facts = self.store.record_facts(record_id).await?;
        Ok(RecordChainInputs::of(&facts, pack))
    }

    fn resolve(
        &self,
        scope: &Scope,
        pack: &PackConfig,
        member: Option<&BundleMember>,
        explicit: Option<&str>,
        inputs: &RecordChainInputs,
        waits_out_until: Option<i64>,
    ) -> Chain {
        chain::resolve(
            &ChainRequest {
                intent: Some(&pack.intent),
                explicit,
                record_override: inputs.record_override.as_deref(),
                bundle_override: member.and_then(|m| m.connector_chain_override.as_deref()),
                pack_preferred: &pack.preferred_connectors,
                already_found: &inputs.already_found,
                waits_out_until,
            },
            &scope.candidates(&self.registry),
        )
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

    /// Prepares a fire from what was read for it (a job reads for many
    /// records at once).
    pub fn prepare(
        &self,
        scope: Arc<Scope>,
        set: Arc<RecordSetSummary>,
        record: StoredRecord,
        req: FireRequest,
        inputs: &RecordChainInputs,
    ) -> Result<Prepared, DispatchError> {
        let pack = pack_in(&scope.catalog, &set.bundle_id, &req.pack_id)
            .ok_or_else(|| DispatchError::UnknownPack(req.pack_id.clone()))?;
        Ok(self.prepare_with(scope, set, record, req, pack, inputs))
    }

    fn prepare_with(
        &self,
        scope: Arc<Scope>,
        set: Arc<RecordSetSummary>,
        record: StoredRecord,
        req: FireRequest,
        (pack, member): (PackConfig, Option<BundleMember>),
        inputs: &RecordChainInputs,
    ) -> Prepared {
        // A refresh asks again what was found before: nothing is walked
        // past for having found results already.
        let refreshing;
        let inputs = if req.triggered_by == TriggeredBy::ScheduledRefresh {
            refreshing = RecordChainInputs {
                already_found: Vec::new(),
                ..inputs.clone()
            };
            &refreshing
        } else {
            inputs
        };
        let chain = self.resolve(
            &scope,
            &pack,
            member.as_ref(),
            req.connector.as_deref(),
            inputs,
            walk::waits_out_until(req.priority()),
        );
        let query = render_query(&pack.query_template, &record.name, &record.field_map());
        Prepared {
            req,
            record,
            set,
            scope,
            pack,
            chain,
            query,
        }
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

    /// Tells every viewer about the items an attempt's results became.
    fn publish_items(&self, walk: &mut Walk, set_id: i64, items: Vec<Item>) {
        for item in &items {
            self.events.publish(
                Some(set_id),
                EventKind::ItemChanged {
                    item: item.clone(),
                    actor: walk.ctx.actor.clone(),
                },
            );
        }
        walk.report.items.extend(items);
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
        let bucket = crate::lens::usage_key(&handle.registration.profile.id, keyed_by);
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

    /// Turns a call's end into a history row and the results to store,
    /// updates the connector's status, and says whether to retry the same
    /// connector.
    async fn classify(
        &self,
        handle: &ConnectorHandle,
        keyed_by: Option<i64>,
        called: Called,
        receipt: &Receipt,
        budget: &mut u32,
    ) -> Result<(AttemptEnd, Vec<ConnectorResult>, bool), StoreError> {
        let id = &handle.registration.profile.id;
        let failed = |outcome, error: String| AttemptEnd {
            outcome: Some(outcome),
            result_count: None,
            error: Some(error),
            retry_after: None,
            charge: None,
            receipt: None,
        };
        Ok(match called {
            Called::Cancelled => (
                failed(FireOutcome::Cancelled, "cancelled by a person".to_owned()),
                Vec::new(),
                false,
            ),
            Called::Results(Found { results, partial }) => {
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
                (end, results, false)
            }
            Called::Failed(e) => {
                let reason = e.to_string();
                // What every workspace on the server's key may be shown.
                let ours = e.in_our_words(receipt.requests.last().and_then(|r| r.status));
                match e {
                    FireError::RateLimited { retry_after, .. } => {
                        let wait = retry_after
                            .unwrap_or(self.config.default_retry_after)
                            .min(crate::connector::MAX_RETRY_AFTER);
                        let until =
                            now_ms() + i64::try_from(wait.as_millis()).unwrap_or(i64::MAX / 2);
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
                        let mut end = failed(FireOutcome::RateLimited, reason);
                        end.retry_after = Some(until);
                        (end, Vec::new(), false)
                    }
                    FireError::AuthFailed { .. } => {
                        match keyed_by {
                            // A key the workspace set was refused: that
                            // workspace's problem, not everyone's, so only
                            // it loses the connector until the key is set again.
                            Some(ws) => {
                                let status = ConnectorStatus::AuthFailed {
                                    at: now_ms(),
                                    reason: format!(
                                        "{reason} (with this workspace's key; set it again to retry)"
                                    ),
                                };
                                retrying(|| self.set_for_workspace(handle, ws, &status)).await?;
                            }
                            None => self.registry.mark_auth_failed(id, &ours).await,
                        }
                        self.raise_attention(id, keyed_by).await;
                        (failed(FireOutcome::Error, reason), Vec::new(), false)
                    }
                    FireError::Timeout { .. } | FireError::Upstream { .. } => {
                        let streak = if keyed_by.is_some() { &reason } else { &ours };
                        self.failed(handle, keyed_by, streak).await?;
                        let retry = *budget > 0;
                        if retry {
                            *budget -= 1;
                        }
                        (failed(FireOutcome::Error, reason), Vec::new(), retry)
                    }
                    // The request's own: its attempt says why, and no
                    // status, streak or suspension changes for anyone.
                    FireError::Malformed { .. } | FireError::Request { .. } => {
                        (failed(FireOutcome::Error, reason), Vec::new(), false)
                    }
                }
            }
        })
    }

    /// Counts an error of the connector against the key it was made with:
    /// a streak with the server's key suspends it for everyone, one with a
    /// workspace's own key in that workspace only.
    async fn failed(
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
    async fn raise_attention(&self, id: &str, keyed_by: Option<i64>) {
        let bus = (&self.store, &self.registry, &self.events);
        if let Err(e) =
            crate::attention::raise(bus, self.config.attention_after, id, keyed_by).await
        {
            tracing::warn!(connector = %id, error = %e, "Cannot tell the admins a connector needs them.");
        }
    }

    /// Gives a connector a status in the one workspace whose own key met
    /// it (a refusal, a rate limit, a suspension), records it in that
    /// workspace's audit trail and tells its viewers.
    async fn set_for_workspace(
        &self,
        handle: &ConnectorHandle,
        workspace_id: i64,
        status: &ConnectorStatus,
    ) -> Result<(), StoreError> {
        let id = &handle.registration.profile.id;
        let actor = crate::registry::SYSTEM_ACTOR;
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

    /// Cancels a fire in flight in this process. `false` when it is not.
    pub fn cancel(&self, fire_id: i64) -> bool {
        match lock(&self.in_flight).get(&fire_id) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// The fires running in this process now (their leases are renewed).
    pub fn in_flight(&self) -> Vec<i64> {
        lock(&self.in_flight).keys().copied().collect()
    }

    /// The chip of one record and pack now.
    pub async fn chip_of(
        &self,
        scope: &Scope,
        record_id: i64,
        pack: &PackConfig,
    ) -> Result<ChipState, StoreError> {
        let (attempts, item_count) = self.store.chip_inputs(record_id, &pack.intent).await?;
        Ok(self.chip_from(scope, pack, &attempts, item_count))
    }

    /// The chip of a record and pack from its attempts for the pack's
    /// intent and its item count.
    fn chip_from(
        &self,
        scope: &Scope,
        pack: &PackConfig,
        attempts: &[HistoryEntry],
        item_count: u32,
    ) -> ChipState {
        let needs_env = pack_needs_env(pack, &scope.candidates(&self.registry));
        chip_state(ChipInputs {
            attempts,
            item_count,
            needs_env: needs_env.as_deref(),
            now: now_ms(),
        })
    }

    /// The chips of many records of `set` for the given packs, in pack order,
    /// each with the connector a plain click would fire first.
    pub async fn chips(
        &self,
        scope: &Scope,
        record_ids: &[i64],
        set: &RecordSetSummary,
        packs: &[PackConfig],
    ) -> Result<HashMap<i64, Vec<Chip>>, DispatchError> {
        let bundle_id = set.bundle_id.as_str();
        let catalog = &scope.catalog;
        let history = self.store.history_of(record_ids).await?;
        let counts = self.store.item_counts(record_ids).await?;
        let overrides = self.store.record_overrides_of(record_ids).await?;
        // One registry snapshot for the chains and the names they show.
        let lens = &scope.lens;
        let handles = lens.handles(&self.registry);
        let candidates = candidates_of(&handles, lens);
        let display: HashMap<&str, &str> = handles
            .iter()
            .map(|h| {
                (
                    h.registration.profile.id.as_str(),
                    h.registration.profile.display_name.as_str(),
                )
            })
            .collect();
        let needs_env: Vec<Option<Vec<String>>> = packs
            .iter()
            .map(|p| pack_needs_env(p, &candidates))
            .collect();
        let bundle_chains: HashMap<String, Option<Vec<String>>> = packs
            .iter()
            .map(|p| {
                let member = pack_in(catalog, bundle_id, &p.pack_id).and_then(|(_, m)| m);
                (
                    p.pack_id.clone(),
                    member.and_then(|m| m.connector_chain_override),
                )
            })
            .collect();
        let now = now_ms();
        let empty: Vec<HistoryEntry> = Vec::new();
        let mut out = HashMap::with_capacity(record_ids.len());
        for id in record_ids {
            let attempts = history.get(id).unwrap_or(&empty);
            let chips = packs
                .iter()
                .zip(&needs_env)
                .map(|(pack, needs)| {
                    let mine: Vec<HistoryEntry> = attempts
                        .iter()
                        .filter(|a| a.intent == pack.intent)
                        .cloned()
                        .collect();
                    let found: Vec<String> = mine
                        .iter()
                        .filter(|a| a.outcome == Some(FireOutcome::Found))
                        .map(|a| a.connector_id.clone())
                        .collect();
                    let chain = chain::resolve(
                        &ChainRequest {
                            intent: Some(&pack.intent),
                            record_override: overrides
                                .get(&(*id, pack.pack_id.clone()))
                                .map(String::as_str),
                            bundle_override: bundle_chains
                                .get(&pack.pack_id)
                                .and_then(|c| c.as_deref()),
                            pack_preferred: &pack.preferred_connectors,
                            already_found: &found,
                            ..Default::default()
                        },
                        &candidates,
                    );
                    Chip {
                        pack_id: pack.pack_id.clone(),
                        next: chain.to_try.first().map(|c| {
                            display
                                .get(c.as_str())
                                .map_or_else(|| c.clone(), |n| (*n).to_owned())
                        }),
                        held: chain
                            .skipped
                            .iter()
                            .find(|s| s.capped)
                            .map(|s| s.reason.clone()),
                        state: chip_state(ChipInputs {
                            attempts: &mine,
                            item_count: counts
                                .get(&(*id, pack.intent.name().to_owned()))
                                .copied()
                                .unwrap_or(0),
                            needs_env: needs.as_deref(),
                            now,
                        }),
                    }
                })
                .collect();
            out.insert(*id, chips);
        }
        Ok(out)
    }

    fn publish_chip(
        &self,
        set_id: i64,
        record: &StoredRecord,
        pack_id: &str,
        chip: ChipState,
        actor: &str,
    ) {
        self.events.publish(
            Some(set_id),
            EventKind::ChipChanged {
                record_id: record.id,
                pack_id: pack_id.to_owned(),
                chip,
                actor: actor.to_owned(),
            },
        );
    }

    fn publish_attempt(&self, set_id: i64, entry: &HistoryEntry) {
        self.events.publish(
            Some(set_id),
            EventKind::Attempt {
                entry: entry.clone(),
            },
        );
    }
}

/// What one workspace's fires, chips and menus read once per request: how
/// it sees the registry and its catalogue. Read it with
/// [`Dispatcher::scope`] and hand it down instead of reading either again.
#[derive(Clone, Debug)]
pub struct Scope {
    pub lens: Lens,
    pub catalog: Catalog,
}

impl Scope {
    /// The connectors as chain resolution sees them here.
    pub fn candidates(&self, registry: &Registry) -> Vec<Candidate> {
        candidates_of(&self.lens.handles(registry), &self.lens)
    }

    /// The packs of a bundle, in roster order: the chips of its cards.
    pub fn packs_of(&self, bundle_id: &str) -> Vec<PackConfig> {
        self.catalog
            .bundle_packs(bundle_id)
            .into_iter()
            .map(|(p, _)| p.clone())
            .collect()
    }
}

/// The shipped catalogue with a workspace's own packs and bundles laid over
/// it (the shipped one if they no longer fit it).
fn overlaid(base: Catalog, ws: i64, settings: &WorkspaceSettings) -> Catalog {
    base.clone()
        .with_overlay(settings.packs.clone(), settings.bundles.clone())
        .unwrap_or_else(|e| {
            // Valid when saved; a changed shipped catalogue can clash with it.
            tracing::warn!(workspace = ws, error = %e, "A workspace's own packs no longer fit the catalogue; showing the shipped one.");
            base
        })
}

/// A pack and its membership in a record set's bundle.
fn pack_in(
    catalog: &Catalog,
    bundle_id: &str,
    pack_id: &str,
) -> Option<(PackConfig, Option<BundleMember>)> {
    let pack = catalog.pack(pack_id)?.clone();
    let member = catalog
        .bundle(bundle_id)
        .and_then(|b| b.members.iter().find(|m| m.pack == pack_id).cloned());
    Some((pack, member))
}

/// The connectors as chain resolution sees them through a workspace's lens.
fn candidates_of(handles: &[ConnectorHandle], lens: &Lens) -> Vec<Candidate> {
    handles
        .iter()
        .filter(|h| lens.sees(h))
        .map(|h| Candidate {
            id: h.registration.profile.id.clone(),
            serves: h.registration.profile.capabilities.clone(),
            cost_tier: h.registration.profile.cost_tier,
            status: lens.status(h),
        })
        .collect()
}

fn skip(connector_id: &str, reason: &str) -> Skipped {
    Skipped {
        connector_id: connector_id.to_owned(),
        reason: reason.to_owned(),
        capped: false,
    }
}

/// The variables a pack's chain waits for, when nothing else stops it: every
/// connector it would try is registered but needs environment variables.
fn pack_needs_env(pack: &PackConfig, candidates: &[Candidate]) -> Option<Vec<String>> {
    let chain = chain::resolve(
        &ChainRequest {
            intent: Some(&pack.intent),
            pack_preferred: &pack.preferred_connectors,
            ..Default::default()
        },
        candidates,
    );
    if !chain.to_try.is_empty() {
        return None;
    }
    let mut vars: Vec<String> = Vec::new();
    for s in &chain.skipped {
        if let Some(c) = candidates.iter().find(|c| c.id == s.connector_id) {
            if let model::ConnectorStatus::NeedsEnv { vars: v } = &c.status {
                for var in v {
                    if !vars.contains(var) {
                        vars.push(var.clone());
                    }
                }
            }
        }
    }
    (!vars.is_empty()).then_some(vars)
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
