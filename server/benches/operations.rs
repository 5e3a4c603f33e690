//! What an operator's deployment of several processes on one PostgreSQL
//! sees: how long a change made through one process takes to serve on
//! another, and how fast requests answer while the database is away.
//! Two servers in this process (as two processes: each has its own store,
//! registry and caches) on one PostgreSQL database; the second reaches it
//! through a proxy the benchmark cuts and restores.
//!
//! - Change: a workspace manifest saved through A (a new display name each
//!   round) until B's `GET /api/connectors` lists it, polled every 10 ms.
//! - Outage: with the proxy cut, how long `GET /api/ready` and a REST read
//!   (`GET /api/record-sets`) take to answer 503; then, restored, how long
//!   until `/api/ready` answers 200 again.
//!
//! ```sh
//! ./scripts/with-postgres.sh cargo bench -p server --bench operations
//! OPERATIONS_ROUNDS=100 ./scripts/with-postgres.sh cargo bench -p server --bench operations
//! ```

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "common/measure.rs"]
mod measure;

use std::time::{Duration, Instant};

use common::outage::Outage;
use common::{news_manifest, TestServer};
use measure::{percentile, setting};

/// Whether `server` lists connector `id` named `name`.
async fn lists(server: &TestServer, id: &str, name: &str) -> bool {
    let (_, listed) = server.get_json("/api/connectors").await;
    listed.as_array().is_some_and(|all| {
        all.iter()
            .any(|c| c["id"] == id && c["display_name"] == name)
    })
}

/// How long `GET path` takes to answer, and its status.
async fn timed(server: &TestServer, path: &str) -> (Duration, u16) {
    let started = Instant::now();
    let status = server
        .client
        .get(server.at(path))
        .send()
        .await
        .map_or(0, |r| r.status().as_u16());
    (started.elapsed(), status)
}

fn report(what: &str, mut took: Vec<Duration>) {
    took.sort();
    println!(
        "{what}: n={} p50={:?} p99={:?} max={:?}",
        took.len(),
        percentile(&took, 0.5),
        percentile(&took, 0.99),
        took.last().copied().unwrap_or_default()
    );
}

async fn change_reaches_the_other_process(a: &TestServer, b: &TestServer, rounds: u64) {
    let mut took = Vec::new();
    for round in 0..rounds {
        let name = format!("Own news {round}");
        a.save_manifest(&news_manifest(
            "own-news",
            &name,
            "http://127.0.0.1:9/news",
            None,
        ))
        .await;
        let saved = Instant::now();
        while !lists(b, "own-news", &name).await {
            assert!(saved.elapsed() < Duration::from_secs(30), "never reached B");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        took.push(saved.elapsed());
    }
    report("a saved manifest serving on the other process", took);
}

async fn answers_during_an_outage(b: &TestServer, outage: &Outage, rounds: u64) {
    outage.cut();
    let (mut ready, mut read) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (took, status) = timed(b, "/api/ready").await;
        assert_eq!(status, 503);
        ready.push(took);
        let (took, status) = timed(b, "/api/record-sets").await;
        assert_eq!(status, 503);
        read.push(took);
        // Under the token's 100 requests a second.
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    report("/api/ready answering 503 while the database is away", ready);
    report("a REST read answering 503 while the database is away", read);
    outage.restore();
    let back = Instant::now();
    while timed(b, "/api/ready").await.1 != 200 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    println!(
        "ready again {:?} after the database returned",
        back.elapsed()
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let Some(db) = engine::store::testing::postgres().await else {
        println!("operations: set SWITCHYARD_TEST_POSTGRES_URL (./scripts/with-postgres.sh)");
        return;
    };
    let rounds = setting("OPERATIONS_ROUNDS", 40);
    let outage = Outage::in_front_of(db.server_addr().expect("a server")).await;
    let a = TestServer::start_on(db.shared().expect("PostgreSQL")).await;
    let b = TestServer::start_on(db.through(outage.addr).expect("PostgreSQL")).await;
    change_reaches_the_other_process(&a, &b, rounds).await;
    answers_during_an_outage(&b, &outage, rounds).await;
    a.stop().await;
    b.stop().await;
}
