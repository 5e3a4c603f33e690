//! Work the engine owns, against local fake providers on every back-end:
//! leases (only expired work is taken over, finished fires never fire
//! again), fan-outs as fast as each provider allows and no faster, jobs
//! sharing a connector evenly, a person's click ahead of any fan-out queue,
//! cancel reaching every fire, providers that refuse or hang, and a database
//! that fails in the middle of a fire.

mod common;

use std::time::Duration;

use common::provider::{Behaviour, FakeProvider};
use common::{engine, fan_out, finished, record_set, register_manifest, scripted, Deadline};
use engine::connectors::scripted::{ScriptedConnector, Step};
use engine::connectors::seam::ConnectorResult;
use engine::execution::dispatch::{DispatchConfig, FireRequest};
use engine::store::testing;
use engine::store::NewJob;
use engine::store::{Backend, FireContext, FireEnd, FireStatus, Lease, INTERRUPTED};
use engine::{Engine, EngineConfig};
use model::{AttemptEnd, BuiltinCapability as B, ChipState, FireOutcome, JobStatus, TriggeredBy};

fn context(record_id: i64, job_id: Option<i64>) -> FireContext {
    FireContext {
        record_id,
        pack_id: "web".into(),
        intent: B::SearchWeb.into(),
        triggered_by: if job_id.is_some() {
            TriggeredBy::InitialFanout
        } else {
            TriggeredBy::HumanRefire
        },
        actor: "ana".into(),
        job_id,
    }
}

/// Starts a fan-out of pack `web` over a record set.
/// One result, after `wait`.
fn found_after(wait: Duration) -> Vec<Step> {
    vec![Step::Delay(wait, Box::new(Step::Found(1)))]
}

/// Waits (at most 30 s) until a connector was called `n` times.
async fn calls_reach(connector: &ScriptedConnector, n: usize, what: &'static str) {
    let mut waited = Deadline::new(what);
    while connector.calls() < n {
        waited.tick().await;
    }
}

/// Opens a fire with one attempt of `alpha` in flight, as `lease.owner`.
async fn open(engine: &Engine, ctx: FireContext, lease: Lease<'_>) -> model::HistoryEntry {
    engine
        .store()
        .open_fire_with_attempt(&ctx, lease, "alpha")
        .await
        .unwrap()
}

async fn scalar(db: &Engine, sql: &str, id: i64) -> String {
    sqlx::query_scalar::<_, String>(sql)
        .bind(id)
        .fetch_one(db.store().pool())
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Fires of a job by status, and records with more than one finished fire.
async fn fires_of_job(engine: &Engine, job_id: i64) -> (i64, i64) {
    let done: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM fires WHERE job_id = $1 AND status = 'done'")
            .bind(job_id)
            .fetch_one(engine.store().pool())
            .await
            .unwrap();
    let repeated: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM (SELECT record_id FROM fires WHERE job_id = $1 AND status = 'done' \
         GROUP BY record_id HAVING COUNT(*) > 1) AS dup",
    )
    .bind(job_id)
    .fetch_one(engine.store().pool())
    .await
    .unwrap();
    (done, repeated)
}

async fn open_attempts(engine: &Engine) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM connector_history WHERE outcome IS NULL")
        .fetch_one(engine.store().pool())
        .await
        .unwrap()
}

/// One fire news as a test reads it: its attempts (connector and outcome),
/// how many items it carries, and its chip.
type Heard = (Vec<(String, Option<FireOutcome>)>, usize, Option<ChipState>);

/// The fire news of `record` heard on `events`, in order, up to the one
/// that ends its fire (a chip that is not firing).
async fn fire_news_to_the_end(
    events: &mut tokio::sync::broadcast::Receiver<std::sync::Arc<model::Event>>,
    record: i64,
) -> Vec<Heard> {
    let mut news: Vec<Heard> = Vec::new();
    let mut waited = Deadline::new("a fire's news to tell its end");
    while news
        .last()
        .is_none_or(|(_, _, chip)| matches!(chip, None | Some(ChipState::Firing)))
    {
        match events.try_recv() {
            Ok(event) => {
                if let model::EventKind::FireNews {
                    record_id,
                    attempts,
                    items,
                    chip,
                    ..
                } = &event.kind
                {
                    if *record_id == record {
                        let steps = attempts
                            .iter()
                            .map(|a| (a.connector_id.clone(), a.end.outcome))
                            .collect();
                        news.push((steps, items.len(), chip.clone()));
                    }
                }
            }
            Err(_) => waited.tick().await,
        }
    }
    news
}

#[tokio::test]
async fn only_work_whose_lease_expired_is_taken_over_and_finished_fires_never_fire_again() {
    for db in testing::all().await {
        eprintln!("-- on {}", db.kind());
        let engine = engine(&db, &["alpha"], EngineConfig::default()).await;
        let alpha = scripted(&engine, "alpha", None, vec![Step::Found(1)]);
        let set = record_set(&engine, "Leased", 4).await;
        let records = engine.store().records(set, 0, 10).await.unwrap();
        let now = engine.clock().now_ms();
        let dead = Lease {
            owner: "crashed-host/1/0",
            until: now - 1,
        };
        let alive = Lease {
            owner: "live-host/2/0",
            until: now + 60_000,
        };

        // A job of a process that died: of its two claimed tasks, one had
        // its fire finish (found) just before the crash, one was in flight.
        let dead_job = engine
            .store()
            .create_job(&NewJob::fanout(set, &["web".to_owned()], "ana"), dead)
            .await
            .unwrap();
        let tasks = engine
            .store()
            .claim_tasks(dead_job.id, 2, dead)
            .await
            .unwrap();
        assert_eq!(tasks.len(), 2);
        let finished_fire = open(
            &engine,
            context(tasks[0].record_id, Some(dead_job.id)),
            dead,
        )
        .await;
        let found = ConnectorResult {
            url: "https://alpha.test/found-before-the-crash".into(),
            title: "found".into(),
            snippet: String::new(),
            raw: serde_json::Value::Null,
        };
        engine
            .store()
            .close_attempt(
                &finished_fire,
                &AttemptEnd {
                    outcome: Some(FireOutcome::Found),
                    result_count: Some(1),
                    ..AttemptEnd::default()
                },
                &[found],
                Some(&FireEnd {
                    fire_id: finished_fire.fire_id,
                    status: FireStatus::Done,
                    open_attempt_error: None,
                    task: None,
                }),
            )
            .await
            .unwrap();
        let in_flight = open(
            &engine,
            context(tasks[1].record_id, Some(dead_job.id)),
            dead,
        )
        .await;

        // A live process: a person's fire and a job's task in flight.
        let live_fire = open(&engine, context(records[3].id, None), alive).await;
        let live_job = engine
            .store()
            .create_job(&NewJob::fanout(set, &["web".to_owned()], "bo"), alive)
            .await
            .unwrap();
        let live_tasks = engine
            .store()
            .claim_tasks(live_job.id, 1, alive)
            .await
            .unwrap();

        let reclaimed = engine.reclaim().await.unwrap();
        assert_eq!(reclaimed.fires, 1, "only the dead process's fire in flight");
        assert_eq!(
            reclaimed.tasks, 1,
            "of the dead job's two claimed tasks, the one whose fire finished"
        );
        assert_eq!(reclaimed.jobs, vec![dead_job.id]);

        // The live process's work is untouched.
        assert_eq!(
            engine
                .store()
                .fire_status(live_fire.fire_id)
                .await
                .unwrap()
                .0,
            "running"
        );
        let history = engine.store().history(records[3].id).await.unwrap();
        assert!(history
            .iter()
            .any(|h| h.id == live_fire.id && h.end.outcome.is_none()));
        assert_eq!(
            scalar(
                &engine,
                "SELECT status FROM job_tasks WHERE id = $1",
                live_tasks[0].id
            )
            .await,
            "running"
        );
        assert_eq!(
            scalar(&engine, "SELECT owner FROM jobs WHERE id = $1", live_job.id).await,
            alive.owner
        );

        // The dead one's fire is closed and says why.
        assert_eq!(
            engine
                .store()
                .fire_status(in_flight.fire_id)
                .await
                .unwrap()
                .0,
            "interrupted"
        );
        let closed = engine
            .store()
            .history(tasks[1].record_id)
            .await
            .unwrap()
            .into_iter()
            .find(|h| h.id == in_flight.id)
            .unwrap();
        // Cut off during its call: the provider may have answered.
        assert_eq!(closed.end.outcome, Some(FireOutcome::Unknown));
        assert_eq!(closed.end.error.as_deref(), Some(INTERRUPTED));

        // The job runs to its end here. The fire that finished is not fired
        // again, nor is the interrupted one: its call may have been paid for,
        // so it ends as interrupted and only a person fires it again.
        let job = finished(&engine, dead_job.id, Duration::from_secs(20)).await;
        assert_eq!(job.status, JobStatus::Completed);
        assert_eq!(job.progress.done, 4);
        assert_eq!((job.found, job.errors), (3, 1), "{job:?}");
        assert_eq!(alpha.calls(), 2, "records 2 and 3 fire");
        assert_eq!(
            scalar(
                &engine,
                "SELECT outcome FROM job_tasks WHERE id = $1",
                tasks[1].id
            )
            .await,
            "interrupted"
        );
        let (done, repeated) = fires_of_job(&engine, dead_job.id).await;
        assert_eq!((done, repeated), (3, 0));
        assert_ne!(
            scalar(&engine, "SELECT owner FROM jobs WHERE id = $1", dead_job.id).await,
            dead.owner
        );
        // Another look takes nothing more: the live lease is still fresh.
        assert_eq!(engine.reclaim().await.unwrap().jobs, Vec::<i64>::new());
    }
}

#[tokio::test]
async fn a_fanout_keeps_as_many_requests_in_flight_as_the_rate_hint_allows_and_provokes_no_429() {
    for db in testing::all().await {
        eprintln!("-- on {}", db.kind());
        // 50 a second at 200 ms: Little's law says 10 in flight.
        let provider =
            FakeProvider::start(Behaviour::limited(Duration::from_millis(200), 50.0)).await;
        let engine = engine(&db, &["paced"], EngineConfig::default()).await;
        register_manifest(&engine, &provider.manifest("paced", "/search", Some(50.0)));
        let set = record_set(&engine, "Paced", 100).await;
        let job = fan_out(&engine, set).await;
        let job = finished(&engine, job.id, Duration::from_secs(60)).await;
        assert_eq!(job.found, 100, "{job:?}");
        assert_eq!(provider.counters.refused(), 0, "no 429 provoked");
        let most = provider.counters.most_in_flight();
        assert!(
            (5..=15).contains(&most),
            "more than the old four workers, within the window: {most}"
        );
        assert_eq!(fires_of_job(&engine, job.id).await, (100, 0));
    }
}

#[tokio::test]
async fn a_connector_without_a_rate_hint_gets_the_default_window() {
    for db in testing::all().await {
        eprintln!("-- on {}", db.kind());
        let provider = FakeProvider::start(Behaviour::unlimited(Duration::from_millis(100))).await;
        let engine = engine(&db, &["open"], EngineConfig::default()).await;
        register_manifest(&engine, &provider.manifest("open", "/search", None));
        let set = record_set(&engine, "Open", 80).await;
        let job = fan_out(&engine, set).await;
        let job = finished(&engine, job.id, Duration::from_secs(60)).await;
        assert_eq!(job.found, 80);
        let most = provider.counters.most_in_flight();
        let window = engine::execution::flow::FlowConfig::default().default_window as u64;
        assert!(
            (5..=window).contains(&most),
            "{most} in flight, window {window}"
        );
    }
}

#[tokio::test]
async fn a_provider_that_always_answers_429_is_walked_past_and_nothing_fires_twice() {
    for db in testing::all().await {
        eprintln!("-- on {}", db.kind());
        let refusing = FakeProvider::start(Behaviour::unlimited(Duration::ZERO)).await;
        let backup = FakeProvider::start(Behaviour::unlimited(Duration::from_millis(10))).await;
        let engine = engine(&db, &["refusing", "backup"], EngineConfig::default()).await;
        register_manifest(&engine, &refusing.manifest("refusing", "/limited", None));
        register_manifest(&engine, &backup.manifest("backup", "/search", None));
        let set = record_set(&engine, "Refused", 30).await;
        let job = fan_out(&engine, set).await;
        let job = finished(&engine, job.id, Duration::from_secs(30)).await;
        assert_eq!(job.found, 30, "{job:?}");
        assert_eq!(backup.counters.served(), 30, "each record once");
        assert_eq!(fires_of_job(&engine, job.id).await, (30, 0));
        let refused = refusing.counters.refused();
        assert!(
            (1..30).contains(&refused),
            "the 429 sets the connector aside for its Retry-After: {refused} tries"
        );
        assert_eq!(
            engine.registry().by_id("refusing").unwrap().status.kind(),
            "rate-limited"
        );
        assert_eq!(open_attempts(&engine).await, 0);
    }
}

#[tokio::test]
async fn a_fanout_waits_out_a_rate_limit_instead_of_ending_records_as_refused() {
    for db in testing::all().await {
        eprintln!("-- on {}", db.kind());
        // The manifest's hint is a little optimistic (25 a second); the
        // provider takes 20 (two at once) and answers 429 with
        // `Retry-After: 1` past that.
        let provider =
            FakeProvider::start(Behaviour::limited(Duration::from_millis(10), 20.0)).await;
        let engine = engine(&db, &["eager"], EngineConfig::default()).await;
        register_manifest(&engine, &provider.manifest("eager", "/search", Some(25.0)));
        let set = record_set(&engine, "Eager", 20).await;
        let job = fan_out(&engine, set).await;
        let job = finished(&engine, job.id, Duration::from_secs(60)).await;
        let refused = provider.counters.refused();
        eprintln!("refused {refused}, served {}", provider.counters.served());
        assert!(refused > 0, "the provider refused some");
        assert_eq!(job.found, 20, "every record found after all: {job:?}");
        assert_eq!(provider.counters.served(), 20, "each answered once");
        assert_eq!(fires_of_job(&engine, job.id).await, (20, 0));
        let waited: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM connector_history WHERE outcome = 'rate_limited'",
        )
        .fetch_one(engine.store().pool())
        .await
        .unwrap();
        assert_eq!(
            waited, refused as i64,
            "each refusal is an attempt of its fire"
        );
        assert_eq!(open_attempts(&engine).await, 0);
    }
}

#[tokio::test]
async fn a_hanging_provider_is_cut_at_the_timeout_never_asked_again_and_the_chain_goes_on() {
    for db in testing::all().await {
        eprintln!("-- on {}", db.kind());
        let hanging = FakeProvider::start(Behaviour::unlimited(Duration::ZERO)).await;
        let backup = FakeProvider::start(Behaviour::unlimited(Duration::ZERO)).await;
        let config = EngineConfig {
            dispatch: DispatchConfig {
                attempt_timeout: Duration::from_millis(300),
                // A retry budget that would ask a failing provider again.
                retry_budget: 2,
                ..DispatchConfig::default()
            },
            ..EngineConfig::default()
        };
        let engine = engine(&db, &["hanging", "backup"], config).await;
        register_manifest(&engine, &hanging.manifest("hanging", "/hang", None));
        register_manifest(&engine, &backup.manifest("backup", "/search", None));
        let set = record_set(&engine, "Hung", 3).await;
        let mut events = engine.events().subscribe();
        let job = fan_out(&engine, set).await;
        let job = finished(&engine, job.id, Duration::from_secs(30)).await;
        assert_eq!(job.found, 3);
        let records = engine.store().records(set, 0, 10).await.unwrap();
        // Viewers heard the chain walk on, each step once: the start, the
        // hanging attempt closed, the backup's opened, and the end.
        let news = fire_news_to_the_end(&mut events, records[0].id).await;
        let step = |connector: &str, outcome| vec![(connector.to_owned(), outcome)];
        assert_eq!(news.len(), 4, "{news:?}");
        assert_eq!(news[0], (step("hanging", None), 0, Some(ChipState::Firing)));
        assert_eq!(
            news[1],
            (step("hanging", Some(FireOutcome::Unknown)), 0, None)
        );
        assert_eq!(news[2], (step("backup", None), 0, None));
        assert_eq!(news[3].0, step("backup", Some(FireOutcome::Found)));
        assert!(news[3].1 > 0, "{news:?}");
        assert!(
            matches!(news[3].2, Some(ChipState::Found { .. })),
            "{news:?}"
        );
        for record in records {
            let history = engine.store().history(record.id).await.unwrap();
            // The call went out and no answer came: the provider may have
            // done it, so it is `unknown` and not made again.
            let cut: Vec<_> = history
                .iter()
                .filter(|h| h.connector_id == "hanging")
                .collect();
            assert_eq!(cut.len(), 1, "asked once: {cut:?}");
            assert_eq!(cut[0].end.outcome, Some(FireOutcome::Unknown));
            let said = cut[0].end.error.as_deref().unwrap();
            assert!(said.contains("no answer within"), "{said}");
            assert!(said.contains("listed for review"), "{said}");
            assert!(history
                .iter()
                .any(|h| h.connector_id == "backup" && h.end.outcome == Some(FireOutcome::Found)));
        }
        // Each is listed for review, with its record.
        let (workspace, _) = engine.store().ensure_workspace("test").await.unwrap();
        let listed = engine.store().unanswered(workspace, 100).await.unwrap();
        assert_eq!(listed.len(), 3);
        assert!(listed.iter().all(|u| u.attempt.connector_id == "hanging"
            && u.record_name.starts_with("Hung ")
            && u.record_set_id == set));
        let (other, _) = engine.store().ensure_workspace("other").await.unwrap();
        assert!(engine
            .store()
            .unanswered(other, 100)
            .await
            .unwrap()
            .is_empty());
        assert_eq!(open_attempts(&engine).await, 0);
    }
}

#[tokio::test]
async fn jobs_of_two_sets_share_a_connector_evenly() {
    for db in testing::all().await {
        eprintln!("-- on {}", db.kind());
        let engine = engine(&db, &["shared"], EngineConfig::default()).await;
        // 40 a second at 50 ms: a window of a few fires.
        scripted(
            &engine,
            "shared",
            Some(40.0),
            found_after(Duration::from_millis(50)),
        );
        let big = record_set(&engine, "Big", 80).await;
        let small = record_set(&engine, "Small", 10).await;
        let big_job = fan_out(&engine, big).await;
        let mut waited = Deadline::new("five fires of the big job");
        while engine.store().job(big_job.id).await.unwrap().progress.done < 5 {
            waited.tick().await;
        }
        let small_job = fan_out(&engine, small).await;
        let small_job = finished(&engine, small_job.id, Duration::from_secs(30)).await;
        assert_eq!(small_job.found, 10);
        let big_now = engine.store().job(big_job.id).await.unwrap();
        assert!(
            big_now.progress.done < 45,
            "the small job did not wait behind the big one: the big one had done {} of 80",
            big_now.progress.done
        );
        finished(&engine, big_job.id, Duration::from_secs(30)).await;
    }
}

#[tokio::test]
async fn a_persons_click_never_waits_behind_a_fanout_queue() {
    for db in testing::all().await {
        eprintln!("-- on {}", db.kind());
        let engine = engine(&db, &["slow"], EngineConfig::default()).await;
        // Five a second at a second each: a window of nine fires, about
        // four of them waiting for the throttle at any time, 200 ms apart.
        let slow = scripted(
            &engine,
            "slow",
            Some(5.0),
            found_after(Duration::from_secs(1)),
        );
        let queued = record_set(&engine, "Queued", 60).await;
        let clicked = record_set(&engine, "Clicked", 1).await;
        let person = engine.store().records(clicked, 0, 1).await.unwrap()[0].clone();
        let job = fan_out(&engine, queued).await;
        calls_reach(&slow, 8, "eight fan-out calls").await;
        let (in_flight, allowed) = engine.dispatcher().flow().window("slow").unwrap();
        assert!(
            in_flight >= 5,
            "the fan-out fills its window: {in_flight} of {allowed}"
        );
        let before = slow.calls();
        let report = engine
            .dispatcher()
            .fire(FireRequest::by_person(person.id, "web", None, "bo"))
            .await
            .unwrap();
        assert!(matches!(report.chip, ChipState::Found { .. }), "{report:?}");
        let position = slow
            .queries()
            .iter()
            .position(|q| q == &person.name)
            .unwrap();
        assert!(
            position <= before + 2,
            "the click went out at most two fires after it was made, not after the queue: \
             call {position}, clicked after call {before}"
        );
        engine.jobs().cancel(job.id).await.unwrap();
    }
}

#[tokio::test]
async fn cancelling_a_job_reaches_every_fire_in_flight_or_waiting() {
    for db in testing::all().await {
        eprintln!("-- on {}", db.kind());
        let engine = engine(&db, &["slow"], EngineConfig::default()).await;
        let slow = scripted(&engine, "slow", None, found_after(Duration::from_secs(30)));
        let set = record_set(&engine, "Cancelled", 40).await;
        let job = fan_out(&engine, set).await;
        let window = engine::execution::flow::FlowConfig::default().default_window;
        calls_reach(&slow, window, "a full window of calls").await;
        // The job waits for its next turn.
        let mut waited = Deadline::new("the job to wait for its next turn");
        while engine.dispatcher().flow().waiting("slow") != 1 {
            waited.tick().await;
        }
        let cancelled = engine.jobs().cancel(job.id).await.unwrap();
        assert_eq!(cancelled.status, JobStatus::Cancelled);
        engine.jobs().wait(job.id).await;
        assert_eq!(
            open_attempts(&engine).await,
            0,
            "every fire in flight ended"
        );
        let outcomes: Vec<(String, i64)> = sqlx::query_as(
            "SELECT outcome, COUNT(*) FROM connector_history GROUP BY outcome ORDER BY outcome",
        )
        .fetch_all(engine.store().pool())
        .await
        .unwrap();
        assert_eq!(outcomes, vec![("cancelled".to_owned(), window as i64)]);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(slow.calls(), window, "no fire starts after the cancel");
        let job = engine.store().job(job.id).await.unwrap();
        assert_eq!((job.progress.done, job.errors), (window as u64, 0));
        let pending: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM job_tasks WHERE job_id = $1 AND status = 'pending'",
        )
        .bind(job.id)
        .fetch_one(engine.store().pool())
        .await
        .unwrap();
        assert_eq!(
            pending,
            40 - window as i64,
            "what never fired is left pending"
        );
        assert_eq!(engine.dispatcher().flow().window("slow").unwrap().0, 0);
    }
}

/// Makes every insert into `items` fail (the first `times` only, on
/// PostgreSQL, whose sequences count outside transactions).
async fn break_items(engine: &Engine, times: Option<u32>) {
    let pool = engine.store().pool();
    match (engine.store().backend(), times) {
        (Backend::Sqlite, None) => {
            sqlx::query(
                "CREATE TRIGGER items_fail BEFORE INSERT ON items \
                 BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
            )
            .execute(pool)
            .await
            .unwrap();
        }
        (Backend::Sqlite, Some(_)) => unreachable!("SQLite keeps no count outside a transaction"),
        (Backend::Postgres, times) => {
            sqlx::query("CREATE SEQUENCE items_failures")
                .execute(pool)
                .await
                .unwrap();
            let limit = times.map_or(i64::MAX, i64::from);
            sqlx::query(&format!(
                "CREATE FUNCTION items_fail() RETURNS trigger AS $$ BEGIN \
                 IF nextval('items_failures') <= {limit} THEN RAISE EXCEPTION 'injected failure'; END IF; \
                 RETURN NEW; END $$ LANGUAGE plpgsql"
            ))
            .execute(pool)
            .await
            .unwrap();
            sqlx::query(
                "CREATE TRIGGER items_fail BEFORE INSERT ON items \
                 FOR EACH ROW EXECUTE FUNCTION items_fail()",
            )
            .execute(pool)
            .await
            .unwrap();
        }
    }
}

async fn mend_items(engine: &Engine) {
    let statements: &[&str] = match engine.store().backend() {
        Backend::Sqlite => &["DROP TRIGGER items_fail"],
        Backend::Postgres => &[
            "DROP TRIGGER items_fail ON items",
            "DROP FUNCTION items_fail()",
            "DROP SEQUENCE items_failures",
        ],
    };
    for sql in statements {
        sqlx::query(sql)
            .execute(engine.store().pool())
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

#[tokio::test]
async fn a_database_that_fails_mid_fire_is_retried_then_the_fire_ends_as_an_error() {
    for db in testing::all().await {
        eprintln!("-- on {}", db.kind());
        let engine = engine(&db, &["alpha"], EngineConfig::default()).await;
        let alpha = scripted(&engine, "alpha", None, vec![Step::Found(2)]);
        let set = record_set(&engine, "Broken", 2).await;
        let records = engine.store().records(set, 0, 10).await.unwrap();
        let mut events = engine.events().subscribe();

        break_items(&engine, None).await;
        let report = engine
            .dispatcher()
            .fire(FireRequest::by_person(records[0].id, "web", None, "ana"))
            .await
            .unwrap();
        assert_eq!(alpha.calls(), 1);
        let fire_id = report.fire_id.expect("the fire was opened");
        assert_eq!(
            engine.store().fire_status(fire_id).await.unwrap().0,
            "error"
        );
        let history = engine.store().history(records[0].id).await.unwrap();
        assert_eq!(history.len(), 1);
        assert_eq!(history[0].end.outcome, Some(FireOutcome::Error));
        assert!(history[0]
            .end
            .error
            .as_deref()
            .unwrap()
            .contains("database failed"));
        assert!(
            matches!(&report.chip, ChipState::Error { reason } if reason.contains("database failed"))
        );
        assert_eq!(open_attempts(&engine).await, 0);
        // Viewers saw it end too (on PostgreSQL through the database),
        // with the attempt the failure closed.
        let news = fire_news_to_the_end(&mut events, records[0].id).await;
        let (attempts, _, chip) = news.last().expect("news of its end");
        assert!(matches!(chip, Some(ChipState::Error { .. })), "{news:?}");
        assert!(
            attempts
                .iter()
                .any(|(_, outcome)| *outcome == Some(FireOutcome::Error)),
            "{news:?}"
        );
        mend_items(&engine).await;

        if engine.store().backend() == Backend::Postgres {
            // Two failures, then the third try of the same write succeeds.
            break_items(&engine, Some(2)).await;
            let report = engine
                .dispatcher()
                .fire(FireRequest::by_person(records[1].id, "web", None, "ana"))
                .await
                .unwrap();
            assert_eq!(report.chip, ChipState::Found { count: 2 }, "{report:?}");
            assert_eq!(engine.store().items(records[1].id).await.unwrap().len(), 2);
            mend_items(&engine).await;
        }
    }
}

#[tokio::test]
async fn a_stopping_process_hands_its_fanout_over_at_once() {
    for db in testing::all().await {
        eprintln!("-- on {}", db.kind());
        let first = engine(&db, &["alpha"], EngineConfig::default()).await;
        let slow = scripted(
            &first,
            "alpha",
            None,
            found_after(Duration::from_millis(300)),
        );
        let set = record_set(&first, "Handed", 40).await;
        let job = fan_out(&first, set).await;
        calls_reach(&slow, 5, "five calls").await;
        first.hand_over(Duration::from_secs(5)).await.unwrap();
        let started = slow.calls();
        assert!(started < 40, "it stopped claiming: {started} fires");
        assert_eq!(
            open_attempts(&first).await,
            0,
            "fires in flight ended first"
        );
        let handed = first.store().job(job.id).await.unwrap();
        assert_eq!(
            handed.status,
            JobStatus::Running,
            "not cancelled, not completed"
        );
        assert_eq!(handed.progress.done, started as u64);
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(
            slow.calls(),
            started,
            "nothing fires here after the hand-over"
        );

        // The next process takes it over at once, without waiting for a lease.
        let second = engine(&db, &["alpha"], EngineConfig::default()).await;
        let carried = scripted(&second, "alpha", None, vec![Step::Found(1)]);
        assert_eq!(second.reclaim().await.unwrap().jobs, vec![job.id]);
        let done = finished(&second, job.id, Duration::from_secs(30)).await;
        assert_eq!((done.status, done.found), (JobStatus::Completed, 40));
        assert_eq!(carried.calls() + started, 40, "no record fired twice");
        assert_eq!(fires_of_job(&second, job.id).await, (40, 0));
    }
}

#[tokio::test]
async fn a_taken_over_job_ends_only_when_the_tasks_another_process_held_are_done() {
    for db in testing::all().await {
        eprintln!("-- on {}", db.kind());
        let config = EngineConfig {
            leases: engine::execution::lease::LeaseConfig::new(
                Duration::from_millis(800),
                Duration::from_millis(100),
            )
            .unwrap(),
            ..EngineConfig::default()
        };
        let engine = engine(&db, &["alpha"], config).await;
        let alpha = scripted(&engine, "alpha", None, vec![Step::Found(1)]);
        let set = record_set(&engine, "Held", 3).await;
        let now = engine.clock().now_ms();
        let dead = Lease {
            owner: "crashed-host/1/0",
            until: now - 1,
        };
        let job = engine
            .store()
            .create_job(&NewJob::fanout(set, &["web".to_owned()], "ana"), dead)
            .await
            .unwrap();
        // The dead process's task: its own lease ran out, but the fire it
        // opened last carries a fresher one.
        let held = engine.store().claim_tasks(job.id, 1, dead).await.unwrap();
        let fresher = Lease {
            owner: dead.owner,
            until: now + 600,
        };
        open(&engine, context(held[0].record_id, Some(job.id)), fresher).await;

        let reclaimed = engine.recover().await.unwrap();
        assert_eq!(reclaimed.jobs, vec![job.id]);
        assert_eq!(reclaimed.tasks, 0, "its fire still runs under a live lease");
        calls_reach(&alpha, 2, "the two free tasks").await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            engine.store().job(job.id).await.unwrap().status,
            JobStatus::Running,
            "not done while a task is held"
        );

        // Once that lease runs out, the fire is closed, its task ends as
        // interrupted (not fired again: its call may have been paid for),
        // and only then is the job done.
        let done = finished(&engine, job.id, Duration::from_secs(30)).await;
        assert_eq!((done.status, done.progress.done), (JobStatus::Completed, 3));
        assert_eq!((done.found, done.errors), (2, 1));
        assert_eq!(alpha.calls(), 2);
        assert_eq!(open_attempts(&engine).await, 0);
        engine.stop_heartbeat();
    }
}
