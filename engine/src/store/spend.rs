//! What each workspace spent this month per connector and unit, and the
//! budgets that cap it. A priced call takes its cost from the count before
//! it goes out, in one transaction that refuses when a budget would be
//! exceeded; the cost is given back when the provider does not bill the
//! answer. Every process shares the count, so no number of processes and
//! concurrent fan-outs spends past a budget.

use std::collections::HashMap;

use model::{Amount, Budget, BudgetStatus, PaidBy, SpentToday};
use sqlx::{Any, Row, Transaction};

use super::{Backend, Store, StoreError};
use crate::time::utc_month;

/// The `connector_id` of budgets and counts that cover every connector
/// priced in their unit.
const EVERY_CONNECTOR: &str = "*";

/// Far above any budget (a trillion units, in millionths): "no limit".
const UNLIMITED: i64 = 1_000_000_000_000_000_000;

/// A budget read with its spend for a month.
#[derive(sqlx::FromRow)]
struct BudgetRow {
    connector_id: String,
    unit: String,
    monthly_limit_micros: i64,
    spent: i64,
    set_by: String,
    set_at: i64,
}

impl BudgetRow {
    fn status(self, month: &str) -> BudgetStatus {
        BudgetStatus {
            budget: Budget {
                connector_id: (self.connector_id != EVERY_CONNECTOR).then_some(self.connector_id),
                unit: self.unit,
                monthly_limit: Amount::from_micros(self.monthly_limit_micros),
            },
            month: month.to_owned(),
            spent: Amount::from_micros(self.spent),
            set_by: self.set_by,
            set_at: self.set_at,
        }
    }
}

/// A cost taken from a workspace's count for one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reservation {
    pub workspace_id: i64,
    pub connector_id: String,
    pub unit: String,
    pub month: String,
    pub amount: Amount,
}

/// What taking a call's cost did.
#[derive(Clone, Debug, PartialEq)]
pub enum Taken {
    /// Taken; `warnings` are the budgets this call took past the warning
    /// line (or spent to the end).
    Taken {
        reservation: Reservation,
        warnings: Vec<BudgetStatus>,
    },
    /// A budget has too little left for the call; nothing was taken.
    Refused(BudgetStatus),
}

impl Store {
    /// A transaction that writers take one at a time on SQLite (taken
    /// before its first read, so two never both read then write).
    pub(super) async fn exclusive(&self) -> Result<Transaction<'static, Any>, StoreError> {
        Ok(match self.backend() {
            Backend::Sqlite => self.pool().begin_with("BEGIN IMMEDIATE").await?,
            Backend::Postgres => self.pool().begin().await?,
        })
    }

    /// Takes `amount` of `unit` from the workspace's count for a call of
    /// `connector_id` this month, unless the connector's budget or the
    /// budget of every connector in `unit` has too little left.
    pub async fn take_spend(
        &self,
        workspace_id: i64,
        connector_id: &str,
        unit: &str,
        amount: Amount,
    ) -> Result<Taken, StoreError> {
        let month = utc_month(self.now_ms());
        let mut tx = self.exclusive().await?;
        // The budgets that count this call, as set (their spend is read
        // with the count below).
        let budgets = sqlx::query_as::<_, BudgetRow>(
            "SELECT connector_id, unit, monthly_limit_micros, set_by, set_at, 0 AS spent \
             FROM budgets WHERE workspace_id = $1 AND unit = $2 AND connector_id IN ($3, $4)",
        )
        .bind(workspace_id)
        .bind(unit)
        .bind(connector_id)
        .bind(EVERY_CONNECTOR)
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .map(|row| row.status(&month))
        .collect::<Vec<_>>();
        let mut warnings = Vec::new();
        // The connector's count first, then everyone's: one order for
        // every call, so two calls never wait on each other's rows.
        for scope in [connector_id, EVERY_CONNECTOR] {
            let budget = budgets
                .iter()
                .find(|b| b.budget.connector_id.as_deref().unwrap_or(EVERY_CONNECTOR) == scope);
            let limit = budget.map_or(UNLIMITED, |b| b.budget.monthly_limit.micros());
            let status = |spent: i64| {
                budget.map(|b| BudgetStatus {
                    spent: Amount::from_micros(spent),
                    ..b.clone()
                })
            };
            let count = Count {
                workspace_id,
                connector_id: scope,
                unit,
                month: &month,
            };
            let taken = if amount.micros() > limit {
                None
            } else {
                count.add(&mut tx, amount, limit).await?
            };
            let Some(after) = taken else {
                let spent = count.spent(&mut tx).await?;
                tx.rollback().await?;
                // Chips and menus read the budgets again.
                self.settings_changed(workspace_id);
                let refused = status(spent.unwrap_or(0)).ok_or_else(|| {
                    StoreError::Corrupt("a spend count refused without a budget".into())
                })?;
                return Ok(Taken::Refused(refused));
            };
            if after.saturating_add(amount.micros()) > limit {
                // The next call at this price would not fit: chips and menus
                // read the budgets again.
                self.settings_changed(workspace_id);
            }
            if let Some(now) = status(after) {
                let before = BudgetStatus {
                    spent: Amount::from_micros(after - amount.micros()),
                    ..now.clone()
                };
                let crossed = |s: &BudgetStatus| (s.warns(), s.percent() >= 100);
                if crossed(&before) != crossed(&now) {
                    warnings.push(now);
                }
            }
        }
        tx.commit().await?;
        Ok(Taken::Taken {
            reservation: Reservation {
                workspace_id,
                connector_id: connector_id.to_owned(),
                unit: unit.to_owned(),
                month,
                amount,
            },
            warnings,
        })
    }

    /// Gives a call's cost back: the provider did not bill it.
    pub async fn give_back(&self, r: &Reservation) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE spend SET spent_micros = spent_micros - $1 WHERE workspace_id = $2 \
             AND unit = $3 AND month = $4 AND connector_id IN ($5, $6)",
        )
        .bind(r.amount.micros())
        .bind(r.workspace_id)
        .bind(&r.unit)
        .bind(&r.month)
        .bind(&r.connector_id)
        .bind(EVERY_CONNECTOR)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// A workspace's budgets with this month's spend against each, every
    /// connector's before the ones for every connector, by connector and unit.
    pub async fn budgets(&self, workspace_id: i64) -> Result<Vec<BudgetStatus>, StoreError> {
        let month = utc_month(self.now_ms());
        let rows: Vec<BudgetRow> = sqlx::query_as(
            "SELECT b.connector_id, b.unit, b.monthly_limit_micros, b.set_by, b.set_at, \
             COALESCE(s.spent_micros, 0) AS spent FROM budgets b \
             LEFT JOIN spend s ON s.workspace_id = b.workspace_id \
             AND s.connector_id = b.connector_id AND s.unit = b.unit AND s.month = $2 \
             WHERE b.workspace_id = $1 ORDER BY b.connector_id = '*', b.connector_id, b.unit",
        )
        .bind(workspace_id)
        .bind(&month)
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().map(|row| row.status(&month)).collect())
    }

    /// Sets (or changes) a budget; this month's spend so far counts against it.
    pub async fn set_budget(
        &self,
        workspace_id: i64,
        budget: &Budget,
        actor: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO budgets (workspace_id, connector_id, unit, monthly_limit_micros, set_by, set_at) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (workspace_id, connector_id, unit) DO UPDATE \
             SET monthly_limit_micros = excluded.monthly_limit_micros, \
             set_by = excluded.set_by, set_at = excluded.set_at",
        )
        .bind(workspace_id)
        .bind(budget.connector_id.as_deref().unwrap_or(EVERY_CONNECTOR))
        .bind(&budget.unit)
        .bind(budget.monthly_limit.micros())
        .bind(actor)
        .bind(self.now_ms())
        .execute(self.pool())
        .await?;
        self.settings_changed(workspace_id);
        Ok(())
    }

    /// Removes a budget; says whether there was one.
    pub async fn remove_budget(
        &self,
        workspace_id: i64,
        connector_id: Option<&str>,
        unit: &str,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "DELETE FROM budgets WHERE workspace_id = $1 AND connector_id = $2 AND unit = $3",
        )
        .bind(workspace_id)
        .bind(connector_id.unwrap_or(EVERY_CONNECTOR))
        .bind(unit)
        .execute(self.pool())
        .await?;
        self.settings_changed(workspace_id);
        Ok(done.rows_affected() > 0)
    }
}

/// One billed attempt, as its receipt in `charges` has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChargeRow {
    pub at: i64,
    pub connector_id: String,
    pub amount: Amount,
    pub unit: String,
    pub paid_by: PaidBy,
    /// Who fired, or who started the job.
    pub person: String,
    pub outcome: String,
    pub capability: String,
    /// A record's fire: the set and the record as named then.
    pub record_set: Option<(i64, String)>,
    pub record: Option<(i64, String)>,
    pub pack_id: Option<String>,
    pub job_id: Option<i64>,
    /// A capability call.
    pub call_id: Option<i64>,
}

/// A row of the `charges` view.
#[derive(sqlx::FromRow)]
struct StoredCharge {
    at: i64,
    connector_id: String,
    amount_micros: i64,
    unit: String,
    paid_by: String,
    person: String,
    outcome: String,
    capability: String,
    record_set_id: Option<i64>,
    record_set_name: Option<String>,
    record_id: Option<i64>,
    record_name: Option<String>,
    pack_id: Option<String>,
    job_id: Option<i64>,
    call_id: Option<i64>,
}

impl StoredCharge {
    fn charge(self) -> Result<ChargeRow, StoreError> {
        Ok(ChargeRow {
            paid_by: PaidBy::parse(&self.paid_by).ok_or_else(|| {
                StoreError::Corrupt(format!("a charge's paid_by {:?}", self.paid_by))
            })?,
            at: self.at,
            connector_id: self.connector_id,
            amount: Amount::from_micros(self.amount_micros),
            unit: self.unit,
            person: self.person,
            outcome: self.outcome,
            capability: self.capability,
            record_set: self.record_set_id.zip(self.record_set_name),
            record: self.record_id.zip(self.record_name),
            pack_id: self.pack_id,
            job_id: self.job_id,
            call_id: self.call_id,
        })
    }
}

/// What the record-set breakdown calls capability calls.
pub const CALLS: &str = "capability calls";

impl Store {
    /// The workspace's billed attempts from `from` until before `until`
    /// (Unix ms), oldest first.
    pub async fn charges(
        &self,
        workspace_id: i64,
        from: i64,
        until: i64,
    ) -> Result<Vec<ChargeRow>, StoreError> {
        let rows: Vec<StoredCharge> = sqlx::query_as(
            "SELECT at, connector_id, amount_micros, unit, paid_by, person, outcome, capability, \
             record_set_id, record_set_name, record_id, record_name, pack_id, job_id, call_id \
             FROM charges WHERE workspace_id = $1 AND at >= $2 AND at < $3 ORDER BY at, id",
        )
        .bind(workspace_id)
        .bind(from)
        .bind(until)
        .fetch_all(self.pool())
        .await?;
        rows.into_iter().map(StoredCharge::charge).collect()
    }

    /// What each of `record_ids` (of `workspace_id`) was billed since
    /// `since` (Unix ms), per unit, by record. Read from the workspace's
    /// charges since then (its index), so it costs what that day spent.
    pub async fn spent_since(
        &self,
        workspace_id: i64,
        record_ids: &[i64],
        since: i64,
    ) -> Result<HashMap<i64, Vec<SpentToday>>, StoreError> {
        let mut out: HashMap<i64, Vec<SpentToday>> = HashMap::new();
        for chunk in record_ids.chunks(500) {
            let sql = format!(
                "SELECT record_id, unit, CAST(SUM(amount_micros) AS BIGINT) FROM charges \
                 WHERE workspace_id = $1 AND at >= $2 AND record_id IN ({}) \
                 GROUP BY record_id, unit ORDER BY record_id, unit",
                super::placeholders_after(2, chunk.len())
            );
            let mut query = sqlx::query_as::<_, (i64, String, i64)>(&sql)
                .bind(workspace_id)
                .bind(since);
            for id in chunk {
                query = query.bind(*id);
            }
            for (record, unit, micros) in query.fetch_all(self.pool()).await? {
                out.entry(record).or_default().push(SpentToday {
                    unit,
                    amount: Amount::from_micros(micros),
                });
            }
        }
        Ok(out)
    }

    /// What the workspace spent in `month` (`YYYY-MM`), per unit, by key,
    /// day, connector, person and record set.
    pub async fn spend_report(
        &self,
        workspace_id: i64,
        month: &str,
    ) -> Result<model::SpendReport, StoreError> {
        let (from, until) = crate::time::month_bounds(month).map_err(StoreError::Corrupt)?;
        let charges = |key: String, days: bool| ChargesBy {
            workspace_id,
            from,
            until,
            key,
            days,
        };
        let breakdowns = Breakdowns {
            by_key: self.grouped(charges("paid_by".into(), false)).await?,
            by_day: self.grouped(charges("at / 86400000".into(), true)).await?,
            by_connector: self.grouped(charges("connector_id".into(), false)).await?,
            by_person: self.grouped(charges("person".into(), false)).await?,
            by_set: self
                .grouped(charges(
                    format!("COALESCE(record_set_name, '{CALLS}')"),
                    false,
                ))
                .await?,
            days: (0..)
                .map(|d| from + d * 86_400_000)
                .take_while(|at| *at < until)
                .map(crate::time::utc_date)
                .collect(),
        };
        let mut units: Vec<String> = Vec::new();
        for group in &breakdowns.by_key {
            if !units.contains(&group.unit) {
                units.push(group.unit.clone());
            }
        }
        let mut units: Vec<model::UnitSpend> = units
            .into_iter()
            .map(|unit| breakdowns.unit(unit))
            .collect();
        units.sort_by(|a, b| {
            b.attempts
                .cmp(&a.attempts)
                .then_with(|| a.unit.cmp(&b.unit))
        });
        Ok(model::SpendReport {
            month: month.to_owned(),
            units,
        })
    }

    /// A month's charges grouped by unit and one key, largest first.
    async fn grouped(&self, by: ChargesBy) -> Result<Vec<Group>, StoreError> {
        let key = &by.key;
        let sql = format!(
            "SELECT unit, {key} AS k, CAST(SUM(amount_micros) AS BIGINT) AS total, COUNT(*) AS n \
             FROM charges WHERE workspace_id = $1 AND at >= $2 AND at < $3 \
             GROUP BY unit, {key} ORDER BY total DESC, k"
        );
        let rows = sqlx::query(&sql)
            .bind(by.workspace_id)
            .bind(by.from)
            .bind(by.until)
            .fetch_all(self.pool())
            .await?;
        rows.iter()
            .map(|row| {
                // For days the key is the day's number since 1970.
                let key = if by.days {
                    crate::time::utc_date(row.try_get::<i64, _>("k")? * 86_400_000)
                } else {
                    row.try_get("k")?
                };
                Ok(Group {
                    unit: row.try_get("unit")?,
                    bucket: model::SpendBucket {
                        key,
                        amount: Amount::from_micros(row.try_get("total")?),
                        attempts: u64::try_from(row.try_get::<i64, _>("n")?).unwrap_or(0),
                    },
                })
            })
            .collect()
    }
}

/// One grouping of a month's charges: of which workspace, between when,
/// by which SQL key (`days`: the key is a day's number since 1970).
struct ChargesBy {
    workspace_id: i64,
    from: i64,
    until: i64,
    key: String,
    days: bool,
}

/// One unit's charges under one key.
struct Group {
    unit: String,
    bucket: model::SpendBucket,
}

/// A month's charges grouped every way the report shows them, and the
/// month's days.
struct Breakdowns {
    by_key: Vec<Group>,
    by_day: Vec<Group>,
    by_connector: Vec<Group>,
    by_person: Vec<Group>,
    by_set: Vec<Group>,
    days: Vec<String>,
}

impl Breakdowns {
    /// One unit's part of the report; every day of the month has a bucket.
    fn unit(&self, unit: String) -> model::UnitSpend {
        let of = |groups: &[Group]| -> Vec<model::SpendBucket> {
            groups
                .iter()
                .filter(|g| g.unit == unit)
                .map(|g| g.bucket.clone())
                .collect()
        };
        let by_key = of(&self.by_key);
        let spent = of(&self.by_day);
        model::UnitSpend {
            total: by_key
                .iter()
                .fold(Amount::ZERO, |sum, b| sum.saturating_add(b.amount)),
            attempts: by_key.iter().map(|b| b.attempts).sum(),
            by_day: self
                .days
                .iter()
                .map(|day| {
                    spent
                        .iter()
                        .find(|b| &b.key == day)
                        .cloned()
                        .unwrap_or(model::SpendBucket {
                            key: day.clone(),
                            amount: Amount::ZERO,
                            attempts: 0,
                        })
                })
                .collect(),
            by_connector: of(&self.by_connector),
            by_person: of(&self.by_person),
            by_record_set: of(&self.by_set),
            by_key,
            unit,
        }
    }
}

/// One spend count: a workspace's spend on a connector (or on every
/// connector) in a unit, this month.
struct Count<'a> {
    workspace_id: i64,
    connector_id: &'a str,
    unit: &'a str,
    month: &'a str,
}

impl Count<'_> {
    /// Adds `amount` unless the count would pass `limit`; the count after.
    async fn add(
        &self,
        conn: &mut sqlx::AnyConnection,
        amount: Amount,
        limit: i64,
    ) -> Result<Option<i64>, StoreError> {
        Ok(sqlx::query_scalar(
            "INSERT INTO spend (workspace_id, connector_id, unit, month, spent_micros) \
             VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (workspace_id, connector_id, unit, month) DO UPDATE \
             SET spent_micros = spend.spent_micros + excluded.spent_micros \
             WHERE spend.spent_micros + excluded.spent_micros <= $6 \
             RETURNING spent_micros",
        )
        .bind(self.workspace_id)
        .bind(self.connector_id)
        .bind(self.unit)
        .bind(self.month)
        .bind(amount.micros())
        .bind(limit)
        .fetch_optional(conn)
        .await?)
    }

    /// What the count holds, if anything was spent yet.
    async fn spent(&self, conn: &mut sqlx::AnyConnection) -> Result<Option<i64>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT spent_micros FROM spend WHERE workspace_id = $1 \
             AND connector_id = $2 AND unit = $3 AND month = $4",
        )
        .bind(self.workspace_id)
        .bind(self.connector_id)
        .bind(self.unit)
        .bind(self.month)
        .fetch_optional(conn)
        .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing;

    fn usd(units: f64) -> Amount {
        Amount::from_decimal(units).unwrap()
    }

    #[tokio::test]
    async fn budgets_refuse_what_would_exceed_them_and_take_back_what_was_not_billed() {
        for db in testing::all().await {
            let store = Store::connect(&db.url).await.unwrap();
            let (ws, _) = store.ensure_workspace("w").await.unwrap();
            // No budget: counted, never refused.
            for _ in 0..3 {
                let taken = store.take_spend(ws, "serp", "USD", usd(1.0)).await.unwrap();
                assert!(matches!(taken, Taken::Taken { .. }), "{}", db.kind());
            }
            // A budget set mid-month counts the month's spend so far.
            let budget = Budget {
                connector_id: Some("serp".into()),
                unit: "USD".into(),
                monthly_limit: usd(4.0),
            };
            store.set_budget(ws, &budget, "ana").await.unwrap();
            let Taken::Taken {
                reservation,
                warnings,
            } = store.take_spend(ws, "serp", "USD", usd(1.0)).await.unwrap()
            else {
                panic!("{}: 4 of 4 fits", db.kind());
            };
            assert_eq!(warnings.len(), 1, "{}: spent to the end", db.kind());
            let Taken::Refused(status) =
                store.take_spend(ws, "serp", "USD", usd(1.0)).await.unwrap()
            else {
                panic!("{}: 5 of 4 must be refused", db.kind());
            };
            assert_eq!(status.describe(), "4.00 of 4.00 USD this month");
            // Another unit is another count.
            assert!(matches!(
                store
                    .take_spend(ws, "serp", "credits", usd(9.0))
                    .await
                    .unwrap(),
                Taken::Taken { .. }
            ));
            // Given back: room for one more.
            store.give_back(&reservation).await.unwrap();
            assert!(matches!(
                store.take_spend(ws, "serp", "USD", usd(1.0)).await.unwrap(),
                Taken::Taken { .. }
            ));
            // Every connector's budget in the unit caps the others too.
            store
                .set_budget(
                    ws,
                    &Budget {
                        connector_id: None,
                        unit: "USD".into(),
                        monthly_limit: usd(5.0),
                    },
                    "ana",
                )
                .await
                .unwrap();
            let Taken::Refused(all) = store
                .take_spend(ws, "brave", "USD", usd(1.5))
                .await
                .unwrap()
            else {
                panic!("{}: 5.5 of 5 must be refused", db.kind());
            };
            assert_eq!(all.budget.connector_id, None);
            let listed = store.budgets(ws).await.unwrap();
            assert_eq!(listed.len(), 2);
            assert_eq!(listed[0].budget.connector_id.as_deref(), Some("serp"));
            assert_eq!(listed[1].spent, usd(4.0), "{}", db.kind());
            assert!(store.remove_budget(ws, None, "USD").await.unwrap());
            assert!(!store.remove_budget(ws, None, "USD").await.unwrap());
        }
    }

    #[tokio::test]
    async fn a_take_past_the_warning_line_or_to_the_end_says_so_once() {
        for db in testing::all().await {
            let store = Store::connect(&db.url).await.unwrap();
            let (ws, _) = store.ensure_workspace("w").await.unwrap();
            let budget = Budget {
                connector_id: Some("serp".into()),
                unit: "USD".into(),
                monthly_limit: usd(10.0),
            };
            store.set_budget(ws, &budget, "ana").await.unwrap();
            let mut told = Vec::new();
            for _ in 0..10 {
                let Taken::Taken { warnings, .. } =
                    store.take_spend(ws, "serp", "USD", usd(1.0)).await.unwrap()
                else {
                    panic!("{}: 10 of 10 fit", db.kind());
                };
                told.push(
                    warnings
                        .iter()
                        .map(BudgetStatus::percent)
                        .collect::<Vec<_>>(),
                );
            }
            // At 80 % and at 100 %, and nowhere else.
            let expected: Vec<Vec<u32>> = (1..=10)
                .map(|n| match n {
                    8 => vec![80],
                    10 => vec![100],
                    _ => vec![],
                })
                .collect();
            assert_eq!(told, expected, "{}", db.kind());
        }
    }

    #[tokio::test]
    async fn concurrent_takes_never_spend_past_a_budget() {
        for db in testing::all().await {
            let store = Store::connect(&db.url).await.unwrap();
            let (ws, _) = store.ensure_workspace("w").await.unwrap();
            let budget = Budget {
                connector_id: None,
                unit: "USD".into(),
                monthly_limit: usd(0.05),
            };
            store.set_budget(ws, &budget, "ana").await.unwrap();
            let takes = (0..40).map(|i| {
                let store = store.clone();
                let connector = if i % 2 == 0 { "serp" } else { "brave" };
                tokio::spawn(async move {
                    crate::store::retrying(|| store.take_spend(ws, connector, "USD", usd(0.005)))
                        .await
                        .unwrap()
                })
            });
            let mut taken = 0;
            for take in takes {
                if matches!(take.await.unwrap(), Taken::Taken { .. }) {
                    taken += 1;
                }
            }
            assert_eq!(taken, 10, "{}: 10 calls of 0.005 fit in 0.05", db.kind());
            assert_eq!(store.budgets(ws).await.unwrap()[0].spent, usd(0.05));
        }
    }
}
