//! Fresh databases for tests: a temporary SQLite file always, and a new
//! PostgreSQL database on the server named by `SWITCHYARD_TEST_POSTGRES_URL`
//! when set (`make test` starts one). Under `CI` a missing PostgreSQL is an
//! error, never a silent skip.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use sqlx::any::install_default_drivers;
use sqlx::{AnyConnection, Connection};

/// The variable naming a PostgreSQL server the tests may create databases on.
pub const POSTGRES_ENV: &str = "SWITCHYARD_TEST_POSTGRES_URL";

/// An empty database for one test; a SQLite file is removed on drop.
#[derive(Debug)]
pub struct TestDatabase {
    pub url: String,
    sqlite_file: Option<std::path::PathBuf>,
}

impl TestDatabase {
    /// The same PostgreSQL database reached at `addr` (a proxy in front of
    /// its server); `None` for SQLite.
    pub fn through(&self, addr: std::net::SocketAddr) -> Option<TestDatabase> {
        if self.sqlite_file.is_some() {
            return None;
        }
        let (scheme, rest) = self.url.split_once("://")?;
        let (authority, path) = rest.split_once('/')?;
        let user = authority
            .rsplit_once('@')
            .map(|(user, _)| format!("{user}@"));
        Some(TestDatabase {
            url: format!("{scheme}://{}{addr}/{path}", user.unwrap_or_default()),
            sqlite_file: None,
        })
    }

    /// The same PostgreSQL database again, for a second process (`None`
    /// for SQLite, which is one process's).
    pub fn shared(&self) -> Option<TestDatabase> {
        let addr = self.server_addr()?.parse().ok()?;
        self.through(addr)
    }

    /// Where a PostgreSQL database's server listens (`None` for SQLite).
    pub fn server_addr(&self) -> Option<String> {
        if self.sqlite_file.is_some() {
            return None;
        }
        let rest = self.url.split_once("://")?.1;
        let authority = rest.split_once('/').map_or(rest, |(a, _)| a);
        Some(
            authority
                .rsplit_once('@')
                .map_or(authority, |(_, host)| host)
                .to_owned(),
        )
    }

    /// A short name for test messages: `sqlite` or `postgres`.
    pub fn kind(&self) -> &'static str {
        if self.sqlite_file.is_some() {
            "sqlite"
        } else {
            "postgres"
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let Some(file) = &self.sqlite_file {
            for suffix in ["", "-wal", "-shm", "-setup.lock"] {
                let mut path = file.clone().into_os_string();
                path.push(suffix);
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

fn unique_name() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "switchyard_test_{}_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        nanos
    )
}

/// A new, empty SQLite database file.
pub fn sqlite() -> TestDatabase {
    let file = std::env::temp_dir().join(format!("{}.db", unique_name()));
    TestDatabase {
        url: format!("sqlite://{}", file.display()),
        sqlite_file: Some(file),
    }
}

/// A new, empty PostgreSQL database, or `None` when no server is configured.
///
/// # Panics
/// When the server cannot be reached, or when `CI` is set and no server is
/// configured: the PostgreSQL half of the suite must never be skipped there.
pub async fn postgres() -> Option<TestDatabase> {
    let Ok(admin_url) = std::env::var(POSTGRES_ENV) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "{POSTGRES_ENV} is unset under CI: the PostgreSQL tests must run (use make test)"
        );
        eprintln!("note: {POSTGRES_ENV} is unset; PostgreSQL tests are skipped");
        return None;
    };
    install_default_drivers();
    let name = unique_name();
    let mut admin = AnyConnection::connect(&admin_url)
        .await
        .unwrap_or_else(|e| panic!("cannot reach the test PostgreSQL: {e}"));
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await
        .unwrap_or_else(|e| panic!("cannot create test database {name}: {e}"));
    let _ = admin.close().await;
    let base = admin_url
        .rsplit_once('/')
        .map_or(admin_url.as_str(), |(base, _)| base);
    Some(TestDatabase {
        url: format!("{base}/{name}"),
        sqlite_file: None,
    })
}

/// Every back-end the suite runs on: SQLite, and PostgreSQL when configured.
pub async fn all() -> Vec<TestDatabase> {
    let mut dbs = vec![sqlite()];
    dbs.extend(postgres().await);
    dbs
}

/// An engine over `db` with the shipped catalogue and no connectors.
pub async fn engine(db: &TestDatabase) -> crate::Engine {
    let store = super::Store::connect(&db.url)
        .await
        .unwrap_or_else(|e| panic!("cannot open the {} test database: {e}", db.kind()));
    crate::Engine::new(
        store,
        crate::packs::Catalog::builtin(),
        None,
        crate::EngineConfig::default(),
    )
}

/// A store over `url` with workspace `w` holding a set of records named
/// `names`: the store, the workspace and the records' ids in that order.
///
/// # Panics
/// When the database cannot be opened or written.
pub async fn store_with_records(url: &str, names: &[&str]) -> (super::Store, i64, Vec<i64>) {
    let store = super::Store::connect(url).await.expect("a test database");
    let (ws, _) = store.ensure_workspace("w").await.expect("a workspace");
    let records: Vec<super::NewRecord> = names
        .iter()
        .map(|name| super::NewRecord {
            name: (*name).into(),
            fields: Vec::new(),
        })
        .collect();
    let set = store
        .create_record_set(ws, "S", "b", false, &records)
        .await
        .expect("a record set");
    let ids =
        sqlx::query_scalar("SELECT id FROM records WHERE record_set_id = $1 ORDER BY position")
            .bind(set)
            .fetch_all(store.pool())
            .await
            .expect("the set's records");
    (store, ws, ids)
}
