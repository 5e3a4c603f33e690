//! Billing honesty through the real server: a cost is given back only when
//! the provider's declared pricing says it did not bill the call, so no
//! answer, however it failed, lets a workspace spend past its budget.

mod common;

use std::sync::atomic::Ordering;

use common::shared::{fire_each, priced, SHARED_PRICE};
use common::TestServer;
use serde_json::{json, Value};

async fn spent(server: &TestServer) -> f64 {
    let (_, budgets) = server.get_json("/api/budgets").await;
    budgets[0]["spent"].as_f64().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_too_large_to_read_stays_billed_and_no_budget_is_passed() {
    let (seen, server) = priced(SHARED_PRICE, 2.0).await;

    // Each answer is a success the provider billed, whatever we made of it.
    let attempts = fire_each(
        &server,
        &server.client,
        &["big one", "big two", "big three"],
    )
    .await;
    assert_eq!(attempts[0]["outcome"], "error", "{attempts:?}");
    assert_eq!(attempts[1]["outcome"], "error", "{attempts:?}");
    assert_eq!(
        seen.big.load(Ordering::SeqCst),
        2,
        "the third call would pass the 2 USD budget: {attempts:?}"
    );
    assert_eq!(attempts[2]["error"], "rate_limited", "{attempts:?}");
    assert!(
        attempts[2]["detail"].as_str().unwrap().contains("budget"),
        "{attempts:?}"
    );
    // The 429 says when to ask again: when a cap may free, the next UTC day.
    let set = server.me().import("More", "test", "name\nbig four\n").await;
    let record = server.me().record_ids(set.id).await[0];
    let res = server
        .client
        .post(server.at(&format!("/api/records/{record}/fire")))
        .json(&json!({"pack": "news"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 429);
    let wait: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=86_400).contains(&wait), "{wait}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn error_answers_are_billed_unless_the_pricing_says_they_are_free() {
    let names = ["broken one", "broken two", "broken three", "broken four"];
    // Undeclared: the provider is taken to bill what it answered, errors
    // too, so the 3 USD budget stops the calls at 3.
    let (seen, server) = priced("{ per_call = 1, unit = \"USD\" }", 3.0).await;
    let attempts: Vec<Value> = fire_each(&server, &server.client, &names).await;
    let asked = seen.broken.load(Ordering::SeqCst);
    assert_eq!(asked, 3, "{attempts:?}");
    assert_eq!(spent(&server).await, 3.0);
    server.stop().await;

    // Declared free (`bills_errors = false`, as SerpApi documents): the
    // errors cost nothing and the budget is untouched.
    let (seen, server) = priced(
        "{ per_call = 1, unit = \"USD\", bills_errors = false }",
        3.0,
    )
    .await;
    let attempts = fire_each(&server, &server.client, &names[..2]).await;
    assert!(seen.broken.load(Ordering::SeqCst) >= 2, "{attempts:?}");
    assert_eq!(spent(&server).await, 0.0, "{attempts:?}");
    server.stop().await;
}
