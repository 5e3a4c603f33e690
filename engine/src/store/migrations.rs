//! The schema's history: one numbering for both back-ends. Step N is the
//! same change on SQLite and PostgreSQL (`engine/migrations/{sqlite,postgres}/
//! NNNN_name.sql`); a step one back-end does not need exists only in the
//! other's folder and says so in its name (`_postgres_only`). A SQLite
//! database made before the two numberings were one (its steps 8 to 18 are
//! now 10 to 20) is renumbered once, at connect, before its pending steps
//! run.

use sqlx::migrate::Migrator;
use sqlx::AnyPool;

use super::{Backend, StoreError};

static SQLITE: Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES: Migrator = sqlx::migrate!("./migrations/postgres");

/// Brings the database's schema up to date.
pub(super) async fn migrate(pool: &AnyPool, backend: Backend) -> Result<(), StoreError> {
    match backend {
        Backend::Sqlite => {
            renumber_sqlite(pool).await?;
            SQLITE.run(pool).await?;
        }
        Backend::Postgres => POSTGRES.run(pool).await?,
    }
    Ok(())
}

/// This process's turn at setting up a SQLite file, held until dropped:
/// an exclusive lock on `<file>-setup.lock` beside it. SQLite's own locks
/// cannot cover a migration history (each step is its own transaction).
pub(super) struct Turn(#[allow(dead_code)] std::fs::File);

/// Waits for this process's turn at setting up the SQLite `file`.
pub(super) async fn take_turn(file: &std::path::Path) -> Result<Turn, StoreError> {
    let mut lock = file.as_os_str().to_owned();
    lock.push("-setup.lock");
    let lock = std::path::PathBuf::from(lock);
    let failed = |source| StoreError::Lock {
        path: lock.display().to_string(),
        source,
    };
    let opened = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock)
        .map_err(failed)?;
    tokio::task::spawn_blocking(move || opened.lock().map(|()| Turn(opened)))
        .await
        .map_err(|e| failed(std::io::Error::other(e)))?
        .map_err(failed)
}

/// Moves the steps a SQLite database recorded under the old numbering (8
/// `connector health` to 18 `record counts`) to their numbers now (10 to
/// 20): the step 8 of such a database is `connector health`, which is step
/// 10 everywhere now. One transaction that takes the write lock before it
/// reads, so a second process starting at the same time waits, then finds
/// the history new (a deferred one could have read the old history and
/// been refused its write).
async fn renumber_sqlite(pool: &AnyPool) -> Result<(), StoreError> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    let has_history: Option<(String,)> = sqlx::query_as(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
    )
    .fetch_optional(&mut *tx)
    .await?;
    if has_history.is_none() {
        return Ok(());
    }
    // Through numbers no step has, as the version is the table's key.
    let moved = sqlx::query(
        "UPDATE _sqlx_migrations SET version = version + 1002 WHERE version >= 8 \
         AND EXISTS (SELECT 1 FROM _sqlx_migrations \
                     WHERE version = 8 AND description = 'connector health')",
    )
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if moved > 0 {
        sqlx::query("UPDATE _sqlx_migrations SET version = version - 1000 WHERE version >= 1010")
            .execute(&mut *tx)
            .await?;
        tracing::info!(
            steps = moved,
            "Renumbered this SQLite database's schema history to the numbering both back-ends share."
        );
    }
    tx.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;
    use crate::store::testing;
    use crate::store::Store;

    /// The suffix of a step that only one back-end takes.
    const ONLY: [(&str, Backend); 2] = [
        ("postgres only", Backend::Postgres),
        ("sqlite only", Backend::Sqlite),
    ];

    /// Each step's number and name in one back-end's history.
    fn steps(migrator: &Migrator) -> Vec<(i64, String)> {
        migrator
            .iter()
            .map(|m| (m.version, m.description.to_string()))
            .collect()
    }

    /// Why the two histories disagree, if they do: a number naming two
    /// different steps, or a step one back-end lacks without saying so.
    fn numbering_problems() -> Vec<String> {
        let (sqlite, postgres) = (steps(&SQLITE), steps(&POSTGRES));
        let mut problems = Vec::new();
        for (mine, theirs, lacking) in [
            (&sqlite, &postgres, Backend::Postgres),
            (&postgres, &sqlite, Backend::Sqlite),
        ] {
            for (version, name) in mine {
                match theirs.iter().find(|(v, _)| v == version) {
                    Some((_, other)) if other != name => problems.push(format!(
                        "step {version} is {name:?} on one back-end and {other:?} on the other"
                    )),
                    Some(_) => {}
                    None => {
                        let says_so = ONLY
                            .iter()
                            .any(|(suffix, only)| name.ends_with(suffix) && *only != lacking);
                        if !says_so {
                            problems.push(format!(
                                "step {version} {name:?} is missing from {lacking:?} and its name does not end in \"postgres only\" or \"sqlite only\""
                            ));
                        }
                    }
                }
            }
        }
        problems
    }

    #[test]
    fn both_histories_number_their_steps_alike() {
        assert_eq!(numbering_problems(), Vec::<String>::new());
        // A step only one back-end takes is a gap in the other's history.
        let sqlite: Vec<i64> = steps(&SQLITE).iter().map(|(v, _)| *v).collect();
        assert!(!sqlite.contains(&8) && sqlite.contains(&10), "{sqlite:?}");
    }

    /// Loads a dump into the empty database `db`, on a connection of its own.
    async fn load(db: &testing::TestDatabase, dump: &str) {
        use sqlx::Connection;
        sqlx::any::install_default_drivers();
        let url = match db.kind() {
            "sqlite" => format!("{}?mode=rwc", db.url),
            _ => db.url.clone(),
        };
        let mut conn = sqlx::AnyConnection::connect(&url).await.unwrap();
        sqlx::raw_sql(dump).execute(&mut conn).await.unwrap();
        conn.close().await.unwrap();
    }

    /// Opens a database an earlier version made, twice (the second open
    /// changes nothing), and checks its history is this version's and its
    /// data is all there: the demo set of 12 records, fanned out, with
    /// `triaged` items as they were left.
    async fn opens_with_its_data(
        db: &testing::TestDatabase,
        migrator: &Migrator,
        triaged: &[(i64, model::TriageState)],
    ) {
        for _ in 0..2 {
            let store = Store::connect(&db.url).await.unwrap();
            let history: Vec<i64> =
                sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
                    .fetch_all(store.pool())
                    .await
                    .unwrap();
            let expected: Vec<i64> = steps(migrator).iter().map(|(v, _)| *v).collect();
            assert_eq!(history, expected, "{}", db.kind());
            let sets = store.list_record_sets(1).await.unwrap();
            assert_eq!(sets.len(), 1, "{}", db.kind());
            assert!(sets[0].is_demo && sets[0].records == 12, "{:?}", sets[0]);
            let items = store.items(1).await.unwrap();
            assert!(items.len() >= 2, "{}: {items:?}", db.kind());
            for (id, state) in triaged {
                assert_eq!(
                    store.item(*id).await.unwrap().state,
                    *state,
                    "{}",
                    db.kind()
                );
            }
        }
    }

    #[tokio::test]
    async fn a_sqlite_database_numbered_the_old_way_is_renumbered_and_keeps_its_data() {
        let db = testing::sqlite();
        load(
            &db,
            include_str!("../../tests/fixtures/sqlite-before-one-numbering.sql"),
        )
        .await;
        let triaged = [
            (1, model::TriageState::AcceptedCanonical),
            (2, model::TriageState::Discarded),
        ];
        opens_with_its_data(&db, &SQLITE, &triaged).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn processes_opening_an_old_sqlite_database_at_once_all_open_it() {
        let db = testing::sqlite();
        load(
            &db,
            include_str!("../../tests/fixtures/sqlite-before-one-numbering.sql"),
        )
        .await;
        // Four stores at once, each with its own pool, as four processes.
        let opening: Vec<_> = (0..4)
            .map(|_| {
                let url = db.url.clone();
                tokio::spawn(async move { Store::connect(&url).await })
            })
            .collect();
        for open in opening {
            open.await.unwrap().unwrap();
        }
        opens_with_its_data(&db, &SQLITE, &[(1, model::TriageState::AcceptedCanonical)]).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn processes_creating_a_sqlite_database_at_once_all_open_it() {
        let db = testing::sqlite();
        let opening: Vec<_> = (0..4)
            .map(|_| {
                let url = db.url.clone();
                tokio::spawn(async move { Store::connect(&url).await })
            })
            .collect();
        for open in opening {
            open.await.unwrap().unwrap();
        }
    }

    #[tokio::test]
    async fn a_postgresql_database_of_step_20_opens_with_its_data() {
        let Some(db) = testing::postgres().await else {
            return;
        };
        load(
            &db,
            include_str!("../../tests/fixtures/postgres-step-20.sql"),
        )
        .await;
        opens_with_its_data(
            &db,
            &POSTGRES,
            &[(1, model::TriageState::AcceptedCanonical)],
        )
        .await;
    }

    /// A column's type as both back-ends can agree on it.
    fn family(declared: &str) -> &'static str {
        let t = declared.to_ascii_lowercase();
        if t.contains("int") || t.contains("serial") {
            "integer"
        } else if t.contains("json") {
            "json"
        } else if t.contains("text") || t.contains("char") {
            "text"
        } else if t.contains("double") || t.contains("real") || t.contains("float") {
            "real"
        } else if t.contains("bool") {
            "boolean"
        } else {
            "other"
        }
    }

    /// Table and column -> (type family, nullable).
    type Columns = BTreeMap<(String, String), (&'static str, bool)>;

    async fn sqlite_schema(store: &Store) -> (Columns, BTreeSet<String>) {
        // Generated columns too (table_info leaves them out); not the
        // name search's FTS5 table nor its shadow tables (PostgreSQL's
        // search is a trigram index instead, see postgres_schema).
        let rows: Vec<(String, String, String, i64, i64)> = sqlx::query_as(
            "SELECT m.name, p.name, p.type, p.\"notnull\", p.pk \
             FROM sqlite_master m, pragma_table_xinfo(m.name) p \
             WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' \
               AND m.name <> '_sqlx_migrations' AND p.hidden <> 1 \
               AND NOT EXISTS (SELECT 1 FROM sqlite_master v WHERE v.type = 'table' \
                   AND v.sql LIKE 'CREATE VIRTUAL TABLE%' \
                   AND (m.name = v.name OR m.name LIKE v.name || '\\_%' ESCAPE '\\'))",
        )
        .fetch_all(store.pool())
        .await
        .unwrap();
        let columns = rows
            .into_iter()
            // A primary key column is never null, whatever the pragma says.
            .map(|(t, c, ty, not_null, pk)| ((t, c), (family(&ty), not_null == 0 && pk == 0)))
            .collect();
        let indexes: Vec<(String,)> = sqlx::query_as(
            "SELECT name FROM sqlite_master WHERE type = 'index' \
             AND name NOT LIKE 'sqlite_autoindex%'",
        )
        .fetch_all(store.pool())
        .await
        .unwrap();
        (columns, indexes.into_iter().map(|(n,)| n).collect())
    }

    async fn postgres_schema(store: &Store) -> (Columns, BTreeSet<String>) {
        let rows: Vec<(String, String, String, String)> = sqlx::query_as(
            "SELECT table_name::text, column_name::text, data_type::text, is_nullable::text \
             FROM information_schema.columns \
             WHERE table_schema = 'public' AND table_name <> '_sqlx_migrations'",
        )
        .fetch_all(store.pool())
        .await
        .unwrap();
        let columns = rows
            .into_iter()
            .map(|(t, c, ty, nullable)| ((t, c), (family(&ty), nullable == "YES")))
            .collect();
        // Indexes people declared, not those behind a key or constraint,
        // nor the name search's trigram indexes (SQLite's search is an
        // FTS5 table instead, see sqlite_schema).
        let indexes: Vec<(String,)> = sqlx::query_as(
            "SELECT indexname::text FROM pg_indexes WHERE schemaname = 'public' \
             AND indexname NOT IN (SELECT conname FROM pg_constraint) \
             AND indexdef NOT LIKE '%gin_trgm_ops%'",
        )
        .fetch_all(store.pool())
        .await
        .unwrap();
        (columns, indexes.into_iter().map(|(n,)| n).collect())
    }

    /// The tables the steps only PostgreSQL takes create.
    fn postgres_only_tables() -> BTreeSet<String> {
        POSTGRES
            .iter()
            .filter(|m| m.description.ends_with("postgres only"))
            .flat_map(|m| {
                m.sql
                    .split("CREATE TABLE ")
                    .skip(1)
                    .filter_map(|rest| rest.split_whitespace().next())
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[tokio::test]
    async fn both_back_ends_end_with_the_same_tables_columns_and_indexes() {
        let Some(pg) = testing::postgres().await else {
            return;
        };
        let lite = testing::sqlite();
        let (lite_columns, lite_indexes) =
            sqlite_schema(&Store::connect(&lite.url).await.unwrap()).await;
        let (mut pg_columns, pg_indexes) =
            postgres_schema(&Store::connect(&pg.url).await.unwrap()).await;
        assert!(
            lite_columns.len() > 100 && lite_indexes.len() > 10,
            "{lite_indexes:?}"
        );
        let only = postgres_only_tables();
        assert!(only.contains("rate_slots"), "{only:?}");
        pg_columns.retain(|(table, _), _| !only.contains(table));
        let differ: Vec<String> = lite_columns
            .keys()
            .chain(pg_columns.keys())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter(|key| lite_columns.get(*key) != pg_columns.get(*key))
            .map(|key| {
                format!(
                    "{}.{}: sqlite {:?}, postgres {:?}",
                    key.0,
                    key.1,
                    lite_columns.get(key),
                    pg_columns.get(key)
                )
            })
            .collect();
        assert_eq!(differ, Vec::<String>::new());
        let pg_indexes: BTreeSet<String> = pg_indexes
            .into_iter()
            .filter(|name| !only.iter().any(|t| name.contains(t.as_str())))
            .collect();
        assert_eq!(
            lite_indexes
                .symmetric_difference(&pg_indexes)
                .collect::<Vec<_>>(),
            Vec::<&String>::new()
        );
    }
}
