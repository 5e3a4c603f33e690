//! What one member, one workspace or one input can do to everyone else
//! (#29), through the real server: each test is a hole that was open, tried
//! as a hostile member would, and the neighbour it must not reach.

mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use common::shared::{
    budget_shared, fire_each, server_sharing_configured, shared_provider, shared_status,
    shared_with_a_neighbour, Seen,
};
use common::{on_every_backend, TestServer, TEST_EMAIL};
use engine::connectors::manifest::Format;
use model::Role;
use serde_json::{json, Value};

/// A news manifest on an unreachable address with `extra` lines after its
/// cost tier (rate hints, a cost).
fn manifest(id: &str, extra: &str) -> String {
    common::news_manifest(
        id,
        &format!("Probe {id}"),
        "http://127.0.0.1:9/search",
        None,
    )
    .replacen(
        "cost_tier = \"free\"",
        &format!("cost_tier = \"free\"\n{extra}"),
        1,
    )
}

fn problem_fields(body: &Value) -> Vec<String> {
    body["problems"]
        .as_array()
        .map(|p| {
            p.iter()
                .map(|p| p["field"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn manifest_numbers_out_of_range_are_refused_and_a_stored_one_never_stops_the_server() {
    let server = TestServer::start_for_fakes(engine::store::testing::sqlite(), |_| {}).await;

    // Through the door: refused with 422 naming each field, the connection intact.
    for (extra, field) in [
        (
            "rate_hints = { per_second = 1e-30 }",
            "rate_hints.per_second",
        ),
        ("rate_hints = { per_second = 1e9 }", "rate_hints.per_second"),
        (
            "rate_hints = { daily_cap = 4000000000 }",
            "rate_hints.daily_cap",
        ),
        (
            "cost = { per_call = 5000000, unit = \"USD\" }",
            "cost.per_call",
        ),
    ] {
        let (status, body) = server.post_manifest(&manifest("slow", extra)).await;
        assert_eq!(status, 422, "{extra}: {body}");
        assert_eq!(problem_fields(&body), [field], "{extra}: {body}");
    }
    let (status, body) = server.post_manifest(&manifest("good", "")).await;
    assert_eq!(status, 201, "{body}");

    // A row that never went through the check (written by an older
    // version, or by hand) is skipped at start and said on the list; the
    // server starts and everything else serves.
    let stored = manifest("slow", "rate_hints = { per_second = 1e-30 }");
    server
        .state
        .engine
        .store()
        .save_manifest(
            server.workspace_id,
            "slow",
            Format::Toml,
            &stored,
            TEST_EMAIL,
        )
        .await
        .unwrap();
    let db = server.stop_keeping_database().await;
    let server = TestServer::start_for_fakes(db, |_| {}).await;
    let (_, connectors) = server.get_json("/api/connectors").await;
    let ids: Vec<&str> = connectors
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert!(ids.contains(&"good"), "{ids:?}");
    assert!(!ids.contains(&"slow"), "{ids:?}");
    let (_, saved) = server.get_json("/api/manifests").await;
    let slow = saved
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["connector_id"] == "slow")
        .expect("the skipped manifest is listed");
    let error = slow["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("not serving") && error.contains("rate_hints.per_second"),
        "{slow}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_members_bad_queries_never_suspend_a_shared_connector_for_anyone() {
    on_every_backend(|db| async {
        let (seen, server, neighbour) = shared_with_a_neighbour(db, "").await;

        // Far past the three errors in a row that suspend a connector.
        let attempts = fire_each(
            &server,
            &server.client,
            &["bad one", "bad two", "bad three", "bad four", "bad five"],
        )
        .await;
        for attempt in &attempts {
            assert_eq!(attempt["outcome"], "error", "{attempt}");
            let error = attempt["error"].as_str().unwrap();
            assert!(error.contains("refused this query (HTTP 400"), "{error}");
        }
        // Not retried: the same query would be refused again.
        assert_eq!(seen.bad.load(Ordering::SeqCst), 5);
        for client in [&server.client, &neighbour] {
            let status = shared_status(&server, client).await;
            assert_eq!(status["status"], "available", "{status}");
        }
        let attempts = fire_each(&server, &neighbour, &["Good news"]).await;
        assert_eq!(attempts[0]["outcome"], "found", "{attempts:?}");
        server.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shared_rate_limit_holds_an_hour_at_most_and_tells_others_nothing_of_the_query() {
    on_every_backend(|db| async {
        let (_, server, neighbour) = shared_with_a_neighbour(db, "").await;

        let before = server.state.engine.clock().now_ms();
        let attempts = fire_each(&server, &server.client, &["limit Secret Merger Target"]).await;
        assert_eq!(attempts[0]["outcome"], "rate_limited", "{attempts:?}");
        // The server's key is limited: every workspace waits, but an hour at
        // most, and what they are told is in our words.
        let status = shared_status(&server, &neighbour).await;
        assert_eq!(status["status"], "rate-limited", "{status}");
        let until = status["until"].as_i64().unwrap();
        assert!(until <= before + 3_600_000 + 60_000, "{status}");
        let said = status.to_string();
        assert!(!said.contains("Secret Merger"), "{said}");
        assert!(said.contains("HTTP 429"), "{said}");
        server.stop().await;
    })
    .await;
}

/// A workspace admin's re-check of the shared connector, as `client`.
async fn recheck_shared(server: &TestServer, client: &reqwest::Client) -> Value {
    let res = client
        .post(server.at("/api/connectors/shared/recheck"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    res.json::<Value>().await.unwrap()["report"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_re_check_is_metered_and_never_asks_a_provider_that_told_everyone_to_wait() {
    on_every_backend(|db| async {
        let (seen, server, neighbour) = shared_with_a_neighbour(db, "").await;
        let asked = || seen.order.lock().unwrap().len();

        // A re-check is a call: it takes its price from the budget, and a
        // spent budget stops it before it goes out.
        budget_shared(&server, &neighbour, 1.0).await;
        let report = recheck_shared(&server, &neighbour).await;
        assert_eq!(report["outcome"], "found", "{report}");
        let (_, budgets) = server.get_json_as(&neighbour, "/api/budgets").await;
        assert_eq!(budgets[0]["spent"], 1.0, "{budgets}");
        let report = recheck_shared(&server, &neighbour).await;
        let error = report["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("budget") && error.contains("not probed"),
            "{report}"
        );
        assert_eq!(asked(), 1, "the provider was asked once");

        // The provider tells the server's key to wait: no workspace's re-check
        // asks it again for everyone, and the limit holds.
        let attempts = fire_each(&server, &server.client, &["limit now"]).await;
        assert_eq!(attempts[0]["outcome"], "rate_limited", "{attempts:?}");
        budget_shared(&server, &neighbour, 10.0).await;
        let report = recheck_shared(&server, &neighbour).await;
        let error = report["error"].as_str().unwrap_or_default();
        assert!(error.contains("not probed before"), "{report}");
        assert_eq!(asked(), 2, "nothing more reached the provider");
        let status = shared_status(&server, &neighbour).await;
        assert_eq!(status["status"], "rate-limited", "{status}");
        server.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn one_workspace_takes_at_most_its_share_of_a_server_keys_daily_cap() {
    on_every_backend(|db| async {
        let seen = Arc::new(Seen::default());
        let base = shared_provider(seen.clone()).await;
        // The operator lets one workspace take half of the 4 fires a day.
        let server = server_sharing_configured(
            db,
            &base,
            "{ per_call = 1, unit = \"USD\" }",
            "rate_hints = { daily_cap = 4 }",
            |config| config.workspace_daily_share = 0.5,
        )
        .await;
        let neighbour = server
            .user("nina@other.example", "other", Role::Admin)
            .await;
        let mine = fire_each(&server, &server.client, &["one a", "one b", "one c"]).await;
        assert_eq!(mine[0]["outcome"], "found", "{mine:?}");
        assert_eq!(mine[1]["outcome"], "found", "{mine:?}");
        let detail = mine[2]["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains("share of the daily cap is reached (2 of 4 fires)"),
            "{mine:?}"
        );
        let theirs = fire_each(&server, &neighbour, &["two a", "two b"]).await;
        assert_eq!(theirs[0]["outcome"], "found", "{theirs:?}");
        assert_eq!(theirs[1]["outcome"], "found", "{theirs:?}");
        assert_eq!(seen.good.load(Ordering::SeqCst), 4);
        server.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workspace_runs_a_bounded_number_of_fan_outs_and_a_neighbour_is_not_held_back() {
    on_every_backend(|db| async {
        // One call a second: fan-outs of five records each (past what a request
        // waits for) run for many seconds.
        let (_, server, neighbour) =
            shared_with_a_neighbour(db, "rate_hints = { per_second = 1 }").await;
        let start = |client: reqwest::Client, set: i64| {
            let url = server.at(&format!("/api/record-sets/{set}/fanout"));
            async move {
                let res = client
                    .post(url)
                    .json(&json!({"packs": ["news"]}))
                    .send()
                    .await
                    .unwrap();
                let wait = res.headers().get("retry-after").cloned();
                (
                    res.status().as_u16(),
                    wait,
                    res.json::<Value>().await.unwrap(),
                )
            }
        };
        let mut sets = Vec::new();
        for n in 0..=engine::ops::MAX_FANOUTS_RUNNING {
            let csv: String = (0..5).map(|i| format!("\nrecord {n}.{i}")).collect();
            let csv = format!("name{csv}\n");
            sets.push(
                server
                    .me()
                    .import(&format!("Set {n}"), "test", &csv)
                    .await
                    .id,
            );
        }
        let (last, running) = sets.split_last().unwrap();
        for set in running {
            let (status, _, body) = start(server.client.clone(), *set).await;
            assert_eq!(status, 202, "{body}");
        }
        let (status, wait, body) = start(server.client.clone(), *last).await;
        assert_eq!(status, 429, "{body}");
        assert_eq!(wait.unwrap(), "30");
        assert!(
            body["detail"]
                .as_str()
                .unwrap()
                .starts_with("fan-outs: this workspace has 4 running"),
            "{body}"
        );

        let theirs = server
            .as_(&neighbour)
            .import("Theirs", "test", "name\na\nb\nc\nd\ne\n")
            .await;
        let (status, _, body) = start(neighbour.clone(), theirs.id).await;
        assert_eq!(status, 202, "{body}");
        server.stop().await;
    })
    .await;
}

#[tokio::test]
async fn wrong_current_passwords_are_slowed_like_sign_in_and_the_owner_still_changes_theirs() {
    let server = TestServer::start_configured(
        engine::store::testing::sqlite(),
        |config| {
            config.trusted_proxies = server::auth::TrustedProxies::parse("127.0.0.1").unwrap();
        },
        |_| {},
    )
    .await;
    /// Asks to change the password of `browser`'s person from `address`;
    /// returns where the answer sends the page.
    async fn change(
        server: &TestServer,
        browser: &reqwest::Client,
        address: &str,
        current: &str,
        new: &str,
    ) -> String {
        let res = browser
            .post(server.at("/auth/password"))
            .header("x-forwarded-for", address)
            .form(&[("current", current), ("password", new), ("again", new)])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 303);
        res.headers()["location"].to_str().unwrap().to_owned()
    }
    // A stolen session guesses the current password.
    let stolen = server.browser(TEST_EMAIL, common::TEST_PASSWORD).await;
    let mut outcomes = Vec::new();
    for _ in 0..30 {
        let new = "a new long password";
        outcomes.push(change(&server, &stolen, "198.51.100.7", "a wrong guess", new).await);
    }
    let checked = outcomes.iter().filter(|o| o.ends_with("=wrong")).count();
    let limited = outcomes
        .iter()
        .filter(|o| o.starts_with("/settings?password=limited&wait="))
        .count();
    // A few are checked (as at sign-in), then each further one must wait
    // twice as long as the last: at this pace, every one is refused.
    assert!(checked <= 4, "{outcomes:?}");
    assert_eq!(checked + limited, 30, "{outcomes:?}");

    // Another person changing their own, from elsewhere, is not held back.
    let olga = "olga's long password";
    server
        .state
        .engine
        .add_user(
            "olga@example.org",
            "test",
            Role::Member,
            Some(olga.to_owned()),
        )
        .await
        .unwrap();
    let browser = server.browser("olga@example.org", olga).await;
    let newer = "olga's newer password";
    assert_eq!(
        change(&server, &browser, "203.0.113.9", olga, newer).await,
        "/settings?password=changed"
    );
}

#[tokio::test]
async fn no_page_or_answer_may_be_framed_by_another_site() {
    let server = TestServer::start().await;
    for (client, path) in [
        (&server.anonymous, "/sign-in"),
        (&server.client, "/"),
        (&server.client, "/api/me"),
    ] {
        let res = client.get(server.at(path)).send().await.unwrap();
        let headers = res.headers();
        assert_eq!(headers["x-frame-options"], "DENY", "{path}");
        assert_eq!(
            headers["content-security-policy"], "frame-ancestors 'none'",
            "{path}"
        );
        assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
    }
}

#[tokio::test]
async fn a_session_ended_elsewhere_is_never_brought_back_by_a_request_that_held_it() {
    on_every_backend(|db| async {
        let server = TestServer::start_on(db).await;
        let store = &server.state.engine.store();
        let user = server
            .state
            .engine
            .store()
            .user_by_email(TEST_EMAIL)
            .await
            .unwrap()
            .unwrap();
        let far = server.state.engine.clock().now_ms() + 3_600_000;
        assert!(store
            .insert_session("held", Some(user.id), "{}", far)
            .await
            .unwrap());
        // A new password ends it while a request still holds it...
        store.delete_sessions_of(user.id, None).await.unwrap();
        // ...and that request's save at its end changes nothing.
        assert!(!store
            .save_session("held", Some(user.id), "{\"x\":1}", far)
            .await
            .unwrap());
        assert_eq!(store.load_session("held").await.unwrap(), None);
        server.stop().await;
    })
    .await;
}

#[tokio::test]
async fn a_browsers_event_stream_ends_when_its_session_is_signed_out() {
    use futures::StreamExt;
    let server = TestServer::start().await;
    let browser = server.browser(TEST_EMAIL, common::TEST_PASSWORD).await;
    let stream = browser.get(server.at("/api/events")).send().await.unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let res = browser
        .post(server.at("/auth/sign-out"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 303);
    // The stream's next look at its access ends it (every 5 s).
    let mut body = stream.bytes_stream();
    let ended = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        while let Some(chunk) = body.next().await {
            if chunk.is_err() {
                break;
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the stream outlived its session");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workspace_flooding_a_shared_connector_with_calls_takes_turns_with_a_neighbours_click() {
    let (seen, server, neighbour) = shared_with_a_neighbour(
        engine::store::testing::sqlite(),
        "rate_hints = { per_second = 10 }",
    )
    .await;
    // Workspace A's two people ask for 60 calls at once (each holds at
    // most half the workspace's): six seconds of the hint.
    let colleague = server
        .user("cole@example.org", common::TEST_WORKSPACE, Role::Member)
        .await;
    for n in 0..60 {
        let asker = if n % 2 == 0 {
            &server.client
        } else {
            &colleague
        };
        let res = asker
            .post(server.at("/api/capabilities/search.news/call"))
            .json(&json!({"query": format!("flood {n}"), "async": true}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 202, "call {n}");
    }
    // Workspace B clicks once, and waits about one slot for its turn.
    let asked_after = seen.order.lock().unwrap().len();
    let res = neighbour
        .post(server.at("/api/capabilities/search.news/call"))
        .json(&json!({"query": "neighbour"}))
        .send()
        .await
        .unwrap();
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["status"], "completed", "{body}");
    let order = seen.order.lock().unwrap().clone();
    let at = order.iter().position(|q| q == "neighbour").unwrap();
    // Those that had passed when B asked, the one passing then, and one
    // more at most (arriving a moment apart).
    assert!(
        at <= asked_after + 2,
        "B asked after {asked_after} of the flood and came {at}th: {order:?}"
    );
    assert!(order.len() < 60, "B waited for the whole flood: {order:?}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_or_workspace_past_its_calls_in_flight_is_told_to_wait_and_no_one_else_is() {
    // One call a second: everything asked stays walking.
    let (_, server, neighbour) = shared_with_a_neighbour(
        engine::store::testing::sqlite(),
        "rate_hints = { per_second = 1 }",
    )
    .await;
    let colleague = server
        .user("cole@example.org", common::TEST_WORKSPACE, Role::Member)
        .await;
    let ask = |client: &reqwest::Client, n: usize| {
        client
            .post(server.at("/api/capabilities/search.news/call"))
            .json(&json!({"query": format!("flood {n}"), "async": true}))
            .send()
    };
    // Asks until refused (a call or two may end meanwhile: one passes a
    // second); returns how many were taken and the refusal's sentence.
    let flood = |client: reqwest::Client, from: usize, most: usize| {
        let ask = &ask;
        async move {
            let mut n = from;
            loop {
                let res = ask(&client, n).await.unwrap();
                if res.status().as_u16() != 202 {
                    assert_eq!(res.status().as_u16(), 429, "after {n} calls");
                    let wait: u64 = res.headers()["retry-after"]
                        .to_str()
                        .unwrap()
                        .parse()
                        .unwrap();
                    assert!(wait >= 1);
                    let body: Value = res.json().await.unwrap();
                    break (n - from, body["detail"].as_str().unwrap().to_string());
                }
                n += 1;
                assert!(n - from <= most + 5, "never refused");
            }
        }
    };
    let per_person = engine::ops::MAX_CALLS_IN_FLIGHT_PER_PERSON;
    let (taken, why) = flood(server.client.clone(), 0, per_person).await;
    assert!(taken >= per_person, "{taken}");
    assert!(why.starts_with("calls: you have"), "{why}");
    // A colleague still has places, up to the workspace's.
    let (more, why) = flood(colleague, 1000, per_person).await;
    assert!(more >= engine::ops::MAX_CALLS_IN_FLIGHT - taken, "{more}");
    assert!(why.starts_with("calls: this workspace has"), "{why}");
    let res = ask(&neighbour, 0).await.unwrap();
    assert_eq!(res.status().as_u16(), 202, "the neighbour is not limited");
    server.stop().await;
}

#[tokio::test]
async fn a_person_holds_a_bounded_number_of_event_streams() {
    let server = TestServer::start().await;
    let most = server::api::MAX_STREAMS_PER_PERSON;
    let mut open = Vec::new();
    for _ in 0..most {
        let res = server.open_events("").await;
        assert_eq!(res.status().as_u16(), 200);
        open.push(res);
    }
    let res = server.open_events("").await;
    assert_eq!(res.status().as_u16(), 429);
    assert!(res.headers().contains_key("retry-after"));
    // Another person is not held back, and a closed stream frees its place.
    let other = server.user("olga@example.org", "test", Role::Member).await;
    let res = other.get(server.at("/api/events")).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    drop(open.pop());
    // The server sees the stream closed at its next write (a keep-alive
    // within 15 s).
    let reopened = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            let res = server.open_events("").await;
            if res.status().as_u16() == 200 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(reopened.is_ok(), "a closed stream's place was never freed");
}
