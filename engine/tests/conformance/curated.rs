//! The modes that need an engine: an adapter behind an engine over its own
//! database, for a record named Acme in each of two workspaces. Its
//! curated layer (duplicates, redelivery, changed words, deletion), a call
//! that got no answer, a workspace's own key, and results that stay in the
//! workspace that fired.

use std::sync::Arc;
use std::time::Duration;

use engine::execution::dispatch::{DispatchConfig, FireRequest};
use engine::import::{parse_csv, ImportLimits};
use engine::packs::Catalog;
use engine::store::{testing, usable_results, Store};
use engine::tenancy::secrets::Sealer;
use engine::{Engine, EngineConfig};
use model::{Capability, FireOutcome, FireReport, TriageVerb};

use crate::fake::{start_fake, Answer, Fake};
use crate::fixtures::Fixture;
use crate::modes::{count, ensure, key_sent, not_applicable, Cell, NEVER_EMPTY};
use crate::subjects::{fire_with, Limits, Subject, KEY};

/// A workspace's own key for the provider: it must reach the provider for
/// that workspace's fires only.
const OWN_KEY: &str = "sk-workspace-OWN-0815";

/// The key that seals workspace secrets in these engines.
const SEALING_KEY: &str = "c3dpdGNoeWFyZCB0ZXN0IGtleSwgMzIgYnl0ZXMhISE=";

/// An adapter behind an engine over its own database: pack `p` walks it
/// alone, for a record named Acme in workspace `w` and one in workspace `v`.
struct Curated {
    engine: Engine,
    /// (workspace, record) in `w`, then in `v`.
    here: (i64, i64),
    there: (i64, i64),
    connector: String,
    _db: testing::TestDatabase,
}

impl Curated {
    async fn new(subject: &Subject, fixture: &Fixture, base: &str, config: EngineConfig) -> Self {
        let db = testing::sqlite();
        let store = Store::connect(&db.url).await.unwrap();
        let mut reg = subject.registration();
        // Its pace is the throttle's to prove, not this suite's.
        reg.profile.rate_hints = model::RateHints::default();
        let catalog = Catalog::from_toml(&format!(
            "[[pack]]\npack_id = \"p\"\ndisplay_name = \"P\"\nshort_label = \"p\"\nintent = \"{}\"\nquery_template = \"{{website}}\"\npreferred_connectors = [\"{}\"]\n\n[[bundle]]\nbundle_id = \"b\"\ndisplay_name = \"B\"\nmembers = [{{ pack = \"p\" }}]\n",
            fixture.intent, reg.profile.id
        ))
        .unwrap();
        let connector = reg.profile.id.clone();
        let env: engine::connectors::registry::EnvLookup = Arc::new(|_| Some(KEY.to_owned()));
        let config = EngineConfig {
            secrets: Some(Sealer::from_key_text(SEALING_KEY).unwrap()),
            ..config
        };
        let engine = Engine::new(store, catalog, Some(env), config);
        engine
            .registry()
            .register(reg, subject.connector(Limits::default(), base))
            .unwrap();
        let query = subject.query(fixture, base);
        let here = Self::acme_in(&engine, "w", &query).await;
        let there = Self::acme_in(&engine, "v", &query).await;
        Self {
            engine,
            here,
            there,
            connector,
            _db: db,
        }
    }

    /// Workspace `name` and its record Acme, whose `website` the pack
    /// fires with (`query`: the name, or a website for intents that read
    /// one).
    async fn acme_in(engine: &Engine, name: &str, query: &str) -> (i64, i64) {
        let (workspace, _) = engine.store().ensure_workspace(name).await.unwrap();
        let csv = format!("name,website\nAcme,{query}\n");
        let parsed = parse_csv(csv.as_bytes(), ImportLimits::default()).unwrap();
        let set = engine
            .store()
            .create_record_set(workspace, "Set", "b", false, &parsed.records)
            .await
            .unwrap();
        let record = engine.store().records(set, 0, 1).await.unwrap()[0].id;
        (workspace, record)
    }

    /// Fires pack `p` on `record` through the adapter (again, too).
    async fn report(&self, record: i64) -> Result<FireReport, String> {
        self.engine
            .dispatcher()
            .fire(FireRequest::by_person(
                record,
                "p",
                Some(self.connector.clone()),
                "ana",
            ))
            .await
            .map_err(|e| e.to_string())
    }

    /// Fires on the record in `w`, which must find or find nothing; the
    /// fire's id.
    async fn fire(&self) -> Result<i64, String> {
        self.fire_on(self.here.1).await
    }

    async fn fire_on(&self, record: i64) -> Result<i64, String> {
        let report = self.report(record).await?;
        let attempt = report
            .attempts
            .first()
            .ok_or_else(|| format!("no attempt: {:?} {:?}", report.skipped, report.notes))?;
        ensure(
            matches!(
                attempt.end.outcome,
                Some(FireOutcome::Found | FireOutcome::NotFound)
            ),
            || {
                format!(
                    "the fire ended {:?}: {:?}",
                    attempt.end.outcome, attempt.end.error
                )
            },
        )?;
        report.fire_id.ok_or_else(|| "no fire".to_owned())
    }

    async fn items(&self) -> Vec<model::Item> {
        self.items_of(self.here.1).await
    }

    async fn items_of(&self, record: i64) -> Vec<model::Item> {
        self.engine.store().items(record).await.unwrap()
    }
}

/// `body` with every element of its first list of objects twice (for a
/// web page: every link twice).
fn doubled(body: &str) -> String {
    if body.trim_start().starts_with('<') {
        let links: String = body
            .match_indices("<a ")
            .filter_map(|(at, _)| body[at..].find("</a>").map(|end| &body[at..at + end + 4]))
            .collect();
        return body.replace("</body>", &format!("{links}</body>"));
    }
    fn double(value: &mut serde_json::Value) -> bool {
        match value {
            serde_json::Value::Array(items) if items.iter().any(|i| i.is_object()) => {
                let copy = items.clone();
                items.extend(copy);
                true
            }
            serde_json::Value::Array(items) => items.iter_mut().any(double),
            serde_json::Value::Object(map) => map.values_mut().any(double),
            _ => false,
        }
    }
    let mut value: serde_json::Value = serde_json::from_str(body).unwrap();
    double(&mut value);
    value.to_string()
}

/// Sets what the fake answers: each body with status 200, in the
/// fixture's content type.
fn answer(fake: &Fake, fixture: &Fixture, bodies: Vec<(&'static str, String)>) {
    *fake.answers.lock().unwrap() = bodies
        .into_iter()
        .map(|(w, b)| (w, Answer::typed(200, fixture.content_type, &b)))
        .collect();
}

/// Runs one adapter through every mode that needs an engine.
pub(crate) async fn engine_modes(
    subject: &Subject,
    fixture: &Fixture,
) -> Vec<(&'static str, Cell)> {
    let limits = Limits::default();
    let success: Vec<(&'static str, String)> = fixture
        .success
        .iter()
        .map(|(w, b)| (*w, (*b).to_owned()))
        .collect();
    let distinct = {
        let (outcome, _) = fire_with(subject, fixture, fixture.ok(&fixture.success), limits).await;
        outcome.map(|f| usable_results(&f.results)).unwrap_or(0)
    };
    let twice: Vec<(&'static str, String)> =
        success.iter().map(|(w, b)| (*w, doubled(b))).collect();
    let listed = {
        let answers = twice
            .iter()
            .map(|(w, b)| (*w, Answer::json(200, b)))
            .collect();
        let (outcome, _) = fire_with(subject, fixture, answers, limits).await;
        outcome.map(|f| f.results.len()).unwrap_or(0)
    };
    let (base, fake) = start_fake().await;
    let curated = Curated::new(subject, fixture, &base, EngineConfig::default()).await;
    answer(&fake, fixture, twice);
    let duplicates = duplicates(&curated, distinct, listed).await;
    let curated = Curated::new(subject, fixture, &base, EngineConfig::default()).await;
    answer(&fake, fixture, success.clone());
    let redelivery = redelivery(&curated, distinct).await;
    let changed = changed(&curated, fixture, &fake, &success).await;
    let deletion = deletion(&curated, fixture, &fake, distinct).await;
    vec![
        ("duplicates in one answer", duplicates),
        ("redelivery", redelivery),
        ("changed content", changed),
        ("deletion", deletion),
        ("no answer after sending", no_answer(subject, fixture).await),
        ("a workspace's own key", own_key(subject, fixture).await),
        (
            "results stay in their workspace",
            stay_in_workspace(subject, fixture, distinct).await,
        ),
    ]
}

async fn duplicates(curated: &Curated, distinct: usize, listed: usize) -> Cell {
    curated.fire().await?;
    let items = curated.items().await;
    ensure(items.len() == distinct, || {
        format!("{} for {distinct} URLs", count(items.len(), "item"))
    })?;
    Ok(if listed > distinct {
        format!(
            "{} for {}: {}",
            count(listed, "result"),
            count(distinct, "URL"),
            count(distinct, "item")
        )
    } else {
        format!(
            "the adapter lists each URL once: {}",
            count(distinct, "item")
        )
    })
}

async fn redelivery(curated: &Curated, distinct: usize) -> Cell {
    curated.fire().await?;
    curated.fire().await?;
    let items = curated.items().await;
    ensure(items.len() == distinct, || {
        format!("{} for {distinct} URLs", count(items.len(), "item"))
    })?;
    ensure(items.iter().all(|i| i.evidence.len() == 2), || {
        "not two sightings each".into()
    })?;
    Ok("the same items, each seen twice".into())
}

async fn changed(
    curated: &Curated,
    fixture: &Fixture,
    fake: &Fake,
    success: &[(&'static str, String)],
) -> Cell {
    let item = curated
        .items()
        .await
        .into_iter()
        .find(|i| fixture.is_first(&i.url))
        .ok_or("no first item")?;
    let store = curated.engine.store();
    let accepted = store
        .triage(item.id, TriageVerb::AcceptCanonical, item.version, "ana")
        .await
        .map_err(|e| e.to_string())?;
    let (from, to) = fixture.retitle;
    ensure(success.iter().any(|(_, b)| b.contains(from)), || {
        format!("the success answer has no {from:?}")
    })?;
    let retitled = success.iter().map(|(w, b)| (*w, b.replace(from, to)));
    answer(fake, fixture, retitled.collect());
    curated.fire().await?;
    let now = store.item(item.id).await.map_err(|e| e.to_string())?;
    let revision = now.revision.as_ref().ok_or("no revision")?;
    ensure(
        now.state == accepted.state && now.version == accepted.version,
        || "triage changed".into(),
    )?;
    Ok(format!(
        "a revision ({} changed), triage kept",
        revision.what()
    ))
}

async fn deletion(curated: &Curated, fixture: &Fixture, fake: &Fake, distinct: usize) -> Cell {
    if fixture.empty.is_empty() {
        return not_applicable(NEVER_EMPTY);
    }
    let empty = fixture.empty.iter().map(|(w, b)| (*w, (*b).to_owned()));
    answer(fake, fixture, empty.collect());
    let fire = curated.fire().await?;
    let items = curated.items().await;
    ensure(items.len() == distinct, || {
        format!("{} left of {distinct}", count(items.len(), "item"))
    })?;
    let intent: Capability = fixture.intent.parse().unwrap();
    let due = curated
        .engine
        .store()
        .pages_to_check(
            curated.here.1,
            &intent,
            &curated.connector,
            fire,
            i64::MAX,
            100,
        )
        .await
        .map_err(|e| e.to_string())?;
    ensure(due.len() == distinct, || {
        format!("{} of {distinct} left-out pages to re-check", due.len())
    })?;
    Ok("left out: kept, and each page asked for itself (gone on 404/410)".into())
}

/// A call cut off after it went out: the provider may have done it. The
/// engine records it `unknown`, never asks again by itself (a retry
/// budget would), and lists it for review.
async fn no_answer(subject: &Subject, fixture: &Fixture) -> Cell {
    if let Subject::Site = subject {
        return not_applicable(
            "reading a page is free and changes nothing: no answer is that record's error, not a call to review",
        );
    }
    let (base, fake) = start_fake().await;
    let mut slow = Answer::json(200, fixture.success[0].1);
    slow.delay = Duration::from_secs(3);
    *fake.answers.lock().unwrap() = vec![("", slow)];
    let config = EngineConfig {
        dispatch: DispatchConfig {
            attempt_timeout: Duration::from_millis(300),
            retry_budget: 2,
            ..DispatchConfig::default()
        },
        ..EngineConfig::default()
    };
    let curated = Curated::new(subject, fixture, &base, config).await;
    let report = curated.report(curated.here.1).await?;
    let outcomes: Vec<_> = report.attempts.iter().map(|a| a.end.outcome).collect();
    ensure(outcomes == [Some(FireOutcome::Unknown)], || {
        format!("attempts ended {outcomes:?}")
    })?;
    let asked = fake.seen.lock().unwrap().len();
    ensure(asked == 1, || format!("asked {asked} times"))?;
    let listed = curated
        .engine
        .store()
        .unanswered(curated.here.0, 10)
        .await
        .map_err(|e| e.to_string())?;
    ensure(listed.len() == 1, || {
        format!("{} listed for review", listed.len())
    })?;
    Ok("unknown: asked once, not again, listed for review".into())
}

/// A workspace's own key reaches the provider for its fires and never for
/// another workspace's, which use the server's.
async fn own_key(subject: &Subject, fixture: &Fixture) -> Cell {
    let reg = subject.registration();
    let (Some(variable), Some(_)) = (reg.profile.requires_env.first(), fixture.key_in) else {
        return not_applicable("the provider takes no key");
    };
    let (base, fake) = start_fake().await;
    *fake.answers.lock().unwrap() = fixture.ok(&fixture.success);
    let curated = Curated::new(subject, fixture, &base, EngineConfig::default()).await;
    let (workspace, record) = curated.here;
    let sealer = Sealer::from_key_text(SEALING_KEY).unwrap();
    let sealed = sealer
        .seal(workspace, variable, OWN_KEY)
        .map_err(|e| e.to_string())?;
    curated
        .engine
        .store()
        .put_secret(workspace, variable, &sealed, "ana")
        .await
        .map_err(|e| e.to_string())?;
    curated.fire_on(record).await?;
    let mine = std::mem::take(&mut *fake.seen.lock().unwrap());
    let how = key_sent(fixture.key_in, &mine, OWN_KEY).map_err(|e| format!("its own: {e}"))?;
    curated.fire_on(curated.there.1).await?;
    let theirs = fake.seen.lock().unwrap().clone();
    key_sent(fixture.key_in, &theirs, KEY).map_err(|e| format!("another's: {e}"))?;
    let leaked = theirs
        .iter()
        .any(|s| format!("{:?} {} {}", s.headers, s.uri, s.body).contains(OWN_KEY));
    ensure(!leaked, || "another workspace's fire sent its key".into())?;
    Ok(format!(
        "{variable} set by one workspace: its fires send it ({how}), another's send the server's"
    ))
}

/// What one workspace's fire found never shows on another's record, even
/// for the same name and the same answer.
async fn stay_in_workspace(subject: &Subject, fixture: &Fixture, distinct: usize) -> Cell {
    let (base, fake) = start_fake().await;
    *fake.answers.lock().unwrap() = fixture.ok(&fixture.success);
    let curated = Curated::new(subject, fixture, &base, EngineConfig::default()).await;
    curated.fire().await?;
    ensure(curated.items_of(curated.there.1).await.is_empty(), || {
        "another workspace's record shows the items".into()
    })?;
    curated.fire_on(curated.there.1).await?;
    let (mine, theirs) = (
        curated.items().await,
        curated.items_of(curated.there.1).await,
    );
    ensure(mine.len() == distinct && theirs.len() == distinct, || {
        format!("{} and {} items", mine.len(), theirs.len())
    })?;
    ensure(
        mine.iter().chain(&theirs).all(|i| i.evidence.len() == 1)
            && mine.iter().all(|m| theirs.iter().all(|t| t.id != m.id)),
        || "the workspaces share items or sightings".into(),
    )?;
    Ok("each workspace's fire adds its own items; none crosses over".into())
}
