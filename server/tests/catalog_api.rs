//! A workspace's own packs and bundles through the REST door: a pack for a
//! new capability gets its own chip once it is in the set's bundle, labels
//! stay unique, chains name connectors the workspace sees, a shipped pack
//! can be changed (and changed back) for one workspace, and no other
//! workspace sees any of it. On SQLite and PostgreSQL.

mod common;

use common::{on_every_backend, TestServer, TEST_PACKS};
use engine::connectors::scripted::{ScriptedConnector, Step};
use engine::packs::Catalog;
use engine::store::testing::{self, TestDatabase};
use model::{Capability, CostTier, Role};
use serde_json::{json, Value};

async fn server(db: TestDatabase) -> TestServer {
    TestServer::start_with(db, |state| {
        *state.engine.catalog_lock().write().unwrap() = Catalog::from_toml(TEST_PACKS).unwrap();
        let forum: Capability = "community.forum".parse().unwrap();
        state
            .engine
            .registry()
            .register(
                ScriptedConnector::registration("forum-search", CostTier::Free, &[forum]),
                ScriptedConnector::new("forum-search", [Step::Found(2)]),
            )
            .unwrap();
        state
            .engine
            .registry()
            .register(
                ScriptedConnector::registration(
                    "alpha",
                    CostTier::Free,
                    &["search.web".parse().unwrap()],
                ),
                ScriptedConnector::new("alpha", [Step::Found(1)]),
            )
            .unwrap();
    })
    .await
}

async fn put(client: &reqwest::Client, url: String, body: Value) -> (u16, Value) {
    let res = client.put(url).json(&body).send().await.unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

async fn get(client: &reqwest::Client, url: String) -> Value {
    client.get(url).send().await.unwrap().json().await.unwrap()
}

fn forum_pack(label: &str, chain: &[&str]) -> Value {
    json!({
        "pack_id": "forum",
        "display_name": "Forums",
        "short_label": label,
        "intent": "community.forum",
        "query_template": "{name} {city}",
        "preferred_connectors": chain,
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workspace_adds_a_pack_for_a_new_capability_and_its_chip_appears_there_only() {
    on_every_backend(|db| async {
        let server = server(db).await;
        let member = server
            .user("bob@example.org", common::TEST_WORKSPACE, Role::Member)
            .await;
        let other = server.user("eve@other.example", "other", Role::Admin).await;
        let set = server
            .me()
            .import("Companies", "test", "name,city\nAcme,Lyon\n")
            .await
            .id;
        let pack_url = server.at("/api/packs/forum");

        // Members may not; a label another pack has is refused, naming it;
        // a chain must name connectors this workspace sees.
        let (status, _) = put(&member, pack_url.clone(), forum_pack("fo", &[])).await;
        assert_eq!(status, 403);
        let (status, body) = put(&server.client, pack_url.clone(), forum_pack("w", &[])).await;
        assert_eq!(status, 400, "{body}");
        assert!(
            body["detail"].as_str().unwrap().contains("\"web\""),
            "{body}"
        );
        let (status, body) = put(
            &server.client,
            pack_url.clone(),
            forum_pack("fo", &["nope"]),
        )
        .await;
        assert_eq!(status, 400, "{body}");
        assert!(
            body["detail"]
                .as_str()
                .unwrap()
                .contains("preferred_connectors[0]"),
            "{body}"
        );
        // Nor may it take a label a member gave another pack for themselves.
        let res = member
            .put(server.at("/api/me/pack-labels/web"))
            .json(&json!({"label": "fo"}))
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success(), "{}", res.status());
        let (status, body) = put(&server.client, pack_url.clone(), forum_pack("fo", &[])).await;
        assert_eq!(status, 400, "{body}");
        assert!(
            body["detail"].as_str().unwrap().contains("bob@example.org"),
            "{body}"
        );
        let res = member
            .put(server.at("/api/me/pack-labels/web"))
            .json(&json!({"label": ""}))
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success(), "{}", res.status());
        let (status, body) = put(
            &server.client,
            server.at("/api/packs/other-id"),
            forum_pack("fo", &[]),
        )
        .await;
        assert_eq!(status, 400, "{body}");

        // The pack, then the bundle with it: the set's cards get its chip.
        let (status, body) = put(
            &server.client,
            pack_url.clone(),
            forum_pack("fo", &["forum-search"]),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let bundle = json!({
            "bundle_id": "test",
            "display_name": "Test, with forums",
            "members": [{"pack": "web"}, {"pack": "forum"}],
        });
        let (status, body) = put(&server.client, server.at("/api/bundles/test"), bundle).await;
        assert_eq!(status, 200, "{body}");
        let page = get(
            &server.client,
            server.at(&format!("/api/record-sets/{set}/records")),
        )
        .await;
        let labels: Vec<&str> = page["packs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["short_label"].as_str().unwrap())
            .collect();
        assert_eq!(labels, ["w", "fo"], "{page}");
        let chip = &page["records"][0]["chips"][1];
        assert_eq!(chip["pack_id"], "forum", "{page}");
        assert_eq!(chip["next"], "Scripted forum-search", "{page}");
        let record = page["records"][0]["id"].as_i64().unwrap();
        let fired = server.me().fire(record, "forum", None).await;
        let attempt = &fired.attempts[0];
        assert_eq!(attempt.connector_id, "forum-search", "{fired:?}");
        assert_eq!(
            attempt.end.outcome,
            Some(model::FireOutcome::Found),
            "{fired:?}"
        );

        // Another workspace still has the shipped catalogue.
        let theirs = get(&other, server.at("/api/packs")).await;
        assert!(
            theirs
                .as_array()
                .unwrap()
                .iter()
                .all(|p| p["pack_id"] != "forum"),
            "{theirs}"
        );
        let bundles = get(&other, server.at("/api/bundles")).await;
        assert_eq!(
            bundles[0]["members"].as_array().unwrap().len(),
            2,
            "{bundles}"
        );
        assert_eq!(bundles[0]["display_name"], "Test");

        // A pack a bundle uses cannot go; the bundle's own version can, and
        // the shipped bundle comes back.
        let res = server.client.delete(pack_url.clone()).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 400);
        let body: Value = res.json().await.unwrap();
        assert!(
            body["detail"]
                .as_str()
                .unwrap()
                .contains("take the pack out"),
            "{body}"
        );
        let res = server
            .client
            .delete(server.at("/api/bundles/test"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 204);
        let res = server.client.delete(pack_url.clone()).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 204);
        let res = server.client.delete(pack_url).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 404);
        // A removed pack no longer fires.
        let (status, body) = server
            .post_json(
                &format!("/api/records/{record}/fire"),
                json!({"pack": "forum"}),
            )
            .await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["detail"], "pack: no pack \"forum\"", "{body}");
        let page = get(
            &server.client,
            server.at(&format!("/api/record-sets/{set}/records")),
        )
        .await;
        assert_eq!(page["packs"].as_array().unwrap().len(), 2, "{page}");

        // A shipped pack changed here keeps its id; reverting restores it.
        let mut web = get(&server.client, server.at("/api/packs")).await[0].clone();
        web["short_label"] = json!("ww");
        web["preferred_connectors"] = json!(["alpha"]);
        let (status, body) = put(&server.client, server.at("/api/packs/web"), web).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            get(&server.client, server.at("/api/packs")).await[0]["short_label"],
            "ww"
        );
        assert_eq!(
            get(&other, server.at("/api/packs")).await[0]["short_label"],
            "w"
        );
        let res = server
            .client
            .delete(server.at("/api/packs/web"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 204);
        assert_eq!(
            get(&server.client, server.at("/api/packs")).await[0]["short_label"],
            "w"
        );
        server.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bundle_of_the_workspace_s_own_that_a_set_uses_stays() {
    let server = server(testing::sqlite()).await;
    let (status, body) = put(
        &server.client,
        server.at("/api/packs/forum"),
        forum_pack("fo", &[]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let bundle =
        json!({"bundle_id": "forums", "display_name": "Forums", "members": [{"pack": "forum"}]});
    let (status, body) = put(&server.client, server.at("/api/bundles/forums"), bundle).await;
    assert_eq!(status, 200, "{body}");
    // Importing under it works in this workspace only.
    server
        .me()
        .import("Forum people", "forums", "name\nAda\n")
        .await;
    let other = server.user("eve@other.example", "other", Role::Admin).await;
    let refused = server
        .as_(&other)
        .import_refused("Theirs", "forums", "name\nAda\n")
        .await;
    assert_eq!(refused.status, 400, "{refused:?}");
    let res = server
        .client
        .delete(server.at("/api/bundles/forums"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 400);
    let body: Value = res.json().await.unwrap();
    assert!(
        body["detail"].as_str().unwrap().contains("Forum people"),
        "{body}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_live_view_reads_the_chips_of_its_own_records_only() {
    let server = server(testing::sqlite()).await;
    let other = server.user("eve@other.example", "other", Role::Admin).await;
    let mine = server
        .me()
        .import("Mine", "test", "name,city\nAcme,Lyon\n")
        .await
        .id;
    let them = server.as_(&other);
    let theirs = them
        .import("Theirs", "test", "name,city\nBolt,Oslo\n")
        .await;
    let theirs_record = them.record_ids(theirs.id).await[0];
    let my_record = server.me().record_ids(mine).await[0];
    let path = server::router::inventory()
        .into_iter()
        .map(|(_, p)| p)
        .find(|p| p.trim_end_matches(|c: char| c.is_ascii_digit()) == "/api/reload_chips")
        .expect("the reload_chips server function");
    let ask = |client: &reqwest::Client, set: i64| {
        client
            .post(server.at(&path))
            .json(&json!({"set_id": set, "record_ids": [my_record, theirs_record]}))
            .send()
    };
    let res = ask(&server.client, mine).await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let chips: Value = res.json().await.unwrap();
    let list = chips.as_array().unwrap();
    assert_eq!(list.len(), 1, "another set's record is left out: {chips}");
    assert_eq!(list[0][0], my_record);
    assert_eq!(list[0][1][0]["pack_id"], "web");
    assert_eq!(list[0][1][0]["next"], "Scripted alpha", "{chips}");
    // Another workspace may not read this set's chips at all.
    let res = ask(&other, mine).await.unwrap();
    assert_eq!(res.status().as_u16(), 404);
    server.stop().await;
}

#[tokio::test]
async fn a_pack_written_with_the_legacy_connector_is_read_as_its_chain_and_written_back_so() {
    let server = server(testing::sqlite()).await;
    let url = server.at("/api/packs/forum");
    let mut pack = forum_pack("fo", &[]);
    pack.as_object_mut().unwrap().remove("preferred_connectors");
    pack["connector"] = json!("forum-search");
    let (status, body) = put(&server.client, url.clone(), pack.clone()).await;
    assert_eq!(status, 200, "{body}");
    let packs = get(&server.client, server.at("/api/packs")).await;
    let forum = packs
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pack_id"] == "forum")
        .expect("the pack is saved");
    assert_eq!(forum["preferred_connectors"], json!(["forum-search"]));
    assert!(forum.get("connector").is_none(), "{forum}");

    // Both, disagreeing: refused, naming both; nothing changes.
    pack["preferred_connectors"] = json!(["alpha"]);
    let (status, body) = put(&server.client, url, pack).await;
    assert_eq!(status, 400, "{body}");
    let detail = body["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("forum-search") && detail.contains("alpha"),
        "{body}"
    );
    server.stop().await;
}
