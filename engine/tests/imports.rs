//! Imports beside everyone else: a file's records are written a batch at a
//! time, each batch its own short transaction, so a large import never
//! holds the database's writer (SQLite has one) from another workspace;
//! the set stays nobody's until its last batch is in, and a refused,
//! abandoned or orphaned import leaves nothing.

mod common;

use std::time::Duration;

use engine::import::{ImportLimits, BATCH};
use engine::store::{NewRecord, Owned, Store};
use engine::{Engine, EngineConfig};
use model::Role;

fn records(n: usize) -> Vec<NewRecord> {
    (0..n)
        .map(|i| NewRecord {
            name: format!("Company {i}"),
            fields: Vec::new(),
        })
        .collect()
}

async fn count_records(store: &Store) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM records")
        .fetch_one(store.pool())
        .await
        .expect("a count")
}

async fn count_sets(store: &Store) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM record_sets")
        .fetch_one(store.pool())
        .await
        .expect("a count")
}

async fn principal(engine: &Engine, email: &str, workspace: &str) -> engine::tenancy::Principal {
    let added = engine
        .add_user(email, workspace, Role::Admin, None)
        .await
        .expect("a user");
    engine
        .default_principal(added.user_id)
        .await
        .expect("a principal")
        .expect("a membership")
}

#[tokio::test]
async fn an_import_under_way_never_holds_the_database_from_a_neighbour_and_is_nobodys_yet() {
    for db in engine::store::testing::all().await {
        eprintln!("-- on {}", db.kind());
        let engine = common::engine(&db, &["none"], EngineConfig::default()).await;
        let store = &engine.store();
        let (a, _) = store.ensure_workspace("a").await.unwrap();
        let (b, _) = store.ensure_workspace("b").await.unwrap();
        let mut importing = store
            .begin_record_set(a, "Big", "test", false)
            .await
            .unwrap();
        importing.add(&records(BATCH)).await.unwrap();
        // Between two batches the neighbour writes at once: on SQLite, one
        // transaction for the whole file would hold the writer until it
        // ended (here: never, so the neighbour would wait out the busy
        // timeout and fail).
        let neighbour = tokio::time::timeout(
            Duration::from_secs(10),
            store.create_record_set(b, "Small", "test", false, &records(3)),
        )
        .await
        .expect("the neighbour's write waited for the import")
        .expect("the neighbour's set");
        assert_eq!(store.list_record_sets(b).await.unwrap().len(), 1);
        // The import's set is listed nowhere and reachable by no id yet.
        assert!(store.list_record_sets(a).await.unwrap().is_empty());
        let id = importing_id(store, a).await;
        assert!(store.workspace_of(Owned::RecordSet(id)).await.is_err());
        assert!(store.record_set(id).await.is_err());
        let first: i64 = sqlx::query_scalar("SELECT MIN(id) FROM records WHERE record_set_id = $1")
            .bind(id)
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert!(store.workspace_of(Owned::Record(first)).await.is_err());
        assert!(store.record_and_set(first).await.is_err());

        importing.add(&records(BATCH)).await.unwrap();
        assert_eq!(importing.commit().await.unwrap(), id);
        let sets = store.list_record_sets(a).await.unwrap();
        assert_eq!(sets.len(), 1);
        assert_eq!(sets[0].records, 2 * BATCH as i64);
        assert_eq!(store.workspace_of(Owned::Record(first)).await.unwrap(), a);
        // Positions run on across batches: the file's order is kept.
        let page = store.records(id, BATCH as i64 - 1, 2).await.unwrap();
        assert_eq!(page[0].name, format!("Company {}", BATCH - 1));
        assert_eq!(page[1].name, "Company 0");
        assert_ne!(neighbour, id);
    }
}

/// The id of the one set of workspace `ws` still being imported.
async fn importing_id(store: &Store, ws: i64) -> i64 {
    sqlx::query_scalar(
        "SELECT id FROM record_sets WHERE workspace_id = $1 AND importing_since IS NOT NULL",
    )
    .bind(ws)
    .fetch_one(store.pool())
    .await
    .expect("a set being imported")
}

#[tokio::test]
async fn a_refused_abandoned_or_orphaned_import_leaves_nothing() {
    for db in engine::store::testing::all().await {
        eprintln!("-- on {}", db.kind());
        let engine = common::engine(&db, &["none"], EngineConfig::default()).await;
        let store = &engine.store();
        let who = principal(&engine, "ada@a.example", "a").await;

        // A file refused after its first batches were written.
        let mut csv = String::from("name\n");
        for i in 0..3 * BATCH {
            csv.push_str(&format!("Company {i}\n"));
        }
        let limits = ImportLimits {
            max_records: 2 * BATCH + 1,
            ..ImportLimits::default()
        };
        let refused = engine
            .import_record_set(&who, "Too many", "test", csv.into_bytes(), limits)
            .await;
        assert!(refused.is_err(), "{refused:?}");
        assert_eq!(count_sets(store).await, 0);
        assert_eq!(count_records(store).await, 0);

        // An import whose caller went away mid-file (its request cancelled).
        let mut dropped = store
            .begin_record_set(who.workspace_id, "Dropped", "test", false)
            .await
            .unwrap();
        dropped.add(&records(10)).await.unwrap();
        drop(dropped);
        let mut left = count_sets(store).await;
        for _ in 0..100 {
            if left == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            left = count_sets(store).await;
        }
        assert_eq!(left, 0, "a dropped import was kept");
        assert_eq!(count_records(store).await, 0);

        // One whose process died: the sweep deletes it, and only it.
        let kept = store
            .create_record_set(who.workspace_id, "Kept", "test", false, &records(2))
            .await
            .unwrap();
        let mut orphan = store
            .begin_record_set(who.workspace_id, "Orphan", "test", false)
            .await
            .unwrap();
        orphan.add(&records(10)).await.unwrap();
        std::mem::forget(orphan);
        let now = store.clock().now_ms();
        assert_eq!(
            store.forget_abandoned_imports(now - 60_000).await.unwrap(),
            0
        );
        assert_eq!(store.forget_abandoned_imports(now + 1).await.unwrap(), 1);
        assert_eq!(count_sets(store).await, 1);
        assert_eq!(count_records(store).await, 2);
        assert_eq!(store.record_set(kept).await.unwrap().records, 2);
    }
}
