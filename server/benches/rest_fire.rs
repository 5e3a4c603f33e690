//! A fire through REST against a bare call to the same provider: imports a
//! set through REST into the release server, then, record after record,
//! makes four requests side by side from one client: the bare call a
//! connector makes (`GET /search?q=` on the local provider, which answers
//! at once), the health check (`GET /api/health`: the server's layers and
//! routing, nobody signed in, no database), a signed-in read
//! (`GET /api/me`: the token's look-up and two small reads) and a fire of
//! the record (`POST /api/records/{id}/fire`, which answers when the fire
//! has ended and its results are written). Interleaving them puts the
//! machine's noise on all of them alike. The figure is what the fire adds
//! over the bare call at p50 and p99 (the goal: at most 1 ms and 3 ms).
//!
//! ```sh
//! cargo bench -p server --bench rest_fire                        # SQLite
//! ./scripts/with-postgres.sh cargo bench -p server --bench rest_fire
//! ACCEPT_ENCODING=identity cargo bench -p server --bench rest_fire  # nothing compressed (Chromium's encodings by default)
//! FIRES=20 SERVER_LOG="warn,sqlx::query=debug,tower_http=debug" cargo bench -p server --bench rest_fire
//! ```
//!
//! The last prints the server's log after the figures: each statement and
//! each request with its time. For a profile, attach `perf record -p` to the
//! server's process while it runs (under `SERVER_UNDER` perf would lose its
//! data: the benchmark ends the server with a kill).

#[path = "common/measure.rs"]
mod measure;
#[path = "../../engine/tests/common/provider.rs"]
mod provider;
#[allow(dead_code)] // the tests' helpers; this uses a few
#[path = "../tests/common/real.rs"]
mod real;
#[path = "common/release.rs"]
mod release;

use std::time::{Duration, Instant};

use measure::{percentile, setting};
use provider::{Behaviour, FakeProvider};
use real::write_deployment;
use serde_json::json;

/// What Chromium sends as `Accept-Encoding`.
const BROWSER_ACCEPTS: &str = "gzip, deflate, br, zstd";

/// Rounds before the measured ones: connections opened, caches warm.
const WARM_UP: usize = 100;

/// The times of one kind of request, and their summary.
#[derive(Default)]
struct Times(Vec<Duration>);

impl Times {
    fn quantile(&mut self, p: f64) -> Duration {
        self.0.sort();
        percentile(&self.0, p)
    }

    fn row(&mut self, name: &str) -> (Duration, Duration) {
        let (p50, p90, p99) = (self.quantile(0.5), self.quantile(0.9), self.quantile(0.99));
        println!(
            "rest_fire: | {name} | {:.3} ms | {:.3} ms | {:.3} ms |",
            ms(p50),
            ms(p90),
            ms(p99)
        );
        (p50, p99)
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Times one request: it must succeed; its body is read to the end.
async fn timed(request: reqwest::RequestBuilder, what: &str) -> Duration {
    let started = Instant::now();
    let res = request.send().await.expect("an answer");
    let status = res.status();
    let body = res.bytes().await.expect("the body");
    let took = started.elapsed();
    assert!(
        status.is_success(),
        "{what}: {status} {}",
        String::from_utf8_lossy(&body)
    );
    took
}

/// The client: it asks for what Chromium asks for (`ACCEPT_ENCODING`
/// overrides it) and leaves the answer as it came, so a compressed answer
/// costs the server its compression and the client nothing.
fn client() -> reqwest::Client {
    let accept = std::env::var("ACCEPT_ENCODING").unwrap_or_else(|_| BROWSER_ACCEPTS.to_owned());
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::ACCEPT_ENCODING,
        accept.parse().expect("ACCEPT_ENCODING is a header value"),
    );
    reqwest::Client::builder()
        .no_gzip()
        .no_brotli()
        .default_headers(headers)
        .build()
        .expect("a client")
}

#[tokio::main]
async fn main() {
    let fires = setting("FIRES", 1000) as usize;
    let db = match engine::store::testing::postgres().await {
        Some(db) => db,
        None => engine::store::testing::sqlite(),
    };
    let dir = std::env::temp_dir().join(format!("switchyard-rest-fire-{}", std::process::id()));
    let provider = FakeProvider::start(Behaviour::unlimited(Duration::ZERO)).await;
    write_deployment(&dir, &provider.manifest("fake", "/search", None));
    let token = release::tokens(&db.url, "fires", 1).await.remove(0);
    let served = release::serve(&db.url, &dir, "fires");
    let http = client();
    let url = served.url.clone();
    let (_, records) = release::import_companies(
        &reqwest::Client::new(),
        &url,
        Some(&token),
        "Fires",
        WARM_UP + fires,
    )
    .await;
    println!(
        "rest_fire: {fires} fires, each beside a bare call, a health check and a signed-in read ({}, release build)",
        db.kind()
    );

    // Side by side, in this order, for each record.
    const KINDS: [&str; 4] = [
        "bare call to the provider",
        "GET /api/health (the layers, nobody signed in, no database)",
        "GET /api/me (the token and two reads)",
        "POST /api/records/{id}/fire",
    ];
    let mut times: Vec<Times> = KINDS.iter().map(|_| Times::default()).collect();
    for (n, record) in records.iter().enumerate() {
        let query = format!("Company {n}");
        let requests = [
            http.get(format!("{}/search", provider.url))
                .query(&[("q", query.as_str())]),
            http.get(format!("{url}/api/health")),
            http.get(format!("{url}/api/me")).bearer_auth(&token),
            http.post(format!("{url}/api/records/{record}/fire"))
                .bearer_auth(&token)
                .json(&json!({"pack": "web"})),
        ];
        for ((request, kind), times) in requests.into_iter().zip(KINDS).zip(&mut times) {
            let took = timed(request, kind).await;
            if n >= WARM_UP {
                times.0.push(took);
            }
        }
    }
    println!("rest_fire: | request | p50 | p90 | p99 |");
    let rows: Vec<(Duration, Duration)> = times
        .iter_mut()
        .zip(KINDS)
        .map(|(times, kind)| times.row(kind))
        .collect();
    let (bare, fire) = (rows[0], rows[3]);
    println!(
        "rest_fire: a fire adds {:.3} ms at p50 and {:.3} ms at p99 over the bare call (goal: 1 and 3)",
        ms(fire.0.saturating_sub(bare.0)),
        ms(fire.1.saturating_sub(bare.1)),
    );
    if std::env::var_os("SERVER_LOG").is_some() {
        print!("{}", served.log());
    }
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
}
