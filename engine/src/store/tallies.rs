//! What a whole set adds up to, kept per set (migration 0033): the records
//! each filter shows, chips per intent and state, each connector's finds,
//! items triaged or not. Triggers keep them as what each record keeps
//! changes: on SQLite (one writer at a time) they add to `set_tallies`
//! itself; on PostgreSQL they append to `set_tally_changes` (migration
//! 0034), which [`Store::fold_set_tallies`] folds into `set_tallies`, so
//! the fires of one set never wait for each other on its few rows. A
//! reading adds what is folded and what is not: it costs the same for any
//! set's size.

use std::collections::HashMap;
use std::time::Duration;

use model::{ConnectorFacet, RecordFilter};
use tokio_util::sync::CancellationToken;

use super::{Backend, Store, StoreError};

/// How often a serving process folds the changes into the tallies
/// (PostgreSQL): a reading adds up at most what the set's fires changed
/// since.
pub const FOLD_EVERY: Duration = Duration::from_secs(1);

/// How many of a set's records have their chip for one intent in one
/// state.
#[derive(Debug, PartialEq, Eq)]
pub struct ChipCount {
    pub intent: String,
    /// A [`model::ChipState`]'s name.
    pub state: String,
    pub records: i64,
}

/// A set's tallies as read at one moment, by (tally, subject).
#[derive(Debug, Default)]
pub struct SetTallies(HashMap<(String, String), i64>);

impl SetTallies {
    fn get(&self, tally: &str, subject: &str) -> i64 {
        self.0
            .get(&(tally.to_owned(), subject.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    /// The tally of the records a filter shows, for the filters counted
    /// per set (not every record, the set's own count, nor "changed",
    /// which depends on who asks).
    fn tally_of(filter: RecordFilter) -> Option<&'static str> {
        match filter {
            RecordFilter::Unreviewed => Some("unreviewed"),
            RecordFilter::NothingFound => Some("nothing_found"),
            RecordFilter::Errors => Some("errors"),
            RecordFilter::All | RecordFilter::Changed => None,
        }
    }

    /// Whether the tallies count the records a filter shows.
    pub fn counts(filter: RecordFilter) -> bool {
        Self::tally_of(filter).is_some()
    }

    /// How many records a filter shows, for the filters counted per set.
    pub fn records_in(&self, filter: RecordFilter) -> Option<i64> {
        Self::tally_of(filter).map(|tally| self.get(tally, ""))
    }

    /// How many of the set's items nobody has triaged, and how many
    /// someone has.
    pub fn triage_counts(&self) -> (i64, i64) {
        let open = self.get("new_items", "");
        (open, self.get("items", "") - open)
    }

    /// Per intent and state, the records whose chip is in it (those never
    /// fired for the intent, or only cancelled, are not counted).
    pub(super) fn chip_counts(&self) -> Vec<ChipCount> {
        let mut counts: Vec<ChipCount> = self
            .0
            .iter()
            .filter_map(|((tally, intent), n)| {
                let state = tally.strip_prefix("chip:")?;
                (*n != 0).then(|| ChipCount {
                    intent: intent.clone(),
                    state: state.to_owned(),
                    records: *n,
                })
            })
            .collect();
        counts.sort_by(|a, b| (&a.intent, &a.state).cmp(&(&b.intent, &b.state)));
        counts
    }

    /// Per connector that found something, what it found, by connector id.
    pub fn connector_facets(&self) -> Vec<ConnectorFacet> {
        let mut facets: Vec<ConnectorFacet> = self
            .0
            .iter()
            .filter(|((tally, _), n)| tally == "finds" && **n > 0)
            .map(|((_, connector), items)| ConnectorFacet {
                connector_id: connector.clone(),
                items: *items,
                untriaged: self.get("untriaged", connector),
                single: self.get("single", connector),
            })
            .collect();
        facets.sort_by(|a, b| a.connector_id.cmp(&b.connector_id));
        facets
    }
}

impl Store {
    /// Set `set_id`'s tallies now: what was folded and what changed since.
    pub async fn set_tallies(&self, set_id: i64) -> Result<SetTallies, StoreError> {
        let sql = match self.backend() {
            Backend::Sqlite => "SELECT tally, subject, n FROM set_tallies WHERE record_set_id = $1",
            Backend::Postgres => {
                "SELECT tally, subject, CAST(SUM(n) AS BIGINT) FROM ( \
                 SELECT tally, subject, n FROM set_tallies WHERE record_set_id = $1 \
                 UNION ALL SELECT tally, subject, delta FROM set_tally_changes \
                 WHERE record_set_id = $1) t GROUP BY tally, subject"
            }
        };
        let rows: Vec<(String, String, i64)> = sqlx::query_as(sql)
            .bind(set_id)
            .fetch_all(self.pool())
            .await?;
        Ok(SetTallies(
            rows.into_iter().map(|(t, s, n)| ((t, s), n)).collect(),
        ))
    }

    /// Per intent, how many of set `set_id`'s records have their chip in
    /// each state their attempts and items gave it (found, not_found,
    /// error, rate_limited, firing, idle), from its tallies: a chip
    /// rate-limited until `now` or before is counted idle (read from the
    /// index of rate-limited chips, by when their wait ends). Records never
    /// fired for an intent, or only cancelled, are not counted.
    pub async fn chip_counts(
        &self,
        set_id: i64,
        tallies: &SetTallies,
        now: i64,
    ) -> Result<Vec<ChipCount>, StoreError> {
        let mut counts = tallies.chip_counts();
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

    /// Folds every change appended so far into the tallies, in one
    /// statement (the changes of a set deleted meanwhile are dropped).
    /// Returns how many changes it folded; none on SQLite, whose triggers
    /// keep the tallies themselves.
    pub async fn fold_set_tallies(&self) -> Result<u64, StoreError> {
        if self.backend() == Backend::Sqlite {
            return Ok(0);
        }
        // Nothing changed: no write.
        let any: Option<i64> = sqlx::query_scalar("SELECT id FROM set_tally_changes LIMIT 1")
            .fetch_optional(self.pool())
            .await?;
        if any.is_none() {
            return Ok(0);
        }
        // The changes it removes are the ones it adds, whoever appends or
        // folds at the same time; in a fixed order, so two processes
        // folding at once take the tallies' rows in the same order.
        let changes: i64 = sqlx::query_scalar(
            "WITH moved AS (DELETE FROM set_tally_changes \
             RETURNING record_set_id, tally, subject, delta), \
             summed AS (SELECT record_set_id, tally, subject, SUM(delta) AS d, \
             COUNT(*) AS changes FROM moved GROUP BY record_set_id, tally, subject), \
             kept AS (INSERT INTO set_tallies AS t (record_set_id, tally, subject, n) \
             SELECT record_set_id, tally, subject, d FROM summed m \
             WHERE EXISTS (SELECT 1 FROM record_sets s WHERE s.id = m.record_set_id) \
             ORDER BY record_set_id, tally, subject \
             ON CONFLICT (record_set_id, tally, subject) DO UPDATE SET n = t.n + excluded.n) \
             SELECT CAST(COALESCE(SUM(changes), 0) AS BIGINT) FROM summed",
        )
        .fetch_one(self.pool())
        .await?;
        Ok(u64::try_from(changes).unwrap_or(0))
    }

    /// What a serving process runs until `stop`: folds the tallies' changes
    /// every [`FOLD_EVERY`] (returns at once on SQLite). A failed fold is
    /// logged and tried again at the next turn (a reading adds what was
    /// not folded).
    pub async fn keep_tallies_folded(&self, stop: CancellationToken) {
        if self.backend() == Backend::Sqlite {
            return;
        }
        let fold = || async { self.fold_set_tallies().await.map(|_| ()) };
        let failed = "Cannot fold the sets' tallies; trying again.";
        super::upkeep::every(FOLD_EVERY, &stop, failed, fold).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing;

    /// Changes waiting to be folded, and the tallies' rows.
    async fn rows(store: &Store) -> (i64, i64) {
        let count = |sql: &'static str| async move {
            sqlx::query_scalar::<_, i64>(sql)
                .fetch_one(store.pool())
                .await
                .expect(sql)
        };
        (
            count("SELECT COUNT(*) FROM set_tally_changes").await,
            count("SELECT COUNT(*) FROM set_tallies").await,
        )
    }

    /// What a serving process runs: a record's change is folded into its
    /// set's tallies without anyone asking, reads the same before and
    /// after, and the folding stops when told.
    #[tokio::test]
    async fn the_tallies_fold_by_themselves_until_stopped() {
        // SQLite's triggers keep the tallies themselves (store::kept_counts).
        if let Some(db) = testing::postgres().await {
            let (store, _, records) = testing::store_with_records(&db.url, &["Acme"]).await;
            let set: i64 = sqlx::query_scalar("SELECT record_set_id FROM records WHERE id = $1")
                .bind(records[0])
                .fetch_one(store.pool())
                .await
                .expect("the record's set");
            assert_eq!(
                store.fold_set_tallies().await.expect("a fold"),
                0,
                "nothing yet"
            );
            sqlx::query("UPDATE records SET items_count = 2, new_items = 1 WHERE id = $1")
                .bind(records[0])
                .execute(store.pool())
                .await
                .expect("a record's counts");
            let before = store.set_tallies(set).await.expect("tallies");
            assert_eq!(before.triage_counts(), (1, 1), "{}", db.kind());
            assert_eq!(before.records_in(RecordFilter::Unreviewed), Some(1));
            assert_eq!(rows(&store).await, (3, 0), "{}: appended", db.kind());

            let stop = CancellationToken::new();
            let running = tokio::spawn({
                let (store, stop) = (store.clone(), stop.clone());
                async move { store.keep_tallies_folded(stop).await }
            });
            let deadline = tokio::time::Instant::now() + 10 * FOLD_EVERY;
            while rows(&store).await != (0, 3) {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "{}: not folded: {:?}",
                    db.kind(),
                    rows(&store).await
                );
                tokio::time::sleep(FOLD_EVERY / 5).await;
            }
            let after = store.set_tallies(set).await.expect("tallies");
            assert_eq!(after.triage_counts(), (1, 1), "{}", db.kind());
            assert_eq!(after.records_in(RecordFilter::Unreviewed), Some(1));
            stop.cancel();
            tokio::time::timeout(2 * FOLD_EVERY, running)
                .await
                .expect("the folding stops when told")
                .expect("the task");
        }
    }
}
