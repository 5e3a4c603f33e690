//! Fan-out jobs (progress, cancel, resume after a crash) and the live event
//! stream (delivery, filtering by record set, Last-Event-ID resume).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{TestServer, TEST_PACKS};
use engine::connectors::scripted::{ScriptedConnector, Step};
use engine::packs::Catalog;
use engine::store::testing::{self, TestDatabase};
use engine::store::NewJob;
use futures::StreamExt;
use model::{BuiltinCapability as B, Capability, CostTier, JobStatus};
use serde_json::{json, Value};

fn caps() -> Vec<Capability> {
    vec![B::SearchWeb.into(), B::SearchNews.into()]
}

fn setup(connector: Arc<ScriptedConnector>) -> impl FnOnce(&server::AppState) {
    move |state| {
        *state.engine.catalog_lock().write().unwrap() = Catalog::from_toml(TEST_PACKS).unwrap();
        state
            .engine
            .registry()
            .register(
                ScriptedConnector::registration("alpha", CostTier::Free, &caps()),
                connector,
            )
            .unwrap();
    }
}

fn csv(n: usize) -> String {
    let mut csv = String::from("name,city\n");
    for i in 0..n {
        csv.push_str(&format!("Company {i},City {i}\n"));
    }
    csv
}

async fn wait_for_job(server: &TestServer, job: i64) -> Value {
    for _ in 0..500 {
        let (_, envelope) = server.get_json(&format!("/api/jobs/{job}")).await;
        if envelope["status"] == "completed" {
            return envelope;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("job {job} never completed");
}

#[tokio::test]
async fn a_fanout_runs_every_pack_over_every_record() {
    for db in testing::all().await {
        // Found, then empty, alternating.
        let alpha = ScriptedConnector::new(
            "alpha",
            (0..10).map(|i| {
                if i % 2 == 0 {
                    Step::Found(1)
                } else {
                    Step::Empty
                }
            }),
        );
        let server = TestServer::start_with(db, setup(alpha.clone())).await;
        let set = server.me().import("Five", "test", &csv(5)).await.id;

        let (code, envelope) = server
            .post_json(&format!("/api/record-sets/{set}/fanout"), json!({}))
            .await;
        assert_eq!(code, 202, "{envelope}");
        assert_eq!(envelope["status"], "pending");
        assert_eq!(envelope["progress"]["total"], 10);
        let job = envelope["job_id"].as_i64().unwrap();
        let done = wait_for_job(&server, job).await;
        assert_eq!(done["progress"], json!({"done": 10, "total": 10}));
        assert_eq!(
            done["job"]["found"].as_u64().unwrap() + done["job"]["not_found"].as_u64().unwrap(),
            10
        );
        assert_eq!(alpha.calls(), 10);

        // Every chip now says what its fire found; history says why it fired.
        let (_, page) = server
            .get_json(&format!("/api/record-sets/{set}/records"))
            .await;
        for record in page["records"].as_array().unwrap() {
            for chip in record["chips"].as_array().unwrap() {
                assert!(
                    chip["state"] == "found" || chip["state"] == "not_found",
                    "{chip}"
                );
            }
        }
        let first = page["records"][0]["id"].as_i64().unwrap();
        let (_, history) = server
            .get_json(&format!("/api/records/{first}/history"))
            .await;
        assert_eq!(history[0]["triggered_by"], "initial-fanout");
        assert!(history[0]["actor"]
            .as_str()
            .unwrap()
            .contains(&format!("job {job}")));
        server.stop().await;
    }
}

#[tokio::test]
async fn a_small_fanout_completes_in_the_request() {
    let alpha = ScriptedConnector::new("alpha", [Step::Found(2)]);
    let server = TestServer::start_with(testing::sqlite(), setup(alpha)).await;
    let set = server.me().import("Two", "test", &csv(2)).await.id;
    let (code, envelope) = server
        .post_json(
            &format!("/api/record-sets/{set}/fanout"),
            json!({"packs": ["web"]}),
        )
        .await;
    assert_eq!(code, 200, "{envelope}");
    assert_eq!(envelope["status"], "completed");
    assert_eq!(envelope["progress"], json!({"done": 2, "total": 2}));
    assert_eq!(envelope["job"]["found"], 2);

    let (code, err) = server
        .post_json(
            &format!("/api/record-sets/{set}/fanout"),
            json!({"packs": ["zzz"]}),
        )
        .await;
    assert_eq!(code, 400);
    assert!(err["detail"].as_str().unwrap().contains("zzz"));
}

#[tokio::test]
async fn a_job_can_be_cancelled() {
    let slow = ScriptedConnector::new(
        "alpha",
        [Step::Delay(
            Duration::from_millis(200),
            Box::new(Step::Found(1)),
        )],
    );
    let server = TestServer::start_with(testing::sqlite(), setup(slow.clone())).await;
    let set = server.me().import("Many", "test", &csv(30)).await.id;
    let (_, envelope) = server
        .post_json(&format!("/api/record-sets/{set}/fanout"), json!({}))
        .await;
    let job = envelope["job_id"].as_i64().unwrap();
    common::until("the fan-out to fire", || async { slow.calls() >= 2 }).await;
    let (code, cancelled) = server
        .post_json(&format!("/api/jobs/{job}/cancel"), json!({}))
        .await;
    assert_eq!(code, 200);
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["job"]["status"], "cancelled");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let calls = slow.calls();
    assert!(calls < 60, "the job stopped early ({calls} of 60 fires)");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(slow.calls(), calls, "no fire starts after a cancel");
}

/// Runs a job in a runtime that is then dropped mid-flight (as a killed
/// process would be), then resumes it in a fresh engine on the same database
/// once the dead process's leases expire.
#[test]
fn a_job_resumes_after_a_crash_without_firing_anything_twice() {
    let db: TestDatabase = testing::sqlite();
    let mut config = TestServer::config(&db);
    config.leases = engine::execution::lease::LeaseConfig::new(
        Duration::from_millis(600),
        Duration::from_millis(100),
    )
    .unwrap();

    let first = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (job_id, set_id) = first.block_on(async {
        let slow = ScriptedConnector::new(
            "alpha",
            [Step::Delay(
                Duration::from_millis(30),
                Box::new(Step::Found(1)),
            )],
        );
        let state = server::startup::prepare(&config).await.unwrap();
        setup(slow)(&state);
        server::startup::finish(&config, &state).await.unwrap();
        let parsed = engine::import::parse_csv(csv(20).as_bytes(), Default::default()).unwrap();
        let (workspace, _) = state
            .engine
            .store()
            .ensure_workspace("crash")
            .await
            .unwrap();
        let set = state
            .engine
            .store()
            .create_record_set(workspace, "Crash", "test", false, &parsed.records)
            .await
            .unwrap();
        let job = state
            .engine
            .jobs()
            .start(&NewJob::fanout(set, &["web".to_owned()], "ana"))
            .await
            .unwrap();
        loop {
            let now = state.engine.store().job(job.id).await.unwrap();
            if now.progress.done >= 6 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        (job.id, set)
    });
    // The crash: every task of the first process stops where it is. A write
    // already handed to SQLite's connection thread may still land: let it.
    first.shutdown_background();
    std::thread::sleep(Duration::from_millis(300));

    let second = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    second.block_on(async {
        let counting = ScriptedConnector::new("alpha", [Step::Found(1)]);
        let state = server::startup::prepare(&config).await.unwrap();
        // Records whose fire found results before the crash (whether or not
        // the fire itself was closed): firing them again would repeat work.
        let found_before: i64 = sqlx::query_scalar(
            "SELECT COUNT(DISTINCT h.record_id) FROM connector_history h JOIN fires f ON f.id = h.fire_id \
             WHERE f.job_id = $1 AND h.outcome = 'found'",
        )
        .bind(job_id)
        .fetch_one(state.engine.store().pool())
        .await
        .unwrap();
        assert!(found_before >= 6);
        setup(counting.clone())(&state);
        server::startup::finish(&config, &state).await.unwrap(); // resumes the job
        let job = loop {
            let job = state.engine.store().job(job_id).await.unwrap();
            if job.status != JobStatus::Running {
                break job;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        assert_eq!(job.status, JobStatus::Completed);
        assert_eq!(job.progress.done, 20, "no task is lost");
        // The fires in flight at the crash may have been paid for: they end
        // as interrupted and are not fired again (a person may).
        let interrupted: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM job_tasks t JOIN fires f ON f.id = t.fire_id \
             WHERE t.job_id = $1 AND t.outcome = 'interrupted' AND f.status = 'interrupted'",
        )
        .bind(job_id)
        .fetch_one(state.engine.store().pool())
        .await
        .unwrap();
        let odd: Vec<(String, Option<i64>, i64)> = sqlx::query_as(
            "SELECT COALESCE(outcome, 'none'), fire_id, record_id FROM job_tasks WHERE job_id = $1 \
             AND outcome NOT IN ('found', 'interrupted')",
        )
        .bind(job_id)
        .fetch_all(state.engine.store().pool())
        .await
        .unwrap();
        assert_eq!(job.found as i64 + interrupted, 20, "tasks neither found nor interrupted: {odd:?}");
        assert_eq!(job.errors as i64, interrupted);
        assert_eq!(
            counting.calls() as i64,
            20 - found_before - interrupted,
            "only what had not started is fired again"
        );
        // Each record has exactly one finished fire of this job.
        let repeated: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM (SELECT record_id FROM fires WHERE job_id = $1 AND status = 'done' \
             GROUP BY record_id HAVING COUNT(*) > 1) AS dup",
        )
        .bind(job_id)
        .fetch_one(state.engine.store().pool())
        .await
        .unwrap();
        assert_eq!(repeated, 0);
        // Attempts the crash left in flight are closed, and say so.
        let open: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM connector_history WHERE outcome IS NULL")
            .fetch_one(state.engine.store().pool())
            .await
            .unwrap();
        assert_eq!(open, 0);
        let records = state.engine.store().records(set_id, 0, 100).await.unwrap();
        assert_eq!(records.len(), 20);
    });
}

/// A client that gives up mid-fire (a closed tab, a proxy's timeout)
/// changes nothing: the fire is the engine's and runs to its end.
#[tokio::test]
async fn a_fire_outlives_a_client_that_disconnects() {
    common::on_every_backend(|db| async move {
        let slow = ScriptedConnector::new(
            "alpha",
            [Step::Delay(
                Duration::from_millis(500),
                Box::new(Step::Found(2)),
            )],
        );
        let server = TestServer::start_with(db, setup(slow.clone())).await;
        let set = server.me().import("Gone", "test", &csv(1)).await.id;
        let record = server.me().record_ids(set).await[0];
        // Another viewer of the set.
        let stream = server
            .client
            .get(server.at(&format!("/api/events?record_set={set}")))
            .send()
            .await
            .unwrap();

        let gave_up = server
            .client
            .post(server.at(&format!("/api/records/{record}/fire")))
            .timeout(Duration::from_millis(150))
            .json(&json!({"pack": "web"}))
            .send()
            .await;
        assert!(gave_up.unwrap_err().is_timeout());
        assert_eq!(
            slow.calls(),
            1,
            "the fire was under way when the client left"
        );

        let events = read_events(stream, |e| {
            e["type"] == "fire_news" && e["chip"]["state"] == "found"
        })
        .await;
        assert_eq!(events.last().unwrap().1["chip"]["count"], 2);
        let (_, items) = server
            .get_json(&format!("/api/records/{record}/items"))
            .await;
        assert_eq!(items.as_array().unwrap().len(), 2, "{items}");
        let (_, history) = server
            .get_json(&format!("/api/records/{record}/history"))
            .await;
        let history = history.as_array().unwrap();
        assert_eq!(history.len(), 1);
        assert_eq!(history[0]["outcome"], "found", "{history:?}");
        let (status, _) = server
            .state
            .engine
            .store()
            .fire_status(history[0]["fire_id"].as_i64().unwrap())
            .await
            .unwrap();
        assert_eq!(status, "done");
        server.stop().await;
    })
    .await;
}

/// Reads server-sent events until `until` accepts one; returns them all.
async fn read_events(res: reqwest::Response, until: impl Fn(&Value) -> bool) -> Vec<(u64, Value)> {
    let mut stream = res.bytes_stream();
    let mut buffer = String::new();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let chunk = tokio::time::timeout_at(deadline, stream.next())
            .await
            .expect("the expected event within 5 s")
            .expect("the stream stays open")
            .unwrap();
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        for (id, data) in common::real::sse_blocks(&mut buffer) {
            let event: Value = serde_json::from_str(&data).unwrap();
            let done = until(&event);
            events.push((id, event));
            if done {
                return events;
            }
        }
    }
}

#[tokio::test]
async fn viewers_of_a_record_set_see_its_chips_change_live_and_resume_after_a_drop() {
    common::on_every_backend(|db| async move {
        let alpha = ScriptedConnector::new("alpha", [Step::Found(2)]);
        let server = TestServer::start_with(db, setup(alpha)).await;
        let set_a = server.me().import("A", "test", &csv(1)).await.id;
        let set_b = server.me().import("B", "test", &csv(1)).await.id;
        let record_a = server.me().record_ids(set_a).await[0];
        let record_b = server.me().record_ids(set_b).await[0];

        let stream = server
            .client
            .get(server.at(&format!("/api/events?record_set={set_a}")))
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), 200);
        assert!(stream.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream"));
        // A fire on the other set must not reach this viewer; one on this set must.
        server.me().fire(record_b, "web", None).await;
        server.me().fire(record_a, "web", None).await;
        let events = read_events(stream, |e| {
            e["type"] == "fire_news" && e["chip"]["state"] == "found"
        })
        .await;
        assert!(
            events
                .iter()
                .all(|(_, e)| e["record_set_id"].is_null() || e["record_set_id"] == set_a),
            "{events:?}"
        );
        let kinds: Vec<&str> = events
            .iter()
            .map(|(_, e)| e["type"].as_str().unwrap())
            .collect();
        // The viewer's own arrival comes first, then the fire's news: two
        // events for a fire of one attempt, however many items it finds.
        assert_eq!(kinds, ["presence", "fire_news", "fire_news"], "{kinds:?}");
        assert_eq!(
            events[0].1["viewers"],
            serde_json::json!([common::TEST_EMAIL])
        );
        let started = &events[1].1;
        assert_eq!(started["record_id"], record_a);
        assert_eq!(started["chip"]["state"], "firing");
        assert_eq!(started["attempts"].as_array().unwrap().len(), 1);
        assert!(started["attempts"][0]["outcome"].is_null(), "{started}");
        assert!(started.get("items").is_none(), "{started}");
        let ended = &events[2].1;
        assert_eq!(ended["record_id"], record_a);
        assert_eq!(ended["attempts"][0]["outcome"], "found", "{ended}");
        assert_eq!(ended["attempts"][0]["id"], started["attempts"][0]["id"]);
        assert_eq!(ended["items"].as_array().unwrap().len(), 2, "{ended}");
        assert_eq!(ended["chip"]["count"], 2);

        // A browser that dropped after the first event gets the rest on reconnect.
        let first_id = events[0].0;
        let resumed = server
            .client
            .get(server.at(&format!("/api/events?record_set={set_a}")))
            .header("Last-Event-ID", first_id.to_string())
            .send()
            .await
            .unwrap();
        let replayed = read_events(resumed, |e| {
            e["type"] == "fire_news" && e["chip"]["state"] == "found"
        })
        .await;
        let ids: Vec<u64> = replayed.iter().map(|(id, _)| *id).collect();
        let expected: Vec<u64> = events[1..].iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, expected);

        let (code, _) = server.get_json("/api/events?record_set=999999").await;
        assert_eq!(code, 404);
        server.stop().await;
    })
    .await;
}

/// The triage page's data says which event it is as new as; the page's one
/// stream opens after that id. A fire that lands between the page's read
/// and the stream's opening still reaches the page, and a stream opened
/// without the id (as the page did before) misses it.
#[tokio::test]
async fn an_event_between_the_page_s_read_and_its_stream_reaches_the_page() {
    common::on_every_backend(|db| async move {
        let alpha = ScriptedConnector::new("alpha", [Step::Found(1), Step::Found(1)]);
        let server = TestServer::start_with(db, setup(alpha)).await;
        let set = server.me().import("A", "test", &csv(2)).await.id;
        let records = server.me().record_ids(set).await;
        let browser = server
            .browser(common::TEST_EMAIL, common::TEST_PASSWORD)
            .await;
        let load_triage = server::router::inventory()
            .into_iter()
            .map(|(_, path)| path)
            .find(|p| p.contains("load_triage"))
            .unwrap();
        let page: Value = browser
            .post(server.at(&load_triage))
            .form(&[
                ("set_id", set.to_string()),
                ("filter", "all".to_owned()),
                ("search", String::new()),
                ("offset", "0".to_owned()),
            ])
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let as_of = page["event_id"].as_u64().expect("the page's event id");
        assert!(page["page"]["records"][0]["chips"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["state"] == "idle"));

        // Someone fires while the page is on its way to the browser.
        server.me().fire(records[0], "web", None).await;

        let found = |record: i64| {
            move |e: &Value| {
                e["type"] == "fire_news"
                    && e["record_id"] == record
                    && e["chip"]["state"] == "found"
            }
        };
        let resumed = server
            .client
            .get(server.at(&format!("/api/events?record_set={set}&after={as_of}")))
            .send()
            .await
            .unwrap();
        let events = read_events(resumed, found(records[0])).await;
        assert!(events.iter().all(|(id, _)| *id > as_of), "{events:?}");
        assert!(
            events.iter().any(|(_, e)| e["type"] == "fire_news"
                && e["record_id"] == records[0]
                && e["chip"]["state"] == "firing"),
            "{events:?}"
        );

        // Opened without it, a stream starts at its own opening: the fire
        // before it is not there, only what comes after.
        let fresh = server
            .client
            .get(server.at(&format!("/api/events?record_set={set}")))
            .send()
            .await
            .unwrap();
        server.me().fire(records[1], "web", None).await;
        let later = read_events(fresh, found(records[1])).await;
        assert!(
            later.iter().all(|(_, e)| e["record_id"] != records[0]),
            "{later:?}"
        );
        server.stop().await;
    })
    .await;
}
