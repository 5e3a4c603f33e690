//! The scripting commands of the `switchyard` binary against a real server:
//! what a person reads, what a script parses (`--json`, the same envelope
//! as the REST door), and the exit code of each kind of failure.

mod common;

use common::command::switchyard;
use common::{TestServer, TEST_EMAIL, TEST_PACKS, TEST_WORKSPACE};
use engine::connectors::scripted::{ScriptedConnector, Step};
use engine::connectors::seam::FireError;
use engine::packs::Catalog;
use model::{BuiltinCapability as B, Capability, CostTier};
use serde_json::Value;

/// A server with the test catalogue: `alpha` serves the web and the news
/// and finds two results; `broken` serves the news and fails.
async fn server() -> (TestServer, String) {
    let server = TestServer::start_with(engine::store::testing::sqlite(), |state| {
        *state.engine.catalog_lock().write().unwrap() = Catalog::from_toml(TEST_PACKS).unwrap();
        let serves: Vec<Capability> = vec![B::SearchWeb.into(), B::SearchNews.into()];
        state
            .engine
            .registry()
            .register(
                ScriptedConnector::registration("alpha", CostTier::Free, &serves),
                ScriptedConnector::new("alpha", [Step::Found(2)]),
            )
            .unwrap();
        let news: Vec<Capability> = vec![B::SearchNews.into()];
        state
            .engine
            .registry()
            .register(
                ScriptedConnector::registration("broken", CostTier::Paid, &news),
                ScriptedConnector::new(
                    "broken",
                    [Step::Fail(FireError::Upstream {
                        reason: "HTTP 503".into(),
                    })],
                ),
            )
            .unwrap();
    })
    .await;
    let (_, token) = server
        .state
        .engine
        .create_token(TEST_EMAIL, TEST_WORKSPACE)
        .await
        .unwrap();
    (server, token)
}

#[tokio::test]
async fn a_call_prints_its_results_for_people_and_the_envelope_for_scripts() {
    let (server, token) = server().await;
    let ran = switchyard(
        &server,
        Some(&token),
        &["call", "search.news", "Ada Lovelace"],
    )
    .await;
    assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stdout
            .starts_with("search.news \"Ada Lovelace\": 2 results, completed"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("via alpha"), "{}", ran.stdout);

    let ran = switchyard(
        &server,
        Some(&token),
        &[
            "call",
            "search.news",
            "Ada Lovelace",
            "--json",
            "--max-results",
            "1",
        ],
    )
    .await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let envelope: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(envelope["status"], "completed");
    assert_eq!(envelope["results"].as_array().unwrap().len(), 1);
    // The same envelope the REST door keeps for that call.
    let id = envelope["job_id"].as_i64().unwrap();
    let (_, stored) = server.get_json(&format!("/api/calls/{id}")).await;
    assert_eq!(stored, envelope);

    // Nothing answered: exit 1 and each reason on standard error.
    let ran = switchyard(
        &server,
        Some(&token),
        &["call", "search.news", "Ada", "--connector", "broken"],
    )
    .await;
    assert_eq!(ran.code, 1, "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stderr.contains("broken: ") && ran.stderr.contains("503"),
        "{}",
        ran.stderr
    );
    server.stop().await;
}

#[tokio::test]
async fn fire_fanout_connectors_and_export_work_on_a_set() {
    let (server, token) = server().await;
    let me = server.me();
    let set = me
        .import("Companies", "test", "name,city\nAcme,Lyon\nBolt,Oslo\n")
        .await
        .id;
    let records = me.record_ids(set).await;
    let set = set.to_string();

    let ran = switchyard(&server, Some(&token), &["connectors"]).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let lines: Vec<&str> = ran.stdout.lines().collect();
    assert!(lines[0].starts_with("id"), "{}", ran.stdout);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("alpha") && l.contains("available") && l.contains("search.web")),
        "{}",
        ran.stdout
    );

    let record = records[0].to_string();
    let ran = switchyard(
        &server,
        Some(&token),
        &["fire", "--record", &record, "--pack", "web"],
    )
    .await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stdout
            .contains(&format!("record {record}, pack web: found (2)")),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("alpha found, 2 results"),
        "{}",
        ran.stdout
    );

    // A fire whose every connector failed says so and exits 1, for
    // people and for scripts.
    let failing = [
        "fire",
        "--record",
        &record,
        "--pack",
        "news",
        "--connector",
        "broken",
    ];
    let ran = switchyard(&server, Some(&token), &failing).await;
    assert_eq!(ran.code, 1, "{}", ran.stdout);
    assert!(ran.stdout.contains("failed: broken: "), "{}", ran.stdout);
    let json = [&failing[..], &["--json"]].concat();
    let ran = switchyard(&server, Some(&token), &json).await;
    assert_eq!(ran.code, 1, "{}", ran.stdout);
    let envelope: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(envelope["status"], "failed", "{envelope}");
    assert!(
        envelope["error"].as_str().unwrap().starts_with("broken: "),
        "{envelope}"
    );

    let ran = switchyard(
        &server,
        Some(&token),
        &["fanout", "--set", &set, "--pack", "web", "--wait"],
    )
    .await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.contains("completed: 2/2 fires"),
        "{}",
        ran.stdout
    );

    let ran = switchyard(&server, Some(&token), &["export", "--set", &set]).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.starts_with("record_id,name,city,intent"),
        "{}",
        ran.stdout
    );
    server.stop().await;
}

#[tokio::test]
async fn each_kind_of_failure_has_its_exit_code() {
    let (server, token) = server().await;
    // No token, and one the server does not know.
    let ran = switchyard(&server, None, &["connectors"]).await;
    assert_eq!(ran.code, 3, "{}", ran.stderr);
    assert!(ran.stderr.contains("SWITCHYARD_TOKEN"), "{}", ran.stderr);
    let ran = switchyard(&server, Some("sy_not_a_token"), &["connectors"]).await;
    assert_eq!(ran.code, 3, "{}", ran.stderr);
    assert!(!ran.stderr.contains("sy_not_a_token"), "{}", ran.stderr);
    // Not in the workspace.
    let ran = switchyard(
        &server,
        Some(&token),
        &["fire", "--record", "999999", "--pack", "web"],
    )
    .await;
    assert_eq!(ran.code, 4, "{}", ran.stderr);
    assert!(ran.stderr.contains("record 999999"), "{}", ran.stderr);
    // Input the server refuses names what.
    let ran = switchyard(
        &server,
        Some(&token),
        &["call", "search.news", "x", "--max-results", "500"],
    )
    .await;
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(ran.stderr.contains("max_results"), "{}", ran.stderr);
    // Nothing listening.
    let ran = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args([
            "connectors",
            "--url",
            "http://127.0.0.1:9",
            "--token",
            &token,
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(ran.status.code(), Some(7));
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(!stderr.contains(&token), "{stderr}");
    server.stop().await;
}

#[tokio::test]
async fn backup_copies_a_running_servers_database_and_says_how_for_postgresql() {
    let db = engine::store::testing::sqlite();
    let url = db.url.clone();
    let server = TestServer::start_on(db).await;
    server
        .me()
        .import("Kept", "social-profiles", "name\nAcme\n")
        .await;
    let copy =
        std::env::temp_dir().join(format!("switchyard-cli-backup-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&copy);
    let copy_arg = copy.to_str().unwrap();

    let ran = switchyard(
        &server,
        None,
        &["backup", "--database-url", &url, "--to", copy_arg],
    )
    .await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains(copy_arg), "{}", ran.stdout);
    let restored = engine::store::Store::connect(&format!("sqlite://{copy_arg}"))
        .await
        .unwrap();
    let sets = restored
        .list_record_sets(server.workspace_id)
        .await
        .unwrap();
    assert_eq!(
        sets.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        ["Kept"]
    );

    // Never over a file; PostgreSQL gets the pg_dump recipe.
    let ran = switchyard(
        &server,
        None,
        &["backup", "--database-url", &url, "--to", copy_arg],
    )
    .await;
    assert_ne!(ran.code, 0);
    assert!(ran.stderr.contains("already exists"), "{}", ran.stderr);
    let ran = switchyard(
        &server,
        None,
        &[
            "backup",
            "--database-url",
            "postgres://u@127.0.0.1:1/db",
            "--to",
            "/tmp/x.db",
        ],
    )
    .await;
    assert_ne!(ran.code, 0);
    assert!(ran.stderr.contains("pg_dump"), "{}", ran.stderr);
    drop(restored);
    let _ = std::fs::remove_file(&copy);
    server.stop().await;
}

#[tokio::test]
async fn a_fire_past_a_records_daily_cap_exits_8_until_told_to_spend_more() {
    let alpha = ScriptedConnector::new("alpha", std::iter::repeat_n(Step::Empty, 3));
    let connectors = vec![(common::priced("alpha", 0.1), alpha)];
    let server = TestServer::with_scripted(engine::store::testing::sqlite(), connectors).await;
    let (_, token) = server
        .state
        .engine
        .create_token(TEST_EMAIL, TEST_WORKSPACE)
        .await
        .unwrap();
    let (code, body) = server
        .put_json(
            "/api/record-caps",
            serde_json::json!({"unit": "USD", "daily_limit": 0.1}),
        )
        .await;
    assert_eq!(code, 200, "{body}");
    let set = server
        .me()
        .import("S", "test", "name,city\nAcme,Lyon\n")
        .await
        .id;
    let record = server.me().record_ids(set).await[0].to_string();
    let fire = ["fire", "--record", &record, "--pack", "web"];
    assert_eq!(switchyard(&server, Some(&token), &fire).await.code, 0);
    let ran = switchyard(&server, Some(&token), &fire).await;
    assert_eq!(ran.code, 8, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("spend 0.10 USD more?"),
        "{}",
        ran.stderr
    );
    let more = [&fire[..], &["--spend-more"]].concat();
    let ran = switchyard(&server, Some(&token), &more).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    server.stop().await;
}

/// `web.scrape` and `web.discover` from the command line: one line per
/// address, a page that could not be read named with why and exit 9; the
/// discovery's `--max-results` is its `top_k`.
#[tokio::test]
async fn the_web_verbs_run_from_the_command_line() {
    let site = axum::Router::new().route(
        "/",
        axum::routing::get(|| async {
            axum::response::Html(
                "<html><head><title>Acme Rockets</title></head><body><p>We build rockets.</p></body></html>",
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let site_url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, site).await });
    let server = TestServer::start_configured(
        engine::store::testing::sqlite(),
        |config| {
            config.fetch_allow = engine::connectors::guard::AllowList::parse("127.0.0.1");
        },
        |state| {
            state.engine.register_builtin(None).unwrap();
            let serves: Vec<Capability> = vec![B::SearchWeb.into()];
            state
                .engine
                .registry()
                .register(
                    ScriptedConnector::registration("alpha", CostTier::Free, &serves),
                    ScriptedConnector::new("alpha", [Step::Found(3)]),
                )
                .unwrap();
        },
    )
    .await;
    let token = server
        .state
        .engine
        .create_token(TEST_EMAIL, TEST_WORKSPACE)
        .await
        .unwrap()
        .1;
    // What each verb takes, from the server's registry.
    let ran = switchyard(&server, Some(&token), &["verbs"]).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let line = |name: &str| -> String {
        let found = ran
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")));
        found
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        line("web.scrape"),
        "web.scrape Read pages: via site-crawler"
    );
    assert!(
        line("maps.reviews").starts_with("maps.reviews Read reviews: unavailable:")
            && line("maps.reviews").contains("google-places: needs GOOGLE_PLACES_API_KEY"),
        "{}",
        ran.stdout
    );
    let ran = switchyard(&server, Some(&token), &["verbs", "web.scrape"]).await;
    assert!(
        ran.stdout
            .contains("  urls (array, required) The pages to read"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("  metadata (object, required)"),
        "{}",
        ran.stdout
    );
    let ran = switchyard(&server, Some(&token), &["verbs", "web.nope"]).await;
    assert_eq!(ran.code, 4, "{}", ran.stderr);

    let missing = format!("{site_url}/missing");
    let ran = switchyard(
        &server,
        Some(&token),
        &["call", "web.scrape", &format!("{site_url}/"), &missing],
    )
    .await;
    assert_eq!(ran.code, 9, "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stdout.contains("2 results, completed"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("Acme Rockets"), "{}", ran.stdout);
    assert!(ran.stdout.contains("We build rockets."), "{}", ran.stdout);
    assert!(
        ran.stdout.contains("not read: site-crawler: site crawler:")
            && ran.stdout.contains("HTTP 404"),
        "{}",
        ran.stdout
    );

    let ran = switchyard(
        &server,
        Some(&token),
        &[
            "call",
            "web.discover",
            "Ada",
            "Lovelace",
            "--connector",
            "alpha",
            "--max-results",
            "2",
            "--json",
        ],
    )
    .await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let envelope: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(envelope["results"].as_array().unwrap().len(), 2);
    assert_eq!(envelope["results"][0]["connector_id"], "alpha");
    server.stop().await;
}
