//! The records view on a big set, against a small one: imports a
//! 100-record set and a big one (100,000 records of 10 columns unless
//! `RECORDS` says otherwise) through REST into the release server, fans both
//! out against a local provider that answers at once (a tenth of the
//! queries find nothing, a tenth fail, the rest find one page), accepts a
//! few items, then times every page, filter and search of the cards view,
//! the compact view and the facets on both sets: the ratio big / small is
//! the figure (the goal: at most 1.5x, and at most 20 ms). Also reports the
//! import's time and memory and the fan-out's fires a second.
//!
//! ```sh
//! cargo bench -p server --bench records_view                  # 100,000 records, SQLite
//! RECORDS=10000 cargo bench -p server --bench records_view
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

use std::time::{Duration, Instant};

use measure::{percentile, rss_kib, setting};
use provider::{Behaviour, FakeProvider};
use real::write_deployment;
use serde_json::{json, Value};

/// Times each read is made on each set.
const REPEATS: usize = 25;

/// A set's records: 10 columns; one in ten named so the provider finds
/// nothing for it, one in ten so it refuses it as bad input.
fn csv(records: usize) -> String {
    let mut csv = String::from("name,city,country,sector,size,founded,website,phone,email,notes\n");
    for i in 0..records {
        let name = match i % 10 {
            3 => format!("none Company {i}"),
            7 => format!("bad Company {i}"),
            _ => format!("Company {i}"),
        };
        csv.push_str(&format!(
            "{name},City {},Country {},Sector {},{},{},https://c{i}.example,+49 30 {i:07},info@c{i}.example,Imported for the records view benchmark\n",
            i % 500,
            i % 40,
            i % 12,
            i % 5000,
            1900 + i % 120,
        ));
    }
    csv
}

struct Client {
    http: reqwest::Client,
    url: String,
    token: String,
}

impl Client {
    async fn get(&self, path: &str) -> Value {
        let res = self
            .http
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .send()
            .await
            .expect("an answer");
        assert!(res.status().is_success(), "{path}: {}", res.status());
        res.json().await.expect("JSON")
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let res = self
            .http
            .post(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .expect("an answer");
        assert!(res.status().is_success(), "{path}: {}", res.status());
        res.json().await.expect("JSON")
    }

    /// Imports a set; its id and how long the import took.
    async fn import(&self, name: &str, records: usize) -> (i64, Duration) {
        let body = csv(records);
        let started = Instant::now();
        let res = self
            .http
            .post(format!("{}/api/record-sets", self.url))
            .query(&[("name", name), ("bundle", real::BUNDLE)])
            .bearer_auth(&self.token)
            .header("content-type", "text/csv")
            .body(body)
            .send()
            .await
            .expect("import");
        let status = res.status();
        let set: Value = res.json().await.expect("the set");
        assert!(status.is_success(), "import: {status} {set}");
        (set["id"].as_i64().expect("a set id"), started.elapsed())
    }

    /// Fans a set out and waits for it: how long it took.
    async fn fan_out(&self, set: i64) -> Duration {
        let started = Instant::now();
        let envelope = self
            .post(&format!("/api/record-sets/{set}/fanout"), json!({}))
            .await;
        if envelope["status"] == "completed" {
            return started.elapsed();
        }
        let job = envelope["job_id"].as_i64().expect("a job");
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let envelope = self.get(&format!("/api/jobs/{job}")).await;
            if envelope["status"] == "completed" {
                return started.elapsed();
            }
        }
    }

    /// Accepts the first item of the first `n` records that found one.
    async fn accept_some(&self, set: i64, n: usize) {
        let page = self
            .get(&format!(
                "/api/record-sets/{set}/records?filter=unreviewed&limit={n}"
            ))
            .await;
        for record in page["records"].as_array().into_iter().flatten() {
            let id = record["id"].as_i64().unwrap_or_default();
            let items = self.get(&format!("/api/records/{id}/items")).await;
            if let Some(item) = items.as_array().and_then(|i| i.first()) {
                let (id, version) = (item["id"].as_i64(), item["version"].as_i64());
                self.post(
                    &format!("/api/items/{}/triage", id.unwrap_or_default()),
                    json!({"verb": "accept-canonical", "version": version.unwrap_or(1)}),
                )
                .await;
            }
        }
    }

    /// The median time of `REPEATS` reads of `path`.
    async fn median(&self, path: &str) -> Duration {
        let mut times = Vec::with_capacity(REPEATS);
        for _ in 0..REPEATS {
            let started = Instant::now();
            self.get(path).await;
            times.push(started.elapsed());
        }
        times.sort();
        percentile(&times, 0.5)
    }
}

/// The reads of the records view, by name, for a set of `records`.
fn reads(set: i64, records: usize) -> Vec<(&'static str, String)> {
    let last = records.saturating_sub(50);
    let page = |q: &str| format!("/api/record-sets/{set}/records?limit=50{q}");
    vec![
        ("first page", page("")),
        ("middle page", page(&format!("&offset={}", records / 2))),
        ("last page", page(&format!("&offset={last}"))),
        ("unreviewed", page("&filter=unreviewed")),
        ("nothing found", page("&filter=nothing_found")),
        ("errors", page("&filter=errors")),
        ("changed", page("&filter=changed")),
        (
            "search, one match",
            page(&format!("&search=company%20{}1", records / 2)),
        ),
        ("search, every tenth", page("&search=none")),
        (
            "compact, first page",
            format!("/api/record-sets/{set}/lines?limit=200"),
        ),
        ("facets", format!("/api/record-sets/{set}/facets")),
    ]
}

#[tokio::main]
async fn main() {
    let records = setting("RECORDS", 100_000) as usize;
    let db = engine::store::testing::sqlite();
    let dir = std::env::temp_dir().join(format!("switchyard-records-{}", std::process::id()));
    let provider = FakeProvider::start(Behaviour::unlimited(Duration::ZERO)).await;
    write_deployment(&dir, &provider.manifest("fake", "/search", None));
    let token = release::tokens(&db.url, "records", 1).await.remove(0);
    let served = release::serve(&db.url, &dir, "records");
    let pid = served.child.id();
    let client = Client {
        http: reqwest::Client::new(),
        url: served.url.clone(),
        token,
    };
    println!("records_view: {records} records against 100 (SQLite, release build)");

    let (small, _) = client.import("Small", 100).await;
    let rss_before = rss_kib(pid);
    let (big, took) = client.import("Big", records).await;
    println!(
        "records_view: import of {records} records of 10 columns: {:.1} s; server RSS {} MiB before, {} MiB after",
        took.as_secs_f64(),
        rss_before / 1024,
        rss_kib(pid) / 1024
    );

    client.fan_out(small).await;
    let took = client.fan_out(big).await;
    println!(
        "records_view: fan-out of {records} records: {:.1} s, {:.0} fires a second",
        took.as_secs_f64(),
        records as f64 / took.as_secs_f64()
    );
    for set in [small, big] {
        client.accept_some(set, 20).await;
    }

    println!("records_view: | read | 100 records | {records} records | ratio |");
    for ((name, small_path), (_, big_path)) in
        reads(small, 100).into_iter().zip(reads(big, records))
    {
        let small_time = client.median(&small_path).await;
        let big_time = client.median(&big_path).await;
        println!(
            "records_view: | {name} | {:.2} ms | {:.2} ms | {:.1}x |",
            small_time.as_secs_f64() * 1e3,
            big_time.as_secs_f64() * 1e3,
            big_time.as_secs_f64() / small_time.as_secs_f64()
        );
    }
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
}
