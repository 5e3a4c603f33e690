//! Events shared by every process on PostgreSQL: batches written with ids
//! from one counter (committed in id order), the channel that announces
//! them, reads by id for resuming streams, and pruning.

use model::{Event, EventKind};
use sqlx::postgres::PgListener;
use sqlx::Row;

use super::{Store, StoreError};

/// The `LISTEN/NOTIFY` channel that carries the last id of each batch.
pub const EVENTS_CHANNEL: &str = "switchyard_events";

/// One event to write: its id comes from the database.
#[derive(Clone, Debug)]
pub struct NewEvent {
    pub record_set_id: Option<i64>,
    pub workspace_id: Option<i64>,
    pub kind: EventKind,
}

/// Where the stored events start and end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventSpan {
    /// The id the next event will get.
    pub next_id: u64,
    /// The oldest event still kept, if any is.
    pub oldest: Option<u64>,
}

impl Store {
    /// Writes a batch of events in one statement and announces it; returns
    /// the id of the last one. Batches from all processes commit in id order:
    /// the counter's row stays locked until the commit.
    pub async fn write_events(&self, batch: &[NewEvent], at_ms: i64) -> Result<u64, StoreError> {
        let rows: Vec<serde_json::Value> = batch
            .iter()
            .map(|e| {
                serde_json::json!({
                    "r": e.record_set_id,
                    "w": e.workspace_id,
                    "k": serde_json::to_string(&e.kind).unwrap_or_else(|_| r#"{"type":"resync"}"#.to_owned()),
                })
            })
            .collect();
        let sql = format!(
            "WITH batch AS ( \
                 SELECT e.v, e.n FROM jsonb_array_elements($1::JSONB) WITH ORDINALITY AS e(v, n) \
             ), taken AS ( \
                 UPDATE event_counter SET next_id = next_id + (SELECT count(*) FROM batch) \
                 RETURNING next_id - (SELECT count(*) FROM batch) AS first \
             ), written AS ( \
                 INSERT INTO events (id, record_set_id, workspace_id, kind, at) \
                 SELECT taken.first + batch.n - 1, (batch.v->>'r')::BIGINT, (batch.v->>'w')::BIGINT, batch.v->>'k', $2 \
                 FROM taken, batch \
                 RETURNING id \
             ), last AS (SELECT max(id) AS id FROM written) \
             SELECT last.id FROM last \
             CROSS JOIN LATERAL (SELECT pg_notify('{EVENTS_CHANNEL}', last.id::TEXT)) AS announced(x)"
        );
        let row = sqlx::query(&sql)
            .bind(serde_json::Value::Array(rows).to_string())
            .bind(at_ms)
            .fetch_one(&self.pool)
            .await?;
        let last: Option<i64> = row.try_get("id")?;
        last.and_then(|id| u64::try_from(id).ok())
            .ok_or_else(|| StoreError::Corrupt("an event batch was written without ids".to_owned()))
    }

    /// Up to `limit` events after `last_id`, in id order. An event whose
    /// kind this version cannot read (written by a newer one) comes back as
    /// a resync, so its viewers reload rather than miss it.
    pub async fn events_after(&self, last_id: u64, limit: usize) -> Result<Vec<Event>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, record_set_id, workspace_id, kind FROM events WHERE id > $1 ORDER BY id LIMIT $2",
        )
        .bind(i64::try_from(last_id).unwrap_or(i64::MAX))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let id: i64 = row.try_get("id")?;
                let kind: String = row.try_get("kind")?;
                let kind = serde_json::from_str(&kind).unwrap_or_else(|e| {
                    tracing::warn!(event = id, error = %e, "An event of a kind this version does not know; its viewers resync.");
                    EventKind::Resync
                });
                Ok(Event {
                    id: u64::try_from(id).map_err(|_| StoreError::Corrupt(format!("event id {id}")))?,
                    record_set_id: row.try_get("record_set_id")?,
                    workspace_id: row.try_get("workspace_id")?,
                    kind,
                })
            })
            .collect()
    }

    /// The next event id and the oldest kept one.
    pub async fn event_span(&self) -> Result<EventSpan, StoreError> {
        let row = sqlx::query(
            "SELECT (SELECT next_id FROM event_counter) AS next_id, (SELECT min(id) FROM events) AS oldest",
        )
        .fetch_one(&self.pool)
        .await?;
        let next_id: i64 = row.try_get("next_id")?;
        let oldest: Option<i64> = row.try_get("oldest")?;
        Ok(EventSpan {
            next_id: u64::try_from(next_id)
                .map_err(|_| StoreError::Corrupt(format!("next event id {next_id}")))?,
            oldest: oldest.and_then(|id| u64::try_from(id).ok()),
        })
    }

    /// Removes events older than `before_ms`, and all but the newest `keep`.
    /// Returns how many were removed.
    pub async fn prune_events(&self, keep: u64, before_ms: i64) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "DELETE FROM events WHERE at < $1 OR id < (SELECT next_id FROM event_counter) - $2",
        )
        .bind(before_ms)
        .bind(i64::try_from(keep).unwrap_or(i64::MAX))
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// A connection listening on [`EVENTS_CHANNEL`] (PostgreSQL only). It
    /// reconnects by itself when its connection drops.
    pub async fn listen_events(&self) -> Result<PgListener, StoreError> {
        let mut listener = PgListener::connect(&self.url).await?;
        listener.listen(EVENTS_CHANNEL).await?;
        Ok(listener)
    }
}
