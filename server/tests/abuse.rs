//! What a member or a stranger could do to exhaust or trick the server,
//! through the real server: oversized bodies on every door, and password
//! guessing that must slow the guesser without locking the owner out.

mod common;

use common::{TestServer, TEST_EMAIL, TEST_PASSWORD};
use server_fn::ServerFn;

/// A server function the pages call, with the default body limit.
fn a_server_function() -> String {
    server_fn::axum::server_fn_paths()
        .map(|(path, _)| path.to_owned())
        .find(|p| p.contains("load_menu"))
        .expect("the menu's server function")
}

#[tokio::test]
async fn every_body_is_bounded_and_the_import_names_its_limit() {
    let server = TestServer::start().await;
    let browser = server.browser(TEST_EMAIL, TEST_PASSWORD).await;
    let limit = server::body_limit::DEFAULT_BODY_BYTES;

    // Declared too long: refused before a byte is read, naming the limit.
    let res = browser
        .post(server.at(&a_server_function()))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(vec![b'a'; limit + 1])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 413);
    let text = res.text().await.unwrap();
    assert!(
        text.contains(&format!("the limit here is {limit} bytes")),
        "{text}"
    );

    // Undeclared (chunked): reading stops at the limit.
    let chunks = (0..(limit / 65_536 + 2)).map(|_| Ok::<_, std::io::Error>(vec![b'a'; 65_536]));
    let res = browser
        .post(server.at(&a_server_function()))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
        .send()
        .await
        .unwrap();
    assert!(
        !res.status().is_success(),
        "a chunked body over the limit was read: {}",
        res.status()
    );

    // The REST door's JSON routes have the same limit.
    let res = server
        .client
        .post(server.at("/api/manifests"))
        .header("content-type", "application/json")
        .body(vec![b' '; limit + 1])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 413);

    // The page's import takes a form-encoded file larger than the default,
    // and the importer names its own limit for the decoded file.
    let max = engine::import::MAX_IMPORT_BYTES;
    let csv = format!("name\n{}", "x\n".repeat(max / 2 + 10));
    let form = format!(
        "name=Big&bundle=social-profiles&csv={}",
        csv.replace('\n', "%0A")
    );
    let res = browser
        .post(server.at(<app::pages::ImportCsv as ServerFn>::PATH))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .unwrap();
    let text = res.text().await.unwrap();
    assert!(
        text.contains(&format!("the limit is {max} bytes")),
        "{}",
        &text[..text.len().min(300)]
    );

    // And the server still answers.
    let (code, _) = server.get_json("/api/record-sets").await;
    assert_eq!(code, 200);
    server.stop().await;
}

/// A sign-in from `address` (through the trusted local proxy), answered
/// with where it sends the browser.
async fn sign_in_from(
    server: &TestServer,
    client: &reqwest::Client,
    address: &str,
    email: &str,
    password: &str,
) -> String {
    let res = client
        .post(server.at("/auth/sign-in"))
        .header("x-forwarded-for", address)
        .form(&[("email", email), ("password", password), ("next", "/")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 303);
    res.headers()["location"].to_str().unwrap().to_owned()
}

fn browser_client() -> reqwest::Client {
    common::page_client().cookie_store(true).build().unwrap()
}

#[tokio::test]
async fn guessing_slows_the_guesser_and_never_locks_the_owner_out() {
    let server = TestServer::start_configured(
        engine::store::testing::sqlite(),
        |config| {
            config.trusted_proxies = server::auth::TrustedProxies::parse("127.0.0.1").unwrap();
        },
        |_| {},
    )
    .await;
    // The owner signs in once from their browser, which keeps its mark.
    let owner = browser_client();
    assert_eq!(
        sign_in_from(&server, &owner, "198.51.100.7", TEST_EMAIL, TEST_PASSWORD).await,
        "/"
    );

    // A guesser at one address: three free failures, then waits that grow.
    let guesser = browser_client();
    for _ in 0..4 {
        let to = sign_in_from(&server, &guesser, "203.0.113.1", TEST_EMAIL, "guess guess").await;
        assert!(to.contains("error=invalid"), "{to}");
    }
    let to = sign_in_from(&server, &guesser, "203.0.113.1", TEST_EMAIL, TEST_PASSWORD).await;
    assert!(to.contains("error=limited&wait=1"), "{to}");

    // Guessers spread over many addresses use up the account's rate for
    // strangers (10 a minute)...
    let mut limited = 0;
    for i in 2..14 {
        let to = sign_in_from(
            &server,
            &browser_client(),
            &format!("203.0.113.{i}"),
            TEST_EMAIL,
            "guess guess",
        )
        .await;
        limited += usize::from(to.contains("error=limited"));
    }
    assert!(limited >= 1, "the strangers' rate never held");
    // ...so a stranger with the right password waits too...
    let to = sign_in_from(
        &server,
        &browser_client(),
        "192.0.2.1",
        TEST_EMAIL,
        TEST_PASSWORD,
    )
    .await;
    assert!(to.contains("error=limited"), "{to}");
    // ...but the owner's browser, from a new address, goes straight in.
    assert_eq!(
        sign_in_from(&server, &owner, "192.0.2.99", TEST_EMAIL, TEST_PASSWORD).await,
        "/"
    );
    // A made-up mark is no mark.
    let forger = common::page_client().build().unwrap();
    let res = forger
        .post(server.at("/auth/sign-in"))
        .header("x-forwarded-for", "192.0.2.50")
        .header(
            "cookie",
            format!("{}={}", server::auth::BROWSER_COOKIE, "ab".repeat(32)),
        )
        .form(&[("email", TEST_EMAIL), ("password", TEST_PASSWORD)])
        .send()
        .await
        .unwrap();
    let to = res.headers()["location"].to_str().unwrap();
    assert!(to.contains("error=limited"), "{to}");
    server.stop().await;
}

#[tokio::test]
async fn another_site_cannot_act_or_sign_in_as_a_person() {
    let server = TestServer::start().await;
    let session = session_of(&server).await;
    let set = server
        .me()
        .import("Kept", "social-profiles", "name\nAcme\n")
        .await
        .id;
    let delete = server_fn::axum::server_fn_paths()
        .map(|(path, _)| path.to_owned())
        .find(|p| p.contains("delete_record_set"))
        .expect("the delete server function");

    // A form on another site posts with the person's cookie: refused, and
    // nothing happens. Browsers that send no Sec-Fetch-Site send Origin.
    for (name, value) in [
        ("sec-fetch-site", "cross-site"),
        ("sec-fetch-site", "same-site"),
        ("origin", "https://evil.example"),
    ] {
        let res = reqwest::Client::builder()
            .build()
            .unwrap()
            .post(server.at(&delete))
            .header("cookie", &session)
            .header(name, value)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("id={set}"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 403, "{name}: {value}");
        let body = res.text().await.unwrap();
        assert!(body.contains("cross-site request refused"), "{body}");
    }
    let (code, _) = server
        .get_json(&format!("/api/record-sets/{set}/records"))
        .await;
    assert_eq!(code, 200, "the set survived");

    // Login CSRF: another site cannot sign a browser in as someone else.
    let res = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .post(server.at("/auth/sign-in"))
        .header("origin", "https://evil.example")
        .form(&[("email", TEST_EMAIL), ("password", TEST_PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 403);
    assert!(res.headers().get("set-cookie").is_none());

    // A JSON or TOML route takes no text/plain body (what a form can send).
    let res = server
        .client
        .post(server.at("/api/manifests"))
        .header("content-type", "text/plain")
        .body("id = \"x\"")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 415);
    let err: serde_json::Value = res.json().await.unwrap();
    assert_eq!(
        err["detail"],
        "Content-Type: send application/toml or application/json (got text/plain)"
    );
    let res = server
        .client
        .post(server.at(&format!("/api/record-sets/{set}/fanout")))
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 415);

    // The site's own page does the same and it happens.
    let res = common::page_client()
        .build()
        .unwrap()
        .post(server.at(&delete))
        .header("cookie", &session)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("id={set}"))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    let (code, _) = server
        .get_json(&format!("/api/record-sets/{set}/records"))
        .await;
    assert_eq!(code, 404);
    server.stop().await;
}

/// The `Cookie` header of a session signed in through the site's form.
async fn session_of(server: &TestServer) -> String {
    let res = common::page_client()
        .build()
        .unwrap()
        .post(server.at("/auth/sign-in"))
        .form(&[("email", TEST_EMAIL), ("password", TEST_PASSWORD)])
        .send()
        .await
        .unwrap();
    common::session_cookie(&res)
        .split(';')
        .next()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_token_past_its_rate_is_refused_and_no_one_else_is() {
    let server = TestServer::start().await;
    let colleague = server
        .user(
            "cole@example.org",
            common::TEST_WORKSPACE,
            model::Role::Member,
        )
        .await;
    let rate = server::auth::DEFAULT_TOKEN_REQUESTS_PER_SECOND as usize;
    // Twice the rate is the burst: a few seconds' worth is far past it.
    let mut refused = None;
    for n in 0..rate * 4 {
        let res = server
            .client
            .get(server.at("/api/record-sets"))
            .send()
            .await
            .unwrap();
        if res.status().as_u16() == 429 {
            refused = Some((n, res));
            break;
        }
        assert_eq!(res.status().as_u16(), 200, "request {n}");
    }
    let (n, res) = refused.expect("a token past its rate is refused");
    assert!(n >= rate * 2, "the burst is allowed ({n})");
    assert!(res.headers().contains_key("retry-after"));
    let body: serde_json::Value = res.json().await.unwrap();
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("requests: this token sent more than"),
        "{detail}"
    );
    // Not a sign that the token is wrong, and no one else is held back.
    let res = colleague
        .get(server.at("/api/record-sets"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    server.stop().await;
}
