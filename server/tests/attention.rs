//! Operator attention end to end against a local fake provider: a key that
//! worked and is then refused, and errors that keep a connector suspended
//! past the threshold, each raise an item for the workspace's admins (a
//! live event, `GET /api/connectors/attention` saying what to do, a
//! `/metrics` series) that members cannot read and that goes when the key
//! is set again. On SQLite and PostgreSQL.

mod common;

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing;
use axum::Json;
use common::{events_until, news_manifest, on_every_backend, TestServer};
use engine::connectors::health::SuspendPolicy;
use model::Role;
use serde_json::{json, Value};

/// A news search on `/news` that answers with the status the test sets:
/// 200 with one result, or that status with an error body.
async fn provider(status: Arc<AtomicU16>) -> String {
    let app = axum::Router::new().route(
        "/news",
        routing::get(move || {
            let status = status.load(Ordering::SeqCst);
            async move {
                match status {
                    200 => (
                        StatusCode::OK,
                        Json(json!({"results": [{"url": "https://news.example.org/1", "title": "One", "text": "one"}]})),
                    ),
                    code => (
                        StatusCode::from_u16(code).unwrap(),
                        Json(json!({"error": "Invalid API key"})),
                    ),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

/// A news manifest on `base/news`; with `key`, it sends that secret as
/// `api_key`.
fn manifest(id: &str, base: &str, key: Option<&str>) -> String {
    news_manifest(
        id,
        &format!("{id} news"),
        &format!("{base}/news"),
        key.map(|var| ("api_key", var)),
    )
}

async fn set_secret(server: &TestServer, name: &str, value: &str) {
    let (status, body) = server
        .put_json(&format!("/api/secrets/{name}"), json!({ "value": value }))
        .await;
    assert_eq!(status, 200, "{body}");
}

/// Fires pack `news` on a new record; returns its one attempt.
async fn fire_news(server: &TestServer) -> Value {
    let set = server
        .me()
        .import("Set", "test", "name\nAda Lovelace\n")
        .await;
    let record = server.me().record_ids(set.id).await[0];
    let (status, body) = server
        .post_json(
            &format!("/api/records/{record}/fire"),
            json!({"pack": "news"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["results"][0]["attempts"][0].clone()
}

async fn metrics(server: &TestServer) -> String {
    let res = server
        .client
        .get(server.at("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    res.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_that_worked_and_then_is_refused_needs_an_admin_until_it_is_set_again() {
    on_every_backend(|db| async {
        let status = Arc::new(AtomicU16::new(200));
        let base = provider(status.clone()).await;
        let server = TestServer::start_for_fakes(db, |_| {}).await;
        let member = server
            .user("member@example.org", common::TEST_WORKSPACE, Role::Member)
            .await;
        let key = "sk-keyed-4711-SECRET";
        server
            .save_manifest(&manifest("keyed", &base, Some("KEYED_KEY")))
            .await;
        set_secret(&server, "KEYED_KEY", key).await;

        // It worked.
        let attempt = fire_news(&server).await;
        assert_eq!(attempt["outcome"], "found", "{attempt}");
        let (code, none) = server.get_json("/api/connectors/attention").await;
        assert_eq!((code, none), (200, json!([])));

        // Then the provider refuses the key: the admins are told, live.
        let stream = server.open_events("").await;
        status.store(401, Ordering::SeqCst);
        let attempt = fire_news(&server).await;
        assert_eq!(attempt["outcome"], "error", "{attempt}");
        let seen = events_until(stream, |e| e["type"] == "attention_raised").await;
        let raised = &seen.last().unwrap()["attention"];
        assert_eq!(raised["connector_id"], "keyed", "{raised}");
        assert_eq!(raised["kind"], "key-refused", "{raised}");

        let (code, list) = server.get_json("/api/connectors/attention").await;
        assert_eq!(code, 200);
        assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
        let item = &list[0];
        assert_eq!(item, raised, "the event and the list say the same");
        assert_eq!(item["own_key"], true);
        let what = item["what"].as_str().unwrap();
        assert!(
            what.starts_with("keyed news's key was refused: ")
                && what.contains("HTTP 401: Invalid API key"),
            "{what}"
        );
        assert_eq!(
            item["to_do"],
            "Set this workspace's KEYED_KEY again under Secrets; the next fire tries the new key."
        );
        assert!(
            !list.to_string().contains(key),
            "the key in an attention item: {list}"
        );
        let text = metrics(&server).await;
        assert!(
            text.contains(
                "switchyard_connector_attention{connector=\"keyed\",kind=\"key-refused\"} 1"
            ),
            "{text}"
        );

        // Members are not asked to act.
        let res = member
            .get(server.at("/api/connectors/attention"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 403);

        // A new key ends it.
        status.store(200, Ordering::SeqCst);
        set_secret(&server, "KEYED_KEY", "sk-keyed-4712-NEW").await;
        let (_, list) = server.get_json("/api/connectors/attention").await;
        assert_eq!(list, json!([]));
        assert!(!metrics(&server)
            .await
            .contains("switchyard_connector_attention{"));
        assert_eq!(fire_news(&server).await["outcome"], "found");
        server.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn errors_that_keep_a_connector_suspended_past_the_threshold_need_an_admin() {
    on_every_backend(|db| async {
        let status = Arc::new(AtomicU16::new(502));
        let base = provider(status.clone()).await;
        let server = TestServer::start_for_fakes(db, |_| {}).await;
        server.save_manifest(&manifest("flaky", &base, None)).await;
        // One suspension longer than the 15 minutes admins wait out.
        server
            .state
            .engine
            .registry()
            .set_suspend_policy(SuspendPolicy {
                after: 2,
                base: Duration::from_secs(20 * 60),
                max: Duration::from_secs(60 * 60),
            });
        let stream = server.open_events("").await;
        // The chain retries a 502 once: two errors in a row.
        let attempt = fire_news(&server).await;
        assert_eq!(attempt["outcome"], "error", "{attempt}");
        let seen = events_until(stream, |e| e["type"] == "attention_raised").await;
        let raised = &seen.last().unwrap()["attention"];
        assert_eq!(raised["kind"], "long-suspension", "{raised}");

        let (_, list) = server.get_json("/api/connectors/attention").await;
        assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
        let item = &list[0];
        assert_eq!(item["connector_id"], "flaky");
        assert_eq!(item["own_key"], false);
        let what = item["what"].as_str().unwrap();
        assert!(
            what.starts_with("flaky news keeps failing and stays suspended: 2 errors in a row")
                && what.contains("HTTP 502"),
            "{what}"
        );
        assert!(
            item["to_do"]
                .as_str()
                .unwrap()
                .contains("switch it off here"),
            "{item}"
        );
        assert!(metrics(&server).await.contains(
            "switchyard_connector_attention{connector=\"flaky\",kind=\"long-suspension\"} 1"
        ));

        // Switched off, it needs no one.
        let (code, _) = server
            .post_json("/api/connectors/flaky/disable", json!({}))
            .await;
        assert_eq!(code, 200);
        let (_, list) = server.get_json("/api/connectors/attention").await;
        assert_eq!(list, json!([]));
        server.stop().await;
    })
    .await;
}
