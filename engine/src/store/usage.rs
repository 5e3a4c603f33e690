//! Daily usage against connectors' daily caps, counted in the database so
//! that every process sharing it counts together.

use sqlx::Row;

use super::{Store, StoreError};
use crate::time::utc_day_start;

impl Store {
    /// Counts one fire against a connector's daily cap, atomically across
    /// every process sharing the database. `false` when the cap is reached
    /// (and nothing is counted).
    pub async fn take_daily_fire(&self, connector_id: &str, cap: u32) -> Result<bool, StoreError> {
        let counted: Option<i64> = sqlx::query_scalar(
            "INSERT INTO connector_usage (connector_id, day, fires) VALUES ($1, $2, 1) \
             ON CONFLICT (connector_id, day) DO UPDATE SET fires = connector_usage.fires + 1 \
             WHERE connector_usage.fires < $3 RETURNING fires",
        )
        .bind(connector_id)
        .bind(utc_day_start(self.now_ms()))
        .bind(i64::from(cap))
        .fetch_optional(self.pool())
        .await?;
        Ok(counted.is_some())
    }

    /// Fires counted today against daily caps, by connector (one read for
    /// the whole inventory).
    pub async fn fires_today(&self) -> Result<std::collections::HashMap<String, i64>, StoreError> {
        let rows = sqlx::query("SELECT connector_id, fires FROM connector_usage WHERE day = $1")
            .bind(utc_day_start(self.now_ms()))
            .fetch_all(self.pool())
            .await?;
        rows.iter()
            .map(|row| Ok((row.try_get("connector_id")?, row.try_get("fires")?)))
            .collect()
    }
}
