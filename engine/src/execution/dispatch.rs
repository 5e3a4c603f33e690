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

use model::{Capability, FireReport, Receipt, TriggeredBy};
use tokio_util::sync::CancellationToken;

use crate::connectors::registry::{ConnectorHandle, Registry};
use crate::connectors::seam::{FireError, FireOpts};
use crate::execution::flow::{Flow, Permit, Priority};
use crate::execution::lease::{LeaseConfig, Owner};
use crate::live::events::EventBus;
use crate::packs::Catalog;
use crate::store::{retrying, Backend, Store, StoreError};
use crate::tenancy::secrets::Sealer;

mod chips;
mod hold;
mod in_flight;
mod ledger;
mod prepare;
mod run;
mod scope;
mod verdict;
pub(crate) mod walk;

use in_flight::InFlightTable;
pub use prepare::Prepared;
use run::Walk;
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
    /// The person (a user id) whose own order of the pack's connectors
    /// comes before the bundle's and the pack's; `None` follows the
    /// workspace's chains (fan-outs, refreshes).
    pub chains_of: Option<i64>,
    /// The person said to spend past the record's daily caps this time.
    pub spend_more: bool,
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
            chains_of: None,
            spend_more: false,
        }
    }

    /// The fire follows `user_id`'s own orders of the packs' connectors.
    #[must_use]
    pub fn in_order_of(mut self, user_id: i64) -> Self {
        self.chains_of = Some(user_id);
        self
    }

    /// The fire may spend past the record's daily caps.
    #[must_use]
    pub fn spending_more(mut self, spend_more: bool) -> Self {
        self.spend_more = spend_more;
        self
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
    page_checker: Option<crate::execution::gone_pages::PageChecker>,
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
            page_checker: None,
        }
    }

    /// Re-checks, after each full answer, the pages it left out (and those
    /// gone that it returned) with `page_checker`.
    pub fn with_page_checker(
        mut self,
        page_checker: crate::execution::gone_pages::PageChecker,
    ) -> Self {
        self.page_checker = Some(page_checker);
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
        let scope = self.scope_for(set.workspace_id, req.chains_of).await?;
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
