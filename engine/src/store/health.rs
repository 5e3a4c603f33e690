//! Connector health in the database: the status people and providers gave
//! each connector, shared by every process and kept across restarts.

use model::ConnectorStatus;

use super::{Store, StoreError};

/// A connector's stored health.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredHealth {
    pub connector_id: String,
    pub status: ConnectorStatus,
    /// Suspensions in a row (each twice as long as the one before).
    pub suspensions: u32,
}

impl Store {
    /// Stores a connector's status (any but `needs-env`, which each process
    /// derives from its environment).
    pub async fn save_connector_health(
        &self,
        connector_id: &str,
        status: &ConnectorStatus,
        suspensions: u32,
    ) -> Result<(), StoreError> {
        if matches!(status, ConnectorStatus::NeedsEnv { .. }) {
            return Ok(());
        }
        let json = serde_json::to_string(status)
            .map_err(|e| StoreError::Corrupt(format!("a connector status: {e}")))?;
        sqlx::query(
            "INSERT INTO connector_health (connector_id, status, suspensions, changed_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (connector_id) DO UPDATE SET status = excluded.status, \
             suspensions = excluded.suspensions, changed_at = excluded.changed_at",
        )
        .bind(connector_id)
        .bind(json)
        .bind(i64::from(suspensions))
        .bind(self.now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Forgets a connector's health (it was removed).
    pub async fn forget_connector_health(&self, connector_id: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM connector_health WHERE connector_id = $1")
            .bind(connector_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Every stored health. A row this version cannot read is left out
    /// (and logged): the connector keeps the status this process has.
    pub async fn connector_health(&self) -> Result<Vec<StoredHealth>, StoreError> {
        let rows: Vec<(String, String, i64)> =
            sqlx::query_as("SELECT connector_id, status, suspensions FROM connector_health")
                .fetch_all(&self.pool)
                .await?;
        let mut out = Vec::with_capacity(rows.len());
        for (connector_id, status, suspensions) in rows {
            match serde_json::from_str(&status) {
                Ok(status) => out.push(StoredHealth {
                    connector_id,
                    status,
                    suspensions: u32::try_from(suspensions).unwrap_or(0),
                }),
                Err(e) => {
                    tracing::warn!(connector = %connector_id, error = %e, "A stored connector status this version cannot read.");
                }
            }
        }
        Ok(out)
    }
}
