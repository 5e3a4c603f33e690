//! Engines sharing one PostgreSQL database, as `switchyard serve` processes
//! of one deployment do (each engine has its own pool and its own listening
//! connection; they share this benchmark's OS process and its two cores):
//!
//! 1. Event delivery: one engine publishes events at a steady pace, another
//!    receives them through the database (`LISTEN/NOTIFY`, then a read by
//!    id); reports the latency from publish to receipt, p50, p99 and max.
//! 2. Fan-out throughput with no rate hint against a local provider that
//!    answers at once: fires a second of one engine alone, and of three
//!    engines each running its own fan-out at the same time.
//!
//! ```sh
//! ./scripts/with-postgres.sh cargo bench -p engine --features test-support --bench processes
//! ```

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::provider::{Behaviour, FakeProvider};
use engine::store::testing::{self, TestDatabase};
use engine::{Engine, EngineConfig};
use model::EventKind;

const EVENTS: usize = 2_000;
const EVERY: Duration = Duration::from_millis(2);
const RECORDS: usize = 1_500;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn event_latency(db: &TestDatabase) {
    let a = common::engine(db, &[], EngineConfig::default()).await;
    let b = common::engine(db, &[], EngineConfig::default()).await;
    a.events().listening().await;
    b.events().listening().await;
    let mut heard = b.events().subscribe();
    let receiver = tokio::spawn(async move {
        let mut at = HashMap::with_capacity(EVENTS);
        while at.len() < EVENTS {
            let Ok(event) = heard.recv().await else { break };
            if let EventKind::ConnectorRemoved { id } = &event.kind {
                if let Ok(n) = id.parse::<usize>() {
                    at.insert(n, Instant::now());
                }
            }
        }
        at
    });
    let mut sent = Vec::with_capacity(EVENTS);
    let mut every = tokio::time::interval(EVERY);
    for n in 0..EVENTS {
        every.tick().await;
        sent.push(Instant::now());
        a.events()
            .publish(None, EventKind::ConnectorRemoved { id: n.to_string() });
    }
    let received = receiver.await.expect("the receiver");
    let mut latencies: Vec<Duration> = (0..EVENTS)
        .filter_map(|n| received.get(&n).map(|at| at.duration_since(sent[n])))
        .collect();
    latencies.sort();
    println!(
        "event delivery between two engines on one PostgreSQL, {EVENTS} events one every {EVERY:?}: \
         received {}, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        latencies.len(),
        percentile(&latencies, 0.50).as_secs_f64() * 1000.0,
        percentile(&latencies, 0.99).as_secs_f64() * 1000.0,
        latencies.last().copied().unwrap_or_default().as_secs_f64() * 1000.0,
    );
}

async fn fan_outs(db: &TestDatabase, processes: usize) -> f64 {
    let provider = FakeProvider::start(Behaviour::unlimited(Duration::ZERO)).await;
    let mut engines: Vec<(Engine, i64)> = Vec::new();
    for p in 0..processes {
        let engine = common::engine(db, &["open"], EngineConfig::default()).await;
        common::register_manifest(&engine, &provider.manifest("open", "/search", None));
        let set = common::record_set(&engine, &format!("Process {p}"), RECORDS).await;
        engines.push((engine, set));
    }
    let started = Instant::now();
    let mut jobs = Vec::new();
    for (engine, set) in &engines {
        jobs.push(common::fan_out(engine, *set).await.id);
    }
    for ((engine, _), job) in engines.iter().zip(jobs) {
        let job = common::finished(engine, job, Duration::from_secs(3600)).await;
        assert_eq!(job.found as usize, RECORDS, "{job:?}");
    }
    let rate = (RECORDS * processes) as f64 / started.elapsed().as_secs_f64();
    println!(
        "{processes} engine(s), each fanning {RECORDS} records out at once, no rate hint, provider answering at once: {rate:.0} fires/s in all"
    );
    rate
}

#[tokio::main]
async fn main() {
    let Some(db) = testing::postgres().await else {
        eprintln!("Set SWITCHYARD_TEST_POSTGRES_URL (or run under ./scripts/with-postgres.sh).");
        return;
    };
    event_latency(&db).await;
    let one = fan_outs(&testing::postgres().await.expect("a database"), 1).await;
    let three = fan_outs(&testing::postgres().await.expect("a database"), 3).await;
    println!(
        "three engines against one: {:.2} times the fires a second",
        three / one
    );
}
