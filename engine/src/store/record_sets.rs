//! Record sets and their records.

use model::{Field, RecordFilter, RecordSetSummary};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::{SetTallies, Store, StoreError};

/// A record about to be stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewRecord {
    pub name: String,
    /// The other columns, in the file's order.
    pub fields: Vec<Field>,
}

/// A record set being stored, its records added batch by batch, each
/// batch in a transaction of its own: a large import never holds the
/// database's writer (SQLite has one) for longer than a batch. Nobody sees
/// the set until [`NewRecordSet::commit`]; [`NewRecordSet::abandon`], or
/// dropping it before, deletes it with what was added.
pub struct NewRecordSet {
    store: Store,
    id: i64,
    added: usize,
    /// Committed or abandoned: nothing left to clean up when dropped.
    settled: bool,
}

impl NewRecordSet {
    /// Adds records after those added before, in order.
    pub async fn add(&mut self, records: &[NewRecord]) -> Result<(), StoreError> {
        // Many rows per statement: one round trip per chunk, not per record.
        const CHUNK: usize = 200;
        let mut tx = self.store.pool().begin().await?;
        for (c, chunk) in records.chunks(CHUNK).enumerate() {
            let mut sql =
                String::from("INSERT INTO records (record_set_id, position, name, fields) VALUES ");
            for i in 0..chunk.len() {
                let p = i * 4;
                if i > 0 {
                    sql.push_str(", ");
                }
                sql.push_str(&format!("(${}, ${}, ${}, ${})", p + 1, p + 2, p + 3, p + 4));
            }
            let mut query = sqlx::query(&sql);
            for (n, r) in chunk.iter().enumerate() {
                let fields: serde_json::Map<String, serde_json::Value> = r
                    .fields
                    .iter()
                    .map(|f| (f.name.clone(), serde_json::Value::String(f.value.clone())))
                    .collect();
                // Dense from 0: a record's position is its place in the set.
                let position = i64::try_from(self.added + c * CHUNK + n).unwrap_or(i64::MAX);
                query = query
                    .bind(self.id)
                    .bind(position)
                    .bind(r.name.clone())
                    .bind(serde_json::Value::Object(fields).to_string());
            }
            query.execute(&mut *tx).await?;
        }
        sqlx::query("UPDATE record_sets SET record_count = record_count + $1 WHERE id = $2")
            .bind(i64::try_from(records.len()).unwrap_or(i64::MAX))
            .bind(self.id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        // Counted once written: a batch that failed leaves no gap.
        self.added += records.len();
        Ok(())
    }

    /// Makes the set and its records seen; returns its id.
    pub async fn commit(mut self) -> Result<i64, StoreError> {
        let done = sqlx::query("UPDATE record_sets SET importing_since = NULL WHERE id = $1")
            .bind(self.id)
            .execute(self.store.pool())
            .await?;
        self.settled = true;
        if done.rows_affected() == 0 {
            // Swept as abandoned meanwhile (an import of over an hour).
            return Err(StoreError::NotFound(format!("record set {}", self.id)));
        }
        Ok(self.id)
    }

    /// Deletes the set and every record added to it.
    pub async fn abandon(mut self) -> Result<(), StoreError> {
        self.settled = true;
        self.store.forget_import(self.id).await
    }
}

impl Drop for NewRecordSet {
    /// An import whose caller went away (a request cancelled mid-file)
    /// deletes what it wrote; if no runtime is left to do it, the sweep of
    /// abandoned imports does ([`Store::forget_abandoned_imports`]).
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (store, id) = (self.store.clone(), self.id);
            runtime.spawn(async move {
                if let Err(e) = store.forget_import(id).await {
                    tracing::warn!(record_set = id, error = %e, "Deleting an abandoned import failed; the sweep will.");
                }
            });
        }
    }
}

/// A stored record, without its chips.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredRecord {
    pub id: i64,
    pub record_set_id: i64,
    pub name: String,
    pub fields: Vec<Field>,
}

impl StoredRecord {
    /// The fields as a map, for query templates and connectors.
    pub fn field_map(&self) -> std::collections::BTreeMap<String, String> {
        self.fields
            .iter()
            .map(|f| (f.name.clone(), f.value.clone()))
            .collect()
    }
}

const SUMMARY: &str = "SELECT s.id, s.name, s.bundle_id, s.is_demo, s.created_at, s.workspace_id, \
     s.record_count AS records FROM record_sets s WHERE s.importing_since IS NULL";

fn summary(row: &AnyRow) -> Result<RecordSetSummary, StoreError> {
    Ok(RecordSetSummary {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        bundle_id: row.try_get("bundle_id")?,
        records: row.try_get("records")?,
        is_demo: row.try_get::<i64, _>("is_demo")? != 0,
        created_at: row.try_get("created_at")?,
        workspace_id: row.try_get("workspace_id")?,
    })
}

fn record(row: &AnyRow) -> Result<StoredRecord, StoreError> {
    let fields: String = row.try_get("fields")?;
    let id: i64 = row.try_get("id")?;
    let fields: Vec<Field> =
        serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&fields)
            .map_err(|e| StoreError::Corrupt(format!("fields of record {id}: {e}")))?
            .into_iter()
            .map(|(name, value)| Field {
                name,
                value: value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned),
            })
            .collect();
    Ok(StoredRecord {
        id,
        record_set_id: row.try_get("record_set_id")?,
        name: row.try_get("name")?,
        fields,
    })
}

/// The most record ids one look-up takes.
pub const MAX_IDS: usize = 500;

impl Store {
    /// A workspace's record sets, newest first, with their record counts.
    pub async fn list_record_sets(
        &self,
        workspace_id: i64,
    ) -> Result<Vec<RecordSetSummary>, StoreError> {
        let rows = sqlx::query(&format!(
            "{SUMMARY} AND s.workspace_id = $1 ORDER BY s.created_at DESC, s.id DESC"
        ))
        .bind(workspace_id)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(summary).collect()
    }

    pub async fn record_set(&self, id: i64) -> Result<RecordSetSummary, StoreError> {
        let row = sqlx::query(&format!("{SUMMARY} AND s.id = $1"))
            .bind(id)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("record set {id}")))?;
        summary(&row)
    }

    /// Stores a record set of a workspace and all its records in one transaction.
    pub async fn create_record_set(
        &self,
        workspace_id: i64,
        name: &str,
        bundle_id: &str,
        is_demo: bool,
        records: &[NewRecord],
    ) -> Result<i64, StoreError> {
        let mut writing = self
            .begin_record_set(workspace_id, name, bundle_id, is_demo)
            .await?;
        writing.add(records).await?;
        writing.commit().await
    }

    /// Starts storing a record set whose records come in batches
    /// ([`NewRecordSet::add`]); nobody sees it until
    /// [`NewRecordSet::commit`], and dropped before, it is deleted.
    pub async fn begin_record_set(
        &self,
        workspace_id: i64,
        name: &str,
        bundle_id: &str,
        is_demo: bool,
    ) -> Result<NewRecordSet, StoreError> {
        let now = self.now_ms();
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO record_sets (workspace_id, name, bundle_id, is_demo, created_at, importing_since) \
             VALUES ($1, $2, $3, $4, $5, $5) RETURNING id",
        )
        .bind(workspace_id)
        .bind(name)
        .bind(bundle_id)
        .bind(i64::from(is_demo))
        .bind(now)
        .fetch_one(self.pool())
        .await?;
        Ok(NewRecordSet {
            store: self.clone(),
            id,
            added: 0,
            settled: false,
        })
    }

    /// Deletes record set `id` if it is still being imported.
    async fn forget_import(&self, id: i64) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM record_sets WHERE id = $1 AND importing_since IS NOT NULL")
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Deletes the imports that began before `before_ms` and never ended
    /// (their process died mid-file); how many.
    pub async fn forget_abandoned_imports(&self, before_ms: i64) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM record_sets WHERE importing_since < $1")
            .bind(before_ms)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected())
    }
    /// Deletes a record set with everything that hangs off it.
    pub async fn delete_record_set(&self, id: i64) -> Result<(), StoreError> {
        let done = sqlx::query("DELETE FROM record_sets WHERE id = $1")
            .bind(id)
            .execute(self.pool())
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("record set {id}")));
        }
        Ok(())
    }

    /// A page of a record set's records, in file order.
    pub async fn records(
        &self,
        record_set_id: i64,
        offset: i64,
        limit: i64,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, record_set_id, name, fields FROM records \
             WHERE record_set_id = $1 ORDER BY position, id LIMIT $2 OFFSET $3",
        )
        .bind(record_set_id)
        .bind(limit)
        .bind(offset)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(record).collect()
    }

    /// A page of the records matching a filter and a name search, and how
    /// many match in all. `changed_since` is when the person's previous
    /// visit ended, for [`RecordFilter::Changed`] (none: nothing changed).
    pub async fn records_matching(
        &self,
        record_set_id: i64,
        filter: RecordFilter,
        changed_since: Option<i64>,
        search: &str,
        offset: i64,
        limit: i64,
    ) -> Result<(Vec<StoredRecord>, i64), StoreError> {
        if filter == RecordFilter::All && search.trim().is_empty() {
            return self.records_in_order(record_set_id, offset, limit).await;
        }
        let changed;
        let condition = match filter {
            RecordFilter::All => "",
            RecordFilter::Changed => {
                // A number this code computed, never text from a request.
                changed = format!(
                    " AND r.last_found_at > {}",
                    changed_since.unwrap_or(i64::MAX)
                );
                changed.as_str()
            }
            // Kept on each record (migration 0028), read through an index
            // of the records that match; so is the newest item above.
            RecordFilter::Unreviewed => " AND r.new_items > 0",
            RecordFilter::NothingFound => " AND r.items_count = 0 AND r.not_found_attempts > 0",
            // An intent whose attempts failed and found nothing, as each
            // record keeps its chips that do (migration 0033).
            RecordFilter::Errors => " AND r.failing_chips > 0",
        };
        let search = self.name_search(record_set_id, search).await?;
        let page = if search.text().is_some() {
            "LIMIT $3 OFFSET $4"
        } else {
            "LIMIT $2 OFFSET $3"
        };
        let from = format!("FROM records r WHERE {}{condition}", search.condition());
        let count_sql = format!("SELECT COUNT(*) {from}");
        let mut count = sqlx::query_scalar(&count_sql).bind(record_set_id);
        let page_sql = format!(
            "SELECT r.id, r.record_set_id, r.name, r.fields {from} ORDER BY r.position, r.id {page}"
        );
        let mut rows = sqlx::query(&page_sql).bind(record_set_id);
        if let Some(text) = search.text() {
            count = count.bind(text);
            rows = rows.bind(text);
        }
        // A filter's count without a search is kept for the whole set.
        let kept = search.text().is_none() && SetTallies::counts(filter);
        let total: i64 = if kept {
            let tallies = self.set_tallies(record_set_id).await?;
            tallies.records_in(filter).unwrap_or_default()
        } else {
            count.fetch_one(self.pool()).await?
        };
        let rows = rows.bind(limit).bind(offset).fetch_all(self.pool()).await?;
        Ok((rows.iter().map(record).collect::<Result<_, _>>()?, total))
    }

    /// Every record of a set in order, a page of them and how many: read
    /// by position (dense from 0, so the page starts where its offset says)
    /// and the count kept on the set, in the same time for any set's size.
    async fn records_in_order(
        &self,
        record_set_id: i64,
        offset: i64,
        limit: i64,
    ) -> Result<(Vec<StoredRecord>, i64), StoreError> {
        let total: i64 = sqlx::query_scalar("SELECT record_count FROM record_sets WHERE id = $1")
            .bind(record_set_id)
            .fetch_optional(self.pool())
            .await?
            .unwrap_or(0);
        let rows = sqlx::query(
            "SELECT id, record_set_id, name, fields FROM records \
             WHERE record_set_id = $1 AND position >= $2 ORDER BY position, id LIMIT $3",
        )
        .bind(record_set_id)
        .bind(offset)
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        Ok((rows.iter().map(record).collect::<Result<_, _>>()?, total))
    }

    pub async fn record(&self, id: i64) -> Result<StoredRecord, StoreError> {
        let row = sqlx::query("SELECT id, record_set_id, name, fields FROM records WHERE id = $1")
            .bind(id)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("record {id}")))?;
        record(&row)
    }

    /// A record with the summary of its set, in one read.
    pub async fn record_and_set(
        &self,
        id: i64,
    ) -> Result<(StoredRecord, RecordSetSummary), StoreError> {
        let row = sqlx::query(
            "SELECT r.id, r.record_set_id, r.name, r.fields, s.name AS set_name, s.bundle_id, \
             s.is_demo, s.created_at, s.workspace_id, s.record_count AS records \
             FROM records r JOIN record_sets s ON s.id = r.record_set_id \
             WHERE r.id = $1 AND s.importing_since IS NULL",
        )
        .bind(id)
        .fetch_optional(self.pool())
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("record {id}")))?;
        let record = record(&row)?;
        let set = RecordSetSummary {
            id: record.record_set_id,
            name: row.try_get("set_name")?,
            bundle_id: row.try_get("bundle_id")?,
            records: row.try_get("records")?,
            is_demo: row.try_get::<i64, _>("is_demo")? != 0,
            created_at: row.try_get("created_at")?,
            workspace_id: row.try_get("workspace_id")?,
        };
        Ok((record, set))
    }

    /// Many records by id (those that exist).
    pub async fn records_by_id(
        &self,
        ids: &[i64],
    ) -> Result<std::collections::HashMap<i64, StoredRecord>, StoreError> {
        let mut out = std::collections::HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(MAX_IDS) {
            let sql = format!(
                "SELECT id, record_set_id, name, fields FROM records WHERE id IN ({})",
                super::placeholders(chunk.len())
            );
            let mut query = sqlx::query(&sql);
            for id in chunk {
                query = query.bind(*id);
            }
            for row in query.fetch_all(self.pool()).await? {
                let r = record(&row)?;
                out.insert(r.id, r);
            }
        }
        Ok(out)
    }

    /// Which of `ids` are records of the set (at most `MAX_IDS` are asked).
    pub async fn records_of_set(&self, set_id: i64, ids: &[i64]) -> Result<Vec<i64>, StoreError> {
        let ids = &ids[..ids.len().min(MAX_IDS)];
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT id FROM records WHERE record_set_id = $1 AND id IN ({}) ORDER BY id",
            super::placeholders_after(1, ids.len())
        );
        let mut query = sqlx::query_scalar::<_, i64>(&sql).bind(set_id);
        for id in ids {
            query = query.bind(*id);
        }
        Ok(query.fetch_all(self.pool()).await?)
    }
}
