//! The site crawler against a local site: allowed by the allow-list it reads
//! the page and its social links over one pooled connection; redirects are
//! followed and checked again.

use std::time::Duration;

use axum::response::{Html, Redirect};
use axum::routing::get;
use engine::connectors::builtin::site::{AllowList, Outbound, SiteCrawler};
use engine::connectors::seam::{Connector, FireError, FireOpts};
use model::BuiltinCapability as B;

/// The client addresses (one per connection) the site was reached from.
type Peers = std::sync::Arc<std::sync::Mutex<std::collections::HashSet<std::net::SocketAddr>>>;

async fn site() -> String {
    site_seeing(Peers::default()).await
}

async fn site_seeing(peers: Peers) -> String {
    let app = axum::Router::new()
        .route(
            "/",
            get(|| async {
                Html(
                    r#"<html><head><title>Acme Rockets</title><meta name="description" content="We build rockets"></head>
                    <body><a href="https://www.linkedin.com/company/acme-rockets/">LinkedIn</a>
                    <a href="https://twitter.com/acmerockets">X</a><a href="/contact">Contact</a></body></html>"#,
                )
            }),
        )
        .route("/moved", get(|| async { Redirect::permanent("/") }))
        .route("/inside", get(|| async { Redirect::temporary("http://10.0.0.1/admin") }))
        .route(
            "/limited",
            get(|| async {
                (
                    axum::http::StatusCode::TOO_MANY_REQUESTS,
                    [("retry-after", "Fri, 31 Dec 9999 23:59:59 GMT")],
                    "slow down",
                )
            }),
        )
        .route("/slow", get(|| async {
            tokio::time::sleep(Duration::from_secs(3)).await;
            Html("late")
        }));
    let app = app.layer(axum::middleware::from_fn(
        move |axum::extract::ConnectInfo(peer): axum::extract::ConnectInfo<
            std::net::SocketAddr,
        >,
              req: axum::extract::Request,
              next: axum::middleware::Next| {
            peers.lock().unwrap().insert(peer);
            next.run(req)
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
        )
        .await
        .unwrap()
    });
    url
}

fn crawler(allow: &str) -> SiteCrawler {
    SiteCrawler {
        outbound: Outbound::new(AllowList::parse(allow)),
        timeout: Some(Duration::from_millis(500)),
    }
}

#[tokio::test]
async fn reads_the_page_and_its_profiles_when_allowed() {
    let peers = Peers::default();
    let base = site_seeing(peers.clone()).await;
    let crawler = crawler("127.0.0.1");
    let page = crawler
        .fire(
            &B::CrawlSite.into(),
            &format!("{base}/moved"),
            &FireOpts::default(),
        )
        .await
        .unwrap()
        .results;
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].url, format!("{base}/"));
    assert_eq!(page[0].title, "Acme Rockets");
    assert_eq!(page[0].snippet, "We build rockets");
    assert_eq!(page[0].raw["social_links"].as_array().unwrap().len(), 2);
    // The redirect and the page came over one pooled connection.
    assert_eq!(peers.lock().unwrap().len(), 1);

    // A social intent reads the website from the record and keeps that platform.
    let mut opts = FireOpts {
        max_results: 5,
        ..FireOpts::default()
    };
    opts.record_fields.insert("website".into(), base.clone());
    let linkedin = crawler
        .fire(&B::SocialLinkedin.into(), "Acme Rockets", &opts)
        .await
        .unwrap()
        .results;
    assert_eq!(linkedin.len(), 1);
    assert_eq!(
        linkedin[0].url,
        "https://www.linkedin.com/company/acme-rockets/"
    );
}

#[tokio::test]
async fn refuses_what_is_not_allowed_and_redirects_inward() {
    let base = site().await;
    let err = crawler("")
        .fire(&B::CrawlSite.into(), &base, &FireOpts::default())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("127.0.0.1 is a loopback address"),
        "{err}"
    );
    // Allowed to reach this host, but not where it redirects.
    let err = crawler("127.0.0.1")
        .fire(
            &B::CrawlSite.into(),
            &format!("{base}/inside"),
            &FireOpts::default(),
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("10.0.0.1 is a private address"),
        "{err}"
    );
    let err = crawler("127.0.0.1")
        .fire(
            &B::CrawlSite.into(),
            &format!("{base}/slow"),
            &FireOpts::default(),
        )
        .await
        .unwrap_err();
    // A site's silence is the request's own, never the crawler's.
    assert!(
        matches!(&err, FireError::Request { reason } if reason.contains("no answer within")),
        "{err}"
    );
    let err = crawler("127.0.0.1")
        .fire(
            &B::CrawlSite.into(),
            "no website here",
            &FireOpts::default(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no website"), "{err}");
}

#[tokio::test]
async fn what_a_site_answers_is_the_requests_own_never_the_crawlers() {
    let base = site().await;
    // A site asking the crawler to wait until the year 9999: that fire
    // fails, and nothing in the error could rate-limit the crawler.
    let err = crawler("127.0.0.1")
        .fire(
            &B::CrawlSite.into(),
            &format!("{base}/limited"),
            &FireOpts::default(),
        )
        .await
        .unwrap_err();
    assert!(err.is_the_requests_own(), "{err:?}");
    assert!(err.to_string().contains("HTTP 429"), "{err}");
}

#[tokio::test]
async fn through_an_engine_a_sites_refusals_and_silence_leave_the_crawler_available() {
    use engine::execution::dispatch::FireRequest;
    use engine::import::{parse_csv, ImportLimits};
    use model::FireOutcome;

    let base = site().await;
    let db = engine::store::testing::sqlite();
    let store = engine::store::Store::connect(&db.url).await.unwrap();
    let catalog = engine::packs::Catalog::from_toml(
        r#"
[[pack]]
pack_id = "site"
display_name = "Site"
short_label = "s"
intent = "crawl.site"
query_template = "{website}"
preferred_connectors = ["site-crawler"]

[[bundle]]
bundle_id = "b"
display_name = "B"
members = [{ pack = "site" }]
"#,
    )
    .unwrap();
    let engine = engine::Engine::new(store, catalog, None, engine::EngineConfig::default());
    engine
        .registry()
        .register(
            engine::connectors::builtin::site::registration(),
            std::sync::Arc::new(crawler("127.0.0.1")),
        )
        .unwrap();
    let (workspace, _) = engine.store().ensure_workspace("w").await.unwrap();
    let csv = format!("name,website\nLimited,{base}/limited\nSilent,{base}/slow\n");
    let parsed = parse_csv(csv.as_bytes(), ImportLimits::default()).unwrap();
    let set = engine
        .store()
        .create_record_set(workspace, "S", "b", false, &parsed.records)
        .await
        .unwrap();
    let records = engine.store().records(set, 0, 2).await.unwrap();
    // More failures in a row than suspend a provider's connector.
    for _ in 0..4 {
        for record in &records {
            let report = engine
                .dispatcher()
                .fire(FireRequest::by_person(record.id, "site", None, "ana"))
                .await
                .unwrap();
            let last = report.attempts.last().expect("an attempt");
            assert_eq!(last.end.outcome, Some(FireOutcome::Error), "{report:?}");
        }
    }
    let crawler = engine.registry().by_id("site-crawler").unwrap();
    assert!(crawler.status.is_available(), "{:?}", crawler.status);
}
