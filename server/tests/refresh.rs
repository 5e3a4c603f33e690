//! Scheduled refresh through the doors: an admin schedules a pack, a due
//! run fires the stale records as a `scheduled-refresh` job, results stay
//! additive, and what it found is new to a person who has not looked since
//! and not to one who has.

mod common;

use std::time::Duration;

use common::{TestServer, TEST_EMAIL, TEST_PACKS, TEST_PASSWORD};
use engine::connectors::scripted::{ScriptedConnector, Step};
use engine::packs::Catalog;
use model::{BuiltinCapability as B, CostTier, Role};
use serde_json::{json, Value};

const BOB: &str = "bob@example.org";
const BOB_PASSWORD: &str = "bob's long enough password";

/// `hours` later: the server's clock moves that far ahead.
fn later(server: &TestServer, hours: u64) {
    server
        .state
        .engine
        .clock()
        .advance(Duration::from_secs(hours * 3_600));
}

/// The triage page as `browser` reads it (a visit).
async fn look(server: &TestServer, browser: &reqwest::Client, set: i64) -> Value {
    let (code, body) = server
        .call_server_fn(
            browser,
            "load_triage",
            &[
                ("set_id", &set.to_string()),
                ("filter", "all"),
                ("search", ""),
                ("offset", "0"),
            ],
        )
        .await;
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// The records with items new since `browser`'s person last visited, as
/// the REST door's filter finds them.
async fn changed_for(server: &TestServer, browser: &reqwest::Client, set: i64) -> Value {
    browser
        .get(server.at(&format!("/api/record-sets/{set}/records?filter=changed")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The URLs of the items first seen after the page's `since`.
fn fresh(page: &Value) -> Vec<String> {
    let Some(since) = page["since"].as_i64() else {
        return Vec::new();
    };
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["first_seen_at"].as_i64().unwrap() > since)
        .map(|i| i["url"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_refresh_adds_items_new_to_whoever_has_not_looked_since() {
    common::on_every_backend(|db| async {
        // The first fire finds one page, the refresh one more.
        let alpha = ScriptedConnector::new("alpha", [Step::Found(1), Step::Found(2)]);
        let server = TestServer::start_with(db, {
            let alpha = alpha.clone();
            move |state| {
                *state.engine.catalog_lock().write().unwrap() =
                    Catalog::from_toml(TEST_PACKS).unwrap();
                let reg = ScriptedConnector::registration(
                    "alpha",
                    CostTier::Free,
                    &[B::SearchWeb.into()],
                );
                state.engine.registry().register(reg, alpha).unwrap();
            }
        })
        .await;
        server
            .state
            .engine
            .add_user(
                BOB,
                common::TEST_WORKSPACE,
                Role::Member,
                Some(BOB_PASSWORD.to_owned()),
            )
            .await
            .unwrap();
        let set = server
            .me()
            .import("Companies", "test", "name\nAcme\n")
            .await
            .id;
        let record = server.me().record_ids(set).await[0];
        server.me().fire(record, "web", None).await;
        let ana = server.browser(TEST_EMAIL, TEST_PASSWORD).await;
        let bob = server.browser(BOB, BOB_PASSWORD).await;
        // First visits: nothing is new to anyone yet.
        assert!(fresh(&look(&server, &ana, set).await).is_empty());
        assert!(fresh(&look(&server, &bob, set).await).is_empty());
        later(&server, 48);

        // A member may not schedule; an admin may, for a pack of the bundle.
        let member = server
            .user("carl@example.org", common::TEST_WORKSPACE, Role::Member)
            .await;
        let res = member
            .put(server.at(&format!("/api/record-sets/{set}/refresh/web")))
            .json(&json!({"every_hours": 24}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 403);
        let (code, err) = server
            .put_json(
                &format!("/api/record-sets/{set}/refresh/nope"),
                json!({"every_hours": 24}),
            )
            .await;
        assert_eq!(code, 400, "{err}");
        let (code, schedule) = server
            .put_json(
                &format!("/api/record-sets/{set}/refresh/web"),
                json!({"every_hours": 24}),
            )
            .await;
        assert_eq!(code, 200, "{schedule}");
        assert_eq!(schedule["every_hours"], 24);

        // The record's last fire is two days old: the refresh fires it again.
        let started = server.state.engine.run_due_refreshes().await.unwrap();
        assert_eq!(started.len(), 1);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        let job = loop {
            let (_, envelope) = server.get_json(&format!("/api/jobs/{}", started[0])).await;
            if envelope["status"] != "pending" {
                break envelope["job"].clone();
            }
            assert!(tokio::time::Instant::now() < deadline, "{envelope}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(job["triggered_by"], "scheduled-refresh", "{job}");
        assert_eq!(alpha.calls(), 2);
        let (_, listed) = server
            .get_json(&format!("/api/record-sets/{set}/refresh"))
            .await;
        assert_eq!(listed[0]["last_job_id"], started[0]);

        // Bob looks now: the page the refresh found is new to him, the old
        // one is not; the changed filter finds the record.
        let page = look(&server, &bob, set).await;
        assert_eq!(fresh(&page), ["https://alpha.test/acme/1"], "{page}");
        assert_eq!(page["items"].as_array().unwrap().len(), 2, "additive");
        let changed = changed_for(&server, &bob, set).await;
        assert_eq!(changed["total"], 1, "{changed}");
        later(&server, 2);
        // Back later, Bob has seen it; Ana, who has not looked since, has not.
        assert!(fresh(&look(&server, &bob, set).await).is_empty());
        assert_eq!(
            fresh(&look(&server, &ana, set).await),
            ["https://alpha.test/acme/1"]
        );
        let changed = changed_for(&server, &bob, set).await;
        assert_eq!(changed["total"], 0, "{changed}");
    })
    .await;
}
