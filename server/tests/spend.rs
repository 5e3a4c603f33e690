//! Spend through the REST door: what each attempt was billed, budgets that
//! stop a connector and let the chain walk on, and a fan-out that never
//! spends past a budget, on SQLite and PostgreSQL.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{on_every_backend, TestServer, TEST_PACKS};
use engine::connectors::scripted::{ScriptedConnector, Step};
use engine::packs::Catalog;
use engine::store::testing::TestDatabase;
use model::{Amount, BuiltinCapability as B, CostTier, FireOutcome};
use serde_json::{json, Value};

/// A server where `alpha` costs what `cost` says and `beta` is free.
async fn server(db: TestDatabase, alpha: Arc<ScriptedConnector>, cost: model::Cost) -> TestServer {
    let beta = ScriptedConnector::new("beta", [Step::Found(1)]);
    TestServer::start_with(db, move |state| {
        *state.engine.catalog_lock().write().unwrap() = Catalog::from_toml(TEST_PACKS).unwrap();
        let web = [B::SearchWeb.into()];
        let mut reg = ScriptedConnector::registration("alpha", CostTier::Paid, &web);
        reg.profile.cost = Some(cost);
        state.engine.registry().register(reg, alpha).unwrap();
        let reg = ScriptedConnector::registration("beta", CostTier::Free, &web);
        state.engine.registry().register(reg, beta).unwrap();
    })
    .await
}

async fn records(server: &TestServer, n: usize) -> (i64, Vec<i64>) {
    let csv: String = std::iter::once("name,city\n".to_owned())
        .chain((0..n).map(|i| format!("Company {i},Lyon\n")))
        .collect();
    let set = server.me().import("Companies", "test", &csv).await.id;
    (set, server.me().record_ids(set).await)
}

fn usd(units: f64) -> Amount {
    Amount::from_decimal(units).unwrap()
}

fn charges(history: &Value, connector: &str) -> Vec<Value> {
    history
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["connector_id"] == connector)
        .map(|a| a["charge"].clone())
        .collect()
}

#[tokio::test]
async fn attempts_record_what_they_cost_and_a_spent_budget_lets_the_chain_walk_on() {
    on_every_backend(|db| async {
        let alpha = ScriptedConnector::new("alpha", [Step::Empty, Step::Found(2)]);
        let cost = model::Cost {
            bills_empty: false,
            ..model::Cost::per_call(usd(0.5), "USD")
        };
        let server = server(db, alpha.clone(), cost).await;
        // The fifth record is never fired.
        let (set, ids) = records(&server, 5).await;
        // The connector's budget is in the unit it is priced in.
        let (code, body) = server
            .put_json(
                "/api/budgets",
                json!({"connector_id": "alpha", "unit": "", "monthly_limit": 1.0}),
            )
            .await;
        assert_eq!(code, 200, "{body}");
        assert_eq!(body["unit"], "USD");
        let (code, body) = server
            .put_json(
                "/api/budgets",
                json!({"connector_id": "alpha", "unit": "credits", "monthly_limit": 1.0}),
            )
            .await;
        assert_eq!(code, 400, "{body}");
        assert!(body["detail"].as_str().unwrap().contains("priced in USD"));

        // An empty answer this provider does not bill: recorded without a
        // charge, and nothing counted.
        let report = server.me().fire(ids[0], "web", None).await;
        let attempt = &report.attempts[0];
        assert_eq!(attempt.end.outcome, Some(FireOutcome::NotFound));
        assert_eq!(attempt.end.charge, None, "{report:?}");
        // Two answers billed at 0.5 spend the budget of 1.
        for id in &ids[1..3] {
            let report = server.me().fire(*id, "web", None).await;
            let attempt = &report.attempts[0];
            assert_eq!(attempt.connector_id, "alpha");
            assert_eq!(
                serde_json::to_value(&attempt.end.charge).unwrap(),
                json!({"amount": 0.5, "unit": "USD", "paid_by": "server"})
            );
        }
        let (_, history) = server
            .get_json(&format!("/api/records/{}/history", ids[1]))
            .await;
        assert_eq!(charges(&history, "alpha")[0]["amount"], 0.5, "{history}");
        let (_, budgets) = server.get_json("/api/budgets").await;
        assert_eq!(budgets[0]["spent"], 1.0, "{budgets}");
        // The next fire does not reach alpha: the chain walks on to beta,
        // and the report says which budget is spent.
        let report = server.me().fire(ids[3], "web", None).await;
        assert_eq!(alpha.calls(), 3);
        assert_eq!(report.attempts[0].connector_id, "beta", "{report:?}");
        let alpha_skip = report.skipped.iter().find(|s| s.connector_id == "alpha");
        assert_eq!(
            alpha_skip.unwrap().reason,
            "budget for Scripted alpha spent: 1.00 of 1.00 USD this month",
            "{report:?}"
        );
        // The inventory and the chips say so before anyone clicks: a click
        // goes through beta, and the chip says why not alpha.
        let (_, connectors) = server.get_json("/api/connectors").await;
        let listed = connectors.as_array().unwrap();
        let alpha_row = listed.iter().find(|c| c["id"] == "alpha").unwrap();
        assert_eq!(alpha_row["status"], "over-budget", "{alpha_row}");
        assert_eq!(
            alpha_row["status_reason"],
            "budget for Scripted alpha spent: 1.00 of 1.00 USD this month"
        );
        let (_, page) = server
            .get_json(&format!("/api/record-sets/{set}/records"))
            .await;
        let chip = &page["records"][4]["chips"][0];
        assert_eq!(chip["next"], "Scripted beta", "{chip}");
        assert_eq!(
            chip["held"],
            "budget for Scripted alpha spent: 1.00 of 1.00 USD this month"
        );
        // Raising it lets alpha fire again; removing it too.
        let (code, _) = server
            .put_json(
                "/api/budgets",
                json!({"connector_id": "alpha", "unit": "USD", "monthly_limit": 1.5}),
            )
            .await;
        assert_eq!(code, 200);
        let (_, connectors) = server.get_json("/api/connectors").await;
        assert!(connectors
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["id"] == "alpha" && c["status"] == "available"));
        let (code, _) = server
            .delete("/api/budgets?connector_id=alpha&unit=USD")
            .await;
        assert_eq!(code, 204);
        let (code, _) = server
            .delete("/api/budgets?connector_id=alpha&unit=USD")
            .await;
        assert_eq!(code, 404);

        // The month's spend, broken down, and every billed attempt as CSV.
        let (code, report) = server.get_json("/api/spend").await;
        assert_eq!(code, 200, "{report}");
        let usd_spend = &report["units"][0];
        assert_eq!(usd_spend["unit"], "USD");
        assert_eq!(usd_spend["total"], 1.0);
        assert_eq!(usd_spend["attempts"], 2);
        assert_eq!(usd_spend["by_key"][0], json!({"key": "server", "amount": 1.0, "attempts": 2}));
        assert_eq!(usd_spend["by_connector"][0]["key"], "alpha");
        assert_eq!(usd_spend["by_person"][0]["key"], common::TEST_EMAIL);
        assert_eq!(usd_spend["by_record_set"][0]["key"], "Companies");
        let days = usd_spend["by_day"].as_array().unwrap();
        assert!((28..=31).contains(&days.len()), "{usd_spend}");
        assert_eq!(
            days.iter().map(|d| d["amount"].as_f64().unwrap()).sum::<f64>(),
            1.0
        );
        let csv = |server: &TestServer| {
            let url = server.at("/api/spend/export");
            let client = server.client.clone();
            async move {
                let res = client.get(url).send().await.unwrap();
                assert_eq!(res.status(), 200);
                assert!(res.headers()["content-disposition"]
                    .to_str()
                    .unwrap()
                    .starts_with("attachment; filename=\"spend-"));
                res.text().await.unwrap()
            }
        };
        let text = csv(&server).await;
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "when,record_set,record,pack,capability,call,connector,outcome,cost,unit,paid_by,person,job"
        );
        assert_eq!(lines.len(), 3, "{text}");
        assert!(
            lines[1].ends_with(&format!(
                "Z,Companies,Company 1,web,search.web,,alpha,found,0.5,USD,server,{},",
                common::TEST_EMAIL
            )),
            "{text}"
        );
        // Receipts outlive what they were for.
        let (code, _) = server.delete(&format!("/api/record-sets/{set}")).await;
        assert_eq!(code, 204);
        assert_eq!(csv(&server).await, text);
        let (code, err) = server.get_json("/api/spend?month=2026-13").await;
        assert_eq!(code, 400, "{err}");
        assert!(err["detail"].as_str().unwrap().starts_with("month: "), "{err}");
    })
    .await;
}

#[tokio::test]
async fn concurrent_fires_of_a_fan_out_never_spend_past_a_budget() {
    on_every_backend(|db| async {
        // Slow answers, so many fires are in flight at once.
        let alpha = ScriptedConnector::new(
            "alpha",
            [Step::Delay(
                Duration::from_millis(30),
                Box::new(Step::Found(1)),
            )],
        );
        let server = server(
            db,
            alpha.clone(),
            model::Cost::per_call(usd(1.0), "credits"),
        )
        .await;
        let (set, _) = records(&server, 24).await;
        let (code, body) = server
            .put_json(
                "/api/budgets",
                json!({"unit": "credits", "monthly_limit": 5}),
            )
            .await;
        assert_eq!(code, 200, "{body}");
        fan_out(&server, set, json!({"packs": ["web"]})).await;
        assert_eq!(alpha.calls(), 5, "a budget of 5 credits is 5 calls of 1");
        let (_, budgets) = server.get_json("/api/budgets").await;
        assert_eq!(budgets[0]["spent"], 5.0, "{budgets}");
    })
    .await;
}

#[tokio::test]
async fn the_estimate_says_what_a_fan_out_may_fire_and_spend_and_what_budgets_have_left() {
    let alpha = ScriptedConnector::new(
        "alpha",
        [Step::Found(1), Step::Empty, Step::Empty, Step::Empty],
    );
    let server = server(
        engine::store::testing::sqlite(),
        alpha,
        model::Cost::per_call(usd(0.5), "USD"),
    )
    .await;
    // Alpha finds something for one record in four.
    let (_, ids) = records(&server, 4).await;
    for id in ids {
        server.me().fire(id, "web", None).await;
    }
    let (code, _) = server
        .put_json(
            "/api/budgets",
            json!({"connector_id": "alpha", "unit": "USD", "monthly_limit": 4}),
        )
        .await;
    assert_eq!(code, 200);
    let (set, _) = records(&server, 10).await;
    let browser = server
        .browser(common::TEST_EMAIL, common::TEST_PASSWORD)
        .await;
    let (code, body) = server
        .call_server_fn(&browser, "fanout_estimate", &[("set_id", &set.to_string())])
        .await;
    assert_eq!(code, 200, "{body}");
    let estimate: model::FanoutEstimate = serde_json::from_str(&body).unwrap();
    assert_eq!(estimate.records, 10);
    let line = |id: &str| {
        estimate
            .lines
            .iter()
            .find(|l| l.connector_id == id)
            .unwrap()
    };
    // Every record reaches alpha; its price is what they cost.
    assert_eq!(
        (line("alpha").fires, line("alpha").expected_fires),
        (10, 10)
    );
    let spend = line("alpha").spend.clone().unwrap();
    assert_eq!((spend.worst, spend.expected), (usd(5.0), usd(5.0)));
    // Three records in four walk on to beta.
    assert_eq!((line("beta").fires, line("beta").expected_fires), (10, 8));
    assert!(line("beta").spend.is_none());
    assert_eq!(
        line("alpha").describe(),
        "Scripted alpha (paid): up to 10 fires (about 10), 5.00 USD at worst, about 5.00 USD"
    );
    // Alpha spent 0.5 + 3 empty answers at 0.5 (billed): 2 of 4 left.
    assert_eq!(estimate.budgets.len(), 1);
    assert_eq!(estimate.budgets[0].left(), usd(2.0));
}

#[tokio::test]
async fn a_capability_call_is_billed_like_a_fire_and_leaves_a_receipt() {
    let alpha = ScriptedConnector::new("alpha", [Step::Found(2)]);
    let server = server(
        engine::store::testing::sqlite(),
        alpha,
        model::Cost::per_call(usd(2.0), "credits"),
    )
    .await;
    let (code, envelope) = server
        .post_json(
            "/api/capabilities/search.web/call",
            json!({"query": "Grace Hopper", "connector": "alpha"}),
        )
        .await;
    assert_eq!(code, 200, "{envelope}");
    let call = envelope["job_id"].as_i64().unwrap();
    let (_, attempts) = server
        .get_json(&format!("/api/calls/{call}/attempts"))
        .await;
    assert_eq!(
        attempts[0]["charge"],
        json!({"amount": 2.0, "unit": "credits", "paid_by": "server"}),
        "{attempts}"
    );
    let (_, report) = server.get_json("/api/spend").await;
    assert_eq!(
        report["units"][0]["by_record_set"][0]["key"],
        "capability calls"
    );
    let text = server
        .client
        .get(server.at("/api/spend/export"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.lines().nth(1).unwrap().ends_with(&format!(
            "Z,,,,search.web,{call},alpha,found,2,credits,server,{},",
            common::TEST_EMAIL
        )),
        "{text}"
    );
}

/// Runs a fan-out of the test bundle to its end; answers the job.
async fn fan_out(server: &TestServer, set: i64, body: Value) -> Value {
    let (code, job) = server
        .post_json(&format!("/api/record-sets/{set}/fanout"), body)
        .await;
    assert!(code == 200 || code == 202, "{job}");
    let job_id = job["job_id"].as_i64().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (_, job) = server.get_json(&format!("/api/jobs/{job_id}")).await;
        if job["status"] != "pending" {
            return job["job"].clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the fan-out never ended: {job}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_fan_out_gives_each_record_at_most_its_paid_fires() {
    on_every_backend(|db| async {
        // Alpha (paid) serves both packs of the bundle; beta (free) the web one.
        let alpha = ScriptedConnector::new("alpha", [Step::Empty]);
        let beta = ScriptedConnector::new("beta", [Step::Found(1)]);
        let server = TestServer::start_with(db, {
            let (alpha, beta) = (alpha.clone(), beta.clone());
            move |state| {
                *state.engine.catalog_lock().write().unwrap() =
                    Catalog::from_toml(TEST_PACKS).unwrap();
                let mut reg = ScriptedConnector::registration(
                    "alpha",
                    CostTier::Paid,
                    &[B::SearchWeb.into(), B::SearchNews.into()],
                );
                reg.profile.cost = Some(model::Cost::per_call(usd(1.0), "credits"));
                state.engine.registry().register(reg, alpha).unwrap();
                let reg =
                    ScriptedConnector::registration("beta", CostTier::Free, &[B::SearchWeb.into()]);
                state.engine.registry().register(reg, beta).unwrap();
            }
        })
        .await;
        let (set, _) = records(&server, 3).await;
        let job = fan_out(&server, set, json!({"paid_per_record": 1})).await;
        assert_eq!(job["paid_per_record"], 1, "{job}");
        // One paid fire per record (web's, first in the job), none for news.
        assert_eq!(alpha.calls(), 3);
        assert_eq!(beta.calls(), 3);
        // Without paid fires at all, only the free connector fires.
        let (set, _) = records(&server, 2).await;
        fan_out(&server, set, json!({"paid_per_record": 0})).await;
        assert_eq!(alpha.calls(), 3);
        assert_eq!(beta.calls(), 5);
        // And without a limit, both packs go through alpha.
        let (set, _) = records(&server, 2).await;
        fan_out(&server, set, json!({})).await;
        assert_eq!(alpha.calls(), 7);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_says_what_a_click_costs_and_what_each_record_cost_today() {
    on_every_backend(|db| async {
        let alpha = ScriptedConnector::new("alpha", std::iter::repeat_n(Step::Found(1), 5));
        let server = server(db, alpha, model::Cost::per_call(usd(0.1), "USD")).await;
        let (set, ids) = records(&server, 2).await;
        let (code, body) = server
            .put_json(
                "/api/budgets",
                json!({"connector_id": "alpha", "unit": "USD", "monthly_limit": 2.0}),
            )
            .await;
        assert_eq!(code, 200, "{body}");
        let web_chip = |page: &model::RecordsPage, i: usize| {
            page.records[i]
                .chips
                .iter()
                .find(|c| c.pack_id == "web")
                .cloned()
                .unwrap()
        };
        let before = server.me().records(set).await;
        assert_eq!(
            web_chip(&before, 0).next_cost,
            Some(model::NextCost {
                amount: usd(0.1),
                unit: "USD".into(),
                budget_left: Some(usd(2.0)),
            })
        );
        assert!(before.records.iter().all(|r| r.spent_today.is_empty()));

        // Alpha found for the first record: its next click goes to beta, free.
        server.me().fire(ids[0], "web", None).await;
        server.me().fire(ids[0], "web", Some("alpha")).await;
        let after = server.me().records(set).await;
        assert_eq!(
            after.records[0].spent_today,
            [model::SpentToday {
                unit: "USD".into(),
                amount: usd(0.2),
            }]
        );
        assert!(
            after.records[1].spent_today.is_empty(),
            "another record's spend is its own"
        );
        assert_eq!(web_chip(&after, 0).next, Some("Scripted beta".into()));
        assert_eq!(web_chip(&after, 0).next_cost, None);
        let (_, menu) = server
            .get_json(&format!("/api/records/{}/menu/web", ids[0]))
            .await;
        let price = |id: &str| {
            menu["entries"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["connector"]["id"] == id)
                .map(|e| e["price"].clone())
                .unwrap()
        };
        assert_eq!(price("alpha")["amount"], 0.1, "{menu}");
        assert_eq!(price("alpha")["unit"], "USD", "{menu}");
        assert_eq!(price("beta"), Value::Null, "{menu}");
        server.stop().await;
    })
    .await;
}

#[tokio::test]
async fn a_call_without_an_answer_is_unknown_never_asked_again_and_listed_for_review() {
    on_every_backend(|db| async {
        let alpha = ScriptedConnector::new(
            "alpha",
            [
                Step::Fail(engine::connectors::seam::FireError::Timeout {
                    after: Duration::from_secs(20),
                }),
                Step::Found(1),
            ],
        );
        let server = server(db, alpha.clone(), model::Cost::per_call(usd(0.1), "USD")).await;
        let (set, ids) = records(&server, 1).await;
        let report = server.me().fire(ids[0], "web", None).await;
        // Alpha went out and no answer came: asked once (the retry budget
        // would have asked again), then the chain went on to beta.
        assert_eq!(alpha.calls(), 1);
        assert_eq!(report.attempts[0].end.outcome, Some(FireOutcome::Unknown));
        assert_eq!(
            report.attempts[0].end.charge.as_ref().unwrap().amount,
            usd(0.1)
        );
        assert_eq!(report.attempts[1].connector_id, "beta");
        let (code, listed) = server.get_json("/api/spend/unanswered").await;
        assert_eq!(code, 200, "{listed}");
        assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
        assert_eq!(listed[0]["connector_id"], "alpha");
        assert_eq!(listed[0]["outcome"], "unknown");
        assert_eq!(listed[0]["record_set_id"], set);
        assert_eq!(listed[0]["record_name"], "Company 0");
        // Another workspace's review list is its own.
        let stranger = server
            .user("s@example.org", "elsewhere", model::Role::Admin)
            .await;
        let theirs: Value = stranger
            .get(server.at("/api/spend/unanswered"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(theirs, json!([]));
        server.stop().await;
    })
    .await;
}
