//! The dispatcher: fires one pack for one record. It resolves the chain,
//! walks it (daily cap -> throttle -> timeout -> call, in that order, one
//! retry budget for the whole chain), writes every attempt to
//! `connector_history` before the next one starts, merges results into the
//! curated layer, and publishes each change on the event bus.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use model::{
    Capability, Chip, ChipState, EventKind, FireOutcome, FireReport, HistoryEntry, Item, Skipped,
    TriggeredBy,
};
use tokio_util::sync::CancellationToken;

use crate::chain::{self, Candidate, Chain, ChainRequest};
use crate::chip::{chip_state, ChipInputs};
use crate::connector::{FireError, FireOpts, Secrets};
use crate::events::EventBus;
use crate::lens::Lens;
use crate::packs::{render_query, BundleMember, Catalog, PackConfig};
use crate::registry::{ConnectorHandle, Registry};
use crate::secrets::{self, Sealer};
use crate::store::{AttemptEnd, FireContext, Store, StoreError, StoredRecord};
use crate::time::now_ms;
use model::RecordSetSummary;

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
}

impl Default for DispatchConfig {
    fn default() -> Self {
        Self {
            attempt_timeout: Duration::from_secs(20),
            retry_budget: 1,
            retry_pause: Duration::from_millis(250),
            max_results: 10,
            default_retry_after: Duration::from_secs(60),
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
    pub job_id: Option<i64>,
    /// Cancelling this cancels the fire too (a job's token).
    pub parent: Option<CancellationToken>,
}

#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[error("no pack {0:?}")]
    UnknownPack(String),
    #[error(transparent)]
    Store(#[from] StoreError),
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
    in_flight: Arc<Mutex<HashMap<i64, CancellationToken>>>,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Removes a fire from the in-flight table however its future ends.
struct InFlight<'a> {
    table: &'a Mutex<HashMap<i64, CancellationToken>>,
    fire_id: i64,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        lock(self.table).remove(&self.fire_id);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The connector one call went to, and the workspace whose secret it used.
#[derive(Clone, Copy)]
struct Target<'a> {
    handle: &'a ConnectorHandle,
    keyed_by: Option<i64>,
}

/// How one call of one connector ended.
enum Called {
    Results(Vec<crate::connector::ConnectorResult>),
    Failed(FireError),
    Cancelled,
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
            in_flight: Arc::default(),
        }
    }

    /// Fires with the workspace secrets `sealer` opens.
    pub fn with_sealer(mut self, sealer: Option<Sealer>) -> Self {
        self.sealer = sealer;
        self
    }

    /// What seals workspace secrets; `None` when no key is configured.
    pub fn sealer(&self) -> Option<&Sealer> {
        self.sealer.as_ref()
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
        let (packs, bundles) = self.store.workspace_catalog(ws).await?;
        Ok(base.with_overlay(packs, bundles).unwrap_or_else(|e| {
            // Valid when saved; a changed shipped catalogue can clash with it.
            tracing::warn!(workspace = ws, error = %e, "A workspace's own packs no longer fit the catalogue; showing the shipped one.");
            base
        }))
    }

    /// What a workspace's fires, chips and menus read, once per request.
    pub async fn scope(&self, workspace_id: Option<i64>) -> Result<Scope, StoreError> {
        Ok(Scope {
            lens: Lens::of(&self.store, workspace_id).await?,
            catalog: self.catalog_in(workspace_id).await?,
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
        let record_override = self.store.record_override(record.id, pack_id).await?;
        let already_found = self
            .store
            .connectors_that_found(record.id, &pack.intent)
            .await?;
        let chain = chain::resolve(
            &ChainRequest {
                intent: Some(&pack.intent),
                explicit,
                record_override: record_override.as_deref(),
                bundle_override: member
                    .as_ref()
                    .and_then(|m| m.connector_chain_override.as_deref()),
                pack_preferred: &pack.preferred_connectors,
                already_found: &already_found,
            },
            &scope.candidates(&self.registry),
        );
        Ok((pack, chain))
    }

    /// Fires one pack for one record and reports what happened.
    pub async fn fire(&self, req: FireRequest) -> Result<FireReport, DispatchError> {
        let record = self.store.record(req.record_id).await?;
        let set = self.store.record_set(record.record_set_id).await?;
        let scope = self.scope(set.workspace_id).await?;
        let (pack, chain) = self
            .chain_for(
                &scope,
                &record,
                &set,
                &req.pack_id,
                req.connector.as_deref(),
            )
            .await?;
        let mut report = FireReport {
            fire_id: None,
            record_id: record.id,
            pack_id: pack.pack_id.clone(),
            intent: pack.intent.clone(),
            chip: ChipState::Idle,
            attempts: Vec::new(),
            skipped: chain.skipped,
            items: Vec::new(),
            notes: chain.notes,
        };
        if chain.to_try.is_empty() {
            report.notes.push(if report.skipped.iter().any(|s| s.reason.starts_with("already found")) {
                "every connector that can fire has already found results for this record; pick one in the menu to fire it again".to_owned()
            } else {
                "no connector of this pack can fire now".to_owned()
            });
            report.chip = self.chip_of(&scope, &record, &set, &pack).await?;
            return Ok(report);
        }

        let query = render_query(&pack.query_template, &record.name, &record.field_map());
        if query.trim().is_empty() {
            report.notes.push(format!(
                "the query {:?} is empty for this record (it lacks the fields it names)",
                pack.query_template
            ));
            report.chip = self.chip_of(&scope, &record, &set, &pack).await?;
            return Ok(report);
        }

        let ctx = FireContext {
            record_id: record.id,
            pack_id: pack.pack_id.clone(),
            intent: pack.intent.clone(),
            triggered_by: req.triggered_by,
            actor: req.actor.clone(),
            job_id: req.job_id,
        };
        let fire_id = self.store.start_fire(&ctx).await?;
        report.fire_id = Some(fire_id);
        let cancel = req
            .parent
            .as_ref()
            .map_or_else(CancellationToken::new, CancellationToken::child_token);
        lock(&self.in_flight).insert(fire_id, cancel.clone());
        let _guard = InFlight {
            table: &self.in_flight,
            fire_id,
        };
        self.publish_chip(
            set.id,
            &record,
            &pack.pack_id,
            ChipState::Firing,
            &req.actor,
        );

        let opts = FireOpts {
            record_name: record.name.clone(),
            record_fields: record.field_map(),
            max_results: self.config.max_results,
            secrets: Secrets::default(),
        };
        let lens = &scope.lens;
        let secrets = match set.workspace_id {
            Some(ws) if lens.has_secrets() => self.workspace_secrets(ws).await?,
            _ => Secrets::default(),
        };
        let mut budget = self.config.retry_budget;
        let mut cancelled = false;
        'chain: for connector_id in &chain.to_try {
            let Some(handle) = self.registry.by_id_in(connector_id, set.workspace_id) else {
                report
                    .skipped
                    .push(skip(connector_id, "unregistered while the fire ran"));
                continue;
            };
            let status = lens.status(&handle);
            if !status.is_available() {
                let reason = status.reason().unwrap_or_default();
                report.skipped.push(skip(connector_id, &reason));
                continue;
            }
            let opts = FireOpts {
                secrets: secrets.only(&handle.registration.requires_env),
                ..opts.clone()
            };
            loop {
                if let Some(cap) = handle.registration.rate_hints.daily_cap {
                    if !self.store.take_daily_fire(connector_id, cap).await? {
                        report.skipped.push(skip(
                            connector_id,
                            &format!("daily cap of {cap} fires reached"),
                        ));
                        continue 'chain;
                    }
                }
                let attempt = self
                    .store
                    .start_attempt(fire_id, &ctx, connector_id)
                    .await?;
                self.publish_attempt(set.id, &attempt);
                let called = self
                    .call(&handle, &pack.intent, &query, &opts, &cancel)
                    .await;
                let target = Target {
                    handle: &handle,
                    keyed_by: (!opts.secrets.is_empty())
                        .then_some(set.workspace_id)
                        .flatten(),
                };
                let (end, items, retry) = self
                    .classify(target, &record, &ctx, fire_id, called, &mut budget)
                    .await?;
                let entry = self.store.finish_attempt(attempt.id, &end).await?;
                self.publish_attempt(set.id, &entry);
                report.attempts.push(entry);
                for item in &items {
                    self.events.publish(
                        Some(set.id),
                        EventKind::ItemChanged {
                            item: item.clone(),
                            actor: req.actor.clone(),
                        },
                    );
                }
                report.items.extend(items);
                match end.outcome {
                    Some(FireOutcome::Found) => break 'chain,
                    Some(FireOutcome::Cancelled) => {
                        cancelled = true;
                        break 'chain;
                    }
                    // A connector the errors just suspended is not tried again.
                    _ if retry
                        && self
                            .registry
                            .by_id(connector_id)
                            .is_some_and(|h| h.status.is_available()) =>
                    {
                        tokio::select! {
                            () = tokio::time::sleep(self.config.retry_pause) => {}
                            () = cancel.cancelled() => { cancelled = true; break 'chain; }
                        }
                    }
                    _ => break,
                }
            }
        }
        self.store
            .finish_fire(fire_id, if cancelled { "cancelled" } else { "done" })
            .await?;
        report.chip = self.chip_of(&scope, &record, &set, &pack).await?;
        self.publish_chip(
            set.id,
            &record,
            &pack.pack_id,
            report.chip.clone(),
            &req.actor,
        );
        tracing::info!(
            fire = fire_id,
            pack = %pack.pack_id,
            attempts = report.attempts.len(),
            chip = report.chip.name(),
            "Fire finished."
        );
        Ok(report)
    }

    /// Calls a connector under its throttle and the attempt timeout, giving up
    /// at once when the fire is cancelled.
    async fn call(
        &self,
        handle: &ConnectorHandle,
        intent: &Capability,
        query: &str,
        opts: &FireOpts,
        cancel: &CancellationToken,
    ) -> Called {
        let timeout = self.config.attempt_timeout;
        let work = async {
            handle.throttle().await;
            match tokio::time::timeout(timeout, handle.connector.fire(intent, query, opts)).await {
                Ok(Ok(results)) => Called::Results(results),
                Ok(Err(e)) => Called::Failed(e),
                Err(_) => Called::Failed(FireError::Timeout { after: timeout }),
            }
        };
        tokio::select! {
            called = work => called,
            () = cancel.cancelled() => Called::Cancelled,
        }
    }

    /// Turns a call's end into a history row, stores its results, updates the
    /// connector's status, and says whether to retry the same connector.
    async fn classify(
        &self,
        Target { handle, keyed_by }: Target<'_>,
        record: &StoredRecord,
        ctx: &FireContext,
        fire_id: i64,
        called: Called,
        budget: &mut u32,
    ) -> Result<(AttemptEnd, Vec<Item>, bool), DispatchError> {
        let id = &handle.registration.id;
        let failed = |outcome, error: String| AttemptEnd {
            outcome: Some(outcome),
            result_count: None,
            error: Some(error),
            retry_after: None,
        };
        Ok(match called {
            Called::Cancelled => (
                failed(FireOutcome::Cancelled, "cancelled by a person".to_owned()),
                Vec::new(),
                false,
            ),
            Called::Results(results) => {
                self.registry.record_answer(id);
                let items = self
                    .store
                    .add_results(
                        record.id,
                        &ctx.intent,
                        fire_id,
                        id,
                        ctx.triggered_by,
                        &results,
                    )
                    .await?;
                let end = AttemptEnd {
                    outcome: Some(if items.is_empty() {
                        FireOutcome::NotFound
                    } else {
                        FireOutcome::Found
                    }),
                    result_count: Some(u32::try_from(items.len()).unwrap_or(u32::MAX)),
                    error: (items.is_empty() && !results.is_empty()).then(|| {
                        format!(
                            "{} results without a web address were dropped",
                            results.len()
                        )
                    }),
                    retry_after: None,
                };
                (end, items, false)
            }
            Called::Failed(e) => {
                let reason = e.to_string();
                match e {
                    FireError::RateLimited { retry_after, .. } => {
                        let wait = retry_after.unwrap_or(self.config.default_retry_after);
                        self.registry.mark_rate_limited(id, wait, &reason).await;
                        let until =
                            now_ms() + i64::try_from(wait.as_millis()).unwrap_or(i64::MAX / 2);
                        let mut end = failed(FireOutcome::RateLimited, reason);
                        end.retry_after = Some(until);
                        (end, Vec::new(), false)
                    }
                    FireError::AuthFailed { .. } => {
                        match keyed_by {
                            // A key the workspace set was refused: that
                            // workspace's problem, not everyone's, so only
                            // it loses the connector until the key is set again.
                            Some(ws) => self.refused_workspace_key(ws, id, &reason).await?,
                            None => self.registry.mark_auth_failed(id, &reason).await,
                        }
                        (failed(FireOutcome::Error, reason), Vec::new(), false)
                    }
                    FireError::Timeout { .. } | FireError::Upstream { .. } => {
                        self.registry.record_failure(id, &reason).await;
                        let retry = *budget > 0;
                        if retry {
                            *budget -= 1;
                        }
                        (failed(FireOutcome::Error, reason), Vec::new(), retry)
                    }
                    FireError::Malformed { .. } => {
                        self.registry.record_failure(id, &reason).await;
                        (failed(FireOutcome::Error, reason), Vec::new(), false)
                    }
                }
            }
        })
    }

    /// Switches a connector off in the one workspace whose key it refused.
    async fn refused_workspace_key(
        &self,
        workspace_id: i64,
        id: &str,
        reason: &str,
    ) -> Result<(), StoreError> {
        let why = format!("{reason} (with this workspace's key; set it again to retry)");
        let actor = crate::registry::SYSTEM_ACTOR;
        if self
            .store
            .set_workspace_connector(workspace_id, id, Some(&why), actor)
            .await?
        {
            self.store
                .record_connector_status(Some(workspace_id), id, "auth_failed", Some(&why), actor)
                .await?;
        }
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

    /// The chip of one record and pack now.
    pub async fn chip_of(
        &self,
        scope: &Scope,
        record: &StoredRecord,
        set: &RecordSetSummary,
        pack: &PackConfig,
    ) -> Result<ChipState, DispatchError> {
        let chips = self
            .chips(scope, &[record.id], set, std::slice::from_ref(pack))
            .await?;
        Ok(chips
            .get(&record.id)
            .and_then(|c| c.first())
            .map_or(ChipState::Idle, |c| c.state.clone()))
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
                    h.registration.id.as_str(),
                    h.registration.display_name.as_str(),
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
            id: h.registration.id.clone(),
            serves: h.registration.capabilities.clone(),
            cost_tier: h.registration.cost_tier,
            status: lens.status(h),
        })
        .collect()
}

fn skip(connector_id: &str, reason: &str) -> Skipped {
    Skipped {
        connector_id: connector_id.to_owned(),
        reason: reason.to_owned(),
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
