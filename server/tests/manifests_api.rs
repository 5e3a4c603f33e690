//! Manifest connectors added through the API, and workspace secrets, end to
//! end against a local fake provider: a saved manifest registers at once for
//! its workspace only, fires, survives a restart, is edited and removed; a
//! test fire shows results and the classified outcome without saving; a
//! secret is sealed, never returned, and used by its workspace's fires only;
//! a key one workspace set that the provider refuses switches the connector
//! off in that workspace only. Every attempt leaves a receipt without the
//! key, and a page that fails after the first keeps what the first found.
//! On SQLite and PostgreSQL.

mod common;

use std::sync::{Arc, Mutex};

use axum::extract::Query;
use axum::http::{HeaderMap, StatusCode};
use axum::routing;
use axum::Json;
use common::{on_every_backend, TestServer, TEST_PACKS};
use engine::connectors::guard::{AllowList, Outbound};
use engine::connectors::manifest::{Format, Manifest, ManifestConnector};
use engine::packs::Catalog;
use engine::store::testing::{self, TestDatabase};
use model::Role;
use serde_json::{json, Value};

type Seen = Arc<Mutex<Vec<String>>>;

/// A news search: `/search?q=` answers two results naming the query, and
/// notes the `x-api-key` it got; `/keyed` answers only the key `good` and
/// refuses anything else with 401.
async fn provider(seen: Seen) -> String {
    let answer = |q: &str| {
        Json(json!({"results": [
            {"url": "https://news.example.org/1", "title": format!("First on {q}"), "text": "<i>one</i>"},
            {"url": "https://news.example.org/2", "title": format!("Second on {q}"), "text": "two"},
        ]}))
    };
    let search_seen = seen.clone();
    let app = axum::Router::new()
        .route(
            "/search",
            routing::get(
                move |Query(q): Query<std::collections::HashMap<String, String>>,
                      headers: HeaderMap| {
                    let seen = search_seen.clone();
                    async move {
                        let key = headers
                            .get("x-api-key")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("")
                            .to_owned();
                        seen.lock().unwrap().push(key);
                        answer(q.get("q").map_or("", String::as_str))
                    }
                },
            ),
        )
        .route(
            "/keyed",
            routing::get(
                move |Query(q): Query<std::collections::HashMap<String, String>>,
                      headers: HeaderMap| async move {
                    let key = headers.get("x-api-key").and_then(|v| v.to_str().ok());
                    if key == Some("good") {
                        Ok(answer(q.get("q").map_or("", String::as_str)))
                    } else if key == Some("busy") {
                        Err((StatusCode::TOO_MANY_REQUESTS, "{\"error\": \"slow down\"}"))
                    } else {
                        Err((StatusCode::UNAUTHORIZED, "{\"error\": \"invalid key\"}"))
                    }
                },
            ),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app.merge(paged())).await.unwrap() });
    url
}

/// `/paged?page=`: page 1 answers two results, any later page is a 502.
fn paged() -> axum::Router {
    axum::Router::new().route(
        "/paged",
        routing::get(
            |Query(q): Query<std::collections::HashMap<String, String>>| async move {
                if q.get("page").map(String::as_str) == Some("1") {
                    Ok(Json(json!({"results": [
                        {"url": "https://news.example.org/p1", "title": "Paged one", "text": "1"},
                        {"url": "https://news.example.org/p2", "title": "Paged two", "text": "2"},
                    ]})))
                } else {
                    Err((StatusCode::BAD_GATEWAY, "{\"error\": \"bad gateway\"}"))
                }
            },
        ),
    )
}

/// A news manifest on `base{path}`; with `key`, it sends that secret.
fn manifest(id: &str, name: &str, base: &str, path: &str, key: Option<&str>) -> String {
    let (requires, header) = match key {
        Some(k) => (
            format!("requires_env = [\"{k}\"]\n"),
            format!("headers = {{ x-api-key = \"{{{{secret.{k}}}}}\" }}\n"),
        ),
        None => (String::new(), String::new()),
    };
    format!(
        r#"id = "{id}"
display_name = "{name}"
short_label = "FN"
capabilities = ["search.news"]
cost_tier = "free"
{requires}
[request]
url = "{base}{path}"
query = {{ q = "{{{{query}}}}" }}
{header}
[response]
items = "$.results[*]"
url = "$.url"
title = "$.title"
snippet = "$.text"
"#
    )
}

/// A server with the test catalogue that may reach the fake provider.
async fn server(db: TestDatabase) -> TestServer {
    TestServer::start_for_fakes(db, |_| {}).await
}

async fn post_manifest(client: &reqwest::Client, url: String, text: &str) -> (u16, Value) {
    let res = client
        .post(url)
        .header("content-type", "application/toml")
        .body(text.to_owned())
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

async fn get_ok(client: &reqwest::Client, url: String) -> Value {
    let res = client.get(url).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    res.json().await.unwrap()
}

/// The ids of the connectors a client's workspace sees.
async fn connector_ids(server: &TestServer, client: &reqwest::Client) -> Vec<String> {
    get_ok(client, server.at("/api/connectors"))
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn connector(server: &TestServer, client: &reqwest::Client, id: &str) -> Value {
    get_ok(client, server.at("/api/connectors"))
        .await
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .cloned()
        .unwrap_or(Value::Null)
}

/// Imports one record and fires the news pack on it.
async fn fire_news(server: &TestServer, client: &reqwest::Client) -> Value {
    let person = server.as_(client);
    let set = person
        .import("Set", "test", "name,city\nAda Lovelace,London\n")
        .await;
    let record = person.record_ids(set.id).await[0];
    let res = client
        .post(server.at(&format!("/api/records/{record}/fire")))
        .json(&json!({"pack": "news"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.unwrap();
    body["results"][0].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_manifest_saved_through_the_api_serves_its_workspace_only_and_outlives_a_restart() {
    on_every_backend(|db| async {
        let base = provider(Seen::default()).await;
        let server = server(db).await;
        let other = server.user("eve@other.example", "other", Role::Admin).await;
        let manifests = server.at("/api/manifests");

        // A manifest with mistakes is refused with every one of them.
        let broken = manifest("Bad Id", "", &base, "/search", None).replace(
            "cost_tier = \"free\"",
            "cost_tier = \"free\"\nrate_hints = { daily_cap = 0 }",
        );
        let (status, body) = post_manifest(&server.client, manifests.clone(), &broken).await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(body["error"], "invalid");
        let fields: Vec<&str> = body["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["field"].as_str().unwrap())
            .collect();
        assert_eq!(
            fields,
            ["id", "display_name", "rate_hints.daily_cap"],
            "{body}"
        );
        assert!(!connector_ids(&server, &server.client)
            .await
            .contains(&"Bad Id".to_owned()));

        // A good one registers at once, for this workspace.
        let text = manifest("fake-news", "Fake news", &base, "/search", None);
        let (status, body) = post_manifest(&server.client, manifests.clone(), &text).await;
        assert_eq!(status, 201, "{body}");
        assert_eq!(body["id"], "fake-news");
        assert_eq!(
            body["source"],
            json!({"kind": "workspace", "workspace_id": server.workspace_id})
        );
        assert!(connector_ids(&server, &server.client)
            .await
            .contains(&"fake-news".to_owned()));
        let report = fire_news(&server, &server.client).await;
        assert_eq!(
            report["attempts"][0]["connector_id"], "fake-news",
            "{report}"
        );
        assert_eq!(report["attempts"][0]["outcome"], "found", "{report}");
        assert_eq!(
            report["items"][0]["title"], "First on Ada Lovelace",
            "{report}"
        );
        assert_eq!(
            report["items"][0]["snippet"], "one",
            "markup is dropped: {report}"
        );

        // Another workspace neither sees it, nor fires it, nor takes its id.
        assert!(!connector_ids(&server, &other)
            .await
            .contains(&"fake-news".to_owned()));
        let caps = get_ok(&other, server.at("/api/capabilities")).await;
        let news = caps
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "search.news")
            .unwrap();
        assert_eq!(news["connectors"], 0, "{caps}");
        let report = fire_news(&server, &other).await;
        assert!(
            report["attempts"].as_array().unwrap().is_empty(),
            "{report}"
        );
        let (status, body) = post_manifest(&other, manifests.clone(), &text).await;
        assert_eq!(status, 409, "{body}");
        assert!(
            body["detail"]
                .as_str()
                .unwrap()
                .contains("another workspace"),
            "{body}"
        );
        assert!(get_ok(&other, manifests.clone())
            .await
            .as_array()
            .unwrap()
            .is_empty());
        let res = other
            .delete(server.at("/api/manifests/fake-news"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 404);

        // Saving the same id again replaces it.
        let edited = manifest("fake-news", "Fake news, edited", &base, "/search", None);
        let (status, body) = post_manifest(&server.client, manifests.clone(), &edited).await;
        assert_eq!(status, 201, "{body}");
        assert_eq!(
            connector(&server, &server.client, "fake-news").await["display_name"],
            "Fake news, edited"
        );
        let saved = get_ok(&server.client, manifests.clone()).await;
        assert_eq!(saved[0]["connector_id"], "fake-news");
        assert_eq!(saved[0]["text"], edited.as_str());
        assert_eq!(saved[0]["updated_by"], common::TEST_EMAIL);
        assert!(saved[0].get("error").is_none(), "{saved}");

        // JSON is accepted too.
        let spec = Manifest::parse(
            &manifest("json-news", "JSON news", &base, "/search", None),
            Format::Toml,
        )
        .unwrap()
        .spec;
        let res = server
            .client
            .post(manifests.clone())
            .json(&spec)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 201);

        // After a restart the saved manifests serve again.
        let db = server.stop_keeping_database().await;
        let server = self::server(db).await;
        assert_eq!(
            connector(&server, &server.client, "fake-news").await["display_name"],
            "Fake news, edited"
        );
        assert!(connector_ids(&server, &server.client)
            .await
            .contains(&"json-news".to_owned()));

        // Removed: gone at once, and a second removal is not found.
        let res = server
            .client
            .delete(server.at("/api/manifests/fake-news"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 204);
        assert!(!connector_ids(&server, &server.client)
            .await
            .contains(&"fake-news".to_owned()));
        let res = server
            .client
            .delete(server.at("/api/manifests/fake-news"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 404);
        server.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_test_fire_shows_results_and_the_classified_outcome_and_saves_nothing() {
    let base = provider(Seen::default()).await;
    let server = server(testing::sqlite()).await;
    let test = |query: &str| server.at(&format!("/api/manifests/test?query={query}"));

    let text = manifest("trial", "Trial", &base, "/search", None);
    let (status, report) = post_manifest(&server.client, test("Grace"), &text).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["outcome"], "found", "{report}");
    assert_eq!(report["results"][1]["title"], "Second on Grace");
    assert_eq!(report["results"][0]["url"], "https://news.example.org/1");

    // A refused request is classified as the dispatcher would.
    let refused = manifest("trial", "Trial", &base, "/keyed", None);
    let (_, report) = post_manifest(&server.client, test("Grace"), &refused).await;
    assert_eq!(report["outcome"], "error", "{report}");
    assert!(
        report["error"]
            .as_str()
            .unwrap()
            .starts_with("credentials refused"),
        "{report}"
    );

    // Without a query nothing is sent.
    let (_, report) = post_manifest(&server.client, test("%20"), &text).await;
    assert_eq!(report["problems"][0]["field"], "query", "{report}");
    assert!(report.get("outcome").is_none(), "{report}");

    // A draft that does not check is not fired: its mistakes come back.
    let (_, report) = post_manifest(&server.client, test("Grace"), "id = 3").await;
    assert!(report.get("outcome").is_none(), "{report}");
    assert!(
        !report["problems"].as_array().unwrap().is_empty(),
        "{report}"
    );

    // Nothing was saved or registered.
    assert!(get_ok(&server.client, server.at("/api/manifests"))
        .await
        .as_array()
        .unwrap()
        .is_empty());
    assert!(!connector_ids(&server, &server.client)
        .await
        .contains(&"trial".to_owned()));
    server.stop().await;

    // Without the allow list, a manifest may not reach this machine.
    let strict = TestServer::start().await;
    let (_, report) = post_manifest(
        &strict.client,
        strict.at("/api/manifests/test?query=x"),
        &text,
    )
    .await;
    assert_eq!(report["outcome"], "error", "{report}");
    assert!(
        report["error"].as_str().unwrap().contains("loopback"),
        "{report}"
    );
    strict.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn workspace_secrets_are_sealed_write_only_and_used_by_their_workspace_s_fires() {
    on_every_backend(|db| async {
        let seen = Seen::default();
        let base = provider(seen.clone()).await;
        let server = server(db).await;
        let member = server
            .user("bob@example.org", common::TEST_WORKSPACE, Role::Member)
            .await;
        let text = manifest(
            "keyed-news",
            "Keyed news",
            &base,
            "/search",
            Some("FAKE_NEWS_KEY"),
        );
        let (status, body) =
            post_manifest(&server.client, server.at("/api/manifests"), &text).await;
        assert_eq!(status, 201, "{body}");
        assert_eq!(body["status"], "needs-env", "{body}");

        let secret = server.at("/api/secrets/FAKE_NEWS_KEY");
        let value = "sk-live-0123456789abcdef";
        let res = member
            .put(&secret)
            .json(&json!({"value": value}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 403);
        let res = server
            .client
            .put(server.at("/api/secrets/bad-name"))
            .json(&json!({"value": value}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 400);
        let res = server
            .client
            .put(&secret)
            .json(&json!({"value": "  "}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 400);

        let res = server
            .client
            .put(&secret)
            .json(&json!({"value": value}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 200);
        let body = res.text().await.unwrap();
        assert!(!body.contains(value), "{body}");
        let info: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(info["name"], "FAKE_NEWS_KEY");
        assert_eq!(info["set_by"], common::TEST_EMAIL);
        let listed = member
            .get(server.at("/api/secrets"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            listed.contains("FAKE_NEWS_KEY") && !listed.contains(value),
            "{listed}"
        );

        // Sealed at rest: the stored text holds neither the value nor a
        // plain encoding of it.
        let sealed = server
            .state
            .engine
            .store()
            .sealed_secrets(server.workspace_id)
            .await
            .unwrap();
        assert_eq!(sealed.len(), 1);
        assert!(
            !sealed[0].1.contains(value) && !sealed[0].1.contains("c2stbGl2ZS"),
            "{sealed:?}"
        );

        // The workspace's fires use it; the connector serves here now.
        assert_eq!(
            connector(&server, &server.client, "keyed-news").await["status"],
            "available"
        );
        let report = fire_news(&server, &server.client).await;
        assert_eq!(report["attempts"][0]["outcome"], "found", "{report}");
        assert_eq!(seen.lock().unwrap().last().map(String::as_str), Some(value));
        assert!(!report.to_string().contains(value));

        // Cleared: needed again.
        let res = server.client.delete(&secret).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 204);
        assert_eq!(
            connector(&server, &server.client, "keyed-news").await["status"],
            "needs-env"
        );
        let res = server.client.delete(&secret).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 404);
        server.stop().await;
    })
    .await;

    // A server without a sealing key says how to turn secrets on.
    let db = testing::sqlite();
    let keyless = TestServer::start_configured(db, |c| c.secrets = None, |_| {}).await;
    let res = keyless
        .client
        .put(keyless.at("/api/secrets/SOME_KEY"))
        .json(&json!({"value": "v"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 409);
    let body: Value = res.json().await.unwrap();
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("SWITCHYARD_SECRETS_KEY"),
        "{body}"
    );
    keyless.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_re_check_is_a_real_fire_counted_against_the_daily_cap() {
    let base = provider(Seen::default()).await;
    let server = server(testing::sqlite()).await;
    let text = manifest("capped", "Capped", &base, "/search", None).replace(
        "cost_tier = \"free\"",
        "cost_tier = \"free\"\nrate_hints = { daily_cap = 1 }",
    );
    let (status, body) = post_manifest(&server.client, server.at("/api/manifests"), &text).await;
    assert_eq!(status, 201, "{body}");
    let recheck = server.at("/api/connectors/capped/recheck");
    let first: Value = server
        .client
        .post(&recheck)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(first["report"]["outcome"], "found", "{first}");
    assert_eq!(
        connector(&server, &server.client, "capped").await["fires_today"],
        1
    );
    let second: Value = server
        .client
        .post(&recheck)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        second["report"]["error"]
            .as_str()
            .unwrap()
            .contains("daily cap of 1"),
        "{second}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workspace_manifest_cannot_read_the_server_s_environment() {
    // The operator's key, in the server's environment for its own connectors.
    std::env::set_var("SWITCHYARD_TEST_OPERATOR_KEY", "operator-key-never-leaves");
    let seen = Seen::default();
    let base = provider(seen.clone()).await;
    let server = server(testing::sqlite()).await;
    let text = manifest(
        "exfiltrate",
        "Exfiltrate",
        &base,
        "/search",
        Some("SWITCHYARD_TEST_OPERATOR_KEY"),
    );
    let (_, report) = post_manifest(
        &server.client,
        server.at("/api/manifests/test?query=x"),
        &text,
    )
    .await;
    assert_eq!(report["outcome"], "error", "{report}");
    assert!(
        report["error"]
            .as_str()
            .unwrap()
            .contains("SWITCHYARD_TEST_OPERATOR_KEY is not set"),
        "{report}"
    );
    let (status, body) = post_manifest(&server.client, server.at("/api/manifests"), &text).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body["status"], "needs-env",
        "the environment does not count: {body}"
    );
    assert!(
        seen.lock()
            .unwrap()
            .iter()
            .all(|k| !k.contains("operator-key")),
        "{seen:?}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_refused_in_one_workspace_switches_the_connector_off_there_only() {
    let base = provider(Seen::default()).await;
    let shared = Manifest::parse(
        &manifest(
            "shared-news",
            "Shared news",
            &base,
            "/keyed",
            Some("SHARED_KEY"),
        ),
        Format::Toml,
    )
    .unwrap();
    let server = TestServer::start_configured(
        testing::sqlite(),
        |config| config.fetch_allow = AllowList::parse("127.0.0.1"),
        move |state| {
            *state.engine.catalog_lock().write().unwrap() = Catalog::from_toml(TEST_PACKS).unwrap();
            let registry = &state.engine.registry();
            let connector = ManifestConnector::new(
                Arc::new(shared.clone()),
                Outbound::new(AllowList::parse("127.0.0.1")),
                Arc::new(|name: &str| std::env::var(name).ok()),
            );
            registry
                .register(shared.registration(), Arc::new(connector))
                .unwrap();
        },
    )
    .await;
    let other = server.user("eve@other.example", "other", Role::Admin).await;
    let set = |client: &reqwest::Client, value: &str| {
        client
            .put(server.at("/api/secrets/SHARED_KEY"))
            .json(&json!({"value": value}))
            .send()
    };
    assert_eq!(
        set(&server.client, "wrong")
            .await
            .unwrap()
            .status()
            .as_u16(),
        200
    );
    assert_eq!(set(&other, "good").await.unwrap().status().as_u16(), 200);

    // This workspace's key is refused: off here, with the reason...
    let report = fire_news(&server, &server.client).await;
    assert_eq!(report["attempts"][0]["outcome"], "error", "{report}");
    let here = connector(&server, &server.client, "shared-news").await;
    assert_eq!(here["status"], "auth-failed", "{here}");
    assert!(
        here["status_reason"]
            .as_str()
            .unwrap()
            .contains("this workspace's key"),
        "{here}"
    );
    // ...while the other workspace's key still works, and the connector
    // itself is not marked for everyone.
    let report = fire_news(&server, &other).await;
    assert_eq!(report["attempts"][0]["outcome"], "found", "{report}");
    assert_eq!(
        connector(&server, &other, "shared-news").await["status"],
        "available"
    );
    let global = server.state.engine.registry().by_id("shared-news").unwrap();
    assert!(
        matches!(global.status, model::ConnectorStatus::NeedsEnv { .. }),
        "{global:?}"
    );

    // A re-check with the wrong key reports the refusal; setting the key
    // again gives the connector another try, and the re-check passes.
    let res = server
        .client
        .post(server.at("/api/connectors/shared-news/recheck"))
        .send()
        .await
        .unwrap();
    let body: Value = res.json().await.unwrap();
    assert!(
        body["report"]["error"]
            .as_str()
            .unwrap()
            .starts_with("credentials refused"),
        "{body}"
    );
    assert_eq!(
        set(&server.client, "good").await.unwrap().status().as_u16(),
        200
    );
    assert_eq!(
        connector(&server, &server.client, "shared-news").await["status"],
        "available"
    );
    let res = server
        .client
        .post(server.at("/api/connectors/shared-news/recheck"))
        .send()
        .await
        .unwrap();
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["report"]["outcome"], "found", "{body}");
    let audit = get_ok(
        &server.client,
        server.at("/api/connectors/shared-news/audit"),
    )
    .await;
    let statuses: Vec<&str> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["rechecked", "available", "rechecked", "auth-failed"],
        "{audit}"
    );
    let theirs = get_ok(&other, server.at("/api/connectors/shared-news/audit")).await;
    assert!(
        theirs.as_array().unwrap().is_empty(),
        "another workspace's trail is its own: {theirs}"
    );

    // A rate limit met with one workspace's own key holds there only: the
    // other workspace (its own key fine) and the connector itself go on.
    assert_eq!(set(&other, "busy").await.unwrap().status().as_u16(), 200);
    let report = fire_news(&server, &other).await;
    assert_eq!(report["attempts"][0]["outcome"], "rate_limited", "{report}");
    let theirs = connector(&server, &other, "shared-news").await;
    assert_eq!(theirs["status"], "rate-limited", "{theirs}");
    assert!(
        theirs["status_reason"]
            .as_str()
            .unwrap()
            .contains("this workspace's key"),
        "{theirs}"
    );
    assert_eq!(
        connector(&server, &server.client, "shared-news").await["status"],
        "available"
    );
    let report = fire_news(&server, &server.client).await;
    assert_eq!(report["attempts"][0]["outcome"], "found", "{report}");
    assert!(matches!(
        server
            .state
            .engine
            .registry()
            .by_id("shared-news")
            .unwrap()
            .status,
        model::ConnectorStatus::NeedsEnv { .. }
    ));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_attempt_leaves_a_receipt_and_a_failing_second_page_keeps_the_first() {
    on_every_backend(|db| async {
        let base = provider(Seen::default()).await;
        let server = server(db).await;
        let key = "sk-paged-4711-SECRET";
        let text = format!(
            r#"id = "paged-news"
display_name = "Paged news"
short_label = "PN"
capabilities = ["search.news"]
cost_tier = "free"
requires_env = ["PAGED_KEY"]

[request]
url = "{base}/paged"
query = {{ q = "{{{{query}}}}", api_key = "{{{{secret.PAGED_KEY}}}}" }}

[response]
items = "$.results[*]"
url = "$.url"
title = "$.title"
snippet = "$.text"

[pagination]
kind = "page"
param = "page"
start = 1
max_pages = 3
"#
        );
        let (status, body) =
            post_manifest(&server.client, server.at("/api/manifests"), &text).await;
        assert_eq!(status, 201, "{body}");
        let res = server
            .client
            .put(server.at("/api/secrets/PAGED_KEY"))
            .json(&json!({"value": key}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 200);

        let report = fire_news(&server, &server.client).await;
        let attempt = &report["attempts"][0];
        assert_eq!(attempt["connector_id"], "paged-news", "{report}");
        assert_eq!(attempt["outcome"], "found", "page 1 is kept: {report}");
        assert_eq!(report["items"].as_array().unwrap().len(), 2, "{report}");
        assert!(
            attempt["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("page 2 of up to 3 failed, so only the first page was read")),
            "the attempt says it is partial: {report}"
        );

        let record = report["record_id"].as_i64().unwrap();
        let history = server
            .client
            .get(server.at(&format!("/api/records/{record}/history")))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(!history.contains(key), "a key in a receipt: {history}");
        assert!(!history.contains("Ada"), "a parameter's value in a receipt: {history}");
        let history: Value = serde_json::from_str(&history).unwrap();
        let receipt = &history[0]["receipt"];
        assert!(
            receipt["version"]
                .as_str()
                .is_some_and(|v| v.starts_with("manifest ") && v.len() == "manifest ".len() + 12),
            "{receipt}"
        );
        let host = base.trim_start_matches("http://");
        let sent = |i: usize, field: &str| receipt["requests"][i][field].clone();
        assert_eq!(
            receipt["requests"],
            json!([
                {"method": "GET", "host": host, "path": "/paged", "params": ["api_key", "q", "page"],
                 "status": 200, "bytes": sent(0, "bytes"), "latency_ms": sent(0, "latency_ms"),
                 "request_hash": sent(0, "request_hash"), "payload_hash": sent(0, "payload_hash")},
                {"method": "GET", "host": host, "path": "/paged", "params": ["api_key", "q", "page"],
                 "status": 502, "bytes": sent(1, "bytes"), "latency_ms": sent(1, "latency_ms"),
                 "request_hash": sent(1, "request_hash"), "payload_hash": sent(1, "payload_hash")},
            ]),
            "{receipt}"
        );
        // Two pages, two questions and two answers, told apart by hash.
        let sha256 = |v: Value| {
            v.as_str()
                .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        };
        for field in ["request_hash", "payload_hash"] {
            assert!(sha256(sent(0, field)) && sha256(sent(1, field)), "{receipt}");
            assert_ne!(sent(0, field), sent(1, field), "{receipt}");
        }
        assert!(receipt["requests"][0]["bytes"].as_u64().unwrap() > 100, "{receipt}");
        server.stop().await;
    })
    .await;
}
