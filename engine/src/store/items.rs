//! The curated layer: items, their evidence, and triage with optimistic
//! concurrency.

use std::collections::HashMap;

use model::{Capability, Evidence, Gone, Item, Revision, TriageState, TriageVerb, TriggeredBy};
use sqlx::any::AnyRow;
use sqlx::{FromRow, Row};

use super::{Backend, Store, StoreError};

/// An item's columns (`i`) and its newest revision's (`rv_`).
macro_rules! item_columns {
    () => {
        "i.id, i.record_id, i.intent, i.url, i.title, i.snippet, i.raw, i.state, i.version, \
         i.triaged_by, i.triaged_at, i.first_seen_at, i.gone_at, i.gone_reason, \
         rv.connector_id AS rv_connector, \
         rv.fire_id AS rv_fire, rv.changed_at AS rv_changed_at, rv.title_before AS rv_title_before, \
         rv.snippet_before AS rv_snippet_before, rv.title AS rv_title, rv.snippet AS rv_snippet"
    };
}

/// Items with their newest revision.
const ITEM: &str = concat!(
    "SELECT ",
    item_columns!(),
    " FROM items i LEFT JOIN item_revisions rv ON rv.id = i.last_revision_id"
);

/// An item's columns as [`ITEM`] reads them.
#[derive(sqlx::FromRow)]
struct ItemRow {
    id: i64,
    record_id: i64,
    intent: String,
    url: String,
    title: String,
    snippet: String,
    raw: String,
    state: String,
    version: i64,
    triaged_by: Option<String>,
    triaged_at: Option<i64>,
    first_seen_at: i64,
    gone_at: Option<i64>,
    gone_reason: Option<String>,
    #[sqlx(flatten)]
    revision: RevisionRow,
}

/// An item's newest revision's columns (`rv_`), all null when it has none.
#[derive(sqlx::FromRow)]
struct RevisionRow {
    rv_connector: Option<String>,
    rv_fire: Option<i64>,
    rv_changed_at: Option<i64>,
    rv_title_before: Option<String>,
    rv_snippet_before: Option<String>,
    rv_title: Option<String>,
    rv_snippet: Option<String>,
}

/// One sighting of an item as `item_evidence` keeps it.
#[derive(sqlx::FromRow)]
struct EvidenceRow {
    item_id: i64,
    connector_id: String,
    fire_id: i64,
    found_at: i64,
    triggered_by: String,
}

fn item(row: &AnyRow) -> Result<Item, StoreError> {
    let row = ItemRow::from_row(row)?;
    let id = row.id;
    let corrupt = |what: &str| StoreError::Corrupt(format!("item {id}: {what}"));
    Ok(Item {
        id,
        record_id: row.record_id,
        intent: row.intent.parse().map_err(|_| corrupt("intent"))?,
        url: row.url,
        title: row.title,
        snippet: row.snippet,
        state: TriageState::from_name(&row.state).ok_or_else(|| corrupt("state"))?,
        version: row.version,
        triaged_by: row.triaged_by,
        triaged_at: row.triaged_at,
        first_seen_at: row.first_seen_at,
        evidence: Vec::new(),
        revision: row.revision.revision().map_err(corrupt)?,
        gone: row.gone_at.map(|at| Gone {
            at,
            reason: row.gone_reason.unwrap_or_default(),
        }),
        raw: serde_json::from_str(&row.raw).unwrap_or(serde_json::Value::Null),
    })
}

impl RevisionRow {
    /// The revision, if the item has one; else which column is missing.
    fn revision(self) -> Result<Option<Revision>, &'static str> {
        let Some(changed_at) = self.rv_changed_at else {
            return Ok(None);
        };
        Ok(Some(Revision {
            connector_id: self.rv_connector.ok_or("revision's connector")?,
            fire_id: self.rv_fire.ok_or("revision's fire")?,
            changed_at,
            title_before: self.rv_title_before.ok_or("revision's title before")?,
            snippet_before: self.rv_snippet_before.ok_or("revision's snippet before")?,
            title: self.rv_title.ok_or("revision's title")?,
            snippet: self.rv_snippet.ok_or("revision's snippet")?,
        }))
    }
}

impl EvidenceRow {
    fn evidence(self) -> Result<Evidence, StoreError> {
        Ok(Evidence {
            triggered_by: TriggeredBy::from_name(&self.triggered_by).ok_or_else(|| {
                StoreError::Corrupt(format!("evidence of item {}: triggered_by", self.item_id))
            })?,
            connector_id: self.connector_id,
            fire_id: self.fire_id,
            found_at: self.found_at,
        })
    }
}

/// Why a triage verb was not applied.
#[derive(Debug, thiserror::Error)]
pub enum TriageError {
    /// Someone acted first: the item is not at the version the verb named.
    #[error("item {} changed since version {expected}: it is now {} at version {}", .current.id, .current.state.name(), .current.version)]
    Conflict { expected: i64, current: Box<Item> },
    #[error("nothing to undo on item {0}")]
    NothingToUndo(i64),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Items joined to their evidence: a row per sighting (one with empty
/// evidence columns for an item without any), marked `part = 'item'`.
pub(super) const ITEM_WITH_EVIDENCE: &str = concat!(
    "SELECT 'item' AS part, ",
    item_columns!(),
    ", i.url_key, e.fire_id AS e_fire, e.connector_id AS e_connector, \
     e.triggered_by AS e_triggered_by, e.found_at AS e_found_at \
     FROM items i LEFT JOIN item_revisions rv ON rv.id = i.last_revision_id \
     LEFT JOIN item_evidence e ON e.item_id = i.id"
);

/// Items with their evidence, and each one's url key, from rows of
/// [`ITEM_WITH_EVIDENCE`], in the order they first appear.
pub(super) fn fold_items<'r>(
    rows: impl IntoIterator<Item = &'r AnyRow>,
) -> Result<Vec<(String, Item)>, StoreError> {
    let mut items: Vec<(String, Item)> = Vec::new();
    for row in rows {
        let id: i64 = row.try_get("id")?;
        if items.last().is_none_or(|(_, last)| last.id != id) {
            items.push((row.try_get("url_key")?, item(row)?));
        }
        let Some(fire_id) = row.try_get::<Option<i64>, _>("e_fire")? else {
            continue;
        };
        let evidence = EvidenceRow {
            item_id: id,
            connector_id: row.try_get("e_connector")?,
            fire_id,
            found_at: row.try_get("e_found_at")?,
            triggered_by: row.try_get("e_triggered_by")?,
        }
        .evidence()?;
        if let Some((_, item)) = items.last_mut() {
            item.evidence.push(evidence);
        }
    }
    Ok(items)
}

impl Store {
    /// Items by id with their evidence, in the order of `ids`: one read.
    pub async fn items_by_id(&self, ids: &[i64]) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            let sql = format!(
                "{ITEM_WITH_EVIDENCE} WHERE i.id IN ({}) ORDER BY i.id, e.found_at, e.id",
                super::placeholders(chunk.len())
            );
            let mut query = sqlx::query(&sql);
            for id in chunk {
                query = query.bind(*id);
            }
            items.extend(fold_items(&query.fetch_all(self.pool()).await?)?);
        }
        let mut by_id: HashMap<i64, Item> = items.into_iter().map(|(_, i)| (i.id, i)).collect();
        Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
    }

    /// A record's items with their evidence, per intent, oldest first.
    pub async fn items(&self, record_id: i64) -> Result<Vec<Item>, StoreError> {
        self.items_where("record_id", &[record_id]).await
    }

    /// The items of many records.
    pub async fn items_of(&self, record_ids: &[i64]) -> Result<Vec<Item>, StoreError> {
        self.items_where("record_id", record_ids).await
    }

    pub async fn item(&self, id: i64) -> Result<Item, StoreError> {
        self.items_where("id", &[id])
            .await?
            .pop()
            .ok_or_else(|| StoreError::NotFound(format!("item {id}")))
    }

    async fn items_where(&self, column: &str, values: &[i64]) -> Result<Vec<Item>, StoreError> {
        debug_assert!(column == "id" || column == "record_id");
        let mut items = Vec::new();
        for chunk in values.chunks(500) {
            let ph = super::placeholders(chunk.len());
            let sql = format!(
                "{ITEM} WHERE i.{column} IN ({ph}) ORDER BY i.record_id, i.intent, i.first_seen_at, i.id"
            );
            let mut query = sqlx::query(&sql);
            for v in chunk {
                query = query.bind(*v);
            }
            for row in query.fetch_all(self.pool()).await? {
                items.push(item(&row)?);
            }
        }
        let ids: Vec<i64> = items.iter().map(|i| i.id).collect();
        let mut evidence = self.evidence_of(&ids).await?;
        for item in &mut items {
            item.evidence = evidence.remove(&item.id).unwrap_or_default();
        }
        Ok(items)
    }

    async fn evidence_of(
        &self,
        item_ids: &[i64],
    ) -> Result<HashMap<i64, Vec<Evidence>>, StoreError> {
        let mut out: HashMap<i64, Vec<Evidence>> = HashMap::new();
        for chunk in item_ids.chunks(500) {
            let ph = super::placeholders(chunk.len());
            let sql = format!(
                "SELECT item_id, fire_id, connector_id, triggered_by, found_at FROM item_evidence \
                 WHERE item_id IN ({ph}) ORDER BY found_at, id"
            );
            let mut query = sqlx::query_as::<_, EvidenceRow>(&sql);
            for id in chunk {
                query = query.bind(*id);
            }
            for row in query.fetch_all(self.pool()).await? {
                out.entry(row.item_id).or_default().push(row.evidence()?);
            }
        }
        Ok(out)
    }

    /// Applies a triage verb if the item is still at `expected_version`.
    pub async fn triage(
        &self,
        item_id: i64,
        verb: TriageVerb,
        expected_version: i64,
        actor: &str,
    ) -> Result<Item, TriageError> {
        self.triage_in_batch(item_id, verb, expected_version, actor, None)
            .await
    }

    /// [`Store::triage`] as part of bulk decision `batch`, which the
    /// item's log row names (so the batch can be undone as one step).
    pub async fn triage_in_batch(
        &self,
        item_id: i64,
        verb: TriageVerb,
        expected_version: i64,
        actor: &str,
        batch: Option<i64>,
    ) -> Result<Item, TriageError> {
        let current = self.item(item_id).await?;
        if current.version != expected_version {
            return Err(TriageError::Conflict {
                expected: expected_version,
                current: Box::new(current),
            });
        }
        let to = match verb.target() {
            Some(state) => state,
            None => {
                // Undo goes back to the state before the last verb not yet undone.
                let last: Option<String> = sqlx::query_scalar(
                    "SELECT from_state FROM triage_log WHERE item_id = $1 AND undone_at IS NULL \
                     ORDER BY id DESC LIMIT 1",
                )
                .bind(item_id)
                .fetch_optional(self.pool())
                .await
                .map_err(StoreError::from)?;
                match last.as_deref().and_then(TriageState::from_name) {
                    Some(state) => state,
                    None => return Err(TriageError::NothingToUndo(item_id)),
                }
            }
        };
        let now = self.now_ms();
        let mut tx = self.pool().begin().await.map_err(StoreError::from)?;
        if self.backend() == Backend::Postgres {
            // The record's row before the item's: every writer of a record's
            // kept numbers takes it first (migration 0032), so a decision and
            // a fire's end on one record wait for each other in one order.
            sqlx::query(
                "SELECT 1 FROM records WHERE id = (SELECT record_id FROM items WHERE id = $1) \
                 FOR NO KEY UPDATE",
            )
            .bind(item_id)
            .execute(&mut *tx)
            .await
            .map_err(StoreError::from)?;
        }
        let updated = sqlx::query(
            "UPDATE items SET state = $1, version = version + 1, triaged_by = $2, triaged_at = $3 \
             WHERE id = $4 AND version = $5",
        )
        .bind(to.name())
        .bind(actor)
        .bind(now)
        .bind(item_id)
        .bind(expected_version)
        .execute(&mut *tx)
        .await
        .map_err(StoreError::from)?;
        if updated.rows_affected() == 0 {
            drop(tx);
            let current = self.item(item_id).await?;
            return Err(TriageError::Conflict {
                expected: expected_version,
                current: Box::new(current),
            });
        }
        if verb == TriageVerb::Undo {
            // The undone verb stays in the log, marked, so a second undo goes further back.
            sqlx::query(
                "UPDATE triage_log SET undone_by = $1, undone_at = $2 WHERE id = \
                 (SELECT MAX(id) FROM triage_log WHERE item_id = $3 AND undone_at IS NULL)",
            )
            .bind(actor)
            .bind(now)
            .bind(item_id)
            .execute(&mut *tx)
            .await
            .map_err(StoreError::from)?;
        } else {
            sqlx::query(
                "INSERT INTO triage_log (item_id, verb, from_state, to_state, actor, at, batch_id) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(item_id)
            .bind(verb.name())
            .bind(current.state.name())
            .bind(to.name())
            .bind(actor)
            .bind(now)
            .bind(batch)
            .execute(&mut *tx)
            .await
            .map_err(StoreError::from)?;
        }
        tx.commit().await.map_err(StoreError::from)?;
        Ok(self.item(item_id).await?)
    }
}

impl Store {
    /// How many items each record has per intent.
    pub async fn item_counts(
        &self,
        record_ids: &[i64],
    ) -> Result<HashMap<(i64, String), u32>, StoreError> {
        let mut out = HashMap::new();
        for chunk in record_ids.chunks(500) {
            let ph = super::placeholders(chunk.len());
            let sql = format!(
                "SELECT record_id, intent, COUNT(*) AS n FROM items WHERE record_id IN ({ph}) \
                 GROUP BY record_id, intent"
            );
            let mut query = sqlx::query_as::<_, (i64, String, i64)>(&sql);
            for id in chunk {
                query = query.bind(*id);
            }
            for (record_id, intent, n) in query.fetch_all(self.pool()).await? {
                out.insert((record_id, intent), u32::try_from(n).unwrap_or(u32::MAX));
            }
        }
        Ok(out)
    }
}

impl Store {
    /// The items of a record and intent whose standing connector
    /// `connector_id`'s full answer in fire `fire_id` calls into question,
    /// not checked since `checked_before`, at most `limit`: those it found
    /// before and left out now, and those marked gone that it returned.
    /// Their ids and addresses.
    pub async fn pages_to_check(
        &self,
        record_id: i64,
        intent: &Capability,
        connector_id: &str,
        fire_id: i64,
        checked_before: i64,
        limit: i64,
    ) -> Result<Vec<(i64, String)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT i.id, i.url FROM items i \
             JOIN item_sightings s ON s.item_id = i.id AND s.connector_id = $1 \
             WHERE i.record_id = $2 AND i.intent = $3 \
             AND (i.checked_at IS NULL OR i.checked_at < $4) \
             AND (CASE WHEN EXISTS (SELECT 1 FROM item_evidence e WHERE e.item_id = i.id \
                  AND e.fire_id = $5 AND e.connector_id = $1) \
                  THEN i.gone_at IS NOT NULL ELSE i.gone_at IS NULL END) \
             ORDER BY i.id LIMIT $6",
        )
        .bind(connector_id)
        .bind(record_id)
        .bind(intent.name())
        .bind(checked_before)
        .bind(fire_id)
        .bind(limit)
        .fetch_all(self.pool())
        .await?)
    }

    /// Keeps what asking an item's page said at `now`; returns the item
    /// when its standing changed (gone, or back).
    pub async fn mark_checked(
        &self,
        item_id: i64,
        checked: &crate::execution::gone_pages::Checked,
        now: i64,
    ) -> Result<Option<Item>, StoreError> {
        use crate::execution::gone_pages::Checked;
        // Every check is dated; only a change of standing is news.
        sqlx::query("UPDATE items SET checked_at = $2 WHERE id = $1")
            .bind(item_id)
            .bind(now)
            .execute(self.pool())
            .await?;
        let change = match checked {
            Checked::Gone(reason) => sqlx::query(
                "UPDATE items SET gone_at = $2, gone_reason = $3 WHERE id = $1 AND gone_at IS NULL",
            )
            .bind(item_id)
            .bind(now)
            .bind(reason.as_str()),
            Checked::There => sqlx::query(
                "UPDATE items SET gone_at = NULL, gone_reason = NULL \
                 WHERE id = $1 AND gone_at IS NOT NULL",
            )
            .bind(item_id),
            Checked::Unsure => return Ok(None),
        };
        if change.execute(self.pool()).await?.rows_affected() == 0 {
            return Ok(None);
        }
        Ok(Some(self.item(item_id).await?))
    }
}
