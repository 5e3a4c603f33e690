//! What a set's items add up to, for its facets: per connector the items it
//! found, those nobody triaged, and the records where it found exactly one
//! untriaged item (what the "single candidate" bulk selection takes); and
//! the set's items triaged or not.

use model::ConnectorFacet;

use super::{Store, StoreError};

#[derive(sqlx::FromRow)]
struct ConnectorRow {
    connector_id: String,
    items: i64,
    untriaged: i64,
    single: i64,
}

impl Store {
    /// Per connector that found something in set `set_id`, what it found,
    /// by connector id.
    pub async fn connector_facets(&self, set_id: i64) -> Result<Vec<ConnectorFacet>, StoreError> {
        // Per connector and record: its distinct items, and whether one of
        // them is untriaged; then per connector.
        let rows: Vec<ConnectorRow> = sqlx::query_as(
            "SELECT connector_id, CAST(SUM(n) AS BIGINT) AS items, \
             CAST(SUM(open) AS BIGINT) AS untriaged, \
             CAST(SUM(CASE WHEN n = 1 AND open = 1 THEN 1 ELSE 0 END) AS BIGINT) AS single \
             FROM (SELECT e.connector_id, i.record_id, COUNT(DISTINCT i.id) AS n, \
                   COUNT(DISTINCT CASE WHEN i.state = 'new' THEN i.id END) AS open \
                   FROM item_evidence e JOIN items i ON i.id = e.item_id \
                   JOIN records r ON r.id = i.record_id \
                   WHERE r.record_set_id = $1 GROUP BY e.connector_id, i.record_id) per_record \
             GROUP BY connector_id ORDER BY connector_id",
        )
        .bind(set_id)
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| ConnectorFacet {
                connector_id: r.connector_id,
                items: r.items,
                untriaged: r.untriaged,
                single: r.single,
            })
            .collect())
    }

    /// How many of set `set_id`'s items nobody has triaged, and how many
    /// someone has.
    pub async fn triage_counts(&self, set_id: i64) -> Result<(i64, i64), StoreError> {
        let (open, decided): (i64, i64) = sqlx::query_as(
            "SELECT CAST(COALESCE(SUM(CASE WHEN i.state = 'new' THEN 1 ELSE 0 END), 0) AS BIGINT), \
             CAST(COALESCE(SUM(CASE WHEN i.state = 'new' THEN 0 ELSE 1 END), 0) AS BIGINT) \
             FROM items i JOIN records r ON r.id = i.record_id WHERE r.record_set_id = $1",
        )
        .bind(set_id)
        .fetch_one(self.pool())
        .await?;
        Ok((open, decided))
    }
}
