//! Jobs: set-wide fan-outs, persisted task by task so a restart resumes them.

use std::collections::HashMap;

use model::{Job, JobStatus, Progress, TriggeredBy};
use sqlx::any::AnyRow;
use sqlx::{FromRow, Row};

use super::{Backend, Lease, Store, StoreError};

/// One record x pack of a job, claimed by a worker.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Task {
    pub id: i64,
    pub job_id: i64,
    pub record_id: i64,
    pub pack_id: String,
}

const JOB: &str = "SELECT j.id, j.record_set_id, j.packs, j.status, j.total, j.created_by, j.created_at, \
     j.finished_at, j.paid_per_record, j.triggered_by, \
     (SELECT COUNT(*) FROM job_tasks t WHERE t.job_id = j.id AND t.status = 'done') AS done, \
     (SELECT COUNT(*) FROM job_tasks t WHERE t.job_id = j.id AND t.outcome = 'found') AS found, \
     (SELECT COUNT(*) FROM job_tasks t WHERE t.job_id = j.id AND t.outcome = 'not_found') AS not_found, \
     (SELECT COUNT(*) FROM job_tasks t WHERE t.job_id = j.id AND t.status = 'done' \
        AND t.outcome NOT IN ('found', 'not_found', 'cancelled', 'skipped')) AS errors \
     FROM jobs j";

/// A job as [`JOB`] reads it, with its tasks counted.
#[derive(sqlx::FromRow)]
struct JobRow {
    id: i64,
    record_set_id: i64,
    /// JSON: the pack ids.
    packs: String,
    status: String,
    total: i64,
    created_by: String,
    created_at: i64,
    finished_at: Option<i64>,
    paid_per_record: Option<i64>,
    triggered_by: Option<String>,
    done: i64,
    found: i64,
    not_found: i64,
    errors: i64,
}

fn job(row: &AnyRow) -> Result<Job, StoreError> {
    let row = JobRow::from_row(row)?;
    let id = row.id;
    let corrupt = |what: &str| StoreError::Corrupt(format!("job {id}: {what}"));
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    Ok(Job {
        id,
        record_set_id: row.record_set_id,
        packs: serde_json::from_str(&row.packs).map_err(|_| corrupt("packs"))?,
        status: JobStatus::from_name(&row.status).ok_or_else(|| corrupt("status"))?,
        progress: Progress {
            done: count(row.done),
            total: count(row.total),
        },
        found: count(row.found),
        not_found: count(row.not_found),
        errors: count(row.errors),
        created_at: row.created_at,
        finished_at: row.finished_at,
        created_by: row.created_by,
        paid_per_record: row.paid_per_record.and_then(|n| u32::try_from(n).ok()),
        triggered_by: match row.triggered_by {
            None => TriggeredBy::InitialFanout,
            Some(name) => TriggeredBy::from_name(&name).ok_or_else(|| corrupt("triggered_by"))?,
        },
    })
}

/// A job to create.
#[derive(Clone, Copy, Debug)]
pub struct NewJob<'a> {
    pub record_set_id: i64,
    pub packs: &'a [String],
    /// Who started it (a schedule's job names its author).
    pub actor: &'a str,
    /// At most this many fires of paid connectors per record.
    pub paid_per_record: Option<u32>,
    pub triggered_by: TriggeredBy,
    /// Only the records whose last fire of a pack started before this
    /// (Unix ms), or never ran; every record when `None`.
    pub stale_before: Option<i64>,
}

impl<'a> NewJob<'a> {
    /// A person's fan-out of `packs` over every record of the set.
    pub fn fanout(record_set_id: i64, packs: &'a [String], actor: &'a str) -> Self {
        Self {
            record_set_id,
            packs,
            actor,
            paid_per_record: None,
            triggered_by: TriggeredBy::InitialFanout,
            stale_before: None,
        }
    }
}

impl Store {
    /// Creates a job with one task per record of the set and pack (the
    /// stale ones only, when asked), in record order then pack order, owned
    /// by `lease.owner`.
    pub async fn create_job(&self, new: &NewJob<'_>, lease: Lease<'_>) -> Result<Job, StoreError> {
        let packs = new.packs;
        let mut tx = self.pool().begin().await?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO jobs (record_set_id, packs, status, total, created_by, created_at, owner, \
             lease_until, paid_per_record, triggered_by) \
             VALUES ($1, $2, 'running', 0, $3, $4, $5, $6, $7, $8) RETURNING id",
        )
        .bind(new.record_set_id)
        .bind(serde_json::to_string(packs).unwrap_or_else(|_| "[]".to_owned()))
        .bind(new.actor)
        .bind(self.now_ms())
        .bind(lease.owner)
        .bind(lease.until)
        .bind(new.paid_per_record.map(i64::from))
        .bind(new.triggered_by.name())
        .fetch_one(&mut *tx)
        .await?;
        if !packs.is_empty() {
            // One statement, so task ids run in record order, then pack order:
            // a job's fires interleave its packs (and their connectors).
            // The packs are bound after the job, the set and the staleness
            // time (when there is one).
            let first = if new.stale_before.is_some() { 4 } else { 3 };
            let packs_table = (0..packs.len())
                .map(|i| format!("SELECT ${} AS pack, {i} AS ord", i + first))
                .collect::<Vec<_>>()
                .join(" UNION ALL ");
            let stale = if new.stale_before.is_some() {
                " AND NOT EXISTS (SELECT 1 FROM fires f WHERE f.record_id = r.id \
                 AND f.pack_id = p.pack AND f.started_at >= $3)"
            } else {
                ""
            };
            let sql = format!(
                "INSERT INTO job_tasks (job_id, record_id, pack_id, status) \
                 SELECT $1, r.id, p.pack, 'pending' FROM records r CROSS JOIN ({packs_table}) p \
                 WHERE r.record_set_id = $2{stale} ORDER BY r.position, r.id, p.ord"
            );
            let mut query = sqlx::query(&sql).bind(id).bind(new.record_set_id);
            if let Some(before) = new.stale_before {
                query = query.bind(before);
            }
            for pack in packs {
                query = query.bind(pack.as_str());
            }
            query.execute(&mut *tx).await?;
        }
        sqlx::query(
            "UPDATE jobs SET total = (SELECT COUNT(*) FROM job_tasks WHERE job_id = $1) WHERE id = $1",
        )
        .bind(id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        self.job(id).await
    }

    /// Counts one more paid fire of a job for a record, unless it has had
    /// `most` already; says whether it was counted.
    pub async fn take_paid_fire(
        &self,
        job_id: i64,
        record_id: i64,
        most: u32,
    ) -> Result<bool, StoreError> {
        if most == 0 {
            return Ok(false);
        }
        let counted: Option<i64> = sqlx::query_scalar(
            "INSERT INTO job_record_paid (job_id, record_id, fires) VALUES ($1, $2, 1) \
             ON CONFLICT (job_id, record_id) DO UPDATE SET fires = job_record_paid.fires + 1 \
             WHERE job_record_paid.fires < $3 RETURNING fires",
        )
        .bind(job_id)
        .bind(record_id)
        .bind(i64::from(most))
        .fetch_optional(self.pool())
        .await?;
        Ok(counted.is_some())
    }

    /// Takes back a paid fire the provider did not bill.
    pub async fn give_back_paid_fire(&self, job_id: i64, record_id: i64) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE job_record_paid SET fires = fires - 1 WHERE job_id = $1 AND record_id = $2",
        )
        .bind(job_id)
        .bind(record_id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    pub async fn job(&self, id: i64) -> Result<Job, StoreError> {
        let row = sqlx::query(&format!("{JOB} WHERE j.id = $1"))
            .bind(id)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("job {id}")))?;
        job(&row)
    }

    /// The newest jobs of a record set, newest first.
    pub async fn jobs_of(&self, record_set_id: i64) -> Result<Vec<Job>, StoreError> {
        let rows = sqlx::query(&format!(
            "{JOB} WHERE j.record_set_id = $1 ORDER BY j.id DESC LIMIT 20"
        ))
        .bind(record_set_id)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(job).collect()
    }

    /// Claims up to `most` pending tasks of a running job, in task order,
    /// for `lease.owner`; none when the job is done or no longer running.
    pub async fn claim_tasks(
        &self,
        job_id: i64,
        most: usize,
        lease: Lease<'_>,
    ) -> Result<Vec<Task>, StoreError> {
        // PostgreSQL: concurrent claimers (of any process) skip each other's
        // rows. SQLite: one writer at a time makes the statement atomic.
        let lock = match self.backend() {
            Backend::Postgres => " FOR UPDATE OF t SKIP LOCKED",
            Backend::Sqlite => "",
        };
        let sql = format!(
            "UPDATE job_tasks SET status = 'running', claimed_at = $1, owner = $2, lease_until = $3 \
             WHERE id IN (SELECT t.id FROM job_tasks t JOIN jobs j ON j.id = t.job_id \
             WHERE t.job_id = $4 AND t.status = 'pending' AND j.status = 'running' \
             ORDER BY t.id LIMIT $5{lock}) \
             RETURNING id, job_id, record_id, pack_id"
        );
        let mut tasks: Vec<Task> = sqlx::query_as(&sql)
            .bind(self.now_ms())
            .bind(lease.owner)
            .bind(lease.until)
            .bind(job_id)
            .bind(i64::try_from(most.max(1)).unwrap_or(i64::MAX))
            .fetch_all(self.pool())
            .await?;
        // RETURNING gives no order: tasks run in the order they were made.
        tasks.sort_by_key(|t| t.id);
        Ok(tasks)
    }

    /// How many fan-outs people started over a workspace's sets are still
    /// running, in every process (scheduled refreshes are not counted).
    pub async fn running_fanouts(&self, workspace_id: i64) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT COUNT(*) FROM jobs j JOIN record_sets s ON s.id = j.record_set_id \
             WHERE s.workspace_id = $1 AND j.status = 'running' \
             AND (j.triggered_by IS NULL OR j.triggered_by = $2)",
        )
        .bind(workspace_id)
        .bind(model::TriggeredBy::InitialFanout.name())
        .fetch_one(self.pool())
        .await?)
    }

    /// How many tasks of a job are not done yet (pending, or running in
    /// any process).
    pub async fn unfinished_tasks(&self, job_id: i64) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT COUNT(*) FROM job_tasks WHERE job_id = $1 AND status <> 'done'",
        )
        .bind(job_id)
        .fetch_one(self.pool())
        .await?)
    }

    /// Marks a task done with the outcome of its fire.
    pub async fn finish_task(
        &self,
        task_id: i64,
        outcome: &str,
        fire_id: Option<i64>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE job_tasks SET status = 'done', outcome = $1, fire_id = $2 WHERE id = $3",
        )
        .bind(outcome)
        .bind(fire_id)
        .bind(task_id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// For tasks of one job: the finished fire the job already made for a
    /// task's record and pack, with its outcome, by task id. A task returned
    /// to the queue after its process died must not fire again.
    pub async fn finished_fires_of(
        &self,
        job_id: i64,
        tasks: &[Task],
    ) -> Result<HashMap<i64, (i64, String)>, StoreError> {
        let mut out = HashMap::new();
        let records: Vec<i64> = tasks.iter().map(|t| t.record_id).collect();
        for chunk in records.chunks(500) {
            let sql = format!(
                "SELECT f.id, f.record_id, f.pack_id, (SELECT h.outcome FROM connector_history h \
                   WHERE h.fire_id = f.id ORDER BY h.id DESC LIMIT 1) AS outcome, \
                   (SELECT COUNT(*) FROM connector_history h WHERE h.fire_id = f.id \
                   AND h.outcome = 'found') AS found \
                 FROM fires f WHERE f.job_id = $1 AND f.status = 'done' AND f.record_id IN ({}) \
                 ORDER BY f.id",
                super::placeholders_after(1, chunk.len())
            );
            let mut query = sqlx::query(&sql).bind(job_id);
            for id in chunk {
                query = query.bind(*id);
            }
            for row in query.fetch_all(self.pool()).await? {
                let record_id: i64 = row.try_get("record_id")?;
                let pack_id: String = row.try_get("pack_id")?;
                let found: i64 = row.try_get("found")?;
                let outcome: Option<String> = row.try_get("outcome")?;
                let outcome = if found > 0 {
                    "found".to_owned()
                } else {
                    outcome.unwrap_or_else(|| "not_found".to_owned())
                };
                if let Some(task) = tasks
                    .iter()
                    .find(|t| t.record_id == record_id && t.pack_id == pack_id)
                {
                    out.insert(task.id, (row.try_get("id")?, outcome));
                }
            }
        }
        Ok(out)
    }

    /// Ends a job as `completed` or `cancelled`; a job already ended stays as it is.
    pub async fn end_job(&self, job_id: i64, status: JobStatus) -> Result<Job, StoreError> {
        sqlx::query(
            "UPDATE jobs SET status = $1, finished_at = $2 WHERE id = $3 AND status = 'running'",
        )
        .bind(status.name())
        .bind(self.now_ms())
        .bind(job_id)
        .execute(self.pool())
        .await?;
        self.job(job_id).await
    }
}
