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

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use engine::connectors::guard::AllowList;
use engine::import::{parse_csv, ImportLimits};
use engine::manifest::{Format, Manifest, ManifestConnector};
use engine::packs::Catalog;
use engine::store::testing;
use engine::store::Store;
use engine::{Engine, EngineConfig};
use model::JobStatus;
use serde_json::json;

/// The fake provider: its latency, its bucket and what it saw.
struct Provider {
    latency: Duration,
    rate: f64,
    burst: f64,
    bucket: Mutex<(f64, Instant)>,
    served: AtomicU64,
    refused: AtomicU64,
    /// Requests in flight now, and the most ever.
    in_flight: AtomicU64,
    most_in_flight: AtomicU64,
}

impl Provider {
    /// Takes a token if the bucket has one.
    fn take(&self) -> bool {
        let mut bucket = self.bucket.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let refill = now.duration_since(bucket.1).as_secs_f64() * self.rate;
        bucket.0 = (bucket.0 + refill).min(self.burst);
        bucket.1 = now;
        if bucket.0 >= 1.0 {
            bucket.0 -= 1.0;
            true
        } else {
            false
        }
    }
}

async fn search(
    State(provider): State<Arc<Provider>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if !provider.take() {
        provider.refused.fetch_add(1, Ordering::Relaxed);
        let mut res = (StatusCode::TOO_MANY_REQUESTS, "slow down").into_response();
        res.headers_mut()
            .insert("retry-after", HeaderValue::from_static("1"));
        return res;
    }
    let now = provider.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
    provider.most_in_flight.fetch_max(now, Ordering::Relaxed);
    tokio::time::sleep(provider.latency).await;
    provider.in_flight.fetch_sub(1, Ordering::Relaxed);
    provider.served.fetch_add(1, Ordering::Relaxed);
    let query = q.get("q").cloned().unwrap_or_default();
    let slug: String = query
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    Json(json!({
        "hits": [{ "link": format!("https://provider.test/{slug}"), "name": query }]
    }))
    .into_response()
}

async fn start_provider(latency: Duration, rate: f64) -> (String, Arc<Provider>) {
    // A tenth of a second's worth of burst: real providers count over a
    // window, so requests that arrive a little early are not all refused.
    let burst = (rate / 10.0).max(2.0);
    let provider = Arc::new(Provider {
        latency,
        rate,
        burst,
        bucket: Mutex::new((burst, Instant::now())),
        served: AtomicU64::new(0),
        refused: AtomicU64::new(0),
        in_flight: AtomicU64::new(0),
        most_in_flight: AtomicU64::new(0),
    });
    let app = axum::Router::new()
        .route("/search", get(search))
        .with_state(provider.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a local port");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await.expect("provider") });
    (url, provider)
}

const PACKS: &str = r#"
[[pack]]
pack_id = "web"
display_name = "Web"
short_label = "w"
intent = "search.web"
preferred_connectors = ["provider"]

[[bundle]]
bundle_id = "bench"
display_name = "Bench"
members = [{ pack = "web" }]
"#;

fn manifest(base: &str, rate: f64) -> String {
    format!(
        r#"
id = "provider"
display_name = "Fake provider"
short_label = "FP"
capabilities = ["search.web"]
cost_tier = "free"
rate_hints = {{ per_second = {rate:.1} }}

[request]
url = "{base}/search"
query = {{ q = "{{{{query}}}}" }}

[response]
items = "$.hits[*]"
url = "$.link"
title = "$.name"
"#
    )
}

async fn scenario(records: usize, latency_ms: u64, rate: f64) {
    let db = testing::sqlite();
    let (base, provider) = start_provider(Duration::from_millis(latency_ms), rate).await;
    let store = Store::connect(&db.url).await.expect("database");
    let engine = Engine::new(
        store,
        Catalog::from_toml(PACKS).expect("packs"),
        None,
        EngineConfig::default(),
    );
    let manifest = Manifest::parse(&manifest(&base, rate), Format::Toml).expect("manifest");
    let registration = manifest.registration();
    engine
        .registry
        .register(
            registration,
            Arc::new(ManifestConnector::new(
                Arc::new(manifest),
                AllowList::parse("127.0.0.1"),
                Arc::new(|_| None),
            )),
        )
        .expect("register");
    let mut csv = String::from("name\n");
    for i in 0..records {
        csv.push_str(&format!("Company {i}\n"));
    }
    let limits = ImportLimits {
        max_records: records.max(1),
        ..ImportLimits::default()
    };
    let parsed = parse_csv(csv.as_bytes(), limits).expect("csv");
    let (workspace, _) = engine
        .store
        .ensure_workspace("bench")
        .await
        .expect("workspace");
    let set = engine
        .store
        .create_record_set(workspace, "Bench", "bench", false, &parsed.records)
        .await
        .expect("set");

    let started = Instant::now();
    let job = engine
        .jobs
        .start(set, &["web".to_owned()], "bench")
        .await
        .expect("job");
    let job = loop {
        let job = engine.store.job(job.id).await.expect("job");
        if job.status != JobStatus::Running {
            break job;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let wall = started.elapsed().as_secs_f64();
    let ideal = records as f64 / rate;
    println!(
        "{records} records, {latency_ms} ms latency, {rate}/s hint and bucket: {:.1} s against the ideal {ideal:.1} s = ratio {:.3}; \
         {} found, {} errors; provider served {}, answered 429 {} times, most in flight {}",
        wall,
        wall / ideal,
        job.found,
        job.errors,
        provider.served.load(Ordering::Relaxed),
        provider.refused.load(Ordering::Relaxed),
        provider.most_in_flight.load(Ordering::Relaxed),
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
            scenario(2_000, 1_500, 20.0).await;
        }
    }
}
