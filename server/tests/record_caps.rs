//! What one record may cost a day, through the REST door on SQLite and
//! PostgreSQL: admins set it per unit, a fire past it asks "spend more?"
//! (402 with the question) instead of spending, `spend_more` spends, other
//! records and units are not held back, and concurrent clicks on one
//! record never both slip under the cap.

mod common;

use std::sync::Arc;

use common::{on_every_backend, priced, TestServer};
use engine::connectors::scripted::{ScriptedConnector, Step};
use engine::store::testing::TestDatabase;
use model::{Amount, BuiltinCapability as B, CostTier, Role};
use serde_json::{json, Value};

/// A server where `alpha` costs 0.10 USD a call (and always finds) and
/// `beta`, free, finds nothing.
async fn server(db: TestDatabase, alpha: Arc<ScriptedConnector>) -> TestServer {
    let beta = ScriptedConnector::new("beta", std::iter::repeat_n(Step::Empty, 20));
    let free = ScriptedConnector::registration("beta", CostTier::Free, &[B::SearchWeb.into()]);
    TestServer::with_scripted(db, vec![(priced("alpha", 0.1), alpha), (free, beta)]).await
}

fn usd(units: f64) -> Amount {
    Amount::from_decimal(units).unwrap()
}

async fn fire(server: &TestServer, record: i64, body: Value) -> (u16, Value) {
    server
        .post_json(&format!("/api/records/{record}/fire"), body)
        .await
}

#[tokio::test]
async fn a_record_past_its_daily_cap_asks_before_it_spends_more() {
    on_every_backend(|db| async {
        let alpha = ScriptedConnector::new("alpha", std::iter::repeat_n(Step::Found(1), 20));
        let server = server(db, alpha.clone()).await;
        let set = server
            .me()
            .import("Companies", "test", "name,city\nAcme,Lyon\nGlobex,Nice\nInitech,Lille\n")
            .await
            .id;
        let ids = server.me().record_ids(set).await;

        // Members read the caps; only admins set them.
        let member = server.user("m@example.org", common::TEST_WORKSPACE, Role::Member).await;
        let cap = json!({"unit": "USD", "daily_limit": 0.25});
        let refused = member
            .put(server.at("/api/record-caps"))
            .json(&cap)
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 403);
        let (code, body) = server.put_json("/api/record-caps", cap).await;
        assert_eq!(code, 200, "{body}");
        assert_eq!(body["daily_limit"], 0.25);
        let (code, body) = server
            .put_json("/api/record-caps", json!({"unit": "", "daily_limit": 1}))
            .await;
        assert_eq!(code, 400, "{body}");
        assert!(body["detail"].as_str().unwrap().starts_with("unit:"), "{body}");
        let listed = member
            .get(server.at("/api/record-caps"))
            .send()
            .await
            .unwrap();
        let listed: Value = listed.json().await.unwrap();
        assert_eq!(listed[0]["unit"], "USD", "{listed}");

        // Two calls fit under 0.25 USD.
        for _ in 0..2 {
            let (code, body) = fire(&server, ids[0], json!({"pack": "web", "connector": "alpha"})).await;
            assert_eq!(code, 200, "{body}");
        }
        // The third would take the record to 0.30: nothing goes out, and
        // the refusal asks.
        let (code, body) = fire(&server, ids[0], json!({"pack": "web", "connector": "alpha"})).await;
        assert_eq!(code, 402, "{body}");
        assert_eq!(body["error"], "spend_more");
        assert_eq!(
            body["spend_more"],
            json!({"connector_id": "alpha", "unit": "USD", "spent_today": 0.2, "price": 0.1, "daily_limit": 0.25})
        );
        assert!(
            body["detail"]
                .as_str()
                .unwrap()
                .starts_with("This record has cost 0.20 USD today (its cap is 0.25 USD a day); spend 0.10 USD more?"),
            "{body}"
        );
        assert_eq!(alpha.calls(), 2, "the refused call never went out");

        // Another record has its own day.
        let (code, body) = fire(&server, ids[1], json!({"pack": "web", "connector": "alpha"})).await;
        assert_eq!(code, 200, "{body}");

        // Said yes: it spends, and the record's day shows it.
        let (code, body) = fire(
            &server,
            ids[0],
            json!({"pack": "web", "connector": "alpha", "spend_more": true}),
        )
        .await;
        assert_eq!(code, 200, "{body}");
        assert_eq!(body["results"][0]["attempts"][0]["charge"]["amount"], 0.1);
        assert_eq!(alpha.calls(), 4);
        let page = server.me().records(set).await;
        assert_eq!(
            page.records[0].spent_today,
            [model::SpentToday {
                unit: "USD".into(),
                amount: usd(0.3)
            }]
        );

        // Under a cap below its price, a chain walks on to the free
        // connector; when nothing is found, the report carries the question
        // in its skip.
        let (code, body) = server
            .put_json("/api/record-caps", json!({"unit": "USD", "daily_limit": 0.05}))
            .await;
        assert_eq!(code, 200, "{body}");
        let (code, body) = fire(&server, ids[2], json!({"pack": "web"})).await;
        assert_eq!(code, 200, "{body}");
        let report = &body["results"][0];
        assert_eq!(report["attempts"][0]["connector_id"], "beta", "{report}");
        let skipped = report["skipped"].as_array().unwrap();
        let alpha_skip = skipped.iter().find(|s| s["connector_id"] == "alpha").unwrap();
        assert_eq!(alpha_skip["capped"], true, "{report}");
        assert_eq!(
            alpha_skip["reason"],
            "0.10 USD would take this record past its cap of 0.05 USD a day (0.00 USD spent today)"
        );
        assert_eq!(alpha_skip["spend_more"]["spent_today"], 0.0, "{report}");

        // Without the cap, it fires as before.
        let gone = server
            .client
            .delete(server.at("/api/record-caps?unit=USD"))
            .send()
            .await
            .unwrap();
        assert_eq!(gone.status(), 204);
        let (code, body) = fire(&server, ids[0], json!({"pack": "web", "connector": "alpha"})).await;
        assert_eq!(code, 200, "{body}");
        server.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_clicks_on_one_record_never_pass_its_cap() {
    on_every_backend(|db| async {
        let alpha = ScriptedConnector::new("alpha", std::iter::repeat_n(Step::Found(1), 20));
        let server = server(db, alpha.clone()).await;
        let set = server
            .me()
            .import("One", "test", "name,city\nAcme,Lyon\n")
            .await
            .id;
        let record = server.me().record_ids(set).await[0];
        let (code, body) = server
            .put_json(
                "/api/record-caps",
                json!({"unit": "USD", "daily_limit": 0.3}),
            )
            .await;
        assert_eq!(code, 200, "{body}");
        let clicks = (0..8).map(|_| {
            fire(
                &server,
                record,
                json!({"pack": "web", "connector": "alpha"}),
            )
        });
        let answers = futures::future::join_all(clicks).await;
        let spent = answers.iter().filter(|(code, _)| *code == 200).count();
        let asked = answers.iter().filter(|(code, _)| *code == 402).count();
        assert_eq!((spent, asked), (3, 5), "{answers:?}");
        assert_eq!(alpha.calls(), 3);
        server.stop().await;
    })
    .await;
}
