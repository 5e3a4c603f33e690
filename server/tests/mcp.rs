//! The agents' door, driven by a real MCP client (rmcp's, over streamable
//! HTTP): the tools a workspace may use, a capability call answering the
//! same envelope as the REST door, the record-set tools, a record's daily
//! cap that asks before spending more, a connector added
//! while the server runs, and no way in without a token.

mod common;

use common::agent::{agent, answer, call, token, tool_names};
use common::{TestServer, TEST_EMAIL, TEST_PACKS, TEST_WORKSPACE};
use engine::connectors::scripted::{ScriptedConnector, Step};
use engine::packs::Catalog;
use model::{BuiltinCapability as B, Capability, CostTier, Role};
use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::RoleClient;
use serde_json::{json, Value};

/// A manifest connector `id` serving one new capability (it is never
/// fired here, so its address need not answer).
fn manifest(id: &str, capability: &str) -> String {
    format!(
        r#"
id = "{id}"
display_name = "{id} search"
short_label = "{id}"
capabilities = ["{capability}"]
cost_tier = "free"

[request]
url = "https://{id}.example.org/search"
query = {{ q = "{{{{query}}}}" }}

[response]
items = "$.items[*]"
url = "$.link"
title = "$.name"
"#
    )
}

async fn server() -> TestServer {
    TestServer::start_with(engine::store::testing::sqlite(), |state| {
        *state.engine.catalog_lock().write().unwrap() = Catalog::from_toml(TEST_PACKS).unwrap();
        let serves: Vec<Capability> = vec![B::SearchWeb.into(), B::SearchNews.into()];
        state
            .engine
            .registry()
            .register(
                ScriptedConnector::registration("alpha", CostTier::Free, &serves),
                ScriptedConnector::new("alpha", [Step::Found(2)]),
            )
            .unwrap();
    })
    .await
}

#[tokio::test]
async fn an_agent_calls_a_capability_and_gets_the_rest_door_s_envelope() {
    let server = server().await;
    let token = token(&server, TEST_EMAIL, TEST_WORKSPACE).await;
    let agent = agent(&server, &token).await;

    let tools = agent.list_all_tools().await.unwrap();
    let news = tools
        .iter()
        .find(|t| t.name == "search.news")
        .expect("a tool per served capability");
    assert_eq!(
        news.input_schema["properties"]["connector"]["enum"],
        json!(["alpha"]),
        "the connector is one of those serving it"
    );
    let names = tool_names(&agent).await;
    for tool in [
        "list_record_sets",
        "list_records",
        "fire_pack",
        "start_fanout",
        "read_job",
        "list_items",
        "triage_item",
        "read_call",
    ] {
        assert!(names.iter().any(|n| n == tool), "{tool} in {names:?}");
    }
    assert!(
        !names.iter().any(|n| n == "search.video"),
        "no connector serves it: {names:?}"
    );

    let result = call(&agent, "search.news", json!({"query": "Ada Lovelace"})).await;
    let envelope = answer(&result);
    assert_eq!(envelope["status"], "completed");
    assert_eq!(envelope["results"].as_array().unwrap().len(), 2);
    // The same call as the REST door keeps it, and its receipts.
    let id = envelope["job_id"].as_i64().unwrap();
    let (_, stored) = server.get_json(&format!("/api/calls/{id}")).await;
    assert_eq!(stored, envelope);
    let (_, attempts) = server.get_json(&format!("/api/calls/{id}/attempts")).await;
    assert_eq!(attempts[0]["actor"], TEST_EMAIL);

    // Asked for async: pending at once, with the job id every door reads.
    assert_eq!(
        news.input_schema["properties"]["async"]["type"], "boolean",
        "the schema is the call request's: {:?}",
        news.input_schema
    );
    let pending = answer(
        &call(
            &agent,
            "search.news",
            json!({"query": "Grace", "async": true}),
        )
        .await,
    );
    assert_eq!(
        (pending["status"].as_str(), pending["kind"].as_str()),
        (Some("pending"), Some("call"))
    );
    let id = pending["job_id"].as_i64().unwrap();
    let mut read = Value::Null;
    for _ in 0..100 {
        read = answer(&call(&agent, "read_job", json!({"job_id": id})).await);
        if read["status"] != "pending" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(read["status"], "completed", "{read}");
    let (code, rest) = server.get_json(&format!("/api/jobs/{id}")).await;
    assert_eq!((code, &rest), (200, &read));

    // A failure the agent can read, not a protocol error.
    let result = call(&agent, "search.news", json!({"query": ""})).await;
    assert_eq!(result.is_error, Some(true));
    assert!(
        format!("{:?}", result.content).contains("query"),
        "{result:?}"
    );
    agent.cancel().await.ok();
    server.stop().await;
}

#[tokio::test]
async fn an_agent_works_a_record_set_through_its_tools() {
    let server = server().await;
    let token = token(&server, TEST_EMAIL, TEST_WORKSPACE).await;
    let agent = agent(&server, &token).await;
    let set_id = server
        .me()
        .import("Companies", "test", "name,city\nAcme,Lyon\n")
        .await
        .id;

    let sets = answer(&call(&agent, "list_record_sets", json!({})).await);
    assert_eq!(sets["record_sets"][0]["id"], set_id, "{sets}");
    let page = answer(&call(&agent, "list_records", json!({"set_id": set_id})).await);
    let record = page["records"][0]["id"].as_i64().unwrap();
    let fired = answer(
        &call(
            &agent,
            "fire_pack",
            json!({"record_id": record, "pack": "web"}),
        )
        .await,
    );
    assert_eq!(fired["results"][0]["chip"]["state"], "found", "{fired}");
    let items = answer(&call(&agent, "list_items", json!({"record_id": record})).await);
    let item = &items["items"][0];
    let triaged = answer(
        &call(
            &agent,
            "triage_item",
            json!({"item_id": item["id"], "verb": "accept-canonical", "version": item["version"]}),
        )
        .await,
    );
    assert_eq!(triaged["state"], "accepted-canonical", "{triaged}");
    // A fan-out answers the envelope, read again by its job id.
    let started = answer(
        &call(
            &agent,
            "start_fanout",
            json!({"set_id": set_id, "packs": ["web"]}),
        )
        .await,
    );
    assert_eq!(started["kind"], "fanout", "{started}");
    let read = answer(&call(&agent, "read_job", json!({"job_id": started["job_id"]})).await);
    assert_eq!(read["job"]["id"], started["job_id"], "{read}");
    assert_eq!(read["kind"], "fanout");
    agent.cancel().await.ok();
    server.stop().await;
}

#[tokio::test]
async fn tools_follow_the_registry_and_stay_in_their_workspace() {
    let server = server().await;
    let mine = agent(&server, &token(&server, TEST_EMAIL, TEST_WORKSPACE).await).await;
    server.user("b@example.org", "elsewhere", Role::Admin).await;
    let theirs = agent(&server, &token(&server, "b@example.org", "elsewhere").await).await;

    // A manifest connector of this workspace only: a new capability.
    let manifest = manifest("own_video", "search.video");
    let res = server
        .client
        .post(server.at("/api/manifests"))
        .header("content-type", "application/toml")
        .body(manifest)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    assert_eq!(status, 201, "{}", res.text().await.unwrap());
    assert!(tool_names(&mine).await.iter().any(|n| n == "search.video"));
    assert!(!tool_names(&theirs)
        .await
        .iter()
        .any(|n| n == "search.video"));
    // Nor can the other workspace call it by name.
    let refused = theirs
        .call_tool(CallToolRequestParams::new("search.video").with_arguments(JsonObject::new()))
        .await;
    assert!(refused.is_err(), "{refused:?}");

    // Removed: gone from the next listing.
    let res = server
        .client
        .delete(server.at("/api/manifests/own_video"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 204);
    // The client (rmcp) keeps a listing for the time to live the server
    // gave it (a second), by its own clock.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert!(!tool_names(&mine).await.iter().any(|n| n == "search.video"));
    mine.cancel().await.ok();
    theirs.cancel().await.ok();
    server.stop().await;
}

#[tokio::test]
async fn the_door_is_shut_without_a_valid_token() {
    let server = server().await;
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    });
    for token in [None, Some("sy_not_a_token")] {
        let mut req = server
            .anonymous
            .post(server.at("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .json(&initialize);
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        let res = req.send().await.unwrap();
        assert_eq!(res.status().as_u16(), 401, "{token:?}");
    }
    server.stop().await;
}

#[tokio::test]
async fn a_manifest_dropped_into_the_folder_is_a_tool_within_a_second() {
    let server = server().await;
    let token = token(&server, TEST_EMAIL, TEST_WORKSPACE).await;
    let dir = std::env::temp_dir().join(format!(
        "switchyard-mcp-drop-{}-{}",
        std::process::id(),
        server.state.engine.clock().now_ms()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let folder = engine::connectors::manifest::folder::DropFolder::new(
        &dir,
        server.state.engine.registry().clone(),
        server.state.engine.outbound().clone(),
        std::sync::Arc::new(|_| None),
    );
    let _watching = folder.watch().unwrap();
    assert!(!tool_names(&agent(&server, &token).await)
        .await
        .iter()
        .any(|n| n == "search.podcasts"));

    std::fs::write(
        dir.join("podcasts.toml"),
        manifest("podcasts", "search.podcasts"),
    )
    .unwrap();
    let dropped = std::time::Instant::now();
    loop {
        // A new agent each time: none has a listing to keep.
        let agent = agent(&server, &token).await;
        if tool_names(&agent)
            .await
            .iter()
            .any(|n| n == "search.podcasts")
        {
            break;
        }
        assert!(
            dropped.elapsed() < std::time::Duration::from_secs(1),
            "not a tool a second after the drop"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
    server.stop().await;
}

/// An agent on `server` listening for changes of its tool list (the
/// 2026-07-28 protocol's: an agent that discovers).
async fn listening_agent(
    server: &TestServer,
    token: String,
) -> (
    RunningService<RoleClient, rmcp::model::ClientConfig>,
    rmcp::service::Subscription,
) {
    use rmcp::model::{ClientConfig, ProtocolVersion, SubscriptionFilter};
    use rmcp::{ClientLifecycleMode, ClientServiceExt};
    let config =
        StreamableHttpClientTransportConfig::with_uri(server.at("/mcp")).auth_header(token);
    let agent = ClientConfig::default()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("the agent connects");
    let listening = agent
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .expect("the server accepts the subscription");
    assert_eq!(listening.acknowledged().tools_list_changed, Some(true));
    (agent, listening)
}

/// Saves a manifest serving `capability` through `server`'s REST door.
async fn save_manifest(server: &TestServer, id: &str, capability: &str) {
    let res = server
        .client
        .post(server.at("/api/manifests"))
        .header("content-type", "application/toml")
        .body(manifest(id, capability))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 201);
}

/// The listening agent is told its tool list changed, within 5 s.
async fn told_tools_changed(listening: &mut rmcp::service::Subscription) {
    use rmcp::model::ServerNotification;
    let told = tokio::time::timeout(std::time::Duration::from_secs(5), listening.next())
        .await
        .expect("told within seconds")
        .expect("the subscription is open");
    assert!(
        matches!(
            told,
            Some(ServerNotification::ToolListChangedNotification(_))
        ),
        "{told:?}"
    );
}

#[tokio::test]
async fn a_listening_agent_is_told_when_its_tools_change() {
    let server = server().await;
    let token = token(&server, TEST_EMAIL, TEST_WORKSPACE).await;
    let (agent, mut listening) = listening_agent(&server, token).await;
    // A new capability through a manifest saved in the workspace.
    save_manifest(&server, "podcasts", "search.podcasts").await;
    told_tools_changed(&mut listening).await;
    let tools = agent.list_tools(None).await.unwrap().tools;
    assert!(tools.iter().any(|t| t.name == "search.podcasts"));
    agent.cancel().await.ok();
    server.stop().await;
}

#[tokio::test]
async fn a_listening_agent_whose_token_is_revoked_is_heard_no_more() {
    let server = server().await;
    let token = token(&server, TEST_EMAIL, TEST_WORKSPACE).await;
    let (agent, mut listening) = listening_agent(&server, token.clone()).await;
    server
        .state
        .engine
        .revoke_token_value(&token)
        .await
        .unwrap()
        .expect("the token was live");
    let limit = server::auth::STREAM_ACCESS_CHECK * 3;
    let ended = tokio::time::timeout(limit, listening.next())
        .await
        .expect("the listening ends within three checks");
    assert!(!matches!(ended, Ok(Some(_))), "{ended:?}");
    agent.cancel().await.ok();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_on_another_process_is_told_when_its_tools_change() {
    let Some(db) = engine::store::testing::postgres().await else {
        return;
    };
    let a = TestServer::start_with(db.shared().unwrap(), |_| {}).await;
    let b = TestServer::start_with(db, |_| {}).await;
    let token = token(&b, TEST_EMAIL, TEST_WORKSPACE).await;
    let (agent, mut listening) = listening_agent(&b, token).await;
    save_manifest(&a, "podcasts", "search.podcasts").await;
    told_tools_changed(&mut listening).await;
    let tools = agent.list_tools(None).await.unwrap().tools;
    assert!(
        tools.iter().any(|t| t.name == "search.podcasts"),
        "process B lists the tool saved through A"
    );
    agent.cancel().await.ok();
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn an_agent_past_a_records_daily_cap_is_asked_and_may_spend_more() {
    let alpha = ScriptedConnector::new("alpha", std::iter::repeat_n(Step::Found(1), 5));
    let connectors = vec![(common::priced("alpha", 0.1), alpha)];
    let server = TestServer::with_scripted(engine::store::testing::sqlite(), connectors).await;
    let (code, body) = server
        .put_json(
            "/api/record-caps",
            json!({"unit": "USD", "daily_limit": 0.1}),
        )
        .await;
    assert_eq!(code, 200, "{body}");
    let set = server
        .me()
        .import("S", "test", "name,city\nAcme,Lyon\n")
        .await
        .id;
    let record = server.me().record_ids(set).await[0];
    let agent = agent(&server, &token(&server, TEST_EMAIL, TEST_WORKSPACE).await).await;
    let args = json!({"record_id": record, "pack": "web", "connector": "alpha"});
    answer(&call(&agent, "fire_pack", args.clone()).await);
    let refused = call(&agent, "fire_pack", args).await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let text = format!("{:?}", refused.content);
    assert!(
        text.contains("This record has cost 0.10 USD today (its cap is 0.10 USD a day); spend 0.10 USD more? To spend it, fire again with spend_more."),
        "{text}"
    );
    let fired = answer(
        &call(
            &agent,
            "fire_pack",
            json!({"record_id": record, "pack": "web", "connector": "alpha", "spend_more": true}),
        )
        .await,
    );
    assert_eq!(
        fired["results"][0]["attempts"][0]["charge"]["amount"], 0.1,
        "{fired}"
    );
    agent.cancel().await.ok();
    server.stop().await;
}

#[tokio::test]
async fn every_filter_a_tool_advertises_is_one_it_takes() {
    let server = server().await;
    let agent = agent(&server, &token(&server, TEST_EMAIL, TEST_WORKSPACE).await).await;
    let set = server
        .me()
        .import("S", "test", "name,city\nAcme,Lyon\n")
        .await
        .id;
    let tools = agent.list_all_tools().await.unwrap();
    let list = tools.iter().find(|t| t.name == "list_records").unwrap();
    let filters = list.input_schema["properties"]["filter"]["enum"]
        .as_array()
        .expect("the filter's values are listed")
        .clone();
    assert!(filters.len() >= 5, "{filters:?}");
    for filter in filters {
        let page = call(
            &agent,
            "list_records",
            json!({"set_id": set, "filter": filter}),
        )
        .await;
        assert_ne!(page.is_error, Some(true), "{filter}: {page:?}");
    }
    agent.cancel().await.ok();
    server.stop().await;
}

#[tokio::test]
async fn an_agent_decides_in_bulk_from_a_preview_and_undoes_it() {
    let reg = ScriptedConnector::registration("alpha", CostTier::Free, &[B::SearchWeb.into()]);
    let alpha = ScriptedConnector::new("alpha", [Step::Found(1)]);
    let server =
        TestServer::with_scripted(engine::store::testing::sqlite(), vec![(reg, alpha)]).await;
    let agent = agent(&server, &token(&server, TEST_EMAIL, TEST_WORKSPACE).await).await;
    let set = server
        .me()
        .import("S", "test", "name,city\nAcme,Lyon\nBolt,Oslo\n")
        .await
        .id;
    for record in server.me().record_ids(set).await {
        server.me().fire(record, "web", None).await;
    }
    let tools = agent.list_all_tools().await.unwrap();
    let bulk = tools.iter().find(|t| t.name == "bulk_triage").unwrap();
    let kinds = serde_json::to_string(&bulk.input_schema["properties"]["selection"]).unwrap();
    assert!(
        kinds.contains("single_from") && kinds.contains("found_by_two_or_more"),
        "{kinds}"
    );

    // Alpha found exactly one item in each record.
    let selection = json!({"kind": "single_from", "connector_id": "alpha"});
    let preview = answer(
        &call(
            &agent,
            "preview_bulk_triage",
            json!({"set_id": set, "selection": selection, "verb": "accept-canonical"}),
        )
        .await,
    );
    let expect: Vec<Value> = preview["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| json!({"item_id": i["item_id"], "version": i["version"]}))
        .collect();
    assert_eq!(expect.len(), 2, "{preview}");
    let args = json!({"set_id": set, "selection": selection, "verb": "accept-canonical", "expect": expect});
    let done = answer(&call(&agent, "bulk_triage", args).await);
    assert_eq!(done["changed"], 2, "{done}");
    let undone = answer(
        &call(
            &agent,
            "undo_bulk_triage",
            json!({"batch_id": done["batch_id"]}),
        )
        .await,
    );
    assert_eq!(undone["changed"], 2, "{undone}");
    let again = call(
        &agent,
        "undo_bulk_triage",
        json!({"batch_id": done["batch_id"]}),
    )
    .await;
    assert_eq!(again.is_error, Some(true), "{again:?}");
    agent.cancel().await.ok();
    server.stop().await;
}
