//! Three real `switchyard serve` processes on one PostgreSQL database and a
//! local provider with latency and a rate limit behave as one deployment:
//! a viewer on one process sees a fire made through another within a
//! second, resumes its stream on a third without losing or repeating an
//! event, a fan-out spread over all three keeps the connector's rate hint
//! at the provider without a 429, and when the process running a fan-out is
//! killed (SIGKILL), the others finish its job without firing any record
//! twice, and its viewers on other processes see the progress go on.

mod common;
#[path = "../../engine/tests/common/provider.rs"]
mod provider;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::real::{admin_token, sse_blocks, write_deployment, Served, BUNDLE};
use futures::StreamExt;
use provider::{Behaviour, FakeProvider};
use serde_json::{json, Value};
use tokio::sync::mpsc;

const PASSWORD: &str = "scale-out test password";
const HINT: f64 = 50.0;
/// How late, in seconds, a request may reach the provider after the slot
/// its process reserved: on this 2-core machine (three servers, PostgreSQL
/// and the test) scheduling delays reach 100 to 200 ms, and a late request
/// arrives together with the next on-time ones (runs saw 53 in one second
/// under the 50/s hint, and a 429 from a bucket of five).
const LATE: f64 = 0.2;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn switchyard(database_url: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    cmd.current_dir(root())
        .env("DATABASE_URL", database_url)
        .env("SWITCHYARD_FETCH_ALLOW", "127.0.0.1")
        .env("RUST_LOG", "info")
        .env_remove("SWITCHYARD_PUBLIC_URL");
    cmd
}

fn serve(database_url: &str, dir: &Path, name: &str) -> Served {
    let mut cmd = switchyard(database_url);
    cmd.args(["serve", "--addr", "127.0.0.1:0"])
        .args(["--lease-seconds", "2", "--heartbeat-seconds", "0.5"])
        .arg("--connectors")
        .arg(dir.join("connectors"))
        .arg("--packs")
        .arg(dir.join("packs.toml"));
    Served::start(cmd, name)
}

struct Api {
    http: reqwest::Client,
}

impl Api {
    async fn send(&self, req: reqwest::RequestBuilder) -> (u16, Value) {
        let res = req.send().await.expect("the process answers");
        let status = res.status().as_u16();
        let text = res.text().await.unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    async fn import(&self, on: &Served, name: &str, records: std::ops::Range<usize>) -> i64 {
        let mut csv = String::from("name\n");
        for i in records {
            csv.push_str(&format!("Record {i}\n"));
        }
        let (status, body) = self
            .send(
                self.http
                    .post(format!("{}/api/record-sets", on.url))
                    .query(&[("name", name), ("bundle", BUNDLE)])
                    .header("content-type", "text/csv")
                    .body(csv),
            )
            .await;
        assert!(status == 200 || status == 201, "{status} {body}");
        body["id"].as_i64().unwrap()
    }

    async fn records(&self, on: &Served, set: i64) -> Vec<i64> {
        let (_, page) = self
            .send(self.http.get(format!(
                "{}/api/record-sets/{set}/records?limit=500",
                on.url
            )))
            .await;
        common::record_ids(&page)
    }

    async fn fan_out(&self, on: &Served, set: i64) -> i64 {
        let (status, body) = self
            .send(
                self.http
                    .post(format!("{}/api/record-sets/{set}/fanout", on.url))
                    .json(&json!({ "packs": ["web"] })),
            )
            .await;
        assert!(status == 200 || status == 202, "{status} {body}");
        body["job_id"].as_i64().unwrap()
    }

    async fn job(&self, on: &Served, job: i64) -> Value {
        let (status, body) = self
            .send(self.http.get(format!("{}/api/jobs/{job}", on.url)))
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }
}

/// An open event stream: its events with when each arrived.
struct Stream {
    events: mpsc::UnboundedReceiver<(Instant, u64, Value)>,
    seen: Vec<(Instant, u64, Value)>,
    _reader: tokio::task::JoinHandle<()>,
}

impl Stream {
    async fn open(api: &Api, on: &Served, set: i64, last_id: Option<u64>) -> Self {
        let mut req = api
            .http
            .get(format!("{}/api/events?record_set={set}", on.url));
        if let Some(id) = last_id {
            req = req.header("Last-Event-ID", id.to_string());
        }
        let res = req.send().await.unwrap();
        assert_eq!(res.status(), 200);
        let (tx, events) = mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            let mut bytes = res.bytes_stream();
            let mut buffer = String::new();
            while let Some(Ok(chunk)) = bytes.next().await {
                buffer.push_str(&String::from_utf8_lossy(&chunk));
                for (id, data) in sse_blocks(&mut buffer) {
                    if let Ok(event) = serde_json::from_str::<Value>(&data) {
                        if tx.send((Instant::now(), id, event)).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Self {
            events,
            seen: Vec::new(),
            _reader: reader,
        }
    }

    /// Reads events until one matches `until` (within `limit`); returns it.
    async fn until(
        &mut self,
        limit: Duration,
        until: impl Fn(&Value) -> bool,
    ) -> (Instant, u64, Value) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let event = tokio::time::timeout_at(deadline, self.events.recv())
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "no matching event within {limit:?}; got {:?}",
                        self.seen
                            .iter()
                            .map(|(_, id, e)| (id, e["type"].clone()))
                            .collect::<Vec<_>>()
                    )
                })
                .expect("the stream stays open");
            self.seen.push(event.clone());
            if until(&event.2) {
                return event;
            }
        }
    }
}

async fn scalar(url: &str, sql: &str) -> i64 {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(url).await.unwrap();
    sqlx::query_scalar(sql).fetch_one(&mut conn).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_on_one_postgresql_behave_as_one() {
    let Some(db) = engine::store::testing::postgres().await else {
        return;
    };
    // The provider's bucket holds what may arrive late at once (see LATE).
    let provider = FakeProvider::start(Behaviour {
        burst: HINT * LATE,
        ..Behaviour::limited(Duration::from_millis(50), HINT)
    })
    .await;
    let dir = std::env::temp_dir().join(format!("switchyard-scale-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    write_deployment(&dir, &provider.manifest("fake", "/search", Some(HINT)));
    let token = admin_token(|| switchyard(&db.url), "ops@example.org", "scale", PASSWORD);
    let mut a = serve(&db.url, &dir, "A");
    let b = serve(&db.url, &dir, "B");
    let c = serve(&db.url, &dir, "C");
    let api = Api {
        http: reqwest::Client::builder()
            .default_headers(
                [(
                    reqwest::header::AUTHORIZATION,
                    format!("Bearer {token}").parse().unwrap(),
                )]
                .into_iter()
                .collect(),
            )
            .build()
            .unwrap(),
    };
    let all_logs = [a.output.clone(), b.output.clone(), c.output.clone()];
    let logs = || {
        all_logs
            .iter()
            .map(|log| log.lock().unwrap().clone())
            .collect::<String>()
    };

    // (a) A viewer on C sees a fire made through A within a second.
    let one = api.import(&a, "One", 1000..1001).await;
    let record = api.records(&a, one).await[0];
    let mut on_c = Stream::open(&api, &c, one, None).await;
    on_c.until(Duration::from_secs(5), |e| e["type"] == "presence")
        .await;
    let sent = Instant::now();
    let (status, fired) = api
        .send(
            api.http
                .post(format!("{}/api/records/{record}/fire", a.url))
                .json(&json!({ "pack": "web" })),
        )
        .await;
    assert_eq!(status, 200, "{fired}");
    let answered = Instant::now();
    let (found_at, _, found) = on_c
        .until(Duration::from_secs(5), |e| {
            e["type"] == "fire_news" && e["chip"]["state"] == "found"
        })
        .await;
    assert_eq!(found["record_id"], record);
    let firing = on_c
        .seen
        .iter()
        .position(|(_, _, e)| e["type"] == "fire_news" && e["chip"]["state"] == "firing")
        .expect("C saw the chip fire");
    let firing_heard = on_c.seen[firing].0.saturating_duration_since(sent);
    let found_heard = found_at.saturating_duration_since(answered);
    eprintln!("C heard the chip fire {firing_heard:?} after the click on A, and find {found_heard:?} after A answered");
    assert!(firing_heard < Duration::from_secs(1), "{firing_heard:?}");
    assert!(found_heard < Duration::from_secs(1), "{found_heard:?}");

    // (b) The viewer drops after the firing chip and resumes on B: the same
    // events after it, none lost, none repeated.
    let resume_from = on_c.seen[firing].1;
    let expected: Vec<(u64, Value)> = on_c.seen[firing + 1..]
        .iter()
        .map(|(_, id, e)| (*id, e.clone()))
        .collect();
    drop(on_c);
    let mut on_b = Stream::open(&api, &b, one, Some(resume_from)).await;
    on_b.until(Duration::from_secs(5), |e| {
        e["type"] == "fire_news" && e["chip"]["state"] == "found"
    })
    .await;
    let replayed: Vec<(u64, Value)> = on_b
        .seen
        .iter()
        .map(|(_, id, e)| (*id, e.clone()))
        .filter(|(_, e)| e["type"] != "presence")
        .collect();
    let expected: Vec<(u64, Value)> = expected
        .into_iter()
        .filter(|(_, e)| e["type"] != "presence")
        .collect();
    assert_eq!(replayed, expected, "the same events, in the same order");
    drop(on_b);

    // (c) Three fan-outs of 100 records, one through each process, under
    // one 50/s hint.
    let mut sets = Vec::new();
    for (p, name) in [(&a, "Through A"), (&b, "Through B"), (&c, "Through C")] {
        let n = sets.len() * 100;
        sets.push(api.import(p, name, n..n + 100).await);
    }
    let mut watching_a_set_on_c = Stream::open(&api, &c, sets[0], None).await;
    let mut jobs = Vec::new();
    for (p, set) in [&a, &b, &c].into_iter().zip(&sets) {
        jobs.push(api.fan_out(p, *set).await);
    }

    // (d) Kill A mid-way through its fan-out.
    loop {
        let job = api.job(&b, jobs[0]).await;
        if job["progress"]["done"].as_u64().unwrap() >= 20 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    a.kill_9();
    let killed_at = Instant::now();
    for job in &jobs {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let body = api.job(&b, *job).await;
            if body["status"] != "pending" {
                assert_eq!(body["status"], "completed", "{body}\n{}", logs());
                break;
            }
            assert!(
                Instant::now() < deadline,
                "job {job} never ended: {body}\n{}",
                logs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // C's viewer of A's set saw the job go on after the kill, to its end.
    let (_, _, last) = watching_a_set_on_c
        .until(Duration::from_secs(10), |e| {
            e["type"] == "job_changed" && e["job"]["status"] == "completed"
        })
        .await;
    assert_eq!(last["job"]["progress"]["done"], 100);
    assert!(
        watching_a_set_on_c
            .seen
            .iter()
            .any(|(at, _, e)| *at > killed_at && e["type"] == "job_changed"),
        "progress events after the kill"
    );

    // No record fired twice; a record not fired at all is one whose fire
    // the kill interrupted (marked so, for a person to fire again).
    let calls = provider.counters.calls_per_query();
    let twice: Vec<_> = calls.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "fired twice: {twice:?}");
    let interrupted = scalar(
        &db.url,
        "SELECT COUNT(*) FROM job_tasks WHERE outcome = 'interrupted'",
    )
    .await;
    let fired: HashSet<&String> = calls.keys().collect();
    let unfired = (0..300)
        .filter(|i| !fired.contains(&format!("Record {i}")))
        .count() as i64;
    assert!(
        unfired <= interrupted,
        "{unfired} records never fired, {interrupted} interrupted"
    );
    assert!(interrupted <= 10, "only what was in flight: {interrupted}");
    assert_eq!(
        scalar(
            &db.url,
            "SELECT COUNT(*) FROM fires WHERE status = 'running'"
        )
        .await,
        0,
        "no fire stays open"
    );
    assert_eq!(
        scalar(
            &db.url,
            "SELECT COUNT(*) FROM connector_history WHERE outcome IS NULL"
        )
        .await,
        0,
        "no attempt stays open"
    );

    // The provider never saw more than the hint (and 5 %, and what arrives
    // late) in any second, and refused nothing.
    assert_eq!(provider.counters.refused(), 0, "no 429\n{}", logs());
    let most = provider.counters.most_in_any_second();
    eprintln!(
        "most requests in one second: {most}; interrupted by the kill: {interrupted} ({unfired} never reached the provider); taken over {:?} after the kill",
        killed_at.elapsed()
    );
    // Counted where they arrive (see LATE). Three processes without the
    // shared rate would send about 150.
    assert!(
        (most as f64) <= HINT * 1.05 + HINT * LATE,
        "{most} requests in one second under a {HINT}/s hint"
    );

    // The operator's command works on the shared database while they run.
    let cleared = switchyard(&db.url)
        .args(["connector", "clear", "--id", "fake"])
        .output()
        .unwrap();
    assert!(cleared.status.success());
    assert_eq!(
        String::from_utf8_lossy(&cleared.stdout).lines().last(),
        Some("\"fake\" had nothing to clear.")
    );
    let _ = std::fs::remove_dir_all(&dir);
}
