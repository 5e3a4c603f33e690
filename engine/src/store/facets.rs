//! What a set adds up to, for its facets, from what the database keeps
//! per record: its chips per intent and state (migration 0029); per
//! connector the items it found, those nobody triaged, and the records
//! where it found exactly one untriaged item (what the "single candidate"
//! bulk selection takes; migration 0031); and the set's items triaged or
//! not (migration 0028).

use model::ConnectorFacet;

use super::{Store, StoreError};

/// How many of a set's records have their chip for one intent in one
/// state.
#[derive(Debug, sqlx::FromRow)]
pub struct ChipCount {
    pub intent: String,
    /// A [`model::ChipState`]'s name.
    pub state: String,
    pub records: i64,
}

#[derive(sqlx::FromRow)]
struct ConnectorRow {
    connector_id: String,
    items: i64,
    untriaged: i64,
    single: i64,
}

impl Store {
    /// Per intent, how many of set `set_id`'s records have their chip in
    /// each state their attempts and items gave it (found, not_found,
    /// error, rate_limited, firing), read from what the database keeps per
    /// record and intent: an index range, not every record's history. A
    /// chip rate-limited until `now` or before is counted idle. Records
    /// never fired for an intent, or only cancelled, are not counted.
    pub async fn chip_counts(&self, set_id: i64, now: i64) -> Result<Vec<ChipCount>, StoreError> {
        let mut counts: Vec<ChipCount> = sqlx::query_as(
            "SELECT intent, state, CAST(COUNT(*) AS BIGINT) AS records FROM chip_facts \
             WHERE record_set_id = $1 AND state IS NOT NULL GROUP BY intent, state",
        )
        .bind(set_id)
        .fetch_all(self.pool())
        .await?;
        let waited: Vec<(String, i64)> = sqlx::query_as(
            "SELECT intent, CAST(COUNT(*) AS BIGINT) FROM chip_facts \
             WHERE record_set_id = $1 AND state = 'rate_limited' \
             AND (retry_until IS NULL OR retry_until <= $2) GROUP BY intent",
        )
        .bind(set_id)
        .bind(now)
        .fetch_all(self.pool())
        .await?;
        for (intent, over) in waited {
            if let Some(limited) = counts
                .iter_mut()
                .find(|c| c.intent == intent && c.state == "rate_limited")
            {
                limited.records -= over;
            }
            counts.push(ChipCount {
                intent,
                state: "idle".to_owned(),
                records: over,
            });
        }
        Ok(counts)
    }

    /// Per connector that found something in set `set_id`, what it found,
    /// by connector id: added up from what the database keeps per record
    /// and connector (migration 0031).
    pub async fn connector_facets(&self, set_id: i64) -> Result<Vec<ConnectorFacet>, StoreError> {
        let rows: Vec<ConnectorRow> = sqlx::query_as(
            "SELECT connector_id, CAST(SUM(items) AS BIGINT) AS items, \
             CAST(SUM(untriaged) AS BIGINT) AS untriaged, \
             CAST(SUM(CASE WHEN items = 1 AND untriaged = 1 THEN 1 ELSE 0 END) AS BIGINT) AS single \
             FROM connector_finds WHERE record_set_id = $1 AND items > 0 \
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
    /// someone has: added up from what each record keeps (migration 0028).
    pub async fn triage_counts(&self, set_id: i64) -> Result<(i64, i64), StoreError> {
        let (open, decided): (i64, i64) = sqlx::query_as(
            "SELECT CAST(COALESCE(SUM(new_items), 0) AS BIGINT), \
             CAST(COALESCE(SUM(items_count - new_items), 0) AS BIGINT) \
             FROM records WHERE record_set_id = $1",
        )
        .bind(set_id)
        .fetch_one(self.pool())
        .await?;
        Ok((open, decided))
    }
}
