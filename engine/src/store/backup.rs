//! Backups of a running instance: a SQLite database is copied with
//! SQLite's own `VACUUM INTO`, a consistent snapshot taken inside one read
//! transaction while the server goes on writing (a file copy could catch a
//! half-written page). The copy is made without migrating the source, so a
//! backup taken before an upgrade is of the database as it was. PostgreSQL
//! has `pg_dump` for this.

use std::path::Path;

use sqlx::Connection;

use super::{sqlite_file, Backend, StoreError};

/// What to run instead for a PostgreSQL database.
pub const POSTGRES_RECIPE: &str = "switchyard backup copies SQLite databases; for PostgreSQL \
use pg_dump, which takes a consistent copy of a running database: \
pg_dump --format=custom --file=switchyard.dump \"$DATABASE_URL\" \
(restore into an empty database with pg_restore --dbname=\"$DATABASE_URL\" switchyard.dump)";

/// Why a backup was not taken.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{POSTGRES_RECIPE}")]
    Postgres,
    #[error("no SQLite database at {0}")]
    NoDatabase(String),
    #[error("{0} already exists: give a new file, a backup never overwrites")]
    Exists(String),
    #[error("{0}: give a path written in UTF-8")]
    NotUtf8(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Copies the SQLite database at `url` into the new file `to`, consistent
/// as of one moment, while other processes use it; the copy's size in
/// bytes.
pub async fn backup_sqlite(url: &str, to: &Path) -> Result<u64, BackupError> {
    if url.parse::<Backend>()? == Backend::Postgres {
        return Err(BackupError::Postgres);
    }
    // The file named, without creating anything on the way.
    let named = format!(
        "sqlite://{}",
        url.trim_start_matches("sqlite:").trim_start_matches("//")
    );
    let source = sqlite_file(&named)
        .filter(|file| file.is_file())
        .ok_or_else(|| BackupError::NoDatabase(url.to_owned()))?
        .to_owned();
    if to.exists() {
        return Err(BackupError::Exists(to.display().to_string()));
    }
    let read_only = format!("sqlite://{}?mode=ro", source.display());
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(&read_only)
        .await
        .map_err(StoreError::from)?;
    let target = to
        .to_str()
        .ok_or_else(|| BackupError::NotUtf8(to.display().to_string()))?;
    sqlx::query("VACUUM INTO $1")
        .bind(target)
        .execute(&mut conn)
        .await
        .map_err(StoreError::from)?;
    let _ = conn.close().await;
    Ok(std::fs::metadata(to).map(|m| m.len()).unwrap_or(0))
}
