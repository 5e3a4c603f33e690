//! Capability calls through the REST door: a query walks a capability's
//! chain with no record, answers the envelope (completed, pending, failed,
//! cancelled) and leaves a receipt for every attempt, counted in the
//! connector statistics.

mod common;

use std::time::Duration;

use common::{on_every_backend, TestServer, TEST_EMAIL};
use engine::connectors::scripted::{ScriptedConnector, Step};
use engine::connectors::seam::FireError;
use model::{BuiltinCapability as B, Capability, CostTier, Role};
use serde_json::{json, Value};

/// A server whose `search.news` chain is `alpha` (free) then `beta` (paid),
/// each playing its script, with calls awaited at most `inline_wait`.
async fn server(alpha: &[Step], beta: &[Step], inline_wait: Duration) -> TestServer {
    server_on(engine::store::testing::sqlite(), alpha, beta, inline_wait).await
}

async fn server_on(
    db: engine::store::testing::TestDatabase,
    alpha: &[Step],
    beta: &[Step],
    inline_wait: Duration,
) -> TestServer {
    let news: Vec<Capability> = vec![B::SearchNews.into()];
    let alpha = ScriptedConnector::new("alpha", alpha.to_vec());
    let beta = ScriptedConnector::new("beta", beta.to_vec());
    TestServer::start_configured(
        db,
        |config| config.calls.inline_wait = inline_wait,
        move |state| {
            for (id, tier, connector) in [
                ("alpha", CostTier::Free, alpha),
                ("beta", CostTier::Paid, beta),
            ] {
                state
                    .engine
                    .registry()
                    .register(ScriptedConnector::registration(id, tier, &news), connector)
                    .unwrap();
            }
        },
    )
    .await
}

fn slow(step: Step) -> Step {
    Step::Delay(Duration::from_secs(3), Box::new(step))
}

async fn call(server: &TestServer, body: Value) -> (u16, Value) {
    server
        .post_json("/api/capabilities/search.news/call", body)
        .await
}

/// Reads a call until it has ended.
async fn ended(server: &TestServer, id: i64) -> Value {
    for _ in 0..200 {
        let (code, envelope) = server.get_json(&format!("/api/calls/{id}")).await;
        if envelope["status"] != "pending" {
            assert_eq!(code, 200, "{envelope}");
            return envelope;
        }
        assert_eq!(code, 202, "{envelope}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("call {id} did not end");
}

#[tokio::test]
async fn a_call_walks_the_chain_and_answers_its_results_with_a_receipt_per_attempt() {
    on_every_backend(|db| async {
        let server = server_on(
            db,
            &[Step::Empty],
            &[Step::Found(3)],
            Duration::from_secs(10),
        )
        .await;
        let (code, envelope) =
            call(&server, json!({"query": "Ada Lovelace", "max_results": 2})).await;
        assert_eq!(code, 200, "{envelope}");
        assert_eq!(envelope["status"], "completed");
        assert!(envelope.get("error").is_none(), "{envelope}");
        let results = envelope["results"].as_array().unwrap();
        assert_eq!(results.len(), 2, "max_results holds: {envelope}");
        assert!(results.iter().all(|r| r["connector_id"] == "beta"));
        assert_eq!(envelope["progress"], json!({"done": 2, "total": 2}));

        // The same call read again, and its receipts: who, which, how.
        let id = envelope["job_id"].as_i64().unwrap();
        let (_, again) = server.get_json(&format!("/api/calls/{id}")).await;
        assert_eq!(again["results"], envelope["results"]);
        let (_, attempts) = server.get_json(&format!("/api/calls/{id}/attempts")).await;
        let attempts = attempts.as_array().unwrap();
        let walked: Vec<(&str, &str)> = attempts
            .iter()
            .map(|a| {
                assert_eq!(a["actor"], TEST_EMAIL);
                assert!(a["finished_at"].as_i64() >= a["fired_at"].as_i64());
                (
                    a["connector_id"].as_str().unwrap(),
                    a["outcome"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(walked, [("alpha", "not_found"), ("beta", "found")]);

        // The inventory's statistics count them like any fire's attempts.
        let (_, stats) = server.get_json("/api/connectors/stats").await;
        let of = |id: &str| {
            stats
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["connector_id"] == id)
                .cloned()
                .unwrap_or_else(|| panic!("{id} has no statistics: {stats}"))
        };
        assert_eq!(of("alpha")["not_found"], 1);
        assert_eq!(of("beta")["found"], 1);
        server.stop().await;
    })
    .await;
}

#[tokio::test]
async fn an_async_or_slow_call_is_pending_then_read_completed() {
    let server = server(
        &[slow(Step::Found(1)), slow(Step::Found(1))],
        &[],
        Duration::from_millis(300),
    )
    .await;
    // Asked for: pending at once.
    let (code, pending) = call(&server, json!({"query": "Ada", "async": true})).await;
    assert_eq!(code, 202, "{pending}");
    assert_eq!(pending["status"], "pending");
    let id = pending["job_id"].as_i64().unwrap();
    let done = ended(&server, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["results"].as_array().unwrap().len(), 1);

    // Slower than the inline wait: pending too, and it still ends.
    let (code, pending) = call(&server, json!({"query": "Grace"})).await;
    assert_eq!(code, 202, "{pending}");
    let done = ended(&server, pending["job_id"].as_i64().unwrap()).await;
    assert_eq!(done["status"], "completed", "{done}");
    server.stop().await;
}

#[tokio::test]
async fn a_call_nothing_answers_fails_with_each_connector_s_reason() {
    let broken = Step::Fail(FireError::Upstream {
        reason: "HTTP 503".into(),
    });
    let server = server(
        &[broken.clone(), broken],
        &[Step::Fail(FireError::AuthFailed {
            reason: "HTTP 401".into(),
        })],
        Duration::from_secs(10),
    )
    .await;
    let (code, envelope) = call(&server, json!({"query": "Ada"})).await;
    assert_eq!(code, 200, "{envelope}");
    assert_eq!(envelope["status"], "failed");
    assert_eq!(envelope["results"], json!([]));
    let error = envelope["error"].as_str().unwrap();
    assert!(
        error.contains("alpha: ") && error.contains("503"),
        "{error}"
    );
    assert!(error.contains("beta: ") && error.contains("401"), "{error}");
    server.stop().await;
}

#[tokio::test]
async fn a_cancelled_call_says_cancelled() {
    let server = server(&[slow(Step::Found(1))], &[], Duration::from_secs(10)).await;
    let (_, pending) = call(&server, json!({"query": "Ada", "async": true})).await;
    let id = pending["job_id"].as_i64().unwrap();
    let (code, cancelled) = server
        .post_json(&format!("/api/calls/{id}/cancel"), json!({}))
        .await;
    assert_eq!(code, 200, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled");
    // Once ended, there is nothing left to cancel.
    let (code, _) = server
        .post_json(&format!("/api/calls/{id}/cancel"), json!({}))
        .await;
    assert_eq!(code, 409);
    server.stop().await;
}

#[tokio::test]
async fn bad_calls_name_what_is_wrong_and_calls_stay_in_their_workspace() {
    let server = server(&[Step::Found(1)], &[], Duration::from_secs(10)).await;
    for (path, body, code, names) in [
        (
            "search.nothing_here",
            json!({"query": "x"}),
            404,
            "capability",
        ),
        ("Not A Capability", json!({"query": "x"}), 404, "capability"),
        ("search.news", json!({"query": "  "}), 400, "query"),
        (
            "search.news",
            json!({"query": "x", "max_results": 0}),
            400,
            "max_results",
        ),
        (
            "search.news",
            json!({"query": "x", "max_results": 51}),
            400,
            "max_results",
        ),
        (
            "search.news",
            json!({"query": "x", "connector": "ghost"}),
            400,
            "connector",
        ),
        (
            "search.news",
            json!({"query": "x", "colour": "red"}),
            400,
            "colour",
        ),
    ] {
        let (got, err) = server
            .post_json(
                &format!("/api/capabilities/{}/call", path.replace(' ', "%20")),
                body.clone(),
            )
            .await;
        assert_eq!(got, code, "{path} {body}: {err}");
        assert!(
            err["detail"].as_str().unwrap().contains(names),
            "{path} {body}: {err}"
        );
    }
    let (_, envelope) = call(&server, json!({"query": "Ada"})).await;
    let id = envelope["job_id"].as_i64().unwrap();
    let stranger = server.user("s@example.org", "elsewhere", Role::Admin).await;
    for path in [
        format!("/api/calls/{id}"),
        format!("/api/calls/{id}/attempts"),
    ] {
        let res = stranger.get(server.at(&path)).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 404, "{path}");
    }
    server.stop().await;
}

#[tokio::test]
async fn results_past_their_keeping_time_are_gone_and_say_so() {
    let news: Vec<Capability> = vec![B::SearchNews.into()];
    let server = TestServer::start_configured(
        engine::store::testing::sqlite(),
        |config| config.calls.keep_results = Duration::from_secs(3_600),
        move |state| {
            state
                .engine
                .registry()
                .register(
                    ScriptedConnector::registration("alpha", CostTier::Free, &news),
                    ScriptedConnector::new("alpha", [Step::Found(1)]),
                )
                .unwrap();
        },
    )
    .await;
    let (_, first) = call(&server, json!({"query": "Ada"})).await;
    assert_eq!(first["results"].as_array().unwrap().len(), 1);
    // An hour later, the next call forgets what is past its keeping time.
    server
        .state
        .engine
        .clock()
        .advance(Duration::from_secs(3_600));
    call(&server, json!({"query": "Grace"})).await;
    let id = first["job_id"].as_i64().unwrap();
    let (_, read) = server.get_json(&format!("/api/calls/{id}")).await;
    assert_eq!(read["status"], "completed");
    assert_eq!(read["results"], json!([]));
    assert!(
        read["error"].as_str().unwrap().contains("are gone"),
        "{read}"
    );
    // Its receipts stay.
    let (_, attempts) = server.get_json(&format!("/api/calls/{id}/attempts")).await;
    assert_eq!(attempts.as_array().unwrap().len(), 1);
    server.stop().await;
}
