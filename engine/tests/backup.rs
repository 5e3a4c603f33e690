//! A backup of a running SQLite instance, taken while a fan-out writes:
//! it opens with every record set and every record, and its file is whole.

mod common;

use std::time::Duration;

use common::{engine, fan_out, finished, record_set, scripted, Deadline};
use engine::connectors::scripted::Step;
use engine::store::backup::{backup_sqlite, BackupError};
use engine::store::{testing, Store};
use engine::EngineConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_fires_run_opens_with_every_record_set() {
    let db = testing::sqlite();
    let running = engine(&db, &["alpha"], EngineConfig::default()).await;
    let alpha = scripted(
        &running,
        "alpha",
        None,
        vec![Step::Delay(
            Duration::from_millis(5),
            Box::new(Step::Found(2)),
        )],
    );
    let sets = [
        record_set(&running, "First", 40).await,
        record_set(&running, "Second", 7).await,
        record_set(&running, "Third", 1).await,
    ];
    let job = fan_out(&running, sets[0]).await;
    let mut started = Deadline::new("the fan-out to fire");
    while alpha.calls() < 5 {
        started.tick().await;
    }

    let folder = std::env::temp_dir().join(format!("switchyard-backup-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let copy = folder.join("copy.db");
    let bytes = backup_sqlite(&db.url, &copy).await.unwrap();
    assert!(bytes > 0);
    // A backup never overwrites.
    assert!(matches!(
        backup_sqlite(&db.url, &copy).await,
        Err(BackupError::Exists(_))
    ));
    finished(&running, job.id, Duration::from_secs(30)).await;

    let restored = Store::connect(&format!("sqlite://{}", copy.display()))
        .await
        .unwrap();
    let whole: String = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_one(restored.pool())
        .await
        .unwrap();
    assert_eq!(whole, "ok");
    let (workspace, _) = restored.ensure_workspace("test").await.unwrap();
    let mut listed: Vec<(String, i64)> = restored
        .list_record_sets(workspace)
        .await
        .unwrap()
        .into_iter()
        .map(|s| (s.name, s.records))
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            ("First".to_owned(), 40),
            ("Second".to_owned(), 7),
            ("Third".to_owned(), 1)
        ]
    );
    // What the fan-out had found by then is there too, consistent with
    // its fires: every item belongs to a fire that is in the copy.
    let orphans: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM item_evidence e WHERE NOT EXISTS \
         (SELECT 1 FROM fires f WHERE f.id = e.fire_id)",
    )
    .fetch_one(restored.pool())
    .await
    .unwrap();
    assert_eq!(orphans, 0);
    std::fs::remove_dir_all(&folder).unwrap();
}

#[tokio::test]
async fn a_postgresql_backup_says_how_to_use_pg_dump() {
    let said = backup_sqlite(
        "postgres://switchyard@127.0.0.1:1/none",
        std::path::Path::new("/tmp/never-written.db"),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(said.contains("pg_dump --format=custom"), "{said}");
    let missing = backup_sqlite(
        "sqlite:///tmp/switchyard-no-such-database.db",
        std::path::Path::new("/tmp/never-written.db"),
    )
    .await
    .unwrap_err();
    assert!(matches!(missing, BackupError::NoDatabase(_)), "{missing}");
    assert!(!std::path::Path::new("/tmp/switchyard-no-such-database.db").exists());
}
