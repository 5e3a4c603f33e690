//! The source document's web verbs through every door against a local
//! site and a scripted search connector: `web.scrape` reads each address
//! in order (a page, a 404, an unreachable host, an internal address the
//! outbound guard refuses, an oversized page, a malformed address) and
//! keeps failures apart; `web.discover` returns at most `top_k` results
//! naming their provider; the registry lists both with their schemas and
//! whether they can answer; the MCP tools and the OpenAPI document follow
//! the registry, and every connector a verb tool advertises is one its
//! door takes; another workspace reads none of it.

mod common;

use std::time::Duration;

use axum::http::StatusCode;
use axum::response::Html;
use axum::routing::get;
use common::agent::{agent, answer, call, token};
use common::{on_every_backend, TestServer, TEST_EMAIL, TEST_PACKS, TEST_WORKSPACE};
use engine::connectors::scripted::{ScriptedConnector, Step};
use engine::packs::Catalog;
use engine::store::testing::TestDatabase;
use model::{BuiltinCapability as B, Capability, CostTier, Role};
use serde_json::{json, Value};

/// A local site: an article among navigation, a missing page, a page
/// longer than the crawler reads.
async fn site() -> String {
    let story = "The rocket left the pad on time and reached its orbit. ".repeat(30);
    let article = format!(
        r#"<html lang="en"><head><title>Launch day</title>
        <meta name="description" content="How the launch went.">
        <link rel="canonical" href="/news/launch"></head><body>
        <nav><a href="/">Home</a> <a href="/shop">Shop for merchandise</a></nav>
        <article><h1>Launch day</h1><p>{story}</p>
        <p>The crew thanked everyone who came to watch the launch.</p></article>
        <footer>Copyright Acme</footer></body></html>"#
    );
    let huge = format!(
        "<html><head><title>Huge</title></head><body><p>{}</p></body></html>",
        "word ".repeat(600_000)
    );
    let app = axum::Router::new()
        .route("/article", get(move || async move { Html(article) }))
        .route(
            "/missing",
            get(|| async { (StatusCode::NOT_FOUND, "no such page") }),
        )
        .route("/huge", get(move || async move { Html(huge) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// A server with the built-in connectors (none of them with a key),
/// whose site crawler may reach 127.0.0.1, and whose `finder` serves the
/// web search with three results.
async fn server_on(db: TestDatabase) -> TestServer {
    TestServer::start_configured(
        db,
        |config| {
            config.fetch_allow = engine::connectors::guard::AllowList::parse("127.0.0.1");
        },
        |state| {
            *state.engine.catalog_lock().write().unwrap() = Catalog::from_toml(TEST_PACKS).unwrap();
            state.engine.register_builtin(None).unwrap();
            let serves: Vec<Capability> = vec![B::SearchWeb.into()];
            state
                .engine
                .registry()
                .register(
                    ScriptedConnector::registration("finder", CostTier::Free, &serves),
                    ScriptedConnector::new("finder", [Step::Found(3)]),
                )
                .unwrap();
        },
    )
    .await
}

/// Reads a job until it is no longer pending.
async fn until_ended(server: &TestServer, id: i64) -> Value {
    for _ in 0..300 {
        let (code, envelope) = server.get_json(&format!("/api/jobs/{id}")).await;
        if envelope["status"] != "pending" {
            assert_eq!(code, 200, "{envelope}");
            return envelope;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("job {id} still pending");
}

#[tokio::test]
async fn a_scrape_reads_each_address_in_order_and_keeps_failures_apart() {
    on_every_backend(|db| async move {
        let site = site().await;
        let server = server_on(db).await;
        let urls = [
            format!("{site}/article"),
            format!("{site}/missing"),
            "http://127.0.0.1:1/".to_owned(),
            "http://169.254.169.254/latest/meta-data/".to_owned(),
            format!("{site}/huge"),
            "ftp://acme.example/file".to_owned(),
        ];
        // Six addresses are more than answer inline: a job at once.
        let (code, pending) = server
            .post_json("/api/capabilities/web.scrape/call", json!({ "urls": urls }))
            .await;
        assert_eq!(code, 202, "{pending}");
        assert_eq!(pending["kind"], "call");
        assert_eq!(pending["progress"]["total"], 6);
        let id = pending["job_id"].as_i64().unwrap();
        let done = until_ended(&server, id).await;
        assert_eq!(
            done["status"], "completed",
            "a failed page never fails the batch"
        );
        assert_eq!(done["progress"], json!({ "done": 6, "total": 6 }));
        let pages = done["results"].as_array().unwrap();
        let asked: Vec<&str> = pages.iter().map(|p| p["url"].as_str().unwrap()).collect();
        assert_eq!(asked, urls, "one result per address, in the order asked");
        let statuses: Vec<&str> = pages
            .iter()
            .map(|p| p["status"].as_str().unwrap())
            .collect();
        assert_eq!(
            statuses,
            ["ok", "failed", "failed", "failed", "ok", "failed"]
        );

        let article = &pages[0];
        let text = article["content"].as_str().unwrap();
        assert!(text.contains("reached its orbit"), "{text}");
        assert!(text.contains("The crew thanked everyone"), "{text}");
        assert!(
            !text.contains("merchandise"),
            "navigation is left out: {text}"
        );
        assert_eq!(
            article["metadata"],
            json!({
                "title": "Launch day",
                "description": "How the launch went.",
                "language": "en",
                "canonical_url": format!("{site}/news/launch"),
            })
        );
        assert_eq!(article["connector_id"], "site-crawler");
        assert!(article.get("truncated").is_none());

        let why = |i: usize| pages[i]["error"].as_str().unwrap().to_owned();
        assert!(why(1).contains("answered HTTP 404"), "{}", why(1));
        assert!(why(2).contains("site-crawler"), "{}", why(2));
        assert!(why(3).contains("refused"), "the guard: {}", why(3));
        assert!(why(5).contains("not an http(s) address"), "{}", why(5));
        assert_eq!(
            pages[4]["truncated"], true,
            "the huge page is cut, not lost"
        );
        assert!(pages[4]["content"]
            .as_str()
            .unwrap()
            .starts_with("word word"));

        // Each read is a receipt of the call; the malformed address sent nothing.
        let (_, attempts) = server.get_json(&format!("/api/calls/{id}/attempts")).await;
        let attempts = attempts.as_array().unwrap();
        assert_eq!(attempts.len(), 5, "{attempts:?}");
        assert!(attempts.iter().all(|a| a["connector_id"] == "site-crawler"));
        server.stop().await;
    })
    .await;
}

#[tokio::test]
async fn a_small_scrape_answers_inline_and_bad_input_is_named() {
    let site = site().await;
    let server = server_on(engine::store::testing::sqlite()).await;
    let path = "/api/capabilities/web.scrape/call";
    let (code, done) = server
        .post_json(path, json!({ "urls": [format!("{site}/article")] }))
        .await;
    assert_eq!(code, 200, "{done}");
    assert_eq!(done["status"], "completed");
    assert_eq!(done["results"][0]["status"], "ok");
    let (code, pending) = server
        .post_json(
            path,
            json!({ "urls": [format!("{site}/article")], "async": true }),
        )
        .await;
    assert_eq!((code, pending["status"].as_str()), (202, Some("pending")));
    until_ended(&server, pending["job_id"].as_i64().unwrap()).await;

    let many: Vec<String> = (0..21).map(|i| format!("{site}/{i}")).collect();
    for (body, field) in [
        (json!({ "urls": [] }), "urls"),
        (json!({ "urls": many }), "urls"),
        (json!({ "urls": [site.clone()], "query": "x" }), "query"),
        (
            json!({ "urls": [site.clone()], "connector": "nope" }),
            "connector",
        ),
        (
            json!({ "urls": [site.clone()], "connector": "finder" }),
            "connector",
        ),
    ] {
        let (code, error) = server.post_json(path, body.clone()).await;
        assert_eq!(code, 400, "{body}: {error}");
        assert!(
            error["detail"].as_str().unwrap().contains(field),
            "{body}: {error}"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn discover_returns_top_k_results_naming_their_provider() {
    let server = server_on(engine::store::testing::sqlite()).await;
    let path = "/api/capabilities/web.discover/call";
    let (code, done) = server
        .post_json(path, json!({ "query": "Ada Lovelace", "top_k": 2 }))
        .await;
    assert_eq!(code, 200, "{done}");
    assert_eq!(done["status"], "completed");
    let results = done["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "top_k holds: {results:?}");
    assert!(results.iter().all(|r| r["connector_id"] == "finder"));
    // Read again where every job is read, as what it is.
    let id = done["job_id"].as_i64().unwrap();
    let (_, again) = server.get_json(&format!("/api/jobs/{id}")).await;
    assert_eq!(again, done);
    let (_, stored) = server.get_json(&format!("/api/calls/{id}")).await;
    assert_eq!(stored, done);

    for (body, field) in [
        (json!({ "query": "Ada", "top_k": 0 }), "top_k"),
        (json!({ "query": "Ada", "top_k": 51 }), "top_k"),
        (json!({ "query": "" }), "query"),
        (json!({ "query": "Ada", "max_results": 3 }), "max_results"),
    ] {
        let (code, error) = server.post_json(path, body.clone()).await;
        assert_eq!(code, 400, "{body}: {error}");
        assert!(
            error["detail"].as_str().unwrap().contains(field),
            "{body}: {error}"
        );
    }

    // Another workspace reads none of it.
    let stranger = server
        .user("eve@example.org", "elsewhere", Role::Admin)
        .await;
    let read = stranger
        .get(server.at(&format!("/api/jobs/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 404);
    server.stop().await;
}

#[tokio::test]
async fn the_registry_lists_every_verb_with_its_schemas_and_whether_it_can_answer() {
    // Its one search connector lacks its key: web.discover is listed and off.
    let bare = TestServer::start_with(engine::store::testing::sqlite(), |state| {
        let serves: Vec<Capability> = vec![B::SearchWeb.into()];
        let mut keyed = ScriptedConnector::registration("keyed", CostTier::Paid, &serves);
        keyed.profile.requires_env = vec!["KEYED_TEST_API_KEY".to_owned()];
        state
            .engine
            .registry()
            .register(keyed, ScriptedConnector::new("keyed", [Step::Found(1)]))
            .unwrap();
    })
    .await;
    let (_, verbs) = bare.get_json("/api/capabilities").await;
    let verb = |verbs: &Value, name: &str| -> Value {
        verbs
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} listed in {verbs}"))
    };
    let discover = verb(&verbs, "web.discover");
    assert_eq!(discover["available"], false, "{discover}");
    assert_eq!(discover["runs_through"], "search.web");
    let why = discover["unavailable"].as_str().unwrap();
    assert!(why.contains("keyed: needs KEYED_TEST_API_KEY"), "{why}");
    // Called anyway, it fails with the reasons; it does not pretend.
    let (code, failed) = bare
        .post_json(
            "/api/capabilities/web.discover/call",
            json!({ "query": "Ada" }),
        )
        .await;
    assert_eq!(
        (code, failed["status"].as_str()),
        (200, Some("failed")),
        "{failed}"
    );
    assert!(
        failed["error"].as_str().unwrap().contains("not tried"),
        "{failed}"
    );
    bare.stop().await;

    let server = server_on(engine::store::testing::sqlite()).await;
    let (_, verbs) = server.get_json("/api/capabilities").await;
    let scrape = verb(&verbs, "web.scrape");
    assert_eq!(
        (
            &scrape["available"],
            &scrape["kind"],
            &scrape["mode"],
            &scrape["billing_unit"],
            &scrape["runs_through"],
        ),
        (
            &json!(true),
            &json!("scrape"),
            &json!("inline_or_job"),
            &json!("page read"),
            &json!("crawl.extract"),
        )
    );
    assert_eq!(scrape["input_schema"]["required"], json!(["urls"]));
    assert_eq!(
        scrape["chain"],
        json!(["site-crawler"]),
        "Tavily needs its key"
    );
    for field in ["url", "status", "content", "metadata"] {
        assert!(
            scrape["output_schema"]["properties"][field].is_object(),
            "{field}: {}",
            scrape["output_schema"]
        );
    }
    assert_eq!(verb(&verbs, "web.discover")["available"], true);
    assert_eq!(verb(&verbs, "search.news")["kind"], "search");

    // The agents' door lists the same verbs with the same schemas, and
    // answers the same envelope the REST door keeps.
    let token = token(&server, TEST_EMAIL, TEST_WORKSPACE).await;
    let agent = agent(&server, &token).await;
    let tools = agent.list_all_tools().await.unwrap();
    for name in ["web.scrape", "web.discover"] {
        let tool = tools
            .iter()
            .find(|t| t.name == name)
            .expect("a tool per verb");
        let listed = verb(&verbs, name);
        let keys = |schema: &Value| -> Vec<String> {
            let mut keys: Vec<String> = schema["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            keys.sort();
            keys
        };
        let tool_schema = Value::Object((*tool.input_schema).clone());
        assert_eq!(keys(&tool_schema), keys(&listed["input_schema"]), "{name}");
        assert_eq!(
            tool_schema["required"], listed["input_schema"]["required"],
            "{name}"
        );
    }
    let site = site().await;
    let pending = answer(
        &call(
            &agent,
            "web.scrape",
            json!({ "urls": [format!("{site}/article")], "async": true }),
        )
        .await,
    );
    let id = pending["job_id"].as_i64().unwrap();
    let done = until_ended(&server, id).await;
    let read = answer(&call(&agent, "read_job", json!({ "job_id": id })).await);
    assert_eq!(read, done);
    assert_eq!(read["results"][0]["status"], "ok");
    agent.cancel().await.ok();
    server.stop().await;
}

/// A minimal input for a verb tool, made from its schema's required
/// fields.
fn minimal_input(schema: &Value) -> Value {
    let mut input = json!({});
    for field in schema["required"].as_array().into_iter().flatten() {
        let field = field.as_str().unwrap();
        input[field] = match field {
            "urls" => json!(["https://acme.example/"]),
            "place_id" => json!("osm:N1"),
            _ => json!("Acme"),
        };
    }
    input
}

#[tokio::test]
async fn every_connector_a_verb_tool_advertises_is_one_its_door_takes() {
    // Scripted connectors for every kind of verb, so every tool is listed.
    let server = TestServer::start_with(engine::store::testing::sqlite(), |state| {
        let registry = state.engine.registry();
        for (id, caps) in [
            ("web-a", vec![B::SearchWeb, B::SearchNews]),
            ("web-b", vec![B::SearchWeb]),
            ("pages", vec![B::CrawlExtract]),
            ("maps", vec![B::MapsSearch, B::MapsPlace, B::MapsReviews]),
        ] {
            let caps: Vec<Capability> = caps.into_iter().map(Capability::from).collect();
            registry
                .register(
                    ScriptedConnector::registration(id, CostTier::Free, &caps),
                    ScriptedConnector::new(id, [Step::Found(1)]),
                )
                .unwrap();
        }
    })
    .await;
    let token = token(&server, TEST_EMAIL, TEST_WORKSPACE).await;
    let agent = agent(&server, &token).await;
    let tools = agent.list_all_tools().await.unwrap();
    // What a listening agent's changes are compared with is the same list.
    let mut listed: Vec<String> = tools
        .iter()
        .filter(|t| t.name.contains('.'))
        .map(|t| t.name.to_string())
        .collect();
    let mut served = server
        .state
        .engine
        .served_verb_names(&server.tester().await);
    listed.sort();
    served.sort();
    assert_eq!(listed, served);
    let mut checked = Vec::new();
    for tool in tools.iter().filter(|t| t.name.contains('.')) {
        let schema = Value::Object((*tool.input_schema).clone());
        let connectors = schema["properties"]["connector"]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: its connectors are listed", tool.name))
            .clone();
        assert!(!connectors.is_empty(), "{}", tool.name);
        for connector in connectors {
            let mut input = minimal_input(&schema);
            input["connector"] = connector.clone();
            let result = call(&agent, &tool.name, input.clone()).await;
            assert_ne!(
                result.is_error,
                Some(true),
                "{} {input}: {result:?}",
                tool.name
            );
            let envelope = answer(&result);
            assert_eq!(
                envelope["status"], "completed",
                "{} {input}: {envelope}",
                tool.name
            );
            checked.push(format!("{} via {connector}", tool.name));
        }
    }
    for verb in [
        "web.scrape",
        "web.discover",
        "maps.search",
        "maps.place",
        "maps.reviews",
    ] {
        assert!(
            checked
                .iter()
                .any(|c| c.starts_with(&format!("{verb} via"))),
            "{verb} in {checked:?}"
        );
    }
    agent.cancel().await.ok();
    server.stop().await;
}
