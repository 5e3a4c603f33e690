//! Refresh schedules (`refresh_schedules`): a record set's pack re-fired
//! over its stale records. Every process reads the due ones; a run is
//! claimed by moving `next_run_at` on from the value read, which only one
//! process can do.

use model::{RefreshPlan, RefreshSchedule};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::{Store, StoreError};

const SCHEDULE: &str = "SELECT id, record_set_id, pack_id, every_hours, window_start, window_end, \
     created_by, created_at, next_run_at, last_run_at, last_job_id FROM refresh_schedules";

/// A schedule as stored, with its id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredSchedule {
    pub id: i64,
    pub schedule: RefreshSchedule,
}

fn schedule(row: &AnyRow) -> Result<StoredSchedule, StoreError> {
    let id: i64 = row.try_get("id")?;
    let corrupt = |what: &str| StoreError::Corrupt(format!("refresh schedule {id}: {what}"));
    let hour = |name: &str| -> Result<u8, StoreError> {
        u8::try_from(row.try_get::<i64, _>(name)?).map_err(|_| corrupt(name))
    };
    Ok(StoredSchedule {
        id,
        schedule: RefreshSchedule {
            record_set_id: row.try_get("record_set_id")?,
            pack_id: row.try_get("pack_id")?,
            plan: RefreshPlan {
                every_hours: u32::try_from(row.try_get::<i64, _>("every_hours")?)
                    .map_err(|_| corrupt("every_hours"))?,
                window_start: hour("window_start")?,
                window_end: hour("window_end")?,
            },
            created_by: row.try_get("created_by")?,
            created_at: row.try_get("created_at")?,
            next_run_at: row.try_get("next_run_at")?,
            last_run_at: row.try_get("last_run_at")?,
            last_job_id: row.try_get("last_job_id")?,
        },
    })
}

impl Store {
    /// Sets (or changes) the schedule of a set's pack; it first looks for
    /// stale records at once.
    pub async fn set_refresh(
        &self,
        record_set_id: i64,
        pack_id: &str,
        plan: RefreshPlan,
        actor: &str,
    ) -> Result<RefreshSchedule, StoreError> {
        let now = self.now_ms();
        sqlx::query(
            "INSERT INTO refresh_schedules (record_set_id, pack_id, every_hours, window_start, \
             window_end, created_by, created_at, next_run_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $7) \
             ON CONFLICT (record_set_id, pack_id) DO UPDATE SET \
             every_hours = excluded.every_hours, window_start = excluded.window_start, \
             window_end = excluded.window_end, created_by = excluded.created_by, \
             created_at = excluded.created_at, next_run_at = excluded.next_run_at",
        )
        .bind(record_set_id)
        .bind(pack_id)
        .bind(i64::from(plan.every_hours))
        .bind(i64::from(plan.window_start))
        .bind(i64::from(plan.window_end))
        .bind(actor)
        .bind(now)
        .execute(self.pool())
        .await?;
        self.refreshes_of(record_set_id)
            .await?
            .into_iter()
            .find(|s| s.pack_id == pack_id)
            .ok_or_else(|| StoreError::NotFound(format!("the schedule of pack {pack_id:?}")))
    }

    /// A record set's schedules, by pack.
    pub async fn refreshes_of(
        &self,
        record_set_id: i64,
    ) -> Result<Vec<RefreshSchedule>, StoreError> {
        let rows = sqlx::query(&format!(
            "{SCHEDULE} WHERE record_set_id = $1 ORDER BY pack_id"
        ))
        .bind(record_set_id)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(|row| Ok(schedule(row)?.schedule)).collect()
    }

    /// Removes a set's pack's schedule; says whether there was one.
    pub async fn remove_refresh(
        &self,
        record_set_id: i64,
        pack_id: &str,
    ) -> Result<bool, StoreError> {
        let done =
            sqlx::query("DELETE FROM refresh_schedules WHERE record_set_id = $1 AND pack_id = $2")
                .bind(record_set_id)
                .bind(pack_id)
                .execute(self.pool())
                .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Schedules due at `now`, the longest overdue first.
    pub async fn due_refreshes(
        &self,
        now: i64,
        limit: i64,
    ) -> Result<Vec<StoredSchedule>, StoreError> {
        let rows = sqlx::query(&format!(
            "{SCHEDULE} WHERE next_run_at <= $1 ORDER BY next_run_at, id LIMIT $2"
        ))
        .bind(now)
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(schedule).collect()
    }

    /// Claims a due run: moves `next_run_at` from `seen` (as read) to
    /// `next`. Only one caller can: `false` when another process did first.
    pub async fn claim_refresh(&self, id: i64, seen: i64, next: i64) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE refresh_schedules SET next_run_at = $1 WHERE id = $2 AND next_run_at = $3",
        )
        .bind(next)
        .bind(id)
        .bind(seen)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Notes the job a schedule's run started.
    pub async fn refresh_ran(&self, id: i64, job_id: i64, at: i64) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE refresh_schedules SET last_run_at = $1, last_job_id = $2 WHERE id = $3",
        )
        .bind(at)
        .bind(job_id)
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// How many records of a set have no fire of `pack_id` that started at
    /// or after `since` (Unix ms).
    pub async fn stale_records(
        &self,
        record_set_id: i64,
        pack_id: &str,
        since: i64,
    ) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT COUNT(*) FROM records r WHERE r.record_set_id = $1 AND NOT EXISTS \
             (SELECT 1 FROM fires f WHERE f.record_id = r.id AND f.pack_id = $2 \
             AND f.started_at >= $3)",
        )
        .bind(record_set_id)
        .bind(pack_id)
        .bind(since)
        .fetch_one(self.pool())
        .await?)
    }
}
