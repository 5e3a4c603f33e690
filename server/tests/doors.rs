//! Every door over one operations layer: the REST door and the pages'
//! server functions answer the same operation with the same outcome and the
//! same kind of failure. Each test here is a place the two doors once
//! disagreed.

mod common;

use common::{TestServer, TEST_EMAIL, TEST_PACKS, TEST_PASSWORD};
use engine::connectors::scripted::{ScriptedConnector, Step};
use engine::packs::Catalog;
use model::{BuiltinCapability as B, Capability, CostTier};
use serde_json::json;

/// A server with the test catalogue, `alpha` (capped at `alpha_cap` fires a
/// day) serving the web and `news_only` serving only the news.
async fn server(alpha_cap: Option<u32>) -> TestServer {
    TestServer::start_with(engine::store::testing::sqlite(), move |state| {
        *state.engine.catalog_lock().write().unwrap() = Catalog::from_toml(TEST_PACKS).unwrap();
        let web: Vec<Capability> = vec![B::SearchWeb.into()];
        let mut alpha = ScriptedConnector::registration("alpha", CostTier::Paid, &web);
        alpha.profile.rate_hints.daily_cap = alpha_cap;
        state
            .engine
            .registry()
            .register(alpha, ScriptedConnector::new("alpha", [Step::Found(1)]))
            .unwrap();
        let news: Vec<Capability> = vec![B::SearchNews.into()];
        state
            .engine
            .registry()
            .register(
                ScriptedConnector::registration("news_only", CostTier::Free, &news),
                ScriptedConnector::new("news_only", [Step::Empty]),
            )
            .unwrap();
    })
    .await
}

async fn a_record(server: &TestServer) -> i64 {
    let me = server.me();
    let set = me
        .import("Companies", "test", "name,city\nAcme,Lyon\n")
        .await;
    me.record_ids(set.id).await[0]
}

#[tokio::test]
async fn a_fire_stopped_by_a_daily_cap_is_429_through_every_door() {
    let server = server(Some(1)).await;
    let record = a_record(&server).await;
    let browser = server.browser(TEST_EMAIL, TEST_PASSWORD).await;
    server.me().fire(record, "web", None).await;

    // Through the menu, so "already found" does not walk past alpha first.
    let (code, rest) = server
        .post_json(
            &format!("/api/records/{record}/fire"),
            json!({"pack": "web", "connector": "alpha"}),
        )
        .await;
    assert_eq!(code, 429, "{rest}");
    let (code, page) = server
        .call_server_fn(
            &browser,
            "fire_chip",
            &[
                ("record_id", &record.to_string()),
                ("pack_id", "web"),
                ("connector", "alpha"),
            ],
        )
        .await;
    assert_eq!(code, 429, "{page}");
    let detail = rest["detail"].as_str().unwrap();
    assert!(
        detail.contains("alpha: daily cap of 1 fires reached"),
        "{detail}"
    );
    assert!(page.contains(detail), "{page} vs {detail}");
    server.stop().await;
}

#[tokio::test]
async fn always_start_with_checks_the_pack_and_the_connector_through_every_door() {
    let server = server(None).await;
    let record = a_record(&server).await;
    let browser = server.browser(TEST_EMAIL, TEST_PASSWORD).await;
    let record_id = record.to_string();
    let cases = [
        // (pack, connector, status, what the answer names)
        ("nope", "alpha", 404, "no pack"),
        ("web", "ghost", 400, "no connector"),
        ("web", "news_only", 400, "does not serve search.web"),
        ("web", "alpha", 204, ""),
    ];
    for (pack, connector, status, names) in cases {
        let res = server
            .client
            .put(server.at(&format!("/api/records/{record}/overrides/{pack}")))
            .json(&json!({ "connector": connector }))
            .send()
            .await
            .unwrap();
        let rest = (res.status().as_u16(), res.text().await.unwrap());
        assert_eq!(rest.0, status, "REST {pack}/{connector}: {}", rest.1);
        assert!(
            rest.1.contains(names),
            "REST {pack}/{connector}: {}",
            rest.1
        );
        let page = server
            .call_server_fn(
                &browser,
                "set_start_with",
                &[
                    ("record_id", &record_id),
                    ("pack_id", pack),
                    ("connector", connector),
                ],
            )
            .await;
        // The server function answers a plain success with 200.
        let page_status = if status == 204 { 200 } else { status };
        assert_eq!(page.0, page_status, "page {pack}/{connector}: {}", page.1);
        assert!(
            page.1.contains(names),
            "page {pack}/{connector}: {}",
            page.1
        );
    }
    // The one that was allowed is what the menu now starts with, as both
    // doors read it.
    let (_, menu) = server
        .get_json(&format!("/api/records/{record}/menu/web"))
        .await;
    let alpha = menu["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["connector"]["id"] == "alpha")
        .unwrap();
    assert_eq!(alpha["record_override"], true, "{menu}");
    server.stop().await;
}

#[tokio::test]
async fn a_menu_of_an_unknown_pack_is_not_found_through_every_door() {
    let server = server(None).await;
    let record = a_record(&server).await;
    let browser = server.browser(TEST_EMAIL, TEST_PASSWORD).await;
    let (code, rest) = server
        .get_json(&format!("/api/records/{record}/menu/nope"))
        .await;
    assert_eq!(code, 404, "{rest}");
    assert_eq!(rest["error"], "not_found");
    let (code, page) = server
        .call_server_fn(
            &browser,
            "load_menu",
            &[("record_id", &record.to_string()), ("pack_id", "nope")],
        )
        .await;
    assert_eq!(code, 404, "{page}");
    assert!(page.contains("no pack"), "{page}");
    server.stop().await;
}

#[tokio::test]
async fn an_undo_with_nothing_to_undo_is_a_conflict_through_every_door() {
    let server = server(None).await;
    let record = a_record(&server).await;
    let browser = server.browser(TEST_EMAIL, TEST_PASSWORD).await;
    let report = server.me().fire(record, "web", None).await;
    let item = report.items[0].id;
    let (code, rest) = server
        .post_json(
            &format!("/api/items/{item}/triage"),
            json!({"verb": "undo", "version": 1}),
        )
        .await;
    assert_eq!(code, 409, "{rest}");
    let (code, page) = server
        .call_server_fn(
            &browser,
            "triage_item",
            &[
                ("item_id", &item.to_string()),
                ("verb", "undo"),
                ("version", "1"),
            ],
        )
        .await;
    // Before the operations layer this was a 500 with no reason.
    assert_eq!(code, 409, "{page}");
    assert!(page.contains("nothing to undo"), "{page}");
    server.stop().await;
}

/// The engine refuses a member's admin operation itself, so a door that
/// forgot to check (or one still to come) cannot let it through.
#[tokio::test]
async fn every_admin_operation_refuses_a_member_in_the_engine_itself() {
    let server = server(None).await;
    let engine = &server.state.engine;
    let member = engine::tenancy::Principal {
        user_id: 0,
        email: "member@example.org".to_owned(),
        workspace_id: server.workspace_id,
        workspace_name: common::TEST_WORKSPACE.to_owned(),
        role: model::Role::Member,
    };
    let pack: model::PackConfig = engine.catalog().pack("web").unwrap().clone();
    let bundle: model::BundleConfig = engine.catalog().bundle("test").unwrap().clone();
    let test = model::ManifestTest {
        text: String::new(),
        format: model::ManifestFormat::Toml,
        query: "x".to_owned(),
        record_id: None,
    };
    use engine::ops::OpError;
    let refusals: Vec<(&str, OpError)> = vec![
        (
            "disable",
            engine
                .disable_connector(&member, "alpha", "")
                .await
                .unwrap_err(),
        ),
        (
            "enable",
            engine.enable_connector(&member, "alpha").await.unwrap_err(),
        ),
        (
            "recheck",
            engine.recheck(&member, "alpha").await.unwrap_err(),
        ),
        (
            "test manifest",
            engine.test_manifest(&member, &test).await.unwrap_err(),
        ),
        (
            "save manifest",
            engine
                .save_manifest(&member, "", model::ManifestFormat::Toml)
                .await
                .unwrap_err(),
        ),
        (
            "remove manifest",
            engine.remove_manifest(&member, "alpha").await.unwrap_err(),
        ),
        (
            "set secret",
            engine.set_secret(&member, "KEY", "v").await.unwrap_err(),
        ),
        (
            "clear secret",
            engine.clear_secret(&member, "KEY").await.unwrap_err(),
        ),
        (
            "save pack",
            engine.save_pack(&member, pack).await.unwrap_err(),
        ),
        (
            "remove pack",
            engine.remove_pack(&member, "web").await.unwrap_err(),
        ),
        (
            "save bundle",
            engine.save_bundle(&member, bundle).await.unwrap_err(),
        ),
        (
            "remove bundle",
            engine.remove_bundle(&member, "test").await.unwrap_err(),
        ),
        (
            "add member",
            engine
                .add_member(&member, "x@example.org", model::Role::Admin)
                .await
                .unwrap_err(),
        ),
        (
            "set role",
            engine
                .set_member_role(&member, 1, model::Role::Member)
                .await
                .unwrap_err(),
        ),
        (
            "remove member",
            engine.remove_member(&member, 1).await.unwrap_err(),
        ),
    ];
    for (what, e) in refusals {
        assert_eq!(e.kind(), "forbidden", "{what}: {e}");
        assert!(e.to_string().contains("only an admin"), "{what}: {e}");
    }
    server.stop().await;
}

/// The same capability call through the REST door, the agents' door (a real
/// MCP client), the command line and the pages' server function: the same
/// envelope, and the same receipts, each naming its caller.
#[tokio::test]
async fn a_capability_call_is_the_same_through_every_door() {
    use rmcp::model::{CallToolRequestParams, JsonObject};
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::ServiceExt;

    let server = server(None).await;
    let (_, token) = server
        .state
        .engine
        .create_token(TEST_EMAIL, common::TEST_WORKSPACE)
        .await
        .unwrap();
    let query = json!({"query": "Ada Lovelace", "max_results": 3});

    let (code, rest) = server
        .post_json("/api/capabilities/search.web/call", query.clone())
        .await;
    assert_eq!(code, 200, "{rest}");

    let config =
        StreamableHttpClientTransportConfig::with_uri(server.at("/mcp")).auth_header(token.clone());
    let agent = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    let serde_json::Value::Object(args) = query.clone() else {
        unreachable!()
    };
    let mcp = agent
        .call_tool(CallToolRequestParams::new("search.web").with_arguments(JsonObject::from(args)))
        .await
        .unwrap()
        .structured_content
        .expect("the envelope");
    agent.cancel().await.ok();

    let cli = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args([
            "call",
            "search.web",
            "Ada Lovelace",
            "--max-results",
            "3",
            "--json",
        ])
        .env("SWITCHYARD_URL", &server.url)
        .env("SWITCHYARD_TOKEN", &token)
        .output()
        .await
        .unwrap();
    assert!(
        cli.status.success(),
        "{}",
        String::from_utf8_lossy(&cli.stderr)
    );
    let cli: serde_json::Value = serde_json::from_slice(&cli.stdout).unwrap();

    let browser = server.browser(TEST_EMAIL, TEST_PASSWORD).await;
    let path = server::router::inventory()
        .into_iter()
        .map(|(_, p)| p)
        .find(|p| p.trim_end_matches(|c: char| c.is_ascii_digit()) == "/api/call_capability")
        .expect("the server function");
    let res = browser
        .post(server.at(&path))
        .json(&json!({"capability": "search.web", "request": query}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let page: serde_json::Value = res.json().await.unwrap();

    let mut receipts = Vec::new();
    for (door, envelope) in [
        ("rest", &rest),
        ("mcp", &mcp),
        ("cli", &cli),
        ("page", &page),
    ] {
        let id = envelope["job_id"]
            .as_i64()
            .unwrap_or_else(|| panic!("{door}: {envelope}"));
        let mut without_id = envelope.clone();
        without_id["job_id"] = json!(null);
        let mut rest_without_id = rest.clone();
        rest_without_id["job_id"] = json!(null);
        assert_eq!(without_id, rest_without_id, "{door}");
        let (_, attempts) = server.get_json(&format!("/api/calls/{id}/attempts")).await;
        let seen: Vec<(String, String, String)> = attempts
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["connector_id"].as_str().unwrap().to_owned(),
                    a["outcome"].as_str().unwrap().to_owned(),
                    a["actor"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        receipts.push(seen);
    }
    assert_eq!(
        receipts[0],
        [(
            "alpha".to_owned(),
            "found".to_owned(),
            TEST_EMAIL.to_owned()
        )]
    );
    assert!(receipts.iter().all(|r| *r == receipts[0]), "{receipts:?}");
    // Four calls, four receipts in the statistics.
    let (_, stats) = server.get_json("/api/connectors/stats").await;
    let alpha = stats
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["connector_id"] == "alpha")
        .unwrap();
    assert_eq!(alpha["found"], 4, "{stats}");
    server.stop().await;
}

/// A page's server function and the REST door refuse the same bad input
/// with the same status and words: the pages map the operations' one error
/// type as REST does (they once answered 500 for a bad label and an unknown
/// pack, where REST answered 400 and 404).
#[tokio::test]
async fn a_page_refuses_bad_input_with_the_status_and_words_rest_uses() {
    let server = server(None).await;
    let browser = server.browser(TEST_EMAIL, TEST_PASSWORD).await;
    // A label for a pack the workspace does not have.
    let (rest_status, rest) = server
        .put_json("/api/me/pack-labels/nope", json!({"label": "x"}))
        .await;
    let (page_status, page) = server
        .call_server_fn(
            &browser,
            "save_pack_label",
            &[("pack_id", "nope"), ("label", "x")],
        )
        .await;
    assert_eq!((rest_status, page_status), (400, 400), "{rest} / {page}");
    let detail = rest["detail"].as_str().unwrap();
    assert!(page.contains(detail), "{page} vs {detail}");
    // Removing a pack the workspace never had.
    let (rest_status, rest) = server.delete("/api/packs/nope").await;
    let (page_status, page) = server
        .call_server_fn(&browser, "remove_pack", &[("id", "nope")])
        .await;
    assert_eq!((rest_status, page_status), (404, 404), "{rest} / {page}");
    let detail = rest["detail"].as_str().unwrap();
    assert!(page.contains(detail), "{page} vs {detail}");
    server.stop().await;
}
