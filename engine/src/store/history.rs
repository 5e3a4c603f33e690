//! Fires and `connector_history`: every attempt of every connector, forever,
//! written as it goes out and as it ends, and read back as rows (reading
//! them for people and chips: `history_reads`).

use std::collections::HashMap;

use model::{AttemptEnd, Capability, FireOutcome, HistoryEntry, TriggeredBy};
use sqlx::any::AnyRow;
use sqlx::{FromRow, Row};

use super::batch::Batch;
use super::{Backend, Store, StoreError};
use crate::connectors::seam::ConnectorResult;

/// The columns of an attempt before its receipt.
macro_rules! entry_columns {
    () => {
        "SELECT id, fire_id, record_id, pack_id, intent, connector_id, triggered_by, \
         actor, fired_at, finished_at, outcome, result_count, error, retry_after, cost_micros, \
         cost_unit, paid_by"
    };
}

pub(super) const ENTRY: &str = concat!(entry_columns!(), ", receipt FROM connector_history");

/// [`ENTRY`] without the receipt (read as absent).
pub(super) const ENTRY_WITHOUT_RECEIPT: &str = concat!(
    entry_columns!(),
    ", CAST(NULL AS TEXT) AS receipt FROM connector_history"
);

/// A `connector_history` row as [`ENTRY`] reads it.
#[derive(sqlx::FromRow)]
struct EntryRow {
    id: i64,
    fire_id: i64,
    record_id: i64,
    pack_id: String,
    intent: String,
    connector_id: String,
    triggered_by: String,
    actor: String,
    fired_at: i64,
    finished_at: Option<i64>,
    #[sqlx(flatten)]
    end: AttemptEndRow,
}

/// How an attempt ended, as its row keeps it (in `connector_history` or
/// `call_attempts`, whose end columns are the same).
#[derive(sqlx::FromRow)]
pub(super) struct AttemptEndRow {
    outcome: Option<String>,
    result_count: Option<i64>,
    error: Option<String>,
    retry_after: Option<i64>,
    cost_micros: Option<i64>,
    cost_unit: Option<String>,
    paid_by: Option<String>,
    /// JSON.
    receipt: Option<String>,
}

pub(super) fn entry(row: &AnyRow) -> Result<HistoryEntry, StoreError> {
    let row = EntryRow::from_row(row)?;
    let id = row.id;
    let corrupt = |what: &str| StoreError::Corrupt(format!("history entry {id}: {what}"));
    Ok(HistoryEntry {
        id,
        fire_id: row.fire_id,
        record_id: row.record_id,
        pack_id: row.pack_id,
        intent: row.intent.parse().map_err(|_| corrupt("intent"))?,
        connector_id: row.connector_id,
        fired_at: row.fired_at,
        finished_at: row.finished_at,
        triggered_by: TriggeredBy::from_name(&row.triggered_by)
            .ok_or_else(|| corrupt("triggered_by"))?,
        actor: row.actor,
        end: row.end.end().map_err(|what| corrupt(&what))?,
    })
}

impl AttemptEndRow {
    /// The attempt's end; what is wrong names the column.
    pub(super) fn end(self) -> Result<AttemptEnd, String> {
        let charge = match (self.cost_micros, self.cost_unit, self.paid_by) {
            (Some(micros), Some(unit), Some(paid_by)) => Some(model::Charge {
                amount: model::Amount::from_micros(micros),
                unit,
                paid_by: model::PaidBy::parse(&paid_by)
                    .ok_or_else(|| format!("paid_by {paid_by:?}"))?,
            }),
            _ => None,
        };
        Ok(AttemptEnd {
            outcome: self
                .outcome
                .map(|o| FireOutcome::from_name(&o).ok_or_else(|| "outcome".to_owned()))
                .transpose()?,
            result_count: self
                .result_count
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
            error: self.error,
            retry_after: self.retry_after,
            charge,
            receipt: self
                .receipt
                .map(|json| serde_json::from_str(&json).map_err(|e| format!("receipt: {e}")))
                .transpose()?,
        })
    }
}

/// The receipt as its row keeps it.
pub(super) fn receipt_json(receipt: Option<&model::Receipt>) -> Option<String> {
    receipt.and_then(|r| serde_json::to_string(r).ok())
}

/// A chip's inputs: one row per attempt of a record for an intent (one with
/// empty attempt columns when there is none), each with the record's item
/// count for the intent, marked `part = 'chip'`. Binds the record and intent.
pub(super) const CHIP_INPUTS: &str = "SELECT 'chip' AS part, c.n AS item_count, h.id, h.fire_id, \
     h.record_id, h.pack_id, h.intent, h.connector_id, h.triggered_by, h.actor, h.fired_at, \
     h.finished_at, h.outcome, h.result_count, h.error, h.retry_after, h.cost_micros, \
     h.cost_unit, h.paid_by, h.receipt FROM (SELECT COUNT(*) AS n FROM items WHERE record_id = $1 AND intent = $2) c \
     LEFT JOIN connector_history h ON h.record_id = $1 AND h.intent = $2 \
     ORDER BY h.fired_at, h.id";

/// The attempts and item count from rows of [`CHIP_INPUTS`].
pub(super) fn fold_chip_inputs<'r>(
    rows: impl IntoIterator<Item = &'r AnyRow>,
) -> Result<(Vec<HistoryEntry>, u32), StoreError> {
    let mut count = 0;
    let mut attempts = Vec::new();
    for row in rows {
        count = u32::try_from(row.try_get::<i64, _>("item_count")?).unwrap_or(u32::MAX);
        if row.try_get::<Option<i64>, _>("id")?.is_some() {
            attempts.push(entry(row)?);
        }
    }
    Ok((attempts, count))
}

/// What closing an attempt wrote and read back.
#[derive(Clone, Debug)]
pub struct Closed {
    /// The attempt as stored.
    pub attempt: HistoryEntry,
    /// The items its results became, in result order, with their evidence.
    pub items: Vec<model::Item>,
    /// When the fire ended with it: the chip's inputs after the end
    /// (the record's attempts for the intent and its item count).
    pub chip: Option<(Vec<HistoryEntry>, u32)>,
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

/// How a fire ended. (`interrupted` is written by the lease reaper, for a
/// fire whose process stopped.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FireStatus {
    Done,
    Cancelled,
    /// The database failed while the fire was being stored.
    Error,
}

impl FireStatus {
    pub const fn name(self) -> &'static str {
        match self {
            FireStatus::Done => "done",
            FireStatus::Cancelled => "cancelled",
            FireStatus::Error => "error",
        }
    }
}

/// The end of a fire: its status, what an attempt still open says, and for
/// a job's fire, the task it carried out with the outcome it leaves.
#[derive(Clone, Debug)]
pub struct FireEnd {
    pub fire_id: i64,
    pub status: FireStatus,
    /// Written on an attempt of the fire still open (none normally is).
    pub open_attempt_error: Option<String>,
    /// The job task and its outcome (`found`, `not_found`, ...).
    pub task: Option<(i64, String)>,
}

/// The process a new fire belongs to and until when (see `lease`).
#[derive(Clone, Copy, Debug)]
pub struct Lease<'a> {
    pub owner: &'a str,
    pub until: i64,
}

impl Store {
    /// Opens a fire under `lease` with its first attempt in flight, in one
    /// round trip (on SQLite two statements in one call; on PostgreSQL one
    /// statement). Should the second part fail, the fire is left open
    /// without attempts, and its lease closes it.
    pub async fn open_fire_with_attempt(
        &self,
        ctx: &FireContext,
        lease: Lease<'_>,
        connector_id: &str,
    ) -> Result<HistoryEntry, StoreError> {
        let now = self.now_ms();
        let sql = match self.backend() {
            Backend::Sqlite => {
                "INSERT INTO fires (record_id, pack_id, intent, triggered_by, actor, status, job_id, \
                 started_at, owner, lease_until) \
                 VALUES ($1, $2, $3, $4, $5, 'running', $6, $7, $8, $9); \
                 INSERT INTO connector_history (fire_id, record_id, pack_id, intent, connector_id, \
                 triggered_by, actor, fired_at) \
                 VALUES (last_insert_rowid(), $1, $2, $3, $10, $4, $5, $7) RETURNING id, fire_id"
            }
            Backend::Postgres => {
                "WITH f AS (INSERT INTO fires (record_id, pack_id, intent, triggered_by, actor, status, \
                 job_id, started_at, owner, lease_until) \
                 VALUES ($1, $2, $3, $4, $5, 'running', $6, $7, $8, $9) RETURNING id) \
                 INSERT INTO connector_history (fire_id, record_id, pack_id, intent, connector_id, \
                 triggered_by, actor, fired_at) \
                 SELECT f.id, $1, $2, $3, $10, $4, $5, $7 FROM f RETURNING id, fire_id"
            }
        };
        let row = sqlx::query(sql)
            .bind(ctx.record_id)
            .bind(ctx.pack_id.as_str())
            .bind(ctx.intent.name())
            .bind(ctx.triggered_by.name())
            .bind(ctx.actor.as_str())
            .bind(ctx.job_id)
            .bind(now)
            .bind(lease.owner)
            .bind(lease.until)
            .bind(connector_id)
            // (`fetch_one` would stop after SQLite's first statement.)
            .fetch_all(self.pool())
            .await?
            .pop()
            .ok_or(StoreError::Database(sqlx::Error::RowNotFound))?;
        Ok(in_flight(
            ctx,
            row.try_get("id")?,
            row.try_get("fire_id")?,
            connector_id,
            now,
        ))
    }

    /// Writes an attempt of an open fire as in flight, before the connector
    /// is called.
    pub async fn open_attempt(
        &self,
        ctx: &FireContext,
        fire_id: i64,
        connector_id: &str,
    ) -> Result<HistoryEntry, StoreError> {
        let now = self.now_ms();
        let id = sqlx::query_scalar(
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
        .bind(now)
        .fetch_one(self.pool())
        .await?;
        Ok(in_flight(ctx, id, fire_id, connector_id, now))
    }

    /// Writes how an attempt ended, the results it brought into the curated
    /// layer (see [`Store::add_results`]) and, when the fire ends with it,
    /// the fire's end: one transaction. Returns the attempt as stored and
    /// the ids of the items its results became, in result order.
    pub async fn close_attempt(
        &self,
        attempt: &HistoryEntry,
        end: &AttemptEnd,
        results: &[ConnectorResult],
        fire_end: Option<&FireEnd>,
    ) -> Result<Closed, StoreError> {
        let now = self.now_ms();
        let mut batch = Batch::default();
        if self.backend() == Backend::Postgres && !results.is_empty() {
            // The record's row before its items' (a result can change an
            // item's row: a revision), as a decision takes them and as every
            // writer of a record's kept numbers takes the record's row first
            // (migration 0032): the two then wait for each other in one order.
            batch.push(
                "SELECT 1 FROM records WHERE id = $1 FOR NO KEY UPDATE",
                vec![attempt.record_id.into()],
            );
        }
        let keys = super::results::push_results(
            &mut batch,
            attempt.record_id,
            &attempt.intent,
            attempt.fire_id,
            &attempt.connector_id,
            attempt.triggered_by,
            results,
            now,
        );
        batch.push(
            "UPDATE connector_history SET finished_at = $1, outcome = $2, result_count = $3, \
             error = $4, retry_after = $5, cost_micros = $6, cost_unit = $7, paid_by = $8, \
             receipt = $10 WHERE id = $9",
            vec![
                now.into(),
                end.outcome.map(FireOutcome::name).into(),
                end.result_count.map(i64::from).into(),
                end.error.as_deref().into(),
                end.retry_after.into(),
                end.charge.as_ref().map(|c| c.amount.micros()).into(),
                end.charge.as_ref().map(|c| c.unit.as_str()).into(),
                end.charge.as_ref().map(|c| c.paid_by.name()).into(),
                attempt.id.into(),
                receipt_json(end.receipt.as_ref()).into(),
            ],
        );
        if let Some(charge) = &end.charge {
            batch.push(
                "INSERT INTO charges (workspace_id, at, connector_id, amount_micros, unit, paid_by, \
                 person, outcome, capability, record_set_id, record_set_name, record_id, \
                 record_name, pack_id, job_id) \
                 SELECT rs.workspace_id, $1, h.connector_id, $2, $3, $4, \
                 COALESCE(j.created_by, h.actor), $5, h.intent, rs.id, rs.name, r.id, r.name, \
                 h.pack_id, f.job_id FROM connector_history h \
                 JOIN records r ON r.id = h.record_id \
                 JOIN record_sets rs ON rs.id = r.record_set_id \
                 JOIN fires f ON f.id = h.fire_id LEFT JOIN jobs j ON j.id = f.job_id \
                 WHERE h.id = $6 AND rs.workspace_id IS NOT NULL",
                vec![
                    now.into(),
                    charge.amount.micros().into(),
                    charge.unit.as_str().into(),
                    charge.paid_by.name().into(),
                    end.outcome.map_or("error", FireOutcome::name).into(),
                    attempt.id.into(),
                ],
            );
        }
        if let Some(fire_end) = fire_end {
            push_fire_end(&mut batch, fire_end, now);
            batch.push(
                CHIP_INPUTS,
                vec![attempt.record_id.into(), attempt.intent.name().into()],
            );
        }
        super::results::select_items(&mut batch, attempt.record_id, &attempt.intent, &keys);
        let rows = batch.run(self).await?;
        let part =
            |row: &AnyRow, name: &str| row.try_get::<String, _>("part").is_ok_and(|p| p == name);
        let mut items: HashMap<String, model::Item> =
            super::items::fold_items(rows.iter().filter(|r| part(r, "item")))?
                .into_iter()
                .collect();
        let ordered = keys.iter().filter_map(|k| items.remove(k)).collect();
        let chip = fire_end
            .map(|_| fold_chip_inputs(rows.iter().filter(|r| part(r, "chip"))))
            .transpose()?;
        Ok(Closed {
            attempt: HistoryEntry {
                finished_at: Some(now),
                end: end.clone(),
                ..attempt.clone()
            },
            items: ordered,
            chip,
        })
    }

    /// Ends a fire whose attempts are written (or one that failed midway:
    /// an attempt still open is closed with `open_attempt_error`).
    pub async fn close_fire(&self, end: &FireEnd) -> Result<(), StoreError> {
        let mut batch = Batch::default();
        push_fire_end(&mut batch, end, self.now_ms());
        batch.run(self).await?;
        Ok(())
    }

    /// The fire's status (`running`, `done`, `cancelled`, `error`,
    /// `interrupted`) and its record.
    pub async fn fire_status(&self, fire_id: i64) -> Result<(String, i64), StoreError> {
        let row = sqlx::query("SELECT status, record_id FROM fires WHERE id = $1")
            .bind(fire_id)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("fire {fire_id}")))?;
        Ok((row.try_get("status")?, row.try_get("record_id")?))
    }
}

/// An attempt just written, in flight.
fn in_flight(
    ctx: &FireContext,
    id: i64,
    fire_id: i64,
    connector_id: &str,
    fired_at: i64,
) -> HistoryEntry {
    HistoryEntry {
        id,
        fire_id,
        record_id: ctx.record_id,
        pack_id: ctx.pack_id.clone(),
        intent: ctx.intent.clone(),
        connector_id: connector_id.to_owned(),
        fired_at,
        finished_at: None,
        triggered_by: ctx.triggered_by,
        actor: ctx.actor.clone(),
        end: AttemptEnd::default(),
    }
}

/// Adds a fire's end to a batch. (A fire a reaper closed as interrupted
/// meanwhile stays so; what the fire learned is kept all the same.)
fn push_fire_end(batch: &mut Batch, end: &FireEnd, now: i64) {
    if let Some(error) = &end.open_attempt_error {
        let outcome = match end.status {
            FireStatus::Cancelled => FireOutcome::Cancelled,
            FireStatus::Done | FireStatus::Error => FireOutcome::Error,
        };
        batch.push(
            "UPDATE connector_history SET outcome = $1, error = $2, finished_at = $3 \
             WHERE fire_id = $4 AND outcome IS NULL",
            vec![
                outcome.name().into(),
                error.as_str().into(),
                now.into(),
                end.fire_id.into(),
            ],
        );
    }
    batch.push(
        "UPDATE fires SET status = $1, finished_at = $2 WHERE id = $3 AND status = 'running'",
        vec![end.status.name().into(), now.into(), end.fire_id.into()],
    );
    if let Some((task_id, outcome)) = &end.task {
        batch.push(
            "UPDATE job_tasks SET status = 'done', outcome = $1, fire_id = $2 WHERE id = $3",
            vec![
                outcome.as_str().into(),
                end.fire_id.into(),
                (*task_id).into(),
            ],
        );
    }
}
