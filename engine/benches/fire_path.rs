//! The fire path against a zero-latency local connector: what the engine adds
//! per fire (chain resolution, history rows, item merge, events), what a
//! priced connector under a budget adds (the spend count taken and the
//! charge recorded), and fan-out throughput against the ideal a rate hint
//! allows. Runs on SQLite, and on
//! PostgreSQL when SWITCHYARD_TEST_POSTGRES_URL is set (`make bench` sets it).
//!
//! `make bench` runs it; the figures go to BENCHMARKS.md. `FANOUT_ONLY=5000`
//! runs only the SQLite fan-out without a hint, over that many records (long
//! enough to profile: `perf record -g` on the bench binary), and prints the
//! statements with their times under `RUST_LOG=sqlx::query=debug`.

use std::time::{Duration, Instant};

use engine::connectors::scripted::{ScriptedConnector, Step};
use engine::execution::dispatch::FireRequest;
use engine::import::{parse_csv, ImportLimits};
use engine::packs::Catalog;
use engine::store::testing::{self, TestDatabase};
use engine::store::NewJob;
use engine::store::Store;
use engine::{Engine, EngineConfig};
use model::{BuiltinCapability as B, CostTier, JobStatus};

const PACKS: &str = r#"
[[pack]]
pack_id = "web"
display_name = "Web"
short_label = "w"
intent = "search.web"
preferred_connectors = ["zero"]

[[bundle]]
bundle_id = "bench"
display_name = "Bench"
members = [{ pack = "web" }]
"#;

const RECORDS: usize = 300;
const FIRES: usize = 600;

/// The records of each set: `FANOUT_ONLY`'s number, or [`RECORDS`].
fn records() -> usize {
    std::env::var("FANOUT_ONLY")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(RECORDS)
}

/// An engine over `db` with connector `zero`, hinted at `per_second`; when
/// `priced`, each call costs 0.001 USD against a monthly budget too large
/// to stop it, so every fire takes its cost from the count and records it.
async fn engine(db: &TestDatabase, per_second: Option<f64>, priced: bool) -> (Engine, i64) {
    let store = Store::connect(&db.url).await.expect("database");
    let engine = Engine::new(
        store,
        Catalog::from_toml(PACKS).expect("packs"),
        None,
        EngineConfig::default(),
    );
    let mut reg = ScriptedConnector::registration("zero", CostTier::Free, &[B::SearchWeb.into()]);
    reg.profile.rate_hints.per_second = per_second;
    if priced {
        reg.profile.cost = Some(model::Cost::per_call(
            model::Amount::from_micros(1_000),
            "USD",
        ));
    }
    engine
        .registry()
        .register(reg, ScriptedConnector::new("zero", [Step::Found(3)]))
        .expect("register");
    let mut csv = String::from("name,city\n");
    for i in 0..records() {
        csv.push_str(&format!("Company {i},City {i}\n"));
    }
    let parsed = parse_csv(csv.as_bytes(), ImportLimits::default()).expect("csv");
    let (workspace, _) = engine
        .store()
        .ensure_workspace("bench")
        .await
        .expect("workspace");
    let set = engine
        .store()
        .create_record_set(workspace, "Bench", "bench", false, &parsed.records)
        .await
        .expect("set");
    if priced {
        let budget = model::Budget {
            connector_id: None,
            unit: "USD".into(),
            monthly_limit: model::Amount::units(1_000_000),
        };
        engine
            .store()
            .set_budget(workspace, &budget, "bench")
            .await
            .expect("budget");
    }
    (engine, set)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Sequential fires of one person; answers the mean.
async fn fire_latency(db: &TestDatabase, priced: bool) -> Duration {
    let (engine, set) = engine(db, None, priced).await;
    let records = engine
        .store()
        .records(set, 0, RECORDS as i64)
        .await
        .expect("records");
    let mut took = Vec::with_capacity(FIRES);
    for i in 0..FIRES {
        let started = Instant::now();
        engine
            .dispatcher()
            // Explicit, so a record that already found results fires again.
            .fire(FireRequest::by_person(
                records[i % records.len()].id,
                "web",
                Some("zero".into()),
                "bench",
            ))
            .await
            .expect("fire");
        took.push(started.elapsed());
    }
    took.sort();
    let mean = took.iter().sum::<Duration>() / took.len() as u32;
    println!(
        "{:<8} fire latency over {FIRES} fires{}: mean {:.2} ms, p50 {:.2} ms, p95 {:.2} ms",
        db.kind(),
        if priced {
            " (priced, under a budget)"
        } else {
            ""
        },
        mean.as_secs_f64() * 1e3,
        percentile(&took, 0.5).as_secs_f64() * 1e3,
        percentile(&took, 0.95).as_secs_f64() * 1e3,
    );
    mean
}

async fn fanout(db: &TestDatabase, per_second: Option<f64>) {
    let (engine, set) = engine(db, per_second, false).await;
    let started = Instant::now();
    let job = engine
        .jobs()
        .start(&NewJob::fanout(set, &["web".to_owned()], "bench"))
        .await
        .expect("job");
    let job = loop {
        let job = engine.store().job(job.id).await.expect("job");
        if job.status != JobStatus::Running {
            break job;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let elapsed = started.elapsed().as_secs_f64();
    let rate = job.progress.done as f64 / elapsed;
    match per_second {
        Some(hint) => println!(
            "{:<8} fan-out of {} fires at a {hint}/s hint: {rate:.1} fires/s = {:.3} of the ideal",
            db.kind(),
            job.progress.done,
            rate / hint
        ),
        None => println!(
            "{:<8} fan-out of {} fires, no hint: {rate:.0} fires/s",
            db.kind(),
            job.progress.done,
        ),
    }
}

#[tokio::main]
async fn main() {
    // `cargo bench` passes --bench; nothing else is read.
    if std::env::var_os("FANOUT_ONLY").is_some() {
        // `RUST_LOG=sqlx::query=debug` prints each statement with its time.
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
        let db = testing::sqlite();
        fanout(&db, None).await;
        return;
    }
    for db in testing::all().await {
        let free = fire_latency(&db, false).await;
        let priced = fire_latency(&db, true).await;
        println!(
            "{:<8} a priced fire's mean latency is {:.2} times an unpriced one's",
            db.kind(),
            priced.as_secs_f64() / free.as_secs_f64()
        );
        fanout(&db, None).await;
    }
    for db in testing::all().await {
        fanout(&db, Some(100.0)).await;
    }
}
