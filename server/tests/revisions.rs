//! Changed answers are evidence, end to end against a local fake provider:
//! when the connector that found an address reports it again in other
//! words, the item shows the new words, keeps its triage and gains a
//! revision saying what it said before, from which connector and when;
//! another provider's own words for the same page change nothing, and an
//! answer in the same words adds evidence only. On SQLite and PostgreSQL.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::routing;
use axum::Json;
use common::{news_manifest, on_every_backend, TestServer};
use model::{FireOutcome, FireReport, Item, TriageState, TriageVerb};
use serde_json::json;

/// `/words` says "Ada, engineer" of page A the first time and "Ada,
/// analyst" (with a new snippet) every time after; page B never changes.
/// `/other` describes page A in its own words.
async fn provider() -> String {
    let calls = Arc::new(AtomicUsize::new(0));
    let app = axum::Router::new()
        .route(
            "/words",
            routing::get(move || {
                let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
                let (title, text) = if first {
                    ("Ada, engineer", "Builds engines.")
                } else {
                    ("Ada, analyst", "Analyses engines.")
                };
                async move {
                    Json(json!({"results": [
                        {"url": "https://news.example.org/a", "title": title, "text": text},
                        {"url": "https://news.example.org/b", "title": "Stable", "text": "Same."},
                    ]}))
                }
            }),
        )
        .route(
            "/other",
            routing::get(|| async {
                Json(json!({"results": [
                    {"url": "https://news.example.org/a", "title": "Lovelace profile", "text": "Other words."},
                ]}))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// Fires the news pack on a record through one connector, which finds.
async fn fire(server: &TestServer, record: i64, connector: &str) -> FireReport {
    let mut answer = server
        .me()
        .fire_through(record, "news", Some(connector))
        .await;
    let report = answer.results.remove(0);
    assert_eq!(
        report.attempts[0].end.outcome,
        Some(FireOutcome::Found),
        "{report:?}"
    );
    report
}

fn item<'a>(report: &'a FireReport, url: &str) -> &'a Item {
    report
        .items
        .iter()
        .find(|i| i.url == url)
        .unwrap_or_else(|| panic!("no {url} in {report:?}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_known_page_in_new_words_gains_a_revision_and_keeps_its_triage() {
    on_every_backend(|db| async {
        let base = provider().await;
        let server = TestServer::start_for_fakes(db, |_| {}).await;
        for (id, path) in [("words-news", "/words"), ("other-news", "/other")] {
            server
                .save_manifest(&news_manifest(id, id, &format!("{base}{path}"), None))
                .await;
        }
        let me = server.me();
        let set = me
            .import("Set", "test", "name,city\nAda Lovelace,London\n")
            .await;
        let record = me.record_ids(set.id).await[0];
        let (a, b) = ("https://news.example.org/a", "https://news.example.org/b");

        let first = fire(&server, record, "words-news").await;
        let found = item(&first, a);
        assert_eq!(found.title, "Ada, engineer");
        assert!(found.revision.is_none(), "new is not changed: {found:?}");

        // Another provider's words for the same page are its own: evidence, no revision.
        let other = fire(&server, record, "other-news").await;
        let seen = item(&other, a);
        assert_eq!(seen.title, "Ada, engineer", "{seen:?}");
        assert!(seen.revision.is_none(), "{seen:?}");

        let accepted = me
            .triage(found.id, TriageVerb::AcceptCanonical, found.version)
            .await;

        let again = fire(&server, record, "words-news").await;
        let changed = item(&again, a);
        assert_eq!(changed.id, found.id, "the same item: {changed:?}");
        assert_eq!(changed.title, "Ada, analyst", "{changed:?}");
        assert_eq!(changed.snippet, "Analyses engines.", "{changed:?}");
        assert_eq!(
            changed.state,
            TriageState::AcceptedCanonical,
            "triage is kept: {changed:?}"
        );
        assert_eq!(changed.version, accepted.version, "{changed:?}");
        let revision = changed.revision.as_ref().expect("a revision");
        assert_eq!(revision.connector_id, "words-news", "{changed:?}");
        assert_eq!(revision.title_before, "Ada, engineer", "{changed:?}");
        assert_eq!(revision.snippet_before, "Builds engines.", "{changed:?}");
        assert_eq!(Some(revision.fire_id), again.fire_id, "{changed:?}");
        assert!(
            revision.changed_at >= accepted.triaged_at.expect("when it was triaged"),
            "{changed:?}"
        );
        assert_eq!(changed.evidence.len(), 3, "{changed:?}");
        let stable = item(&again, b);
        assert!(
            stable.revision.is_none(),
            "same words, no revision: {stable:?}"
        );

        // The same words again: one more sighting, the revision unchanged.
        let third = fire(&server, record, "words-news").await;
        let same = item(&third, a);
        assert_eq!(same.revision.as_ref(), Some(revision), "{same:?}");
        assert_eq!(same.evidence.len(), 4, "{same:?}");
        server.stop().await;
    })
    .await;
}
