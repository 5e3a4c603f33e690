//! How answers travel, through the real server: the site's files go out as
//! the precompressed copy the browser accepts (brotli, else gzip, else as
//! they are), pages and data are compressed as they are sent, an event
//! stream never is, and only the site's files may be kept by a cache: for
//! good when their name carries their content hash.

mod common;

use common::TestServer;

/// A client that shows answers exactly as sent: no decompression.
fn raw() -> reqwest::Client {
    reqwest::Client::builder()
        .no_gzip()
        .no_brotli()
        .build()
        .unwrap()
}

fn header(res: &reqwest::Response, name: &str) -> String {
    res.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

#[tokio::test]
async fn files_go_precompressed_pages_compressed_and_streams_as_they_are() {
    let site = std::env::temp_dir().join(format!("switchyard-delivery-{}", std::process::id()));
    let pkg = site.join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    // As scripts/build-site.sh leaves them: a folder named for the content,
    // and the name file.
    let folder = "switchyard-0123456789abcdef";
    let name = format!("{folder}/switchyard");
    std::fs::create_dir_all(pkg.join(folder)).unwrap();
    std::fs::write(pkg.join("name.txt"), format!("{folder}\n")).unwrap();
    std::fs::write(
        pkg.join(format!("{name}.js")),
        "export function start() {}\n".repeat(50),
    )
    .unwrap();
    std::fs::write(pkg.join(format!("{name}.js.br")), "the brotli copy").unwrap();
    std::fs::write(pkg.join(format!("{name}.js.gz")), "the gzip copy").unwrap();
    std::fs::write(pkg.join(format!("{name}_bg.wasm")), b"\0asm the module").unwrap();
    std::fs::write(pkg.join(format!("{name}_bg.wasm.gz")), "the gzipped module").unwrap();
    std::fs::write(pkg.join(format!("{name}.css")), "body {}").unwrap();
    let root = site.to_str().unwrap().to_owned();
    let server = TestServer::start_configured(
        engine::store::testing::sqlite(),
        |config| config.site_root = root,
        |_| {},
    )
    .await;
    let get = |path: &str, accept: &str| {
        raw()
            .get(server.at(path))
            .header("accept-encoding", accept)
            .send()
    };

    for (accept, encoding, body) in [
        ("br, gzip", "br", "the brotli copy"),
        ("gzip, deflate", "gzip", "the gzip copy"),
        ("identity", "", "export function start() {}\n"),
    ] {
        let res = get(&format!("/pkg/{name}.js"), accept).await.unwrap();
        assert_eq!(res.status().as_u16(), 200, "{accept}");
        assert_eq!(header(&res, "content-encoding"), encoding, "{accept}");
        assert!(header(&res, "vary")
            .to_lowercase()
            .contains("accept-encoding"));
        assert_eq!(
            header(&res, "cache-control"),
            "public, max-age=31536000, immutable"
        );
        assert!(res.text().await.unwrap().starts_with(body), "{accept}");
    }
    // The module has only a gzip copy; it is never compressed on the fly.
    let res = get(&format!("/pkg/{name}_bg.wasm"), "br, gzip")
        .await
        .unwrap();
    assert_eq!(header(&res, "content-encoding"), "gzip");
    assert_eq!(header(&res, "content-type"), "application/wasm");
    assert_eq!(
        header(&res, "cache-control"),
        "public, max-age=31536000, immutable"
    );
    assert_eq!(res.text().await.unwrap(), "the gzipped module");
    let res = get(&format!("/pkg/{name}_bg.wasm"), "identity")
        .await
        .unwrap();
    assert_eq!(res.bytes().await.unwrap().as_ref(), b"\0asm the module");
    // A file outside a build's folder is checked again each time; a file of
    // a build that is not there (an old one's) is not kept at all.
    let res = get("/pkg/name.txt", "identity").await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(header(&res, "cache-control"), "no-cache");
    let res = get("/pkg/switchyard-fedcba9876543210/switchyard.js", "identity")
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 404);
    assert_eq!(header(&res, "cache-control"), "no-cache");

    // The page links the build's names, and is never stored.
    let res = get("/sign-in", "identity").await.unwrap();
    assert_eq!(header(&res, "cache-control"), "no-store");
    let html = res.text().await.unwrap();
    for linked in [
        format!("/pkg/{name}.css"),
        format!("{name}.js"),
        format!("{name}_bg.wasm"),
    ] {
        assert!(html.contains(&linked), "{linked} in {html}");
    }

    // A page is compressed as it is sent, and never stored.
    let res = get("/sign-in", "br").await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(header(&res, "content-encoding"), "br");
    assert_eq!(header(&res, "cache-control"), "no-store");

    // Data too, and never stored either.
    let (_, token) = server
        .state
        .engine
        .create_token(common::TEST_EMAIL, common::TEST_WORKSPACE)
        .await
        .unwrap();
    let res = raw()
        .get(server.at("/api/capabilities"))
        .bearer_auth(&token)
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(header(&res, "content-encoding"), "gzip");
    assert_eq!(header(&res, "cache-control"), "no-store");
    assert_eq!(
        &res.bytes().await.unwrap()[..2],
        &[0x1f, 0x8b],
        "a gzip stream"
    );
    let set = server
        .me()
        .import("Streamed", "social-profiles", "name\nAcme\n")
        .await
        .id;

    // An event stream is sent as it is: each event must reach the page at once.
    let res = raw()
        .get(server.at(&format!("/api/events?record_set={set}")))
        .bearer_auth(&token)
        .header("accept-encoding", "br, gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(header(&res, "content-encoding"), "");
    assert_eq!(header(&res, "content-type"), "text/event-stream");
    drop(res);
    server.stop().await;
    let _ = std::fs::remove_dir_all(&site);
}
