//! The load test: many signed-in people at once against one real
//! `switchyard serve` (the release build) and a local provider that answers
//! in 50 ms and refuses (429) past 100 calls a second. Each person signs in
//! through the form (behind a trusted proxy, from their own address),
//! imports a record set, keeps its event stream open, and then, with a few
//! seconds between clicks as an analyst works, fires a chip, reads the
//! items, accepts one, and now and then imports again. Afterwards every
//! attempt a fire answered with must be in its record's history.
//!
//! Reports errors by route (goal 0), lost history rows (goal 0), the
//! server's resident memory before and after, and p50/p99 per route.
//!
//! ```sh
//! cargo bench -p server --bench load                               # 200 people, 5 minutes, SQLite
//! LOAD_PEOPLE=50 LOAD_SECONDS=60 cargo bench -p server --bench load # a shorter run
//! ./scripts/with-postgres.sh cargo bench -p server --bench load    # on PostgreSQL
//! ```

#[path = "common/measure.rs"]
mod measure;
#[path = "../../engine/tests/common/provider.rs"]
mod provider;
#[allow(dead_code)] // the tests' helpers; this uses a few
#[path = "../tests/common/real.rs"]
mod real;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use measure::{percentile, rss_kib, setting, Dice};
use provider::{Behaviour, FakeProvider};
use real::{write_deployment, Served};
use serde_json::{json, Value};

const PASSWORD: &str = "load test password";
const RECORDS_PER_SET: usize = 20;

/// Latencies and failures, by route.
#[derive(Default)]
struct Tally {
    latencies: BTreeMap<&'static str, Vec<Duration>>,
    errors: BTreeMap<&'static str, Vec<String>>,
    /// Attempt ids each fire answered with, by record.
    attempts: HashMap<i64, Vec<i64>>,
    events: u64,
    /// Imports refused for the workspace's two running, tried again.
    import_waits: u64,
}

type Shared = Arc<Mutex<Tally>>;

/// Sends a request, timing it under `route`; the status and JSON body, or
/// `None` when it failed (counted as an error).
async fn call(
    tally: &Shared,
    route: &'static str,
    request: reqwest::RequestBuilder,
    ok: &[u16],
) -> Option<(u16, Value)> {
    let start = Instant::now();
    let outcome = match request.send().await {
        Ok(res) => {
            let status = res.status().as_u16();
            let text = res.text().await.unwrap_or_default();
            Ok((
                status,
                serde_json::from_str(&text).unwrap_or(Value::Null),
                text,
            ))
        }
        Err(e) => Err(e.to_string()),
    };
    let took = start.elapsed();
    let mut t = tally.lock().unwrap();
    t.latencies.entry(route).or_default().push(took);
    match outcome {
        Ok((status, body, _)) if ok.contains(&status) => Some((status, body)),
        Ok((status, _, text)) => {
            let text: String = text.chars().take(200).collect();
            t.errors
                .entry(route)
                .or_default()
                .push(format!("{status} {text}"));
            None
        }
        Err(e) => {
            t.errors.entry(route).or_default().push(e);
            None
        }
    }
}

async fn import(tally: &Shared, http: &reqwest::Client, url: &str, n: usize) -> Option<i64> {
    let mut csv = String::from("name,city\n");
    for i in 0..RECORDS_PER_SET {
        csv.push_str(&format!("Company {n}-{i},City {i}\n"));
    }
    // A person gives up after a minute of refusals (the run then shows
    // them as imports tried again, and that person as idle).
    for _ in 0..60 {
        let (status, body) = call(
            tally,
            "POST /api/record-sets (import)",
            http.post(format!("{url}/api/record-sets"))
                .query(&[
                    ("name", format!("Load {n}")),
                    ("bundle", real::BUNDLE.to_owned()),
                ])
                .header("content-type", "text/csv")
                .body(csv.clone()),
            &[201, 429],
        )
        .await?;
        if status == 201 {
            return body["id"].as_i64();
        }
        // Everyone is in one workspace, which runs two imports at once
        // (the neighbours' limit): the person tries again a second later.
        tally.lock().unwrap().import_waits += 1;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    None
}

async fn records(tally: &Shared, http: &reqwest::Client, url: &str, set: i64) -> Vec<i64> {
    let Some((_, page)) = call(
        tally,
        "GET /api/record-sets/{id}/records",
        http.get(format!("{url}/api/record-sets/{set}/records?limit=100")),
        &[200],
    )
    .await
    else {
        return Vec::new();
    };
    page["records"]
        .as_array()
        .map(|rs| rs.iter().filter_map(|r| r["id"].as_i64()).collect())
        .unwrap_or_default()
}

/// One person's session until `until`.
async fn person(n: usize, url: String, tally: Shared, until: Instant) {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("sec-fetch-site", "same-origin".parse().unwrap());
    // Behind the trusted proxy, each person comes from their own address.
    headers.insert(
        "x-forwarded-for",
        format!("10.77.{}.{}", n / 250, n % 250 + 1)
            .parse()
            .unwrap(),
    );
    let http = reqwest::Client::builder()
        .cookie_store(true)
        .default_headers(headers)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let email = format!("person{n}@load.example");
    let signed_in = call(
        &tally,
        "POST /auth/sign-in",
        http.post(format!("{url}/auth/sign-in")).form(&[
            ("email", email.as_str()),
            ("password", PASSWORD),
            ("next", "/"),
        ]),
        &[303],
    )
    .await;
    if signed_in.is_none() {
        return;
    }
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15 ^ (n as u64 + 1));
    let Some(mut set) = import(&tally, &http, &url, n).await else {
        return;
    };
    let mut ids = records(&tally, &http, &url, set).await;
    let stream_tally = tally.clone();
    let stream = http
        .get(format!("{url}/api/events?record_set={set}"))
        .send();
    let stream = tokio::spawn(async move {
        let Ok(res) = stream.await else { return };
        let mut bytes = res.bytes_stream();
        while let Some(Ok(chunk)) = bytes.next().await {
            let events = chunk.windows(6).filter(|w| w == b"\ndata:").count() as u64;
            stream_tally.lock().unwrap().events += events;
        }
    });
    let mut clicks = 0u64;
    while Instant::now() < until && !ids.is_empty() {
        // An analyst reads before the next click: 1 to 6 seconds.
        tokio::time::sleep(Duration::from_millis(1_000 + dice.below(5_000))).await;
        clicks += 1;
        if clicks.is_multiple_of(25) {
            if let Some(new) = import(&tally, &http, &url, n).await {
                set = new;
                ids = records(&tally, &http, &url, set).await;
            }
            continue;
        }
        let record = ids[dice.below(ids.len() as u64) as usize];
        if let Some((_, envelope)) = call(
            &tally,
            "POST /api/records/{id}/fire",
            http.post(format!("{url}/api/records/{record}/fire"))
                .json(&json!({ "pack": "web" })),
            &[200],
        )
        .await
        {
            let attempts: Vec<i64> = envelope["results"][0]["attempts"]
                .as_array()
                .map(|a| a.iter().filter_map(|h| h["id"].as_i64()).collect())
                .unwrap_or_default();
            tally
                .lock()
                .unwrap()
                .attempts
                .entry(record)
                .or_default()
                .extend(attempts);
        }
        let Some((_, items)) = call(
            &tally,
            "GET /api/records/{id}/items",
            http.get(format!("{url}/api/records/{record}/items")),
            &[200],
        )
        .await
        else {
            continue;
        };
        let fresh = items.as_array().and_then(|items| {
            items
                .iter()
                .find(|i| i["state"] == "new")
                .and_then(|i| Some((i["id"].as_i64()?, i["version"].as_i64()?)))
        });
        if let Some((item, version)) = fresh {
            call(
                &tally,
                "POST /api/items/{id}/triage",
                http.post(format!("{url}/api/items/{item}/triage"))
                    .json(&json!({ "verb": "accept-canonical", "version": version })),
                &[200],
            )
            .await;
        }
    }
    stream.abort();
}

async fn add_people(database_url: &str, people: usize) {
    let store = engine::store::Store::connect(database_url)
        .await
        .expect("the database");
    let engine = engine::Engine::new(
        store,
        engine::packs::Catalog::builtin(),
        None,
        engine::EngineConfig::default(),
    );
    for n in 0..people {
        engine
            .add_user(
                &format!("person{n}@load.example"),
                "load",
                model::Role::Member,
                Some(PASSWORD.to_owned()),
            )
            .await
            .expect("a person");
    }
}

#[tokio::main]
async fn main() {
    let people = setting("LOAD_PEOPLE", 200) as usize;
    let seconds = setting("LOAD_SECONDS", 300);
    let db = match engine::store::testing::postgres().await {
        Some(pg) => pg,
        None => engine::store::testing::sqlite(),
    };
    let dir = std::env::temp_dir().join(format!("switchyard-load-{}", std::process::id()));
    let provider = FakeProvider::start(Behaviour::limited(Duration::from_millis(50), 100.0)).await;
    write_deployment(&dir, &provider.manifest("fake", "/search", Some(80.0)));
    add_people(&db.url, people).await;

    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    cmd.current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .env("DATABASE_URL", &db.url)
        .env("SWITCHYARD_FETCH_ALLOW", "127.0.0.1")
        .env("SWITCHYARD_TRUSTED_PROXIES", "127.0.0.1")
        .env("RUST_LOG", "warn,server=info")
        // The check afterwards reads every record's history with one token,
        // far past a token's 100 requests a second.
        .env("SWITCHYARD_TOKEN_REQUESTS_PER_SECOND", "1000000")
        .env_remove("SWITCHYARD_PUBLIC_URL")
        .args(["serve", "--addr", "127.0.0.1:0"])
        .arg("--connectors")
        .arg(dir.join("connectors"))
        .arg("--packs")
        .arg(dir.join("packs.toml"));
    let served = Served::start(cmd, "load");
    let pid = served.child.id();
    let rss_before = rss_kib(pid);

    println!(
        "load: {people} people for {seconds} s on {} against a provider of 50 ms, 429 past 100/s (hint 80/s)",
        db.kind()
    );
    let tally = Shared::default();
    let until = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let tasks: Vec<_> = (0..people)
        .map(|n| tokio::spawn(person(n, served.url.clone(), tally.clone(), until)))
        .collect();
    // Resident memory along the way: a plateau, or a leak.
    let sampler = tokio::spawn(async move {
        let mut samples = Vec::new();
        let mut every = tokio::time::interval(Duration::from_secs(30));
        loop {
            every.tick().await;
            samples.push(rss_kib(pid) / 1024);
            println!(
                "load: RSS {} MiB at {} s",
                samples[samples.len() - 1],
                (samples.len() - 1) * 30
            );
        }
    });
    for task in tasks {
        let _ = task.await;
    }
    sampler.abort();
    let ran = started.elapsed();
    let rss_after = rss_kib(pid);

    // Every attempt a fire answered with is in its record's history.
    let check = reqwest::Client::new();
    let token = real::admin_token(
        || {
            let mut c = Command::new(env!("CARGO_BIN_EXE_switchyard"));
            c.env("DATABASE_URL", &db.url);
            c
        },
        "checker@load.example",
        "load",
        PASSWORD,
    );
    let attempts = std::mem::take(&mut tally.lock().unwrap().attempts);
    let (mut answered, mut lost) = (0usize, 0usize);
    for (record, ids) in &attempts {
        let res = check
            .get(format!("{}/api/records/{record}/history", served.url))
            .bearer_auth(&token)
            .send()
            .await
            .expect("history");
        // An answer that is not the history must not read as lost rows.
        assert!(res.status().is_success(), "history: {}", res.status());
        let history: Value = res.json().await.expect("history JSON");
        let kept: Vec<i64> = history
            .as_array()
            .map(|h| {
                h.iter()
                    .filter(|e| e["finished_at"].is_i64())
                    .filter_map(|e| e["id"].as_i64())
                    .collect()
            })
            .unwrap_or_default();
        answered += ids.len();
        lost += ids.iter().filter(|id| !kept.contains(id)).count();
    }

    let t = tally.lock().unwrap();
    let total: usize = t.latencies.values().map(Vec::len).sum();
    let errors: usize = t.errors.values().map(Vec::len).sum();
    println!(
        "load: {total} requests in {:.0} s ({:.1}/s), {errors} errors, {} events streamed, {} imports tried again",
        ran.as_secs_f64(),
        total as f64 / ran.as_secs_f64(),
        t.events,
        t.import_waits
    );
    println!(
        "load: {answered} attempts answered, {lost} missing from history; provider served {}, refused {}",
        provider.counters.served(),
        provider.counters.refused()
    );
    println!(
        "load: server RSS {} MiB at the start, {} MiB at the end",
        rss_before / 1024,
        rss_after / 1024
    );
    println!(
        "{:<36} {:>7} {:>9} {:>9} {:>9}",
        "route", "calls", "p50 ms", "p99 ms", "max ms"
    );
    for (route, latencies) in &t.latencies {
        let mut sorted = latencies.clone();
        sorted.sort();
        println!(
            "{route:<36} {:>7} {:>9.1} {:>9.1} {:>9.1}",
            sorted.len(),
            percentile(&sorted, 0.5).as_secs_f64() * 1e3,
            percentile(&sorted, 0.99).as_secs_f64() * 1e3,
            sorted.last().map_or(0.0, |d| d.as_secs_f64() * 1e3),
        );
    }
    for (route, errs) in &t.errors {
        println!("errors on {route}: {} (first: {})", errs.len(), errs[0]);
    }
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
}
