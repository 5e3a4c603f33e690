//! Record sets and their records.

use model::RecordSetSummary;
use sqlx::Row;

use super::{Store, StoreError};

impl Store {
    /// Every record set, newest first, with its record count.
    pub async fn list_record_sets(&self) -> Result<Vec<RecordSetSummary>, StoreError> {
        let rows = sqlx::query(
            "SELECT s.id, s.name, s.bundle_id, s.is_demo, s.created_at, \
                    (SELECT COUNT(*) FROM records r WHERE r.record_set_id = s.id) AS records \
             FROM record_sets s ORDER BY s.created_at DESC, s.id DESC",
        )
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|row| {
                Ok(RecordSetSummary {
                    id: row.try_get("id")?,
                    name: row.try_get("name")?,
                    bundle_id: row.try_get("bundle_id")?,
                    records: row.try_get("records")?,
                    is_demo: row.try_get::<i64, _>("is_demo")? != 0,
                    created_at: row.try_get("created_at")?,
                })
            })
            .collect()
    }
}
