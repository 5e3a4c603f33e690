//! The conformance suite every coded adapter runs: a provider-shaped fake on
//! 127.0.0.1 replays documented answers (success, empty, 429 with
//! Retry-After, refused key, 5xx, timeout, malformed JSON, an oversized body,
//! an HTML error page) and the suite checks the classified outcome, the
//! results' fields, that the key never shows in anything the adapter returns,
//! and that nothing panics. An adapter without fixtures fails the suite. Its
//! fuzz half replaces parts of each success answer with arbitrary JSON.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use engine::connector::{FireError, FireOpts, Found};
use engine::connectors::http::Http;
use engine::connectors::{adapters, Adapter};
use model::Capability;

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
    });
    f.insert("tavily", Fixture {
        intent: "search.web",
        success: vec![("/search", r#"{"query":"Acme","answer":null,"images":[],"results":[
            {"title":"Acme Rockets","url":"https://acme.example/","content":"Official site","score":0.93,"raw_content":null}],"response_time":1.2}"#)],
        first_url: "https://acme.example/",
        empty: vec![("/search", r#"{"query":"Acme","results":[],"response_time":0.4}"#)],
        refused: (401, r#"{"detail":{"error":"Unauthorized: missing or invalid API key."}}"#),
        key_in: Some(KeyIn::Bearer),
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
    });
    f.insert("brave", Fixture {
        intent: "search.web",
        success: vec![("", r#"{"type":"search","query":{"original":"Acme"},"web":{"type":"search","results":[
            {"title":"<strong>Acme</strong> Rockets","url":"https://acme.example/","description":"We build <strong>rockets</strong>.","age":"2 days ago"}]}}"#)],
        first_url: "https://acme.example/",
        empty: vec![("", r#"{"type":"search","query":{"original":"Acme"},"web":{"type":"search","results":[]}}"#)],
        refused: (422, r#"{"type":"ErrorResponse","error":{"id":"x","status":422,"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"The provided subscription token is invalid."}}"#),
        key_in: Some(KeyIn::Header("x-subscription-token")),
    });
    f.insert("wikipedia", Fixture {
        intent: "fetch.wikipedia",
        success: vec![("", r#"{"pages":[{"id":12,"key":"Acme_Corporation","title":"Acme Corporation","excerpt":"The <span class=\"searchmatch\">Acme</span> Corporation is a fictional","description":"Fictional company","thumbnail":null}]}"#)],
        first_url: "https://en.wikipedia.org/wiki/Acme_Corporation",
        empty: vec![("", r#"{"pages":[]}"#)],
        refused: (403, "Please set a user-agent and respect our robot policy"),
        key_in: None,
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
    });
    f.insert("google-kg", Fixture {
        intent: "fetch.knowledge_graph",
        success: vec![("", r#"{"@context":{},"@type":"ItemList","itemListElement":[{"@type":"EntitySearchResult","result":{"@id":"kg:/m/0abc","name":"Acme","@type":["Organization"],"description":"Company","url":"https://acme.example/","detailedDescription":{"articleBody":"Acme builds rockets.","url":"https://en.wikipedia.org/wiki/Acme"}},"resultScore":812.5}]}"#)],
        first_url: "https://acme.example/",
        empty: vec![("", r#"{"@context":{},"@type":"ItemList","itemListElement":[]}"#)],
        refused: (400, r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","errors":[{"reason":"badRequest"}]}}"#),
        key_in: Some(KeyIn::Query("key")),
    });
    f.insert("bluesky", Fixture {
        intent: "search.social.bluesky",
        success: vec![("", r#"{"actors":[{"did":"did:plc:abc","handle":"acme.bsky.social","displayName":"Acme","description":"Rockets"}],"cursor":"25"}"#)],
        first_url: "https://bsky.app/profile/acme.bsky.social",
        empty: vec![("", r#"{"actors":[]}"#)],
        refused: (401, r#"{"error":"AuthMissing","message":"Authentication Required"}"#),
        key_in: None,
    });
    f.insert("youtube", Fixture {
        intent: "search.social.youtube",
        success: vec![("", r#"{"kind":"youtube#searchListResponse","items":[{"kind":"youtube#searchResult","id":{"kind":"youtube#channel","channelId":"UC123abc"},"snippet":{"title":"Acme","description":"Our channel","publishedAt":"2015-01-01T00:00:00Z"}}]}"#)],
        first_url: "https://www.youtube.com/channel/UC123abc",
        empty: vec![("", r#"{"kind":"youtube#searchListResponse","items":[]}"#)],
        refused: (400, r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","errors":[{"reason":"badRequest"}],"status":"INVALID_ARGUMENT"}}"#),
        key_in: Some(KeyIn::Query("key")),
    });
    f.insert("openalex", Fixture {
        intent: "search.scholar",
        success: vec![("", r#"{"meta":{"count":1},"results":[{"id":"https://openalex.org/W1","doi":"https://doi.org/10.1/acme","display_name":"Rockets by Acme","publication_year":2020,"cited_by_count":3,"primary_location":{"source":{"display_name":"Journal of Rockets"}}}]}"#)],
        first_url: "https://doi.org/10.1/acme",
        empty: vec![("", r#"{"meta":{"count":0},"results":[]}"#)],
        refused: (403, r#"{"error":"Forbidden","message":"API key invalid"}"#),
        key_in: None,
    });
    f.insert("gdelt", Fixture {
        intent: "search.news",
        success: vec![("", r#"{"articles":[{"url":"https://news.example/acme-launch","url_mobile":"","title":"Acme launches","seendate":"20261201T120000Z","socialimage":"","domain":"news.example","language":"English","sourcecountry":"France"}]}"#)],
        first_url: "https://news.example/acme-launch",
        empty: vec![("", "{}")],
        refused: (403, "<html><body>Forbidden</body></html>"),
        key_in: None,
    });
    f
}

fn build(adapter: &Adapter, http: Http, base: &str) -> Arc<dyn engine::connector::Connector> {
    adapter.connector(http, Some(base.to_owned()), Some(KEY.to_owned()))
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
    adapter: &Adapter,
    fixture: &Fixture,
    answers: Vec<(&'static str, Answer)>,
    http: Http,
) -> (Result<Found, FireError>, Vec<Seen>) {
    let (base, fake) = start_fake().await;
    *fake.answers.lock().unwrap() = answers;
    let connector = build(adapter, http, &base);
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
    let missing: Vec<String> = adapters()
        .iter()
        .map(|a| (a.registration)().id)
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

#[tokio::test]
async fn every_adapter_classifies_every_documented_answer() {
    let logs = LogBuffer::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let fixtures = fixtures();
    for adapter in adapters() {
        let reg = (adapter.registration)();
        let id = reg.id.clone();
        let Some(fixture) = fixtures.get(id.as_str()) else {
            continue;
        };
        let intent: Capability = fixture.intent.parse().unwrap();
        assert!(
            reg.capabilities.contains(&intent),
            "{id} does not serve its fixture's intent"
        );
        let http = Http::new().unwrap();

        // Success: results with their fields, the key sent the documented way.
        let (outcome, seen) =
            fire_with(&adapter, fixture, all_json(&fixture.success), http.clone()).await;
        assert_no_key(&id, &outcome);
        let results = outcome
            .unwrap_or_else(|e| panic!("{id}: success fixture gave {e}"))
            .results;
        assert!(
            !results.is_empty(),
            "{id}: no results from the success fixture"
        );
        assert_eq!(results[0].url, fixture.first_url, "{id}");
        for r in &results {
            assert!(!r.title.trim().is_empty(), "{id}: a result without a title");
            assert!(
                !r.title.contains('<') && !r.snippet.contains("<strong>"),
                "{id}: markup in text: {r:?}"
            );
        }
        assert!(
            seen.iter().all(|s| s
                .headers
                .get("user-agent")
                .is_some_and(|ua| ua.to_str().unwrap().starts_with("Switchyard/"))),
            "{id}: User-Agent"
        );
        match fixture.key_in {
            Some(KeyIn::Bearer) => assert!(
                seen.iter().all(|s| s
                    .headers
                    .get("authorization")
                    .is_some_and(|v| v == &format!("Bearer {KEY}"))),
                "{id}: bearer key"
            ),
            Some(KeyIn::Header(name)) => assert!(
                seen.iter()
                    .all(|s| s.headers.get(name).is_some_and(|v| v == KEY)),
                "{id}: key header"
            ),
            Some(KeyIn::Query(name)) => assert!(
                seen.iter()
                    .all(|s| s.uri.contains(&format!("{name}={KEY}"))),
                "{id}: key parameter"
            ),
            None => assert!(
                seen.iter()
                    .all(|s| !s.uri.contains(KEY) && !s.body.contains(KEY)),
                "{id}: a keyless provider got a key"
            ),
        }

        // Empty: not found is an empty list, not an error.
        let (outcome, _) =
            fire_with(&adapter, fixture, all_json(&fixture.empty), http.clone()).await;
        assert_eq!(
            outcome.as_ref().map(|found| found.results.len()).ok(),
            Some(0),
            "{id}: empty fixture gave {outcome:?}"
        );

        // 429 with Retry-After.
        let mut limited = Answer::json(429, r#"{"error":"Too Many Requests"}"#);
        limited.headers.push(("retry-after", "7".into()));
        let (outcome, _) = fire_with(&adapter, fixture, every(limited), http.clone()).await;
        assert_no_key(&id, &outcome);
        assert!(
            matches!(outcome, Err(FireError::RateLimited { retry_after: Some(d), .. }) if d == Duration::from_secs(7)),
            "{id}: 429 gave {outcome:?}"
        );

        // The provider's own refusal of a key.
        let (status, body) = fixture.refused;
        let (outcome, _) = fire_with(
            &adapter,
            fixture,
            every(Answer::json(status, body)),
            http.clone(),
        )
        .await;
        assert_no_key(&id, &outcome);
        assert!(
            matches!(outcome, Err(FireError::AuthFailed { .. })),
            "{id}: refused key gave {outcome:?}"
        );

        // A key echoed back in an error body is scrubbed.
        if fixture.key_in.is_some() {
            let echo = format!(r#"{{"error":"bad key {KEY}"}}"#);
            let (outcome, _) = fire_with(
                &adapter,
                fixture,
                every(Answer::json(401, &echo)),
                http.clone(),
            )
            .await;
            assert_no_key(&id, &outcome);
            assert!(
                matches!(outcome, Err(FireError::AuthFailed { .. })),
                "{id}: 401 gave {outcome:?}"
            );
        }

        // 5xx.
        let (outcome, _) = fire_with(
            &adapter,
            fixture,
            every(Answer::json(502, r#"{"error":"bad gateway"}"#)),
            http.clone(),
        )
        .await;
        assert!(
            matches!(outcome, Err(FireError::Upstream { .. })),
            "{id}: 502 gave {outcome:?}"
        );

        // Malformed JSON.
        let (outcome, _) = fire_with(
            &adapter,
            fixture,
            every(Answer::json(200, r#"{"results": [{"url": "#)),
            http.clone(),
        )
        .await;
        assert!(
            matches!(outcome, Err(FireError::Malformed { .. })),
            "{id}: malformed gave {outcome:?}"
        );

        // An HTML error page with a success status.
        let html = Answer {
            status: 200,
            headers: vec![("content-type", "text/html".into())],
            body: "<!DOCTYPE html><html><body>Maintenance</body></html>".into(),
            delay: Duration::ZERO,
        };
        let (outcome, _) = fire_with(&adapter, fixture, every(html), http.clone()).await;
        assert!(
            matches!(&outcome, Err(e) if e.to_string().contains("HTML")),
            "{id}: HTML page gave {outcome:?}"
        );

        // An oversized body.
        let big = Answer::json(200, &format!(r#"{{"pad":"{}"}}"#, "x".repeat(200_000)));
        let (outcome, _) = fire_with(
            &adapter,
            fixture,
            every(big),
            Http::new().unwrap().with_max_body(64 * 1024),
        )
        .await;
        assert!(
            matches!(&outcome, Err(FireError::Malformed { reason }) if reason.contains("more than")),
            "{id}: oversized gave {outcome:?}"
        );

        // No answer in time.
        let mut slow = Answer::json(200, fixture.success[0].1);
        slow.delay = Duration::from_secs(3);
        let (outcome, _) = fire_with(
            &adapter,
            fixture,
            every(slow),
            Http::with_timeout(Duration::from_millis(300)).unwrap(),
        )
        .await;
        assert!(
            matches!(outcome, Err(FireError::Timeout { .. })),
            "{id}: slow answer gave {outcome:?}"
        );

        // No server at all.
        let connector = build(&adapter, http.clone(), "http://127.0.0.1:9");
        let outcome = connector.fire(&intent, "Acme", &opts()).await;
        assert_no_key(&id, &outcome);
        assert!(
            matches!(outcome, Err(FireError::Upstream { .. })),
            "{id}: no server gave {outcome:?}"
        );
    }
    let logged = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    assert!(
        !logged.is_empty(),
        "the suite captured no log at all: the check below would prove nothing"
    );
    assert!(!logged.contains(KEY), "a key reached the log");
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
    for adapter in adapters() {
        let id = (adapter.registration)().id;
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
                    runtime.block_on(fire_with(&adapter, fixture, answers, Http::new().unwrap()));
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
