//! SearXNG: the JSON API of a self-hosted instance (`GET {SEARXNG_URL}/search?q=..&format=json`).
//! Categories follow the intent (general, news, science); social intents use
//! `site:` filters and keep only the platform's pages. The operator's
//! instance (the server's `SEARXNG_URL`) may be internal; one a workspace set
//! as its secret goes through the outbound guard like any address a user
//! chose, pinned, with no proxy and no redirect.
//! Code, not a manifest: its address is a setting (the operator's or a
//! workspace's own instance, guarded differently), and social intents
//! filter the answer by platform.

use async_trait::async_trait;
use model::{BuiltinCapability as B, Capability, ConnectorProfile, CostTier, RateHints};
use serde::Deserialize;

use super::social;
use super::Endpoint;
use crate::connectors::env;
use crate::connectors::registry::Registration;
use crate::connectors::seam::{Connector, ConnectorResult, FireError, FireOpts, Found};

pub const ID: &str = "searxng";
pub const URL_VAR: &str = "SEARXNG_URL";
/// How long a request to a workspace's own instance may take (the shared
/// client's limit).
const WORKSPACE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

pub fn registration() -> Registration {
    let mut capabilities: Vec<Capability> = vec![
        B::SearchWeb.into(),
        B::SearchNews.into(),
        B::SearchScholar.into(),
    ];
    capabilities.extend(social::social_capabilities());
    Registration {
        profile: ConnectorProfile {
            id: ID.to_owned(),
            display_name: "SearXNG (self-hosted)".to_owned(),
            short_label: "SearXNG".to_owned(),
            capabilities,
            cost_tier: CostTier::Free,
            requires_env: vec![URL_VAR.to_owned()],
            rate_hints: RateHints {
                per_second: Some(2.0),
                daily_cap: None,
            },
            cost: None,
        },
        suspends_on_errors: true,
    }
}

#[derive(Debug)]
pub struct Searxng(pub Endpoint);

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    results: Vec<Hit>,
}

#[derive(Deserialize)]
struct Hit {
    #[serde(default)]
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: String,
    #[serde(default)]
    engine: String,
    #[serde(default, rename = "publishedDate")]
    published_date: Option<String>,
}

#[async_trait]
impl Connector for Searxng {
    async fn fire(
        &self,
        intent: &Capability,
        query: &str,
        opts: &FireOpts,
    ) -> Result<Found, FireError> {
        // The instance is the provider: its URL is read like a key.
        let base = match &self.0.base {
            Some(b) => b.clone(),
            None => env::required(URL_VAR, opts)?,
        };
        let (q, platform) = social::prepare(intent, query);
        let category = match intent.name() {
            "search.news" => "news",
            "search.scholar" => "science",
            _ => "general",
        };
        let url = format!("{}/search", base.trim_end_matches('/'));
        // A workspace's own address goes through the outbound guard; the
        // operator's is theirs to choose.
        let request = if opts.secrets.get(URL_VAR).is_some() {
            let parsed = url::Url::parse(&url).map_err(|e| FireError::Malformed {
                reason: format!("SearXNG: {URL_VAR} is not a valid address: {e}"),
            })?;
            self.0.http.outbound().request(
                "SearXNG",
                reqwest::Method::GET,
                &parsed,
                WORKSPACE_TIMEOUT,
            )?
        } else {
            self.0.http.client().get(url)
        };
        let request = request.query(&[
            ("q", q.as_str()),
            ("format", "json"),
            ("categories", category),
        ]);
        // The address is a setting like a key: its host and path stay out
        // of receipts and messages, which members and logs see.
        let hidden = hidden_parts(&base);
        let hidden: Vec<&str> = hidden.iter().map(String::as_str).collect();
        let answer: Answer = self.0.http.json("SearXNG", request, &hidden).await?;
        let results = answer
            .results
            .into_iter()
            .map(|h| ConnectorResult {
                url: h.url,
                title: h.title,
                snippet: h.content,
                raw: serde_json::json!({ "engine": h.engine, "published": h.published_date }),
            })
            .collect();
        Ok(social::keep(platform, results)
            .into_iter()
            .take(opts.max_results.max(1))
            .collect())
    }
}

/// What of an instance's address is scrubbed wherever a request is told:
/// the address, its host (with the port) and its path, when it has one.
fn hidden_parts(base: &str) -> Vec<String> {
    let mut parts = vec![base.trim_end_matches('/').to_owned()];
    if let Ok(url) = url::Url::parse(base) {
        if let Some(host) = url.host_str() {
            parts.push(match url.port() {
                Some(port) => format!("{host}:{port}"),
                None => host.to_owned(),
            });
        }
        let path = url.path().trim_end_matches('/');
        if !path.is_empty() {
            parts.push(path.to_owned());
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::connectors::http::Http;
    use crate::connectors::seam::Secrets;

    /// An instance on 127.0.0.1 that answers every search with one hit.
    async fn instance() -> String {
        let app = axum::Router::new().route(
            "/search",
            axum::routing::get(|| async {
                axum::Json(serde_json::json!({"results": [
                    {"url": "https://example.org/acme", "title": "Acme", "content": "", "engine": "x"}
                ]}))
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        url
    }

    #[tokio::test]
    async fn a_workspace_s_instance_may_not_be_internal_while_the_operator_s_may() {
        let url = instance().await;
        let searxng = |base| {
            Searxng(Endpoint {
                http: Http::new().unwrap(),
                base,
                key: None,
            })
        };
        // A workspace admin set SEARXNG_URL to an internal address: refused
        // before any request, whatever the instance would answer.
        let workspace = FireOpts {
            secrets: Secrets::new(BTreeMap::from([(URL_VAR.to_owned(), url.clone())])),
            ..FireOpts::default()
        };
        let refused = searxng(None)
            .fire(&B::SearchWeb.into(), "acme", &workspace)
            .await
            .unwrap_err();
        assert!(
            matches!(&refused, FireError::Malformed { reason } if reason.contains("127.0.0.1 is a loopback address")),
            "{refused:?}"
        );
        // The operator's own instance (the server's setting) is theirs to choose.
        let found = searxng(Some(url))
            .fire(&B::SearchWeb.into(), "acme", &FireOpts::default())
            .await
            .unwrap();
        assert_eq!(found.results.len(), 1);
    }

    #[tokio::test]
    async fn the_instance_s_address_stays_out_of_receipts() {
        let url = instance().await;
        let base = format!("{url}/"); // its path is `/`; the host is the secret part
        let searxng = Searxng(Endpoint {
            http: Http::new().unwrap(),
            base: Some(base),
            key: None,
        });
        let (found, receipts) = crate::connectors::receipts::recording(searxng.fire(
            &B::SearchWeb.into(),
            "acme",
            &FireOpts::default(),
        ))
        .await;
        assert_eq!(found.unwrap().results.len(), 1);
        let told = format!("{receipts:?}");
        let host = url.trim_start_matches("http://");
        assert!(!told.contains(host), "{told}");
        assert!(!told.contains("127.0.0.1"), "{told}");
        assert_eq!(receipts[0].path, "/search");
        assert_eq!(
            hidden_parts("https://searx.example.org:8443/private/"),
            [
                "https://searx.example.org:8443/private",
                "searx.example.org:8443",
                "/private"
            ]
        );
    }
}
