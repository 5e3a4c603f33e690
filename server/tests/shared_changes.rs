//! Two processes on one PostgreSQL database, as a deployment behind a load
//! balancer: a workspace manifest saved, changed or removed through one
//! serves (or stops serving) on the other within a second, without a
//! restart.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::shared::{shared_provider, Seen};
use common::{news_manifest, TestServer};
use serde_json::Value;

/// The ids of the connectors the test user's workspace sees on `server`.
async fn connectors(server: &TestServer) -> Vec<(String, String)> {
    let (_, listed) = server.get_json("/api/connectors").await;
    listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["display_name"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// Waits until `server` lists `id` named `name` (or, with `None`, does not
/// list it); answers how long it took.
async fn seen_on(server: &TestServer, id: &str, name: Option<&str>) -> Duration {
    let started = Instant::now();
    common::until("the change to reach the other process", || async {
        let listed = connectors(server).await;
        match name {
            Some(name) => listed.iter().any(|(i, n)| i == id && n == name),
            None => !listed.iter().any(|(i, _)| i == id),
        }
    })
    .await;
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manifest_saved_on_one_process_serves_on_the_other_and_its_removal_too() {
    let Some(db) = engine::store::testing::postgres().await else {
        return;
    };
    let a = TestServer::start_for_fakes(db.shared().unwrap(), |_| {}).await;
    let b = TestServer::start_for_fakes(db, |_| {}).await;
    let seen = Arc::new(Seen::default());
    let base = shared_provider(seen.clone()).await;
    let url = format!("{base}/news");

    a.save_manifest(&news_manifest("own-news", "Own news", &url, None))
        .await;
    let took = seen_on(&b, "own-news", Some("Own news")).await;
    // It fires there: a capability call through B reaches the provider.
    let (status, body) = b
        .post_json(
            "/api/capabilities/search.news/call",
            serde_json::json!({"query": "acme", "connector": "own-news"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "completed", "{body}");
    assert_eq!(seen.good.load(std::sync::atomic::Ordering::SeqCst), 1);

    // Changed through A: B serves the new version.
    a.save_manifest(&news_manifest("own-news", "Own news v2", &url, None))
        .await;
    seen_on(&b, "own-news", Some("Own news v2")).await;

    // Removed through A: B stops serving it.
    let (status, body): (u16, Value) = a.delete("/api/manifests/own-news").await;
    assert_eq!(status, 204, "{body}");
    seen_on(&b, "own-news", None).await;
    eprintln!("a saved manifest reached the other process in {took:?}");
    a.stop().await;
    b.stop().await;
}
