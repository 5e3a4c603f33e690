//! Engines on one PostgreSQL database behave as processes of one
//! deployment: every event reaches all in the same id order, a stream
//! resumes on any with another's ids, all see every viewer, and a rate hint
//! holds for all of them together. (SQLite is one process: its bus is
//! tested in `engine::live::events`.)

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::provider::{Behaviour, FakeProvider};
use common::{engine, fan_out, finished, record_set, register_manifest, scripted, Deadline};
use engine::connectors::scripted::Step;
use engine::execution::dispatch::FireRequest;
use engine::store::testing;
use engine::EngineConfig;
use model::ConnectorStatus;
use model::{Event, EventKind};
use tokio::sync::broadcast;

/// The next `n` events a subscriber receives, within 5 s.
async fn receive(rx: &mut broadcast::Receiver<Arc<Event>>, n: usize) -> Vec<Arc<Event>> {
    let mut got = Vec::new();
    while got.len() < n {
        let event = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap_or_else(|_| panic!("{} of {n} events within 5 s: {got:?}", got.len()))
            .expect("the bus stays open");
        got.push(event);
    }
    got
}

fn marked(n: i64) -> EventKind {
    EventKind::ConnectorRemoved {
        id: format!("marker-{n}"),
    }
}

#[tokio::test]
async fn every_process_delivers_every_event_in_one_id_order_and_resumes_the_others_streams() {
    let Some(db) = testing::postgres().await else {
        return;
    };
    let a = engine(&db, &[], EngineConfig::default()).await;
    let b = engine(&db, &[], EngineConfig::default()).await;
    assert!(a.events().is_shared() && b.events().is_shared());
    a.events().listening().await;
    b.events().listening().await;
    let mut on_a = a.events().subscribe();
    let mut on_b = b.events().subscribe();
    a.events().publish(Some(1), marked(0));
    b.events().publish(Some(1), marked(0));
    receive(&mut on_a, 2).await;
    receive(&mut on_b, 2).await;

    // Both publish at once, interleaved.
    for n in 1..=100 {
        a.events().publish(Some(1), marked(n));
        b.events().publish_in(Some(7), marked(-n));
    }
    let heard_on_a = receive(&mut on_a, 200).await;
    let heard_on_b = receive(&mut on_b, 200).await;
    let ids = |events: &[Arc<Event>]| events.iter().map(|e| e.id).collect::<Vec<_>>();
    assert_eq!(ids(&heard_on_a), ids(&heard_on_b), "one order everywhere");
    assert!(
        ids(&heard_on_a).windows(2).all(|w| w[1] == w[0] + 1),
        "ids grow by one with no gap: {:?}",
        ids(&heard_on_a)
    );
    assert_eq!(heard_on_a, heard_on_b, "the same events, fields and all");
    // Each process's own events keep their order.
    let from_a: Vec<EventKind> = heard_on_b
        .iter()
        .filter(|e| e.record_set_id == Some(1))
        .map(|e| e.kind.clone())
        .collect();
    assert_eq!(from_a, (1..=100).map(marked).collect::<Vec<_>>());
    assert!(heard_on_b
        .iter()
        .filter(|e| e.workspace_id == Some(7))
        .all(|e| e.record_set_id.is_none()));

    // A stream that saw event k on A resumes on B (and on a process that
    // has just started, which keeps nothing in memory).
    let k = heard_on_a[49].id;
    let c = engine(&db, &[], EngineConfig::default()).await;
    for bus in [&b.events(), &c.events()] {
        let missed = bus.since(k).await.expect("every later event is kept");
        assert_eq!(ids(&missed), ids(&heard_on_a[50..]));
    }
    let last = heard_on_a.last().unwrap().id;
    assert_eq!(c.events().since(last).await.map(|e| e.len()), Some(0));
    assert!(
        c.events().since(last + 1_000).await.is_none(),
        "an id never given out asks for a resync"
    );
    assert_eq!(c.events().prune().await.unwrap(), 0, "nothing is old yet");
}

#[tokio::test]
async fn every_process_sees_every_viewer_and_a_dead_process_s_viewers_go() {
    let Some(db) = testing::postgres().await else {
        return;
    };
    let short = EngineConfig {
        leases: engine::execution::lease::LeaseConfig::new(
            Duration::from_millis(600),
            Duration::from_millis(200),
        )
        .unwrap(),
        ..EngineConfig::default()
    };
    let a = engine(&db, &[], short.clone()).await;
    let b = engine(&db, &[], short).await;
    let mut on_b = b.events().subscribe();
    a.events().listening().await;
    b.events().listening().await;
    let ada = a.presence().join(3, "ada@example.org").await;
    let bob = b.presence().join(3, "bob@example.org").await;
    let _bob_elsewhere = b.presence().join(4, "bob@example.org").await;
    let both = vec!["ada@example.org".to_owned(), "bob@example.org".to_owned()];
    assert_eq!(a.presence().viewers(3).await.unwrap(), both);
    assert_eq!(b.presence().viewers(3).await.unwrap(), both);
    // Bob's own arrival, as B published it, names Ada on A too.
    let heard = receive(&mut on_b, 3).await;
    assert!(
        heard
            .iter()
            .any(|e| e.record_set_id == Some(3) && e.kind == EventKind::presence(both.clone())),
        "{heard:?}"
    );

    drop(bob);
    let mut left = Deadline::new("Bob to leave set 3");
    while a.presence().viewers(3).await.unwrap() != ["ada@example.org"] {
        left.tick().await;
    }

    // A stops renewing (it died): once its rows' time is past, B's
    // heartbeat drops them and tells set 3's viewers.
    let _ada_kept_open = ada;
    b.recover().await.unwrap();
    let mut gone = Deadline::new("Ada's rows to expire");
    loop {
        let event = tokio::time::timeout(Duration::from_secs(5), on_b.recv())
            .await
            .expect("a presence event within 5 s")
            .unwrap();
        if event.record_set_id == Some(3) && event.kind == EventKind::presence(vec![]) {
            break;
        }
        gone.tick().await;
    }
    assert_eq!(
        b.presence().viewers(4).await.unwrap(),
        ["bob@example.org"],
        "a live process keeps its viewers"
    );
    b.stop_heartbeat();
}

#[tokio::test]
async fn a_rate_hint_holds_for_every_process_together() {
    let Some(db) = testing::postgres().await else {
        return;
    };
    // 20 a second for the whole deployment; the provider refuses beyond.
    // Its bucket holds a fifth of a second's worth: on this 2-core machine
    // (three engines, PostgreSQL) a request reserved for its time can be
    // scheduled 100 to 200 ms late and arrive with the next ones (a run
    // under `make test` saw two 429s from a bucket of two). The pacing
    // itself is the count per second below.
    const HINT: f64 = 20.0;
    const LATE: f64 = HINT / 5.0;
    let provider = FakeProvider::start(Behaviour {
        burst: LATE,
        ..Behaviour::limited(Duration::from_millis(50), HINT)
    })
    .await;
    let mut processes = Vec::new();
    for p in 0..3 {
        let engine = engine(&db, &["paced"], EngineConfig::default()).await;
        register_manifest(&engine, &provider.manifest("paced", "/search", Some(HINT)));
        let set = record_set(&engine, &format!("Process {p}"), 30).await;
        processes.push((engine, set));
    }
    let mut jobs = Vec::new();
    for (engine, set) in &processes {
        jobs.push(fan_out(engine, *set).await.id);
    }
    for ((engine, _), job) in processes.iter().zip(jobs) {
        let job = finished(engine, job, Duration::from_secs(60)).await;
        assert_eq!(job.found, 30, "{job:?}");
    }
    assert_eq!(provider.counters.refused(), 0, "no 429 provoked");
    // Counted where they arrive: a request reserved for its slot may arrive
    // up to a fifth of a second late, together with the next ones on time
    // (CI saw 22 in one second), which is what the bucket above absorbs.
    // Three processes without the shared rate would send about 60.
    let most = provider.counters.most_in_any_second();
    eprintln!("most requests in one second: {most}");
    assert!(
        most as f64 <= HINT * 1.05 + LATE,
        "at most the hint, 5 % and what arrives late in any second: {most}"
    );
    assert!(
        provider
            .counters
            .calls_per_query()
            .values()
            .all(|n| *n == 1),
        "every record fired once"
    );
}

#[tokio::test]
async fn a_connector_s_health_holds_for_every_process_and_survives_a_restart() {
    for db in testing::all().await {
        eprintln!("-- on {}", db.kind());
        let a = engine(&db, &["alpha", "beta"], EngineConfig::default()).await;
        scripted(&a, "alpha", None, vec![Step::Found(1)]);
        scripted(&a, "beta", None, vec![Step::Found(1)]);
        let set = record_set(&a, "Health", 2).await;
        let records = a.store().records(set, 0, 10).await.unwrap();

        // Process A meets a rate limit for a minute, and a person switches
        // beta off there.
        a.registry()
            .mark_rate_limited("alpha", Duration::from_secs(60), "HTTP 429")
            .await;
        a.registry()
            .disable("beta", "ana", "too dear")
            .await
            .unwrap();

        if db.kind() == "postgres" {
            // Process B, running already, adopts both within a second, and
            // its fires walk past them.
            let b = engine(&db, &["alpha", "beta"], EngineConfig::default()).await;
            let alpha_on_b = scripted(&b, "alpha", None, vec![Step::Found(1)]);
            scripted(&b, "beta", None, vec![Step::Found(1)]);
            let mut adopted = Deadline::new("B to adopt A's connector health");
            loop {
                b.registry().adopt_shared_health().await;
                let kind = |id| b.registry().by_id(id).unwrap().status.kind();
                if kind("alpha") == "rate-limited" && kind("beta") == "disabled" {
                    break;
                }
                adopted.tick().await;
            }
            let report = b
                .dispatcher()
                .fire(FireRequest::by_person(records[0].id, "web", None, "bo"))
                .await
                .unwrap();
            assert_eq!(alpha_on_b.calls(), 0, "{report:?}");
            assert_eq!(report.skipped.len(), 2, "{report:?}");
            // B switches beta back on; A follows.
            b.registry().enable("beta", "bo").await.unwrap();
            let mut followed = Deadline::new("A to follow B's switch");
            loop {
                a.registry().adopt_shared_health().await;
                if a.registry().by_id("beta").unwrap().status == ConnectorStatus::Available {
                    break;
                }
                followed.tick().await;
            }
            a.registry()
                .disable("beta", "ana", "too dear")
                .await
                .unwrap();
        }

        // A restart (a new engine on the same database) keeps both.
        drop(a);
        let again = engine(&db, &["alpha", "beta"], EngineConfig::default()).await;
        scripted(&again, "alpha", None, vec![Step::Found(1)]);
        scripted(&again, "beta", None, vec![Step::Found(1)]);
        again.registry().load_health().await.unwrap();
        assert!(matches!(
            again.registry().by_id("alpha").unwrap().status,
            ConnectorStatus::RateLimited { .. }
        ));
        assert_eq!(
            again.registry().by_id("beta").unwrap().status,
            ConnectorStatus::Disabled {
                reason: "too dear".into()
            }
        );

        // The operator clears the rate limit (`switchyard connector clear`):
        // every process follows.
        let cleared = again.clear_connector_health("alpha").await.unwrap();
        assert!(matches!(cleared, Some(ConnectorStatus::RateLimited { .. })));
        again.registry().load_health().await.unwrap();
        assert_eq!(
            again.registry().by_id("alpha").unwrap().status,
            ConnectorStatus::Available
        );
        assert_eq!(again.clear_connector_health("alpha").await.unwrap(), None);
    }
}

#[tokio::test]
async fn a_fanout_cancelled_through_another_process_stops_within_a_second_or_two() {
    let Some(db) = testing::postgres().await else {
        return;
    };
    // The owner's heartbeat is ten seconds away: the cancel must not wait for it.
    let owner = engine(&db, &["alpha"], EngineConfig::default()).await;
    let alpha = scripted(
        &owner,
        "alpha",
        Some(20.0),
        vec![Step::Delay(
            Duration::from_millis(20),
            Box::new(Step::Found(1)),
        )],
    );
    owner.recover().await.unwrap();
    let other = engine(&db, &["alpha"], EngineConfig::default()).await;
    let set = record_set(&owner, "Long", 400).await;
    let job = fan_out(&owner, set).await;
    let mut started = Deadline::new("the fan-out to start");
    while alpha.calls() < 10 {
        started.tick().await;
    }
    let cancelled = other.jobs().cancel(job.id).await.unwrap();
    assert_eq!(cancelled.status, model::JobStatus::Cancelled);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after = alpha.calls();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(alpha.calls(), after, "the owner stopped firing");
    assert!(
        after < 100,
        "{after} calls: it stopped long before its heartbeat"
    );
    owner.stop_heartbeat();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_is_cancelled_through_any_process_and_one_whose_process_died_is_lost_within_its_lease(
) {
    use model::{CallRequest, EnvelopeStatus, Role};
    let Some(db) = testing::postgres().await else {
        return;
    };
    let config = || EngineConfig {
        leases: engine::execution::lease::LeaseConfig::new(
            Duration::from_secs(2),
            Duration::from_millis(500),
        )
        .unwrap(),
        ..EngineConfig::default()
    };
    let a = engine(&db, &["alpha"], config()).await;
    let b = engine(&db, &["alpha"], config()).await;
    a.recover().await.unwrap();
    b.recover().await.unwrap();
    let slow = vec![Step::Delay(
        Duration::from_secs(60),
        Box::new(Step::Found(1)),
    )];
    let on_a = scripted(&a, "alpha", None, slow.clone());
    scripted(&b, "alpha", None, slow);
    let added = a
        .add_user("ana@example.org", "calls", Role::Admin, None)
        .await
        .unwrap();
    let who = a.default_principal(added.user_id).await.unwrap().unwrap();
    let ask = || CallRequest {
        query: "acme".to_owned(),
        max_results: None,
        connector: None,
        run_async: true,
    };

    // Walking on A, cancelled through B: A stops it and writes its end.
    let id = a
        .call_capability(&who, "search.web", ask())
        .await
        .unwrap()
        .job_id
        .unwrap();
    let mut asked = Deadline::new("the call to reach its connector");
    while on_a.calls() < 1 {
        asked.tick().await;
    }
    let cancelled = b.cancel_call(&who, id).await.unwrap();
    assert_eq!(cancelled.status, EnvelopeStatus::Cancelled, "{cancelled:?}");
    let stored = b.store().call(id).await.unwrap();
    assert!(stored.finished_at.is_some(), "A wrote the end: {stored:?}");
    assert!(
        b.cancel_call(&who, id).await.is_err(),
        "an ended call is a conflict"
    );

    // Walking on A when A dies (its heartbeat stops): once its lease has
    // lapsed, the call reads as lost on B; not 15 minutes later.
    let id = a
        .call_capability(&who, "search.web", ask())
        .await
        .unwrap()
        .job_id
        .unwrap();
    while on_a.calls() < 2 {
        asked.tick().await;
    }
    a.stop_heartbeat();
    let read = b.call_envelope(&who, id).await.unwrap();
    assert_eq!(read.status, EnvelopeStatus::Pending, "{read:?}");
    b.clock().advance(Duration::from_secs(3));
    let read = b.call_envelope(&who, id).await.unwrap();
    assert_eq!(read.status, EnvelopeStatus::Failed, "{read:?}");
    assert!(read.error.unwrap_or_default().contains("lost"));
    b.stop_heartbeat();
}
