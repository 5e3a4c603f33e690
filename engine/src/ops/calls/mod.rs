//! Capability calls: "search the news for X" with no record behind it. The
//! query walks the capability's chain the one way every fire does (rates,
//! caps, statuses, cost tiers, the flow's limits), each attempt leaves a
//! receipt, and the answer is the envelope: `completed` with the results
//! when the walk ends within [`CallConfig::inline_wait`], `pending` with the
//! call's id otherwise (or when asked for), read again with
//! [`Engine::call_envelope`].

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use model::{
    CallAttempt, CallOutput, CallRequest, Capability, Envelope, EnvelopeStatus, Progress, WorkKind,
};
use tokio_util::sync::CancellationToken;

use crate::connectors::seam::{FireOpts, Secrets};
use crate::execution::dispatch::walk::Subject;
use crate::execution::flow::Priority;

use crate::packs::chain::{self, ChainRequest};
use crate::store::{CallStatus, NewCall, Owned, StoreError};
use crate::tenancy::Principal;
use crate::Engine;

use super::OpError;

mod envelope;
mod ledger;
mod scrape;
mod shape;
mod typed;

use envelope::{connectors_tried, envelope_status, stored_envelope};
use ledger::{CallLedger, Receipts};
use shape::Shape;

/// How long calls may take and how long their results are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallConfig {
    /// A call still walking after this is answered `pending`.
    pub inline_wait: Duration,
    /// Results are kept this long after a call starts.
    pub keep_results: Duration,
    /// The longest a call may walk (every connector's timeout and retry):
    /// its lease is renewed up to this long after it started, no longer.
    pub longest: Duration,
    /// A `web.scrape` of more addresses than this answers `pending` at
    /// once, as a job.
    pub inline_urls: usize,
}

impl Default for CallConfig {
    fn default() -> Self {
        Self {
            inline_wait: Duration::from_secs(10),
            keep_results: Duration::from_secs(24 * 3600),
            longest: Duration::from_secs(15 * 60),
            inline_urls: 5,
        }
    }
}

/// Results a call gives when it is not told how many.
pub const DEFAULT_MAX_RESULTS: u32 = 10;
/// The most results a call may ask for.
pub const MAX_RESULTS: u32 = 50;
/// The longest query, in characters.
pub const MAX_QUERY_CHARS: usize = 1000;
/// Calls one workspace may have walking at once in a process; past it a
/// call is answered 429, so one workspace's flood cannot fill the
/// process's memory and connections for everyone.
pub const MAX_CALLS_IN_FLIGHT: usize = 100;
/// Of them, one person's: one member's script cannot take every place of
/// the workspace from their colleagues' clicks.
pub const MAX_CALLS_IN_FLIGHT_PER_PERSON: usize = MAX_CALLS_IN_FLIGHT / 2;

/// The calls walking in this process, by id, with their cancel tokens.
pub type CallsInFlight = Arc<Mutex<HashMap<i64, CancellationToken>>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 4)
}

/// A call's request, checked (see [`Engine::asked`]).
struct Asked {
    intent: Capability,
    query: String,
    max_results: u32,
    explicit: Option<String>,
}

/// A call about to be stored and walked (see [`Engine::launch`]).
struct Launch<'a> {
    /// The verb's name, as stored and read back.
    name: &'a str,
    query: &'a str,
    explicit: Option<&'a str>,
    max_results: u32,
    /// What its progress counts to.
    total: u64,
    /// Answer `pending` at once.
    run_async: bool,
}

impl Engine {
    /// Walks `capability`'s chain for a query on behalf of the caller's
    /// workspace and answers the envelope (see the module's doc).
    pub async fn call_capability(
        &self,
        who: &Principal,
        capability: &str,
        req: CallRequest,
    ) -> Result<Envelope<CallOutput>, OpError> {
        let intent: Capability = capability
            .parse()
            .map_err(|e| OpError::NotFound(format!("capability: {e}")))?;
        let walk = Walk {
            name: intent.name().to_owned(),
            intent,
            shape: Shape::Search,
            fields: BTreeMap::new(),
        };
        self.search(who, walk, req).await
    }

    /// A query walked through one chain (see [`Walk`]).
    async fn search(
        &self,
        who: &Principal,
        walk: Walk,
        req: CallRequest,
    ) -> Result<Envelope<CallOutput>, OpError> {
        let ws = who.workspace_id;
        let Walk {
            name,
            intent,
            shape,
            fields,
        } = walk;
        let Asked {
            intent,
            query,
            max_results,
            explicit,
        } = self.asked(ws, intent, &req)?;
        let scope = self.dispatcher.scope(Some(ws)).await?;
        // A call has no record and no pack: the chain is the capability's
        // default one (cheapest first), or the one connector asked for.
        let chain = chain::resolve(
            &ChainRequest {
                intent: Some(&intent),
                explicit: explicit.as_deref(),
                ..ChainRequest::default()
            },
            &scope.candidates(&self.registry),
        );
        let launch = Launch {
            name: &name,
            query: &query,
            explicit: explicit.as_deref(),
            max_results,
            total: chain.to_try.len() as u64,
            run_async: req.run_async,
        };
        let actor = who.email.clone();
        let asked_query = query.clone();
        self.launch(who, launch, move |engine, id, cancel| async move {
            let plan = CallPlan {
                id,
                workspace_id: ws,
                actor,
                intent,
                query: asked_query,
                max_results,
                chain,
                shape,
                fields,
            };
            engine.walk_call(&plan, &scope.lens, &cancel).await
        })
        .await
    }

    /// Stores a call, walks it in a task of its own (holding the
    /// workspace's and the person's places) and answers its envelope: at
    /// its end when that comes within [`CallConfig::inline_wait`], else
    /// (or when asked to answer at once) `pending` with its id.
    async fn launch<W, F>(
        &self,
        who: &Principal,
        launch: Launch<'_>,
        walk: W,
    ) -> Result<Envelope<CallOutput>, OpError>
    where
        W: FnOnce(Engine, i64, CancellationToken) -> F,
        F: Future<Output = Result<Envelope<CallOutput>, StoreError>> + Send + 'static,
    {
        let ws = who.workspace_id;
        let slot = self.calls_by_workspace.take_or_refuse(
            ws,
            MAX_CALLS_IN_FLIGHT,
            Duration::from_secs(10),
            || format!("calls: this workspace has {MAX_CALLS_IN_FLIGHT} calls walking; wait for some to end"),
        )?;
        let person_slot = self.calls_by_person.take_or_refuse(
            who.user_id,
            MAX_CALLS_IN_FLIGHT_PER_PERSON,
            Duration::from_secs(10),
            || format!("calls: you have {MAX_CALLS_IN_FLIGHT_PER_PERSON} calls walking; wait for some to end"),
        )?;
        let now = self.store.now_ms();
        let config = self.calls;
        let id = self
            .store
            .create_call(&NewCall {
                workspace_id: ws,
                capability: launch.name,
                query: launch.query,
                connector: launch.explicit,
                max_results: launch.max_results,
                chain_length: launch.total,
                created_by: &who.email,
                // A lease like a fire's: renewed by this process's
                // heartbeat; once it lapses, the call was lost with it.
                deadline: self.leases.expiry(now).min(now + ms(config.longest)),
                keep_until: now + ms(config.keep_results),
            })
            .await?;
        let cancel = CancellationToken::new();
        lock(&self.calls_in_flight).insert(id, cancel.clone());
        let walking = walk(self.clone(), id, cancel);
        let engine = self.clone();
        let walk = tokio::spawn(async move {
            let _slots = (slot, person_slot);
            let outcome = walking.await;
            lock(&engine.calls_in_flight).remove(&id);
            outcome
        });
        let pending = Envelope {
            status: EnvelopeStatus::Pending,
            job_id: Some(id),
            kind: Some(WorkKind::Call),
            progress: Progress {
                done: 0,
                total: launch.total,
            },
            results: Vec::new(),
            error: None,
            job: None,
        };
        if launch.run_async {
            return Ok(pending);
        }
        match tokio::time::timeout(config.inline_wait, walk).await {
            Ok(Ok(Ok(envelope))) => Ok(envelope),
            Ok(Ok(Err(e))) => Err(e.into()),
            Ok(Err(e)) => {
                tracing::error!(call = id, error = %e, "A call's task stopped unexpectedly.");
                Err(OpError::Internal(anyhow::anyhow!(
                    "the call {id} stopped unexpectedly"
                )))
            }
            Err(_) => Ok(pending),
        }
    }

    /// What a call asks for, checked: a known capability, a query and a
    /// number of results in bounds, and a connector (if one is named) that
    /// the workspace has and that serves the capability, or else some
    /// connector that does.
    fn asked(&self, ws: i64, intent: Capability, req: &CallRequest) -> Result<Asked, OpError> {
        let query = req.query.trim().to_owned();
        if query.is_empty() || query.chars().count() > MAX_QUERY_CHARS {
            return Err(OpError::Invalid(format!(
                "query: give 1 to {MAX_QUERY_CHARS} characters to look for"
            )));
        }
        let max_results = req.max_results.unwrap_or(DEFAULT_MAX_RESULTS);
        if !(1..=MAX_RESULTS).contains(&max_results) {
            return Err(OpError::Invalid(format!(
                "max_results: ask for 1 to {MAX_RESULTS} results"
            )));
        }
        let explicit = self.check_connector(ws, &intent, req.connector.as_deref())?;
        Ok(Asked {
            intent,
            query,
            max_results,
            explicit,
        })
    }

    /// The connector a call names, checked: the workspace has it and it
    /// serves `intent`. With none named, some connector must serve it.
    fn check_connector(
        &self,
        ws: i64,
        intent: &Capability,
        connector: Option<&str>,
    ) -> Result<Option<String>, OpError> {
        let explicit = connector.map(str::trim).filter(|c| !c.is_empty());
        if let Some(id) = explicit {
            let handle = self.registry.by_id_in(id, Some(ws)).ok_or_else(|| {
                OpError::Invalid(format!("connector: no connector {id:?} is registered"))
            })?;
            if !handle.registration.profile.capabilities.contains(intent) {
                return Err(OpError::Invalid(format!(
                    "connector: {id:?} does not serve {intent}"
                )));
            }
        } else if self.registry.serving(intent, Some(ws)).is_empty() {
            return Err(OpError::NotFound(format!(
                "capability: no connector serves {intent} in this workspace"
            )));
        }
        Ok(explicit.map(str::to_owned))
    }

    /// Walks a stored call's chain and stores how it ended.
    async fn walk_call(
        &self,
        plan: &CallPlan,
        lens: &crate::connectors::lens::Lens,
        cancel: &CancellationToken,
    ) -> Result<Envelope<CallOutput>, StoreError> {
        let CallPlan {
            id,
            workspace_id,
            ref actor,
            ref intent,
            ref query,
            max_results,
            ref chain,
            shape,
            ref fields,
        } = *plan;
        let mut ledger = CallLedger {
            receipts: Receipts::new(&self.store, id, actor),
            max_results: max_results as usize,
            shape,
            asked: query,
            attempts: Vec::new(),
            skipped: chain.skipped.clone(),
            results: Vec::new(),
            seen: Vec::new(),
        };
        let subject = Subject {
            workspace_id: Some(workspace_id),
            lens,
            intent,
            query,
            opts: FireOpts {
                record_name: query.to_owned(),
                record_fields: fields.clone(),
                max_results: max_results as usize,
                secrets: Secrets::default(),
            },
            priority: Priority::Person,
            paid_cap: None,
            record_day: None,
        };
        let walked = self
            .dispatcher
            .walk_chain(&mut ledger, &chain.to_try, subject, cancel, &mut None)
            .await;
        let results = std::mem::take(&mut ledger.results);
        let cancelled = match walked {
            Ok(cancelled) => cancelled,
            Err(e) => {
                tracing::error!(call = id, error = %e, "The database failed during a call.");
                let reason = "stopped: the database failed while this call was being stored";
                let _ = self
                    .store
                    .finish_call(id, &CallStatus::Failed, &results, Some(reason))
                    .await;
                return Err(e);
            }
        };
        let (status, error) = ledger.verdict(cancelled, intent);
        self.store
            .finish_call(id, &status, &results, error.as_deref())
            .await?;
        tracing::info!(
            call = id,
            capability = %intent,
            attempts = ledger.attempts.len(),
            results = results.len(),
            status = status.name(),
            "Call finished."
        );
        Ok(Envelope {
            status: envelope_status(&status),
            job_id: Some(id),
            kind: Some(WorkKind::Call),
            progress: Progress {
                done: connectors_tried(ledger.attempts.iter().map(|(id, _)| id.as_str())),
                total: chain.to_try.len() as u64,
            },
            results,
            error,
            job: None,
        })
    }

    /// A call as it stands: `pending` while it walks, then its end with
    /// its results (kept for [`CallConfig::keep_results`]).
    pub async fn call_envelope(
        &self,
        who: &Principal,
        id: i64,
    ) -> Result<Envelope<CallOutput>, OpError> {
        self.authorize(who, Owned::Call(id)).await?;
        let call = self.store.call(id).await?;
        let attempts = self.store.call_attempts(id).await?;
        Ok(stored_envelope(call, &attempts, self.store.now_ms()))
    }

    /// The receipts of a call's attempts, in order.
    pub async fn call_receipts(
        &self,
        who: &Principal,
        id: i64,
    ) -> Result<Vec<CallAttempt>, OpError> {
        self.authorize(who, Owned::Call(id)).await?;
        Ok(self.store.call_attempts(id).await?)
    }

    /// The calls walking in this process (their leases are renewed with
    /// its heartbeat).
    pub(crate) fn calls_walking_here(&self) -> Vec<i64> {
        lock(&self.calls_in_flight).keys().copied().collect()
    }

    /// Stops a call walking here that was cancelled through another
    /// process; its walk writes its end.
    pub(crate) fn stop_call_here(&self, id: i64) {
        if let Some(token) = lock(&self.calls_in_flight).get(&id) {
            token.cancel();
        }
    }

    /// Cancels a running call, walking in this process or another, and
    /// answers it as it stands once it has stopped (what it had found
    /// stays). A call that has ended is a conflict.
    pub async fn cancel_call(
        &self,
        who: &Principal,
        id: i64,
    ) -> Result<Envelope<CallOutput>, OpError> {
        self.authorize(who, Owned::Call(id)).await?;
        let token = lock(&self.calls_in_flight).get(&id).cloned();
        if let Some(token) = token {
            token.cancel();
            // The walk stops at its next await and writes its end.
            for _ in 0..100 {
                if !lock(&self.calls_in_flight).contains_key(&id) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            return self.call_envelope(who, id).await;
        }
        // Walking elsewhere: marked cancelled here; its process stops it
        // within a second and writes what it had found.
        if self.store.cancel_call(id).await? {
            for _ in 0..100 {
                if self.store.call(id).await?.finished_at.is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            return self.call_envelope(who, id).await;
        }
        let call = self.store.call(id).await?;
        Err(OpError::Conflict {
            detail: format!("call {id} has ended (it is {})", call.status.name()),
            current: None,
        })
    }
}

/// A call stored and about to walk.
struct CallPlan {
    id: i64,
    workspace_id: i64,
    actor: String,
    intent: Capability,
    query: String,
    max_results: u32,
    chain: chain::Chain,
    shape: Shape,
    fields: BTreeMap<String, String>,
}

/// What a walk through one chain is for.
struct Walk {
    /// The verb's name, as stored and read back.
    name: String,
    /// Whose chain it walks.
    intent: Capability,
    /// What it keeps of each result.
    shape: Shape,
    /// What its connectors read beside the query, as they read a
    /// record's fields (`maps.search`'s `near`).
    fields: BTreeMap<String, String>,
}
