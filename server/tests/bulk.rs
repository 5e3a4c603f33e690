//! Decisions in bulk through the REST door, on SQLite and PostgreSQL: a
//! preview of what a selection takes, a decision on all of it recorded per
//! item with who and when, an item someone else decided on meanwhile
//! skipped and named, one undo for the lot, and nothing of it across
//! workspaces.

mod common;

use common::{on_every_backend, TestServer};
use engine::connectors::scripted::{ScriptedConnector, Step};
use engine::connectors::seam::ConnectorResult;
use model::{BuiltinCapability as B, CostTier, Role, TriageVerb};
use serde_json::{json, Value};

/// A server where `alpha` finds one item, one, one, then two, and `beta`
/// finds the first of Dune's two again.
async fn server(db: engine::store::testing::TestDatabase) -> TestServer {
    let web = [B::SearchWeb.into()];
    let steps = [
        Step::Found(1),
        Step::Found(1),
        Step::Found(1),
        Step::Found(2),
    ];
    let beta = [Step::Results(vec![dunes_first()])];
    let free = |id| ScriptedConnector::registration(id, CostTier::Free, &web);
    let connectors = vec![
        (free("alpha"), ScriptedConnector::new("alpha", steps)),
        (free("beta"), ScriptedConnector::new("beta", beta)),
    ];
    TestServer::with_scripted(db, connectors).await
}

/// The first page alpha finds for Dune (Nice).
fn dunes_first() -> ConnectorResult {
    ConnectorResult {
        url: "https://alpha.test/dune-nice/0".into(),
        title: "Dune Nice result 0".into(),
        snippet: "found by beta too".into(),
        raw: Value::Null,
    }
}

fn expect_of(preview: &Value) -> Value {
    let items = preview["items"].as_array().unwrap();
    json!(items
        .iter()
        .map(|i| json!({"item_id": i["item_id"], "version": i["version"]}))
        .collect::<Vec<_>>())
}

#[tokio::test]
async fn a_bulk_decision_previews_skips_what_others_decided_and_undoes_as_one_step() {
    on_every_backend(|db| async {
        let server = server(db).await;
        let me = server.me();
        let csv = "name,city\nAcme,Lyon\nBolt,Oslo\nCore,Rome\nDune,Nice\n";
        let set = me.import("Companies", "test", csv).await.id;
        let ids = me.record_ids(set).await;
        for id in &ids {
            me.fire(*id, "web", Some("alpha")).await;
        }
        me.fire(ids[3], "web", Some("beta")).await;

        // Alpha found exactly one item in the first three records.
        let single = json!({"kind": "single_from", "connector_id": "alpha"});
        let (code, preview) = server
            .post_json(
                &format!("/api/record-sets/{set}/bulk-triage/preview"),
                json!({"selection": single, "verb": "accept-canonical"}),
            )
            .await;
        assert_eq!(code, 200, "{preview}");
        let names: Vec<&str> = preview["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["record_name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["Acme", "Bolt", "Core"]);
        // Found by both connectors: Dune's first page.
        let (_, both) = server
            .post_json(
                &format!("/api/record-sets/{set}/bulk-triage/preview"),
                json!({"selection": {"kind": "found_by_two_or_more"}, "verb": "discard"}),
            )
            .await;
        assert_eq!(both["items"].as_array().unwrap().len(), 1, "{both}");
        assert_eq!(both["items"][0]["record_name"], "Dune");

        // Bob discards Bolt's item after the preview.
        let bob = server.user("bob@example.org", common::TEST_WORKSPACE, Role::Member).await;
        let bolt = &preview["items"][1];
        let discarded = server
            .as_(&bob)
            .triage(bolt["item_id"].as_i64().unwrap(), TriageVerb::Discard, bolt["version"].as_i64().unwrap())
            .await;
        assert_eq!(discarded.triaged_by.as_deref(), Some("bob@example.org"));

        let (code, done) = server
            .post_json(
                &format!("/api/record-sets/{set}/bulk-triage"),
                json!({"selection": single, "verb": "accept-canonical", "expect": expect_of(&preview)}),
            )
            .await;
        assert_eq!(code, 200, "{done}");
        assert_eq!(done["changed"], 2, "{done}");
        assert_eq!(
            done["skipped"],
            json!([{"item_id": bolt["item_id"], "title": bolt["title"], "state": "discarded", "by": "bob@example.org"}])
        );
        let acme = &me.items(ids[0]).await[0];
        assert_eq!(acme.state, model::TriageState::AcceptedCanonical);
        assert_eq!(acme.triaged_by.as_deref(), Some(common::TEST_EMAIL));

        // Bob then takes Core's item as context: the undo leaves it.
        let core = me.items(ids[2]).await.remove(0);
        server
            .as_(&bob)
            .triage(core.id, TriageVerb::AcceptContext, core.version)
            .await;
        let batch = done["batch_id"].as_i64().unwrap();
        let (code, undone) = server
            .post_json(&format!("/api/bulk-triage/{batch}/undo"), json!({}))
            .await;
        assert_eq!(code, 200, "{undone}");
        assert_eq!(undone["changed"], 1, "{undone}");
        assert_eq!(undone["skipped"][0]["item_id"], core.id);
        assert_eq!(undone["skipped"][0]["state"], "accepted-context");
        assert_eq!(me.items(ids[0]).await[0].state, model::TriageState::New);
        let (code, again) = server
            .post_json(&format!("/api/bulk-triage/{batch}/undo"), json!({}))
            .await;
        assert_eq!(code, 409, "{again}");

        // Undo is the batch's own step, not a verb in bulk.
        let (code, body) = server
            .post_json(
                &format!("/api/record-sets/{set}/bulk-triage/preview"),
                json!({"selection": single, "verb": "undo"}),
            )
            .await;
        assert_eq!(code, 400, "{body}");

        // Another workspace sees none of it.
        let eve = server.user("eve@example.org", "elsewhere", Role::Admin).await;
        let res = eve
            .post(server.at(&format!("/api/record-sets/{set}/bulk-triage/preview")))
            .json(&json!({"selection": single, "verb": "discard"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 404);
        let res = eve
            .post(server.at(&format!("/api/bulk-triage/{batch}/undo")))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 404);
        let res = eve
            .post(server.at(&format!("/api/record-sets/{set}/bulk-triage")))
            .json(&json!({"selection": single, "verb": "discard", "expect": expect_of(&preview)}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 404);
        server.stop().await;
    })
    .await;
}
