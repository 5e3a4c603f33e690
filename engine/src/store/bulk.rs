//! Decisions in bulk (see `triage_batches` in the migrations): the items a
//! selection takes, a batch each decision is recorded under (every item's
//! own log row names it), and what undoing the batch may take back: the
//! items whose last decision is still the batch's.

use model::{BulkLine, BulkSelection, MAX_BULK};

use super::{Store, StoreError};

#[derive(sqlx::FromRow)]
struct LineRow {
    item_id: i64,
    version: i64,
    record_id: i64,
    record_name: String,
    title: String,
    url: String,
}

impl From<LineRow> for BulkLine {
    fn from(row: LineRow) -> Self {
        BulkLine {
            item_id: row.item_id,
            version: row.version,
            record_id: row.record_id,
            record_name: row.record_name,
            title: row.title,
            url: row.url,
        }
    }
}

const LINE: &str = "SELECT i.id AS item_id, i.version, r.id AS record_id, r.name AS record_name, \
     i.title, i.url FROM items i JOIN records r ON r.id = i.record_id \
     WHERE r.record_set_id = $1 AND i.state = 'new'";

impl Store {
    /// The untriaged items of set `set_id` that `selection` takes, in the
    /// set's order, at most [`MAX_BULK`].
    pub async fn bulk_candidates(
        &self,
        set_id: i64,
        selection: &BulkSelection,
    ) -> Result<Vec<BulkLine>, StoreError> {
        let limit = i64::try_from(MAX_BULK).unwrap_or(i64::MAX);
        let rows: Vec<LineRow> = match selection {
            BulkSelection::SingleFrom { connector_id } => {
                sqlx::query_as(&format!(
                    "{LINE} AND EXISTS (SELECT 1 FROM item_evidence e \
                     WHERE e.item_id = i.id AND e.connector_id = $2) \
                     AND (SELECT COUNT(DISTINCT e2.item_id) FROM item_evidence e2 \
                     JOIN items j ON j.id = e2.item_id \
                     WHERE j.record_id = i.record_id AND e2.connector_id = $2) = 1 \
                     ORDER BY r.position, i.id LIMIT $3"
                ))
                .bind(set_id)
                .bind(connector_id)
                .bind(limit)
                .fetch_all(self.pool())
                .await?
            }
            BulkSelection::FoundByTwoOrMore => {
                sqlx::query_as(&format!(
                    "{LINE} AND (SELECT COUNT(DISTINCT e.connector_id) FROM item_evidence e \
                     WHERE e.item_id = i.id) >= 2 ORDER BY r.position, i.id LIMIT $2"
                ))
                .bind(set_id)
                .bind(limit)
                .fetch_all(self.pool())
                .await?
            }
        };
        Ok(rows.into_iter().map(BulkLine::from).collect())
    }

    /// Which of `item_ids` are items of set `set_id`.
    pub async fn items_in_set(
        &self,
        set_id: i64,
        item_ids: &[i64],
    ) -> Result<std::collections::HashSet<i64>, StoreError> {
        let mut found = std::collections::HashSet::new();
        for chunk in item_ids.chunks(500) {
            let sql = format!(
                "SELECT i.id FROM items i JOIN records r ON r.id = i.record_id \
                 WHERE r.record_set_id = $1 AND i.id IN ({})",
                super::placeholders_after(1, chunk.len())
            );
            let mut query = sqlx::query_scalar::<_, i64>(&sql).bind(set_id);
            for id in chunk {
                query = query.bind(*id);
            }
            found.extend(query.fetch_all(self.pool()).await?);
        }
        Ok(found)
    }

    /// Records a bulk decision about to be made; its id.
    pub async fn open_batch(
        &self,
        set_id: i64,
        verb: &str,
        selection: &str,
        actor: &str,
    ) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "INSERT INTO triage_batches (record_set_id, verb, selection, actor, at) \
             VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .bind(set_id)
        .bind(verb)
        .bind(selection)
        .bind(actor)
        .bind(self.now_ms())
        .fetch_one(self.pool())
        .await?)
    }

    /// The record set a bulk decision was made in, if there is one by that id.
    pub async fn batch_set(&self, batch_id: i64) -> Result<Option<i64>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT record_set_id FROM triage_batches WHERE id = $1")
                .bind(batch_id)
                .fetch_optional(self.pool())
                .await?,
        )
    }

    /// The items batch `batch_id` decided on and has not taken back, each
    /// with whether its last decision is still the batch's (an undo may
    /// take it back) or someone decided since.
    pub async fn batch_items(&self, batch_id: i64) -> Result<Vec<(i64, bool)>, StoreError> {
        let rows: Vec<(i64, i64)> = sqlx::query_as(
            "SELECT l.item_id, CAST(CASE WHEN l.id = (SELECT MAX(m.id) FROM triage_log m \
             WHERE m.item_id = l.item_id AND m.undone_at IS NULL) THEN 1 ELSE 0 END AS BIGINT) \
             FROM triage_log l WHERE l.batch_id = $1 AND l.undone_at IS NULL ORDER BY l.id",
        )
        .bind(batch_id)
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().map(|(id, last)| (id, last == 1)).collect())
    }

    /// Marks a bulk decision taken back, unless it already is; says
    /// whether this call did (of two undos at once, one goes ahead).
    pub async fn claim_batch_undo(&self, batch_id: i64, actor: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE triage_batches SET undone_by = $1, undone_at = $2 \
             WHERE id = $3 AND undone_at IS NULL",
        )
        .bind(actor)
        .bind(self.now_ms())
        .bind(batch_id)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }
}
