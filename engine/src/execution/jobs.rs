//! Fan-out jobs: a bundle's packs over every record of a set, persisted task
//! by task. A job runs in the process that holds its lease. Its fires go out
//! as fast as each connector's window allows (see `flow`), under the
//! process ceiling, and jobs of several sets share a connector evenly. A job
//! whose process died is taken over once its lease expires: a task whose
//! fire already finished is not fired again, a task left half-done is.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use model::{EventKind, Job, JobStatus, RecordSetSummary};
use tokio::sync::OwnedSemaphorePermit;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::execution::dispatch::{DispatchError, Dispatcher, FireRequest, RecordChainInputs};
use crate::execution::flow::{Flow, Priority};
use crate::execution::lease::{LeaseConfig, Owner};
use crate::live::events::EventBus;
use crate::store::{retrying, Lease, NewJob, Store, StoreError, Task};

/// Tasks one job claims at a time (fewer when the ceiling has fewer places).
const BATCH: usize = 64;
/// How often a job whose last tasks another process holds looks again.
const LOOK_AGAIN: Duration = Duration::from_secs(1);

/// How often a running job tells viewers its progress, at most.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// Runs jobs. Cheap to clone.
#[derive(Clone)]
pub struct JobRunner {
    store: Store,
    dispatcher: Dispatcher,
    events: EventBus,
    flow: Flow,
    owner: Owner,
    leases: LeaseConfig,
    running: Arc<Mutex<HashMap<i64, Running>>>,
}

/// What driving one job keeps while it claims and starts its tasks.
struct Driving<'a> {
    job: Job,
    /// Who its fires are by: the person who started it, and the job.
    actor: String,
    set: Arc<RecordSetSummary>,
    running: &'a Running,
    progress: &'a Arc<Progress>,
}

/// A job running in this process.
#[derive(Clone)]
struct Running {
    /// Cancels the job: its loop and every fire it has in flight.
    cancel: CancellationToken,
    /// Stops only its loop (the process hands its work over); a child of
    /// `cancel`. Fires in flight run to their end.
    stop: CancellationToken,
    /// Its tasks claimed and not yet done, whose leases the heartbeat renews.
    tasks: Arc<Mutex<HashSet<i64>>>,
}

impl std::fmt::Debug for JobRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobRunner")
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Tells a job's viewers its progress, at most every [`PROGRESS_EVERY`].
struct Progress {
    store: Store,
    events: EventBus,
    job_id: i64,
    record_set_id: i64,
    last: Mutex<Option<Instant>>,
}

impl Progress {
    async fn tick(&self) {
        {
            let mut last = lock(&self.last);
            if last.is_some_and(|t| t.elapsed() < PROGRESS_EVERY) {
                return;
            }
            *last = Some(Instant::now());
        }
        self.publish().await;
    }

    async fn publish(&self) {
        match self.store.job(self.job_id).await {
            Ok(job) => self
                .events
                .publish(Some(self.record_set_id), EventKind::JobChanged { job }),
            Err(e) => {
                tracing::warn!(job = self.job_id, error = %e, "Reading a job's progress failed.");
            }
        }
    }
}

impl JobRunner {
    pub fn new(
        store: Store,
        dispatcher: Dispatcher,
        events: EventBus,
        owner: Owner,
        leases: LeaseConfig,
    ) -> Self {
        Self {
            flow: dispatcher.flow().clone(),
            store,
            dispatcher,
            events,
            owner,
            leases,
            running: Arc::default(),
        }
    }

    fn lease(&self) -> Lease<'_> {
        Lease {
            owner: self.owner.as_str(),
            until: self.leases.expiry(self.store.now_ms()),
        }
    }

    /// Creates a job and starts running it in the background.
    pub async fn start(&self, new: &NewJob<'_>) -> Result<Job, StoreError> {
        let job = self.store.create_job(new, self.lease()).await?;
        let record_set_id = new.record_set_id;
        tracing::info!(job = job.id, tasks = job.progress.total, "Job started.");
        self.events.publish(
            Some(record_set_id),
            EventKind::JobChanged { job: job.clone() },
        );
        self.spawn(job.id, record_set_id);
        Ok(job)
    }

    /// Runs a job this process just took over (its owner's lease expired).
    pub async fn resume(&self, job_id: i64) -> Result<(), StoreError> {
        if self.is_running_here(job_id) {
            return Ok(());
        }
        let job = self.store.job(job_id).await?;
        tracing::info!(
            job = job_id,
            done = job.progress.done,
            total = job.progress.total,
            "Job taken over."
        );
        self.spawn(job_id, job.record_set_id);
        Ok(())
    }

    /// Stops a job wherever it runs: no new fire starts and every fire in
    /// flight or waiting for its turn is cancelled. (A job running in another
    /// process stops at that process's next heartbeat.)
    pub async fn cancel(&self, job_id: i64) -> Result<Job, StoreError> {
        let job = self.store.end_job(job_id, JobStatus::Cancelled).await?;
        self.stop_here(job_id);
        self.events.publish(
            Some(job.record_set_id),
            EventKind::JobChanged { job: job.clone() },
        );
        Ok(job)
    }

    /// Stops every job loop here without cancelling any fire: no new task
    /// is claimed, fires in flight run to their end (the process is handing
    /// its work over).
    pub fn stop_claiming(&self) {
        for running in lock(&self.running).values() {
            running.stop.cancel();
        }
    }

    /// Cancels the fires of a job running here (it ended elsewhere).
    pub fn stop_here(&self, job_id: i64) {
        if let Some(running) = lock(&self.running).get(&job_id) {
            running.cancel.cancel();
        }
    }

    pub fn is_running_here(&self, job_id: i64) -> bool {
        lock(&self.running).contains_key(&job_id)
    }

    /// The jobs running here and their claimed tasks, for the heartbeat.
    pub fn owned(&self) -> (Vec<i64>, Vec<i64>) {
        let running = lock(&self.running);
        let jobs = running.keys().copied().collect();
        let tasks = running
            .values()
            .flat_map(|r| lock(&r.tasks).iter().copied().collect::<Vec<_>>())
            .collect();
        (jobs, tasks)
    }

    /// Waits until a job is no longer running in this process.
    pub async fn wait(&self, job_id: i64) {
        while self.is_running_here(job_id) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn spawn(&self, job_id: i64, record_set_id: i64) {
        let cancel = CancellationToken::new();
        let running = Running {
            stop: cancel.child_token(),
            cancel,
            tasks: Arc::default(),
        };
        lock(&self.running).insert(job_id, running.clone());
        let runner = self.clone();
        tokio::spawn(async move {
            let progress = Arc::new(Progress {
                store: runner.store.clone(),
                events: runner.events.clone(),
                job_id,
                record_set_id,
                last: Mutex::new(None),
            });
            match runner.drive(job_id, &running, &progress).await {
                // Handed over: the next owner carries on.
                Ok(()) if running.stop.is_cancelled() && !running.cancel.is_cancelled() => {}
                Ok(()) if !running.cancel.is_cancelled() => {
                    match retrying(|| runner.store.end_job(job_id, JobStatus::Completed)).await {
                        Ok(job) => {
                            tracing::info!(
                                job = job_id,
                                found = job.found,
                                errors = job.errors,
                                "Job finished."
                            );
                            runner
                                .events
                                .publish(Some(record_set_id), EventKind::JobChanged { job });
                        }
                        Err(e) => tracing::error!(job = job_id, error = %e, "Ending a job failed."),
                    }
                }
                Ok(()) => progress.publish().await,
                Err(e) => {
                    // Its lease expires and whichever process notices takes it over.
                    tracing::error!(job = job_id, error = %e, "A job stopped on a database error; it will be taken over.");
                }
            }
            let left: Vec<i64> = lock(&running.tasks).drain().collect();
            if !left.is_empty() {
                if let Err(e) = runner
                    .store
                    .release_tasks(runner.owner.as_str(), &left)
                    .await
                {
                    tracing::warn!(job = job_id, error = %e, "Returning a job's tasks to its queue failed; their leases will expire.");
                }
            }
            lock(&runner.running).remove(&job_id);
        });
    }

    /// Claims tasks batch by batch and starts their fires as places free up,
    /// until none is left or the job is cancelled; then waits for its fires.
    async fn drive(
        &self,
        job_id: i64,
        running: &Running,
        progress: &Arc<Progress>,
    ) -> Result<(), StoreError> {
        let stop = &running.stop;
        let job = retrying(|| self.store.job(job_id)).await?;
        let set = Arc::new(retrying(|| self.store.record_set(job.record_set_id)).await?);
        let driving = Driving {
            actor: format!("{} (job {job_id})", job.created_by),
            job,
            set,
            running,
            progress,
        };
        let mut fires = JoinSet::new();
        let result = loop {
            while let Some(ended) = fires.try_join_next() {
                log_fire_end(job_id, ended);
            }
            let Some(places) = self.flow.ceiling(BATCH, stop).await else {
                break Ok(());
            };
            let tasks = match retrying(|| {
                self.store
                    .claim_tasks(job_id, places.num_permits(), self.lease())
            })
            .await
            {
                Ok(tasks) => tasks,
                Err(e) => break Err(e),
            };
            if tasks.is_empty() {
                drop(places);
                match self.nothing_to_claim(job_id, &mut fires, stop).await {
                    Some(result) => break result,
                    None => continue,
                }
            }
            if let Err(e) = self.start_fires(&driving, tasks, places, &mut fires).await {
                break Err(e);
            }
        };
        // Whatever ended the loop, the fires it started run to their end.
        while let Some(ended) = fires.join_next().await {
            log_fire_end(job_id, ended);
        }
        result
    }

    /// Nothing is left to claim. The job is done when every task is: this
    /// process's fires end first, and a task another process holds (one
    /// that died, say, until its lease runs out) comes back to the queue or
    /// ends there. `None`: look again.
    async fn nothing_to_claim(
        &self,
        job_id: i64,
        fires: &mut JoinSet<()>,
        stop: &CancellationToken,
    ) -> Option<Result<(), StoreError>> {
        while let Some(ended) = fires.join_next().await {
            log_fire_end(job_id, ended);
        }
        match retrying(|| self.store.unfinished_tasks(job_id)).await {
            Ok(0) => return Some(Ok(())),
            Ok(_) => {}
            Err(e) => return Some(Err(e)),
        }
        tokio::select! {
            () = tokio::time::sleep(self.leases.heartbeat.min(LOOK_AGAIN)) => None,
            () = stop.cancelled() => Some(Ok(())),
        }
    }

    /// Starts a fire for each claimed task, each in one of `places`, once
    /// it has its turn in its first connector's window; stops starting when
    /// the job is stopped.
    async fn start_fires(
        &self,
        driving: &Driving<'_>,
        tasks: Vec<Task>,
        mut places: OwnedSemaphorePermit,
        fires: &mut JoinSet<()>,
    ) -> Result<(), StoreError> {
        let Driving {
            job,
            actor,
            set,
            running,
            progress,
        } = driving;
        let stop = &running.stop;
        lock(&running.tasks).extend(tasks.iter().map(|t| t.id));
        let batch = self.read_batch(job.id, set, &tasks).await?;
        for task in tasks {
            let place = places.split(1);
            if stop.is_cancelled() {
                break;
            }
            let req = FireRequest {
                record_id: task.record_id,
                pack_id: task.pack_id.clone(),
                connector: None,
                triggered_by: job.triggered_by,
                actor: actor.clone(),
                job_id: Some(job.id),
                task_id: Some(task.id),
                parent: Some(running.cancel.clone()),
                paid_per_record: job.paid_per_record,
                // A fan-out means the same whoever starts it.
                chains_of: None,
                // Nobody is there to answer "spend more?": past a record's
                // daily cap, its paid connectors are walked past.
                spend_more: false,
            };
            let Some(prepared) = self.plan(&batch, set, &task, req).await? else {
                lock(&running.tasks).remove(&task.id);
                progress.tick().await;
                continue;
            };
            // Its turn in the first connector's window comes before the
            // fire starts, so no chip says "firing" while it only waits.
            let first = match prepared
                .first_connector()
                .and_then(|c| self.dispatcher.handle(c, set.workspace_id))
            {
                Some(handle) => {
                    match self.flow.acquire(&handle, Priority::Background, stop).await {
                        Some(permit) if !stop.is_cancelled() => Some(permit),
                        _ => break,
                    }
                }
                None => None,
            };
            let (dispatcher, tasks, progress) = (
                self.dispatcher.clone(),
                running.tasks.clone(),
                Arc::clone(progress),
            );
            fires.spawn(async move {
                let _place = place;
                dispatcher.run(prepared, first).await;
                lock(&tasks).remove(&task.id);
                progress.tick().await;
            });
        }
        Ok(())
    }

    /// Reads what a batch of tasks needs, in one read each: the workspace's
    /// scope, the records, their overrides and what they found already, and
    /// fires an earlier owner of the job finished.
    async fn read_batch(
        &self,
        job_id: i64,
        set: &RecordSetSummary,
        tasks: &[Task],
    ) -> Result<Batch, StoreError> {
        let ids: Vec<i64> = tasks.iter().map(|t| t.record_id).collect();
        Ok(Batch {
            scope: Arc::new(retrying(|| self.dispatcher.scope(set.workspace_id)).await?),
            records: retrying(|| self.store.records_by_id(&ids)).await?,
            overrides: retrying(|| self.store.record_overrides_of(&ids)).await?,
            found: retrying(|| self.store.connectors_that_found_of(&ids)).await?,
            finished: retrying(|| self.store.finished_fires_of(job_id, tasks)).await?,
        })
    }

    /// The fire a task makes, or `None` when it is done without one (its
    /// fire finished before a takeover, its record or pack is gone).
    async fn plan(
        &self,
        batch: &Batch,
        set: &Arc<RecordSetSummary>,
        task: &Task,
        req: FireRequest,
    ) -> Result<Option<crate::execution::dispatch::Prepared>, StoreError> {
        let done = |outcome: String, fire_id: Option<i64>| async move {
            retrying(|| self.store.finish_task(task.id, &outcome, fire_id)).await
        };
        if let Some((fire_id, outcome)) = batch.finished.get(&task.id) {
            done(outcome.clone(), Some(*fire_id)).await?;
            return Ok(None);
        }
        let Some(record) = batch.records.get(&task.record_id) else {
            done("skipped: the record is gone".to_owned(), None).await?;
            return Ok(None);
        };
        let intent = batch
            .scope
            .catalog
            .pack(&task.pack_id)
            .map(|p| p.intent.name().to_owned());
        let inputs = RecordChainInputs {
            record_override: batch
                .overrides
                .get(&(task.record_id, task.pack_id.clone()))
                .cloned(),
            already_found: intent
                .and_then(|i| batch.found.get(&(task.record_id, i)).cloned())
                .unwrap_or_default(),
        };
        match self.dispatcher.prepare(
            batch.scope.clone(),
            set.clone(),
            record.clone(),
            req,
            &inputs,
        ) {
            Ok(prepared) => Ok(Some(prepared)),
            Err(DispatchError::UnknownPack(pack)) => {
                done(format!("skipped: no pack {pack}"), None).await?;
                Ok(None)
            }
            Err(DispatchError::Store(e)) => Err(e),
            Err(DispatchError::Stopped) => Ok(None),
        }
    }
}

/// What one batch of a job's tasks read.
struct Batch {
    scope: Arc<crate::execution::dispatch::Scope>,
    records: HashMap<i64, crate::store::StoredRecord>,
    overrides: HashMap<(i64, String), String>,
    found: HashMap<(i64, String), Vec<String>>,
    finished: HashMap<i64, (i64, String)>,
}

fn log_fire_end(job_id: i64, ended: Result<(), tokio::task::JoinError>) {
    if let Err(e) = ended {
        tracing::error!(job = job_id, error = %e, "A job's fire stopped unexpectedly; its lease will expire.");
    }
}
