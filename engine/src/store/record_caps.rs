//! What one record may cost in a UTC day (see `record_caps` in the
//! migrations): the workspace's caps per unit, read with its settings, and
//! each record's count for the day, taken before a priced call goes out and
//! given back when the provider does not bill it. The count is shared by
//! every process, so two clicks on one record never both slip under a cap.

use model::{Amount, RecordCap, RecordCapStatus};

use super::{Store, StoreError};
use crate::time::utc_day_start;

/// A record's price taken from its count for the day.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordReservation {
    pub record_id: i64,
    pub unit: String,
    pub day: i64,
    pub amount: Amount,
}

/// What taking a price from a record's count did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordTaken {
    Taken(RecordReservation),
    /// The cap has too little left: nothing was taken. `spent` is what the
    /// record's count holds today.
    Refused {
        spent: Amount,
    },
}

#[derive(sqlx::FromRow)]
struct CapRow {
    unit: String,
    daily_limit_micros: i64,
    set_by: String,
    set_at: i64,
}

impl From<CapRow> for RecordCapStatus {
    fn from(row: CapRow) -> Self {
        RecordCapStatus {
            cap: RecordCap {
                unit: row.unit,
                daily_limit: Amount::from_micros(row.daily_limit_micros),
            },
            set_by: row.set_by,
            set_at: row.set_at,
        }
    }
}

impl Store {
    /// The workspace's record caps, by unit.
    pub async fn record_caps(&self, workspace_id: i64) -> Result<Vec<RecordCapStatus>, StoreError> {
        let rows: Vec<CapRow> = sqlx::query_as(
            "SELECT unit, daily_limit_micros, set_by, set_at FROM record_caps \
             WHERE workspace_id = $1 ORDER BY unit",
        )
        .bind(workspace_id)
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().map(RecordCapStatus::from).collect())
    }

    /// Sets (or changes) the cap of `cap.unit`.
    pub async fn set_record_cap(
        &self,
        workspace_id: i64,
        cap: &RecordCap,
        actor: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO record_caps (workspace_id, unit, daily_limit_micros, set_by, set_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (workspace_id, unit) DO UPDATE \
             SET daily_limit_micros = excluded.daily_limit_micros, \
             set_by = excluded.set_by, set_at = excluded.set_at",
        )
        .bind(workspace_id)
        .bind(&cap.unit)
        .bind(cap.daily_limit.micros())
        .bind(actor)
        .bind(self.now_ms())
        .execute(self.pool())
        .await?;
        self.recount_days(workspace_id, &cap.unit).await?;
        self.settings_changed(workspace_id);
        Ok(())
    }

    /// Drops the workspace's record counts in `unit`, so each starts again
    /// from the day's charges: calls made while no cap counted them are
    /// counted when one is set again.
    async fn recount_days(&self, workspace_id: i64, unit: &str) -> Result<(), StoreError> {
        sqlx::query(
            "DELETE FROM record_day_spend WHERE unit = $1 AND record_id IN \
             (SELECT r.id FROM records r JOIN record_sets s ON s.id = r.record_set_id \
             WHERE s.workspace_id = $2)",
        )
        .bind(unit)
        .bind(workspace_id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Removes the cap of `unit`; says whether there was one.
    pub async fn remove_record_cap(
        &self,
        workspace_id: i64,
        unit: &str,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM record_caps WHERE workspace_id = $1 AND unit = $2")
            .bind(workspace_id)
            .bind(unit)
            .execute(self.pool())
            .await?;
        self.recount_days(workspace_id, unit).await?;
        self.settings_changed(workspace_id);
        Ok(done.rows_affected() > 0)
    }

    /// Takes `amount` of `unit` from `record_id`'s count for today, unless
    /// that would pass `limit` and the person did not say to `spend_more`.
    /// The first take of the day (and the first after a cap is set) starts
    /// the count from the day's charges of the record, so a cap set during
    /// the day counts what came before; the record's counts of earlier days
    /// go.
    pub async fn take_record_spend(
        &self,
        workspace_id: i64,
        record_id: i64,
        unit: &str,
        amount: Amount,
        (limit, spend_more): (Amount, bool),
    ) -> Result<RecordTaken, StoreError> {
        let day = utc_day_start(self.now_ms());
        let mut tx = self.exclusive().await?;
        sqlx::query("DELETE FROM record_day_spend WHERE record_id = $1 AND day < $2")
            .bind(record_id)
            .bind(day)
            .execute(&mut *tx)
            .await?;
        // One statement adds or refuses, so concurrent takes of one record
        // queue on its row and each sees the others' sums.
        let ceiling = if spend_more { i64::MAX } else { limit.micros() };
        let taken: Option<i64> = sqlx::query_scalar(
            "INSERT INTO record_day_spend (record_id, unit, day, spent_micros) \
             SELECT $1, $2, $3, COALESCE(CAST(SUM(amount_micros) AS BIGINT), 0) + $4 \
             FROM charges WHERE workspace_id = $6 AND at >= $3 AND record_id = $1 AND unit = $2 \
             ON CONFLICT (record_id, unit, day) DO UPDATE \
             SET spent_micros = record_day_spend.spent_micros + $4 \
             WHERE record_day_spend.spent_micros + $4 <= $5 \
             RETURNING spent_micros",
        )
        .bind(record_id)
        .bind(unit)
        .bind(day)
        .bind(amount.micros())
        .bind(ceiling)
        .bind(workspace_id)
        .fetch_optional(&mut *tx)
        .await?;
        let outcome = match taken {
            // A first take of the day may itself pass the cap (charges
            // from before the cap was set): it is undone and refused.
            Some(after) if after <= ceiling => RecordTaken::Taken(RecordReservation {
                record_id,
                unit: unit.to_owned(),
                day,
                amount,
            }),
            Some(after) => {
                tx.rollback().await?;
                return Ok(RecordTaken::Refused {
                    spent: Amount::from_micros(after - amount.micros()),
                });
            }
            None => {
                let spent: i64 = sqlx::query_scalar(
                    "SELECT spent_micros FROM record_day_spend \
                     WHERE record_id = $1 AND unit = $2 AND day = $3",
                )
                .bind(record_id)
                .bind(unit)
                .bind(day)
                .fetch_one(&mut *tx)
                .await?;
                tx.rollback().await?;
                return Ok(RecordTaken::Refused {
                    spent: Amount::from_micros(spent),
                });
            }
        };
        tx.commit().await?;
        Ok(outcome)
    }

    /// Gives a record's price back: the provider did not bill the call.
    pub async fn give_back_record_spend(&self, r: &RecordReservation) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE record_day_spend SET spent_micros = spent_micros - $1 \
             WHERE record_id = $2 AND unit = $3 AND day = $4",
        )
        .bind(r.amount.micros())
        .bind(r.record_id)
        .bind(&r.unit)
        .bind(r.day)
        .execute(self.pool())
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing;

    const CENT: i64 = 10_000;

    fn usd(cents: i64) -> Amount {
        Amount::from_micros(cents * CENT)
    }

    /// A store with one workspace and one record in it.
    async fn one_record(url: &str) -> (Store, i64, i64) {
        let (store, ws, records) = testing::store_with_records(url, &["Acme"]).await;
        (store, ws, records[0])
    }

    #[tokio::test]
    async fn takes_until_the_cap_then_refuses_unless_told_to_spend_more() {
        for db in testing::all().await {
            let (store, ws, record) = one_record(&db.url).await;
            let take = |unit: &'static str, spend_more: bool| {
                let store = store.clone();
                async move {
                    store
                        .take_record_spend(ws, record, unit, usd(10), (usd(50), spend_more))
                        .await
                        .unwrap()
                }
            };
            for _ in 0..5 {
                assert!(
                    matches!(take("USD", false).await, RecordTaken::Taken(_)),
                    "{}",
                    db.kind()
                );
            }
            let at_cap = RecordTaken::Refused { spent: usd(50) };
            assert_eq!(take("USD", false).await, at_cap, "{}", db.kind());
            // Another unit has its own count.
            assert!(matches!(
                take("credits", false).await,
                RecordTaken::Taken(_)
            ));
            // "Spend more" lets one past the cap...
            let RecordTaken::Taken(more) = take("USD", true).await else {
                panic!("{}: spend_more was refused", db.kind());
            };
            // ...and an unbilled call gives its price back.
            store.give_back_record_spend(&more).await.unwrap();
            assert_eq!(take("USD", false).await, at_cap, "{}", db.kind());
            // A cap set again counts the day from its charges (none were
            // billed here).
            let cap = RecordCap {
                unit: "USD".into(),
                daily_limit: usd(50),
            };
            store.set_record_cap(ws, &cap, "ana").await.unwrap();
            assert!(
                matches!(take("USD", false).await, RecordTaken::Taken(_)),
                "{}",
                db.kind()
            );
        }
    }

    #[tokio::test]
    async fn the_first_take_of_a_day_counts_the_days_charges_and_a_new_day_starts_afresh() {
        for db in testing::all().await {
            let (store, ws, record) = one_record(&db.url).await;
            // Billed before any cap was set: 0.45 USD today.
            sqlx::query(
                "INSERT INTO charges (workspace_id, at, connector_id, amount_micros, unit, \
                 paid_by, person, outcome, capability, record_id) \
                 VALUES ($1, $2, 'serp', $3, 'USD', 'server', 'ana', 'found', 'web.search', $4)",
            )
            .bind(ws)
            .bind(store.now_ms())
            .bind(usd(45).micros())
            .bind(record)
            .execute(store.pool())
            .await
            .unwrap();
            let take = || store.take_record_spend(ws, record, "USD", usd(10), (usd(50), false));
            assert_eq!(
                take().await.unwrap(),
                RecordTaken::Refused { spent: usd(45) },
                "{}",
                db.kind()
            );
            store
                .clock()
                .advance(std::time::Duration::from_secs(86_400));
            assert!(
                matches!(take().await.unwrap(), RecordTaken::Taken(_)),
                "{}",
                db.kind()
            );
            let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM record_day_spend")
                .fetch_one(store.pool())
                .await
                .unwrap();
            assert_eq!(rows, 1, "{}: only today's count is kept", db.kind());
        }
    }
}
