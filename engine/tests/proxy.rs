//! A proxy named in the environment does not carry the requests of the
//! outbound client: through a proxy the internal-address guard would not
//! hold, since the proxy resolves the name again. (Its own test binary: it
//! sets process-wide variables.)

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::provider::{Behaviour, FakeProvider};
use engine::connectors::guard::{AllowList, Outbound};
use engine::connectors::manifest::{Format, Manifest, ManifestConnector};
use engine::connectors::seam::{Connector, FireOpts};
use model::BuiltinCapability as B;

/// A "proxy" that counts the connections it is offered and answers 502.
async fn proxy() -> (String, Arc<AtomicUsize>) {
    let seen = Arc::new(AtomicUsize::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let counted = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            use tokio::io::AsyncWriteExt;
            let _ = socket
                .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    });
    (url, seen)
}

#[tokio::test]
async fn the_outbound_client_ignores_proxies_in_the_environment() {
    let provider = FakeProvider::start(Behaviour::unlimited(Duration::ZERO)).await;
    let (proxy_url, offered) = proxy().await;
    for var in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        std::env::set_var(var, &proxy_url);
    }
    std::env::remove_var("NO_PROXY");
    std::env::remove_var("no_proxy");
    let manifest =
        Manifest::parse(&provider.manifest("direct", "/search", None), Format::Toml).unwrap();
    let connector = ManifestConnector::new(
        Arc::new(manifest),
        Outbound::new(AllowList::parse("127.0.0.1")),
        Arc::new(|_: &str| None),
    );
    let results = connector
        .fire(&B::SearchWeb.into(), "acme", &FireOpts::default())
        .await
        .expect("the provider answers directly");
    assert_eq!(results.results.len(), 1);
    assert_eq!(
        offered.load(Ordering::SeqCst),
        0,
        "nothing went to the proxy"
    );
    assert_eq!(provider.counters.served(), 1);
}
