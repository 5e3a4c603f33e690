//! No secret leaves the server: the real `switchyard` binary runs with
//! provider keys in its environment and logs at debug level; a signed-in user
//! and a token walk every readable route (pages, REST, server functions) with
//! real ids after firing and triaging; neither any response body nor any line
//! the process wrote holds a provider key, a workspace secret, the sealing
//! key, a password, a token or a session id.

mod common;

use std::process::Command;

use common::real::{admin_token, Served};

use axum::http::Method;
use serde_json::Value;

const PASSWORD: &str = "a password nobody may see";
const SEALING_KEY: &str = "c2VhbGluZyBrZXkgZm9yIHRoZSBzZWNyZXRzIHRlc3Q=";
const WORKSPACE_SECRET: (&str, &str) = ("SERPAPI_API_KEY", "workspace-serpapi-key-6");
const PROVIDER_KEYS: [(&str, &str); 5] = [
    ("SERPAPI_API_KEY", "serpapi-key-must-stay-secret-1"),
    ("TAVILY_API_KEY", "tvly-key-must-stay-secret-2"),
    ("BRAVE_API_KEY", "brave-key-must-stay-secret-3"),
    ("GOOGLE_KG_API_KEY", "kg-key-must-stay-secret-4"),
    ("YOUTUBE_API_KEY", "yt-key-must-stay-secret-5"),
];

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn switchyard(database_url: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    cmd.current_dir(root())
        .env("DATABASE_URL", database_url)
        .env("RUST_LOG", "debug")
        .env("SWITCHYARD_SECRETS_KEY", SEALING_KEY)
        .env_remove("SWITCHYARD_PUBLIC_URL");
    for (name, value) in PROVIDER_KEYS {
        cmd.env(name, value);
    }
    cmd
}

fn serve(database_url: &str) -> Served {
    let mut cmd = switchyard(database_url);
    cmd.args([
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--demo",
        "--demo-latency-ms",
        "1",
    ])
    .arg("--packs")
    .arg(root().join("end2end/fixtures/packs.toml"));
    Served::start(cmd, "switchyard")
}

/// A route's path with its parameters filled in.
fn fill(path: &str, id: i64) -> String {
    path.replace(":id", "{id}")
        .replace("{id}", &id.to_string())
        .replace("{pack}", "news")
}

#[tokio::test]
async fn no_response_or_log_line_holds_a_secret() {
    let db = engine::store::testing::sqlite();
    // The user exists before the first start, so no first-run password is printed.
    let token = admin_token(|| switchyard(&db.url), "ada@example.org", "demo", PASSWORD);

    let served = serve(&db.url);
    let url = served.url.clone();
    let browser = common::page_client().cookie_store(true).build().unwrap();
    let res = browser
        .post(format!("{url}/auth/sign-in"))
        .form(&[("email", "ada@example.org"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    let cookie = common::session_cookie(&res);
    let session_id = cookie
        .split(';')
        .next()
        .unwrap()
        .split('=')
        .nth(1)
        .unwrap()
        .to_owned();
    let api = reqwest::Client::new();
    let mut bodies = String::new();
    let mut get = |body: String| bodies.push_str(&body);

    // A workspace secret, set through the API (it wins over the environment).
    let res = api
        .put(format!("{url}/api/secrets/{}", WORKSPACE_SECRET.0))
        .bearer_auth(&token)
        .json(&serde_json::json!({"value": WORKSPACE_SECRET.1}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    get(res.text().await.unwrap());

    // Make something to read: fire, triage, a job.
    let sets: Value = api
        .get(format!("{url}/api/record-sets"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let set = sets[0]["id"].as_i64().unwrap();
    let page: Value = api
        .get(format!("{url}/api/record-sets/{set}/records"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let record = page["records"][0]["id"].as_i64().unwrap();
    let fired = api
        .post(format!("{url}/api/records/{record}/fire"))
        .bearer_auth(&token)
        .json(&serde_json::json!({"pack": "news", "connector": "demo"}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let fire: Value = serde_json::from_str(&fired).unwrap();
    let fire_id = fire["results"][0]["fire_id"].as_i64().unwrap();
    get(fired);
    let items: Value = api
        .get(format!("{url}/api/records/{record}/items"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let item = items[0]["id"].as_i64().unwrap_or(0);
    let job: Value = api
        .post(format!("{url}/api/record-sets/{set}/fanout"))
        .bearer_auth(&token)
        .json(&serde_json::json!({"packs": ["news"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let job_id = job["job_id"].as_i64().unwrap();

    // Every readable route, by token and by session.
    let mut walked = 0;
    for (method, path) in server::router::inventory() {
        if method != Method::GET || path.contains("/events") {
            continue;
        }
        let id = if path.starts_with("/api/records/") {
            record
        } else if path.starts_with("/api/jobs/") {
            job_id
        } else if path.starts_with("/api/items/") {
            item
        } else if path.starts_with("/api/fires/") {
            fire_id
        } else if path.starts_with("/api/connectors/") {
            0
        } else {
            set
        };
        let path = fill(&path, id).replace("/connectors/0/", "/connectors/serpapi/");
        for client in [&api, &browser] {
            let mut req = client.get(format!("{url}{path}"));
            if std::ptr::eq(client, &api) {
                req = req.bearer_auth(&token);
            }
            let res = req.send().await.unwrap();
            assert!(res.status().as_u16() < 500, "GET {path}: {}", res.status());
            get(res.text().await.unwrap());
            walked += 1;
        }
    }
    assert!(walked >= 30, "only {walked} reads");
    // The connectors with keys show as available, not as their keys.
    let connectors = api
        .get(format!("{url}/api/connectors"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(connectors.contains("\"serpapi\""), "{connectors}");
    get(connectors);
    // The read-side server functions, through the session.
    for (method, path) in server::router::inventory() {
        let args = if path.starts_with("/api/load_triage") {
            format!("set_id={set}&filter=all&search=&offset=0")
        } else if path.starts_with("/api/load_menu") {
            format!("record_id={record}&pack_id=news")
        } else if path.starts_with("/api/whoami")
            || path.starts_with("/api/list_")
            || path.starts_with("/api/load_pack_labels")
        {
            String::new()
        } else {
            continue;
        };
        let res = browser
            .request(method, format!("{url}{path}"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(args)
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success(), "{path}: {}", res.status());
        get(res.text().await.unwrap());
    }

    let log = served.log();
    assert!(
        log.contains("DEBUG") || log.contains("INFO"),
        "the process log was read"
    );
    let mut secrets: Vec<&str> = PROVIDER_KEYS.iter().map(|(_, v)| *v).collect();
    secrets.extend([
        WORKSPACE_SECRET.1,
        SEALING_KEY,
        PASSWORD,
        token.as_str(),
        session_id.as_str(),
    ]);
    for secret in secrets {
        assert!(!bodies.contains(secret), "a response body holds a secret");
        assert!(!log.contains(secret), "a log line holds a secret");
    }
    drop(served);
    drop(db);
}
