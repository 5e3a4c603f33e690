//! Leases in the database: the owner of running fires, job tasks and jobs
//! renews them; work whose lease expired (or never had one: rows from before
//! leases) is closed or taken over by whoever notices.

use super::{placeholders, placeholders_after, Store, StoreError};

/// Tables whose running rows carry a lease.
#[derive(Clone, Copy, Debug)]
pub enum Leased {
    Fires,
    Tasks,
    Jobs,
}

impl Leased {
    fn table(self) -> &'static str {
        match self {
            Leased::Fires => "fires",
            Leased::Tasks => "job_tasks",
            Leased::Jobs => "jobs",
        }
    }
}

/// A fire closed because its lease expired.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct ReapedFire {
    #[sqlx(rename = "id")]
    pub fire_id: i64,
    pub record_id: i64,
    pub pack_id: String,
}

/// What a closed attempt of an expired fire says.
pub const INTERRUPTED: &str =
    "interrupted: the process running this fire stopped during the call (its lease expired); \
     the provider may have answered and billed it: not asked again (listed for review on the Spend page)";

/// `lease_until` is past or was never set.
const EXPIRED: &str = "(lease_until IS NULL OR lease_until < $1)";

impl Store {
    /// Renews the leases `owner` holds on the running rows `ids` of `what`
    /// until `until`. Rows another process took over (or that ended) stay as
    /// they are. Returns how many were renewed.
    pub async fn renew(
        &self,
        what: Leased,
        owner: &str,
        ids: &[i64],
        until: i64,
    ) -> Result<u64, StoreError> {
        let mut renewed = 0;
        for chunk in ids.chunks(500) {
            let sql = format!(
                "UPDATE {} SET lease_until = $1 WHERE owner = $2 AND status = 'running' AND id IN ({})",
                what.table(),
                placeholders_after(2, chunk.len())
            );
            let mut query = sqlx::query(&sql).bind(until).bind(owner);
            for id in chunk {
                query = query.bind(*id);
            }
            renewed += query.execute(self.pool()).await?.rows_affected();
        }
        Ok(renewed)
    }

    /// Closes every running fire whose lease expired before `now`: its open
    /// attempts (calls on their way) end `unknown`, saying they were
    /// interrupted, the fire as `interrupted`. Returns the fires closed.
    pub async fn reap_expired_fires(&self, now: i64) -> Result<Vec<ReapedFire>, StoreError> {
        let mut tx = self.pool().begin().await?;
        let reaped: Vec<ReapedFire> = sqlx::query_as(&format!(
            "UPDATE fires SET status = 'interrupted', finished_at = $1 \
             WHERE status = 'running' AND {EXPIRED} RETURNING id, record_id, pack_id"
        ))
        .bind(now)
        .fetch_all(&mut *tx)
        .await?;
        let ids: Vec<i64> = reaped.iter().map(|f| f.fire_id).collect();
        for chunk in ids.chunks(500) {
            let sql = format!(
                "UPDATE connector_history SET outcome = 'unknown', finished_at = $1, error = $2 \
                 WHERE outcome IS NULL AND fire_id IN ({})",
                placeholders_after(2, chunk.len())
            );
            let mut query = sqlx::query(&sql).bind(now).bind(INTERRUPTED);
            for id in chunk {
                query = query.bind(*id);
            }
            query.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(reaped)
    }

    /// Settles every running task whose lease expired before `now`, once no
    /// fire of it is still running (a fire under a fresher lease is closed
    /// first, so a task never fires twice at once): a task whose fire was
    /// interrupted ends as `interrupted` (its call may have reached the
    /// provider and been paid for: only a person fires it again); any other
    /// goes back to its job's queue. Returns how many went back.
    pub async fn requeue_expired_tasks(&self, now: i64) -> Result<u64, StoreError> {
        const ITS_FIRE: &str = "f.job_id = job_tasks.job_id AND f.record_id = job_tasks.record_id \
             AND f.pack_id = job_tasks.pack_id";
        sqlx::query(&format!(
            "UPDATE job_tasks SET status = 'done', outcome = 'interrupted', owner = NULL, lease_until = NULL, \
             fire_id = (SELECT max(f.id) FROM fires f WHERE {ITS_FIRE} AND f.status = 'interrupted') \
             WHERE status = 'running' AND {EXPIRED} \
             AND EXISTS (SELECT 1 FROM fires f WHERE {ITS_FIRE} AND f.status = 'interrupted') \
             AND NOT EXISTS (SELECT 1 FROM fires f WHERE {ITS_FIRE} AND f.status = 'running')"
        ))
        .bind(now)
        .execute(self.pool())
        .await?;
        let done = sqlx::query(&format!(
            "UPDATE job_tasks SET status = 'pending', owner = NULL, lease_until = NULL \
             WHERE status = 'running' AND {EXPIRED} \
             AND NOT EXISTS (SELECT 1 FROM fires f WHERE {ITS_FIRE} AND f.status = 'running')"
        ))
        .bind(now)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected())
    }

    /// Takes over every running job whose lease expired before `now`, for
    /// `owner` until `until`. Of two processes asking at once, each job goes
    /// to one. Returns the jobs taken.
    pub async fn claim_expired_jobs(
        &self,
        owner: &str,
        now: i64,
        until: i64,
    ) -> Result<Vec<i64>, StoreError> {
        // On PostgreSQL a concurrent claimer waits for the row lock, then
        // finds the lease fresh and skips the row.
        let ids = sqlx::query_scalar(&format!(
            "UPDATE jobs SET owner = $2, lease_until = $3 \
             WHERE status = 'running' AND {EXPIRED} RETURNING id"
        ))
        .bind(now)
        .bind(owner)
        .bind(until)
        .fetch_all(self.pool())
        .await?;
        Ok(ids)
    }

    /// Which of the jobs `ids` are no longer running (cancelled or ended by
    /// another process).
    pub async fn jobs_not_running(&self, ids: &[i64]) -> Result<Vec<i64>, StoreError> {
        let mut out = Vec::new();
        for chunk in ids.chunks(500) {
            let sql = format!(
                "SELECT id FROM jobs WHERE status <> 'running' AND id IN ({})",
                placeholders(chunk.len())
            );
            let mut query = sqlx::query_scalar::<_, i64>(&sql);
            for id in chunk {
                query = query.bind(*id);
            }
            out.extend(query.fetch_all(self.pool()).await?);
        }
        Ok(out)
    }

    /// Gives the leases `owner` holds on tasks `ids` back: they return to
    /// their job's queue at once (a job stopping in this process).
    pub async fn release_tasks(&self, owner: &str, ids: &[i64]) -> Result<(), StoreError> {
        for chunk in ids.chunks(500) {
            let sql = format!(
                "UPDATE job_tasks SET status = 'pending', owner = NULL, lease_until = NULL \
                 WHERE owner = $1 AND status = 'running' AND id IN ({})",
                placeholders_after(1, chunk.len())
            );
            let mut query = sqlx::query(&sql).bind(owner);
            for id in chunk {
                query = query.bind(*id);
            }
            query.execute(self.pool()).await?;
        }
        Ok(())
    }

    /// Gives up every lease `owner` holds on running work: its jobs and
    /// tasks are free for any process at once, and its fires are left for
    /// [`Store::reap_expired_fires`]. Returns how many rows were released.
    pub async fn release_owner(&self, owner: &str) -> Result<u64, StoreError> {
        let mut released = 0;
        for sql in [
            "UPDATE jobs SET owner = NULL, lease_until = NULL WHERE owner = $1 AND status = 'running'",
            "UPDATE job_tasks SET status = 'pending', owner = NULL, lease_until = NULL \
             WHERE owner = $1 AND status = 'running'",
            "UPDATE fires SET lease_until = NULL WHERE owner = $1 AND status = 'running'",
        ] {
            released += sqlx::query(sql)
                .bind(owner)
                .execute(self.pool())
                .await?
                .rows_affected();
        }
        Ok(released)
    }
}
