//! The records view's filters read what each record keeps (its items, its
//! untriaged items, its attempts that found nothing, its chips that failed
//! and found nothing, when its newest item was found), which the database
//! keeps as items and attempts change: after fires, decisions, an undo, a
//! second connector and a set's removal, on SQLite and PostgreSQL, the kept
//! numbers (and what each record's chips keep per intent) equal what the
//! items and attempts say, and the filters answer
//! the records they name; a name search finds the same names through
//! either back-end's trigram index as without it.

mod common;

use common::{on_every_backend, TestServer};
use engine::connectors::scripted::{ScriptedConnector, Step};
use engine::connectors::seam::FireError;
use model::{BuiltinCapability as B, CostTier, RecordFilter, TriageVerb};
use sqlx::Row;

/// `alpha` finds two, nothing, one, nothing, fails, finds one; `beta`
/// finds one.
async fn server(db: engine::store::testing::TestDatabase) -> TestServer {
    let web = [B::SearchWeb.into()];
    let alpha = [
        Step::Found(2),
        Step::Empty,
        Step::Found(1),
        Step::Empty,
        Step::Fail(FireError::Timeout {
            after: std::time::Duration::from_secs(1),
        }),
        Step::Found(1),
    ];
    let free = |id| ScriptedConnector::registration(id, CostTier::Free, &web);
    let connectors = vec![
        (free("alpha"), ScriptedConnector::new("alpha", alpha)),
        (
            free("beta"),
            ScriptedConnector::new("beta", [Step::Found(1)]),
        ),
    ];
    TestServer::with_scripted(db, connectors).await
}

/// Each record's kept numbers beside the same numbers counted again.
async fn kept_and_counted(server: &TestServer, set: i64) -> Vec<(i64, [i64; 5], [i64; 5])> {
    let rows = sqlx::query(
        "SELECT r.id, r.items_count, r.new_items, r.not_found_attempts, r.failing_chips, \
         COALESCE(r.last_found_at, -1) AS last_found_at, \
         (SELECT COUNT(*) FROM items i WHERE i.record_id = r.id) AS items, \
         (SELECT COUNT(*) FROM items i WHERE i.record_id = r.id AND i.state = 'new') AS new_items_now, \
         (SELECT COUNT(*) FROM connector_history h WHERE h.record_id = r.id \
          AND h.outcome = 'not_found') AS not_found_now, \
         (SELECT COUNT(*) FROM chip_facts f WHERE f.record_id = r.id \
          AND f.failed > 0 AND f.items = 0) AS failing_now, \
         COALESCE((SELECT MAX(i.first_seen_at) FROM items i WHERE i.record_id = r.id), -1) AS newest \
         FROM records r WHERE r.record_set_id = $1 ORDER BY r.position",
    )
    .bind(set)
    .fetch_all(server.state.engine.store().pool())
    .await
    .unwrap();
    rows.iter()
        .map(|r| {
            let n = |c: &str| r.try_get::<i64, _>(c).unwrap();
            (
                n("id"),
                [
                    n("items_count"),
                    n("new_items"),
                    n("not_found_attempts"),
                    n("failing_chips"),
                    n("last_found_at"),
                ],
                [
                    n("items"),
                    n("new_items_now"),
                    n("not_found_now"),
                    n("failing_now"),
                    n("newest"),
                ],
            )
        })
        .collect()
}

/// What each record's chips keep per intent (items, failed attempts,
/// attempts in flight) beside the same numbers counted again; every
/// intent with items or attempts has its row.
async fn chips_kept_and_counted(
    server: &TestServer,
    set: i64,
) -> Vec<(i64, String, [i64; 3], [i64; 3])> {
    let pool = server.state.engine.store().pool();
    let unkept: i64 = sqlx::query_scalar(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM (SELECT record_id, intent FROM items \
         UNION SELECT record_id, intent FROM connector_history) c \
         JOIN records r ON r.id = c.record_id WHERE r.record_set_id = $1 AND NOT EXISTS \
         (SELECT 1 FROM chip_facts f WHERE f.record_id = c.record_id AND f.intent = c.intent)",
    )
    .bind(set)
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(unkept, 0, "every chip with items or attempts is kept");
    let rows = sqlx::query(
        "SELECT f.record_id, f.intent, f.items, f.failed, f.in_flight, \
         (SELECT COUNT(*) FROM items i WHERE i.record_id = f.record_id AND i.intent = f.intent) AS items_now, \
         (SELECT COUNT(*) FROM connector_history h WHERE h.record_id = f.record_id \
          AND h.intent = f.intent AND h.outcome IN ('error', 'unknown', 'rate_limited')) AS failed_now, \
         (SELECT COUNT(*) FROM connector_history h WHERE h.record_id = f.record_id \
          AND h.intent = f.intent AND h.outcome IS NULL) AS in_flight_now \
         FROM chip_facts f WHERE f.record_set_id = $1 ORDER BY f.record_id, f.intent",
    )
    .bind(set)
    .fetch_all(pool)
    .await
    .unwrap();
    rows.iter()
        .map(|r| {
            let n = |c: &str| r.try_get::<i64, _>(c).unwrap();
            (
                n("record_id"),
                r.try_get::<String, _>("intent").unwrap(),
                [n("items"), n("failed"), n("in_flight")],
                [n("items_now"), n("failed_now"), n("in_flight_now")],
            )
        })
        .collect()
}

async fn filtered(server: &TestServer, set: i64, filter: RecordFilter) -> (Vec<i64>, i64) {
    let filter = serde_json::to_value(filter).unwrap();
    let (code, page) = server
        .get_json(&format!(
            "/api/record-sets/{set}/records?filter={}",
            filter.as_str().unwrap()
        ))
        .await;
    assert_eq!(code, 200, "{page}");
    (common::record_ids(&page), page["total"].as_i64().unwrap())
}

#[tokio::test]
async fn filters_follow_fires_decisions_and_undo_through_what_each_record_keeps() {
    on_every_backend(|db| async {
        let server = server(db).await;
        let me = server.me();
        let csv = "name\nAcme\nBolt\nCore\nDune\nEcho\nFern\n";
        let set = me.import("Companies", "test", csv).await.id;
        let ids = me.record_ids(set).await;
        for id in &ids {
            me.fire(*id, "web", Some("alpha")).await;
        }
        // Acme: one of two accepted; Core: discarded, then undone.
        let acme = me.items(ids[0]).await;
        me.triage(acme[0].id, TriageVerb::AcceptCanonical, acme[0].version)
            .await;
        let core = me.items(ids[2]).await;
        let discarded = me
            .triage(core[0].id, TriageVerb::Discard, core[0].version)
            .await;
        me.triage(core[0].id, TriageVerb::Undo, discarded.version)
            .await;
        // Bolt found nothing through alpha, then something through beta.
        me.fire(ids[1], "web", Some("beta")).await;

        for (id, kept, counted) in kept_and_counted(&server, set).await {
            assert_eq!(kept, counted, "record {id}: kept against counted");
        }
        let chips = chips_kept_and_counted(&server, set).await;
        assert_eq!(chips.len(), 6, "{chips:?}");
        for (id, intent, kept, counted) in chips {
            assert_eq!(kept, counted, "record {id}, {intent}: kept against counted");
        }
        let (unreviewed, total) = filtered(&server, set, RecordFilter::Unreviewed).await;
        assert_eq!(unreviewed, [ids[0], ids[1], ids[2], ids[5]]);
        assert_eq!(total, 4);
        // Dune alone found nothing and nothing since; Echo failed.
        assert_eq!(
            filtered(&server, set, RecordFilter::NothingFound).await,
            (vec![ids[3]], 1)
        );
        assert_eq!(
            filtered(&server, set, RecordFilter::Errors).await,
            (vec![ids[4]], 1)
        );
        let (all, total) = filtered(&server, set, RecordFilter::All).await;
        assert_eq!((all, total), (ids.clone(), 6));

        // Accepting every untriaged item empties the filter.
        for id in [ids[0], ids[1], ids[2], ids[5]] {
            for item in me.items(id).await {
                if item.state == model::TriageState::New {
                    me.triage(item.id, TriageVerb::AcceptCanonical, item.version)
                        .await;
                }
            }
        }
        assert_eq!(
            filtered(&server, set, RecordFilter::Unreviewed).await,
            (vec![], 0)
        );
        for (id, kept, counted) in kept_and_counted(&server, set).await {
            assert_eq!(kept, counted, "record {id}: kept against counted");
        }

        // Removing the set removes its records' items and attempts with it.
        let (code, body) = server.delete(&format!("/api/record-sets/{set}")).await;
        assert!(code == 200 || code == 204, "{code} {body}");
        assert!(kept_and_counted(&server, set).await.is_empty());
        assert!(chips_kept_and_counted(&server, set).await.is_empty());
        server.stop().await;
    })
    .await;
}

#[tokio::test]
async fn pages_of_every_record_start_where_their_offset_says() {
    on_every_backend(|db| async {
        let server = server(db).await;
        let me = server.me();
        // More than one import batch (200), so positions run across batches.
        let mut csv = String::from("name\n");
        for i in 0..450 {
            csv.push_str(&format!("Company {i:03}\n"));
        }
        let set = me.import("Many", "test", &csv).await.id;
        for (offset, first) in [(0, 0), (199, 199), (200, 200), (420, 420)] {
            let (code, page) = server
                .get_json(&format!(
                    "/api/record-sets/{set}/records?offset={offset}&limit=50"
                ))
                .await;
            assert_eq!(code, 200, "{page}");
            assert_eq!(page["total"], 450);
            let names: Vec<&str> = page["records"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["name"].as_str().unwrap())
                .collect();
            assert_eq!(names[0], format!("Company {first:03}"), "offset {offset}");
            assert_eq!(names.len(), 50.min(450 - offset));
        }
        server.stop().await;
    })
    .await;
}

#[tokio::test]
async fn a_search_finds_the_names_holding_it_whatever_their_case_and_its_letters() {
    on_every_backend(|db| async {
        let server = server(db).await;
        let me = server.me();
        let mut csv = String::from(
            "name\nAcme Ltd\nACME Labs\n\"Bolt \"\"100%\"\" Co\"\nCore_Works\nDune\nNew Dune\n",
        );
        // Enough other names that the index is worth reading for a few
        // matches (a small set's names are read directly).
        for i in 0..200 {
            csv.push_str(&format!("Filler {i:03}\n"));
        }
        let set = me.import("Companies", "test", &csv).await.id;
        let ids = me.record_ids(set).await;
        // Another set's names are never found in this one.
        me.import("Others", "test", "name\nAcme Other\nDune Other\n")
            .await;
        // Three letters or more go through the trigram index on SQLite;
        // fewer, and PostgreSQL, through LIKE: the same answers.
        let cases: [(&str, Vec<i64>); 10] = [
            ("acme", vec![ids[0], ids[1]]),
            ("ACME L", vec![ids[0], ids[1]]),
            ("cm", vec![ids[0], ids[1]]),
            ("\"100%\"", vec![ids[2]]),
            ("0%", vec![ids[2]]),
            ("e_w", vec![ids[3]]),
            ("_", vec![ids[3]]),
            ("  dune ", vec![ids[4], ids[5]]),
            ("new dune", vec![ids[5]]),
            ("zzz", vec![]),
        ];
        for (search, expected) in cases {
            let total = i64::try_from(expected.len()).unwrap();
            assert_eq!(
                searched(&server, set, search).await,
                (expected, total),
                "search {search:?}"
            );
        }
        // A search within a filter: of the Acmes, the one fired.
        me.fire(ids[0], "web", Some("alpha")).await;
        let (code, page) = server
            .get_json(&format!(
                "/api/record-sets/{set}/records?filter=unreviewed&search=acme"
            ))
            .await;
        assert_eq!(code, 200, "{page}");
        assert_eq!(common::record_ids(&page), [ids[0]]);
        server.stop().await;
    })
    .await;
}

async fn searched(server: &TestServer, set: i64, search: &str) -> (Vec<i64>, i64) {
    let (code, page) = server
        .get_json(&format!(
            "/api/record-sets/{set}/records?search={}",
            url_encoded(search)
        ))
        .await;
    assert_eq!(code, 200, "{page}");
    (common::record_ids(&page), page["total"].as_i64().unwrap())
}

/// `text` as a query string's value.
fn url_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
