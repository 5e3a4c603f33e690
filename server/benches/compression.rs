//! What compressing a dynamic answer costs the server and saves the wire:
//! answers of several sizes (JSON shaped like a fire's answer, one item per
//! 1.1 KB) through the server's own compression layer
//! (`server::delivery::compression`), in process, for each encoding a
//! client may ask for. Prints the median time per answer (handler, layer
//! and the whole body read) and the bytes sent.
//!
//! Most of a small answer's cost is its compressor's memory, so the figures
//! depend on the allocator's settings: the bench keeps glibc's defaults;
//! the server sets its own (`server/src/main.rs`), which the environment
//! can reproduce:
//!
//! ```sh
//! cargo bench -p server --bench compression
//! GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1048576:glibc.malloc.trim_threshold=4194304 \
//!     cargo bench -p server --bench compression      # as the server runs
//! ```

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{header, Request};
use axum::routing::get;
use axum::Router;
use http_body_util::BodyExt;
use tower::ServiceExt;

/// Answers timed per size and encoding.
const ROUNDS: usize = 2000;

/// A JSON answer of about `items` times 1.1 KB: fire reports with one item
/// each, as `POST /api/records/{id}/fire` sends them.
fn answer(items: usize) -> String {
    // Hashes are as random as real ones, so the answer compresses as much.
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut hash = move || {
        (0..4)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                format!("{seed:016x}")
            })
            .collect::<String>()
    };
    let mut one = |n: usize| {
        let (request, payload) = (hash(), hash());
        format!(
            r#"{{"fire_id":{n},"record_id":{n},"pack_id":"web","intent":"search.web","chip":{{"state":"found","count":1}},"attempts":[{{"id":{n},"fire_id":{n},"record_id":{n},"pack_id":"web","intent":"search.web","connector_id":"fake","fired_at":1796661480407,"finished_at":1796661480408,"triggered_by":"human-refire","actor":"person0@fires.example","outcome":"found","result_count":1,"receipt":{{"version":"manifest bbc98e8b488b","requests":[{{"method":"GET","host":"127.0.0.1:39425","path":"/search","params":["q"],"status":200,"bytes":76,"latency_ms":0,"request_hash":"{request}","payload_hash":"{payload}"}}]}}}}],"items":[{{"id":{n},"record_id":{n},"url":"https://provider.test/Company-{n}","title":"Company {n}","snippet":"","state":"new","version":1,"first_seen_at":1796661480408,"evidence":[{{"connector_id":"fake","fire_id":{n},"found_at":1796661480408,"triggered_by":"human-refire"}}],"raw":{{"link":"https://provider.test/Company-{n}","name":"Company {n}"}}}}]}}"#
        )
    };
    let parts: Vec<String> = (0..items).map(&mut one).collect();
    format!(
        r#"{{"status":"completed","results":[{}]}}"#,
        parts.join(",")
    )
}

async fn median(app: &Router, encoding: &str) -> (Duration, usize) {
    let mut times = Vec::with_capacity(ROUNDS);
    let mut sent = 0;
    for _ in 0..ROUNDS {
        let request = Request::get("/answer")
            .header(header::ACCEPT_ENCODING, encoding)
            .body(Body::empty())
            .expect("a request");
        let started = Instant::now();
        let response = app.clone().oneshot(request).await.expect("an answer");
        let body = response
            .into_body()
            .collect()
            .await
            .expect("the body")
            .to_bytes();
        times.push(started.elapsed());
        sent = body.len();
    }
    times.sort();
    (times[ROUNDS / 2], sent)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!("compression: | answer | identity | gzip | br |");
    for items in [1, 4, 16, 64] {
        let json = answer(items);
        let size = json.len();
        let app = Router::new()
            .route(
                "/answer",
                get(move || {
                    let json = json.clone();
                    async move { ([(header::CONTENT_TYPE, "application/json")], json) }
                }),
            )
            .layer(server::delivery::compression());
        let mut row = format!("compression: | {size} B |");
        for encoding in ["identity", "gzip", "br"] {
            let (time, sent) = median(&app, encoding).await;
            row.push_str(&format!(" {:.1} us, {sent} B |", time.as_secs_f64() * 1e6));
        }
        println!("{row}");
    }
}
