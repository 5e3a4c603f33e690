//! A fan-out against a provider with real latency and a real rate limit: a
//! local HTTP server that answers every search after a fixed latency and
//! keeps a token bucket, answering 429 with `Retry-After` when a request
//! finds it empty. The records go through a manifest connector whose
//! `rate_hints.per_second` equals the bucket's rate, as an operator who read
//! the provider's documentation would write it.
//!
//! Reports the wall time of the job as a ratio to the ideal
//! (`records / rate`), and how many 429s the engine provoked.
//!
//! ```sh
//! cargo bench -p engine --features test-support --bench fanout_provider            # both scenarios
//! cargo bench -p engine --features test-support --bench fanout_provider -- 10000 50 200   # records latency-ms rate
//! ```

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::provider::{Behaviour, FakeProvider};
use engine::store::testing;
use engine::store::NewJob;
use engine::EngineConfig;

async fn scenario(records: usize, latency_ms: u64, rate: f64) {
    let db = testing::sqlite();
    let provider =
        FakeProvider::start(Behaviour::limited(Duration::from_millis(latency_ms), rate)).await;
    let engine = common::engine(&db, &["provider"], EngineConfig::default()).await;
    common::register_manifest(
        &engine,
        &provider.manifest("provider", "/search", Some(rate)),
    );
    let set = common::record_set(&engine, "Company", records).await;

    let started = Instant::now();
    let job = engine
        .jobs()
        .start(&NewJob::fanout(set, &["web".to_owned()], "bench"))
        .await
        .expect("job");
    let job = common::finished(&engine, job.id, Duration::from_secs(86_400)).await;
    let wall = started.elapsed().as_secs_f64();
    let ideal = records as f64 / rate;
    println!(
        "{records} records, {latency_ms} ms latency, {rate}/s hint and bucket: {:.1} s against the ideal {ideal:.1} s = ratio {:.3}; \
         {} found, {} errors; provider served {}, answered 429 {} times, most in flight {}",
        wall,
        wall / ideal,
        job.found,
        job.errors,
        provider.counters.served(),
        provider.counters.refused(),
        provider.counters.most_in_flight(),
    );
}

#[tokio::main]
async fn main() {
    // `cargo bench` passes --bench; numbers after `--` choose one scenario.
    let numbers: Vec<f64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    match numbers[..] {
        [records, latency_ms, rate] => scenario(records as usize, latency_ms as u64, rate).await,
        _ => {
            scenario(10_000, 50, 200.0).await;
            scenario(4_000, 1_500, 20.0).await;
        }
    }
}
