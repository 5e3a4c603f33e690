//! SQLite's write-ahead log, copied into the database file off the write
//! path. Left to itself SQLite checkpoints in the commit that takes the log
//! past 1,000 pages, and that commit waits for two flushes to disk (5 to 20
//! ms each on this machine): one fire in about twenty paid for it, which was
//! most of a fire's p99 through REST. A serving process instead checkpoints
//! every [`CHECKPOINT_EVERY`] on a connection of its own, without waiting for
//! readers or writers; commits checkpoint only past [`COMMIT_CHECKPOINT_PAGES`],
//! a safety valve for processes that do not run the checkpoints (the command
//! line, tests) and for writes faster than the checkpoints keep up with.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{sqlite_file, Store, StoreError};

/// How often a serving process copies the log into the database file.
pub const CHECKPOINT_EVERY: Duration = Duration::from_millis(500);

/// The log's size in pages past which a commit checkpoints it itself (about
/// 32 MB of 4 KiB pages; SQLite's default is 1,000).
pub(super) const COMMIT_CHECKPOINT_PAGES: u32 = 8_000;

/// What one checkpoint found, as SQLite reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// Whether another checkpoint was running, so this one did nothing.
    pub busy: bool,
    /// Pages in the log.
    pub logged: i64,
    /// Pages of the log now in the database file.
    pub copied: i64,
}

impl Store {
    /// Whether this store is a SQLite file (whose log is worth keeping small).
    fn is_sqlite_file(&self) -> bool {
        sqlite_file(&self.url).is_some()
    }

    /// Copies what it can of the log into the database file now, without
    /// waiting for readers or writers (a passive checkpoint); `None` on a
    /// database that is not a SQLite file.
    pub async fn checkpoint(&self) -> Result<Option<Checkpoint>, StoreError> {
        if !self.is_sqlite_file() {
            return Ok(None);
        }
        let (busy, logged, copied): (i64, i64, i64) =
            sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
                .fetch_one(self.pool())
                .await?;
        Ok(Some(Checkpoint {
            busy: busy != 0,
            logged,
            copied,
        }))
    }

    /// Checkpoints every [`CHECKPOINT_EVERY`] until `stop` is cancelled (at
    /// once on a database that is not a SQLite file). A failed checkpoint is
    /// logged and tried again at the next turn: the commits' own
    /// checkpoints remain as the safety valve.
    pub async fn keep_log_small(&self, stop: CancellationToken) {
        if !self.is_sqlite_file() {
            return;
        }
        let checkpoint = || async { self.checkpoint().await.map(|_| ()) };
        let failed = "Cannot checkpoint the SQLite log; commits will.";
        super::upkeep::every(CHECKPOINT_EVERY, &stop, failed, checkpoint).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A SQLite file holding about 1,500 pages written one commit each: past
    /// SQLite's default of 1,000, where a commit would have checkpointed the
    /// log itself. The database (kept while the store is open) and the store.
    async fn written_past_the_default() -> (crate::store::testing::TestDatabase, Store) {
        let db = crate::store::testing::sqlite();
        let store = Store::connect(&db.url).await.expect("store");
        sqlx::query("CREATE TABLE wal_probe (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
            .execute(store.pool())
            .await
            .expect("a table");
        for n in 0..1_500 {
            sqlx::query("INSERT INTO wal_probe (body) VALUES ($1)")
                .bind(format!("{n:04000}"))
                .execute(store.pool())
                .await
                .expect("a row");
        }
        (db, store)
    }

    /// Writes that stay below the commits' valve leave the log to the
    /// checkpoints; a checkpoint copies all of it.
    #[tokio::test]
    async fn a_checkpoint_copies_the_log_the_commits_left() {
        let (_db, store) = written_past_the_default().await;
        let first = store
            .checkpoint()
            .await
            .expect("checkpoint")
            .expect("a file");
        assert!(!first.busy, "{first:?}");
        assert!(
            first.logged > 1_500,
            "the commits left the log alone: {first:?}"
        );
        assert_eq!(first.copied, first.logged, "{first:?}");
        let again = store
            .checkpoint()
            .await
            .expect("checkpoint")
            .expect("a file");
        assert_eq!(again.copied, again.logged, "{again:?}");
    }

    /// What a serving process runs: the database file takes in what the
    /// commits left in the log without anyone asking, until it is stopped.
    #[tokio::test]
    async fn the_checkpoints_run_by_themselves_until_stopped() {
        let (db, store) = written_past_the_default().await;
        let file = sqlite_file(&db.url).expect("a file").to_owned();
        let size = || std::fs::metadata(&file).expect("the database file").len();
        let before = size();
        let stop = CancellationToken::new();
        let running = tokio::spawn({
            let (store, stop) = (store.clone(), stop.clone());
            async move { store.keep_log_small(stop).await }
        });
        let deadline = tokio::time::Instant::now() + 20 * CHECKPOINT_EVERY;
        while size() < before + 5_000_000 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the file stayed at {} bytes (from {before})",
                size()
            );
            tokio::time::sleep(CHECKPOINT_EVERY / 5).await;
        }
        stop.cancel();
        tokio::time::timeout(2 * CHECKPOINT_EVERY, running)
            .await
            .expect("the checkpoints stop when told")
            .expect("the task");
    }

    #[tokio::test]
    async fn only_a_sqlite_file_has_a_log_to_checkpoint() {
        let store = Store::connect("sqlite::memory:").await.expect("store");
        assert!(!store.is_sqlite_file());
        assert_eq!(store.checkpoint().await.expect("nothing to do"), None);
    }
}
