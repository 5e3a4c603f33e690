//! A local fake provider with real latency and a real rate limit, for
//! tests and benchmarks: `/search?q=` answers one hit per query after a
//! fixed latency, within a token bucket that answers 429 with `Retry-After`
//! when a request finds it empty, finds nothing for a query starting with
//! `none`, and refuses a query starting with `bad` with 400 (the query's
//! own fault, echoed as providers do); `/limited`
//! always answers 429, `/broken` always 503, `/hang` never answers, `/heavy`
//! answers after two seconds with the largest answer a manifest may read
//! (about 190,000 JSON values). It counts what it served, what it refused
//! and how many requests it had in flight at most.
#![allow(dead_code)] // each test binary uses a different part of it

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use serde_json::json;

/// How the provider behaves.
#[derive(Clone, Copy, Debug)]
pub struct Behaviour {
    /// How long every answer takes.
    pub latency: Duration,
    /// The bucket's refill rate per second; `None`: no limit.
    pub rate: Option<f64>,
    /// The bucket's size: how many requests may come at once after a pause.
    pub burst: f64,
}

impl Behaviour {
    /// `latency` per answer and a bucket of `rate` per second holding a
    /// tenth of a second's worth (at least two): real providers count over
    /// a window, so a request a little early is not refused.
    pub fn limited(latency: Duration, rate: f64) -> Self {
        Self {
            latency,
            rate: Some(rate),
            burst: (rate / 10.0).max(2.0),
        }
    }

    pub fn unlimited(latency: Duration) -> Self {
        Self {
            latency,
            rate: None,
            burst: 0.0,
        }
    }
}

#[derive(Debug)]
pub struct Counters {
    behaviour: Behaviour,
    bucket: Mutex<(f64, Instant)>,
    pub served: AtomicU64,
    pub refused: AtomicU64,
    /// Queries refused as bad input (400).
    pub rejected: AtomicU64,
    in_flight: AtomicU64,
    pub most_in_flight: AtomicU64,
    /// The queries served, in the order their answers started.
    pub queries: Mutex<Vec<String>>,
    /// When each request to `/search` arrived, refused ones included.
    arrivals: Mutex<Vec<Instant>>,
}

impl Counters {
    fn take(&self) -> bool {
        let Some(rate) = self.behaviour.rate else {
            return true;
        };
        let mut bucket = self.bucket.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let refill = now.duration_since(bucket.1).as_secs_f64() * rate;
        bucket.0 = (bucket.0 + refill).min(self.behaviour.burst);
        bucket.1 = now;
        if bucket.0 >= 1.0 {
            bucket.0 -= 1.0;
            true
        } else {
            false
        }
    }

    pub fn served(&self) -> u64 {
        self.served.load(Ordering::SeqCst)
    }

    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::SeqCst)
    }

    pub fn most_in_flight(&self) -> u64 {
        self.most_in_flight.load(Ordering::SeqCst)
    }

    /// The most requests that arrived within any one second.
    pub fn most_in_any_second(&self) -> usize {
        let mut arrivals = self
            .arrivals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        arrivals.sort();
        let mut most = 0;
        let mut first = 0;
        for (last, at) in arrivals.iter().enumerate() {
            while at.duration_since(arrivals[first]) >= Duration::from_secs(1) {
                first += 1;
            }
            most = most.max(last + 1 - first);
        }
        most
    }

    /// How many times each query was served.
    pub fn calls_per_query(&self) -> HashMap<String, usize> {
        let mut calls = HashMap::new();
        for q in self.queries() {
            *calls.entry(q).or_insert(0) += 1;
        }
        calls
    }

    pub fn queries(&self) -> Vec<String> {
        self.queries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// A provider listening on 127.0.0.1; its base URL and its counters.
pub struct FakeProvider {
    pub url: String,
    pub counters: Arc<Counters>,
}

fn too_many() -> Response {
    let mut res = (StatusCode::TOO_MANY_REQUESTS, "slow down").into_response();
    res.headers_mut()
        .insert("retry-after", HeaderValue::from_static("1"));
    res
}

async fn search(
    State(c): State<Arc<Counters>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    c.arrivals
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Instant::now());
    if !c.take() {
        c.refused.fetch_add(1, Ordering::SeqCst);
        return too_many();
    }
    let query = q.get("q").cloned().unwrap_or_default();
    if query.starts_with("bad") {
        c.rejected.fetch_add(1, Ordering::SeqCst);
        let echo = json!({ "error": format!("Invalid query: {query}") });
        return (StatusCode::BAD_REQUEST, Json(echo)).into_response();
    }
    c.queries
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(query.clone());

    let now = c.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    c.most_in_flight.fetch_max(now, Ordering::SeqCst);
    // A zero sleep would still wait for the timer's next tick (about a
    // millisecond): "answers at once" must not.
    if !c.behaviour.latency.is_zero() {
        tokio::time::sleep(c.behaviour.latency).await;
    }
    c.in_flight.fetch_sub(1, Ordering::SeqCst);
    c.served.fetch_add(1, Ordering::SeqCst);
    if query.starts_with("none") {
        return Json(json!({ "hits": [] })).into_response();
    }
    let slug: String = query
        .chars()
        .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '-' })
        .collect();
    Json(json!({
        "hits": [{ "link": format!("https://provider.test/{slug}"), "name": query }]
    }))
    .into_response()
}

/// Two seconds, then about 5,500 hits of 34 JSON values each: near the
/// 200,000 values a manifest may read, built once.
async fn heavy() -> Response {
    static ANSWER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let answer = ANSWER.get_or_init(|| {
        let hits: Vec<_> = (0..5_500)
            .map(|i| json!({ "link": format!("https://heavy.test/{i}"), "name": format!("Hit {i}"), "tags": (0..31).collect::<Vec<u32>>() }))
            .collect();
        json!({ "hits": hits }).to_string()
    });
    ([("content-type", "application/json")], answer.clone()).into_response()
}

impl FakeProvider {
    pub async fn start(behaviour: Behaviour) -> Self {
        let counters = Arc::new(Counters {
            behaviour,
            bucket: Mutex::new((behaviour.burst, Instant::now())),
            served: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            most_in_flight: AtomicU64::new(0),
            queries: Mutex::new(Vec::new()),
            arrivals: Mutex::new(Vec::new()),
        });
        let app = axum::Router::new()
            .route("/search", get(search))
            .route(
                "/limited",
                get(|State(c): State<Arc<Counters>>| async move {
                    c.refused.fetch_add(1, Ordering::SeqCst);
                    too_many()
                }),
            )
            .route(
                "/broken",
                get(|| async { (StatusCode::SERVICE_UNAVAILABLE, "down for maintenance") }),
            )
            .route(
                "/hang",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    "late"
                }),
            )
            .route("/heavy", get(heavy))
            .with_state(counters.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a local port");
        let url = format!("http://{}", listener.local_addr().expect("an address"));
        tokio::spawn(async move { axum::serve(listener, app).await.expect("the fake provider") });
        Self { url, counters }
    }

    /// A manifest connector `id` reading `path` of this provider, with a
    /// `per_second` rate hint when given.
    pub fn manifest(&self, id: &str, path: &str, per_second: Option<f64>) -> String {
        let hints = per_second
            .map(|r| format!("rate_hints = {{ per_second = {r:.3} }}\n"))
            .unwrap_or_default();
        format!(
            r#"
id = "{id}"
display_name = "Fake {id}"
short_label = "{id}"
capabilities = ["search.web"]
cost_tier = "free"
{hints}
[request]
url = "{base}{path}"
query = {{ q = "{{{{query}}}}" }}

[response]
items = "$.hits[*]"
url = "$.link"
title = "$.name"
"#,
            base = self.url
        )
    }
}
