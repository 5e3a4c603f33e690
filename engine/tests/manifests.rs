//! Manifest connectors end to end against a local fake provider: a file
//! dropped in the folder registers and fires with mapped, paged results; an
//! edit updates it; a broken edit is reported while the last good version
//! keeps serving; a deleted file unregisters. The outbound guard and the
//! error rules apply to manifests as to coded adapters, and an answer too big
//! to map is refused before its JSONPath runs.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Json;
use engine::connectors::guard::{AllowList, Outbound};
use engine::connectors::manifest::folder::DropFolder;
use engine::connectors::manifest::{Format, Manifest, ManifestConnector};
use engine::connectors::registry::{EnvLookup, Registry};
use engine::connectors::seam::{Connector, FireError, FireOpts};
use engine::live::events::EventBus;
use model::BuiltinCapability as B;
use serde_json::{json, Value};

type Seen = Arc<Mutex<Vec<String>>>;

/// A provider answering `/search?q=&page=` with two results per page, three
/// pages, `/flaky` with one good page and then a 502, and `/limited` with
/// GitHub's way of saying "rate limit".
async fn provider(seen: Seen) -> String {
    let app = axum::Router::new()
        .route(
            "/search",
            get(move |Query(q): Query<std::collections::HashMap<String, String>>, headers: axum::http::HeaderMap| {
                let seen = seen.clone();
                async move {
                    seen.lock().unwrap().push(format!(
                        "q={} page={} auth={}",
                        q.get("q").cloned().unwrap_or_default(),
                        q.get("page").cloned().unwrap_or_default(),
                        headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("")
                    ));
                    let page: usize = q.get("page").and_then(|p| p.parse().ok()).unwrap_or(0);
                    let hits: Vec<Value> = if page < 3 {
                        (0..2)
                            .map(|i| {
                                let n = page * 2 + i;
                                json!({"link": format!("https://example.org/{n}"), "name": format!("<b>Result</b> {n}"), "about": "text"})
                            })
                            .chain([json!({"name": "no link"})])
                            .collect()
                    } else {
                        Vec::new()
                    };
                    Json(json!({ "data": { "hits": hits } }))
                }
            }),
        )
        .route(
            "/echo",
            // One result naming the query parameters it was sent.
            get(|Query(q): Query<std::collections::BTreeMap<String, String>>| async move {
                let names: Vec<&str> = q.keys().map(String::as_str).collect();
                Json(json!({ "data": { "hits": [
                    {"link": "https://example.org/echo", "name": names.join(","), "about": q.get("mailto").cloned().unwrap_or_default()},
                ] } }))
            }),
        )
        .route(
            "/echo-fail",
            // A provider error that repeats what it was sent.
            get(|Query(q): Query<std::collections::BTreeMap<String, String>>| async move {
                (StatusCode::BAD_GATEWAY, format!("{{\"error\": \"bad request {q:?}\"}}"))
            }),
        )
        .route(
            "/flaky",
            // The first page answers; the second is a provider error.
            get(|Query(q): Query<std::collections::HashMap<String, String>>| async move {
                match q.get("page").map(String::as_str) {
                    Some("0") => Json(json!({ "data": { "hits": [
                        {"link": "https://example.org/a", "name": "A", "about": "first"},
                        {"link": "https://example.org/b", "name": "B", "about": "first"},
                    ] } }))
                    .into_response(),
                    _ => (StatusCode::BAD_GATEWAY, "{\"error\": \"bad gateway\"}").into_response(),
                }
            }),
        )
        .route(
            "/huge",
            // 600 KB, inside the size cap, but 300,001 JSON values.
            get(|| async { Json(json!({ "data": { "hits": vec![0; 300_000] } })) }),
        )
        .route(
            "/limited",
            get(|| async { (StatusCode::FORBIDDEN, "{\"message\": \"API rate limit exceeded\"}") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

fn manifest(base: &str, name: &str) -> String {
    format!(
        r#"
id = "fake-search"
display_name = "{name}"
short_label = "FS"
capabilities = ["search.web"]
cost_tier = "free"
requires_env = ["FAKE_KEY"]

[request]
url = "{base}/search"
query = {{ q = "{{{{query}}}} {{{{record.city}}}}" }}
headers = {{ Authorization = "Bearer {{{{secret.FAKE_KEY}}}}" }}

[response]
items = "$.data.hits[*]"
url = "$.link"
title = "$.name"
snippet = "$.about"

[pagination]
kind = "page"
param = "page"
max_pages = 5
"#
    )
}

fn env() -> EnvLookup {
    Arc::new(|name| (name == "FAKE_KEY").then(|| "fake-secret-key".to_owned()))
}

async fn registry() -> Registry {
    registry_on(EventBus::new()).await
}

async fn registry_on(events: EventBus) -> Registry {
    let store = engine::store::Store::connect("sqlite::memory:")
        .await
        .unwrap();
    Registry::with_env(store, events, env())
}

/// Waits (generously: this is not a timing test) until `done` holds.
async fn eventually(what: &str, done: impl Fn() -> bool) -> Duration {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{what} never happened"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    start.elapsed()
}

/// Writes a new version of the manifest, named `name`, and waits until it
/// serves.
async fn edit(registry: &Registry, file: &std::path::Path, base: &str, name: &str) {
    std::fs::write(file, manifest(base, name)).unwrap();
    eventually("the update", || {
        registry
            .by_id("fake-search")
            .is_some_and(|h| h.registration.profile.display_name == name)
    })
    .await;
}

fn opts(max: usize) -> FireOpts {
    FireOpts {
        record_name: "Acme".into(),
        record_fields: [("city".to_owned(), "Lyon".to_owned())].into(),
        max_results: max,
        ..FireOpts::default()
    }
}

#[tokio::test]
async fn the_drop_folder_registers_updates_reports_and_unregisters_while_running() {
    let seen: Seen = Arc::default();
    let base = provider(seen.clone()).await;
    let registry = registry().await;
    let dir = tempdir();
    let folder = DropFolder::new(
        &dir,
        registry.clone(),
        Outbound::new(AllowList::parse("127.0.0.1")),
        env(),
    );
    let _watching = folder.watch().unwrap();
    let file = dir.join("fake.toml");

    // Dropped in: registered, and it fires with mapped results over pages.
    std::fs::write(&file, manifest(&base, "Fake search")).unwrap();
    eventually("registration", || registry.by_id("fake-search").is_some()).await;
    let handle = registry.by_id("fake-search").unwrap();
    assert!(handle.status.is_available(), "{:?}", handle.status);
    let results = handle
        .connector
        .fire(&B::SearchWeb.into(), "acme", &opts(5))
        .await
        .unwrap()
        .results;
    let urls: Vec<&str> = results.iter().map(|r| r.url.as_str()).collect();
    assert_eq!(
        urls,
        [
            "https://example.org/0",
            "https://example.org/1",
            "https://example.org/2",
            "https://example.org/3",
            "https://example.org/4"
        ]
    );
    assert_eq!(results[0].title, "Result 0", "markup is dropped");
    assert_eq!(results[0].snippet, "text");
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 3, "{requests:?}");
    assert_eq!(
        requests[0],
        "q=acme Lyon page=0 auth=Bearer fake-secret-key"
    );
    assert_eq!(
        requests[2],
        "q=acme Lyon page=2 auth=Bearer fake-secret-key"
    );

    // Edited: updated in place.
    edit(&registry, &file, &base, "Fake search v2").await;

    // Broken: reported, and the last good version keeps serving.
    std::fs::write(
        &file,
        manifest(&base, "Fake search v3").replace("$.data.hits[*]", "data.hits"),
    )
    .unwrap();
    eventually("the error report", || {
        folder.files().values().any(|s| {
            s.error
                .as_deref()
                .is_some_and(|e| e.contains("response.items"))
        })
    })
    .await;
    let still = registry.by_id("fake-search").unwrap();
    assert_eq!(still.registration.profile.display_name, "Fake search v2");
    assert!(!still
        .connector
        .fire(&B::SearchWeb.into(), "acme", &opts(2))
        .await
        .unwrap()
        .results
        .is_empty());

    // Deleted: unregistered.
    std::fs::remove_file(&file).unwrap();
    eventually("unregistration", || registry.by_id("fake-search").is_none()).await;
    assert!(folder.files().is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// How many times each connector was registered or changed since `rx` began.
fn registrations(rx: &mut tokio::sync::broadcast::Receiver<Arc<model::Event>>) -> usize {
    let mut n = 0;
    while let Ok(event) = rx.try_recv() {
        if matches!(event.kind, model::EventKind::ConnectorChanged { .. }) {
            n += 1;
        }
    }
    n
}

#[tokio::test]
async fn a_registration_changes_only_when_its_file_s_content_does() {
    let base = provider(Seen::default()).await;
    let events = EventBus::new();
    let registry = registry_on(events.clone()).await;
    let dir = tempdir();
    let file = dir.join("fake.toml");
    std::fs::write(&file, manifest(&base, "Fake search")).unwrap();
    // Two processes watching one folder: each reads the file when it loads it.
    let here = DropFolder::new(
        &dir,
        registry.clone(),
        Outbound::new(AllowList::parse("127.0.0.1")),
        env(),
    );
    let _watching = here.watch().unwrap();
    here.load_all();
    let elsewhere = DropFolder::new(
        &dir,
        registry_on(EventBus::new()).await,
        Outbound::new(AllowList::parse("127.0.0.1")),
        env(),
    );
    let _watching_too = elsewhere.watch().unwrap();
    elsewhere.load_all();
    let mut rx = events.subscribe();

    // Reads (by anyone) and a save without a change are not changes. The
    // watcher waits 150 ms for quiet: a second is several of its rounds.
    for _ in 0..10 {
        std::fs::read_to_string(&file).unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    std::fs::write(&file, manifest(&base, "Fake search")).unwrap();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(
        registrations(&mut rx),
        0,
        "nothing changed, nothing registers"
    );

    // A real change registers once, and is not repeated by its own reload.
    edit(&registry, &file, &base, "Fake search v2").await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(registrations(&mut rx), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_manifest_cannot_reach_internal_addresses_unless_allowed_and_its_error_rules_apply() {
    let base = provider(Seen::default()).await;
    let registry = registry().await;
    let dir = tempdir();
    std::fs::write(dir.join("fake.toml"), manifest(&base, "Fake")).unwrap();
    let limited = manifest(&base, "Limited")
        .replace("fake-search", "limited")
        .replace("/search", "/limited")
        + "\n[[errors]]\nstatus = 403\nbody_contains = \"rate limit\"\nmeans = \"rate_limited\"\n";
    std::fs::write(dir.join("limited.toml"), limited).unwrap();
    std::fs::write(dir.join("notes.txt"), "not a manifest").unwrap();

    // Not allow-listed: the loopback provider is refused before any request.
    let strict = DropFolder::new(
        &dir,
        registry.clone(),
        Outbound::new(AllowList::default()),
        env(),
    );
    strict.load_all();
    assert_eq!(strict.files().len(), 2, "{:?}", strict.files());
    let handle = registry.by_id("fake-search").unwrap();
    let err = handle
        .connector
        .fire(&B::SearchWeb.into(), "acme", &opts(2))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, FireError::Malformed { reason } if reason.contains("loopback")),
        "{err:?}"
    );

    // Allowed: a 403 that says "rate limit" is a rate limit, not refused keys.
    let registry = self::registry().await;
    let allowed = DropFolder::new(
        &dir,
        registry.clone(),
        Outbound::new(AllowList::parse("127.0.0.1")),
        env(),
    );
    allowed.load_all();
    let err = registry
        .by_id("limited")
        .unwrap()
        .connector
        .fire(&B::SearchWeb.into(), "acme", &opts(2))
        .await
        .unwrap_err();
    assert!(matches!(err, FireError::RateLimited { .. }), "{err:?}");
    assert!(!format!("{err:?}").contains("fake-secret-key"));

    // An answer of too many values is refused before its JSONPath runs.
    std::fs::write(
        dir.join("huge.toml"),
        manifest(&base, "Huge")
            .replace("fake-search", "huge")
            .replace("/search", "/huge"),
    )
    .unwrap();
    allowed.reload(&dir.join("huge.toml"));
    let err = registry
        .by_id("huge")
        .unwrap()
        .connector
        .fire(&B::SearchWeb.into(), "acme", &opts(2))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, FireError::Malformed { reason } if reason.contains("more than 200000 JSON values")),
        "{err:?}"
    );

    // A second file claiming a taken id is refused with a reason.
    std::fs::write(dir.join("twin.toml"), manifest(&base, "Twin")).unwrap();
    allowed.reload(&dir.join("twin.toml"));
    let twin = allowed
        .files()
        .into_iter()
        .find(|(f, _)| f.ends_with("twin.toml"))
        .unwrap()
        .1;
    assert!(twin.error.unwrap().contains("already the connector of"));
    assert_eq!(
        registry
            .by_id("fake-search")
            .unwrap()
            .registration
            .profile
            .display_name,
        "Fake"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_shipped_manifests_check() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../connectors");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(&path).unwrap();
            engine::connectors::manifest::Manifest::parse(
                &text,
                engine::connectors::manifest::Format::Toml,
            )
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            checked += 1;
        }
    }
    assert!(checked >= 3, "only {checked} manifests ship");
}

fn tempdir() -> std::path::PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "sy-manifests-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn a_page_that_fails_after_the_first_keeps_what_the_first_found_marked_partial() {
    let base = provider(Seen::default()).await;
    let registry = registry().await;
    let dir = tempdir();
    std::fs::write(
        dir.join("flaky.toml"),
        manifest(&base, "Flaky")
            .replace("fake-search", "flaky")
            .replace("/search", "/flaky")
            .replace("param = \"page\"", "param = \"page\"\nstart = 0"),
    )
    .unwrap();
    DropFolder::new(
        &dir,
        registry.clone(),
        Outbound::new(AllowList::parse("127.0.0.1")),
        env(),
    )
    .load_all();
    let handle = registry.by_id("flaky").expect("the manifest registers");
    let found = handle
        .connector
        .fire(&B::SearchWeb.into(), "acme", &opts(10))
        .await
        .expect("page 1's results are kept, not dropped with page 2");
    let urls: Vec<&str> = found.results.iter().map(|r| r.url.as_str()).collect();
    assert_eq!(urls, ["https://example.org/a", "https://example.org/b"]);
    let partial = found.partial.expect("the fire says it is partial");
    assert!(
        partial.starts_with(
            "page 2 of up to 5 failed, so only the first page was read: provider error"
        ),
        "{partial}"
    );
    assert!(handle.connector.version().starts_with("manifest "));
}

#[tokio::test]
async fn an_optional_setting_is_sent_when_set_and_its_parameter_left_out_when_not() {
    let base = provider(Seen::default()).await;
    let text = format!(
        r#"id = "echo"
display_name = "Echo"
short_label = "E"
capabilities = ["search.web"]
cost_tier = "free"
optional_env = ["ECHO_MAILTO"]

[request]
url = "{base}/echo"
query = {{ q = "{{{{query}}}}", mailto = "{{{{secret.ECHO_MAILTO}}}}" }}

[response]
items = "$.data.hits[*]"
url = "$.link"
title = "$.name"
snippet = "$.about"
"#
    );
    let manifest = Arc::new(Manifest::parse(&text, Format::Toml).unwrap());
    // Not required: it never makes the connector wait for a setting.
    assert!(manifest.registration().profile.requires_env.is_empty());
    let fire = |env: EnvLookup| {
        let connector = ManifestConnector::new(
            manifest.clone(),
            Outbound::new(AllowList::parse("127.0.0.1")),
            env,
        );
        async move {
            connector
                .fire(&B::SearchWeb.into(), "acme", &opts(5))
                .await
                .unwrap()
                .results
        }
    };
    let unset = fire(Arc::new(|_| None)).await;
    assert_eq!(
        (unset[0].title.as_str(), unset[0].snippet.as_str()),
        ("q", "")
    );
    let set = fire(Arc::new(|name| {
        (name == "ECHO_MAILTO").then(|| "ops@example.org".to_owned())
    }))
    .await;
    assert_eq!(
        (set[0].title.as_str(), set[0].snippet.as_str()),
        ("mailto,q", "ops@example.org")
    );
    // Set, it is scrubbed from messages like a key: it may be one.
    let failing =
        Arc::new(Manifest::parse(&text.replace("/echo\"", "/echo-fail\""), Format::Toml).unwrap());
    let e = ManifestConnector::new(
        failing,
        Outbound::new(AllowList::parse("127.0.0.1")),
        Arc::new(|name| (name == "ECHO_MAILTO").then(|| "ops@example.org".to_owned())),
    )
    .fire(&B::SearchWeb.into(), "acme", &opts(5))
    .await
    .unwrap_err()
    .to_string();
    assert!(e.contains("bad request") && e.contains("acme"), "{e}");
    assert!(!e.contains("ops@example.org"), "{e}");

    // A setting named in neither list is a mistake.
    let e = Manifest::parse(
        &text.replace("optional_env = [\"ECHO_MAILTO\"]", ""),
        Format::Toml,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("neither requires_env nor optional_env"), "{e}");
}
