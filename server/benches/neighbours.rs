//! The noisy-neighbour benchmark: does one workspace at full abuse take the
//! server away from another? One real `switchyard serve` (the release
//! build) and a local provider that answers in 50 ms and refuses (429) past
//! 50 calls a second, shared by every workspace through the operator's
//! connector `fake` (hint 40 a second). Workspace B's people click chips
//! (a fire of pack `web`, walking `fake`) every half to one and a half
//! seconds, first alone ("quiet"), then while workspace A, through its
//! admin's token, at once:
//! - floods `fake` with async capability calls, retrying each refusal
//!   after 20 ms;
//! - sends queries the provider refuses as bad input (400) through `fake`;
//! - imports 100,000-record files, three at a time;
//! - calls its own manifest `heavy` 60 at a time
//!   (`NEIGHBOUR_HEAVY_AT_ONCE`), whose provider answers after two seconds
//!   with the largest answer a mapping may read, mapped through a
//!   descendant path.
//!
//! Reports B's clicks in each phase (answered with something found, p50,
//! p99, max), the ratio of the noisy p99 to the quiet one (goal: at most 2),
//! what A's requests were answered, the provider's counts and the server's
//! resident memory.
//!
//! ```sh
//! cargo bench -p server --bench neighbours                                   # 60 s a phase, SQLite
//! NEIGHBOUR_SECONDS=20 cargo bench -p server --bench neighbours              # a shorter run
//! NEIGHBOUR_ABUSE=imports cargo bench -p server --bench neighbours          # one abuse alone (async, bad, imports, heavy)
//! ./scripts/with-postgres.sh cargo bench -p server --bench neighbours       # on PostgreSQL
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

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use measure::{percentile, rss_kib, setting, Dice};
use provider::{Behaviour, FakeProvider};
use real::{write_deployment, Served, BUNDLE};
use serde_json::{json, Value};

const PASSWORD: &str = "neighbour bench password";
/// Workspace B's people clicking at once.
const CLICKERS: usize = 8;
/// Enough for every click of two phases of two minutes.
const RECORDS_OF_B: usize = 3_000;
const RECORDS_PER_IMPORT: usize = 100_000;

/// B's clicks in one phase.
#[derive(Default)]
struct Clicks {
    /// Each click's time, answered or not.
    took: Vec<Duration>,
    /// Clicks answered 200 with something found.
    found: usize,
    /// The others: status and the start of the answer.
    failed: Vec<String>,
}

/// B's records not yet fired, each clicked once: a fired record's chip
/// has nothing more to try.
struct Unfired {
    ids: Vec<i64>,
    taken: AtomicUsize,
}

impl Unfired {
    fn next(&self) -> Option<i64> {
        self.ids
            .get(self.taken.fetch_add(1, Ordering::Relaxed))
            .copied()
    }
}

/// How A's requests were answered: by what A was doing, by status.
type Answers = Arc<Mutex<BTreeMap<(&'static str, u16), u64>>>;

fn client(token: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        "authorization",
        format!("Bearer {token}").parse().expect("a header"),
    );
    reqwest::Client::builder()
        .default_headers(headers)
        .timeout(Duration::from_secs(120))
        .build()
        .expect("a client")
}

/// One of B's people clicking random records until `until`.
async fn clicker(
    http: reqwest::Client,
    url: String,
    records: Arc<Unfired>,
    seed: u64,
    until: Instant,
    clicks: Arc<Mutex<Clicks>>,
) {
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15 ^ seed);
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(500 + dice.below(1_000))).await;
        let Some(record) = records.next() else {
            eprintln!("neighbours: B ran out of unfired records");
            return;
        };
        let start = Instant::now();
        let answer = http
            .post(format!("{url}/api/records/{record}/fire"))
            .json(&json!({ "pack": "web" }))
            .send()
            .await;
        let (status, body) = match answer {
            Ok(res) => (res.status().as_u16(), res.text().await.unwrap_or_default()),
            Err(e) => (0, e.to_string()),
        };
        let took = start.elapsed();
        let envelope: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let found = envelope["results"][0]["attempts"]
            .as_array()
            .is_some_and(|a| a.iter().any(|h| h["outcome"] == "found"));
        let mut c = clicks.lock().unwrap();
        c.took.push(took);
        if status == 200 && found {
            c.found += 1;
        } else {
            c.failed.push(format!(
                "{status} {}",
                body.chars().take(300).collect::<String>()
            ));
        }
    }
}

/// B's people clicking for `seconds`; what they met.
async fn phase(
    url: &str,
    clients: &[reqwest::Client],
    records: &Arc<Unfired>,
    seconds: u64,
    seed: u64,
) -> Clicks {
    let clicks = Arc::new(Mutex::new(Clicks::default()));
    let until = Instant::now() + Duration::from_secs(seconds);
    let people: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(n, http)| {
            tokio::spawn(clicker(
                http.clone(),
                url.to_owned(),
                records.clone(),
                seed + n as u64,
                until,
                clicks.clone(),
            ))
        })
        .collect();
    for person in people {
        let _ = person.await;
    }
    let met = std::mem::take(&mut *clicks.lock().unwrap());
    met
}

/// Sends what `request` makes, again and again until `until`, counting the
/// answers under `doing`; waits `pause` after a refusal (429).
async fn hammer(
    doing: &'static str,
    until: Instant,
    pause: Duration,
    answers: Answers,
    request: impl Fn(u64) -> reqwest::RequestBuilder,
) {
    let mut n = 0u64;
    while Instant::now() < until {
        n += 1;
        let status = match request(n).send().await {
            Ok(res) => {
                let status = res.status().as_u16();
                let _ = res.bytes().await;
                status
            }
            Err(_) => 0,
        };
        *answers.lock().unwrap().entry((doing, status)).or_default() += 1;
        if status == 429 || status == 0 {
            tokio::time::sleep(pause).await;
        }
    }
}

/// A request A sends again and again, its `n`th copy.
type Make = Box<dyn Fn(u64) -> reqwest::RequestBuilder + Send + Sync>;

/// Workspace A at full abuse until `until`, through `http` (its admin):
/// the abuses `kinds` names (`async`, `bad`, `imports`, `heavy`).
fn abuse(
    http: &reqwest::Client,
    url: &str,
    kinds: &str,
    until: Instant,
    answers: &Answers,
) -> Vec<tokio::task::JoinHandle<()>> {
    let call = format!("{url}/api/capabilities/search.web/call");
    let import = format!("{url}/api/record-sets");
    let mut big = String::from("name,city,notes\n");
    for i in 0..RECORDS_PER_IMPORT {
        big.push_str(&format!("Company {i},City {i},Notes about company {i}\n"));
    }
    let (h, c) = (http.clone(), call.clone());
    let flood: Make = Box::new(move |n| {
        let body = json!({ "query": format!("flood {n}"), "connector": "fake", "async": true });
        h.post(&c).json(&body)
    });
    let (h, c) = (http.clone(), call.clone());
    let bad: Make = Box::new(move |n| {
        h.post(&c)
            .json(&json!({ "query": format!("bad {n}"), "connector": "fake" }))
    });
    let h = http.clone();
    let imports: Make = Box::new(move |n| {
        h.post(&import)
            .query(&[("name", format!("Big {n}")), ("bundle", BUNDLE.to_owned())])
            .header("content-type", "text/csv")
            .body(big.clone())
    });
    let h = http.clone();
    let heavy: Make = Box::new(move |n| {
        h.post(&call)
            .json(&json!({ "query": format!("heavy {n}"), "connector": "heavy" }))
    });
    // What, how many at once, and the pause after a refusal (ms).
    let abuses: [(&str, &'static str, usize, u64, Make); 4] = [
        ("async", "async calls on fake", 4, 20, flood),
        ("bad", "bad queries on fake", 2, 20, bad),
        ("imports", "imports of 100,000 records", 3, 200, imports),
        (
            "heavy",
            "calls on its heavy manifest",
            setting("NEIGHBOUR_HEAVY_AT_ONCE", 60) as usize,
            20,
            heavy,
        ),
    ];
    let mut tasks = Vec::new();
    for (kind, doing, copies, pause, make) in abuses {
        if !kinds.split(',').any(|k| k.trim() == kind) {
            continue;
        }
        let make = Arc::new(make);
        for _ in 0..copies {
            let make = make.clone();
            tasks.push(tokio::spawn(hammer(
                doing,
                until,
                Duration::from_millis(pause),
                answers.clone(),
                move |n| make(n),
            )));
        }
    }
    tasks
}

/// Workspace A's manifest: the provider's heaviest answer, read through a
/// descendant path.
fn heavy_manifest(provider: &FakeProvider) -> String {
    provider
        .manifest("heavy", "/heavy", None)
        .replace("\"$.hits[*]\"", "\"$..hits[*]\"")
}

fn report(name: &str, c: &Clicks) -> Duration {
    let mut sorted = c.took.clone();
    sorted.sort();
    if sorted.is_empty() {
        println!("{name:<8} no clicks");
        return Duration::ZERO;
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let p99 = percentile(&sorted, 0.99);
    println!(
        "{name:<8} {:>7} {:>8.1}% {:>9.1} {:>9.1} {:>9.1}",
        sorted.len(),
        100.0 * c.found as f64 / sorted.len() as f64,
        ms(percentile(&sorted, 0.5)),
        ms(p99),
        ms(sorted[sorted.len() - 1]),
    );
    for failure in c.failed.iter().take(3) {
        println!("         not found: {failure}");
    }
    p99
}

#[tokio::main]
async fn main() {
    let seconds = setting("NEIGHBOUR_SECONDS", 60);
    let kinds =
        std::env::var("NEIGHBOUR_ABUSE").unwrap_or_else(|_| "async,bad,imports,heavy".into());
    let db = match engine::store::testing::postgres().await {
        Some(pg) => pg,
        None => engine::store::testing::sqlite(),
    };
    let dir = std::env::temp_dir().join(format!("switchyard-neighbours-{}", std::process::id()));
    let provider = FakeProvider::start(Behaviour::limited(Duration::from_millis(50), 50.0)).await;
    write_deployment(&dir, &provider.manifest("fake", "/search", Some(40.0)));
    let switchyard = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_switchyard"));
        c.current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
            .env("DATABASE_URL", &db.url)
            .env("SWITCHYARD_FETCH_ALLOW", "127.0.0.1")
            .env("RUST_LOG", "warn,server=info")
            .env_remove("SWITCHYARD_PUBLIC_URL");
        c
    };
    let a = client(&real::admin_token(
        switchyard,
        "admin@a.example",
        "a",
        PASSWORD,
    ));
    let b: Vec<_> = (0..CLICKERS)
        .map(|n| {
            client(&real::admin_token(
                switchyard,
                &format!("person{n}@b.example"),
                "b",
                PASSWORD,
            ))
        })
        .collect();
    let mut serve = switchyard();
    serve
        .args(["serve", "--addr", "127.0.0.1:0", "--connectors"])
        .arg(dir.join("connectors"))
        .arg("--packs")
        .arg(dir.join("packs.toml"));
    let served = Served::start(serve, "neighbours");
    let url = served.url.clone();
    let pid = served.child.id();

    let saved = a
        .post(format!("{url}/api/manifests"))
        .header("content-type", "application/toml")
        .body(heavy_manifest(&provider))
        .send()
        .await
        .expect("A's manifest");
    assert_eq!(
        saved.status().as_u16(),
        201,
        "{}",
        saved.text().await.unwrap_or_default()
    );
    let (_, ids) = release::import_companies(&b[0], &url, None, "B's set", RECORDS_OF_B).await;
    assert_eq!(ids.len(), RECORDS_OF_B, "B's set");
    let records = Arc::new(Unfired {
        ids,
        taken: AtomicUsize::new(0),
    });
    println!(
        "neighbours: {CLICKERS} people of B click for {seconds} s alone, then {seconds} s beside A ({kinds}), on {}",
        db.kind()
    );

    // A moment to warm up, unmeasured; then B alone.
    phase(&url, &b, &records, 3, 1).await;
    let rss_start = rss_kib(pid);
    let quiet = phase(&url, &b, &records, seconds, 100).await;
    let rss_quiet = rss_kib(pid);

    let answers = Answers::default();
    let until = Instant::now() + Duration::from_secs(seconds);
    let most_rss = Arc::new(AtomicU64::new(0));
    let sampler = {
        let most_rss = most_rss.clone();
        tokio::spawn(async move {
            loop {
                most_rss.fetch_max(rss_kib(pid), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };
    // A starts a moment before B's measured clicks, so they meet it at full strength.
    let abusers = abuse(&a, &url, &kinds, until + Duration::from_secs(2), &answers);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let noisy = phase(&url, &b, &records, seconds, 100).await;
    for task in abusers {
        task.abort();
    }
    sampler.abort();

    println!(
        "{:<8} {:>7} {:>9} {:>9} {:>9} {:>9}",
        "B", "clicks", "found", "p50 ms", "p99 ms", "max ms"
    );
    let quiet_p99 = report("quiet", &quiet);
    let noisy_p99 = report("noisy", &noisy);
    println!(
        "neighbours: B's p99 beside A is {:.2} x its p99 alone (goal: at most 2)",
        noisy_p99.as_secs_f64() / quiet_p99.as_secs_f64().max(1e-9)
    );
    for ((doing, status), count) in answers.lock().unwrap().iter() {
        println!("A: {doing:<30} {status:>4} x {count}");
    }
    println!(
        "provider: served {}, refused (429) {}, rejected as bad input (400) {}",
        provider.counters.served(),
        provider.counters.refused(),
        provider.counters.rejected.load(Ordering::SeqCst)
    );
    println!(
        "server RSS: {} MiB before, {} MiB after B alone, {} MiB at most beside A",
        rss_start / 1024,
        rss_quiet / 1024,
        most_rss.load(Ordering::Relaxed) / 1024
    );
    let log = served.log();
    let troubles: Vec<_> = log
        .lines()
        .filter(|l| l.contains("WARN") || l.contains("ERROR"))
        .collect();
    println!("server: {} warnings and errors logged", troubles.len());
    for line in troubles.iter().take(10) {
        println!("  {line}");
    }
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
}
