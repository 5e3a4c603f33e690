//! Capability calls and their attempts (`calls`, `call_attempts`): a
//! query's walk through a chain with no record, its results kept for a
//! while, its attempts kept as receipts.

use model::{CallAttempt, CallOutput, FireOutcome};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::batch::Batch;
use super::{Store, StoreError};
use model::AttemptEnd;

/// A call to store.
#[derive(Clone, Debug)]
pub struct NewCall<'a> {
    pub workspace_id: i64,
    pub capability: &'a str,
    pub query: &'a str,
    pub connector: Option<&'a str>,
    pub max_results: u32,
    /// The connectors of its chain.
    pub chain_length: u64,
    pub created_by: &'a str,
    /// Past this a call still running was lost with its process (Unix ms).
    pub deadline: i64,
    /// Its results are kept until then (Unix ms).
    pub keep_until: i64,
}

/// Where a call stands, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallStatus {
    Running,
    Completed,
    Cancelled,
    Failed,
}

impl CallStatus {
    pub const fn name(&self) -> &'static str {
        match self {
            CallStatus::Running => "running",
            CallStatus::Completed => "completed",
            CallStatus::Cancelled => "cancelled",
            CallStatus::Failed => "failed",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        [
            CallStatus::Running,
            CallStatus::Completed,
            CallStatus::Cancelled,
            CallStatus::Failed,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }
}

/// A stored call.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredCall {
    pub id: i64,
    pub workspace_id: i64,
    pub capability: String,
    pub query: String,
    pub status: CallStatus,
    pub chain_length: u64,
    pub created_by: String,
    pub created_at: i64,
    pub finished_at: Option<i64>,
    pub deadline: i64,
    pub keep_until: i64,
    /// How many of its subjects it has finished, for a call that counts
    /// them (`web.scrape`'s addresses); `None` for a search.
    pub done: Option<u64>,
    /// `None` while running, and once the keeping time is over.
    pub results: Option<Vec<CallOutput>>,
    pub error: Option<String>,
}

fn call(row: &AnyRow) -> Result<StoredCall, StoreError> {
    let id: i64 = row.try_get("id")?;
    let corrupt = |what: &str| StoreError::Corrupt(format!("call {id}: {what}"));
    let status: String = row.try_get("status")?;
    let results: Option<String> = row.try_get("results")?;
    Ok(StoredCall {
        id,
        workspace_id: row.try_get("workspace_id")?,
        capability: row.try_get("capability")?,
        query: row.try_get("query")?,
        status: CallStatus::from_name(&status).ok_or_else(|| corrupt("status"))?,
        chain_length: u64::try_from(row.try_get::<i64, _>("chain_length")?)
            .map_err(|_| corrupt("chain_length"))?,
        created_by: row.try_get("created_by")?,
        created_at: row.try_get("created_at")?,
        finished_at: row.try_get("finished_at")?,
        deadline: row.try_get("deadline")?,
        keep_until: row.try_get("keep_until")?,
        done: row
            .try_get::<Option<i64>, _>("done")?
            .map(|d| u64::try_from(d).map_err(|_| corrupt("done")))
            .transpose()?,
        results: results
            .map(|r| serde_json::from_str(&r).map_err(|_| corrupt("results")))
            .transpose()?,
        error: row.try_get("error")?,
    })
}

impl Store {
    /// Stores a call as running, and forgets the results of calls whose
    /// keeping time is over. Returns its id.
    pub async fn create_call(&self, new: &NewCall<'_>) -> Result<i64, StoreError> {
        let now = self.now_ms();
        sqlx::query(
            "UPDATE calls SET results = NULL WHERE keep_until < $1 AND results IS NOT NULL",
        )
        .bind(now)
        .execute(self.pool())
        .await?;
        Ok(sqlx::query_scalar(
            "INSERT INTO calls (workspace_id, capability, query, connector, max_results, \
             chain_length, status, created_by, created_at, deadline, keep_until) \
             VALUES ($1, $2, $3, $4, $5, $6, 'running', $7, $8, $9, $10) RETURNING id",
        )
        .bind(new.workspace_id)
        .bind(new.capability)
        .bind(new.query)
        .bind(new.connector)
        .bind(i64::from(new.max_results))
        .bind(i64::try_from(new.chain_length).unwrap_or(i64::MAX))
        .bind(new.created_by)
        .bind(now)
        .bind(new.deadline)
        .bind(new.keep_until)
        .fetch_one(self.pool())
        .await?)
    }

    /// A call as stored.
    pub async fn call(&self, id: i64) -> Result<StoredCall, StoreError> {
        let row = sqlx::query(
            "SELECT id, workspace_id, capability, query, status, chain_length, created_by, \
             created_at, finished_at, deadline, keep_until, done, results, error FROM calls WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(self.pool())
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("call {id}")))?;
        call(&row)
    }

    /// Marks a running call cancelled for the process walking it to stop
    /// (it writes the end); `false` when the call is not running.
    pub async fn cancel_call(&self, id: i64) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE calls SET status = 'cancelled' WHERE id = $1 AND status = 'running'",
        )
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Of `ids`, the calls no longer running (cancelled through another
    /// process).
    pub async fn calls_not_running(&self, ids: &[i64]) -> Result<Vec<i64>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT id FROM calls WHERE id IN ({}) AND status <> 'running'",
            super::placeholders(ids.len())
        );
        let mut query = sqlx::query_scalar(&sql);
        for id in ids {
            query = query.bind(*id);
        }
        Ok(query.fetch_all(self.pool()).await?)
    }

    /// Renews the leases of this process's running calls until `until`,
    /// never past their `longest` after they started.
    pub async fn renew_calls(
        &self,
        ids: &[i64],
        until: i64,
        longest: i64,
    ) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "UPDATE calls SET deadline = CASE WHEN $1 < created_at + $2 THEN $1 \
             ELSE created_at + $2 END WHERE status = 'running' AND id IN ({})",
            super::placeholders_after(2, ids.len())
        );
        let mut query = sqlx::query(&sql).bind(until).bind(longest);
        for id in ids {
            query = query.bind(*id);
        }
        query.execute(self.pool()).await?;
        Ok(())
    }

    /// Ends a running call with its results (or why it has none); a call
    /// cancelled through another process gets its results and end too. A
    /// call that has ended keeps its end.
    pub async fn finish_call(
        &self,
        id: i64,
        status: &CallStatus,
        results: &[CallOutput],
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        let results = serde_json::to_string(results)
            .map_err(|e| StoreError::Corrupt(format!("call {id}: results: {e}")))?;
        sqlx::query(
            "UPDATE calls SET status = $1, results = $2, error = $3, finished_at = $4 \
             WHERE id = $5 AND (status = 'running' OR (status = 'cancelled' AND finished_at IS NULL))",
        )
        .bind(status.name())
        .bind(results)
        .bind(error)
        .bind(self.now_ms())
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Counts a running call's finished subjects (see [`StoredCall::done`]).
    pub async fn set_call_done(&self, id: i64, done: u64) -> Result<(), StoreError> {
        sqlx::query("UPDATE calls SET done = $1 WHERE id = $2")
            .bind(i64::try_from(done).unwrap_or(i64::MAX))
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Writes an attempt of a call as in flight, before the connector is
    /// called. Returns its id.
    pub async fn open_call_attempt(
        &self,
        call_id: i64,
        connector_id: &str,
        actor: &str,
    ) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "INSERT INTO call_attempts (call_id, connector_id, actor, fired_at) \
             VALUES ($1, $2, $3, $4) RETURNING id",
        )
        .bind(call_id)
        .bind(connector_id)
        .bind(actor)
        .bind(self.now_ms())
        .fetch_one(self.pool())
        .await?)
    }

    /// Writes how an attempt of a call ended (and, when it was billed, its
    /// receipt in `charges`).
    pub async fn close_call_attempt(&self, id: i64, end: &AttemptEnd) -> Result<(), StoreError> {
        let now = self.now_ms();
        let outcome = end.outcome.map(FireOutcome::name);
        let mut batch = Batch::default();
        batch.push(
            "UPDATE call_attempts SET finished_at = $1, outcome = $2, result_count = $3, \
             error = $4, retry_after = $5, cost_micros = $6, cost_unit = $7, paid_by = $8, \
             receipt = $10 WHERE id = $9",
            vec![
                now.into(),
                outcome.into(),
                end.result_count.map(i64::from).into(),
                end.error.as_deref().into(),
                end.retry_after.into(),
                end.charge.as_ref().map(|c| c.amount.micros()).into(),
                end.charge.as_ref().map(|c| c.unit.as_str()).into(),
                end.charge.as_ref().map(|c| c.paid_by.name()).into(),
                id.into(),
                super::history::receipt_json(end.receipt.as_ref()).into(),
            ],
        );
        if let Some(charge) = &end.charge {
            batch.push(
                "INSERT INTO charges (workspace_id, at, connector_id, amount_micros, unit, paid_by, \
                 person, outcome, capability, call_id) \
                 SELECT c.workspace_id, $1, a.connector_id, $2, $3, $4, a.actor, $5, c.capability, \
                 c.id FROM call_attempts a JOIN calls c ON c.id = a.call_id WHERE a.id = $6",
                vec![
                    now.into(),
                    charge.amount.micros().into(),
                    charge.unit.as_str().into(),
                    charge.paid_by.name().into(),
                    outcome.unwrap_or("error").into(),
                    id.into(),
                ],
            );
        }
        batch.run(self).await?;
        Ok(())
    }

    /// A call's attempts, in the order they were made.
    pub async fn call_attempts(&self, call_id: i64) -> Result<Vec<CallAttempt>, StoreError> {
        let rows: Vec<AttemptRow> = sqlx::query_as(
            "SELECT id, connector_id, actor, fired_at, finished_at, outcome, result_count, error, \
             retry_after, cost_micros, cost_unit, paid_by, receipt FROM call_attempts \
             WHERE call_id = $1 ORDER BY id",
        )
        .bind(call_id)
        .fetch_all(self.pool())
        .await?;
        rows.into_iter()
            .map(|row| {
                let id = row.id;
                Ok(CallAttempt {
                    connector_id: row.connector_id,
                    actor: row.actor,
                    fired_at: row.fired_at,
                    finished_at: row.finished_at,
                    end: row.end.end().map_err(|what| {
                        StoreError::Corrupt(format!("call attempt {id}: {what}"))
                    })?,
                })
            })
            .collect()
    }
}

/// A `call_attempts` row.
#[derive(sqlx::FromRow)]
struct AttemptRow {
    id: i64,
    connector_id: String,
    actor: String,
    fired_at: i64,
    finished_at: Option<i64>,
    #[sqlx(flatten)]
    end: super::history::AttemptEndRow,
}
