//! A provider every workspace shares through the operator's connector
//! `shared`, whose answer depends on the query (refusals, rate limits,
//! outages, answers too large), and the servers and clients the isolation
//! and billing tests meet it with.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use engine::connectors::manifest::{Format, Manifest, ManifestConnector};
use model::Role;
use serde_json::{json, Value};

use super::TestServer;

/// What a call of `shared` costs unless a test says otherwise.
pub const SHARED_PRICE: &str = "{ per_call = 1, unit = \"USD\", bills_empty = true }";

/// Requests the shared provider saw, by the first word of their query.
#[derive(Default)]
pub struct Seen {
    pub bad: AtomicUsize,
    pub limit: AtomicUsize,
    pub big: AtomicUsize,
    pub broken: AtomicUsize,
    pub good: AtomicUsize,
    /// Every query, in the order it arrived.
    pub order: std::sync::Mutex<Vec<String>>,
}

/// A news search on `/news?q=` whose answer depends on the query's first
/// word: `bad` is refused with 400, `limit` is told to wait until 9999,
/// `broken` gets a 503, `big` gets a success too large to read; each echoes
/// the query in its error, as providers do. Anything else finds one page.
pub async fn shared_provider(seen: Arc<Seen>) -> String {
    let app = axum::Router::new().route(
        "/news",
        axum::routing::get(
            move |Query(q): Query<std::collections::HashMap<String, String>>| {
                let seen = seen.clone();
                async move {
                    let q = q.get("q").cloned().unwrap_or_default();
                    seen.order.lock().unwrap().push(q.clone());
                    let word = q.split_whitespace().next().unwrap_or_default().to_owned();
                    let echo = json!({"error": format!("Invalid query: {q}")}).to_string();
                    match word.as_str() {
                        "bad" => {
                            seen.bad.fetch_add(1, Ordering::SeqCst);
                            (StatusCode::BAD_REQUEST, echo).into_response()
                        }
                        "limit" => {
                            seen.limit.fetch_add(1, Ordering::SeqCst);
                            (
                                StatusCode::TOO_MANY_REQUESTS,
                                [("retry-after", "Fri, 31 Dec 9999 23:59:59 GMT")],
                                echo,
                            )
                                .into_response()
                        }
                        "broken" => {
                            seen.broken.fetch_add(1, Ordering::SeqCst);
                            (StatusCode::SERVICE_UNAVAILABLE, echo).into_response()
                        }
                        "big" => {
                            seen.big.fetch_add(1, Ordering::SeqCst);
                            (StatusCode::OK, "[".repeat(3 * 1024 * 1024)).into_response()
                        }
                        _ => {
                            seen.good.fetch_add(1, Ordering::SeqCst);
                            axum::Json(json!({"results": [
                            {"url": format!("https://news.example.org/{}", q.len()), "title": "One"}
                        ]}))
                        .into_response()
                        }
                    }
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

/// A server whose connector `shared` (the operator's, every workspace's)
/// asks the shared provider at `base`, at 1 USD a call.
pub async fn server_with_shared(
    db: engine::store::testing::TestDatabase,
    base: &str,
) -> TestServer {
    server_with_shared_as(db, base, "").await
}

/// The same, with `extra` lines in the connector's manifest (a rate hint).
pub async fn server_with_shared_as(
    db: engine::store::testing::TestDatabase,
    base: &str,
    extra: &str,
) -> TestServer {
    server_sharing(
        db,
        base,
        "{ per_call = 1, unit = \"USD\", bills_empty = true }",
        extra,
    )
    .await
}

/// A server whose connector `shared` asks the shared provider at `base`,
/// priced at `cost` (a manifest's inline table), with `extra` lines.
pub async fn server_sharing(
    db: engine::store::testing::TestDatabase,
    base: &str,
    cost: &str,
    extra: &str,
) -> TestServer {
    server_sharing_configured(db, base, cost, extra, |_| {}).await
}

/// [`server_sharing`] with the operator's settings changed by `configure`.
pub async fn server_sharing_configured(
    db: engine::store::testing::TestDatabase,
    base: &str,
    cost: &str,
    extra: &str,
    configure: impl FnOnce(&mut server::Config),
) -> TestServer {
    let text = super::news_manifest("shared", "Shared news", &format!("{base}/news"), None)
        .replace(
            "cost_tier = \"free\"",
            &format!("cost_tier = \"paid\"\ncost = {cost}\n{extra}"),
        );
    let manifest = Manifest::parse(&text, Format::Toml).unwrap();
    let server = TestServer::start_for_fakes(db, configure).await;
    let connector = ManifestConnector::new(
        Arc::new(manifest.clone()),
        server.state.engine.outbound().clone(),
        Arc::new(|_| None),
    );
    server
        .state
        .engine
        .registry()
        .register(manifest.registration(), Arc::new(connector))
        .unwrap();
    server
}

/// The shared provider, a server whose connector `shared` asks it (with
/// `extra` lines in its manifest), and a client of another workspace.
pub async fn shared_with_a_neighbour(
    db: engine::store::testing::TestDatabase,
    extra: &str,
) -> (Arc<Seen>, TestServer, reqwest::Client) {
    let seen = Arc::new(Seen::default());
    let base = shared_provider(seen.clone()).await;
    let server = server_with_shared_as(db, &base, extra).await;
    let neighbour = server
        .user("nina@other.example", "other", Role::Admin)
        .await;
    (seen, server, neighbour)
}

/// Imports `names` as a set of `client`'s workspace; fires pack `news` on
/// each record in turn through `client`; returns each fire's first attempt
/// (or, when a cap or budget stopped the whole chain, its 429 answer).
pub async fn fire_each(
    server: &TestServer,
    client: &reqwest::Client,
    names: &[&str],
) -> Vec<Value> {
    let csv = format!("name\n{}\n", names.join("\n"));
    let person = server.as_(client);
    let set = person.import("Set", "test", &csv).await;
    let mut attempts = Vec::new();
    for record in person.record_ids(set.id).await {
        let res = client
            .post(server.at(&format!("/api/records/{record}/fire")))
            .json(&json!({"pack": "news"}))
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        let body: Value = res.json().await.unwrap();
        match status {
            200 => attempts.push(body["results"][0]["attempts"][0].clone()),
            429 => attempts.push(body),
            _ => panic!("{status}: {body}"),
        }
    }
    attempts
}

pub async fn shared_status(server: &TestServer, client: &reqwest::Client) -> Value {
    let (_, list) = server.get_json_as(client, "/api/connectors").await;
    list.as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "shared")
        .cloned()
        .expect("the shared connector is listed")
}

/// Sets `client`'s workspace a monthly budget of `usd` for `shared`.
pub async fn budget_shared(server: &TestServer, client: &reqwest::Client, usd: f64) {
    let res = client
        .put(server.at("/api/budgets"))
        .json(&json!({"connector_id": "shared", "unit": "USD", "monthly_limit": usd}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

/// The shared provider and a server whose `shared` is priced at `cost`,
/// with a budget of `usd` for the test user's workspace.
pub async fn priced(cost: &str, usd: f64) -> (Arc<Seen>, TestServer) {
    let seen = Arc::new(Seen::default());
    let base = shared_provider(seen.clone()).await;
    let server = server_sharing(engine::store::testing::sqlite(), &base, cost, "").await;
    budget_shared(&server, &server.client, usd).await;
    (seen, server)
}
