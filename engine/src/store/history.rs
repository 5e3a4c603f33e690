//! Fires and `connector_history`: every attempt of every connector, forever.

use std::collections::HashMap;

use model::{Capability, FireOutcome, HistoryEntry, TriggeredBy};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::{Store, StoreError};
use crate::time::now_ms;

const ENTRY: &str = "SELECT id, fire_id, record_id, pack_id, intent, connector_id, triggered_by, \
     actor, fired_at, finished_at, outcome, result_count, error, retry_after FROM connector_history";

fn entry(row: &AnyRow) -> Result<HistoryEntry, StoreError> {
    let id: i64 = row.try_get("id")?;
    let corrupt = |what: &str| StoreError::Corrupt(format!("history entry {id}: {what}"));
    let intent: String = row.try_get("intent")?;
    let triggered_by: String = row.try_get("triggered_by")?;
    let outcome: Option<String> = row.try_get("outcome")?;
    Ok(HistoryEntry {
        id,
        fire_id: row.try_get("fire_id")?,
        record_id: row.try_get("record_id")?,
        pack_id: row.try_get("pack_id")?,
        intent: intent.parse().map_err(|_| corrupt("intent"))?,
        connector_id: row.try_get("connector_id")?,
        fired_at: row.try_get("fired_at")?,
        finished_at: row.try_get("finished_at")?,
        triggered_by: TriggeredBy::from_name(&triggered_by)
            .ok_or_else(|| corrupt("triggered_by"))?,
        actor: row.try_get("actor")?,
        outcome: match outcome {
            None => None,
            Some(o) => Some(FireOutcome::from_name(&o).ok_or_else(|| corrupt("outcome"))?),
        },
        result_count: row
            .try_get::<Option<i64>, _>("result_count")?
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
        error: row.try_get("error")?,
        retry_after: row.try_get("retry_after")?,
    })
}

/// Who and why, carried by every row a fire writes.
#[derive(Clone, Debug)]
pub struct FireContext {
    pub record_id: i64,
    pub pack_id: String,
    pub intent: Capability,
    pub triggered_by: TriggeredBy,
    pub actor: String,
    pub job_id: Option<i64>,
}

/// How an attempt ended, as stored.
#[derive(Clone, Debug, Default)]
pub struct AttemptEnd {
    pub outcome: Option<FireOutcome>,
    pub result_count: Option<u32>,
    pub error: Option<String>,
    pub retry_after: Option<i64>,
}

impl Store {
    /// Opens a fire; its attempts follow.
    pub async fn start_fire(&self, ctx: &FireContext) -> Result<i64, StoreError> {
        let id = sqlx::query_scalar(
            "INSERT INTO fires (record_id, pack_id, intent, triggered_by, actor, status, job_id, started_at) \
             VALUES ($1, $2, $3, $4, $5, 'running', $6, $7) RETURNING id",
        )
        .bind(ctx.record_id)
        .bind(ctx.pack_id.as_str())
        .bind(ctx.intent.name())
        .bind(ctx.triggered_by.name())
        .bind(ctx.actor.as_str())
        .bind(ctx.job_id)
        .bind(now_ms())
        .fetch_one(self.pool())
        .await?;
        Ok(id)
    }

    /// Closes a fire: `done` or `cancelled`.
    pub async fn finish_fire(&self, fire_id: i64, status: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE fires SET status = $1, finished_at = $2 WHERE id = $3")
            .bind(status)
            .bind(now_ms())
            .bind(fire_id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// The fire's status (`running`, `done`, `cancelled`) and its record.
    pub async fn fire_status(&self, fire_id: i64) -> Result<(String, i64), StoreError> {
        let row = sqlx::query("SELECT status, record_id FROM fires WHERE id = $1")
            .bind(fire_id)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("fire {fire_id}")))?;
        Ok((row.try_get("status")?, row.try_get("record_id")?))
    }

    /// Writes an attempt as in flight, before the connector is called.
    pub async fn start_attempt(
        &self,
        fire_id: i64,
        ctx: &FireContext,
        connector_id: &str,
    ) -> Result<HistoryEntry, StoreError> {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO connector_history (fire_id, record_id, pack_id, intent, connector_id, \
             triggered_by, actor, fired_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
        )
        .bind(fire_id)
        .bind(ctx.record_id)
        .bind(ctx.pack_id.as_str())
        .bind(ctx.intent.name())
        .bind(connector_id)
        .bind(ctx.triggered_by.name())
        .bind(ctx.actor.as_str())
        .bind(now_ms())
        .fetch_one(self.pool())
        .await?;
        self.attempt(id).await
    }

    /// Writes how an attempt ended.
    pub async fn finish_attempt(
        &self,
        id: i64,
        end: &AttemptEnd,
    ) -> Result<HistoryEntry, StoreError> {
        sqlx::query(
            "UPDATE connector_history SET finished_at = $1, outcome = $2, result_count = $3, \
             error = $4, retry_after = $5 WHERE id = $6",
        )
        .bind(now_ms())
        .bind(end.outcome.map(FireOutcome::name))
        .bind(end.result_count.map(i64::from))
        .bind(end.error.as_deref())
        .bind(end.retry_after)
        .bind(id)
        .execute(self.pool())
        .await?;
        self.attempt(id).await
    }

    async fn attempt(&self, id: i64) -> Result<HistoryEntry, StoreError> {
        let row = sqlx::query(&format!("{ENTRY} WHERE id = $1"))
            .bind(id)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("history entry {id}")))?;
        entry(&row)
    }

    /// A record's whole history, newest first.
    pub async fn history(&self, record_id: i64) -> Result<Vec<HistoryEntry>, StoreError> {
        let rows = sqlx::query(&format!(
            "{ENTRY} WHERE record_id = $1 ORDER BY fired_at DESC, id DESC"
        ))
        .bind(record_id)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(entry).collect()
    }

    /// The history of many records, grouped by record, oldest first.
    pub async fn history_of(
        &self,
        record_ids: &[i64],
    ) -> Result<HashMap<i64, Vec<HistoryEntry>>, StoreError> {
        let mut out: HashMap<i64, Vec<HistoryEntry>> = HashMap::new();
        for chunk in record_ids.chunks(500) {
            let placeholders = super::placeholders(chunk.len());
            let sql = format!("{ENTRY} WHERE record_id IN ({placeholders}) ORDER BY fired_at, id");
            let mut query = sqlx::query(&sql);
            for id in chunk {
                query = query.bind(*id);
            }
            for row in query.fetch_all(self.pool()).await? {
                let e = entry(&row)?;
                out.entry(e.record_id).or_default().push(e);
            }
        }
        Ok(out)
    }

    /// Connectors that returned results for this record and intent.
    pub async fn connectors_that_found(
        &self,
        record_id: i64,
        intent: &Capability,
    ) -> Result<Vec<String>, StoreError> {
        let ids = sqlx::query_scalar(
            "SELECT DISTINCT connector_id FROM connector_history \
             WHERE record_id = $1 AND intent = $2 AND outcome = 'found'",
        )
        .bind(record_id)
        .bind(intent.name())
        .fetch_all(self.pool())
        .await?;
        Ok(ids)
    }

    /// After a crash, marks attempts and fires left in flight as interrupted.
    /// Returns how many attempts were closed.
    pub async fn close_interrupted(&self) -> Result<u64, StoreError> {
        let now = now_ms();
        let done = sqlx::query(
            "UPDATE connector_history SET outcome = 'error', finished_at = $1, \
             error = 'interrupted: the server stopped during this attempt' WHERE outcome IS NULL",
        )
        .bind(now)
        .execute(self.pool())
        .await?;
        sqlx::query(
            "UPDATE fires SET status = 'interrupted', finished_at = $1 WHERE status = 'running'",
        )
        .bind(now)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected())
    }
}
