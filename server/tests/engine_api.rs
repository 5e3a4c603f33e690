//! The engine end to end through the REST door: chain walk, statuses, caps,
//! additive re-fire, triage conflicts, import, export, cancel and SSE, against
//! scripted local connectors, on SQLite and PostgreSQL.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{on_every_backend, TestServer, TEST_PACKS};
use engine::connectors::scripted::{ScriptedConnector, Step};
use engine::connectors::seam::FireError;
use engine::packs::Catalog;
use engine::store::testing::{self, TestDatabase};
use model::{
    BuiltinCapability as B, Capability, ChipState, CostTier, FireReport, TriageState, TriageVerb,
};
use serde_json::{json, Value};

const CSV: &str = "name,city\nAcme,Lyon\nBolt,Oslo\n";

fn web() -> Vec<Capability> {
    vec![B::SearchWeb.into()]
}

/// A server with the test catalogue and the given scripted connectors.
async fn server(
    db: TestDatabase,
    connectors: &[(&str, CostTier, Arc<ScriptedConnector>)],
) -> TestServer {
    let connectors: Vec<_> = connectors
        .iter()
        .map(|(id, tier, c)| (id.to_string(), *tier, c.clone()))
        .collect();
    TestServer::start_with(db, move |state| {
        *state.engine.catalog_lock().write().unwrap() = Catalog::from_toml(TEST_PACKS).unwrap();
        for (id, tier, c) in connectors {
            state
                .engine
                .registry()
                .register(ScriptedConnector::registration(&id, tier, &web()), c)
                .unwrap();
        }
    })
    .await
}

async fn imported(server: &TestServer) -> (i64, Vec<i64>) {
    let set = server.me().import("Companies", "test", CSV).await.id;
    (set, server.me().record_ids(set).await)
}

fn outcomes(report: &FireReport) -> Vec<(String, String)> {
    report
        .attempts
        .iter()
        .map(|a| {
            let outcome = a.end.outcome.expect("an ended attempt");
            (a.connector_id.clone(), outcome.name().to_owned())
        })
        .collect()
}

/// Why the fire passed over `connector`, if it did.
fn skipped<'r>(report: &'r FireReport, connector: &str) -> Option<&'r str> {
    report
        .skipped
        .iter()
        .find(|s| s.connector_id == connector)
        .map(|s| s.reason.as_str())
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[tokio::test]
async fn the_chain_walks_past_empty_and_failing_connectors_and_logs_each_attempt() {
    on_every_backend(|db| async {
        let alpha = ScriptedConnector::new("alpha", [Step::Empty]);
        let beta = ScriptedConnector::new(
            "beta",
            [Step::Fail(FireError::Malformed {
                reason: "no JSON".into(),
            })],
        );
        let gamma = ScriptedConnector::new("gamma", [Step::Found(3)]);
        let server = server(
            db,
            &[
                ("alpha", CostTier::Free, alpha.clone()),
                ("beta", CostTier::Free, beta),
                ("gamma", CostTier::Paid, gamma.clone()),
            ],
        )
        .await;
        let (set, records) = imported(&server).await;

        let report = server.me().fire(records[0], "web", None).await;
        assert_eq!(
            outcomes(&report),
            pairs(&[
                ("alpha", "not_found"),
                ("beta", "error"),
                ("gamma", "found")
            ])
        );
        assert_eq!(report.chip, ChipState::Found { count: 3 });
        assert_eq!(report.items.len(), 3);
        // The query template took the record's fields.
        assert_eq!(alpha.queries(), ["Acme Lyon"]);

        let (_, history) = server
            .get_json(&format!("/api/records/{}/history", records[0]))
            .await;
        let history = history.as_array().unwrap();
        assert_eq!(history.len(), 3);
        for entry in history {
            assert_eq!(entry["triggered_by"], "human-refire");
            assert_eq!(entry["actor"], common::TEST_EMAIL);
            assert!(entry["finished_at"].as_i64().unwrap() >= entry["fired_at"].as_i64().unwrap());
        }
        assert!(history
            .iter()
            .any(|e| e["error"].as_str().is_some_and(|m| m.contains("no JSON"))));

        // The next click starts at the first connector that has not found results.
        let report = server.me().fire(records[0], "web", None).await;
        let tried: Vec<String> = outcomes(&report).into_iter().map(|(c, _)| c).collect();
        assert!(!tried.contains(&"gamma".to_owned()), "{report:?}");
        assert!(
            skipped(&report, "gamma").is_some_and(|why| why.contains("already found")),
            "{report:?}"
        );
        // Other records are untouched: their chips have never fired.
        let page = server.me().records(set).await;
        let other = page.records.iter().find(|r| r.id == records[1]).unwrap();
        assert!(
            other.chips.iter().all(|c| c.state == ChipState::Idle),
            "{other:?}"
        );
        let fired = page.records.iter().find(|r| r.id == records[0]).unwrap();
        assert_ne!(fired.chips[0].state, ChipState::Idle, "{fired:?}");
        server.stop().await;
    })
    .await;
}

#[tokio::test]
async fn a_connector_failing_again_and_again_is_suspended_and_skipped_then_comes_back() {
    let upstream = || {
        Step::Fail(FireError::Upstream {
            reason: "HTTP 502".into(),
        })
    };
    let alpha = ScriptedConnector::new(
        "alpha",
        [upstream(), upstream(), upstream(), Step::Found(1)],
    );
    let beta = ScriptedConnector::new("beta", std::iter::repeat_n(Step::Found(1), 10));
    let server = server(
        testing::sqlite(),
        &[
            ("alpha", CostTier::Free, alpha.clone()),
            ("beta", CostTier::Free, beta),
        ],
    )
    .await;
    server
        .state
        .engine
        .registry()
        .set_suspend_policy(engine::connectors::health::SuspendPolicy {
            after: 3,
            base: Duration::from_millis(400),
            max: Duration::from_secs(5),
        });
    let (_, records) = imported(&server).await;
    // Fires walk past alpha's errors to beta until three in a row suspend it.
    while alpha.calls() < 3 {
        let report = server.me().fire(records[0], "web", Some("alpha")).await;
        assert!(report.attempts.iter().all(|a| a.connector_id == "alpha"));
    }
    let (_, connectors) = server.get_json("/api/connectors").await;
    let alpha_info = connectors
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "alpha")
        .unwrap()
        .clone();
    assert_eq!(alpha_info["status"], "suspended", "{alpha_info}");
    assert!(alpha_info["status_reason"]
        .as_str()
        .unwrap()
        .contains("3 errors in a row"));
    // While suspended the chain skips it with the reason, and beta answers.
    let report = server.me().fire(records[1], "web", None).await;
    assert_eq!(outcomes(&report), pairs(&[("beta", "found")]));
    assert!(
        skipped(&report, "alpha").is_some_and(|why| why.contains("suspended")),
        "{report:?}"
    );
    assert_eq!(alpha.calls(), 3);
    // After the back-off it is tried again, by itself.
    let start = std::time::Instant::now();
    loop {
        let (_, connectors) = server.get_json("/api/connectors").await;
        let status = connectors
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "alpha")
            .unwrap()["status"]
            .clone();
        if status == "available" {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "never came back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let report = server.me().fire(records[1], "web", Some("alpha")).await;
    assert_eq!(outcomes(&report), pairs(&[("alpha", "found")]));
}

#[tokio::test]
async fn stats_and_metrics_count_the_workspace_s_attempts_from_the_database() {
    on_every_backend(|db| async {
        let alpha = ScriptedConnector::new(
            "alpha",
            [
                Step::Found(2),
                Step::Empty,
                Step::Fail(FireError::Malformed {
                    reason: "bad".into(),
                }),
            ],
        );
        let server = server(db, &[("alpha", CostTier::Free, alpha)]).await;
        let (_, records) = imported(&server).await;
        for record in [records[0], records[1], records[0]] {
            server.me().fire(record, "web", Some("alpha")).await;
        }
        let (code, stats) = server.get_json("/api/connectors/stats").await;
        assert_eq!(code, 200);
        let alpha = stats
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["connector_id"] == "alpha")
            .unwrap();
        assert_eq!(alpha["attempts"], 3, "{alpha}");
        assert_eq!(alpha["found"], 1);
        assert_eq!(alpha["not_found"], 1);
        assert_eq!(alpha["errors"], 1);
        assert!(alpha["p95_ms"].as_i64().unwrap() >= alpha["p50_ms"].as_i64().unwrap());
        // Hour by hour for the chart: 24 hours, all of it in the last one.
        let hours = alpha["hours"].as_array().unwrap();
        assert_eq!(hours.len(), 24, "{alpha}");
        let last = &hours[23];
        assert_eq!(
            (
                &last["attempts"],
                &last["found"],
                &last["failed"],
                &last["rate_limited"]
            ),
            (&json!(3), &json!(1), &json!(1), &json!(0)),
            "{alpha}"
        );
        // ...with the hour's latency, for the chart over time.
        assert_eq!(last["p50_ms"], alpha["p50_ms"], "{alpha}");
        assert_eq!(last["p95_ms"], alpha["p95_ms"], "{alpha}");
        assert!(
            hours[..23].iter().all(|h| h.get("p50_ms").is_none()),
            "{alpha}"
        );
        assert!(hours[..23].iter().all(|h| h["attempts"] == 0), "{alpha}");

        let metrics = server
            .client
            .get(server.at("/metrics"))
            .send()
            .await
            .unwrap();
        assert_eq!(metrics.status(), 200);
        assert!(metrics.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain"));
        let text = metrics.text().await.unwrap();
        assert!(
            text.contains("switchyard_connector_attempts{connector=\"alpha\",outcome=\"found\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("switchyard_connector_up{connector=\"alpha\",status=\"available\"} 1"),
            "{text}"
        );
        // Another workspace has its own figures.
        let other = server
            .user("other@example.org", "elsewhere", model::Role::Member)
            .await;
        let theirs = other
            .get(server.at("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            !theirs.contains("switchyard_connector_attempts{"),
            "{theirs}"
        );
    })
    .await;
}

#[tokio::test]
async fn rate_limits_and_refused_keys_take_a_connector_out_of_the_chain() {
    let alpha = ScriptedConnector::new(
        "alpha",
        [Step::Fail(FireError::RateLimited {
            retry_after: Some(Duration::from_secs(3600)),
            reason: "HTTP 429".into(),
        })],
    );
    let beta = ScriptedConnector::new(
        "beta",
        [Step::Fail(FireError::AuthFailed {
            reason: "HTTP 401".into(),
        })],
    );
    let gamma = ScriptedConnector::new("gamma", [Step::Found(1)]);
    let server = server(
        testing::sqlite(),
        &[
            ("alpha", CostTier::Free, alpha.clone()),
            ("beta", CostTier::Free, beta.clone()),
            ("gamma", CostTier::Free, gamma),
        ],
    )
    .await;
    let (_, records) = imported(&server).await;

    let report = server.me().fire(records[0], "web", None).await;
    assert_eq!(
        outcomes(&report),
        pairs(&[
            ("alpha", "rate_limited"),
            ("beta", "error"),
            ("gamma", "found")
        ])
    );
    let (_, connectors) = server.get_json("/api/connectors").await;
    let status = |id: &str| {
        connectors
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(status("alpha")["status"], "rate-limited");
    assert!(status("alpha")["until"].as_i64().unwrap() > 0);
    assert_eq!(status("beta")["status"], "auth-failed");
    // Said in our words: the status is every workspace's to see, and the
    // provider's text may echo someone's query.
    assert_eq!(
        status("beta")["status_reason"],
        "auth failed: the provider refused the key"
    );

    // The next record's fire skips both without calling them.
    let report = server.me().fire(records[1], "web", None).await;
    assert_eq!(outcomes(&report), pairs(&[("gamma", "found")]));
    assert_eq!(alpha.calls(), 1);
    assert_eq!(beta.calls(), 1);

    // A workspace admin cannot clear what the server's key met (the key is
    // the operator's): their Enable leaves it refused.
    let (code, info) = server
        .post_json("/api/connectors/beta/enable", json!({}))
        .await;
    assert_eq!(code, 200);
    assert_eq!(info["status"], "auth-failed");
    // The operator clears it (`switchyard connector clear`), and every
    // process follows within a second; the audit trail says who and why.
    let cleared = server
        .state
        .engine
        .clear_connector_health("beta")
        .await
        .unwrap();
    assert_eq!(cleared.map(|s| s.kind()), Some("auth-failed"));
    let mut looks = 0;
    loop {
        let (_, now) = server.get_json("/api/connectors").await;
        let beta_now = now
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "beta")
            .unwrap()["status"]
            .clone();
        if beta_now == "available" {
            break;
        }
        looks += 1;
        assert!(looks < 150, "the server never adopted the operator's clear");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, audit) = server.get_json("/api/connectors/beta/audit").await;
    let audit = audit.as_array().unwrap();
    assert_eq!(audit[0]["status"], "available");
    assert_eq!(audit[0]["actor"], "the operator");
    assert_eq!(audit[0]["reason"], "cleared auth-failed for another try");
    assert_eq!(audit[1]["status"], "auth-failed");
    assert_eq!(audit[1]["actor"], "system");
}

#[tokio::test]
async fn an_explicit_disabled_connector_falls_back_and_says_so() {
    let alpha = ScriptedConnector::new("alpha", [Step::Found(1)]);
    let beta = ScriptedConnector::new("beta", [Step::Found(2)]);
    let server = server(
        testing::sqlite(),
        &[
            ("alpha", CostTier::Free, alpha.clone()),
            ("beta", CostTier::Free, beta.clone()),
        ],
    )
    .await;
    let (_, records) = imported(&server).await;

    let (code, _) = server
        .post_json(
            "/api/connectors/beta/disable",
            json!({"reason": "quota spent"}),
        )
        .await;
    assert_eq!(code, 200);
    let report = server.me().fire(records[0], "web", Some("beta")).await;
    assert_eq!(outcomes(&report), pairs(&[("alpha", "found")]));
    assert!(
        report.notes[0].contains("beta cannot fire (disabled: quota spent)"),
        "{report:?}"
    );
    assert_eq!(beta.calls(), 0);

    // An explicit connector that can fire is the whole chain, even after results.
    server
        .post_json("/api/connectors/beta/enable", json!({}))
        .await;
    let report = server.me().fire(records[0], "web", Some("alpha")).await;
    assert_eq!(outcomes(&report), pairs(&[("alpha", "found")]));
}

#[tokio::test]
async fn a_daily_cap_is_enforced_from_the_database() {
    on_every_backend(|db| async {
        let alpha = ScriptedConnector::new("alpha", [Step::Empty]);
        let beta = ScriptedConnector::new("beta", [Step::Empty]);
        let server = TestServer::start_with(db, {
            let (alpha, beta) = (alpha.clone(), beta.clone());
            move |state| {
                *state.engine.catalog_lock().write().unwrap() =
                    Catalog::from_toml(TEST_PACKS).unwrap();
                let mut reg = ScriptedConnector::registration("alpha", CostTier::Paid, &web());
                reg.profile.rate_hints.daily_cap = Some(2);
                state.engine.registry().register(reg, alpha).unwrap();
                state
                    .engine
                    .registry()
                    .register(
                        ScriptedConnector::registration("beta", CostTier::Free, &web()),
                        beta,
                    )
                    .unwrap();
            }
        })
        .await;
        let (_, records) = imported(&server).await;
        for _ in 0..3 {
            server.me().fire(records[0], "web", None).await;
        }
        assert_eq!(alpha.calls(), 2, "the third fire must not reach alpha");
        assert_eq!(beta.calls(), 3);
        let report = server.me().fire(records[1], "web", None).await;
        assert_eq!(
            skipped(&report, "alpha"),
            Some("daily cap of 2 fires reached"),
            "{report:?}"
        );
        // With beta off too, nothing can fire: the API says 429 and why.
        server
            .post_json("/api/connectors/beta/disable", json!({}))
            .await;
        let (code, err) = server
            .post_json(
                &format!("/api/records/{}/fire", records[1]),
                json!({"pack": "web"}),
            )
            .await;
        assert_eq!(code, 429, "{err}");
        assert!(
            err["detail"].as_str().unwrap().contains(
                "alpha: daily cap of 2 fires reached; nothing else in the chain could fire"
            ),
            "{err}"
        );
        let (_, connectors) = server.get_json("/api/connectors").await;
        let alpha_view = connectors
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "alpha")
            .unwrap()
            .clone();
        assert_eq!(alpha_view["fires_today"], 2);
        assert_eq!(alpha_view["rate_hints"]["daily_cap"], 2);

        // When the next UTC day begins, the cap frees.
        let clock = server.state.engine.clock();
        let wait = clock.until_next_utc_day();
        assert!(wait <= Duration::from_secs(86_400), "{wait:?}");
        clock.advance(wait);
        let report = server.me().fire(records[1], "web", None).await;
        assert_eq!(outcomes(&report), pairs(&[("alpha", "not_found")]));
        assert_eq!(alpha.calls(), 3);
        let (_, connectors) = server.get_json("/api/connectors").await;
        let alpha_today = connectors
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "alpha")
            .unwrap()["fires_today"]
            .clone();
        assert_eq!(alpha_today, 1, "a new day counts from nothing");
    })
    .await;
}

#[tokio::test]
async fn a_refire_adds_evidence_and_never_changes_triage() {
    on_every_backend(|db| async {
        let same = |path: &str| engine::connectors::seam::ConnectorResult {
            url: format!("https://www.linkedin.com/company/acme{path}"),
            title: "Acme on LinkedIn".into(),
            snippet: String::new(),
            raw: serde_json::Value::Null,
        };
        let alpha = ScriptedConnector::new("alpha", [Step::Results(vec![same("/")])]);
        let beta = ScriptedConnector::new(
            "beta",
            [Step::Results(vec![
                same("?utm_source=x"),
                engine::connectors::seam::ConnectorResult {
                    url: "https://acme.example/".into(),
                    title: "Acme".into(),
                    snippet: "home".into(),
                    raw: serde_json::Value::Null,
                },
            ])],
        );
        let server = server(
            db,
            &[
                ("alpha", CostTier::Free, alpha),
                ("beta", CostTier::Free, beta),
            ],
        )
        .await;
        let (_, records) = imported(&server).await;
        let first = server.me().fire(records[0], "web", None).await;
        let item = &first.items[0];
        let accepted = server
            .me()
            .triage(item.id, TriageVerb::AcceptCanonical, item.version)
            .await;
        assert_eq!(accepted.state, TriageState::AcceptedCanonical);

        // Re-fire through the other connector: same page found again, one new.
        let second = server.me().fire(records[0], "web", Some("beta")).await;
        assert_eq!(second.chip, ChipState::Found { count: 2 });
        let items = server.me().items(records[0]).await;
        assert_eq!(items.len(), 2, "the same URL must not become a second item");
        let kept = items.iter().find(|i| i.id == item.id).unwrap();
        assert_eq!(kept.state, TriageState::AcceptedCanonical);
        assert_eq!(kept.version, accepted.version);
        let finders: Vec<&str> = kept
            .evidence
            .iter()
            .map(|e| e.connector_id.as_str())
            .collect();
        assert_eq!(finders, ["alpha", "beta"]);
        let new = items.iter().find(|i| i.id != item.id).unwrap();
        assert_eq!(new.state, TriageState::New);
        server.stop().await;
    })
    .await;
}

#[tokio::test]
async fn a_stale_triage_is_refused_with_the_current_state_and_undo_goes_back() {
    on_every_backend(|db| async {
        let alpha = ScriptedConnector::new("alpha", [Step::Found(1)]);
        let server = server(db, &[("alpha", CostTier::Free, alpha)]).await;
        let (_, records) = imported(&server).await;
        let report = server.me().fire(records[0], "web", None).await;
        let id = report.items[0].id;
        let path = format!("/api/items/{id}/triage");

        let (code, first) = server
            .post_json(&path, json!({"verb": "accept-context", "version": 1}))
            .await;
        assert_eq!(code, 200);
        assert_eq!(first["version"], 2);
        // A second person acting on what they saw at version 1 is refused.
        let (code, conflict) = server
            .post_json(&path, json!({"verb": "discard", "version": 1}))
            .await;
        assert_eq!(code, 409, "{conflict}");
        assert_eq!(conflict["error"], "conflict");
        assert_eq!(conflict["current"]["state"], "accepted-context");
        assert_eq!(conflict["current"]["version"], 2);

        let (_, discarded) = server
            .post_json(&path, json!({"verb": "discard", "version": 2}))
            .await;
        assert_eq!(discarded["state"], "discarded");
        let (_, undone) = server
            .post_json(&path, json!({"verb": "undo", "version": 3}))
            .await;
        assert_eq!(undone["state"], "accepted-context");
        let (_, undone) = server
            .post_json(&path, json!({"verb": "undo", "version": 4}))
            .await;
        assert_eq!(undone["state"], "new");
        let (code, nothing) = server
            .post_json(&path, json!({"verb": "undo", "version": 5}))
            .await;
        assert_eq!(code, 409, "{nothing}");

        let (code, bad) = server
            .post_json(&path, json!({"verb": "love", "version": 5}))
            .await;
        assert_eq!(code, 400);
        assert!(bad["detail"].as_str().unwrap().contains("verb"), "{bad}");
        server.stop().await;
    })
    .await;
}

#[tokio::test]
async fn csv_import_keeps_good_lines_and_reports_bad_ones() {
    on_every_backend(|db| async {
        let server = server(db, &[]).await;
        let csv = "name,city\nAcme,Lyon\n,Paris\nBolt,Oslo,extra\nCorp,Rome\n";
        let me = server.me();
        let report = me.import("Mixed", "test", csv).await;
        assert_eq!((report.imported, report.rejected_count), (2, 2));
        assert_eq!(
            serde_json::to_value(&report.rejected).unwrap(),
            json!([
                {"line": 3, "reason": "the name is empty"},
                {"line": 4, "reason": "3 values for 2 columns"},
            ])
        );
        assert_eq!(me.record_ids(report.id).await.len(), 2);

        let refused = me.import_refused("No name", "test", "city\nLyon\n").await;
        assert_eq!(refused.status, 400);
        assert!(refused.detail.contains("no 'name' column"), "{refused:?}");
        let refused = me.import_refused("Bad bundle", "nope", CSV).await;
        assert_eq!(refused.status, 400);
        assert!(refused.detail.starts_with("bundle:"), "{refused:?}");

        let (_, sets) = server.get_json("/api/record-sets").await;
        assert_eq!(sets.as_array().unwrap().len(), 1);
        server.stop().await;
    })
    .await;
}

#[tokio::test]
async fn an_oversized_import_is_refused_with_413() {
    let server = server(testing::sqlite(), &[]).await;
    let big = format!("name\n{}", "x\n".repeat(api_limit() / 2 + 10));
    let refused = server.me().import_refused("Big", "test", &big).await;
    assert_eq!((refused.status, refused.error.as_str()), (413, "too_large"));
}

fn api_limit() -> usize {
    engine::import::MAX_IMPORT_BYTES
}

#[tokio::test]
async fn exports_carry_accepted_items_with_provenance() {
    on_every_backend(|db| async {
        let alpha = ScriptedConnector::new("alpha", [Step::Found(2)]);
        let server = server(db, &[("alpha", CostTier::Free, alpha)]).await;
        let (set, records) = imported(&server).await;
        let report = server.me().fire(records[0], "web", None).await;
        let id = report.items[0].id;
        server
            .post_json(
                &format!("/api/items/{id}/triage"),
                json!({"verb": "accept-canonical", "version": 1}),
            )
            .await;

        let (code, json_export) = server
            .get_json(&format!("/api/record-sets/{set}/export?format=json"))
            .await;
        assert_eq!(code, 200);
        assert_eq!(json_export[0]["accepted"].as_array().unwrap().len(), 1);
        assert_eq!(
            json_export[0]["accepted"][0]["evidence"][0]["connector_id"],
            "alpha"
        );
        assert_eq!(json_export[1]["accepted"].as_array().unwrap().len(), 0);

        let res = server
            .client
            .get(server.at(&format!("/api/record-sets/{set}/export?format=csv")))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        assert!(res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv"));
        let text = res.text().await.unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("record_id,name,city,intent,state,url"),
            "{text}"
        );
        assert!(
            lines[1].contains("Acme,Lyon,search.web,accepted-canonical,https://alpha.test/"),
            "{text}"
        );
        assert!(lines[2].contains("Bolt,Oslo,,,"), "{text}");

        let (code, _) = server
            .get_json(&format!("/api/record-sets/{set}/export?format=xml"))
            .await;
        assert_eq!(code, 400);
    })
    .await;
}

#[tokio::test]
async fn a_fire_in_flight_can_be_cancelled() {
    let slow = ScriptedConnector::new(
        "alpha",
        [Step::Delay(
            Duration::from_secs(30),
            Box::new(Step::Found(1)),
        )],
    );
    let server = server(testing::sqlite(), &[("alpha", CostTier::Free, slow)]).await;
    let (_, records) = imported(&server).await;
    let firing = {
        let client = server.client.clone();
        let url = server.at(&format!("/api/records/{}/fire", records[0]));
        tokio::spawn(async move {
            client
                .post(url)
                .json(&json!({"pack": "web"}))
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        })
    };
    // Wait for the attempt to be in flight, then cancel its fire.
    let fire_id = loop {
        let (_, history) = server
            .get_json(&format!("/api/records/{}/history", records[0]))
            .await;
        if let Some(entry) = history.as_array().and_then(|h| h.first()) {
            break entry["fire_id"].as_i64().unwrap();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let (code, _) = server
        .post_json(&format!("/api/fires/{fire_id}/cancel"), json!({}))
        .await;
    assert_eq!(code, 200);
    let envelope = tokio::time::timeout(Duration::from_secs(5), firing)
        .await
        .expect("the fire ends at once")
        .unwrap();
    assert_eq!(envelope["status"], "cancelled");
    let report: FireReport = serde_json::from_value(envelope["results"][0].clone()).unwrap();
    assert_eq!(outcomes(&report), pairs(&[("alpha", "cancelled")]));
    assert_eq!(report.chip, ChipState::Idle);
    let (code, _) = server
        .post_json(&format!("/api/fires/{fire_id}/cancel"), json!({}))
        .await;
    assert_eq!(code, 409, "a finished fire cannot be cancelled");
}

#[tokio::test]
async fn bad_requests_name_what_is_wrong() {
    let server = server(testing::sqlite(), &[]).await;
    let (_, records) = imported(&server).await;
    let cases = [
        (
            format!("/api/records/{}/fire", records[0]),
            json!({"pack": "nope"}),
            400,
            "pack",
        ),
        (
            format!("/api/records/{}/fire", records[0]),
            json!({"pak": "web"}),
            400,
            "unknown field",
        ),
        (
            "/api/records/999999/fire".to_owned(),
            json!({"pack": "web"}),
            404,
            "record 999999",
        ),
        (
            "/api/connectors/ghost/disable".to_owned(),
            json!({}),
            404,
            "ghost",
        ),
        (
            "/api/items/77/triage".to_owned(),
            json!({"verb": "discard", "version": 1}),
            404,
            "item 77",
        ),
    ];
    for (path, body, code, needle) in cases {
        let (got, err) = server.post_json(&path, body).await;
        assert_eq!(got, code, "{path}: {err}");
        assert!(
            err["detail"].as_str().unwrap().contains(needle),
            "{path}: {err}"
        );
    }
    let res = server
        .client
        .post(server.at(&format!("/api/records/{}/fire", records[0])))
        .body("{not json")
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let (code, err) = server.get_json("/api/record-sets/1/records?limit=0").await;
    assert_eq!(code, 400, "{err}");
    let (code, _) = server.get_json("/api/record-sets/abc/records").await;
    assert!(code == 400 || code == 404);
}

#[tokio::test]
async fn catalogue_routes_list_capabilities_packs_and_bundles() {
    let server = server(
        testing::sqlite(),
        &[(
            "alpha",
            CostTier::Free,
            ScriptedConnector::new("alpha", [Step::Empty]),
        )],
    )
    .await;
    let (_, caps) = server.get_json("/api/capabilities").await;
    let web = caps
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "search.web")
        .unwrap();
    assert_eq!(web["connectors"], 1);
    // The built-in capabilities and the verbs declared in code, each once
    // (a verb named after a capability stands for it).
    let mut names: Vec<&str> = model::BuiltinCapability::ALL
        .iter()
        .map(|c| c.name())
        .chain(model::VERBS.iter().map(|v| v.name))
        .collect();
    names.sort_unstable();
    names.dedup();
    let listed: Vec<&str> = caps
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed.len(), names.len(), "{listed:?}");
    let (_, packs) = server.get_json("/api/packs").await;
    assert_eq!(packs[0]["pack_id"], "web");
    let (_, bundles) = server.get_json("/api/bundles").await;
    assert_eq!(bundles[0]["bundle_id"], "test");
    let (_, connectors) = server.get_json("/api/connectors").await;
    let alpha = &connectors[0];
    for field in [
        "id",
        "display_name",
        "short_label",
        "capabilities",
        "cost_tier",
        "requires_env",
        "rate_hints",
        "status",
    ] {
        assert!(alpha.get(field).is_some(), "{field} missing: {alpha}");
    }
}

#[tokio::test]
async fn connectors_come_and_go_while_fires_are_in_flight() {
    let slow = ScriptedConnector::new(
        "alpha",
        [Step::Delay(
            Duration::from_millis(300),
            Box::new(Step::Empty),
        )],
    );
    let beta = ScriptedConnector::new("beta", [Step::Found(1)]);
    let server = server(
        testing::sqlite(),
        &[
            ("alpha", CostTier::Free, slow.clone()),
            ("beta", CostTier::Free, beta.clone()),
        ],
    )
    .await;
    let (_, records) = imported(&server).await;
    let firing = {
        let client = server.client.clone();
        let url = server.at(&format!("/api/records/{}/fire", records[0]));
        tokio::spawn(async move {
            client
                .post(url)
                .json(&json!({"pack": "web"}))
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        })
    };
    common::until("alpha to be asked", || async { slow.calls() == 1 }).await;
    // While alpha is in flight: beta leaves, gamma arrives.
    let registry = &server.state.engine.registry();
    registry.unregister("beta").unwrap();
    let gamma = ScriptedConnector::new("gamma", [Step::Found(2)]);
    registry
        .register(
            ScriptedConnector::registration("gamma", CostTier::Free, &web()),
            gamma.clone(),
        )
        .unwrap();

    let envelope = firing.await.unwrap();
    let report: FireReport = serde_json::from_value(envelope["results"][0].clone()).unwrap();
    assert_eq!(outcomes(&report), pairs(&[("alpha", "not_found")]));
    assert_eq!(
        skipped(&report, "beta"),
        Some("unregistered while the fire ran"),
        "{report:?}"
    );
    assert_eq!(beta.calls(), 0);
    // The next fire's chain already has gamma.
    let report = server.me().fire(records[0], "web", None).await;
    assert_eq!(
        outcomes(&report),
        pairs(&[("alpha", "not_found"), ("gamma", "found")])
    );
}

#[tokio::test]
async fn filters_search_and_the_connector_menu() {
    let alpha = ScriptedConnector::new("alpha", [Step::Found(1), Step::Empty]);
    let beta = ScriptedConnector::new("beta", [Step::Empty]);
    let server = server(
        testing::sqlite(),
        &[
            ("alpha", CostTier::Free, alpha),
            ("beta", CostTier::Free, beta),
        ],
    )
    .await;
    let (set, records) = imported(&server).await;
    server.me().fire(records[0], "web", None).await; // Acme: found by alpha
    server.me().fire(records[1], "web", None).await; // Bolt: alpha and beta find nothing

    let names = |page: &Value| -> Vec<String> {
        page["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let (_, page) = server
        .get_json(&format!("/api/record-sets/{set}/records?filter=unreviewed"))
        .await;
    assert_eq!(names(&page), ["Acme"]);
    assert_eq!(page["total"], 1);
    let (_, page) = server
        .get_json(&format!(
            "/api/record-sets/{set}/records?filter=nothing_found"
        ))
        .await;
    assert_eq!(names(&page), ["Bolt"]);
    let (_, page) = server
        .get_json(&format!("/api/record-sets/{set}/records?search=BOL"))
        .await;
    assert_eq!(names(&page), ["Bolt"]);
    let (_, page) = server
        .get_json(&format!("/api/record-sets/{set}/records?search=%25"))
        .await;
    assert_eq!(page["total"], 0, "a % in the search is a literal");

    let (code, menu) = server
        .get_json(&format!("/api/records/{}/menu/web", records[0]))
        .await;
    assert_eq!(code, 200, "{menu}");
    let entries = menu["entries"].as_array().unwrap();
    let alpha = entries
        .iter()
        .find(|e| e["connector"]["id"] == "alpha")
        .unwrap();
    assert_eq!(alpha["last_attempt"]["outcome"], "found");
    assert_eq!(alpha["next"], false, "alpha already found results for Acme");
    let beta = entries
        .iter()
        .find(|e| e["connector"]["id"] == "beta")
        .unwrap();
    assert_eq!(beta["next"], true);
    assert!(beta["last_attempt"].is_null());

    // "Always start with beta for this record."
    let res = server
        .client
        .put(server.at(&format!("/api/records/{}/overrides/web", records[1])))
        .json(&json!({"connector": "beta"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 204);
    let (_, menu) = server
        .get_json(&format!("/api/records/{}/menu/web", records[1]))
        .await;
    let beta = menu["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["connector"]["id"] == "beta")
        .unwrap()
        .clone();
    assert_eq!(beta["record_override"], true);
    assert_eq!(beta["next"], true);
}

#[tokio::test]
async fn a_query_the_record_cannot_fill_fires_nothing_and_says_why() {
    let alpha = ScriptedConnector::new("alpha", [Step::Found(1)]);
    let server = TestServer::start_with(testing::sqlite(), {
        let alpha = alpha.clone();
        move |state| {
            *state.engine.catalog_lock().write().unwrap() = Catalog::from_toml(TEST_PACKS).unwrap();
            let caps: Vec<Capability> = vec![B::CrawlSite.into()];
            state
                .engine
                .registry()
                .register(
                    ScriptedConnector::registration("alpha", CostTier::Free, &caps),
                    alpha,
                )
                .unwrap();
        }
    })
    .await;
    let (_, records) = imported(&server).await; // no website column
    let report = server.me().fire(records[0], "site", None).await;
    assert!(report.fire_id.is_none(), "{report:?}");
    assert!(
        report.notes[0].contains("\"{website}\" is empty"),
        "{report:?}"
    );
    assert_eq!(alpha.calls(), 0);
}

#[tokio::test]
async fn a_fanout_estimate_counts_the_fires_each_connector_of_the_chains_may_take() {
    let server = server(
        testing::sqlite(),
        &[
            (
                "alpha",
                CostTier::Paid,
                ScriptedConnector::new("alpha", [Step::Empty]),
            ),
            (
                "beta",
                CostTier::Free,
                ScriptedConnector::new("beta", [Step::Empty]),
            ),
        ],
    )
    .await;
    let (set, _) = imported(&server).await;
    // web walks alpha then beta; nothing serves news, so it adds nothing.
    // Neither has found anything yet: every record may reach both.
    let tester = server.tester().await;
    let estimate = server
        .state
        .engine
        .estimate_fanout(&tester, set)
        .await
        .unwrap();
    let seen: Vec<(&str, CostTier, u64, u64)> = estimate
        .lines
        .iter()
        .map(|l| {
            (
                l.connector_id.as_str(),
                l.cost_tier,
                l.fires,
                l.expected_fires,
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("alpha", CostTier::Paid, 2, 2),
            ("beta", CostTier::Free, 2, 2)
        ]
    );
    // With the paid one off, the fires start at the next in the chain.
    server
        .post_json("/api/connectors/alpha/disable", json!({}))
        .await;
    let estimate = server
        .state
        .engine
        .estimate_fanout(&tester, set)
        .await
        .unwrap();
    let seen: Vec<(&str, CostTier, u64)> = estimate
        .lines
        .iter()
        .map(|l| (l.connector_id.as_str(), l.cost_tier, l.fires))
        .collect();
    assert_eq!(seen, [("beta", CostTier::Free, 2)]);
}
