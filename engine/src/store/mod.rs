//! Persistence: one connection pool over SQLite (the embedded default) or
//! PostgreSQL, chosen by the database URL, with migrations applied at connect.
//!
//! The same SQL runs on both back-ends: parameters are written `$1, $2, ...` in
//! order of first appearance (SQLite binds them by position), times are
//! `BIGINT` Unix milliseconds and structured fields are JSON text.

use std::path::Path;
use std::str::FromStr;

use sqlx::any::{install_default_drivers, AnyPoolOptions};
use sqlx::AnyPool;

mod accounts;
pub mod backup;
mod batch;
mod bulk;
mod calls;
mod catalog;
mod connector_log;
mod credentials;
mod events;
mod manifests;
mod migrations;
mod name_search;
mod overrides;
mod personal_chains;
pub use accounts::{Owned, Removal, UserRow};
pub use calls::{CallStatus, NewCall, StoredCall};
pub use catalog::CatalogKind;
pub use connector_log::StatusChange;
pub use credentials::TokenInfo;
pub use events::{EventSpan, NewEvent, EVENTS_CHANNEL};
pub use health::StoredHealth;
pub use history::{Closed, FireContext, FireEnd, FireStatus, Lease};
pub use items::TriageError;
pub use jobs::{NewJob, Task};
pub use leases::{Leased, ReapedFire, INTERRUPTED};
pub use manifests::StoredManifest;
pub use personal_chains::PersonalChains;
pub use record_caps::{RecordReservation, RecordTaken};
pub use record_sets::{NewRecord, NewRecordSet, StoredRecord};
pub use refresh::StoredSchedule;
pub use results::usable_results;
pub use settings::{WorkspaceSettings, FRESH_FOR};
pub use spend::{ChargeRow, Reservation, Taken, CALLS};
pub use tallies::{ChipCount, SetTallies};
pub use visits::VISIT_GAP;
pub use wal::Checkpoint;
mod health;
mod history;
mod history_reads;
mod items;
mod jobs;
#[cfg(test)]
mod kept_counts;
mod leases;
mod rates;
mod record_caps;
mod record_sets;
mod refresh;
mod results;
mod settings;
mod sign_in_limits;
mod spend;
mod tallies;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;
mod upkeep;
mod usage;
mod viewers;
mod visits;
mod wal;

/// What went wrong talking to the database.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("unsupported database URL {0:?}: expected sqlite:... or postgres://...")]
    UnsupportedUrl(String),
    #[error("cannot create the database folder {path}: {source}")]
    CreateDir {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot take {path}, which processes opening the database take in turns: {source}")]
    Lock {
        path: String,
        source: std::io::Error,
    },
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("{0} not found")]
    NotFound(String),
    /// A stored value is not what this version of Switchyard writes.
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
}

impl StoreError {
    /// Whether the database is away rather than the request wrong: it
    /// cannot be reached, the pool waited too long for a connection, the
    /// server is shutting down or refusing connections, or a SQLite file is
    /// held by another writer. Asking again later may succeed.
    pub fn is_unavailable(&self) -> bool {
        let StoreError::Database(e) = self else {
            return false;
        };
        match e {
            sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_) => true,
            sqlx::Error::Database(db) => db.code().is_some_and(|code| {
                // PostgreSQL: connection exceptions (08...), shutting down
                // or starting (57P01-57P03), too many connections (53300).
                // SQLite: busy (5, with extended 517 and others), locked (6).
                code.starts_with("08")
                    || ["57P01", "57P02", "57P03", "53300"].contains(&code.as_ref())
                    || code.parse::<i32>().is_ok_and(|n| matches!(n & 0xff, 5 | 6))
            }),
            _ => false,
        }
    }
}

/// Which database engine a [`Store`] talks to, for the few statements whose
/// syntax differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl FromStr for Backend {
    type Err = StoreError;

    fn from_str(url: &str) -> Result<Self, Self::Err> {
        if url.starts_with("sqlite:") {
            Ok(Backend::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Backend::Postgres)
        } else {
            Err(StoreError::UnsupportedUrl(redact_url(url)))
        }
    }
}

/// The longest a request waits for a database connection.
pub const ACQUIRE_AT_MOST: std::time::Duration = std::time::Duration::from_secs(3);

/// A connection idle this long is asked whether it answers before it is
/// handed out (the database may have gone away meanwhile).
const PING_IDLE_FOR: std::time::Duration = std::time::Duration::from_secs(1);

/// The database handle shared by the whole process.
#[derive(Clone, Debug)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
    /// For connections outside the pool (listening for events).
    url: SecretUrl,
    settings: std::sync::Arc<settings::SettingsCache>,
    /// What every time this store writes or compares is read from.
    clock: crate::time::Clock,
}

impl Store {
    /// Connects to `url`, creating a SQLite file (and its folder) when missing,
    /// and applies every pending migration.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        install_default_drivers();
        let backend: Backend = url.parse()?;
        let url = match backend {
            Backend::Sqlite => prepare_sqlite_url(url)?,
            Backend::Postgres => url.to_owned(),
        };
        let max_connections = match backend {
            // Each connection to `:memory:` is a database of its own: keep one.
            Backend::Sqlite if url.contains(":memory:") => 1,
            // One writer at a time is SQLite's rule anyway; a few readers help.
            Backend::Sqlite => 4,
            Backend::Postgres => 16,
        };
        let file = backend == Backend::Sqlite && !url.contains(":memory:");
        let pool = AnyPoolOptions::new()
            .max_connections(max_connections)
            // While the database is away a request waits this long for a
            // connection, then answers 503 (not the 30 s default).
            .acquire_timeout(ACQUIRE_AT_MOST)
            // sqlx pings every connection it hands out, by default: one more
            // round trip before each statement (a thread's wake-up on SQLite,
            // the network on PostgreSQL). It also pings each connection it
            // takes back, so one that was handed back moments ago is known
            // to answer; only one idle for a while is asked again first.
            .test_before_acquire(false)
            .before_acquire(|conn, idle| {
                Box::pin(async move {
                    if idle.idle_for >= PING_IDLE_FOR {
                        sqlx::Connection::ping(conn).await?;
                    }
                    Ok(true)
                })
            })
            // An idle in-memory database would vanish with its connection.
            .idle_timeout(None)
            .max_lifetime(None)
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if file {
                        // In WAL mode a commit then writes the log without
                        // waiting for the disk: the file stays consistent
                        // whatever happens, and a process that is killed
                        // loses nothing; only a power cut may lose the last
                        // commits. Every fire writes twice, so this is most
                        // of what a fire costs on a plain disk otherwise.
                        sqlx::query("PRAGMA synchronous = NORMAL")
                            .execute(&mut *conn)
                            .await?;
                        // Serving processes checkpoint off the write path
                        // (`wal`); a commit does only past this.
                        sqlx::query(&format!(
                            "PRAGMA wal_autocheckpoint = {}",
                            wal::COMMIT_CHECKPOINT_PAGES
                        ))
                        .execute(&mut *conn)
                        .await?;
                    }
                    Ok(())
                })
            })
            .connect(&url)
            .await?;
        // Processes opening one SQLite file at once set it up in turns: a
        // fresh file's first steps would otherwise be run twice.
        let _turn = match sqlite_file(&url) {
            Some(file) => Some(migrations::take_turn(file).await?),
            None => None,
        };
        if backend == Backend::Sqlite && !url.contains(":memory:") {
            // Readers never wait for the writer. The setting is kept in the file.
            sqlx::query("PRAGMA journal_mode = WAL")
                .execute(&pool)
                .await?;
        }
        migrations::migrate(&pool, backend).await?;
        Ok(Self {
            pool,
            backend,
            url: SecretUrl(url.into()),
            settings: std::sync::Arc::default(),
            clock: crate::time::Clock::default(),
        })
    }

    /// The clock this store, and the engine on it, reads time from.
    pub fn clock(&self) -> &crate::time::Clock {
        &self.clock
    }

    /// Milliseconds since the Unix epoch, now, by [`Store::clock`].
    pub(crate) fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Answers whether the database is reachable.
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }
}

/// A database URL that may hold a password: its `Debug` shows it redacted.
#[derive(Clone)]
struct SecretUrl(std::sync::Arc<str>);

impl std::fmt::Debug for SecretUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&redact_url(&self.0))
    }
}

impl std::ops::Deref for SecretUrl {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

/// Makes sure a file-backed SQLite URL creates its file and folder on first use.
fn prepare_sqlite_url(url: &str) -> Result<String, StoreError> {
    let rest = url.trim_start_matches("sqlite:").trim_start_matches("//");
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    if path.is_empty() || path == ":memory:" {
        return Ok(url.to_owned());
    }
    if let Some(parent) = Path::new(path)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent).map_err(|source| StoreError::CreateDir {
            path: parent.display().to_string(),
            source,
        })?;
    }
    let query = if query.split('&').any(|kv| kv.starts_with("mode=")) {
        query.to_owned()
    } else if query.is_empty() {
        "mode=rwc".to_owned()
    } else {
        format!("{query}&mode=rwc")
    };
    Ok(format!("sqlite://{path}?{query}"))
}

/// The file of a SQLite URL made by [`prepare_sqlite_url`] (none for an
/// in-memory database or a PostgreSQL URL).
fn sqlite_file(url: &str) -> Option<&Path> {
    let rest = url.strip_prefix("sqlite://")?;
    let path = rest.split_once('?').map_or(rest, |(path, _)| path);
    (!path.is_empty() && path != ":memory:").then(|| Path::new(path))
}

/// Runs a database operation again after a transient failure: three tries
/// in all, 50 ms then 250 ms apart. Only database errors are tried again (a
/// busy SQLite file, a dropped PostgreSQL connection); a missing row or a
/// corrupt value is final.
pub async fn retrying<T, F, Fut>(mut op: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    let mut pauses = [
        std::time::Duration::from_millis(50),
        std::time::Duration::from_millis(250),
    ]
    .into_iter();
    loop {
        match op().await {
            Err(StoreError::Database(e)) => match pauses.next() {
                Some(pause) => {
                    tracing::warn!(error = %e, "A database operation failed; trying again.");
                    tokio::time::sleep(pause).await;
                }
                None => return Err(StoreError::Database(e)),
            },
            other => return other,
        }
    }
}

/// `$1, $2, ..., $n`: the parameters of an `IN (...)` list.
fn placeholders(n: usize) -> String {
    placeholders_after(0, n)
}

/// `$k+1, ..., $k+n`: an `IN (...)` list after `k` other parameters.
fn placeholders_after(k: usize, n: usize) -> String {
    (k + 1..=k + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A database URL safe to show: any password is replaced by `***`.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = rest.split_once('/').map_or((rest, ""), |(a, t)| (a, t));
    let Some((userinfo, host)) = authority.rsplit_once('@') else {
        return url.to_owned();
    };
    let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
    let slash = if rest.contains('/') { "/" } else { "" };
    if userinfo.contains(':') {
        format!("{scheme}://{user}:***@{host}{slash}{tail}")
    } else {
        format!("{scheme}://{user}@{host}{slash}{tail}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_is_chosen_by_scheme() {
        assert_eq!("sqlite://x.db".parse::<Backend>().unwrap(), Backend::Sqlite);
        assert_eq!(
            "sqlite::memory:".parse::<Backend>().unwrap(),
            Backend::Sqlite
        );
        assert_eq!(
            "postgres://u@h/db".parse::<Backend>().unwrap(),
            Backend::Postgres
        );
        let err = "mysql://u:secret@h/db".parse::<Backend>().unwrap_err();
        assert!(!err.to_string().contains("secret"), "{err}");
    }

    #[test]
    fn sqlite_urls_create_their_file() {
        let dir = std::env::temp_dir().join(format!("sy-store-{}", std::process::id()));
        let url = format!("sqlite://{}/nested/db.sqlite", dir.display());
        let prepared = prepare_sqlite_url(&url).unwrap();
        assert!(prepared.ends_with("db.sqlite?mode=rwc"), "{prepared}");
        assert!(dir.join("nested").is_dir());
        std::fs::remove_dir_all(dir).unwrap();
        assert_eq!(
            prepare_sqlite_url("sqlite::memory:").unwrap(),
            "sqlite::memory:"
        );
        assert_eq!(
            prepare_sqlite_url("sqlite://a.db?mode=ro").unwrap(),
            "sqlite://a.db?mode=ro"
        );
    }

    #[tokio::test]
    async fn database_failures_are_tried_three_times_and_other_errors_once() {
        let tries = std::sync::atomic::AtomicU32::new(0);
        let flaky = |fail: u32| {
            let tries = &tries;
            move || async move {
                let n = tries.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if n < fail {
                    Err(StoreError::Database(sqlx::Error::PoolTimedOut))
                } else {
                    Ok(n)
                }
            }
        };
        assert_eq!(
            retrying(flaky(2)).await.unwrap(),
            2,
            "the third try succeeds"
        );
        tries.store(0, std::sync::atomic::Ordering::SeqCst);
        assert!(matches!(
            retrying(flaky(3)).await,
            Err(StoreError::Database(_))
        ));
        assert_eq!(tries.load(std::sync::atomic::Ordering::SeqCst), 3);
        tries.store(0, std::sync::atomic::Ordering::SeqCst);
        let missing = retrying(|| async {
            tries.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Err::<(), _>(StoreError::NotFound("fire 9".into()))
        })
        .await;
        assert!(matches!(missing, Err(StoreError::NotFound(_))));
        assert_eq!(tries.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[test]
    fn in_lists_start_after_the_other_parameters() {
        assert_eq!(placeholders_after(2, 3), "$3, $4, $5");
        assert_eq!(placeholders(2), "$1, $2");
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact_url("postgres://me:hunter2@db:5432/sy"),
            "postgres://me:***@db:5432/sy"
        );
        assert_eq!(redact_url("postgres://me@db/sy"), "postgres://me@db/sy");
        assert_eq!(redact_url("sqlite://data/x.db"), "sqlite://data/x.db");
    }

    #[tokio::test]
    async fn connects_and_migrates_an_in_memory_database() {
        let store = Store::connect("sqlite::memory:").await.unwrap();
        store.ping().await.unwrap();
        assert_eq!(store.backend(), Backend::Sqlite);
        assert!(store.list_record_sets(1).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn migrations_apply_on_every_backend_and_twice_is_harmless() {
        for db in testing::all().await {
            let store = Store::connect(&db.url).await.unwrap();
            store.ping().await.unwrap();
            assert!(
                store.list_record_sets(1).await.unwrap().is_empty(),
                "{}",
                db.kind()
            );
            drop(store);
            // A restart finds the migrations applied and changes nothing.
            let again = Store::connect(&db.url).await.unwrap();
            assert!(
                again.list_record_sets(1).await.unwrap().is_empty(),
                "{}",
                db.kind()
            );
        }
    }
}
