//! What the engine's integration tests share: the fake provider, an engine
//! over a test database with a one-pack catalogue, manifest connectors
//! pointed at the fake provider, record sets and job waits.
#![allow(dead_code)] // each test binary uses a different part of it

pub mod provider;

use std::sync::Arc;
use std::time::Duration;

use engine::connectors::guard::{AllowList, Outbound};
use engine::connectors::manifest::{Format, Manifest, ManifestConnector};
use engine::import::{parse_csv, ImportLimits};
use engine::packs::Catalog;
use engine::store::testing::TestDatabase;
use engine::store::NewJob;
use engine::store::Store;
use engine::{Engine, EngineConfig};
use model::{Job, JobStatus};

/// Pack `web` (search.web) walks `chain`, in bundle `test`.
pub fn packs(chain: &[&str]) -> Catalog {
    let chain = chain
        .iter()
        .map(|c| format!("{c:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    Catalog::from_toml(&format!(
        r#"
[[pack]]
pack_id = "web"
display_name = "Web"
short_label = "w"
intent = "search.web"
preferred_connectors = [{chain}]

[[bundle]]
bundle_id = "test"
display_name = "Test"
members = [{{ pack = "web" }}]
"#
    ))
    .expect("the test catalogue")
}

/// An engine over `db` with pack `web` walking `chain`.
pub async fn engine(db: &TestDatabase, chain: &[&str], config: EngineConfig) -> Engine {
    let store = Store::connect(&db.url)
        .await
        .unwrap_or_else(|e| panic!("cannot open the {} test database: {e}", db.kind()));
    Engine::new(store, packs(chain), None, config)
}

/// Registers a scripted connector `id` serving search.web, free, with a
/// `per_second` rate hint when given.
pub fn scripted(
    engine: &Engine,
    id: &str,
    per_second: Option<f64>,
    steps: Vec<engine::connectors::scripted::Step>,
) -> Arc<engine::connectors::scripted::ScriptedConnector> {
    use engine::connectors::scripted::ScriptedConnector;
    let connector = ScriptedConnector::new(id, steps);
    let mut reg = ScriptedConnector::registration(
        id,
        model::CostTier::Free,
        &[model::BuiltinCapability::SearchWeb.into()],
    );
    reg.profile.rate_hints.per_second = per_second;
    engine
        .registry()
        .register(reg, connector.clone())
        .expect("registered");
    connector
}

/// Registers a manifest connector that may reach 127.0.0.1.
pub fn register_manifest(engine: &Engine, text: &str) {
    let manifest = Manifest::parse(text, Format::Toml).expect("a valid manifest");
    let registration = manifest.registration();
    engine
        .registry()
        .register(
            registration,
            Arc::new(ManifestConnector::new(
                Arc::new(manifest),
                Outbound::new(AllowList::parse("127.0.0.1")),
                Arc::new(|_| None),
            )),
        )
        .expect("registered");
}

/// A record set of `n` companies under bundle `test`; its id.
pub async fn record_set(engine: &Engine, name: &str, n: usize) -> i64 {
    let mut csv = String::from("name\n");
    for i in 0..n {
        csv.push_str(&format!("{name} {i}\n"));
    }
    let limits = ImportLimits {
        max_records: n.max(1),
        ..ImportLimits::default()
    };
    let parsed = parse_csv(csv.as_bytes(), limits).expect("csv");
    let (workspace, _) = engine
        .store()
        .ensure_workspace("test")
        .await
        .expect("workspace");
    engine
        .store()
        .create_record_set(workspace, name, "test", false, &parsed.records)
        .await
        .expect("record set")
}

/// Starts a fan-out of pack `web` over a record set.
pub async fn fan_out(engine: &Engine, set: i64) -> Job {
    engine
        .jobs()
        .start(&NewJob::fanout(set, &["web".to_owned()], "ana"))
        .await
        .expect("a fan-out")
}

/// Waits until a job is no longer running (at most `limit`).
pub async fn finished(engine: &Engine, job_id: i64, limit: Duration) -> Job {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let job = engine.store().job(job_id).await.expect("the job");
        if job.status != JobStatus::Running {
            return job;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "job {job_id} still running after {limit:?}: {job:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A wait in a test that fails after 30 s instead of hanging.
pub struct Deadline {
    what: &'static str,
    until: tokio::time::Instant,
}

impl Deadline {
    pub fn new(what: &'static str) -> Self {
        Self {
            what,
            until: tokio::time::Instant::now() + Duration::from_secs(30),
        }
    }

    pub async fn tick(&mut self) {
        assert!(
            tokio::time::Instant::now() < self.until,
            "waited 30 s for {}",
            self.what
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
