//! Operations on fan-outs: what one would fire first, starting one over a
//! record set, reading and cancelling it.

use std::time::Duration;

use model::{Envelope, FanoutEstimate, Job, JobEnvelope, WorkKind};

use crate::store::{NewJob, Owned};
use crate::tenancy::Principal;
use crate::Engine;

use super::OpError;

/// The most fan-outs people may have running over one workspace's sets at
/// once, in the whole deployment: a workspace's fan-outs share connectors
/// by job, so one with many would take most of every window.
pub const MAX_FANOUTS_RUNNING: i64 = 4;

/// When a workspace at its limit of running fan-outs is told to ask again.
const FANOUT_RETRY: Duration = Duration::from_secs(30);

impl Engine {
    /// What a fan-out of the set's bundle may fire and spend, per
    /// connector, with the budgets it counts against, asked before it runs.
    pub async fn estimate_fanout(
        &self,
        who: &Principal,
        set_id: i64,
    ) -> Result<FanoutEstimate, OpError> {
        self.authorize(who, Owned::RecordSet(set_id)).await?;
        Ok(self.fanout_estimate(set_id).await?)
    }

    /// Starts a fan-out of `packs` (the set's whole bundle when `None`) over
    /// every record of a set, as a job the engine owns; each record may take
    /// at most `paid_per_record` fires of paid connectors.
    pub async fn start_fanout(
        &self,
        who: &Principal,
        set_id: i64,
        packs: Option<Vec<String>>,
        paid_per_record: Option<u32>,
    ) -> Result<Job, OpError> {
        self.authorize(who, Owned::RecordSet(set_id)).await?;
        let set = self.store.record_set(set_id).await?;
        let packs = match packs {
            Some(packs) if packs.is_empty() => {
                return Err(OpError::Invalid(
                    "packs: name at least one pack, or leave it out".into(),
                ))
            }
            Some(packs) => {
                let catalog = self.catalog_in(set.workspace_id).await?;
                if let Some(bad) = packs.iter().find(|p| catalog.pack(p).is_none()) {
                    return Err(OpError::Invalid(format!("packs: no pack {bad:?}")));
                }
                let mut unique: Vec<String> = Vec::with_capacity(packs.len());
                for p in packs {
                    if !unique.contains(&p) {
                        unique.push(p);
                    }
                }
                unique
            }
            None => self.bundle_pack_ids(&set).await?,
        };
        if packs.is_empty() {
            return Err(OpError::Invalid(format!(
                "the bundle {:?} has no packs",
                set.bundle_id
            )));
        }
        // Counted and started in one turn of the workspace, so starts at
        // once in this process cannot pass the limit together.
        let _turn = self.fanout_starts.turn(who.workspace_id).await;
        if self.store.running_fanouts(who.workspace_id).await? >= MAX_FANOUTS_RUNNING {
            return Err(OpError::Limited {
                detail: format!(
                    "fan-outs: this workspace has {MAX_FANOUTS_RUNNING} running; try again when one ends, or cancel one"
                ),
                retry_after: FANOUT_RETRY,
            });
        }
        Ok(self
            .jobs
            .start(&NewJob {
                paid_per_record,
                ..NewJob::fanout(set_id, &packs, &who.email)
            })
            .await?)
    }

    /// A job as it stands.
    pub async fn job_of(&self, who: &Principal, job_id: i64) -> Result<Job, OpError> {
        self.authorize(who, Owned::Job(job_id)).await?;
        Ok(self.store.job(job_id).await?)
    }

    /// A job once it has ended, or as it stands after `at_most`.
    pub async fn job_after(
        &self,
        who: &Principal,
        job_id: i64,
        at_most: Duration,
    ) -> Result<Job, OpError> {
        self.authorize(who, Owned::Job(job_id)).await?;
        let _ = tokio::time::timeout(at_most, self.jobs.wait(job_id)).await;
        Ok(self.store.job(job_id).await?)
    }

    /// Cancels a job: what had finished stays.
    pub async fn cancel_job(&self, who: &Principal, job_id: i64) -> Result<Job, OpError> {
        self.authorize(who, Owned::Job(job_id)).await?;
        Ok(self.jobs.cancel(job_id).await?)
    }

    /// Any job as it stands, a fan-out's or a call's: the id says which
    /// (calls are numbered from [`model::CALL_IDS_FROM`]).
    pub async fn job_envelope(&self, who: &Principal, id: i64) -> Result<JobEnvelope, OpError> {
        Ok(match WorkKind::of_id(id) {
            WorkKind::Call => JobEnvelope::Call(self.call_envelope(who, id).await?),
            WorkKind::Fanout => JobEnvelope::Fanout(Envelope::of_job(self.job_of(who, id).await?)),
        })
    }

    /// Cancels any job, a fan-out or a call, and answers it as it stands.
    pub async fn cancel_any_job(&self, who: &Principal, id: i64) -> Result<JobEnvelope, OpError> {
        Ok(match WorkKind::of_id(id) {
            WorkKind::Call => JobEnvelope::Call(self.cancel_call(who, id).await?),
            WorkKind::Fanout => {
                JobEnvelope::Fanout(Envelope::of_job(self.cancel_job(who, id).await?))
            }
        })
    }
}
