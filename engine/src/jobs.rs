//! Fan-out jobs: a bundle's packs over every record of a set, with bounded
//! concurrency, persisted task by task. A job survives a crash: on start the
//! engine resumes every running job, a task whose fire already finished is
//! not fired again, and a task left half-done is fired again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use model::{ChipState, EventKind, FireOutcome, FireReport, Job, JobStatus, TriggeredBy};
use tokio_util::sync::CancellationToken;

use crate::dispatch::{DispatchError, Dispatcher, FireRequest};
use crate::events::EventBus;
use crate::store::{Store, StoreError, Task};

/// Runs jobs. Cheap to clone.
#[derive(Clone)]
pub struct JobRunner {
    store: Store,
    dispatcher: Dispatcher,
    events: EventBus,
    /// Fires in flight per job.
    concurrency: usize,
    running: Arc<Mutex<HashMap<i64, CancellationToken>>>,
}

impl std::fmt::Debug for JobRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobRunner")
            .field("concurrency", &self.concurrency)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The task outcome a fire report stands for. A fire that tried nothing
/// (every connector already found results, say, after a crash between an
/// attempt and the end of its fire) stands for what the chip shows.
fn outcome_of(report: &FireReport) -> &'static str {
    if report
        .attempts
        .iter()
        .any(|a| a.outcome == Some(FireOutcome::Found))
    {
        return FireOutcome::Found.name();
    }
    match (report.attempts.last().and_then(|a| a.outcome), &report.chip) {
        (Some(outcome), _) => outcome.name(),
        (None, ChipState::Found { .. }) => FireOutcome::Found.name(),
        (None, ChipState::NotFound) => FireOutcome::NotFound.name(),
        (None, _) => "skipped",
    }
}

impl JobRunner {
    pub fn new(store: Store, dispatcher: Dispatcher, events: EventBus, concurrency: usize) -> Self {
        Self {
            store,
            dispatcher,
            events,
            concurrency: concurrency.max(1),
            running: Arc::default(),
        }
    }

    /// Creates a job and starts running it in the background.
    pub async fn start(
        &self,
        record_set_id: i64,
        packs: &[String],
        actor: &str,
    ) -> Result<Job, StoreError> {
        let job = self.store.create_job(record_set_id, packs, actor).await?;
        tracing::info!(job = job.id, tasks = job.progress.total, "Job started.");
        self.events.publish(
            Some(record_set_id),
            EventKind::JobChanged { job: job.clone() },
        );
        self.spawn(job.id, record_set_id);
        Ok(job)
    }

    /// Resumes every job a previous process left running.
    pub async fn resume_all(&self) -> Result<usize, StoreError> {
        let ids = self.store.running_jobs().await?;
        for id in &ids {
            let requeued = self.store.requeue_running_tasks(*id).await?;
            let job = self.store.job(*id).await?;
            tracing::info!(
                job = id,
                requeued,
                done = job.progress.done,
                total = job.progress.total,
                "Job resumed."
            );
            self.spawn(*id, job.record_set_id);
        }
        Ok(ids.len())
    }

    /// Stops a job: no new fire starts and the fires in flight are cancelled.
    pub async fn cancel(&self, job_id: i64) -> Result<Job, StoreError> {
        if let Some(token) = lock(&self.running).get(&job_id) {
            token.cancel();
        }
        let job = self.store.end_job(job_id, JobStatus::Cancelled).await?;
        self.events.publish(
            Some(job.record_set_id),
            EventKind::JobChanged { job: job.clone() },
        );
        Ok(job)
    }

    /// Waits until a job is no longer running in this process.
    pub async fn wait(&self, job_id: i64) {
        loop {
            let running = lock(&self.running).get(&job_id).cloned();
            match running {
                Some(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
                None => return,
            }
        }
    }

    fn spawn(&self, job_id: i64, record_set_id: i64) {
        let token = CancellationToken::new();
        lock(&self.running).insert(job_id, token.clone());
        let runner = self.clone();
        tokio::spawn(async move {
            let workers: Vec<_> = (0..runner.concurrency)
                .map(|_| {
                    let runner = runner.clone();
                    let token = token.clone();
                    tokio::spawn(async move { runner.work(job_id, record_set_id, token).await })
                })
                .collect();
            for worker in workers {
                if let Ok(Err(e)) = worker.await {
                    tracing::error!(job = job_id, error = %e, "A job worker stopped on an error.");
                }
            }
            if !token.is_cancelled() {
                match runner.store.end_job(job_id, JobStatus::Completed).await {
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
            lock(&runner.running).remove(&job_id);
        });
    }

    async fn work(
        &self,
        job_id: i64,
        record_set_id: i64,
        token: CancellationToken,
    ) -> Result<(), StoreError> {
        while !token.is_cancelled() {
            let Some(task) = self.store.claim_task(job_id).await? else {
                return Ok(());
            };
            let (outcome, fire_id) = match self.store.finished_fire_of(&task).await? {
                // Fired before a restart: count it, do not fire again.
                Some((fire_id, outcome)) => (outcome, Some(fire_id)),
                None => self.run(&task, &token).await,
            };
            self.store.finish_task(task.id, &outcome, fire_id).await?;
            let job = self.store.job(job_id).await?;
            self.events
                .publish(Some(record_set_id), EventKind::JobChanged { job });
        }
        Ok(())
    }

    async fn run(&self, task: &Task, token: &CancellationToken) -> (String, Option<i64>) {
        let creator = self.store.job(task.job_id).await.map(|j| j.created_by);
        let actor = match creator {
            Ok(name) => format!("{name} (job {})", task.job_id),
            Err(_) => format!("job {}", task.job_id),
        };
        let fired = self
            .dispatcher
            .fire(FireRequest {
                record_id: task.record_id,
                pack_id: task.pack_id.clone(),
                connector: None,
                triggered_by: TriggeredBy::InitialFanout,
                actor,
                job_id: Some(task.job_id),
                parent: Some(token.clone()),
            })
            .await;
        match fired {
            Ok(report) => (outcome_of(&report).to_owned(), report.fire_id),
            Err(DispatchError::UnknownPack(pack)) => (format!("skipped: no pack {pack}"), None),
            Err(e) => {
                tracing::error!(job = task.job_id, record = task.record_id, error = %e, "A job fire failed.");
                ("error".to_owned(), None)
            }
        }
    }
}
