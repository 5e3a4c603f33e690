//! One job namespace, on SQLite and PostgreSQL: every pending envelope's
//! `job_id` is read and cancelled at `/api/jobs/{id}`, a fan-out's and a
//! capability call's alike (`kind` says which), a 202 says where to read
//! it (`Location`), a call's id never meets a fan-out's, and another
//! workspace reads neither.

mod common;

use std::time::Duration;

use common::{on_every_backend, TestServer};
use engine::connectors::scripted::{ScriptedConnector, Step};
use model::{BuiltinCapability as B, CostTier, Role, CALL_IDS_FROM};
use serde_json::{json, Value};

/// A 202's `Location` and its envelope.
async fn pending(res: reqwest::Response) -> (String, Value) {
    assert_eq!(res.status(), 202);
    let location = res
        .headers()
        .get("location")
        .expect("a 202 says where to read it")
        .to_str()
        .unwrap()
        .to_owned();
    (location, res.json().await.unwrap())
}

#[tokio::test]
async fn fan_outs_and_calls_are_read_and_cancelled_at_one_job_namespace() {
    on_every_backend(|db| async {
        // Slow enough that both are still running when read and cancelled.
        let web = [B::SearchWeb.into()];
        let slow = Step::Delay(Duration::from_secs(5), Box::new(Step::Found(1)));
        let alpha = ScriptedConnector::new("alpha", vec![slow; 20]);
        let registration = ScriptedConnector::registration("alpha", CostTier::Free, &web);
        let server = TestServer::with_scripted(db, vec![(registration, alpha)]).await;
        let me = server.me();
        let csv = "name,city\nA,x\nB,x\nC,x\nD,x\nE,x\nF,x\n";
        let set = me.import("Six", "test", csv).await.id;

        let res = server
            .client
            .post(server.at(&format!("/api/record-sets/{set}/fanout")))
            .json(&json!({"packs": ["web"]}))
            .send()
            .await
            .unwrap();
        let (fanout_at, fanout) = pending(res).await;
        let fanout_id = fanout["job_id"].as_i64().unwrap();
        assert_eq!(fanout_at, format!("/api/jobs/{fanout_id}"));
        assert_eq!(fanout["kind"], "fanout", "{fanout}");

        let res = server
            .client
            .post(server.at("/api/capabilities/search.web/call"))
            .json(&json!({"query": "Ada", "async": true}))
            .send()
            .await
            .unwrap();
        let (call_at, call) = pending(res).await;
        let call_id = call["job_id"].as_i64().unwrap();
        assert!(
            call_id >= CALL_IDS_FROM,
            "a call's id is in its range: {call_id}"
        );
        assert_eq!(call_at, format!("/api/jobs/{call_id}"));
        assert_eq!(call["kind"], "call", "{call}");

        // Each is read where its Location says, as what it is.
        let (code, read) = server.get_json(&fanout_at).await;
        assert_eq!(code, 200, "{read}");
        assert_eq!(
            (read["kind"].as_str(), read["job"]["id"].as_i64()),
            (Some("fanout"), Some(fanout_id))
        );
        let (code, read) = server.get_json(&call_at).await;
        assert_eq!(code, 200, "{read}");
        assert_eq!(
            (read["kind"].as_str(), read["status"].as_str()),
            (Some("call"), Some("pending"))
        );
        // The call's old address still answers.
        let (_, alias) = server.get_json(&format!("/api/calls/{call_id}")).await;
        assert_eq!(alias["job_id"], call_id);

        // Another workspace reads and cancels neither.
        let eve = server
            .user("eve@example.org", "elsewhere", Role::Admin)
            .await;
        for id in [fanout_id, call_id] {
            let res = eve
                .get(server.at(&format!("/api/jobs/{id}")))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 404, "{id}");
            let res = eve
                .post(server.at(&format!("/api/jobs/{id}/cancel")))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 404, "{id}");
        }

        // Both are cancelled at the same address.
        for id in [fanout_id, call_id] {
            let (code, cancelled) = server
                .post_json(&format!("/api/jobs/{id}/cancel"), json!({}))
                .await;
            assert_eq!(code, 200, "{cancelled}");
            assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
        }
        server.stop().await;
    })
    .await;
}
