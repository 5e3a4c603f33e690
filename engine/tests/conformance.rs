//! The conformance suite every coded adapter runs: a provider-shaped fake on
//! 127.0.0.1 replays documented answers through every mode of the
//! connector-discipline document (success, empty, next page, partial pages,
//! 429 with Retry-After in seconds and as a date, refused and expired keys,
//! 5xx, timeout, unreachable, malformed JSON, an HTML error page, an
//! oversized body) and, through an engine and its curated layer, duplicates
//! in one answer, redelivery, changed words and deletion. It checks the
//! classified outcome, the results' fields, that the key never shows in
//! anything the adapter returns or logs, and that nothing panics; it writes
//! the outcomes as `docs/conformance.md` and fails when that table is stale
//! or an adapter lacks or fails a mode. An adapter without fixtures fails
//! the suite. Its fuzz half replaces parts of each success answer with
//! arbitrary JSON.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use engine::connectors::builtin::{adapters, Adapter};
use engine::connectors::guard::{AllowList, Outbound};
use engine::connectors::http::Http;
use engine::connectors::manifest::{Format, Manifest, ManifestConnector};
use engine::connectors::registry::Registration;
use engine::connectors::seam::{FireError, FireOpts, Found};
use engine::execution::dispatch::FireRequest;
use engine::import::{parse_csv, ImportLimits};
use engine::packs::Catalog;
use engine::store::testing;
use engine::store::{usable_results, Store};
use engine::{Engine, EngineConfig};
use model::{Capability, FireOutcome, TriageVerb};

#[path = "common/fuzzing.rs"]
mod fuzzing;
use fuzzing::{fuzz, json};

const KEY: &str = "sk-conformance-SECRET-4711";

/// One canned answer of the fake provider.
#[derive(Clone)]
struct Answer {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
    delay: Duration,
}

impl Answer {
    fn json(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type", "application/json".into())],
            body: body.to_owned(),
            delay: Duration::ZERO,
        }
    }
}

/// What the fake saw of one request.
#[derive(Clone, Debug)]
struct Seen {
    uri: String,
    headers: HeaderMap,
    body: String,
}

#[derive(Clone, Default)]
struct Fake {
    /// Answers keyed by a word the request URI must contain ("" matches all).
    answers: Arc<Mutex<Vec<(&'static str, Answer)>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

async fn respond(State(fake): State<Fake>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body: Bytes = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let uri = parts.uri.to_string();
    fake.seen.lock().unwrap().push(Seen {
        uri: uri.clone(),
        headers: parts.headers.clone(),
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let answer = fake
        .answers
        .lock()
        .unwrap()
        .iter()
        .find(|(word, _)| uri.contains(word))
        .map(|(_, a)| a.clone());
    let Some(answer) = answer else {
        return (StatusCode::NOT_IMPLEMENTED, "no canned answer").into_response();
    };
    tokio::time::sleep(answer.delay).await;
    let mut response = (StatusCode::from_u16(answer.status).unwrap(), answer.body).into_response();
    for (k, v) in answer.headers {
        response.headers_mut().insert(k, v.parse().unwrap());
    }
    response
}

async fn start_fake() -> (String, Fake) {
    let fake = Fake::default();
    let app = axum::Router::new()
        .fallback(respond)
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, fake)
}

/// An adapter's provider-shaped fixtures.
struct Fixture {
    /// The intent fired in the suite.
    intent: &'static str,
    /// Answers for a successful search, by URI word (several for multi-call adapters).
    success: Vec<(&'static str, &'static str)>,
    /// The URL the first result must have.
    first_url: &'static str,
    /// Answers meaning "nothing found".
    empty: Vec<(&'static str, &'static str)>,
    /// The status and body of a refused key.
    refused: (u16, &'static str),
    /// Whether the request must carry the key (and where to look).
    key_in: Option<KeyIn>,
    /// What the request says to ask for the fire's 10 results in one page
    /// (`None`: the provider has no page size).
    asks: Option<&'static str>,
    /// A replacement in the success answers that changes the first
    /// result's words and not its address.
    retitle: (&'static str, &'static str),
}

#[derive(Clone, Copy)]
enum KeyIn {
    Bearer,
    Header(&'static str),
    Query(&'static str),
}

fn fixtures() -> HashMap<&'static str, Fixture> {
    let mut f = HashMap::new();
    f.insert("searxng", Fixture {
        intent: "search.social.linkedin",
        success: vec![("", r#"{"query":"Acme","number_of_results":2,"results":[
            {"url":"https://example.org/about-acme","title":"Not LinkedIn","content":"x","engine":"bing"},
            {"url":"https://www.linkedin.com/company/acme","title":"Acme | LinkedIn","content":"Acme makes rockets","engine":"google","publishedDate":null}],
            "answers":[],"infoboxes":[],"suggestions":[],"unresponsive_engines":[]}"#)],
        first_url: "https://www.linkedin.com/company/acme",
        empty: vec![("", r#"{"query":"Acme","number_of_results":0,"results":[],"unresponsive_engines":[["google","timeout"]]}"#)],
        refused: (403, "<html><body>403 Forbidden</body></html>"),
        key_in: None,
        asks: None,
        retitle: ("Acme | LinkedIn", "Acme Rockets | LinkedIn"),
    });
    f.insert("tavily", Fixture {
        intent: "search.web",
        success: vec![("/search", r#"{"query":"Acme","answer":null,"images":[],"results":[
            {"title":"Acme Rockets","url":"https://acme.example/","content":"Official site","score":0.93,"raw_content":null}],"response_time":1.2}"#)],
        first_url: "https://acme.example/",
        empty: vec![("/search", r#"{"query":"Acme","results":[],"response_time":0.4}"#)],
        refused: (401, r#"{"detail":{"error":"Unauthorized: missing or invalid API key."}}"#),
        key_in: Some(KeyIn::Bearer),
        asks: Some("\"max_results\":10"),
        retitle: ("Acme Rockets", "Acme Rocketry"),
    });
    f.insert("serpapi", Fixture {
        intent: "search.web",
        success: vec![("", r#"{"search_metadata":{"status":"Success"},"organic_results":[
            {"position":1,"title":"Acme Rockets","link":"https://acme.example/","snippet":"We build rockets."},
            {"position":2,"title":"Acme - Wikipedia","link":"https://en.wikipedia.org/wiki/Acme","snippet":"Acme is"}]}"#)],
        first_url: "https://acme.example/",
        empty: vec![("", r#"{"search_metadata":{"status":"Success"},"search_information":{"organic_results_state":"Fully empty"},"error":"Google hasn't returned any results for this query."}"#)],
        refused: (401, r#"{"error":"Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key"}"#),
        key_in: Some(KeyIn::Query("api_key")),
        asks: Some("num=10"),
        retitle: ("Acme Rockets", "Acme Rocketry"),
    });
    f.insert("brave", Fixture {
        intent: "search.web",
        success: vec![("", r#"{"type":"search","query":{"original":"Acme"},"web":{"type":"search","results":[
            {"title":"<strong>Acme</strong> Rockets","url":"https://acme.example/","description":"We build <strong>rockets</strong>.","age":"2 days ago"}]}}"#)],
        first_url: "https://acme.example/",
        empty: vec![("", r#"{"type":"search","query":{"original":"Acme"},"web":{"type":"search","results":[]}}"#)],
        refused: (422, r#"{"type":"ErrorResponse","error":{"id":"x","status":422,"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"The provided subscription token is invalid."}}"#),
        key_in: Some(KeyIn::Header("x-subscription-token")),
        asks: Some("count=10"),
        retitle: ("</strong> Rockets", "</strong> Rocketry"),
    });
    f.insert("wikipedia", Fixture {
        intent: "fetch.wikipedia",
        success: vec![("", r#"{"pages":[{"id":12,"key":"Acme_Corporation","title":"Acme Corporation","excerpt":"The <span class=\"searchmatch\">Acme</span> Corporation is a fictional","description":"Fictional company","thumbnail":null}]}"#)],
        first_url: "https://en.wikipedia.org/wiki/Acme_Corporation",
        empty: vec![("", r#"{"pages":[]}"#)],
        refused: (403, "Please set a user-agent and respect our robot policy"),
        key_in: None,
        asks: Some("limit=10"),
        retitle: ("\"title\":\"Acme Corporation\"", "\"title\":\"Acme Corp.\""),
    });
    f.insert("wikidata", Fixture {
        intent: "search.social.x",
        success: vec![
            ("wbsearchentities", r#"{"searchinfo":{"search":"Acme"},"search":[{"id":"Q42","label":"Acme","description":"rocket maker","concepturi":"http://www.wikidata.org/entity/Q42"}],"success":1}"#),
            ("wbgetentities", r#"{"entities":{"Q42":{"id":"Q42","claims":{
                "P2002":[{"mainsnak":{"snaktype":"value","property":"P2002","datavalue":{"value":"acmerockets","type":"string"}}}],
                "P856":[{"mainsnak":{"datavalue":{"value":"https://acme.example/","type":"string"}}}]}}},"success":1}"#),
        ],
        first_url: "https://x.com/acmerockets",
        empty: vec![("wbsearchentities", r#"{"searchinfo":{"search":"Acme"},"search":[],"success":1}"#)],
        refused: (403, "<!DOCTYPE html><html><body>Forbidden</body></html>"),
        key_in: None,
        asks: Some("limit="),
        retitle: ("rocket maker", "maker of rockets"),
    });
    f.insert("google-kg", Fixture {
        intent: "fetch.knowledge_graph",
        success: vec![("", r#"{"@context":{},"@type":"ItemList","itemListElement":[{"@type":"EntitySearchResult","result":{"@id":"kg:/m/0abc","name":"Acme","@type":["Organization"],"description":"Company","url":"https://acme.example/","detailedDescription":{"articleBody":"Acme builds rockets.","url":"https://en.wikipedia.org/wiki/Acme"}},"resultScore":812.5}]}"#)],
        first_url: "https://acme.example/",
        empty: vec![("", r#"{"@context":{},"@type":"ItemList","itemListElement":[]}"#)],
        refused: (400, r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","errors":[{"reason":"badRequest"}]}}"#),
        key_in: Some(KeyIn::Query("key")),
        asks: Some("limit=10"),
        retitle: ("Acme builds rockets.", "Acme built rockets."),
    });
    f.insert("bluesky", Fixture {
        intent: "search.social.bluesky",
        success: vec![("", r#"{"actors":[{"did":"did:plc:abc","handle":"acme.bsky.social","displayName":"Acme","description":"Rockets"}],"cursor":"25"}"#)],
        first_url: "https://bsky.app/profile/acme.bsky.social",
        empty: vec![("", r#"{"actors":[]}"#)],
        refused: (401, r#"{"error":"AuthMissing","message":"Authentication Required"}"#),
        key_in: None,
        asks: Some("limit=10"),
        retitle: ("\"displayName\":\"Acme\"", "\"displayName\":\"Acme Rockets\""),
    });
    f.insert("youtube", Fixture {
        intent: "search.social.youtube",
        success: vec![("", r#"{"kind":"youtube#searchListResponse","items":[{"kind":"youtube#searchResult","id":{"kind":"youtube#channel","channelId":"UC123abc"},"snippet":{"title":"Acme","description":"Our channel","publishedAt":"2015-01-01T00:00:00Z"}}]}"#)],
        first_url: "https://www.youtube.com/channel/UC123abc",
        empty: vec![("", r#"{"kind":"youtube#searchListResponse","items":[]}"#)],
        refused: (400, r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","errors":[{"reason":"badRequest"}],"status":"INVALID_ARGUMENT"}}"#),
        key_in: Some(KeyIn::Query("key")),
        asks: Some("maxResults=10"),
        retitle: ("Our channel", "Our only channel"),
    });
    f.insert("openalex", Fixture {
        intent: "search.scholar",
        success: vec![("", r#"{"meta":{"count":1},"results":[{"id":"https://openalex.org/W1","doi":"https://doi.org/10.1/acme","display_name":"Rockets by Acme","publication_year":2020,"cited_by_count":3,"primary_location":{"source":{"display_name":"Journal of Rockets"}}}]}"#)],
        first_url: "https://doi.org/10.1/acme",
        empty: vec![("", r#"{"meta":{"count":0},"results":[]}"#)],
        refused: (403, r#"{"error":"Forbidden","message":"API key invalid"}"#),
        key_in: None,
        asks: Some("per-page=10"),
        retitle: ("Rockets by Acme", "More rockets by Acme"),
    });
    f.insert("gdelt", Fixture {
        intent: "search.news",
        success: vec![("", r#"{"articles":[{"url":"https://news.example/acme-launch","url_mobile":"","title":"Acme launches","seendate":"20261201T120000Z","socialimage":"","domain":"news.example","language":"English","sourcecountry":"France"}]}"#)],
        first_url: "https://news.example/acme-launch",
        // GDELT answers nothing at all when nothing matches.
        empty: vec![("", "")],
        refused: (403, "<html><body>Forbidden</body></html>"),
        key_in: None,
        asks: Some("maxrecords=10"),
        retitle: ("Acme launches", "Acme launched"),
    });
    f.insert("hn-algolia", Fixture {
        intent: "search.news",
        success: vec![
            ("&page=0", r#"{"hits":[{"url":"https://acme.example/launch","title":"Acme launches","story_text":"Rockets"}],"nbHits":2,"page":0,"nbPages":2}"#),
            ("&page=1", r#"{"hits":[{"url":"https://acme.example/landing","title":"Acme lands","story_text":null}],"nbHits":2,"page":1,"nbPages":2}"#),
        ],
        first_url: "https://acme.example/launch",
        empty: vec![("", r#"{"hits":[],"nbHits":0,"page":0,"nbPages":0}"#)],
        refused: (403, r#"{"message":"Invalid Application-ID or API key","status":403}"#),
        key_in: None,
        asks: Some("hitsPerPage=10"),
        retitle: ("Acme launches", "Acme launched"),
    });
    f.insert("github-users", Fixture {
        intent: "search.social.github",
        success: vec![
            ("&page=1", r#"{"total_count":2,"incomplete_results":false,"items":[{"login":"acme","html_url":"https://github.com/acme","type":"Organization"}]}"#),
            ("&page=2", r#"{"total_count":2,"incomplete_results":false,"items":[{"login":"acme-labs","html_url":"https://github.com/acme-labs","type":"Organization"}]}"#),
        ],
        first_url: "https://github.com/acme",
        empty: vec![("", r#"{"total_count":0,"incomplete_results":false,"items":[]}"#)],
        refused: (401, r#"{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}"#),
        key_in: None,
        asks: Some("per_page=10"),
        retitle: ("\"login\":\"acme\"", "\"login\":\"acme-rockets\""),
    });
    f.insert("mastodon-accounts", Fixture {
        intent: "search.social.mastodon",
        success: vec![("", r#"{"accounts":[{"id":"1","username":"acme","acct":"acme","display_name":"Acme","url":"https://mastodon.social/@acme","note":"Rockets"}],"statuses":[],"hashtags":[]}"#)],
        first_url: "https://mastodon.social/@acme",
        empty: vec![("", r#"{"accounts":[],"statuses":[],"hashtags":[]}"#)],
        refused: (401, r#"{"error":"The access token is invalid"}"#),
        key_in: None,
        asks: Some("limit=10"),
        retitle: ("\"display_name\":\"Acme\"", "\"display_name\":\"Acme Rockets\""),
    });
    f
}

/// What a mode sets of the client: a timeout, a cap on the body (a
/// manifest keeps its own cap).
#[derive(Clone, Copy, Debug, Default)]
struct Limits {
    timeout: Option<Duration>,
    max_body: Option<usize>,
}

/// What the suite runs: a coded adapter, or a manifest shipped in
/// `connectors/` with its provider's origin pointed at the fake.
enum Subject {
    Coded(Adapter),
    Shipped {
        file: String,
        manifest: String,
        origin: String,
    },
}

impl Subject {
    fn registration(&self) -> Registration {
        match self {
            Subject::Coded(adapter) => (adapter.registration)(),
            Subject::Shipped { manifest, .. } => Manifest::parse(manifest, Format::Toml)
                .expect("a shipped manifest")
                .registration(),
        }
    }

    /// The connector, asking the fake at `base`.
    fn connector(
        &self,
        limits: Limits,
        base: &str,
    ) -> Arc<dyn engine::connectors::seam::Connector> {
        match self {
            Subject::Coded(adapter) => {
                let mut http = match limits.timeout {
                    Some(t) => Http::with_timeout(t).unwrap(),
                    None => Http::new().unwrap(),
                };
                if let Some(max) = limits.max_body {
                    http = http.with_max_body(max);
                }
                adapter.connector(http, Some(base.to_owned()), Some(KEY.to_owned()))
            }
            Subject::Shipped {
                manifest, origin, ..
            } => {
                // The request's address only: a result's address may name
                // the same host.
                let text =
                    manifest.replacen(&format!("url = \"{origin}"), &format!("url = \"{base}"), 1);
                let manifest = Manifest::parse(&text, Format::Toml).expect("a shipped manifest");
                // The key for what it requires; optional settings unset.
                let required = manifest.spec.profile.requires_env.clone();
                let connector = ManifestConnector::new(
                    Arc::new(manifest),
                    Outbound::new(AllowList::parse("127.0.0.1")),
                    Arc::new(move |name| {
                        required.iter().any(|r| r == name).then(|| KEY.to_owned())
                    }),
                );
                Arc::new(match limits.timeout {
                    Some(t) => connector.with_timeout(t),
                    None => connector,
                })
            }
        }
    }
}

/// Every coded adapter, every manifest built in, and every manifest
/// shipped in `connectors/`.
fn subjects() -> Vec<Subject> {
    let mut all: Vec<Subject> = adapters().into_iter().map(Subject::Coded).collect();
    let mut manifests: Vec<(String, String)> = engine::connectors::builtin::BUILTIN_MANIFESTS
        .iter()
        .map(|(file, text)| (format!("engine/manifests/{file}"), (*text).to_owned()))
        .collect();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../connectors");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        manifests.push((
            format!("connectors/{name}"),
            std::fs::read_to_string(&file).unwrap(),
        ));
    }
    for (file, manifest) in manifests {
        let at = manifest.find("url = \"https://").expect("a request URL") + "url = \"".len();
        let rest = &manifest[at..];
        let end = rest["https://".len()..]
            .find('/')
            .map_or(rest.len(), |i| i + "https://".len());
        let origin = rest[..end].to_owned();
        all.push(Subject::Shipped {
            file,
            manifest,
            origin,
        });
    }
    all
}

fn opts() -> FireOpts {
    FireOpts {
        max_results: 10,
        ..FireOpts::default()
    }
}

/// Nothing the adapter hands back may carry the key.
fn assert_no_key(what: &str, outcome: &Result<Found, FireError>) {
    let text = format!(
        "{outcome:?} {}",
        outcome
            .as_ref()
            .err()
            .map(ToString::to_string)
            .unwrap_or_default()
    );
    assert!(!text.contains(KEY), "{what}: the key leaked: {text}");
}

async fn fire_with(
    subject: &Subject,
    fixture: &Fixture,
    answers: Vec<(&'static str, Answer)>,
    limits: Limits,
) -> (Result<Found, FireError>, Vec<Seen>) {
    let (base, fake) = start_fake().await;
    *fake.answers.lock().unwrap() = answers;
    let connector = subject.connector(limits, &base);
    let intent: Capability = fixture.intent.parse().unwrap();
    let outcome = connector.fire(&intent, "Acme", &opts()).await;
    let seen = fake.seen.lock().unwrap().clone();
    (outcome, seen)
}

fn all_json(list: &[(&'static str, &'static str)]) -> Vec<(&'static str, Answer)> {
    list.iter()
        .map(|(w, b)| (*w, Answer::json(200, b)))
        .collect()
}

fn every(answer: Answer) -> Vec<(&'static str, Answer)> {
    vec![("", answer)]
}

#[tokio::test]
async fn every_adapter_has_fixtures() {
    let fixtures = fixtures();
    let missing: Vec<String> = subjects()
        .iter()
        .map(|s| s.registration().profile.id)
        .filter(|id| !fixtures.contains_key(id.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "adapters without conformance fixtures: {missing:?}"
    );
}

/// Everything the adapters log during the suite, to search for the key.
#[derive(Clone, Default)]
struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The modes of the connector-discipline document, in the table's order:
/// every adapter is run through each, and the suite fails when one is
/// missing or fails.
const MODES: [&str; 18] = [
    "success",
    "empty",
    "next page",
    "partial pages",
    "429, Retry-After in seconds",
    "429, Retry-After as a date",
    "refused key",
    "expired key",
    "5xx",
    "timeout",
    "unreachable",
    "malformed JSON",
    "HTML error page",
    "oversized body",
    "duplicates in one answer",
    "redelivery",
    "changed content",
    "deletion",
];

/// One mode's outcome for one adapter: what happened, in words, or why it
/// is not what the document asks.
type Cell = Result<String, String>;

/// "1 result", "2 results".
fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn ensure(ok: bool, why: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(why())
    }
}

/// The words of an adapter's error, with its kind.
fn kind(outcome: &Result<Found, FireError>) -> String {
    match outcome {
        Ok(found) => count(found.results.len(), "result"),
        Err(FireError::RateLimited { .. }) => "rate-limited".into(),
        Err(FireError::AuthFailed { .. }) => "auth-failed".into(),
        Err(FireError::Upstream { .. }) => "error (provider)".into(),
        Err(FireError::Timeout { .. }) => "error (timeout)".into(),
        Err(FireError::Malformed { .. }) => "error (unreadable answer)".into(),
        Err(FireError::Request { .. }) => "error (this query refused)".into(),
    }
}

/// `body` with every element of its first list of objects twice.
fn doubled(body: &str) -> String {
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

/// An adapter behind an engine over its own database: pack `p` walks it
/// alone, for one record named Acme.
struct Curated {
    engine: Engine,
    record: i64,
    connector: String,
    _db: testing::TestDatabase,
}

impl Curated {
    async fn new(subject: &Subject, fixture: &Fixture, base: &str) -> Self {
        let db = testing::sqlite();
        let store = Store::connect(&db.url).await.unwrap();
        let mut reg = subject.registration();
        // Its pace is the throttle's to prove, not this suite's.
        reg.profile.rate_hints = model::RateHints::default();
        let catalog = Catalog::from_toml(&format!(
            "[[pack]]\npack_id = \"p\"\ndisplay_name = \"P\"\nshort_label = \"p\"\nintent = \"{}\"\npreferred_connectors = [\"{}\"]\n\n[[bundle]]\nbundle_id = \"b\"\ndisplay_name = \"B\"\nmembers = [{{ pack = \"p\" }}]\n",
            fixture.intent, reg.profile.id
        ))
        .unwrap();
        let connector = reg.profile.id.clone();
        let env: engine::connectors::registry::EnvLookup = Arc::new(|_| Some(KEY.to_owned()));
        let engine = Engine::new(store, catalog, Some(env), EngineConfig::default());
        engine
            .registry()
            .register(reg, subject.connector(Limits::default(), base))
            .unwrap();
        let (workspace, _) = engine.store().ensure_workspace("w").await.unwrap();
        let parsed = parse_csv(b"name\nAcme\n", ImportLimits::default()).unwrap();
        let set = engine
            .store()
            .create_record_set(workspace, "Set", "b", false, &parsed.records)
            .await
            .unwrap();
        let record = engine.store().records(set, 0, 1).await.unwrap()[0].id;
        Self {
            engine,
            record,
            connector,
            _db: db,
        }
    }

    /// Fires pack `p` on the record through the adapter (again, too);
    /// the fire's id.
    async fn fire(&self) -> Result<i64, String> {
        let report = self
            .engine
            .dispatcher()
            .fire(FireRequest::by_person(
                self.record,
                "p",
                Some(self.connector.clone()),
                "ana",
            ))
            .await
            .map_err(|e| e.to_string())?;
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
        self.engine.store().items(self.record).await.unwrap()
    }
}

/// Runs one adapter through every mode.
async fn run_modes(subject: &Subject, fixture: &Fixture) -> Vec<(&'static str, Cell)> {
    let id = subject.registration().profile.id;
    let intent: Capability = fixture.intent.parse().unwrap();
    let limits = Limits::default();
    let mut cells: Vec<(&'static str, Cell)> = Vec::new();

    // Success: results with their fields, the key sent the documented way.
    let (outcome, seen) = fire_with(subject, fixture, all_json(&fixture.success), limits).await;
    assert_no_key(&id, &outcome);
    let success: Cell = (|| {
        let results = outcome
            .as_ref()
            .map_err(|e| format!("gave {e}"))?
            .results
            .clone();
        ensure(!results.is_empty(), || "no results".into())?;
        ensure(results[0].url == fixture.first_url, || {
            format!("first result {}", results[0].url)
        })?;
        for r in &results {
            ensure(!r.title.trim().is_empty(), || {
                "a result without a title".into()
            })?;
            ensure(
                !r.title.contains('<') && !r.snippet.contains("<strong>"),
                || format!("markup in text: {r:?}"),
            )?;
        }
        ensure(
            seen.iter().all(|s| {
                s.headers
                    .get("user-agent")
                    .is_some_and(|ua| ua.to_str().unwrap_or("").starts_with("Switchyard/"))
            }),
            || "no Switchyard User-Agent".into(),
        )?;
        let key = match fixture.key_in {
            Some(KeyIn::Bearer) => {
                ensure(
                    seen.iter().all(|s| {
                        s.headers
                            .get("authorization")
                            .is_some_and(|v| v == &format!("Bearer {KEY}"))
                    }),
                    || "bearer key".into(),
                )?;
                "key as a bearer token"
            }
            Some(KeyIn::Header(name)) => {
                ensure(
                    seen.iter()
                        .all(|s| s.headers.get(name).is_some_and(|v| v == KEY)),
                    || "key header".into(),
                )?;
                "key in a header"
            }
            Some(KeyIn::Query(name)) => {
                ensure(
                    seen.iter()
                        .all(|s| s.uri.contains(&format!("{name}={KEY}"))),
                    || "key parameter".into(),
                )?;
                "key as a parameter"
            }
            None => {
                ensure(
                    seen.iter()
                        .all(|s| !s.uri.contains(KEY) && !s.body.contains(KEY)),
                    || "a keyless provider got a key".into(),
                )?;
                "no key"
            }
        };
        Ok(format!(
            "{}, first {}; {key}",
            count(results.len(), "result"),
            fixture.first_url
        ))
    })();
    cells.push(("success", success));
    let success_results = outcome.as_ref().map_or(0, |f| f.results.len());

    // Empty: not found is an empty list, not an error.
    let (outcome, _) = fire_with(subject, fixture, all_json(&fixture.empty), limits).await;
    cells.push((
        "empty",
        match &outcome {
            Ok(found) if found.results.is_empty() => Ok("nothing found (not an error)".into()),
            other => Err(format!("gave {}", kind(other))),
        },
    ));

    // Next page: a manifest that pages reads the next page when the first
    // was short; the others ask for the fire's results in one page.
    let pages =
        matches!(subject, Subject::Shipped { manifest, .. } if manifest.contains("[pagination]"));
    let next_page: Cell = if pages {
        let second = fixture.success.get(1).map_or("", |(word, _)| *word);
        let results = success_results;
        ensure(
            seen.len() == 2 && seen[1].uri.contains(second) && results == 2,
            || format!("{} requests, {results} results", seen.len()),
        )
        .map(|()| {
            format!(
                "reads the next page (`{}`) after a short first: 2 results from 2 requests",
                second.trim_start_matches('&')
            )
        })
    } else {
        match fixture.asks {
            Some(asks) => ensure(
                seen.iter()
                    .any(|s| s.uri.contains(asks) || s.body.contains(asks)),
                || {
                    format!(
                        "no request asks {asks}: {:?}",
                        seen.iter().map(|s| &s.uri).collect::<Vec<_>>()
                    )
                },
            )
            .map(|()| format!("one page holds the fire's results: asks `{asks}`")),
            None => Ok("the provider has no page size: its first page".into()),
        }
    };
    cells.push(("next page", next_page));

    // Partial pages: a later request failing.
    cells.push((
        "partial pages",
        if fixture.success.len() == 1 {
            ensure(seen.len() == 1, || {
                format!("{} requests for one page", seen.len())
            })
            .map(|()| "one request per fire: no later page to lose".into())
        } else {
            let mut answers = all_json(&fixture.success);
            let last = answers.len() - 1;
            answers[last].1 = Answer::json(502, r#"{"error":"bad gateway"}"#);
            let (outcome, _) = fire_with(subject, fixture, answers, limits).await;
            assert_no_key(&id, &outcome);
            match &outcome {
                Err(FireError::Upstream { .. }) => Ok(
                    "its second request failing fails the fire: the first alone names no result"
                        .into(),
                ),
                Ok(found) if found.partial.is_some() => {
                    Ok(format!("kept {}, marked partial", found.results.len()))
                }
                other => Err(format!("gave {}", kind(other))),
            }
        },
    ));

    // 429 with Retry-After in seconds, and as a date.
    let mut limited = Answer::json(429, r#"{"error":"Too Many Requests"}"#);
    limited.headers.push(("retry-after", "7".into()));
    let (outcome, _) = fire_with(subject, fixture, every(limited), limits).await;
    assert_no_key(&id, &outcome);
    cells.push((
        "429, Retry-After in seconds",
        match &outcome {
            Err(FireError::RateLimited {
                retry_after: Some(d),
                ..
            }) if *d == Duration::from_secs(7) => Ok("rate-limited for 7 s".into()),
            other => Err(format!("gave {}", kind(other))),
        },
    ));
    let mut limited = Answer::json(429, r#"{"error":"Too Many Requests"}"#);
    let when = std::time::SystemTime::now() + Duration::from_secs(120);
    limited
        .headers
        .push(("retry-after", httpdate::fmt_http_date(when)));
    let (outcome, _) = fire_with(subject, fixture, every(limited), limits).await;
    cells.push((
        "429, Retry-After as a date",
        match &outcome {
            Err(FireError::RateLimited {
                retry_after: Some(d),
                ..
            }) if (110..=120).contains(&d.as_secs()) => Ok("rate-limited until that date".into()),
            other => Err(format!("gave {}", kind(other))),
        },
    ));

    // The provider's own refusal of a key; a key echoed back is scrubbed.
    let (status, body) = fixture.refused;
    let (outcome, _) = fire_with(subject, fixture, every(Answer::json(status, body)), limits).await;
    assert_no_key(&id, &outcome);
    let mut refused = match &outcome {
        Err(FireError::AuthFailed { .. }) => Ok(format!("HTTP {status}: auth-failed")),
        other => Err(format!("HTTP {status} gave {}", kind(other))),
    };
    if fixture.key_in.is_some() {
        let echo = format!(r#"{{"error":"bad key {KEY}"}}"#);
        let (outcome, _) =
            fire_with(subject, fixture, every(Answer::json(401, &echo)), limits).await;
        assert_no_key(&id, &outcome);
        if !matches!(outcome, Err(FireError::AuthFailed { .. })) {
            refused = Err(format!("401 gave {}", kind(&outcome)));
        } else if let Ok(words) = &mut refused {
            words.push_str("; a key echoed back is scrubbed");
        }
    }
    cells.push(("refused key", refused));

    // Expired: the same connector answered, then its key is refused.
    let (base, fake) = start_fake().await;
    *fake.answers.lock().unwrap() = all_json(&fixture.success);
    let connector = subject.connector(limits, &base);
    let first = connector.fire(&intent, "Acme", &opts()).await;
    *fake.answers.lock().unwrap() = every(Answer::json(401, r#"{"error":"key expired"}"#));
    let then = connector.fire(&intent, "Acme", &opts()).await;
    assert_no_key(&id, &then);
    cells.push((
        "expired key",
        match (&first, &then) {
            (Ok(_), Err(FireError::AuthFailed { .. })) => {
                Ok("answered, then HTTP 401: auth-failed".into())
            }
            _ => Err(format!("gave {} then {}", kind(&first), kind(&then))),
        },
    ));

    // 5xx.
    let (outcome, _) = fire_with(
        subject,
        fixture,
        every(Answer::json(502, r#"{"error":"bad gateway"}"#)),
        limits,
    )
    .await;
    cells.push((
        "5xx",
        match &outcome {
            Err(FireError::Upstream { .. }) => {
                Ok("HTTP 502: error (provider), retried by the chain".into())
            }
            other => Err(format!("gave {}", kind(other))),
        },
    ));

    // No answer in time.
    let mut slow = Answer::json(200, fixture.success[0].1);
    slow.delay = Duration::from_secs(3);
    let (outcome, _) = fire_with(
        subject,
        fixture,
        every(slow),
        Limits {
            timeout: Some(Duration::from_millis(300)),
            max_body: None,
        },
    )
    .await;
    cells.push((
        "timeout",
        match &outcome {
            Err(FireError::Timeout { .. }) => Ok("error (timeout)".into()),
            other => Err(format!("gave {}", kind(other))),
        },
    ));

    // No server at all.
    let connector = subject.connector(limits, "http://127.0.0.1:9");
    let outcome = connector.fire(&intent, "Acme", &opts()).await;
    assert_no_key(&id, &outcome);
    cells.push((
        "unreachable",
        match &outcome {
            Err(FireError::Upstream { .. }) => Ok("error (provider)".into()),
            other => Err(format!("gave {}", kind(other))),
        },
    ));

    // Malformed JSON.
    let (outcome, _) = fire_with(
        subject,
        fixture,
        every(Answer::json(200, r#"{"results": [{"url": "#)),
        limits,
    )
    .await;
    cells.push((
        "malformed JSON",
        match &outcome {
            Err(FireError::Malformed { .. }) => Ok("error (unreadable answer)".into()),
            other => Err(format!("gave {}", kind(other))),
        },
    ));

    // An HTML error page with a success status.
    let html = Answer {
        status: 200,
        headers: vec![("content-type", "text/html".into())],
        body: "<!DOCTYPE html><html><body>Maintenance</body></html>".into(),
        delay: Duration::ZERO,
    };
    let (outcome, _) = fire_with(subject, fixture, every(html), limits).await;
    cells.push((
        "HTML error page",
        match &outcome {
            Err(e) if e.to_string().contains("HTML") => {
                Ok("error: an HTML page, not an answer".into())
            }
            other => Err(format!("gave {}", kind(other))),
        },
    ));

    // An oversized body.
    let big = Answer::json(
        200,
        &format!(r#"{{"pad":"{}"}}"#, "x".repeat(3 * 1024 * 1024)),
    );
    let (outcome, _) = fire_with(
        subject,
        fixture,
        every(big),
        Limits {
            timeout: None,
            max_body: Some(64 * 1024),
        },
    )
    .await;
    cells.push((
        "oversized body",
        match &outcome {
            Err(FireError::Malformed { reason }) if reason.contains("more than") => {
                Ok("error: stops reading past the cap".into())
            }
            other => Err(format!("gave {}", kind(other))),
        },
    ));

    // The curated layer, through an engine: duplicates, redelivery,
    // changed words, deletion.
    let (base, fake) = start_fake().await;
    let answer = |bodies: Vec<(&'static str, String)>| {
        *fake.answers.lock().unwrap() = bodies
            .into_iter()
            .map(|(w, b)| (w, Answer::json(200, &b)))
            .collect();
    };
    let success: Vec<(&'static str, String)> = fixture
        .success
        .iter()
        .map(|(w, b)| (*w, (*b).to_owned()))
        .collect();
    let distinct = {
        let (outcome, _) = fire_with(subject, fixture, all_json(&fixture.success), limits).await;
        outcome.map(|f| usable_results(&f.results)).unwrap_or(0)
    };

    let twice: Vec<(&'static str, String)> =
        success.iter().map(|(w, b)| (*w, doubled(b))).collect();
    let listed = {
        let (outcome, _) = fire_with(
            subject,
            fixture,
            twice
                .iter()
                .map(|(w, b)| (*w, Answer::json(200, b)))
                .collect(),
            limits,
        )
        .await;
        outcome.map(|f| f.results.len()).unwrap_or(0)
    };
    let curated = Curated::new(subject, fixture, &base).await;
    answer(twice);
    let duplicates: Cell = async {
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
    .await;
    cells.push(("duplicates in one answer", duplicates));

    let curated = Curated::new(subject, fixture, &base).await;
    answer(success.clone());
    let redelivery: Cell = async {
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
    .await;
    cells.push(("redelivery", redelivery));

    let changed: Cell = async {
        let item = curated
            .items()
            .await
            .into_iter()
            .find(|i| i.url == fixture.first_url)
            .ok_or("no first item")?;
        let accepted = curated
            .engine
            .store()
            .triage(item.id, TriageVerb::AcceptCanonical, item.version, "ana")
            .await
            .map_err(|e| e.to_string())?;
        let (from, to) = fixture.retitle;
        ensure(success.iter().any(|(_, b)| b.contains(from)), || {
            format!("the success answer has no {from:?}")
        })?;
        answer(
            success
                .iter()
                .map(|(w, b)| (*w, b.replace(from, to)))
                .collect(),
        );
        curated.fire().await?;
        let now = curated
            .engine
            .store()
            .item(item.id)
            .await
            .map_err(|e| e.to_string())?;
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
    .await;
    cells.push(("changed content", changed));

    let deletion: Cell = async {
        answer(
            fixture
                .empty
                .iter()
                .map(|(w, b)| (*w, (*b).to_owned()))
                .collect(),
        );
        let fire = curated.fire().await?;
        let items = curated.items().await;
        ensure(items.len() == distinct, || {
            format!("{} left of {distinct}", count(items.len(), "item"))
        })?;
        let due = curated
            .engine
            .store()
            .pages_to_check(curated.record, &intent, &id, fire, i64::MAX, 100)
            .await
            .map_err(|e| e.to_string())?;
        ensure(due.len() == distinct, || {
            format!("{} of {distinct} left-out pages to re-check", due.len())
        })?;
        Ok("left out: kept, and each page asked for itself (gone on 404/410)".into())
    }
    .await;
    cells.push(("deletion", deletion));
    cells
}

/// The table `docs/conformance.md` holds.
fn render(rows: &[(String, Vec<(&'static str, Cell)>)]) -> String {
    let mut out = String::from(
        "# Connector conformance\n\n\
         Generated by `cargo test -p engine --features test-support --test conformance` \
         (`SWITCHYARD_WRITE_CONFORMANCE=1` writes it; the suite fails when this file \
         is stale, or when an adapter lacks a mode or fails one). Each adapter is run \
         against a provider-shaped fake on 127.0.0.1 through every failure mode of \
         the connector-discipline document; the last four go through an engine and \
         its curated layer.\n",
    );
    for (id, cells) in rows {
        out.push_str(&format!("\n## {id}\n\n| mode | outcome |\n| --- | --- |\n"));
        for (mode, cell) in cells {
            let words = match cell {
                Ok(words) => words.clone(),
                Err(why) => format!("FAILS: {why}"),
            };
            out.push_str(&format!("| {mode} | {} |\n", words.replace('|', "\\|")));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn every_adapter_meets_every_mode_and_the_table_says_so() {
    let logs = LogBuffer::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let fixtures = fixtures();
    let mut rows = Vec::new();
    for subject in subjects() {
        let reg = subject.registration();
        let Some(fixture) = fixtures.get(reg.profile.id.as_str()) else {
            continue;
        };
        let intent: Capability = fixture.intent.parse().unwrap();
        assert!(
            reg.profile.capabilities.contains(&intent),
            "{} does not serve its fixture's intent",
            reg.profile.id
        );
        let heading = match &subject {
            Subject::Coded(_) => format!("{} (coded adapter)", reg.profile.id),
            Subject::Shipped { file, .. } => format!("{} (manifest {file})", reg.profile.id),
        };
        rows.push((heading, run_modes(&subject, fixture).await));
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let mut failures = Vec::new();
    for (id, cells) in &rows {
        for mode in MODES {
            match cells.iter().find(|(m, _)| *m == mode) {
                Some((_, Ok(_))) => {}
                Some((_, Err(why))) => failures.push(format!("{id} › {mode}: {why}")),
                None => failures.push(format!("{id} › {mode}: not run")),
            }
        }
        assert_eq!(cells.len(), MODES.len(), "{id}: a mode outside the list");
    }
    assert!(
        failures.is_empty(),
        "modes failed or missing:\n{}",
        failures.join("\n")
    );

    let logged = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    assert!(
        !logged.is_empty(),
        "the suite captured no log at all: the check below would prove nothing"
    );
    assert!(!logged.contains(KEY), "a key reached the log");

    let table = render(&rows);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/conformance.md");
    if std::env::var_os("SWITCHYARD_WRITE_CONFORMANCE").is_some() {
        std::fs::write(path, &table).unwrap();
    }
    let kept = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        kept == table,
        "docs/conformance.md is stale: run SWITCHYARD_WRITE_CONFORMANCE=1 cargo test -p engine \
         --features test-support --test conformance, and commit it. The suite's table:\n{table}"
    );
}

/// `value` with its `at`-th node (in document order, wrapping) replaced.
fn replace_node(value: &mut serde_json::Value, at: &mut usize, with: &serde_json::Value) -> bool {
    if *at == 0 {
        *value = with.clone();
        return true;
    }
    *at -= 1;
    match value {
        serde_json::Value::Array(items) => items.iter_mut().any(|v| replace_node(v, at, with)),
        serde_json::Value::Object(map) => map.values_mut().any(|v| replace_node(v, at, with)),
        _ => false,
    }
}

/// The fuzz half of the suite: each adapter's documented success answer
/// with one node replaced by arbitrary JSON. Nothing may panic, the key
/// never shows, and what comes back is results or a classified error.
#[test]
fn fuzz_every_adapter_survives_mutated_answers() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let fixtures = fixtures();
    for subject in subjects() {
        let id = subject.registration().profile.id;
        let Some(fixture) = fixtures.get(id.as_str()) else {
            continue;
        };
        let (word, body) = fixture.success[0];
        let seed: serde_json::Value = serde_json::from_str(body).unwrap();
        fuzz(
            &format!("{id}'s answers, one node replaced"),
            150,
            file!(),
            (0usize..64, json(4, 40)),
            |(at, with)| {
                let mut mutated = seed.clone();
                let mut at = at;
                replace_node(&mut mutated, &mut at, &with);
                let mut answers = all_json(&fixture.success);
                answers.retain(|(w, _)| *w != word);
                answers.insert(0, (word, Answer::json(200, &mutated.to_string())));
                let (outcome, _) =
                    runtime.block_on(fire_with(&subject, fixture, answers, Limits::default()));
                assert_no_key(&id, &outcome);
                // Results whose URL is not http(s) are the store's to drop;
                // an answer that came at once is never a timeout.
                proptest::prop_assert!(
                    !matches!(outcome, Err(FireError::Timeout { .. })),
                    "{id}: {outcome:?}"
                );
                Ok(())
            },
        );
    }
}
