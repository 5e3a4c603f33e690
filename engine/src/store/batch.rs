//! Several statements written together, in one transaction and, where the
//! database allows it, in one round trip: on SQLite one call runs them all
//! between `BEGIN IMMEDIATE` and `COMMIT`; on PostgreSQL, whose prepared
//! statements are one each, they run one by one in a transaction. A fire's
//! end is written this way: the round trips, not the statements, are what a
//! fire costs on SQLite.

use sqlx::any::AnyRow;
use sqlx::pool::PoolConnection;
use sqlx::{Any, Connection};

use super::{Backend, Store, StoreError};

/// A value bound to a statement of a batch.
#[derive(Clone, Debug)]
pub(super) enum Arg {
    Int(Option<i64>),
    Text(Option<String>),
}

impl From<i64> for Arg {
    fn from(v: i64) -> Self {
        Arg::Int(Some(v))
    }
}

impl From<Option<i64>> for Arg {
    fn from(v: Option<i64>) -> Self {
        Arg::Int(v)
    }
}

impl From<&str> for Arg {
    fn from(v: &str) -> Self {
        Arg::Text(Some(v.to_owned()))
    }
}

impl From<String> for Arg {
    fn from(v: String) -> Self {
        Arg::Text(Some(v))
    }
}

impl From<Option<String>> for Arg {
    fn from(v: Option<String>) -> Self {
        Arg::Text(v)
    }
}

impl From<Option<&str>> for Arg {
    fn from(v: Option<&str>) -> Self {
        Arg::Text(v.map(str::to_owned))
    }
}

/// Statements, each written with its own `$1, $2, ...`.
#[derive(Debug, Default)]
pub(super) struct Batch {
    statements: Vec<(String, Vec<Arg>)>,
}

fn bind<'q>(
    mut query: sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>>,
    args: &[Arg],
) -> sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>> {
    for arg in args {
        query = match arg {
            Arg::Int(v) => query.bind(*v),
            Arg::Text(v) => query.bind(v.clone()),
        };
    }
    query
}

/// `sql` with every `$n` moved up by `by`.
fn shift_parameters(sql: &str, by: usize) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut chars = sql.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        out.push(c);
        if c != '$' {
            continue;
        }
        let mut digits = String::new();
        while let Some((_, d)) = chars.peek().filter(|(_, d)| d.is_ascii_digit()) {
            digits.push(*d);
            chars.next();
        }
        match digits.parse::<usize>() {
            Ok(n) => out.push_str(&(n + by).to_string()),
            Err(_) => out.push_str(&digits),
        }
    }
    out
}

impl Batch {
    pub(super) fn push(&mut self, sql: impl Into<String>, args: Vec<Arg>) {
        self.statements.push((sql.into(), args));
    }

    /// Runs every statement in one transaction; returns the rows they
    /// return, in order.
    pub(super) async fn run(self, store: &Store) -> Result<Vec<AnyRow>, StoreError> {
        match store.backend() {
            Backend::Sqlite => self.run_at_once(store.pool().acquire().await?).await,
            Backend::Postgres => {
                let mut tx = store.pool().begin().await?;
                let mut rows = Vec::new();
                for (sql, args) in &self.statements {
                    rows.extend(bind(sqlx::query(sql), args).fetch_all(&mut *tx).await?);
                }
                tx.commit().await?;
                Ok(rows)
            }
        }
    }

    async fn run_at_once(self, mut conn: PoolConnection<Any>) -> Result<Vec<AnyRow>, StoreError> {
        let mut sql = String::from("BEGIN IMMEDIATE;\n");
        let mut args = Vec::new();
        for (statement, statement_args) in self.statements {
            sql.push_str(&shift_parameters(&statement, args.len()));
            sql.push_str(";\n");
            args.extend(statement_args);
        }
        sql.push_str("COMMIT");
        match bind(sqlx::query(&sql), &args).fetch_all(&mut *conn).await {
            Ok(rows) => Ok(rows),
            Err(e) => {
                // The call stopped at the failing statement, inside the
                // transaction: roll it back, and never give the connection
                // back to the pool in a state nobody knows.
                let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
                let _ = conn.detach().close().await;
                Err(e.into())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_move_up_and_nothing_else_changes() {
        assert_eq!(
            shift_parameters("UPDATE t SET a = $1, b = $12 WHERE c = $2 AND d = '$'", 3),
            "UPDATE t SET a = $4, b = $15 WHERE c = $5 AND d = '$'"
        );
        assert_eq!(shift_parameters("SELECT 1", 9), "SELECT 1");
    }

    const ADD_SECRET: &str =
        "INSERT INTO workspace_secrets (workspace_id, name, sealed, set_by, set_at) \
                              VALUES ($1, $2, 'x', 'ana', 1)";

    #[tokio::test]
    async fn a_batch_is_one_transaction_on_every_backend() {
        for db in crate::store::testing::all().await {
            let store = Store::connect(&db.url).await.unwrap();
            let (ws, _) = store.ensure_workspace("w").await.unwrap();
            let mut ok = Batch::default();
            ok.push(ADD_SECRET, vec![ws.into(), "A".into()]);
            ok.push(ADD_SECRET, vec![ws.into(), "B".into()]);
            ok.push(
                "SELECT name FROM workspace_secrets WHERE workspace_id = $1 ORDER BY name",
                vec![ws.into()],
            );
            let rows = ok.run(&store).await.unwrap();
            let names: Vec<String> = rows
                .iter()
                .map(|r| sqlx::Row::try_get(r, "name").unwrap())
                .collect();
            assert_eq!(names, ["A", "B"], "{}", db.kind());

            // The second statement fails: the first is rolled back with it.
            let mut failing = Batch::default();
            failing.push(ADD_SECRET, vec![ws.into(), "C".into()]);
            failing.push(ADD_SECRET, vec![ws.into(), "A".into()]);
            assert!(failing.run(&store).await.is_err(), "{}", db.kind());
            let count: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM workspace_secrets WHERE workspace_id = $1",
            )
            .bind(ws)
            .fetch_one(store.pool())
            .await
            .unwrap();
            assert_eq!(count, 2, "{}: nothing of the failed batch stays", db.kind());
            // The pool still works.
            store.ping().await.unwrap();
        }
    }
}
