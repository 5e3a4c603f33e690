//! SearXNG: the JSON API of a self-hosted instance (`GET {SEARXNG_URL}/search?q=..&format=json`).
//! Categories follow the intent (general, news, science); social intents use
//! `site:` filters and keep only the platform's pages.

use async_trait::async_trait;
use model::{BuiltinCapability as B, Capability, CostTier, RateHints};
use serde::Deserialize;

use super::Endpoint;
use super::{env, social};
use crate::connector::{Connector, ConnectorResult, FireError, FireOpts};
use crate::registry::Registration;

pub const ID: &str = "searxng";
pub const URL_VAR: &str = "SEARXNG_URL";

pub fn registration() -> Registration {
    let mut capabilities: Vec<Capability> = vec![
        B::SearchWeb.into(),
        B::SearchNews.into(),
        B::SearchScholar.into(),
    ];
    capabilities.extend(social::social_capabilities());
    Registration {
        suspends_on_errors: true,
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
    ) -> Result<Vec<ConnectorResult>, FireError> {
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
        let request = self
            .0
            .http
            .client()
            .get(format!("{}/search", base.trim_end_matches('/')))
            .query(&[
                ("q", q.as_str()),
                ("format", "json"),
                ("categories", category),
            ]);
        let answer: Answer = self.0.http.json("SearXNG", request, &[]).await?;
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
