//! Who views which record set, per process, on PostgreSQL: each process
//! counts its own open streams and renews its rows with its heartbeat; rows
//! past their time belong to a process that died.

use super::{Store, StoreError};

impl Store {
    /// Counts one more (`delta` 1) or one fewer (-1) stream of `viewer` on a
    /// record set in `owner`, and returns the set's viewers on every live
    /// process, by name.
    pub async fn count_viewer(
        &self,
        owner: &str,
        record_set_id: i64,
        viewer: &str,
        delta: i32,
        now_ms: i64,
        until_ms: i64,
    ) -> Result<Vec<String>, StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "INSERT INTO viewers (owner, record_set_id, viewer, streams, until) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (owner, record_set_id, viewer) DO UPDATE SET streams = viewers.streams + $4, until = $5",
        )
        .bind(owner)
        .bind(record_set_id)
        .bind(viewer)
        .bind(delta)
        .bind(until_ms)
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM viewers WHERE owner = $1 AND record_set_id = $2 AND viewer = $3 AND streams <= 0")
            .bind(owner)
            .bind(record_set_id)
            .bind(viewer)
            .execute(&mut *tx)
            .await?;
        let viewers = viewers_of(&mut tx, record_set_id, now_ms).await?;
        tx.commit().await?;
        Ok(viewers)
    }

    /// The viewers of a record set on every live process, by name.
    pub async fn viewers(
        &self,
        record_set_id: i64,
        now_ms: i64,
    ) -> Result<Vec<String>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        viewers_of(&mut conn, record_set_id, now_ms).await
    }

    /// Renews `owner`'s viewer rows until `until_ms`.
    pub async fn renew_viewers(&self, owner: &str, until_ms: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE viewers SET until = $1 WHERE owner = $2")
            .bind(until_ms)
            .bind(owner)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Removes the viewer rows of processes that stopped renewing them (and
    /// `owner`'s own, when it stops: `Some`), returning the record sets whose
    /// viewers changed.
    pub async fn drop_viewers(
        &self,
        now_ms: i64,
        owner: Option<&str>,
    ) -> Result<Vec<i64>, StoreError> {
        let mut sets: Vec<i64> = sqlx::query_scalar(
            "DELETE FROM viewers WHERE until < $1 OR owner = $2 RETURNING record_set_id",
        )
        .bind(now_ms)
        .bind(owner.unwrap_or(""))
        .fetch_all(&self.pool)
        .await?;
        sets.sort_unstable();
        sets.dedup();
        Ok(sets)
    }
}

async fn viewers_of(
    conn: &mut sqlx::AnyConnection,
    record_set_id: i64,
    now_ms: i64,
) -> Result<Vec<String>, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT DISTINCT viewer FROM viewers WHERE record_set_id = $1 AND until >= $2 ORDER BY viewer",
    )
    .bind(record_set_id)
    .bind(now_ms)
    .fetch_all(conn)
    .await?)
}
