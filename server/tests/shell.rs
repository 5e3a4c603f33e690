//! The server answers its health check, its API errors and its pages.
//!
//! Pages render on a multi-threaded runtime, as under `serve`: one page
//! render hung once on a single-threaded test runtime in CI and never here.

mod common;

use common::TestServer;
use model::Health;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_answers_ok_with_the_version() {
    let server = TestServer::start().await;
    let res = server
        .client
        .get(server.at("/api/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let health: Health = res.json().await.unwrap();
    assert_eq!(health, Health::ok(env!("CARGO_PKG_VERSION")));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_answers_on_postgres_too() {
    let Some(db) = engine::store::testing::postgres().await else {
        return;
    };
    let server = TestServer::start_on(db).await;
    let res = server
        .client
        .get(server.at("/api/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_api_routes_answer_json_404() {
    let server = TestServer::start().await;
    let res = server
        .client
        .get(server.at("/api/nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body["error"], "not_found");
    assert!(body["detail"].as_str().is_some_and(|d| !d.is_empty()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_record_sets_page_is_rendered_on_the_server() {
    let server = TestServer::start().await;
    let res = server
        .client
        .get(server.at("/record-sets"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let html = res.text().await.unwrap();
    // Hydration's empty markers (`<!>`) sit between elements and text.
    assert!(
        html.replace("<!>", "").contains("<h1>Record sets</h1>"),
        "{html}"
    );
    assert!(html.contains("No record sets yet."), "{html}");
    assert!(html.contains(r#"href="/inventory""#), "{html}");
    // The build's name for the script (content-hashed when the site is built).
    let name = server.state.leptos_options.output_name.clone();
    assert!(name.starts_with("switchyard"), "{name}");
    assert!(
        html.contains(&format!("/pkg/{name}.js")),
        "{name} in {html}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_pages_answer_404() {
    let server = TestServer::start().await;
    let res = server
        .client
        .get(server.at("/no-such-page"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    assert!(res.text().await.unwrap().contains("Not found"));
}
