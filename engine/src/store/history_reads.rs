//! Reading `connector_history`: a record's attempts for people, the calls
//! that got no answer, and what chips are made of (attempts and item
//! counts per record and intent).

use std::collections::HashMap;

use model::{Capability, HistoryEntry};
use sqlx::Row;

use super::history::{entry, fold_chip_inputs, CHIP_INPUTS, ENTRY, ENTRY_WITHOUT_RECEIPT};
use super::{Store, StoreError};

impl Store {
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

    /// A workspace's attempts that went out and got no answer (outcome
    /// `unknown`), newest first, at most `limit`.
    pub async fn unanswered(
        &self,
        workspace_id: i64,
        limit: i64,
    ) -> Result<Vec<model::Unanswered>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT e.*, r.name AS record_name, s.id AS record_set_id, s.name AS record_set_name \
             FROM ({ENTRY} WHERE outcome = 'unknown') e \
             JOIN records r ON r.id = e.record_id JOIN record_sets s ON s.id = r.record_set_id \
             WHERE s.workspace_id = $1 ORDER BY e.fired_at DESC, e.id DESC LIMIT $2"
        ))
        .bind(workspace_id)
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|row| {
                Ok(model::Unanswered {
                    attempt: entry(row)?,
                    record_name: row.try_get("record_name")?,
                    record_set_id: row.try_get("record_set_id")?,
                    record_set_name: row.try_get("record_set_name")?,
                })
            })
            .collect()
    }

    /// The history of many records, grouped by record, oldest first,
    /// without the attempts' receipts: what their chips are made of (a
    /// receipt is read and parsed per attempt, and a fired set's chips
    /// never show one; a record's whole history is [`Store::history`]).
    pub async fn chip_history_of(
        &self,
        record_ids: &[i64],
    ) -> Result<HashMap<i64, Vec<HistoryEntry>>, StoreError> {
        let mut out: HashMap<i64, Vec<HistoryEntry>> = HashMap::new();
        for chunk in record_ids.chunks(500) {
            let placeholders = super::placeholders(chunk.len());
            let sql = format!(
                "{ENTRY_WITHOUT_RECEIPT} WHERE record_id IN ({placeholders}) ORDER BY fired_at, id"
            );
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

    /// What a fire's chain reads of one record, in one read: the connector a
    /// person set it to start with, by pack, and the connectors that already
    /// found results, as (intent, connector).
    pub async fn record_facts(
        &self,
        record_id: i64,
    ) -> Result<(HashMap<String, String>, Vec<(String, String)>), StoreError> {
        let rows = sqlx::query(
            "SELECT 'override' AS kind, pack_id AS key, connector_id FROM record_overrides \
             WHERE record_id = $1 \
             UNION ALL \
             SELECT DISTINCT 'found' AS kind, intent AS key, connector_id FROM connector_history \
             WHERE record_id = $1 AND outcome = 'found'",
        )
        .bind(record_id)
        .fetch_all(self.pool())
        .await?;
        let mut overrides = HashMap::new();
        let mut found = Vec::new();
        for row in &rows {
            let kind: String = row.try_get("kind")?;
            let key: String = row.try_get("key")?;
            let connector: String = row.try_get("connector_id")?;
            if kind == "override" {
                overrides.insert(key, connector);
            } else {
                found.push((key, connector));
            }
        }
        Ok((overrides, found))
    }

    /// What one chip shows depends on: the record's attempts for the
    /// intent, oldest first, and how many items it has for it. One read.
    pub async fn chip_inputs(
        &self,
        record_id: i64,
        intent: &Capability,
    ) -> Result<(Vec<HistoryEntry>, u32), StoreError> {
        let rows = sqlx::query(CHIP_INPUTS)
            .bind(record_id)
            .bind(intent.name())
            .fetch_all(self.pool())
            .await?;
        fold_chip_inputs(&rows)
    }

    /// For many records: which connectors found results, by (record, intent).
    pub async fn connectors_that_found_of(
        &self,
        record_ids: &[i64],
    ) -> Result<HashMap<(i64, String), Vec<String>>, StoreError> {
        let mut out: HashMap<(i64, String), Vec<String>> = HashMap::new();
        for chunk in record_ids.chunks(500) {
            let sql = format!(
                "SELECT DISTINCT record_id, intent, connector_id FROM connector_history \
                 WHERE outcome = 'found' AND record_id IN ({})",
                super::placeholders(chunk.len())
            );
            let mut query = sqlx::query(&sql);
            for id in chunk {
                query = query.bind(*id);
            }
            for row in query.fetch_all(self.pool()).await? {
                out.entry((row.try_get("record_id")?, row.try_get("intent")?))
                    .or_default()
                    .push(row.try_get("connector_id")?);
            }
        }
        Ok(out)
    }
}
