//! Per-record "always start with" overrides: the connector a person chose
//! to start a record's chain with, for one pack.

use sqlx::Row;

use super::{Store, StoreError};

impl Store {
    /// The connector a record starts with for a pack, if a person set one.
    pub async fn record_override(
        &self,
        record_id: i64,
        pack_id: &str,
    ) -> Result<Option<String>, StoreError> {
        let id = sqlx::query_scalar(
            "SELECT connector_id FROM record_overrides WHERE record_id = $1 AND pack_id = $2",
        )
        .bind(record_id)
        .bind(pack_id)
        .fetch_optional(self.pool())
        .await?;
        Ok(id)
    }

    /// The overrides of many records, by (record, pack).
    pub async fn record_overrides_of(
        &self,
        record_ids: &[i64],
    ) -> Result<std::collections::HashMap<(i64, String), String>, StoreError> {
        let mut out = std::collections::HashMap::new();
        for chunk in record_ids.chunks(500) {
            let ph = super::placeholders(chunk.len());
            let sql = format!(
                "SELECT record_id, pack_id, connector_id FROM record_overrides WHERE record_id IN ({ph})"
            );
            let mut query = sqlx::query(&sql);
            for id in chunk {
                query = query.bind(*id);
            }
            for row in query.fetch_all(self.pool()).await? {
                out.insert(
                    (row.try_get("record_id")?, row.try_get("pack_id")?),
                    row.try_get("connector_id")?,
                );
            }
        }
        Ok(out)
    }

    /// Sets (or with `None`, clears) the connector a record starts with for a pack.
    pub async fn set_record_override(
        &self,
        record_id: i64,
        pack_id: &str,
        connector_id: Option<&str>,
        actor: &str,
    ) -> Result<(), StoreError> {
        match connector_id {
            Some(connector_id) => {
                sqlx::query(
                    "INSERT INTO record_overrides (record_id, pack_id, connector_id, set_by, set_at) \
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (record_id, pack_id) DO UPDATE \
                     SET connector_id = excluded.connector_id, set_by = excluded.set_by, set_at = excluded.set_at",
                )
                .bind(record_id)
                .bind(pack_id)
                .bind(connector_id)
                .bind(actor)
                .bind(self.now_ms())
                .execute(self.pool())
                .await?;
            }
            None => {
                sqlx::query("DELETE FROM record_overrides WHERE record_id = $1 AND pack_id = $2")
                    .bind(record_id)
                    .bind(pack_id)
                    .execute(self.pool())
                    .await?;
            }
        }
        Ok(())
    }
}
