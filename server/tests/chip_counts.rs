//! A set's chip counts (the packs of its facets) are kept by the database
//! per record and intent, not counted from every record's history: in
//! every state a chip can be in (found, nothing found, failed,
//! rate-limited, its wait over, in flight, cancelled, never fired), on
//! SQLite and PostgreSQL, they equal the chips the set's page shows, and
//! they follow the clock, a cancel and the set's removal.

mod common;

use std::time::Duration;

use common::{on_every_backend, TestServer};
use engine::connectors::scripted::{ScriptedConnector, Step};
use engine::connectors::seam::FireError;
use model::{BuiltinCapability as B, ChipState, CostTier, RecordsPage, SetFacets};
use serde_json::json;

fn rate_limited(for_: Duration) -> Step {
    Step::Fail(FireError::RateLimited {
        retry_after: Some(for_),
        reason: "429 from the provider".into(),
    })
}

/// `alpha` finds one, then nothing, then fails; `beta` is rate-limited for
/// an hour and `gamma` for a second; `delta` and `epsilon` answer after a
/// minute.
async fn server(db: engine::store::testing::TestDatabase) -> TestServer {
    let web = [B::SearchWeb.into()];
    let free = |id| ScriptedConnector::registration(id, CostTier::Free, &web);
    let slow = || {
        [Step::Delay(
            Duration::from_secs(60),
            Box::new(Step::Found(1)),
        )]
    };
    let alpha = [
        Step::Found(1),
        Step::Empty,
        Step::Fail(FireError::Upstream {
            reason: "502".into(),
        }),
    ];
    let connectors = vec![
        (free("alpha"), ScriptedConnector::new("alpha", alpha)),
        (
            free("beta"),
            ScriptedConnector::new("beta", [rate_limited(Duration::from_secs(3600))]),
        ),
        (
            free("gamma"),
            ScriptedConnector::new("gamma", [rate_limited(Duration::from_secs(1))]),
        ),
        (free("delta"), ScriptedConnector::new("delta", slow())),
        (free("epsilon"), ScriptedConnector::new("epsilon", slow())),
    ];
    TestServer::with_scripted(db, connectors).await
}

/// Every pack's counts in the set's facets, held equal to the chips of
/// the set's page counted one by one; the web pack's.
async fn web_counts(server: &TestServer, set: i64) -> Vec<(String, i64)> {
    let (code, facets) = server
        .get_json(&format!("/api/record-sets/{set}/facets"))
        .await;
    assert_eq!(code, 200, "{facets}");
    let facets: SetFacets = serde_json::from_value(facets).unwrap();
    let (code, page) = server
        .get_json(&format!("/api/record-sets/{set}/records?limit=100"))
        .await;
    assert_eq!(code, 200, "{page}");
    let page: RecordsPage = serde_json::from_value(page).unwrap();
    for facet in &facets.packs {
        let chips: Vec<ChipState> = page
            .records
            .iter()
            .flat_map(|r| r.chips.iter().filter(|c| c.pack_id == facet.pack_id))
            .map(|c| c.state.clone())
            .collect();
        assert_eq!(
            facet.states,
            model::glance::count_states(&chips),
            "pack {}: kept counts against the page's chips",
            facet.pack_id
        );
    }
    let web = facets.packs.iter().find(|p| p.pack_id == "web").unwrap();
    web.states.clone()
}

fn counts(states: &[(&str, i64)]) -> Vec<(String, i64)> {
    states.iter().map(|(s, n)| ((*s).to_owned(), *n)).collect()
}

/// Starts a fire of `record`'s web pack through `connector` that stays in
/// flight; its fire's id once its attempt has started.
async fn in_flight(server: &TestServer, record: i64, connector: &str) -> i64 {
    let client = server.client.clone();
    let url = server.at(&format!("/api/records/{record}/fire"));
    let body = json!({ "pack": "web", "connector": connector });
    tokio::spawn(async move { client.post(url).json(&body).send().await });
    for _ in 0..3_000 {
        let (_, history) = server
            .get_json(&format!("/api/records/{record}/history"))
            .await;
        let fire = history
            .as_array()
            .and_then(|h| h.first())
            .and_then(|e| e["fire_id"].as_i64());
        if let Some(fire) = fire {
            return fire;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("waited 30 s for record {record}'s attempt to be in flight");
}

/// Cancels `record`'s fire `fire` and waits for its end to be written (a
/// cancel is asked for at once; the fire's walk writes its end as it stops).
async fn cancel(server: &TestServer, record: i64, fire: i64) {
    let (code, body) = server
        .post_json(&format!("/api/fires/{fire}/cancel"), json!({}))
        .await;
    assert_eq!(code, 200, "{body}");
    for _ in 0..3_000 {
        let (_, history) = server
            .get_json(&format!("/api/records/{record}/history"))
            .await;
        let open = history.as_array().is_none_or(|h| {
            h.iter()
                .any(|e| e["fire_id"].as_i64() == Some(fire) && e["finished_at"].is_null())
        });
        if !open {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("waited 30 s for fire {fire} to end after its cancel");
}

#[tokio::test]
async fn chip_counts_are_the_chips_in_every_state() {
    on_every_backend(|db| async {
        let server = server(db).await;
        let me = server.me();
        let csv = "name\nAcme\nBolt\nCore\nDune\nEcho\nFern\nGold\nHaze\n";
        let set = me.import("Companies", "test", csv).await.id;
        let ids = me.record_ids(set).await;
        me.fire(ids[0], "web", Some("alpha")).await;
        me.fire(ids[1], "web", Some("alpha")).await;
        me.fire(ids[2], "web", Some("alpha")).await;
        me.fire(ids[3], "web", Some("beta")).await;
        me.fire(ids[4], "web", Some("gamma")).await;
        let fern = in_flight(&server, ids[5], "delta").await;
        let gold = in_flight(&server, ids[6], "epsilon").await;
        cancel(&server, ids[6], gold).await;
        // Haze was never fired; Gold's only attempt was cancelled.
        assert_eq!(
            web_counts(&server, set).await,
            counts(&[
                ("found", 1),
                ("not_found", 1),
                ("error", 1),
                ("rate_limited", 2),
                ("firing", 1),
                ("idle", 2),
            ])
        );

        // Ten seconds on, gamma's wait is over: Echo's chip is idle again.
        server.state.engine.clock().advance(Duration::from_secs(10));
        assert_eq!(
            web_counts(&server, set).await,
            counts(&[
                ("found", 1),
                ("not_found", 1),
                ("error", 1),
                ("rate_limited", 1),
                ("firing", 1),
                ("idle", 3),
            ])
        );

        // Fern's fire is cancelled: its chip is idle, as before it.
        cancel(&server, ids[5], fern).await;
        let web = web_counts(&server, set).await;
        assert!(web.contains(&("idle".to_owned(), 4)), "{web:?}");
        assert!(!web.iter().any(|(s, _)| s == "firing"), "{web:?}");

        // Removing the set removes what was kept of its chips.
        let (code, body) = server.delete(&format!("/api/record-sets/{set}")).await;
        assert!(code == 200 || code == 204, "{code} {body}");
        let kept: i64 = sqlx::query_scalar(
            "SELECT CAST(COUNT(*) AS BIGINT) FROM chip_facts WHERE record_set_id = $1",
        )
        .bind(set)
        .fetch_one(server.state.engine.store().pool())
        .await
        .unwrap();
        assert_eq!(kept, 0);
        server.stop().await;
    })
    .await;
}
