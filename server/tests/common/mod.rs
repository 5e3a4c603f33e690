//! The one test-server helper every integration test uses: the real router on
//! 127.0.0.1:0 with its own database and an injected shutdown.
#![allow(dead_code)] // each test binary uses a different part of it

pub mod agent;
pub mod client;
pub mod command;
pub mod outage;
pub mod real;
pub mod shared;

use engine::store::testing::TestDatabase;
use server::{AppState, Config};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A paid scripted connector `id` serving `search.web` at `per_call` USD a
/// call.
pub fn priced(id: &str, per_call: f64) -> engine::connectors::registry::Registration {
    let web = [model::BuiltinCapability::SearchWeb.into()];
    let mut reg = engine::connectors::scripted::ScriptedConnector::registration(
        id,
        model::CostTier::Paid,
        &web,
    );
    reg.profile.cost = Some(model::Cost::per_call(
        model::Amount::from_decimal(per_call).unwrap(),
        "USD",
    ));
    reg
}

/// The user the test helpers act as: admin of [`TEST_WORKSPACE`].
pub const TEST_EMAIL: &str = "tester@example.org";
pub const TEST_PASSWORD: &str = "tester's long password";
pub const TEST_WORKSPACE: &str = "test";
/// The key test servers seal workspace secrets with (32 bytes, base64).
pub const TEST_SECRETS_KEY: &str = "c3dpdGNoeWFyZCB0ZXN0IGtleSwgMzIgYnl0ZXMhISE=";

pub struct TestServer {
    /// `http://127.0.0.1:<port>`, no trailing slash.
    pub url: String,
    pub state: AppState,
    /// Sends [`TEST_EMAIL`]'s API token with every request.
    pub client: reqwest::Client,
    /// Sends no credentials.
    pub anonymous: reqwest::Client,
    /// The id of [`TEST_WORKSPACE`].
    pub workspace_id: i64,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    _db: TestDatabase,
}

impl TestServer {
    /// Starts a server on a fresh SQLite database.
    pub async fn start() -> Self {
        Self::start_on(engine::store::testing::sqlite()).await
    }

    /// Starts a server on the given (empty) database.
    pub async fn start_on(db: TestDatabase) -> Self {
        Self::start_with(db, |_| {}).await
    }

    /// Starts a server whose state `setup` prepares first (registering
    /// connectors, say), the way `serve` does between its start-up steps.
    pub async fn start_with(db: TestDatabase, setup: impl FnOnce(&AppState)) -> Self {
        Self::start_configured(db, |_| {}, setup).await
    }

    /// Starts a server with the test catalogue ([`TEST_PACKS`]) and these
    /// scripted connectors.
    pub async fn with_scripted(
        db: TestDatabase,
        connectors: Vec<(
            engine::connectors::registry::Registration,
            std::sync::Arc<engine::connectors::scripted::ScriptedConnector>,
        )>,
    ) -> Self {
        Self::start_with(db, move |state| {
            *state.engine.catalog_lock().write().unwrap() =
                engine::packs::Catalog::from_toml(TEST_PACKS).unwrap();
            for (registration, connector) in connectors {
                state
                    .engine
                    .registry()
                    .register(registration, connector)
                    .unwrap();
            }
        })
        .await
    }

    /// Starts a server with settings `configure` changed.
    pub async fn start_configured(
        db: TestDatabase,
        configure: impl FnOnce(&mut Config),
        setup: impl FnOnce(&AppState),
    ) -> Self {
        let mut config = Self::config(&db);
        configure(&mut config);
        let state = server::startup::prepare(&config).await.expect("start-up");
        setup(&state);
        server::startup::finish(&config, &state)
            .await
            .expect("start-up");
        Self::serve(db, state).await
    }

    /// Starts a server with the test catalogue ([`TEST_PACKS`]) whose
    /// connectors may reach fake providers on 127.0.0.1, with settings
    /// `configure` changed.
    pub async fn start_for_fakes(db: TestDatabase, configure: impl FnOnce(&mut Config)) -> Self {
        Self::start_configured(
            db,
            |config| {
                config.fetch_allow = engine::connectors::guard::AllowList::parse("127.0.0.1");
                configure(config);
            },
            |state| {
                *state.engine.catalog_lock().write().unwrap() =
                    engine::packs::Catalog::from_toml(TEST_PACKS).unwrap();
            },
        )
        .await
    }

    /// Opens the live stream (`/api/events` with `query`, e.g.
    /// `record_set=4`) as the test user, for [`events_until`].
    pub async fn open_events(&self, query: &str) -> reqwest::Response {
        self.client
            .get(self.at(&format!("/api/events?{query}")))
            .send()
            .await
            .unwrap()
    }

    /// Saves a manifest (TOML) through the REST door as the test user; it
    /// must be accepted.
    pub async fn save_manifest(&self, toml: &str) {
        let (status, body) = self.post_manifest(toml).await;
        assert_eq!(status, 201, "{body}");
    }

    /// Posts a manifest (TOML) through the REST door as the test user;
    /// returns the status and the answer.
    pub async fn post_manifest(&self, toml: &str) -> (u16, serde_json::Value) {
        answer(
            self.client
                .post(self.at("/api/manifests"))
                .header("content-type", "application/toml")
                .body(toml.to_owned())
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// The settings a test server runs with on `db`.
    pub fn config(db: &TestDatabase) -> Config {
        Config {
            addr: "127.0.0.1:0".parse().unwrap(),
            database_url: db.url.clone(),
            site_root: concat!(env!("CARGO_MANIFEST_DIR"), "/../target/site").to_owned(),
            demo: false,
            demo_latency: std::time::Duration::ZERO,
            packs_file: None,
            secure_cookies: false,
            first_admin: "first@example.org".to_owned(),
            connectors_dir: std::env::temp_dir().join("switchyard-tests-no-connectors"),
            fetch_allow: engine::connectors::guard::AllowList::default(),
            secrets: Some(
                engine::tenancy::secrets::Sealer::from_key_text(TEST_SECRETS_KEY)
                    .expect("the test key"),
            ),
            leases: engine::execution::lease::LeaseConfig::default(),
            max_inflight: 256,
            workspace_daily_share: 1.0,
            token_requests_per_second: std::num::NonZeroU32::new(
                server::auth::DEFAULT_TOKEN_REQUESTS_PER_SECOND,
            )
            .unwrap(),
            trusted_proxies: server::auth::TrustedProxies::default(),
            calls: engine::ops::CallConfig::default(),
            page_rechecks: engine::execution::gone_pages::PageRechecks::On,
        }
    }

    /// Serves an already prepared state.
    pub async fn serve(db: TestDatabase, state: AppState) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(server::serve(listener, state.clone(), async {
            let _ = rx.await;
        }));
        let added = state
            .engine
            .add_user(
                TEST_EMAIL,
                TEST_WORKSPACE,
                model::Role::Admin,
                Some(TEST_PASSWORD.to_owned()),
            )
            .await
            .expect("the test user");
        let client = token_client(&state, TEST_EMAIL, TEST_WORKSPACE).await;
        TestServer {
            url,
            state,
            client,
            anonymous: reqwest::Client::new(),
            workspace_id: added.workspace_id,
            shutdown: Some(tx),
            task: Some(task),
            _db: db,
        }
    }

    pub fn at(&self, path: &str) -> String {
        format!("{}{}", self.url, path)
    }

    /// A client acting through a new API token as `email` (added with `role`
    /// to `workspace` when missing).
    pub async fn user(&self, email: &str, workspace: &str, role: model::Role) -> reqwest::Client {
        self.state
            .engine
            .add_user(email, workspace, role, None)
            .await
            .expect("a test user");
        token_client(&self.state, email, workspace).await
    }

    /// The test user as the operations layer takes a caller.
    pub async fn tester(&self) -> engine::tenancy::Principal {
        let (_, token) = self
            .state
            .engine
            .create_token(TEST_EMAIL, TEST_WORKSPACE)
            .await
            .expect("a test token");
        self.state
            .engine
            .principal_by_token(&token)
            .await
            .expect("the token's owner")
            .expect("a live token")
    }

    /// A browser-like client (cookies kept) signed in through the sign-in form.
    pub async fn browser(&self, email: &str, password: &str) -> reqwest::Client {
        let client = page_client().cookie_store(true).build().unwrap();
        let res = client
            .post(self.at("/auth/sign-in"))
            .form(&[("email", email), ("password", password), ("next", "/")])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 303, "sign-in should redirect");
        assert_eq!(res.headers()["location"], "/", "sign-in failed for {email}");
        client
    }

    /// Uses a set-password link (`/set-password#secret`) as the person would:
    /// a browser-like client, signed in by it, or the page it was sent back
    /// to with an error.
    pub async fn use_link(&self, link: &str, password: &str) -> (reqwest::Client, String) {
        let token = link.split_once('#').map_or("", |(_, t)| t).to_owned();
        let client = page_client().cookie_store(true).build().unwrap();
        let res = client
            .post(self.at("/auth/set-password"))
            .form(&[
                ("token", token.as_str()),
                ("password", password),
                ("again", password),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(
            res.status().as_u16(),
            303,
            "setting a password should redirect"
        );
        let to = res.headers()["location"].to_str().unwrap().to_owned();
        (client, to)
    }

    /// Calls the pages' server function `name` (e.g. `load_menu`) as a
    /// browser does, with form arguments: the status and the body.
    pub async fn call_server_fn(
        &self,
        browser: &reqwest::Client,
        name: &str,
        args: &[(&str, &str)],
    ) -> (u16, String) {
        let path = server::router::inventory()
            .into_iter()
            .map(|(_, p)| p)
            .find(|p| {
                p.strip_prefix("/api/")
                    .is_some_and(|f| f.trim_end_matches(|c: char| c.is_ascii_digit()) == name)
            })
            .unwrap_or_else(|| panic!("no server function {name}"));
        let res = browser
            .post(self.at(&path))
            .form(args)
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.text().await.unwrap())
    }

    /// Asks the server to stop and waits until it has.
    pub async fn stop(self) {
        self.stop_keeping_database().await;
    }

    /// Stops the server and hands back its database, for a restart on it.
    pub async fn stop_keeping_database(mut self) -> TestDatabase {
        // Like a stopped process, it takes no more work over.
        self.state.engine.stop_heartbeat();
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap();
        }
        std::mem::replace(&mut self._db, engine::store::testing::sqlite())
    }
}

/// A client acting like this site's own pages in a browser: it follows no
/// redirect and says its requests come from the site (`Sec-Fetch-Site:
/// same-origin`, as browsers send), so cookie requests pass the CSRF check.
pub fn page_client() -> reqwest::ClientBuilder {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        "sec-fetch-site",
        reqwest::header::HeaderValue::from_static("same-origin"),
    );
    reqwest::Client::builder()
        .default_headers(headers)
        .redirect(reqwest::redirect::Policy::none())
}

/// The session's `Set-Cookie` line of a sign-in's answer.
pub fn session_cookie(res: &reqwest::Response) -> String {
    let cookies: Vec<&str> = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    cookies
        .iter()
        .find(|c| c.starts_with(&format!("{}=", server::auth::SESSION_COOKIE)))
        .unwrap_or_else(|| panic!("no session cookie in {cookies:?}"))
        .to_string()
}

/// A response's status and JSON body (`null` when it has none).
async fn answer(res: reqwest::Response) -> (u16, serde_json::Value) {
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(serde_json::Value::Null))
}

/// A client sending a new API token of `email` in `workspace`.
pub async fn token_client(state: &AppState, email: &str, workspace: &str) -> reqwest::Client {
    let (_, token) = state
        .engine
        .create_token(email, workspace)
        .await
        .expect("a test token");
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {token}").parse().unwrap(),
    );
    reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap()
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// Test conveniences over the REST door, as the test user or as another
/// user's client (`*_as`).
impl TestServer {
    pub async fn get_json(&self, path: &str) -> (u16, serde_json::Value) {
        self.get_json_as(&self.client, path).await
    }

    pub async fn get_json_as(
        &self,
        client: &reqwest::Client,
        path: &str,
    ) -> (u16, serde_json::Value) {
        answer(client.get(self.at(path)).send().await.unwrap()).await
    }

    pub async fn post_json(&self, path: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
        answer(
            self.client
                .post(self.at(path))
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    pub async fn put_json(&self, path: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
        answer(
            self.client
                .put(self.at(path))
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    pub async fn delete(&self, path: &str) -> (u16, serde_json::Value) {
        answer(self.client.delete(self.at(path)).send().await.unwrap()).await
    }
}

/// The record ids of a page of `/api/record-sets/{id}/records`, in order.
pub fn record_ids(page: &serde_json::Value) -> Vec<i64> {
    page["records"]
        .as_array()
        .expect("a page of records")
        .iter()
        .map(|r| r["id"].as_i64().expect("a record id"))
        .collect()
}

/// Reads the server-sent events of a `/api/events` answer until `until`
/// matches one (within 10 s); returns them all.
pub async fn events_until(
    res: reqwest::Response,
    until: impl Fn(&serde_json::Value) -> bool,
) -> Vec<serde_json::Value> {
    use futures::StreamExt;
    let mut stream = res.bytes_stream();
    let mut buffer = String::new();
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while let Ok(Some(chunk)) = tokio::time::timeout_at(deadline, stream.next()).await {
        buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        for (_, data) in real::sse_blocks(&mut buffer) {
            let event: serde_json::Value = serde_json::from_str(&data).unwrap();
            let done = until(&event);
            seen.push(event);
            if done {
                return seen;
            }
        }
    }
    panic!("the awaited event never came; saw {seen:?}");
}

/// A search.news manifest asking `url?q=<query>` and reading
/// `$.results[*]` (`url`, `title`, `text`); with `key = (parameter,
/// VARIABLE)` it requires the variable and sends it as that parameter.
pub fn news_manifest(id: &str, display_name: &str, url: &str, key: Option<(&str, &str)>) -> String {
    let (requires, key_param) = match key {
        Some((param, var)) => (
            format!("requires_env = [\"{var}\"]\n"),
            format!(", {param} = \"{{{{secret.{var}}}}}\""),
        ),
        None => (String::new(), String::new()),
    };
    format!(
        r#"id = "{id}"
display_name = "{display_name}"
short_label = "N"
capabilities = ["search.news"]
cost_tier = "free"
{requires}
[request]
url = "{url}"
query = {{ q = "{{{{query}}}}"{key_param} }}

[response]
items = "$.results[*]"
url = "$.url"
title = "$.title"
snippet = "$.text"
"#
    )
}

/// Runs a scenario on a fresh SQLite database, then on a fresh PostgreSQL
/// one when `SWITCHYARD_TEST_POSTGRES_URL` is set.
pub async fn on_every_backend<F, Fut>(scenario: F)
where
    F: Fn(TestDatabase) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for db in engine::store::testing::all().await {
        eprintln!("-- on {}", db.kind());
        scenario(db).await;
    }
}

/// A packs file with one pack per chain under test, all in bundle `test`.
pub const TEST_PACKS: &str = r#"
[[pack]]
pack_id = "web"
display_name = "Web"
short_label = "w"
intent = "search.web"
query_template = "{name} {city}"
preferred_connectors = ["alpha", "beta", "gamma"]

[[pack]]
pack_id = "site"
display_name = "Website"
short_label = "ws"
intent = "crawl.site"
query_template = "{website}"

[[pack]]
pack_id = "news"
display_name = "News"
short_label = "n"
intent = "search.news"

[[bundle]]
bundle_id = "test"
display_name = "Test"
members = [{ pack = "web" }, { pack = "news" }]
"#;

/// Waits until `holds` is true, asking every 10 ms, and fails the test
/// naming `what` after 30 s: a test waits on the state it asserts, never
/// for a fixed time.
pub async fn until<F, Fut>(what: &str, mut holds: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while !holds().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited 30 s for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}
