//! Who may reach what, through the real server: every route needs a session
//! or a token, members cannot do admins' work, workspaces never see each
//! other, sessions outlive a restart, revoked tokens stop at once, and no
//! password, token or provider key shows up in a response or a log line.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use axum::http::Method;
use common::{on_every_backend, TestServer, TEST_EMAIL, TEST_PACKS, TEST_PASSWORD};
use engine::connectors::scripted::{ScriptedConnector, Step};
use engine::packs::Catalog;
use engine::store::testing::{self, TestDatabase};
use model::{BuiltinCapability as B, CostTier, Role};
use serde_json::Value;

/// Every log line of this test binary, to scan for secrets.
fn log_lines() -> Arc<Mutex<Vec<u8>>> {
    static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let writer = buffer.clone();
        tracing_subscriber::fmt()
            .with_env_filter("debug")
            .with_writer(move || SharedWriter(writer.clone()))
            .with_ansi(false)
            .init();
        buffer
    })
    .clone()
}

struct SharedWriter(Arc<Mutex<Vec<u8>>>);

impl Write for SharedWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

async fn server(db: TestDatabase) -> TestServer {
    log_lines();
    TestServer::start_with(db, |state| {
        *state.engine.catalog_lock().write().unwrap() = Catalog::from_toml(TEST_PACKS).unwrap();
        let alpha = ScriptedConnector::new("alpha", std::iter::repeat_n(Step::Found(2), 100));
        state
            .engine
            .registry()
            .register(
                ScriptedConnector::registration("alpha", CostTier::Free, &[B::SearchWeb.into()]),
                alpha,
            )
            .unwrap();
    })
    .await
}

/// A browser on the site's pages, without cookies.
fn no_redirects() -> reqwest::Client {
    common::page_client().build().unwrap()
}

/// A route's path with its parameters filled in.
fn fill(path: &str, id: i64) -> String {
    path.replace("{id}", &id.to_string())
        .replace("{pack}", "web")
        .replace(":id", &id.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_needs_a_session_or_a_token() {
    let server = server(testing::sqlite()).await;
    let routes = server::router::inventory();
    assert!(
        routes
            .iter()
            .any(|(_, p)| p == "/record-sets/:id" || p == "/record-sets/{id}"),
        "{routes:?}"
    );
    assert!(
        routes.iter().filter(|(m, _)| *m == Method::POST).count() > 10,
        "server functions and form posts are listed: {routes:?}"
    );
    let anonymous = no_redirects();
    let mut checked = 0;
    for (method, path) in &routes {
        let path = fill(path, 1);
        if server::auth::is_public(method, &path) {
            continue;
        }
        let res = anonymous
            .request(method.clone(), server.at(&path))
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        // Doors for programs answer 401; pages send people to sign in.
        if path.starts_with("/api/") || path == "/metrics" || path == "/mcp" {
            assert_eq!(
                status, 401,
                "{method} {path} answered {status} without credentials"
            );
            assert_eq!(res.headers()["www-authenticate"], "Bearer");
        } else {
            assert_eq!(
                status, 303,
                "{method} {path} answered {status} without credentials"
            );
            let to = res.headers()["location"].to_str().unwrap();
            assert!(
                to.starts_with("/sign-in?next="),
                "{method} {path} went to {to}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 40, "only {checked} routes were checked");

    // A token that is not one is refused, not treated as no token.
    let res = anonymous
        .get(server.at("/api/record-sets"))
        .bearer_auth("sy_not-a-token")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 401);
    // The open doors stay open.
    let res = anonymous
        .get(server.at("/api/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let res = anonymous.get(server.at("/sign-in")).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert!(res
        .text()
        .await
        .unwrap()
        .contains("action=\"/auth/sign-in\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_cannot_do_what_admins_do() {
    on_every_backend(|db| async {
        let server = server(db).await;
        let member = server
            .user("member@example.org", common::TEST_WORKSPACE, Role::Member)
            .await;
        let tester = server
            .state
            .engine
            .store()
            .user_by_email(TEST_EMAIL)
            .await
            .unwrap()
            .unwrap()
            .id;
        let admin_actions = [
            (
                Method::POST,
                "/api/connectors/alpha/disable".to_owned(),
                None,
            ),
            (
                Method::POST,
                "/api/connectors/alpha/enable".to_owned(),
                None,
            ),
            (Method::GET, "/api/connectors/attention".to_owned(), None),
            (
                Method::POST,
                "/api/members".to_owned(),
                Some(serde_json::json!({"email": "x@example.org", "role": "admin"})),
            ),
            (
                Method::PUT,
                format!("/api/members/{tester}"),
                Some(serde_json::json!({"role": "member"})),
            ),
            (Method::DELETE, format!("/api/members/{tester}"), None),
            (
                Method::POST,
                "/api/connectors/alpha/recheck".to_owned(),
                None,
            ),
            (
                Method::POST,
                "/api/manifests".to_owned(),
                Some(serde_json::json!({"id": "x"})),
            ),
            (
                Method::POST,
                "/api/manifests/test?query=x".to_owned(),
                Some(serde_json::json!({"id": "x"})),
            ),
            (Method::DELETE, "/api/manifests/x".to_owned(), None),
            (
                Method::PUT,
                "/api/secrets/SOME_KEY".to_owned(),
                Some(serde_json::json!({"value": "v"})),
            ),
            (Method::DELETE, "/api/secrets/SOME_KEY".to_owned(), None),
            (
                Method::PUT,
                "/api/packs/web".to_owned(),
                Some(
                    serde_json::json!({"pack_id": "web", "display_name": "W", "short_label": "w", "intent": "search.web"}),
                ),
            ),
            (Method::DELETE, "/api/packs/web".to_owned(), None),
            (
                Method::PUT,
                "/api/bundles/test".to_owned(),
                Some(
                    serde_json::json!({"bundle_id": "test", "display_name": "T", "members": [{"pack": "web"}]}),
                ),
            ),
            (Method::DELETE, "/api/bundles/test".to_owned(), None),
        ];
        for (method, path, body) in admin_actions {
            let mut req = member.request(method.clone(), server.at(&path));
            if let Some(body) = body {
                req = req.json(&body);
            }
            let res = req.send().await.unwrap();
            assert_eq!(res.status().as_u16(), 403, "{method} {path}");
            let body: Value = res.json().await.unwrap();
            assert_eq!(body["error"], "forbidden");
        }
        // The admin-only server functions refuse members too.
        let pack = r#"{"pack": {"pack_id": "web", "display_name": "W", "short_label": "w", "intent": "search.web"}}"#;
        let bundle =
            r#"{"bundle": {"bundle_id": "test", "display_name": "T", "members": [{"pack": "web"}]}}"#;
        let admin_fns: Vec<(String, String)> = server::router::inventory()
            .into_iter()
            .filter_map(|(_, p)| {
                // A server function's path is its name and a hash.
                let name = p.trim_end_matches(|c: char| c.is_ascii_digit());
                let args = if name == "/api/save_pack" {
                    pack.to_owned()
                } else if name == "/api/save_bundle" {
                    bundle.to_owned()
                } else if name == "/api/remove_pack" || name == "/api/remove_bundle" {
                    "id=web".to_owned()
                } else if name == "/api/add_member" {
                    "email=x%40example.org&role=admin".to_owned()
                } else if name == "/api/set_member_role" {
                    format!("user_id={tester}&role=member")
                } else if name == "/api/remove_member" {
                    format!("user_id={tester}")
                } else if name == "/api/switch_connector" {
                    "id=alpha&on=false".to_owned()
                } else if name == "/api/recheck_connector" || name == "/api/remove_manifest" {
                    "id=alpha".to_owned()
                } else if name == "/api/test_manifest" {
                    "text=x&format=toml&query=q".to_owned()
                } else if name == "/api/save_manifest" {
                    "text=x&format=toml".to_owned()
                } else if name == "/api/set_secret" {
                    "name=SOME_KEY&value=v".to_owned()
                } else if name == "/api/clear_secret" {
                    "name=SOME_KEY".to_owned()
                } else {
                    return None;
                };
                Some((p, args))
            })
            .collect();
        assert_eq!(admin_fns.len(), 14, "{admin_fns:?}");
        for (path, args) in admin_fns {
            let kind = if args.starts_with('{') {
                "application/json"
            } else {
                "application/x-www-form-urlencoded"
            };
            let res = member
                .post(server.at(&path))
                .header("content-type", kind)
                .body(args)
                .send()
                .await
                .unwrap();
            assert_eq!(res.status().as_u16(), 403, "server fn {path}");
        }
        let members = server
            .state
            .engine
            .store()
            .members_of(server.workspace_id)
            .await
            .unwrap();
        assert_eq!(members.len(), 2, "nothing changed: {members:?}");
        // Members still import, fire and triage.
        let res = member
            .post(server.at("/api/record-sets"))
            .query(&[("name", "Mine"), ("bundle", "test")])
            .body("name,city\nAcme,Lyon\n")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 201);
        // The admin may.
        let res = server
            .client
            .post(server.at("/api/connectors/alpha/disable"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 200);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_read_write_fire_event_or_export_crosses_workspaces() {
    for db in testing::all().await {
        let kind = db.kind();
        let server = server(db).await;
        let mut bodies = String::new();
        // Workspace two, with a set, a fire, items and a job.
        let two = server.user("bob@example.org", "two", Role::Admin).await;
        let res = two
            .post(server.at("/api/record-sets"))
            .query(&[("name", "Two's secret list"), ("bundle", "test")])
            .body("name,city\nHidden Corp,Oslo\n")
            .send()
            .await
            .unwrap();
        let set_two = res.json::<Value>().await.unwrap()["id"].as_i64().unwrap();
        let page: Value = two
            .get(server.at(&format!("/api/record-sets/{set_two}/records")))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let record_two = page["records"][0]["id"].as_i64().unwrap();
        let fired: Value = two
            .post(server.at(&format!("/api/records/{record_two}/fire")))
            .json(&serde_json::json!({"pack": "web"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let fire_two = fired["results"][0]["fire_id"].as_i64().unwrap();
        let items: Value = two
            .get(server.at(&format!("/api/records/{record_two}/items")))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let item_two = items[0]["id"].as_i64().unwrap();
        let job: Value = two
            .post(server.at(&format!("/api/record-sets/{set_two}/fanout")))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let job_two = job["job_id"].as_i64().unwrap();

        // The test user, in workspace "test", probes all of it.
        let one = &server.client;
        let probes: Vec<(Method, String, Option<Value>)> = vec![
            (
                Method::GET,
                format!("/api/record-sets/{set_two}/records"),
                None,
            ),
            (
                Method::GET,
                format!("/api/record-sets/{set_two}/export?format=csv"),
                None,
            ),
            (
                Method::GET,
                format!("/api/record-sets/{set_two}/export?format=json"),
                None,
            ),
            (
                Method::POST,
                format!("/api/record-sets/{set_two}/fanout"),
                None,
            ),
            (Method::DELETE, format!("/api/record-sets/{set_two}"), None),
            (
                Method::POST,
                format!("/api/records/{record_two}/fire"),
                Some(serde_json::json!({"pack": "web"})),
            ),
            (
                Method::GET,
                format!("/api/records/{record_two}/history"),
                None,
            ),
            (
                Method::GET,
                format!("/api/records/{record_two}/items"),
                None,
            ),
            (
                Method::GET,
                format!("/api/records/{record_two}/menu/web"),
                None,
            ),
            (
                Method::PUT,
                format!("/api/records/{record_two}/overrides/web"),
                Some(serde_json::json!({"connector": "alpha"})),
            ),
            (Method::POST, format!("/api/fires/{fire_two}/cancel"), None),
            (
                Method::POST,
                format!("/api/items/{item_two}/triage"),
                Some(serde_json::json!({"verb": "accept-canonical", "version": 1})),
            ),
            (Method::GET, format!("/api/jobs/{job_two}"), None),
            (Method::POST, format!("/api/jobs/{job_two}/cancel"), None),
            (
                Method::GET,
                format!("/api/events?record_set={set_two}"),
                None,
            ),
        ];
        for (method, path, body) in probes {
            let mut req = one.request(method.clone(), server.at(&path));
            if let Some(body) = body {
                req = req.json(&body);
            }
            let res = req.send().await.unwrap();
            let status = res.status().as_u16();
            let text = res.text().await.unwrap();
            assert_eq!(
                status, 404,
                "{kind}: {method} {path} answered {status}: {text}"
            );
            assert!(
                !text.contains("Hidden Corp"),
                "{kind}: {path} leaked {text}"
            );
            bodies.push_str(&text);
        }
        // The server functions check too.
        let fns: Vec<(String, String)> = server::router::inventory()
            .into_iter()
            .filter(|(m, p)| *m == Method::POST && p.starts_with("/api/") && !p.contains('{'))
            .filter(|(_, p)| !server::api::routes().iter().any(|(_, path)| path == p))
            .map(|(_, p)| {
                let args = if p.contains("load_triage") {
                    format!("set_id={set_two}&filter=all&search=&offset=0")
                } else if p.contains("fire_chip") {
                    format!("record_id={record_two}&pack_id=web&spend_more=true")
                } else if p.contains("load_menu") {
                    format!("record_id={record_two}&pack_id=web")
                } else if p.contains("set_start_with") {
                    format!("record_id={record_two}&pack_id=web&connector=alpha")
                } else if p.contains("triage_item") {
                    format!("item_id={item_two}&verb=discard&version=1")
                } else if p.contains("start_fanout")
                    || p.contains("fanout_estimate")
                    || p.contains("delete_record_set")
                {
                    format!("set_id={set_two}&id={set_two}")
                } else if p.contains("cancel_fanout") {
                    format!("job_id={job_two}")
                } else if p.contains("cancel_fire") {
                    format!("fire_id={fire_two}")
                } else {
                    String::new()
                };
                (p, args)
            })
            .filter(|(_, args)| !args.is_empty())
            .collect();
        assert!(fns.len() >= 9, "{fns:?}");
        for (path, args) in fns {
            let res = one
                .post(server.at(&path))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(args)
                .send()
                .await
                .unwrap();
            let status = res.status().as_u16();
            let text = res.text().await.unwrap();
            assert_eq!(
                status, 404,
                "{kind}: server fn {path} answered {status}: {text}"
            );
            assert!(
                !text.contains("Hidden Corp"),
                "{kind}: {path} leaked {text}"
            );
        }
        // Listing shows only this workspace's sets.
        let list = one
            .get(server.at("/api/record-sets"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(!list.contains("secret list"), "{list}");

        // Events: a stream on workspace one's set sees none of two's events.
        let set_one = server
            .me()
            .import("Mine", "test", "name,city\nAcme,Lyon\n")
            .await
            .id;
        let record_one = server.me().record_ids(set_one).await[0];
        let stream = one
            .get(server.at(&format!("/api/events?record_set={set_one}")))
            .send()
            .await
            .unwrap();
        two.post(server.at(&format!("/api/records/{record_two}/fire")))
            .json(&serde_json::json!({"pack": "web"}))
            .send()
            .await
            .unwrap();
        server.me().fire(record_one, "web", None).await;
        let seen = common::events_until(stream, |e| {
            e["type"] == "fire_news"
                && e["record_id"] == record_one
                && e["chip"].is_object()
                && e["chip"]["state"] != "firing"
        })
        .await;
        for event in &seen {
            let set = event.get("record_set_id").and_then(Value::as_i64);
            assert!(
                set.is_none() || set == Some(set_one),
                "{kind}: leaked {event}"
            );
            assert!(
                !event.to_string().contains("bob@example.org"),
                "{kind}: leaked {event}"
            );
        }
        assert!(seen.iter().any(|e| e["type"] == "presence"), "{seen:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_outlive_a_restart_and_revoked_tokens_stop_at_once() {
    let db = testing::sqlite();
    let url = db.url.clone();
    let server = server(db).await;
    let browser = server.browser(TEST_EMAIL, TEST_PASSWORD).await;
    let me: Value = browser
        .get(server.at("/api/me"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["email"], TEST_EMAIL);
    assert_eq!(me["workspace"]["role"], "admin");

    // Wrong passwords, then the limit: even the right one waits.
    let anonymous = no_redirects();
    for _ in 0..4 {
        let res = anonymous
            .post(server.at("/auth/sign-in"))
            .form(&[("email", TEST_EMAIL), ("password", "wrong password!")])
            .send()
            .await
            .unwrap();
        assert!(res.headers()["location"]
            .to_str()
            .unwrap()
            .contains("error=invalid"));
    }
    let res = anonymous
        .post(server.at("/auth/sign-in"))
        .form(&[("email", TEST_EMAIL), ("password", TEST_PASSWORD)])
        .send()
        .await
        .unwrap();
    assert!(
        res.headers()["location"]
            .to_str()
            .unwrap()
            .contains("error=limited"),
        "{:?}",
        res.headers()
    );

    // A failed sign-in starts no session; a good one sets an HttpOnly,
    // SameSite=Lax cookie (not Secure over plain http).
    let res = anonymous
        .post(server.at("/auth/sign-in"))
        .form(&[
            ("email", "first@example.org"),
            ("password", "not it at all"),
        ])
        .send()
        .await
        .unwrap();
    assert!(
        res.headers().get("set-cookie").is_none(),
        "a failed sign-in sets no session"
    );
    server
        .state
        .engine
        .add_user(
            "dora@example.org",
            "test",
            Role::Member,
            Some("dora's long password".into()),
        )
        .await
        .unwrap();
    let res = anonymous
        .post(server.at("/auth/sign-in"))
        .form(&[
            ("email", "dora@example.org"),
            ("password", "dora's long password"),
        ])
        .send()
        .await
        .unwrap();
    let cookie = common::session_cookie(&res);
    // The browser's mark goes only to the sign-in form, never to a script.
    let mark = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap())
        .find(|c| c.starts_with(server::auth::BROWSER_COOKIE))
        .expect("the browser's mark");
    assert!(
        mark.contains("HttpOnly")
            && mark.contains("SameSite=Strict")
            && mark.contains("Path=/auth/"),
        "{mark}"
    );
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    assert!(!cookie.contains("Secure"), "{cookie}");
    let session_id = cookie["switchyard.sid=".len()..]
        .split(';')
        .next()
        .unwrap()
        .to_owned();

    // Tokens: revoked means refused on the next request.
    let (id, token) = server
        .state
        .engine
        .create_token(TEST_EMAIL, "test")
        .await
        .unwrap();
    let with_token = |t: &str| {
        anonymous
            .get(server.at("/api/me"))
            .bearer_auth(t.to_owned())
            .send()
    };
    assert_eq!(with_token(&token).await.unwrap().status().as_u16(), 200);
    server.state.engine.store().revoke_token(id).await.unwrap();
    assert_eq!(with_token(&token).await.unwrap().status().as_u16(), 401);

    // Restart on the same database: the browser is still signed in.
    let db = server.stop_keeping_database().await;
    assert_eq!(db.url, url);
    let again = TestServer::start_on(db).await;
    let res = browser.get(again.at("/api/me")).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    // Signing out ends it.
    browser
        .post(again.at("/auth/sign-out"))
        .send()
        .await
        .unwrap();
    let res = browser.get(again.at("/api/me")).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 401);

    // Nothing secret was ever logged.
    let log = String::from_utf8_lossy(&log_lines().lock().unwrap()).into_owned();
    assert!(log.contains("Signed in"), "the log was captured");
    for secret in [
        TEST_PASSWORD,
        token.as_str(),
        "wrong password!",
        "dora's long password",
        &session_id,
    ] {
        assert!(!log.contains(secret), "a secret reached the log");
    }
}

/// Waits until an event stream ends (at most `limit`): `true` when it did.
async fn ends_within(res: reqwest::Response, limit: std::time::Duration) -> bool {
    use futures::StreamExt;
    let mut stream = res.bytes_stream();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => return false,
            Ok(None | Some(Err(_))) => return true,
            Ok(Some(Ok(_))) => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_stream_ends_when_its_token_is_revoked_or_its_member_removed() {
    streams_end_when_their_access_is_lost(testing::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_stream_ends_when_its_access_is_lost_on_postgres() {
    if let Some(db) = testing::postgres().await {
        streams_end_when_their_access_is_lost(db).await;
    }
}

async fn streams_end_when_their_access_is_lost(db: TestDatabase) {
    let server = server(db).await;
    let set = server
        .me()
        .import("Watched", "test", "name,city\nAcme,Lyon\n")
        .await
        .id;
    let path = format!("/api/events?record_set={set}");
    let limit = server::auth::STREAM_ACCESS_CHECK * 3;

    // Four streams open at once, checked in one batch: a token revoked,
    // a member taken out of the workspace, and a token and a session whose
    // access holds.
    let open = |client: &reqwest::Client, token: Option<&str>| {
        let mut req = client.get(server.at(&path));
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        req.send()
    };
    let (revoked_id, revoked) = server
        .state
        .engine
        .create_token(TEST_EMAIL, "test")
        .await
        .unwrap();
    let (_, kept) = server
        .state
        .engine
        .create_token(TEST_EMAIL, "test")
        .await
        .unwrap();
    server
        .state
        .engine
        .add_user(
            "dora@example.org",
            "test",
            Role::Member,
            Some("dora's long password".into()),
        )
        .await
        .unwrap();
    let dora = server
        .browser("dora@example.org", "dora's long password")
        .await;
    let anyone = reqwest::Client::new();
    let streams = [
        open(&anyone, Some(&revoked)).await.unwrap(),
        open(&dora, None).await.unwrap(),
        open(&anyone, Some(&kept)).await.unwrap(),
        open(&server.client, None).await.unwrap(),
    ];
    assert!(streams.iter().all(|s| s.status() == 200));
    assert!(server
        .state
        .engine
        .store()
        .revoke_token(revoked_id)
        .await
        .unwrap());
    server
        .state
        .engine
        .remove_user("dora@example.org", "test")
        .await
        .unwrap();
    let [revoked, removed, kept, session] = streams;
    let (revoked, removed, kept, session) = tokio::join!(
        ends_within(revoked, limit),
        ends_within(removed, limit),
        ends_within(kept, limit),
        ends_within(session, limit),
    );
    assert!(revoked, "the revoked token's stream goes on");
    assert!(removed, "the removed member's stream goes on");
    assert!(!kept, "a token that holds lost its stream");
    assert!(!session, "a session that holds lost its stream");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_never_sends_a_person_off_the_site() {
    let server = server(testing::sqlite()).await;
    let sign_in = |next: &'static str| {
        no_redirects()
            .post(server.at("/auth/sign-in"))
            .form(&[
                ("email", TEST_EMAIL),
                ("password", TEST_PASSWORD),
                ("next", next),
            ])
            .send()
    };
    let location = |res: reqwest::Response| res.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(
        location(sign_in("/record-sets/3?x=1").await.unwrap()),
        "/record-sets/3?x=1"
    );
    // `next=/%09/evil.example`: a browser drops the tab and goes to
    // //evil.example. Every such path goes home instead.
    for next in [
        "/\t/evil.example",
        "/\n/evil.example",
        "/\\evil.example",
        "//evil.example",
    ] {
        assert_eq!(location(sign_in(next).await.unwrap()), "/", "{next:?}");
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_commands_work_on_a_running_server_database() {
    let db = testing::sqlite();
    let url = db.url.clone();
    let server = server(db).await;
    let run = |args: &[&str], stdin: Option<&str>| {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_switchyard"))
            .args(args)
            .env("DATABASE_URL", &url)
            .env("RUST_LOG", "warn")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(text) = stdin {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
        } else {
            drop(child.stdin.take());
        }
        child.wait_with_output().unwrap()
    };
    let out = run(
        &[
            "user",
            "add",
            "--email",
            "Carol@Example.org",
            "--workspace",
            "three",
            "--role",
            "member",
        ],
        Some("carol's long password\n"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("carol@example.org") && !text.contains("carol's long password"),
        "{text}"
    );

    let out = run(
        &[
            "token",
            "create",
            "--email",
            "carol@example.org",
            "--workspace",
            "three",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let token = stdout.lines().last().unwrap().trim().to_owned();
    assert!(token.starts_with("sy_"), "{stdout}");

    let me: Value = no_redirects()
        .get(server.at("/api/me"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["workspace"]["name"], "three");
    assert_eq!(me["workspace"]["role"], "member");
    let browser = server
        .browser("carol@example.org", "carol's long password")
        .await;
    assert_eq!(
        browser
            .get(server.at("/api/me"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        200
    );

    // A forgotten password: the operator prints a link; the old password
    // works until the link is used.
    let out = run(
        &[
            "user",
            "link",
            "--email",
            "carol@example.org",
            "--public-url",
            "https://sy.example/",
        ],
        None,
    );
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    let link = printed.lines().last().unwrap().trim();
    assert!(
        link.starts_with("https://sy.example/set-password#"),
        "{printed}"
    );
    let path = link.trim_start_matches("https://sy.example");
    let (_, to) = server.use_link(path, "carol's second password").await;
    assert_eq!(to, "/");
    let res = no_redirects()
        .post(server.at("/auth/sign-in"))
        .form(&[
            ("email", "carol@example.org"),
            ("password", "carol's long password"),
        ])
        .send()
        .await
        .unwrap();
    assert!(res.headers()["location"]
        .to_str()
        .unwrap()
        .contains("error=invalid"));
    // Using the link ended Carol's sessions; she signs in anew.
    assert_eq!(
        browser
            .get(server.at("/api/me"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        401
    );
    let browser = server
        .browser("carol@example.org", "carol's second password")
        .await;

    let out = run(&["token", "list", "--email", "carol@example.org"], None);
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        listed.contains("three") && !listed.contains(&token),
        "{listed}"
    );

    let out = run(&["token", "revoke", "--stdin"], Some(&token));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let res = no_redirects()
        .get(server.at("/api/me"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 401);

    let out = run(
        &[
            "user",
            "remove",
            "--email",
            "carol@example.org",
            "--workspace",
            "three",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        browser
            .get(server.at("/api/me"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        401
    );

    // Bad input names what is wrong and changes nothing.
    let out = run(
        &[
            "user",
            "add",
            "--email",
            "nope",
            "--workspace",
            "three",
            "--role",
            "admin",
        ],
        Some("long enough password\n"),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("email"));
    let out = run(
        &[
            "user",
            "add",
            "--email",
            "d@example.org",
            "--workspace",
            "three",
            "--role",
            "admin",
        ],
        Some("short\n"),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("password"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_manage_members_and_a_removed_member_is_out_at_once() {
    on_every_backend(|db| async {
        let server = server(db).await;
        let (code, added) = server
            .post_json(
                "/api/members",
                serde_json::json!({"email": "New@Example.org", "role": "member"}),
            )
            .await;
        assert_eq!(code, 201, "{added}");
        // No password is made up and shown: a link lets the person choose one.
        assert!(added.get("password").is_none(), "{added}");
        let link = added["set_password_link"].as_str().unwrap().to_owned();
        assert!(link.starts_with("/set-password#"), "{link}");
        let new_id = added["user_id"].as_i64().unwrap();
        let (browser, to) = server.use_link(&link, "new's own long password").await;
        assert_eq!(to, "/");
        // Once only.
        let (_, to) = server.use_link(&link, "someone else's password").await;
        assert_eq!(to, "/set-password?error=link#");
        assert_eq!(
            server
                .browser("new@example.org", "new's own long password")
                .await
                .get(server.at("/api/me"))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16(),
            200
        );
        let me: Value = browser
            .get(server.at("/api/me"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(me["workspace"]["name"], common::TEST_WORKSPACE);
        assert_eq!(me["workspace"]["role"], "member");
        let (_, token) = server
            .state
            .engine
            .create_token("new@example.org", common::TEST_WORKSPACE)
            .await
            .unwrap();

        // Adding someone who has an account gives no credential at all.
        let (code, again) = server
            .post_json(
                "/api/members",
                serde_json::json!({"email": "new@example.org", "role": "member"}),
            )
            .await;
        assert_eq!(code, 201);
        assert_eq!(again, serde_json::json!({"user_id": new_id}));

        // The last admin cannot step down or be removed.
        let tester = server
            .state
            .engine
            .store()
            .user_by_email(TEST_EMAIL)
            .await
            .unwrap()
            .unwrap()
            .id;
        let res = server
            .client
            .put(server.at(&format!("/api/members/{tester}")))
            .json(&serde_json::json!({"role": "member"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 400);
        assert!(res.text().await.unwrap().contains("last admin"));
        let res = server
            .client
            .put(server.at(&format!("/api/members/{new_id}")))
            .json(&serde_json::json!({"role": "admin"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 204);
        let me: Value = browser
            .get(server.at("/api/me"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(me["workspace"]["role"], "admin");

        // Removed: the session and the token stop on the next request.
        let res = server
            .client
            .delete(server.at(&format!("/api/members/{new_id}")))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 204);
        assert_eq!(
            browser
                .get(server.at("/api/me"))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16(),
            401
        );
        let res = no_redirects()
            .get(server.at("/api/me"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 401);
        // Another workspace's member is not this admin's to touch.
        server.user("zed@example.org", "two", Role::Admin).await;
        let zed = server
            .state
            .engine
            .store()
            .user_by_email("zed@example.org")
            .await
            .unwrap()
            .unwrap()
            .id;
        let res = server
            .client
            .delete(server.at(&format!("/api/members/{zed}")))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 404);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connector_switched_off_in_one_workspace_still_serves_the_others() {
    for db in testing::all().await {
        let kind = db.kind();
        let server = server(db).await;
        let (code, body) = server
            .post_json(
                "/api/connectors/alpha/disable",
                serde_json::json!({"reason": "too noisy for us"}),
            )
            .await;
        assert_eq!(code, 200, "{kind}: {body}");
        assert_eq!(body["status"], "disabled");

        let two = server.user("bob@example.org", "two", Role::Admin).await;
        let res = two
            .post(server.at("/api/record-sets"))
            .query(&[("name", "Two"), ("bundle", "test")])
            .body("name,city\nAcme,Lyon\n")
            .send()
            .await
            .unwrap();
        let set_two = res.json::<Value>().await.unwrap()["id"].as_i64().unwrap();
        let page: Value = two
            .get(server.at(&format!("/api/record-sets/{set_two}/records")))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let record_two = page["records"][0]["id"].as_i64().unwrap();
        let fired: Value = two
            .post(server.at(&format!("/api/records/{record_two}/fire")))
            .json(&serde_json::json!({"pack": "web"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            fired["results"][0]["attempts"][0]["connector_id"], "alpha",
            "{kind}: {fired}"
        );
        let listed: Value = two
            .get(server.at("/api/connectors"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let alpha = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "alpha")
            .unwrap();
        assert_eq!(alpha["status"], "available", "{kind}: {alpha}");
        // Workspace two's audit shows nothing of workspace test's choice.
        let audit = two
            .get(server.at("/api/connectors/alpha/audit"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            !audit.contains(TEST_EMAIL) && !audit.contains("too noisy"),
            "{kind}: {audit}"
        );

        // In the workspace that switched it off, the chain skips it and says why.
        let me = server.me();
        let set = me.import("Mine", "test", "name,city\nAcme,Lyon\n").await;
        let record = me.record_ids(set.id).await[0];
        let (status, body) = server
            .post_json(
                &format!("/api/records/{record}/fire"),
                serde_json::json!({"pack": "web"}),
            )
            .await;
        assert_eq!(status, 200, "{kind}: {body}");
        let result = &body["results"][0];
        assert!(
            result["attempts"].as_array().unwrap().is_empty(),
            "{kind}: {result}"
        );
        assert!(
            result.to_string().contains("too noisy for us"),
            "{kind}: {result}"
        );
        let (_, audit) = server.get_json("/api/connectors/alpha/audit").await;
        assert_eq!(audit[0]["actor"], TEST_EMAIL, "{kind}: {audit}");

        let (code, body) = server
            .post_json("/api/connectors/alpha/enable", serde_json::json!({}))
            .await;
        assert_eq!(code, 200);
        assert_eq!(body["status"], "available", "{kind}: {body}");
        let again = server.me().fire(record, "web", None).await;
        assert_eq!(again.attempts[0].connector_id, "alpha", "{kind}: {again:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_changes_their_own_password_and_their_other_sessions_end() {
    on_every_backend(|db| async {
        let server = server(db).await;
        let phone = server.browser(TEST_EMAIL, TEST_PASSWORD).await;
        let laptop = server.browser(TEST_EMAIL, TEST_PASSWORD).await;
        let change = |current: &'static str, new: &'static str, again: &'static str| {
            laptop
                .post(server.at("/auth/password"))
                .form(&[("current", current), ("password", new), ("again", again)])
                .send()
        };
        let outcome =
            |res: reqwest::Response| res.headers()["location"].to_str().unwrap().to_owned();
        let status = |client: &reqwest::Client| {
            let request = client.get(server.at("/api/me")).send();
            async move { request.await.unwrap().status().as_u16() }
        };
        for (current, new, again, said) in [
            (
                "not my password",
                "a new long password",
                "a new long password",
                "wrong",
            ),
            (
                TEST_PASSWORD,
                "a new long password",
                "a new long passwort",
                "mismatch",
            ),
            (TEST_PASSWORD, "short", "short", "short"),
        ] {
            let to = outcome(change(current, new, again).await.unwrap());
            assert_eq!(to, format!("/settings?password={said}"));
            assert_eq!(status(&phone).await, 200, "nothing changed after {said}");
        }
        let to = outcome(
            change(TEST_PASSWORD, "a new long password", "a new long password")
                .await
                .unwrap(),
        );
        assert_eq!(to, "/settings?password=changed");
        // This browser goes on; the other is signed out; only the new password works.
        assert_eq!(status(&laptop).await, 200);
        assert_eq!(status(&phone).await, 401);
        let res = no_redirects()
            .post(server.at("/auth/sign-in"))
            .form(&[("email", TEST_EMAIL), ("password", TEST_PASSWORD)])
            .send()
            .await
            .unwrap();
        assert!(res.headers()["location"]
            .to_str()
            .unwrap()
            .contains("error=invalid"));
        server.browser(TEST_EMAIL, "a new long password").await;
        // Nobody signed in cannot change a password.
        let res = no_redirects()
            .post(server.at("/auth/password"))
            .form(&[
                ("current", "x"),
                ("password", "a third long password"),
                ("again", "a third long password"),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 303);
        assert!(res.headers()["location"]
            .to_str()
            .unwrap()
            .starts_with("/sign-in"));
        server.stop().await;
    })
    .await;
}
