//! A person's own order of a pack's connectors through the REST door: it
//! chooses what their clicks fire and what their chips and menus say, a
//! colleague in the same set is unaffected, a fire's pick and a record's
//! "always start with" still come first, bad orders are refused naming the
//! place, and an empty one gives the workspace's chain back. On SQLite and
//! PostgreSQL.

mod common;

use common::{on_every_backend, TestServer, TEST_PACKS};
use engine::connectors::scripted::{ScriptedConnector, Step};
use engine::packs::Catalog;
use model::{BuiltinCapability as B, ChainRule, ConnectorMenu, CostTier, PersonalChain, Role};
use serde_json::{json, Value};

const CSV: &str = "name,city\nAcme,Lyon\nBolt,Oslo\nCobalt,Riga\n";

async fn server(db: engine::store::testing::TestDatabase) -> TestServer {
    TestServer::start_with(db, |state| {
        *state.engine.catalog_lock().write().unwrap() = Catalog::from_toml(TEST_PACKS).unwrap();
        let found = || std::iter::repeat_n(Step::Found(1), 20);
        for id in ["alpha", "beta", "gamma"] {
            state
                .engine
                .registry()
                .register(
                    ScriptedConnector::registration(id, CostTier::Free, &[B::SearchWeb.into()]),
                    ScriptedConnector::new(id, found()),
                )
                .unwrap();
        }
        state
            .engine
            .registry()
            .register(
                ScriptedConnector::registration("lister", CostTier::Free, &[B::SearchNews.into()]),
                ScriptedConnector::new("lister", found()),
            )
            .unwrap();
    })
    .await
}

async fn put_chain(
    client: &reqwest::Client,
    server: &TestServer,
    pack: &str,
    chain: &[&str],
) -> (u16, Value) {
    let res = client
        .put(server.at(&format!("/api/me/packs/{pack}/chain")))
        .json(&json!({ "connectors": chain }))
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// The `web` chip of a record as `client` sees it: what a click fires
/// first and which rule chose it.
async fn web_chip(
    client: &reqwest::Client,
    server: &TestServer,
    set: i64,
    record: i64,
) -> (Option<String>, Option<ChainRule>) {
    let page = server.as_(client).records(set).await;
    let chip = page
        .records
        .iter()
        .find(|r| r.id == record)
        .and_then(|r| r.chips.iter().find(|c| c.pack_id == "web"))
        .cloned()
        .expect("the web chip");
    (chip.next, chip.chosen_by)
}

fn first_fired(report: &model::FireReport) -> &str {
    report.attempts[0].connector_id.as_str()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_s_own_order_chooses_their_fires_and_chips_and_nobody_else_s() {
    on_every_backend(|db| async {
        let server = server(db).await;
        let bob = server
            .user("bob@example.org", common::TEST_WORKSPACE, Role::Member)
            .await;
        let set = server.me().import("Companies", "test", CSV).await.id;
        let records = server.me().record_ids(set).await;

        let (status, body) = put_chain(&server.client, &server, "web", &["gamma", "alpha"]).await;
        assert_eq!(status, 200, "{body}");
        let saved: PersonalChain = serde_json::from_value(body).unwrap();
        assert_eq!(saved.connectors, ["gamma", "alpha"]);

        // My chip says my order chose gamma; Bob's still says the pack's.
        assert_eq!(
            web_chip(&server.client, &server, set, records[0]).await,
            (Some("Scripted gamma".into()), Some(ChainRule::Person))
        );
        assert_eq!(
            web_chip(&bob, &server, set, records[0]).await,
            (Some("Scripted alpha".into()), Some(ChainRule::Pack))
        );
        // So do our clicks.
        let mine = server.me().fire(records[0], "web", None).await;
        assert_eq!(first_fired(&mine), "gamma");
        let bobs = server.as_(&bob).fire(records[1], "web", None).await;
        assert_eq!(first_fired(&bobs), "alpha");

        // My menu marks my order; Bob's marks none.
        let menu = server.me().menu(records[2], "web").await;
        let place = |menu: &ConnectorMenu, id: &str| {
            menu.entries
                .iter()
                .find(|e| e.connector.profile.id == id)
                .map(|e| (e.your_order, e.next))
        };
        assert_eq!(place(&menu, "gamma"), Some((Some(1), true)));
        assert_eq!(place(&menu, "alpha"), Some((Some(2), false)));
        assert_eq!(place(&menu, "beta"), Some((None, false)));
        let bobs_menu = server.as_(&bob).menu(records[2], "web").await;
        assert!(bobs_menu.entries.iter().all(|e| e.your_order.is_none()));
        assert_eq!(place(&bobs_menu, "alpha"), Some((None, true)));

        // A record's "always start with" and a fire's pick come first.
        let res = server
            .client
            .put(server.at(&format!("/api/records/{}/overrides/web", records[2])))
            .json(&json!({ "connector": "beta" }))
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success(), "{}", res.status());
        assert_eq!(
            web_chip(&server.client, &server, set, records[2]).await,
            (Some("Scripted beta".into()), Some(ChainRule::Record))
        );
        let picked = server.me().fire(records[2], "web", Some("alpha")).await;
        assert_eq!(first_fired(&picked), "alpha");

        // Listed; cleared by an empty order, and the workspace's serves again.
        let (_, listed) = server.get_json("/api/me/chains").await;
        assert_eq!(
            listed,
            json!([{ "pack_id": "web", "connectors": ["gamma", "alpha"] }])
        );
        let (status, body) = put_chain(&server.client, &server, "web", &[]).await;
        assert_eq!(status, 200, "{body}");
        let (_, listed) = server.get_json("/api/me/chains").await;
        assert_eq!(listed, json!([]));
        assert_eq!(
            web_chip(&server.client, &server, set, records[1]).await,
            (Some("Scripted beta".into()), Some(ChainRule::Pack)),
            "alpha found for this record already, so the pack's chain goes on to beta"
        );
        server.stop().await;
    })
    .await;
}

#[tokio::test]
async fn a_bad_order_is_refused_naming_its_place_and_changes_nothing() {
    let server = server(engine::store::testing::sqlite()).await;
    let (status, body) = put_chain(&server.client, &server, "web", &["beta"]).await;
    assert_eq!(status, 200, "{body}");
    let refused = |status: u16, body: &Value, words: &[&str]| {
        assert_eq!(status, 400, "{body}");
        let detail = body["detail"].as_str().unwrap_or_default();
        for w in words {
            assert!(detail.contains(w), "{w:?} not in {body}");
        }
    };
    let (status, body) = put_chain(&server.client, &server, "web", &["alpha", "nope"]).await;
    refused(status, &body, &["connectors[1]", "nope"]);
    let (status, body) = put_chain(&server.client, &server, "web", &["lister"]).await;
    refused(
        status,
        &body,
        &["connectors[0]", "does not serve search.web"],
    );
    let (status, body) = put_chain(&server.client, &server, "web", &["alpha", "alpha"]).await;
    refused(status, &body, &["connectors[1]", "twice"]);
    let many: Vec<&str> =
        std::iter::repeat_n("alpha", engine::ops::MAX_PERSONAL_CHAIN + 1).collect();
    let (status, body) = put_chain(&server.client, &server, "web", &many).await;
    refused(status, &body, &["at most"]);
    let (status, body) = put_chain(&server.client, &server, "ghost", &["alpha"]).await;
    assert_eq!(status, 404, "{body}");
    let (_, listed) = server.get_json("/api/me/chains").await;
    assert_eq!(
        listed,
        json!([{ "pack_id": "web", "connectors": ["beta"] }])
    );
    server.stop().await;
}
