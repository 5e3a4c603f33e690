//! Live updates at scale: many people keep one record set open (each their
//! own event stream, signed in with their own API token) against one real
//! `switchyard serve` (the release build), while fires change its chips.
//! Reports how long the streams took to open (viewers arrive 500 a
//! second; who is watching is news to every viewer, at most every 250 ms),
//! then, for fires made one at a time, the delay from each fire's request
//! to each stream's receiving its record's news, every event accounted
//! for, and the server's resident memory per viewer.
//!
//! ```sh
//! cargo bench -p server --bench viewers                       # 200 viewers, 30 fires, SQLite
//! VIEWERS=1000 cargo bench -p server --bench viewers          # the issue's 1,000
//! ```

#[path = "common/measure.rs"]
mod measure;
#[path = "../../engine/tests/common/provider.rs"]
mod provider;
#[allow(dead_code)] // the tests' helpers; this uses a few
#[path = "../tests/common/real.rs"]
mod real;
#[path = "common/release.rs"]
mod release;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use measure::{percentile, rss_kib, setting};
use provider::{Behaviour, FakeProvider};
use real::write_deployment;
use serde_json::{json, Value};

/// When each stream received each record's fire news, by fire.
#[derive(Default)]
struct Heard {
    /// (record id, when) per stream, in arrival order.
    fired: Vec<Vec<(i64, Instant)>>,
    /// Events each stream received, of any kind.
    events: Vec<u64>,
    /// Streams that were told to resync (they fell behind).
    resyncs: u64,
}

/// Raises this process's open-file limit (its children inherit it): a
/// stream is a connection on each side.
fn raise_open_files() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// Viewers arriving each second, one after another at an even pace:
/// people arrive over a few seconds, not in one instant. (A stream is
/// answered once the news of its viewer's arrival is out, at the end of a
/// presence window when another arrival opened it: a bench that opened the
/// next streams only as earlier ones answered was paced by that window,
/// and its runs did not compare.)
const ARRIVALS_PER_SECOND: f64 = 500.0;

/// Opens viewer `n`'s stream and records what it hears.
async fn watch(
    n: usize,
    (url, token, set): (String, String, i64),
    opening: Instant,
    heard: Arc<Mutex<Heard>>,
) {
    let http = reqwest::Client::new();
    let arrives = opening + Duration::from_secs_f64(n as f64 / ARRIVALS_PER_SECOND);
    tokio::time::sleep_until(arrives.into()).await;
    let Ok(res) = http
        .get(format!("{url}/api/events?record_set={set}"))
        .bearer_auth(&token)
        .send()
        .await
    else {
        return;
    };
    let status = res.status();
    if status != 200 {
        let body = res.text().await.unwrap_or_default();
        panic!("viewer {n}'s stream: {status} {body}");
    }
    let mut bytes = res.bytes_stream();
    let mut buffer = String::new();
    while let Some(Ok(chunk)) = bytes.next().await {
        let now = Instant::now();
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        for (_, data) in real::sse_blocks(&mut buffer) {
            let event: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
            let mut heard = heard.lock().unwrap();
            heard.events[n] += 1;
            match event["type"].as_str() {
                Some("fire_news") => {
                    if let Some(record) = event["record_id"].as_i64() {
                        heard.fired[n].push((record, now));
                    }
                }
                Some("resync") => heard.resyncs += 1,
                _ => {}
            }
        }
    }
}

/// The fire-to-news figures.
fn print_delays(delays: &[Duration], missing: usize) {
    if delays.is_empty() {
        println!("viewers: no fire news received");
    } else {
        println!(
            "viewers: fire to news: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms over {} deliveries; {missing} missing",
            percentile(delays, 0.5).as_secs_f64() * 1e3,
            percentile(delays, 0.99).as_secs_f64() * 1e3,
            delays[delays.len() - 1].as_secs_f64() * 1e3,
            delays.len()
        );
    }
}

/// Each fire's news as every stream heard it: the delays, sorted, and
/// how many deliveries never came.
fn delays(heard: &Heard, sent: &[(i64, Instant)]) -> (Vec<Duration>, usize) {
    let mut delays = Vec::new();
    let mut missing = 0usize;
    for stream in &heard.fired {
        for (record, at) in sent {
            match stream.iter().find(|(r, _)| r == record) {
                Some((_, when)) => delays.push(when.saturating_duration_since(*at)),
                None => missing += 1,
            }
        }
    }
    delays.sort();
    (delays, missing)
}

#[tokio::main]
async fn main() {
    raise_open_files();
    let viewers = setting("VIEWERS", 200) as usize;
    let fires = setting("FIRES", 30) as usize;
    let db = engine::store::testing::sqlite();
    let dir = std::env::temp_dir().join(format!("switchyard-viewers-{}", std::process::id()));
    let provider = FakeProvider::start(Behaviour::unlimited(Duration::ZERO)).await;
    write_deployment(&dir, &provider.manifest("fake", "/search", None));
    let tokens = release::tokens(&db.url, "viewers", viewers).await;

    let served = release::serve(&db.url, &dir, "viewers");
    let pid = served.child.id();
    let url = served.url.clone();
    let http = reqwest::Client::new();
    let first = &tokens[0];

    // The set everyone watches, imported by the first viewer.
    let (set, records) =
        release::import_companies(&http, &url, Some(first), "Watched", fires).await;

    let rss_before = rss_kib(pid);
    let heard = Arc::new(Mutex::new(Heard {
        fired: vec![Vec::new(); viewers],
        events: vec![0; viewers],
        resyncs: 0,
    }));
    let opening = Instant::now();
    let streams: Vec<_> = tokens
        .iter()
        .enumerate()
        .map(|(n, token)| {
            let to = (url.clone(), token.clone(), set);
            tokio::spawn(watch(n, to, opening, heard.clone()))
        })
        .collect();
    // Open when every viewer has heard of itself joining: it has an event.
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let heard = heard.lock().unwrap();
        if heard.events.iter().all(|e| *e > 0) {
            break;
        }
        assert!(
            opening.elapsed() < Duration::from_secs(600),
            "streams did not open"
        );
    }
    let opened = opening.elapsed();
    // Let the joins' news settle before measuring fires.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_open = rss_kib(pid);

    let mut sent = Vec::with_capacity(fires);
    for record in &records {
        let at = Instant::now();
        let res = http
            .post(format!("{url}/api/records/{record}/fire"))
            .bearer_auth(first)
            .json(&json!({ "pack": "web" }))
            .send()
            .await
            .expect("a fire");
        assert_eq!(res.status(), 200, "a fire answers");
        sent.push((*record, at));
        // One at a time, as people click, not a flood.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rss_after = rss_kib(pid);
    for stream in streams {
        stream.abort();
    }

    let heard = heard.lock().unwrap();
    let (delays, missing) = delays(&heard, &sent);
    let events: u64 = heard.events.iter().sum();
    println!(
        "viewers: {viewers} viewers of one set, {fires} fires one at a time (SQLite, release build)"
    );
    println!(
        "viewers: streams open in {:.1} s; {events} events received in all; {} resyncs",
        opened.as_secs_f64(),
        heard.resyncs
    );
    print_delays(&delays, missing);
    println!(
        "viewers: server RSS {} MiB before the streams, {} MiB open, {} MiB after the fires: {:.1} KiB per viewer",
        rss_before / 1024,
        rss_open / 1024,
        rss_after / 1024,
        rss_after.saturating_sub(rss_before) as f64 / viewers as f64
    );
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
}
