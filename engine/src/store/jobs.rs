//! Jobs: set-wide fan-outs, persisted task by task so a restart resumes them.

use model::{Job, JobStatus, Progress};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::{Backend, Store, StoreError};
use crate::time::now_ms;

/// One record x pack of a job, claimed by a worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    pub id: i64,
    pub job_id: i64,
    pub record_id: i64,
    pub pack_id: String,
}

const JOB: &str = "SELECT j.id, j.record_set_id, j.packs, j.status, j.total, j.created_by, j.created_at, \
     j.finished_at, \
     (SELECT COUNT(*) FROM job_tasks t WHERE t.job_id = j.id AND t.status = 'done') AS done, \
     (SELECT COUNT(*) FROM job_tasks t WHERE t.job_id = j.id AND t.outcome = 'found') AS found, \
     (SELECT COUNT(*) FROM job_tasks t WHERE t.job_id = j.id AND t.outcome = 'not_found') AS not_found, \
     (SELECT COUNT(*) FROM job_tasks t WHERE t.job_id = j.id AND t.status = 'done' \
        AND t.outcome NOT IN ('found', 'not_found')) AS errors \
     FROM jobs j";

fn job(row: &AnyRow) -> Result<Job, StoreError> {
    let id: i64 = row.try_get("id")?;
    let corrupt = |what: &str| StoreError::Corrupt(format!("job {id}: {what}"));
    let packs: String = row.try_get("packs")?;
    let status: String = row.try_get("status")?;
    let count = |name: &str| -> Result<u64, StoreError> {
        Ok(u64::try_from(row.try_get::<i64, _>(name)?).unwrap_or(0))
    };
    Ok(Job {
        id,
        record_set_id: row.try_get("record_set_id")?,
        packs: serde_json::from_str(&packs).map_err(|_| corrupt("packs"))?,
        status: JobStatus::from_name(&status).ok_or_else(|| corrupt("status"))?,
        progress: Progress {
            done: count("done")?,
            total: count("total")?,
        },
        found: count("found")?,
        not_found: count("not_found")?,
        errors: count("errors")?,
        created_at: row.try_get("created_at")?,
        finished_at: row.try_get("finished_at")?,
        created_by: row.try_get("created_by")?,
    })
}

impl Store {
    /// Creates a job with one task per record of the set and pack, in record
    /// order then pack order.
    pub async fn create_job(
        &self,
        record_set_id: i64,
        packs: &[String],
        actor: &str,
    ) -> Result<Job, StoreError> {
        let mut tx = self.pool().begin().await?;
        let records: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM records WHERE record_set_id = $1")
                .bind(record_set_id)
                .fetch_one(&mut *tx)
                .await?;
        let total = records * i64::try_from(packs.len()).unwrap_or(0);
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO jobs (record_set_id, packs, status, total, created_by, created_at) \
             VALUES ($1, $2, 'running', $3, $4, $5) RETURNING id",
        )
        .bind(record_set_id)
        .bind(serde_json::to_string(packs).unwrap_or_else(|_| "[]".to_owned()))
        .bind(total)
        .bind(actor)
        .bind(now_ms())
        .fetch_one(&mut *tx)
        .await?;
        for pack in packs {
            sqlx::query(
                "INSERT INTO job_tasks (job_id, record_id, pack_id, status) \
                 SELECT $1, id, $2, 'pending' FROM records WHERE record_set_id = $3 ORDER BY position, id",
            )
            .bind(id)
            .bind(pack.as_str())
            .bind(record_set_id)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        self.job(id).await
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

    /// Ids of every job still running.
    pub async fn running_jobs(&self) -> Result<Vec<i64>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT id FROM jobs WHERE status = 'running' ORDER BY id")
                .fetch_all(self.pool())
                .await?,
        )
    }

    /// Claims the next pending task of a job for one worker; `None` when none is left.
    pub async fn claim_task(&self, job_id: i64) -> Result<Option<Task>, StoreError> {
        // PostgreSQL: concurrent workers (of any process) skip each other's rows.
        // SQLite: one writer at a time makes the statement atomic by itself.
        let lock = match self.backend() {
            Backend::Postgres => " FOR UPDATE OF t SKIP LOCKED",
            Backend::Sqlite => "",
        };
        let sql = format!(
            "UPDATE job_tasks SET status = 'running', claimed_at = $1 WHERE id = \
             (SELECT t.id FROM job_tasks t JOIN jobs j ON j.id = t.job_id WHERE t.job_id = $2 \
             AND t.status = 'pending' AND j.status = 'running' ORDER BY t.record_id, t.id LIMIT 1{lock}) \
             RETURNING id, job_id, record_id, pack_id"
        );
        let row = sqlx::query(&sql)
            .bind(now_ms())
            .bind(job_id)
            .fetch_optional(self.pool())
            .await?;
        row.map(|row| {
            Ok(Task {
                id: row.try_get("id")?,
                job_id: row.try_get("job_id")?,
                record_id: row.try_get("record_id")?,
                pack_id: row.try_get("pack_id")?,
            })
        })
        .transpose()
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

    /// The outcome of a finished fire this job already made for the task's
    /// record and pack, if any: a resumed job must not fire it again.
    pub async fn finished_fire_of(&self, task: &Task) -> Result<Option<(i64, String)>, StoreError> {
        let row = sqlx::query(
            "SELECT f.id, (SELECT h.outcome FROM connector_history h WHERE h.fire_id = f.id \
                           ORDER BY h.id DESC LIMIT 1) AS outcome \
             FROM fires f WHERE f.job_id = $1 AND f.record_id = $2 AND f.pack_id = $3 AND f.status = 'done' \
             ORDER BY f.id DESC LIMIT 1",
        )
        .bind(task.job_id)
        .bind(task.record_id)
        .bind(task.pack_id.as_str())
        .fetch_optional(self.pool())
        .await?;
        row.map(|row| {
            let outcome: Option<String> = row.try_get("outcome")?;
            Ok((
                row.try_get("id")?,
                outcome.unwrap_or_else(|| "not_found".to_owned()),
            ))
        })
        .transpose()
    }

    /// Returns tasks a dead worker left running to the queue of a job.
    pub async fn requeue_running_tasks(&self, job_id: i64) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "UPDATE job_tasks SET status = 'pending' WHERE job_id = $1 AND status = 'running'",
        )
        .bind(job_id)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected())
    }

    /// Ends a job as `completed` or `cancelled`; a job already ended stays as it is.
    pub async fn end_job(&self, job_id: i64, status: JobStatus) -> Result<Job, StoreError> {
        sqlx::query(
            "UPDATE jobs SET status = $1, finished_at = $2 WHERE id = $3 AND status = 'running'",
        )
        .bind(status.name())
        .bind(now_ms())
        .bind(job_id)
        .execute(self.pool())
        .await?;
        self.job(job_id).await
    }
}
