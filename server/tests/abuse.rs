//! What a member or a stranger could do to exhaust or trick the server,
//! through the real server: oversized bodies on every door.

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
