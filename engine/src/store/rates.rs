//! Rate hints held by the whole deployment on PostgreSQL: every process
//! takes its calls' slots from one row per connector and key owner.

use std::time::Duration;

use sqlx::Row;

use super::{Store, StoreError};

impl Store {
    /// Takes the next call slot of `bucket` at `per_second` (evenly spaced,
    /// over every process) and returns how long to wait for it. Slots are
    /// reserved, not polled: a caller never loses its turn, and the wait is
    /// measured on the database's clock, so processes on other machines
    /// agree. PostgreSQL only.
    pub async fn reserve_call(
        &self,
        bucket: &str,
        per_second: f64,
    ) -> Result<Duration, StoreError> {
        let spacing_ms = 1000.0 / per_second;
        let row = sqlx::query(
            "WITH now AS (SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::DOUBLE PRECISION AS ms) \
             INSERT INTO rate_slots AS s (bucket, next_at) SELECT $1, ms + $2 FROM now \
             ON CONFLICT (bucket) DO UPDATE SET next_at = GREATEST(s.next_at, (SELECT ms FROM now)) + $2 \
             RETURNING s.next_at - $2 - (SELECT ms FROM now) AS wait_ms",
        )
        .bind(bucket)
        .bind(spacing_ms)
        .fetch_one(&self.pool)
        .await?;
        let wait_ms: f64 = row.try_get("wait_ms")?;
        Ok(Duration::try_from_secs_f64(wait_ms / 1000.0).unwrap_or(Duration::ZERO))
    }
}
